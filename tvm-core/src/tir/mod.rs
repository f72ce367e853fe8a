//! TIR: the loop-level IR every schedule lowers to and every backend prints.

pub mod expr;
pub mod stmt;
pub mod visit;
pub mod mutate;
pub mod printer;
pub mod verify;

pub use expr::*;
pub use stmt::*;
