//! Shared helpers of the kernel tests: parse a kernel, pick a schedule variant, lower,
//! run on the interpreter, compare with a reference.
#![allow(dead_code)]

use tvm_core::driver::build_schedule;
use tvm_core::frontend::{parse_str, Kernel};
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
    schedule_for(kernel, variant, variant.target())
}

/// The schedule of `variant` for `kernel` on `target` (the default one, or the kernel's
/// block for `target`).
pub fn schedule_for(kernel: &Kernel, variant: Variant, target: Target) -> Schedule {
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
    tvm_core::driver::lower(&s).unwrap_or_else(|e| panic!("lowering failed: {}", show(&e)))
}

/// The arguments of a run: `inputs` (tensors), then `scalars`, then the f32 output of
/// shape `out`, poisoned: every element a kernel fails to write shows up as NaN.
fn poisoned_args(inputs: Vec<ArgValue>, scalars: Vec<ArgValue>, out: &[usize]) -> Vec<ArgValue> {
    let mut args = inputs;
    args.extend(scalars);
    let n: usize = out.iter().product();
    args.push(ArgValue::Tensor(HostTensor::f32(out.to_vec(), vec![f32::NAN; n])));
    args
}

/// The f32 output (the last argument) of a run.
fn output_f32(args: &[ArgValue]) -> Vec<f32> {
    args.last().and_then(|a| a.as_tensor()).and_then(|t| t.as_f32()).expect("an f32 output").to_vec()
}

/// Lowers `src` with `variant`, runs it on `inputs` (tensors, then `scalars`) and
/// returns the single f32 output of shape `out`.
pub fn run_f32(src: &str, variant: Variant, inputs: Vec<ArgValue>, scalars: Vec<ArgValue>, out: &[usize]) -> Vec<f32> {
    let f = lower(src, variant);
    let mut args = poisoned_args(inputs, scalars, out);
    if let Err(e) = run(&f, &mut args) {
        panic!("interpreter: {e}\n{}", tvm_core::tir::printer::print_func(&f));
    }
    output_f32(&args)
}

pub fn t(shape: &[usize], data: &[f32]) -> ArgValue {
    ArgValue::Tensor(HostTensor::f32(shape.to_vec(), data.to_vec()))
}

pub fn scalar_f32(v: f32) -> ArgValue {
    ArgValue::Scalar(ScalarValue::F32(v))
}

#[path = "../support/reference.rs"]
pub mod reference;
#[allow(unused_imports)]
pub use reference::rand_vec;

/// Relative tolerance of every comparison with a reference (unless a test says otherwise).
pub const RTOL: f32 = 1e-5;

pub fn assert_close(got: &[f32], want: &[f32], what: &str) {
    reference::assert_close(got, want, RTOL, what)
}

/// Runs `src` with `variant` on every backend of this level and compares each result with
/// `want` (relative tolerance [`RTOL`]): the interpreter always; for a GPU variant also every
/// OpenCL device (the kernel lowered for `Target::opencl()`, which takes the GPU schedule,
/// printed as OpenCL C and run through the runtime by `tvm_core::launch`).
/// Outputs start poisoned (NaN), so an element a backend never writes fails.
pub fn check(
    src: &str,
    variant: Variant,
    inputs: Vec<ArgValue>,
    scalars: Vec<ArgValue>,
    out: &[usize],
    want: &[f32],
    what: &str,
) {
    let got = run_f32(src, variant, inputs.clone(), scalars.clone(), out);
    assert_close(&got, want, &format!("{what} {variant:?} on the interpreter"));
    if matches!(variant, Variant::DefaultGpu | Variant::Gpu) {
        for dev in opencl::devices() {
            let got = opencl::run_f32(dev, src, variant, inputs.clone(), scalars.clone(), out);
            assert_close(&got, want, &format!("{what} {variant:?} on opencl:{dev}"));
        }
    }
}

#[path = "../../../tvm-runtime/tests/support/opencl_devices.rs"]
mod opencl_devices;

pub mod opencl {
    use super::*;
    use tvm_runtime::Device;

    #[allow(unused_imports)]
    pub use super::opencl_devices::{device_or_skip, devices};

    /// [`super::run_f32`] on OpenCL device `dev`, the GPU variant lowered for OpenCL.
    pub fn run_f32(
        dev: usize,
        src: &str,
        variant: Variant,
        inputs: Vec<ArgValue>,
        scalars: Vec<ArgValue>,
        out: &[usize],
    ) -> Vec<f32> {
        let s = schedule_for(&parse(src), variant, Target::opencl());
        let f = tvm_core::driver::lower(&s).unwrap_or_else(|e| panic!("lowering failed: {}", show(&e)));
        let mut args = poisoned_args(inputs, scalars, out);
        if let Err(e) = tvm_core::launch::run_on_device(&Device::OpenCl(dev), &f, &mut args) {
            let source = tvm_core::codegen::opencl::emit_opencl(&f).unwrap_or_default();
            panic!("opencl:{dev}: {e}\n{source}");
        }
        output_f32(&args)
    }
}
