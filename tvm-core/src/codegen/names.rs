//! Unique identifiers for the variables and buffers of one printed kernel, shared by the
//! source printers (C, CUDA C, OpenCL C and WGSL). A dialect gives its reserved words and
//! the prefixes of the names that belong to it or to the printer (`tvm_...`, OpenCL's
//! `convert_...`); a user's name that is one of those, or starts with one, is moved off
//! it, so no kernel variable shadows a builtin or a helper the printer adds.

use crate::tir::{Buffer, BufferId, Var, VarId};
use std::collections::{HashMap, HashSet};

/// What a dialect keeps for itself.
pub struct Reserved {
    /// Keywords, types and builtins: never a kernel's name.
    pub words: &'static [&'static str],
    /// Prefixes a kernel's name may not start with.
    pub prefixes: &'static [&'static str],
}

#[derive(Clone)]
pub struct Names {
    reserved: &'static Reserved,
    /// Every name given out, and the names the printer declared itself.
    pub taken: HashSet<String>,
    pub vars: HashMap<VarId, String>,
    pub buffers: HashMap<BufferId, String>,
    /// For each base, the last suffix `own` gave out: every `base_j` below it was taken
    /// then and still is (names are only ever added), so the next search starts there
    /// instead of at 1 (an unrolled kernel asks for thousands of names from one base).
    suffixes: HashMap<String, usize>,
}

impl Names {
    pub fn new(reserved: &'static Reserved) -> Self {
        Names {
            reserved,
            taken: HashSet::new(),
            vars: HashMap::new(),
            buffers: HashMap::new(),
            suffixes: HashMap::new(),
        }
    }

    /// `base`, or `base_1`, `base_2`, ... : the first not taken. For the printer's own
    /// names (`tvm_...`), which are valid as they are.
    pub fn own(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        if self.taken.contains(&name) {
            let k = self.suffixes.entry(base.to_string()).or_insert(0);
            loop {
                *k += 1;
                name = format!("{base}_{k}");
                if !self.taken.contains(&name) {
                    break;
                }
            }
        }
        self.taken.insert(name.clone());
        name
    }

    /// A unique identifier made from `hint` (a kernel's name for a variable or buffer):
    /// characters outside `[A-Za-z0-9_]` become `_`, and a name that is empty, `_`,
    /// starts with a digit, starts with a reserved prefix or is a reserved word is
    /// moved off it.
    pub fn fresh(&mut self, hint: &str) -> String {
        let mut base: String =
            hint.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if base.is_empty() || base == "_" || base.starts_with(|c: char| c.is_ascii_digit()) {
            base = format!("v_{base}");
        }
        if self.reserved.prefixes.iter().any(|p| base.starts_with(p)) {
            base = format!("v{base}");
        }
        if self.reserved.words.contains(&base.as_str()) {
            base.push('_');
        }
        self.own(&base)
    }

    pub fn bind_var(&mut self, v: &Var) -> String {
        let n = self.fresh(v.name());
        self.vars.insert(v.id(), n.clone());
        n
    }

    pub fn bind_buffer(&mut self, b: &Buffer) -> String {
        let n = self.fresh(b.name());
        self.buffers.insert(b.id(), n.clone());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static C: Reserved = Reserved { words: &["int", "float"], prefixes: &["__", "tvm_"] };

    #[test]
    fn names_are_unique_valid_and_off_the_dialects_own() {
        let mut n = Names::new(&C);
        assert_eq!(n.fresh("x"), "x");
        assert_eq!(n.fresh("x"), "x_1");
        assert_eq!(n.fresh("x"), "x_2");
        assert_eq!(n.fresh("int"), "int_");
        assert_eq!(n.fresh("0a"), "v_0a");
        assert_eq!(n.fresh(""), "v_");
        assert_eq!(n.fresh("_"), "v__");
        assert_eq!(n.fresh("a.b-c"), "a_b_c");
        assert_eq!(n.fresh("__x"), "v__x");
        assert_eq!(n.fresh("tvm_fault"), "vtvm_fault");
        // The printer's own names are taken as given, and the user's names avoid them.
        assert_eq!(n.own("tvm_select"), "tvm_select");
        assert_eq!(n.own("tvm_select"), "tvm_select_1");
        n.taken.insert("y".into());
        assert_eq!(n.fresh("y"), "y_1");
    }
}
