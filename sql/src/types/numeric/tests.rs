//! Unit tests: expected strings come from PostgreSQL 15; the property tests check the inline
//! (`i128`) fast paths against the general `Mag` path and the general path against exact
//! identities.

use super::*;
use crate::types::test_rng::Rng;

fn n(s: &str) -> Numeric {
    Numeric::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn show(r: Result<Numeric>) -> String {
    match r {
        Ok(v) => v.to_string(),
        Err(e) => format!("{}: {e}", e.sqlstate()),
    }
}

/// The same value forced into the general representation (not canonical), so that operations
/// on it take the `Mag` path.
fn general(v: &Numeric) -> Numeric {
    match v.to_dec() {
        Some(d) if !d.mag.is_zero() => {
            Numeric(Repr::Big(Box::new(Big { neg: d.neg, scale: d.scale as u16, mag: d.mag })))
        }
        _ => v.clone(),
    }
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
        ("0.12345678901234567890123456789012", "0.12345678901234567890123456789012"),
        ("-123456789012345678901234567890.5", "-123456789012345678901234567890.5"),
        ("nan", "NaN"),
        ("-INF", "-Infinity"),
        ("+Infinity", "Infinity"),
        ("0e-16383", &format!("0.{}", "0".repeat(16383))),
        ("9223372036854775807", "9223372036854775807"),
        ("-9223372036854775808", "-9223372036854775808"),
    ] {
        assert_eq!(n(input).to_string(), want, "{input}");
    }
    for bad in ["", "abc", "1e", "1.2.3", "e5", ".", "--1", "1 2", "-nan", "+NaN", "infinit"] {
        assert_eq!(Numeric::parse(bad).unwrap_err().sqlstate(), "22P02", "{bad}");
    }
    for big in ["1e131072", "1e-16384", "0e-16384", "1e99999999999999"] {
        let e = Numeric::parse(big).unwrap_err();
        assert_eq!(
            (e.sqlstate(), e.to_string().as_str()),
            ("22003", "value overflows numeric format")
        );
    }
    assert_eq!(n("1e131071").to_string().len(), 131_072);
    assert!(matches!(n("9223372036854775808").0, Repr::Big(_)));
    assert!(matches!(n("9223372036854775807.0").0, Repr::Big(_)));
    assert!(matches!(n("922337203685477580.7").0, Repr::Small { .. }));
}

#[test]
fn typmod_rounds_and_checks_precision() {
    let t = |s: &str, p, sc| show(n(s).apply_typmod(p, sc));
    assert_eq!(t("12.345", 4, 2), "12.35");
    assert_eq!(t("0.995", 3, 2), "1.00");
    assert_eq!(t("-2.5", 5, 0), "-3");
    assert_eq!(t("7", 5, 2), "7.00");
    assert_eq!(t("-0.001", 5, 2), "0.00");
    assert_eq!(t("0.99994", 4, 4), "0.9999");
    assert_eq!(t("NaN", 4, 2), "NaN");
    let e = n("123.45").apply_typmod(4, 2).unwrap_err();
    assert_eq!((e.sqlstate(), e.to_string().as_str()), ("22003", "numeric field overflow"));
    assert_eq!(
        e.detail(),
        Some("A field with precision 4, scale 2 must round to an absolute value less than 10^2.")
    );
    let e = n("0.99995").apply_typmod(4, 4).unwrap_err();
    assert_eq!(
        e.detail(),
        Some("A field with precision 4, scale 4 must round to an absolute value less than 1.")
    );
    let e = n("-inf").apply_typmod(5, 2).unwrap_err();
    assert_eq!(
        e.detail(),
        Some("A field with precision 5, scale 2 cannot hold an infinite value.")
    );
    let wide = format!("{}.{}", "9".repeat(500), "4".repeat(600));
    assert_eq!(t(&wide, 1000, 500), format!("{}.{}", "9".repeat(500), "4".repeat(500)));
    assert_eq!(t(&wide, 1000, 501).split_once(':').unwrap().0, "22003");
}

#[test]
fn arithmetic_matches_postgres() {
    use Numeric as N;
    type Op = fn(&N, &N) -> Result<N>;
    let (add, sub, mul, div, rem): (Op, Op, Op, Op, Op) = (N::add, N::sub, N::mul, N::div, N::rem);
    for (op, a, b, want) in [
        (mul, "1.23", "4.567", "5.61741"),
        (add, "1.5", "2.25", "3.75"),
        (sub, "1.50", "1.5", "0.00"),
        (div, "100", "3", "33.3333333333333333"),
        (div, "1", "3", "0.33333333333333333333"),
        (div, "10", "4", "2.5000000000000000"),
        (div, "1", "7000", "0.00014285714285714286"),
        (div, "123456789", "7", "17636684.142857142857"),
        (div, "2", "3.000", "0.66666666666666666667"),
        (div, "-2", "3", "-0.66666666666666666667"),
        (div, "0", "7.00", "0.00000000000000000000"),
        (div, "0.000001", "3", "0.000000333333333333333333"),
        (
            div,
            "1",
            "3.0000000000000000000000000000000000000000000",
            "0.3333333333333333333333333333333333333333333",
        ),
        (
            div,
            "12345678901234567890123456789012345678901234567890",
            "7",
            "1763668414462081127160493827001763668414462081127",
        ),
        (
            div,
            "1",
            "123456789012345678901234567890.0",
            "0.000000000000000000000000000008100000072900000663",
        ),
        (
            mul,
            "123456789012345678901234567890123456789",
            "987654321098765432109876543210987654321",
            "121932631137021795226185032733866788594487120865336229233322374638011112635269",
        ),
        (rem, "5.5", "2", "1.5"),
        (rem, "-5.5", "2", "-1.5"),
        (rem, "5.50", "2", "1.50"),
        (rem, "-7.5", "2", "-1.5"),
        (rem, "7", "-2.25", "0.25"),
        (rem, "100000000000000000000", "7", "2"),
        (div, "1.0", "0", "22012: division by zero"),
        (rem, "1.5", "0", "22012: division by zero"),
        (mul, "2.00", "3.0", "6.000"),
        (add, "NaN", "1", "NaN"),
        (add, "inf", "-inf", "NaN"),
        (sub, "inf", "inf", "NaN"),
        (sub, "1", "inf", "-Infinity"),
        (mul, "inf", "0", "NaN"),
        (mul, "-inf", "-2", "Infinity"),
        (div, "inf", "inf", "NaN"),
        (div, "1", "inf", "0"),
        (div, "-inf", "2", "-Infinity"),
        (div, "nan", "0", "NaN"),
        (div, "inf", "0", "22012: division by zero"),
        (rem, "inf", "2", "NaN"),
        (rem, "inf", "0", "22012: division by zero"),
        (rem, "5.5", "-inf", "5.5"),
        (rem, "nan", "0", "NaN"),
    ] {
        assert_eq!(show(op(&n(a), &n(b))), want, "{a} op {b}");
        assert_eq!(show(op(&general(&n(a)), &general(&n(b)))), want, "general: {a} op {b}");
    }
    let tiny = n("1e-10000");
    let p = tiny.mul(&tiny).unwrap();
    assert_eq!((p.scale(), p.is_zero()), (16383, true));
    let e = n("1e100000").mul(&n("1e100000")).unwrap_err();
    assert_eq!(e.to_string(), "value overflows numeric format");
}

#[test]
fn rounding_functions_match_postgres() {
    for (v, s, round, trunc) in [
        ("1234.5678", -2, "1200", "1200"),
        ("1234.5678", 10, "1234.5678000000", "1234.5678000000"),
        ("-1234.5678", 1, "-1234.6", "-1234.5"),
        ("-0.5", 0, "-1", "0"),
        ("9.5", 0, "10", "9"),
        ("999", -3, "1000", "0"),
        ("12345", -20000, "0", "0"),
        (
            "123456789012345678901234567890.55",
            1,
            "123456789012345678901234567890.6",
            "123456789012345678901234567890.5",
        ),
        (
            "55555555555555555555555555555555555555",
            -37,
            "60000000000000000000000000000000000000",
            "50000000000000000000000000000000000000",
        ),
        ("NaN", 2, "NaN", "NaN"),
    ] {
        assert_eq!(show(n(v).round(s)), round, "round({v}, {s})");
        assert_eq!(show(n(v).trunc(s)), trunc, "trunc({v}, {s})");
        assert_eq!(show(general(&n(v)).round(s)), round, "general round({v}, {s})");
    }
    assert_eq!(n("1.5").round(20000).unwrap().scale(), 16383);
    for (v, floor, ceil) in [
        ("-0.5", "-1", "0"),
        ("2.000", "2", "2"),
        ("2.01", "2", "3"),
        ("-inf", "-Infinity", "-Infinity"),
    ] {
        assert_eq!(show(n(v).floor()), floor, "floor({v})");
        assert_eq!(show(n(v).ceil()), ceil, "ceil({v})");
    }
    assert_eq!(n("-inf").abs().to_string(), "Infinity");
    assert_eq!(n("0.00").neg().to_string(), "0.00");
}

#[test]
fn conversions_match_postgres() {
    assert_eq!(n("2.5").to_i64_rounded("integer").unwrap(), 3);
    assert_eq!(n("-2.5").to_i64_rounded("integer").unwrap(), -3);
    assert_eq!(n("-9223372036854775808").to_i64_rounded("bigint").unwrap(), i64::MIN);
    assert_eq!(
        n("-9223372036854775808.5").to_i64_rounded("bigint").unwrap_err().to_string(),
        "bigint out of range"
    );
    let e = n("NaN").to_i64_rounded("integer").unwrap_err();
    assert_eq!((e.sqlstate(), e.to_string().as_str()), ("0A000", "cannot convert NaN to integer"));
    let e = n("-inf").to_i64_rounded("bigint").unwrap_err();
    assert_eq!(e.to_string(), "cannot convert infinity to bigint");
    assert_eq!(n("0.1").to_f64().unwrap(), 0.1);
    assert!(n("nan").to_f64().unwrap().is_nan());
    assert_eq!(n("1e400").to_f64().unwrap_err().sqlstate(), "22003");
    assert_eq!(n("1e-400").to_f64().unwrap_err().sqlstate(), "22003");
    assert_eq!(n("1e39").to_f32().unwrap_err().sqlstate(), "22003");
    assert_eq!(n("1e400").to_f64_lossy(), f64::INFINITY);
    assert_eq!(Numeric::from_float(f64::NEG_INFINITY, 15).unwrap().to_string(), "-Infinity");
    assert_eq!(Numeric::from_float(303.6600036621094, 15).unwrap().to_string(), "303.660003662109");
    assert_eq!(Numeric::from_float(1e300, 15).unwrap().to_string().len(), 301);
}

#[test]
fn order_matches_postgres() {
    let mut v: Vec<Numeric> =
        ["NaN", "1.5", "-inf", "inf", "-1e40", "1e40", "0", "1.50", "-0.001", "nan"]
            .iter()
            .map(|s| n(s))
            .collect();
    v.sort();
    let got: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        got.iter().map(|s| if s.len() > 12 { &s[..3] } else { s }).collect::<Vec<_>>(),
        ["-Infinity", "-10", "-0.001", "0", "1.5", "1.50", "100", "Infinity", "NaN", "NaN"]
    );
    assert_eq!(n("1.0"), n("1.000000000000000000000000000000"));
    assert_eq!(n("NaN"), n("nan"));
    assert!(n("1e-16383") > Numeric::ZERO);
}

/// A random finite value: small ones near the i64 boundary and long ones.
fn random_numeric(rng: &mut Rng) -> Numeric {
    let digits = match rng.next() % 4 {
        0 => 1 + rng.next() % 4,
        1 => 15 + rng.next() % 6,
        _ => 1 + rng.next() % 45,
    };
    let mut s: String = (0..digits).map(|_| char::from(b'0' + (rng.next() % 10) as u8)).collect();
    let scale = (rng.next() % (digits + 3)) as usize;
    if scale > 0 {
        let pad = scale.saturating_sub(s.len());
        s = format!("{}{s}", "0".repeat(pad + 1));
        s.insert(s.len() - scale, '.');
    }
    if rng.next().is_multiple_of(2) {
        s.insert(0, '-');
    }
    n(&s)
}

#[test]
fn fast_paths_agree_with_the_general_path() {
    let mut rng = Rng(0x5eed);
    for _ in 0..20_000 {
        let (a, b) = (random_numeric(&mut rng), random_numeric(&mut rng));
        let (ga, gb) = (general(&a), general(&b));
        assert_eq!(a.cmp(&b), ga.cmp(&gb), "{a} cmp {b}");
        for (name, fast, slow) in [
            ("+", a.add(&b), ga.add(&gb)),
            ("-", a.sub(&b), ga.sub(&gb)),
            ("*", a.mul(&b), ga.mul(&gb)),
            ("/", a.div(&b), ga.div(&gb)),
            ("%", a.rem(&b), ga.rem(&gb)),
            ("round", a.round(1), ga.round(1)),
            ("trunc", a.trunc(-2), ga.trunc(-2)),
        ] {
            let (fast, slow) = (show(fast), show(slow));
            assert_eq!(fast, slow, "{a} {name} {b}");
        }
    }
}

#[test]
fn general_path_satisfies_identities() {
    let mut rng = Rng(0xfeed);
    for _ in 0..5_000 {
        let (a, b) = (general(&random_numeric(&mut rng)), general(&random_numeric(&mut rng)));
        let sum = a.add(&b).unwrap();
        assert_eq!(sum.sub(&b).unwrap(), a, "({a} + {b}) - {b}");
        assert_eq!(sum.scale(), a.scale().max(b.scale()));
        if b.is_zero() {
            continue;
        }
        // a = trunc(a / b) × b + a % b, with |a % b| < |b| and the sign of a.
        let r = a.rem(&b).unwrap();
        assert!(r.abs() < b.abs(), "{a} % {b} = {r}");
        assert!(r.is_zero() || (r.signum() == a.signum()), "{a} % {b} = {r}");
        let q = a.sub(&r).unwrap().div(&b).unwrap();
        assert_eq!(q.trunc(0).unwrap(), q, "({a} - {a} % {b}) / {b} = {q} is an integer");
        // The quotient is within half a unit in the last place of the exact a / b.
        let qd = a.div(&b).unwrap();
        let half_ulp = Numeric::from_i64_scaled(5, qd.scale() + 1);
        let lo = qd.sub(&half_ulp).unwrap().mul(&b).unwrap();
        let hi = qd.add(&half_ulp).unwrap().mul(&b).unwrap();
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        assert!(lo <= a && a <= hi, "{a} / {b} = {qd}");
    }
}
