//! The `help:` suggestions of tests/ui/compute/, applied as written: each must compile.

use tvm::compute;

// missing_index.rs: "write one index per dim, e.g. `x[i, 0]`"
compute! {
    pub fn first_column(x: f32[M, N]) -> y: f32[M] {
        y[i] = x[i, 0];
    }
}

// wrong_number_of_indices.rs: "write one index per dim, e.g. `a[i]`"
compute! {
    pub fn copy(a: f32[n]) -> c: f32[n] {
        c[i] = a[i];
    }
}

// narrow_integer_scalar.rs: "cast one side, e.g. `s as i32`"
compute! {
    pub fn add_scalar(x: i32[n], s: i32) -> y: i32[n] {
        y[i] = x[i] + s as i32;
    }
}

// mismatched_operand_types.rs: "cast one side, e.g. `k as i32`"
compute! {
    pub fn offset(a: i32[n], k: i64) -> c: i32[n] {
        c[i] = a[i] + k as i32;
    }
}

// A 2-D read in a 2-D stage fills the missing index with the stage's spare axis.
compute! {
    pub fn copy2(x: f32[M, N]) -> y: f32[M, N] {
        y[i, j] = x[i, j];
    }
}

fn main() {
    let x = tvm::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]).unwrap();
    assert_eq!(first_column(&x).unwrap().as_slice(), &[1.0, 3.0]);
    let v = tvm::Tensor::from_vec(vec![1i32, 2], [2]).unwrap();
    assert_eq!(add_scalar(&v, 5).unwrap().as_slice(), &[6, 7]);
}
