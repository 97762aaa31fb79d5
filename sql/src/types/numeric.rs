//! `numeric` support on top of `rust_decimal::Decimal`: text input, the `numeric(p,s)` type
//! modifier, PostgreSQL's division scale rule and the base-10000 view used by the binary format.
//!
//! Limits (a documented difference from PostgreSQL): a `Decimal` holds a 96-bit mantissa and at
//! most 28 fractional digits. Values with more fractional digits are rounded (half away from
//! zero) to fit; values whose integer part needs more than 28–29 digits fail with `22003`
//! "value overflows numeric format". `NaN` and `±Infinity` are not representable and fail with
//! `0A000`.

use rust_decimal::{Decimal, RoundingStrategy};

use crate::error::{Error, Result};

/// The largest scale (fractional digits) a `Decimal` can hold.
pub(crate) const MAX_SCALE: u32 = 28;

/// The largest mantissa magnitude a `Decimal` can hold (2^96 - 1).
const MAX_MANTISSA: u128 = (1u128 << 96) - 1;

/// `22003` as PostgreSQL reports an overflowing numeric computation.
pub(crate) fn overflow() -> Error {
    Error::NumericOutOfRange { message: "value overflows numeric format".into() }
}

/// `0A000` for the special numeric values we cannot represent.
pub(crate) fn special_unsupported(what: &str) -> Error {
    Error::unsupported(format!("numeric {what}"))
}

/// 10^n as u128 (n <= 38).
pub(crate) fn pow10(n: u32) -> u128 {
    10u128.pow(n)
}

/// Zero with the given scale (clamped) and a positive sign.
fn zero(scale: i64) -> Decimal {
    Decimal::from_i128_with_scale(0, scale.clamp(0, MAX_SCALE as i64) as u32)
}

/// Makes `-0` positive so it prints as `0` and encodes like `0`.
pub(crate) fn canonical_zero(mut d: Decimal) -> Decimal {
    if d.is_zero() {
        d.set_sign_positive(true);
    }
    d
}

/// Drops the last `n` digits of `digits` (values 0..=9), rounding half away from zero.
fn round_off(digits: &mut Vec<u8>, n: usize) {
    if n == 0 {
        return;
    }
    if n > digits.len() {
        digits.clear();
        return;
    }
    let keep = digits.len() - n;
    let up = digits[keep] >= 5;
    digits.truncate(keep);
    if up {
        let mut i = keep;
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
}

/// Builds `±digits × 10^-scale` where `digits` are decimal digit values (0..=9), most
/// significant first. Rounds away fractional digits that do not fit (see the module doc).
pub(crate) fn from_digits(negative: bool, digits: &[u8], scale: i64) -> Result<Decimal> {
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    let mut d: Vec<u8> = digits[first..].to_vec();
    let mut scale = scale;
    if d.is_empty() {
        return Ok(zero(scale));
    }
    if scale < 0 {
        if d.len() as i64 - scale > 29 {
            return Err(overflow());
        }
        d.extend(std::iter::repeat_n(0, (-scale) as usize));
        scale = 0;
    }
    loop {
        let excess = (scale - MAX_SCALE as i64).max(d.len() as i64 - 29).max(0);
        if excess > 0 {
            if excess > scale {
                return Err(overflow());
            }
            round_off(&mut d, excess as usize);
            scale -= excess;
            continue;
        }
        let m = d.iter().fold(0u128, |acc, &x| acc * 10 + x as u128);
        if m > MAX_MANTISSA {
            if scale == 0 {
                return Err(overflow());
            }
            round_off(&mut d, 1);
            scale -= 1;
            continue;
        }
        let m = if negative { -(m as i128) } else { m as i128 };
        return Ok(canonical_zero(Decimal::from_i128_with_scale(m, scale as u32)));
    }
}

/// Parses PostgreSQL `numeric` input (already trimmed): `[+-]digits[.digits][e[+-]digits]`,
/// also `.5` and `5.`. The display scale is the number of fractional digits minus the exponent
/// (never below 0), as in PostgreSQL: `1.5e3` → `1500`, `1e-3` → `0.001`.
pub(crate) fn parse_numeric(s: &str) -> Result<Decimal> {
    let invalid = || Error::invalid_input("numeric", s);
    let b = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let rest = &s[i..];
    if rest.eq_ignore_ascii_case("nan") {
        return Err(special_unsupported("NaN"));
    }
    if rest.eq_ignore_ascii_case("infinity") || rest.eq_ignore_ascii_case("inf") {
        return Err(special_unsupported("Infinity"));
    }
    let mut digits = Vec::with_capacity(b.len());
    let mut frac = 0i64;
    let mut seen_digit = false;
    while i < b.len() && b[i].is_ascii_digit() {
        digits.push(b[i] - b'0');
        seen_digit = true;
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            digits.push(b[i] - b'0');
            frac += 1;
            seen_digit = true;
            i += 1;
        }
    }
    if !seen_digit {
        return Err(invalid());
    }
    let mut exp = 0i64;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let mut exp_neg = false;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            exp_neg = b[i] == b'-';
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            exp = exp.saturating_mul(10).saturating_add((b[i] - b'0') as i64);
            i += 1;
        }
        if i == start {
            return Err(invalid());
        }
        // PostgreSQL rejects exponents beyond NUMERIC_MAX_PRECISION (1000).
        if exp > 1000 {
            return Err(invalid());
        }
        if exp_neg {
            exp = -exp;
        }
    }
    if i != b.len() {
        return Err(invalid());
    }
    // A negative scale (trailing integer zeros) becomes display scale 0 in `from_digits`.
    let scale = frac - exp;
    from_digits(negative, &digits, scale)
}

/// Applies the `numeric(p,s)` type modifier: rounds half away from zero to `s` digits and checks
/// that the result has at most `p - s` integer digits (`22003` "numeric field overflow").
pub(crate) fn apply_typmod(d: Decimal, precision: u8, scale: u8) -> Result<Decimal> {
    let s = (scale as u32).min(MAX_SCALE);
    let d = if d.scale() > s {
        d.round_dp_with_strategy(s, RoundingStrategy::MidpointAwayFromZero)
    } else {
        d
    };
    let m = d.mantissa().unsigned_abs();
    let up = s - d.scale();
    let m = m.checked_mul(pow10(up)).ok_or_else(field_overflow)?;
    if m > MAX_MANTISSA || (precision < 39 && m >= pow10(precision as u32)) {
        return Err(field_overflow());
    }
    let m = if d.is_sign_negative() { -(m as i128) } else { m as i128 };
    Ok(canonical_zero(Decimal::from_i128_with_scale(m, s)))
}

/// `22003` "numeric field overflow" (PostgreSQL adds a detail line we do not carry).
fn field_overflow() -> Error {
    Error::NumericOutOfRange { message: "numeric field overflow".into() }
}

/// Number of decimal digits of `m` (1 for 0).
pub(crate) fn decimal_digits(m: u128) -> u32 {
    if m == 0 {
        1
    } else {
        m.ilog10() + 1
    }
}

/// PostgreSQL's view of a nonzero value in base 10000: the weight of its first nonzero
/// base-10000 digit and that digit. Zero gives `(0, 0)`.
pub(crate) fn weight_and_first_digit(d: &Decimal) -> (i32, u128) {
    let m = d.mantissa().unsigned_abs();
    if m == 0 {
        return (0, 0);
    }
    let s = d.scale() as i32;
    let e10 = decimal_digits(m) as i32 - 1 - s;
    let w = e10.div_euclid(4);
    let shift = s + 4 * w;
    let first = if shift >= 0 { m / pow10(shift as u32) } else { m * pow10((-shift) as u32) };
    (w, first)
}

/// PostgreSQL's `select_div_scale`: at least 16 significant digits, and no less than either
/// input's display scale.
pub(crate) fn div_scale(a: &Decimal, b: &Decimal) -> u32 {
    let (w1, f1) = weight_and_first_digit(a);
    let (w2, f2) = weight_and_first_digit(b);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    let rscale = (16 - qweight * 4).max(a.scale() as i32).max(b.scale() as i32).max(0);
    (rscale as u32).min(MAX_SCALE)
}

/// Exact quotient rounded half away from zero to `rscale` digits; `None` when u128 arithmetic
/// is not wide enough.
fn div_exact(a: &Decimal, b: &Decimal, rscale: u32) -> Option<Decimal> {
    let n1 = a.mantissa().unsigned_abs();
    let n2 = b.mantissa().unsigned_abs();
    let k = rscale as i32 + b.scale() as i32 - a.scale() as i32;
    let (num, den) = if k >= 0 {
        (n1.checked_mul(10u128.checked_pow(k as u32)?)?, n2)
    } else {
        (n1, n2.checked_mul(10u128.checked_pow((-k) as u32)?)?)
    };
    let q = num / den;
    let r = num % den;
    let q = if r >= den - r { q + 1 } else { q };
    if q > MAX_MANTISSA {
        return None;
    }
    let neg = a.is_sign_negative() != b.is_sign_negative();
    let q = if neg { -(q as i128) } else { q as i128 };
    Some(canonical_zero(Decimal::from_i128_with_scale(q, rscale)))
}

/// Numeric division with PostgreSQL's result scale. `b` must be nonzero.
pub(crate) fn div(a: &Decimal, b: &Decimal) -> Result<Decimal> {
    let rscale = div_scale(a, b);
    if let Some(q) = div_exact(a, b, rscale) {
        return Ok(q);
    }
    let q = a.checked_div(*b).ok_or_else(overflow)?;
    let q = if q.scale() > rscale {
        q.round_dp_with_strategy(rscale, RoundingStrategy::MidpointAwayFromZero)
    } else {
        let mut q = q;
        q.rescale(rscale);
        q
    };
    Ok(canonical_zero(q))
}

/// Sets the scale of `d` to exactly `scale` when that loses no digits and fits; otherwise
/// returns `d` unchanged.
pub(crate) fn with_min_scale(d: Decimal, scale: u32) -> Decimal {
    let scale = scale.min(MAX_SCALE);
    if d.scale() >= scale {
        return d;
    }
    let m = d.mantissa().unsigned_abs();
    match m.checked_mul(pow10(scale - d.scale())) {
        Some(m) if m <= MAX_MANTISSA => {
            let m = if d.is_sign_negative() { -(m as i128) } else { m as i128 };
            Decimal::from_i128_with_scale(m, scale)
        }
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        parse_numeric(s).unwrap()
    }

    #[test]
    fn parse_keeps_display_scale() {
        for (input, want) in [
            ("1.50", "1.50"),
            ("1.5e3", "1500"),
            ("1e-3", "0.001"),
            (".5", "0.5"),
            ("5.", "5"),
            ("-0.00", "0.00"),
            ("+12", "12"),
            ("1.50e1", "15.0"),
            ("007", "7"),
            ("1e20", "100000000000000000000"),
            ("0.12345678901234567890123456789012", "0.1234567890123456789012345679"),
        ] {
            assert_eq!(dec(input).to_string(), want, "{input}");
        }
        for bad in ["", "abc", "1e", "1.2.3", "e5", ".", "--1", "1 2"] {
            assert_eq!(parse_numeric(bad).unwrap_err().sqlstate(), "22P02", "{bad}");
        }
        assert_eq!(parse_numeric("NaN").unwrap_err().sqlstate(), "0A000");
        assert_eq!(parse_numeric("1e40").unwrap_err().sqlstate(), "22003");
    }

    #[test]
    fn typmod_rounds_and_checks_precision() {
        // PostgreSQL: 12.345::numeric(4,2) = 12.35, 0.995::numeric(3,2) = 1.00,
        // 123.45::numeric(4,2) fails with numeric field overflow.
        assert_eq!(apply_typmod(dec("12.345"), 4, 2).unwrap().to_string(), "12.35");
        assert_eq!(apply_typmod(dec("0.995"), 3, 2).unwrap().to_string(), "1.00");
        assert_eq!(apply_typmod(dec("-2.5"), 5, 0).unwrap().to_string(), "-3");
        assert_eq!(apply_typmod(dec("7"), 5, 2).unwrap().to_string(), "7.00");
        assert_eq!(apply_typmod(dec("-0.001"), 5, 2).unwrap().to_string(), "0.00");
        let e = apply_typmod(dec("123.45"), 4, 2).unwrap_err();
        assert_eq!((e.sqlstate(), e.to_string().as_str()), ("22003", "numeric field overflow"));
        assert!(apply_typmod(dec("0.99995"), 4, 4).is_err());
        assert_eq!(apply_typmod(dec("0.99994"), 4, 4).unwrap().to_string(), "0.9999");
    }

    #[test]
    fn division_scale_matches_postgres() {
        for (a, b, want) in [
            ("1", "3", "0.33333333333333333333"),
            ("10", "4", "2.5000000000000000"),
            ("100", "3", "33.3333333333333333"),
            ("1", "7000", "0.00014285714285714286"),
            ("123456789", "7", "17636684.142857142857"),
            ("2", "3.000", "0.66666666666666666667"),
            ("-2", "3", "-0.66666666666666666667"),
        ] {
            assert_eq!(div(&dec(a), &dec(b)).unwrap().to_string(), want, "{a}/{b}");
        }
    }
}
