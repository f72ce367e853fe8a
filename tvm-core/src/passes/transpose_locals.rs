//! Transposed register tiles (CPU targets): a `local` buffer of constant size `N` whose
//! vector accesses all step by one stride `S > 1` (and `N % S == 0`) is stored
//! transposed, element `i` at `(i % S) * (N / S) + i / S`, which makes those accesses
//! contiguous:
//!
//! ```text
//! alloc out_local: f32[256] local                 alloc out_local: f32[256] local
//! out_local[ramp(3, 8, 32)] = .. * w_p[..]   =>   out_local[ramp(96, 1, 32)] = .. * w_p[..]
//! out[ramp(.., 3136, 32)] = out_local[ramp(3, 8, 32)]   out[..] = out_local[ramp(96, 1, 32)]
//! ```
//!
//! A register tile vectorized along an axis that is not its buffer's last one (a
//! convolution's filters, 8 columns by 32 filters, where the cache keeps the output's
//! order, filters before columns) otherwise reads and writes its accumulators lane by
//! lane, through memory. The map is a bijection of `[0, N)` onto itself, so every access
//! keeps its own elements; a ramp `b + k·S` (`b >= 0`, as every in-bounds index is) maps
//! to `b' + k`, with `b' = (b % S) * (N / S) + b / S`. A buffer that anything but loads
//! and stores names (a prefetch, a warp reduction), one accessed inside a parallel loop
//! (a cache outside the loop, which the code generator hands out in chunks, one per
//! iteration), or one with an access not proved to lie in it is left alone.

use crate::arith::Analyzer;
use crate::tir::mutate::{super_expr, super_stmt, Mutator};
use crate::tir::visit::{walk_expr, walk_stmt, Visitor};
use crate::tir::{Buffer, Expr, ForKind, PrimFunc, Scope, Stmt};

/// Transposes the eligible local buffers of the host body of `f` (CPU code).
pub fn transpose_locals(mut f: PrimFunc) -> PrimFunc {
    f.body = Transpose { math: Analyzer::new() }.mutate_stmt(f.body);
    f
}

struct Transpose {
    /// The loops around the statement being rewritten, bound: the new indices simplify
    /// with the variables' ranges.
    math: Analyzer,
}

impl Mutator for Transpose {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::For { var, min, extent, kind, body } => {
                self.math.bind(&var, min.clone(), extent.clone());
                let body = Box::new(self.mutate_stmt(*body));
                self.math.unbind(&var);
                Stmt::For { var, min, extent, kind, body }
            }
            Stmt::Allocate { buffer, extent, body } => {
                let body = self.mutate_stmt(*body);
                let stride = match extent.as_int() {
                    Some(n) if buffer.scope() == Scope::Local => common_stride(&body, &buffer, n),
                    _ => None,
                };
                let body = match (stride, extent.as_int()) {
                    (Some(s), Some(n)) => {
                        let math = std::mem::replace(&mut self.math, Analyzer::new());
                        let mut r =
                            Rewrite { buffer: buffer.clone(), stride: s, rows: n / s, len: n, math, proved: true };
                        let new = r.mutate_stmt(body.clone());
                        self.math = r.math;
                        if r.proved {
                            new
                        } else {
                            body
                        }
                    }
                    _ => body,
                };
                Stmt::Allocate { buffer, extent, body: Box::new(body) }
            }
            s => super_stmt(self, s),
        }
    }
}

/// The stride `S` every vector access of `buffer` (of `n` elements) in `body` takes, when
/// there is one, it is a constant above 1 that divides `n`, and nothing but loads and
/// stores names the buffer.
fn common_stride(body: &Stmt, buffer: &Buffer, n: i64) -> Option<i64> {
    struct Scan<'a> {
        buffer: &'a Buffer,
        stride: Option<i64>,
        ok: bool,
        in_parallel: bool,
    }
    impl Scan<'_> {
        fn index(&mut self, indices: &[Expr]) {
            // Inside a parallel loop the buffer is chunked by iteration (a cache
            // allocated outside it): transposed, the chunks would interleave.
            if self.in_parallel {
                self.ok = false;
            }
            let [i] = indices else {
                self.ok = false;
                return;
            };
            match i {
                Expr::Ramp { stride, .. } => match (stride.as_int(), self.stride) {
                    (Some(s), None) if s > 1 => self.stride = Some(s),
                    (Some(s), Some(t)) if s == t => {}
                    _ => self.ok = false,
                },
                i if i.dtype().lanes > 1 => self.ok = false,
                _ => {}
            }
        }
    }
    impl Visitor for Scan<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let Expr::Load { buffer, indices } = e {
                if buffer == self.buffer {
                    self.index(indices);
                }
            }
            walk_expr(self, e)
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::For { kind: ForKind::Parallel, .. } = s {
                let outer = std::mem::replace(&mut self.in_parallel, true);
                walk_stmt(self, s);
                self.in_parallel = outer;
                return;
            }
            match s {
                Stmt::Store { buffer, indices, .. } if buffer == self.buffer => self.index(indices),
                Stmt::Prefetch { buffer, .. } | Stmt::WarpReduce { buffer, .. } if buffer == self.buffer => {
                    self.ok = false
                }
                _ => {}
            }
            walk_stmt(self, s)
        }
    }
    let mut scan = Scan { buffer, stride: None, ok: true, in_parallel: false };
    scan.visit_stmt(body);
    scan.stride.filter(|s| scan.ok && n % s == 0)
}

/// Rewrites the indices of `buffer`: `i` becomes `(i % stride) * rows + i / stride`.
/// `proved` ends false when an access is not proved to lie in `[0, len)`: the map is a
/// bijection of that range only, and an access outside it (which the code generator would
/// report) could land inside; the buffer is then left as it was.
struct Rewrite {
    buffer: Buffer,
    stride: i64,
    rows: i64,
    len: i64,
    math: Analyzer,
    proved: bool,
}

impl Rewrite {
    fn index(&mut self, i: Expr) -> Expr {
        let (first, last) = match &i {
            Expr::Ramp { base, stride, lanes } => {
                ((**base).clone(), (**base).clone() + (**stride).clone() * (*lanes as i64 - 1))
            }
            i => (i.clone(), i.clone()),
        };
        self.proved &= self.math.can_prove(&Expr::ge(first, Expr::int(0)))
            && self.math.can_prove(&Expr::lt(last, Expr::int(self.len)));
        let map = |b: Expr| self.math.simplify(&((b.clone() % self.stride) * self.rows + b / self.stride));
        match i {
            Expr::Ramp { base, lanes, .. } => {
                Expr::Ramp { base: Box::new(map(*base)), stride: Box::new(Expr::int(1)), lanes }
            }
            i => map(i),
        }
    }
}

impl Mutator for Rewrite {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        match super_expr(self, e) {
            Expr::Load { buffer, indices } if buffer == self.buffer => {
                let indices = indices.into_iter().map(|i| self.index(i)).collect();
                Expr::Load { buffer, indices }
            }
            e => e,
        }
    }
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::For { var, min, extent, kind, body } => {
                self.math.bind(&var, min.clone(), extent.clone());
                let body = Box::new(self.mutate_stmt(*body));
                self.math.unbind(&var);
                Stmt::For { var, min, extent, kind, body }
            }
            s => match super_stmt(self, s) {
                Stmt::Store { buffer, indices, value } if buffer == self.buffer => {
                    let indices = indices.into_iter().map(|i| self.index(i)).collect();
                    Stmt::Store { buffer, indices, value }
                }
                s => s,
            },
        }
    }
}
