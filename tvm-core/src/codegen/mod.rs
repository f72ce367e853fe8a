//! Code generation: lowered TIR functions to source for a backend. The CPU backend
//! ([`rust`]) emits Rust tokens that rustc and LLVM compile inside the user's crate.

pub mod c_like;
pub mod cuda;
pub mod host;
mod names;
pub mod opencl;
pub mod rust;
pub mod wgsl;

pub use cuda::emit_cuda;
pub use opencl::emit_opencl;
pub use rust::{dim_vars, emit_rust, emit_rust_with, EmitOptions};
pub use wgsl::emit_wgsl;

use std::fmt;

/// A string literal of `text`: a raw string (`r#"…"#`, with enough `#`s) where it can be
/// one, else an escaped one. The programs and their TIR that an expansion carries as
/// text run to megabytes; a raw literal is lexed in one scan, where an escaped one is
/// built a character at a time (`Literal::string`). The value is the same either way.
pub fn text_literal(text: &str) -> proc_macro2::Literal {
    // A raw string cannot hold a carriage return.
    if !text.contains('\r') {
        // One `#` more than the longest run of them after a `"` in the text.
        let mut hashes = 0;
        for (i, _) in text.match_indices('"') {
            hashes = hashes.max(text[i + 1..].bytes().take_while(|&b| b == b'#').count());
        }
        let fence = "#".repeat(hashes + 1);
        if let Ok(lit) = format!("r{fence}\"{text}\"{fence}").parse() {
            return lit;
        }
    }
    proc_macro2::Literal::string(text)
}

/// Why a lowered function cannot be turned into code. Each variant is a user-visible
/// error (the macro turns it into a compile error at the kernel), not a compiler bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodegenError {
    /// The iterations of a `parallel` loop could not be proved to write disjoint chunks
    /// of `buffer`: the access at `index` is not `loop_var * S + r` with `0 <= r < S` for
    /// one chunk size `S`, or a read of `buffer` reaches outside the iteration's chunk.
    ParallelNotDisjoint { loop_var: String, buffer: String, index: String },
    /// The function uses something the backend does not support (named in `what`).
    Unsupported { what: String },
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodegenError::ParallelNotDisjoint { loop_var, buffer, index } => write!(
                f,
                "cannot prove that the iterations of parallel loop `{loop_var}` touch disjoint parts of \
                 `{buffer}`: access at `{index}` is not `{loop_var} * S + r` with `0 <= r < S` for a single chunk \
                 size `S`"
            ),
            CodegenError::Unsupported { what } => write!(f, "code generation does not support {what}"),
        }
    }
}

impl std::error::Error for CodegenError {}

#[cfg(test)]
mod tests {
    use super::text_literal;

    /// The literal's value, as rustc reads it.
    fn value(lit: &proc_macro2::Literal) -> String {
        syn::parse2::<syn::LitStr>(quote::quote!(#lit)).unwrap().value()
    }

    #[test]
    fn a_text_literal_holds_its_text() {
        let texts = [
            "",
            "plain",
            "a \"quote\" and a \\ backslash\n\ttabbed",
            "ends in a quote\"",
            "\"# and \"## inside",
            "#\"#\"##\"###",
            "nul \0 and unicode: σ, 𝔽",
        ];
        for t in texts {
            let lit = text_literal(t);
            assert!(lit.to_string().starts_with('r'), "{t:?} as {lit}");
            assert_eq!(value(&lit), t);
        }
        // A carriage return cannot be in a raw string: escaped, the same value.
        let lit = text_literal("a\r\nb");
        assert!(lit.to_string().starts_with('"'), "{lit}");
        assert_eq!(value(&lit), "a\r\nb");
    }
}
