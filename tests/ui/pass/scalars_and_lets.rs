use tvm::{compute, Tensor};

// Scalars are values of their declared type (`lo: i32` clamps an `i32`, `lo: T` a `T`),
// literals take the type around them, integer scalars are `i64` in index arithmetic, and
// a block names values with `let`.
compute! {
    pub fn clamp_i32(x: i32[n], lo: i32, hi: i32) -> y: i32[n] {
        y[i] = x[i].clamp(lo, hi) + 1;
    }
}

compute! {
    pub fn clamp_any<T: Signed>(x: T[n], lo: T, hi: T) -> y: T[n] {
        y[i] = x[i].clamp(lo, hi);
    }
}

compute! {
    pub fn shifted(x: f32[n], k: i32) -> y: f32[n] {
        y[i] = if i + k < n { x[i + k] } else { 0.0 };
    }
}

compute! {
    pub fn bias_gelu(x: f32[M, N], b: f32[N]) -> y: f32[M, N] {
        y[i, j] = {
            let v = x[i, j] + b[j];
            0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044_715 * v.powi(3))).tanh())
        };
    }
}

fn main() -> Result<(), tvm::Error> {
    let x = Tensor::from_vec(vec![-9, 0, 3, 12], [4])?;
    assert_eq!(clamp_i32(&x, -2, 5)?.as_slice(), &[-1, 1, 4, 6]);
    let x8 = Tensor::from_vec(vec![-100i8, 0, 100], [3])?;
    assert_eq!(clamp_any(&x8, -10i8, 10i8)?.as_slice(), &[-10, 0, 10]);
    let xf = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3])?;
    assert_eq!(shifted(&xf, 1)?.as_slice(), &[2.0, 3.0, 0.0]);
    let (xg, b) = (Tensor::from_vec(vec![0.5f32; 6], [2, 3])?, Tensor::from_vec(vec![0.25f32; 3], [3])?);
    let v = 0.75f32;
    let want = 0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044_715 * v.powi(3))).tanh());
    assert!(bias_gelu(&xg, &b)?.as_slice().iter().all(|y| (y - want).abs() < 1e-6));
    Ok(())
}
