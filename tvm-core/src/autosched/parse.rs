//! Reads the statements the auto-scheduler writes back into the schedule language's
//! syntax tree. The macro lowers its targets on threads of their own, where no token
//! stream can be made (the compiler's proc-macro bridge exists on the macro's thread
//! only), so derived text is read by this small parser of the statement grammar rather
//! than by the kernel parser:
//!
//! ```text
//! stmt    := ["let" pattern "="] expr ";"
//! pattern := name | "(" names ")" | "[" names "]"        (a name may be `_`)
//! expr    := primary ("." name ["(" [args] ")"] | "[" expr "]")*
//! primary := name | integer | "[" [args] "]" | "tune" "!" "(" [name ":"] args ")"
//! ```
//!
//! Every node gets its own handle, numbered from [`Loc::DERIVED`].

use crate::frontend::ast::{Name, PatName, Pattern, SExpr, SchedStmt, ScheduleBlock};
use crate::loc::Loc;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64, String),
    Punct(char),
}

fn lex(text: &str) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if text[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let s = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(text[s..i].to_string()));
        } else if c.is_ascii_digit() || (c == '-' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let s = i;
            i += 1;
            while i < b.len() && (b[i] as char).is_ascii_digit() {
                i += 1;
            }
            out.push(Tok::Int(text[s..i].parse().ok()?, text[s..i].to_string()));
        } else if "().,;=[]:!".contains(c) {
            out.push(Tok::Punct(c));
            i += 1;
        } else {
            return None;
        }
    }
    Some(out)
}

struct P {
    toks: Vec<Tok>,
    pos: usize,
    next_loc: u32,
}

impl P {
    fn loc(&mut self) -> Loc {
        self.next_loc += 1;
        Loc(Loc::DERIVED.0 + self.next_loc - 1)
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: char) -> Option<()> {
        self.eat(c).then_some(())
    }
    fn name(&mut self) -> Option<Name> {
        match self.peek()? {
            Tok::Ident(s) => {
                let name = s.clone();
                self.pos += 1;
                Some(Name { name, loc: self.loc() })
            }
            _ => None,
        }
    }

    fn stmt(&mut self) -> Option<SchedStmt> {
        let loc = self.loc();
        let pattern = if self.peek() == Some(&Tok::Ident("let".into())) {
            self.pos += 1;
            let p = self.pattern()?;
            self.expect('=')?;
            Some(p)
        } else {
            None
        };
        let call = self.expr()?;
        self.expect(';')?;
        Some(SchedStmt::Call { pattern, call, loc })
    }

    fn pattern(&mut self) -> Option<Pattern> {
        let close = if self.eat('(') {
            ')'
        } else if self.eat('[') {
            ']'
        } else {
            return Some(Pattern::Single(self.pat_name()?));
        };
        let loc = self.loc();
        let mut names = Vec::new();
        while !self.eat(close) {
            names.push(self.pat_name()?);
            if !self.eat(',') {
                self.expect(close)?;
                break;
            }
        }
        Some(Pattern::Multi { names, loc })
    }

    fn pat_name(&mut self) -> Option<PatName> {
        let n = self.name()?;
        Some(if n.name == "_" { PatName::Wild(n.loc) } else { PatName::Name(n) })
    }

    fn args(&mut self, close: char) -> Option<Vec<SExpr>> {
        let mut args = Vec::new();
        while !self.eat(close) {
            args.push(self.expr()?);
            if !self.eat(',') {
                self.expect(close)?;
                break;
            }
        }
        Some(args)
    }

    fn expr(&mut self) -> Option<SExpr> {
        let mut e = self.primary()?;
        loop {
            if self.eat('.') {
                let field = self.name()?;
                let loc = self.loc();
                if self.eat('(') {
                    let args = self.args(')')?;
                    e = SExpr::Method { base: Box::new(e), method: field, args, loc };
                } else {
                    e = SExpr::Field { base: Box::new(e), field, loc };
                }
            } else if self.eat('[') {
                let index = self.expr()?;
                self.expect(']')?;
                let loc = self.loc();
                e = SExpr::Index { base: Box::new(e), index: Box::new(index), loc };
            } else {
                return Some(e);
            }
        }
    }

    fn primary(&mut self) -> Option<SExpr> {
        match self.peek()?.clone() {
            Tok::Int(value, text) => {
                self.pos += 1;
                Some(SExpr::Int { value, text, loc: self.loc() })
            }
            Tok::Punct('[') => {
                self.pos += 1;
                let loc = self.loc();
                Some(SExpr::List { items: self.args(']')?, loc })
            }
            Tok::Ident(s) if s == "tune" && self.toks.get(self.pos + 1) == Some(&Tok::Punct('!')) => {
                self.pos += 2;
                let loc = self.loc();
                self.expect('(')?;
                let named =
                    matches!(self.peek(), Some(Tok::Ident(_))) && self.toks.get(self.pos + 1) == Some(&Tok::Punct(':'));
                let name = if named {
                    let n = self.name()?;
                    self.pos += 1;
                    Some(n)
                } else {
                    None
                };
                Some(SExpr::Knob { name, values: self.args(')')?, loc })
            }
            Tok::Ident(_) => Some(SExpr::Name(self.name()?)),
            Tok::Punct(_) => None,
        }
    }
}

/// The statements of `text` (statements only, no `schedule!` header) as a block for
/// `target`; `None` when they do not follow the grammar above.
pub fn parse_statements(text: &str, target: &str) -> Option<ScheduleBlock> {
    let mut p = P { toks: lex(text)?, pos: 0, next_loc: 0 };
    let mut stmts = Vec::new();
    while p.peek().is_some() {
        stmts.push(p.stmt()?);
    }
    Some(ScheduleBlock { target: target.to_string(), target_loc: Loc::NONE, stmts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_read_back_as_written() {
        let text = "// a comment\nlet c_l = c.cache_write(local);\nlet (io, ii) = c.split(c.i, tune!(rows: 8, 4));\n\
                    let [a, _] = c_l.axes();\nc.reorder(io, ii);\nlet b_l = b.cache_read(local, [c_l]);\n\
                    c.bind(x, block.x);\nlet y = s.axes()[0];";
        let b = parse_statements(text, "cpu").expect("parses");
        let printed: Vec<String> = b
            .stmts
            .iter()
            .map(|s| match s {
                SchedStmt::Call { call, .. } => call.to_string(),
                SchedStmt::Bad { what, .. } => what.clone(),
            })
            .collect();
        assert_eq!(
            printed,
            [
                "c.cache_write(local)",
                "c.split(c.i, tune!(rows: 8, 4))",
                "c_l.axes()",
                "c.reorder(io, ii)",
                "b.cache_read(local, [c_l])",
                "c.bind(x, block.x)",
                "s.axes()[0]"
            ]
        );
        assert!(matches!(&b.stmts[2], SchedStmt::Call { pattern: Some(Pattern::Multi { names, .. }), .. }
            if matches!(names[1], PatName::Wild(_))));
        assert!(b.stmts.iter().all(|s| match s {
            SchedStmt::Call { loc, .. } => loc.is_derived(),
            _ => false,
        }));
        assert!(parse_statements("c.split(c.i, 8)", "cpu").is_none(), "a statement without `;`");
        assert!(parse_statements("c.split(c.i, 8 + 1);", "cpu").is_none());
    }
}
