//! What the code generators' tests share: a kernel's source lowered for a target, the
//! kernels of a Rust file (the registry's files), and a search of the lowered statements.
#![allow(dead_code)]

use proc_macro2::TokenStream;
use tvm_core::driver::build_schedule;
use tvm_core::frontend::{parse_kernel, parse_str, Kernel};
use tvm_core::schedule::Schedule;
use tvm_core::tir::{PrimFunc, Stmt};
use tvm_core::Target;

/// A convolution whose output is rows-first (`y[i, f, j]`), with no schedule: the derived
/// parallel loop fuses the rows with the two blocks of 8 filters (`y_par / 2` is the row).
/// `partition_loops.rs` runs its TIR, `codegen_rust.rs` its emitted Rust.
pub const CONV_ROWS_FIRST: &str = "compute! {
    fn conv_rows_first(x: f32[H, 10, W], w: f32[16, 10, 3, 3], oh: usize, ow: usize) -> y: f32[oh, 16, ow] {
        let c[i, f, j]: f32[oh, 16, ow] = sum(if i + r < H && j + s < W { x[i + r, c, j + s] } else { 0.0 } * w[f, c, r, s] for c in 0..10, r in 0..3, s in 0..3);
        y[i, f, j] = c[i, f, j].max(0.0);
    }
}";

fn show(e: &[tvm_core::schedule::ScheduleError]) -> String {
    e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
}

/// `src` (a `compute!` invocation, possibly after docs and `use` lines, as in the example
/// files) lowered for `target`: with its own (or borrowed) schedule, or the default.
pub fn lower_for(src: &str, target: &Target, default: bool) -> PrimFunc {
    let src = &src[src.find("compute!").expect("a compute! block")..];
    let k = parse_str(src).unwrap_or_else(|e| panic!("kernel does not parse: {e:#?}"));
    lower_kernel(&k, target, default)
}

/// The input of every `compute!` invocation among the items of `text` (a Rust file).
pub fn invocations(text: &str) -> Vec<TokenStream> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("the file does not parse: {e}"));
    file.items
        .into_iter()
        .filter_map(|item| match item {
            syn::Item::Macro(m) if m.mac.path.segments.last().is_some_and(|s| s.ident == "compute") => {
                Some(m.mac.tokens)
            }
            _ => None,
        })
        .collect()
}

/// Kernel `function` of the file `text` (for a generic kernel, its instance for
/// `instance`), parsed and checked.
pub fn kernel_in(text: &str, function: &str, instance: Option<&str>) -> Kernel {
    let tokens = kernel_tokens_in(text, function, instance);
    parse_kernel(tokens).unwrap_or_else(|e| panic!("{function}: kernel does not parse: {e:#?}"))
}

/// The tokens of kernel `function` of the file `text` (of its instance for `instance`).
pub fn kernel_tokens_in(text: &str, function: &str, instance: Option<&str>) -> TokenStream {
    for tokens in invocations(text) {
        let instances = tvm_core::expand::generic::instances(&tokens).unwrap_or_else(|e| panic!("{function}: {e}"));
        for (ty, tokens) in instances {
            let Ok((ast, _)) = tvm_core::frontend::parse_syntax(tokens.clone()) else { continue };
            if ast.sig.name.name == function && ty.as_deref() == instance {
                return tokens;
            }
        }
    }
    panic!("no kernel `{function}` (instance {instance:?}) in the file")
}

/// `tokens` (a kernel) without its `schedule!(..) { .. }` blocks.
pub fn without_blocks(tokens: TokenStream) -> TokenStream {
    use proc_macro2::TokenTree;
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let is_block = matches!(&toks[i], TokenTree::Ident(id) if id == "schedule")
            && matches!(toks.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!')
            && matches!(toks.get(i + 2), Some(TokenTree::Group(_)))
            && matches!(toks.get(i + 3), Some(TokenTree::Group(_)));
        if is_block {
            i += 4;
        } else {
            out.push(toks[i].clone());
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// `kernel` lowered for `target`: with its own (or borrowed) schedule, or the default.
pub fn lower_kernel(kernel: &Kernel, target: &Target, default: bool) -> PrimFunc {
    let s = if default {
        Schedule::default_for(kernel.graph.clone(), target.clone())
    } else {
        build_schedule(kernel, target).unwrap_or_else(|e| panic!("schedule rejected: {}", show(&e)))
    };
    tvm_core::driver::lower(&s).unwrap_or_else(|e| panic!("lowering failed: {}", show(&e)))
}

/// The schedule the auto-scheduler derives for `kernel` on `target` with the kernel's
/// blocks removed; a derived schedule that fell back to the flat defaults fails.
pub fn derived_schedule(kernel: &Kernel, target: &Target) -> Schedule {
    let mut k = kernel.clone();
    k.schedules.clear();
    let s = build_schedule(&k, target).unwrap_or_else(|e| panic!("the derived schedule is rejected: {}", show(&e)));
    if let Some(why) = s.derived.as_ref().and_then(|d| d.fallback.clone()) {
        panic!("the derived schedule fell back to the flat defaults: {why}");
    }
    s
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
