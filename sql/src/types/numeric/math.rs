//! `numeric`'s mathematical functions: `sqrt`, `exp`, `ln`, `log`, `power`, `div`, `gcd`,
//! `lcm` and `sign`, with PostgreSQL 15's result scales (`numeric.c`), special values and
//! errors.
//!
//! # How results are computed
//!
//! PostgreSQL chooses each result's scale (`rscale`) from a cheap estimate of the result's
//! decimal weight, then computes the value to that scale. We choose `rscale` with the same
//! formulas, then compute the value with enough guard digits that rounding it (half away from
//! zero) at `rscale` gives the correctly rounded result, which is what PostgreSQL returns
//! except, possibly, when the exact value lies within a few units of the guard digits of a
//! rounding tie.
//!
//! - `sqrt` is exact: an integer square root, truncated one digit past `rscale`, then rounded.
//! - `ln` works in fixed point ([`Fx`]): `x = y × 10^e` with `1 <= y < 10`, square roots
//!   bring `y` below 1.01, then `ln y = 2 atanh((y-1)/(y+1))` by its series; the roots are
//!   undone by a shift of `2^k`, and `e × ln 10` is added.
//! - `exp` halves its argument until it is below 0.001, sums the Taylor series and squares
//!   back; negative arguments are inverted at the end.
//! - `power` with an integer exponent multiplies in floating decimal (a fixed number of
//!   significant digits); other exponents go through `exp(y × ln x)`.
//!
//! Guard digits cover the error growth of each step: the `2^k` shift, `e × ln 10`, squaring
//! (relative error doubles per squaring) and the weight of the result.

use std::cmp::Ordering;

use super::{overflow, round_dec, weight_and_first_digit, Dec, Mag, Numeric, Repr};
use crate::error::{Error, Result};

/// `NUMERIC_MIN_SIG_DIGITS`.
const MIN_SIG_DIGITS: i64 = 16;
/// `NUMERIC_MAX_DISPLAY_SCALE`.
const MAX_DISPLAY_SCALE: i64 = 1000;
/// `NUMERIC_MAX_RESULT_SCALE`: `exp` overflows (or underflows to zero) at `|x| >= 3 ×` this.
const MAX_RESULT_SCALE: f64 = 2000.0;
/// PostgreSQL's literal for log10(e) in its weight estimates (not quite `LOG10_E`).
#[allow(clippy::approx_constant)]
const LOG10_E: f64 = 0.434294481903252;
/// Integer powers whose exact result has at most this many digits are computed exactly.
const EXACT_POWER_DIGITS: u64 = 4000;
/// Extra digits carried beyond what the result needs.
const GUARD: i64 = 12;

/// `2201E`-class errors of the logarithms.
fn log_error(zero: bool) -> Error {
    Error::DataException {
        message: if zero {
            "cannot take logarithm of zero".into()
        } else {
            "cannot take logarithm of a negative number".into()
        },
        sqlstate: "2201E",
    }
}

/// `2201F`: invalid argument for a power function.
fn power_error(message: &str) -> Error {
    Error::DataException { message: message.into(), sqlstate: "2201F" }
}

/// PostgreSQL's scale clamp: at least `NUMERIC_MIN_DISPLAY_SCALE` (0), at most 1000.
fn clamp_scale(rscale: i64) -> u32 {
    rscale.clamp(0, MAX_DISPLAY_SCALE) as u32
}

/// A signed fixed-point number `±mag × 10^-p`; the scale `p` is carried by the caller.
#[derive(Clone, Debug)]
struct Fx {
    neg: bool,
    mag: Mag,
}

impl Fx {
    fn from_dec(d: &Dec, p: u32) -> Fx {
        let mag = if p >= d.scale { d.mag_at(p) } else { d.mag.div_pow10((d.scale - p) as u64) };
        Fx { neg: d.neg && !mag.is_zero(), mag }
    }

    fn int(v: u64, p: u32) -> Fx {
        Fx { neg: false, mag: Mag::from_u128(v as u128).mul_pow10(p as u64) }
    }

    fn is_zero(&self) -> bool {
        self.mag.is_zero()
    }

    fn add(&self, o: &Fx) -> Fx {
        if self.neg == o.neg {
            return Fx { neg: self.neg, mag: self.mag.add(&o.mag) };
        }
        match self.mag.cmp(&o.mag) {
            Ordering::Less => Fx { neg: o.neg, mag: o.mag.sub(&self.mag) },
            _ => {
                let mag = self.mag.sub(&o.mag);
                Fx { neg: self.neg && !mag.is_zero(), mag }
            }
        }
    }

    fn sub(&self, o: &Fx) -> Fx {
        self.add(&Fx { neg: !o.neg, mag: o.mag.clone() })
    }

    fn mul(&self, o: &Fx, p: u32) -> Fx {
        let mag = self.mag.mul(&o.mag).div_pow10(p as u64);
        Fx { neg: (self.neg != o.neg) && !mag.is_zero(), mag }
    }

    fn div(&self, o: &Fx, p: u32) -> Fx {
        let mag = self.mag.mul_pow10(p as u64).div_rem(&o.mag).0;
        Fx { neg: (self.neg != o.neg) && !mag.is_zero(), mag }
    }

    fn div_int(&self, n: u64) -> Fx {
        let mag = self.mag.div_rem(&Mag::from_u128(n as u128)).0;
        Fx { neg: self.neg && !mag.is_zero(), mag }
    }

    fn mul_int(&self, n: u64) -> Fx {
        Fx { neg: self.neg, mag: self.mag.mul(&Mag::from_u128(n as u128)) }
    }

    /// The square root of a nonnegative value, truncated.
    fn sqrt(&self, p: u32) -> Fx {
        Fx { neg: false, mag: isqrt(&self.mag.mul_pow10(p as u64)) }
    }

    /// Rounds at `rscale` (half away from zero) into a `Numeric`.
    fn round(self, p: u32, rscale: u32) -> Result<Numeric> {
        round_dec(Dec { neg: self.neg, mag: self.mag, scale: p }, rscale as i64, true)
    }

    /// An `f64` approximation, for estimates.
    fn to_f64(&self, p: u32) -> f64 {
        let digits = self.mag.digits();
        if digits == 0 {
            return 0.0;
        }
        let take = digits.min(17) as u32;
        let top = self.mag.top_digits(take) as f64;
        let v = top * 10f64.powi((digits as i64 - take as i64 - p as i64) as i32);
        if self.neg {
            -v
        } else {
            v
        }
    }
}

/// `floor(sqrt(n))` by Newton's iteration from above.
fn isqrt(n: &Mag) -> Mag {
    if n.is_zero() {
        return Mag::zero();
    }
    let digits = n.digits();
    // An overestimate: 10^ceil(digits / 2) > sqrt(n).
    let mut x = Mag::from_u128(1).mul_pow10(digits.div_ceil(2));
    if digits <= 30 {
        let v = n.to_u128().expect("at most 30 digits");
        x = Mag::from_u128((v as f64).sqrt() as u128 + 2);
    }
    loop {
        let y = halve(&x.add(&n.div_rem(&x).0));
        if y.cmp(&x) != Ordering::Less {
            break;
        }
        x = y;
    }
    // Newton from above stops at floor(sqrt(n)) or one above it.
    while x.mul(&x).cmp(n) == Ordering::Greater {
        x = x.sub(&Mag::from_u128(1));
    }
    x
}

fn halve(m: &Mag) -> Mag {
    m.div_rem(&Mag::from_u128(2)).0
}

/// The number of decimal digits of `|e|` (at least 1).
fn digits_of(e: i64) -> i64 {
    e.unsigned_abs().checked_ilog10().map_or(1, |d| d as i64 + 1)
}

/// `ln(x)` for finite `x > 0`, in fixed point with absolute error well below
/// `10^-(p + guard)`. The result is at scale `wp`, returned with it.
fn ln_fx(x: &Dec, p: i64, guard: i64) -> (Fx, u32) {
    let e = x.lead_exp().expect("nonzero");
    let wp = (p.max(0) + guard + 4 + digits_of(e)) as u32;
    let y = Dec { neg: false, mag: x.mag.clone(), scale: 0 };
    // y = mag × 10^(-scale - e), in [1, 10).
    let shift = -(x.scale as i64) - e;
    let y = if shift >= 0 {
        Fx { neg: false, mag: y.mag.mul_pow10(shift as u64).mul_pow10(wp as u64) }
    } else {
        let down = (-shift) as u64;
        if down <= wp as u64 {
            Fx { neg: false, mag: y.mag.mul_pow10(wp as u64 - down) }
        } else {
            Fx { neg: false, mag: y.mag.div_pow10(down - wp as u64) }
        }
    };
    let mut out = ln_small(&y, wp);
    if e != 0 {
        let ln10 = ln_small(&Fx::int(10, wp), wp);
        let t = ln10.mul_int(e.unsigned_abs());
        out = if e > 0 { out.add(&t) } else { out.sub(&t) };
    }
    (out, wp)
}

/// `ln(y)` for `1 <= y <= 10` at scale `wp`.
fn ln_small(y: &Fx, wp: u32) -> Fx {
    let one = Fx::int(1, wp);
    let limit = Fx { neg: false, mag: Mag::from_u128(101).mul_pow10(wp as u64 - 2) };
    let mut y = y.clone();
    let mut k = 0u32;
    while y.mag.cmp(&limit.mag) == Ordering::Greater {
        y = y.sqrt(wp);
        k += 1;
    }
    // ln y = 2 (z + z^3/3 + z^5/5 + ...), z = (y - 1) / (y + 1).
    let z = y.sub(&one).div(&y.add(&one), wp);
    let z2 = z.mul(&z, wp);
    let mut term = z.clone();
    let mut sum = z;
    let mut n = 1u64;
    loop {
        term = term.mul(&z2, wp);
        n += 2;
        let t = term.div_int(n);
        if t.is_zero() {
            break;
        }
        sum = sum.add(&t);
    }
    sum.mul_int(2u64 << k)
}

/// `exp(x)` at scale `wp` for a fixed-point `x` at scale `wp`, `|x| < 6000`.
fn exp_fx(x: &Fx, wp: u32) -> Fx {
    let neg = x.neg;
    let mut r = Fx { neg: false, mag: x.mag.clone() };
    // Halve until r < 0.001.
    let small = Mag::from_u128(1).mul_pow10(wp as u64 - 3);
    let mut k = 0u32;
    while r.mag.cmp(&small) != Ordering::Less {
        r = r.div_int(2);
        k += 1;
    }
    let one = Fx::int(1, wp);
    let mut sum = one.clone();
    let mut term = one.clone();
    let mut n = 1u64;
    loop {
        term = term.mul(&r, wp).div_int(n);
        if term.is_zero() {
            break;
        }
        sum = sum.add(&term);
        n += 1;
    }
    for _ in 0..k {
        sum = sum.mul(&sum, wp);
    }
    if neg {
        one.div(&sum, wp)
    } else {
        sum
    }
}

/// PostgreSQL's `estimate_ln_dweight` for a finite positive value.
fn estimate_ln_dweight(x: &Numeric) -> i64 {
    if x.signum() <= 0 {
        return 0;
    }
    let point_nine = Numeric::from_i64_scaled(9, 1);
    let one_point_one = Numeric::from_i64_scaled(11, 1);
    if x.cmp(&point_nine) != Ordering::Less && x.cmp(&one_point_one) != Ordering::Greater {
        let d = x.sub(&Numeric::from(1i64)).expect("small");
        return match d.significand() {
            Some((_, exp, _)) => exp,
            None => 0,
        };
    }
    // The first two base-10000 digits: x ~= digits × 10^dweight.
    let (w, first) = weight_and_first_digit(x);
    let (digits, dweight) = match base10000_digit(x, w - 1) {
        Some(second) => (first * 10000 + second, w * 4 - 4),
        None => (first, w * 4),
    };
    let ln_var = (digits as f64).ln() + dweight as f64 * std::f64::consts::LN_10;
    ln_var.abs().log10() as i64
}

/// PostgreSQL's `numericvar_to_double_no_overflow` for estimates.
fn approx(x: &Numeric) -> f64 {
    x.to_f64_lossy()
}

impl Numeric {
    /// `sign(x)`: -1, 0 or 1 with dscale 0; `NaN` stays `NaN`.
    pub fn sign(&self) -> Numeric {
        if self.is_nan() {
            return Numeric::NAN;
        }
        Numeric::from(self.signum() as i64)
    }

    /// `sqrt(x)`: `2201F` for negative input.
    pub fn sqrt(&self) -> Result<Numeric> {
        match self.0 {
            Repr::NaN => return Ok(Numeric::NAN),
            Repr::Inf => return Ok(Numeric::INFINITY),
            _ => {}
        }
        if self.signum() < 0 {
            return Err(power_error("cannot take square root of a negative number"));
        }
        let (w, _) = weight_and_first_digit(self);
        let sweight = (w + 1) * 4 / 2 - 1;
        let rscale = clamp_scale((MIN_SIG_DIGITS - sweight).max(self.scale() as i64));
        self.sqrt_at(rscale)
    }

    /// The square root of a finite, non-negative `self`, rounded to `rscale` digits (the
    /// `sqrt_var` of PostgreSQL's stddev aggregates, which choose the scale themselves).
    pub fn sqrt_at(&self, rscale: u32) -> Result<Numeric> {
        if !self.is_finite() || self.signum() < 0 {
            return Err(Error::internal("sqrt_at of a negative or special numeric"));
        }
        let d = self.to_dec().expect("finite");
        // floor(sqrt(x) × 10^(rscale+1)) = isqrt(mag × 10^(2(rscale+1) - scale)).
        let e = 2 * (rscale as u64 + 1) - d.scale as u64;
        let root = isqrt(&d.mag.mul_pow10(e));
        round_dec(Dec { neg: false, mag: root, scale: rscale + 1 }, rscale as i64, true)
    }

    /// `exp(x)`: `22003` when the result overflows numeric.
    pub fn exp(&self) -> Result<Numeric> {
        match self.0 {
            Repr::NaN => return Ok(Numeric::NAN),
            Repr::Inf => return Ok(Numeric::INFINITY),
            Repr::NegInf => return Ok(Numeric::ZERO),
            _ => {}
        }
        let val = (approx(self) * LOG10_E).clamp(-MAX_RESULT_SCALE, MAX_RESULT_SCALE);
        let rscale = clamp_scale((MIN_SIG_DIGITS - val as i64).max(self.scale() as i64));
        exp_at(&self.to_dec().expect("finite"), rscale)
    }

    /// `ln(x)`: `2201E` for zero or negative input.
    pub fn ln(&self) -> Result<Numeric> {
        match self.0 {
            Repr::NaN => return Ok(Numeric::NAN),
            Repr::Inf => return Ok(Numeric::INFINITY),
            Repr::NegInf => return Err(log_error(false)),
            _ => {}
        }
        check_log_arg(self)?;
        let rscale =
            clamp_scale((MIN_SIG_DIGITS - estimate_ln_dweight(self)).max(self.scale() as i64));
        let d = self.to_dec().expect("finite");
        round_ziv(rscale, |guard| {
            let (v, wp) = ln_fx(&d, rscale as i64, guard);
            Ok(Step::Approx(v, wp))
        })
    }

    /// `log(base, x)`: `2201E` for zero or negative inputs, `22012` for base 1.
    pub fn log(base: &Numeric, x: &Numeric) -> Result<Numeric> {
        if !base.is_finite() || !x.is_finite() {
            if base.is_nan() || x.is_nan() {
                return Ok(Numeric::NAN);
            }
            let (s1, s2) = (base.signum(), x.signum());
            if s1 < 0 || s2 < 0 {
                return Err(log_error(false));
            }
            if s1 == 0 || s2 == 0 {
                return Err(log_error(true));
            }
            if matches!(base.0, Repr::Inf) {
                return Ok(if matches!(x.0, Repr::Inf) { Numeric::NAN } else { Numeric::ZERO });
            }
            return Ok(Numeric::INFINITY);
        }
        check_log_arg(base)?;
        check_log_arg(x)?;
        let ln_base_dweight = estimate_ln_dweight(base);
        let ln_num_dweight = estimate_ln_dweight(x);
        let result_dweight = ln_num_dweight - ln_base_dweight;
        let rscale = clamp_scale(
            (MIN_SIG_DIGITS - result_dweight).max(base.scale() as i64).max(x.scale() as i64),
        );
        // ln(x) / ln(base): relative precision of both must exceed the quotient's.
        let need = rscale as i64 + result_dweight.max(0) + 4;
        let (bd, xd) = (base.to_dec().expect("finite"), x.to_dec().expect("finite"));
        round_ziv(rscale, |guard| {
            let (lb, pb) = ln_fx(&bd, need - ln_base_dweight.min(0) + 4, guard);
            let (lx, px) = ln_fx(&xd, need - ln_num_dweight.min(0) + 4, guard);
            if lb.is_zero() {
                return Err(Error::DivisionByZero);
            }
            let wp = pb.max(px);
            let lb = Fx { neg: lb.neg, mag: lb.mag.mul_pow10((wp - pb) as u64) };
            let lx = Fx { neg: lx.neg, mag: lx.mag.mul_pow10((wp - px) as u64) };
            Ok(Step::Approx(lx.div(&lb, wp), wp))
        })
    }

    /// `power(x, y)` with PostgreSQL's special cases and `2201F` errors.
    pub fn power(&self, y: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !y.is_finite() {
            return power_special(self, y);
        }
        let (s1, s2) = (self.signum(), y.signum());
        if s1 == 0 && s2 < 0 {
            return Err(power_error("zero raised to a negative power is undefined"));
        }
        let yd = y.to_dec().expect("finite");
        if y.is_integral() {
            if let Ok(n) = y.to_i64_rounded("bigint") {
                if let Ok(n) = i32::try_from(n) {
                    return power_int(self, n);
                }
            }
        }
        if s1 == 0 {
            // 0 ^ non-integer: zero with PostgreSQL's scale.
            return Numeric::from_i64_scaled(0, MIN_SIG_DIGITS as u32).round(MIN_SIG_DIGITS);
        }
        if s1 < 0 && !y.is_integral() {
            return Err(power_error(
                "a negative number raised to a non-integer power yields a complex result",
            ));
        }
        let odd = s1 < 0 && {
            let t = y.trunc(0)?;
            !t.rem(&Numeric::from(2i64))?.is_zero()
        };
        let base = self.abs();
        let ln_dweight = estimate_ln_dweight(&base);
        let bd = base.to_dec().expect("finite");
        // Low-precision estimate of y × ln(base), rounded as PostgreSQL rounds it: ln(base) to
        // `local` digits, then the product to `local` digits.
        let local = (8 - ln_dweight).max(0);
        let (lb, wp) = ln_fx(&bd, local, GUARD);
        let est = approx(&lb.round(wp, local as u32)?.mul(y)?.round(local)?);
        if est.abs() > MAX_RESULT_SCALE * 3.01 {
            if est > 0.0 {
                return Err(overflow());
            }
            return Numeric::ZERO.round(MAX_DISPLAY_SCALE);
        }
        let val = est * LOG10_E;
        let rscale = clamp_scale(
            (MIN_SIG_DIGITS - val as i64).max(base.scale() as i64).max(y.scale() as i64),
        );
        // exp(t) needs t to absolute precision rscale + weight + guard; t = y × ln(base).
        let r = round_ziv(rscale, |guard| {
            let need = rscale as i64 + (val as i64).max(0) + guard + digits_of(approx(y) as i64);
            let (lb, wp) = ln_fx(&bd, need + 2, guard);
            let t = lb.mul(&Fx::from_dec(&yd, wp), wp);
            exp_fixed(&t, wp, rscale, val, guard)
        })?;
        Ok(if odd && !r.is_zero() { r.neg() } else { r })
    }

    /// Is this finite value an integer?
    fn is_integral(&self) -> bool {
        match self.trunc(0) {
            Ok(t) => t.cmp(self) == Ordering::Equal,
            Err(_) => false,
        }
    }

    /// `div(x, y)`: the truncated quotient with dscale 0; `22012` for a zero divisor.
    pub fn div_trunc(&self, y: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !y.is_finite() {
            if self.is_nan() || y.is_nan() {
                return Ok(Numeric::NAN);
            }
            if !self.is_finite() {
                if y.is_zero() {
                    return Err(Error::DivisionByZero);
                }
                if !y.is_finite() {
                    return Ok(Numeric::NAN);
                }
                return Ok(if self.signum() * y.signum() > 0 {
                    Numeric::INFINITY
                } else {
                    Numeric::NEG_INFINITY
                });
            }
            return Ok(Numeric::ZERO);
        }
        if y.is_zero() {
            return Err(Error::DivisionByZero);
        }
        let (a, b) = (self.to_dec().expect("finite"), y.to_dec().expect("finite"));
        let s = a.scale.max(b.scale);
        let q = a.mag_at(s).div_rem(&b.mag_at(s)).0;
        let neg = (a.neg != b.neg) && !q.is_zero();
        Numeric::from_dec(Dec { neg, mag: q, scale: 0 })
    }

    /// `gcd(x, y)`: nonnegative, dscale the larger of the inputs'; `NaN` for special values.
    pub fn gcd(&self, y: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !y.is_finite() {
            return Ok(Numeric::NAN);
        }
        let (a, b) = (self.to_dec().expect("finite"), y.to_dec().expect("finite"));
        let s = a.scale.max(b.scale);
        Numeric::from_dec(Dec { neg: false, mag: gcd_mag(a.mag_at(s), b.mag_at(s)), scale: s })
    }

    /// `lcm(x, y)`: nonnegative, dscale the larger of the inputs'; `NaN` for special values.
    pub fn lcm(&self, y: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !y.is_finite() {
            return Ok(Numeric::NAN);
        }
        let (a, b) = (self.to_dec().expect("finite"), y.to_dec().expect("finite"));
        let s = a.scale.max(b.scale);
        let (ma, mb) = (a.mag_at(s), b.mag_at(s));
        if ma.is_zero() || mb.is_zero() {
            return Numeric::from_dec(Dec { neg: false, mag: Mag::zero(), scale: s });
        }
        let g = gcd_mag(ma.clone(), mb.clone());
        // The lcm of the mantissas at the common scale is the mantissa of the lcm.
        let l = ma.div_rem(&g).0.mul(&mb);
        Numeric::from_dec(Dec { neg: false, mag: l, scale: s })
    }
}

fn gcd_mag(mut a: Mag, mut b: Mag) -> Mag {
    while !b.is_zero() {
        let r = a.div_rem(&b).1;
        a = b;
        b = r;
    }
    a
}

fn check_log_arg(x: &Numeric) -> Result<()> {
    match x.signum() {
        0 => Err(log_error(true)),
        s if s < 0 => Err(log_error(false)),
        _ => Ok(()),
    }
}

/// `exp` of an exact finite value, rounded at `rscale`.
fn exp_at(x: &Dec, rscale: u32) -> Result<Numeric> {
    let val = Numeric::from_dec(x.clone())?.to_f64_lossy();
    if val.abs() >= MAX_RESULT_SCALE * 3.0 {
        if val > 0.0 {
            return Err(overflow());
        }
        return Numeric::ZERO.round(rscale as i64);
    }
    let weight = val * LOG10_E;
    round_ziv(rscale, |guard| {
        let wp = (rscale as i64 + (weight as i64).max(0) + guard + 8) as u32;
        exp_fixed(&Fx::from_dec(x, wp), wp, rscale, weight, guard)
    })
}

/// `exp(t)` for a fixed-point `t` at scale `wp`, to be rounded at `rscale`; `weight`
/// estimates the result's decimal weight (for the working precision). Overflow is `22003`;
/// a result below every digit is zero.
fn exp_fixed(t: &Fx, wp: u32, rscale: u32, weight: f64, guard: i64) -> Result<Step> {
    let tv = t.to_f64(wp);
    if tv.abs() >= MAX_RESULT_SCALE * 3.0 {
        if tv > 0.0 {
            return Err(overflow());
        }
        return Ok(Step::Done(Numeric::ZERO.round(rscale as i64)?));
    }
    let need = (rscale as i64 + (weight as i64).max(0) + guard + 8) as u32;
    let t = if need > wp {
        Fx { neg: t.neg, mag: t.mag.mul_pow10((need - wp) as u64) }
    } else {
        Fx { neg: t.neg, mag: t.mag.div_pow10((wp - need) as u64) }
    };
    Ok(Step::Approx(exp_fx(&t, need), need))
}

/// One attempt of [`round_ziv`]'s computation.
enum Step {
    /// The final result (special cases).
    Done(Numeric),
    /// An approximation at scale `wp`, accurate to well within `10^-(wp - 8)`.
    Approx(Fx, u32),
}

/// Rounds the result of `compute(guard)` at `rscale`, computing again with more guard digits
/// while the digits past `rscale` are too close to a rounding tie to decide (Ziv's strategy:
/// `ln(0.9999999999999999)` lies within `10^-48` of one). Gives up after three attempts,
/// which only an exact tie can exhaust.
fn round_ziv(rscale: u32, mut compute: impl FnMut(i64) -> Result<Step>) -> Result<Numeric> {
    let mut guard = GUARD;
    loop {
        match compute(guard)? {
            Step::Done(n) => return Ok(n),
            Step::Approx(v, wp) => {
                if guard >= 4 * GUARD || !near_tie(&v.mag, wp, rscale) {
                    return v.round(wp, rscale);
                }
            }
        }
        guard *= 2;
    }
}

/// Whether `mag × 10^-wp` lies within `10^-(wp - 8)` of a rounding tie at `rscale`.
fn near_tie(mag: &Mag, wp: u32, rscale: u32) -> bool {
    if wp <= rscale + 9 {
        return true;
    }
    let k = (wp - rscale) as u64;
    let rest = mag.div_rem(&Mag::from_u128(1).mul_pow10(k)).1;
    let half = Mag::from_u128(5).mul_pow10(k - 1);
    let diff = if rest.cmp(&half) == Ordering::Less { half.sub(&rest) } else { rest.sub(&half) };
    diff.cmp(&Mag::from_u128(1).mul_pow10(8)) == Ordering::Less
}

/// `x ^ n` for an integer `n` (PostgreSQL 15's `power_var_int`): the result scale is
/// `max(16, dscale(x))`, whatever the result's weight.
fn power_int(x: &Numeric, n: i32) -> Result<Numeric> {
    let rscale = clamp_scale(MIN_SIG_DIGITS.max(x.scale() as i64));
    match n {
        0 => return Numeric::from(1i64).round(rscale as i64),
        1 => return x.round(rscale as i64),
        _ => {}
    }
    if x.is_zero() {
        if n < 0 {
            return Err(Error::DivisionByZero);
        }
        return Numeric::ZERO.round(rscale as i64);
    }
    // The estimated decimal weight of the result, from the leading base-10000 digits.
    let (w, first) = weight_and_first_digit(x);
    let (mut fv, mut p) = (first as f64, w * 4);
    for i in 1..4 {
        match base10000_digit(x, w - i) {
            Some(dg) => {
                fv = fv * 10000.0 + dg as f64;
                p -= 4;
            }
            None => break,
        }
    }
    let f = n as f64 * (fv.log10() + p as f64);
    // Anything above 10^131072 overflows (PostgreSQL computes before failing).
    if f > super::MAX_INT_DIGITS as f64 + 1.0 {
        return Err(overflow());
    }
    if f + 1.0 < -(rscale as f64) {
        return Numeric::ZERO.round(rscale as i64);
    }
    let d = x.to_dec().expect("finite");
    let m = n.unsigned_abs() as u64;
    // Small results exactly, so that exact ties (0.5^17 has 17 decimals) round as PostgreSQL's
    // exact multiplications do.
    if d.mag.digits().saturating_mul(m) <= EXACT_POWER_DIGITS {
        let mut p = Mag::from_u128(1);
        for _ in 0..m {
            p = p.mul(&d.mag);
        }
        let scale = d.scale as u64 * m;
        let neg = d.neg && m % 2 == 1;
        if n > 0 {
            let scale = u32::try_from(scale).map_err(|_| overflow())?;
            return round_dec(Dec { neg, mag: p, scale }, rscale as i64, true);
        }
        // 1 / (p × 10^-scale) = 10^scale / p, rounded half away from zero at rscale.
        let (q, r) = Mag::from_u128(1).mul_pow10(scale + rscale as u64).div_rem(&p);
        let q = if r.add(&r).cmp(&p) != Ordering::Less { q.add_small(1) } else { q };
        return Numeric::from_dec(Dec { neg: neg && !q.is_zero(), mag: q, scale: rscale });
    }
    // Significant digits to carry: the result's digits down to rscale, plus guard digits for
    // the ~2 log2(n) roundings (relative error grows linearly with n).
    let sig = (rscale as i64 + f.ceil() as i64).max(0) + GUARD + digits_of(m as i64) + 2;
    let (mag, exp10) = pow_float(&d.mag, -(d.scale as i64), m, sig as u64);
    // value = mag × 10^exp10; for n < 0 take 1 / value.
    let fx_scale = (rscale as i64 + GUARD + 2) as u32;
    let mag = if n > 0 {
        let total = exp10 + fx_scale as i64;
        if total >= 0 {
            mag.mul_pow10(total as u64)
        } else {
            mag.div_pow10((-total) as u64)
        }
    } else {
        // 1 / (mag × 10^exp10) at scale fx_scale = 10^(fx_scale - exp10) / mag.
        let k = fx_scale as i64 - exp10;
        if k < 0 {
            Mag::zero()
        } else {
            Mag::from_u128(1).mul_pow10(k as u64).div_rem(&mag).0
        }
    };
    let neg = d.neg && m % 2 == 1 && !mag.is_zero();
    Fx { neg, mag }.round(fx_scale, rscale)
}

/// The base-10000 digit of weight `w` of a finite value, if the value has nonzero digits at
/// that weight or below (PostgreSQL's digit arrays have no trailing zero digits).
fn base10000_digit(x: &Numeric, w: i64) -> Option<u64> {
    let d = x.to_dec()?;
    // Position (in the integer mantissa) of 10^(4w).
    let low = 4 * w + d.scale as i64;
    if low + 4 <= 0 {
        return None;
    }
    let rest = d.mag.div_rem(&Mag::from_u128(1).mul_pow10((low + 4) as u64)).1;
    if rest.is_zero() {
        return None;
    }
    let digit = if low >= 0 { rest.div_pow10(low as u64) } else { rest.mul_pow10((-low) as u64) };
    Some(digit.to_u128().expect("four digits") as u64)
}

/// `(mag × 10^e)^n` in floating decimal with `sig` significant digits: `(mantissa, exponent)`.
fn pow_float(mag: &Mag, e: i64, n: u64, sig: u64) -> (Mag, i64) {
    let norm = |m: Mag, e: i64| -> (Mag, i64) {
        let d = m.digits();
        if d > sig {
            (m.div_pow10(d - sig), e + (d - sig) as i64)
        } else {
            (m, e)
        }
    };
    let mut base = norm(mag.clone(), e);
    let mut acc = (Mag::from_u128(1), 0i64);
    let mut n = n;
    while n > 0 {
        if n & 1 == 1 {
            acc = norm(acc.0.mul(&base.0), acc.1 + base.1);
        }
        n >>= 1;
        if n > 0 {
            base = norm(base.0.mul(&base.0), base.1 * 2);
        }
    }
    acc
}

/// `power` with a `NaN` or infinite input (PostgreSQL's `numeric_power` special cases).
fn power_special(x: &Numeric, y: &Numeric) -> Result<Numeric> {
    let one = Numeric::from(1i64);
    if x.is_nan() {
        if y.is_finite() && y.is_zero() {
            return Ok(one);
        }
        return Ok(Numeric::NAN);
    }
    if y.is_nan() {
        if x.is_finite() && x.cmp(&one) == Ordering::Equal {
            return Ok(one);
        }
        return Ok(Numeric::NAN);
    }
    let (s1, s2) = (x.signum(), y.signum());
    if s1 == 0 && s2 < 0 {
        return Err(power_error("zero raised to a negative power is undefined"));
    }
    // Infinities count as integers here, as in PostgreSQL's `numeric_is_integral`.
    if s1 < 0 && y.is_finite() && !y.is_integral() {
        return Err(power_error(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if x.is_finite() && x.cmp(&one) == Ordering::Equal {
        return Ok(one);
    }
    if s2 == 0 {
        return Ok(one);
    }
    if s1 == 0 && s2 > 0 {
        return Ok(Numeric::ZERO);
    }
    if !y.is_finite() {
        let abs_x_gt_one = if !x.is_finite() {
            true
        } else {
            if x.cmp(&one.neg()) == Ordering::Equal {
                return Ok(one);
            }
            x.abs().cmp(&one) == Ordering::Greater
        };
        return Ok(if abs_x_gt_one == (s2 > 0) { Numeric::INFINITY } else { Numeric::ZERO });
    }
    if matches!(x.0, Repr::Inf) {
        return Ok(if s2 > 0 { Numeric::INFINITY } else { Numeric::ZERO });
    }
    // x = -Infinity, y finite and integral here.
    if s2 < 0 {
        return Ok(Numeric::ZERO);
    }
    let odd = !y.rem(&Numeric::from(2i64))?.is_zero();
    Ok(if odd { Numeric::NEG_INFINITY } else { Numeric::INFINITY })
}
