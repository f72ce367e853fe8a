//! The search space of a schedule block: its knobs (`tune!(..)`), the candidates they
//! make, and the block with one candidate's values put in.
//!
//! A knob is named by what is written before its `:` (`tune!(tile: 8, 16)`), else by its
//! place among the block's unnamed knobs: `k0`, `k1`, .. . A candidate is one value per
//! knob; candidate 0 takes every knob's first value, which is the schedule as written.
//! Candidates are numbered like an odometer whose last knob turns fastest.

use crate::frontend::ast::{SExpr, SchedStmt, ScheduleBlock};
use crate::loc::Loc;
use crate::schedule::{ScheduleError, ScheduleErrorKind as K};
use crate::target::Target;
use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use std::collections::BTreeMap;

/// The most candidates one block may make (every one is checked while the macro expands).
pub const MAX_CANDIDATES: usize = 4096;

/// One knob of a block.
#[derive(Clone, Debug, PartialEq)]
pub struct Knob {
    pub name: String,
    /// The values as written (`16`, `c.i`), in order.
    pub values: Vec<String>,
    /// Where each value is.
    pub value_locs: Vec<Loc>,
    /// The whole `tune!(..)`; or the name, when one is written.
    pub loc: Loc,
    /// Whether the name was written (`tune!(NAME: ..)`), so later `tune!(NAME)` take
    /// its value.
    pub named: bool,
}

/// The knobs of `block`, in the order written.
pub fn knobs(block: &ScheduleBlock) -> Vec<Knob> {
    let mut out: Vec<Knob> = Vec::new();
    let mut unnamed = 0;
    for st in &block.stmts {
        if let SchedStmt::Call { call, .. } = st {
            walk(call, &mut |e| {
                if let SExpr::Knob { name, values, loc } = e {
                    if reference(e, |n| out.iter().any(|k| k.named && k.name == n)).is_some() {
                        return;
                    }
                    let (name, loc, named) = match name {
                        Some(n) => (n.name.clone(), n.loc, true),
                        None => {
                            unnamed += 1;
                            (format!("k{}", unnamed - 1), *loc, false)
                        }
                    };
                    let texts = values.iter().map(|v| v.to_string()).collect();
                    let value_locs = values.iter().map(|v| v.loc()).collect();
                    out.push(Knob { name, values: texts, value_locs, loc, named });
                }
            });
        }
    }
    out
}

/// The knob `e` refers to, when it is `tune!(NAME)` and `defined(NAME)`: a named knob
/// written earlier, whose value it takes (`tune!(tx: 64, 128)` .. `tune!(tx)`).
fn reference(e: &SExpr, defined: impl Fn(&str) -> bool) -> Option<String> {
    match e {
        SExpr::Knob { name: None, values, .. } => match values.as_slice() {
            [SExpr::Name(n)] if defined(&n.name) => Some(n.name.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn walk(e: &SExpr, f: &mut impl FnMut(&SExpr)) {
    f(e);
    match e {
        SExpr::Field { base, .. } => walk(base, f),
        SExpr::Method { base, args, .. } => {
            walk(base, f);
            args.iter().for_each(|a| walk(a, f));
        }
        SExpr::Index { base, index, .. } => {
            walk(base, f);
            walk(index, f);
        }
        SExpr::List { items, .. } | SExpr::Knob { values: items, .. } => items.iter().for_each(|a| walk(a, f)),
        SExpr::Name(_) | SExpr::Int { .. } | SExpr::Lit { .. } => {}
    }
}

/// `block` with knob `k` (in the order of [`knobs`]) replaced by its value `choice[k]`
/// (its first value where `choice` is short).
pub fn resolve(block: &ScheduleBlock, choice: &[usize]) -> ScheduleBlock {
    let mut st = Put { choice, next: 0, chosen: BTreeMap::new() };
    let stmts = block
        .stmts
        .iter()
        .map(|s| match s {
            SchedStmt::Call { pattern, call, loc } => {
                SchedStmt::Call { pattern: pattern.clone(), call: st.put(call), loc: *loc }
            }
            bad => bad.clone(),
        })
        .collect();
    ScheduleBlock { target: block.target.clone(), target_loc: block.target_loc, stmts }
}

/// The state of [`resolve`]: the next knob's number, and the values named knobs took.
struct Put<'c> {
    choice: &'c [usize],
    next: usize,
    chosen: BTreeMap<String, SExpr>,
}

impl Put<'_> {
    fn put(&mut self, e: &SExpr) -> SExpr {
        match e {
            SExpr::Knob { name, values, .. } => {
                if let Some(r) = reference(e, |n| self.chosen.contains_key(n)) {
                    return self.chosen[&r].clone();
                }
                let k = self.next;
                self.next += 1;
                let i = self.choice.get(k).copied().unwrap_or(0).min(values.len().saturating_sub(1));
                let v = values.get(i).cloned().unwrap_or_else(|| e.clone());
                if let Some(n) = name {
                    self.chosen.insert(n.name.clone(), v.clone());
                }
                v
            }
            SExpr::Field { base, field, loc } => {
                SExpr::Field { base: Box::new(self.put(base)), field: field.clone(), loc: *loc }
            }
            SExpr::Method { base, method, args, loc } => {
                let base = Box::new(self.put(base));
                let args = args.iter().map(|a| self.put(a)).collect();
                SExpr::Method { base, method: method.clone(), args, loc: *loc }
            }
            SExpr::Index { base, index, loc } => {
                SExpr::Index { base: Box::new(self.put(base)), index: Box::new(self.put(index)), loc: *loc }
            }
            SExpr::List { items, loc } => SExpr::List { items: items.iter().map(|i| self.put(i)).collect(), loc: *loc },
            other => other.clone(),
        }
    }
}

/// How many candidates `knobs` make.
pub fn space_size(knobs: &[Knob]) -> u128 {
    knobs.iter().fold(1u128, |n, k| n.saturating_mul(k.values.len() as u128))
}

/// Candidate number `n`'s value of every knob (the last knob turns fastest).
pub fn choice_of(knobs: &[Knob], mut n: usize) -> Vec<usize> {
    let mut out = vec![0; knobs.len()];
    for (k, knob) in knobs.iter().enumerate().rev() {
        let len = knob.values.len().max(1);
        out[k] = n % len;
        n /= len;
    }
    out
}

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

/// The block's knob errors: two knobs of one name, a value written twice, too many
/// candidates, and a value no legal candidate has (each candidate is applied to `graph`
/// for `target` by the same rules as any schedule). Candidate 0's own errors are the
/// block's ordinary errors, reported elsewhere; the never-legal check runs only when
/// candidate 0 is legal.
pub fn check(graph: &crate::te::Graph, block: &ScheduleBlock, target: &Target) -> Vec<ScheduleError> {
    let errors = check_syntax(block);
    if !errors.is_empty() || crate::frontend::schedule_apply(graph, &resolve(block, &[]), target.clone()).is_err() {
        return errors;
    }
    check_values(graph, block, target)
}

/// The errors of the knobs as written: no value, a knob inside a knob, two knobs of one
/// name, a value written twice, too many candidates. A block with any of these is not
/// applied (its knobs mean nothing yet).
pub fn check_syntax(block: &ScheduleBlock) -> Vec<ScheduleError> {
    let mut errors = Vec::new();
    for st in &block.stmts {
        if let SchedStmt::Call { call, .. } = st {
            walk(call, &mut |e| {
                if let SExpr::Knob { values, loc, .. } = e {
                    if values.is_empty() {
                        errors.push(ScheduleError::new(*loc, K::KnobWithoutValues));
                    }
                    for v in values {
                        if let SExpr::Knob { loc, .. } = v {
                            errors.push(ScheduleError::new(*loc, K::KnobInKnob));
                        }
                    }
                }
            });
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    let ks = knobs(block);
    for (i, k) in ks.iter().enumerate() {
        if ks[..i].iter().any(|o| o.name == k.name) {
            errors.push(ScheduleError::new(k.loc, K::KnobNameTaken { name: k.name.clone() }));
        }
        for (j, v) in k.values.iter().enumerate() {
            if k.values[..j].contains(v) {
                errors.push(ScheduleError::new(
                    k.value_locs[j],
                    K::KnobValueRepeated { knob: k.name.clone(), value: v.clone() },
                ));
            }
        }
    }
    let size = space_size(&ks);
    if size > MAX_CANDIDATES as u128 {
        let loc = ks[0].loc;
        errors.push(ScheduleError::new(loc, K::KnobSpaceTooLarge { count: size, limit: MAX_CANDIDATES }));
    }
    errors
}

/// The values with which no candidate of `block` (whose knobs passed [`check_syntax`]
/// and whose candidate 0 is legal) is a legal schedule for `target`.
pub fn check_values(graph: &crate::te::Graph, block: &ScheduleBlock, target: &Target) -> Vec<ScheduleError> {
    let ks = knobs(block);
    if ks.is_empty() {
        return Vec::new();
    }
    let size = space_size(&ks);
    let mut errors = Vec::new();
    // Which values some legal candidate has; the first error of each value otherwise.
    let mut legal: Vec<Vec<bool>> = ks.iter().map(|k| vec![false; k.values.len()]).collect();
    let mut why: Vec<Vec<Option<String>>> = ks.iter().map(|k| vec![None; k.values.len()]).collect();
    for n in 0..size as usize {
        let choice = choice_of(&ks, n);
        // Skip a candidate whose values are all known to be legal already.
        if choice.iter().enumerate().all(|(k, &i)| legal[k][i]) {
            continue;
        }
        match crate::frontend::schedule_apply(graph, &resolve(block, &choice), target.clone()) {
            Ok(_) => choice.iter().enumerate().for_each(|(k, &i)| legal[k][i] = true),
            Err(es) => {
                let first = es.first().map(|e| e.message()).unwrap_or_default();
                for (k, &i) in choice.iter().enumerate() {
                    why[k][i].get_or_insert_with(|| first.clone());
                }
            }
        }
    }
    for (k, knob) in ks.iter().enumerate() {
        for (i, v) in knob.values.iter().enumerate() {
            if !legal[k][i] {
                let why = why[k][i].clone().unwrap_or_default();
                errors.push(ScheduleError::new(
                    knob.value_locs[i],
                    K::KnobValueNeverLegal { knob: knob.name.clone(), value: v.clone(), why },
                ));
            }
        }
    }
    errors
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
    let gpu = !matches!(kind, crate::TargetKind::Cpu);
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
            crate::TargetKind::WebGpu => crate::Target::webgpu().max_threads_per_block,
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
