//! Register promotion of straight-line updates (CPU targets): a run of consecutive
//! statements that store to the same element (or vector) of a buffer, reading it back
//! in between, becomes one load, a chain of `let`s, and one store:
//!
//! ```text
//! c[ramp(i * 64, 1, 64)] = c[ramp(i * 64, 1, 64)] + x0      let acc = c[ramp(..)] + x0
//! c[ramp(i * 64, 1, 64)] = c[ramp(i * 64, 1, 64)] + x1  =>  let acc_1 = acc + x1
//! c[ramp(i * 64, 1, 64)] = c[ramp(i * 64, 1, 64)] + x2      c[ramp(..)] = acc_1 + x2
//! ```
//!
//! This is what the unrolled reduction of a register tile looks like (`k` unrolled inside
//! a row of accumulators). LLVM would remove the intermediate stores itself only while
//! the lanes stay within its dead-store elimination's scan limits: with 64-lane rows
//! (256 scalar stores per row before the SLP vectorizer re-forms vectors) it kept all of
//! them, 16 `vmovups` per row instead of 4. TVM emits LLVM vector IR directly, so it
//! never meets the limit. The run is straight-line and no other statement of it touches
//! the buffer, so forwarding the value is exact.

use crate::tir::mutate::{super_stmt, Mutator};
use crate::tir::visit::for_each_expr;
use crate::tir::{Buffer, Expr, PrimFunc, Stmt, Var};

/// Forwards the stores of straight-line runs in the host body of `f` (CPU code).
pub fn forward_stores(mut f: PrimFunc) -> PrimFunc {
    f.body = Forward.mutate_stmt(f.body);
    f
}

struct Forward;

impl Mutator for Forward {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::Seq(ss) => Stmt::seq(forward_runs(ss)),
            s => s,
        }
    }
}

/// The buffer and index of `s` when it is a one-index store, not a masked one.
///
/// A masked store (`c[i] = select(test, v, c[i])`, `hoist_tail_guards`'s border) is left
/// as it is: forwarded into a `let`, its `c[i]` would be read on the lanes the test
/// drops, which the interpreter (rightly) takes for a read of an element never written.
fn target_of(s: &Stmt) -> Option<(&Buffer, &Expr)> {
    match s {
        Stmt::Store { buffer, indices, value } if indices.len() == 1 => {
            let masked = super::hoist_tail_guards::is_masked_store(buffer, indices, value);
            (!masked).then(|| (buffer, &indices[0]))
        }
        _ => None,
    }
}

/// Whether `e` reads `buffer` anywhere but at exactly `index`.
fn reads_elsewhere(e: &Expr, buffer: &Buffer, index: &Expr) -> bool {
    let mut other = false;
    for_each_expr(e, &mut |x| {
        if let Expr::Load { buffer: b, indices } = x {
            other |= b == buffer && !(indices.len() == 1 && indices[0] == *index);
        }
    });
    other
}

fn forward_runs(ss: Vec<Stmt>) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(ss.len());
    let mut i = 0;
    while i < ss.len() {
        let Some((buffer, index)) = target_of(&ss[i]) else {
            out.push(ss[i].clone());
            i += 1;
            continue;
        };
        // The run: consecutive stores to exactly this element, whose values read the
        // buffer at most at this element, and whose index reads no buffer (so it means
        // the same thing in every statement of the run).
        let mut j = i;
        let index_pure = !crate::tir::visit::reads_memory(index);
        while index_pure && j < ss.len() {
            match (&ss[j], target_of(&ss[j])) {
                (Stmt::Store { value, .. }, Some((b, ix))) if b == buffer && ix == index => {
                    if reads_elsewhere(value, buffer, index) {
                        break;
                    }
                    j += 1;
                }
                _ => break,
            }
        }
        if j - i < 2 {
            // A store whose next statements read the value back: they take it from the
            // store (after a fused loop's first body stores a vector, its second reads it).
            // (Only where the lanes are distinct elements: a ramp of stride 0 leaves its
            // last lane in every element, which a read back sees in every lane.)
            let distinct = match index {
                Expr::Ramp { stride, .. } => stride.as_int().is_some_and(|s| s != 0),
                i => i.dtype().lanes == 1,
            };
            let readers = if index_pure && distinct { read_back(&ss[i + 1..], buffer, index) } else { 0 };
            if readers > 0 {
                out.push(forward_into(&ss[i..=i + readers]));
                i += readers + 1;
                continue;
            }
            out.push(ss[i].clone());
            i += 1;
            continue;
        }
        out.push(chain(buffer, index, &ss[i..j]));
        i = j;
    }
    out
}

/// How many of the statements at the start of `next` to forward the element `index` of
/// `buffer` into: they are stores to other buffers (so none changes the element), and
/// the last of them reads it at exactly `index`.
fn read_back(next: &[Stmt], buffer: &Buffer, index: &Expr) -> usize {
    let load = Expr::Load { buffer: buffer.clone(), indices: vec![index.clone()] };
    let mut n = 0;
    for (k, s) in next.iter().enumerate() {
        match s {
            Stmt::Store { buffer: b, indices, value } if b != buffer => {
                let mut reads = false;
                for_each_expr(value, &mut |x| reads |= *x == load);
                for i in indices {
                    for_each_expr(i, &mut |x| reads |= *x == load);
                }
                if reads {
                    n = k + 1;
                }
            }
            _ => break,
        }
    }
    n
}

/// `let v = value; buffer[index] = v;` then the following stores with the element read
/// as `v`.
fn forward_into(run: &[Stmt]) -> Stmt {
    let Stmt::Store { buffer, indices, value } = &run[0] else { unreachable!("a store") };
    let load = Expr::Load { buffer: buffer.clone(), indices: indices.clone() };
    let var = Var::new(format!("{}_v", buffer.name()), value.dtype());
    let v = Expr::Var(var.clone());
    let mut body = vec![Stmt::Store { buffer: buffer.clone(), indices: indices.clone(), value: v.clone() }];
    for s in &run[1..] {
        let Stmt::Store { buffer: b, indices: ix, value: val } = s else { unreachable!("a store") };
        body.push(Stmt::Store {
            buffer: b.clone(),
            indices: ix.iter().map(|i| replace_load(i, &load, Some(&v))).collect(),
            value: replace_load(val, &load, Some(&v)),
        });
    }
    Stmt::Let { var, value: value.clone(), body: Box::new(Stmt::seq(body)) }
}

/// `let acc_k = value_k (the element read as acc_(k-1))`, then the store of the last.
fn chain(buffer: &Buffer, index: &Expr, run: &[Stmt]) -> Stmt {
    let load = Expr::Load { buffer: buffer.clone(), indices: vec![index.clone()] };
    let values: Vec<&Expr> = run
        .iter()
        .map(|s| match s {
            Stmt::Store { value, .. } => value,
            _ => unreachable!("a run of stores"),
        })
        .collect();
    let mut lets: Vec<(Var, Expr)> = Vec::new();
    let mut current: Option<Expr> = None;
    for v in &values[..values.len() - 1] {
        let value = replace_load(v, &load, current.as_ref());
        let var = Var::new(format!("{}_v", buffer.name()), value.dtype());
        current = Some(Expr::Var(var.clone()));
        lets.push((var, value));
    }
    let last = replace_load(values[values.len() - 1], &load, current.as_ref());
    let mut body = Stmt::Store { buffer: buffer.clone(), indices: vec![index.clone()], value: last };
    for (var, value) in lets.into_iter().rev() {
        body = Stmt::Let { var, value, body: Box::new(body) };
    }
    body
}

/// `e` with every `load` replaced by `by` (kept when there is none yet: the first read
/// of the element is a real load).
fn replace_load(e: &Expr, load: &Expr, by: Option<&Expr>) -> Expr {
    let Some(by) = by else { return e.clone() };
    struct R<'a>(&'a Expr, &'a Expr);
    impl Mutator for R<'_> {
        fn mutate_expr(&mut self, e: Expr) -> Expr {
            if e == *self.0 {
                return self.1.clone();
            }
            crate::tir::mutate::super_expr(self, e)
        }
    }
    R(load, by).mutate_expr(e.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::tir::Scope;

    fn ld(b: &Buffer, i: Expr) -> Expr {
        Expr::Load { buffer: b.clone(), indices: vec![i] }
    }
    fn st(b: &Buffer, i: Expr, v: Expr) -> Stmt {
        Stmt::Store { buffer: b.clone(), indices: vec![i], value: v }
    }
    fn lets(s: &Stmt) -> usize {
        match s {
            Stmt::Let { body, .. } => 1 + lets(body),
            Stmt::Seq(ss) => ss.iter().map(lets).sum(),
            _ => 0,
        }
    }

    #[test]
    fn a_run_of_updates_becomes_one_load_and_one_store() {
        let (c, a) = (Buffer::new("c", DType::F32, Scope::Local), Buffer::new("a", DType::F32, Scope::Global));
        let i = Expr::Var(Var::index("i"));
        let upd = |k: i64| st(&c, i.clone(), ld(&c, i.clone()) + ld(&a, i.clone() + Expr::int(k)));
        let out = forward_runs(vec![upd(0), upd(1), upd(2)]);
        assert_eq!(out.len(), 1);
        assert_eq!(lets(&out[0]), 2);
        let text = crate::tir::printer::print_stmt(&out[0]);
        assert_eq!(text.matches("c[i]").count(), 2, "one load, one store:\n{text}");
    }

    #[test]
    fn other_accesses_to_the_buffer_end_the_run() {
        let c = Buffer::new("c", DType::F32, Scope::Local);
        let (i, j) = (Expr::Var(Var::index("i")), Expr::Var(Var::index("j")));
        // A read of another element of `c` in between: not forwarded (it may be the one
        // just stored, when i == j).
        let s1 = st(&c, i.clone(), ld(&c, i.clone()) + Expr::float(1.0, DType::F32));
        let s2 = st(&c, i.clone(), ld(&c, j.clone()) * Expr::float(2.0, DType::F32));
        let out = forward_runs(vec![s1.clone(), s2.clone()]);
        assert_eq!(out, vec![s1.clone(), s2]);
        // A store elsewhere in between splits the run.
        let s3 = st(&c, j, Expr::float(0.0, DType::F32));
        let out = forward_runs(vec![s1.clone(), s3.clone(), s1.clone()]);
        assert_eq!(out, vec![s1.clone(), s3, s1]);
    }

    #[test]
    fn an_index_that_reads_memory_is_not_forwarded() {
        let (c, p) = (Buffer::new("c", DType::F32, Scope::Local), Buffer::new("p", DType::I64, Scope::Global));
        let i = ld(&p, Expr::int(0));
        let s = st(&c, i.clone(), ld(&c, i) + Expr::float(1.0, DType::F32));
        assert_eq!(forward_runs(vec![s.clone(), s.clone()]), vec![s.clone(), s]);
    }
}
