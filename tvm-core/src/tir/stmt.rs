//! TIR statements and functions.

use super::expr::{Buffer, Expr, Range, Var};
use crate::target::Target;

/// How a loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForKind {
    Serial,
    /// Iterations run on several CPU threads (rayon); they write disjoint data.
    Parallel,
    /// Becomes vector operations (`vectorize_loops`), or stays serial where it cannot.
    Vectorized,
    /// Replicated by `unroll_loops` when the extent is a constant.
    Unrolled,
}

impl ForKind {
    pub fn name(self) -> &'static str {
        match self {
            ForKind::Serial => "serial",
            ForKind::Parallel => "parallel",
            ForKind::Vectorized => "vectorized",
            ForKind::Unrolled => "unroll",
        }
    }
}

/// A GPU launch dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ThreadTag {
    BlockX,
    BlockY,
    BlockZ,
    ThreadX,
    ThreadY,
    ThreadZ,
}

impl ThreadTag {
    pub const ALL: [ThreadTag; 6] = [
        ThreadTag::BlockX,
        ThreadTag::BlockY,
        ThreadTag::BlockZ,
        ThreadTag::ThreadX,
        ThreadTag::ThreadY,
        ThreadTag::ThreadZ,
    ];
    /// `blockIdx.x`, `threadIdx.y`, ...
    pub fn name(self) -> &'static str {
        match self {
            ThreadTag::BlockX => "blockIdx.x",
            ThreadTag::BlockY => "blockIdx.y",
            ThreadTag::BlockZ => "blockIdx.z",
            ThreadTag::ThreadX => "threadIdx.x",
            ThreadTag::ThreadY => "threadIdx.y",
            ThreadTag::ThreadZ => "threadIdx.z",
        }
    }
    /// The DSL spelling: `block.x`, `thread.y`.
    pub fn dsl_name(self) -> &'static str {
        match self {
            ThreadTag::BlockX => "block.x",
            ThreadTag::BlockY => "block.y",
            ThreadTag::BlockZ => "block.z",
            ThreadTag::ThreadX => "thread.x",
            ThreadTag::ThreadY => "thread.y",
            ThreadTag::ThreadZ => "thread.z",
        }
    }
    pub fn from_dsl(kind: &str, dim: &str) -> Option<ThreadTag> {
        Some(match (kind, dim) {
            ("block", "x") => ThreadTag::BlockX,
            ("block", "y") => ThreadTag::BlockY,
            ("block", "z") => ThreadTag::BlockZ,
            ("thread", "x") => ThreadTag::ThreadX,
            ("thread", "y") => ThreadTag::ThreadY,
            ("thread", "z") => ThreadTag::ThreadZ,
            _ => return None,
        })
    }
    pub fn is_block(self) -> bool {
        matches!(self, ThreadTag::BlockX | ThreadTag::BlockY | ThreadTag::BlockZ)
    }
    /// 0 for x, 1 for y, 2 for z.
    pub fn dim(self) -> usize {
        match self {
            ThreadTag::BlockX | ThreadTag::ThreadX => 0,
            ThreadTag::BlockY | ThreadTag::ThreadY => 1,
            ThreadTag::BlockZ | ThreadTag::ThreadZ => 2,
        }
    }
}

/// A statement node.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Seq(Vec<Stmt>),
    For {
        var: Var,
        min: Expr,
        extent: Expr,
        kind: ForKind,
        body: Box<Stmt>,
    },
    /// The loop of an axis bound to a GPU index: `var` takes the values `0..extent`, one
    /// per block or thread. After `split_host_device`, `var` is the kernel's own index
    /// variable for `tag`, shared by every binding of that tag in the kernel.
    ThreadBinding {
        tag: ThreadTag,
        var: Var,
        extent: Expr,
        body: Box<Stmt>,
    },
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    Let {
        var: Var,
        value: Expr,
        body: Box<Stmt>,
    },
    /// A write: one index per dim before `flatten_storage`, one after (a `Ramp` writes
    /// several lanes).
    Store {
        buffer: Buffer,
        indices: Vec<Expr>,
        value: Expr,
    },
    /// The storage of a tensor's `bounds` (before `flatten_storage`); indices inside
    /// are absolute tensor coordinates.
    Realize {
        buffer: Buffer,
        bounds: Vec<Range>,
        body: Box<Stmt>,
    },
    /// A flat allocation of `extent` elements (after `flatten_storage`).
    Allocate {
        buffer: Buffer,
        extent: Expr,
        body: Box<Stmt>,
    },
    /// A hint, no effect on results (CPU code only): the cache line holding the element
    /// at `indices` (one index per dim before `flatten_storage`, one after) is fetched
    /// ahead of its use. An index outside the buffer fetches nothing.
    Prefetch {
        buffer: Buffer,
        indices: Vec<Expr>,
    },
    /// Every thread of the block waits here; shared-memory writes before it are visible
    /// to reads after it.
    Barrier,
    /// A warp-synchronous reduction (device code of targets with a warp size above 1):
    /// element 0 of the local `buffer` of every thread of each aligned group of `width`
    /// consecutive threads (by linear index in the block; `width` a power of two up to the
    /// warp size) becomes the `op`-combination of the group's values. Every thread of the
    /// block reaches it, as a barrier. CUDA prints it as `__shfl_xor_sync` steps.
    WarpReduce {
        op: crate::tir::ReduceOp,
        buffer: Buffer,
        width: u32,
    },
    /// Host side: run device kernel number `kernel` of the function. A grid with a zero
    /// extent (a zero-sized tensor) launches nothing.
    Launch {
        kernel: usize,
    },
    /// Does nothing.
    NoOp,
}

impl Stmt {
    /// A sequence, flattened: nested sequences are spliced in and no-ops dropped.
    pub fn seq(stmts: Vec<Stmt>) -> Stmt {
        let mut flat = Vec::with_capacity(stmts.len());
        for s in stmts {
            match s {
                Stmt::NoOp => {}
                Stmt::Seq(inner) => flat.extend(inner),
                s => flat.push(s),
            }
        }
        let mut stmts = flat;
        match stmts.len() {
            0 => Stmt::NoOp,
            1 => stmts.pop().unwrap(),
            _ => Stmt::Seq(stmts),
        }
    }
    pub fn for_loop(var: Var, extent: Expr, kind: ForKind, body: Stmt) -> Stmt {
        Stmt::For { var, min: Expr::int(0), extent, kind, body: Box::new(body) }
    }
    /// `body` with `buffer` realized over `0..elements` (one dim).
    pub fn realize(buffer: &Buffer, elements: Expr, body: Stmt) -> Stmt {
        Stmt::Realize { buffer: buffer.clone(), bounds: vec![Range::from_extent(elements)], body: Box::new(body) }
    }
    pub fn if_then(cond: Expr, then: Stmt) -> Stmt {
        Stmt::If { cond, then: Box::new(then), otherwise: None }
    }
    pub fn store(buffer: &Buffer, indices: Vec<Expr>, value: Expr) -> Stmt {
        Stmt::Store { buffer: buffer.clone(), indices, value }
    }
}

/// A parameter of a lowered function.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// A tensor: its buffer and shape (each dim an integer constant or a dim variable,
    /// which the caller's shapes bind).
    Tensor { buffer: Buffer, shape: Vec<Expr>, is_output: bool },
    /// A scalar parameter.
    Scalar(Var),
}

/// A device kernel: the body runs once per thread of every block.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    /// The index variables of the launch dimensions the body uses.
    pub thread_vars: Vec<(ThreadTag, Var)>,
    /// Grid and block extents (x, y, z), in terms of the function's dims and scalars.
    pub grid: [Expr; 3],
    pub block: [Expr; 3],
    /// Global buffers and scalars the body reads or writes, in a fixed order.
    pub buffer_args: Vec<Buffer>,
    pub scalar_args: Vec<Var>,
    pub body: Stmt,
}

/// A lowered function: the host body (which, on GPU targets, launches `kernels`).
#[derive(Clone, Debug)]
pub struct PrimFunc {
    pub name: String,
    pub target: Target,
    pub params: Vec<Param>,
    pub body: Stmt,
    pub kernels: Vec<Kernel>,
    /// What each `Expr::Check` site of the function guards (site `n` is entry `n`), for
    /// the error its failure becomes.
    pub checks: Vec<CheckSite>,
}

/// What a check site guards (see [`Expr::Check`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CheckSite {
    /// Dim `dim` of `tensor`, indexed by the expression whose source text is `index`.
    Index { tensor: String, dim: usize, index: String },
    /// The divisor (source text) of an integer `/` or `%`.
    Divisor { divisor: String },
}
