//! Every kernel of the suite, under (a) the default CPU schedule, (b) a hand-written CPU
//! schedule, (c) a GPU schedule with thread binding, shared-memory caching and
//! compute_at, and (d) cross-thread reductions where the kernel reduces, run on the
//! TIR interpreter and compared with a plain Rust reference (relative tolerance 1e-5),
//! on shapes that do and do not divide the split factors.

mod common;
use common::*;

const VECTOR_ADD: &str = r#"
    fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }
    schedule!(cpu) {
        let (o, v) = c.split(c.i, 8);
        let (oo, oi) = c.split(o, 4);
        c.parallel(oo);
        c.unroll(oi);
        c.vectorize(v);
    }
    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 32);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
        let a_s = a.cache_read(shared, [c]);
        a_s.compute_at(c, bx);
        let [ax] = a_s.axes();
        a_s.bind(ax, thread.x);
    }
"#;

#[test]
fn vector_add() {
    for n in [64usize, 77, 1] {
        let a = rand_vec(n, 1);
        let b = rand_vec(n, 2);
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        for v in Variant::CPU_GPU {
            let got = run_f32(VECTOR_ADD, v, vec![t(&[n], &a), t(&[n], &b)], vec![], &[n]);
            assert_close(&got, &want, &format!("vector_add {v:?} n={n}"));
        }
    }
}

const MATMUL: &str = r#"
    fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }
    schedule!(cpu) {
        let cl = c.cache_write(local);
        let (io, jo, ii, ji) = c.tile(c.i, c.j, 8, 8);
        c.parallel(io);
        c.vectorize(ji);
        cl.compute_at(c, jo);
        let (ko, ki) = cl.split(cl.k, 4);
        let [ci, cj] = cl.axes();
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(ki);
        cl.vectorize(cj);
    }
    schedule!(cuda) {
        let (bi, bj, ti, tj) = c.tile(c.i, c.j, 8, 8);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ti, thread.y);
        c.bind(tj, thread.x);
        let (ko, ki) = c.split(c.k, 8);
        let a_s = a.cache_read(shared, [c]);
        let b_s = b.cache_read(shared, [c]);
        a_s.compute_at(c, ko);
        b_s.compute_at(c, ko);
        let [ay, ax] = a_s.axes();
        a_s.bind(ay, thread.y);
        a_s.bind(ax, thread.x);
        let [by, bx] = b_s.axes();
        b_s.bind(by, thread.y);
        b_s.bind(bx, thread.x);
    }
"#;

fn matmul_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f32;
            for p in 0..k {
                s += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = s;
        }
    }
    c
}

#[test]
fn matmul() {
    for (m, k, n) in [(16, 16, 16), (13, 19, 11)] {
        let a = rand_vec(m * k, 3);
        let b = rand_vec(k * n, 4);
        let want = matmul_ref(&a, &b, m, k, n);
        for v in Variant::CPU_GPU {
            let got = run_f32(MATMUL, v, vec![t(&[m, k], &a), t(&[k, n], &b)], vec![], &[m, n]);
            assert_close(&got, &want, &format!("matmul {v:?} {m}x{k}x{n}"));
        }
    }
}

const DENSE: &str = r#"
    fn dense_bias_relu(x: f32[M, K], w: f32[N, K], bias: f32[N]) -> out: f32[M, N] {
        let d[i, j]: f32[M, N] = sum(x[i, k] * w[j, k] for k in 0..K);
        out[i, j] = max(d[i, j] + bias[j], 0.0);
    }
    schedule!(cpu) {
        let (io, jo, ii, ji) = out.tile(out.i, out.j, 4, 8);
        out.parallel(io);
        out.vectorize(ji);
        d.compute_at(out, jo);
        let (ko, ki) = d.split(d.k, 4);
        d.unroll(ki);
    }
    schedule!(cuda) {
        let (bi, bj, ti, tj) = out.tile(out.i, out.j, 4, 8);
        out.bind(bi, block.y);
        out.bind(bj, block.x);
        out.bind(ti, thread.y);
        out.bind(tj, thread.x);
        d.compute_at(out, tj);
        let (ko, ki) = d.split(d.k, 4);
        let x_s = x.cache_read(shared, [d]);
        x_s.compute_at(d, ko);
        let [xy, xk] = x_s.axes();
        x_s.bind(xy, thread.y);
        x_s.bind(xk, thread.x);
    }
"#;

#[test]
fn dense_bias_relu() {
    for (m, k, n) in [(8, 8, 16), (7, 13, 10)] {
        let x = rand_vec(m * k, 5);
        let w = rand_vec(n * k, 6);
        let bias = rand_vec(n, 7);
        let mut want = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for p in 0..k {
                    s += x[i * k + p] * w[j * k + p];
                }
                want[i * n + j] = (s + bias[j]).max(0.0);
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(DENSE, v, vec![t(&[m, k], &x), t(&[n, k], &w), t(&[n], &bias)], vec![], &[m, n]);
            assert_close(&got, &want, &format!("dense {v:?} {m}x{k}x{n}"));
        }
    }
}

const SOFTMAX: &str = r#"
    fn softmax(x: f32[M, 40]) -> y: f32[M, 40] {
        let m[i]: f32[M] = max(x[i, j] for j in 0..40);
        let e[i, j]: f32[M, 40] = exp(x[i, j] - m[i]);
        let s[i]: f32[M] = sum(e[i, j] for j in 0..40);
        y[i, j] = e[i, j] / s[i];
    }
    schedule!(cpu) {
        y.parallel(y.i);
        let (jo, ji) = y.split(y.j, 8);
        y.vectorize(ji);
        m.compute_at(y, y.i);
        e.compute_at(y, y.i);
        s.compute_at(y, y.i);
    }
    schedule!(cuda) {
        y.bind(y.i, block.x);
        let (jo, ji) = y.split(y.j, 16);
        y.bind(ji, thread.x);
        let x_s = x.cache_read(shared, [m, e]);
        x_s.compute_at(y, y.i);
        let [xr, xc] = x_s.axes();
        let (xo, xi) = x_s.split(xc, 16);
        x_s.bind(xi, thread.x);
        m.compute_at(y, y.i);
        let (mo, mi) = m.split(m.j, 16);
        m.bind(mi, thread.x);
        s.compute_at(y, y.i);
        let (so, si) = s.split(s.j, 16);
        s.bind(si, thread.x);
    }
"#;

fn softmax_ref(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0f32; rows * cols];
    for i in 0..rows {
        let r = &x[i * cols..(i + 1) * cols];
        let m = r.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = r.iter().map(|v| (v - m).exp()).collect();
        let s: f32 = e.iter().sum();
        for j in 0..cols {
            y[i * cols + j] = e[j] / s;
        }
    }
    y
}

#[test]
fn softmax() {
    for rows in [4usize, 3] {
        let x = rand_vec(rows * 40, 8);
        let want = softmax_ref(&x, rows, 40);
        for v in Variant::CPU_GPU {
            let got = run_f32(SOFTMAX, v, vec![t(&[rows, 40], &x)], vec![], &[rows, 40]);
            assert_close(&got, &want, &format!("softmax {v:?} rows={rows}"));
        }
    }
}

const CONV2D: &str = r#"
    fn conv2d(data: f32[N, 3, H, W], w: f32[F, 3, 3, 3]) -> out: f32[N, F, H, W] {
        out[n, f, y, x] = sum(
            if y + r >= 1 && y + r <= H && x + s >= 1 && x + s <= W {
                data[n, c, y + r - 1, x + s - 1]
            } else {
                0.0
            } * w[f, c, r, s]
            for c in 0..3, r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let (xo, xi) = out.split(out.x, 4);
        out.reorder(xo, out.c, out.r, out.s, xi);
        out.parallel(out.f);
        out.unroll(out.s);
        out.vectorize(xi);
    }
    schedule!(cuda) {
        let (yo, xo, yi, xi) = out.tile(out.y, out.x, 4, 4);
        let b = out.fuse(yo, xo);
        out.bind(out.f, block.y);
        out.bind(b, block.x);
        out.bind(yi, thread.y);
        out.bind(xi, thread.x);
        let w_s = w.cache_read(shared, [out]);
        w_s.compute_at(out, b);
        let [wf, wc, wr, ws] = w_s.axes();
        let wcr = w_s.fuse(wc, wr);
        w_s.bind(wcr, thread.y);
        w_s.bind(ws, thread.x);
    }
"#;

#[test]
fn conv2d() {
    for (nb, f, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 3, 5, 7)] {
        let data = rand_vec(nb * 3 * h * w, 9);
        let wt = rand_vec(f * 27, 10);
        let mut want = vec![0f32; nb * f * h * w];
        for n in 0..nb {
            for o in 0..f {
                for y in 0..h {
                    for x in 0..w {
                        let mut acc = 0f32;
                        for c in 0..3 {
                            for r in 0..3 {
                                for s in 0..3 {
                                    let (yy, xx) = (y + r, x + s);
                                    let v = if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                                        data[((n * 3 + c) * h + yy - 1) * w + xx - 1]
                                    } else {
                                        0.0
                                    };
                                    acc += v * wt[((o * 3 + c) * 3 + r) * 3 + s];
                                }
                            }
                        }
                        want[((n * f + o) * h + y) * w + x] = acc;
                    }
                }
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(CONV2D, v, vec![t(&[nb, 3, h, w], &data), t(&[f, 3, 3, 3], &wt)], vec![], &[nb, f, h, w]);
            assert_close(&got, &want, &format!("conv2d {v:?} {nb}x{f}x{h}x{w}"));
        }
    }
}

const TRANSPOSE: &str = r#"
    fn transpose(a: f32[M, N]) -> b: f32[N, M] {
        b[i, j] = a[j, i];
    }
    schedule!(cpu) {
        let (io, jo, ii, ji) = b.tile(b.i, b.j, 4, 4);
        b.parallel(io);
        b.unroll(ii);
        b.vectorize(ji);
    }
    schedule!(cuda) {
        let (bi, bj, ti, tj) = b.tile(b.i, b.j, 8, 8);
        b.bind(bi, block.y);
        b.bind(bj, block.x);
        b.bind(ti, thread.y);
        b.bind(tj, thread.x);
        let a_s = a.cache_read(shared, [b]);
        a_s.compute_at(b, bj);
        let [ay, ax] = a_s.axes();
        a_s.bind(ay, thread.y);
        a_s.bind(ax, thread.x);
    }
"#;

#[test]
fn transpose() {
    for (m, n) in [(16usize, 8usize), (9, 13)] {
        let a = rand_vec(m * n, 11);
        let mut want = vec![0f32; n * m];
        for i in 0..n {
            for j in 0..m {
                want[i * m + j] = a[j * n + i];
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(TRANSPOSE, v, vec![t(&[m, n], &a)], vec![], &[n, m]);
            assert_close(&got, &want, &format!("transpose {v:?} {m}x{n}"));
        }
    }
}

const MAXPOOL: &str = r#"
    fn max_pool(data: f32[N, C, H, W]) -> out: f32[N, C, H, W] {
        out[n, c, y, x] = max(
            if y + r >= 1 && y + r <= H && x + s >= 1 && x + s <= W {
                data[n, c, y + r - 1, x + s - 1]
            } else {
                f32::NEG_INFINITY
            }
            for r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let nc = out.fuse(out.n, out.c);
        out.parallel(nc);
        let (xo, xi) = out.split(out.x, 4);
        out.reorder(xo, out.r, out.s, xi);
        out.vectorize(xi);
    }
    schedule!(cuda) {
        let nc = out.fuse(out.n, out.c);
        out.bind(nc, block.y);
        let (yo, xo, yi, xi) = out.tile(out.y, out.x, 4, 8);
        let b = out.fuse(yo, xo);
        out.bind(b, block.x);
        out.bind(yi, thread.y);
        out.bind(xi, thread.x);
        let d_s = data.cache_read(shared, [out]);
        d_s.compute_at(out, b);
        let [dn, dc, dy, dx] = d_s.axes();
        d_s.bind(dy, thread.y);
        d_s.bind(dx, thread.x);
    }
"#;

#[test]
fn max_pool() {
    for (nb, c, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 1, 6, 9)] {
        let data = rand_vec(nb * c * h * w, 12);
        let mut want = vec![0f32; nb * c * h * w];
        for n in 0..nb {
            for ch in 0..c {
                for y in 0..h {
                    for x in 0..w {
                        let mut m = f32::NEG_INFINITY;
                        for r in 0..3 {
                            for s in 0..3 {
                                let (yy, xx) = (y + r, x + s);
                                if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                                    m = m.max(data[((n * c + ch) * h + yy - 1) * w + xx - 1]);
                                }
                            }
                        }
                        want[((n * c + ch) * h + y) * w + x] = m;
                    }
                }
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(MAXPOOL, v, vec![t(&[nb, c, h, w], &data)], vec![], &[nb, c, h, w]);
            assert_close(&got, &want, &format!("max_pool {v:?} {nb}x{c}x{h}x{w}"));
        }
    }
}

const SUM2: &str = r#"
    fn sum_two_axes(x: f32[A, 4, 8]) -> s: f32[A] {
        s[i] = sum(x[i, j, k] for j in 0..4, k in 0..8);
    }
    schedule!(cpu) {
        let sl = s.cache_write(local);
        let (io, ii) = s.split(s.i, 4);
        s.parallel(io);
        sl.compute_at(s, ii);
        let (ko, ki) = sl.split(sl.k, 2);
        sl.reorder(sl.j, ko, ki);
        sl.unroll(ki);
    }
    schedule!(cuda) {
        s.bind(s.i, block.x);
        let jk = s.fuse(s.j, s.k);
        let (o, t) = s.split(jk, 24);
        s.bind(t, thread.x);
        let x_s = x.cache_read(shared, [s]);
        x_s.compute_at(s, s.i);
        let [xa, xb, xc] = x_s.axes();
        x_s.bind(xc, thread.x);
    }
"#;

#[test]
fn sum_two_axes() {
    for (a, b, c) in [(4usize, 4usize, 8usize), (3, 4, 8)] {
        let x = rand_vec(a * b * c, 13);
        let want: Vec<f32> = (0..a).map(|i| x[i * b * c..(i + 1) * b * c].iter().sum()).collect();
        for v in Variant::CPU_GPU {
            let got = run_f32(SUM2, v, vec![t(&[a, b, c], &x)], vec![], &[a]);
            assert_close(&got, &want, &format!("sum_two_axes {v:?} {a}x{b}x{c}"));
        }
    }
}

const ROW_SUM_RFACTOR: &str = r#"
    fn row_sum(x: f32[M, N]) -> r: f32[M] {
        r[i] = sum(x[i, j] for j in 0..N);
    }
    schedule!(cuda) {
        let (jo, ji) = r.split(r.j, 16);
        let rf = r.rfactor(ji);
        let [t] = r.reduce_axes();
        r.bind(t, thread.x);
        r.bind(r.i, block.x);
        rf.compute_at(r, t);
    }
"#;

#[test]
fn row_sum_cross_thread_with_rfactor() {
    for (m, n) in [(4usize, 64usize), (3, 37)] {
        let x = rand_vec(m * n, 14);
        let want: Vec<f32> = (0..m).map(|i| x[i * n..(i + 1) * n].iter().sum()).collect();
        for v in [Variant::DefaultCpu, Variant::Gpu] {
            let got = run_f32(ROW_SUM_RFACTOR, v, vec![t(&[m, n], &x)], vec![], &[m]);
            assert_close(&got, &want, &format!("row_sum {v:?} {m}x{n}"));
        }
    }
}

const SCALE: &str = r#"
    fn scale(x: f32[n], alpha: f32) -> y: f32[n] {
        y[i] = alpha * x[i];
    }
"#;

#[test]
fn scalar_parameter() {
    let x = rand_vec(10, 15);
    let want: Vec<f32> = x.iter().map(|v| 2.5 * v).collect();
    for v in [Variant::DefaultCpu, Variant::DefaultGpu] {
        let got = run_f32(SCALE, v, vec![t(&[10], &x)], vec![scalar_f32(2.5)], &[10]);
        assert_close(&got, &want, &format!("scale {v:?}"));
    }
}
