//! The tvm-rs compiler: tensor expressions ([`te`]), schedules ([`schedule`]), the loop
//! IR ([`tir`]) and its passes ([`passes`], run in order by [`lower`]), targets, and the
//! TIR interpreter ([`interp`]) that every backend is tested against.

pub mod dtype;
pub mod loc;
pub mod te;
pub mod tir;
pub mod schedule;
pub mod target;
pub mod passes;
pub mod lower;
pub mod interp;
pub mod frontend;

pub use dtype::DType;
pub use loc::{Loc, SourceMap};
pub use target::{Target, TargetKind};
