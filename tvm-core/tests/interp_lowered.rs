//! The interpreter as the oracle of real lowered code: a matmul parsed, scheduled and
//! lowered by the pipeline (which runs right on every target: the registry's
//! `matmul_tiled` in `kernels.rs`), with its GPU barriers (or its parallel loop's
//! disjointness) broken, is caught.

use tvm_core::dtype::DType;
use tvm_core::interp::{run, ArgValue, ErrorKind, HostTensor, InterpError};
use tvm_core::tir::mutate::{super_stmt, Mutator};
use tvm_core::tir::{ForKind, PrimFunc, Stmt};
use tvm_core::Target;

const MATMUL: &str = include_str!("corpus/matmul_tiled.rs");

fn randoms(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

const M: usize = 64;
const K: usize = 48;
const N: usize = 80;

fn lowered(target: &str) -> PrimFunc {
    let kernel = tvm_core::frontend::parse_str(MATMUL).unwrap_or_else(|e| panic!("{e:?}"));
    let target = Target::parse(target).unwrap();
    let sch = tvm_core::driver::build_schedule(&kernel, &target).unwrap_or_else(|e| panic!("{e:?}"));
    tvm_core::driver::lower(&sch).unwrap_or_else(|e| panic!("{e:?}"))
}

/// Runs `f` on fixed random inputs; the output, or the error.
fn matmul(f: &PrimFunc) -> Result<Vec<f32>, InterpError> {
    let (a, b) = (randoms(M * K, 1), randoms(K * N, 2));
    let mut args = vec![
        ArgValue::Tensor(HostTensor::f32(vec![M, K], a)),
        ArgValue::Tensor(HostTensor::f32(vec![K, N], b)),
        ArgValue::Tensor(HostTensor::zeros(DType::F32, vec![M, N])),
    ];
    run(f, &mut args)?;
    Ok(args[2].as_tensor().unwrap().as_f32().unwrap().to_vec())
}

/// Rewrites statements bottom-up with `f`.
struct Rewrite<F: FnMut(Stmt) -> Stmt>(F);
impl<F: FnMut(Stmt) -> Stmt> Mutator for Rewrite<F> {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        let s = super_stmt(self, s);
        (self.0)(s)
    }
}

#[test]
fn lowered_gpu_matmul_without_barriers_is_a_race() {
    let mut f = lowered("cuda");
    let mut barriers = 0;
    for k in &mut f.kernels {
        let body = std::mem::replace(&mut k.body, Stmt::NoOp);
        k.body = Rewrite(|s| match s {
            Stmt::Barrier => {
                barriers += 1;
                Stmt::NoOp
            }
            s => s,
        })
        .mutate_stmt(body);
    }
    assert!(barriers >= 2, "the lowered kernel has {barriers} barriers");
    let e = matmul(&f).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Race, "{e}");
    assert!(e.message.contains("race on shared buffer"), "{e}");
}

#[test]
fn lowered_cpu_matmul_with_a_parallel_reduction_is_a_race() {
    // Make the innermost serial loop of the CPU code parallel: its iterations accumulate
    // into the same element.
    let mut f = lowered("cpu");
    let mut done = false;
    let body = std::mem::replace(&mut f.body, Stmt::NoOp);
    f.body = Rewrite(|s| match s {
        Stmt::For { var, min, extent, kind: ForKind::Serial, body } if !done && var.name().contains('k') => {
            done = true;
            Stmt::For { var, min, extent, kind: ForKind::Parallel, body }
        }
        s => s,
    })
    .mutate_stmt(body);
    assert!(done, "no serial reduction loop in\n{}", tvm_core::tir::printer::print_func(&f));
    let e = matmul(&f).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Race, "{e}");
    assert!(e.message.contains("data race in parallel loop"), "{e}");
}
