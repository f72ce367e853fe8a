//! The vector math kernels of `tvm_runtime::math` against an f64 reference, over the
//! whole f32 input range (every 61st bit pattern in release builds, every 613th in debug
//! ones, both signs) and the special values:
//! ±inf, NaN, ±0, subnormals, and the edges of overflow and underflow.

use tvm_runtime::__rt::exp_f32;

/// The distance in ulps between two f32 values of the same sign (or both zero); NaN
/// against NaN is 0, NaN against a number is infinite.
fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u64::MAX };
    }
    if a == b {
        return 0;
    }
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        (if i < 0 { i32::MIN.wrapping_sub(i) } else { i }) as i64
    };
    (key(a) - key(b)).unsigned_abs()
}

fn reference(x: f32) -> f32 {
    (x as f64).exp() as f32
}

#[test]
fn exp_f32_is_within_one_ulp_everywhere() {
    let mut worst = (0u64, 0f32);
    let mut checked = 0u64;
    let mut bits = 0u32;
    loop {
        let x = f32::from_bits(bits);
        let (got, want) = (exp_f32(x), reference(x));
        let e = ulps(got, want);
        if e > worst.0 {
            worst = (e, x);
        }
        checked += 1;
        match bits.checked_add(if cfg!(debug_assertions) { 613 } else { 61 }) {
            Some(b) => bits = b,
            None => break,
        }
    }
    eprintln!("exp_f32: {checked} inputs, worst {} ulp at {:e}", worst.0, worst.1);
    assert!(worst.0 <= 1, "exp_f32({:e}) is {} ulps from the correctly rounded value", worst.1, worst.0);
}

#[test]
fn exp_f32_special_values() {
    let max_finite_x = 88.722_83_f32; // e^x < f32::MAX; the next float overflows
    let cases: &[(f32, f32)] = &[
        (0.0, 1.0),
        (-0.0, 1.0),
        (1.0, std::f32::consts::E),
        (f32::INFINITY, f32::INFINITY),
        (f32::NEG_INFINITY, 0.0),
        (f32::MAX, f32::INFINITY),
        (f32::MIN, 0.0),
        (f32::from_bits(1), 1.0),            // the smallest subnormal input
        (-f32::from_bits(0x007f_ffff), 1.0), // the largest subnormal input
        (f32::from_bits(max_finite_x.to_bits() + 1), f32::INFINITY),
        (-103.972_08, f32::from_bits(1)), // the smallest subnormal result
        (-104.0, 0.0),
    ];
    for &(x, want) in cases {
        let got = exp_f32(x);
        assert!(ulps(got, want) <= 1, "exp_f32({x:e}) = {got:e}, want {want:e}");
    }
    assert!(exp_f32(max_finite_x).is_finite() && exp_f32(max_finite_x) > 3.4e38);
    assert!(exp_f32(f32::NAN).is_nan());
    // Subnormal results keep their precision: e^x for x across the subnormal range.
    for i in 0..2000 {
        let x = -87.4 - 16.5 * i as f32 / 2000.0;
        assert!(ulps(exp_f32(x), reference(x)) <= 1, "subnormal result at {x}");
    }
}

/// The worst ulp distance of `f` from `reference` over every `step`-th bit pattern.
fn sweep(f: fn(f32) -> f32, reference: fn(f64) -> f64) -> (u64, f32, u64) {
    let step = if cfg!(debug_assertions) { 613 } else { 61 };
    let (mut worst, mut at, mut n) = (0u64, 0f32, 0u64);
    let mut bits = 0u32;
    loop {
        let x = f32::from_bits(bits);
        let e = ulps(f(x), reference(x as f64) as f32);
        if e > worst {
            (worst, at) = (e, x);
        }
        n += 1;
        match bits.checked_add(step) {
            Some(b) => bits = b,
            None => break,
        }
    }
    (worst, at, n)
}

#[test]
fn log_f32_is_within_one_ulp_everywhere() {
    use tvm_runtime::__rt::log_f32;
    let (worst, at, n) = sweep(log_f32, f64::ln);
    eprintln!("log_f32: {n} inputs, worst {worst} ulp at {at:e}");
    assert!(worst <= 1, "log_f32({at:e}) is {worst} ulps off");
    assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
    assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
    assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
    assert!(log_f32(-1.0).is_nan() && log_f32(f32::NEG_INFINITY).is_nan() && log_f32(f32::NAN).is_nan());
    assert_eq!(log_f32(1.0), 0.0);
    for x in [f32::from_bits(1), f32::from_bits(0x007f_ffff), f32::MIN_POSITIVE, f32::MAX] {
        assert!(ulps(log_f32(x), (x as f64).ln() as f32) <= 1, "log_f32({x:e})");
    }
}

#[test]
fn tanh_f32_is_within_one_ulp_everywhere() {
    use tvm_runtime::__rt::tanh_f32;
    let (worst, at, n) = sweep(tanh_f32, f64::tanh);
    eprintln!("tanh_f32: {n} inputs, worst {worst} ulp at {at:e}");
    assert!(worst <= 1, "tanh_f32({at:e}) is {worst} ulps off");
    assert_eq!(tanh_f32(f32::INFINITY), 1.0);
    assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
    assert!(tanh_f32(-0.0).is_sign_negative() && tanh_f32(-0.0) == 0.0);
    assert!(tanh_f32(f32::NAN).is_nan());
    assert_eq!(tanh_f32(f32::from_bits(1)), f32::from_bits(1));
}
