//! The page (one HTML file: the template with the data inlined) and the same content as
//! terminal text.

use crate::model::Texts;
use serde_json::Value;
use std::fmt::Write;

const TEMPLATE: &str = include_str!("page.html");

/// The self-contained page: the template with the data as JSON in a script element.
pub fn html(data: &Value, texts: &Texts) -> String {
    let mut d = data.clone();
    let (lines, encoded) = line_table(&texts_list(texts));
    d["lines"] = Value::Array(lines.into_iter().map(Value::String).collect());
    d["texts"] = Value::Array(encoded);
    // No `<` at all inside the script element (so no `</script>` or `<!--` can end or
    // change it): `<` only occurs inside JSON strings, where `\u003c` means the same.
    let json = serde_json::to_string(&d).expect("JSON values serialize").replace('<', "\\u003c");
    TEMPLATE.replace("/*DATA*/", &json)
}

fn texts_list(texts: &Texts) -> Vec<String> {
    (0..).map_while(|i| texts.try_get(i).map(|s| s.to_string())).collect()
}

/// The texts as one table of distinct lines and, per text, its line numbers in that
/// table: the TIR after one pass repeats most lines of the one before, the CUDA and the
/// OpenCL lowering share most of theirs, and each feature level's copy of a CPU body
/// repeats the others. A run of consecutive table entries is written as the first
/// entry, then `-k` for the `k` that follow it (the page decodes texts as it shows them).
fn line_table(texts: &[String]) -> (Vec<String>, Vec<Value>) {
    let mut table: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    let mut encoded = Vec::new();
    for t in texts {
        let mut refs: Vec<i64> = Vec::new();
        let mut prev: Option<i64> = None;
        for l in t.split('\n') {
            let id = match index.get(l) {
                Some(&i) => i,
                None => {
                    table.push(l.to_string());
                    let i = table.len() as i64 - 1;
                    index.insert(l, i);
                    i
                }
            };
            match (prev, refs.last_mut()) {
                (Some(p), Some(last)) if id == p + 1 && *last < 0 => *last -= 1,
                (Some(p), Some(_)) if id == p + 1 => refs.push(-1),
                _ => refs.push(id),
            }
            prev = Some(id);
        }
        encoded.push(Value::Array(refs.into_iter().map(Value::from).collect()));
    }
    (table, encoded)
}

fn t<'a>(texts: &'a Texts, v: &Value) -> &'a str {
    // (terminal text reads the table itself, not the page's encoding)
    v.as_u64().and_then(|i| texts.try_get(i as usize)).unwrap_or("")
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn indent(s: &str, by: &str) -> String {
    s.lines().map(|l| format!("{by}{l}\n")).collect()
}

/// The content of the page as text: per kernel its source, tensor expressions, and per
/// target the schedule used, the passes, the TIR, the launch or CPU configuration, the
/// loop costs and the generated code.
pub fn text(data: &Value, texts: &Texts) -> String {
    let mut o = String::new();
    // TVM's users read TVMScript's `range(start, stop)` into a loop's two numbers.
    let _ = writeln!(o, "note: TIR loops print `for v in serial(min, extent)`: a start and a trip count, not a stop");
    for e in data["file_errors"].as_array().into_iter().flatten() {
        let _ = writeln!(o, "error: {}: {}", show(&e["file"]), show(&e["message"]));
    }
    for k in data["kernels"].as_array().into_iter().flatten() {
        let _ = writeln!(o, "════ kernel {} ({}:{})", show(&k["name"]), show(&k["file"]), show(&k["first_line"]));
        let _ = writeln!(o, "── source\n{}", indent(t(texts, &k["source"]), "  "));
        if let Some(errs) = k["error"].as_array() {
            for e in errs {
                let _ = writeln!(o, "error (line {}): {}", show(&e["line"]), show(&e["message"]));
            }
            continue;
        }
        let _ = writeln!(o, "── tensor expressions\n{}", indent(t(texts, &k["te"]), "  "));
        for (name, tg) in k["targets"].as_object().into_iter().flatten() {
            let _ = writeln!(o, "── target {name}");
            let _ = writeln!(o, "schedule: {}", show(&tg["schedule"]["reason"]));
            for opt in tg["options"].as_array().into_iter().flatten() {
                let _ = writeln!(o, "option: {}", show(opt));
            }
            if let Some(w) = tg["schedule"]["fallback"].as_str() {
                let _ =
                    writeln!(o, "warning: the derived schedule fell back to the flat defaults (a compiler bug): {w}");
            }
            for n in tg["schedule"]["derived"].as_array().into_iter().flatten() {
                let _ = writeln!(o, "derived: {} ({}): {}", show(&n["stage"]), show(&n["rule"]), show(&n["why"]));
            }
            if !tg["schedule"]["source"].is_null() {
                let _ = write!(o, "{}", indent(t(texts, &tg["schedule"]["source"]), "  "));
            }
            let _ = write!(o, "{}", indent(t(texts, &tg["schedule"]["stages"]), "  "));
            let _ = writeln!(o, "passes:");
            for p in tg["passes"].as_array().into_iter().flatten() {
                let mark = if p["text"].is_null() {
                    "  (tensor expressions)".to_string()
                } else if p["changed"].as_bool() == Some(true) {
                    format!("* +{} -{}", show(&p["plus"]), show(&p["minus"]))
                } else {
                    "= unchanged".to_string()
                };
                let _ = writeln!(o, "  {:<26} {:>8} us  {mark}", show(&p["name"]), show(&p["us"]));
            }
            if let Some(errs) = tg["error"].as_array() {
                for e in errs {
                    let _ = writeln!(o, "error (line {}): {}", show(&e["line"]), show(&e["message"]));
                }
                continue;
            }
            let _ = writeln!(o, "lowered TIR:\n{}", indent(t(texts, &tg["tir"]), "  "));
            if let Some(ls) = tg["launch"].as_array() {
                for l in ls {
                    let _ = writeln!(
                        o,
                        "launch {}: grid ({}), block ({}), {} bytes of shared memory",
                        show(&l["kernel"]),
                        l["grid"]
                            .as_array()
                            .map(|a| a.iter().map(show).collect::<Vec<_>>().join(", "))
                            .unwrap_or_default(),
                        l["block"]
                            .as_array()
                            .map(|a| a.iter().map(show).collect::<Vec<_>>().join(", "))
                            .unwrap_or_default(),
                        show(&l["shared_bytes"])
                    );
                }
            }
            if tg["cpu"].is_object() {
                let c = &tg["cpu"];
                let par: Vec<String> = c["parallel"].as_array().into_iter().flatten().map(show).collect();
                let _ = writeln!(
                    o,
                    "threads: {}; vector width: {} lanes; feature levels: {}",
                    if par.is_empty() {
                        "one (no parallel loop)".to_string()
                    } else {
                        format!("the thread pool over {}", par.join(", "))
                    },
                    show(&c["lanes"]),
                    show(&c["levels"])
                );
            }
            let _ = writeln!(o, "loops (trips, FLOPs, bytes of global memory):");
            cost_text(&mut o, &tg["cost"], 1);
            if let Some(e) = tg["code_error"].as_str() {
                let _ = writeln!(o, "code: error: {e}");
            } else {
                let c = &tg["code"];
                let _ = writeln!(
                    o,
                    "generated {} ({} us):\n{}",
                    show(&c["lang"]),
                    show(&c["emit_us"]),
                    indent(t(texts, &c["text"]), "  ")
                );
            }
            if let Some(e) = tg["metal_error"].as_str() {
                let _ = writeln!(o, "metal: error: {e}");
            } else if !tg["metal"].is_null() {
                let _ = writeln!(o, "metal (MSL from the WGSL):\n{}", indent(t(texts, &tg["metal"]), "  "));
            }
            if !tg["host"].is_null() {
                let _ = writeln!(o, "host code:\n{}", indent(t(texts, &tg["host"]), "  "));
            }
        }
    }
    o
}

fn cost_text(o: &mut String, nodes: &Value, depth: usize) {
    for n in nodes.as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "{}{}  [trips {}, FLOPs {}, bytes {}]",
            "  ".repeat(depth),
            show(&n["label"]),
            show(&n["trips"]),
            show(&n["flops"]),
            show(&n["bytes"])
        );
        cost_text(o, &n["children"], depth + 1);
    }
}
