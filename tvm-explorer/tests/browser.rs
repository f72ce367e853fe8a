//! The explorer in a real browser: the page for every example, every kernel of the test
//! corpus and a file of kernels with mistakes is loaded in headless Chromium, which runs
//! `browser_check.js` (clicks every mode, target, stage and view, picks kernels, hovers
//! source lines) and leaves what each view showed in the DOM; this test reads that back
//! and checks it. Screenshots of the three modes go to `target/explorer/`.
//!
//! Needs Debian's `chromium` (the test script installs it). Without it the test prints
//! why and passes, except under `TVM_REQUIRE_TOOLS=1` (CI), where it fails.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

fn out_dir() -> PathBuf {
    let d = root().join("target/explorer");
    std::fs::create_dir_all(&d).expect("target/explorer");
    d
}

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output() {
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !p.is_empty() {
                return Some(PathBuf::from(p));
            }
        }
    }
    None
}

fn skip_or_fail(why: &str) {
    if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("TVM_REQUIRE_TOOLS=1 but {why}");
    }
    eprintln!("skipped: {why}");
}

/// The explorer's page for the examples, the corpus and the mistakes fixture.
fn build_page() -> (PathBuf, usize) {
    let r = root();
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["examples", "tvm-core/tests/corpus"] {
        let mut fs: Vec<PathBuf> = std::fs::read_dir(r.join(dir))
            .expect("a source directory")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        fs.sort();
        files.extend(fs);
    }
    files.push(r.join("tvm-explorer/tests/fixtures/mistakes.rs"));
    let page = out_dir().join("all.html");
    let out = Command::new(env!("CARGO_BIN_EXE_tvm-explorer"))
        .args(&files)
        .arg("--out")
        .arg(&page)
        .output()
        .expect("the explorer runs");
    assert!(out.status.success(), "the explorer failed: {}", String::from_utf8_lossy(&out.stderr));
    let size = std::fs::metadata(&page).expect("the page").len() as usize;
    (page, size)
}

fn headless(chrome: &Path) -> Command {
    let mut c = Command::new(chrome);
    c.args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]);
    c.arg(format!("--user-data-dir={}", out_dir().join("chrome-profile").display()));
    c
}

fn str_of(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

#[test]
fn the_page_works_in_a_browser() {
    let (page, size) = build_page();
    // Size: every example and corpus kernel, lowered four times with every pass's TIR (and
    // the WebGPU column's MSL).
    println!("page for all examples and the corpus: {} KB", size / 1024);
    assert!(size < 3 * 1024 * 1024, "the page is {size} bytes, over 3 MB");
    let Some(chrome) = chromium() else {
        skip_or_fail("no chromium (Debian's `chromium` package) to load the page in");
        return;
    };
    // A copy of the page with the check script appended.
    let html = std::fs::read_to_string(&page).expect("the page");
    let script = include_str!("browser_check.js");
    let checked = html.replace("</body>", &format!("<script>{script}</script>\n</body>"));
    let test_page = out_dir().join("all-checked.html");
    std::fs::write(&test_page, checked).expect("write the test page");
    let out = headless(&chrome)
        .args(["--virtual-time-budget=20000", "--dump-dom"])
        .arg(format!("file://{}", test_page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.rfind("<pre id=\"test-results\">").unwrap_or_else(|| {
        panic!("no results in the page (the check script did not run):\n{}", String::from_utf8_lossy(&out.stderr))
    });
    let body = &dom[start + "<pre id=\"test-results\">".len()..];
    let json = body[..body.find("</pre>").expect("the end of the results")]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let r: Value = serde_json::from_str(&json).expect("the results are JSON");
    println!("page load to end of first render: {} ms (in headless Chromium)", r["load_ms"]);
    assert_eq!(r["errors"], Value::Array(vec![]), "errors in the page: {}", r["errors"]);

    let step = |name: &str| -> &Value {
        r["steps"]
            .as_array()
            .and_then(|s| s.iter().find(|x| x["name"] == name))
            .unwrap_or_else(|| panic!("no step {name}"))
    };
    let kernels: Vec<String> = r["kernels"].as_array().expect("kernels").iter().map(str_of).collect();
    for k in ["vector_add", "matmul", "conv2d", "softmax", "layernorm", "dense_bias_relu", "embedding", "max_pool"] {
        assert!(
            kernels.iter().any(|x| x.starts_with(&format!("{k} —"))),
            "kernel {k} missing from the selector: {kernels:?}"
        );
    }
    assert!(
        kernels.iter().any(|k| k.starts_with("⚠ mistaken_tensor")),
        "the kernel that does not compile is marked: {kernels:?}"
    );

    // Mode 1: the pipeline's stages, and the linking.
    let p = step("pipeline");
    assert_eq!(p["visible"], true);
    let st = &p["stages"];
    assert!(str_of(&st["source"]).contains("schedule blocks"), "{}", st["source"]);
    assert!(str_of(&st["te"]).contains("@graph matmul"), "{}", st["te"]);
    assert!(str_of(&st["schedule"]).contains("schedule!(cpu)"), "{}", st["schedule"]);
    assert!(str_of(&st["tir"]).contains("@func cpu matmul"), "{}", st["tir"]);
    assert!(str_of(&st["code"]).contains("fn __tvm_cpu_matmul"), "Rust for the CPU: {}", st["code"]);
    assert!(str_of(&p["cuda_code"]).contains("__global__"), "CUDA: {}", p["cuda_code"]);
    let lit = p["code_lines_lit"].as_u64().expect("a count");
    assert!(lit >= 3, "hovering a source line lights generated code lines: {lit} ({})", p["code_line_source"]);
    assert!(p["tir_lines_lit"].as_u64().expect("a count") >= 3, "and TIR lines: {}", p["tir_lines_lit"]);
    let vec_lit = p["vectorize_lit"].as_array().expect("a vectorize statement is linked");
    assert!(
        !vec_lit.is_empty() && vec_lit.iter().any(|l| str_of(l).contains("ramp")),
        "vectorize lights its vector stores: {vec_lit:?}"
    );

    // Mode 2: the passes.
    let l = step("lowering");
    assert_eq!(l["visible"], true);
    let passes: Vec<String> = l["passes"].as_array().expect("passes").iter().map(str_of).collect();
    for name in ["inline_stages", "schedule_ops", "simplify", "flatten_storage", "vectorize_loops", "unroll_loops"] {
        assert!(passes.iter().any(|x| x.contains(name)), "pass {name} listed: {passes:?}");
    }
    assert!(passes.iter().all(|x| x.contains("µs")), "each pass has its time: {passes:?}");
    let icons: Vec<String> = l["icons"].as_array().expect("icons").iter().map(str_of).collect();
    assert!(
        icons.contains(&"●".to_string()) && icons.contains(&"◇".to_string()),
        "changed and TE passes marked by an icon: {icons:?}"
    );
    let (hidden, all) = (l["rows_hidden_unchanged"].as_u64().unwrap(), l["rows_all"].as_u64().unwrap());
    let unchanged = icons.iter().filter(|i| *i == "○").count() as u64;
    assert_eq!(hidden + unchanged, all, "hide-unchanged hides exactly the unchanged passes");
    assert!(str_of(&l["tir_after"]).contains("@func cpu"), "{}", l["tir_after"]);
    assert!(
        l["diff_added"].as_u64().unwrap() + l["diff_removed"].as_u64().unwrap() > 0,
        "the diff shows changes: {}",
        l["diff_summary"]
    );
    let marks: Vec<String> = l["diff_marks"].as_array().unwrap().iter().map(str_of).collect();
    assert!(
        marks.iter().all(|m| m.starts_with('+') || m.starts_with('-')),
        "changed lines carry + or -, not colour alone: {marks:?}"
    );
    assert!(str_of(&l["diff_any_summary"]).contains("→"), "{}", l["diff_any_summary"]);
    assert!(l["diff_any_changed"].as_u64().unwrap() > 0, "a diff between any two passes");

    // Find: lines of the shown TIR, and the passes whose TIR has the text.
    let f = step("search");
    assert!(f["matches"].as_u64().unwrap() >= 1, "`parallel` found in the TIR: {f}");
    assert!(str_of(&f["status"]).contains("matching line"), "{f}");
    assert!(f["found_passes"].as_u64().unwrap() >= 3, "the passes after schedule_ops have a parallel loop: {f}");
    assert_eq!(f["cleared"], 0, "clearing the box clears the marks");

    // Mode 3: the targets side by side.
    let t = step("targets");
    assert_eq!(t["columns"], serde_json::json!(["cpu", "cuda", "opencl", "webgpu"]));
    assert!(str_of(&t["cpu"]["code"]).contains("fn __tvm_cpu_matmul"), "cpu column: Rust");
    assert!(str_of(&t["cpu"]["config"]).contains("vector width"), "{}", t["cpu"]["config"]);
    assert!(str_of(&t["cuda"]["code"]).contains("__global__"), "cuda column: CUDA C");
    assert!(str_of(&t["opencl"]["code"]).contains("__kernel"), "opencl column: OpenCL C");
    assert!(str_of(&t["webgpu"]["code"]).contains("@compute"), "webgpu column: WGSL");
    for gpu in ["cuda", "opencl", "webgpu"] {
        let c = str_of(&t[gpu]["config"]);
        assert!(c.contains("grid") && c.contains("block") && c.contains("shared memory"), "{gpu} launch: {c}");
    }
    for n in ["cpu", "cuda", "opencl", "webgpu"] {
        assert!(t[n]["loops"].as_u64().unwrap() >= 1, "{n} loop tree");
        let l0 = str_of(&t[n]["loop0"]);
        assert!(l0.contains("trips") && l0.contains("FLOPs") && l0.contains("bytes"), "{n}: {l0}");
    }

    // Kernels with mistakes: the error at its line, the rest still shown.
    let b = step("bad kernels");
    let err = b["error"].as_array().unwrap().iter().map(str_of).collect::<Vec<_>>().join(" ");
    assert!(err.contains("no axis `missing`") && err.contains("line 11"), "the schedule error: {err}");
    assert!(str_of(&b["err_lines"]).contains("11:y.parallel(missing);"), "its source line marked: {}", b["err_lines"]);
    assert!(
        str_of(&b["cuda_tir"]).contains("@func cuda mistaken_schedule"),
        "the other targets still lower: {}",
        b["cuda_tir"]
    );
    let fe = b["frontend_error"].as_array().unwrap().iter().map(str_of).collect::<Vec<_>>().join(" ");
    assert!(fe.contains("undefined_tensor"), "the frontend error: {fe}");
    assert!(str_of(&b["frontend_err_lines"]).contains("17:"), "{}", b["frontend_err_lines"]);
    assert!(
        str_of(&b["after"]).contains("fn __tvm_cpu_fine_after_mistakes"),
        "the next kernel is fine: {}",
        b["after"]
    );

    let e = step("every kernel");
    assert_eq!(e["shown"], e["expected"], "every kernel shows something in every mode and target");

    // Screenshots, for a person to look at.
    let kernel_index = kernels.iter().position(|k| k.starts_with("matmul —")).expect("matmul");
    let shots = [
        ("pipeline", format!("kernel={kernel_index}&mode=pipeline&target=cpu&stage=tir&line=26")),
        ("pipeline-code", format!("kernel={kernel_index}&mode=pipeline&target=cuda&stage=code&line=50")),
        ("lowering", format!("kernel={kernel_index}&mode=lowering&target=cuda&view=diff")),
        ("targets", format!("kernel={kernel_index}&mode=targets")),
    ];
    for (name, hash) in shots {
        let png = out_dir().join(format!("{name}.png"));
        let _ = std::fs::remove_file(&png);
        let out = headless(&chrome)
            .args(["--window-size=1600,1000", "--virtual-time-budget=5000"])
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}#{hash}", page.display()))
            .output()
            .expect("chromium runs");
        let len = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(len > 20_000, "screenshot {name}: {len} bytes ({})", String::from_utf8_lossy(&out.stderr));
        println!("screenshot: {}", png.display());
    }
}
