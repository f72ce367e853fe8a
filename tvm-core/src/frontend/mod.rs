//! The kernel language frontend: parses a `compute!` input (docs/LANGUAGE.md §2–3) into
//! a type-checked tensor-expression [`Graph`], and applies its `schedule!` blocks.
//!
//! The flow is parse (`parse.rs`, `expr.rs`, into the [`ast`]) → check (`check/`, into
//! the graph) → schedule (`schedule.rs`, on demand by [`schedule_apply`] and
//! [`check_schedules`]; which block a target gets is the driver's choice,
//! `driver::build_schedule`). Every step collects all the errors it finds. Errors
//! carry a [`Loc`]; [`Kernel::source_map`] turns the `Loc`s of schedule errors into
//! spans, and a [`FrontendError`] also carries its span, since a failed parse returns
//! no source map.
//!
//! Decisions where docs/LANGUAGE.md is silent:
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
//! use tvm_core::driver::build_schedule;
//! use tvm_core::frontend::parse_str;
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
pub mod knobs;
mod parse;
mod schedule;

pub use ast::ScheduleBlock;
pub use check::DimBinding;
pub use error::FrontendError;
pub use schedule::Application;

use crate::loc::{Loc, SourceMap};
use crate::schedule::ScheduleError;
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

    /// The block of `schedule!` statements used for `target` (see `driver::build_schedule`).
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

/// The text of the `///` lines (`#[doc = ".."]` attributes) among `attrs`, in order.
pub fn doc_lines(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Parses and checks the tokens inside `compute! { ... }`: the kernel and its schedule
/// blocks. Syntax errors of a schedule statement are not reported here but by
/// [`check_schedules`] and [`schedule_apply`], with the other schedule errors.
pub fn parse_kernel(tokens: TokenStream) -> Result<Kernel, Vec<FrontendError>> {
    let (ast, source_map) = parse::parse_kernel_ast(tokens)?;
    let checked = check::check_kernel(&ast, &source_map)?;
    let docs = doc_lines(&ast.attrs);
    Ok(Kernel {
        name: ast.sig.name.name.clone(),
        attrs: ast.attrs.clone(),
        docs,
        vis: ast.vis.clone(),
        graph: checked.graph,
        dim_bindings: checked.dim_bindings,
        // The schedules as written: every knob at its first value.
        schedules: ast.schedules.iter().map(|b| knobs::resolve(b, &[])).collect(),
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
