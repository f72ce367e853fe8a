//! Host storage of tensors, aligned to 64 bytes (a cache line and one AVX-512 register),
//! as TVM's and ONNX Runtime's host arrays are: a kernel's 16-lane loads and stores of a
//! row that starts a line then never straddle two lines. With the allocator's 16-byte
//! alignment they did on every row of a 1024-wide matrix, and `opt_gemm` without a write
//! cache (32-lane rows of `c` updated in place) paid a split load and store for each;
//! `cargo bench --bench peers -- sgemm_bn32_nocache` measures it.
//!
//! A `Vec` that is aligned already (or empty) is kept as it is, so `from_vec` and
//! `into_vec` of it copy nothing; other data is copied once into an aligned block.
//!
//! On Linux a block of [`HUGE_MIN`] bytes or more is mapped directly, at a multiple of
//! 2 MiB, and marked for transparent huge pages (`madvise(MADV_HUGEPAGE)`), as numpy
//! does for its arrays of 4 MiB and more: one TLB entry covers 512 pages' worth of a
//! row-by-row kernel's input and output. The softmax example on 4096 x 1024 f32 (16 MB
//! in, 16 MB out) reads and writes a new 4 KiB page every row, a TLB miss each on small
//! pages; `cargo bench --bench peers -- softmax` measures it. The mapping is also zeroed
//! by the kernel, page by page as first touched, where the allocator's `alloc_zeroed` at
//! 64-byte alignment writes every byte.

use crate::element::Element;
use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// `Err(OutOfMemory)` for host memory of `bytes` that could not be had.
pub(crate) fn host_oom(bytes: usize) -> crate::Error {
    let reason =
        if beyond_host_memory(bytes as u128) { BEYOND_HOST_MEMORY } else { "the host allocator returned no memory" };
    crate::Error::OutOfMemory { device: "cpu".into(), bytes, reason: reason.into() }
}

/// Why a block larger than the machine's memory is refused where Linux overcommits.
pub(crate) const BEYOND_HOST_MEMORY: &str = "more than this machine's RAM and swap together (where Linux is \
     set to overcommit, the allocator would return it and the process be killed writing it)";

/// Whether `bytes` of host memory are more than this machine could ever back: only where
/// Linux is set never to refuse an allocation (`vm.overcommit_memory = 1`, common on GPU
/// machines), more than its RAM and swap together (the bound Linux's default heuristic
/// applies itself, from `/proc/meminfo`). There the allocator returns such a block, and
/// the process is killed when a kernel writes it; this makes the request an
/// `OutOfMemory` instead. Elsewhere (Linux's default mode, other systems) the allocator
/// says so itself, and this is `false`.
pub(crate) fn beyond_host_memory(bytes: u128) -> bool {
    use std::sync::OnceLock;
    static LIMIT: OnceLock<Option<u128>> = OnceLock::new();
    let limit = LIMIT.get_or_init(|| {
        let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").ok()?;
        host_memory_limit(&mode, &std::fs::read_to_string("/proc/meminfo").ok()?)
    });
    limit.is_some_and(|l| bytes > l)
}

/// The bound [`beyond_host_memory`] applies, from the texts of
/// `/proc/sys/vm/overcommit_memory` and `/proc/meminfo`: `MemTotal` plus `SwapTotal` in
/// bytes in mode 1, else none (`None` too if the text has no `MemTotal`).
fn host_memory_limit(overcommit_mode: &str, meminfo: &str) -> Option<u128> {
    if overcommit_mode.trim() != "1" {
        return None;
    }
    let field = |name: &str| {
        meminfo.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?.trim();
            rest.strip_suffix("kB").unwrap_or(rest).trim().parse::<u128>().ok().map(|kb| kb * 1024)
        })
    };
    Some(field("MemTotal")? + field("SwapTotal").unwrap_or(0))
}

/// The alignment of host tensor data, in bytes.
pub const ALIGN: usize = 64;

/// The byte size from which a host block is mapped on huge-page boundaries (Linux).
pub const HUGE_MIN: usize = 4 << 20;

/// A transparent huge page on x86-64 (and the alignment of those mappings elsewhere).
const HUGE_PAGE: usize = 2 << 20;

/// Whether a block of `bytes` is mapped by [`map_huge`] (and so freed by [`unmap_huge`]).
fn is_huge(bytes: usize) -> bool {
    cfg!(target_os = "linux") && bytes >= HUGE_MIN
}

/// The length of the mapping of a block of `bytes` (a whole number of huge pages).
fn huge_len(bytes: usize) -> usize {
    bytes.div_ceil(HUGE_PAGE) * HUGE_PAGE
}

/// A private anonymous mapping of `huge_len(bytes)` zero bytes starting at a multiple of
/// [`HUGE_PAGE`], advised for huge pages; `None` if it cannot be had.
#[cfg(target_os = "linux")]
fn map_huge(bytes: usize) -> Option<NonNull<u8>> {
    let len = huge_len(bytes);
    let total = len.checked_add(HUGE_PAGE)?;
    // SAFETY: a new anonymous mapping aliases nothing; the arguments are valid for mmap.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let start = (base as usize).next_multiple_of(HUGE_PAGE);
    let head = start - base as usize;
    let tail = total - head - len;
    // SAFETY: `[base, start)` and `[start + len, base + total)` lie inside the mapping
    // just made, are page-aligned (base is; head and tail are multiples of 2 MiB minus
    // page-aligned amounts, so multiples of the page size) and hold nothing yet. The
    // madvise is a hint on the part kept; its failure (no THP support) changes nothing.
    unsafe {
        if head > 0 {
            libc::munmap(base, head);
        }
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    NonNull::new(start as *mut u8)
}

#[cfg(not(target_os = "linux"))]
fn map_huge(_bytes: usize) -> Option<NonNull<u8>> {
    None
}

/// Unmaps a block of `bytes` that [`map_huge`] returned at `p`.
///
/// # Safety
/// `p` came from `map_huge(bytes)` and is not used afterwards.
#[cfg(target_os = "linux")]
unsafe fn unmap_huge(p: *mut u8, bytes: usize) {
    // SAFETY: the caller's contract: `[p, p + huge_len(bytes))` is that mapping.
    unsafe { libc::munmap(p.cast(), huge_len(bytes)) };
}

#[cfg(not(target_os = "linux"))]
unsafe fn unmap_huge(_p: *mut u8, _bytes: usize) {}

/// How a block was obtained, which decides how it is freed and which requests it can
/// serve: a mapping of `huge_len` bytes ([`map_huge`]), or the allocator's block of
/// `layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    Huge(usize),
    Alloc(Layout),
}

impl Block {
    /// The block a request of `bytes` at `layout` gets.
    fn of(bytes: usize, layout: Layout) -> Block {
        if is_huge(bytes) {
            Block::Huge(huge_len(bytes))
        } else {
            Block::Alloc(layout)
        }
    }

    fn bytes(self) -> usize {
        match self {
            Block::Huge(n) => n,
            Block::Alloc(l) => l.size(),
        }
    }
}

/// Freed blocks kept for the next allocation of the same size, as allocators keep their
/// free lists: a kernel called in a loop gets its outputs back without a new mapping
/// (each page of which the OS faults in and clears on first touch) or a trip through the
/// allocator. At most [`KEPT_BLOCKS`] blocks of [`KEPT_MIN`] bytes and more, [`KEPT_BYTES`]
/// in all, the oldest freed first.
mod kept {
    use super::{unmap_huge, Block};
    use std::ptr::NonNull;
    use std::sync::Mutex;

    /// The smallest block kept.
    pub const KEPT_MIN: usize = 256 << 10;
    /// How many blocks are kept at most.
    pub const KEPT_BLOCKS: usize = 64;
    /// How many bytes are kept at most.
    pub const KEPT_BYTES: usize = 128 << 20;

    /// The kept blocks: where each starts and how it was obtained.
    ///
    /// Invariant: each address is a block no tensor owns, obtained as its `Block` says
    /// and not freed; its bytes are initialized (zero from its mapping or allocation, or
    /// written as the elements of the tensor that owned it).
    static KEPT: Mutex<Vec<(usize, Block)>> = Mutex::new(Vec::new());

    fn kept() -> std::sync::MutexGuard<'static, Vec<(usize, Block)>> {
        // A panic while the lock was held left the list consistent (every change is one
        // push or remove).
        KEPT.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A kept block obtained as `b`, now the caller's.
    pub fn take(b: Block) -> Option<NonNull<u8>> {
        if b.bytes() < KEPT_MIN {
            return None;
        }
        let mut k = kept();
        let i = k.iter().rposition(|e| e.1 == b)?;
        NonNull::new(k.remove(i).0 as *mut u8)
    }

    /// Keeps the block at `p`, obtained as `b`, whose bytes are initialized; `false`
    /// (the caller frees it) when it is too small or larger than all that is kept.
    pub fn give(b: Block, p: NonNull<u8>) -> bool {
        if b.bytes() < KEPT_MIN || b.bytes() > KEPT_BYTES {
            return false;
        }
        let mut k = kept();
        while !k.is_empty()
            && (k.len() >= KEPT_BLOCKS || k.iter().map(|e| e.1.bytes()).sum::<usize>() + b.bytes() > KEPT_BYTES)
        {
            let (addr, old) = k.remove(0);
            free(addr as *mut u8, old);
        }
        k.push((p.as_ptr() as usize, b));
        true
    }

    /// The bytes kept now.
    #[cfg(test)]
    pub fn bytes() -> usize {
        kept().iter().map(|e| e.1.bytes()).sum()
    }

    /// The blocks kept now.
    #[cfg(test)]
    pub fn count() -> usize {
        kept().len()
    }

    /// Frees a block that was kept.
    fn free(p: *mut u8, b: Block) {
        match b {
            // SAFETY: the block came from `map_huge` of a size whose mapping is `n` bytes
            // (the invariant), and nothing owns it.
            Block::Huge(n) => unsafe { unmap_huge(p, n) },
            // SAFETY: the block came from `alloc` with this layout, and nothing owns it.
            Block::Alloc(l) => unsafe { std::alloc::dealloc(p, l) },
        }
    }
}

/// The elements of a host tensor.
pub(crate) enum Storage<T: Element> {
    /// A caller's `Vec` whose data starts at a multiple of [`ALIGN`] (or is empty).
    Vec(Vec<T>),
    /// A block allocated here at a multiple of [`ALIGN`].
    Aligned(Aligned<T>),
}

/// The byte count of `n` elements of `T`, `None` beyond what an allocation may hold.
fn bytes_of<T>(n: usize) -> Option<usize> {
    n.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize - (ALIGN - 1))
}

impl<T: Element> Storage<T> {
    /// `n` copies of `value`; `Err(bytes)` when the memory cannot be had.
    pub fn try_filled(n: usize, value: T) -> Result<Self, usize> {
        Aligned::try_filled(n, value).map(Storage::Aligned)
    }

    /// `n` elements the caller overwrites before it reads any (a kernel's output): a
    /// kept block as its last owner left it where one fits, else zeros; `Err(bytes)` when
    /// the memory cannot be had.
    pub fn try_for_overwrite(n: usize) -> Result<Self, usize> {
        Aligned::try_for_overwrite(n).map(Storage::Aligned)
    }

    /// A copy of `s`; `Err(bytes)` when the memory cannot be had.
    pub fn try_copy_of(s: &[T]) -> Result<Self, usize> {
        Aligned::try_from_slice(s).map(Storage::Aligned)
    }

    /// `v` itself if it is aligned, else a copy; `Err(bytes)` when the copy's memory
    /// cannot be had.
    pub fn try_from_vec(v: Vec<T>) -> Result<Self, usize> {
        if v.is_empty() || (v.as_ptr() as usize).is_multiple_of(ALIGN) {
            Ok(Storage::Vec(v))
        } else {
            Aligned::try_from_slice(&v).map(Storage::Aligned)
        }
    }

    pub fn as_slice(&self) -> &[T] {
        match self {
            Storage::Vec(v) => v,
            Storage::Aligned(a) => a.as_slice(),
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Storage::Vec(v) => v,
            Storage::Aligned(a) => a.as_mut_slice(),
        }
    }

    /// The elements as a `Vec` (a copy for an aligned block).
    pub fn into_vec(self) -> Vec<T> {
        match self {
            Storage::Vec(v) => v,
            Storage::Aligned(a) => a.as_slice().to_vec(),
        }
    }
}

impl<T: Element> Clone for Storage<T> {
    /// Always an aligned block (a clone of a `Vec` would be at the allocator's alignment).
    fn clone(&self) -> Self {
        let s = self.as_slice();
        match Aligned::try_from_slice(s) {
            Ok(a) => Storage::Aligned(a),
            Err(_) => alloc::handle_alloc_error(Aligned::<T>::layout(s.len()).unwrap_or(Layout::new::<T>())),
        }
    }
}

/// `len` initialized elements of `T` at a multiple of [`ALIGN`], owned.
///
/// Invariant: when `len > 0` and `T` is not zero-sized, `ptr` came from
/// `map_huge(bytes)` if [`is_huge`] holds for its `bytes`, else from
/// `alloc::alloc(Self::layout(len))`, and its `len` elements are initialized; otherwise
/// `ptr` is dangling (well aligned for `T`, never read through for a non-zero size) and
/// nothing is freed.
pub(crate) struct Aligned<T> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: `Aligned` owns its elements as `Vec<T>` does; sending or sharing it sends or
// shares only them.
unsafe impl<T: Send> Send for Aligned<T> {}
// SAFETY: as above; `&Aligned` gives only `&[T]`.
unsafe impl<T: Sync> Sync for Aligned<T> {}

impl<T> Aligned<T> {
    /// The layout of `len` elements, `None` if too large.
    fn layout(len: usize) -> Option<Layout> {
        Layout::from_size_align(bytes_of::<T>(len)?, ALIGN.max(std::mem::align_of::<T>())).ok()
    }
}

impl<T: Element> Aligned<T> {
    /// Uninitialized memory for `len` elements (`Err(bytes)` if it cannot be had); the
    /// caller initializes all of them before the value is used. `zeroed`: the memory is
    /// zero bytes already.
    fn try_alloc(len: usize, zeroed: bool) -> Result<NonNull<T>, usize> {
        let bytes = bytes_of::<T>(len).unwrap_or(usize::MAX);
        if len == 0 || std::mem::size_of::<T>() == 0 {
            return Ok(NonNull::dangling());
        }
        let layout = Self::layout(len).ok_or(bytes)?;
        if beyond_host_memory(bytes as u128) {
            return Err(bytes);
        }
        if let Some(p) = kept::take(Block::of(bytes, layout)) {
            if zeroed {
                // SAFETY: the kept block is ours now and holds at least `bytes` bytes.
                unsafe { std::ptr::write_bytes(p.as_ptr(), 0, bytes) };
            }
            return Ok(p.cast());
        }
        if is_huge(bytes) {
            // Zero bytes already (an anonymous mapping), at a multiple of 2 MiB (so of
            // ALIGN and of T's alignment).
            return map_huge(bytes).map(NonNull::cast).ok_or(bytes);
        }
        // SAFETY: the layout has a non-zero size (len > 0 elements of a sized T).
        let p = unsafe {
            if zeroed {
                alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc(layout)
            }
        };
        NonNull::new(p.cast::<T>()).ok_or(bytes)
    }

    /// `len` copies of `value`.
    fn try_filled(len: usize, value: T) -> Result<Self, usize> {
        // Zero bytes (every element type's default) come zeroed: a huge block from its
        // mapping (each page zeroed by the kernel when first touched), others from the
        // allocator.
        let zero = T::as_bytes(std::slice::from_ref(&value)).iter().all(|&b| b == 0);
        let ptr = Self::try_alloc(len, zero)?;
        if !zero && std::mem::size_of::<T>() != 0 {
            for i in 0..len {
                // SAFETY: `ptr` holds `len` elements (try_alloc); `i < len`.
                unsafe { ptr.as_ptr().add(i).write(value) };
            }
        }
        // The zeroed memory is `len` valid elements: `T`'s zero value is all zero bytes
        // (checked above on `value`, which is that value).
        Ok(Aligned { ptr, len })
    }

    /// `len` elements whose values the caller overwrites before reading any: a block
    /// freed earlier of the same size as it was left (without clearing it), else zeros.
    /// Only for element types of which every bit pattern is a value (not `bool`): the
    /// kept block's bytes were written as another tensor's elements, of any type.
    fn try_for_overwrite(len: usize) -> Result<Self, usize> {
        let bytes = bytes_of::<T>(len).unwrap_or(usize::MAX);
        if T::DTYPE != crate::DType::BOOL && len > 0 && std::mem::size_of::<T>() != 0 {
            if let Some(p) = Self::layout(len).and_then(|layout| kept::take(Block::of(bytes, layout))) {
                // The block's bytes are all initialized (written by its earlier owner, or
                // zero from its mapping), and any bytes are a `T`.
                return Ok(Aligned { ptr: p.cast(), len });
            }
        }
        Self::try_filled(len, T::default())
    }

    /// A copy of `s`.
    fn try_from_slice(s: &[T]) -> Result<Self, usize> {
        let ptr = Self::try_alloc(s.len(), false)?;
        if !s.is_empty() && std::mem::size_of::<T>() != 0 {
            // SAFETY: `ptr` holds `s.len()` elements and was just allocated, so it does
            // not overlap `s`.
            unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), ptr.as_ptr(), s.len()) };
        }
        Ok(Aligned { ptr, len: s.len() })
    }

    fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` is aligned and non-null, and valid for `len` initialized elements
        // (dangling only when that is zero bytes); the borrow of `self` keeps it alive.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for Aligned<T> {
    fn drop(&mut self) {
        if self.len == 0 || std::mem::size_of::<T>() == 0 {
            return;
        }
        let bytes = self.len * std::mem::size_of::<T>();
        // Kept for the next block of its size, if large enough and there is room; the
        // layout is the one it was allocated with (valid then, for this `len`).
        if let Some(layout) = Self::layout(self.len) {
            if kept::give(Block::of(bytes, layout), self.ptr.cast()) {
                return;
            }
        }
        if is_huge(bytes) {
            // SAFETY: the block came from `map_huge(bytes)` (the invariant) and `self`
            // is gone after this.
            unsafe { unmap_huge(self.ptr.as_ptr().cast::<u8>(), bytes) };
            return;
        }
        // The layout the block was allocated with (it was valid then, for this `len`).
        let Some(layout) = Self::layout(self.len) else { return };
        // SAFETY: `ptr` came from `alloc` with this layout (the invariant); every element
        // type is `Copy`, so there is nothing to drop in place.
        unsafe { alloc::dealloc(self.ptr.as_ptr().cast::<u8>(), layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The VmFlags line of the mapping of /proc/self/smaps that holds `addr`.
    #[cfg(target_os = "linux")]
    fn vm_flags_at(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let head = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = head.split_once('-') {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo <= addr && addr < hi;
                    continue;
                }
            }
            if inside && line.starts_with("VmFlags:") {
                return Some(line.to_string());
            }
        }
        None
    }

    #[test]
    fn large_blocks_are_mapped_on_huge_page_boundaries_zeroed_and_freed() {
        let n = HUGE_MIN / 4 + 3; // just over the threshold, not a whole number of pages
        for round in 0..3 {
            let mut z = Aligned::<f32>::try_filled(n, 0.0).unwrap();
            let p = z.as_slice().as_ptr() as usize;
            assert_eq!(p % if cfg!(target_os = "linux") { HUGE_PAGE } else { ALIGN }, 0);
            assert!(z.as_slice().iter().all(|&v| v == 0.0), "round {round}");
            z.as_mut_slice()[n - 1] = 7.0;
            let c = Aligned::try_from_slice(z.as_slice()).unwrap();
            assert_eq!((c.as_slice()[n - 1], c.as_slice()[0]), (7.0, 0.0));
            let f = Aligned::<i32>::try_filled(n, -5).unwrap();
            assert!(f.as_slice().iter().all(|&v| v == -5));
            #[cfg(target_os = "linux")]
            if std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
                let flags = vm_flags_at(p).expect("the block's mapping is in smaps");
                assert!(flags.split_whitespace().any(|f| f == "hg"), "not advised for huge pages: {flags}");
            }
            // Dropped, the block is kept (or unmapped): the next round's block of the
            // same size, kept or new, must come zeroed again all the same.
            drop(z);
        }
        // Below the threshold: the allocator's block at 64 bytes.
        let small = Aligned::<f32>::try_filled(HUGE_MIN / 4 - 1, 1.0).unwrap();
        assert_eq!(small.as_slice().as_ptr() as usize % ALIGN, 0);
        assert!(small.as_slice().iter().all(|&v| v == 1.0));
    }

    const MEMINFO: &str = "MemTotal:       24576000 kB\nMemFree:        20000000 kB\nSwapTotal:       1024000 kB\n";

    #[test]
    fn the_host_memory_bound_applies_where_linux_overcommits_only() {
        assert_eq!(host_memory_limit("1\n", MEMINFO), Some((24576000 + 1024000) * 1024));
        assert_eq!(host_memory_limit("0\n", MEMINFO), None);
        assert_eq!(host_memory_limit("2", MEMINFO), None);
        assert_eq!(host_memory_limit("1", "MemTotal: 1000 kB\n"), Some(1000 * 1024), "no swap line");
        assert_eq!(host_memory_limit("1", "SwapTotal: 1000 kB\n"), None, "no MemTotal: no bound");
    }

    fn aligned<T>(s: &[T]) -> bool {
        (s.as_ptr() as usize).is_multiple_of(ALIGN)
    }

    #[test]
    fn filled_blocks_are_aligned_and_hold_the_value() {
        for n in [1usize, 3, 16, 1000, 1 << 20] {
            let z = Storage::<f32>::try_filled(n, 0.0).unwrap();
            assert!(aligned(z.as_slice()) && z.as_slice().len() == n && z.as_slice().iter().all(|&x| x == 0.0));
            let v = Storage::<i32>::try_filled(n, -7).unwrap();
            assert!(aligned(v.as_slice()) && v.as_slice().iter().all(|&x| x == -7));
            let b = Storage::<bool>::try_filled(n, true).unwrap();
            assert!(b.as_slice().iter().all(|&x| x));
        }
        assert!(Storage::<f64>::try_filled(0, 1.0).unwrap().as_slice().is_empty());
    }

    #[test]
    fn vecs_are_kept_when_aligned_and_copied_when_not() {
        // A slice of a larger vector at an odd offset is not aligned; its copy is.
        let big: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let off = (0..16).find(|&o| !aligned(&big[o..])).unwrap();
        let v = big[off..off + 50].to_vec();
        let s = Storage::try_from_vec(v.clone()).unwrap();
        assert!(aligned(s.as_slice()));
        assert_eq!(s.as_slice(), &v[..]);
        assert_eq!(s.clone().into_vec(), v);
        // An aligned one is kept: its buffer comes back from `into_vec`. (The allocator
        // returns small blocks at 16-byte steps; some of those of 199 sizes start a line.)
        let mut tries: Vec<Vec<f32>> = (1..200).map(|k| vec![k as f32; k]).collect();
        let a = tries.swap_remove(tries.iter().position(|v| aligned(v)).expect("an aligned Vec among 199"));
        let (p, first) = (a.as_ptr(), a[0]);
        let s = Storage::try_from_vec(a).unwrap();
        assert!(matches!(s, Storage::Vec(_)));
        let back = s.into_vec();
        assert_eq!((back.as_ptr(), back[0]), (p, first));
        // Clones are aligned whatever they came from.
        assert!(aligned(Storage::Vec(vec![1u8; 7]).clone().as_slice()));
    }

    #[test]
    fn writes_through_the_mutable_slice_stay() {
        let mut s = Storage::<u16>::try_filled(10, 1).unwrap();
        s.as_mut_slice()[9] = 5;
        assert_eq!(s.as_slice()[9], 5);
        assert_eq!(s.clone().as_slice(), s.as_slice());
    }

    #[test]
    fn a_dropped_block_serves_the_next_request_of_its_size() {
        // A size no other test asks for, between the smallest kept block and a mapping.
        let n = kept::KEPT_MIN / 4 + 1001;
        let mut a = Storage::<f32>::try_filled(n, 0.0).unwrap();
        a.as_mut_slice()[n - 1] = 3.5;
        let p = a.as_slice().as_ptr();
        drop(a);
        // An output the kernel overwrites gets the block as it was left.
        let b = Storage::<f32>::try_for_overwrite(n).unwrap();
        assert_eq!((b.as_slice().as_ptr(), b.as_slice()[n - 1]), (p, 3.5));
        drop(b);
        // Zeros asked for are zeros, from the same block.
        let z = Storage::<f32>::try_filled(n, 0.0).unwrap();
        assert_eq!(z.as_slice().as_ptr(), p);
        assert!(z.as_slice().iter().all(|&v| v == 0.0));
        // An `i32` output may take an `f32` block's bytes as they are; a `bool` never.
        let mut w = z;
        w.as_mut_slice().fill(f32::from_bits(0x0102_0304));
        drop(w);
        let ints = Storage::<i32>::try_for_overwrite(n).unwrap();
        assert_eq!((ints.as_slice().as_ptr().cast::<f32>(), ints.as_slice()[0]), (p, 0x0102_0304));
        drop(ints);
        let flags = Storage::<bool>::try_for_overwrite(4 * n).unwrap();
        assert_eq!(flags.as_slice().as_ptr().cast::<f32>(), p, "the same block, cleared");
        assert!(flags.as_slice().iter().all(|&f| !f), "a bool output from stale bytes");
    }

    #[test]
    fn what_is_kept_stays_within_its_bounds() {
        let blocks: Vec<_> = (0..2 * kept::KEPT_BLOCKS)
            .map(|i| Storage::<f32>::try_filled(kept::KEPT_MIN / 4 + 17 * i, 1.0).unwrap())
            .collect();
        drop(blocks);
        assert!(kept::bytes() <= kept::KEPT_BYTES);
        assert!(kept::count() <= kept::KEPT_BLOCKS);
        // A block larger than all that may be kept is unmapped at once.
        let huge = Storage::<u8>::try_filled(kept::KEPT_BYTES + 1, 0).unwrap();
        let _p = huge.as_slice().as_ptr() as usize;
        drop(huge);
        #[cfg(target_os = "linux")]
        assert_eq!(vm_flags_at(_p), None, "the mapping outlived its block");
        assert!(kept::bytes() <= kept::KEPT_BYTES);
    }

    #[test]
    fn an_impossible_size_is_an_error() {
        assert!(Storage::<f32>::try_filled(usize::MAX / 2, 0.0).is_err());
        assert!(Aligned::<f64>::try_alloc(usize::MAX / 8, false).is_err());
    }
}
