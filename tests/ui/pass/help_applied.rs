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

// bool_cast_to_float.rs: "cast to an integer first: `(i > 0) as i32 as f32`, or write
// `if (i > 0) { 1.0 } else { 0.0 }`"
compute! {
    pub fn positive(x: f32[n]) -> y: f32[n] {
        y[i] = x[i] * ((i > 0) as i32 as f32);
    }
}
compute! {
    pub fn positive_if(x: f32[n]) -> y: f32[n] {
        y[i] = x[i] * (if (i > 0) { 1.0 } else { 0.0 });
    }
}

// not_on_integer.rs: "compare instead: `x[i] == 0`"
compute! {
    pub fn flags(x: i32[n]) -> y: bool[n] {
        y[i] = x[i] == 0;
    }
}

// tensor_without_indices.rs: "read an element, e.g. `bias[j]`" (the axis over the same dim)
compute! {
    pub fn add_bias(x: f32[M, N], bias: f32[N]) -> y: f32[M, N] {
        y[i, j] = x[i, j] + bias[j];
    }
}

// reduction_not_whole_rhs.rs: "e.g. `let c_sum[i]: f32[M] = sum(a[i, k] for k in 0..K);`,
// and read `c_sum[i]` here"
compute! {
    pub fn row_sum_plus_one(a: f32[M, K]) -> c: f32[M] {
        let c_sum[i]: f32[M] = sum(a[i, k] for k in 0..K);
        c[i] = 1.0 + c_sum[i];
    }
}

// let_on_output.rs: "write the output's stage without `let`: `y[i] = x[i] * 2.0;`"
compute! {
    pub fn scaled(x: f32[n]) -> y: f32[n] {
        y[i] = x[i] * 2.0;
    }
}

// reduction_without_for.rs: "write `sum(a[i, k] for k in 0..K)`", "for a reduction write
// `max(a[i, j] for j in 0..N)`", "`max` of several values nests: `max(a[i], max(b[i], d[i]))`"
compute! {
    pub fn row_sum(a: f32[M, K]) -> c: f32[M] {
        c[i] = sum(a[i, k] for k in 0..K);
    }
}
compute! {
    pub fn row_max(a: f32[M, N]) -> c: f32[M] {
        c[i] = max(a[i, j] for j in 0..N);
    }
}
compute! {
    pub fn max3(a: f32[n], b: f32[n], d: f32[n]) -> c: f32[n] {
        c[i] = max(a[i], max(b[i], d[i]));
    }
}

// output_never_written.rs: "add a stage that writes it, e.g. `d[i] = 0.0;`"
compute! {
    pub fn two_outputs(a: f32[n]) -> (c: f32[n], d: f32[n]) {
        c[i] = a[i] * 2.0;
        d[i] = 0.0;
    }
}

// stage_writes_undeclared_tensor.rs: "declare it as an intermediate:
// `let t[i]: f32[n] = a[i] * 2.0;`"
compute! {
    pub fn scaled_plus_one(a: f32[n]) -> c: f32[n] {
        let t[i]: f32[n] = a[i] * 2.0;
        c[i] = a[i] + 1.0;
    }
}

fn main() {
    let x = tvm::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]).unwrap();
    assert_eq!(first_column(&x).unwrap().as_slice(), &[1.0, 3.0]);
    let v = tvm::Tensor::from_vec(vec![1i32, 2], [2]).unwrap();
    assert_eq!(add_scalar(&v, 5).unwrap().as_slice(), &[6, 7]);
    assert_eq!(row_sum_plus_one(&x).unwrap().as_slice(), &[4.0, 8.0]);
    assert_eq!(add_bias(&x, &tvm::Tensor::from_vec(vec![10.0f32, 20.0], [2]).unwrap()).unwrap().as_slice(), &[11.0, 22.0, 13.0, 24.0]);
}
