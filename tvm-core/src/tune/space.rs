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
/// a target of `kind`, as the text of such a block with knobs: the stage of the first
/// output, tiled (the last two spatial axes; the last one alone for rank 1) with tunable
/// tile sizes, on the CPU with the outer axis parallel, the inner vectorized, and its
/// reduction in a local accumulator (or the reduction stage it reads computed per tile)
/// with a tunable unroll of the reduction; on GPU targets its spatial axes fused and split
/// over a tunable number of threads per block, the reduction in a register. Every other
/// stage keeps the target's default treatment. `None` for a kernel this does not cover
/// (an output that is an input, a reduction read at another rank, a `reduce` with a
/// combiner of its own).
pub fn default_space(graph: &crate::te::Graph, kind: crate::TargetKind) -> Option<String> {
    use crate::te::Op;
    let out = *graph.outputs.first()?;
    let t = graph.tensor(out);
    let Op::Compute { axes, body } = &t.op else { return None };
    // A reduction with a combiner of its own: its partial results are not a cache_write
    // away (and several components are one stage).
    if t.tuple_reduce().is_some() {
        return None;
    }
    let name = &t.name;
    let ax: Vec<String> = axes.iter().map(|a| format!("{name}.{}", a.var.name())).collect();
    let reduce_axes = |body: &crate::tir::Expr| -> Vec<String> {
        match body {
            crate::tir::Expr::Reduce(r) => r.axes.iter().map(|a| a.var.name().to_string()).collect(),
            _ => Vec::new(),
        }
    };
    let own_reduce = reduce_axes(body);
    // (a) the output reduces; (b) it reads one reduction stage of its rank; (c) neither.
    let producer = if own_reduce.is_empty() {
        graph
            .inputs_of(out)
            .into_iter()
            .filter(|&p| !graph.tensor(p).is_placeholder())
            .filter_map(|p| match &graph.tensor(p).op {
                Op::Compute { axes: pa, body: pb } if pa.len() == axes.len() && !reduce_axes(pb).is_empty() => {
                    Some((graph.tensor(p).name.clone(), reduce_axes(pb)))
                }
                _ => None,
            })
            .next()
    } else {
        None
    };
    let n = ax.len();
    if n == 0 {
        return None;
    }
    let mut s = String::new();
    let gpu = matches!(kind, crate::TargetKind::Cuda | crate::TargetKind::OpenCl | crate::TargetKind::Metal);
    if gpu {
        let local = !own_reduce.is_empty();
        if local {
            s.push_str(&format!("let l = {name}.cache_write(local);\n"));
        }
        let fused = if n == 1 {
            ax[0].clone()
        } else {
            s.push_str(&format!("let f = {name}.fuse({});\n", ax.join(", ")));
            "f".to_string()
        };
        // Thread counts the target allows, the default schedule's 256 first.
        let max = match kind {
            crate::TargetKind::Cuda => crate::Target::cuda().max_threads_per_block,
            _ => crate::Target::opencl().max_threads_per_block,
        };
        let threads: Vec<String> =
            [256u32, 64, 128, 512, 1024].iter().filter(|&&t| t <= max).map(|t| t.to_string()).collect();
        s.push_str(&format!("let (b, t) = {name}.split({fused}, tune!(threads: {}));\n", threads.join(", ")));
        s.push_str(&format!("{name}.bind(b, block.x);\n{name}.bind(t, thread.x);\n"));
        if local {
            s.push_str(&format!("l.compute_at({name}, t);\n"));
        } else if let Some((p, _)) = &producer {
            s.push_str(&format!("{p}.compute_at({name}, t);\n"));
        }
        return Some(format!("schedule!({}) {{\n{s}}}", kind.name()));
    }
    // The CPU: a tile of the last two spatial axes (or a split of the only one).
    let (outer, inner_tile) = if n >= 2 {
        s.push_str(&format!(
            "let (yo, xo, yi, xi) = {name}.tile({}, {}, tune!(rows: 8, 4, 16), tune!(cols: 16, 32, 64));\n",
            ax[n - 2],
            ax[n - 1]
        ));
        let outer = if n > 2 { ax[0].clone() } else { "yo".to_string() };
        (outer, "xo")
    } else {
        s.push_str(&format!("let (xo, xi) = {name}.split({}, tune!(cols: 16, 32, 64));\n", ax[0]));
        ("xo".to_string(), "xo")
    };
    let reduction: Option<(String, Vec<String>)> = if !own_reduce.is_empty() {
        // Must come first: cache_write before any other primitive on the stage.
        s = format!("let l = {name}.cache_write(local);\n{s}");
        Some(("l".to_string(), own_reduce))
    } else {
        producer
    };
    match reduction {
        None => {
            s.push_str(&format!("{name}.parallel({outer});\n{name}.vectorize(xi);\n"));
        }
        Some((stage, raxes)) => {
            s.push_str(&format!("{name}.parallel({outer});\n{name}.vectorize(xi);\n"));
            s.push_str(&format!("{stage}.compute_at({name}, {inner_tile});\n"));
            let la: Vec<String> = (0..n).map(|k| format!("la{k}")).collect();
            s.push_str(&format!("let [{}] = {stage}.axes();\n", la.join(", ")));
            let last = raxes.last().expect("a reduction has an axis");
            s.push_str(&format!("let (ko, ki) = {stage}.split({stage}.{last}, tune!(unroll: 4, 2, 8));\n"));
            let mut order: Vec<String> = la[..n.saturating_sub(2)].to_vec();
            order.extend(raxes[..raxes.len() - 1].iter().map(|r| format!("{stage}.{r}")));
            order.extend(["ko".to_string(), "ki".to_string()]);
            order.extend(la[n.saturating_sub(2)..].iter().cloned());
            s.push_str(&format!("{stage}.reorder({});\n{stage}.unroll(ki);\n", order.join(", ")));
            s.push_str(&format!("{stage}.vectorize({});\n", la[n - 1]));
        }
    }
    Some(format!("schedule!({}) {{\n{s}}}", kind.name()))
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
