//! Rust identifiers for the variables and buffers of a function: the TIR names where
//! they are legal and unique, else the name with a suffix (`codegen::names`, as the other
//! printers). Names starting with `__` are left to the generated helpers.

use crate::codegen::names::{self, Reserved};
use crate::tir::{Buffer, Var};
use proc_macro2::{Ident, Span};

/// Words that cannot name a local (keywords of every edition, primitive types, and the
/// names the generated code itself uses unqualified).
const RESERVED: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
    "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract",
    "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
    "union", "bool", "char", "str", "f16", "f32", "f64", "f128", "i8", "i16", "i32", "i64", "i128", "isize", "u8",
    "u16", "u32", "u64", "u128", "usize", "T", "L", "_", "None", "Some", "Ok", "Err",
];

/// Rust's reserved words; names starting with `__` are the generated helpers'.
static RUST: Reserved = Reserved { words: RESERVED, prefixes: &["__"] };

/// The identifier of each variable and buffer, given on first use.
#[derive(Clone)]
pub(crate) struct Names(names::Names);

impl Default for Names {
    fn default() -> Self {
        Names(names::Names::new(&RUST))
    }
}

impl Names {
    pub fn var(&mut self, v: &Var) -> Ident {
        let s = match self.0.vars.get(&v.id()) {
            Some(s) => s.clone(),
            None => self.0.bind_var(v),
        };
        Ident::new(&s, Span::call_site())
    }

    pub fn buffer(&mut self, b: &Buffer) -> Ident {
        let s = match self.0.buffers.get(&b.id()) {
            Some(s) => s.clone(),
            None => self.0.bind_buffer(b),
        };
        Ident::new(&s, Span::call_site())
    }
}
