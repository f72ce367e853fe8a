//! Compile-error UI tests of the `compute!` macro (STYLE.md point 10): one program per
//! error of docs/LANGUAGE.md §2 (`compute/`) and §3 (`schedule/`), each with a `.stderr`
//! snapshot, and kernels that must compile (`pass/`). A package of its own, so that
//! trybuild's build of the programs compiles the facade's dependencies only.
//!
//! Bless with `TRYBUILD=overwrite cargo test -p tvm-ui-tests`, then read every
//! `.stderr`: the span must point at the offending token and the `help:` line must say
//! what would be legal.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("compute/*.rs");
    t.compile_fail("schedule/*.rs");
    t.pass("pass/*.rs");
}
