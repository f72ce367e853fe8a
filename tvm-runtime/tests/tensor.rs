//! The host tensor (docs/LANGUAGE.md §4): construction, shapes, overflow, zero-sized dims, element
//! types, and the messages of `tvm::Error`.

use tvm_runtime::{bf16, f16, DType, Element, Error, Tensor};

#[test]
fn from_vec_round_trips() {
    let t = Tensor::from_vec((0..6).map(|x| x as f32).collect(), [2, 3]).unwrap();
    assert_eq!(t.shape(), [2, 3]);
    assert_eq!((t.len(), t.is_empty(), t.rank()), (6, false, 2));
    assert_eq!(t.strides(), [3, 1]);
    assert_eq!(t.dtype(), DType::F32);
    assert_eq!(t.as_slice(), &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(t[[1, 0]], 3.0);
    assert_eq!(t.get([1, 2]), Some(&5.0));
    assert_eq!(t.get([2, 0]), None);
    assert_eq!(t.get([0, 3]), None);
    assert_eq!(t.clone().into_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(t.clone(), t);
    let r: Tensor<f32, 3> = t.clone().reshape([3, 1, 2]).unwrap();
    assert_eq!((r.shape(), r.as_slice()), ([3, 1, 2], t.as_slice()));
    assert!(matches!(t.reshape([4]), Err(Error::LengthMismatch { len: 6, .. })));
}

#[test]
fn from_vec_length_mismatch_is_an_error_with_both_numbers() {
    let err = Tensor::from_vec(vec![1.0f32; 999], [10, 100]).unwrap_err();
    assert_eq!(err, Error::LengthMismatch { len: 999, shape: vec![10, 100] });
    let msg = err.to_string();
    assert!(msg.contains("999") && msg.contains("1000") && msg.contains("[10, 100]"), "{msg}");
    assert_eq!(msg, "length mismatch: 999 elements given for shape [10, 100], which holds 1000");
    assert!(Tensor::<i32, 1>::from_vec(vec![1, 2], [3]).is_err());
    assert!(Tensor::<i32, 0>::from_vec(vec![], []).is_err());
}

#[test]
fn zeros_and_mutation() {
    let mut t = Tensor::<f64, 3>::zeros([2, 3, 4]);
    assert_eq!(t.shape(), [2, 3, 4]);
    assert_eq!(t.strides(), [12, 4, 1]);
    assert!(t.as_slice().iter().all(|&x| x == 0.0) && t.len() == 24);
    t.as_mut_slice()[5] = 7.0;
    t[[1, 2, 3]] = 9.0;
    *t.get_mut([0, 0, 0]).unwrap() = 1.0;
    assert_eq!((t[[0, 1, 1]], t.as_slice()[23], t.as_slice()[0]), (7.0, 9.0, 1.0));
    assert_eq!(Tensor::<bool, 1>::zeros([3]).into_vec(), vec![false; 3]);
    assert_eq!(Tensor::<u8, 2>::full([2, 2], 7).as_slice(), &[7; 4]);
    assert_eq!(Tensor::<i64, 2>::try_zeros([3, 0]).unwrap().shape(), [3, 0]);
}

#[test]
fn scalars_have_rank_zero_and_one_element() {
    let s = Tensor::from_vec(vec![5i32], []).unwrap();
    assert_eq!((s.shape(), s.len(), s.strides(), s[[]]), ([], 1, [], 5));
    assert_eq!(Tensor::<i32, 0>::zeros([]).as_slice(), &[0]);
}

#[test]
fn zero_sized_dims_are_valid_and_empty() {
    for shape in [[0, 5], [5, 0], [0, 0]] {
        let t = Tensor::<f32, 2>::zeros(shape);
        assert_eq!((t.shape(), t.len(), t.is_empty()), (shape, 0, true));
        assert!(t.as_slice().is_empty());
        assert_eq!(t.get([0, 0]), None);
        assert_eq!(Tensor::<f32, 2>::from_vec(vec![], shape).unwrap(), t);
    }
    // A zero dim makes even a huge other dim valid, as long as that one is addressable.
    let t = Tensor::<u8, 3>::from_vec(vec![], [isize::MAX as usize / 3, 0, 3]).unwrap();
    assert_eq!(t.len(), 0);
    assert_eq!(t.strides(), [3, 3, 1]);
    assert!(Tensor::<u8, 1>::from_vec(vec![1], [0]).is_err());
}

#[test]
fn overflowing_shapes_are_errors_not_panics() {
    let huge = [usize::MAX, 2];
    assert_eq!(Tensor::<f32, 2>::try_zeros(huge).unwrap_err(), Error::SizeOverflow { shape: huge.to_vec() });
    assert!(matches!(Tensor::<f32, 2>::from_vec(vec![], huge), Err(Error::SizeOverflow { .. })));
    // The element count fits in usize but the bytes do not.
    assert!(matches!(Tensor::<f64, 1>::try_zeros([usize::MAX / 4]), Err(Error::SizeOverflow { .. })));
    assert!(matches!(Tensor::<u8, 1>::try_full([isize::MAX as usize + 1], 0), Err(Error::SizeOverflow { .. })));
    // Overflow among the non-zero dims is an error even with a zero dim (as in ndarray).
    assert!(matches!(Tensor::<u8, 3>::from_vec(vec![], [usize::MAX, usize::MAX, 0]), Err(Error::SizeOverflow { .. })));
    let msg = Tensor::<f32, 2>::try_zeros(huge).unwrap_err().to_string();
    assert!(msg.contains(&format!("[{}, 2]", usize::MAX)) && msg.contains("too large"), "{msg}");
    // LengthMismatch for a shape whose product overflows still displays.
    let e = Error::LengthMismatch { len: 3, shape: vec![usize::MAX, 3] };
    assert!(e.to_string().contains("more than"), "{e}");
}

#[test]
#[should_panic(expected = "too large")]
fn zeros_panics_only_on_overflow() {
    let _ = Tensor::<f32, 2>::zeros([usize::MAX, usize::MAX]);
}

#[test]
fn vec_converts_to_rank_one() {
    let t: Tensor<u16, 1> = vec![1u16, 2, 3].into();
    assert_eq!((t.shape(), t.as_ref()), ([3], &[1u16, 2, 3][..]));
    let (data, shape) = t.into_parts();
    assert_eq!((data, shape), (vec![1, 2, 3], [3]));
}

#[test]
fn element_dtypes() {
    fn d<T: Element>() -> DType {
        T::DTYPE
    }
    let all = [
        (d::<bool>(), "bool"),
        (d::<i8>(), "i8"),
        (d::<i16>(), "i16"),
        (d::<i32>(), "i32"),
        (d::<i64>(), "i64"),
        (d::<u8>(), "u8"),
        (d::<u16>(), "u16"),
        (d::<u32>(), "u32"),
        (d::<u64>(), "u64"),
        (d::<f16>(), "f16"),
        (d::<bf16>(), "bf16"),
        (d::<f32>(), "f32"),
        (d::<f64>(), "f64"),
    ];
    for (dtype, name) in all {
        assert_eq!((dtype.name(), Some(dtype)), (name, DType::from_name(name)));
        assert!(dtype.is_scalar());
    }
    assert_eq!(std::mem::size_of::<f16>(), 2);
    assert_eq!(std::mem::size_of::<bf16>(), 2);
}

/// The 16-bit floats are the `half` crate's: the values, rounding and comparisons users
/// of cudarc, candle and burn know, in tensors as any other element.
#[test]
fn half_floats_are_the_half_crates() {
    assert_eq!(f16::from_f32(1.5).to_bits(), 0x3e00);
    assert_eq!(f16::ONE.to_f32(), 1.0);
    assert_eq!(f16::from_bits(0x3555).to_f32(), 0.333_251_95);
    assert_eq!(f16::from_f32(65520.0), f16::INFINITY); // rounds up past f16::MAX
    assert_eq!(f16::from_f32(1.0 + 1.0 / 2048.0), f16::ONE); // a tie rounds to even
    assert_eq!(f16::from_f64(-2.0).to_f64(), -2.0);
    assert_eq!(bf16::from_f32(1.0), bf16::ONE);
    assert_eq!(bf16::from_f32(3.140625).to_f32(), 3.140625);
    assert_eq!(f32::from(bf16::from_bits(0x4049)), 3.140625);
    assert!(f16::NAN.is_nan() && f16::NAN != f16::NAN && bf16::NAN.is_nan());
    assert_eq!(f16::from_bits(0x8000), f16::ZERO); // -0 == +0
    assert!(bf16::NEG_INFINITY < bf16::ZERO);
    let t = Tensor::<f16, 1>::zeros([2]);
    assert_eq!(t.as_slice(), &[f16::ZERO; 2]);
    assert_eq!(format!("{t:?}"), "Tensor { dtype: f16, shape: [2], data: [0.0, 0.0] }");
    // The same type as `half::f16` (no conversion between them).
    let h: tvm_runtime::half::f16 = t.as_slice()[0];
    assert_eq!(h, f16::ZERO);
}

#[test]
fn error_is_send_sync_static_and_an_std_error() {
    fn assert_bounds<T: Send + Sync + 'static + std::error::Error + Clone + PartialEq>() {}
    assert_bounds::<Error>();
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(Error::InvalidDevice { text: "x".into() });
    assert!(boxed.to_string().starts_with("invalid device `x`"));
}

fn shape_mismatch(symbol: Option<&str>, bound_by: Option<&str>) -> Error {
    Error::ShapeMismatch {
        kernel: "vector_add".into(),
        param: "b".into(),
        dim: 0,
        got: 999,
        expected: 1000,
        symbol: symbol.map(Into::into),
        bound_by: bound_by.map(Into::into),
    }
}

#[test]
fn shape_mismatch_names_parameter_dimension_and_both_sizes() {
    assert_eq!(
        shape_mismatch(Some("n"), Some("a")).to_string(),
        "shape mismatch in `vector_add`: dimension 0 of `b` is 999, expected 1000 (n, bound by `a`)"
    );
    assert_eq!(
        shape_mismatch(Some("n"), None).to_string(),
        "shape mismatch in `vector_add`: dimension 0 of `b` is 999, expected 1000 (n)"
    );
    assert_eq!(
        shape_mismatch(None, None).to_string(),
        "shape mismatch in `vector_add`: dimension 0 of `b` is 999, expected 1000"
    );
    assert_eq!(
        shape_mismatch(None, Some("n")).to_string(),
        "shape mismatch in `vector_add`: dimension 0 of `b` is 999, expected 1000 (bound by `n`)"
    );
}

#[test]
fn every_message_is_lowercase_without_a_trailing_period() {
    let errors = [
        shape_mismatch(Some("n"), Some("a")),
        Error::LengthMismatch { len: 1, shape: vec![2] },
        Error::RankMismatch { expected: 2, got: 3 },
        Error::SizeOverflow { shape: vec![usize::MAX, 2] },
        Error::DeviceUnavailable { device: "cuda:1".into(), reason: "only 1 CUDA device found".into() },
        Error::InvalidDevice { text: "tpu".into() },
        Error::CompilationFailed { target: "cuda".into(), log: "kernel.cu(3): error: x\n".into() },
        Error::CompilationFailed { target: "opencl".into(), log: String::new() },
        Error::LaunchFailed { kernel: "matmul".into(), reason: "too many resources requested".into() },
        Error::UnsupportedTarget { target: "vulkan".into() },
        Error::index_scalar_out_of_range("scale", "n", usize::MAX),
        Error::Internal { message: "buffer `c` has no shape".into() },
    ];
    for e in errors {
        let msg = e.to_string();
        let first = msg.chars().next().unwrap();
        assert!(first.is_lowercase(), "{msg}");
        assert!(!msg.ends_with('.') && !msg.ends_with('\n'), "{msg}");
    }
    assert_eq!(
        Error::CompilationFailed { target: "cuda".into(), log: "kernel.cu(3): error: x\n".into() }.to_string(),
        "compilation for `cuda` failed:\nkernel.cu(3): error: x"
    );
    assert_eq!(
        Error::index_scalar_out_of_range("scale", "n", usize::MAX).to_string(),
        format!(
            "scalar `n` of `scale` is out of range: {} (index arithmetic is i64 and allows at most {})",
            usize::MAX,
            i64::MAX
        )
    );
    assert_eq!(
        Error::UnsupportedTarget { target: "vulkan".into() }.to_string(),
        "unsupported target `vulkan`: expected `cpu`, `cuda`, `opencl`, `webgpu` or `metal`"
    );
    assert_eq!(
        Error::DeviceUnavailable { device: "cuda:1".into(), reason: "only 1 CUDA device found".into() }.to_string(),
        "device `cuda:1` is unavailable: only 1 CUDA device found"
    );
}

#[test]
fn the_crate_root_exports_the_runtime_types() {
    let t: tvm_runtime::Tensor<f32, 1> = tvm_runtime::Tensor::zeros([1]);
    let _: tvm_runtime::Device = tvm_runtime::Device::Cpu;
    let _: Result<(), tvm_runtime::Error> = Ok(());
    assert_eq!(t.len(), 1);
}

/// Tensor data starts at a multiple of 64 bytes whatever it was built from, on the host
/// and in CPU device tensors, and keeps its values.
#[test]
fn data_is_aligned_to_a_cache_line() {
    let aligned = |s: &[f32]| (s.as_ptr() as usize) % 64 == 0;
    for n in [1usize, 5, 64, 1000, 1 << 18] {
        assert!(aligned(Tensor::<f32, 1>::zeros([n]).as_slice()));
        assert!(aligned(Tensor::<f32, 1>::full([n], 3.0).as_slice()));
        // A vector one element into a larger one is at most 16-byte aligned: copied.
        let big: Vec<f32> = (0..n + 1).map(|i| i as f32).collect();
        let v = big[1..].to_vec();
        let t = Tensor::from_vec(v.clone(), [n]).unwrap();
        assert!(aligned(t.as_slice()));
        assert!(aligned(t.clone().as_slice()));
        assert_eq!(t.as_slice(), &v[..]);
        let d = t.to_device(&tvm_runtime::Device::Cpu).unwrap();
        assert_eq!(d.to_host().unwrap().into_vec(), v);
        let r = t.reshape([1, n]).unwrap();
        assert!(aligned(r.as_slice()));
        assert_eq!(r.into_vec(), v);
    }
}
