//! WGSL code generation (the `webgpu` target): every kernel of a GPU-lowered
//! [`PrimFunc`] as one WGSL module, which wgpu runs on Vulkan, Metal and DX12, and which
//! naga translates to MSL for `source("metal")` (feature `naga`: `naga_check`).
//!
//! ABI (what the WebGPU runtime relies on): kernel `k` of the function is the entry point
//! `@compute @workgroup_size(X, Y, Z) fn <k.name>()`, the block `k.block` (which must be
//! constant), launched as `k.grid` workgroups. Its resources are in group 0, numbered by
//! the position of the parameter in the kernel's description
//! ([`crate::codegen::host::kernel_infos`]): buffer parameter `i` is binding `i` (a
//! `var<storage>` array, `read` where the kernel only reads it); the scalar parameters
//! together are one `var<uniform>` struct at the binding of the first of them, each
//! member 4 bytes in parameter order (`i32`, `u32`, `f32`; `bool` as a `u32` 0 or 1); the
//! fault buffer of a kernel that checks values, last, is an `array<atomic<i32>, 6>` with
//! the layout of the other GPU backends' (`Dialect::check_helpers`). Every buffer's size
//! is a multiple of 16 bytes (the runtime rounds allocations up), so a buffer declared as
//! an array of `vec4` covers every element.
//!
//! What WGSL lacks leaves a kernel without WebGPU code, as a [`CodegenError`] naming the
//! type and the reason: f64, f16 (an extension the target does not assume), bf16, 8- and
//! 16-bit integers, 64-bit integers in memory, and 64-bit index arithmetic that 32 bits
//! cannot be proved to hold ([`narrow`]). 64-bit integer values are computed as `i32`
//! where [`narrow::scalar_limit`] proves that exact; the kernel's 64-bit scalars are then
//! `i32` members of its uniform, which the generated host code checks against the limit.
//!
//! Semantics kept from TIR: `Select` and `&&`/`||` stay lazy where a side holds a checked
//! value (WGSL's `select` evaluates both sides; a check not evaluated in TIR must not
//! report a fault), float-to-integer casts saturate with NaN to 0, integer division is
//! WGSL's (truncating; by zero and `MIN / -1` defined, as TIR's wrapping semantics and the
//! checks make them). `bool` tensors are bytes in `u32` words (WGSL has no 8-bit type),
//! written with atomic `and`/`or` so neighbouring threads never race on a word. Contiguous
//! vector accesses whose start is provably a multiple of 4 (or 2) lanes use `vec4` (or
//! `vec2`) arrays; other vector code is printed lane by lane.

#[cfg(feature = "naga")]
pub mod naga_check;
pub mod narrow;
mod prelude;

use self::prelude::{BOOL_BYTE, ERF, F32_BITS, F32_TO_INT, POW, RESERVED};
use super::c_like::{push_kernels, push_section};
use super::names::{Names, Reserved};
use super::CodegenError;
use crate::arith::known_divisor;
use crate::dtype::{DType, ScalarKind};
use crate::tir::printer::{LineSpan, NodeRef};
use crate::tir::visit::{contains_check, expr_has_check, walk_expr, walk_stmt, written_buffers, Visitor};
use crate::tir::{
    BinOp, Buffer, BufferId, CheckKind, Expr, Intrinsic, Kernel, Param, PrimFunc, Scope, Stmt, Var, VarId,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

type R<T> = Result<T, CodegenError>;

fn unsupported(what: impl Into<String>) -> CodegenError {
    CodegenError::Unsupported { what: what.into() }
}

/// Prints every kernel of a GPU-lowered function as one WGSL module (kernels in
/// `f.kernels` order, each an entry point named `kernel.name`). See the module docs for
/// the ABI.
pub fn emit_wgsl(f: &PrimFunc) -> R<String> {
    emit_wgsl_spans(f).map(|(text, _)| text)
}

/// [`emit_wgsl`] and the line range of every loop, thread index and store of the module.
pub fn emit_wgsl_spans(f: &PrimFunc) -> R<(String, Vec<LineSpan>)> {
    let mut p = Printer::new(f);
    for k in &f.kernels {
        if !p.names.taken.insert(k.name.clone()) || !is_identifier(&k.name) || RESERVED.contains(&k.name.as_str()) {
            return Err(unsupported(format!("the kernel name `{}` in WGSL", k.name)));
        }
    }
    let mut kernels = Vec::new();
    for (i, k) in f.kernels.iter().enumerate() {
        kernels.push((p.kernel(i, k)?, std::mem::take(&mut p.spans)));
    }
    let mut out = String::new();
    for (used, text) in [
        (p.uses.bits, F32_BITS),
        (p.uses.casts, F32_TO_INT),
        (p.uses.bool_bytes, BOOL_BYTE),
        (p.uses.erf, ERF),
        (p.uses.pow, POW),
    ] {
        if used {
            push_section(&mut out, text);
        }
    }
    let spans = push_kernels(&mut out, kernels);
    Ok((out, spans))
}

/// Why WGSL cannot hold values of type `d`, or `None` when it can. 64-bit integers are
/// accepted here: as index arithmetic they become `i32` where [`narrow`] proves that
/// exact; the printer refuses them in memory.
pub fn lacks(d: DType) -> Option<&'static str> {
    let e = d.element();
    match (e.kind, e.bits) {
        (ScalarKind::Float, 64) => Some("WGSL has no 64-bit floats"),
        (ScalarKind::Float, 16) => {
            Some("WGSL has f16 only with the `shader-f16` extension, which the webgpu target does not assume")
        }
        (ScalarKind::BFloat, _) => Some("WGSL has no bfloat16 type"),
        (ScalarKind::Int | ScalarKind::UInt, 8 | 16) => Some("WGSL has no 8- or 16-bit integers"),
        _ => None,
    }
}

/// The bound of kernel `k`'s 64-bit integer scalars under which its WGSL code is exact
/// (see [`narrow::scalar_limit`]), or the error that leaves the kernel without WebGPU
/// code.
pub fn kernel_scalar_limit(f: &PrimFunc, k: &Kernel) -> R<i64> {
    narrow::scalar_limit(f, k).ok_or_else(|| {
        unsupported(format!(
            "64-bit index arithmetic in kernel `{}` on webgpu: 32 bits are not proved to hold it for any shape, and \
             WGSL has no 64-bit integers",
            k.name
        ))
    })
}

/// WebGPU's guaranteed number of workgroups in each dimension of a dispatch
/// (`max_compute_workgroups_per_dimension`'s default).
const WORKGROUPS_PER_DIMENSION: i64 = 65535;

/// Whether kernel `k`'s grid is printed to be dispatched folded: a 1-D grid (only
/// `block.x` bound; its y and z extents 1) whose extent is not a constant within
/// [`WORKGROUPS_PER_DIMENSION`], and is computed from the kernel's own scalars, so the
/// kernel can tell the workgroups past it. Its entry point then takes
/// `@builtin(num_workgroups)`, recovers its linear workgroup id from the x, y and z of a
/// dispatch the runtime may fold (x fastest), and returns at once past the grid; the
/// runtime folds a grid over the device's limit only for such kernels (it reads the
/// entry point's arguments).
fn folds_grid(k: &Kernel) -> bool {
    let one = |e: &Expr| e.as_int() == Some(1);
    let scalars: HashSet<VarId> = k.scalar_args.iter().map(|v| v.id()).collect();
    let mut vars = Vec::new();
    collect_vars(&k.grid[0], &mut vars);
    k.thread_vars.iter().any(|(t, _)| t.is_block() && t.dim() == 0)
        && !k.thread_vars.iter().any(|(t, _)| t.is_block() && t.dim() > 0)
        && one(&k.grid[1])
        && one(&k.grid[2])
        && k.grid[0].as_int().is_none_or(|g| g > WORKGROUPS_PER_DIMENSION)
        && vars.iter().all(|v| scalars.contains(v))
}

/// A key naming `e` if it is index arithmetic of the thread and block indices alone: a
/// scalar integer sum, difference or product of them and constants, with at least one
/// index. Two such expressions with one key print the same WGSL.
fn index_key(e: &Expr, threads: &HashSet<VarId>) -> Option<String> {
    fn key(e: &Expr, threads: &HashSet<VarId>, out: &mut String, var: &mut bool) -> bool {
        use std::fmt::Write;
        match e {
            Expr::Int { value, dtype } if dtype.lanes == 1 => {
                let _ = write!(out, "{value}:{dtype:?}");
                true
            }
            Expr::Var(v) if threads.contains(&v.id()) => {
                *var = true;
                let _ = write!(out, "v{}", v.id().0);
                true
            }
            Expr::Binary { op: op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b } => {
                out.push('(');
                let ok = key(a, threads, out, var) && {
                    out.push_str(op.symbol());
                    key(b, threads, out, var)
                };
                out.push(')');
                ok
            }
            _ => false,
        }
    }
    let d = e.dtype();
    if !matches!(e, Expr::Binary { .. }) || d.lanes != 1 || !d.is_int() {
        return None;
    }
    let (mut out, mut var) = (String::new(), false);
    (key(e, threads, &mut out, &mut var) && var).then_some(out)
}

/// The index computations of the thread and block indices alone ([`index_key`]) that
/// `body` holds more than once, smallest first. An unrolled register tile repeats each
/// a hundred times (`blockIdx_y * 128 + threadIdx_y * 8` in every guard of a 1000 x 1000
/// matmul): bound once, the WGSL is shorter, and naga, which parses it at expansion time
/// and again when wgpu loads it, makes fewer expressions (its time grows with the square
/// of a function's expressions). They are sums and products, which wrap in `i32` as the
/// arithmetic they replace does, so computing one ahead of the guard it sits in changes
/// no value it gives there.
fn shared_indices(body: &Stmt, threads: &HashSet<VarId>) -> Vec<Expr> {
    struct Count<'a> {
        threads: &'a HashSet<VarId>,
        seen: HashMap<String, (usize, Expr)>,
    }
    impl Visitor for Count<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let Some(k) = index_key(e, self.threads) {
                self.seen.entry(k).or_insert_with(|| (0, e.clone())).0 += 1;
            }
            walk_expr(self, e);
        }
    }
    let mut c = Count { threads, seen: HashMap::new() };
    walk_stmt(&mut c, body);
    let mut shared: Vec<(String, Expr)> =
        c.seen.into_iter().filter(|(_, (n, _))| *n > 1).map(|(k, (_, e))| (k, e)).collect();
    shared.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(&b.0)));
    shared.into_iter().map(|(_, e)| e).collect()
}

/// The variables `e` reads.
fn collect_vars(e: &Expr, out: &mut Vec<VarId>) {
    struct Vars<'a>(&'a mut Vec<VarId>);
    impl Visitor for Vars<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let Expr::Var(v) = e {
                self.0.push(v.id());
            }
            walk_expr(self, e);
        }
    }
    Vars(out).visit_expr(e);
}

/// Whether `s` is an identifier WGSL accepts (ASCII here: letters, digits, `_`; not a
/// digit first, not `_` alone, not `__` first).
fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s != "_"
        && !s.starts_with("__")
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// WGSL's own names: its reserved words, the `__` no identifier may start with, and the
/// printer's helpers.
static WGSL_RESERVED: Reserved = Reserved { words: RESERVED, prefixes: &["__", "tvm_"] };

/// Which module-scope helpers the printed kernels call.
#[derive(Default)]
struct Uses {
    bits: bool,
    casts: bool,
    bool_bytes: bool,
    erf: bool,
    pow: bool,
}

/// How a buffer's elements are laid out in WGSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// An array of the element type.
    Plain,
    /// An array of `vecN` of the element type (`N` 2 or 4): every contiguous vector access
    /// of the kernel starts at a multiple of `N` and covers whole vectors.
    Vector(u16),
    /// A `bool` tensor in global memory: bytes, four to a `u32` word (atomic where written).
    Bytes,
}

/// The checks of the current kernel: the names of its helpers.
struct Checks {
    index: String,
    divisor: String,
    divisor_u: String,
}

struct Printer<'f> {
    f: &'f PrimFunc,
    /// One set of names taken for the module (module scope and every kernel's locals, so
    /// nothing shadows anything); the current kernel's variables and buffers.
    names: Names,
    uses: Uses,
    out: String,
    indent: usize,
    line_no: usize,
    spans: Vec<LineSpan>,
    layout: HashMap<BufferId, Layout>,
    /// Largest known divisors of the `let`-bound integer variables in scope.
    divisors: HashMap<VarId, i64>,
    /// Vector loads of the statement being printed, in variables: (buffer, printed base,
    /// vector number) → variable.
    hoisted: HashMap<(BufferId, String, u16), String>,
    checks: Option<Checks>,
    /// The buffers the current kernel stores to.
    written: HashSet<BufferId>,
    /// Index arithmetic of the thread and block indices alone that the kernel repeats,
    /// bound once at its top (see [`shared_indices`]): key → variable.
    shared: HashMap<String, String>,
    /// The current kernel's thread and block index variables.
    threads: HashSet<VarId>,
}

impl<'f> Printer<'f> {
    fn new(f: &'f PrimFunc) -> Self {
        let mut names = Names::new(&WGSL_RESERVED);
        names.taken.extend(RESERVED.iter().map(|s| s.to_string()));
        Printer {
            f,
            names,
            uses: Uses::default(),
            out: String::new(),
            indent: 0,
            line_no: 0,
            spans: Vec::new(),
            layout: HashMap::new(),
            divisors: HashMap::new(),
            hoisted: HashMap::new(),
            checks: None,
            written: HashSet::new(),
            shared: HashMap::new(),
            threads: HashSet::new(),
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
        self.line_no += 1 + s.matches('\n').count();
    }

    /// The WGSL type of scalars of type `d` (64-bit integers as `i32`, proved exact by
    /// [`narrow`] before a kernel is printed).
    fn scalar_type(&self, d: DType) -> R<&'static str> {
        let e = d.element();
        if let Some(why) = lacks(e) {
            return Err(unsupported(format!("values of type {e} on webgpu ({why})")));
        }
        Ok(match (e.kind, e.bits) {
            (ScalarKind::Bool, _) => "bool",
            (ScalarKind::Float, 32) => "f32",
            (ScalarKind::UInt, 32) => "u32",
            (ScalarKind::Int, 32 | 64) | (ScalarKind::UInt, 64) => "i32",
            _ => return Err(unsupported(format!("values of type {e} on webgpu"))),
        })
    }

    /// The element type a buffer with `layout` is declared with (`written`: a bool tensor
    /// other threads may write words of).
    fn element_type(&self, b: &Buffer, layout: Layout, written: bool) -> R<String> {
        Ok(match layout {
            Layout::Plain => self.scalar_type(b.dtype())?.to_string(),
            Layout::Vector(n) => format!("vec{n}<{}>", self.scalar_type(b.dtype())?),
            Layout::Bytes if written => "atomic<u32>".to_string(),
            Layout::Bytes => "u32".to_string(),
        })
    }

    /// Prints kernel number `index` with its module-scope declarations.
    fn kernel(&mut self, index: usize, k: &Kernel) -> R<String> {
        self.out.clear();
        self.line_no = 0;
        self.spans.clear();
        self.indent = 0;
        self.divisors.clear();
        self.hoisted.clear();
        self.shared.clear();
        self.threads = k.thread_vars.iter().map(|(_, v)| v.id()).collect();
        self.names.vars.clear();
        self.names.buffers.clear();
        // What WGSL cannot hold, by the tensor that holds it.
        let tensors: HashSet<BufferId> = self
            .f
            .params
            .iter()
            .filter_map(|p| match p {
                Param::Tensor { buffer, .. } => Some(buffer.id()),
                Param::Scalar(_) => None,
            })
            .collect();
        let shared = collect_allocations(&k.body);
        for b in k.buffer_args.iter().chain(shared.iter().map(|(b, _)| b)) {
            let d = b.dtype().element();
            let why = lacks(d).or((d.bits == 64 && d.is_integer()).then_some("WGSL has no 64-bit integers"));
            if let Some(why) = why {
                let what = if tensors.contains(&b.id()) { "tensor" } else { "intermediate" };
                return Err(unsupported(format!("the {d} {what} `{}` on webgpu ({why})", b.name())));
            }
        }
        for v in &k.scalar_args {
            if let Some(why) = lacks(v.dtype()) {
                return Err(unsupported(format!("the {} scalar `{}` on webgpu ({why})", v.dtype(), v.name())));
            }
        }
        let limit = kernel_scalar_limit(self.f, k)?;
        let block: Vec<i64> = k.block.iter().filter_map(|e| e.as_int()).filter(|&v| v >= 1).collect();
        let [bx, by, bz] = block[..] else {
            return Err(unsupported(format!("kernel `{}` on webgpu: its block shape is not a constant", k.name)));
        };
        self.layout = plan_layouts(k);
        self.written = written_buffers(&k.body);
        let written = self.written.clone();

        // Module-scope declarations: buffers, the scalars' uniform, the fault buffer, the
        // shared arrays.
        let nb = k.buffer_args.len();
        for (i, b) in k.buffer_args.iter().enumerate() {
            let layout = self.layout(b);
            let name = self.names.bind_buffer(b);
            let access = if written.contains(&b.id()) { "read_write" } else { "read" };
            let elem = self.element_type(b, layout, written.contains(&b.id()))?;
            self.line(&format!("@group(0) @binding({i}) var<storage, {access}> {name}: array<{elem}>;"));
        }
        let mut scalar_lets = Vec::new();
        if !k.scalar_args.is_empty() {
            let (ty, arg) = (format!("tvm_Args_k{index}"), format!("tvm_args_k{index}"));
            self.names.taken.extend([ty.clone(), arg.clone()]);
            let mut members = Vec::new();
            for v in &k.scalar_args {
                let t = self.scalar_type(v.dtype())?;
                let n = self.names.bind_var(v);
                if t == "bool" {
                    members.push(format!("{n}: u32"));
                    scalar_lets.push(format!("let {n}: bool = {arg}.{n} != 0u;"));
                } else {
                    members.push(format!("{n}: {t}"));
                    scalar_lets.push(format!("let {n}: {t} = {arg}.{n};"));
                }
            }
            self.line(&format!("struct {ty} {{ {} }}", members.join(", ")));
            self.line(&format!("@group(0) @binding({nb}) var<uniform> {arg}: {ty};"));
        }
        self.checks = None;
        if contains_check(&k.body) {
            let binding = nb + k.scalar_args.len();
            let fault = format!("tvm_fault_k{index}");
            let c = Checks {
                index: format!("tvm_check_index_k{index}"),
                divisor: format!("tvm_check_divisor_k{index}"),
                divisor_u: format!("tvm_check_divisor_u_k{index}"),
            };
            let fail = format!("tvm_fail_k{index}");
            self.names.taken.extend([fault.clone(), fail.clone(), c.index.clone(), c.divisor.clone()]);
            self.names.taken.insert(c.divisor_u.clone());
            self.line(&format!(
                "@group(0) @binding({binding}) var<storage, read_write> {fault}: array<atomic<i32>, 6>;"
            ));
            self.line(&check_helpers(&fault, &fail, &c));
            self.checks = Some(c);
        }
        for (b, extent) in &shared {
            if b.scope() != Scope::Shared {
                continue;
            }
            let n = extent
                .as_int()
                .ok_or_else(|| unsupported(format!("shared allocation `{}` of non-constant size", b.name())))?;
            let layout = self.layout(b);
            let elem = self.element_type(b, layout, true)?;
            let name = self.names.bind_buffer(b);
            self.line(&format!("var<workgroup> {name}: array<{elem}, {}>;", array_len(n, layout)));
        }
        if limit < i32::MAX as i64 && k.scalar_args.iter().any(|v| crate::arith::narrow::wide(v.dtype())) {
            self.line(&format!(
                "// Indices in 32 bits: exact while every 64-bit scalar (the dims) is at most {limit} (checked by \
                 the host)."
            ));
        }
        let mut params = Vec::new();
        let folds = folds_grid(k);
        if k.thread_vars.iter().any(|(t, _)| t.is_block()) {
            params.push("@builtin(workgroup_id) tvm_block: vec3<u32>");
        }
        if folds {
            params.push("@builtin(num_workgroups) tvm_groups: vec3<u32>");
        }
        if k.thread_vars.iter().any(|(t, _)| !t.is_block()) {
            params.push("@builtin(local_invocation_id) tvm_thread: vec3<u32>");
        }
        self.line(&format!("@compute @workgroup_size({bx}, {by}, {bz})"));
        self.line(&format!("fn {}({}) {{", k.name, params.join(", ")));
        self.indent += 1;
        for l in scalar_lets {
            self.line(&l);
        }
        if folds {
            // The linear workgroup id of a folded dispatch; the workgroups past the grid
            // return at once (the same for the whole workgroup, so barriers stay uniform).
            let grid = self.expr(&k.grid[0], 0)?;
            self.line(
                "let tvm_block_x: u32 = tvm_block.x + tvm_groups.x * (tvm_block.y + tvm_groups.y * tvm_block.z);",
            );
            self.line(&format!("if (tvm_block_x >= u32({grid})) {{"));
            self.indent += 1;
            self.line("return;");
            self.indent -= 1;
            self.line("}");
        }
        for (tag, v) in &k.thread_vars {
            let t = self.scalar_type(v.dtype())?;
            let n = self.names.bind_var(v);
            let (builtin, c) = (if tag.is_block() { "tvm_block" } else { "tvm_thread" }, ["x", "y", "z"][tag.dim()]);
            if folds && tag.is_block() {
                self.spans.push(LineSpan { node: NodeRef::Bind(*tag), first: self.line_no, last: self.line_no });
                self.line(&format!("let {n}: {t} = {t}(tvm_block_x);"));
                continue;
            }
            self.spans.push(LineSpan { node: NodeRef::Bind(*tag), first: self.line_no, last: self.line_no });
            self.line(&format!("let {n}: {t} = {t}({builtin}.{c});"));
        }
        // Each repeated index computation once (smaller first: a larger one reads them).
        for e in shared_indices(&k.body, &self.threads) {
            let value = self.expr(&e, 0)?;
            let t = self.scalar_type(e.dtype())?;
            let n = self.names.own("tvm_i");
            self.line(&format!("let {n}: {t} = {value};"));
            let key = index_key(&e, &self.threads).expect("a shared index has a key");
            self.shared.insert(key, n);
        }
        self.stmt(&k.body)?;
        self.indent -= 1;
        self.line("}");
        Ok(std::mem::take(&mut self.out))
    }

    fn layout(&self, b: &Buffer) -> Layout {
        match self.layout.get(&b.id()) {
            Some(&l) => l,
            None if b.dtype().is_bool() && b.scope() == Scope::Global => Layout::Bytes,
            None => Layout::Plain,
        }
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        match s {
            Stmt::Seq(v) => {
                for s in v {
                    self.stmt(s)?;
                }
            }
            // A CPU cache hint; schedules for GPU targets cannot ask for one.
            Stmt::NoOp | Stmt::Prefetch { .. } => {}
            Stmt::For { var, min, extent, body, .. } => {
                let t = self.scalar_type(var.dtype())?;
                let first = self.line_no;
                let lo = self.expr(min, 0)?;
                let lo = if is_atom(&lo) {
                    lo
                } else {
                    let n = self.names.fresh(&format!("{}_lo", var.name()));
                    self.line(&format!("let {n}: {t} = {lo};"));
                    n
                };
                let ext = self.expr(extent, 0)?;
                let hi = if min.is_const_int(0) && is_atom(&ext) {
                    ext
                } else {
                    let n = self.names.fresh(&format!("{}_end", var.name()));
                    let end = if min.is_const_int(0) { ext } else { format!("{lo} + {ext}") };
                    self.line(&format!("let {n}: {t} = {end};"));
                    n
                };
                let n = self.names.bind_var(var);
                let one = if t == "u32" { "1u" } else { "1i" };
                self.line(&format!("for (var {n}: {t} = {lo}; {n} < {hi}; {n} = {n} + {one}) {{"));
                self.block(body)?;
                self.spans.push(LineSpan { node: NodeRef::Loop(var.id()), first, last: self.line_no - 1 });
            }
            Stmt::ThreadBinding { tag, .. } => {
                return Err(unsupported(format!("a thread binding ({}) inside a kernel", tag.name())))
            }
            Stmt::If { cond, then, otherwise } => {
                let c = self.expr(cond, 0)?;
                self.line(&format!("if ({c}) {{"));
                self.indent += 1;
                self.stmt(then)?;
                self.indent -= 1;
                if let Some(o) = otherwise {
                    self.line("} else {");
                    self.block(o)?;
                } else {
                    self.line("}");
                }
            }
            Stmt::Let { var, value, body } => {
                self.hoist_vector_loads(value)?;
                let t = self.scalar_type(var.dtype())?;
                let d = var.dtype();
                let v = if d.lanes > 1 {
                    let mut lanes = Vec::new();
                    for l in 0..d.lanes {
                        lanes.push(self.expr(value, l)?);
                    }
                    format!("array<{t}, {}>({})", d.lanes, lanes.join(", "))
                } else {
                    self.expr(value, 0)?
                };
                self.hoisted.clear();
                if d.is_integer() && d.lanes == 1 {
                    let div = known_divisor(value, &self.divisors);
                    self.divisors.insert(var.id(), div);
                }
                let n = self.names.bind_var(var);
                if d.lanes > 1 {
                    self.line(&format!("let {n}: array<{t}, {}> = {v};", d.lanes));
                } else {
                    self.line(&format!("let {n}: {t} = {v};"));
                }
                self.stmt(body)?;
            }
            Stmt::Store { buffer, indices, value } => {
                let first = self.line_no;
                self.store(buffer, indices, value)?;
                let last = self.line_no.max(first + 1) - 1;
                self.spans.push(LineSpan { node: NodeRef::Store(buffer.id()), first, last });
            }
            Stmt::Allocate { buffer, extent, body } => {
                match buffer.scope() {
                    Scope::Shared => {} // declared at module scope
                    Scope::Local => {
                        let n = extent.as_int().ok_or_else(|| {
                            unsupported(format!("local allocation `{}` of non-constant size", buffer.name()))
                        })?;
                        let layout = self.layout(buffer);
                        let elem = self.element_type(buffer, layout, true)?;
                        let name = self.names.bind_buffer(buffer);
                        self.line(&format!("var {name}: array<{elem}, {}>;", array_len(n, layout)));
                    }
                    Scope::Global => {
                        return Err(unsupported(format!("global allocation `{}` inside a kernel", buffer.name())))
                    }
                }
                self.stmt(body)?;
            }
            Stmt::Realize { .. } => return Err(unsupported("an unflattened `Realize` in a kernel")),
            Stmt::Barrier => self.line("workgroupBarrier();"),
            Stmt::WarpReduce { .. } => {
                return Err(unsupported("warp reductions on webgpu (the target assumes no subgroups)"))
            }
            Stmt::Launch { .. } => return Err(unsupported("a kernel launch inside a kernel")),
        }
        Ok(())
    }

    /// `body` then `}` at the current indentation.
    fn block(&mut self, body: &Stmt) -> R<()> {
        self.indent += 1;
        self.stmt(body)?;
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    fn buffer_name(&self, b: &Buffer) -> R<String> {
        self.names
            .buffers
            .get(&b.id())
            .cloned()
            .ok_or_else(|| unsupported(format!("buffer `{}` used out of scope", b.name())))
    }

    fn var_name(&self, v: &Var) -> R<String> {
        self.names
            .vars
            .get(&v.id())
            .cloned()
            .ok_or_else(|| unsupported(format!("variable `{}` used out of scope", v.name())))
    }

    /// `e` printed once: itself when it is a name or a literal, else a `let` printed now.
    fn once(&mut self, e: String, ty: &str, hint: &str) -> String {
        if is_atom(&e) {
            return e;
        }
        let n = self.names.fresh(hint);
        self.line(&format!("let {n}: {ty} = {e};"));
        n
    }

    /// Whether a contiguous access of `lanes` lanes of `buffer` from `base` goes through
    /// whole vectors of its layout, and how wide they are.
    fn vector_width(&self, buffer: &Buffer, base: &Expr, lanes: u16) -> Option<u16> {
        match self.layout(buffer) {
            Layout::Vector(w) if lanes % w == 0 && known_divisor(base, &self.divisors) % w as i64 == 0 => Some(w),
            _ => None,
        }
    }

    fn store(&mut self, buffer: &Buffer, indices: &[Expr], value: &Expr) -> R<()> {
        let [index] = indices else {
            return Err(unsupported(format!("a multi-dimensional store to `{}`", buffer.name())));
        };
        let name = self.buffer_name(buffer)?;
        let lanes = index.dtype().lanes;
        self.hoist_vector_loads(value)?;
        if lanes == 1 {
            if let Some(at) = self.aligned_element(buffer, &name, index)? {
                let v = self.expr(value, 0)?;
                self.line(&format!("{at} = {v};"));
            } else {
                let i = self.expr(index, 0)?;
                let v = self.expr(value, 0)?;
                self.store_element(buffer, &name, i, v)?;
            }
            self.hoisted.clear();
            return Ok(());
        }
        // Every lane is computed before any is written.
        let t = self.scalar_type(buffer.dtype())?;
        self.line("{");
        self.indent += 1;
        let mut tmps = Vec::new();
        for l in 0..lanes {
            let v = self.expr(value, l)?;
            let tmp = self.names.fresh(&format!("{}_lane{l}", buffer.name()));
            self.line(&format!("let {tmp}: {t} = {v};"));
            tmps.push(tmp);
        }
        match index {
            Expr::Ramp { base, stride, .. }
                if stride.is_const_int(1)
                    && !expr_has_check(base)
                    && self.vector_width(buffer, base, lanes).is_some() =>
            {
                let w = self.vector_width(buffer, base, lanes).unwrap_or(1);
                let b = self.expr(base, 0)?;
                let b = self.once(b, "i32", &format!("{}_at", buffer.name()));
                for (c, chunk) in tmps.chunks(w as usize).enumerate() {
                    let at = vector_index(&b, w, c as u16);
                    self.line(&format!("{name}[{at}] = vec{w}<{t}>({});", chunk.join(", ")));
                }
            }
            _ => {
                for (l, tmp) in tmps.into_iter().enumerate() {
                    let i = self.expr(index, l as u16)?;
                    self.store_element(buffer, &name, i, tmp)?;
                }
            }
        }
        self.indent -= 1;
        self.line("}");
        self.hoisted.clear();
        Ok(())
    }

    /// Element `index` (a scalar) of `buffer` (named `name`) with a vector layout, where
    /// the index is a multiple of the width plus a constant: `name[(a >> 2u) + 1i][3]`
    /// for `a + 7` with `a` a multiple of 4. `None` for other layouts and indices.
    fn aligned_element(&mut self, buffer: &Buffer, name: &str, index: &Expr) -> R<Option<String>> {
        let Layout::Vector(w) = self.layout(buffer) else { return Ok(None) };
        let aligned = |e: &Expr| known_divisor(e, &self.divisors) % w as i64 == 0;
        let (base, c) = match index {
            Expr::Int { value, .. } => (None, *value),
            Expr::Binary { op: BinOp::Add, a, b } if b.as_int().is_some() && aligned(a) => {
                (Some(&**a), b.as_int().unwrap_or(0))
            }
            e if aligned(e) => (Some(e), 0),
            _ => return Ok(None),
        };
        let (q, r) = (c.div_euclid(w as i64), c.rem_euclid(w as i64));
        Ok(Some(match base {
            None => format!("{name}[{q}][{r}]"),
            Some(b) => {
                let b = self.expr(b, 0)?;
                let s = w.trailing_zeros();
                match q {
                    0 => format!("{name}[{b} >> {s}u][{r}]"),
                    q if q > 0 => format!("{name}[({b} >> {s}u) + {q}i][{r}]"),
                    q => format!("{name}[({b} >> {s}u) - {}i][{r}]", -q),
                }
            }
        }))
    }

    /// `name[i] = v;` for one element, by the buffer's layout.
    fn store_element(&mut self, buffer: &Buffer, name: &str, i: String, v: String) -> R<()> {
        match self.layout(buffer) {
            Layout::Plain => self.line(&format!("{name}[{i}] = {v};")),
            Layout::Vector(w) => {
                let i = self.once(i, "i32", &format!("{}_at", buffer.name()));
                let (s, m) = (w.trailing_zeros(), w - 1);
                self.line(&format!("{name}[{i} >> {s}u][{i} & {m}i] = {v};"));
            }
            Layout::Bytes => {
                // The byte of element `i` in its word, the others kept: clear, then set
                // (each an atomic operation, so threads writing other bytes of the word
                // keep theirs).
                let i = self.once(i, "i32", &format!("{}_at", buffer.name()));
                let v = self.once(v, "bool", &format!("{}_value", buffer.name()));
                self.line("{");
                self.indent += 1;
                self.line(&format!("let tvm_word = u32({i}) >> 2u;"));
                self.line(&format!("let tvm_shift = (u32({i}) & 3u) * 8u;"));
                self.line(&format!("atomicAnd(&{name}[tvm_word], ~(255u << tvm_shift));"));
                self.line(&format!("atomicOr(&{name}[tvm_word], select(0u, 1u, {v}) << tvm_shift);"));
                self.indent -= 1;
                self.line("}");
            }
        }
        Ok(())
    }

    /// Each contiguous load of whole vectors in `e` (of a buffer with a vector layout,
    /// at a start provably a multiple of its width, not itself checked) becomes a
    /// variable printed before the statement; lanes of the load then read its
    /// components. Loads have no side effects (an index outside a buffer reads some
    /// element of it in WebGPU), so a load in a branch not taken costs time, nothing else.
    fn hoist_vector_loads(&mut self, e: &Expr) -> R<()> {
        if e.dtype().lanes == 1 && !contains_vector(e) {
            return Ok(());
        }
        let mut loads = Vec::new();
        crate::tir::visit::for_each_expr(e, &mut |x| {
            if let Expr::Load { buffer, indices } = x {
                if let [Expr::Ramp { base, stride, lanes }] = indices.as_slice() {
                    if stride.is_const_int(1) && !expr_has_check(base) {
                        loads.push((buffer.clone(), (**base).clone(), *lanes));
                    }
                }
            }
        });
        for (buffer, base, lanes) in loads {
            let Some(w) = self.vector_width(&buffer, &base, lanes) else { continue };
            let b = self.expr(&base, 0)?;
            let name = self.buffer_name(&buffer)?;
            for c in 0..lanes / w {
                let key = (buffer.id(), b.clone(), c);
                if self.hoisted.contains_key(&key) {
                    continue;
                }
                let tmp = self.names.fresh(&format!("{}_v", buffer.name()));
                self.line(&format!("let {tmp} = {name}[{}];", vector_index(&b, w, c)));
                self.hoisted.insert(key, tmp);
            }
        }
        Ok(())
    }

    fn literal_int(&self, value: i64, d: DType) -> R<String> {
        let t = self.scalar_type(d)?;
        if t == "u32" {
            return Ok(format!("{}u", value as u32));
        }
        let v = i32::try_from(value)
            .map_err(|_| unsupported(format!("the constant {value} on webgpu, which computes {d} in 32 bits")))?;
        Ok(match v {
            i32::MIN => "(-2147483647i - 1i)".to_string(),
            v if v < 0 => format!("({v}i)"),
            v => format!("{v}i"),
        })
    }

    fn literal_float(&mut self, value: f64, d: DType) -> R<String> {
        self.scalar_type(d)?;
        let v = value as f32;
        if !v.is_finite() {
            self.uses.bits = true;
            let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
            return Ok(format!("tvm_f32_bits({bits:#010x}u)"));
        }
        let text = format!("{:?}f", v.abs());
        Ok(if v.is_sign_negative() { format!("(-{text})") } else { text })
    }

    /// Lane `lane` of `e` (a scalar `e` is the same in every lane), printed as a WGSL
    /// expression; lines printed now come before the statement that uses it.
    fn expr(&mut self, e: &Expr, lane: u16) -> R<String> {
        if !self.shared.is_empty() && matches!(e, Expr::Binary { .. }) {
            if let Some(n) = index_key(e, &self.threads).and_then(|k| self.shared.get(&k)) {
                return Ok(n.clone());
            }
        }
        let l = if e.dtype().lanes > 1 { lane } else { 0 };
        Ok(match e {
            Expr::Int { value, dtype } => self.literal_int(*value, *dtype)?,
            Expr::Float { value, dtype } => self.literal_float(*value, *dtype)?,
            Expr::Bool(b) => b.to_string(),
            Expr::Var(v) => {
                let n = self.var_name(v)?;
                if v.dtype().lanes > 1 {
                    format!("{n}[{l}]")
                } else {
                    n
                }
            }
            Expr::Binary { op, a, b } => {
                let x = self.expr(a, l)?;
                let y = self.expr(b, l)?;
                match op {
                    BinOp::Min => format!("min({x}, {y})"),
                    BinOp::Max => format!("max({x}, {y})"),
                    op => format!("({x} {} {y})", op.symbol()),
                }
            }
            Expr::Cmp { op, a, b } => {
                let x = self.expr(a, l)?;
                let y = self.expr(b, l)?;
                format!("({x} {} {y})", op.symbol())
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let and = matches!(e, Expr::And(..));
                let x = self.expr(a, l)?;
                if !expr_has_check(b) {
                    let y = self.expr(b, l)?;
                    return Ok(format!("({x} {} {y})", if and { "&&" } else { "||" }));
                }
                // The right side holds a check: evaluated only where TIR evaluates it.
                let t = self.names.own(if and { "tvm_and" } else { "tvm_or" });
                self.line(&format!("var {t}: bool = {x};"));
                self.line(&format!("if ({}{t}) {{", if and { "" } else { "!" }));
                self.indent += 1;
                let y = self.expr(b, l)?;
                self.line(&format!("{t} = {y};"));
                self.indent -= 1;
                self.line("}");
                t
            }
            Expr::Not(a) => format!("(!{})", self.expr(a, l)?),
            Expr::Neg(a) => {
                let x = self.expr(a, l)?;
                if self.scalar_type(a.dtype())? == "u32" {
                    format!("(0u - {x})")
                } else {
                    format!("(-{x})")
                }
            }
            Expr::Select { cond, then, otherwise } => {
                let c = self.expr(cond, l)?;
                if !expr_has_check(then) && !expr_has_check(otherwise) {
                    let t = self.expr(then, l)?;
                    let o = self.expr(otherwise, l)?;
                    return Ok(format!("select({o}, {t}, {c})"));
                }
                // A side holds a check: only the taken side is evaluated.
                let ty = self.scalar_type(then.dtype())?;
                let t = self.names.own("tvm_select");
                self.line(&format!("var {t}: {ty};"));
                self.line(&format!("if ({c}) {{"));
                self.indent += 1;
                let x = self.expr(then, l)?;
                self.line(&format!("{t} = {x};"));
                self.indent -= 1;
                self.line("} else {");
                self.indent += 1;
                let y = self.expr(otherwise, l)?;
                self.line(&format!("{t} = {y};"));
                self.indent -= 1;
                self.line("}");
                t
            }
            Expr::Cast { dtype, value } => self.cast(*dtype, value, l)?,
            Expr::Call { func, args } => {
                let d = args[0].dtype().element();
                let mut xs = Vec::new();
                for a in args {
                    xs.push(self.expr(a, l)?);
                }
                self.call(*func, d, &xs)?
            }
            Expr::Load { buffer, indices } => self.load(buffer, indices, l)?,
            Expr::Check { value, kind, site } => {
                let x = self.expr(value, l)?;
                let Some(c) = &self.checks else { return Err(unsupported("a check outside a kernel")) };
                let (index, divisor, divisor_u) = (c.index.clone(), c.divisor.clone(), c.divisor_u.clone());
                match kind {
                    CheckKind::Index { extent } => {
                        let n = self.expr(extent, 0)?;
                        format!("{index}({x}, {n}, {site}u)")
                    }
                    CheckKind::Divisor if self.scalar_type(value.dtype())? == "u32" => {
                        format!("{divisor_u}({x}, {site}u)")
                    }
                    CheckKind::Divisor => format!("{divisor}({x}, {site}u)"),
                }
            }
            Expr::Ramp { base, stride, .. } => {
                let b = self.expr(base, 0)?;
                if l == 0 {
                    b
                } else if let Some(s) = stride.as_int() {
                    let step = s.checked_mul(l as i64).ok_or_else(|| unsupported("a ramp whose lanes overflow"))?;
                    let k = self.literal_int(step, base.dtype())?;
                    format!("({b} + {k})")
                } else {
                    let s = self.expr(stride, 0)?;
                    let k = self.literal_int(l as i64, base.dtype())?;
                    format!("({b} + {s} * {k})")
                }
            }
            Expr::Broadcast { value, .. } => self.expr(value, 0)?,
            Expr::ProducerLoad { .. } | Expr::Reduce(_) => {
                return Err(unsupported("a tensor-expression node in lowered code"))
            }
        })
    }

    fn cast(&mut self, to: DType, value: &Expr, l: u16) -> R<String> {
        let (from, to) = (value.dtype().element(), to.element());
        let x = self.expr(value, l)?;
        let (ft, tt) = (self.scalar_type(from)?, self.scalar_type(to)?);
        Ok(match (ft, tt) {
            _ if ft == tt => x,
            ("f32", "bool") => format!("({x} != 0.0f)"),
            ("i32", "bool") => format!("({x} != 0i)"),
            ("u32", "bool") => format!("({x} != 0u)"),
            ("bool", "f32") => format!("select(0.0f, 1.0f, {x})"),
            ("bool", "i32") => format!("select(0i, 1i, {x})"),
            ("bool", "u32") => format!("select(0u, 1u, {x})"),
            ("f32", "i32") | ("f32", "u32") => {
                self.uses.casts = true;
                format!("tvm_f32_to_{tt}({x})")
            }
            // Integer to integer: the bits, as TIR's wrapping conversion (64-bit values
            // are proved to fit in 32 bits); integer to float: the nearest float.
            (_, t) => format!("{t}({x})"),
        })
    }

    /// A call of an intrinsic on printed arguments of element type `d`.
    fn call(&mut self, f: Intrinsic, d: DType, args: &[String]) -> R<String> {
        let t = self.scalar_type(d)?;
        if t != "f32" {
            return match (f, t) {
                (Intrinsic::Abs, "i32") => Ok(format!("abs({})", args[0])),
                (Intrinsic::Abs, "u32") => Ok(args[0].clone()),
                _ => Err(unsupported(format!("`{}` of type {d}", f.name()))),
            };
        }
        let a = args.join(", ");
        Ok(match f {
            Intrinsic::Sigmoid => format!("(1.0f / (1.0f + exp(-({a}))))"),
            Intrinsic::Rsqrt => format!("inverseSqrt({a})"),
            Intrinsic::Erf => {
                self.uses.erf = true;
                format!("tvm_erf({a})")
            }
            Intrinsic::Pow => {
                (self.uses.pow, self.uses.casts, self.uses.bits) = (true, true, true);
                format!("tvm_pow({a})")
            }
            // exp, log, sqrt, tanh, abs, floor, ceil, sin, cos, fma
            f => format!("{}({a})", f.name()),
        })
    }

    /// Lane `l` of a load (scalar or vector index).
    fn load(&mut self, buffer: &Buffer, indices: &[Expr], l: u16) -> R<String> {
        let [index] = indices else {
            return Err(unsupported(format!("a multi-dimensional load of `{}`", buffer.name())));
        };
        let name = self.buffer_name(buffer)?;
        if let Expr::Ramp { base, stride, lanes } = index {
            if let Some(w) = self.vector_width(buffer, base, *lanes).filter(|_| stride.is_const_int(1)) {
                if !expr_has_check(base) {
                    let b = self.expr(base, 0)?;
                    if let Some(v) = self.hoisted.get(&(buffer.id(), b.clone(), l / w)) {
                        return Ok(format!("{v}[{}]", l % w));
                    }
                    return Ok(format!("{name}[{}][{}]", vector_index(&b, w, l / w), l % w));
                }
            }
        }
        if index.dtype().lanes == 1 {
            if let Some(at) = self.aligned_element(buffer, &name, index)? {
                return Ok(at);
            }
        }
        let i = self.expr(index, l)?;
        Ok(match self.layout(buffer) {
            Layout::Plain => format!("{name}[{i}]"),
            Layout::Vector(w) => {
                let i = if expr_has_check(index) { self.once(i, "i32", &format!("{}_at", buffer.name())) } else { i };
                let (s, m) = (w.trailing_zeros(), w - 1);
                format!("{name}[{i} >> {s}u][{i} & {m}i]")
            }
            Layout::Bytes => {
                self.uses.bool_bytes = true;
                let i = if expr_has_check(index) { self.once(i, "i32", &format!("{}_at", buffer.name())) } else { i };
                let word = if self.written.contains(&buffer.id()) {
                    format!("atomicLoad(&{name}[u32({i}) >> 2u])")
                } else {
                    format!("{name}[u32({i}) >> 2u]")
                };
                format!("tvm_bool_byte({word}, {i})")
            }
        })
    }
}

/// `base` (a multiple of `w`) divided by `w`, plus `c`: the index of vector `c` of an
/// access in an array of `vecW`.
fn vector_index(base: &str, w: u16, c: u16) -> String {
    let s = w.trailing_zeros();
    if c == 0 {
        format!("{base} >> {s}u")
    } else {
        format!("({base} >> {s}u) + {c}i")
    }
}

/// The length of an array of `n` elements in `layout`.
fn array_len(n: i64, layout: Layout) -> i64 {
    match layout {
        Layout::Vector(w) => (n.max(1) + w as i64 - 1) / w as i64,
        _ => n.max(1),
    }
}

/// Whether printed expression `s` is a name or a literal (printing it twice costs
/// nothing).
fn is_atom(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// The kernel's check helpers, on its fault buffer `fault` (the layout of
/// `Dialect::check_helpers`: site + 1 in word 0, by an atomic compare-and-swap from 0;
/// then the value and the extent as two `i64`s, low word first, from word 2).
fn check_helpers(fault: &str, fail: &str, c: &Checks) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "fn {fail}(site: u32, v: i32, n: i32) {{
  loop {{
    let r = atomicCompareExchangeWeak(&{fault}[0], 0i, i32(site) + 1i);
    if (r.exchanged) {{
      atomicStore(&{fault}[2], v);
      atomicStore(&{fault}[3], select(0i, -1i, v < 0i));
      atomicStore(&{fault}[4], n);
      atomicStore(&{fault}[5], select(0i, -1i, n < 0i));
      return;
    }}
    if (r.old_value != 0i) {{
      return;
    }}
  }}
}}
fn {index}(i: i32, n: i32, site: u32) -> i32 {{
  if (u32(i) < u32(n)) {{
    return i;
  }}
  {fail}(site, i, n);
  return 0i;
}}
fn {divisor}(d: i32, site: u32) -> i32 {{
  if (d != 0i) {{
    return d;
  }}
  {fail}(site, 0i, 0i);
  return 1i;
}}
fn {divisor_u}(d: u32, site: u32) -> u32 {{
  if (d != 0u) {{
    return d;
  }}
  {fail}(site, 0i, 0i);
  return 1u;
}}",
        index = c.index,
        divisor = c.divisor,
        divisor_u = c.divisor_u,
    );
    s
}

/// Whether `e` has a vector-typed sub-expression.
fn contains_vector(e: &Expr) -> bool {
    let mut found = false;
    crate::tir::visit::for_each_expr(e, &mut |x| found |= x.dtype().lanes > 1);
    found
}

/// The shared and local allocations of a kernel body, in order, each once.
fn collect_allocations(body: &Stmt) -> Vec<(Buffer, Expr)> {
    struct A(Vec<(Buffer, Expr)>);
    impl Visitor for A {
        fn visit_expr(&mut self, _: &Expr) {} // expressions hold no statements
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Allocate { buffer, extent, .. } = s {
                if buffer.scope() != Scope::Global && !self.0.iter().any(|(b, _)| b == buffer) {
                    self.0.push((buffer.clone(), extent.clone()));
                }
            }
            walk_stmt(self, s)
        }
    }
    let mut a = A(Vec::new());
    a.visit_stmt(body);
    a.0
}

/// The layout of every buffer kernel `k` accesses: `Bytes` for bool tensors in global
/// memory; `Vector(4)` (else `Vector(2)`) for a buffer of 32-bit elements with at least
/// one contiguous vector access, where every contiguous vector access covers whole
/// vectors from a start provably a multiple of the width (the same proof the printer
/// makes, with the same `let` divisors); else `Plain`.
fn plan_layouts(k: &Kernel) -> HashMap<BufferId, Layout> {
    #[derive(Default)]
    struct Accesses {
        any: bool,
        ok: [bool; 2], // widths 2 and 4
    }
    struct Plan {
        divisors: HashMap<VarId, i64>,
        accesses: BTreeMap<BufferId, (Buffer, Accesses)>,
    }
    impl Plan {
        fn access(&mut self, buffer: &Buffer, index: &Expr) {
            let entry = self
                .accesses
                .entry(buffer.id())
                .or_insert_with(|| (buffer.clone(), Accesses { any: false, ok: [true, true] }));
            if let Expr::Ramp { base, stride, lanes } = index {
                if stride.is_const_int(1) {
                    let d = known_divisor(base, &self.divisors);
                    entry.1.any = true;
                    for (i, w) in [2u16, 4].into_iter().enumerate() {
                        entry.1.ok[i] &= lanes % w == 0 && d % w as i64 == 0;
                    }
                }
            }
        }
    }
    impl Visitor for Plan {
        fn visit_expr(&mut self, e: &Expr) {
            if let Expr::Load { buffer, indices } = e {
                if let [index] = indices.as_slice() {
                    self.access(buffer, index);
                }
            }
            walk_expr(self, e)
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::Let { var, value, body } => {
                    self.visit_expr(value);
                    if var.dtype().is_integer() && var.dtype().lanes == 1 {
                        let d = known_divisor(value, &self.divisors);
                        self.divisors.insert(var.id(), d);
                    }
                    self.visit_stmt(body);
                }
                Stmt::Store { buffer, indices, value } => {
                    if let [index] = indices.as_slice() {
                        self.access(buffer, index);
                    }
                    indices.iter().for_each(|i| self.visit_expr(i));
                    self.visit_expr(value);
                }
                s => walk_stmt(self, s),
            }
        }
    }
    let mut p = Plan { divisors: HashMap::new(), accesses: BTreeMap::new() };
    p.visit_stmt(&k.body);
    let mut out = HashMap::new();
    for (id, (b, a)) in p.accesses {
        let d = b.dtype().element();
        let layout = if d.is_bool() && b.scope() == Scope::Global {
            Layout::Bytes
        } else if d.bits == 32 && !d.is_bool() && a.any && a.ok[1] {
            Layout::Vector(4)
        } else if d.bits == 32 && !d.is_bool() && a.any && a.ok[0] {
            Layout::Vector(2)
        } else {
            Layout::Plain
        };
        out.insert(id, layout);
    }
    out
}
