//! A printer of device kernels as C-like source, shared by the GPU dialects (OpenCL C,
//! CUDA C). The [`Dialect`] trait holds what differs between them: qualifiers, thread
//! indices, barriers, vector types and math function names.
//!
//! Semantics kept from TIR: `Select` stays lazy (C's `?:`), float-to-integer casts
//! saturate (NaN to 0) where the dialect can say so, float literals are printed exactly
//! (shortest round-trip decimal), index arithmetic is 64-bit. Integer division by zero
//! and signed overflow are left to C.

use super::names::{Names, Reserved};
use super::CodegenError;
use crate::arith::{index_fits_i32, known_divisor, may_be_minus_one};
use crate::dtype::{DType, ScalarKind};
use crate::tir::printer::{LineSpan, NodeRef};
use crate::tir::visit::{contains_check, walk_expr, walk_stmt, written_buffers, Visitor};
use crate::tir::{BinOp, Buffer, CheckKind, Expr, Intrinsic, Kernel, Scope, Stmt, ThreadTag, Var, VarId};
use std::collections::HashMap;
use std::fmt::Write;

/// What differs between C-like GPU dialects.
pub trait Dialect {
    /// Printed before `void` of a kernel (`__kernel`, `extern "C" __global__`).
    fn kernel_qualifier(&self) -> &'static str;
    /// The type of a global buffer parameter with element type `elem` (already spelled).
    fn global_param(&self, elem: &str, name: &str) -> String;
    /// The qualifier of a block-shared array declaration (`__local`, `__shared__`).
    fn shared_qualifier(&self) -> &'static str;
    /// The statement of a block barrier, without `;`.
    fn barrier(&self) -> &'static str;
    /// The expression of a launch index, as a 64-bit signed integer.
    fn thread_index(&self, tag: ThreadTag) -> String;
    /// The attribute stating the block shape when it is constant, placed between the
    /// kernel qualifier and `void`; `None` when the dialect has none.
    fn work_group_size_attr(&self, block: [i64; 3]) -> Option<String>;
    /// The name of a scalar type, or `None` when the dialect lacks it.
    fn scalar_type(&self, d: DType) -> Option<String>;
    /// The name of a vector type of `lanes` lanes of `elem`, or `None` (then vectors
    /// are printed lane by lane).
    fn vector_type(&self, elem: DType, lanes: u16) -> Option<String>;
    /// A contiguous vector load `ptr[base .. base + lanes]`, if the dialect has one.
    fn vector_load(&self, ty: &str, lanes: u16, ptr: &str, base: &str) -> Option<String>;
    /// A contiguous vector store statement (without `;`), if the dialect has one.
    fn vector_store(&self, ty: &str, lanes: u16, value: &str, ptr: &str, base: &str) -> Option<String>;
    /// A vector built from scalar lanes (already printed).
    fn vector_make(&self, ty: &str, lanes: &[String]) -> String;
    /// A vector with `value` in every lane.
    fn vector_splat(&self, ty: &str, value: &str) -> String;
    /// Lane `i` of a vector-typed variable.
    fn vector_lane(&self, var: &str, i: u16) -> String;
    /// The function computing `f` on `d` (floats; `Abs` also on integers), without the
    /// sigmoid (printed as `1 / (1 + exp(-x))`).
    fn math_function(&self, f: Intrinsic, d: DType) -> String;
    /// `fmin`/`fmax` of floats, `min`/`max` of integers.
    fn min_max(&self, is_max: bool, d: DType) -> String;
    /// A saturating float-to-integer conversion of `x` to `to`, if the dialect has one.
    fn saturating_cast(&self, to: &str, x: &str) -> Option<String>;

    /// The first line of a kernel (up to and including `{`), from the printed attribute
    /// of [`Dialect::work_group_size_attr`], the name and the printed parameters.
    fn kernel_head(&self, attr: Option<&str>, name: &str, params: &[String]) -> String {
        let attr = attr.map(|a| format!(" {a}")).unwrap_or_default();
        format!("{}{attr} void {name}({}) {{", self.kernel_qualifier(), params.join(", "))
    }
    /// A global buffer parameter the kernel only reads (the default: as any other).
    fn read_only_param(&self, elem: &str, name: &str) -> String {
        self.global_param(elem, name)
    }
    /// Whether vector types have C operators (`+`, `*`, ...); without them, vector values
    /// are only loaded and stored, and arithmetic is printed lane by lane.
    fn vector_operators(&self) -> bool {
        true
    }
    /// Whether a vector load or store needs its address aligned to the vector's size
    /// (CUDA's `float4` accesses do; OpenCL's `vloadN` does not). Where the printer
    /// cannot prove the alignment, it accesses lane by lane.
    fn vector_access_aligned(&self) -> bool {
        false
    }
    /// A declaration of a shared or local array (without `;`), aligned for the widest
    /// vector access where the dialect needs that.
    fn array_decl(&self, qualifier: Option<&str>, ty: &str, name: &str, n: i64) -> String {
        match qualifier {
            Some(q) => format!("{q} {ty} {name}[{n}]"),
            None => format!("{ty} {name}[{n}]"),
        }
    }
    /// Whether f16 and bf16 values are computed as `float`, stored as 16-bit patterns and
    /// rounded after every operation (a dialect without native half types); the program
    /// then needs the conversion helpers of [`HALF_HELPERS`].
    fn half_as_float(&self) -> bool {
        false
    }
    /// A float infinity or NaN of type `d`; `None` prints `INFINITY` / `NAN`.
    fn special_float(&self, _value: f64, _d: DType) -> Option<String> {
        None
    }
    /// The lanes of the calling warp that take part in a warp shuffle (all threads of the
    /// block reach a warp reduction, so these are the warp's existing lanes), given the
    /// block's thread count when it is a constant; `None` when the dialect has no warp
    /// shuffles.
    fn warp_mask(&self, _block_threads: Option<i64>) -> Option<String> {
        None
    }
    /// `value` (of type `ty`) from the lane whose index differs from the caller's by the
    /// bits of `lane_mask`, within aligned groups of `width` lanes.
    fn warp_shuffle_xor(&self, _mask: &str, _value: &str, _lane_mask: u32, _width: u32) -> Option<String> {
        None
    }
    /// The functions that checked values (`Expr::Check`) call, in this dialect:
    /// `tvm_check_index(i, n, site, fault)` and `tvm_check_divisor(d, site, fault)` on
    /// `long long` values. A kernel that checks values takes one more parameter, last,
    /// `int* tvm_fault` (a buffer of 6 `int`s, zeroed before the launch). The first failing
    /// check of the launch stores its site plus one in `tvm_fault[0]` (an atomic
    /// compare-and-swap from 0), then the failing value and the extent as two `long long`s
    /// at `tvm_fault + 2` and `tvm_fault + 4`; later failures change nothing. A failed
    /// index check gives 0, a failed divisor check 1, so nothing is read outside a buffer
    /// and no division traps. The host reads the buffer after the launch and returns the
    /// site's error.
    fn check_helpers(&self) -> String;
    /// The suffix of a 64-bit integer literal: `L` (OpenCL's `long` is 64-bit) or `LL`
    /// (C++'s `long long`, so that overloads such as `min(long long, long long)` match).
    fn int64_suffix(&self) -> &'static str {
        "L"
    }
    /// Whether index arithmetic (`i64` in TIR) is printed as 32-bit `int` in kernels
    /// where every index value provably fits (see [`crate::arith::index_fits_i32`]).
    fn narrow_indices(&self) -> bool {
        false
    }
}

/// Conversions between `float` and the bit patterns of f16 and bf16 (stored as
/// `unsigned short`), for dialects that compute in `float` ([`Dialect::half_as_float`]).
/// Round to nearest even, NaN kept (quietened), without any header: PTX `cvt` for f16,
/// integer arithmetic for bf16 (whose `cvt` needs sm_80).
pub const HALF_HELPERS: &str = "\
static __device__ __forceinline__ float tvm_f16_to_f32(unsigned short h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }
static __device__ __forceinline__ unsigned short tvm_f32_to_f16(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }
static __device__ __forceinline__ float tvm_round_f16(float f) { return tvm_f16_to_f32(tvm_f32_to_f16(f)); }
static __device__ __forceinline__ float tvm_bf16_to_f32(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
static __device__ __forceinline__ unsigned short tvm_f32_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static __device__ __forceinline__ float tvm_round_bf16(float f) { return tvm_bf16_to_f32(tvm_f32_to_bf16(f)); }
";

/// Identifiers no variable may take.
const RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "bool",
    "half",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "kernel",
    "global",
    "local",
    "constant",
    "private",
    "read_only",
    "write_only",
    "read_write",
    "true",
    "false",
    "min",
    "max",
    "exp",
    "log",
    "sqrt",
    "pow",
    "select",
    "abs",
    "sin",
    "cos",
    "tanh",
    "erf",
    "floor",
    "ceil",
    "fma",
    "fmin",
    "fmax",
    "fabs",
    "rsqrt",
    "barrier",
    "vector",
    "image1d_t",
    "image2d_t",
    "image3d_t",
    "sampler_t",
    "event_t",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "this",
    "new",
    "delete",
    "class",
    "template",
    "typename",
    "namespace",
    "using",
    "operator",
    "INFINITY",
    "NAN",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "asm",
    "float2",
    "float4",
    "double2",
    "int2",
    "int4",
    "longlong2",
    "signed",
    "llabs",
    "fminf",
    "fmaxf",
    "and",
    "or",
    "not",
    "xor",
    "bitand",
    "bitor",
    "compl",
    "and_eq",
    "or_eq",
    "xor_eq",
    "not_eq",
    "nullptr",
    "constexpr",
    "try",
    "catch",
    "throw",
    "friend",
    "virtual",
    "protected",
    "public",
    "mutable",
    "explicit",
    "uint2",
    "uint4",
    "int3",
    "float3",
    "double4",
    "longlong4",
    "ulonglong2",
    "dim3",
    "fabsf",
    "expf",
    "logf",
    "sqrtf",
    "tanhf",
    "erff",
    "fmod",
    "fmodf",
    "rsqrtf",
    "fmaf",
    "powf",
    "sinf",
    "cosf",
    "floorf",
    "ceilf",
];

/// C's (and CUDA's and OpenCL's) own names: the words above, the compilers' `__...`,
/// OpenCL's builtin families and the printer's helpers.
static C_RESERVED: Reserved = Reserved { words: RESERVED, prefixes: &["__", "get_", "convert_", "make_", "tvm_"] };

/// Which optional language features the printed code uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Uses {
    pub f64: bool,
    pub f16: bool,
    pub bf16: bool,
    /// `Expr::Check`s: the program needs [`Dialect::check_helpers`].
    pub checks: bool,
}

/// Prints kernels in one dialect, recording which features they need.
pub struct CPrinter<'d, D: Dialect + ?Sized> {
    pub dialect: &'d D,
    pub uses: Uses,
    /// The current kernel's identifiers (a kernel's names start afresh).
    names: Names,
    out: String,
    indent: usize,
    /// Index arithmetic of the current kernel is printed as `int` (see
    /// [`Dialect::narrow_indices`]).
    index32: bool,
    /// Largest known divisors of the `let`-bound integer variables in scope, for the
    /// alignment of vector accesses.
    divisors: HashMap<VarId, i64>,
    /// The current kernel's threads per block, when constant.
    block_threads: Option<i64>,
    /// The name of the current kernel's fault buffer parameter, if it checks values.
    fault: Option<String>,
    /// Vector loads of the statement being printed, hoisted into variables (for dialects
    /// without vector operators): (buffer, printed base, lanes) → variable.
    hoisted: HashMap<(crate::tir::BufferId, String, u16), String>,
    /// Lines of the current kernel's text written so far.
    line_no: usize,
    /// The line ranges (in the current kernel's text) of its loops and stores.
    spans: Vec<LineSpan>,
}

fn unsupported(what: impl Into<String>) -> CodegenError {
    CodegenError::Unsupported { what: what.into() }
}

type R<T> = Result<T, CodegenError>;

impl<'d, D: Dialect + ?Sized> CPrinter<'d, D> {
    pub fn new(dialect: &'d D) -> Self {
        CPrinter {
            dialect,
            uses: Uses::default(),
            names: Names::new(&C_RESERVED),
            out: String::new(),
            indent: 0,
            index32: false,
            block_threads: None,
            fault: None,
            divisors: HashMap::new(),
            hoisted: HashMap::new(),
            line_no: 0,
            spans: Vec::new(),
        }
    }

    /// The spelling of a scalar type (bool buffers and parameters use `uchar` instead:
    /// see [`CPrinter::storage_type`]).
    pub fn type_name(&mut self, d: DType) -> R<String> {
        let e = d.element();
        if e.kind == ScalarKind::Float && e.bits == 64 {
            self.uses.f64 = true;
        }
        if e.kind == ScalarKind::Float && e.bits == 16 {
            self.uses.f16 = true;
        }
        if e.kind == ScalarKind::BFloat {
            self.uses.bf16 = true;
        }
        if self.index32 && e == DType::I64 && d.lanes == 1 {
            return Ok("int".into());
        }
        if is_half(e) && self.dialect.half_as_float() {
            if d.lanes > 1 {
                return Err(unsupported(format!("vectors of type {d}")));
            }
            return Ok("float".into());
        }
        if d.lanes > 1 {
            return self.dialect.vector_type(e, d.lanes).ok_or_else(|| unsupported(format!("vectors of type {d}")));
        }
        self.dialect.scalar_type(e).ok_or_else(|| unsupported(format!("the type {d}")))
    }

    /// The element type of memory (buffers, parameters): `bool` is stored as one byte.
    pub fn storage_type(&mut self, d: DType) -> R<String> {
        if d.is_bool() {
            self.type_name(DType::U8)
        } else if is_half(d.element()) && self.dialect.half_as_float() {
            self.type_name(d.element())?; // records the use
            Ok("unsigned short".into())
        } else if d.element() == DType::I64 && self.index32 {
            Ok("long long".into()) // never reached: narrowed kernels hold no i64 data
        } else {
            self.type_name(d.element())
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

    /// The line ranges of the loops and stores of the kernel printed last, in its text.
    pub fn kernel_spans(&self) -> &[LineSpan] {
        &self.spans
    }

    /// Prints one kernel and returns its text.
    pub fn kernel(&mut self, k: &Kernel) -> R<String> {
        self.names = Names::new(&C_RESERVED);
        self.out.clear();
        self.line_no = 0;
        self.spans.clear();
        self.indent = 0;
        self.divisors.clear();
        self.hoisted.clear();
        self.index32 = self.dialect.narrow_indices() && index_fits_i32(k);
        let written = written_buffers(&k.body);
        let mut params = Vec::new();
        let mut prologue = Vec::new();
        for b in &k.buffer_args {
            let n = self.names.bind_buffer(b);
            let t = self.storage_type(b.dtype())?;
            params.push(if written.contains(&b.id()) {
                self.dialect.global_param(&t, &n)
            } else {
                self.dialect.read_only_param(&t, &n)
            });
        }
        for v in &k.scalar_args {
            if is_half(v.dtype()) && self.dialect.half_as_float() {
                let bits = self.names.fresh(&format!("{}_bits", v.name()));
                let n = self.names.bind_var(v);
                params.push(format!("unsigned short {bits}"));
                prologue.push(format!("float {n} = {}({bits});", half_fn(v.dtype(), "to_f32")));
                self.type_name(v.dtype())?;
                continue;
            }
            let n = self.names.bind_var(v);
            let t = self.storage_type(v.dtype())?;
            params.push(format!("{t} {n}"));
        }
        // The fault buffer (see `CHECK_HELPERS_DOC`), last, where the kernel checks values.
        self.fault = None;
        if contains_check(&k.body) {
            self.uses.checks = true;
            let n = self.names.fresh("tvm_fault");
            params.push(self.dialect.global_param("int", &n));
            self.fault = Some(n);
        }
        let attr = match (k.block[0].as_int(), k.block[1].as_int(), k.block[2].as_int()) {
            (Some(x), Some(y), Some(z)) => self.dialect.work_group_size_attr([x, y, z]),
            _ => None,
        };
        self.block_threads = k.block.iter().try_fold(1i64, |n, e| e.as_int().and_then(|v| n.checked_mul(v)));
        let head = self.dialect.kernel_head(attr.as_deref(), &k.name, &params);
        self.line(&head);
        self.indent += 1;
        for l in prologue {
            self.line(&l);
        }
        for (tag, v) in &k.thread_vars {
            let n = self.names.bind_var(v);
            let t = self.type_name(v.dtype())?;
            let idx = self.dialect.thread_index(*tag);
            self.spans.push(LineSpan { node: NodeRef::Bind(*tag), first: self.line_no, last: self.line_no });
            self.line(&format!("{t} {n} = ({t})({idx});"));
        }
        // Shared arrays live at kernel scope.
        for (b, extent) in collect_shared(&k.body) {
            let n = extent
                .as_int()
                .ok_or_else(|| unsupported(format!("shared allocation `{}` of non-constant size", b.name())))?;
            let name = self.names.bind_buffer(&b);
            let t = self.storage_type(b.dtype())?;
            let q = self.dialect.shared_qualifier();
            let decl = self.dialect.array_decl(Some(q), &t, &name, n.max(1));
            self.line(&format!("{decl};"));
        }
        self.stmt(&k.body)?;
        self.indent -= 1;
        self.line("}");
        Ok(std::mem::take(&mut self.out))
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
                let t = self.type_name(var.dtype())?;
                let lo = self.expr(min)?;
                let hi =
                    if min.is_const_int(0) { self.expr(extent)? } else { format!("({lo} + {})", self.expr(extent)?) };
                let n = self.names.bind_var(var);
                let first = self.line_no;
                self.line(&format!("for ({t} {n} = {lo}; {n} < {hi}; ++{n}) {{"));
                self.block(body)?;
                self.spans.push(LineSpan { node: NodeRef::Loop(var.id()), first, last: self.line_no - 1 });
            }
            Stmt::ThreadBinding { tag, .. } => {
                return Err(unsupported(format!("a thread binding ({}) inside a kernel", tag.name())))
            }
            Stmt::If { cond, then, otherwise } => {
                let c = self.expr(cond)?;
                let c = if fully_parenthesized(&c) { c } else { format!("({c})") };
                self.line(&format!("if {c} {{"));
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
                let t = self.type_name(var.dtype())?;
                self.hoist_vector_loads(value)?;
                let v = self.expr(value)?;
                self.hoisted.clear();
                if var.dtype().is_integer() && var.dtype().lanes == 1 {
                    let d = known_divisor(value, &self.divisors);
                    self.divisors.insert(var.id(), d);
                }
                let n = self.names.bind_var(var);
                self.line(&format!("{t} {n} = {v};"));
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
                    Scope::Shared => {} // declared at kernel scope
                    Scope::Local => {
                        let n = extent.as_int().ok_or_else(|| {
                            unsupported(format!("local allocation `{}` of non-constant size", buffer.name()))
                        })?;
                        let t = self.storage_type(buffer.dtype())?;
                        let name = self.names.bind_buffer(buffer);
                        let decl = self.dialect.array_decl(None, &t, &name, n.max(1));
                        self.line(&format!("{decl};"));
                    }
                    Scope::Global => {
                        return Err(unsupported(format!("global allocation `{}` inside a kernel", buffer.name())))
                    }
                }
                self.stmt(body)?;
            }
            Stmt::Realize { .. } => return Err(unsupported("an unflattened `Realize` in a kernel")),
            Stmt::Barrier => {
                let b = self.dialect.barrier();
                self.line(&format!("{b};"));
            }
            Stmt::WarpReduce { op, buffer, width } => self.warp_reduce(*op, buffer, *width)?,
            Stmt::Launch { .. } => return Err(unsupported("a kernel launch inside a kernel")),
        }
        Ok(())
    }

    /// A butterfly of `log2(width)` shuffles: after step `k` every lane holds the
    /// combination of its aligned group of `2^(k+1)` lanes, so at the end every lane of
    /// each group of `width` holds the group's result.
    fn warp_reduce(&mut self, op: crate::tir::ReduceOp, buffer: &Buffer, width: u32) -> R<()> {
        let Some(mask) = self.dialect.warp_mask(self.block_threads) else {
            return Err(unsupported("warp reductions"));
        };
        let d = buffer.dtype().element();
        let t = self.type_name(d)?;
        self.line("{");
        self.indent += 1;
        let m = self.names.fresh("warp_mask");
        self.line(&format!("unsigned int {m} = {mask};"));
        let mut lane_mask = width / 2;
        while lane_mask >= 1 {
            let own = Expr::load(buffer, vec![Expr::int(0)]);
            let v = self.expr(&own)?;
            let other = Var::new("warp_shfl", d);
            let n = self.names.bind_var(&other);
            let shfl = self
                .dialect
                .warp_shuffle_xor(&m, &v, lane_mask, width)
                .ok_or_else(|| unsupported(format!("warp shuffles of {d}")))?;
            self.line(&format!("{t} {n} = {shfl};"));
            self.store(buffer, &[Expr::int(0)], &op.combine(own, Expr::var(&other)))?;
            lane_mask /= 2;
        }
        self.indent -= 1;
        self.line("}");
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

    fn store(&mut self, buffer: &Buffer, indices: &[Expr], value: &Expr) -> R<()> {
        let [index] = indices else {
            return Err(unsupported(format!("a multi-dimensional store to `{}`", buffer.name())));
        };
        let name = self.buffer_name(buffer)?;
        let lanes = index.dtype().lanes;
        let half = is_half(buffer.dtype()) && self.dialect.half_as_float();
        self.hoist_vector_loads(value)?;
        if lanes == 1 {
            let i = self.expr(index)?;
            let mut v = self.expr(value)?;
            if half {
                v = format!("{}({v})", half_fn(buffer.dtype(), "from_f32"));
            }
            self.line(&format!("{name}[{i}] = {v};"));
            self.hoisted.clear();
            return Ok(());
        }
        // A contiguous vector store.
        if let Expr::Ramp { base, stride, .. } = index {
            if stride.is_const_int(1)
                && !buffer.dtype().is_bool()
                && !half
                && self.vector_access_ok(buffer, base, lanes)
            {
                let b = self.expr(base)?;
                let v = self.vector_expr(value)?;
                let ty = self.type_name(value.dtype())?;
                if let Some(s) = self.dialect.vector_store(&ty, lanes, &v, &name, &b) {
                    self.line(&format!("{s};"));
                    self.hoisted.clear();
                    return Ok(());
                }
            }
        }
        // Lane by lane: every lane is computed before any is written.
        let t = if half { "float".to_string() } else { self.storage_type(buffer.dtype())? };
        self.line("{");
        self.indent += 1;
        let mut tmps = Vec::new();
        for l in 0..lanes {
            let v = self.lane(value, l)?;
            let tmp = self.names.fresh(&format!("{}_lane{l}", buffer.name()));
            self.line(&format!("{t} {tmp} = {v};"));
            tmps.push(tmp);
        }
        for (l, tmp) in tmps.iter().enumerate() {
            let i = self.lane(index, l as u16)?;
            let v = if half { format!("{}({tmp})", half_fn(buffer.dtype(), "from_f32")) } else { tmp.clone() };
            self.line(&format!("{name}[{i}] = {v};"));
        }
        self.indent -= 1;
        self.line("}");
        self.hoisted.clear();
        Ok(())
    }

    fn vector_ok(&self, d: DType) -> bool {
        !d.is_bool()
            && !(is_half(d.element()) && self.dialect.half_as_float())
            && self.dialect.vector_type(d.element(), d.lanes).is_some()
    }

    /// Whether `lanes` elements of `buffer` from `base` may be accessed as one vector: a
    /// vector type exists, and where the dialect needs it, `base` is provably a multiple
    /// of `lanes` (buffers start aligned: the runtime's allocations, and arrays declared
    /// through [`Dialect::array_decl`]).
    fn vector_access_ok(&self, buffer: &Buffer, base: &Expr, lanes: u16) -> bool {
        self.vector_ok(buffer.dtype().element().with_lanes(lanes))
            && (!self.dialect.vector_access_aligned() || known_divisor(base, &self.divisors) % lanes as i64 == 0)
    }

    /// For dialects without vector operators: each contiguous, aligned vector load of
    /// `e` becomes a variable of the vector type, printed before the statement; lanes of
    /// the load then read the variable's components.
    fn hoist_vector_loads(&mut self, e: &Expr) -> R<()> {
        if self.dialect.vector_operators() || e.dtype().lanes == 1 && !contains_vector(e) {
            return Ok(());
        }
        let mut loads = Vec::new();
        collect_vector_loads(e, &mut loads);
        for (buffer, base, lanes) in loads {
            if !self.vector_access_ok(&buffer, &base, lanes) || buffer.dtype().is_bool() {
                continue;
            }
            let b = self.expr(&base)?;
            let key = (buffer.id(), b.clone(), lanes);
            if self.hoisted.contains_key(&key) {
                continue;
            }
            let ty = self.type_name(buffer.dtype().element().with_lanes(lanes))?;
            let name = self.buffer_name(&buffer)?;
            let Some(load) = self.dialect.vector_load(&ty, lanes, &name, &b) else { continue };
            let tmp = self.names.fresh(&format!("{}_v", buffer.name()));
            self.line(&format!("{ty} {tmp} = {load};"));
            self.hoisted.insert(key, tmp);
        }
        Ok(())
    }

    /// A scalar expression, or a vector one in the dialect's vector types.
    pub fn expr(&mut self, e: &Expr) -> R<String> {
        if e.dtype().lanes > 1 {
            return self.vector_expr(e);
        }
        self.scalar(e, None)
    }

    /// A vector expression: native vector operations where the dialect has them, else
    /// built lane by lane.
    fn vector_expr(&mut self, e: &Expr) -> R<String> {
        let d = e.dtype();
        if !self.vector_ok(d) {
            return Err(unsupported(format!("a vector of type {d} as a value")));
        }
        let ty = self.type_name(d)?;
        let ops = self.dialect.vector_operators();
        let native = match e {
            Expr::Load { buffer, indices } if indices.len() == 1 => match &indices[0] {
                Expr::Ramp { base, stride, lanes } if stride.is_const_int(1) => {
                    let b = self.expr(base)?;
                    match self.hoisted.get(&(buffer.id(), b.clone(), *lanes)) {
                        Some(v) => Some(v.clone()),
                        None if self.vector_access_ok(buffer, base, *lanes) => {
                            let name = self.buffer_name(buffer)?;
                            self.dialect.vector_load(&ty, *lanes, &name, &b)
                        }
                        None => None,
                    }
                }
                _ => None,
            },
            Expr::Broadcast { value, .. } => {
                let v = self.expr(value)?;
                Some(self.dialect.vector_splat(&ty, &v))
            }
            Expr::Binary { op, a, b }
                if ops
                    && !(d.is_float() && *op == BinOp::Mod)
                    && !(matches!(op, BinOp::Div | BinOp::Mod) && may_be_minus_one(d.element(), b)) =>
            {
                let x = self.vector_expr(a)?;
                let y = self.vector_expr(b)?;
                Some(match op {
                    BinOp::Min | BinOp::Max => {
                        format!("{}({x}, {y})", self.dialect.min_max(*op == BinOp::Max, d.element()))
                    }
                    op => format!("({x} {} {y})", op.symbol()),
                })
            }
            Expr::Neg(a) if ops => Some(format!("(-{})", self.vector_expr(a)?)),
            Expr::Call { func, args } if ops && d.is_float() => {
                let mut xs = Vec::new();
                for a in args {
                    xs.push(self.vector_expr(a)?);
                }
                Some(self.call(*func, d.element(), &xs)?)
            }
            Expr::Var(v) => Some(self.var_name(v)?),
            _ => None,
        };
        if let Some(s) = native {
            return Ok(s);
        }
        let mut lanes = Vec::new();
        for l in 0..d.lanes {
            lanes.push(self.lane(e, l)?);
        }
        Ok(self.dialect.vector_make(&ty, &lanes))
    }

    /// Lane `l` of `e` as a scalar expression (scalars are the same in every lane).
    fn lane(&mut self, e: &Expr, l: u16) -> R<String> {
        self.scalar(e, Some(l))
    }

    fn var_name(&self, v: &Var) -> R<String> {
        self.names
            .vars
            .get(&v.id())
            .cloned()
            .ok_or_else(|| unsupported(format!("variable `{}` used out of scope", v.name())))
    }

    fn literal_float(&mut self, value: f64, d: DType) -> R<String> {
        self.type_name(d)?;
        if let Some(s) = (!value.is_finite()).then(|| self.dialect.special_float(value, d)).flatten() {
            return Ok(s);
        }
        if is_half(d) && self.dialect.half_as_float() {
            // The value the 16-bit type holds, as a float constant.
            let v = if d.kind == ScalarKind::BFloat {
                tvm_runtime::bf16::from_f64(value).to_f32()
            } else {
                tvm_runtime::f16::from_f64(value).to_f32()
            };
            return self.literal_float(v as f64, DType::F32);
        }
        if value.is_nan() {
            return Ok("NAN".into());
        }
        if value.is_infinite() {
            return Ok(if value > 0.0 { "INFINITY".into() } else { "(-INFINITY)".into() });
        }
        let (text, neg) = match d.bits {
            64 => (format!("{:?}", value.abs()), value.is_sign_negative()),
            32 => (format!("{:?}f", (value as f32).abs()), value.is_sign_negative()),
            16 => {
                let t = self.type_name(d)?;
                return Ok(format!("(({t})({:?}f))", value as f32));
            }
            _ => return Err(unsupported(format!("float constants of type {d}"))),
        };
        Ok(if neg { format!("(-{text})") } else { text })
    }

    fn literal_int(&mut self, value: i64, d: DType) -> R<String> {
        if self.index32 && d == DType::I64 {
            // Proved to fit by `index_fits_i32`.
            return self.literal_int(value, DType::I32);
        }
        let t = self.type_name(d)?;
        Ok(match (d.kind, d.bits) {
            (ScalarKind::UInt, 64) => format!("{}U{}", value as u64, self.dialect.int64_suffix()),
            (ScalarKind::Int, 64) if value == i64::MIN => {
                let l = self.dialect.int64_suffix();
                format!("(-9223372036854775807{l} - 1{l})")
            }
            (ScalarKind::Int, 64) if value < 0 => format!("({value}{})", self.dialect.int64_suffix()),
            (ScalarKind::Int, 64) => format!("{value}{}", self.dialect.int64_suffix()),
            (ScalarKind::Int, 32) if value == i32::MIN as i64 => "(-2147483647 - 1)".into(),
            (ScalarKind::Int, 32) if value < 0 => format!("({value})"),
            (ScalarKind::Int, 32) => format!("{value}"),
            (ScalarKind::UInt, 32) => format!("{}U", value as u32),
            _ => format!("(({t})({value}))"),
        })
    }

    /// A call of an intrinsic on printed arguments of element type `d`.
    fn call(&mut self, f: Intrinsic, d: DType, args: &[String]) -> R<String> {
        if f == Intrinsic::Sigmoid {
            let one = if d.is_float() { self.literal_float(1.0, d)? } else { "1".into() };
            let exp = self.dialect.math_function(Intrinsic::Exp, d);
            return Ok(format!("({one} / ({one} + {exp}(-({}))))", args[0]));
        }
        if !d.is_float() && f != Intrinsic::Abs {
            return Err(unsupported(format!("`{}` of type {d}", f.name())));
        }
        let name = self.dialect.math_function(f, d);
        let call = format!("{name}({})", args.join(", "));
        if f == Intrinsic::Abs && d.is_int() {
            // OpenCL/C `abs` of a signed integer returns the unsigned type.
            let t = self.type_name(d)?;
            return Ok(format!("(({t})({call}))"));
        }
        if f == Intrinsic::Abs && d.is_uint() {
            return Ok(args[0].clone());
        }
        Ok(call)
    }

    /// A scalar expression; with `lane`, vector sub-expressions give that lane. In a
    /// dialect that computes f16 and bf16 in `float`, an operation whose result has such
    /// a type is rounded to it, so every operation rounds once, as in native half
    /// arithmetic (`float` has more than twice the precision of either, so rounding its
    /// correctly rounded result again gives the correctly rounded half result).
    fn scalar(&mut self, e: &Expr, lane: Option<u16>) -> R<String> {
        let s = self.scalar_unrounded(e, lane)?;
        let d = e.dtype().element();
        if is_half(d)
            && self.dialect.half_as_float()
            && matches!(
                e,
                Expr::Binary { op: BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod, .. }
                    | Expr::Call { .. }
                    | Expr::Cast { .. }
            )
        {
            return Ok(format!("{}({s})", half_fn(d, "round")));
        }
        Ok(s)
    }

    fn scalar_unrounded(&mut self, e: &Expr, lane: Option<u16>) -> R<String> {
        let lanes = e.dtype().lanes;
        let l = if lanes > 1 {
            match lane {
                Some(l) => l,
                None => return self.vector_expr(e),
            }
        } else {
            0
        };
        Ok(match e {
            Expr::Int { value, dtype } => self.literal_int(*value, *dtype)?,
            Expr::Float { value, dtype } => self.literal_float(*value, *dtype)?,
            Expr::Bool(b) => (if *b { "1" } else { "0" }).into(),
            Expr::Var(v) => {
                let n = self.var_name(v)?;
                if lanes > 1 {
                    self.dialect.vector_lane(&n, l)
                } else {
                    n
                }
            }
            Expr::Binary { op, a, b } => {
                let d = a.dtype().element();
                let x = self.scalar(a, lane)?;
                let y = self.scalar(b, lane)?;
                match op {
                    BinOp::Min | BinOp::Max => format!("{}({x}, {y})", self.dialect.min_max(*op == BinOp::Max, d)),
                    BinOp::Mod if d.is_float() => format!("fmod({x}, {y})"),
                    // `MIN / -1` wraps to `MIN` and `MIN % -1` is 0 (C leaves both
                    // undefined), as on every backend.
                    BinOp::Div | BinOp::Mod if may_be_minus_one(d, b) => {
                        let t = self.type_name(d)?;
                        let u = self.type_name(DType::scalar(ScalarKind::UInt, d.bits))?;
                        if *op == BinOp::Div {
                            format!("(({y}) == -1 ? ({t})(({u})0 - ({u})({x})) : ({x}) / ({y}))")
                        } else {
                            format!("(({y}) == -1 ? ({t})0 : ({x}) % ({y}))")
                        }
                    }
                    op => format!("({x} {} {y})", op.symbol()),
                }
            }
            Expr::Cmp { op, a, b } => {
                let x = self.scalar(a, lane)?;
                let y = self.scalar(b, lane)?;
                format!("({x} {} {y})", op.symbol())
            }
            Expr::And(a, b) => format!("({} && {})", self.scalar(a, lane)?, self.scalar(b, lane)?),
            Expr::Or(a, b) => format!("({} || {})", self.scalar(a, lane)?, self.scalar(b, lane)?),
            Expr::Not(a) => format!("(!{})", self.scalar(a, lane)?),
            Expr::Neg(a) => format!("(-{})", self.scalar(a, lane)?),
            Expr::Select { cond, then, otherwise } => {
                let c = self.scalar(cond, lane)?;
                let t = self.scalar(then, lane)?;
                let o = self.scalar(otherwise, lane)?;
                format!("({c} ? {t} : {o})")
            }
            Expr::Cast { dtype, value } => {
                let from = value.dtype().element();
                let to = dtype.element();
                let x = self.scalar(value, lane)?;
                if to.is_bool() {
                    let zero = if from.is_float() { self.literal_float(0.0, from)? } else { "0".into() };
                    format!("({x} != {zero})")
                } else {
                    let t = self.type_name(to)?;
                    if from.is_float() && to.is_integer() {
                        match self.dialect.saturating_cast(&t, &x) {
                            Some(s) => s,
                            None => format!("(({t})({x}))"),
                        }
                    } else {
                        format!("(({t})({x}))")
                    }
                }
            }
            Expr::Call { func, args } => {
                let d = args[0].dtype().element();
                let mut xs = Vec::new();
                for a in args {
                    xs.push(self.scalar(a, lane)?);
                }
                self.call(*func, d, &xs)?
            }
            Expr::Load { buffer, indices } => {
                let [index] = indices.as_slice() else {
                    return Err(unsupported(format!("a multi-dimensional load of `{}`", buffer.name())));
                };
                if let (Expr::Ramp { base, stride, lanes: n }, Some(l)) = (index, lane) {
                    if stride.is_const_int(1) && !self.hoisted.is_empty() {
                        let b = self.expr(base)?;
                        if let Some(v) = self.hoisted.get(&(buffer.id(), b, *n)) {
                            return Ok(self.dialect.vector_lane(&v.clone(), l));
                        }
                    }
                }
                let name = self.buffer_name(buffer)?;
                let i = self.scalar(index, lane)?;
                if is_half(buffer.dtype()) && self.dialect.half_as_float() {
                    format!("{}({name}[{i}])", half_fn(buffer.dtype(), "to_f32"))
                } else {
                    format!("{name}[{i}]")
                }
            }
            Expr::Check { value, kind, site } => {
                let t = self.type_name(value.dtype().element())?;
                let x = self.scalar(value, lane)?;
                let f = self.fault.clone().ok_or_else(|| unsupported("a check outside a kernel"))?;
                let l = self.dialect.scalar_type(DType::I64).ok_or_else(|| unsupported("64-bit integers"))?;
                match kind {
                    CheckKind::Index { extent } => {
                        let n = self.scalar(extent, None)?;
                        format!("(({t})tvm_check_index(({l})({x}), ({l})({n}), {site}u, {f}))")
                    }
                    CheckKind::Divisor => format!("(({t})tvm_check_divisor(({l})({x}), {site}u, {f}))"),
                }
            }
            Expr::Ramp { base, stride, .. } => {
                let b = self.scalar(base, lane)?;
                if l == 0 {
                    b
                } else if let Some(s) = stride.as_int() {
                    let k = self.literal_int(s * l as i64, base.dtype())?;
                    format!("({b} + {k})")
                } else {
                    let s = self.scalar(stride, lane)?;
                    let k = self.literal_int(l as i64, base.dtype())?;
                    format!("({b} + {s} * {k})")
                }
            }
            Expr::Broadcast { value, .. } => self.scalar(value, lane)?,
            Expr::ProducerLoad { .. } | Expr::Reduce(_) => {
                return Err(unsupported("a tensor-expression node in lowered code"))
            }
        })
    }
}

/// Whether `s` is one parenthesized group, `(..)` whose first `(` closes at the end (so
/// `if` needs no parentheses of its own: C compilers warn about `if ((a == b))`).
fn fully_parenthesized(s: &str) -> bool {
    if !s.starts_with('(') {
        return false;
    }
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i == s.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// The shared allocations of a kernel body, in order, each once.
fn collect_shared(body: &Stmt) -> Vec<(Buffer, Expr)> {
    struct Shared(Vec<(Buffer, Expr)>);
    impl Visitor for Shared {
        fn visit_expr(&mut self, _: &Expr) {} // expressions hold no statements
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Allocate { buffer, extent, .. } = s {
                if buffer.scope() == Scope::Shared && !self.0.iter().any(|(b, _)| b == buffer) {
                    self.0.push((buffer.clone(), extent.clone()));
                }
            }
            walk_stmt(self, s)
        }
    }
    let mut v = Shared(Vec::new());
    v.visit_stmt(body);
    v.0
}

/// Appends `text` to `out` (helper for program assembly).
pub fn push_section(out: &mut String, text: &str) {
    push_section_at(out, text);
}

/// [`push_section`], returning the (0-based) line of `out` at which `text` starts.
pub fn push_section_at(out: &mut String, text: &str) -> usize {
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    let line = out.matches('\n').count();
    let _ = write!(out, "{text}");
    line
}

/// Kernel texts with their line spans put after `out` as sections, the spans moved to
/// lines of the whole program.
pub fn push_kernels(out: &mut String, kernels: Vec<(String, Vec<LineSpan>)>) -> Vec<LineSpan> {
    let mut spans = Vec::new();
    for (text, ks) in kernels {
        let at = push_section_at(out, &text);
        spans.extend(ks.into_iter().map(|s| LineSpan { first: s.first + at, last: s.last + at, ..s }));
    }
    spans
}

/// f16 or bf16 (scalar).
fn is_half(d: DType) -> bool {
    d.bits == 16 && d.is_float()
}

/// The name of a helper of [`HALF_HELPERS`]: `tvm_f16_to_f32`, `tvm_f32_to_bf16`,
/// `tvm_round_f16`, ... (`what` is `to_f32`, `from_f32` or `round`).
fn half_fn(d: DType, what: &str) -> String {
    let t = if d.kind == ScalarKind::BFloat { "bf16" } else { "f16" };
    match what {
        "to_f32" => format!("tvm_{t}_to_f32"),
        "from_f32" => format!("tvm_f32_to_{t}"),
        _ => format!("tvm_round_{t}"),
    }
}

/// Whether `e` has a vector-typed sub-expression.
fn contains_vector(e: &Expr) -> bool {
    struct V(bool);
    impl Visitor for V {
        fn visit_expr(&mut self, e: &Expr) {
            if e.dtype().lanes > 1 {
                self.0 = true;
            } else {
                walk_expr(self, e)
            }
        }
    }
    let mut v = V(false);
    v.visit_expr(e);
    v.0
}

/// The contiguous vector loads of `e` (`buffer[ramp(base, 1, lanes)]`), in order, that
/// `e` always evaluates: none under a `select` branch or the second operand of `&&` and
/// `||` (those are lazy: hoisting them could read memory the condition protects).
fn collect_vector_loads(e: &Expr, out: &mut Vec<(Buffer, Expr, u16)>) {
    struct L<'a>(&'a mut Vec<(Buffer, Expr, u16)>);
    impl Visitor for L<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            match e {
                Expr::Select { cond, .. } => return self.visit_expr(cond),
                Expr::And(a, _) | Expr::Or(a, _) => return self.visit_expr(a),
                Expr::Load { buffer, indices } => {
                    if let [Expr::Ramp { base, stride, lanes }] = indices.as_slice() {
                        if stride.is_const_int(1) {
                            self.0.push((buffer.clone(), (**base).clone(), *lanes));
                        }
                    }
                }
                _ => {}
            }
            walk_expr(self, e)
        }
    }
    L(out).visit_expr(e);
}
