//! Shared helpers of the kernel tests: parse a kernel, pick a schedule variant, lower,
//! run on the interpreter, compare with a reference.
#![allow(dead_code)]

use tvm_core::frontend::{build_schedule, parse_str, Kernel};
use tvm_core::interp::{run, ArgValue, HostTensor, ScalarValue};
use tvm_core::schedule::Schedule;
use tvm_core::tir::PrimFunc;
use tvm_core::Target;

/// Which schedule a kernel runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The default CPU schedule (the kernel's own CPU block ignored).
    DefaultCpu,
    /// The kernel's `schedule!(cpu)` block.
    Cpu,
    /// The default CUDA schedule.
    DefaultGpu,
    /// The kernel's `schedule!(cuda)` block.
    Gpu,
}

impl Variant {
    pub const CPU_GPU: [Variant; 4] = [Variant::DefaultCpu, Variant::Cpu, Variant::DefaultGpu, Variant::Gpu];

    pub fn target(self) -> Target {
        match self {
            Variant::DefaultCpu | Variant::Cpu => Target::cpu(),
            Variant::DefaultGpu | Variant::Gpu => Target::cuda(),
        }
    }
}

pub fn parse(src: &str) -> Kernel {
    parse_str(src).unwrap_or_else(|e| panic!("kernel does not parse: {e:#?}"))
}

/// The schedule of `variant` for `kernel`.
pub fn schedule(kernel: &Kernel, variant: Variant) -> Schedule {
    let target = variant.target();
    match variant {
        Variant::DefaultCpu | Variant::DefaultGpu => Schedule::default_for(kernel.graph.clone(), target),
        Variant::Cpu | Variant::Gpu => {
            build_schedule(kernel, &target).unwrap_or_else(|e| panic!("schedule rejected: {}", show(&e)))
        }
    }
}

fn show(e: &[tvm_core::schedule::ScheduleError]) -> String {
    e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
}

pub fn lower(src: &str, variant: Variant) -> PrimFunc {
    let k = parse(src);
    let s = schedule(&k, variant);
    tvm_core::lower::lower(&s).unwrap_or_else(|e| panic!("lowering failed: {}", show(&e)))
}

/// Lowers `src` with `variant`, runs it on `inputs` (tensors, then `scalars`) and
/// returns the single f32 output of shape `out`.
pub fn run_f32(src: &str, variant: Variant, inputs: Vec<ArgValue>, scalars: Vec<ArgValue>, out: &[usize]) -> Vec<f32> {
    let f = lower(src, variant);
    let mut args = inputs;
    args.extend(scalars);
    let n: usize = out.iter().product();
    // A poisoned output: every element the kernel fails to write shows up as NaN.
    args.push(ArgValue::Tensor(HostTensor::f32(out.to_vec(), vec![f32::NAN; n])));
    if let Err(e) = run(&f, &mut args) {
        panic!("interpreter: {e}\n{}", tvm_core::tir::printer::print_func(&f));
    }
    args.last().and_then(|a| a.as_tensor()).and_then(|t| t.as_f32()).expect("an f32 output").to_vec()
}

pub fn t(shape: &[usize], data: &[f32]) -> ArgValue {
    ArgValue::Tensor(HostTensor::f32(shape.to_vec(), data.to_vec()))
}

pub fn scalar_f32(v: f32) -> ArgValue {
    ArgValue::Scalar(ScalarValue::F32(v))
}

/// Deterministic values in [-1, 1).
pub fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Relative tolerance of every comparison with a reference.
pub const RTOL: f32 = 1e-5;

pub fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = RTOL * w.abs().max(1.0);
        assert!((g - w).abs() <= tol, "{what}: element {i}: got {g}, want {w} (tolerance {tol})");
    }
}
