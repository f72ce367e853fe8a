//! Source locations: an opaque handle that errors carry and the macro turns into a span.

/// Where a piece of the user's program came from. `Loc::NONE` for nodes built in code.
///
/// The frontend records one `proc_macro2::Span` per handle in its [`SourceMap`]; the
/// compiler itself only copies handles around, so it never depends on spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Loc(pub u32);

impl Loc {
    pub const NONE: Loc = Loc(u32::MAX);
    pub fn is_none(self) -> bool {
        self == Loc::NONE
    }
}

/// The spans behind [`Loc`] handles, filled by the frontend.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    spans: Vec<proc_macro2::Span>,
}

impl SourceMap {
    pub fn add(&mut self, span: proc_macro2::Span) -> Loc {
        self.spans.push(span);
        Loc(self.spans.len() as u32 - 1)
    }
    /// The span of `loc`, or the call site for `Loc::NONE`.
    pub fn span(&self, loc: Loc) -> proc_macro2::Span {
        self.spans.get(loc.0 as usize).copied().unwrap_or_else(proc_macro2::Span::call_site)
    }
    /// `line:column` (1-based line, 0-based column) of `loc`, for messages outside the macro.
    pub fn line_col(&self, loc: Loc) -> Option<(usize, usize)> {
        let s = self.spans.get(loc.0 as usize)?.start();
        Some((s.line, s.column))
    }
}
