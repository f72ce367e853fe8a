//! The verifier against the real pipeline: graphs built by hand are lowered under default
//! and hand-written schedules for CPU and CUDA. `lower` runs `assert_valid` after every
//! pass in debug builds, so a pass that breaks an invariant (or a verifier rule that
//! rejects legal TIR) fails here; the final function is verified once more and printed.

use tvm_core::driver::lower;
use tvm_core::dtype::DType;
use tvm_core::loc::Loc;
use tvm_core::schedule::Schedule;
use tvm_core::target::Target;
use tvm_core::te::{self, Graph, Op, Tensor, TensorId};
use tvm_core::tir::printer::print_func;
use tvm_core::tir::verify::{verify, Phase};
use tvm_core::tir::*;

const N: Loc = Loc::NONE;

fn v(x: &Var) -> Expr {
    Expr::var(x)
}

fn read(t: TensorId, indices: Vec<Expr>) -> Expr {
    Expr::ProducerLoad { tensor: t, indices, dtype: DType::F32 }
}

fn placeholder(g: &mut Graph, name: &str, shape: Vec<Expr>) -> TensorId {
    g.add(Tensor { name: name.into(), dtype: DType::F32, shape, op: Op::Placeholder, loc: N })
}

fn compute(g: &mut Graph, name: &str, axes: &[(&Var, &Var)], body: Expr) -> TensorId {
    let axes: Vec<IterVar> = axes
        .iter()
        .map(|(a, dim)| IterVar { var: (*a).clone(), dom: Range::from_extent(v(dim)), kind: IterKind::DataPar })
        .collect();
    let shape = axes.iter().map(|a| a.dom.extent.clone()).collect();
    g.add(Tensor { name: name.into(), dtype: DType::F32, shape, op: Op::Compute { axes, body }, loc: N })
}

fn graph(name: &str) -> Graph {
    Graph { name: name.into(), tensors: vec![], params: vec![], outputs: vec![], dims: vec![], checks: vec![] }
}

/// `c[i] = a[i] + b[i]`.
fn vector_add() -> Graph {
    let n = Var::index("n");
    let mut g = graph("vector_add");
    let a = placeholder(&mut g, "a", vec![v(&n)]);
    let b = placeholder(&mut g, "b", vec![v(&n)]);
    let i = Var::index("i");
    let c = compute(&mut g, "c", &[(&i, &n)], read(a, vec![v(&i)]) + read(b, vec![v(&i)]));
    g.params = vec![te::Param::Tensor(a), te::Param::Tensor(b)];
    g.outputs = vec![c];
    g.dims = vec![n];
    g
}

/// `c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K)`.
fn matmul() -> Graph {
    let (m, n, k) = (Var::index("M"), Var::index("N"), Var::index("K"));
    let mut g = graph("matmul");
    let a = placeholder(&mut g, "a", vec![v(&m), v(&k)]);
    let b = placeholder(&mut g, "b", vec![v(&k), v(&n)]);
    let (i, j, kk) = (Var::index("i"), Var::index("j"), Var::index("k"));
    let body = Expr::Reduce(Box::new(Reduce {
        tuple: None,
        op: ReduceOp::Sum,
        source: read(a, vec![v(&i), v(&kk)]) * read(b, vec![v(&kk), v(&j)]),
        axes: vec![IterVar { var: kk, dom: Range::from_extent(v(&k)), kind: IterKind::Reduce }],
    }));
    let c = compute(&mut g, "c", &[(&i, &m), (&j, &n)], body);
    g.params = vec![te::Param::Tensor(a), te::Param::Tensor(b)];
    g.outputs = vec![c];
    g.dims = vec![m, k, n];
    g
}

fn lower_and_verify(sch: &Schedule) -> String {
    let f = lower(sch).unwrap_or_else(|e| panic!("lowering failed: {e:?}"));
    if let Err(errors) = verify(&f, Phase::Flattened) {
        panic!("{}\n{}", errors.join("\n"), print_func(&f));
    }
    print_func(&f)
}

#[test]
fn default_schedules_verify() {
    for target in [Target::cpu(), Target::cuda()] {
        for g in [vector_add(), matmul()] {
            let text = lower_and_verify(&Schedule::default_for(g, target.clone()));
            if std::env::var_os("TIR_PRINT_SHOW").is_some() {
                println!("{text}");
            }
        }
    }
}

#[test]
fn gpu_shared_cache_verifies() {
    // The GPU vector add of the kernel suite: `a` staged through shared memory per block.
    let g = vector_add();
    let (a, c) = (g.find("a").unwrap(), g.find("c").unwrap());
    let mut sch = Schedule::new(g, Target::cuda());
    let sc = sch.stage_of(c).unwrap();
    let ci = sch.leaf_axes(sc)[0];
    let (bx, tx) = sch.split(sc, (ci, N), (32, N)).unwrap();
    sch.bind(sc, (bx, N), (ThreadTag::BlockX, N)).unwrap();
    sch.bind(sc, (tx, N), (ThreadTag::ThreadX, N)).unwrap();
    let a_s = sch.cache_read((a, N), (Scope::Shared, N), &[(sc, N)]).unwrap();
    sch.compute_at((a_s, N), (sc, N), (bx, N)).unwrap();
    let ax = sch.leaf_axes(a_s)[0];
    sch.bind(a_s, (ax, N), (ThreadTag::ThreadX, N)).unwrap();
    let text = lower_and_verify(&sch);
    if std::env::var_os("TIR_PRINT_SHOW").is_some() {
        println!("{text}");
    }
}

#[test]
fn gpu_cross_thread_reduction_verifies() {
    let g = matmul();
    let c = g.find("c").unwrap();
    let mut sch = Schedule::new(g, Target::cuda());
    let sc = sch.stage_of(c).unwrap();
    let [i, j] = sch.leaf_axes(sc)[..] else { panic!() };
    let f = sch.fuse(sc, (i, N), (j, N)).unwrap();
    sch.bind(sc, (f, N), (ThreadTag::BlockX, N)).unwrap();
    let k = sch.leaf_reduce_axes(sc)[0];
    let (_ko, ki) = sch.split(sc, (k, N), (32, N)).unwrap();
    sch.bind(sc, (ki, N), (ThreadTag::ThreadX, N)).unwrap();
    let text = lower_and_verify(&sch);
    if std::env::var_os("TIR_PRINT_SHOW").is_some() {
        println!("{text}");
    }
}
