//! Conversions between [`Tensor`] and `ndarray` arrays (feature `ndarray`). Arrays of any
//! layout (transposed, sliced with steps, negative strides) are copied in standard
//! (row-major, logical) order; a tensor becomes a standard-layout array without copying.

use super::element::Element;
use super::error::Error;
use super::tensor::{element_count, Tensor};
use ndarray::{Array, ArrayBase, ArrayView, ArrayViewMut, Data, Dim, Dimension, Ix, OwnedRepr};

/// `shape` as an `ndarray` dimension of rank `R`.
fn dim_of<const R: usize>(shape: [usize; R]) -> Dim<[Ix; R]>
where
    Dim<[Ix; R]>: Dimension,
{
    let mut dim = <Dim<[Ix; R]> as Dimension>::zeros(R);
    dim.slice_mut().copy_from_slice(&shape);
    dim
}

impl<T: Element, const R: usize> Tensor<T, R> {
    /// A copy of `array` (any layout, any storage: `Array`, `ArrayView`, ...) in standard
    /// order; `Err(RankMismatch)` if a dynamic-rank array does not have `R` dimensions.
    pub fn from_ndarray<S, D>(array: &ArrayBase<S, D>) -> Result<Self, Error>
    where
        S: Data<Elem = T>,
        D: Dimension,
    {
        if array.ndim() != R {
            return Err(Error::RankMismatch { expected: R, got: array.ndim() });
        }
        let mut shape = [0usize; R];
        shape.copy_from_slice(array.shape());
        let data = match array.as_slice() {
            Some(slice) => slice.to_vec(),
            None => array.iter().copied().collect(),
        };
        Tensor::from_vec(data, shape)
    }

    /// The tensor as an owned `ndarray` array of the same shape, without copying.
    pub fn into_ndarray(self) -> Array<T, Dim<[Ix; R]>>
    where
        Dim<[Ix; R]>: Dimension,
    {
        let (data, shape) = self.into_parts();
        Array::from_shape_vec(dim_of(shape), data)
            .unwrap_or_else(|e| unreachable!("a tensor's shape is a valid ndarray shape: {e}"))
    }

    /// A view of the tensor as an `ndarray` array.
    pub fn as_ndarray(&self) -> ArrayView<'_, T, Dim<[Ix; R]>>
    where
        Dim<[Ix; R]>: Dimension,
    {
        ArrayView::from_shape(dim_of(self.shape()), self.as_slice())
            .unwrap_or_else(|e| unreachable!("a tensor's shape is a valid ndarray shape: {e}"))
    }

    /// A mutable view of the tensor as an `ndarray` array.
    pub fn as_ndarray_mut(&mut self) -> ArrayViewMut<'_, T, Dim<[Ix; R]>>
    where
        Dim<[Ix; R]>: Dimension,
    {
        let shape = self.shape();
        ArrayViewMut::from_shape(dim_of(shape), self.as_mut_slice())
            .unwrap_or_else(|e| unreachable!("a tensor's shape is a valid ndarray shape: {e}"))
    }
}

impl<T: Element, const R: usize> From<Tensor<T, R>> for Array<T, Dim<[Ix; R]>>
where
    Dim<[Ix; R]>: Dimension,
{
    fn from(tensor: Tensor<T, R>) -> Self {
        tensor.into_ndarray()
    }
}

impl<T: Element, const R: usize> From<ArrayBase<OwnedRepr<T>, Dim<[Ix; R]>>> for Tensor<T, R>
where
    Dim<[Ix; R]>: Dimension,
{
    /// The array's elements in standard order: moved when the array is in standard
    /// layout, copied otherwise.
    fn from(array: Array<T, Dim<[Ix; R]>>) -> Self {
        let mut shape = [0usize; R];
        shape.copy_from_slice(array.shape());
        let n = array.len();
        let data = if n == 0 {
            Vec::new()
        } else if array.is_standard_layout() {
            // Standard layout: the elements are contiguous, in order, from the offset on.
            let (mut data, offset) = array.into_raw_vec_and_offset();
            let offset = offset.unwrap_or(0);
            if offset == 0 && data.len() == n {
                data
            } else {
                data.drain(offset..offset + n).collect()
            }
        } else {
            array.iter().copied().collect()
        };
        debug_assert_eq!(element_count::<T>(&shape).ok(), Some(data.len()));
        Tensor::from_vec(data, shape)
            .unwrap_or_else(|e| unreachable!("an ndarray array's shape is a valid tensor shape: {e}"))
    }
}

impl<'a, T: Element, const R: usize> From<ArrayView<'a, T, Dim<[Ix; R]>>> for Tensor<T, R>
where
    Dim<[Ix; R]>: Dimension,
{
    /// A copy of the view's elements in standard order.
    fn from(view: ArrayView<'a, T, Dim<[Ix; R]>>) -> Self {
        Tensor::from_ndarray(&view)
            .unwrap_or_else(|e| unreachable!("an ndarray array's shape is a valid tensor shape: {e}"))
    }
}
