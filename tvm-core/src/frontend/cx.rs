//! The parser's toolkit, shared by the kernel syntax (`parse.rs`) and the expression
//! syntax (`expr.rs`): the parsing state [`Cx`] (source map and collected errors),
//! sub-parsers over a piece of tokens or a group's contents, splitting at top-level
//! separators, and identifiers.

use super::ast::Name;
use super::error::{from_syn, FrontendError};
use crate::loc::{Loc, SourceMap};
use proc_macro2::{Group, Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};

/// The parser's state: the source map being filled and the errors found so far.
pub(crate) struct Cx {
    pub sm: SourceMap,
    pub errors: Vec<FrontendError>,
}

impl Cx {
    pub fn new() -> Cx {
        Cx { sm: SourceMap::default(), errors: Vec::new() }
    }
    /// A handle for `span`.
    pub fn loc(&mut self, span: Span) -> Loc {
        self.sm.add(span)
    }
    /// A handle covering `a` to `b`.
    pub fn join(&mut self, a: Loc, b: Loc) -> Loc {
        let (sa, sb) = (self.sm.span(a), self.sm.span(b));
        match sa.join(sb) {
            Some(s) => self.sm.add(s),
            None => {
                let (start, end) = (self.sm.range(a).0, self.sm.range(b).1);
                self.sm.add_range(start, end)
            }
        }
    }
    pub fn name(&mut self, ident: &syn::Ident) -> Name {
        Name { name: ident.to_string(), loc: self.loc(ident.span()) }
    }
    /// Runs `f` on `tokens` as a parser of its own, recording its error (if any).
    pub fn parse_piece<T>(
        &mut self,
        tokens: TokenStream,
        f: impl FnOnce(ParseStream, &mut Cx) -> syn::Result<T>,
    ) -> Option<T> {
        match parse_inner(tokens, self, f) {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.extend(from_syn(e));
                None
            }
        }
    }
}

/// Runs `f` on `tokens` as a parser of its own (so that its leftover tokens are its own
/// error, not an "unexpected token" of the enclosing parser). An error at the end of
/// the tokens points at their last token.
pub(crate) fn parse_inner<T>(
    tokens: TokenStream,
    cx: &mut Cx,
    f: impl FnOnce(ParseStream, &mut Cx) -> syn::Result<T>,
) -> syn::Result<T> {
    let end = tokens.clone().into_iter().last().map_or_else(Span::call_site, |t| t.span());
    parse_until(tokens, end, cx, f)
}

/// Runs `f` on the contents of `g`; an error at their end points at the closing
/// delimiter.
pub(crate) fn parse_group<T>(
    g: &Group,
    cx: &mut Cx,
    f: impl FnOnce(ParseStream, &mut Cx) -> syn::Result<T>,
) -> syn::Result<T> {
    parse_until(g.stream(), g.span_close(), cx, f)
}

fn parse_until<T>(
    tokens: TokenStream,
    end: Span,
    cx: &mut Cx,
    f: impl FnOnce(ParseStream, &mut Cx) -> syn::Result<T>,
) -> syn::Result<T> {
    (|input: ParseStream| f(input, cx)).parse2(tokens).map_err(|e| {
        let mut out: Option<syn::Error> = None;
        for e in e {
            let msg = e.to_string();
            let e = if msg.starts_with("unexpected end of input") { syn::Error::new(end, msg) } else { e };
            match &mut out {
                Some(o) => o.combine(e),
                None => out = Some(e),
            }
        }
        out.unwrap_or_else(|| syn::Error::new(end, "syntax error"))
    })
}

/// A piece of a token stream between separators, with the separator that ended it.
pub(crate) struct Piece {
    pub tokens: TokenStream,
    /// The span of the first token of the piece.
    pub first: Option<Span>,
    pub last: Option<Span>,
    pub terminated: bool,
}

/// Splits `ts` at top-level punctuation `sep` (groups are single tokens, so separators
/// inside brackets, parentheses and braces do not split).
pub(crate) fn split_top(ts: TokenStream, sep: char) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut cur: Vec<TokenTree> = Vec::new();
    for tt in ts {
        if let TokenTree::Punct(p) = &tt {
            if p.as_char() == sep {
                out.push(piece(std::mem::take(&mut cur), true));
                continue;
            }
        }
        cur.push(tt);
    }
    if !cur.is_empty() {
        out.push(piece(cur, false));
    }
    out
}

fn piece(tokens: Vec<TokenTree>, terminated: bool) -> Piece {
    let first = tokens.first().map(|t| t.span());
    let last = tokens.last().map(|t| t.span());
    Piece { tokens: tokens.into_iter().collect(), first, last, terminated }
}

/// An identifier (not a keyword), or the error `msg` at the current token (or at the
/// end of the input).
/// `item, item, ..` to the end of `input`, a trailing comma allowed.
pub(crate) fn comma_list<T>(
    input: ParseStream,
    cx: &mut Cx,
    mut item: impl FnMut(ParseStream, &mut Cx) -> syn::Result<T>,
) -> syn::Result<Vec<T>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        out.push(item(input, cx)?);
        if input.is_empty() {
            break;
        }
        input.parse::<syn::Token![,]>()?;
    }
    Ok(out)
}

pub(crate) fn ident(input: ParseStream, msg: &str) -> syn::Result<syn::Ident> {
    if input.peek(syn::Ident) {
        input.parse()
    } else {
        Err(input.error(msg))
    }
}
