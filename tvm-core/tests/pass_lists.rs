//! The pass lists of the README and docs/ARCHITECTURE.md are the passes the compiler
//! runs: a CPU kernel and a GPU kernel (CUDA and OpenCL) are lowered with the tracer
//! (`driver::lower_traced`), and the names it reports, in order, must equal each list.
//! The lists are found between `<!-- passes:cpu -->` (or `gpu`) and
//! `<!-- /passes:cpu -->`: one list item per pass, the first code span its name.

use std::path::Path;
use tvm_core::driver::{build_schedule, lower_traced};
use tvm_core::frontend::parse_str;
use tvm_core::Target;

/// A kernel with a schedule for each family, including the passes' favourite subjects
/// (a split that leaves a tail, vectors, unrolling, shared memory on the GPU).
const KERNEL: &str = "
    pub fn row_sum(a: f32[n, 64]) -> s: f32[n] {
        s[i] = sum(a[i, k] for k in 0..64);
    }
    schedule!(cpu) {
        let (o, v) = s.split(s.i, 8);
        s.parallel(o);
        s.unroll(v);
    }
    schedule!(cuda) {
        let (b, t) = s.split(s.i, 64);
        s.bind(b, block.x);
        s.bind(t, thread.x);
    }
";

/// The pass names the tracer reports while lowering `KERNEL` for `target`.
fn traced(target: &str) -> Vec<&'static str> {
    let k = parse_str(KERNEL).unwrap_or_else(|e| panic!("{e:?}"));
    let t = Target::parse(target).unwrap();
    let sch = build_schedule(&k, &t).unwrap_or_else(|e| panic!("{e:?}"));
    let mut passes = Vec::new();
    lower_traced(&sch, &mut |e| passes.push(e.pass)).unwrap_or_else(|e| panic!("{e:?}"));
    passes
}

/// The passes listed in `doc` between `<!-- passes:FAMILY -->` and its closing comment.
fn listed(doc: &str, family: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (open, close) = (format!("<!-- passes:{family} -->"), format!("<!-- /passes:{family} -->"));
    let start = text.find(&open).unwrap_or_else(|| panic!("{doc} has no `{open}`")) + open.len();
    let end = start + text[start..].find(&close).unwrap_or_else(|| panic!("{doc} has no `{close}`"));
    text[start..end]
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("- ") || l.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok()))
        .map(|item| {
            let name = item.split('`').nth(1).unwrap_or_else(|| panic!("{doc}: a list item without a pass: {item}"));
            name.to_string()
        })
        .collect()
}

#[test]
fn the_documented_pass_lists_are_the_pipelines() {
    let cpu = traced("cpu");
    let (cuda, opencl) = (traced("cuda"), traced("opencl"));
    assert_eq!(cuda, opencl, "CUDA and OpenCL run one pipeline");
    assert_ne!(cpu, cuda, "the families' pipelines differ");
    for doc in ["README.md", "docs/ARCHITECTURE.md"] {
        assert_eq!(listed(doc, "cpu"), cpu, "the CPU list of {doc}");
        assert_eq!(listed(doc, "gpu"), cuda, "the GPU list of {doc}");
    }
}

#[test]
fn a_list_is_read_item_by_item() {
    let text = "1. `a`: text\n   with `b` on a continuation line\n2. `simplify`\n- `c` and `d`";
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(dir.join("pass_list.md"), format!("<!-- passes:x -->\n{text}\n<!-- /passes:x -->\n")).unwrap();
    let rel = dir.join("pass_list.md");
    // `listed` reads paths relative to the workspace; an absolute path replaces it.
    assert_eq!(listed(rel.to_str().unwrap(), "x"), ["a", "simplify", "c"]);
}
