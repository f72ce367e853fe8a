//! Rust identifiers for the variables and buffers of a function: the TIR names where
//! they are legal and unique, else the name with a suffix. Names starting with `__` are
//! left to the generated helpers.

use crate::tir::{Buffer, BufferId, Var, VarId};
use proc_macro2::{Ident, Span};
use std::collections::{HashMap, HashSet};

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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Var(VarId),
    Buffer(BufferId),
}

/// The identifier of each variable and buffer, given on first use.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    of: HashMap<Key, String>,
    used: HashSet<String>,
}

impl Names {
    pub fn var(&mut self, v: &Var) -> Ident {
        self.get(Key::Var(v.id()), v.name())
    }

    pub fn buffer(&mut self, b: &Buffer) -> Ident {
        self.get(Key::Buffer(b.id()), b.name())
    }

    fn get(&mut self, key: Key, name: &str) -> Ident {
        if let Some(s) = self.of.get(&key) {
            return Ident::new(s, Span::call_site());
        }
        let mut base: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if RESERVED.contains(&base.as_str()) {
            base.push('_');
        }
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) || base.starts_with("__") {
            base = format!("v{base}");
        }
        let mut s = base.clone();
        let mut n = 1;
        while self.used.contains(&s) {
            s = format!("{base}_{n}");
            n += 1;
        }
        self.used.insert(s.clone());
        self.of.insert(key, s.clone());
        Ident::new(&s, Span::call_site())
    }
}
