//! Math functions generated code and the interpreter share beyond `std`: `erf`, accurate
//! to a few ulps in f64 (what `erf` in an f64 kernel computes on the CPU, and the reference
//! the interpreter uses), and the branch-free f32 kernels that generated CPU code maps over
//! vector lanes, which LLVM turns into SIMD code (`exp_f32`, `log_f32`, `tanh_f32`,
//! `erf_f32`, `pow_f32`; each within 1 ulp).
//!
//! Their integer steps (exponent bits) are `wrapping_*` operations, whose values are in
//! range by construction: a plain `+` of a crate built with overflow checks (a debug
//! profile, optimized or not) is a test and a branch to a panic per lane, and LLVM then
//! keeps the lanes scalar.

/// `$fma`: `$plain` with its polynomials evaluated by fused multiply-adds (`$with::<true>`).
macro_rules! fma_form {
    ($plain:ident, $fma:ident, $with:ident) => {
        #[doc = concat!("[`", stringify!($plain), "`] with its polynomials evaluated by fused multiply-adds: the")]
        /// same bound on the error (checked the same way), and fewer operations where the
        /// CPU has FMA. For code compiled with FMA (the generated code's FMA levels);
        /// elsewhere every multiply-add is a call to the C library's `fmaf`.
        #[inline(always)]
        pub fn $fma(x: f32) -> f32 {
            $with::<true>(x)
        }
    };
}

/// The error function, with a relative error of a few ulps.
///
/// `|x| < 2.5`: `erf(x) = 2/√π · e^{-x²} · Σ 2ⁿ x^{2n+1} / (1·3···(2n+1))` (all terms
/// positive, no cancellation); otherwise `1 - erfc(x)` with erfc from its continued
/// fraction.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        erf_series(a)
    } else if a < 6.5 {
        1.0 - erfc_cf(a)
    } else {
        1.0
    };
    r.copysign(x)
}

/// The complementary error function `1 - erf(x)`, accurate also where it is tiny.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.5 {
        1.0 - erf(x)
    } else if x < 2.5 {
        // Loses a little relative accuracy near 2.5 (erfc(2.5) ≈ 4e-4), fine here.
        1.0 - erf_series(x)
    } else if x < 27.3 {
        erfc_cf(x)
    } else {
        0.0
    }
}

fn erf_series(a: f64) -> f64 {
    let a2 = a * a;
    let mut term = a;
    let mut sum = a;
    let mut n = 0u32;
    while n < 1000 {
        n += 1;
        term *= 2.0 * a2 / (2 * n + 1) as f64;
        sum += term;
        if term <= sum * 1e-17 {
            break;
        }
    }
    std::f64::consts::FRAC_2_SQRT_PI * (-a2).exp() * sum
}

/// erfc(z) for z ≥ 2.5: e^{-z²}/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + ...)))), by the
/// modified Lentz method.
fn erfc_cf(z: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut f = z;
    let mut c = z;
    let mut d = 0.0f64;
    for j in 1..2000 {
        let aj = j as f64 * 0.5;
        d = z + aj * d;
        if d == 0.0 {
            d = TINY;
        }
        d = 1.0 / d;
        c = z + aj / c;
        if c == 0.0 {
            c = TINY;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    // e^{-z²} with z² split into an exact high part and a small correction, so the
    // rounding of z·z does not cost relative accuracy for large z.
    let hi = f64::from_bits(z.to_bits() & 0xffff_ffff_f800_0000);
    let lo = z - hi;
    let e = (-hi * hi).exp() * (-(lo * (z + hi))).exp();
    e / (std::f64::consts::PI.sqrt() * f)
}

/// The error function in f32 for vector code, branch-free like [`exp_f32`] (selects only,
/// no loops). At most 1 ulp from the correctly rounded result over every f32 input
/// (measured exhaustively against [`erf`]: about 6% of the inputs below 4 in magnitude are
/// 1 ulp off; `tests/math.rs` checks every 61st bit pattern of both signs); `erf(±0) = ±0`,
/// exactly `±1` from `|x| = 3.919_206` on (where the correctly rounded result becomes 1)
/// and for ±inf, NaN for NaN.
///
/// `|x| < 0.921875`: `x + x·P(x²)` with `P` a degree-6 minimax polynomial for
/// `erf(x)/x - 1` (error below 2^-29). Beyond: `1 - e^{S(a) - a²}`, `a = |x|` clamped to
/// 3.925 (where `erf` rounds to 1), `S` a degree-9 polynomial in `a - 2.421875` for
/// `ln(erfc(a)) + a²` (minimax for the error it makes in the result, below 0.007 ulp, and
/// within 2^-23 of `S` near 3.92; its constant in two parts), and `e^{..}` by [`exp_f32`].
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    erf_f32_with::<false>(x)
}

fma_form!(erf_f32, erf_f32_fma, erf_f32_with);

#[inline(always)]
fn erf_f32_with<const F: bool>(x: f32) -> f32 {
    let a = x.abs();
    // |x| < 0.921875.
    let z = x * x;
    let p = 7.968_402_5e-5;
    let p = mad::<F>(p, z, -8.043_629e-4);
    let p = mad::<F>(p, z, 5.191_936_6e-3);
    let p = mad::<F>(p, z, -2.685_558_6e-2);
    let p = mad::<F>(p, z, 1.128_362_4e-1);
    let p = mad::<F>(p, z, -3.761_263e-1);
    let p = mad::<F>(p, z, 1.283_791_7e-1);
    // The sign of x also for -0 (where x + x·p is +0).
    let small = (x + x * p).copysign(x);
    // |x| >= 0.921875: erfc(a) = e^{S(a) - a²}.
    let ac = a.min(3.925);
    let v = ac - 2.421_875;
    let s = 2.398_72e-7;
    let s = mad::<F>(s, v, 1.880_636_5e-6);
    let s = mad::<F>(s, v, -1.548_423_8e-5);
    let s = mad::<F>(s, v, 8.368_459_4e-5);
    let s = mad::<F>(s, v, -4.563_447_7e-4);
    let s = mad::<F>(s, v, 2.338_500_7e-3);
    let s = mad::<F>(s, v, -1.156_250_9e-2);
    let s = mad::<F>(s, v, 5.873_17e-2);
    let s = mad::<F>(s, v, -3.616_502_3e-1);
    let s = mad::<F>(s, v, 2.769_795_8e-8) - 1.528_914_3;
    let big = (1.0 - exp_f32_with::<F>(s - ac * ac)).copysign(x);
    if a < 0.921_875 {
        small
    } else if x.is_nan() {
        x
    } else {
        big
    }
}

#[cfg(test)]
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    #[test]
    fn erf_known_values() {
        let cases = [
            (0.1, 0.1124629160182848922),
            (0.5, 0.5204998778130465377),
            (1.0, 0.8427007929497148693),
            (1.5, 0.9661051464753107271),
            (2.0, 0.9953222650189527342),
            (2.5, 0.9995930479825550411),
            (3.0, 0.9999779095030014146),
        ];
        for (x, want) in cases {
            let got = erf(x);
            assert!(((got - want) / want).abs() < 1e-14, "erf({x}) = {got}, want {want}");
            assert_eq!(erf(-x), -got);
        }
        let erfc_cases =
            [(3.0, 2.209049699858544137e-5), (5.0, 1.537459794428034850e-12), (10.0, 2.088487583762544757e-45)];
        for (x, want) in erfc_cases {
            let got = erfc(x);
            assert!(((got - want) / want).abs() < 1e-13, "erfc({x}) = {got}, want {want}");
        }
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(f64::INFINITY), 1.0);
        assert_eq!(erf(f64::NEG_INFINITY), -1.0);
        assert!(erf(f64::NAN).is_nan());
    }
}

/// `e^x` in f32 for vector code: branch-free (selects only), so a loop over lanes of it
/// becomes SIMD code, where `f32::exp` is one libm call per lane. At most 1 ulp from the
/// correctly rounded result over every f32 input (`tests/math.rs` checks every 61st bit
/// pattern against f64), subnormal results included; `+inf` for `x > 88.72284`, `+0` below
/// `-103.97208`, NaN for NaN.
///
/// `x = k·ln 2 + r` with `|r| <= ln 2 / 2` (ln 2 in two parts, Cody–Waite), `e^r` by a
/// degree-7 polynomial (Taylor coefficients; the remainder is below 2^-29 on that range),
/// and `2^k` applied as two exact power-of-two factors so that a subnormal result is
/// rounded once.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    exp_f32_with::<false>(x)
}

fma_form!(exp_f32, exp_f32_fma, exp_f32_with);

#[inline(always)]
fn exp_f32_with<const F: bool>(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75; // 0x3f317200: exact times any k in range
    const LN2_LO: f32 = 1.428_606_8e-6; // ln 2 - LN2_HI
                                        // 1.5 · 2^23: adding it rounds to an integer (nearest, ties to even).
    const SHIFTER: f32 = 12_582_912.0;
    let xc = x.clamp(-104.0, 89.0);
    let t = mad::<F>(xc, LOG2E, SHIFTER);
    let k = t - SHIFTER;
    let ki = (t.to_bits() as i32).wrapping_sub(SHIFTER.to_bits() as i32);
    // `k·LN2_HI` is exact, so the first step is the same fused or not.
    let r = mad::<F>(-k, LN2_LO, mad::<F>(-k, LN2_HI, xc));
    let p = 1.0 / 5040.0;
    let p = mad::<F>(p, r, 1.0 / 720.0);
    let p = mad::<F>(p, r, 1.0 / 120.0);
    let p = mad::<F>(p, r, 1.0 / 24.0);
    let p = mad::<F>(p, r, 1.0 / 6.0);
    let p = mad::<F>(p, r, 0.5);
    let p = mad::<F>(p, r, 1.0);
    let p = mad::<F>(p, r, 1.0);
    // 2^k = 2^k1 · 2^k2 with k1, k2 in the normal exponent range (k in [-150, 129]).
    let k1 = ki >> 1;
    let k2 = ki.wrapping_sub(k1);
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((k2.wrapping_add(127) as u32) << 23);
    let y = p * s1 * s2;
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// `ln x` in f32 for vector code, branch-free like [`exp_f32`]. Within 1 ulp of the
/// correctly rounded result over every positive f32 (subnormals included; checked in
/// `tests/math.rs`); `-inf` at ±0, NaN below 0 and for NaN, `+inf` at `+inf`.
///
/// `x = m · 2^e` with `m` in `[√½, √2)` (subnormals scaled by 2^23 first), `ln m` by
/// Cephes' degree-9 polynomial in `m - 1`, and `e · ln 2` added in two parts.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    log_f32_with::<false>(x)
}

fma_form!(log_f32, log_f32_fma, log_f32_with);

#[inline(always)]
fn log_f32_with<const F: bool>(x: f32) -> f32 {
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x }; // 2^23
    let bits = xs.to_bits() as i32;
    // The exponent and mantissa, with the mantissa moved into [√½, √2).
    let mut e = ((bits >> 23) & 0xff).wrapping_sub(127);
    let mut m = f32::from_bits(((bits & 0x007f_ffff) | 0x3f80_0000) as u32);
    let big = m > std::f32::consts::SQRT_2;
    m = if big { m * 0.5 } else { m };
    e = e.wrapping_add(big as i32);
    let e = e.wrapping_sub(if sub { 23 } else { 0 }) as f32;
    let f = m - 1.0;
    let z = f * f;
    let p = 7.037_683_6e-2;
    let p = mad::<F>(p, f, -1.151_461_0e-1);
    let p = mad::<F>(p, f, 1.167_699_9e-1);
    let p = mad::<F>(p, f, -1.242_014_1e-1);
    let p = mad::<F>(p, f, 1.424_932_3e-1);
    let p = mad::<F>(p, f, -1.666_805_8e-1);
    let p = mad::<F>(p, f, 2.000_071_4e-1);
    let p = mad::<F>(p, f, -2.499_999_4e-1);
    let p = mad::<F>(p, f, 3.333_333_1e-1);
    let y = f * z * p + e * -2.121_944_4e-4 - 0.5 * z;
    let r = f + y + e * 0.693_359_4;
    if x.is_nan() || x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        r
    }
}

/// `tanh x` in f32 for vector code, branch-free: an odd polynomial (Cephes) for
/// `|x| < 0.625`, `1 - 2 / (e^{2|x|} + 1)` with [`exp_f32`] above (`|x|` clamped to 20,
/// where the result is 1); the sign of `x` kept (also for `-0`). Within 1 ulp of the
/// correctly rounded result over every f32 (checked in `tests/math.rs`).
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    tanh_f32_with::<false>(x)
}

fma_form!(tanh_f32, tanh_f32_fma, tanh_f32_with);

#[inline(always)]
fn tanh_f32_with<const F: bool>(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let p = -5.704_988_7e-3;
    let p = mad::<F>(p, z, 2.063_908_9e-2);
    let p = mad::<F>(p, z, -5.373_971_6e-2);
    let p = mad::<F>(p, z, 1.333_144_2e-1);
    let p = mad::<F>(p, z, -3.333_328_2e-1);
    // The sign of x, also for -0 (where x + x·z·p is +0).
    let small = (x + x * z * p).copysign(x);
    let big = 1.0 - 2.0 / (exp_f32_with::<F>(2.0 * a.min(20.0)) + 1.0);
    let big = big.copysign(x);
    if a < 0.625 {
        small
    } else if a.is_nan() {
        x
    } else {
        big
    }
}

/// `x^y` in f32 for vector code (C's `powf`), branch-free: the special cases are selects,
/// the rest is `2^{y · log2 |x|}` evaluated in f64 by polynomials (no libm call; f64 lanes
/// vectorize too). The relative error before the final rounding to f32 is below 2^-37, so
/// the result is the correctly rounded one but within about 2^-13 ulp of a halfway point
/// (subnormal results too: they are rounded once), and always within 1 ulp of it; checked
/// in `tests/math.rs` against `powf` in f64 over a grid of `x` from the smallest subnormal
/// to `f32::MAX`, both signs, and `y` from small integers and halves to ±1e9 and exponents
/// that put `x^y` all over the f32 range. Powers of two to integer powers are exact.
///
/// `|x| = m · 2^e` with `m` in `[√½, √2)` (in f64, where f32 subnormals are normal),
/// `ln m = 2 atanh(s)`, `s = (m - 1)/(m + 1)`, by its Taylor series through `s^15` (the
/// remainder is below 2^-44 relative for `|s| <= 0.172`); `t = y · (e + ln m · log2 e)`,
/// clamped to `[-160, 150]` (beyond which the f32 result is 0 or inf); `2^t = 2^k e^r`
/// with `k` the integer nearest to `t` and `r = (t - k) ln 2` (`t - k` is exact), `e^r`
/// by its degree-10 Taylor polynomial (remainder below 2^-42 for `|r| <= ln 2 / 2`).
///
/// Special cases as C99 `powf`: `x^±0 = 1^y = 1` (even for NaN), otherwise NaN in, NaN
/// out; a negative finite `x` with a non-integer finite `y` is NaN; an odd integer `y`
/// keeps the sign of `x` (also of ±0 and ±inf); `(-1)^±inf = 1`; `0^y` and `inf^y` are 0
/// or inf by the sign of `y`; `x^±inf` is 0 or inf by `|x| < 1`.
#[inline(always)]
pub fn pow_f32(x: f32, y: f32) -> f32 {
    const SQRT_2: f64 = std::f64::consts::SQRT_2;
    const LN2: f64 = std::f64::consts::LN_2;
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const SHIFTER: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52
    const TWO52: f64 = 4_503_599_627_370_496.0;
    const TWO23: f32 = 8_388_608.0;
    let ax = x.abs();
    let ay = y.abs();
    // log2 |x| in f64.
    let bits = (ax as f64).to_bits();
    // The biased exponent as an f64 by bits (x86 before AVX-512DQ converts no i64 lanes).
    let eb = f64::from_bits(0x4330_0000_0000_0000 | ((bits >> 52) & 0x7ff)) - TWO52;
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let hi = m > SQRT_2;
    let m = if hi { m * 0.5 } else { m };
    let e = eb - if hi { 1022.0 } else { 1023.0 };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let s2 = s * s;
    let q = 2.0 / 15.0;
    let q = q * s2 + 2.0 / 13.0;
    let q = q * s2 + 2.0 / 11.0;
    let q = q * s2 + 2.0 / 9.0;
    let q = q * s2 + 2.0 / 7.0;
    let q = q * s2 + 2.0 / 5.0;
    let q = q * s2 + 2.0 / 3.0;
    let ln_m = s * (2.0 + s2 * q);
    let l = e + ln_m * LOG2E;
    let l = if ax == 0.0 {
        f64::NEG_INFINITY
    } else if ax == f32::INFINITY {
        f64::INFINITY
    } else {
        l
    };
    // 2^t; max and min (unlike clamp) also turn a NaN (0 · inf, overridden below) into a
    // number.
    #[allow(clippy::manual_clamp)]
    let t = (y as f64 * l).max(-160.0).min(150.0);
    let u = t + SHIFTER;
    let k = u - SHIFTER;
    let ki = (u.to_bits() as i64).wrapping_sub(SHIFTER.to_bits() as i64);
    let r = (t - k) * LN2;
    let p = 1.0 / 3_628_800.0;
    let p = p * r + 1.0 / 362_880.0;
    let p = p * r + 1.0 / 40_320.0;
    let p = p * r + 1.0 / 5_040.0;
    let p = p * r + 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    // k is in [-160, 150]: 2^k is a normal f64.
    let scale = f64::from_bits((ki.wrapping_add(1023) as u64) << 52);
    let mag = (p * scale) as f32;
    // Whether y is an integer, and an odd one: below 2^23, adding 2^23 rounds |y| to an
    // integer whose parity is the last bit; from 2^23 to 2^24 every f32 is an integer with
    // its parity in the last bit; above, every f32 is an even integer.
    let w = ay + TWO23;
    let below = ay < TWO23;
    let integral = w - TWO23 == ay;
    let odd = (below && integral && w.to_bits() & 1 == 1) || (!below && ay < 2.0 * TWO23 && y.to_bits() & 1 == 1);
    let non_integer = below && !integral;
    let signed = if x.is_sign_negative() && odd { -mag } else { mag };
    if x == 1.0 || y == 0.0 {
        1.0
    } else if x.is_nan() || y.is_nan() {
        f32::NAN
    } else if ax == 1.0 && ay == f32::INFINITY {
        1.0
    } else if x < 0.0 && x != f32::NEG_INFINITY && non_integer {
        f32::NAN
    } else {
        signed
    }
}

/// `a·b + c`, fused when `F`.
#[inline(always)]
fn mad<const F: bool>(a: f32, b: f32, c: f32) -> f32 {
    if F {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}
