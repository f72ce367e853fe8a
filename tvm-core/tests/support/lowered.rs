//! What the code generators' tests share: a kernel's source lowered for a target, and a
//! search of the lowered statements.

use tvm_core::driver::build_schedule;
use tvm_core::frontend::parse_str;
use tvm_core::schedule::Schedule;
use tvm_core::tir::{PrimFunc, Stmt};
use tvm_core::Target;

fn show(e: &[tvm_core::schedule::ScheduleError]) -> String {
    e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
}

/// `src` (a `compute!` invocation, possibly after docs and `use` lines, as in the example
/// files) lowered for `target`: with its own (or borrowed) schedule, or the default.
pub fn lower_for(src: &str, target: &Target, default: bool) -> PrimFunc {
    let src = &src[src.find("compute!").expect("a compute! block")..];
    let k = parse_str(src).unwrap_or_else(|e| panic!("kernel does not parse: {e:#?}"));
    let s = if default {
        Schedule::default_for(k.graph.clone(), target.clone())
    } else {
        build_schedule(&k, target).unwrap_or_else(|e| panic!("schedule rejected: {}", show(&e)))
    };
    tvm_core::driver::lower(&s).unwrap_or_else(|e| panic!("lowering failed: {}", show(&e)))
}

/// Whether `s` or a statement inside it satisfies `p`.
pub fn has(s: &Stmt, p: &dyn Fn(&Stmt) -> bool) -> bool {
    if p(s) {
        return true;
    }
    match s {
        Stmt::Seq(v) => v.iter().any(|s| has(s, p)),
        Stmt::For { body, .. }
        | Stmt::ThreadBinding { body, .. }
        | Stmt::Let { body, .. }
        | Stmt::Realize { body, .. }
        | Stmt::Allocate { body, .. } => has(body, p),
        Stmt::If { then, otherwise, .. } => has(then, p) || otherwise.as_ref().is_some_and(|o| has(o, p)),
        _ => false,
    }
}
