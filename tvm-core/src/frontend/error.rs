//! Errors of the kernel frontend (syntax and type errors), each at a source location.

use crate::loc::{Loc, SourceMap};
use std::fmt;

/// A user error in a kernel: a lowercase message without a trailing period, an optional
/// `help:` line, and where it is. `span` is the span behind `loc`, so an error can be
/// turned into a compile error without the kernel's [`SourceMap`] (which a failed parse
/// does not return).
#[derive(Clone, Debug)]
pub struct FrontendError {
    pub loc: Loc,
    pub span: proc_macro2::Span,
    /// The last span the error covers (`span` for a single token).
    pub end: proc_macro2::Span,
    pub message: String,
    pub help: Option<String>,
}

impl FrontendError {
    /// An error at `loc`, whose span is looked up in `sm`.
    pub fn new(sm: &SourceMap, loc: Loc, message: impl Into<String>) -> FrontendError {
        let (span, end) = sm.range(loc);
        FrontendError { loc, span, end, message: message.into(), help: None }
    }

    /// An error at a span that has no [`Loc`] (syntax errors).
    pub fn at_span(span: proc_macro2::Span, message: impl Into<String>) -> FrontendError {
        FrontendError { loc: Loc::NONE, span, end: span, message: message.into(), help: None }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> FrontendError {
        self.help = Some(help.into());
        self
    }

    /// `line:column` (1-based line, 0-based column) where the error starts.
    pub fn line_col(&self) -> (usize, usize) {
        let s = self.span.start();
        (s.line, s.column)
    }

    /// The error as a `syn::Error` at its span, the help line appended to the message.
    pub fn to_syn_error(&self) -> syn::Error {
        crate::loc::spanned_error((self.span, self.end), self)
    }
}

impl fmt::Display for FrontendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\nhelp: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for FrontendError {}

/// Converts a `syn` parse error (possibly several combined) into frontend errors.
pub(crate) fn from_syn(e: syn::Error) -> Vec<FrontendError> {
    e.into_iter().map(|e| FrontendError::at_span(e.span(), e.to_string())).collect()
}
