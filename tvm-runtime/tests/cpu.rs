//! The helpers generated CPU code calls (`tvm_runtime::cpu`): both paths of every
//! accessor (unchecked where the compiler proved the bounds, checked otherwise), the lane
//! maps, and the chunks of a parallel loop.

use std::panic::catch_unwind;
use tvm_runtime::cpu;

#[test]
fn element_accessors_read_and_write_on_both_paths() {
    let mut s = [1.0f32, 2.0, 3.0, 4.0];
    // SAFETY: every index below is inside `s` (the fast path's contract).
    unsafe {
        assert_eq!(cpu::ld::<f32, true>(&s, 2, "0 <= 2 < 4"), 3.0);
        assert_eq!(cpu::ld::<f32, false>(&s, 3, ""), 4.0);
        cpu::st::<f32, true>(&mut s, 0, 10.0, "0 <= 0 < 4");
        cpu::st::<f32, false>(&mut s, 1, 20.0, "");
    }
    assert_eq!(s, [10.0, 20.0, 3.0, 4.0]);
}

#[test]
fn the_checked_path_panics_out_of_bounds() {
    let s = [1i32, 2, 3];
    // SAFETY: the checked path (`FAST = false`) has no precondition.
    assert!(catch_unwind(|| unsafe { cpu::ld::<i32, false>(&s, 3, "") }).is_err());
    assert!(catch_unwind(|| unsafe { cpu::ld::<i32, false>(&s, -1, "") }).is_err());
    assert!(catch_unwind(|| {
        let mut s = [0u8; 2];
        unsafe { cpu::st::<u8, false>(&mut s, 2, 1, "") }
    })
    .is_err());
    assert!(catch_unwind(|| unsafe { cpu::ldv::<i32, 2, false>(&s, 2, "") }).is_err());
    assert!(catch_unwind(|| {
        let mut s = [0u8; 4];
        unsafe { cpu::stv::<u8, 4, false>(&mut s, 1, [1; 4], "") }
    })
    .is_err());
}

#[test]
fn lane_accessors_read_and_write_on_both_paths() {
    let mut s: Vec<f64> = (0..10).map(f64::from).collect();
    // SAFETY: every lane range below is inside `s`.
    unsafe {
        // An unaligned start (index 1) on the fast path: `read` allows it.
        assert_eq!(cpu::ldv::<f64, 4, true>(&s, 1, ""), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(cpu::ldv::<f64, 3, false>(&s, 7, ""), [7.0, 8.0, 9.0]);
        cpu::stv::<f64, 2, true>(&mut s, 5, [50.0, 60.0], "");
        cpu::stv::<f64, 2, false>(&mut s, 8, [80.0, 90.0], "");
    }
    assert_eq!(s, [0.0, 1.0, 2.0, 3.0, 4.0, 50.0, 60.0, 7.0, 80.0, 90.0]);
    assert_eq!(cpu::ldv_checked::<f64, 2>(&s, 0), [0.0, 1.0]);
    cpu::stv_checked(&mut s, 2, [-2.0, -3.0]);
    assert_eq!(&s[..4], &[0.0, 1.0, -2.0, -3.0]);
}

/// The fast path moves lane arrays of whole 32-byte vectors as such vectors (several of
/// them, at any element offset) and others as arrays: every element lands where it
/// belongs, and nothing next to the range is touched.
#[test]
fn lane_accessors_move_whole_32_byte_vectors_and_the_rest() {
    let src: Vec<f32> = (0..100).map(|i| i as f32).collect();
    // SAFETY: every lane range below is inside its slice.
    unsafe {
        // 24 f32 = three 32-byte vectors, from an odd offset.
        let v = cpu::ldv::<f32, 24, true>(&src, 3, "");
        assert_eq!(v.to_vec(), (3..27).map(|i| i as f32).collect::<Vec<_>>());
        let mut dst = vec![-1f32; 40];
        cpu::stv::<f32, 24, true>(&mut dst, 5, v, "");
        assert!(dst[..5].iter().chain(&dst[29..]).all(|&x| x == -1.0));
        assert_eq!(&dst[5..29], &src[3..27]);
        // 64 bytes of i8 lanes (two vectors), and 12 bytes of i32 (no whole vector).
        let bytes: Vec<i8> = (0..100).map(|i| i as i8).collect();
        assert_eq!(cpu::ldv::<i8, 64, true>(&bytes, 7, "").to_vec(), bytes[7..71].to_vec());
        let ints: Vec<i32> = (0..10).collect();
        assert_eq!(cpu::ldv::<i32, 3, true>(&ints, 6, ""), [6, 7, 8]);
    }
}

#[test]
fn lane_maps_apply_per_lane() {
    assert_eq!(cpu::map1([1, 2, 3], |x| x * 10), [10, 20, 30]);
    assert_eq!(cpu::map2([1.0f32, 2.0], [3.0, 4.0], |x, y| x * y), [3.0, 8.0]);
    assert_eq!(cpu::map3([true, false], [1u8, 2], [3u8, 4], |c, t, o| if c { t } else { o }), [1, 4]);
}

#[test]
fn chunks_cover_every_iteration() {
    use rayon::iter::{IndexedParallelIterator, ParallelIterator};
    let mut s: Vec<u32> = vec![0; 10];
    // Five iterations of chunks of 3: the last two get a short and an empty chunk.
    let lens: Vec<usize> = cpu::chunks(&mut s, 3, 5).map(|c| c.len()).collect();
    assert_eq!(lens, [3, 3, 3, 1, 0]);
    cpu::chunks(&mut s, 3, 4).enumerate().for_each(|(i, c)| c.iter_mut().for_each(|x| *x = i as u32));
    assert_eq!(s, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
    // Fewer iterations than chunks: the rest is untouched.
    let mut t = vec![7u8; 6];
    cpu::chunks(&mut t, 2, 1).for_each(|c| c.fill(0));
    assert_eq!(t, [0, 0, 7, 7, 7, 7]);
}

#[test]
fn from_and_len_is() {
    let mut s = [1, 2, 3, 4];
    assert_eq!(cpu::from(&mut s, 1), &[2, 3, 4]);
    assert_eq!(cpu::from(&mut s, -5), &[1, 2, 3, 4]);
    assert!(cpu::from(&mut s, 9).is_empty());
    assert!(cpu::len_is(12, &[3, 4]) && cpu::len_is(0, &[3, 0]) && cpu::len_is(1, &[]));
    assert!(!cpu::len_is(12, &[3, 5]) && !cpu::len_is(12, &[-3, -4]) && !cpu::len_is(0, &[i64::MAX, i64::MAX, 4]));
}

#[test]
fn scratch_buffers_are_reused_by_the_same_thread_and_type_only() {
    std::thread::spawn(|| {
        let first = cpu::scratch::<f32>(1000, 0.0);
        assert_eq!(first.len(), 1000);
        assert!(first.iter().all(|&v| v == 0.0), "a new buffer holds `fill`");
        let ptr = first.as_ptr();
        drop(first);
        // The same thread, the same type, a size that fits: the same memory, resized.
        let mut again = cpu::scratch::<f32>(500, 0.0);
        assert_eq!((again.as_ptr(), again.len()), (ptr, 500));
        again[499] = 7.0;
        drop(again);
        // What the last user left stays (an allocation of the TIR is uninitialized).
        let again = cpu::scratch::<f32>(500, 0.0);
        assert_eq!((again.as_ptr(), again[499]), (ptr, 7.0));
        // Two at once: the second cannot be the first's memory.
        let other = cpu::scratch::<f32>(500, 1.0);
        assert_ne!(other.as_ptr(), ptr);
        assert!(other.iter().all(|&v| v == 1.0));
        // Another element type never gets an `f32` buffer.
        let ints = cpu::scratch::<u8>(4000, 3);
        assert!(ints.iter().all(|&v| v == 3));
        assert_ne!(ints.as_ptr() as *const f32, ptr);
        drop((again, other, ints));
        // Growing keeps the pooled buffer's start and fills the new part.
        let grown = cpu::scratch::<f32>(2000, 2.0);
        assert_eq!(grown.len(), 2000);
        assert!(grown[1000..].iter().all(|&v| v == 2.0));
        // A buffer above the pool's limit is freed, not kept.
        let big = cpu::SCRATCH_POOL_BYTES / 4 + 1;
        let mut huge = cpu::scratch::<f32>(big, 0.0);
        huge[0] = 5.0;
        drop(huge);
        // Had the pool kept it, its contents would come back (resizing keeps them).
        let next = cpu::scratch::<f32>(big, 0.0);
        assert_eq!(next[0], 0.0, "a buffer above the pool's limit came back from the pool");
    })
    .join()
    .unwrap();
}

/// The checks generated code calls (`Expr::Check`): a value that passes is returned, a
/// failure is recorded once (the first wins) and a safe value comes back.
#[test]
fn checks_record_the_first_failure_and_give_a_safe_value() {
    use tvm_runtime::cpu::{check_divisor, check_index, ld_or_default, ldv_or_default, Fault};
    let f = Fault::new();
    assert_eq!(check_index(0, 5, 0, &f), 0);
    assert_eq!(check_index(4, 5, 0, &f), 4);
    assert_eq!(check_divisor(-3i32, 1, &f), -3);
    assert_eq!(f.get(), None);
    // Negative and past-the-end indices, and an empty dim, fail and give 0.
    assert_eq!(check_index(5, 5, 7, &f), 0);
    assert_eq!(f.get(), Some((7, 5, 5)));
    assert_eq!(check_index(-1, 5, 8, &f), 0);
    assert_eq!(check_index(i64::MIN, 0, 9, &f), 0);
    assert_eq!(check_divisor(0u8, 10, &f), 1);
    assert_eq!(f.get(), Some((7, 5, 5)), "a later failure replaced the first");
    let g = Fault::new();
    assert_eq!(check_divisor(0i64, 3, &g), 1);
    assert_eq!(g.get(), Some((3, 0, 0)));
    // Threads racing to fail: exactly one site is kept, with its own value.
    let h = Fault::new();
    std::thread::scope(|s| {
        for t in 0..8i64 {
            let h = &h;
            s.spawn(move || {
                for k in 0..1000 {
                    check_index(100 + t, 10, t as u32, h);
                    check_index(k % 10, 10, 99, h);
                }
            });
        }
    });
    let (site, value, extent) = h.get().unwrap();
    assert!(site < 8 && value == 100 + site as i64 && extent == 10, "{:?}", h.get());
    // Reads at a failed check's fallback index never panic.
    let empty: [f32; 0] = [];
    assert_eq!(ld_or_default(&empty, 0), 0.0);
    assert_eq!(ld_or_default(&[1.0f32, 2.0], 1), 2.0);
    assert_eq!(ld_or_default(&[1.0f32, 2.0], -1), 0.0);
    assert_eq!(ldv_or_default::<f32, 2>(&[1.0, 2.0, 3.0], 1), [2.0, 3.0]);
    // Past the end: some elements of the slice (the first), never outside it.
    assert_eq!(ldv_or_default::<f32, 2>(&[1.0, 2.0, 3.0], 2), [1.0, 2.0]);
    assert_eq!(ldv_or_default::<f32, 2>(&[1.0, 2.0, 3.0], -1), [1.0, 2.0]);
    assert_eq!(ldv_or_default::<f32, 4>(&[1.0, 2.0, 3.0], 0), [0.0; 4]);
    assert_eq!(ldv_or_default::<f32, 4>(&empty, 0), [0.0; 4]);
}

/// The error a failed check becomes: the site's description, the value and the extent.
#[test]
fn a_failed_check_names_the_kernel_the_tensor_and_the_numbers() {
    use tvm_runtime::__rt::{check_failed, CheckSite};
    use tvm_runtime::Error;
    const SITES: &[CheckSite] =
        &[CheckSite::Divisor { divisor: "b[i]" }, CheckSite::Index { tensor: "table", dim: 0, index: "ids[i]" }];
    let e = check_failed("embed", SITES, (1, -2, 10));
    assert_eq!(
        e,
        Error::IndexOutOfBounds {
            kernel: "embed".into(),
            tensor: "table".into(),
            dim: 0,
            index: "ids[i]".into(),
            value: -2,
            extent: 10
        }
    );
    assert_eq!(e.to_string(), "index out of bounds in `embed`: `ids[i]` is -2, but dimension 0 of `table` has size 10");
    assert_eq!(
        check_failed("embed", SITES, (0, 0, 0)),
        Error::DivisionByZero { kernel: "embed".into(), divisor: "b[i]".into() }
    );
    assert!(matches!(check_failed("embed", SITES, (2, 0, 0)), Error::Internal { .. }));
}

/// How an allocation of a kernel's tensor fails: a shape whose element count overflows
/// `i64` is a shape error; a byte count past the address space, or memory the allocator
/// lacks, is `OutOfMemory` naming the tensor and the bytes. Intermediates alike.
#[test]
fn allocation_errors_name_the_tensor_and_the_bytes() {
    use tvm_runtime::__rt::alloc_failed;
    use tvm_runtime::{Error, Tensor};
    let huge = 1usize << 40;
    let e = Tensor::<f32, 2>::try_zeros([huge, huge]).unwrap_err();
    assert_eq!(e, Error::SizeOverflow { shape: vec![huge, huge] });
    assert_eq!(
        alloc_failed(e, "cpu", "k", "output `c`", &[huge, huge], 4),
        Error::SizeOverflow { shape: vec![huge, huge] }
    );
    let n = 1usize << 62; // fits i64 as a count, not as bytes
    let e = Tensor::<f32, 1>::try_zeros([n]).unwrap_err();
    match alloc_failed(e, "cpu", "k", "output `c`", &[n], 4) {
        Error::OutOfMemory { bytes, reason, .. } => {
            assert_eq!(bytes, usize::MAX);
            assert_eq!(
                reason,
                format!(
                    "output `c` of `k` needs {} bytes (shape [{n}]), more than the address space holds",
                    4u128 << 62
                )
            );
        }
        other => panic!("{other:?}"),
    }
    let e =
        Error::OutOfMemory { device: "opencl:0".into(), bytes: 64, reason: "CL_MEM_OBJECT_ALLOCATION_FAILURE".into() };
    assert_eq!(
        alloc_failed(e, "opencl:0", "k", "output `c`", &[4, 4], 4).to_string(),
        "device `opencl:0` is out of memory: 64 bytes could not be allocated (output `c` of `k` needs 64 bytes (shape [4, 4]): CL_MEM_OBJECT_ALLOCATION_FAILURE)"
    );
    match cpu::try_vec(1i64 << 62, 0f32, "t", "k") {
        Err(Error::OutOfMemory { reason, .. }) => {
            assert_eq!(
                reason,
                format!("intermediate `t` of `k` needs {} bytes: more than the address space holds", 4u128 << 62)
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(&*cpu::try_vec(3, 1.5f32, "t", "k").unwrap(), &[1.5; 3]);
    // Zero fills come zeroed from the allocator, any element type.
    assert_eq!(&*cpu::try_vec(1000, 0.0f32, "t", "k").unwrap(), &[0.0; 1000]);
    assert_eq!(&*cpu::try_vec(7, false, "t", "k").unwrap(), &[false; 7]);
    assert_eq!(&*cpu::try_vec(5, 0i64, "t", "k").unwrap(), &[0; 5]);
    let mut v = cpu::try_vec(1 << 20, 0u8, "t", "k").unwrap();
    v[1 << 19] = 1;
    assert_eq!((v.len(), v[1 << 19], v.iter().map(|&b| b as u64).sum::<u64>()), (1 << 20, 1, 1));
    assert!(cpu::try_vec(-2, 1.5f32, "t", "k").unwrap().is_empty());
    // Every buffer starts at a multiple of 64 bytes (a cache line, a 16-lane vector), small
    // or large (a large one comes from mmap, 16 bytes past a page, unless moved), zero or
    // not, for elements of 1 to 8 bytes.
    for n in [1i64, 3, 17, 1000, 1 << 20, 3 << 20] {
        let ptrs = [
            cpu::try_vec(n, 0f32, "t", "k").unwrap().as_ptr() as usize,
            cpu::try_vec(n, 2f32, "t", "k").unwrap().as_ptr() as usize,
            cpu::try_vec(n, 0u8, "t", "k").unwrap().as_ptr() as usize,
            cpu::try_vec(n, 0i64, "t", "k").unwrap().as_ptr() as usize,
            cpu::try_vec(n, 1u16, "t", "k").unwrap().as_ptr() as usize,
        ];
        for p in ptrs {
            assert_eq!(p % 64, 0, "a buffer of {n} elements at {p:#x}");
        }
        let mut b = cpu::try_vec(n, 0.5f64, "t", "k").unwrap();
        assert_eq!((b.as_ptr() as usize % 64, b.len()), (0, n as usize));
        b[n as usize - 1] = 2.0;
        assert_eq!(b.iter().sum::<f64>(), 0.5 * (n - 1) as f64 + 2.0);
    }
}

/// A dropped intermediate's block goes back to the thread's pool and is reused, as it was
/// left, by the next intermediate of the same size and type on that thread; other sizes,
/// types and threads get blocks of their own.
#[test]
fn intermediate_blocks_are_reused_on_their_thread() {
    let n = 777_777i64; // a size no other test uses
    let mut a = cpu::try_vec(n, 0f32, "t", "k").unwrap();
    a[5] = 3.5;
    let p = a.as_ptr();
    drop(a);
    let b = cpu::try_vec(n, 0f32, "t", "k").unwrap();
    assert_eq!((b.as_ptr(), b[5], b.len()), (p, 3.5, n as usize), "the same block, as it was left");
    let c = cpu::try_vec(n, 0f32, "t", "k").unwrap();
    assert_ne!(c.as_ptr(), p, "one block serves one buffer at a time");
    let d = cpu::try_vec(n - 1, 0f32, "t", "k").unwrap();
    let e = cpu::try_vec(n, 0i32, "t", "k").unwrap();
    assert!(d.as_ptr() != p && (e.as_ptr() as *const f32) != p);
    drop(b);
    let other = std::thread::spawn(move || cpu::try_vec(n, 0f32, "t", "k").unwrap()[5]).join().unwrap();
    assert_eq!(other, 0.0, "another thread's block is fresh");
    assert_eq!(cpu::try_vec(n, 0f32, "t", "k").unwrap().as_ptr(), p);
    // A nonzero fill is written into a reused block.
    let f = cpu::try_vec(n, 2f32, "t", "k").unwrap();
    assert_eq!((f.as_ptr(), f.iter().all(|&v| v == 2.0)), (p, true));
    drop(f);
    // Blocks larger than the pool's bytes are not kept.
    let big = cpu::HOST_POOL_BYTES as i64 / 4 + 1024;
    drop(cpu::try_vec(big, 0f32, "t", "k").unwrap());
    let h = cpu::try_vec(n, 0f32, "t", "k").unwrap();
    assert_eq!(h.as_ptr(), p, "the small block is still pooled (the big one did not evict it)");
    for v in [&c, &d] {
        assert_eq!(v.as_ptr() as usize % 64, 0);
    }
    drop(e);
}

/// A network's kernels called in turn drop their intermediates in a cycle of a hundred
/// or so blocks of distinct sizes (MTCNN's detection); called again, each finds its own
/// block in the pool. (On a thread of its own: the pool starts empty.)
#[test]
fn a_cycle_of_a_network_s_intermediates_is_reused() {
    std::thread::spawn(|| {
        let sizes: Vec<i64> = (0..150).map(|k| 10_000 + 64 * k).collect();
        let first: Vec<*const f32> = sizes
            .iter()
            .map(|&n| {
                let b = cpu::try_vec(n, 0f32, "t", "k").unwrap();
                b.as_ptr()
            })
            .collect();
        for (&n, &p) in sizes.iter().zip(&first) {
            assert_eq!(cpu::try_vec(n, 0f32, "t", "k").unwrap().as_ptr(), p, "the block of {n} floats");
        }
    })
    .join()
    .unwrap();
}

/// Per-iteration buffers of parallel loops come from the thread's pool, fallibly.
#[test]
fn scratch_buffers_are_allocated_fallibly() {
    match cpu::try_scratch::<f32>(1i64 << 62, 0.0, "t", "k") {
        Err(tvm_runtime::Error::OutOfMemory { reason, .. }) => {
            assert!(reason.starts_with("intermediate `t` of `k` needs"), "{reason}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("2^64 bytes were allocated"),
    }
    // On a thread of its own: its pool starts empty.
    std::thread::spawn(pool_reuse).join().unwrap();
}

fn pool_reuse() {
    let s = cpu::try_scratch::<f32>(5, 2.0, "t", "k").unwrap();
    assert_eq!(&*s, &[2.0; 5]);
    drop(s);
    // From the pool again (same thread): the same memory, as the last user left it (a
    // TIR allocation is uninitialized), only as long as asked; grown, the new part filled.
    let s = cpu::try_scratch::<f32>(3, 1.0, "t", "k").unwrap();
    assert_eq!(&*s, &[2.0; 3]);
    drop(s);
    let s = cpu::try_scratch::<f32>(6, 1.0, "t", "k").unwrap();
    assert_eq!(&*s, &[2.0, 2.0, 2.0, 1.0, 1.0, 1.0]);
    assert!(cpu::try_scratch::<f32>(-1, 1.0, "t", "k").unwrap().is_empty());
}

/// The loads of a vector select's sides (`ldv_lanes`): every lane inside the slice is
/// its element, whatever the others; a lane outside is zero, and nothing panics.
#[test]
fn a_select_side_reads_its_lanes_inside_the_slice_exactly() {
    use tvm_runtime::cpu::ldv_lanes;
    let s = [1.0f32, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(ldv_lanes::<f32, 4>(&s, 1), [2.0, 3.0, 4.0, 5.0]);
    assert_eq!(ldv_lanes::<f32, 4>(&s, 3), [4.0, 5.0, 0.0, 0.0]);
    assert_eq!(ldv_lanes::<f32, 4>(&s, -2), [0.0, 0.0, 1.0, 2.0]);
    assert_eq!(ldv_lanes::<f32, 8>(&s, 0), [1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0, 0.0]);
    assert_eq!(ldv_lanes::<f32, 2>(&s, i64::MAX), [0.0; 2]);
    assert_eq!(ldv_lanes::<f32, 2>(&s, i64::MIN), [0.0; 2]);
    let empty: [u8; 0] = [];
    assert_eq!(ldv_lanes::<u8, 4>(&empty, 0), [0; 4]);
}

/// A strided vector load (`ldv_strided`, a stride-2 pooling's tap): the span loaded once
/// where it is inside the slice, the same lanes picked lane by lane at its end.
#[test]
fn a_strided_load_picks_every_other_element_inside_and_at_the_end() {
    use tvm_runtime::cpu::ldv_strided;
    let s: Vec<f32> = (0..20).map(|i| i as f32).collect();
    assert_eq!(ldv_strided::<f32, 4, 7, 2>(&s, 3), [3.0, 5.0, 7.0, 9.0]);
    // The span ends at the slice's last element: still the fast path.
    assert_eq!(ldv_strided::<f32, 4, 7, 2>(&s, 13), [13.0, 15.0, 17.0, 19.0]);
    assert_eq!(ldv_strided::<f32, 3, 7, 3>(&s, 13), [13.0, 16.0, 19.0]);
    // Past the end: lane by lane, bounds-checked (a panic, as any checked read).
    let past = std::panic::catch_unwind(|| ldv_strided::<f32, 4, 7, 2>(&s, 14));
    assert!(past.is_err());
}
