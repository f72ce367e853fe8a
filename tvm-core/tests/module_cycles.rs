//! The top-level modules of tvm-core depend on each other without cycles: each module's
//! dependencies are the modules its source names by `crate::X` (in `use` lines and in
//! paths), comments left out, and the graph they make must be acyclic, so every module
//! can be read, changed and tested with only the ones below it in mind. What two modules
//! share goes below both (the limit `MAX_UNROLL` lives in `schedule`, which `passes`
//! reads; the knobs of a block in `frontend`, which `tune` reads; the CUDA artifact store
//! in `artifact`, which `build`, `codegen` and `expand` read).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules `lib.rs` declares (`mod x;`, `pub mod x;`).
fn top_level_modules() -> Vec<String> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').trim().to_string())
        })
        .collect()
}

/// Every `.rs` file of module `m`: `src/m.rs`, or everything under `src/m/`.
fn files_of(m: &str) -> Vec<PathBuf> {
    let file = src_dir().join(format!("{m}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let mut out = Vec::new();
    let mut dirs = vec![src_dir().join(m)];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("module `{m}`: {}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// `src` without its comments (`//` to the end of the line, `/* .. */`); string and
/// character literals are kept whole, so a `//` inside one is not a comment.
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                i = end;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                out.push_str(&src[start..i]);
            }
            // A character literal (`'"'`, `'\''`); a lifetime has no closing quote.
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                let start = i;
                i += if b.get(i + 1) == Some(&b'\\') { 3 } else { 2 };
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i = (i + 1).min(b.len());
                out.push_str(&src[start..i]);
            }
            _ => {
                let c = src[i..].chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The modules in `modules` that `code` names as `crate::X`.
fn named_modules(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        // `$crate::` and `tvm_core::crate` are not this crate's paths.
        if at > 0 && matches!(code.as_bytes()[at - 1], b'$' | b'_' | b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if modules.contains(&name) {
            out.insert(name);
        }
    }
    out
}

/// Module -> the other modules it names.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = top_level_modules().into_iter().collect();
    modules
        .iter()
        .map(|m| {
            let mut deps = BTreeSet::new();
            for f in files_of(m) {
                let code = strip_comments(&std::fs::read_to_string(&f).unwrap());
                deps.extend(named_modules(&code, &modules));
            }
            deps.remove(m);
            (m.clone(), deps)
        })
        .collect()
}

/// A cycle of `graph`, if it has one (depth-first search for a back edge).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit<'g>(
        m: &'g str,
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'g str>,
        done: &mut BTreeSet<&'g str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| *p == m) {
            let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m);
        for d in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m);
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

fn show(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    graph.iter().map(|(m, d)| format!("  {m} -> {}\n", d.iter().cloned().collect::<Vec<_>>().join(", "))).collect()
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = dependencies();
    // The reader sees the edges that are certainly there, so an empty graph cannot pass.
    for (from, to) in [("lower", "passes"), ("passes", "schedule"), ("tune", "frontend"), ("driver", "lower")] {
        assert!(graph[from].contains(to), "`{from}` uses `{to}`, but the reader missed it:\n{}", show(&graph));
    }
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the modules of tvm-core depend on each other in a cycle: {}\nthe graph:\n{}",
            cycle.join(" -> "),
            show(&graph)
        );
    }
}

#[test]
fn the_reader_sees_code_not_comments() {
    let modules: BTreeSet<String> = ["lower", "passes", "tune"].iter().map(|s| s.to_string()).collect();
    let code = strip_comments(
        "use crate::lower::x; // crate::tune in a comment\n/// [`crate::tune`]\nlet s = \"// no comment\"; let c = '\"'; crate::passes::f(); $crate::tune::g();",
    );
    let found: Vec<String> = named_modules(&code, &modules).into_iter().collect();
    assert_eq!(found, ["lower", "passes"]);
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::new());
    assert_eq!(find_cycle(&g), None);
    g.get_mut("c").unwrap().insert("a".to_string());
    assert_eq!(find_cycle(&g), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}
