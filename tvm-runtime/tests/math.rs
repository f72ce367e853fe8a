//! The vector math kernels of `tvm_runtime::math` against an f64 reference, over the
//! whole f32 input range (every 61st bit pattern in release builds, every 613th in debug
//! ones, both signs) and the special values:
//! ±inf, NaN, ±0, subnormals, and the edges of overflow and underflow. `pow_f32`, with two
//! inputs, over a grid of them instead, and its special cases against `f32::powf`.

use tvm_runtime::__rt::{exp_f32, exp_f32_fma};

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
    // The plain and the fused evaluation of the polynomials, the same bound.
    for (name, exp_f32) in [("exp_f32", exp_f32 as fn(f32) -> f32), ("exp_f32_fma", exp_f32_fma)] {
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
        eprintln!("{name}: {checked} inputs, worst {} ulp at {:e}", worst.0, worst.1);
        assert!(worst.0 <= 1, "{name}({:e}) is {} ulps from the correctly rounded value", worst.1, worst.0);
    }
}

#[test]
fn exp_f32_special_values() {
    // The plain and the fused evaluation of the polynomials, the same bound.
    for (name, exp_f32) in [("exp_f32", exp_f32 as fn(f32) -> f32), ("exp_f32_fma", exp_f32_fma)] {
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
            assert!(ulps(got, want) <= 1, "{name}({x:e}) = {got:e}, want {want:e}");
        }
        assert!(exp_f32(max_finite_x).is_finite() && exp_f32(max_finite_x) > 3.4e38);
        assert!(exp_f32(f32::NAN).is_nan());
        // Subnormal results keep their precision: e^x for x across the subnormal range.
        for i in 0..2000 {
            let x = -87.4 - 16.5 * i as f32 / 2000.0;
            assert!(ulps(exp_f32(x), reference(x)) <= 1, "subnormal result at {x}");
        }
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
    use tvm_runtime::__rt::{log_f32, log_f32_fma};
    // The plain and the fused evaluation of the polynomials, the same bound.
    for (name, log_f32) in [("log_f32", log_f32 as fn(f32) -> f32), ("log_f32_fma", log_f32_fma)] {
        let (worst, at, n) = sweep(log_f32, f64::ln);
        eprintln!("{name}: {n} inputs, worst {worst} ulp at {at:e}");
        assert!(worst <= 1, "{name}({at:e}) is {worst} ulps off");
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f32(f32::NEG_INFINITY).is_nan() && log_f32(f32::NAN).is_nan());
        assert_eq!(log_f32(1.0), 0.0);
        for x in [f32::from_bits(1), f32::from_bits(0x007f_ffff), f32::MIN_POSITIVE, f32::MAX] {
            assert!(ulps(log_f32(x), (x as f64).ln() as f32) <= 1, "{name}({x:e})");
        }
    }
}

#[test]
fn tanh_f32_is_within_one_ulp_everywhere() {
    use tvm_runtime::__rt::{tanh_f32, tanh_f32_fma};
    // The plain and the fused evaluation of the polynomials, the same bound.
    for (name, tanh_f32) in [("tanh_f32", tanh_f32 as fn(f32) -> f32), ("tanh_f32_fma", tanh_f32_fma)] {
        let (worst, at, n) = sweep(tanh_f32, f64::tanh);
        eprintln!("{name}: {n} inputs, worst {worst} ulp at {at:e}");
        assert!(worst <= 1, "{name}({at:e}) is {worst} ulps off");
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(-0.0).is_sign_negative() && tanh_f32(-0.0) == 0.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(f32::from_bits(1)), f32::from_bits(1));
    }
}

#[test]
fn erf_f32_is_within_one_ulp_everywhere() {
    use tvm_runtime::__rt::{erf_f32, erf_f32_fma, erf_f64};
    // The plain and the fused evaluation of the polynomials, the same bound.
    for (name, erf_f32) in [("erf_f32", erf_f32 as fn(f32) -> f32), ("erf_f32_fma", erf_f32_fma)] {
        let (worst, at, n) = sweep(erf_f32, erf_f64);
        eprintln!("{name}: {n} inputs, worst {worst} ulp at {at:e}");
        assert!(worst <= 1, "{name}({at:e}) is {worst} ulps off");
    }
}

#[test]
fn erf_f32_special_values() {
    use tvm_runtime::__rt::{erf_f32, erf_f32_fma, erf_f64};
    // The plain and the fused evaluation of the polynomials, the same bound.
    for (name, erf_f32) in [("erf_f32", erf_f32 as fn(f32) -> f32), ("erf_f32_fma", erf_f32_fma)] {
        let reference = |x: f32| erf_f64(x as f64) as f32;
        assert!(erf_f32(0.0) == 0.0 && erf_f32(0.0).is_sign_positive());
        assert!(erf_f32(-0.0) == 0.0 && erf_f32(-0.0).is_sign_negative());
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(erf_f32(f32::MAX), 1.0);
        assert_eq!(erf_f32(f32::MIN), -1.0);
        assert!(erf_f32(f32::NAN).is_nan() && erf_f32(-f32::NAN).is_nan());
        // Subnormal inputs (erf x = 2x/√π there) and the smallest normal ones.
        for x in [f32::from_bits(1), f32::from_bits(2), f32::from_bits(0x0000_1234), f32::from_bits(0x007f_ffff)]
            .into_iter()
            .chain([f32::MIN_POSITIVE, 1e-30, 1e-10])
        {
            for x in [x, -x] {
                assert!(ulps(erf_f32(x), reference(x)) <= 1, "{name}({x:e}) = {:e}", erf_f32(x));
            }
        }
        // Saturation: the correctly rounded erf is 1 from 3.919_206 on (1 - 2^-24 before), and
        // so is erf_f32, exactly.
        let edge = 3.919_206_f32;
        assert_eq!(reference(edge), 1.0);
        let below = f32::from_bits(edge.to_bits() - 1);
        assert_eq!(reference(below), 1.0 - f32::EPSILON / 2.0);
        for i in 0..200u32 {
            let x = f32::from_bits(edge.to_bits() + i * 997);
            assert_eq!((erf_f32(x), erf_f32(-x)), (1.0, -1.0), "{name}({x:e})");
            let x = f32::from_bits(below.to_bits() - i * 97);
            assert!(ulps(erf_f32(x), reference(x)) <= 1, "{name}({x:e})");
        }
        assert_eq!(erf_f32(below), 1.0 - f32::EPSILON / 2.0);
        // Either side of the switch between the two approximations, at 0.921875.
        for i in 0..2000u32 {
            for x in [f32::from_bits(0x3f6c_0000 - 1000 + i), -f32::from_bits(0x3f6c_0000 - 1000 + i)] {
                assert!(ulps(erf_f32(x), reference(x)) <= 1, "{name}({x:e})");
            }
        }
        // Odd: erf(-x) = -erf(x), bit for bit.
        for i in 0..10_000u32 {
            let x = f32::from_bits(i.wrapping_mul(0x9e37_79b9) & 0x7fff_ffff);
            assert_eq!(erf_f32(-x).to_bits(), (-erf_f32(x)).to_bits(), "{name}({x:e})");
        }
    }
}

/// `x^y` in f64 (correct to about 1 f64 ulp), rounded to f32.
fn pow_reference(x: f32, y: f32) -> f32 {
    (x as f64).powf(y as f64) as f32
}

/// The ulp distance for `pow`, where ±0 are told apart (`pow` gives either).
fn pow_ulps(got: f32, want: f32) -> u64 {
    if got == 0.0 && want == 0.0 && got.to_bits() != want.to_bits() {
        return u64::MAX;
    }
    ulps(got, want)
}

/// Every `step`-th positive f32 from the smallest subnormal to `f32::MAX`, both signs.
fn pow_bases(step: u32) -> Vec<f32> {
    let mut xs = Vec::new();
    let mut bits = 1u32;
    while bits < 0x7f80_0000 {
        let x = f32::from_bits(bits);
        xs.extend([x, -x]);
        bits += step;
    }
    xs.extend([f32::MAX, -f32::MAX]);
    xs
}

#[test]
fn pow_f32_is_within_one_ulp_on_a_grid() {
    use tvm_runtime::__rt::pow_f32;
    let (step, per_x) = if cfg!(debug_assertions) { (1_000_003, 6) } else { (100_003, 24) };
    let mut ys: Vec<f32> = (-10..=10).map(|i| i as f32).collect();
    for y in [
        0.5,
        1.5,
        2.5,
        7.5,
        1.0 / 3.0,
        0.1,
        0.75,
        7.25,
        33.3,
        100.0,
        1000.5,
        1e5,
        123_456.7,
        8_388_609.0,
        1.6e7,
        1e9,
        1e-3,
        1e-7,
    ] {
        ys.extend([y, -y]);
    }
    let (mut worst, mut at, mut n, mut finite) = (0u64, (0f32, 0f32), 0u64, 0u64);
    let mut check = |x: f32, y: f32| {
        let (got, want) = (pow_f32(x, y), pow_reference(x, y));
        let e = pow_ulps(got, want);
        if e > worst {
            (worst, at) = (e, (x, y));
        }
        n += 1;
        finite += (want.is_finite() && want != 0.0) as u64;
    };
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for x in pow_bases(step).into_iter().chain((1..200).map(|i| f32::from_bits(0x3f80_0000 - 100 + i))) {
        for &y in &ys {
            check(x, y);
        }
        // Exponents that put x^y anywhere in (and a little beyond) the f32 range, integer
        // ones (where a negative x gives a result) among them.
        let l2 = (x.abs() as f64).log2();
        for _ in 0..per_x {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let t = (seed >> 11) as f64 / (1u64 << 53) as f64 * 320.0 - 160.0;
            let y = (t / l2) as f32;
            check(x, y);
            check(x, y.round());
        }
    }
    eprintln!("pow_f32: {n} pairs ({finite} finite nonzero results), worst {worst} ulp at {at:?}");
    assert!(worst <= 1, "pow_f32({:e}, {:e}) is {worst} ulps off", at.0, at.1);
}

#[test]
fn pow_f32_special_cases_match_powf() {
    use tvm_runtime::__rt::pow_f32;
    let two23 = 8_388_608.0f32;
    let values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        0.25,
        1.5,
        -1.5,
        2.5,
        -2.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MAX,
        -f32::MAX,
        two23 - 1.0,
        -(two23 - 1.0),
        two23 - 0.5,
        two23,
        two23 + 1.0,
        -(two23 + 1.0),
        2.0 * two23,
        -2.0 * two23,
        1e10,
        -1e10,
        1.0 + f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        -(1.0 - f32::EPSILON / 2.0),
    ];
    let mut n = 0;
    for &x in &values {
        for &y in &values {
            let (got, want) = (pow_f32(x, y), x.powf(y));
            let same = if want.is_nan() { got.is_nan() } else { got.to_bits() == want.to_bits() };
            assert!(same, "pow_f32({x:e}, {y:e}) = {got:e}, powf gives {want:e}");
            n += 1;
        }
    }
    eprintln!("pow_f32: {n} special pairs as f32::powf");
    // Overflow and underflow, subnormal results rounded once.
    assert_eq!(pow_f32(2.0, 128.0), f32::INFINITY);
    assert_eq!(pow_f32(-2.0, 129.0), f32::NEG_INFINITY);
    assert_eq!(pow_f32(2.0, 127.0), 1.701_411_8e38);
    assert_eq!(pow_f32(2.0, -149.0), f32::from_bits(1));
    assert_eq!(pow_f32(2.0, -150.0), 0.0); // half of 2^-149: to even
    assert_eq!(pow_f32(-2.0, -151.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(pow_f32(2.0, -149.5), f32::from_bits(1)); // 0.71 · 2^-149
    assert_eq!(pow_f32(2.0, -150.5), 0.0); // 0.35 · 2^-149
    assert_eq!(pow_f32(2.0, -147.5), f32::from_bits(3)); // 2.83 · 2^-149
    assert_eq!(pow_f32(f32::from_bits(1), 0.5), pow_reference(f32::from_bits(1), 0.5));
    assert_eq!(pow_f32(f32::MAX, 0.5), pow_reference(f32::MAX, 0.5));
    assert_eq!(pow_f32(10.0, -40.0), pow_reference(10.0, -40.0)); // a subnormal
}

/// Whether this CPU runs the AVX-512 helpers (a hardware feature, not a tool: a CPU
/// without it skips their tests, saying so).
#[cfg(target_arch = "x86_64")]
fn has_avx512f() -> bool {
    let has = std::arch::is_x86_feature_detected!("avx512f");
    if !has {
        println!("skipped: this CPU has no AVX-512F");
    }
    has
}

/// The AVX-512 form of `exp` on lane arrays (`vscalefps` for the scaling) against the same
/// reference over the same inputs, 16 lanes at a time, and through the narrower pieces of
/// an array whose length is not a multiple of 16.
#[cfg(target_arch = "x86_64")]
#[test]
fn exp_f32_avx512_is_within_one_ulp_everywhere() {
    use tvm_runtime::__rt::cpu::exp_f32_avx512;
    if !has_avx512f() {
        return;
    }
    let step = if cfg!(debug_assertions) { 613u32 } else { 61 };
    let (mut worst, mut at, mut n) = (0u64, 0f32, 0u64);
    let mut bits = 0u32;
    let mut done = false;
    while !done {
        let mut v = [0f32; 16];
        for lane in v.iter_mut() {
            *lane = f32::from_bits(bits);
            match bits.checked_add(step) {
                Some(b) => bits = b,
                None => done = true,
            }
        }
        // SAFETY: the CPU has AVX-512F (checked above).
        let got = unsafe { exp_f32_avx512(v) };
        for (x, g) in v.iter().zip(got) {
            let e = ulps(g, reference(*x));
            if e > worst {
                (worst, at) = (e, *x);
            }
            n += 1;
        }
    }
    eprintln!("exp_f32_avx512: {n} inputs, worst {worst} ulp at {at:e}");
    assert!(worst <= 1, "exp_f32_avx512({at:e}) is {worst} ulps off");
    let special = [
        0.0,
        -0.0,
        1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::from_bits(1),
        88.722_83,
        88.722_84,
        -103.972_08,
        -104.0,
        -87.5,
        -95.0,
        -0.5,
        10.0,
    ];
    // SAFETY: as above.
    let got = unsafe { exp_f32_avx512(special) };
    for (x, g) in special.iter().zip(got) {
        assert!(ulps(g, reference(*x)) <= 1, "exp_f32_avx512({x:e}) = {g:e}");
    }
    // NaN in, NaN out; and five lanes (a 4-lane piece and a single lane alone).
    // SAFETY: as above.
    let five = unsafe { exp_f32_avx512([f32::NAN, 0.0, -1.0, 2.0, f32::NAN]) };
    assert!(five[0].is_nan() && five[4].is_nan());
    for (x, g) in [0.0f32, -1.0, 2.0].iter().zip(&five[1..4]) {
        assert!(ulps(*g, reference(*x)) <= 1, "exp_f32_avx512({x:e}) = {g:e} (narrow pieces)");
    }
}

/// The AVX-512 `max`/`min` of f32 lanes against Rust's `f32::max`/`f32::min` (a NaN
/// operand yields the other one), on every pair of a set of special and ordinary values,
/// 16 lanes at a time and through the narrower pieces (37 lanes: 16 + 16 + 4 + 1; 13:
/// 8 + 4 + 1; 47: 16 + 16 + 8 + 4 + 1 + 1 + 1), every pair at every position of each.
#[cfg(target_arch = "x86_64")]
#[test]
fn max_min_f32_avx512_follow_rust_on_nan_inf_and_zeros() {
    use tvm_runtime::__rt::cpu::{max_f32_avx512, min_f32_avx512};
    if !has_avx512f() {
        return;
    }
    let vals = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.5,
        -2.25,
        f32::MAX,
        f32::MIN,
        f32::from_bits(1),
        -f32::from_bits(7),
        3.0e-39,
    ];
    let pairs: Vec<(f32, f32)> = vals.iter().flat_map(|&a| vals.iter().map(move |&b| (a, b))).collect();
    let same = |g: f32, w: f32, a: f32, b: f32| {
        // Zeros of both signs compare equal: either may come back.
        (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits() || (g == 0.0 && w == 0.0 && a == b)
    };
    // Every pair at every lane of arrays of 37, 13 and 47 lanes: the pairs rotated
    // through them one lane at a time.
    fn check<const L: usize>(pairs: &[(f32, f32)], same: &dyn Fn(f32, f32, f32, f32) -> bool) {
        for start in 0..pairs.len() {
            let a: [f32; L] = std::array::from_fn(|k| pairs[(start + k) % pairs.len()].0);
            let b: [f32; L] = std::array::from_fn(|k| pairs[(start + k) % pairs.len()].1);
            // SAFETY: the CPU has AVX-512F (checked by the caller).
            let (mx, mn) = unsafe { (max_f32_avx512(a, b), min_f32_avx512(a, b)) };
            for k in 0..L {
                assert!(same(mx[k], a[k].max(b[k]), a[k], b[k]), "L = {L}: max({:e}, {:e}) = {:e}", a[k], b[k], mx[k]);
                assert!(same(mn[k], a[k].min(b[k]), a[k], b[k]), "L = {L}: min({:e}, {:e}) = {:e}", a[k], b[k], mn[k]);
            }
        }
    }
    check::<37>(&pairs, &same);
    check::<13>(&pairs, &same);
    check::<47>(&pairs, &same);
    check::<16>(&pairs, &same);
}

/// The AVX-512 helpers at every way `lanes_avx512` cuts an array (16s, then 8, 4 and
/// single lanes): each lane against the scalar operation, at widths with and without each
/// piece. `+`, `-`, `*` and the fused multiply-add are exact; `exp` within 1 ulp.
#[cfg(target_arch = "x86_64")]
#[test]
fn avx512_helpers_agree_lane_by_lane_at_every_cut() {
    use tvm_runtime::__rt::cpu::{arith_f32_avx512, exp_f32_avx512, fma_f32_avx512, max_f32_avx512, min_f32_avx512};
    if !has_avx512f() {
        return;
    }
    fn check<const L: usize>() {
        let v = |k: usize, s: f32| std::array::from_fn::<f32, L, _>(|i| ((i * 7 + k) % 13) as f32 * s - 3.0);
        let (a, b, c) = (v(1, 0.37), v(5, -0.81), v(9, 1.3));
        // SAFETY: the CPU has AVX-512F (checked by the caller).
        let (add, sub, mul, fma, mx, mn, ex) = unsafe {
            (
                arith_f32_avx512::<L, 0>(a, b),
                arith_f32_avx512::<L, 1>(a, b),
                arith_f32_avx512::<L, 2>(a, b),
                fma_f32_avx512(a, b, c),
                max_f32_avx512(a, b),
                min_f32_avx512(a, b),
                exp_f32_avx512(a),
            )
        };
        for i in 0..L {
            assert_eq!(add[i], a[i] + b[i], "L = {L}, lane {i}: +");
            assert_eq!(sub[i], a[i] - b[i], "L = {L}, lane {i}: -");
            assert_eq!(mul[i], a[i] * b[i], "L = {L}, lane {i}: *");
            assert_eq!(fma[i], a[i].mul_add(b[i], c[i]), "L = {L}, lane {i}: fma");
            assert_eq!(mx[i], a[i].max(b[i]), "L = {L}, lane {i}: max");
            assert_eq!(mn[i], a[i].min(b[i]), "L = {L}, lane {i}: min");
            assert!(ulps(ex[i], reference(a[i])) <= 1, "L = {L}, lane {i}: exp({}) = {}", a[i], ex[i]);
        }
    }
    check::<1>();
    check::<3>();
    check::<4>();
    check::<5>();
    check::<8>();
    check::<12>();
    check::<13>();
    check::<15>();
    check::<16>();
    check::<23>();
    check::<28>();
    check::<31>();
    check::<46>();
    check::<47>();
}
