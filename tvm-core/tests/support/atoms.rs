//! What the fuzz tests of the frontend and of the macro share: token atoms (a kernel's
//! tokens as text pieces that mutations delete, duplicate and swap) and the tiny
//! deterministic PRNG that keeps their failures reproducible.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// The tokens of `ts` as text atoms, delimiters as their own atoms, joint punctuation
/// kept together (`->`, `::`, `..`).
pub fn atoms(ts: TokenStream, out: &mut Vec<String>) {
    let mut punct = String::new();
    for tt in ts {
        match tt {
            TokenTree::Punct(p) => {
                punct.push(p.as_char());
                if p.spacing() == Spacing::Alone {
                    out.push(std::mem::take(&mut punct));
                }
                continue;
            }
            _ if !punct.is_empty() => out.push(std::mem::take(&mut punct)),
            _ => {}
        }
        match tt {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                out.push(open.to_string());
                atoms(g.stream(), out);
                out.push(close.to_string());
            }
            other => out.push(other.to_string()),
        }
    }
    if !punct.is_empty() {
        out.push(punct);
    }
}

/// xorshift64* (the state must not be 0).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// An element of `v`, which must not be empty.
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}
