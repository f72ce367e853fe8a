//! Host storage of tensors, aligned to 64 bytes (a cache line and one AVX-512 register),
//! as TVM's and ONNX Runtime's host arrays are: a kernel's 16-lane loads and stores of a
//! row that starts a line then never straddle two lines. With the allocator's 16-byte
//! alignment they did on every row of a 1024-wide matrix: `opt_gemm` without a write
//! cache (32-lane rows of `c` updated in place) took 64-69 ms into an output at 16, 32
//! or 48 bytes past a line and 51-53 ms into one at a line (TVM, aligned: 53 ms).
//!
//! A `Vec` that is aligned already (or empty) is kept as it is, so `from_vec` and
//! `into_vec` of it copy nothing; other data is copied once into an aligned block.

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
/// `alloc::alloc(Self::layout(len))` and its `len` elements are initialized; otherwise
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
        // Zero bytes (every element type's default) come zeroed from the allocator, in
        // pages mapped lazily for large blocks, as `vec![0.0; n]` does.
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
    fn an_impossible_size_is_an_error() {
        assert!(Storage::<f32>::try_filled(usize::MAX / 2, 0.0).is_err());
        assert!(Aligned::<f64>::try_alloc(usize::MAX / 8, false).is_err());
    }
}
