//! Moves every shared-memory allocation of constant size of a kernel to the top of the
//! kernel body, as the CUDA and OpenCL dialects declare them. Afterwards a kernel body is
//! a nest of shared `Allocate`s around statements with no constant-size shared
//! `Allocate` inside, so barrier insertion sees one flat sequence of shared-memory
//! accesses.
//!
//! An allocation whose size is not a constant stays where it is: `verify_gpu_memory`
//! rejects it anyway (a schedule error), and it may depend on a loop or `let` variable
//! that it could not move above.

use crate::tir::mutate::{super_stmt, Mutator};
use crate::tir::{Buffer, Expr, PrimFunc, Scope, Stmt};

/// Hoists the constant-size shared allocations of every kernel of `f`.
pub fn hoist_shared_allocations(mut f: PrimFunc) -> PrimFunc {
    for k in &mut f.kernels {
        let mut h = Hoist { found: Vec::new() };
        let mut body = h.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
        for (buffer, extent) in h.found.into_iter().rev() {
            body = Stmt::Allocate { buffer, extent, body: Box::new(body) };
        }
        k.body = body;
    }
    f
}

struct Hoist {
    /// Each hoisted buffer with its largest constant extent and that extent's type.
    found: Vec<(Buffer, Expr)>,
}

impl Mutator for Hoist {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::Allocate { buffer, extent, body } if buffer.scope() == Scope::Shared && extent.as_int().is_some() => {
                let n = extent.as_int().expect("matched above");
                // An unrolled loop allocates the same buffer once per copy: keep one, of
                // the largest size (a constant, so `verify_gpu_memory` can measure it).
                match self.found.iter_mut().find(|(b, _)| *b == buffer) {
                    Some((_, e)) => {
                        let old = e.as_int().expect("only constants are hoisted");
                        if n > old {
                            *e = extent;
                        }
                    }
                    None => self.found.push((buffer, extent)),
                }
                self.mutate_stmt(*body)
            }
            s => super_stmt(self, s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::target::Target;
    use crate::tir::{ForKind, Kernel, Var};

    fn func(body: Stmt) -> PrimFunc {
        let one = || Expr::int(1);
        PrimFunc {
            name: "f".into(),
            target: Target::cuda(),
            params: Vec::new(),
            checks: Vec::new(),
            body: Stmt::Launch { kernel: 0 },
            kernels: vec![Kernel {
                name: "f_kernel0".into(),
                thread_vars: Vec::new(),
                grid: [one(), one(), one()],
                block: [one(), one(), one()],
                buffer_args: Vec::new(),
                scalar_args: Vec::new(),
                body,
            }],
        }
    }

    fn alloc(buffer: &Buffer, extent: Expr) -> Stmt {
        let store = Stmt::store(buffer, vec![Expr::int(0)], Expr::float(0.0, DType::F32));
        Stmt::Allocate { buffer: buffer.clone(), extent, body: Box::new(store) }
    }

    #[test]
    fn an_allocation_sized_by_a_loop_variable_stays_in_the_loop() {
        let s = Buffer::new("s", DType::F32, Scope::Shared);
        let i = Var::index("i");
        let body = Stmt::for_loop(i.clone(), Expr::int(4), ForKind::Serial, alloc(&s, Expr::var(&i) + Expr::int(1)));
        let f = hoist_shared_allocations(func(body.clone()));
        assert_eq!(f.kernels[0].body, body);
        let (problems, _) = crate::passes::verify_gpu_memory::verify_gpu_memory(&f);
        assert_eq!(
            problems,
            vec![crate::passes::verify_gpu_memory::GpuMemoryProblem::UnknownSize { buffer: "s".into() }]
        );
    }

    #[test]
    fn unrolled_copies_of_different_constant_sizes_merge_to_the_largest() {
        let s = Buffer::new("s", DType::F32, Scope::Shared);
        let body = Stmt::seq(vec![alloc(&s, Expr::int(4)), alloc(&s, Expr::int(6))]);
        let f = hoist_shared_allocations(func(body));
        let Stmt::Allocate { buffer, extent, body } = &f.kernels[0].body else {
            panic!("not hoisted: {:?}", f.kernels[0].body)
        };
        assert_eq!(*buffer, s);
        assert_eq!(extent.as_int(), Some(6));
        let Stmt::Seq(ss) = &**body else { panic!("not a sequence: {body:?}") };
        assert!(ss.iter().all(|s| matches!(s, Stmt::Store { .. })), "{ss:?}");
        let (problems, sizes) = crate::passes::verify_gpu_memory::verify_gpu_memory(&f);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(sizes, vec![24]);
    }
}
