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
    /// What the auto-scheduler derives for the CPU with the kernel's blocks removed.
    DerivedCpu,
    /// What it derives for CUDA with the kernel's blocks removed.
    DerivedGpu,
}

impl Variant {
    pub const CPU_GPU: [Variant; 6] = [
        Variant::DefaultCpu,
        Variant::Cpu,
        Variant::DefaultGpu,
        Variant::Gpu,
        Variant::DerivedCpu,
        Variant::DerivedGpu,
    ];

    pub fn target(self) -> Target {
        match self {
            Variant::DefaultCpu | Variant::Cpu | Variant::DerivedCpu => Target::cpu(),
            Variant::DefaultGpu | Variant::Gpu | Variant::DerivedGpu => Target::cuda(),
        }
    }

    pub fn is_gpu(self) -> bool {
        matches!(self, Variant::DefaultGpu | Variant::Gpu | Variant::DerivedGpu)
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
        Variant::DerivedCpu | Variant::DerivedGpu => lowered::derived_schedule(kernel, &target),
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

pub fn scalar_i32(v: i32) -> ArgValue {
    ArgValue::Scalar(ScalarValue::I32(v))
}

#[macro_use]
#[path = "../support/registry.rs"]
pub mod registry;
#[allow(unused_imports)]
pub use reference::rand_vec;
#[allow(unused_imports)]
pub use registry::reference;
#[path = "../support/lowered.rs"]
pub mod lowered;

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
    if variant.is_gpu() {
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

// ---- The registry's kernels (`support/registry.rs`) on the interpreter and OpenCL ----

use registry::{Arg, Case, Data, Want};

/// A registry argument as the interpreter's.
fn arg_value(a: &Arg) -> ArgValue {
    match a {
        Arg::Tensor { shape, data } => ArgValue::Tensor(match data.clone() {
            Data::F32(v) => HostTensor::f32(shape.clone(), v),
            Data::F64(v) => HostTensor::f64(shape.clone(), v),
            Data::I32(v) => HostTensor::i32(shape.clone(), v),
            Data::I64(v) => HostTensor::i64(shape.clone(), v),
        }),
        Arg::F32(v) => ArgValue::Scalar(ScalarValue::F32(*v)),
        Arg::F64(v) => ArgValue::Scalar(ScalarValue::F64(*v)),
    }
}

/// An output of `want`'s type and shape, poisoned: NaN for floats, the type's minimum for
/// integers (no registered kernel computes it), so an element never written fails.
fn poisoned(want: &Want) -> ArgValue {
    let (shape, n) = (want.shape.clone(), want.data.len());
    ArgValue::Tensor(match want.data {
        Data::F32(_) => HostTensor::f32(shape, vec![f32::NAN; n]),
        Data::F64(_) => HostTensor::f64(shape, vec![f64::NAN; n]),
        Data::I32(_) => HostTensor::i32(shape, vec![i32::MIN; n]),
        Data::I64(_) => HostTensor::i64(shape, vec![i64::MIN; n]),
    })
}

/// The elements of an output of the interpreter.
fn output_data(a: &ArgValue) -> Data {
    let t = a.as_tensor().expect("an output tensor");
    if let Some(v) = t.as_f32() {
        Data::F32(v.to_vec())
    } else if let Some(v) = t.as_f64() {
        Data::F64(v.to_vec())
    } else if let Some(v) = t.as_i32() {
        Data::I32(v.to_vec())
    } else {
        Data::I64(t.as_i64().expect("an output of a registered type").to_vec())
    }
}

/// Runs `f` on `case`'s arguments (with `run`: the interpreter, or a device) and checks
/// every output against the case's.
fn run_case(f: &PrimFunc, case: &Case, what: &str, run: impl FnOnce(&PrimFunc, &mut [ArgValue]) -> Result<(), String>) {
    let mut args: Vec<ArgValue> = case.args.iter().map(arg_value).collect();
    args.extend(case.wants.iter().map(poisoned));
    if let Err(e) = run(f, &mut args) {
        panic!("{what}: {e}\n{}", tvm_core::tir::printer::print_func(f));
    }
    let outs = &args[case.args.len()..];
    for (k, want) in case.wants.iter().enumerate() {
        registry::check_output(&output_data(&outs[k]), want, &format!("{what}: output {k}"));
    }
}

/// Every case the registry gives the interpreter for `kernel`, under the four schedules
/// of [`Variant::CPU_GPU`], on the interpreter; the GPU variants also on every OpenCL
/// device (lowered for `Target::opencl()`). Returns the number of cases.
pub fn check_registered(kernel: &registry::Kernel) -> usize {
    let k = lowered::kernel_in(kernel.text, kernel.function, kernel.instance);
    // The entry names the kernel's parameters and outputs as the kernel does.
    let params: Vec<&str> = k.ast.sig.params.iter().map(|p| p.name().name.as_str()).collect();
    let outputs: Vec<&str> = k.ast.sig.outputs.iter().map(|o| o.name.name.as_str()).collect();
    assert_eq!(
        (&params[..], &outputs[..]),
        (kernel.params, kernel.outputs),
        "{}: the registry's entry",
        kernel.label()
    );
    let cases = (kernel.cases)(registry::Suite::Interpreter);
    for v in Variant::CPU_GPU {
        let lower = |target: Target| {
            let s = schedule_for(&k, v, target);
            tvm_core::driver::lower(&s)
                .unwrap_or_else(|e| panic!("{} {v:?}: lowering failed: {}", kernel.label(), show(&e)))
        };
        let f = lower(v.target());
        let opencl = v.is_gpu().then(|| lower(Target::opencl()));
        for case in &cases {
            let what = format!("{} {} {v:?}", kernel.label(), case.what);
            assert_eq!((case.args.len(), case.wants.len()), (params.len(), outputs.len()), "{what}: arguments");
            run_case(&f, case, &format!("{what} on the interpreter"), |f, args| {
                run(f, args).map_err(|e| e.to_string())
            });
            if let Some(f) = &opencl {
                for dev in opencl::devices() {
                    run_case(f, case, &format!("{what} on opencl:{dev}"), |f, args| {
                        tvm_core::launch::run_on_device(&tvm_runtime::Device::OpenCl(dev), f, args).map_err(|e| {
                            format!("{e}\n{}", tvm_core::codegen::opencl::emit_opencl(f).unwrap_or_default())
                        })
                    });
                }
            }
        }
    }
    cases.len()
}
