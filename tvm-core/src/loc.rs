//! Source locations: an opaque handle that errors carry and the macro turns into a span.

/// Where a piece of the user's program came from. `Loc::NONE` for nodes built in code.
///
/// The frontend records one `proc_macro2::Span` per handle in its [`SourceMap`]; the
/// compiler itself only copies handles around, so it never depends on spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Loc(pub u32);

impl Loc {
    pub const NONE: Loc = Loc(u32::MAX);
    /// The first handle of the statements the auto-scheduler writes (`crate::autosched`):
    /// they are parsed from text, so they name no token of the kernel, but their errors
    /// must still be told apart from those of the default schedule, which have none.
    pub const DERIVED: Loc = Loc(1 << 31);
    pub fn is_none(self) -> bool {
        self == Loc::NONE
    }
    /// A handle of a derived statement (see [`Loc::DERIVED`]).
    pub fn is_derived(self) -> bool {
        self.0 >= Loc::DERIVED.0 && !self.is_none()
    }
}

/// The spans behind [`Loc`] handles, filled by the frontend. A handle covers one token
/// or a range of tokens (start and end span), since `Span::join` is not available to
/// proc macros on stable Rust.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    spans: Vec<(proc_macro2::Span, proc_macro2::Span)>,
}

impl SourceMap {
    pub fn add(&mut self, span: proc_macro2::Span) -> Loc {
        self.add_range(span, span)
    }
    /// A handle covering `start` to `end`.
    pub fn add_range(&mut self, start: proc_macro2::Span, end: proc_macro2::Span) -> Loc {
        self.spans.push((start, end));
        Loc(self.spans.len() as u32 - 1)
    }
    fn get(&self, loc: Loc) -> Option<&(proc_macro2::Span, proc_macro2::Span)> {
        self.spans.get(loc.0 as usize)
    }
    /// The (start) span of `loc`, or the call site for `Loc::NONE`.
    pub fn span(&self, loc: Loc) -> proc_macro2::Span {
        self.range(loc).0
    }
    /// The first and last span of `loc`.
    pub fn range(&self, loc: Loc) -> (proc_macro2::Span, proc_macro2::Span) {
        self.get(loc).copied().unwrap_or((proc_macro2::Span::call_site(), proc_macro2::Span::call_site()))
    }
    /// `line:column` (1-based line, 0-based column) of `loc`, for messages outside the macro.
    pub fn line_col(&self, loc: Loc) -> Option<(usize, usize)> {
        let s = self.get(loc)?.0.start();
        Some((s.line, s.column))
    }
    /// A `syn::Error` covering `loc` (the whole range, on stable Rust too).
    pub fn error(&self, loc: Loc, message: impl std::fmt::Display) -> syn::Error {
        spanned_error(self.range(loc), message)
    }
}

/// A `syn::Error` from `start` to `end`: two tokens with those spans make syn emit a
/// `compile_error!` that rustc underlines as one range.
pub fn spanned_error(
    (start, end): (proc_macro2::Span, proc_macro2::Span),
    message: impl std::fmt::Display,
) -> syn::Error {
    let a = proc_macro2::Ident::new("start", start);
    let b = proc_macro2::Ident::new("end", end);
    syn::Error::new_spanned(quote::quote!(#a #b), message)
}
