//! Reads the text [`super::printer`] writes back into TIR: for every function `f` the
//! pipeline makes, `print_func(&parse_func(&print_func(&f))?)` is `print_func(&f)`. Pass
//! tests (`tests/filetests/`) start from such text.
//!
//! ```text
//! @func cpu scale(a: f32[n] global, b: f32[n] global out, k: f32)
//!   for i in serial(0, n):
//!     b[i] = a[i] * k
//! ```
//!
//! A name stands for one variable (or one buffer) in the whole function, as the printer
//! writes it: two loops that print the same variable name bind the same `Var`. Variables
//! that no binder declares (the dims in the parameters' shapes) are `i64`. The type of a
//! literal without a suffix comes from where it stands, by the rule the printer follows
//! ([`super::printer::literal_type`]): the other operand's type, the stored buffer's, else
//! `i64` or `f32`. Lines whose first non-blank character is `;` are comments.
//!
//! The text carries no `Target` attributes beyond the kind: the function gets the kind's
//! default target (`cuda` is `cuda -arch=sm_80`).

use super::expr::*;
use super::printer::literal_type;
use super::stmt::*;
use crate::dtype::DType;
use crate::target::Target;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Why a text is not a function, and where (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ParseError {}

type R<T> = Result<T, ParseError>;

/// Reads a function as [`super::printer::print_func`] prints it.
pub fn parse_func(text: &str) -> Result<PrimFunc, ParseError> {
    let lines = split_lines(text)?;
    let mut p = Parser { lines, pos: 0, env: Env::default(), kernel_names: Vec::new(), launches: HashMap::new() };
    p.func()
}

/// Reads one expression, as [`super::printer::print_expr`] prints it. Its variables are
/// `i64`s of their names; it may not read buffers.
pub fn parse_expr(text: &str) -> Result<Expr, ParseError> {
    if text.contains('\n') {
        return Err(ParseError { line: 1, column: 1, message: "an expression takes one line".into() });
    }
    let tokens = lex(text, 1)?;
    let mut c = Cursor { toks: &tokens, pos: 0, line: 1, end: text.chars().count() + 1 };
    let e = c.expr()?;
    c.done()?;
    Env::default().typed(&e, None)
}

// ---- lines and tokens ----

/// A line of text that is not blank and not a comment.
struct Line {
    /// 1-based.
    no: usize,
    /// Leading spaces.
    indent: usize,
    tokens: Vec<Token>,
    /// The column just past the line's end (for errors at its end).
    end: usize,
}

fn split_lines(text: &str) -> R<Vec<Line>> {
    let mut out = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let no = k + 1;
        let trimmed = raw.trim_start_matches(' ');
        if trimmed.trim().is_empty() || trimmed.starts_with(';') {
            continue;
        }
        if trimmed.starts_with('\t') {
            return Err(ParseError {
                line: no,
                column: raw.len() - trimmed.len() + 1,
                message: "indent with spaces".into(),
            });
        }
        let tokens = lex(raw, no)?;
        out.push(Line { no, indent: raw.len() - trimmed.len(), tokens, end: raw.chars().count() + 1 });
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// An integer literal's digits' value and its suffix type.
    Int(u128, Option<DType>),
    Float(f64, Option<DType>),
    Str(String),
    Punct(&'static str),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    /// 1-based.
    col: usize,
}

const PUNCTS: [&str; 27] = [
    "<<<", ">>>", "..", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "[", "]", ",", ":", "=", "+", "-", "*", "/", "%",
    "<", ">", "!", ".", "@", "#",
];

/// A type name (`f32`, `i64`) or a vector type (`f32x4`).
fn dtype_of(name: &str) -> Option<DType> {
    if let Some(d) = DType::from_name(name) {
        return Some(d);
    }
    let (elem, lanes) = name.rsplit_once('x')?;
    let lanes: u16 = lanes.parse().ok().filter(|&l| l > 1)?;
    Some(DType::from_name(elem)?.with_lanes(lanes))
}

fn lex(line: &str, no: usize) -> R<Vec<Token>> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |col: usize, message: String| ParseError { line: no, column: col + 1, message };
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c == ' ' {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // `inf`, `nan` and their typed forms `inff64`, `nanf16` are float literals.
            let float = ["inf", "nan"].iter().find_map(|w| {
                let rest = word.strip_prefix(w)?;
                let value = if *w == "inf" { f64::INFINITY } else { f64::NAN };
                match rest {
                    "" => Some((value, None)),
                    s => dtype_of(s).filter(|d| d.is_float() && d.is_scalar()).map(|d| (value, Some(d))),
                }
            });
            let tok = match float {
                Some((v, d)) => Tok::Float(v, d),
                None => Tok::Ident(word),
            };
            out.push(Token { tok, col: start + 1 });
            continue;
        }
        if c.is_ascii_digit() {
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let mut float = false;
            // A fraction (`1.5`, not the `..` of a range).
            if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
                float = true;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // An exponent (`1e-5`).
            if i < chars.len() && chars[i] == 'e' {
                let digits_at =
                    if i + 1 < chars.len() && (chars[i + 1] == '-' || chars[i + 1] == '+') { i + 2 } else { i + 1 };
                if digits_at < chars.len() && chars[digits_at].is_ascii_digit() {
                    float = true;
                    i = digits_at;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text: String = chars[start..i].iter().collect();
            let suffix_at = i;
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let suffix = if i > suffix_at {
                let s: String = chars[suffix_at..i].iter().collect();
                let d = dtype_of(&s).filter(|d| d.is_scalar() && !d.is_bool());
                Some(d.ok_or_else(|| err(suffix_at, format!("`{s}` is not a type suffix of a literal")))?)
            } else {
                None
            };
            let tok = if float || suffix.is_some_and(|d| d.is_float()) {
                let v: f64 = text.parse().map_err(|_| err(start, format!("bad number `{text}`")))?;
                Tok::Float(v, suffix)
            } else {
                let v: u128 = text.parse().map_err(|_| err(start, format!("integer `{text}` is too large")))?;
                Tok::Int(v, suffix)
            };
            out.push(Token { tok, col: start + 1 });
            continue;
        }
        if c == '"' {
            i += 1;
            let mut s = String::new();
            loop {
                let Some(&c) = chars.get(i) else { return Err(err(start, "unterminated string".into())) };
                i += 1;
                match c {
                    '"' => break,
                    '\\' => {
                        let Some(&e) = chars.get(i) else { return Err(err(start, "unterminated string".into())) };
                        i += 1;
                        match e {
                            'n' => s.push('\n'),
                            't' => s.push('\t'),
                            'r' => s.push('\r'),
                            '0' => s.push('\0'),
                            '\\' | '"' | '\'' => s.push(e),
                            'u' => {
                                let close = chars[i..].iter().position(|&c| c == '}');
                                let code = match (chars.get(i), close) {
                                    (Some('{'), Some(n)) => {
                                        let hex: String = chars[i + 1..i + n].iter().collect();
                                        i += n + 1;
                                        u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                                    }
                                    _ => None,
                                };
                                s.push(code.ok_or_else(|| err(i - 1, "bad `\\u{..}` escape".into()))?);
                            }
                            other => return Err(err(i - 2, format!("unknown escape `\\{other}`"))),
                        }
                    }
                    c => s.push(c),
                }
            }
            out.push(Token { tok: Tok::Str(s), col: start + 1 });
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
        match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                out.push(Token { tok: Tok::Punct(p), col: start + 1 });
                i += p.len();
            }
            None => return Err(err(start, format!("unexpected character `{c}`"))),
        }
    }
    Ok(out)
}

/// The tokens of one line, read left to right.
struct Cursor<'a> {
    toks: &'a [Token],
    pos: usize,
    line: usize,
    /// The column past the line's end.
    end: usize,
}

impl<'a> Cursor<'a> {
    fn of(l: &'a Line) -> Cursor<'a> {
        Cursor { toks: &l.tokens, pos: 0, line: l.no, end: l.end }
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }
    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.col)
    }
    fn err<T>(&self, message: impl Into<String>) -> R<T> {
        Err(ParseError { line: self.line, column: self.col(), message: message.into() })
    }
    /// What the next token is, for messages.
    fn shown(&self) -> String {
        match self.peek() {
            None => "the end of the line".into(),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Punct(p)) => format!("`{p}`"),
            Some(Tok::Int(v, _)) => format!("`{v}`"),
            Some(Tok::Float(v, _)) => format!("`{v:?}`"),
            Some(Tok::Str(s)) => format!("{s:?}"),
        }
    }
    fn at(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn at_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == w)
    }
    fn eat(&mut self, p: &str) -> bool {
        let yes = self.at(p);
        self.pos += yes as usize;
        yes
    }
    fn expect(&mut self, p: &str) -> R<()> {
        if self.eat(p) {
            Ok(())
        } else {
            self.err(format!("expected `{p}`, found {}", self.shown()))
        }
    }
    fn word(&mut self, w: &str) -> R<()> {
        if self.at_word(w) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(format!("expected `{w}`, found {}", self.shown()))
        }
    }
    /// A name, with its column.
    fn ident(&mut self, what: &str) -> R<(String, usize)> {
        let col = self.col();
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok((s, col))
            }
            _ => self.err(format!("expected {what}, found {}", self.shown())),
        }
    }
    fn dtype(&mut self) -> R<DType> {
        let (name, col) = self.ident("a type")?;
        dtype_of(&name).ok_or(ParseError { line: self.line, column: col, message: format!("unknown type `{name}`") })
    }
    /// A non-negative integer literal without a suffix.
    fn count(&mut self, what: &str) -> R<u64> {
        match self.peek() {
            Some(Tok::Int(v, None)) if *v <= u64::MAX as u128 => {
                let v = *v as u64;
                self.pos += 1;
                Ok(v)
            }
            _ => self.err(format!("expected {what}, found {}", self.shown())),
        }
    }
    fn string(&mut self) -> R<String> {
        match self.peek() {
            Some(Tok::Str(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => self.err(format!("expected a string, found {}", self.shown())),
        }
    }
    fn done(&self) -> R<()> {
        if self.pos < self.toks.len() {
            return self.err(format!("unexpected {} at the end of the statement", self.shown()));
        }
        Ok(())
    }

    // ---- expressions, untyped ----

    fn expr(&mut self) -> R<PExpr> {
        let mut a = self.and()?;
        while self.at("||") {
            let col = self.col();
            self.pos += 1;
            let b = self.and()?;
            a = PExpr { kind: PKind::Or(Box::new(a), Box::new(b)), line: self.line, col };
        }
        Ok(a)
    }

    fn and(&mut self) -> R<PExpr> {
        let mut a = self.cmp()?;
        while self.at("&&") {
            let col = self.col();
            self.pos += 1;
            let b = self.cmp()?;
            a = PExpr { kind: PKind::And(Box::new(a), Box::new(b)), line: self.line, col };
        }
        Ok(a)
    }

    fn cmp(&mut self) -> R<PExpr> {
        let a = self.add()?;
        let op = match self.peek() {
            Some(Tok::Punct("<")) => CmpOp::Lt,
            Some(Tok::Punct("<=")) => CmpOp::Le,
            Some(Tok::Punct(">")) => CmpOp::Gt,
            Some(Tok::Punct(">=")) => CmpOp::Ge,
            Some(Tok::Punct("==")) => CmpOp::Eq,
            Some(Tok::Punct("!=")) => CmpOp::Ne,
            _ => return Ok(a),
        };
        let col = self.col();
        self.pos += 1;
        let b = self.add()?;
        Ok(PExpr { kind: PKind::Cmp(op, Box::new(a), Box::new(b)), line: self.line, col })
    }

    fn add(&mut self) -> R<PExpr> {
        let mut a = self.mul()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct("+")) => BinOp::Add,
                Some(Tok::Punct("-")) => BinOp::Sub,
                _ => return Ok(a),
            };
            let col = self.col();
            self.pos += 1;
            let b = self.mul()?;
            a = PExpr { kind: PKind::Arith(op, Box::new(a), Box::new(b)), line: self.line, col };
        }
    }

    fn mul(&mut self) -> R<PExpr> {
        let mut a = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct("*")) => BinOp::Mul,
                Some(Tok::Punct("/")) => BinOp::Div,
                Some(Tok::Punct("%")) => BinOp::Mod,
                _ => return Ok(a),
            };
            let col = self.col();
            self.pos += 1;
            let b = self.unary()?;
            a = PExpr { kind: PKind::Arith(op, Box::new(a), Box::new(b)), line: self.line, col };
        }
    }

    fn unary(&mut self) -> R<PExpr> {
        let (line, col) = (self.line, self.col());
        let at = move |kind| PExpr { kind, line, col };
        if self.eat("-") {
            // `-5` is a negative literal (as the printer writes one), `-x` a negation.
            match self.peek().cloned() {
                Some(Tok::Int(v, d)) => {
                    self.pos += 1;
                    return Ok(at(PKind::Int(-(v as i128), d)));
                }
                Some(Tok::Float(v, d)) => {
                    self.pos += 1;
                    return Ok(at(PKind::Float(-v, d)));
                }
                _ => return Ok(at(PKind::Neg(Box::new(self.unary()?)))),
            }
        }
        if self.eat("!") {
            return Ok(at(PKind::Not(Box::new(self.unary()?))));
        }
        self.atom()
    }

    fn atom(&mut self) -> R<PExpr> {
        let col = self.col();
        let kind = match self.peek().cloned() {
            Some(Tok::Punct("(")) => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(e);
            }
            Some(Tok::Int(v, d)) => {
                self.pos += 1;
                PKind::Int(v as i128, d)
            }
            Some(Tok::Float(v, d)) => {
                self.pos += 1;
                PKind::Float(v, d)
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if self.eat("(") {
                    PKind::Call(name, self.list(")")?)
                } else if self.eat("[") {
                    PKind::Load(name, self.list("]")?)
                } else if name == "true" || name == "false" {
                    PKind::Bool(name == "true")
                } else {
                    PKind::Name(name)
                }
            }
            _ => return self.err(format!("expected an expression, found {}", self.shown())),
        };
        Ok(PExpr { kind, line: self.line, col })
    }

    /// Comma-separated expressions up to `close` (consumed).
    fn list(&mut self, close: &str) -> R<Vec<PExpr>> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(",")?;
        }
    }
}

/// An expression as read, before its types are known.
#[derive(Clone, Debug)]
struct PExpr {
    kind: PKind,
    line: usize,
    col: usize,
}

#[derive(Clone, Debug)]
enum PKind {
    Int(i128, Option<DType>),
    Float(f64, Option<DType>),
    Bool(bool),
    Name(String),
    Neg(Box<PExpr>),
    Not(Box<PExpr>),
    Arith(BinOp, Box<PExpr>, Box<PExpr>),
    Cmp(CmpOp, Box<PExpr>, Box<PExpr>),
    And(Box<PExpr>, Box<PExpr>),
    Or(Box<PExpr>, Box<PExpr>),
    /// `name(args)`: a cast, an intrinsic, `min`, `max`, `select`, `ramp`, `broadcast`,
    /// `check_index`, `check_divisor`.
    Call(String, Vec<PExpr>),
    Load(String, Vec<PExpr>),
}

impl PExpr {
    fn err<T>(&self, message: impl Into<String>) -> R<T> {
        Err(ParseError { line: self.line, column: self.col, message: message.into() })
    }
}

// ---- types ----

/// The variables and buffers of the function, by printed name.
#[derive(Default)]
struct Env {
    vars: HashMap<String, Var>,
    buffers: HashMap<String, Buffer>,
    /// The names of the buffers read or written since the last `take_used`.
    used: HashSet<String>,
}

impl Env {
    /// The variable `name`: the one the function already has, or a new `i64` (a dim).
    fn var(&mut self, name: &str) -> Var {
        self.vars.entry(name.to_string()).or_insert_with(|| Var::index(name)).clone()
    }

    /// The variable a binder declares, of type `dtype`: the same variable wherever the
    /// name is bound.
    fn bind(&mut self, name: &str, dtype: DType, line: usize, column: usize) -> R<Var> {
        match self.vars.get(name) {
            Some(v) if v.dtype() != dtype => {
                Err(ParseError { line, column, message: format!("`{name}` is {} elsewhere, {dtype} here", v.dtype()) })
            }
            Some(v) => Ok(v.clone()),
            None => {
                let v = Var::new(name, dtype);
                self.vars.insert(name.to_string(), v.clone());
                Ok(v)
            }
        }
    }

    fn buffer(&mut self, name: &str, line: usize, column: usize) -> R<Buffer> {
        self.used.insert(name.to_string());
        self.buffers.get(name).cloned().ok_or_else(|| ParseError {
            line,
            column,
            message: format!("unknown buffer `{name}` (not a parameter, `alloc` or `realize`)"),
        })
    }

    /// The buffer an allocation or parameter declares: the same buffer wherever the name
    /// is declared.
    fn declare(&mut self, name: &str, dtype: DType, scope: Scope, line: usize, column: usize) -> R<Buffer> {
        match self.buffers.get(name) {
            Some(b) if b.dtype() != dtype || b.scope() != scope => Err(ParseError {
                line,
                column,
                message: format!(
                    "buffer `{name}` is {} {} elsewhere, {dtype} {} here",
                    b.dtype(),
                    b.scope().name(),
                    scope.name()
                ),
            }),
            Some(b) => Ok(b.clone()),
            None => {
                let b = Buffer::new(name, dtype, scope);
                self.buffers.insert(name.to_string(), b.clone());
                Ok(b)
            }
        }
    }

    /// The type of `p` as far as `p` alone says (nothing for a literal without a suffix
    /// and the nodes made of those only); the printer's `synthesized` mirrors this.
    fn synth(&self, p: &PExpr) -> Option<DType> {
        match &p.kind {
            PKind::Int(_, d) | PKind::Float(_, d) => *d,
            PKind::Bool(_) => Some(DType::BOOL),
            PKind::Name(n) => Some(self.vars.get(n).map_or(DType::I64, |v| v.dtype())),
            PKind::Neg(a) | PKind::Not(a) => self.synth(a),
            PKind::Arith(_, a, b) | PKind::And(a, b) | PKind::Or(a, b) => self.synth(a).or_else(|| self.synth(b)),
            PKind::Cmp(_, a, b) => {
                let lanes = self.synth(a).or_else(|| self.synth(b)).map_or(1, |d| d.lanes);
                Some(DType::BOOL.with_lanes(lanes))
            }
            PKind::Load(name, idx) => {
                let lanes = idx.last().and_then(|i| self.synth(i)).map_or(1, |d| d.lanes);
                self.buffers.get(name).map(|b| b.dtype().with_lanes(lanes))
            }
            PKind::Call(name, args) => match (name.as_str(), args.as_slice()) {
                ("min" | "max", [a, b]) => self.synth(a).or_else(|| self.synth(b)),
                ("select", [_, t, o]) => self.synth(t).or_else(|| self.synth(o)),
                ("ramp", [base, stride, lanes]) => {
                    let lanes = match lanes.kind {
                        PKind::Int(l, None) => u16::try_from(l).ok()?,
                        _ => return None,
                    };
                    self.synth(base).or_else(|| self.synth(stride)).map(|d| d.with_lanes(lanes))
                }
                ("broadcast", [v, lanes]) => {
                    let lanes = match lanes.kind {
                        PKind::Int(l, None) => u16::try_from(l).ok()?,
                        _ => return None,
                    };
                    self.synth(v).map(|d| d.with_lanes(lanes))
                }
                ("check_index" | "check_divisor", [v, ..]) => self.synth(v),
                (n, [v]) if dtype_of(n).is_some() => {
                    let lanes = self.synth(v).map_or(1, |d| d.lanes);
                    dtype_of(n).map(|d| d.with_lanes(lanes))
                }
                (n, args) if Intrinsic::from_name(n).is_some() => args.iter().find_map(|a| self.synth(a)),
                _ => None,
            },
        }
    }

    /// The one type of operands that share it: from either, else from the context.
    fn shared(&self, a: &PExpr, b: &PExpr, want: Option<DType>) -> Option<DType> {
        self.synth(a).or_else(|| self.synth(b)).or(want)
    }

    /// `p` with its types; `want` is its type where the context says (see
    /// [`literal_type`]).
    fn typed(&mut self, p: &PExpr, want: Option<DType>) -> R<Expr> {
        Ok(match &p.kind {
            PKind::Int(v, suffix) => {
                let d = suffix.unwrap_or_else(|| literal_type(want, false));
                if !d.is_integer() {
                    return p.err(format!("integer literal of type {d}"));
                }
                // An unsigned constant is never negative: `-5u32` negates one.
                if *v < 0 && d.is_uint() {
                    let positive = PExpr { kind: PKind::Int(-*v, Some(d)), ..p.clone() };
                    return Ok(Expr::Neg(Box::new(self.typed(&positive, want)?)));
                }
                let value =
                    if d == DType::U64 { u64::try_from(*v).map(|v| v as i64).ok() } else { i64::try_from(*v).ok() };
                let Some(value) = value else { return p.err(format!("`{v}` does not fit in {d}")) };
                Expr::Int { value, dtype: d }
            }
            PKind::Float(v, suffix) => {
                let d = suffix.unwrap_or_else(|| literal_type(want, true));
                if !d.is_float() {
                    return p.err(format!("float literal of type {d}"));
                }
                Expr::Float { value: *v, dtype: d }
            }
            PKind::Bool(b) => Expr::Bool(*b),
            PKind::Name(n) => Expr::Var(self.var(n)),
            PKind::Neg(a) => Expr::Neg(Box::new(self.typed(a, want)?)),
            PKind::Not(a) => Expr::Not(Box::new(self.typed(a, want)?)),
            PKind::Arith(op, a, b) => {
                let w = self.shared(a, b, want);
                let (a, b) = self.same(p, op.symbol(), a, b, w)?;
                Expr::Binary { op: *op, a: Box::new(a), b: Box::new(b) }
            }
            PKind::Cmp(op, a, b) => {
                let w = self.shared(a, b, None);
                let (a, b) = self.same(p, op.symbol(), a, b, w)?;
                Expr::Cmp { op: *op, a: Box::new(a), b: Box::new(b) }
            }
            PKind::And(a, b) => {
                let w = self.shared(a, b, want);
                Expr::And(Box::new(self.typed(a, w)?), Box::new(self.typed(b, w)?))
            }
            PKind::Or(a, b) => {
                let w = self.shared(a, b, want);
                Expr::Or(Box::new(self.typed(a, w)?), Box::new(self.typed(b, w)?))
            }
            PKind::Load(name, idx) => {
                let buffer = self.buffer(name, p.line, p.col)?;
                let indices = idx.iter().map(|i| self.typed(i, None)).collect::<R<Vec<_>>>()?;
                Expr::Load { buffer, indices }
            }
            PKind::Call(name, args) => self.call(p, name, args, want)?,
        })
    }

    /// Two operands of one type `want`, or an error at `p` naming `op`.
    fn same(&mut self, p: &PExpr, op: &str, a: &PExpr, b: &PExpr, want: Option<DType>) -> R<(Expr, Expr)> {
        let (a, b) = (self.typed(a, want)?, self.typed(b, want)?);
        if a.dtype() != b.dtype() {
            return p.err(format!("operands of `{op}` have different types {} and {}", a.dtype(), b.dtype()));
        }
        Ok((a, b))
    }

    fn call(&mut self, p: &PExpr, name: &str, args: &[PExpr], want: Option<DType>) -> R<Expr> {
        let lanes = |l: &PExpr| match l.kind {
            PKind::Int(v, None) if (1..=u16::MAX as i128).contains(&v) => Ok(v as u16),
            _ => l.err("expected a number of lanes"),
        };
        let site = |s: &PExpr| match s.kind {
            PKind::Int(v, None) if (0..=u32::MAX as i128).contains(&v) => Ok(v as u32),
            _ => s.err("expected a check site number"),
        };
        Ok(match (name, args) {
            ("min" | "max", [a, b]) => {
                let op = if name == "min" { BinOp::Min } else { BinOp::Max };
                let w = self.shared(a, b, want);
                let (a, b) = self.same(p, name, a, b, w)?;
                Expr::Binary { op, a: Box::new(a), b: Box::new(b) }
            }
            ("select", [c, t, o]) => {
                let cond = self.typed(c, None)?;
                let w = self.shared(t, o, want);
                let (then, otherwise) = self.same(p, "select", t, o, w)?;
                Expr::Select { cond: Box::new(cond), then: Box::new(then), otherwise: Box::new(otherwise) }
            }
            ("ramp", [base, stride, l]) => {
                let lanes = lanes(l)?;
                let w = self.shared(base, stride, want.map(|d| d.element()));
                let (base, stride) = self.same(p, "ramp", base, stride, w)?;
                Expr::Ramp { base: Box::new(base), stride: Box::new(stride), lanes }
            }
            ("broadcast", [v, l]) => {
                let lanes = lanes(l)?;
                let value = self.typed(v, want.map(|d| d.element()))?;
                Expr::Broadcast { value: Box::new(value), lanes }
            }
            ("check_index", [v, extent, s]) => {
                let site = site(s)?;
                let (value, extent) = (self.typed(v, None)?, self.typed(extent, None)?);
                Expr::Check { value: Box::new(value), kind: CheckKind::Index { extent: Box::new(extent) }, site }
            }
            ("check_divisor", [v, s]) => {
                let site = site(s)?;
                Expr::Check { value: Box::new(self.typed(v, want)?), kind: CheckKind::Divisor, site }
            }
            (n, [v]) if dtype_of(n).is_some() => {
                let dtype = dtype_of(n).expect("checked");
                Expr::Cast { dtype, value: Box::new(self.typed(v, None)?) }
            }
            (n, args) => match Intrinsic::from_name(n) {
                Some(func) if func.arity() == args.len() => {
                    let w = args.iter().find_map(|a| self.synth(a)).or(want);
                    let args = args.iter().map(|a| self.typed(a, w)).collect::<R<Vec<_>>>()?;
                    Expr::Call { func, args }
                }
                Some(func) => return p.err(format!("`{n}` takes {} argument(s), got {}", func.arity(), args.len())),
                None => match n {
                    "min" | "max" | "select" | "ramp" | "broadcast" | "check_index" | "check_divisor" => {
                        return p.err(format!("wrong number of arguments to `{n}`"))
                    }
                    _ => return p.err(format!("unknown function `{n}`")),
                },
            },
        })
    }
}

// ---- statements and the function ----

/// A launch line's grid, block and arguments, for the kernel it names.
struct LaunchLine {
    grid: [Expr; 3],
    block: [Expr; 3],
    args: Vec<String>,
    line: usize,
}

struct Parser {
    lines: Vec<Line>,
    pos: usize,
    env: Env,
    /// The kernels' names, in order (a launch names one before it is defined).
    kernel_names: Vec<String>,
    /// The first launch line of each kernel, by index.
    launches: HashMap<usize, LaunchLine>,
}

/// A statement read from one line, with the body it still needs.
enum Head {
    Done(Stmt),
    /// A `let` or `alloc` whose body is the rest of the block (`indented`: false) or the
    /// block below (true).
    Scoped(Box<dyn FnOnce(Stmt) -> Stmt>, bool),
    /// A `for`, `bind`, `realize` or `if` with its body below.
    Nested(Box<dyn FnOnce(Stmt) -> Stmt>),
    If(Expr),
}

impl Parser {
    fn line_err<T>(&self, message: impl Into<String>) -> R<T> {
        let (line, column) = match self.lines.get(self.pos) {
            Some(l) => (l.no, l.indent + 1),
            None => (self.lines.last().map_or(1, |l| l.no + 1), 1),
        };
        Err(ParseError { line, column, message: message.into() })
    }

    /// Whether the current line starts with `@word`.
    fn at_directive(&self, word: &str) -> bool {
        self.lines.get(self.pos).is_some_and(|l| {
            l.indent == 0 && matches!(l.tokens.as_slice(), [Token { tok: Tok::Punct("@"), .. }, Token { tok: Tok::Ident(w), .. }, ..] if w == word)
        })
    }

    fn func(&mut self) -> R<PrimFunc> {
        if !self.at_directive("func") {
            return self.line_err("expected `@func`");
        }
        // The kernels' names first: the host body launches them before they are read.
        for l in &self.lines {
            if let [Token { tok: Tok::Punct("@"), .. }, Token { tok: Tok::Ident(w), .. }, Token { tok: Tok::Ident(name), .. }, ..] =
                l.tokens.as_slice()
            {
                if l.indent == 0 && w == "kernel" {
                    self.kernel_names.push(name.clone());
                }
            }
        }
        let (name, target, params) = self.signature()?;
        self.pos += 1;
        let body = self.block(1)?;
        let mut kernels = Vec::new();
        while self.at_directive("kernel") {
            kernels.push(self.kernel(kernels.len())?);
        }
        let mut checks = Vec::new();
        while self.at_directive("check") {
            checks.push(self.check(checks.len())?);
        }
        if self.pos < self.lines.len() {
            return self.line_err("expected `@kernel` or `@check`");
        }
        Ok(PrimFunc { name, target, params, body, kernels, checks })
    }

    /// `@func KIND NAME(params)`.
    fn signature(&mut self) -> R<(String, Target, Vec<Param>)> {
        let mut c = Cursor::of(&self.lines[self.pos]);
        c.expect("@")?;
        c.word("func")?;
        let (kind, col) = c.ident("a target kind")?;
        let target =
            Target::parse(&kind).map_err(|e| ParseError { line: c.line, column: col, message: e.to_string() })?;
        let (name, _) = c.ident("the function's name")?;
        c.expect("(")?;
        let mut params = Vec::new();
        let mut env = std::mem::take(&mut self.env);
        if !c.eat(")") {
            loop {
                let (pname, pcol) = c.ident("a parameter")?;
                c.expect(":")?;
                let dtype = c.dtype()?;
                if c.eat("[") {
                    let shape = c.list("]")?;
                    let shape = shape.iter().map(|d| env.typed(d, None)).collect::<R<Vec<_>>>()?;
                    let scope = scope(&mut c)?;
                    let is_output = c.at_word("out");
                    c.pos += is_output as usize;
                    if env.buffers.contains_key(&pname) {
                        return Err(ParseError {
                            line: c.line,
                            column: pcol,
                            message: format!("parameter `{pname}` twice"),
                        });
                    }
                    let buffer = env.declare(&pname, dtype, scope, c.line, pcol)?;
                    params.push(Param::Tensor { buffer, shape, is_output });
                } else {
                    params.push(Param::Scalar(env.bind(&pname, dtype, c.line, pcol)?));
                }
                if c.eat(")") {
                    break;
                }
                c.expect(",")?;
            }
        }
        c.done()?;
        self.env = env;
        Ok((name, target, params))
    }

    /// `@kernel NAME(args)`, its thread variables and its body.
    fn kernel(&mut self, index: usize) -> R<Kernel> {
        let mut c = Cursor::of(&self.lines[self.pos]);
        let line = c.line;
        c.expect("@")?;
        c.word("kernel")?;
        let (name, _) = c.ident("the kernel's name")?;
        c.expect("(")?;
        let mut args = Vec::new();
        if !c.eat(")") {
            loop {
                args.push(c.ident("a kernel argument")?);
                if c.eat(")") {
                    break;
                }
                c.expect(",")?;
            }
        }
        c.done()?;
        self.pos += 1;
        let mut thread_vars = Vec::new();
        while let Some(l) = self.lines.get(self.pos) {
            let tag = match l.tokens.as_slice() {
                [Token { tok: Tok::Ident(kind), .. }, Token { tok: Tok::Punct("."), .. }, Token { tok: Tok::Ident(dim), .. }, Token { tok: Tok::Punct(":"), .. }, ..]
                    if l.indent == 2 =>
                {
                    ThreadTag::ALL.into_iter().find(|t| t.name() == format!("{kind}.{dim}"))
                }
                _ => None,
            };
            let Some(tag) = tag else { break };
            let mut c = Cursor::of(&self.lines[self.pos]);
            c.pos = 4;
            let (v, col) = c.ident("a thread variable")?;
            let dtype = if c.eat(":") { c.dtype()? } else { DType::I64 };
            c.done()?;
            let v = self.env.bind(&v, dtype, c.line, col)?;
            thread_vars.push((tag, v));
            self.pos += 1;
        }
        self.env.used.clear();
        let body = self.block(1)?;
        // Buffers first, then scalars; a name that is both a buffer and a variable is
        // the buffer where the body uses that buffer.
        let (mut buffer_args, mut scalar_args) = (Vec::new(), Vec::new());
        for (a, col) in args {
            let as_buffer = match (self.env.buffers.get(&a), self.env.vars.get(&a)) {
                (Some(b), Some(_)) => scalar_args.is_empty() && !buffer_args.contains(b) && self.env.used.contains(&a),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => {
                    return Err(ParseError { line, column: col, message: format!("unknown kernel argument `{a}`") })
                }
            };
            if as_buffer {
                if !scalar_args.is_empty() {
                    let message = format!("buffer argument `{a}` after a scalar one");
                    return Err(ParseError { line, column: col, message });
                }
                buffer_args.push(self.env.buffers[&a].clone());
            } else {
                scalar_args.push(self.env.vars[&a].clone());
            }
        }
        let Some(launch) = self.launches.remove(&index) else {
            return Err(ParseError {
                line,
                column: 1,
                message: format!("kernel `{name}` is never launched, so its grid is unknown"),
            });
        };
        let names: Vec<&str> =
            buffer_args.iter().map(|b| b.name()).chain(scalar_args.iter().map(|v| v.name())).collect();
        if launch.args.iter().map(|s| s.as_str()).ne(names.iter().copied()) {
            let message = format!(
                "the launch's arguments ({}) are not the kernel's ({})",
                launch.args.join(", "),
                names.join(", ")
            );
            return Err(ParseError { line: launch.line, column: 1, message });
        }
        Ok(Kernel { name, thread_vars, grid: launch.grid, block: launch.block, buffer_args, scalar_args, body })
    }

    /// `@check N index("tensor", dim, "index")` or `@check N divisor("divisor")`.
    fn check(&mut self, site: usize) -> R<CheckSite> {
        let mut c = Cursor::of(&self.lines[self.pos]);
        c.expect("@")?;
        c.word("check")?;
        let n = c.count("the site's number")?;
        if n != site as u64 {
            return c.err(format!("expected check site {site}"));
        }
        let (kind, _) = c.ident("`index` or `divisor`")?;
        c.expect("(")?;
        let out = match kind.as_str() {
            "index" => {
                let tensor = c.string()?;
                c.expect(",")?;
                let dim = c.count("a dim")? as usize;
                c.expect(",")?;
                CheckSite::Index { tensor, dim, index: c.string()? }
            }
            "divisor" => CheckSite::Divisor { divisor: c.string()? },
            other => return c.err(format!("unknown check `{other}`")),
        };
        c.expect(")")?;
        c.done()?;
        self.pos += 1;
        Ok(out)
    }

    /// The statements at indentation `depth` from the current line on.
    fn block(&mut self, depth: usize) -> R<Stmt> {
        let mut stmts = Vec::new();
        while let Some(l) = self.lines.get(self.pos) {
            if l.indent < depth * 2 {
                break;
            }
            if l.indent > depth * 2 {
                return self.line_err("unexpected indentation");
            }
            match self.head()? {
                Head::Done(s) => {
                    self.pos += 1;
                    stmts.push(s)
                }
                Head::Scoped(make, indented) => {
                    self.pos += 1;
                    if indented {
                        let body = self.body(depth + 1)?;
                        stmts.push(make(body));
                    } else {
                        let body = self.body(depth)?;
                        stmts.push(make(body));
                        break;
                    }
                }
                Head::Nested(make) => {
                    self.pos += 1;
                    let body = self.body(depth + 1)?;
                    stmts.push(make(body));
                }
                Head::If(cond) => {
                    self.pos += 1;
                    let then = self.body(depth + 1)?;
                    let otherwise = match self.lines.get(self.pos) {
                        Some(l)
                            if l.indent == depth * 2
                                && matches!(l.tokens.as_slice(), [Token { tok: Tok::Ident(e), .. }, Token { tok: Tok::Punct(":"), .. }] if e == "else") =>
                        {
                            self.pos += 1;
                            Some(Box::new(self.body(depth + 1)?))
                        }
                        _ => None,
                    };
                    stmts.push(Stmt::If { cond, then: Box::new(then), otherwise });
                }
            }
        }
        // Not `Stmt::seq`: a `noop` line stays a statement, as it was printed.
        Ok(match stmts.len() {
            1 => stmts.pop().expect("one"),
            _ => Stmt::Seq(stmts),
        })
    }

    /// A block that must have a statement.
    fn body(&mut self, depth: usize) -> R<Stmt> {
        match self.lines.get(self.pos) {
            Some(l) if l.indent == depth * 2 => self.block(depth),
            _ => self.line_err(format!("expected a statement indented by {} spaces", depth * 2)),
        }
    }

    /// The statement of the current line.
    fn head(&mut self) -> R<Head> {
        let mut c = Cursor::of(&self.lines[self.pos]);
        let env = &mut self.env;
        let keyword = match (c.peek(), c.peek_at(1)) {
            // A buffer that happens to be named `for` is stored to as `for[..] = ..`.
            (Some(Tok::Ident(w)), next) if next != Some(&Tok::Punct("[")) => w.clone(),
            _ => String::new(),
        };
        let head = match keyword.as_str() {
            "for" => {
                c.pos += 1;
                let (name, col) = c.ident("a loop variable")?;
                let dtype = if c.eat(":") { c.dtype()? } else { DType::I64 };
                c.word("in")?;
                let (kind, kcol) = c.ident("a loop kind")?;
                let kind = [ForKind::Serial, ForKind::Parallel, ForKind::Vectorized, ForKind::Unrolled]
                    .into_iter()
                    .find(|k| k.name() == kind)
                    .ok_or(ParseError { line: c.line, column: kcol, message: format!("unknown loop kind `{kind}`") })?;
                c.expect("(")?;
                let min = env.typed(&c.expr()?, None)?;
                c.expect(",")?;
                let extent = env.typed(&c.expr()?, None)?;
                c.expect(")")?;
                c.expect(":")?;
                let var = env.bind(&name, dtype, c.line, col)?;
                Head::Nested(Box::new(move |body| Stmt::For { var, min, extent, kind, body: Box::new(body) }))
            }
            "bind" => {
                c.pos += 1;
                let (name, col) = c.ident("a thread variable")?;
                let dtype = if c.eat(":") { c.dtype()? } else { DType::I64 };
                c.expect("=")?;
                let (kind, tcol) = c.ident("a thread index")?;
                c.expect(".")?;
                let (dim, _) = c.ident("x, y or z")?;
                let tag =
                    ThreadTag::ALL.into_iter().find(|t| t.name() == format!("{kind}.{dim}")).ok_or(ParseError {
                        line: c.line,
                        column: tcol,
                        message: format!("unknown thread index `{kind}.{dim}`"),
                    })?;
                c.word("in")?;
                match c.peek() {
                    Some(Tok::Int(0, None)) => c.pos += 1,
                    _ => return c.err("expected `0..`"),
                }
                c.expect("..")?;
                let extent = env.typed(&c.expr()?, None)?;
                c.expect(":")?;
                let var = env.bind(&name, dtype, c.line, col)?;
                Head::Nested(Box::new(move |body| Stmt::ThreadBinding { tag, var, extent, body: Box::new(body) }))
            }
            "if" => {
                c.pos += 1;
                let cond = env.typed(&c.expr()?, None)?;
                c.expect(":")?;
                Head::If(cond)
            }
            "else" => return c.err("`else` without an `if`"),
            "let" => {
                c.pos += 1;
                let (name, col) = c.ident("a variable")?;
                c.expect("=")?;
                let value = env.typed(&c.expr()?, None)?;
                let indented = c.eat(":");
                let var = env.bind(&name, value.dtype(), c.line, col)?;
                Head::Scoped(Box::new(move |body| Stmt::Let { var, value, body: Box::new(body) }), indented)
            }
            "alloc" => {
                c.pos += 1;
                let (name, col) = c.ident("a buffer")?;
                c.expect(":")?;
                let dtype = c.dtype()?;
                c.expect("[")?;
                let extent = env.typed(&c.expr()?, None)?;
                c.expect("]")?;
                let scope = scope(&mut c)?;
                let indented = c.eat(":");
                let buffer = env.declare(&name, dtype, scope, c.line, col)?;
                Head::Scoped(Box::new(move |body| Stmt::Allocate { buffer, extent, body: Box::new(body) }), indented)
            }
            "realize" => {
                c.pos += 1;
                let (name, col) = c.ident("a buffer")?;
                c.expect(":")?;
                let dtype = c.dtype()?;
                c.expect("[")?;
                let mut bounds = Vec::new();
                loop {
                    let min = env.typed(&c.expr()?, None)?;
                    c.expect(":")?;
                    let extent = env.typed(&c.expr()?, None)?;
                    bounds.push(Range { min, extent });
                    if c.eat("]") {
                        break;
                    }
                    c.expect(",")?;
                }
                let scope = scope(&mut c)?;
                c.expect(":")?;
                let buffer = env.declare(&name, dtype, scope, c.line, col)?;
                Head::Nested(Box::new(move |body| Stmt::Realize { buffer, bounds, body: Box::new(body) }))
            }
            "prefetch" => {
                c.pos += 1;
                let (name, col) = c.ident("a buffer")?;
                let buffer = env.buffer(&name, c.line, col)?;
                c.expect("[")?;
                let indices = c.list("]")?.iter().map(|i| env.typed(i, None)).collect::<R<Vec<_>>>()?;
                Head::Done(Stmt::Prefetch { buffer, indices })
            }
            "barrier" => {
                c.pos += 1;
                c.expect("(")?;
                c.expect(")")?;
                Head::Done(Stmt::Barrier)
            }
            "warp_reduce" => {
                c.pos += 1;
                c.expect("(")?;
                let (op, ocol) = c.ident("a reduction")?;
                let op = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod]
                    .into_iter()
                    .find(|o| o.name() == op)
                    .ok_or(ParseError { line: c.line, column: ocol, message: format!("unknown reduction `{op}`") })?;
                c.expect(",")?;
                let (name, col) = c.ident("a buffer")?;
                let buffer = env.buffer(&name, c.line, col)?;
                c.expect(",")?;
                c.word("width")?;
                c.expect("=")?;
                let width = c.count("a width")?;
                let width = u32::try_from(width).map_err(|_| ParseError {
                    line: c.line,
                    column: c.col(),
                    message: "width too large".into(),
                })?;
                c.expect(")")?;
                Head::Done(Stmt::WarpReduce { op, buffer, width })
            }
            "launch" => {
                c.pos += 1;
                if c.at_word("kernel") && matches!(c.peek_at(1), Some(Tok::Int(..))) {
                    c.pos += 1;
                    let kernel = c.count("a kernel number")? as usize;
                    c.done()?;
                    return Ok(Head::Done(Stmt::Launch { kernel }));
                }
                let (name, col) = c.ident("a kernel")?;
                let kernel = self.kernel_names.iter().position(|k| *k == name).ok_or(ParseError {
                    line: c.line,
                    column: col,
                    message: format!("launch of `{name}`, which no `@kernel` defines"),
                })?;
                c.expect("<<<")?;
                let mut dims = |c: &mut Cursor, word: &str| -> R<[Expr; 3]> {
                    c.word(word)?;
                    c.expect("(")?;
                    let at = c.col();
                    let es = c.list(")")?.iter().map(|e| env.typed(e, None)).collect::<R<Vec<_>>>()?;
                    <[Expr; 3]>::try_from(es).map_err(|_| ParseError {
                        line: c.line,
                        column: at,
                        message: format!("expected three {word} extents"),
                    })
                };
                let grid = dims(&mut c, "grid")?;
                c.expect(",")?;
                let block = dims(&mut c, "block")?;
                c.expect(">>>")?;
                c.expect("(")?;
                let mut args = Vec::new();
                if !c.eat(")") {
                    loop {
                        args.push(c.ident("an argument")?.0);
                        if c.eat(")") {
                            break;
                        }
                        c.expect(",")?;
                    }
                }
                c.done()?;
                let line = c.line;
                match self.launches.get(&kernel) {
                    Some(l) if l.grid != grid || l.block != block || l.args != args => {
                        return Err(ParseError {
                            line,
                            column: 1,
                            message: format!("launch of `{name}` differs from its launch on line {}", l.line),
                        })
                    }
                    Some(_) => {}
                    None => {
                        self.launches.insert(kernel, LaunchLine { grid, block, args, line });
                    }
                }
                return Ok(Head::Done(Stmt::Launch { kernel }));
            }
            "noop" => {
                c.pos += 1;
                Head::Done(Stmt::NoOp)
            }
            _ => {
                let (name, col) = c.ident("a statement")?;
                let buffer = env.buffer(&name, c.line, col)?;
                c.expect("[")?;
                let indices = c.list("]")?.iter().map(|i| env.typed(i, None)).collect::<R<Vec<_>>>()?;
                c.expect("=")?;
                let lanes = indices.last().map_or(1, |i| i.dtype().lanes);
                let at = c.col();
                let value = env.typed(&c.expr()?, Some(buffer.dtype().with_lanes(lanes)))?;
                if value.dtype() != buffer.dtype().with_lanes(lanes) {
                    let message =
                        format!("store of {} into `{name}` of {} at {lanes} lane(s)", value.dtype(), buffer.dtype());
                    return Err(ParseError { line: c.line, column: at, message });
                }
                Head::Done(Stmt::Store { buffer, indices, value })
            }
        };
        c.done()?;
        Ok(head)
    }
}

/// `global`, `shared` or `local`.
fn scope(c: &mut Cursor) -> R<Scope> {
    let (s, col) = c.ident("a scope")?;
    [Scope::Global, Scope::Shared, Scope::Local].into_iter().find(|x| x.name() == s).ok_or(ParseError {
        line: c.line,
        column: col,
        message: format!("unknown scope `{s}` (global, shared or local)"),
    })
}
