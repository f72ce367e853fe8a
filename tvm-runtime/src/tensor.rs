//! [`Tensor`]: a host tensor of rank `R`, row-major and contiguous (docs/LANGUAGE.md §4).

use super::element::Element;
use super::error::Error;
use super::storage::{host_oom, Storage};
use crate::dtype::DType;
use std::fmt;
use std::ops::{Index, IndexMut};

/// A host tensor of `T` with `R` dimensions, stored row-major (the last index fastest) in
/// one contiguous block that starts at a multiple of 64 bytes (see [`Tensor::from_vec`]).
///
/// Invariants, checked by every constructor: the data holds exactly the product of the
/// shape's dimensions, and the shape is addressable: the product of its non-zero
/// dimensions, and that times `size_of::<T>()`, are at most `isize::MAX` (the rule of
/// Rust's slices and of `ndarray`). A zero-sized dimension is valid (an empty tensor);
/// `R = 0` is a scalar with one element.
#[derive(Clone)]
pub struct Tensor<T: Element, const R: usize> {
    data: Storage<T>,
    shape: [usize; R],
}

impl<T: Element, const R: usize> PartialEq for Tensor<T, R> {
    fn eq(&self, o: &Self) -> bool {
        self.shape == o.shape && self.as_slice() == o.as_slice()
    }
}

impl<T: Element + Eq, const R: usize> Eq for Tensor<T, R> {}

impl<T: Element + std::hash::Hash, const R: usize> std::hash::Hash for Tensor<T, R> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_slice().hash(h);
        self.shape.hash(h);
    }
}

/// `Err(SizeOverflow)` if `shape` cannot be addressed, `Err(LengthMismatch)` if it does
/// not hold `len` elements.
fn check_len<T>(len: usize, shape: &[usize]) -> Result<(), Error> {
    if element_count::<T>(shape)? != len {
        return Err(Error::LengthMismatch { len, shape: shape.to_vec() });
    }
    Ok(())
}

/// The number of elements of `shape` for elements of `T`, or `SizeOverflow`.
pub(crate) fn element_count<T>(shape: &[usize]) -> Result<usize, Error> {
    let overflow = || Error::SizeOverflow { shape: shape.to_vec() };
    let mut nonzero: usize = 1;
    let mut has_zero = false;
    for &d in shape {
        if d == 0 {
            has_zero = true;
        } else {
            nonzero = nonzero.checked_mul(d).filter(|&n| n <= isize::MAX as usize).ok_or_else(overflow)?;
        }
    }
    let bytes = nonzero.checked_mul(std::mem::size_of::<T>().max(1)).ok_or_else(overflow)?;
    if bytes > isize::MAX as usize {
        return Err(overflow());
    }
    Ok(if has_zero { 0 } else { nonzero })
}

impl<T: Element, const R: usize> Tensor<T, R> {
    /// A tensor of `shape` holding `data` in row-major order; `Err(LengthMismatch)` if
    /// `data` does not hold exactly as many elements as the shape, `Err(SizeOverflow)` if
    /// the shape is too large to address.
    ///
    /// Tensor data starts at a multiple of 64 bytes (a cache line, one AVX-512 register),
    /// as TVM's and ONNX Runtime's arrays do, so that a kernel's vector rows do not
    /// straddle cache lines: `data` is kept as it is when it starts there (then
    /// [`Tensor::into_vec`] gives the same buffer back), and copied once into such a block
    /// otherwise (`Err(OutOfMemory)` if that memory cannot be had).
    pub fn from_vec(data: Vec<T>, shape: [usize; R]) -> Result<Self, Error> {
        check_len::<T>(data.len(), &shape)?;
        Ok(Tensor { data: Storage::try_from_vec(data).map_err(host_oom)?, shape })
    }

    /// A tensor of `shape` with every element `value`; `Err(SizeOverflow)` if the shape is
    /// too large to address, `Err(OutOfMemory)` if the allocator has no memory for it.
    pub fn try_full(shape: [usize; R], value: T) -> Result<Self, Error> {
        let n = element_count::<T>(&shape)?;
        Ok(Tensor { data: Storage::try_filled(n, value).map_err(host_oom)?, shape })
    }

    /// A tensor of `shape` with every element `value`.
    ///
    /// # Panics
    /// If the shape is too large to address or the memory cannot be had (as `vec!`
    /// does); [`Tensor::try_full`] returns those as an `Err`.
    pub fn full(shape: [usize; R], value: T) -> Self {
        Self::try_full(shape, value).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A tensor of `shape` filled with zeros (`false`, `+0.0`); `Err(SizeOverflow)` if the
    /// shape is too large to address.
    pub fn try_zeros(shape: [usize; R]) -> Result<Self, Error> {
        Self::try_full(shape, T::default())
    }

    /// A tensor of `shape` filled with zeros (`false`, `+0.0`).
    ///
    /// # Panics
    /// If the shape is too large to address or the memory cannot be had (as `vec!`
    /// does); [`Tensor::try_zeros`] returns those as an `Err`.
    pub fn zeros(shape: [usize; R]) -> Self {
        Self::try_zeros(shape).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The shape, outermost dimension first.
    pub fn shape(&self) -> [usize; R] {
        self.shape
    }

    /// The row-major strides in elements (the last is 1).
    pub fn strides(&self) -> [usize; R] {
        let mut strides = [1usize; R];
        for i in (0..R.saturating_sub(1)).rev() {
            // Cannot overflow: the product of the non-zero dims fits in isize.
            strides[i] = strides[i + 1] * self.shape[i + 1].max(1);
        }
        strides
    }

    /// The number of dimensions, `R`.
    pub const fn rank(&self) -> usize {
        R
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the tensor has no elements (some dimension is zero).
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// The elements in row-major order.
    pub fn as_slice(&self) -> &[T] {
        self.data.as_slice()
    }

    /// The elements in row-major order, mutably (the shape cannot change).
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.data.as_mut_slice()
    }

    /// The elements in row-major order: the `Vec` given to [`Tensor::from_vec`] when it
    /// was kept, else a copy.
    pub fn into_vec(self) -> Vec<T> {
        self.data.into_vec()
    }

    /// The elements in row-major order and the shape (as [`Tensor::into_vec`]).
    pub fn into_parts(self) -> (Vec<T>, [usize; R]) {
        (self.data.into_vec(), self.shape)
    }

    /// The row-major offset of `index`, `None` if any coordinate is out of bounds.
    fn offset(&self, index: [usize; R]) -> Option<usize> {
        let mut off = 0usize;
        for (i, (&x, &d)) in index.iter().zip(&self.shape).enumerate() {
            if x >= d {
                return None;
            }
            off = if i == 0 { x } else { off * d + x };
        }
        Some(off)
    }

    /// The element at `index`, `None` if out of bounds.
    pub fn get(&self, index: [usize; R]) -> Option<&T> {
        self.offset(index).map(|o| &self.as_slice()[o])
    }

    /// The element at `index`, mutably, `None` if out of bounds.
    pub fn get_mut(&mut self, index: [usize; R]) -> Option<&mut T> {
        self.offset(index).map(|o| &mut self.as_mut_slice()[o])
    }

    /// The same elements under another shape of the same element count;
    /// `Err(LengthMismatch)` otherwise.
    pub fn reshape<const R2: usize>(self, shape: [usize; R2]) -> Result<Tensor<T, R2>, Error> {
        check_len::<T>(self.len(), &shape)?;
        Ok(Tensor { data: self.data, shape })
    }
}

impl<T: Element> From<Vec<T>> for Tensor<T, 1> {
    /// A rank-1 tensor of the vector's elements.
    ///
    /// # Panics
    /// If the data must be copied to be aligned (see [`Tensor::from_vec`]) and the memory
    /// cannot be had, as `vec!` does.
    fn from(data: Vec<T>) -> Self {
        let shape = [data.len()];
        let data = Storage::try_from_vec(data).unwrap_or_else(|bytes| panic!("{}", host_oom(bytes)));
        Tensor { data, shape }
    }
}

impl<T: Element, const R: usize> AsRef<[T]> for Tensor<T, R> {
    fn as_ref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Element, const R: usize> Index<[usize; R]> for Tensor<T, R> {
    type Output = T;
    /// # Panics
    /// If `index` is out of bounds, as slice indexing does; see [`Tensor::get`].
    fn index(&self, index: [usize; R]) -> &T {
        match self.offset(index) {
            Some(o) => &self.as_slice()[o],
            None => panic!("index {index:?} is out of bounds for a tensor of shape {:?}", self.shape),
        }
    }
}

impl<T: Element, const R: usize> IndexMut<[usize; R]> for Tensor<T, R> {
    /// # Panics
    /// If `index` is out of bounds, as slice indexing does; see [`Tensor::get_mut`].
    fn index_mut(&mut self, index: [usize; R]) -> &mut T {
        match self.offset(index) {
            Some(o) => &mut self.as_mut_slice()[o],
            None => panic!("index {index:?} is out of bounds for a tensor of shape {:?}", self.shape),
        }
    }
}

impl<T: Element, const R: usize> fmt::Debug for Tensor<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &format_args!("{}", T::DTYPE.name()))
            .field("shape", &self.shape)
            .field("data", &self.as_slice())
            .finish()
    }
}
