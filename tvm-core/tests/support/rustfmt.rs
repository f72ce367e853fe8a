//! Generated Rust as text for golden tests: the tokens formatted by `rustfmt` (which must
//! be installed: it comes with the toolchain).

use proc_macro2::TokenStream;
use std::process::Command;

/// `code` formatted with `rustfmt`; panics (with the text) when rustfmt rejects it.
pub fn pretty(code: &TokenStream) -> String {
    let text = code.to_string();
    let child = Command::new("rustfmt")
        .args(["--edition", "2021", "--emit", "stdout", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let mut child = child.expect("rustfmt runs (the golden is rustfmt's formatting)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "rustfmt fails on the emitted code:\n{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
