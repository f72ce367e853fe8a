//! The TIR interpreter: the oracle every backend is tested against.
//!
//! [`run`] executes a lowered [`PrimFunc`] on host tensors, exactly and strictly:
//!
//! * **Checked first.** The function is type-checked as a whole before anything runs
//!   (operands of one type, bool conditions, store values of the buffer's type, index
//!   types, loop bounds of the loop variable's type). `ProducerLoad` and `Reduce` are
//!   errors (the function was not lowered), so are a barrier on the host, a launch inside a
//!   kernel and a global allocation inside a kernel.
//! * **Exact arithmetic.** Each dtype computes with Rust's semantics: f32 in f32 (rounded
//!   after every operation), f64 in f64, f16/bf16 through f32 and rounded back (the `half`
//!   crate's conversions, round to nearest even); integers wrap at their width, `/` truncates, `%`
//!   takes the dividend's sign, division by zero and `MIN / -1` are errors; casts are Rust's
//!   `as` (a cast to bool is an error). `select` evaluates only the taken side (per lane for a
//!   vector condition: the other lanes read no memory and raise no errors); `&&`/`||`
//!   short-circuit. Intrinsics use `std` (`erf` is `tvm_runtime::math::erf`).
//! * **Strict memory.** Every access is bounds-checked (error naming the buffer, index and
//!   size); reading an element of an allocation that nothing wrote is an error; storing to an
//!   input is an error. Loads and stores take one flat index after `flatten_storage`, or one
//!   index per dimension relative to a `Realize` region or a parameter's shape (for
//!   debugging un-flattened functions); a `Ramp` index reads or writes several lanes.
//! * **Races.** The iterations of a `parallel` loop must not touch an element one of the
//!   others writes. In a kernel launch, two threads of a block must not touch an element of
//!   shared (or global) memory one of them writes within one barrier phase, and two blocks
//!   must not touch a global element one of them writes at all
//!   ([`RunOptions::check_global_races`] turns the global part off). On a GPU, a write that
//!   stores the value the element already holds (a redundant copy of the same value, which
//!   cooperative fetching relies on) races with nothing; in a parallel loop it still does
//!   (the CPU backend hands each iteration a disjoint chunk). An uninitialized read of
//!   memory other threads may write is reported at the end of the barrier phase, unless the
//!   race that explains it is found first.
//! * **GPU semantics.** `Launch` evaluates grid and block on the host and runs the blocks one
//!   by one. Within a block, a statement without a barrier (or shared allocation) runs to
//!   completion for thread 0, then thread 1, and so on (threads are numbered x fastest); a
//!   statement with one runs in lock step: a `Seq` child by child, a `for` with bounds every
//!   thread agrees on, an `if` whose condition every thread agrees on (else "barrier inside
//!   divergent control flow"), shared memory allocated once per block, local memory per
//!   thread. A kernel sees only its `thread_vars`, `scalar_args` and `buffer_args`.
//!
//! ```
//! use tvm_core::interp::{run, ArgValue, HostTensor};
//! use tvm_core::tir::{Buffer, Expr, ForKind, Param, PrimFunc, Scope, Stmt, Var};
//! use tvm_core::{DType, Target};
//!
//! // c[i] = a[i] * 2 for i < n, n bound by the shape of `a`.
//! let n = Var::index("n");
//! let (a, c) = (Buffer::new("a", DType::F32, Scope::Global), Buffer::new("c", DType::F32, Scope::Global));
//! let i = Var::index("i");
//! let body = Stmt::for_loop(
//!     i.clone(),
//!     Expr::var(&n),
//!     ForKind::Serial,
//!     Stmt::store(&c, vec![Expr::var(&i)], Expr::load(&a, vec![Expr::var(&i)]) * Expr::float(2.0, DType::F32)),
//! );
//! let f = PrimFunc {
//!     name: "double".into(),
//!     target: Target::cpu(),
//!     params: vec![
//!         Param::Tensor { buffer: a, shape: vec![Expr::var(&n)], is_output: false },
//!         Param::Tensor { buffer: c, shape: vec![Expr::var(&n)], is_output: true },
//!     ],
//!     body,
//!     kernels: vec![],
//!     checks: vec![],
//! };
//! let mut args = vec![
//!     ArgValue::Tensor(HostTensor::f32(vec![3], vec![1.0, 2.0, 3.0])),
//!     ArgValue::Tensor(HostTensor::zeros(DType::F32, vec![3])),
//! ];
//! run(&f, &mut args).unwrap();
//! assert_eq!(args[1].as_tensor().unwrap().as_f32().unwrap(), &[2.0, 4.0, 6.0]);
//! ```

mod compile;
mod error;
mod eval;
mod exec;
mod gpu;
mod memory;
mod race;
mod realize;
mod value;

pub use error::{ErrorKind, InterpError};
/// The scalar operations, shared with the device launcher's host side.
pub(crate) use value::{binary, cast, compare, each_data, neg};
pub use value::{ArgValue, HostData, HostTensor, ScalarValue};

use crate::tir::PrimFunc;

/// Switches of [`run_with_options`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Report races on global memory between the threads and blocks of a launch (races on
    /// shared memory and in parallel loops are always reported). Default: on.
    pub check_global_races: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { check_global_races: true }
    }
}

/// Runs `f` on `args` (in the order of `f.params`): tensors for tensor parameters (their
/// dtype and rank must match; their shapes bind the symbolic dims), scalars of the
/// parameter's exact dtype for scalar parameters. Outputs are written in place, and only
/// when the whole run succeeds (on an error every argument is left as it was).
pub fn run(f: &PrimFunc, args: &mut [ArgValue]) -> Result<(), InterpError> {
    run_with_options(f, args, &RunOptions::default())
}

/// [`run`] with options.
pub fn run_with_options(f: &PrimFunc, args: &mut [ArgValue], opts: &RunOptions) -> Result<(), InterpError> {
    let prog = compile::compile(f).map_err(|e| e.context(format!("function `{}`", f.name)))?;
    exec::run_program(&prog, &f.name, &f.target, args, *opts).map_err(|e| e.context(format!("function `{}`", f.name)))
}

/// Type-checks `f` the way [`run`] does before running it, without running it.
pub fn check(f: &PrimFunc) -> Result<(), InterpError> {
    compile::compile(f).map(|_| ()).map_err(|e| e.context(format!("function `{}`", f.name)))
}
