//! The search space of a schedule block as the tuner sees it: the candidates its knobs
//! make (the knobs themselves, and the block with one candidate's values put in, are the
//! language's: [`crate::frontend::knobs`]), a candidate as a record names it and as the
//! tokens the tuner compiles, and the space the compiler derives for a kernel without a
//! block.

pub use crate::frontend::knobs::{
    check, check_syntax, check_values, choice_of, knobs, resolve, space_size, Knob, MAX_CANDIDATES,
};
use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use std::collections::BTreeMap;

/// A candidate as a record writes it: knob name → value as written.
pub fn assignment(knobs: &[Knob], choice: &[usize]) -> BTreeMap<String, String> {
    knobs.iter().zip(choice).map(|(k, &i)| (k.name.clone(), k.values[i].clone())).collect()
}

/// The candidate a record's assignment names, if every knob is in it with a value the
/// knob still has (extra names make it no candidate of this space).
pub fn choice_from(knobs: &[Knob], a: &BTreeMap<String, String>) -> Option<Vec<usize>> {
    if a.len() != knobs.len() {
        return None;
    }
    knobs.iter().map(|k| k.values.iter().position(|v| Some(v) == a.get(&k.name))).collect()
}

/// The macro input `tokens` of a kernel as one candidate: the function renamed to
/// `name`, the knobs of schedule block `block` (index among the blocks) at `choice`,
/// every other knob at its first value. What the tuner compiles for each candidate.
pub fn substitute(tokens: &TokenStream, block: Option<usize>, choice: &[usize], name: &str) -> TokenStream {
    let mut out = Vec::new();
    let toks: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let (mut i, mut seen, mut renamed) = (0, 0usize, false);
    while i < toks.len() {
        if !renamed {
            if let (TokenTree::Ident(f), Some(TokenTree::Ident(n))) = (&toks[i], toks.get(i + 1)) {
                if f == "fn" {
                    out.push(toks[i].clone());
                    out.push(TokenTree::Ident(proc_macro2::Ident::new(name, n.span())));
                    renamed = true;
                    i += 2;
                    continue;
                }
            }
        }
        if let (
            TokenTree::Ident(id),
            Some(TokenTree::Punct(bang)),
            Some(TokenTree::Group(t)),
            Some(TokenTree::Group(b)),
        ) = (&toks[i], toks.get(i + 1), toks.get(i + 2), toks.get(i + 3))
        {
            if id == "schedule" && bang.as_char() == '!' && b.delimiter() == Delimiter::Brace {
                let pick: &[usize] = if Some(seen) == block { choice } else { &[] };
                let body = put_tokens(&b.stream(), pick, &mut 0, &mut BTreeMap::new());
                out.extend([toks[i].clone(), toks[i + 1].clone(), TokenTree::Group(t.clone())]);
                let mut g = Group::new(Delimiter::Brace, body);
                g.set_span(b.span());
                out.push(TokenTree::Group(g));
                seen += 1;
                i += 4;
                continue;
            }
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out.into_iter().collect()
}

/// `ts` with every `tune!(..)` replaced by the tokens of its chosen value (`chosen`: the
/// values named knobs took, for the `tune!(NAME)` that refer to them).
fn put_tokens(
    ts: &TokenStream,
    choice: &[usize],
    next: &mut usize,
    chosen: &mut BTreeMap<String, TokenStream>,
) -> TokenStream {
    let toks: Vec<TokenTree> = ts.clone().into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let (TokenTree::Ident(id), Some(TokenTree::Punct(bang)), Some(TokenTree::Group(g))) =
            (&toks[i], toks.get(i + 1), toks.get(i + 2))
        {
            if id == "tune" && bang.as_char() == '!' && g.delimiter() == Delimiter::Parenthesis {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                if let [TokenTree::Ident(r)] = inner.as_slice() {
                    if let Some(v) = chosen.get(&r.to_string()) {
                        out.extend(v.clone());
                        i += 3;
                        continue;
                    }
                }
                let (name, values) = knob_values(&g.stream());
                let k = choice.get(*next).copied().unwrap_or(0);
                *next += 1;
                if let Some(v) = values.get(k).or(values.first()) {
                    if let Some(n) = name {
                        chosen.insert(n, v.clone());
                    }
                    out.extend(v.clone());
                }
                i += 3;
                continue;
            }
        }
        match &toks[i] {
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), put_tokens(&g.stream(), choice, next, chosen));
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            t => out.push(t.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

/// The name and values of a knob's group (`name: a, b` or `a, b`), each value as its
/// tokens.
pub(crate) fn knob_values(ts: &TokenStream) -> (Option<String>, Vec<TokenStream>) {
    let mut toks: Vec<TokenTree> = ts.clone().into_iter().collect();
    let mut name = None;
    if let (Some(TokenTree::Ident(n)), Some(TokenTree::Punct(c))) = (toks.first(), toks.get(1)) {
        let double = matches!(toks.get(2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
        if c.as_char() == ':' && c.spacing() == proc_macro2::Spacing::Alone && !double {
            name = Some(n.to_string());
            toks.drain(..2);
        }
    }
    let mut values = vec![Vec::new()];
    for t in toks {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => values.push(Vec::new()),
            _ => values.last_mut().expect("one value at least").push(t),
        }
    }
    (name, values.into_iter().filter(|v| !v.is_empty()).map(|v| v.into_iter().collect()).collect())
}

/// The search space the compiler derives for a kernel that has no `schedule!` block for
/// a target of `kind`, as the text of such a block with knobs: the auto-scheduler's
/// statements (`crate::autosched`) with their sizes as knobs, the derived choice first,
/// so candidate 0 is the schedule the kernel gets without tuning. `None` when it derives
/// nothing with a knob.
pub fn default_space(graph: &crate::te::Graph, kind: crate::TargetKind) -> Option<String> {
    let target = crate::Target::parse(kind.name()).ok()?;
    let base = crate::schedule::Schedule::new(graph.clone(), target);
    let derived = crate::autosched::derive(&base, &[]);
    if derived.knobs().is_empty() {
        return None;
    }
    Some(derived.block_text(true))
}

/// `tokens` (a kernel without a block for `kind`) with the [`default_space`] block
/// appended, and the kernel they parse to.
pub fn with_default_space(
    tokens: &TokenStream,
    kernel: &crate::frontend::Kernel,
    kind: crate::TargetKind,
) -> Option<(TokenStream, crate::frontend::Kernel)> {
    let text = default_space(&kernel.graph, kind)?;
    let block: TokenStream = text.parse().ok()?;
    let mut aug = tokens.clone();
    aug.extend(block);
    let k = crate::frontend::parse_kernel(aug.clone()).ok()?;
    Some((aug, k))
}
