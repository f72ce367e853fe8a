//! The tvm-rs compiler: tensor expressions ([`te`]), schedules ([`schedule`]), the loop
//! IR ([`tir`]) and its passes ([`passes`], run in order by [`lower`]; [`driver`] takes a
//! parsed kernel there), targets, and the TIR interpreter ([`interp`]) that every backend
//! is tested against.

pub mod arith;
pub mod artifact;
pub mod autosched;
pub mod build;
pub mod codegen;
pub mod cost;
pub mod driver;
pub mod expand;
pub mod frontend;
pub mod interp;
pub mod launch;
pub mod loc;
pub mod lower;
pub mod passes;
pub mod schedule;
pub mod target;
pub mod te;
pub mod tir;
pub mod tune;

pub use loc::{Loc, SourceMap};
pub use target::{Target, TargetKind};
/// Element types, shared with the runtime.
pub use tvm_runtime::dtype;
pub use tvm_runtime::DType;
