//! The language forms of issue 15, compiled by the macro and run through the generated API
//! on every backend: Rust method syntax and `consts`, and boundary views.

use super::{on_every_backend, reference::rand_vec, tensor, Source, RTOL};

#[allow(dead_code)]
pub mod methods {
    tvm::compute! {
        /// Every method form, `f32::max(a, b)` and two `consts`.
        pub fn methods(x: f32[n], b: f32[n], a: f32) -> y: f32[n] {
            y[i] = x[i].max(0.0).exp().mul_add(a, b[i])
                + (x[i].abs() + 1.0).sqrt().ln() * f32::consts::PI
                + x[i].clamp(-0.5, 0.5) * std::f32::consts::E
                + (x[i].abs() + 1.0).recip()
                + f32::max(x[i], b[i]).powf(2.0)
                - x[i].tanh().min(b[i].sin().abs().floor());
        }
        schedule!(cuda) {
            let (bx, tx) = y.split(y.i, 64);
            y.bind(bx, block.x);
            y.bind(tx, thread.x);
        }
    }
}

fn methods_ref(x: &[f32], b: &[f32], a: f32) -> Vec<f32> {
    x.iter()
        .zip(b)
        .map(|(&x, &b)| {
            x.max(0.0).exp().mul_add(a, b)
                + (x.abs() + 1.0).sqrt().ln() * std::f32::consts::PI
                + x.clamp(-0.5, 0.5) * std::f32::consts::E
                + (x.abs() + 1.0).recip()
                + f32::max(x, b).powf(2.0)
                - x.tanh().min(b.sin().abs().floor())
        })
        .collect()
}

#[test]
fn method_syntax() {
    for n in [1usize, 100, 1027] {
        let (x, b) = (rand_vec(n, 40), rand_vec(n, 41));
        let want = methods_ref(&x, &b, 0.75);
        let (tx, tb) = (tensor(&x, [n]), tensor(&b, [n]));
        on_every_backend(&format!("methods n={n}"), [n], &want, RTOL, |d, y| {
            methods::methods::run(d, &tx, &tb, 0.75, y)
        });
    }
}

/// One blur kernel per boundary rule, reading up to 7 elements outside.
macro_rules! blur_kernels {
    ($($rule:ident),*) => {$(
        #[allow(dead_code)] // the typed function; the tests call `run`
        pub mod $rule {
            tvm::compute! {
                pub fn blur(x: f32[n]) -> y: f32[n] {
                    let xb = $rule(x);
                    y[i] = xb[i - 2] + xb[i - 1] * 2.0 + xb[i] * 3.0 + xb[i + 1] * 2.0 + xb[i + 7];
                }
                schedule!(cpu) {
                    let (o, v) = y.split(y.i, 16);
                    y.parallel(o);
                    y.vectorize(v);
                }
            }
        }
    )*};
}
blur_kernels!(repeat_edge, repeat_image, mirror_image, mirror_interior);

#[allow(dead_code)]
pub mod constant_exterior {
    tvm::compute! {
        pub fn blur(x: f32[n], outside: f32) -> y: f32[n] {
            let xb = constant_exterior(x, outside);
            y[i] = xb[i - 2] + xb[i - 1] * 2.0 + xb[i] * 3.0 + xb[i + 1] * 2.0 + xb[i + 7];
        }
    }
}

/// The element of `x` that `rule` reads at `i` (None: the constant).
fn boundary_index(rule: &str, i: i64, n: i64) -> Option<usize> {
    if (0..n).contains(&i) {
        return Some(i as usize);
    }
    let reflect = |p: i64, last: i64| {
        let m = i.rem_euclid(p);
        if m < n {
            m
        } else {
            last - m
        }
    };
    Some(match rule {
        "constant_exterior" => return None,
        "repeat_edge" => i.clamp(0, n - 1),
        "repeat_image" => i.rem_euclid(n),
        "mirror_image" => reflect(2 * n, 2 * n - 1),
        "mirror_interior" if n == 1 => 0,
        "mirror_interior" => reflect(2 * n - 2, 2 * n - 2),
        _ => unreachable!("{rule}"),
    } as usize)
}

fn blur_ref(rule: &str, x: &[f32], outside: f32) -> Vec<f32> {
    let n = x.len() as i64;
    let at = |i: i64| boundary_index(rule, i, n).map_or(outside, |k| x[k]);
    (0..n).map(|i| at(i - 2) + at(i - 1) * 2.0 + at(i) * 3.0 + at(i + 1) * 2.0 + at(i + 7)).collect()
}

#[test]
fn boundary_rules() {
    for n in [1usize, 2, 5, 100, 1003] {
        let x = rand_vec(n, 42);
        let tx = tensor(&x, [n]);
        type Blur = fn(&tvm::Device, &tvm::Tensor<f32, 1>, &mut tvm::Tensor<f32, 1>) -> Result<(), tvm::Error>;
        let rules: [(&str, Blur); 4] = [
            ("repeat_edge", repeat_edge::blur::run),
            ("repeat_image", repeat_image::blur::run),
            ("mirror_image", mirror_image::blur::run),
            ("mirror_interior", mirror_interior::blur::run),
        ];
        for (rule, run) in rules {
            let want = blur_ref(rule, &x, 0.0);
            on_every_backend(&format!("{rule} n={n}"), [n], &want, RTOL, |d, y| run(d, &tx, y));
        }
        let want = blur_ref("constant_exterior", &x, -3.0);
        on_every_backend(&format!("constant_exterior n={n}"), [n], &want, RTOL, |d, y| {
            constant_exterior::blur::run(d, &tx, -3.0, y)
        });
    }
}

/// An empty tensor has no edge to repeat: reading it is an error, not a read outside it.
#[test]
fn a_boundary_view_of_an_empty_tensor_is_an_error() {
    pub mod shifted {
        tvm::compute! {
            pub fn shifted(x: f32[n], m: usize) -> y: f32[m] {
                let xb = repeat_edge(x);
                y[i] = xb[i];
            }
        }
    }
    let x = tvm::Tensor::<f32, 1>::zeros([0]);
    for d in super::backends() {
        let mut y = tvm::Tensor::zeros([3]);
        let e = shifted::shifted::run(d, &x, 3, &mut y).expect_err("a read of an empty tensor");
        assert!(matches!(e, tvm::Error::IndexOutOfBounds { .. }), "{d}: {e}");
        let mut y = tvm::Tensor::zeros([0]);
        shifted::shifted::run(d, &x, 0, &mut y).unwrap_or_else(|e| panic!("{d}: nothing to read: {e}"));
    }
}

pub(super) fn sources() -> Vec<(&'static str, Source)> {
    vec![
        ("methods", methods::methods::source),
        ("repeat_edge", repeat_edge::blur::source),
        ("repeat_image", repeat_image::blur::source),
        ("mirror_image", mirror_image::blur::source),
        ("mirror_interior", mirror_interior::blur::source),
        ("constant_exterior", constant_exterior::blur::source),
    ]
}
