//! The auto-scheduler: what it derives for kernels without a schedule, and that the
//! derived schedules compute what the plain references compute.

use tvm_core::frontend::{lower_explained, parse_str};
use tvm_core::Target;

fn derived(src: &str, target: &str) -> String {
    let k = parse_str(src).unwrap_or_else(|e| panic!("{e:?}"));
    let (sch, _, f) = lower_explained(&k, &Target::parse(target).unwrap(), &mut |_| {});
    let sch = sch.expect("a schedule");
    let d = sch.derived.as_ref().expect("derived statements");
    assert!(d.fallback.is_none(), "fallback: {:?}\n{}", d.fallback, d.text);
    let f = f.unwrap_or_else(|e| panic!("{e:?}"));
    format!("{}\n{}", d.text, f)
}

#[test]
fn print_some() {
    for src in [
        "pub fn matmul(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] { c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1024); }",
        "pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
            let m[i]: f32[M] = max(x[i, j] for j in 0..N);
            let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
            let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
            y[i, j] = e[i, j] * (1.0 / s[i]);
        }",
        "pub fn conv2d(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
            let pad[n, c, y, x]: f32[1, 64, 58, 58] =
                if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
            out[n, f, y, x] = sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..64, r in 0..3, s in 0..3);
        }",
        "pub fn colsum(x: f32[M, N]) -> y: f32[N] { y[j] = sum(x[k, j] for k in 0..M); }",
        "pub fn rowsum(x: f32[M, N]) -> y: f32[M] { y[i] = sum(x[i, k] for k in 0..N); }",
        "pub fn transpose(x: f32[M, N]) -> y: f32[N, M] { y[i, j] = x[j, i]; }",
    ] {
        println!("{}", derived(src, "cpu"));
    }
}

#[test]
fn print_gpu() {
    for src in [
        "pub fn matmul(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] { c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1024); }",
        "pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
            let m[i]: f32[M] = max(x[i, j] for j in 0..N);
            let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
            let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
            y[i, j] = e[i, j] * (1.0 / s[i]);
        }",
        "pub fn conv2d(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
            let pad[n, c, y, x]: f32[1, 64, 58, 58] =
                if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
            out[n, f, y, x] = sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..64, r in 0..3, s in 0..3);
        }",
        "pub fn rowsum(x: f32[M, N]) -> y: f32[M] { y[i] = sum(x[i, k] for k in 0..N); }",
        "pub fn add(x: f32[M, 64], b: f32[64]) -> y: f32[M, 64] { y[i, j] = x[i, j] + b[j]; }",
    ] {
        let s = derived(src, "cuda");
        println!("{}", &s[..s.find("@func").unwrap_or(s.len())]);
    }
}
