//! Measures the shared memory of every kernel: each shared allocation must have a
//! compile-time constant size, and their total must fit the target's limit. Local
//! (per-thread) allocations inside kernels must have a constant size too.

use crate::tir::visit::{walk_stmt, Visitor};
use crate::tir::{PrimFunc, Scope, Stmt};

/// A shared- or local-memory problem of one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuMemoryProblem {
    /// The named shared buffer's size is not a constant.
    UnknownSize { buffer: String },
    /// The named local buffer's size is not a constant.
    LocalUnknownSize { buffer: String },
    /// The kernel needs `bytes`, over the target's limit.
    TooLarge { bytes: u64, limit: u32, largest: String },
}

/// The problems of every kernel of `f`, and the shared bytes of each kernel.
pub fn verify_gpu_memory(f: &PrimFunc) -> (Vec<GpuMemoryProblem>, Vec<u64>) {
    let mut problems = Vec::new();
    let mut sizes = Vec::new();
    for k in &f.kernels {
        let mut c = Count { bytes: 0, largest: (0, String::new()), unknown: Vec::new(), local_unknown: Vec::new() };
        c.visit_stmt(&k.body);
        for b in c.unknown {
            problems.push(GpuMemoryProblem::UnknownSize { buffer: b });
        }
        for b in c.local_unknown {
            problems.push(GpuMemoryProblem::LocalUnknownSize { buffer: b });
        }
        let limit = f.target.max_shared_memory_per_block;
        if c.bytes > limit as u64 {
            problems.push(GpuMemoryProblem::TooLarge { bytes: c.bytes, limit, largest: c.largest.1 });
        }
        sizes.push(c.bytes);
    }
    (problems, sizes)
}

struct Count {
    bytes: u64,
    largest: (u64, String),
    unknown: Vec<String>,
    local_unknown: Vec<String>,
}

impl Visitor for Count {
    fn visit_stmt(&mut self, s: &Stmt) {
        if let Stmt::Allocate { buffer, extent, .. } = s {
            if buffer.scope() == Scope::Shared {
                match extent.as_int() {
                    Some(n) => {
                        let b = n.max(0) as u64 * buffer.dtype().bytes() as u64;
                        self.bytes += b;
                        if b > self.largest.0 {
                            self.largest = (b, buffer.name().to_string());
                        }
                    }
                    None => self.unknown.push(buffer.name().to_string()),
                }
            }
            if buffer.scope() == Scope::Local && extent.as_int().is_none() {
                self.local_unknown.push(buffer.name().to_string());
            }
        }
        walk_stmt(self, s)
    }
}
