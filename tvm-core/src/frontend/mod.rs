//! The kernel language frontend: parses a `compute!` input (DSL.md §2–3) into a
//! type-checked tensor-expression [`Graph`], and applies its `schedule!` blocks.
//!
//! The flow is parse (`parse.rs`, `expr.rs`, into the [`ast`]) → check (`check/`, into
//! the graph) → schedule (`schedule.rs`, on demand by [`build_schedule`] and
//! [`check_schedules`]). Every step collects all the errors it finds. Errors
//! carry a [`Loc`]; [`Kernel::source_map`] turns the `Loc`s of schedule errors into
//! spans, and a [`FrontendError`] also carries its span, since a failed parse returns
//! no source map.
//!
//! Decisions where DSL.md is silent:
//! - Precedence is Rust's: unary `-`/`!` bind tighter than `as` (`-x as f64` is
//!   `(-x) as f64`), and comparisons do not chain.
//! - An unsuffixed literal takes the type of the other operand, else the type the
//!   context expects (the stage's element type; `i64` in indices and ranges), else
//!   `i64` / `f64`. Axes, dims and `usize` scalars are `i64` values; other scalars keep
//!   their declared type, except inside an index and where they meet index arithmetic
//!   (`check/mod.rs`); tensor indices of another integer type are cast to `i64`.
//! - An axis may share a tensor's name (`out[n, c, y, x] = x[n, c, y, x]`): `x[..]` is
//!   always the read, a bare `x` the axis. It may not shadow a dim or a scalar.
//! - A `usize` parameter used as a dim binds it ([`Kernel::dim_bindings`]).
//! - A reduction range may use dims, scalars and constants, not axes.
//! - The constants are `f32::{INFINITY, NEG_INFINITY, MAX, MIN, MIN_POSITIVE, EPSILON,
//!   NAN}` (and `f64::..`) and `MAX`/`MIN` of the integer types.
//! - Schedules: `(a, b)` and `[a, b]` patterns both destructure; `fuse` takes two or
//!   more adjacent axes; `cache_read` takes a list of readers or one reader.
//!
//! ```
//! use tvm_core::frontend::{build_schedule, parse_str};
//! use tvm_core::Target;
//! let k = parse_str(
//!     "pub fn add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }
//!      schedule!(cpu) { let (o, v) = c.split(c.i, 16); c.parallel(o); c.vectorize(v); }",
//! )
//! .unwrap();
//! assert_eq!(k.graph.tensors.len(), 3);
//! assert!(build_schedule(&k, &Target::cpu()).is_ok());
//! ```

pub mod ast;
mod check;
mod cx;
mod error;
mod expr;
mod parse;
mod schedule;

pub use ast::ScheduleBlock;
pub use check::DimBinding;
pub use error::FrontendError;

use crate::loc::{Loc, SourceMap};
use crate::schedule::{Schedule, ScheduleError};
use crate::target::Target;
use crate::te::Graph;
use proc_macro2::TokenStream;

/// A parsed and type-checked kernel with its (not yet applied) schedule blocks.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The function name.
    pub name: String,
    /// Outer attributes as written, doc comments included.
    pub attrs: Vec<syn::Attribute>,
    /// The text of the doc comments (`/// text` gives `" text"`), in order.
    pub docs: Vec<String>,
    pub vis: syn::Visibility,
    /// The algorithm: inputs in parameter order, then one compute tensor per stage.
    pub graph: Graph,
    /// Dims whose value is a `usize` scalar parameter of the same name. Such a dim is
    /// in `graph.dims` like any other; when it also appears in an input's shape, the
    /// caller must check that the two agree.
    pub dim_bindings: Vec<DimBinding>,
    /// The `schedule!` blocks in source order.
    pub schedules: Vec<ScheduleBlock>,
    /// The spans behind every `Loc` in the graph, the schedule blocks and their errors.
    pub source_map: SourceMap,
    /// The syntax tree, with locations (the signature as written, for code generation).
    pub ast: ast::KernelAst,
}

impl Kernel {
    /// The span of a location of this kernel (the call site for `Loc::NONE`).
    pub fn span(&self, loc: Loc) -> proc_macro2::Span {
        self.source_map.span(loc)
    }

    /// The block of `schedule!` statements used for `target` (see [`build_schedule`]).
    pub fn schedule_block(&self, target: &Target) -> Option<&ScheduleBlock> {
        schedule::select_block(&self.schedules, target.kind).map(|(b, _)| b)
    }
}

/// Parses the syntax of a kernel without type checking it: the macro uses the signature
/// to emit a stub of the declared function when the kernel has errors, so that the
/// rest of the crate does not cascade into "cannot find function".
pub fn parse_syntax(tokens: TokenStream) -> Result<(ast::KernelAst, SourceMap), Vec<FrontendError>> {
    parse::parse_kernel_ast(tokens)
}

/// Parses and checks the tokens inside `compute! { ... }`: the kernel and its schedule
/// blocks. Syntax errors of a schedule statement are not reported here but by
/// [`check_schedules`] and [`build_schedule`], with the other schedule errors.
pub fn parse_kernel(tokens: TokenStream) -> Result<Kernel, Vec<FrontendError>> {
    let (ast, source_map) = parse::parse_kernel_ast(tokens)?;
    let checked = check::check_kernel(&ast, &source_map)?;
    let docs = ast
        .attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    Ok(Kernel {
        name: ast.sig.name.name.clone(),
        attrs: ast.attrs.clone(),
        docs,
        vis: ast.vis.clone(),
        graph: checked.graph,
        dim_bindings: checked.dim_bindings,
        // The schedules as written: every knob at its first value.
        schedules: ast.schedules.iter().map(|b| crate::tune::resolve(b, &[])).collect(),
        source_map,
        ast,
    })
}

/// The input of a `compute!` invocation written out in full (`compute! { .. }`,
/// `tvm::compute! { .. }`, `compute!( .. );`): the tokens inside its delimiters. Any other
/// token stream is returned as it is, so a file may hold either the macro's input or a
/// whole invocation (tools read kernels out of Rust source this way).
pub fn unwrap_invocation(tokens: TokenStream) -> TokenStream {
    use syn::parse::{ParseStream, Parser};
    // `path::to::compute! (..)`, then an optional `;` and nothing else.
    let invocation = |input: ParseStream| -> syn::Result<syn::Macro> {
        let mac: syn::Macro = input.parse()?;
        let _: Option<syn::Token![;]> = input.parse()?;
        Ok(mac)
    };
    match invocation.parse2(tokens.clone()) {
        Ok(mac) if mac.path.segments.last().is_some_and(|s| s.ident == "compute") => mac.tokens,
        _ => tokens,
    }
}

/// [`parse_kernel`] on source text (tests, tools): the macro's input, or a whole
/// `compute! { .. }` invocation (see [`unwrap_invocation`]); a lexer error is one error.
pub fn parse_str(src: &str) -> Result<Kernel, Vec<FrontendError>> {
    match src.parse::<TokenStream>() {
        Ok(tokens) => parse_kernel(unwrap_invocation(tokens)),
        Err(e) => Err(vec![FrontendError::at_span(e.span(), format!("cannot tokenize the kernel: {e}"))]),
    }
}

/// The schedule of `kernel` for `target`.
///
/// The block used is the one whose target has the kind of `target` (`cpu` and `llvm ..`
/// schedule CPUs; `cuda`, `"cuda -arch=sm_90"` CUDA; `opencl` OpenCL). GPU targets
/// share schedules: with no block of its own kind, a GPU target borrows a block of
/// another GPU kind (CUDA first, then OpenCL), so a `schedule!(cuda)` also schedules
/// OpenCL and the reverse. A borrowed block that is not legal on `target` (say, 1024
/// threads per block on an OpenCL device that allows 256) is dropped for the default
/// schedule, since the user did not write it for this target; its own errors are
/// reported by [`check_schedules`]. The primitives are applied for `target` itself (its
/// limits, not those of the block's target string). Stages no statement names get the
/// target's defaults; then the schedule is validated. With no usable block, the result
/// is [`Schedule::default_for`]. All errors found are returned.
pub fn build_schedule(kernel: &Kernel, target: &Target) -> Result<Schedule, Vec<ScheduleError>> {
    build_schedule_in(&kernel.graph, &kernel.schedules, target)
}

/// [`build_schedule`] of the algorithm `graph` with the blocks `schedules`.
fn build_schedule_in(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
) -> Result<Schedule, Vec<ScheduleError>> {
    schedule_in(graph, schedules, target).0
}

/// [`build_schedule_in`], and where the schedule came from.
fn schedule_in(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
) -> (Result<Schedule, Vec<ScheduleError>>, ScheduleSource) {
    let index = |b: &ScheduleBlock| schedules.iter().position(|x| std::ptr::eq(x, b)).unwrap_or(0);
    let default = |reason: String| {
        let s = match schedule::apply_derived(graph, None, target.clone()) {
            Ok(s) => Ok(s),
            Err(_) => {
                let s = Schedule::default_for(graph.clone(), target.clone());
                let errors = s.validate();
                if errors.is_empty() {
                    Ok(s)
                } else {
                    Err(errors)
                }
            }
        };
        (s, ScheduleSource::Default { reason })
    };
    if crate::autosched::written_blocks_ignored() {
        return default("`TVM_SCHEDULES=derived` ignores the written blocks".into());
    }
    match schedule::select_block(schedules, target.kind) {
        Some((b, borrowed)) => match (schedule::apply_derived(graph, Some(b), target.clone()), borrowed) {
            (Err(es), true) => default(format!(
                "the `schedule!({})` block does not apply to {}: {}",
                b.target,
                target.kind.name(),
                es.first().map(|e| e.to_string()).unwrap_or_default()
            )),
            (r, true) => (r, ScheduleSource::Borrowed { block: index(b) }),
            (r, false) => (r, ScheduleSource::Own { block: index(b) }),
        },
        None if schedules.iter().all(|b| Target::parse(&b.target).is_err()) => {
            default("the kernel has no `schedule!` block".into())
        }
        None => default(format!("no `schedule!` block is for {}", target.kind.name())),
    }
}

/// Checks every schedule block against its own target: target strings that do not
/// parse (`UnknownTarget`), two blocks for one target kind (`DuplicateSchedule`), and
/// every error of applying each block. Empty when all blocks are good.
pub fn check_schedules(kernel: &Kernel) -> Vec<ScheduleError> {
    schedule::check_all(kernel)
}

/// The block that schedules a target of `kind` (its own, or one borrowed from another
/// GPU kind), and whether it was borrowed.
pub fn select_schedule_block(schedules: &[ScheduleBlock], kind: crate::TargetKind) -> Option<(&ScheduleBlock, bool)> {
    schedule::select_block(schedules, kind)
}

/// Applies one knob-free schedule block to `graph` for `target` (then the defaults for
/// untouched stages) and validates it: the schedule, or every error.
pub fn schedule_apply(
    graph: &crate::te::Graph,
    block: &ScheduleBlock,
    target: Target,
) -> Result<crate::schedule::Schedule, Vec<ScheduleError>> {
    schedule::apply_block(graph, block, target)
}

/// Lowers `kernel` for `target` with the block that applies to it. A GPU target without
/// a block of its own borrows the other GPU kind's; where that does not lower on this
/// target, it gets its default schedule (the errors belong to the other target).
pub fn lower_for(kernel: &Kernel, target: &Target) -> Result<crate::tir::PrimFunc, Vec<ScheduleError>> {
    lower_for_in(&kernel.graph, &kernel.schedules, target)
}

/// [`lower_for`] of the algorithm `graph` with the blocks `schedules` (plain data, so
/// the expansion can lower for several targets on several threads).
pub(crate) fn lower_for_in(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
) -> Result<crate::tir::PrimFunc, Vec<ScheduleError>> {
    lower_for_in_traced(graph, schedules, target, &mut |_| {})
}

/// [`lower_for_in`] with a pass tracer (see [`crate::lower::lower_traced`]).
pub(crate) fn lower_for_in_traced(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(crate::lower::PassEvent<'_>),
) -> Result<crate::tir::PrimFunc, Vec<ScheduleError>> {
    lower_explained_in(graph, schedules, target, trace).2
}

/// [`lower_for_in_traced`], and the schedule that was lowered as `schedule!` source
/// ([`schedule_source`]; empty when no schedule was built).
pub(crate) fn lower_with_source(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(crate::lower::PassEvent<'_>),
) -> (Result<crate::tir::PrimFunc, Vec<ScheduleError>>, String) {
    let (sch, source, f) = lower_explained_in(graph, schedules, target, trace);
    let text = sch.as_ref().map(|s| schedule_source(schedules, target, s, &source)).unwrap_or_default();
    (f, text)
}

/// The schedule `sch` (built for `target` from `source`) as `schedule!` source a user can
/// paste into the kernel: the written block's statements (knobs at the values that run),
/// then the statements the auto-scheduler derived for the stages the block leaves
/// unshaped, with their reasons as comments. Stages neither covers keep the flat
/// defaults, as they would in the pasted block.
pub fn schedule_source(schedules: &[ScheduleBlock], target: &Target, sch: &Schedule, source: &ScheduleSource) -> String {
    let kind = target.kind.name();
    let mut out = String::new();
    let written = match source {
        ScheduleSource::Own { block } | ScheduleSource::Borrowed { block } => schedules.get(*block),
        ScheduleSource::Default { .. } => None,
    };
    let header = match (source, &sch.derived) {
        (ScheduleSource::Own { .. }, _) => format!("the `schedule!({kind})` block as written"),
        (ScheduleSource::Borrowed { block }, _) => {
            format!("the `schedule!({})` block, borrowed", schedules.get(*block).map_or("", |b| b.target.as_str()))
        }
        (ScheduleSource::Default { reason }, _) => format!("derived by the auto-scheduler: {reason}"),
    };
    out.push_str(&format!("// The schedule of {kind}: {header}.\n"));
    out.push_str(&format!("schedule!({kind}) {{\n"));
    if let Some(b) = written {
        for st in &b.stmts {
            if let ast::SchedStmt::Call { pattern, call, .. } = st {
                match pattern {
                    Some(p) => out.push_str(&format!("    let {} = {call};\n", print_pattern(p))),
                    None => out.push_str(&format!("    {call};\n")),
                }
            }
        }
    }
    match &sch.derived {
        Some(d) if d.fallback.is_none() && !d.text.is_empty() => {
            if written.is_some() {
                out.push_str("    // Derived for the stages the block leaves unshaped:\n");
            }
            out.push_str(&d.text);
            out.push('\n');
        }
        Some(d) => {
            if let Some(why) = &d.fallback {
                out.push_str(&format!("    // The derived statements were dropped ({why}); the flat defaults run.\n"));
            }
        }
        None => {}
    }
    out.push_str("}\n");
    out
}

fn print_pattern(p: &ast::Pattern) -> String {
    let name = |n: &ast::PatName| match n {
        ast::PatName::Name(n) => n.name.clone(),
        ast::PatName::Wild(_) => "_".to_string(),
    };
    match p {
        ast::Pattern::Single(n) => name(n),
        ast::Pattern::Multi { names, .. } => format!("({})", names.iter().map(name).collect::<Vec<_>>().join(", ")),
    }
}

/// Where the schedule a target gets came from (tools explain it; see [`build_schedule`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleSource {
    /// The kernel's own `schedule!` block for the target (its index in `schedules`).
    Own { block: usize },
    /// A block written for another GPU target (its index), borrowed.
    Borrowed { block: usize },
    /// The target's default schedule, and why no block was used.
    Default { reason: String },
}

/// [`lower_for`], also saying which schedule was used and calling `trace` after every
/// pass (see [`crate::lower::lower_traced`]). Where a target without a block of its own
/// falls back to its default schedule, the tracer sees the failed lowering, then the
/// fallback's from its first pass (`inline_stages`) again. The schedule is returned
/// when one was built, also when lowering it failed.
pub fn lower_explained(
    kernel: &Kernel,
    target: &Target,
    trace: &mut dyn FnMut(crate::lower::PassEvent<'_>),
) -> (Option<Schedule>, ScheduleSource, Result<crate::tir::PrimFunc, Vec<ScheduleError>>) {
    lower_explained_in(&kernel.graph, &kernel.schedules, target, trace)
}

/// Lowers `graph` for `target` with the block `schedules` give it, and nothing else: no
/// fallback to the default schedule where a borrowed block does not lower. How the
/// tuner judges a candidate, and how the macro lowers a record's winner.
pub fn lower_exact(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
) -> Result<crate::tir::PrimFunc, Vec<ScheduleError>> {
    let (sch, _) = schedule_in(graph, schedules, target);
    crate::lower::lower_traced(&sch?, &mut |_| {})
}

/// [`lower_explained`] of the algorithm `graph` with the blocks `schedules`.
fn lower_explained_in(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(crate::lower::PassEvent<'_>),
) -> (Option<Schedule>, ScheduleSource, Result<crate::tir::PrimFunc, Vec<ScheduleError>>) {
    let (sch, source) = schedule_in(graph, schedules, target);
    let result = match &sch {
        Ok(s) => crate::lower::lower_traced(s, trace),
        Err(es) => Err(es.clone()),
    };
    // Derived statements that do not lower are a compiler bug, never the user's: the
    // same schedule without them (the written block and the flat defaults) is lowered.
    if let (Ok(s), Err(es)) = (&sch, &result) {
        if let Some(d) = s.derived.as_ref().filter(|d| d.fallback.is_none()) {
            let block = match &source {
                ScheduleSource::Own { block } | ScheduleSource::Borrowed { block } => schedules.get(*block),
                ScheduleSource::Default { .. } => None,
            };
            let flat = match block {
                Some(b) => schedule::apply_block(graph, b, target.clone()),
                None => Ok(Schedule::default_for(graph.clone(), target.clone())),
            };
            if let Ok(mut flat) = flat {
                let first = es.first().map(|e| e.to_string()).unwrap_or_default();
                let mut d = (**d).clone();
                d.fallback = Some(format!("the derived schedule does not lower: {first}"));
                flat.derived = Some(Box::new(d));
                let result = crate::lower::lower_traced(&flat, trace);
                return lower_fallback(graph, schedules, target, trace, Ok(flat), source, result);
            }
        }
    }
    lower_fallback(graph, schedules, target, trace, sch, source, result)
}

/// A borrowed block that does not lower on this target gives way to the default
/// schedule: the errors belong to the other target.
fn lower_fallback(
    graph: &crate::te::Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(crate::lower::PassEvent<'_>),
    sch: Result<Schedule, Vec<ScheduleError>>,
    source: ScheduleSource,
    result: Result<crate::tir::PrimFunc, Vec<ScheduleError>>,
) -> (Option<Schedule>, ScheduleSource, Result<crate::tir::PrimFunc, Vec<ScheduleError>>) {
    if result.is_err() && !matches!(source, ScheduleSource::Own { .. }) {
        let reason = match (&source, &result) {
            (ScheduleSource::Borrowed { block }, Err(es)) => format!(
                "the `schedule!({})` block does not lower for {}: {}",
                schedules[*block].target,
                target.kind.name(),
                es.first().map(|e| e.to_string()).unwrap_or_default()
            ),
            (ScheduleSource::Default { reason }, _) => reason.clone(),
            _ => String::new(),
        };
        let s = Schedule::default_for(graph.clone(), target.clone());
        let result = crate::lower::lower_traced(&s, trace);
        return (Some(s), ScheduleSource::Default { reason }, result);
    }
    (sch.ok(), source, result)
}
