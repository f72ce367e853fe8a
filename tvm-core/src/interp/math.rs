//! Number formats and functions the interpreter needs beyond `std`: f16 and bf16
//! conversions (round to nearest, ties to even, subnormals, infinities and NaNs kept) and an
//! `erf` accurate to a few ulps in f64. Public so backends and tests can use the same
//! reference.

/// The f32 value of IEEE binary16 `bits` (exact).
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = ((bits >> 10) & 0x1f) as i32;
    let man = (bits & 0x3ff) as u32;
    if exp == 0 {
        // Zero or subnormal: man · 2^-24, exact in f32.
        return sign * (man as f32) * (1.0 / 16_777_216.0);
    }
    let out = ((bits as u32 & 0x8000) << 16)
        | if exp == 0x1f { 0x7f80_0000 | (man << 13) } else { (((exp + 127 - 15) as u32) << 23) | (man << 13) };
    f32::from_bits(out)
}

/// The f32 value of bfloat16 `bits` (exact).
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// `x` rounded to binary16 (nearest, ties to even).
pub fn f64_to_f16(x: f64) -> u16 {
    round_to_small(x, 5, 10)
}

/// `x` rounded to bfloat16 (nearest, ties to even).
pub fn f64_to_bf16(x: f64) -> u16 {
    round_to_small(x, 8, 7)
}

/// `x` rounded to binary16 (exactly one rounding: f32 → f64 is exact).
pub fn f32_to_f16(x: f32) -> u16 {
    f64_to_f16(x as f64)
}

/// `x` rounded to bfloat16.
pub fn f32_to_bf16(x: f32) -> u16 {
    f64_to_bf16(x as f64)
}

/// Rounds `x` to a 16-bit float format with `exp_bits` exponent and `man_bits` mantissa
/// bits, once, directly from the f64 value.
fn round_to_small(x: f64, exp_bits: u32, man_bits: u32) -> u16 {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    let inf: u16 = (((1u32 << exp_bits) - 1) << man_bits) as u16;
    if x.is_nan() {
        // A quiet NaN keeping the top payload bits.
        let payload = ((x.to_bits() >> (52 - man_bits)) as u16) & ((1u16 << man_bits) - 1);
        return sign | inf | (1u16 << (man_bits - 1)) | payload;
    }
    let a = x.abs();
    if a.is_infinite() {
        return sign | inf;
    }
    let bits = a.to_bits();
    let e64 = (bits >> 52) as i32;
    if e64 == 0 {
        // Zero, or an f64 subnormal: far below half the smallest subnormal of the format.
        return sign;
    }
    let bias = (1i32 << (exp_bits - 1)) - 1;
    let unbiased = e64 - 1023;
    if unbiased > bias {
        return sign | inf;
    }
    let emin = 1 - bias;
    let shift = 52 - man_bits as i32 + (emin - unbiased).max(0);
    if shift > 53 {
        return sign;
    }
    let shift = shift as u32;
    let sig: u64 = (1u64 << 52) | (bits & ((1u64 << 52) - 1));
    let mut q = sig >> shift;
    let rem = sig & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    // Normal: the implicit bit in q carries into the exponent field; subnormal: q itself
    // (q == 2^man_bits is the smallest normal, which the same encoding gives).
    let out = if unbiased >= emin { (((unbiased + bias - 1) as u64) << man_bits) + q } else { q };
    if out >= inf as u64 {
        return sign | inf;
    }
    sign | out as u16
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

#[cfg(test)]
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trip_and_rounding() {
        for bits in 0u16..=u16::MAX {
            let f = f16_to_f32(bits);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), bits, "bits {bits:#06x} value {f}");
            }
        }
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // halfway to the next binade: rounds to inf
        assert_eq!(f32_to_f16(65519.99), 0x7bff);
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00); // tie → even
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02); // tie → even (up)
        assert_eq!(f32_to_f16(2.0f32.powi(-25)), 0x0000); // half the smallest subnormal: tie → 0
        assert_eq!(f32_to_f16(2.0f32.powi(-25) * 1.0001), 0x0001);
        assert_eq!(f32_to_f16(-0.0), 0x8000);
    }

    #[test]
    fn bf16_round_trip_and_rounding() {
        for bits in 0u16..=u16::MAX {
            let f = bf16_to_f32(bits);
            if f.is_nan() {
                assert!(bf16_to_f32(f32_to_bf16(f)).is_nan());
            } else {
                assert_eq!(f32_to_bf16(f), bits, "bits {bits:#06x}");
            }
        }
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80); // tie → even
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80); // rounds up to inf
    }

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
