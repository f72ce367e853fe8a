//! The interpreter's error type.

use std::fmt;

/// What went wrong, for tests and callers that match on the cause. The message says the
/// rest (buffer names, indices, threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The arguments do not match the parameters (count, kind, dtype, rank, shape).
    Argument,
    /// The program is ill-typed (operands of different types, a non-bool condition, ...).
    Type,
    /// `ProducerLoad` or `Reduce`: the function was not lowered.
    NotLowered,
    /// A variable used where it has no value.
    UndefinedVariable,
    /// A buffer accessed where it is neither a parameter nor allocated.
    UnboundBuffer,
    /// A load or store outside the buffer (or outside a realized region).
    OutOfBounds,
    /// A read of an element of an allocation that was never written.
    Uninitialized,
    /// Integer division or remainder by zero.
    DivisionByZero,
    /// An `Expr::Check` failed: an index read from memory outside the dim it indexes, or
    /// a checked divisor that is zero. The message names the check site; compiled code
    /// returns that site's `Err` for the same input.
    CheckFailed,
    /// A value that does not fit the type of the variable it is bound to. (Integer
    /// arithmetic wraps, `MIN / -1` included.)
    Overflow,
    /// Two iterations of a parallel loop, or two GPU threads in one phase, touch the same
    /// element and at least one of them writes it.
    Race,
    /// A barrier inside control flow that differs between the threads of a block.
    Divergence,
    /// A store to an input (a tensor parameter that is not an output).
    WriteToInput,
    /// A structurally invalid program (a barrier on the host, a launch inside a kernel,
    /// a missing kernel, a negative allocation, a launch beyond the target's limits, ...).
    InvalidProgram,
    /// A bug in the interpreter itself.
    Internal,
}

/// An error of [`run`](super::run): the kind, a message naming the buffers, elements and
/// threads involved, and where it happened (kernel, block, thread) when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterpError {
    pub kind: ErrorKind,
    pub message: String,
    /// Outermost last: `thread (3,0,0)`, then `block (1,0,0)`, then `kernel \`k\``.
    pub context: Vec<String>,
}

impl InterpError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> InterpError {
        InterpError { kind, message: message.into(), context: Vec::new() }
    }
    /// Adds an outer "where" to the error.
    pub fn context(mut self, c: impl Into<String>) -> InterpError {
        self.context.push(c.into());
        self
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if !self.context.is_empty() {
            f.write_str(" (in ")?;
            for (i, c) in self.context.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                f.write_str(c)?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl std::error::Error for InterpError {}

pub(crate) type R<T> = Result<T, InterpError>;

pub(crate) fn err<T>(kind: ErrorKind, message: impl Into<String>) -> R<T> {
    Err(InterpError::new(kind, message))
}
