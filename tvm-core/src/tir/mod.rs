//! TIR: the loop-level IR every schedule lowers to and every backend prints.

pub mod expr;
pub mod mutate;
pub mod parser;
pub mod printer;
pub mod stmt;
pub mod verify;
pub mod visit;

pub use expr::*;
pub use stmt::*;
