//! What the generated CPU code calls: element and lane-array loads and stores (unchecked
//! only where the compiler proved the bounds), lane-wise maps, and the chunking of
//! parallel loops. Ordinary `#[inline(always)]` functions, instantiated and inlined in the
//! user's crate inside the kernel's `#[target_feature]` functions, so they cost nothing.
//!
//! The `_proof` argument of the unchecked accessors is the compiler's proof of the bounds,
//! as text; it is there for readers of the generated code (`source("cpu")`), and unused.
//!
//! These helpers are compiled with the profile of the crate that calls `compute!` (they
//! are generic or `#[inline(always)]`, so instantiated there), which may be a debug
//! profile, and their speed must not depend on it. So the unchecked accesses offset raw
//! pointers (`wrapping_add`) and read unaligned lanes through a `#[repr(packed)]` wrapper
//! rather than calling `get_unchecked`, `ptr::add` or `ptr::read_unaligned`: with debug
//! assertions on, each of those tests its precondition (a branch per access, which keeps
//! LLVM from vectorizing, and a function call per access in an unoptimized build). Loops
//! over lanes are `while` loops: unoptimized, a `for` over a range calls `Range::next`
//! once per lane.

#[cfg(feature = "rayon")]
use rayon::iter::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
#[cfg(feature = "rayon")]
use rayon::slice::ParallelSliceMut;

/// `s[i]`.
///
/// # Safety
/// With `FAST`, `0 <= i < s.len()` (the compiler proved it: see `_proof`). Without, any
/// `i`: an index out of bounds panics.
#[inline(always)]
pub unsafe fn ld<T: Copy, const FAST: bool>(s: &[T], i: i64, _proof: &'static str) -> T {
    if FAST {
        // SAFETY: the caller guarantees `0 <= i < s.len()`: the element is inside `s`.
        unsafe { *s.as_ptr().wrapping_add(i as usize) }
    } else {
        s[i as usize]
    }
}

/// `s[i] = v`.
///
/// # Safety
/// With `FAST`, `0 <= i < s.len()` (proved: see `_proof`). Without, any `i`.
#[inline(always)]
pub unsafe fn st<T, const FAST: bool>(s: &mut [T], i: i64, v: T, _proof: &'static str) {
    if FAST {
        // SAFETY: the caller guarantees `0 <= i < s.len()`: the element is inside `s`.
        unsafe { *s.as_mut_ptr().wrapping_add(i as usize) = v }
    } else {
        s[i as usize] = v
    }
}

/// `s[i..i + L]` as an array.
///
/// # Safety
/// With `FAST`, `0 <= i && i + L <= s.len()` (proved: see `_proof`). Without, any `i`.
#[inline(always)]
pub unsafe fn ldv<T: Copy + Default, const L: usize, const FAST: bool>(
    s: &[T],
    i: i64,
    _proof: &'static str,
) -> [T; L] {
    if FAST {
        // SAFETY: the caller guarantees the `L` elements from `i` are inside `s`.
        unsafe { read_lanes(s.as_ptr().wrapping_add(i as usize)) }
    } else {
        ldv_checked(s, i)
    }
}

/// `s[i..i + L] = v`.
///
/// # Safety
/// With `FAST`, `0 <= i && i + L <= s.len()` (proved: see `_proof`). Without, any `i`.
#[inline(always)]
pub unsafe fn stv<T: Copy, const L: usize, const FAST: bool>(s: &mut [T], i: i64, v: [T; L], _proof: &'static str) {
    if FAST {
        // SAFETY: as in `ldv`, for a write.
        unsafe { write_lanes(s.as_mut_ptr().wrapping_add(i as usize), v) }
    } else {
        stv_checked(s, i, v)
    }
}

/// The `L` elements at `p`, read as 32-byte vectors where the lane array is made of
/// whole ones (x86-64), else as an array. LLVM sees a vector load (`load <8 x float>`)
/// per 32 bytes, which it keeps as one, instead of `L` scalar loads it would re-form into
/// vectors itself: given the three overlapping rows `x[j..]`, `x[j + 1..]`, `x[j + 2..]`
/// of a 3-wide stencil as scalars, it merged them into fewer loads and shuffles and
/// spilled registers.
///
/// # Safety
/// `p` is valid for reading `L` elements (any alignment of `T`).
#[inline(always)]
unsafe fn read_lanes<T: Copy, const L: usize>(p: *const T) -> [T; L] {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__m256;
        let bytes = L * std::mem::size_of::<T>();
        if bytes % 32 == 0 && bytes > 0 {
            let mut out = std::mem::MaybeUninit::<[T; L]>::uninit();
            for c in 0..bytes / 32 {
                // SAFETY: bytes `32c..32c + 32` of the `L` elements at `p` (readable, by
                // the caller) and of `out`; `__m256` is plain data, read and written
                // unaligned, and all of `out` is written before it is read.
                unsafe {
                    let v = read_at((p as *const u8).wrapping_add(32 * c) as *const __m256);
                    write_at((out.as_mut_ptr() as *mut u8).wrapping_add(32 * c) as *mut __m256, v);
                }
            }
            // SAFETY: every byte of `out` was written above, from valid `T`s.
            return unsafe { out.assume_init() };
        }
    }
    // SAFETY: `[T; L]` has the layout of `L` consecutive `T`s; `read_at` allows any
    // alignment.
    unsafe { read_at(p as *const [T; L]) }
}

/// Writes `v` to the `L` elements at `p`, as 32-byte vectors where it is made of whole
/// ones (see [`read_lanes`]).
///
/// # Safety
/// `p` is valid for writing `L` elements (any alignment of `T`).
#[inline(always)]
unsafe fn write_lanes<T: Copy, const L: usize>(p: *mut T, v: [T; L]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__m256;
        let bytes = L * std::mem::size_of::<T>();
        if bytes % 32 == 0 && bytes > 0 {
            for c in 0..bytes / 32 {
                // SAFETY: bytes `32c..32c + 32` of `v` and of the `L` elements at `p`
                // (writable, by the caller), unaligned.
                unsafe {
                    let x = read_at((v.as_ptr() as *const u8).wrapping_add(32 * c) as *const __m256);
                    write_at((p as *mut u8).wrapping_add(32 * c) as *mut __m256, x);
                }
            }
            return;
        }
    }
    // SAFETY: as in `read_lanes`, for a write.
    unsafe { write_at(p as *mut [T; L], v) }
}

/// A `T` at any address: `#[repr(packed)]` makes its alignment 1, so reading or writing
/// its field through a raw pointer is an unaligned access (one `vmovups` for a vector),
/// and, unlike `ptr::read_unaligned`, nothing tests the pointer first.
#[repr(C, packed)]
#[derive(Clone, Copy)]
struct Unaligned<T: Copy>(T);

/// The `T` at `p`.
///
/// # Safety
/// `p` is valid for reading a `T` (any alignment).
#[inline(always)]
unsafe fn read_at<T: Copy>(p: *const T) -> T {
    // SAFETY: `Unaligned<T>` has the size and layout of `T` and alignment 1; the caller
    // guarantees the bytes are readable. The field is copied out, never referenced.
    unsafe { (*(p as *const Unaligned<T>)).0 }
}

/// Writes `v` at `p`.
///
/// # Safety
/// `p` is valid for writing a `T` (any alignment).
#[inline(always)]
unsafe fn write_at<T: Copy>(p: *mut T, v: T) {
    // SAFETY: as in `read_at`, for a write.
    unsafe { (*(p as *mut Unaligned<T>)).0 = v }
}

/// `s[i..i + L]`, bounds-checked.
#[inline(always)]
pub fn ldv_checked<T: Copy + Default, const L: usize>(s: &[T], i: i64) -> [T; L] {
    let mut v = [T::default(); L];
    v.copy_from_slice(&s[i as usize..][..L]);
    v
}

/// `s[i..i + L] = v`, bounds-checked.
#[inline(always)]
pub fn stv_checked<T: Copy, const L: usize>(s: &mut [T], i: i64, v: [T; L]) {
    s[i as usize..][..L].copy_from_slice(&v)
}

/// `f` on each lane.
#[inline(always)]
pub fn map1<A: Copy, R: Copy + Default, const L: usize>(a: [A; L], f: impl Fn(A) -> R) -> [R; L] {
    let mut r = [R::default(); L];
    let mut l = 0;
    while l < L {
        r[l] = f(a[l]);
        l += 1;
    }
    r
}

/// `f` on each pair of lanes.
#[inline(always)]
pub fn map2<A: Copy, B: Copy, R: Copy + Default, const L: usize>(
    a: [A; L],
    b: [B; L],
    f: impl Fn(A, B) -> R,
) -> [R; L] {
    let mut r = [R::default(); L];
    let mut l = 0;
    while l < L {
        r[l] = f(a[l], b[l]);
        l += 1;
    }
    r
}

/// `f` on each triple of lanes.
#[inline(always)]
pub fn map3<A: Copy, B: Copy, C: Copy, R: Copy + Default, const L: usize>(
    a: [A; L],
    b: [B; L],
    c: [C; L],
    f: impl Fn(A, B, C) -> R,
) -> [R; L] {
    let mut r = [R::default(); L];
    let mut l = 0;
    while l < L {
        r[l] = f(a[l], b[l], c[l]);
        l += 1;
    }
    r
}

/// Called at the end of the body of a loop whose body is lane-array code already: a
/// barrier that LLVM's loop vectorizer cannot widen, so it leaves the loop alone. Without
/// it, LLVM vectorizes such a loop *across its iterations* (the lane arrays of the body
/// scalarized, then re-packed 16 iterations at a time): the contiguous rows of a register
/// tile became `vgatherqps`/`vscatterqps` with a stride of one row.
///
/// On x86_64 and aarch64 the barrier is an empty `asm!` block marked `nomem`: no
/// instruction, and no memory access for other passes to order around, so the SLP
/// vectorizer (which turns the lane arrays into vector registers) and the hoisting of
/// invariant loads out of the loop still happen. Elsewhere (where `asm!` may not be
/// stable) it is one volatile read of a byte, which orders only other volatile accesses
/// but costs a load an iteration: in the inner loop of the `opt_gemm` register tile, a
/// `movzbl` next to TVM's otherwise identical instructions.
#[inline(always)]
pub fn lane_loop() {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: an empty instruction sequence: reads and writes nothing.
    unsafe {
        std::arch::asm!("", options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        static BYTE: u8 = 0;
        // SAFETY: `BYTE` is a valid, aligned, initialized `u8` for the whole program.
        unsafe {
            std::ptr::read_volatile(&BYTE);
        }
    }
}

/// A local array of the generated code aligned to 64 bytes (a cache line, one AVX-512
/// register), so that its vector rows never straddle two cache lines: an unaligned
/// 64-byte access that does costs two. Indexes like the array it holds.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct Align64<T>(pub T);

impl<T> std::ops::Deref for Align64<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Align64<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// The buffer of an allocation inside the body of a parallel loop (a row buffer of a
/// softmax), taken from a pool of the calling thread and given back to it when dropped,
/// so that the iterations of the loop do not each call the allocator (and zero the
/// buffer): on the 4096-row softmax, one `vec!` per row cost a quarter of the time,
/// in `free` and `memset`.
///
/// Its elements hold what the previous user of the buffer left (`fill` only where the
/// buffer grows): an allocation of the TIR is uninitialized, and the interpreter rejects
/// a kernel that reads an element it has not written. The pool keeps at most
/// [`SCRATCH_POOL_ENTRIES`] buffers of at most [`SCRATCH_POOL_BYTES`] each per thread;
/// larger ones are freed on drop.
pub struct Scratch<T: 'static> {
    vec: Option<Box<Vec<T>>>,
}

/// How many buffers the scratch pool of one thread keeps.
pub const SCRATCH_POOL_ENTRIES: usize = 8;
/// The largest buffer (in bytes of capacity) the scratch pool of a thread keeps.
pub const SCRATCH_POOL_BYTES: usize = 1 << 22;

/// A per-thread pool of vectors of any element type (each a `Vec<T>` behind `dyn Any`,
/// with its bytes), as [`Scratch`] and [`HostBuf`] keep them.
type Pool = std::cell::RefCell<Vec<(usize, Box<dyn std::any::Any>)>>;

thread_local! {
    static SCRATCH_POOL: Pool = const { std::cell::RefCell::new(Vec::new()) };
}

/// Takes from this thread's `pool` the oldest vector of `T`s that `fits`, if any.
/// (`try_with` / `try_borrow_mut`: a thread being torn down, or a never expected
/// reentrant call, gets none instead of a panic.)
fn pool_take<T: 'static>(
    pool: &'static std::thread::LocalKey<Pool>,
    fits: impl Fn(&Vec<T>) -> bool,
) -> Option<Box<Vec<T>>> {
    pool.try_with(|p| {
        let mut p = p.try_borrow_mut().ok()?;
        let i = p.iter().position(|(_, b)| b.downcast_ref::<Vec<T>>().is_some_and(&fits))?;
        p.remove(i).1.downcast::<Vec<T>>().ok()
    })
    .ok()
    .flatten()
}

/// Gives `vec` back to this thread's `pool`: freed if its capacity is over `max_block`
/// bytes, else kept, the oldest entries freed past `max_entries` of them or `max_total`
/// bytes in all.
fn pool_give<T: 'static>(
    pool: &'static std::thread::LocalKey<Pool>,
    vec: Box<Vec<T>>,
    max_entries: usize,
    max_block: usize,
    max_total: usize,
) {
    let bytes = vec.capacity().saturating_mul(std::mem::size_of::<T>());
    if vec.capacity() == 0 || bytes > max_block {
        return;
    }
    let _ = pool.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            while !p.is_empty() && (p.len() >= max_entries || p.iter().map(|e| e.0).sum::<usize>() + bytes > max_total)
            {
                p.remove(0);
            }
            p.push((bytes, vec));
        }
    });
}

/// A buffer of `len` elements from the calling thread's pool (see [`Scratch`]).
#[inline]
pub fn scratch<T: Copy + 'static>(len: usize, fill: T) -> Scratch<T> {
    let mut vec = pooled::<T>();
    vec.resize(len, fill);
    Scratch { vec: Some(vec) }
}

/// A vector of the calling thread's scratch pool holding `T`s (as its last user left
/// it), or a new empty one.
#[inline]
fn pooled<T: 'static>() -> Box<Vec<T>> {
    pool_take(&SCRATCH_POOL, |_| true).unwrap_or_default()
}

/// [`scratch`] for intermediate `name` of `kernel`, allocated fallibly:
/// `Err(OutOfMemory)` naming it and the byte count instead of an abort. A negative `len`
/// (an empty extent) is 0.
#[inline]
pub fn try_scratch<T: Copy + 'static>(len: i64, fill: T, name: &str, kernel: &str) -> Result<Scratch<T>, crate::Error> {
    let len = usize::try_from(len).unwrap_or(0);
    let mut vec = pooled::<T>();
    if vec.capacity() < len {
        let bytes = len as u128 * std::mem::size_of::<T>() as u128;
        let oom = |why: &str| intermediate_oom(name, kernel, bytes, why);
        if bytes > isize::MAX as u128 {
            return Err(oom("more than the address space holds"));
        }
        if crate::storage::beyond_host_memory(bytes) {
            return Err(oom(crate::storage::BEYOND_HOST_MEMORY));
        }
        vec.try_reserve_exact(len - vec.len()).map_err(|_| oom("the host allocator returned no memory"))?;
    }
    vec.resize(len, fill);
    Ok(Scratch { vec: Some(vec) })
}

impl<T: 'static> Drop for Scratch<T> {
    fn drop(&mut self) {
        if let Some(vec) = self.vec.take() {
            pool_give(&SCRATCH_POOL, vec, SCRATCH_POOL_ENTRIES, SCRATCH_POOL_BYTES, usize::MAX);
        }
    }
}

impl<T: 'static> std::ops::Deref for Scratch<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.vec.as_deref().map_or(&[], |v| v.as_slice())
    }
}

impl<T: 'static> std::ops::DerefMut for Scratch<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        self.vec.as_deref_mut().map_or(&mut [], |v| v.as_mut_slice())
    }
}

/// Unaligned loads and stores of 16, 8 and 4 f32 lanes at `p`, for the AVX-512 helpers
/// below: `_mm512_loadu_ps` and its kin read through `ptr::read_unaligned`, which tests
/// the pointer in a build with debug assertions (see the module's note).
///
/// # Safety
/// The lanes at `p` are readable (loads) or writable (stores).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn ld16(p: *const f32) -> std::arch::x86_64::__m512 {
    // SAFETY: 64 readable bytes at `p`, by the caller; `read_at` allows any alignment.
    unsafe { read_at(p as *const std::arch::x86_64::__m512) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn ld8(p: *const f32) -> std::arch::x86_64::__m256 {
    // SAFETY: as in `ld16`, 32 bytes.
    unsafe { read_at(p as *const std::arch::x86_64::__m256) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn ld4(p: *const f32) -> std::arch::x86_64::__m128 {
    // SAFETY: as in `ld16`, 16 bytes.
    unsafe { read_at(p as *const std::arch::x86_64::__m128) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn st16(p: *mut f32, v: std::arch::x86_64::__m512) {
    // SAFETY: 64 writable bytes at `p`, by the caller.
    unsafe { write_at(p as *mut std::arch::x86_64::__m512, v) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn st8(p: *mut f32, v: std::arch::x86_64::__m256) {
    // SAFETY: as in `st16`, 32 bytes.
    unsafe { write_at(p as *mut std::arch::x86_64::__m256, v) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn st4(p: *mut f32, v: std::arch::x86_64::__m128) {
    // SAFETY: as in `st16`, 16 bytes.
    unsafe { write_at(p as *mut std::arch::x86_64::__m128, v) }
}

/// Applies `$op`, an operation on 512-bit registers, to the lanes of `L`-lane arrays:
/// 16 lanes at a time, then 8 and 4 in the low lanes of one register, then one lane at a
/// time. Every AVX-512 helper below cuts its arrays into the same pieces, so LLVM can
/// split an array that one helper returns and the next one takes into those pieces and
/// keep each in a register. Cut differently (the tail of 46 lanes as 8 + 4 + 2 in one
/// helper and one masked 14 in the next), the array stayed in memory, and a 16-lane load
/// of lanes just written as 8 and 4 waited for the stores to retire.
///
/// `$out` is the `[f32; L]` written; each `$a` is an `[f32; L]` read. The upper lanes of
/// a register that holds 8, 4 or 1 of them are undefined, and `$op` works lane by lane,
/// so what it makes of them is never stored.
#[cfg(target_arch = "x86_64")]
macro_rules! lanes_avx512 {
    ($L:expr, $out:ident, [$($a:ident),+], |$($v:ident),+| $op:expr) => {{
        use std::arch::x86_64::*;
        let po = $out.as_mut_ptr();
        let mut i = 0;
        // SAFETY (each block): the lanes read and written, `i..i + width`, are within
        // the arrays, since `i + width <= L`.
        while i + 16 <= $L {
            unsafe {
                $(let $v = ld16($a.as_ptr().wrapping_add(i));)+
                st16(po.wrapping_add(i), $op);
            }
            i += 16;
        }
        if i + 8 <= $L {
            unsafe {
                $(let $v = _mm512_castps256_ps512(ld8($a.as_ptr().wrapping_add(i)));)+
                st8(po.wrapping_add(i), _mm512_castps512_ps256($op));
            }
            i += 8;
        }
        if i + 4 <= $L {
            unsafe {
                $(let $v = _mm512_castps128_ps512(ld4($a.as_ptr().wrapping_add(i)));)+
                st4(po.wrapping_add(i), _mm512_castps512_ps128($op));
            }
            i += 4;
        }
        while i < $L {
            $(let $v = _mm512_castps128_ps512(_mm_set_ss($a[i]));)+
            $out[i] = _mm_cvtss_f32(_mm512_castps512_ps128($op));
            i += 1;
        }
    }};
}

/// `e^x` on each lane, 16 lanes at a time with AVX-512: the reduction and polynomial of
/// [`crate::math::exp_f32_fma`] (the same bound, at most 1 ulp; `tests/math.rs` checks
/// it over the same inputs), with `2^k` applied by `vscalefps`, which scales with one
/// rounding and saturates to 0 and inf by itself: 14 operations per vector where the
/// lane-by-lane form, written for every architecture, needs 22 (its two exact
/// power-of-two factors for subnormal results, and the NaN select).
///
/// # Safety
/// The CPU has AVX-512F. The generated code calls it only from the instance of a function
/// compiled for, and dispatched to, the AVX-512 level.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub unsafe fn exp_f32_avx512<const L: usize>(x: [f32; L]) -> [f32; L] {
    use std::arch::x86_64::*;
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp16(x: __m512) -> __m512 {
        // max(c, x) and min(c, x) return x when it is NaN (the second operand), so NaN
        // flows through to the result.
        let xc = _mm512_min_ps(_mm512_set1_ps(89.0), _mm512_max_ps(_mm512_set1_ps(-104.0), x));
        // k = round(x · log2 e) as `exp_f32_fma` finds it: adding 1.5 · 2^23 inside the
        // FMA rounds to an integer (nearest, ties to even), subtracting it leaves k. Two
        // operations where a multiply and `vrndscaleps` (two micro-ops) were three.
        let shifter = _mm512_set1_ps(12_582_912.0);
        let k = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(std::f32::consts::LOG2_E), shifter), shifter);
        let r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693_145_75), xc);
        let r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.428_606_8e-6), r);
        let mut p = _mm512_set1_ps(1.0 / 5040.0);
        for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        _mm512_scalef_ps(p, k)
    }
    let mut out = [0f32; L];
    lanes_avx512!(L, out, [x], |v| exp16(v));
    out
}

/// The other architectures have no AVX-512 level; the generated code never calls this.
///
/// # Safety
/// None needed; `unsafe` to match the x86-64 signature.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub unsafe fn exp_f32_avx512<const L: usize>(x: [f32; L]) -> [f32; L] {
    map1(x, crate::math::exp_f32)
}

/// A software prefetch (the `prefetch` schedule primitive): asks the CPU to bring the
/// cache line holding `s[i]` into its caches ahead of use. Nothing happens when `i` lies
/// outside `s` (the generated code clamps its prefetch indices into the tensor, but an
/// empty tensor has no element to clamp to), or on architectures other than x86-64.
#[inline(always)]
pub fn prefetch<T>(s: &[T], i: i64) {
    #[cfg(target_arch = "x86_64")]
    if let Some(r) = usize::try_from(i).ok().and_then(|i| s.get(i)) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that never faults and changes no memory; the
        // pointer comes from a reference to an element of `s`. SSE is part of x86-64.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (s, i);
}

/// `a.max(b)` and `a.min(b)` (Rust's: a NaN operand yields the other one) on f32 lanes,
/// 16 at a time with AVX-512: `vmaxps`/`vminps` return their second operand when either
/// is NaN, so `op(a, b)` is right except where `b` is NaN, where a mask keeps `a`.
/// Written lane by lane, LLVM kept the same three operations in 128-bit registers (four
/// times as many for a 16-lane row max: a softmax's first pass).
///
/// # Safety
/// The CPU has AVX-512F (the generated code calls it only from the instance of a
/// function compiled for that level).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub unsafe fn max_f32_avx512<const L: usize>(a: [f32; L], b: [f32; L]) -> [f32; L] {
    minmax_avx512::<L, true>(a, b)
}

/// See [`max_f32_avx512`].
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub unsafe fn min_f32_avx512<const L: usize>(a: [f32; L], b: [f32; L]) -> [f32; L] {
    minmax_avx512::<L, false>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn minmax_avx512<const L: usize, const MAX: bool>(a: [f32; L], b: [f32; L]) -> [f32; L] {
    use std::arch::x86_64::*;
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn op16<const MAX: bool>(a: __m512, b: __m512) -> __m512 {
        // `op(a, b)` in the lanes where `b` is a number (it returns `b` when `a` is
        // NaN), `a` where `b` is NaN. The generated code passes an accumulator as `a`
        // (`m = max(m, x)`): its dependency chain is the one masked instruction.
        let num = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(b, b);
        if MAX {
            _mm512_mask_max_ps(a, num, a, b)
        } else {
            _mm512_mask_min_ps(a, num, a, b)
        }
    }
    let mut out = [0f32; L];
    lanes_avx512!(L, out, [a, b], |x, y| op16::<MAX>(x, y));
    out
}

/// `a + b`, `a - b` and `a * b` on f32 lanes, 16 at a time in 512-bit registers (the
/// rest of an `L` that 16 does not divide as `lanes_avx512` cuts it): `OP` is 0, 1 or 2.
/// Lane by lane, the SLP vectorizer re-formed an accumulation `s = s + v` whose `v` came
/// from a register (a fused loop's exponentials) as one 256-bit, one 128-bit and four
/// scalar additions, the accumulator split across them (the softmax example, 16 lanes).
///
/// # Safety
/// The CPU has AVX-512F (the generated code calls it only from the instance of a
/// function compiled for that level).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub unsafe fn arith_f32_avx512<const L: usize, const OP: u8>(a: [f32; L], b: [f32; L]) -> [f32; L] {
    const { assert!(OP < 3) };
    let mut out = [0f32; L];
    lanes_avx512!(L, out, [a, b], |x, y| match OP {
        0 => _mm512_add_ps(x, y),
        1 => _mm512_sub_ps(x, y),
        _ => _mm512_mul_ps(x, y),
    });
    out
}

/// `a * b + c` on f32 lanes, fused, for any `L`: 16 lanes at a time in 512-bit registers,
/// then 8, 4 and single lanes (`lanes_avx512`). Lane by lane,
/// LLVM vectorizes an array whose length 16 does not divide (a register tile row of 56
/// lanes) at the largest width that does, 8: twice the instructions, and a tile of such
/// rows no longer fits in the registers.
///
/// # Safety
/// The CPU has AVX-512F (the generated code calls it only from the instance of a
/// function compiled for that level).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub unsafe fn fma_f32_avx512<const L: usize>(a: [f32; L], b: [f32; L], c: [f32; L]) -> [f32; L] {
    let mut out = [0f32; L];
    lanes_avx512!(L, out, [a, b, c], |x, y, z| _mm512_fmadd_ps(x, y, z));
    out
}

/// The portable form of [`fma_f32_avx512`] (other architectures never call it).
///
/// # Safety
/// None needed; `unsafe` to match the x86-64 signature.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub unsafe fn fma_f32_avx512<const L: usize>(a: [f32; L], b: [f32; L], c: [f32; L]) -> [f32; L] {
    map3(a, b, c, |x, y, z| x.mul_add(y, z))
}

/// The portable form of [`arith_f32_avx512`] (other architectures never call it).
///
/// # Safety
/// None needed; `unsafe` to match the x86-64 signature.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub unsafe fn arith_f32_avx512<const L: usize, const OP: u8>(a: [f32; L], b: [f32; L]) -> [f32; L] {
    map2(a, b, |x, y| match OP {
        0 => x + y,
        1 => x - y,
        _ => x * y,
    })
}

/// The portable form of [`max_f32_avx512`] (other architectures never call it).
///
/// # Safety
/// None needed; `unsafe` to match the x86-64 signature.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub unsafe fn max_f32_avx512<const L: usize>(a: [f32; L], b: [f32; L]) -> [f32; L] {
    map2(a, b, f32::max)
}

/// The portable form of [`min_f32_avx512`].
///
/// # Safety
/// None needed; `unsafe` to match the x86-64 signature.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub unsafe fn min_f32_avx512<const L: usize>(a: [f32; L], b: [f32; L]) -> [f32; L] {
    map2(a, b, f32::min)
}

#[cfg(feature = "rayon")]
pub use crate::pool::{par_for, ChunksMut};

/// `n` chunks of `size` elements of `s` (at least 1), for the `n` iterations of a
/// parallel loop (the last ones shorter, then empty).
#[cfg(feature = "rayon")]
#[inline(always)]
pub fn chunks<'a, T: Send>(s: &'a mut [T], size: usize, n: usize) -> impl IndexedParallelIterator<Item = &'a mut [T]> {
    let size = size.max(1);
    let have = s.len().div_ceil(size);
    let empty = (0..n.saturating_sub(have)).into_par_iter().map(|_| <&'a mut [T]>::default());
    s.par_chunks_mut(size).chain(empty).take(n)
}

/// `s[o..]`, empty when `o` is past the end (where no iteration reaches).
#[inline(always)]
pub fn from<T>(s: &mut [T], o: i64) -> &mut [T] {
    let o = (o.max(0) as usize).min(s.len());
    &mut s[o..]
}

/// Whether `len` is the product of `dims` (all non-negative).
#[inline(always)]
pub fn len_is(len: usize, dims: &[i64]) -> bool {
    let mut n: u128 = 1;
    for &d in dims {
        if d < 0 {
            return false;
        }
        n = match n.checked_mul(d as u128) {
            Some(n) => n,
            None => return false,
        };
    }
    n == len as u128
}

/// The first failed check of one kernel run (docs/LANGUAGE.md §4: bad input is an `Err`): the
/// generated code makes one per call, lends it to every thread of the run, and turns
/// what it holds into the check site's [`Error`](crate::Error) after the run.
#[derive(Debug, Default)]
pub struct Fault {
    /// The failed site plus one; 0 while no check has failed.
    site: std::sync::atomic::AtomicU32,
    value: std::sync::atomic::AtomicI64,
    extent: std::sync::atomic::AtomicI64,
}

impl Fault {
    pub fn new() -> Fault {
        Fault::default()
    }

    /// Records a failure of check `site`, unless one was recorded before.
    #[cold]
    #[inline(never)]
    pub fn record(&self, site: u32, value: i64, extent: i64) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.site.compare_exchange(0, site.saturating_add(1), Relaxed, Relaxed).is_ok() {
            self.value.store(value, Relaxed);
            self.extent.store(extent, Relaxed);
        }
    }

    /// The recorded failure: `(site, value, extent)`. Read after the run has joined its
    /// threads (which orders their writes before this read).
    pub fn get(&self) -> Option<(u32, i64, i64)> {
        use std::sync::atomic::Ordering::Relaxed;
        match self.site.load(Relaxed) {
            0 => None,
            s => Some((s - 1, self.value.load(Relaxed), self.extent.load(Relaxed))),
        }
    }
}

/// `i` when `0 <= i < extent`; otherwise records the failure of check `site` in `fault`
/// and gives 0.
#[inline(always)]
pub fn check_index(i: i64, extent: i64, site: u32, fault: &Fault) -> i64 {
    // One unsigned comparison covers both sides (`extent` is a size, never negative).
    if (i as u64) < (extent as u64) {
        i
    } else {
        fault.record(site, i, extent);
        0
    }
}

/// An integer type that can be a checked divisor.
pub trait Divisor: Copy + PartialEq {
    const ZERO: Self;
    const ONE: Self;
}
macro_rules! divisor {
    ($($t:ty)*) => {$(
        impl Divisor for $t {
            const ZERO: $t = 0;
            const ONE: $t = 1;
        }
    )*};
}
divisor!(i8 i16 i32 i64 u8 u16 u32 u64);

/// `d` when it is not zero; otherwise records the failure of check `site` in `fault` and
/// gives 1.
#[inline(always)]
pub fn check_divisor<T: Divisor>(d: T, site: u32, fault: &Fault) -> T {
    if d != T::ZERO {
        d
    } else {
        fault.record(site, 0, 0);
        T::ONE
    }
}

/// `s[i]`, or the default value when `i` is outside `s` (a read whose index was checked,
/// with the check's fallback index in an empty tensor: the run returns an error anyway).
#[inline(always)]
pub fn ld_or_default<T: Copy + Default>(s: &[T], i: i64) -> T {
    usize::try_from(i).ok().and_then(|i| s.get(i)).copied().unwrap_or_default()
}

/// `s[i..i + L]` when that is inside `s`; otherwise elements of `s` that are (its first
/// `L`), or default values when `s` is shorter than `L` (see [`ld_or_default`]: such a
/// read follows a failed check, and its value is never used). One load either way, so
/// the lanes stay in a register.
#[inline(always)]
pub fn ldv_or_default<T: Copy + Default, const L: usize>(s: &[T], i: i64) -> [T; L] {
    if s.len() < L {
        return ldv_short(s, i);
    }
    let at = if (i as u64) <= (s.len() - L) as u64 { i as usize } else { 0 };
    // SAFETY: `at + L <= s.len()`: `i` was compared with `s.len() - L` (a negative `i` is
    // a huge `u64`), and `L <= s.len()`.
    unsafe { read_lanes(s.as_ptr().wrapping_add(at)) }
}

/// `s[i..i + L]` with the lanes outside `s` zero (default): one vector load when all `L`
/// are inside, lane by lane otherwise. For a vector select's side, whose lanes outside
/// the buffer the select does not take.
#[inline(always)]
pub fn ldv_lanes<T: Copy + Default, const L: usize>(s: &[T], i: i64) -> [T; L] {
    match usize::try_from(i) {
        Ok(at) if L <= s.len() && at <= s.len() - L => {
            // SAFETY: `at + L <= s.len()`, compared just above without overflow.
            unsafe { read_lanes(s.as_ptr().wrapping_add(at)) }
        }
        _ => ldv_lanes_cut(s, i),
    }
}

/// `[s[i], s[i + S], .., s[i + (L - 1) S]]`: where the `SPAN = (L - 1) S + 1` elements
/// from `i` are inside `s`, one load of them and a shuffle (a stride-2 pooling's windows);
/// elsewhere lane by lane, bounds-checked.
#[inline(always)]
pub fn ldv_strided<T: Copy + Default, const L: usize, const SPAN: usize, const S: usize>(s: &[T], i: i64) -> [T; L] {
    debug_assert_eq!(SPAN, (L - 1) * S + 1);
    match usize::try_from(i) {
        Ok(at) if SPAN <= s.len() && at <= s.len() - SPAN => {
            // SAFETY: `at + SPAN <= s.len()`, compared just above without overflow.
            let w: [T; SPAN] = unsafe { read_lanes(s.as_ptr().wrapping_add(at)) };
            std::array::from_fn(|l| w[l * S])
        }
        _ => std::array::from_fn(|l| s[(i + (l * S) as i64) as usize]),
    }
}

#[cold]
fn ldv_lanes_cut<T: Copy + Default, const L: usize>(s: &[T], i: i64) -> [T; L] {
    std::array::from_fn(|l| ld_or_default(s, i.wrapping_add(l as i64)))
}

#[cold]
fn ldv_short<T: Copy + Default, const L: usize>(s: &[T], i: i64) -> [T; L] {
    let mut v = [T::default(); L];
    if let Some(x) = usize::try_from(i).ok().and_then(|i| s.get(i..)).and_then(|r| r.get(..L)) {
        v.copy_from_slice(x);
    }
    v
}

/// The buffer of a CPU intermediate ([`try_vec`]): its elements start at a multiple of 64
/// bytes, as host tensors' do, so that a kernel's 16-lane loads of a row that starts a
/// cache line never straddle two. The block is a `Vec` of up to 64 bytes more than the
/// elements (so that a zero fill still comes from `calloc`, in pages the first writer
/// faults in, rather than from an aligned allocation zeroed by one thread, which the
/// matmul example's 4 MB packed copy of `b` paid on every call; `cargo bench --bench
/// peers -- matmul` measures it).
pub struct HostBuf<T: crate::Element> {
    vec: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: crate::Element + std::fmt::Debug> std::fmt::Debug for HostBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// How many blocks the intermediate pool of one thread keeps, and how many bytes in all
/// (a larger block is freed on drop; the oldest go first). A network's kernels called in
/// turn drop their intermediates in a cycle (MTCNN's detection: P-Net's three kernels and
/// the resize at every level of the pyramid, then the crops and the two other networks):
/// a pool of fewer blocks than the cycle, oldest out first, would never hold the block
/// asked for next.
pub const HOST_POOL_ENTRIES: usize = 256;
pub const HOST_POOL_BYTES: usize = 256 << 20;

thread_local! {
    /// Blocks of dropped [`HostBuf`]s, for the next intermediates of kernels called on
    /// this thread.
    static HOST_POOL: Pool = const { std::cell::RefCell::new(Vec::new()) };
}

impl<T: crate::Element> Drop for HostBuf<T> {
    /// The block goes back to this thread's pool; the oldest blocks are freed past
    /// [`HOST_POOL_ENTRIES`] blocks or [`HOST_POOL_BYTES`] bytes, and a block larger than
    /// that is freed at once.
    fn drop(&mut self) {
        let vec = Box::new(std::mem::take(&mut self.vec));
        pool_give(&HOST_POOL, vec, HOST_POOL_ENTRIES, HOST_POOL_BYTES, HOST_POOL_BYTES);
    }
}

impl<T: crate::Element> std::ops::Deref for HostBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.vec[self.start..self.start + self.len]
    }
}

impl<T: crate::Element> std::ops::DerefMut for HostBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.vec[self.start..self.start + self.len]
    }
}

/// A buffer of `n` elements for intermediate `name` of `kernel`, starting at a multiple of
/// 64 bytes; `Err(OutOfMemory)` naming it and the byte count when the memory cannot be
/// had (never an abort). A negative `n` (an empty extent) is 0.
///
/// The block of an earlier intermediate of the same size and type dropped on this thread
/// is reused, as it was left for a zero `fill` (a TIR allocation is uninitialized, as
/// [`Scratch`]'s are; the interpreter rejects a kernel that reads an element it has not
/// written; generated code always passes zero), filled otherwise, so that a
/// kernel called again does not map, fault in and zero its intermediates again (the
/// conv2d example's padded input and extended rows, 1.7 MB a call; `cargo bench --bench
/// peers -- conv2d` measures it).
/// Otherwise the elements are `fill`: a zero `fill` comes zeroed from the allocator (large
/// blocks as lazily mapped pages, as `vec![0.0; n]` does), not written.
pub fn try_vec<T: crate::Element>(n: i64, fill: T, name: &str, kernel: &str) -> Result<HostBuf<T>, crate::Error> {
    let n = usize::try_from(n).unwrap_or(0);
    let bytes = n as u128 * std::mem::size_of::<T>() as u128;
    let oom = |why: &str| intermediate_oom(name, kernel, bytes, why);
    let size = std::mem::size_of::<T>();
    // Room to move the start to a multiple of 64 bytes (none for an empty buffer).
    let pad = if n == 0 || size == 0 { 0 } else { crate::storage::ALIGN.div_ceil(size) };
    let total = n.checked_add(pad).unwrap_or(usize::MAX);
    let Ok(layout) = std::alloc::Layout::array::<T>(total) else {
        return Err(oom("more than the address space holds"));
    };
    if crate::storage::beyond_host_memory(bytes) {
        return Err(oom(crate::storage::BEYOND_HOST_MEMORY));
    }
    let zero = T::as_bytes(std::slice::from_ref(&fill)).iter().all(|&b| b == 0);
    let vec = if let Some(mut v) = pool_take(&HOST_POOL, |v: &Vec<T>| v.len() == total).map(|b| *b) {
        if !zero {
            v.fill(fill);
        }
        v
    } else if !zero || layout.size() == 0 {
        let mut v = Vec::new();
        v.try_reserve_exact(total).map_err(|_| oom("the host allocator returned no memory"))?;
        v.resize(total, fill);
        v
    } else {
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
        if p.is_null() {
            return Err(oom("the host allocator returned no memory"));
        }
        // SAFETY: `p` comes from the global allocator with `Layout::array::<T>(total)`, the
        // layout of a `Vec<T>` of capacity `total`; its elements are all-zero bytes, which
        // is a value of `T` (it is `fill`'s byte pattern, checked above).
        unsafe { Vec::from_raw_parts(p, total, total) }
    };
    // The first element at a multiple of 64 bytes: the allocator aligns to `T`, so the
    // distance is a whole number of elements, at most `pad`.
    // (Every element type's alignment is its size on the targets tested; where it is
    // smaller, as for 8-byte types on i686, the start can be off a 64-byte boundary,
    // which is slower there, never unsound.)
    let start = if pad == 0 { 0 } else { (vec.as_ptr() as usize).wrapping_neg() % crate::storage::ALIGN / size };
    Ok(HostBuf { vec, start, len: n })
}

/// The `OutOfMemory` of CPU intermediate `name` of `kernel` needing `bytes` bytes.
#[cold]
fn intermediate_oom(name: &str, kernel: &str, bytes: u128, why: &str) -> crate::Error {
    crate::Error::OutOfMemory {
        device: "cpu".into(),
        bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
        reason: format!("intermediate `{name}` of `{kernel}` needs {bytes} bytes: {why}"),
    }
}
