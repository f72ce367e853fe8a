//! A linear layout of Rust tokens as source text, for the emitted functions too large for
//! prettyplease: `syn` parses the whole function before prettyplease prints it, and on a
//! fully unrolled register tile (a megabyte of text and more) the two took more than half
//! as long as emitting the function. This walks the tokens once: a line per statement,
//! item, attribute and match arm, four spaces of indent per brace, and spacing close to
//! rustfmt's within a line (no line is wrapped). The text reads back as the same tokens.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// `tokens` laid out as source text.
pub fn layout(tokens: &TokenStream) -> String {
    let mut l =
        Layout { out: String::new(), indent: 0, prev: Prev::LineStart, generics: 0, closure: false, declared: false };
    l.stream(tokens.clone(), Context::Block);
    while l.out.ends_with([' ', '\n']) {
        l.out.pop();
    }
    l.out.push('\n');
    l.out
}

/// Where a token stream sits: the top level or a brace group (statements, one a line),
/// or inside parentheses or brackets (one line).
#[derive(Clone, Copy, PartialEq)]
enum Context {
    Block,
    Inline,
}

/// The last thing written, which decides the space before the next token.
#[derive(Clone, PartialEq)]
enum Prev {
    /// The start of a line (or of the text).
    LineStart,
    Ident(String),
    Literal,
    /// A punctuation character; `joint` when it is glued to the next one (`::`, `->`),
    /// `unary` for a prefix operator (`-x`, `&x`, `!x`, `*x`) or a closure's opening `|`.
    Punct {
        ch: char,
        joint: bool,
        unary: bool,
    },
    Open(Delimiter),
    Close(Delimiter),
}

struct Layout {
    out: String,
    indent: usize,
    prev: Prev,
    /// How many `<` written as generic argument lists' brackets are open.
    generics: usize,
    /// Between a closure's opening `|` and its closing one.
    closure: bool,
    /// The last identifier is the name an item declares (after `fn`, `struct`, ...).
    declared: bool,
}

/// Keywords after which an opening parenthesis, `::` or a prefix operator is spaced.
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "else", "fn", "for", "if", "impl", "in", "let", "loop", "match", "move", "mut", "ref",
    "return", "static", "unsafe", "use", "where", "while", "dyn", "pub", "type", "struct", "enum", "mod",
];

impl Layout {
    fn newline(&mut self) {
        while self.out.ends_with(' ') {
            self.out.pop();
        }
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        self.prev = Prev::LineStart;
    }

    fn write(&mut self, text: &str, space: bool) {
        if self.prev == Prev::LineStart {
            if self.out.ends_with('\n') || self.out.is_empty() {
                for _ in 0..self.indent {
                    self.out.push_str("    ");
                }
            }
        } else if space {
            self.out.push(' ');
        }
        self.out.push_str(text);
    }

    fn stream(&mut self, tokens: TokenStream, cx: Context) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in trees.iter().enumerate() {
            let next = trees.get(i + 1);
            self.tree(t, next, cx);
        }
    }

    fn tree(&mut self, t: &TokenTree, next: Option<&TokenTree>, cx: Context) {
        // After a block (`}`) at statement level, a new line unless the statement goes on.
        if cx == Context::Block && self.prev == Prev::Close(Delimiter::Brace) {
            let goes_on = match t {
                TokenTree::Punct(p) => matches!(p.as_char(), ',' | ';' | '.' | '?' | ')'),
                TokenTree::Ident(i) => i == "else" || i == "as",
                _ => false,
            };
            if !goes_on {
                self.newline();
            }
        }
        match t {
            TokenTree::Ident(i) => {
                let s = i.to_string();
                let space = !self.tight() && !matches!(self.prev, Prev::Punct { joint: true, .. });
                self.write(&s, space);
                self.declared = matches!(&self.prev, Prev::Ident(k) if matches!(k.as_str(), "fn" | "struct" | "enum" | "type" | "trait"));
                self.prev = Prev::Ident(s);
            }
            TokenTree::Literal(lit) => {
                let space = !self.tight() && !matches!(self.prev, Prev::Punct { joint: true, .. });
                self.write(&lit.to_string(), space);
                self.prev = Prev::Literal;
            }
            TokenTree::Punct(p) => self.punct(p.as_char(), p.spacing(), next, cx),
            TokenTree::Group(g) => self.group(g.delimiter(), g.stream(), cx),
        }
    }

    /// Whether the next token goes right after the last one: at a line's start, after an
    /// opening delimiter or after punctuation that takes no space after it.
    fn tight(&self) -> bool {
        matches!(self.prev, Prev::Open(_) | Prev::LineStart) || self.after_tight_punct()
    }

    /// Whether the last token was punctuation that takes no space after it: `.`, the
    /// second `:` of `::`, a prefix operator, `#` of an attribute, `'` of a lifetime, a
    /// generic argument list's `<`.
    fn after_tight_punct(&self) -> bool {
        match &self.prev {
            Prev::Punct { ch: '.', .. } | Prev::Punct { ch: '#', .. } | Prev::Punct { ch: '\'', .. } => true,
            Prev::Punct { unary: true, .. } => true,
            Prev::Punct { ch: ':', joint: false, .. } => self.out.ends_with("::"),
            Prev::Punct { ch: '<', .. } => self.generics > 0 && self.out.ends_with('<'),
            _ => false,
        }
    }

    /// Whether the last token ends an operand (so a `-`, `&`, `*` or `|` after it is binary).
    fn after_operand(&self) -> bool {
        match &self.prev {
            Prev::Ident(s) => !KEYWORDS.contains(&s.as_str()),
            Prev::Literal | Prev::Close(_) => true,
            Prev::Punct { ch: '>', .. } => {
                self.out.ends_with('>') && !self.out.ends_with("->") && !self.out.ends_with("=>")
            }
            Prev::Punct { ch: '?', .. } => true,
            _ => false,
        }
    }

    fn punct(&mut self, ch: char, spacing: Spacing, next: Option<&TokenTree>, cx: Context) {
        let joint = spacing == Spacing::Joint;
        let glued = matches!(self.prev, Prev::Punct { joint: true, .. });
        let operand = self.after_operand();
        let mut unary = false;
        // Generic argument lists' brackets, whatever the spacing of the token before.
        let generic = match ch {
            '<' if (matches!(self.prev, Prev::Punct { ch: ':', .. }) || self.prev_is_type_name())
                && !matches!(next, Some(TokenTree::Punct(p)) if matches!(p.as_char(), '=' | '<')) =>
            {
                self.generics += 1;
                true
            }
            // (`>=` is a comparison; `>>` closes two lists.)
            '>' if self.generics > 0
                && !matches!(next, Some(TokenTree::Punct(p)) if p.as_char() == '=')
                && !matches!(self.prev, Prev::Punct { ch: '-' | '=', joint: true, .. }) =>
            {
                self.generics -= 1;
                true
            }
            _ => false,
        };
        let space = match ch {
            _ if glued || generic => false,
            ',' | ';' | '.' | '?' => false,
            ':' if joint => {
                // `::`: tight after a path segment, spaced after a keyword or an operator.
                match &self.prev {
                    Prev::Ident(s) => KEYWORDS.contains(&s.as_str()),
                    Prev::Close(_) => false,
                    // Tight after a generic argument list, spaced after `->` and `=>`.
                    Prev::Punct { ch: '>', .. } => self.out.ends_with("->") || self.out.ends_with("=>"),
                    Prev::Open(_) | Prev::LineStart => false,
                    _ => !self.after_tight_punct(),
                }
            }
            ':' => false,
            '!' if matches!(self.prev, Prev::Ident(_)) && matches!(next, Some(TokenTree::Group(_))) => false,
            // A closure's parameters: tight inside its pipes.
            '|' if self.closure => {
                self.closure = false;
                false
            }
            '|' if !operand && !joint => {
                self.closure = true;
                unary = true;
                !self.tight()
            }
            '#' | '\'' => !self.tight(),
            '-' | '&' | '*' | '!' | '|' if !operand => {
                unary = !joint;
                !self.tight()
            }
            _ => !self.tight(),
        };
        // Two separate puncts are never written as one of Rust's compound ones (`& &x` is
        // not `&&x`).
        let space = space || matches!(self.prev, Prev::Punct { ch: p, joint: false, .. } if compound(p, ch));
        let mut buf = [0u8; 4];
        self.write(ch.encode_utf8(&mut buf), space);
        self.prev = Prev::Punct { ch, joint, unary };
        if cx == Context::Block && (ch == ';' || (ch == ',' && self.generics == 0)) {
            self.newline();
        }
    }

    /// Whether a `<` now opens generic arguments or parameters: after a capitalised
    /// name (a type), or the name an item declares (`fn name<`), or `impl`.
    fn prev_is_type_name(&self) -> bool {
        match &self.prev {
            Prev::Ident(s) => {
                (s.starts_with(|c: char| c.is_ascii_uppercase()) && s.len() > 1) || self.declared || s == "impl"
            }
            _ => false,
        }
    }

    fn group(&mut self, delim: Delimiter, inner: TokenStream, cx: Context) {
        let (open, close) = match delim {
            Delimiter::Parenthesis => ("(", ")"),
            Delimiter::Bracket => ("[", "]"),
            Delimiter::Brace => ("{", "}"),
            Delimiter::None => ("", ""),
        };
        if delim == Delimiter::None {
            self.stream(inner, cx);
            return;
        }
        let space = match delim {
            // A call or an index is tight after what it applies to.
            Delimiter::Parenthesis | Delimiter::Bracket => {
                !(self.after_operand()
                    || self.tight()
                    || matches!(self.prev, Prev::Punct { ch: '!', unary: false, .. }))
            }
            // A `use` group is tight after its path's `::`.
            _ => !matches!(self.prev, Prev::LineStart | Prev::Open(_)) && !self.out.ends_with("::"),
        };
        // A `#[...]` attribute: tight after `#`.
        let space = space && !matches!(self.prev, Prev::Punct { ch: '#', .. });
        self.write(open, space);
        let saved = std::mem::take(&mut self.generics);
        let closure = std::mem::take(&mut self.closure);
        if delim == Delimiter::Brace {
            if inner.is_empty() {
                self.out.push('}');
            } else {
                self.indent += 1;
                self.newline();
                self.stream(inner, Context::Block);
                self.indent -= 1;
                self.newline();
                self.write(close, false);
            }
        } else {
            self.prev = Prev::Open(delim);
            self.stream(inner, Context::Inline);
            self.write(close, false);
        }
        self.generics = saved;
        self.closure = closure;
        self.prev = Prev::Close(delim);
        // An attribute at statement level ends its line.
        if delim == Delimiter::Bracket && cx == Context::Block && self.attribute_line() {
            self.newline();
        }
    }

    /// Whether the current line is one attribute (`#[...]`).
    fn attribute_line(&self) -> bool {
        let line = self.out.rsplit('\n').next().unwrap_or("").trim_start();
        (line.starts_with("#[") || line.starts_with("#![")) && line.ends_with(']')
    }
}

/// Whether `a` then `b`, written together, would read as (the start of) one compound
/// punctuation token of Rust.
fn compound(a: char, b: char) -> bool {
    matches!(
        (a, b),
        (':', ':')
            | ('-' | '=', '>')
            | ('=' | '!' | '<' | '>' | '+' | '-' | '*' | '/' | '%' | '^' | '&' | '|', '=')
            | ('&', '&')
            | ('|', '|')
            | ('<', '<' | '-')
            | ('>', '>')
            | ('.', '.' | '=')
    )
}

#[cfg(test)]
mod tests {
    use super::layout;
    use proc_macro2::TokenStream;

    /// The tokens of `text`, as text (spacing normalised).
    fn tokens(text: &str) -> String {
        text.parse::<TokenStream>().unwrap().to_string()
    }

    fn check(src: &str, want: &str) {
        let ts: TokenStream = src.parse().unwrap();
        let got = layout(&ts);
        assert_eq!(got, want, "laid out:\n{got}");
        assert_eq!(tokens(&got), ts.to_string(), "the same tokens");
    }

    #[test]
    fn statements_one_a_line_and_blocks_indented() {
        check(
            "fn f(x: &[f32], n: i64) -> Result<(), E> { let mut a: [f32; 4] = [0f32; 4]; for i in 0..n { a[0] += x[i as usize]; } if n > 0 { g(&a)?; } else { return Err(E::new(-1)); } Ok(()) }",
            "fn f(x: &[f32], n: i64) -> Result<(), E> {\n    let mut a: [f32; 4] = [0f32; 4];\n    for i in 0..n {\n        a[0] += x[i as usize];\n    }\n    if n > 0 {\n        g(&a)?;\n    } else {\n        return Err(E::new(-1));\n    }\n    Ok(())\n}\n",
        );
    }

    #[test]
    fn separate_puncts_stay_apart_and_arrows_are_spaced() {
        let ts: TokenStream =
            "fn f() -> ::core::result::Result<Vec<Vec<u8>>, E> { match x { 0 => -1, _ => & &y } ; a .. = b; OH <= x; }"
                .parse()
                .unwrap();
        let got = layout(&ts);
        assert_eq!(tokens(&got), ts.to_string(), "the same tokens:\n{got}");
        for want in ["-> ::core::result::Result<Vec<Vec<u8>>, E> {", "0 => -1,", "& &y", "a.. = b;", "OH <= x;"] {
            assert!(got.contains(want), "`{want}` in:\n{got}");
        }
    }

    #[test]
    fn paths_generics_attributes_and_closures() {
        check(
            "#[inline(always)] fn __body<const L: u8>(a: &mut [f32]) { let v = __ldv::<_, 4, true>(&a[..], 0i64, \"SAFETY: 0 <= 0\"); ::core::mem::drop(v); __par_for(n, |__i, __c| { __c[0] = -__i; }); matches!(L, 0u8 | 1u8); }",
            "#[inline(always)]\nfn __body<const L: u8>(a: &mut [f32]) {\n    let v = __ldv::<_, 4, true>(&a[..], 0i64, \"SAFETY: 0 <= 0\");\n    ::core::mem::drop(v);\n    __par_for(n, |__i, __c| {\n        __c[0] = -__i;\n    });\n    matches!(L, 0u8 | 1u8);\n}\n",
        );
    }
}
