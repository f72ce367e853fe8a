//! The statements a derivation writes: `schedule!` source with knobs, named so that
//! nothing clashes with the kernel's tensors or the user's own `let` bindings.

use std::collections::BTreeSet;

/// A knob of a derived schedule: its name and values, the derived choice first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobSpec {
    pub name: String,
    pub values: Vec<String>,
}

/// One statement, with the comment that explains the group it opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub comment: Option<String>,
    /// The statement; each knob is a placeholder `\u{1}N\u{1}` (knob `N` of the block).
    pub text: String,
}

/// Writes statements and allocates names.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    taken: BTreeSet<String>,
    pub lines: Vec<Line>,
    pub knobs: Vec<KnobSpec>,
    pending: Option<String>,
}

const MARK: char = '\u{1}';

impl Builder {
    /// A builder whose names avoid `taken` (the kernel's tensors, dims and scalars, and
    /// the names a written block binds).
    pub fn new(taken: impl IntoIterator<Item = String>) -> Builder {
        Builder { taken: taken.into_iter().collect(), ..Builder::default() }
    }

    /// `base`, or `base1`, `base2`, .. : a name no other binding has.
    pub fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 1;
        while self.taken.contains(&name) {
            name = format!("{base}{k}");
            k += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// A knob named after `base` offering `values` (the first is the derived choice;
    /// repeats are dropped). One value is written as it is, without a knob.
    pub fn knob(&mut self, base: &str, values: impl IntoIterator<Item = String>) -> String {
        let mut vs: Vec<String> = Vec::new();
        for v in values {
            if !vs.contains(&v) {
                vs.push(v);
            }
        }
        if vs.len() <= 1 {
            return vs.pop().unwrap_or_default();
        }
        let name = self.fresh(base);
        self.knobs.push(KnobSpec { name, values: vs });
        format!("{MARK}{}{MARK}", self.knobs.len() - 1)
    }

    /// A knob of integers (see [`Builder::knob`]).
    pub fn int_knob(&mut self, base: &str, values: impl IntoIterator<Item = i64>) -> String {
        self.knob(base, values.into_iter().map(|v| v.to_string()))
    }

    /// The comment of the next statement.
    pub fn comment(&mut self, text: impl Into<String>) {
        self.pending = Some(text.into());
    }

    pub fn stmt(&mut self, text: impl Into<String>) {
        self.lines.push(Line { comment: self.pending.take(), text: text.into() });
    }

    /// The statements, each knob written as `tune!(NAME: v0, v1, ..)` (`knobs`) or as
    /// its first value, the comments as `//` lines; indented by four spaces. A knob used
    /// by several statements (one width for a row's stages) is written out once, then
    /// referred to as `tune!(NAME)`: one knob, whose value every use takes.
    pub fn render(&self, knobs: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut written = vec![false; self.knobs.len()];
        for l in &self.lines {
            if let Some(c) = &l.comment {
                for w in wrap(c, 88) {
                    out.push(format!("    // {w}"));
                }
            }
            out.push(format!("    {};", self.resolve(&l.text, knobs, &mut written)));
        }
        out
    }

    fn resolve(&self, text: &str, knobs: bool, written: &mut [bool]) -> String {
        let mut out = String::new();
        let mut parts = text.split(MARK);
        out.push_str(parts.next().unwrap_or_default());
        while let (Some(k), Some(rest)) = (parts.next(), parts.next()) {
            match k.parse::<usize>().ok().filter(|&n| n < self.knobs.len()) {
                Some(n) if knobs && written[n] => out.push_str(&format!("tune!({})", self.knobs[n].name)),
                Some(n) if knobs => {
                    written[n] = true;
                    let s = &self.knobs[n];
                    out.push_str(&format!("tune!({}: {})", s.name, s.values.join(", ")))
                }
                Some(n) => out.push_str(&self.knobs[n].values[0]),
                None => {}
            }
            out.push_str(rest);
        }
        out
    }
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_render_as_tune_or_as_their_first_value() {
        let mut b = Builder::new(["c".to_string()]);
        let k = b.int_knob("rows", [8, 4, 8, 16]);
        let one = b.int_knob("cols", [32]);
        b.comment("a register tile");
        b.stmt(format!("let (io, ii) = c.split(c.i, {k})"));
        b.stmt(format!("let (jo, ji) = c.split(c.j, {one})"));
        b.stmt(format!("let (po, pi) = c.split(po, {k})"));
        assert_eq!(
            b.render(true),
            [
                "    // a register tile",
                "    let (io, ii) = c.split(c.i, tune!(rows: 8, 4, 16));",
                "    let (jo, ji) = c.split(c.j, 32);",
                "    let (po, pi) = c.split(po, tune!(rows));"
            ]
        );
        assert_eq!(b.render(true), b.render(true), "each rendering writes the knob out once");
        assert_eq!(b.render(false)[1], "    let (io, ii) = c.split(c.i, 8);");
        assert_eq!(b.fresh("c"), "c1");
    }
}
