//! Every kernel of the corpus under (a) the default CPU schedule, (b) its hand-written CPU
//! schedule, (c) the default GPU schedule and (d) its hand-written GPU schedule (thread
//! binding, shared-memory caches, compute_at, cross-thread reductions), on shapes that do
//! and do not divide the split factors, compared with the plain references of
//! `support/reference.rs`. Every variant runs on the TIR interpreter; the GPU variants
//! also run on every OpenCL device (PoCL in CI), lowered for OpenCL and printed as
//! OpenCL C (see `common::check`).

mod common;
use common::reference as r;
use common::*;

const VECTOR_ADD: &str = include_str!("corpus/vector_add.rs");

#[test]
fn vector_add() {
    for n in [64usize, 77, 1] {
        let a = rand_vec(n, 1);
        let b = rand_vec(n, 2);
        let want = r::vector_add(&a, &b);
        for v in Variant::CPU_GPU {
            check(VECTOR_ADD, v, vec![t(&[n], &a), t(&[n], &b)], vec![], &[n], &want, &format!("vector_add n={n}"));
        }
    }
}

const MATMUL: &str = include_str!("corpus/matmul.rs");

#[test]
fn matmul() {
    for (m, k, n) in [(16, 16, 16), (13, 19, 11)] {
        let a = rand_vec(m * k, 3);
        let b = rand_vec(k * n, 4);
        let want = r::matmul(&a, &b, m, k, n);
        for v in Variant::CPU_GPU {
            let inputs = vec![t(&[m, k], &a), t(&[k, n], &b)];
            check(MATMUL, v, inputs, vec![], &[m, n], &want, &format!("matmul {m}x{k}x{n}"));
        }
    }
}

const DENSE: &str = include_str!("corpus/dense_bias_relu.rs");

#[test]
fn dense_bias_relu() {
    for (m, k, n) in [(8, 8, 16), (7, 13, 10)] {
        let x = rand_vec(m * k, 5);
        let w = rand_vec(n * k, 6);
        let bias = rand_vec(n, 7);
        let want = r::dense_bias_relu(&x, &w, &bias, m, k, n);
        for v in Variant::CPU_GPU {
            let inputs = vec![t(&[m, k], &x), t(&[n, k], &w), t(&[n], &bias)];
            check(DENSE, v, inputs, vec![], &[m, n], &want, &format!("dense {m}x{k}x{n}"));
        }
    }
}

const SOFTMAX: &str = include_str!("corpus/softmax.rs");

#[test]
fn softmax() {
    for rows in [4usize, 3] {
        let x = rand_vec(rows * 40, 8);
        let want = r::softmax(&x, rows, 40);
        for v in Variant::CPU_GPU {
            check(SOFTMAX, v, vec![t(&[rows, 40], &x)], vec![], &[rows, 40], &want, &format!("softmax rows={rows}"));
        }
    }
}

const CONV2D: &str = include_str!("corpus/conv2d.rs");

#[test]
fn conv2d() {
    for (nb, f, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 3, 5, 7)] {
        let data = rand_vec(nb * 3 * h * w, 9);
        let wt = rand_vec(f * 27, 10);
        let want = r::conv2d_3x3(&data, &wt, nb, 3, f, h, w);
        for v in Variant::CPU_GPU {
            let inputs = vec![t(&[nb, 3, h, w], &data), t(&[f, 3, 3, 3], &wt)];
            check(CONV2D, v, inputs, vec![], &[nb, f, h, w], &want, &format!("conv2d {nb}x{f}x{h}x{w}"));
        }
    }
}

const TRANSPOSE: &str = include_str!("corpus/transpose.rs");

#[test]
fn transpose() {
    for (m, n) in [(16usize, 8usize), (9, 13)] {
        let a = rand_vec(m * n, 11);
        let want = r::transpose(&a, m, n);
        for v in Variant::CPU_GPU {
            check(TRANSPOSE, v, vec![t(&[m, n], &a)], vec![], &[n, m], &want, &format!("transpose {m}x{n}"));
        }
    }
}

const MAXPOOL: &str = include_str!("corpus/max_pool.rs");

#[test]
fn max_pool() {
    for (nb, c, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 1, 6, 9)] {
        let data = rand_vec(nb * c * h * w, 12);
        let want = r::max_pool_3x3(&data, nb, c, h, w);
        for v in Variant::CPU_GPU {
            let what = format!("max_pool {nb}x{c}x{h}x{w}");
            check(MAXPOOL, v, vec![t(&[nb, c, h, w], &data)], vec![], &[nb, c, h, w], &want, &what);
        }
    }
}

const SUM2: &str = include_str!("corpus/sum_two_axes.rs");

#[test]
fn sum_two_axes() {
    for (a, b, c) in [(4usize, 4usize, 8usize), (3, 4, 8)] {
        let x = rand_vec(a * b * c, 13);
        let want = r::row_sum(&x, a, b * c);
        for v in Variant::CPU_GPU {
            check(SUM2, v, vec![t(&[a, b, c], &x)], vec![], &[a], &want, &format!("sum_two_axes {a}x{b}x{c}"));
        }
    }
}

const ROW_SUM_RFACTOR: &str = include_str!("corpus/row_sum_rfactor.rs");

#[test]
fn row_sum_cross_thread_with_rfactor() {
    for (m, n) in [(4usize, 64usize), (3, 37)] {
        let x = rand_vec(m * n, 14);
        let want = r::row_sum(&x, m, n);
        for v in Variant::CPU_GPU {
            check(ROW_SUM_RFACTOR, v, vec![t(&[m, n], &x)], vec![], &[m], &want, &format!("row_sum {m}x{n}"));
        }
    }
}

const SCALE: &str = include_str!("corpus/scale.rs");

#[test]
fn scalar_parameter() {
    let x = rand_vec(10, 15);
    let want = r::scale(&x, 2.5);
    for v in Variant::CPU_GPU {
        check(SCALE, v, vec![t(&[10], &x)], vec![scalar_f32(2.5)], &[10], &want, "scale");
    }
}
