//! Compile-error UI tests of the `compute!` macro (STYLE.md point 10): one program per
//! error of docs/LANGUAGE.md §2 (`tests/ui/compute/`) and §3 (`tests/ui/schedule/`), each with a
//! `.stderr` snapshot, and kernels that must compile (`tests/ui/pass/`).
//!
//! Bless with `TRYBUILD=overwrite cargo test -p tvm --test ui`, then read every
//! `.stderr`: the span must point at the offending token and the `help:` line must say
//! what would be legal.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/compute/*.rs");
    t.compile_fail("tests/ui/schedule/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
