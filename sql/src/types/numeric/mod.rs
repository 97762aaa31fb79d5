//! `numeric`: PostgreSQL 15's arbitrary-precision decimal, with its limits, special values and
//! rounding rules.
//!
//! # Representation
//!
//! A finite value is `±mantissa × 10^-dscale`, where `dscale` (0..=16383) is the display scale
//! that PostgreSQL keeps with every value (`1.50` has dscale 2) and every digit past `dscale`
//! is zero, as in PostgreSQL. The mantissa lives inline as an `i64` when it fits (every
//! `numeric(18,s)` value, so every TPC-C value) and in a heap [`Mag`] otherwise:
//!
//! ```text
//! Numeric ─┬─ Small { m: i64, scale: u16 }      |m| <= i64::MAX   (16 bytes, no allocation)
//!          ├─ Big(Box<{ neg, scale, mag: Mag }>) anything larger  (base-10^9 limbs)
//!          └─ NaN | Infinity | -Infinity
//! ```
//!
//! The form is canonical (a value that fits `Small` is never `Big`, zero has no sign), and
//! equality and order are numeric: `1.0 = 1.00`. Arithmetic on two `Small` values runs in
//! `i128` and only falls back to `Mag` when the exact result needs it, so the common case
//! allocates nothing. Base 10^9 (not PostgreSQL's 10^4) keeps the big path short; PostgreSQL's
//! base-10000 view is computed where it matters (`select_div_scale`, the binary format).
//!
//! # Rules (PostgreSQL's `numeric.c`)
//!
//! - Limits: at most 131072 digits before the decimal point and 16383 after; beyond that
//!   `22003` "value overflows numeric format".
//! - `+`/`-` keep the larger dscale; `*` the sum (rounded to 16383); `/` uses
//!   `select_div_scale` (at least 16 significant digits, at least either input's dscale, at
//!   most 1000); `%` the larger dscale. Rounding is half away from zero everywhere.
//! - `NaN` equals itself and sorts above everything; `Infinity` sorts above every finite value.
//!   `NaN` in gives `NaN` out; `Inf - Inf`, `Inf × 0`, `Inf / Inf` and `Inf % x` are `NaN`;
//!   `x / ±Inf` is 0; `x % ±Inf` is `x`; division (and `%`) by zero is `22012` even for
//!   infinities.
//! - `numeric(p,s)` rounds to `s` digits, then requires fewer than `p - s` integer digits
//!   (`22003` "numeric field overflow" with PostgreSQL's DETAIL); `NaN` passes, infinities
//!   do not.

mod mag;
mod math;

#[cfg(test)]
mod bench;

use std::cmp::Ordering;
use std::fmt;

pub(crate) use mag::Mag;

use crate::error::{Error, Result};

/// Most digits after the decimal point (PostgreSQL's `NUMERIC_DSCALE_MAX`).
pub const MAX_SCALE: u32 = 16383;
/// Most digits before the decimal point: the base-10000 weight is at most 32767.
pub const MAX_INT_DIGITS: u64 = 131_072;
/// `select_div_scale`: a quotient keeps at least this many significant digits.
const MIN_SIG_DIGITS: i64 = 16;
/// `select_div_scale`: a quotient's dscale is at most this (`NUMERIC_MAX_DISPLAY_SCALE`).
const MAX_DISPLAY_SCALE: i64 = 1000;
/// `round`/`trunc`: the most negative scale that can still change a value.
const MIN_ROUND_SCALE: i64 = -(MAX_INT_DIGITS as i64) - 1;
/// 10^0 ..= 10^18.
const POW10: [i64; 19] = {
    let mut t = [1i64; 19];
    let mut i = 1;
    while i < 19 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// 10^0 ..= 10^38.
const POW10_U128: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `m × 10^d` for `d <= 18`, exactly: in `i64` when it fits, else in `i128` (|m| < 2^63 and
/// 10^18 < 2^60, so the product is below 2^123). The release profile keeps overflow checks,
/// and an overflow-checked `i128` multiplication is a slow library call, so the `i128` product
/// is computed with `wrapping_mul`, which cannot wrap here.
#[inline]
fn scale_up(m: i64, d: usize) -> i128 {
    match m.checked_mul(POW10[d]) {
        Some(v) => v as i128,
        None => (m as i128).wrapping_mul(POW10[d] as i128),
    }
}

/// A PostgreSQL `numeric` value (see the module doc).
#[derive(Clone)]
pub struct Numeric(Repr);

#[derive(Clone)]
enum Repr {
    /// `m × 10^-scale`, `m != i64::MIN`.
    Small {
        m: i64,
        scale: u16,
    },
    /// A finite value whose mantissa does not fit `Small`.
    Big(Box<Big>),
    NaN,
    Inf,
    NegInf,
}

#[derive(Clone)]
struct Big {
    neg: bool,
    scale: u16,
    mag: Mag,
}

/// A finite value taken apart for the general (allocating) arithmetic.
#[derive(Clone)]
struct Dec {
    neg: bool,
    mag: Mag,
    scale: u32,
}

impl Dec {
    /// Decimal exponent of the leading digit (`digits - 1 - scale`); `None` for zero.
    fn lead_exp(&self) -> Option<i64> {
        let d = self.mag.digits();
        (d > 0).then(|| d as i64 - 1 - self.scale as i64)
    }

    /// The mantissa at `scale >= self.scale`.
    fn mag_at(&self, scale: u32) -> Mag {
        self.mag.mul_pow10((scale - self.scale) as u64)
    }
}

/// A borrowed view of the representation, for the storage encodings.
pub(crate) enum Parts<'a> {
    /// `m × 10^-scale`.
    Small { m: i64, scale: u16 },
    /// `±mag × 10^-scale`, `mag > i64::MAX`.
    Big { neg: bool, scale: u16, mag: &'a Mag },
    /// `NaN`
    NaN,
    /// `Infinity`
    Inf,
    /// `-Infinity`
    NegInf,
}

/// `22003` as PostgreSQL reports a value beyond numeric's limits.
pub(crate) fn overflow() -> Error {
    Error::NumericOutOfRange { message: "value overflows numeric format".into() }
}

impl Numeric {
    /// `NaN`.
    pub const NAN: Numeric = Numeric(Repr::NaN);
    /// `Infinity`.
    pub const INFINITY: Numeric = Numeric(Repr::Inf);
    /// `-Infinity`.
    pub const NEG_INFINITY: Numeric = Numeric(Repr::NegInf);
    /// Zero with display scale 0.
    pub const ZERO: Numeric = Numeric(Repr::Small { m: 0, scale: 0 });

    /// `m × 10^-scale`, for callers that build values from integers (benchmarks, tests).
    /// `scale` must be at most [`MAX_SCALE`].
    pub fn from_i64_scaled(m: i64, scale: u32) -> Numeric {
        assert!(scale <= MAX_SCALE, "numeric scale {scale} exceeds {MAX_SCALE}");
        Numeric::from_i128(m as i128, scale)
    }

    /// `v × 10^-scale` (`scale <= MAX_SCALE`; at most 39 digits, so always in range).
    fn from_i128(v: i128, scale: u32) -> Numeric {
        debug_assert!(scale <= MAX_SCALE);
        if v > i64::MIN as i128 && v <= i64::MAX as i128 {
            return Numeric(Repr::Small { m: v as i64, scale: scale as u16 });
        }
        Numeric(Repr::Big(Box::new(Big {
            neg: v < 0,
            scale: scale as u16,
            mag: Mag::from_u128(v.unsigned_abs()),
        })))
    }

    /// `±m × 10^-scale` (for decoding stored rows); `None` if `scale` is out of range.
    pub(crate) fn from_u128_parts(neg: bool, m: u128, scale: u32) -> Option<Numeric> {
        if scale > MAX_SCALE {
            return None;
        }
        if m <= i64::MAX as u128 {
            let m = if neg { -(m as i64) } else { m as i64 };
            return Some(Numeric(Repr::Small { m, scale: scale as u16 }));
        }
        match i128::try_from(m) {
            Ok(v) => Some(Numeric::from_i128(if neg { -v } else { v }, scale)),
            Err(_) => Some(Numeric::from_dec(Dec { neg, mag: Mag::from_u128(m), scale }).ok()?),
        }
    }

    /// `±mag × 10^-scale`, checked against the limits and made canonical.
    pub(crate) fn from_mag(neg: bool, mag: Mag, scale: u32) -> Result<Numeric> {
        Numeric::from_dec(Dec { neg, mag, scale })
    }

    fn from_dec(d: Dec) -> Result<Numeric> {
        if d.scale > MAX_SCALE {
            return Err(overflow());
        }
        let digits = d.mag.digits();
        if digits > d.scale as u64 + MAX_INT_DIGITS {
            return Err(overflow());
        }
        if let Some(v) = d.mag.to_u128() {
            if v <= i64::MAX as u128 {
                let m = if d.neg { -(v as i64) } else { v as i64 };
                return Ok(Numeric(Repr::Small { m, scale: d.scale as u16 }));
            }
        }
        Ok(Numeric(Repr::Big(Box::new(Big { neg: d.neg, scale: d.scale as u16, mag: d.mag }))))
    }

    /// The finite value taken apart; `None` for `NaN` and infinities.
    fn to_dec(&self) -> Option<Dec> {
        match &self.0 {
            Repr::Small { m, scale } => Some(Dec {
                neg: *m < 0,
                mag: Mag::from_u128(m.unsigned_abs() as u128),
                scale: *scale as u32,
            }),
            Repr::Big(b) => Some(Dec { neg: b.neg, mag: b.mag.clone(), scale: b.scale as u32 }),
            _ => None,
        }
    }

    /// The representation, for the storage encodings.
    pub(crate) fn parts(&self) -> Parts<'_> {
        match &self.0 {
            Repr::Small { m, scale } => Parts::Small { m: *m, scale: *scale },
            Repr::Big(b) => Parts::Big { neg: b.neg, scale: b.scale, mag: &b.mag },
            Repr::NaN => Parts::NaN,
            Repr::Inf => Parts::Inf,
            Repr::NegInf => Parts::NegInf,
        }
    }

    /// Is this `NaN`?
    pub fn is_nan(&self) -> bool {
        matches!(self.0, Repr::NaN)
    }

    /// Is this neither `NaN` nor an infinity?
    pub fn is_finite(&self) -> bool {
        matches!(self.0, Repr::Small { .. } | Repr::Big(_))
    }

    /// Is this zero (of any scale)?
    pub fn is_zero(&self) -> bool {
        matches!(self.0, Repr::Small { m: 0, .. })
    }

    /// -1, 0 or 1 for finite values and infinities; 0 for `NaN` (used for the special cases).
    pub fn signum(&self) -> i32 {
        match &self.0 {
            Repr::Small { m, .. } => m.signum() as i32,
            Repr::Big(b) => {
                if b.neg {
                    -1
                } else {
                    1
                }
            }
            Repr::Inf => 1,
            Repr::NegInf => -1,
            Repr::NaN => 0,
        }
    }

    /// The display scale (digits after the decimal point); 0 for the special values.
    pub fn scale(&self) -> u32 {
        match &self.0 {
            Repr::Small { scale, .. } => *scale as u32,
            Repr::Big(b) => b.scale as u32,
            _ => 0,
        }
    }

    /// Significant digits (decimal, most significant first, no trailing zeros) and the decimal
    /// exponent of the first one, for a nonzero finite value: `-0.0150` → `(true, -2, [1, 5])`.
    pub(crate) fn significand(&self) -> Option<(bool, i64, Vec<u8>)> {
        let (neg, mut digits, scale) = match &self.0 {
            Repr::Small { m: 0, .. } => return None,
            Repr::Small { m, scale } => {
                (*m < 0, m.unsigned_abs().to_string().into_bytes(), *scale as i64)
            }
            Repr::Big(b) => {
                let mut s = String::new();
                b.mag.write_digits(&mut s);
                (b.neg, s.into_bytes(), b.scale as i64)
            }
            _ => return None,
        };
        let exp = digits.len() as i64 - 1 - scale;
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        digits.iter_mut().for_each(|d| *d -= b'0');
        Some((neg, exp, digits))
    }

    // ---------------------------------------------------------------------------------------
    // Text

    /// PostgreSQL's `numeric_in` for input already stripped of surrounding whitespace:
    /// `[+-]digits[.digits][e[+-]digits]` (also `.5`, `5.`), and `NaN`, `[+-]Infinity`,
    /// `[+-]inf` in any case. The dscale is the number of fractional digits minus the exponent,
    /// never below 0: `1.5e3` → `1500`, `1e-3` → `0.001`.
    pub fn parse(s: &str) -> Result<Numeric> {
        let invalid = || Error::invalid_input("numeric", s);
        for (word, v) in [
            ("nan", Numeric::NAN),
            ("infinity", Numeric::INFINITY),
            ("+infinity", Numeric::INFINITY),
            ("-infinity", Numeric::NEG_INFINITY),
            ("inf", Numeric::INFINITY),
            ("+inf", Numeric::INFINITY),
            ("-inf", Numeric::NEG_INFINITY),
        ] {
            if s.eq_ignore_ascii_case(word) {
                return Ok(v);
            }
        }
        let b = s.as_bytes();
        let mut i = 0;
        let mut neg = false;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            neg = b[i] == b'-';
            i += 1;
        }
        // Significant digits (leading zeros dropped) and the count of fractional digits.
        let mut digits: Vec<u8> = Vec::new();
        let mut frac = 0i64;
        let mut seen_digit = false;
        while i < b.len() && b[i].is_ascii_digit() {
            if !digits.is_empty() || b[i] != b'0' {
                digits.push(b[i] - b'0');
            }
            seen_digit = true;
            i += 1;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                if !digits.is_empty() || b[i] != b'0' {
                    digits.push(b[i] - b'0');
                }
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
                // Saturate far beyond any representable value; the range checks below reject.
                exp = (exp * 10 + (b[i] - b'0') as i64).min(1 << 40);
                i += 1;
            }
            if i == start {
                return Err(invalid());
            }
            if exp_neg {
                exp = -exp;
            }
        }
        if i != b.len() {
            return Err(invalid());
        }
        let scale = frac - exp;
        let dscale = scale.max(0);
        if dscale > MAX_SCALE as i64 {
            return Err(overflow());
        }
        if digits.is_empty() {
            return Ok(Numeric(Repr::Small { m: 0, scale: dscale as u16 }));
        }
        // Integer digits: significant digits minus those after the point.
        if digits.len() as i64 - scale > MAX_INT_DIGITS as i64 {
            return Err(overflow());
        }
        let pad = (-scale).max(0) as u64;
        if digits.len() as u64 + pad <= 18 {
            let m = digits.iter().fold(0i64, |acc, &d| acc * 10 + d as i64) * POW10[pad as usize];
            return Ok(Numeric(Repr::Small { m: if neg { -m } else { m }, scale: dscale as u16 }));
        }
        let mag = Mag::from_digits(&digits).mul_pow10(pad);
        Numeric::from_dec(Dec { neg, mag, scale: dscale as u32 })
    }

    /// Appends PostgreSQL's `numeric_out` text: `-12.50`, `0.001`, `NaN`, `-Infinity`.
    pub fn write_text(&self, out: &mut String) {
        let (neg, scale) = match &self.0 {
            Repr::NaN => return out.push_str("NaN"),
            Repr::Inf => return out.push_str("Infinity"),
            Repr::NegInf => return out.push_str("-Infinity"),
            Repr::Small { m, scale } => (*m < 0, *scale as usize),
            Repr::Big(b) => (b.neg, b.scale as usize),
        };
        if neg {
            out.push('-');
        }
        let start = out.len();
        match &self.0 {
            Repr::Small { m, .. } => {
                use std::fmt::Write;
                let _ = write!(out, "{}", m.unsigned_abs());
                if *m == 0 {
                    out.truncate(start);
                }
            }
            Repr::Big(b) => b.mag.write_digits(out),
            _ => unreachable!("special values returned above"),
        }
        let len = out.len() - start;
        if scale == 0 {
            if len == 0 {
                out.push('0');
            }
            return;
        }
        if len <= scale {
            // 0.000ddd: insert "0." and the leading zeros before the digits.
            let zeros = scale - len;
            let mut prefix = String::with_capacity(2 + zeros);
            prefix.push_str("0.");
            prefix.extend(std::iter::repeat_n('0', zeros));
            out.insert_str(start, &prefix);
        } else {
            out.insert(out.len() - scale, '.');
        }
    }

    // ---------------------------------------------------------------------------------------
    // Type modifier, rounding

    /// Applies `numeric(precision, scale)`: rounds half away from zero to `scale` digits, then
    /// checks that the value has at most `precision - scale` integer digits.
    pub fn apply_typmod(&self, precision: u32, scale: u32) -> Result<Numeric> {
        let field_overflow = |detail: String| Error::NumericFieldOverflow { detail };
        match &self.0 {
            Repr::NaN => return Ok(self.clone()),
            Repr::Inf | Repr::NegInf => {
                return Err(field_overflow(format!(
                    "A field with precision {precision}, scale {scale} cannot hold an infinite \
                     value."
                )))
            }
            _ => {}
        }
        if let Repr::Small { m, scale: s } = &self.0 {
            // Already at the scale: |value| < 10^(p - s) exactly when |m| < 10^p.
            if *s as u32 == scale
                && (precision > 18 || m.unsigned_abs() < POW10[precision as usize] as u64)
            {
                return Ok(self.clone());
            }
        }
        let max_digits = precision as i64 - scale as i64;
        let rounded = self.round(scale as i64)?;
        let int_digits = match &rounded.0 {
            Repr::Small { m, scale } => {
                let a = m.unsigned_abs();
                if a == 0 {
                    0
                } else {
                    a.ilog10() as i64 + 1 - *scale as i64
                }
            }
            Repr::Big(b) => b.mag.digits() as i64 - b.scale as i64,
            _ => unreachable!("finite"),
        };
        if int_digits > max_digits {
            let limit = if max_digits != 0 { format!("10^{max_digits}") } else { "1".into() };
            return Err(field_overflow(format!(
                "A field with precision {precision}, scale {scale} must round to an absolute \
                 value less than {limit}."
            )));
        }
        Ok(rounded)
    }

    /// `round(x, s)`: half away from zero at `s` digits after the point (`s` may be negative);
    /// the result's dscale is `max(s, 0)`. `NaN` and infinities are returned unchanged.
    pub fn round(&self, scale: i64) -> Result<Numeric> {
        self.round_or_trunc(scale, true)
    }

    /// `trunc(x, s)`: as [`round`](Self::round), but toward zero.
    pub fn trunc(&self, scale: i64) -> Result<Numeric> {
        self.round_or_trunc(scale, false)
    }

    fn round_or_trunc(&self, scale: i64, round: bool) -> Result<Numeric> {
        let scale = scale.clamp(MIN_ROUND_SCALE, MAX_SCALE as i64);
        let out_scale = scale.max(0) as u32;
        match &self.0 {
            Repr::Small { m, scale: s } => {
                let s = *s as i64;
                if scale >= s && scale - s <= 18 {
                    return Ok(Numeric::from_i128(scale_up(*m, (scale - s) as usize), out_scale));
                }
                if scale < s && s - scale <= 18 {
                    let p = POW10[(s - scale) as usize] as u64;
                    let a = m.unsigned_abs();
                    let mut q = (a / p) as i64;
                    if round && a % p >= p / 2 {
                        q += 1;
                    }
                    let q = if scale < 0 { scale_up(q, (-scale) as usize) } else { q as i128 };
                    return Ok(Numeric::from_i128(if *m < 0 { -q } else { q }, out_scale));
                }
            }
            Repr::Big(_) => {}
            _ => return Ok(self.clone()),
        }
        round_dec(self.to_dec().expect("finite"), scale, round)
    }

    /// `floor(x)`: the largest integer not above `x`, with dscale 0.
    pub fn floor(&self) -> Result<Numeric> {
        self.to_integer(true)
    }

    /// `ceil(x)`: the smallest integer not below `x`, with dscale 0.
    pub fn ceil(&self) -> Result<Numeric> {
        self.to_integer(false)
    }

    fn to_integer(&self, floor: bool) -> Result<Numeric> {
        if !self.is_finite() {
            return Ok(self.clone());
        }
        let t = self.trunc(0)?;
        let moved = (floor && self.signum() < 0) || (!floor && self.signum() > 0);
        if moved && t.cmp(self) != Ordering::Equal {
            let one = Numeric::from(if floor { -1i64 } else { 1 });
            return t.add(&one);
        }
        Ok(t)
    }

    /// `abs(x)`.
    pub fn abs(&self) -> Numeric {
        match &self.0 {
            Repr::Small { m, scale } => Numeric(Repr::Small { m: m.abs(), scale: *scale }),
            Repr::Big(b) => {
                Numeric(Repr::Big(Box::new(Big { neg: false, scale: b.scale, mag: b.mag.clone() })))
            }
            Repr::NegInf => Numeric::INFINITY,
            _ => self.clone(),
        }
    }

    /// `-x` (zero stays unsigned, `NaN` stays `NaN`).
    pub fn neg(&self) -> Numeric {
        match &self.0 {
            Repr::Small { m, scale } => Numeric(Repr::Small { m: -m, scale: *scale }),
            Repr::Big(b) => Numeric(Repr::Big(Box::new(Big {
                neg: !b.neg,
                scale: b.scale,
                mag: b.mag.clone(),
            }))),
            Repr::Inf => Numeric::NEG_INFINITY,
            Repr::NegInf => Numeric::INFINITY,
            Repr::NaN => Numeric::NAN,
        }
    }

    // ---------------------------------------------------------------------------------------
    // Arithmetic

    /// `self + other` (`22003` beyond the limits).
    pub fn add(&self, other: &Numeric) -> Result<Numeric> {
        self.add_signed(other, false)
    }

    /// `self - other`.
    pub fn sub(&self, other: &Numeric) -> Result<Numeric> {
        self.add_signed(other, true)
    }

    /// The fast path (two inline values) stays small enough to inline; the rest is in
    /// [`add_general`](Self::add_general).
    #[inline]
    fn add_signed(&self, other: &Numeric, negate: bool) -> Result<Numeric> {
        if let (Repr::Small { m: a, scale: sa }, Repr::Small { m: b, scale: sb }) =
            (&self.0, &other.0)
        {
            if sa == sb {
                let r = if negate { a.checked_sub(*b) } else { a.checked_add(*b) };
                if let Some(r) = r.filter(|&r| r != i64::MIN) {
                    return Ok(Numeric(Repr::Small { m: r, scale: *sa }));
                }
            }
            let s = (*sa).max(*sb);
            let (da, db) = ((s - sa) as usize, (s - sb) as usize);
            if da <= 18 && db <= 18 {
                let (x, y) = (scale_up(*a, da), scale_up(*b, db));
                let r = if negate { x - y } else { x + y };
                return Ok(Numeric::from_i128(r, s as u32));
            }
        }
        self.add_general(other, negate)
    }

    #[inline(never)]
    fn add_general(&self, other: &Numeric, negate: bool) -> Result<Numeric> {
        let (sa, sb) = (self.signum(), other.signum() * if negate { -1 } else { 1 });
        if !self.is_finite() || !other.is_finite() {
            // NaN in: NaN; Inf + -Inf: NaN; otherwise the infinite operand wins.
            if self.is_nan() || other.is_nan() {
                return Ok(Numeric::NAN);
            }
            return Ok(match (self.is_finite(), other.is_finite()) {
                (false, false) if sa != sb => Numeric::NAN,
                (false, _) => self.clone(),
                (true, _) => {
                    if sb > 0 {
                        Numeric::INFINITY
                    } else {
                        Numeric::NEG_INFINITY
                    }
                }
            });
        }
        let a = self.to_dec().expect("finite");
        let mut b = other.to_dec().expect("finite");
        if negate {
            b.neg = !b.neg;
        }
        let s = a.scale.max(b.scale);
        let (x, y) = (a.mag_at(s), b.mag_at(s));
        let (neg, mag) = if a.neg == b.neg {
            (a.neg, x.add(&y))
        } else {
            match x.cmp(&y) {
                Ordering::Equal => (false, Mag::zero()),
                Ordering::Greater => (a.neg, x.sub(&y)),
                Ordering::Less => (b.neg, y.sub(&x)),
            }
        };
        Numeric::from_dec(Dec { neg, mag, scale: s })
    }

    /// `self × other`: exact, dscale the sum of the dscales (rounded to 16383 beyond that).
    #[inline]
    pub fn mul(&self, other: &Numeric) -> Result<Numeric> {
        if let (Repr::Small { m: a, scale: sa }, Repr::Small { m: b, scale: sb }) =
            (&self.0, &other.0)
        {
            let s = *sa as u32 + *sb as u32;
            if s <= MAX_SCALE {
                if let Some(p) = a.checked_mul(*b).filter(|&p| p != i64::MIN) {
                    return Ok(Numeric(Repr::Small { m: p, scale: s as u16 }));
                }
                // Two i64 factors: the product fits an i128 (see `scale_up`).
                return Ok(Numeric::from_i128((*a as i128).wrapping_mul(*b as i128), s));
            }
        }
        self.mul_general(other)
    }

    #[inline(never)]
    fn mul_general(&self, other: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !other.is_finite() {
            if self.is_nan() || other.is_nan() {
                return Ok(Numeric::NAN);
            }
            // Inf × 0 is NaN; otherwise an infinity with the product of the signs.
            return Ok(match self.signum() * other.signum() {
                0 => Numeric::NAN,
                1 => Numeric::INFINITY,
                _ => Numeric::NEG_INFINITY,
            });
        }
        let (a, b) = (self.to_dec().expect("finite"), other.to_dec().expect("finite"));
        let mag = a.mag.mul(&b.mag);
        let neg = a.neg != b.neg && !mag.is_zero();
        let scale = a.scale + b.scale;
        if scale > MAX_SCALE {
            // Round the exact product (PostgreSQL 15's numeric_mul).
            return round_dec(Dec { neg, mag, scale }, MAX_SCALE as i64, true);
        }
        Numeric::from_dec(Dec { neg, mag, scale })
    }

    /// `self / other` with PostgreSQL's result scale (`select_div_scale`), rounded half away
    /// from zero; `22012` when `other` is zero.
    pub fn div(&self, other: &Numeric) -> Result<Numeric> {
        if let (Repr::Small { m: a, scale: sa }, Repr::Small { m: b, scale: sb }) =
            (&self.0, &other.0)
        {
            if *b != 0 {
                let rscale = div_scale(self, other);
                if let Some(q) = div_small(*a, *sa as i64, *b, *sb as i64, rscale) {
                    return Ok(q);
                }
            }
        }
        self.div_general(other)
    }

    #[inline(never)]
    fn div_general(&self, other: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !other.is_finite() {
            if self.is_nan() || other.is_nan() {
                return Ok(Numeric::NAN);
            }
            if !self.is_finite() {
                return match other.signum() {
                    _ if !other.is_finite() => Ok(Numeric::NAN),
                    0 => Err(Error::DivisionByZero),
                    s if s == self.signum() => Ok(Numeric::INFINITY),
                    _ => Ok(Numeric::NEG_INFINITY),
                };
            }
            // finite / ±Infinity
            return Ok(Numeric::ZERO);
        }
        if other.is_zero() {
            return Err(Error::DivisionByZero);
        }
        let rscale = div_scale(self, other);
        let (a, b) = (self.to_dec().expect("finite"), other.to_dec().expect("finite"));
        let k = rscale as i64 + b.scale as i64 - a.scale as i64;
        let (num, den) = if k >= 0 {
            (a.mag.mul_pow10(k as u64), b.mag.clone())
        } else {
            (a.mag.clone(), b.mag.mul_pow10((-k) as u64))
        };
        let (mut q, r) = num.div_rem(&den);
        if r.add(&r) >= den {
            q = q.add_small(1);
        }
        let neg = a.neg != b.neg && !q.is_zero();
        Numeric::from_dec(Dec { neg, mag: q, scale: rscale })
    }

    /// `self % other`: the remainder of truncated division, with the sign of `self` and the
    /// larger dscale; `22012` when `other` is zero.
    pub fn rem(&self, other: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !other.is_finite() {
            if self.is_nan() || other.is_nan() {
                return Ok(Numeric::NAN);
            }
            if !self.is_finite() {
                if other.is_zero() {
                    return Err(Error::DivisionByZero);
                }
                return Ok(Numeric::NAN);
            }
            return Ok(self.clone());
        }
        if other.is_zero() {
            return Err(Error::DivisionByZero);
        }
        if let (Repr::Small { m: a, scale: sa }, Repr::Small { m: b, scale: sb }) =
            (&self.0, &other.0)
        {
            let s = (*sa).max(*sb);
            let (da, db) = ((s - sa) as usize, (s - sb) as usize);
            if da <= 18 && db <= 18 {
                let (x, y) = (scale_up(*a, da), scale_up(*b, db));
                return Ok(Numeric::from_i128(x % y, s as u32));
            }
        }
        let (a, b) = (self.to_dec().expect("finite"), other.to_dec().expect("finite"));
        let s = a.scale.max(b.scale);
        let (_, r) = a.mag_at(s).div_rem(&b.mag_at(s));
        let neg = a.neg && !r.is_zero();
        Numeric::from_dec(Dec { neg, mag: r, scale: s })
    }

    // ---------------------------------------------------------------------------------------
    // Conversions

    /// The value rounded half away from zero to an integer, as the casts to `smallint`,
    /// `integer` and `bigint` do. `type_name` names the target in the errors: `0A000` "cannot
    /// convert NaN to integer" / "cannot convert infinity to integer", `22003` "integer out of
    /// range".
    pub fn to_i64_rounded(&self, type_name: &str) -> Result<i64> {
        let range = || Error::out_of_range(type_name);
        match &self.0 {
            Repr::NaN => {
                return Err(Error::unsupported_msg(format!("cannot convert NaN to {type_name}")))
            }
            Repr::Inf | Repr::NegInf => {
                return Err(Error::unsupported_msg(format!(
                    "cannot convert infinity to {type_name}"
                )))
            }
            Repr::Small { m, scale: 0 } => return Ok(*m),
            _ => {}
        }
        match self.round(0).map_err(|_| range())?.0 {
            Repr::Small { m, .. } => Ok(m),
            // i64::MIN is the one i64 that `Small` does not hold.
            Repr::Big(b) if b.neg && b.mag.to_u128() == Some(1u128 << 63) => Ok(i64::MIN),
            _ => Err(range()),
        }
    }

    /// `numeric_float8`: through the text form, so correctly rounded; `22003` when the value
    /// is beyond `double precision` (PostgreSQL's message quotes the value's text).
    pub fn to_f64(&self) -> Result<f64> {
        self.to_float("double precision")
    }

    /// `numeric_float4`, as [`to_f64`](Self::to_f64) for `real`.
    pub fn to_f32(&self) -> Result<f32> {
        self.to_float("real")
    }

    fn to_float<F: std::str::FromStr + FloatLike>(&self, type_name: &str) -> Result<F> {
        match &self.0 {
            Repr::NaN => return Ok(F::NAN),
            Repr::Inf => return Ok(F::INFINITY),
            Repr::NegInf => return Ok(F::NEG_INFINITY),
            _ => {}
        }
        let text = self.to_string();
        let f: F = text.parse().ok().expect("numeric text is a valid float literal");
        if f.is_infinite() || (f.is_zero() && !self.is_zero()) {
            return Err(Error::NumericOutOfRange {
                message: format!("\"{text}\" is out of range for type {type_name}"),
            });
        }
        Ok(f)
    }

    /// The nearest `f64`, saturating to ±Infinity or 0 instead of failing (for comparisons
    /// with floats, which cannot fail).
    pub fn to_f64_lossy(&self) -> f64 {
        match &self.0 {
            Repr::Small { m, scale: 0 } => *m as f64,
            Repr::NaN => f64::NAN,
            Repr::Inf => f64::INFINITY,
            Repr::NegInf => f64::NEG_INFINITY,
            _ => self.to_string().parse().expect("numeric text is a valid float literal"),
        }
    }

    /// `float8_numeric` / `float4_numeric`: the float printed with `digits` significant digits
    /// (15 for float8, 6 for float4), then read back; `NaN` and infinities map to themselves.
    pub fn from_float(f: f64, digits: usize) -> Result<Numeric> {
        if f.is_nan() {
            return Ok(Numeric::NAN);
        }
        if f.is_infinite() {
            return Ok(if f > 0.0 { Numeric::INFINITY } else { Numeric::NEG_INFINITY });
        }
        let s = format!("{:.*e}", digits - 1, f);
        let (mantissa, exp) = s.split_once('e').expect("`{:e}` output has an exponent");
        let mantissa = if mantissa.contains('.') {
            mantissa.trim_end_matches('0').trim_end_matches('.')
        } else {
            mantissa
        };
        Numeric::parse(&format!("{mantissa}e{exp}"))
    }
}

/// The float types, for [`Numeric::to_float`].
trait FloatLike: Copy {
    const NAN: Self;
    const INFINITY: Self;
    const NEG_INFINITY: Self;
    fn is_infinite(self) -> bool;
    fn is_zero(self) -> bool;
}

impl FloatLike for f64 {
    const NAN: f64 = f64::NAN;
    const INFINITY: f64 = f64::INFINITY;
    const NEG_INFINITY: f64 = f64::NEG_INFINITY;
    fn is_infinite(self) -> bool {
        f64::is_infinite(self)
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

impl FloatLike for f32 {
    const NAN: f32 = f32::NAN;
    const INFINITY: f32 = f32::INFINITY;
    const NEG_INFINITY: f32 = f32::NEG_INFINITY;
    fn is_infinite(self) -> bool {
        f32::is_infinite(self)
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

/// `d` rounded (half away from zero) or truncated at `scale` digits after the point (`scale`
/// may be negative, clamped by the caller); the result's dscale is `max(scale, 0)`.
fn round_dec(d: Dec, scale: i64, round: bool) -> Result<Numeric> {
    let out_scale = scale.max(0) as u32;
    let s = d.scale as i64;
    if scale >= s {
        return Numeric::from_dec(Dec {
            neg: d.neg,
            mag: d.mag_at(scale as u32),
            scale: out_scale,
        });
    }
    let k = (s - scale) as u64;
    let mut q = d.mag.div_pow10(k);
    if round && d.mag.digit_at(k - 1) >= 5 {
        q = q.add_small(1);
    }
    if scale < 0 && !q.is_zero() {
        q = q.mul_pow10((-scale) as u64);
    }
    Numeric::from_dec(Dec { neg: d.neg && !q.is_zero(), mag: q, scale: out_scale })
}

/// PostgreSQL's view of a finite value in base 10000: the weight of its first nonzero
/// base-10000 digit and that digit; `(0, 0)` for zero.
fn weight_and_first_digit(n: &Numeric) -> (i64, u64) {
    let (digits, scale) = match &n.0 {
        Repr::Small { m: 0, .. } => return (0, 0),
        Repr::Small { m, scale } => (m.unsigned_abs().ilog10() as u64 + 1, *scale as i64),
        Repr::Big(b) => (b.mag.digits(), b.scale as i64),
        _ => return (0, 0),
    };
    let e10 = digits as i64 - 1 - scale;
    let w = e10.div_euclid(4);
    // The first base-10000 digit holds the decimal digits of exponents e10 down to 4w; the
    // mantissa may end before 4w (0.05 has e10 = -2, w = -1), so pad with zeros.
    let want = (e10 - 4 * w + 1) as u64;
    let take = want.min(digits);
    let top = match &n.0 {
        Repr::Small { m, .. } => m.unsigned_abs() / 10u64.pow((digits - take) as u32),
        Repr::Big(b) => b.mag.top_digits(take as u32),
        _ => unreachable!("finite"),
    };
    (w, top * 10u64.pow((want - take) as u32))
}

/// PostgreSQL's `select_div_scale`: at least 16 significant digits, no less than either
/// input's dscale, at most 1000.
fn div_scale(a: &Numeric, b: &Numeric) -> u32 {
    let (w1, f1) = weight_and_first_digit(a);
    let (w2, f2) = weight_and_first_digit(b);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    let rscale = (MIN_SIG_DIGITS - qweight * 4)
        .max(a.scale() as i64)
        .max(b.scale() as i64)
        .clamp(0, MAX_DISPLAY_SCALE);
    rscale as u32
}

/// Division of two small values, rounded half away from zero at `rscale`, when the scaled
/// dividend and divisor fit a `u64` (the common case), else a `u128`; `None` when neither is
/// wide enough.
fn div_small(a: i64, sa: i64, b: i64, sb: i64, rscale: u32) -> Option<Numeric> {
    let neg = (a < 0) != (b < 0);
    let (n1, n2) = (a.unsigned_abs() as u128, b.unsigned_abs() as u128);
    let k = rscale as i64 + sb - sa;
    let p = *POW10_U128.get(k.unsigned_abs() as usize)?;
    let q = if k >= 0 { div_round(n1, p, n2)? } else { div_round(n1, 1, n2.checked_mul(p)?)? };
    let q = i128::try_from(q).ok()?;
    Some(Numeric::from_i128(if neg { -q } else { q }, rscale))
}

/// `round(x × m / d)` half away from zero, in `u64` when the product fits it (a
/// `u128` division is a slow library call); `None` when `x × m` overflows a `u128`.
#[inline]
fn div_round(x: u128, m: u128, d: u128) -> Option<u128> {
    let num = if x <= u64::MAX as u128 && m <= u64::MAX as u128 {
        // Both factors are below 2^64, so the product fits: no overflow check needed.
        x.wrapping_mul(m)
    } else {
        x.checked_mul(m)?
    };
    if let (Ok(n), Ok(d)) = (u64::try_from(num), u64::try_from(d)) {
        let (q, r) = (n / d, n % d);
        return Some((q + (r >= d - r) as u64) as u128);
    }
    let (q, r) = (num / d, num % d);
    Some(q + (r >= d - r) as u128)
}

impl From<i64> for Numeric {
    fn from(v: i64) -> Numeric {
        Numeric::from_i128(v as i128, 0)
    }
}

impl From<i32> for Numeric {
    fn from(v: i32) -> Numeric {
        Numeric(Repr::Small { m: v as i64, scale: 0 })
    }
}

impl From<i16> for Numeric {
    fn from(v: i16) -> Numeric {
        Numeric(Repr::Small { m: v as i64, scale: 0 })
    }
}

impl fmt::Display for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_text(&mut s);
        f.write_str(&s)
    }
}

impl fmt::Debug for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl PartialEq for Numeric {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Numeric {}

impl PartialOrd for Numeric {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// PostgreSQL's order: `-Infinity` < finite values < `Infinity` < `NaN`, `NaN = NaN`, and
/// finite values by value (`1.0 = 1.00`).
impl Ord for Numeric {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        if let (Repr::Small { m: a, scale: sa }, Repr::Small { m: b, scale: sb }) =
            (&self.0, &other.0)
        {
            if sa == sb {
                return a.cmp(b);
            }
        }
        self.cmp_general(other)
    }
}

impl Numeric {
    #[inline(never)]
    fn cmp_general(&self, other: &Self) -> Ordering {
        fn rank(n: &Numeric) -> u8 {
            match n.0 {
                Repr::NegInf => 0,
                Repr::Small { .. } | Repr::Big(_) => 1,
                Repr::Inf => 2,
                Repr::NaN => 3,
            }
        }
        let (ra, rb) = (rank(self), rank(other));
        if ra != 1 || rb != 1 {
            return ra.cmp(&rb);
        }
        if let (Repr::Small { m: a, scale: sa }, Repr::Small { m: b, scale: sb }) =
            (&self.0, &other.0)
        {
            if sa == sb {
                return a.cmp(b);
            }
            let s = (*sa).max(*sb);
            let (da, db) = ((s - sa) as usize, (s - sb) as usize);
            if da <= 18 && db <= 18 {
                return scale_up(*a, da).cmp(&scale_up(*b, db));
            }
        }
        let (sa, sb) = (self.signum(), other.signum());
        if sa != sb {
            return sa.cmp(&sb);
        }
        if sa == 0 {
            return Ordering::Equal;
        }
        let (a, b) = (self.to_dec().expect("finite"), other.to_dec().expect("finite"));
        let by_magnitude = match (a.lead_exp(), b.lead_exp()) {
            (Some(ea), Some(eb)) if ea != eb => ea.cmp(&eb),
            _ => {
                let s = a.scale.max(b.scale);
                a.mag_at(s).cmp(&b.mag_at(s))
            }
        };
        if sa < 0 {
            by_magnitude.reverse()
        } else {
            by_magnitude
        }
    }
}

#[cfg(test)]
mod tests;
