//! Math functions generated code and the interpreter share beyond `std`: `erf`, accurate
//! to a few ulps in f64 (what `erf` in a kernel computes on the CPU, and the reference the
//! interpreter uses).

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

/// The error function in f32 (the f64 one, rounded once).
#[inline]
pub fn erf_f32(x: f32) -> f32 {
    erf(x as f64) as f32
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
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75; // 0x3f317200: exact times any k in range
    const LN2_LO: f32 = 1.428_606_8e-6; // ln 2 - LN2_HI
                                        // 1.5 · 2^23: adding it rounds to an integer (nearest, ties to even).
    const SHIFTER: f32 = 12_582_912.0;
    let xc = x.clamp(-104.0, 89.0);
    let t = xc * LOG2E + SHIFTER;
    let k = t - SHIFTER;
    let ki = (t.to_bits() as i32).wrapping_sub(SHIFTER.to_bits() as i32);
    let r = (xc - k * LN2_HI) - k * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // 2^k = 2^k1 · 2^k2 with k1, k2 in the normal exponent range (k in [-150, 129]).
    let k1 = ki >> 1;
    let k2 = ki - k1;
    let s1 = f32::from_bits(((k1 + 127) as u32) << 23);
    let s2 = f32::from_bits(((k2 + 127) as u32) << 23);
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
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x }; // 2^23
    let bits = xs.to_bits() as i32;
    // The exponent and mantissa, with the mantissa moved into [√½, √2).
    let mut e = ((bits >> 23) & 0xff) - 127;
    let mut m = f32::from_bits(((bits & 0x007f_ffff) | 0x3f80_0000) as u32);
    let big = m > std::f32::consts::SQRT_2;
    m = if big { m * 0.5 } else { m };
    e += big as i32;
    let e = (e - if sub { 23 } else { 0 }) as f32;
    let f = m - 1.0;
    let z = f * f;
    let p = 7.037_683_6e-2;
    let p = p * f - 1.151_461_0e-1;
    let p = p * f + 1.167_699_9e-1;
    let p = p * f - 1.242_014_1e-1;
    let p = p * f + 1.424_932_3e-1;
    let p = p * f - 1.666_805_8e-1;
    let p = p * f + 2.000_071_4e-1;
    let p = p * f - 2.499_999_4e-1;
    let p = p * f + 3.333_333_1e-1;
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
    let a = x.abs();
    let z = x * x;
    let p = -5.704_988_7e-3;
    let p = p * z + 2.063_908_9e-2;
    let p = p * z - 5.373_971_6e-2;
    let p = p * z + 1.333_144_2e-1;
    let p = p * z - 3.333_328_2e-1;
    // The sign of x, also for -0 (where x + x·z·p is +0).
    let small = (x + x * z * p).copysign(x);
    let big = 1.0 - 2.0 / (exp_f32(2.0 * a.min(20.0)) + 1.0);
    let big = big.copysign(x);
    if a < 0.625 {
        small
    } else if a.is_nan() {
        x
    } else {
        big
    }
}
