//! Conversions between `Tensor` and `ndarray` arrays (feature `ndarray`): values survive
//! every layout, and a tensor becomes a standard-layout array.
#![cfg(feature = "ndarray")]

use tvm_runtime::ndarray::{arr2, s, Array, Array2, Array3, ArrayD, Axis, Ix2, IxDyn};
use tvm_runtime::{Error, Tensor};

fn sample() -> Array2<f32> {
    // 2 x 3, values 0..6 in row-major order.
    Array::from_shape_vec((2, 3), (0..6).map(|x| x as f32).collect()).unwrap()
}

#[test]
fn standard_layout_round_trip() {
    let a = sample();
    let t = Tensor::<f32, 2>::from_ndarray(&a).unwrap();
    assert_eq!((t.shape(), t.as_slice()), ([2, 3], a.as_slice().unwrap()));
    let back: Array2<f32> = t.clone().into();
    assert_eq!(back, a);
    assert_eq!(t.as_ndarray(), a.view());
    assert_eq!(Tensor::<f32, 2>::from(a.clone()), t);
    assert_eq!(Tensor::<f32, 2>::from(a.view()), t);
}

#[test]
fn transposed_views_are_copied_in_logical_order() {
    let a = sample();
    let view = a.t(); // 3 x 2, column-major in memory
    assert!(!view.is_standard_layout());
    let t = Tensor::<f32, 2>::from_ndarray(&view).unwrap();
    assert_eq!(t.shape(), [3, 2]);
    assert_eq!(t.as_slice(), &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    for i in 0..3 {
        for j in 0..2 {
            assert_eq!(t[[i, j]], view[[i, j]]);
        }
    }
    assert_eq!(t.clone().into_ndarray(), view);
    // The owned transposed array too.
    assert_eq!(Tensor::<f32, 2>::from(a.clone().reversed_axes()), t);
}

#[test]
fn strided_negative_and_sliced_arrays() {
    let a: Array3<i32> = Array::from_shape_vec((2, 3, 4), (0..24).collect()).unwrap();
    let v = a.slice(s![.., ..;-1, 1..;2]); // reversed middle axis, stepped last axis
    let t = Tensor::<i32, 3>::from_ndarray(&v).unwrap();
    assert_eq!(t.shape(), [2, 3, 2]);
    assert_eq!(t.as_slice(), v.iter().copied().collect::<Vec<_>>().as_slice());
    assert_eq!(t.as_ndarray(), v);
    // An owned standard-layout array whose data starts at an offset.
    let mut owned = a.clone();
    owned.slice_collapse(s![1.., .., ..]);
    let t = Tensor::<i32, 3>::from(owned);
    assert_eq!(t.as_slice(), (12..24).collect::<Vec<_>>().as_slice());
    // Axis-permuted owned array.
    let mut p = a.clone();
    p.swap_axes(0, 2);
    let t = Tensor::<i32, 3>::from(p.clone());
    assert_eq!(t.shape(), [4, 3, 2]);
    assert_eq!(t.as_ndarray(), p);
}

#[test]
fn dynamic_rank_arrays_check_the_rank() {
    let d: ArrayD<f64> = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(Tensor::<f64, 2>::from_ndarray(&d).unwrap().as_slice(), &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(Tensor::<f64, 3>::from_ndarray(&d), Err(Error::RankMismatch { expected: 3, got: 2 }));
    let d2 = d.into_dimensionality::<Ix2>().unwrap();
    assert_eq!(Tensor::<f64, 2>::from(d2).shape(), [2, 2]);
}

#[test]
fn zero_sized_and_scalar_arrays() {
    let e = Array2::<f32>::zeros((0, 5));
    let t = Tensor::<f32, 2>::from_ndarray(&e.t()).unwrap();
    assert_eq!((t.shape(), t.len()), ([5, 0], 0));
    let back: Array2<f32> = t.into();
    assert_eq!(back.shape(), &[5, 0]);
    assert_eq!(Tensor::<f32, 2>::from(Array2::<f32>::zeros((3, 0))).shape(), [3, 0]);
    let s = Tensor::from_vec(vec![4u8], []).unwrap();
    assert_eq!(s.into_ndarray().into_scalar(), 4);
}

#[test]
fn mutable_views_write_through() {
    let mut t = Tensor::<f32, 2>::zeros([2, 2]);
    t.as_ndarray_mut().assign(&arr2(&[[1.0, 2.0], [3.0, 4.0]]));
    t.as_ndarray_mut().index_axis_mut(Axis(0), 1).fill(9.0);
    assert_eq!(t.as_slice(), &[1.0, 2.0, 9.0, 9.0]);
}

#[test]
fn every_rank_up_to_six_converts() {
    let t4 = Tensor::<u8, 4>::from_vec((0..16).collect(), [2, 2, 2, 2]).unwrap();
    let a4: tvm_runtime::ndarray::Array4<u8> = t4.clone().into();
    assert_eq!(Tensor::from(a4), t4);
    let t6 = Tensor::<u8, 6>::from_vec((0..64).collect(), [2; 6]).unwrap();
    let a6: tvm_runtime::ndarray::Array6<u8> = t6.clone().into();
    assert_eq!(a6[[1, 0, 1, 0, 1, 1]], 0b101011);
    assert_eq!(Tensor::from(a6), t6);
}
