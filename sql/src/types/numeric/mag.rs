//! `Mag`: a natural number of any size, in base 10^9 (little-endian `u32` limbs). The base is a
//! power of ten so that decimal digit counts, powers of ten, rounding at a decimal position and
//! the decimal text form are all cheap; the arithmetic is schoolbook (Knuth's algorithm D for
//! division), which is plenty for `numeric`'s at most 147 455 digits.
//!
//! Invariant: no high-order zero limbs, so zero is the empty vector and two equal numbers have
//! equal limb vectors.

use std::cmp::Ordering;

/// The limb base.
const BASE: u64 = 1_000_000_000;
/// Decimal digits per limb.
const LIMB_DIGITS: u64 = 9;
/// 10^0 ..= 10^9.
const POW10: [u32; 10] =
    [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];

/// A natural number (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Mag(Vec<u32>);

impl Mag {
    fn trimmed(mut v: Vec<u32>) -> Mag {
        while v.last() == Some(&0) {
            v.pop();
        }
        Mag(v)
    }

    /// Zero.
    pub(crate) fn zero() -> Mag {
        Mag(Vec::new())
    }

    /// Is this zero?
    pub(crate) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    /// `v` as a `Mag`.
    pub(crate) fn from_u128(mut v: u128) -> Mag {
        let mut limbs = Vec::with_capacity(5);
        while v > 0 {
            limbs.push((v % BASE as u128) as u32);
            v /= BASE as u128;
        }
        Mag(limbs)
    }

    /// The value as a `u128`, if it fits.
    pub(crate) fn to_u128(&self) -> Option<u128> {
        if self.0.len() > 5 {
            return None;
        }
        let mut v: u128 = 0;
        for &limb in self.0.iter().rev() {
            v = v.checked_mul(BASE as u128)?.checked_add(limb as u128)?;
        }
        Some(v)
    }

    /// Parses decimal digit values (0..=9, most significant first).
    pub(crate) fn from_digits(digits: &[u8]) -> Mag {
        let mut limbs = Vec::with_capacity(digits.len() / LIMB_DIGITS as usize + 1);
        let mut end = digits.len();
        while end > 0 {
            let start = end.saturating_sub(LIMB_DIGITS as usize);
            limbs.push(digits[start..end].iter().fold(0u32, |acc, &d| acc * 10 + d as u32));
            end = start;
        }
        Mag::trimmed(limbs)
    }

    /// Number of decimal digits; 0 for zero.
    pub(crate) fn digits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u64 - 1) * LIMB_DIGITS + (top.ilog10() as u64 + 1),
        }
    }

    /// Appends the decimal digits (ASCII) to `out`; nothing for zero.
    pub(crate) fn write_digits(&self, out: &mut String) {
        use std::fmt::Write;
        let Some((top, rest)) = self.0.split_last() else { return };
        let _ = write!(out, "{top}");
        for limb in rest.iter().rev() {
            let _ = write!(out, "{limb:09}");
        }
    }

    /// The decimal digit at position `pos` (0 = units).
    pub(crate) fn digit_at(&self, pos: u64) -> u8 {
        let limb = (pos / LIMB_DIGITS) as usize;
        match self.0.get(limb) {
            None => 0,
            Some(&l) => (l / POW10[(pos % LIMB_DIGITS) as usize] % 10) as u8,
        }
    }

    /// `self × m + a` in place (`m`, `a` < 10^9 + 1).
    fn mul_small_add(&mut self, m: u32, a: u32) {
        let mut carry = a as u64;
        for limb in &mut self.0 {
            let v = *limb as u64 * m as u64 + carry;
            *limb = (v % BASE) as u32;
            carry = v / BASE;
        }
        while carry > 0 {
            self.0.push((carry % BASE) as u32);
            carry /= BASE;
        }
        let v = std::mem::take(&mut self.0);
        *self = Mag::trimmed(v);
    }

    /// `self + a` for a small `a`.
    pub(crate) fn add_small(&self, a: u32) -> Mag {
        let mut r = self.clone();
        r.mul_small_add(1, a);
        r
    }

    /// `self × 10^k`.
    pub(crate) fn mul_pow10(&self, k: u64) -> Mag {
        if self.is_zero() || k == 0 {
            return self.clone();
        }
        let shift = (k / LIMB_DIGITS) as usize;
        let mut limbs = Vec::with_capacity(self.0.len() + shift + 1);
        limbs.resize(shift, 0);
        limbs.extend_from_slice(&self.0);
        let mut r = Mag(limbs);
        r.mul_small_add(POW10[(k % LIMB_DIGITS) as usize], 0);
        r
    }

    /// `(self / d, self % d)` for `0 < d <= 10^9`.
    fn div_rem_small(&self, d: u32) -> (Mag, u32) {
        let mut q = vec![0u32; self.0.len()];
        let mut rem: u64 = 0;
        for i in (0..self.0.len()).rev() {
            let cur = rem * BASE + self.0[i] as u64;
            q[i] = (cur / d as u64) as u32;
            rem = cur % d as u64;
        }
        (Mag::trimmed(q), rem as u32)
    }

    /// `floor(self / 10^k)`.
    pub(crate) fn div_pow10(&self, k: u64) -> Mag {
        let shift = (k / LIMB_DIGITS) as usize;
        if shift >= self.0.len() {
            return Mag::zero();
        }
        Mag(self.0[shift..].to_vec()).div_rem_small(POW10[(k % LIMB_DIGITS) as usize]).0
    }

    /// The top `n` (1..=18) decimal digits as a number (fewer if the number is shorter).
    pub(crate) fn top_digits(&self, n: u32) -> u64 {
        let d = self.digits();
        if d <= n as u64 {
            return self.to_u128().expect("at most 18 digits") as u64;
        }
        self.div_pow10(d - n as u64).to_u128().expect("n digits") as u64
    }

    /// `self + other`.
    pub(crate) fn add(&self, other: &Mag) -> Mag {
        let (long, short) =
            if self.0.len() >= other.0.len() { (self, other) } else { (other, self) };
        let mut out = Vec::with_capacity(long.0.len() + 1);
        let mut carry = 0u64;
        for i in 0..long.0.len() {
            let v = long.0[i] as u64 + short.0.get(i).copied().unwrap_or(0) as u64 + carry;
            out.push((v % BASE) as u32);
            carry = v / BASE;
        }
        if carry > 0 {
            out.push(carry as u32);
        }
        Mag(out)
    }

    /// `self - other`; requires `self >= other`.
    pub(crate) fn sub(&self, other: &Mag) -> Mag {
        debug_assert!(self.cmp(other) != Ordering::Less, "Mag::sub would underflow");
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let mut v = self.0[i] as i64 - other.0.get(i).copied().unwrap_or(0) as i64 - borrow;
            borrow = 0;
            if v < 0 {
                v += BASE as i64;
                borrow = 1;
            }
            out.push(v as u32);
        }
        Mag::trimmed(out)
    }

    /// `self × other` (schoolbook).
    pub(crate) fn mul(&self, other: &Mag) -> Mag {
        if self.is_zero() || other.is_zero() {
            return Mag::zero();
        }
        let mut out = vec![0u64; self.0.len() + other.0.len()];
        for (i, &a) in self.0.iter().enumerate() {
            let mut carry = 0u64;
            for (j, &b) in other.0.iter().enumerate() {
                // < 10^9 + 10^18 + 10^9: fits a u64.
                let v = out[i + j] + a as u64 * b as u64 + carry;
                out[i + j] = v % BASE;
                carry = v / BASE;
            }
            let mut k = i + other.0.len();
            while carry > 0 {
                let v = out[k] + carry;
                out[k] = v % BASE;
                carry = v / BASE;
                k += 1;
            }
        }
        Mag::trimmed(out.into_iter().map(|v| v as u32).collect())
    }

    /// `(self / other, self % other)`; `other` must be nonzero (Knuth, TAOCP 4.3.1 D).
    pub(crate) fn div_rem(&self, other: &Mag) -> (Mag, Mag) {
        assert!(!other.is_zero(), "Mag::div_rem by zero");
        if self.cmp(other) == Ordering::Less {
            return (Mag::zero(), self.clone());
        }
        if other.0.len() == 1 {
            let (q, r) = self.div_rem_small(other.0[0]);
            return (q, Mag::from_u128(r as u128));
        }
        // Normalize so the divisor's top limb is at least BASE / 2.
        let d = (BASE / (*other.0.last().expect("nonzero") as u64 + 1)) as u32;
        let mut v = other.clone();
        v.mul_small_add(d, 0);
        let mut u = self.0.clone();
        u.push(0);
        let mut un = Mag(u);
        // Multiply in place without trimming the extra top limb.
        let mut carry = 0u64;
        for limb in &mut un.0 {
            let x = *limb as u64 * d as u64 + carry;
            *limb = (x % BASE) as u32;
            carry = x / BASE;
        }
        debug_assert_eq!(carry, 0, "the extra limb absorbs the carry");
        let u = &mut un.0;
        let v = &v.0;
        let n = v.len();
        let m = u.len() - n - 1;
        let (vtop, vsec) = (v[n - 1] as u64, v[n - 2] as u64);
        let mut q = vec![0u32; m + 1];
        for j in (0..=m).rev() {
            let num = u[j + n] as u64 * BASE + u[j + n - 1] as u64;
            let mut qhat = num / vtop;
            let mut rhat = num % vtop;
            while qhat >= BASE || qhat * vsec > rhat * BASE + u[j + n - 2] as u64 {
                qhat -= 1;
                rhat += vtop;
                if rhat >= BASE {
                    break;
                }
            }
            // u[j..=j+n] -= qhat × v
            let mut borrow = 0i64;
            let mut carry = 0u64;
            for i in 0..n {
                let p = qhat * v[i] as u64 + carry;
                carry = p / BASE;
                let t = u[i + j] as i64 - (p % BASE) as i64 - borrow;
                if t < 0 {
                    u[i + j] = (t + BASE as i64) as u32;
                    borrow = 1;
                } else {
                    u[i + j] = t as u32;
                    borrow = 0;
                }
            }
            let t = u[j + n] as i64 - carry as i64 - borrow;
            if t < 0 {
                // qhat was one too large: add v back (the carry out of the top is dropped).
                u[j + n] = (t + BASE as i64) as u32;
                qhat -= 1;
                let mut c = 0u64;
                for i in 0..n {
                    let s = u[i + j] as u64 + v[i] as u64 + c;
                    u[i + j] = (s % BASE) as u32;
                    c = s / BASE;
                }
                u[j + n] = ((u[j + n] as u64 + c) % BASE) as u32;
            } else {
                u[j + n] = t as u32;
            }
            q[j] = qhat as u32;
        }
        let rem = Mag::trimmed(u[..n].to_vec()).div_rem_small(d).0;
        (Mag::trimmed(q), rem)
    }
}

impl PartialOrd for Mag {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Mag {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::types::test_rng::Rng;

    /// A random number of 0..=max_digits decimal digits, biased towards runs of 9s and 0s.
    fn random_mag(rng: &mut Rng, max_digits: u64) -> Mag {
        let n = rng.next() % (max_digits + 1);
        let style = rng.next() % 4;
        let digits: Vec<u8> = (0..n)
            .map(|_| match style {
                0 => 9,
                1 if !rng.next().is_multiple_of(3) => 0,
                _ => (rng.next() % 10) as u8,
            })
            .collect();
        Mag::from_digits(&digits)
    }

    fn text(m: &Mag) -> String {
        let mut s = String::new();
        m.write_digits(&mut s);
        if s.is_empty() {
            s.push('0');
        }
        s
    }

    #[test]
    fn small_values_agree_with_u128() {
        let mut rng = Rng(7);
        for _ in 0..20_000 {
            let a = (rng.next() as u128) << (rng.next() % 60) | rng.next() as u128;
            let b = (rng.next() >> (rng.next() % 64)) as u128;
            let (ma, mb) = (Mag::from_u128(a), Mag::from_u128(b));
            assert_eq!(ma.to_u128(), Some(a));
            assert_eq!(text(&ma), a.to_string());
            assert_eq!(ma.digits(), if a == 0 { 0 } else { a.to_string().len() as u64 });
            assert_eq!(ma.cmp(&mb), a.cmp(&b));
            if let Some(s) = a.checked_add(b) {
                assert_eq!(ma.add(&mb).to_u128(), Some(s));
            }
            if a >= b {
                assert_eq!(ma.sub(&mb).to_u128(), Some(a - b));
            }
            if let Some(p) = a.checked_mul(b) {
                assert_eq!(ma.mul(&mb).to_u128(), Some(p));
            }
            if let (Some(q), Some(r)) = (a.checked_div(b), a.checked_rem(b)) {
                let (mq, mr) = ma.div_rem(&mb);
                assert_eq!((mq.to_u128(), mr.to_u128()), (Some(q), Some(r)), "{a} / {b}");
            }
            let k = rng.next() % 12;
            assert_eq!(ma.div_pow10(k).to_u128(), Some(a / 10u128.pow(k as u32)));
            assert_eq!(ma.digit_at(k), (a / 10u128.pow(k as u32) % 10) as u8);
        }
    }

    #[test]
    fn big_division_is_exact() {
        let mut rng = Rng(99);
        for _ in 0..3_000 {
            let a = random_mag(&mut rng, 120);
            let b = random_mag(&mut rng, 60);
            if b.is_zero() {
                continue;
            }
            let (q, r) = a.div_rem(&b);
            assert!(r < b, "{} % {} = {}", text(&a), text(&b), text(&r));
            assert_eq!(q.mul(&b).add(&r), a, "{} / {}", text(&a), text(&b));
        }
    }

    #[test]
    fn powers_of_ten_and_digits() {
        let one = Mag::from_u128(1);
        let big = one.mul_pow10(100);
        assert_eq!(big.digits(), 101);
        assert_eq!(big.div_pow10(100), one);
        assert_eq!(big.top_digits(4), 1000);
        let m = Mag::from_digits(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2]);
        assert_eq!(text(&m), "123456789012");
        assert_eq!(m.top_digits(3), 123);
        assert_eq!(m.add_small(88).to_u128(), Some(123456789100));
        assert_eq!(Mag::from_digits(&[0, 0, 0]), Mag::zero());
    }
}
