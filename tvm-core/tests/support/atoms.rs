//! Token atoms for the fuzz tests of the frontend and of the macro: a kernel's tokens as
//! text pieces that mutations delete, duplicate and swap.

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
