//! Casts between SQL types, following PostgreSQL 15's `pg_cast` (which casts exist and in which
//! context) and its cast functions (rounding and range rules), plus type resolution for
//! UNION/CASE (`common_type`).

use super::datetime::Zone;
use super::numeric::Numeric;
use super::text::{fit_string, format_text_zoned, parse_text_zoned};
use super::value::Value;
use crate::error::{Error, Result};
use catalog::DataType;

/// The context a cast happens in, as in PostgreSQL's `castcontext`. Ordered: a cast allowed
/// implicitly is allowed in assignment, and one allowed in assignment is allowed explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CastKind {
    /// Inserted silently inside expressions (`int4 + int8`, `WHERE numeric_col = 1`).
    Implicit,
    /// Storing into a column (`INSERT`, `UPDATE SET`, binding a parameter to a column).
    Assignment,
    /// Written by the user: `CAST(x AS t)` or `x::t`.
    Explicit,
}

/// Is `ty` one of the string types (`text`, `varchar`, `char`)?
pub(crate) fn is_string(ty: &DataType) -> bool {
    matches!(ty, DataType::Text | DataType::Varchar(_) | DataType::Char(_) | DataType::Name)
}

/// Position in PostgreSQL's numeric promotion order int2 < int4 < int8 < numeric < float4 <
/// float8; `None` for other types.
fn numeric_rank(ty: &DataType) -> Option<u8> {
    Some(match ty {
        DataType::Int16 => 0,
        DataType::Int32 => 1,
        DataType::Int64 => 2,
        DataType::Numeric(_) => 3,
        DataType::Float32 => 4,
        DataType::Float64 => 5,
        _ => return None,
    })
}

/// The least context in which PostgreSQL allows casting `from` to `to`, or `None` if there is
/// no such cast. Covers `pg_cast` for our types plus the automatic I/O conversion casts (to a
/// string type: assignment; from a string type: explicit).
fn cast_context(from: &DataType, to: &DataType) -> Option<CastKind> {
    use CastKind::*;
    use DataType as T;
    match (from.element(), to.element()) {
        // An array casts to another array as its elements do (`array_coerce`).
        (Some(a), Some(b)) => return cast_context(&a, &b),
        (Some(_), None) => return is_string(to).then_some(Assignment),
        (None, Some(_)) => return is_string(from).then_some(Explicit),
        (None, None) => {}
    }
    if std::mem::discriminant(from) == std::mem::discriminant(to) {
        // Same type, possibly a different modifier (a length coercion, implicit in pg_cast).
        return Some(Implicit);
    }
    if is_string(from) && is_string(to) {
        return Some(Implicit);
    }
    if let (Some(a), Some(b)) = (numeric_rank(from), numeric_rank(to)) {
        // Widening is implicit; narrowing is assignment (float4 → numeric is assignment too,
        // since numeric ranks below float4).
        return Some(if a < b { Implicit } else { Assignment });
    }
    match (from, to) {
        (T::Date, T::Timestamp | T::TimestampTz) | (T::Timestamp, T::TimestampTz) => Some(Implicit),
        (T::Timestamp | T::TimestampTz, T::Date) | (T::TimestampTz, T::Timestamp) => {
            Some(Assignment)
        }
        (T::Time, T::Interval) => Some(Implicit),
        (T::Interval | T::Timestamp | T::TimestampTz, T::Time) => Some(Assignment),
        (T::Bool, T::Int32) | (T::Int32, T::Bool) => Some(Explicit),
        (T::Json, T::Jsonb) | (T::Jsonb, T::Json) => Some(Assignment),
        // regtype is an oid, which the integers cast to implicitly (int4 → oid; int8 → oid
        // is implicit too) and which casts implicitly to int8 and by assignment to int4.
        (T::Int16 | T::Int32 | T::Int64, T::RegType) | (T::RegType, T::Int64) => Some(Implicit),
        (T::RegType, T::Int32) => Some(Assignment),
        // jsonb's casts to a scalar type (PostgreSQL 11's `jsonb_numeric`, `jsonb_bool`, …).
        (T::Jsonb, to) if *to == T::Bool || numeric_rank(to).is_some() => Some(Explicit),
        (_, to) if is_string(to) => Some(Assignment),
        (from, _) if is_string(from) => Some(Explicit),
        _ => None,
    }
}

/// Whether PostgreSQL allows a cast from `from` to `to` in context `kind` (roughly `pg_cast`):
/// implicit int2→int4→int8→numeric→float4→float8, between string types, date→timestamp;
/// assignment adds numeric narrowing (int8→int4, float→int, float→numeric, numeric→int),
/// timestamp→date and anything→string; explicit adds bool↔int4 and string→anything.
pub fn cast_allowed(from: &DataType, to: &DataType, kind: CastKind) -> bool {
    cast_context(from, to).is_some_and(|ctx| ctx <= kind)
}

/// `42846`: cannot cast type x to y.
fn cannot_cast(from: &DataType, to: &DataType) -> Error {
    Error::CannotCoerce {
        message: format!("cannot cast type {} to {}", from.base_name(), to.base_name()),
        span: None,
    }
}

/// Converts `v` (of type `from`) to type `to`, applying `to`'s modifier. `kind` only changes
/// how strings are fitted: an explicit cast truncates to `varchar(n)`/`char(n)` silently, the
/// others fail with `22001` when non-space characters would be cut. Whether the cast is allowed
/// in `kind` at all is the binder's question ([`cast_allowed`]); this function performs any cast
/// that exists and fails with `42846` for one that does not.
///
/// Rules (PostgreSQL's): float → int rounds half to even (`2.5::int` = 2), numeric → int
/// rounds half away from zero (`2.5::numeric::int` = 3), both with `22003` "integer out of
/// range" (or smallint/bigint), and numeric `NaN`/`Infinity` → int is `0A000`;
/// `numeric(p,s)` rounds half away from zero and checks the precision (`22003` "numeric field
/// overflow"); float → numeric goes through 15 (float8) or 6 (float4) significant digits, as
/// PostgreSQL's `float8_numeric` does, and maps NaN and infinities to themselves; numeric →
/// float fails with `22003` beyond the float's range; `char(n)` → other
/// string types drops trailing spaces; string → other types parses the text.
///
/// A cast that involves `timestamptz` and a type without a zone uses UTC: where a session's
/// `TimeZone` applies, use [`cast_zoned`] (and see [`zone_dependent`]).
pub fn cast(v: Value, from: &DataType, to: &DataType, kind: CastKind) -> Result<Value> {
    cast_zoned(v, from, to, kind, Zone::UTC)
}

/// Whether the result of casting `from` to `to` depends on the session's time zone (PostgreSQL
/// marks these casts stable, not immutable): such a cast of a constant is not folded at bind
/// time, as the plan is shared by sessions in different zones.
pub fn zone_dependent(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    from != to
        && match (from, to) {
            (T::TimestampTz, other) | (other, T::TimestampTz) => {
                matches!(other, T::Date | T::Timestamp | T::Time) || is_string(other)
            }
            _ => false,
        }
}

/// [`cast`] in the session time zone `zone`.
pub fn cast_zoned(
    v: Value,
    from: &DataType,
    to: &DataType,
    kind: CastKind,
    zone: Zone,
) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    if from == to {
        return Ok(v);
    }
    if is_string(to) {
        let s = match v {
            Value::Text(s) => match from {
                DataType::Char(_) => {
                    let mut s = s;
                    s.truncate(s.trim_end_matches(' ').len());
                    s
                }
                _ => s,
            },
            // PostgreSQL's bool → text cast spells the word out.
            Value::Bool(b) => if b { "true" } else { "false" }.to_owned(),
            other => format_text_zoned(&other, from, zone),
        };
        return Ok(Value::Text(fit_string(s, to, kind == CastKind::Explicit)?));
    }
    if let Value::Text(s) = &v {
        return parse_text_zoned(s, to, zone);
    }
    match (&v, to) {
        (Value::Json(s), DataType::Jsonb) => {
            return Ok(Value::Jsonb(std::sync::Arc::new(super::Jsonb::parse(s)?)))
        }
        (Value::Jsonb(j), DataType::Json) => return Ok(Value::Json(j.to_text().into())),
        (Value::Json(_), _) => return Err(cannot_cast(from, to)),
        _ => {}
    }
    if let Value::Jsonb(j) = &v {
        // A jsonb scalar to boolean or a number type: the value inside, which must be one.
        if *to == DataType::Bool {
            return Ok(Value::Bool(j.as_bool()?));
        }
        if numeric_rank(to).is_some() {
            let n = Value::Numeric(j.as_number(&to.base_name())?.clone());
            return cast_zoned(n, &DataType::Numeric(None), to, kind, zone);
        }
        return Err(cannot_cast(from, to));
    }
    if let (Value::Array(items), Some(a), Some(b)) = (&v, from.element(), to.element()) {
        let items = items
            .iter()
            .map(|x| cast_zoned(x.clone(), &a, &b, kind, zone))
            .collect::<Result<Vec<_>>>()?;
        return Ok(Value::Array(std::sync::Arc::new(items)));
    }
    let range = || Error::DatetimeFieldOverflow { message: "timestamp out of range".into() };
    Ok(match to {
        DataType::Void | DataType::Jsonb | DataType::Json | DataType::Array(_) => {
            return Err(cannot_cast(from, to))
        }
        DataType::RegType => {
            let i = to_i64(&v, &DataType::Int64).ok_or_else(|| cannot_cast(from, to))??;
            // int4 → oid reads a negative value as its unsigned bits, as PostgreSQL does; a
            // bigint must fit the unsigned range.
            let oid = match from {
                DataType::Int16 | DataType::Int32 => i64::from(i as u32),
                _ if (0..=u32::MAX.into()).contains(&i) => i,
                _ => return Err(Error::NumericOutOfRange { message: "OID out of range".into() }),
            };
            Value::Int64(oid)
        }
        DataType::Bool => match v {
            Value::Bool(b) => Value::Bool(b),
            Value::Int32(i) => Value::Bool(i != 0),
            _ => return Err(cannot_cast(from, to)),
        },
        DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let i = to_i64(&v, to).ok_or_else(|| cannot_cast(from, to))??;
            narrow_int(i, to)?
        }
        DataType::Float32 => match v {
            Value::Float64(f) => Value::Float32(f64_to_f32(f)?),
            Value::Numeric(d) => Value::Float32(d.to_f32()?),
            other => Value::Float32(to_f64(&other).ok_or_else(|| cannot_cast(from, to))?? as f32),
        },
        DataType::Float64 => Value::Float64(to_f64(&v).ok_or_else(|| cannot_cast(from, to))??),
        DataType::Numeric(typmod) => {
            let d = match v {
                Value::Numeric(d) => d,
                Value::Int16(i) => Numeric::from(i),
                Value::Int32(i) => Numeric::from(i),
                Value::Int64(i) => Numeric::from(i),
                Value::Float32(f) => Numeric::from_float(f as f64, 6)?,
                Value::Float64(f) => Numeric::from_float(f, 15)?,
                _ => return Err(cannot_cast(from, to)),
            };
            Value::Numeric(match typmod {
                Some((p, s)) => d.apply_typmod(*p as u32, *s as u32)?,
                None => d,
            })
        }
        DataType::Date => match v {
            Value::Date(d) => Value::Date(d),
            Value::Timestamp(t) => Value::Date(t.date()),
            Value::TimestampTz(t) => Value::Date(zone.to_local(t).ok_or_else(range)?.date()),
            _ => return Err(cannot_cast(from, to)),
        },
        DataType::Timestamp => match v {
            Value::Timestamp(t) => Value::Timestamp(t),
            Value::Date(d) => Value::Timestamp(d.and_time(chrono::NaiveTime::MIN)),
            Value::TimestampTz(t) => Value::Timestamp(zone.to_local(t).ok_or_else(range)?),
            _ => return Err(cannot_cast(from, to)),
        },
        DataType::TimestampTz => match v {
            Value::TimestampTz(t) => Value::TimestampTz(t),
            Value::Timestamp(t) => Value::TimestampTz(zone.to_utc(t).ok_or_else(range)?),
            Value::Date(d) => Value::TimestampTz(
                zone.to_utc(d.and_time(chrono::NaiveTime::MIN)).ok_or_else(range)?,
            ),
            _ => return Err(cannot_cast(from, to)),
        },
        DataType::Interval => match v {
            Value::Interval(i) => Value::Interval(i),
            Value::Time(t) => {
                Value::Interval(crate::types::Interval { months: 0, days: 0, micros: t })
            }
            _ => return Err(cannot_cast(from, to)),
        },
        DataType::Time => {
            let day = crate::types::datetime::USECS_PER_DAY;
            let of_day = |t: chrono::NaiveDateTime| {
                crate::types::datetime::timestamp_to_pg_micros(t).rem_euclid(day)
            };
            match v {
                Value::Time(t) => Value::Time(t),
                Value::Timestamp(t) => Value::Time(of_day(t)),
                Value::TimestampTz(t) => Value::Time(of_day(zone.to_local(t).ok_or_else(range)?)),
                // PostgreSQL's interval_time: the time part, wrapped into one day.
                Value::Interval(i) => Value::Time(i.micros.rem_euclid(day)),
                _ => return Err(cannot_cast(from, to)),
            }
        }
        DataType::Bytea => match v {
            Value::Bytea(b) => Value::Bytea(b),
            _ => return Err(cannot_cast(from, to)),
        },
        DataType::Uuid => match v {
            Value::Uuid(u) => Value::Uuid(u),
            _ => return Err(cannot_cast(from, to)),
        },
        DataType::Text | DataType::Varchar(_) | DataType::Char(_) | DataType::Name => {
            unreachable!("string targets handled above")
        }
    })
}

/// PostgreSQL's type name for integer range errors.
fn int_name(ty: &DataType) -> &'static str {
    match ty {
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        _ => "bigint",
    }
}

/// An integer-valued view of a numeric value, rounded as PostgreSQL's casts to int do.
/// `None` if `v` is not numeric; `Some(Err)` if it does not fit an i64 or is NaN.
fn to_i64(v: &Value, to: &DataType) -> Option<Result<i64>> {
    let range = || Error::out_of_range(int_name(to));
    Some(match v {
        Value::Bool(b) => Ok(*b as i64),
        Value::Int16(i) => Ok(*i as i64),
        Value::Int32(i) => Ok(*i as i64),
        Value::Int64(i) => Ok(*i),
        Value::Float32(f) => float_to_i64(*f as f64).ok_or_else(range),
        Value::Float64(f) => float_to_i64(*f).ok_or_else(range),
        Value::Numeric(d) => d.to_i64_rounded(int_name(to)),
        _ => return None,
    })
}

/// `rint` then the `FLOAT8_FITS_IN_INT64` check; `None` for NaN, infinities and overflow.
fn float_to_i64(f: f64) -> Option<i64> {
    let r = f.round_ties_even();
    // -2^63 is exact; 2^63 is the first value that does not fit.
    (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r).then_some(r as i64)
}

/// Narrows an i64 to the integer type `to` (`22003` "smallint/integer out of range").
pub(crate) fn narrow_int(i: i64, to: &DataType) -> Result<Value> {
    let range = || Error::out_of_range(int_name(to));
    Ok(match to {
        DataType::Int16 => Value::Int16(i16::try_from(i).map_err(|_| range())?),
        DataType::Int32 => Value::Int32(i32::try_from(i).map_err(|_| range())?),
        _ => Value::Int64(i),
    })
}

/// A float view of a numeric value (`None` if `v` is not numeric). Numerics convert through
/// their decimal text, so the result is correctly rounded (`Some(Err)` beyond float8's range).
fn to_f64(v: &Value) -> Option<Result<f64>> {
    Some(Ok(match v {
        Value::Int16(i) => *i as f64,
        Value::Int32(i) => *i as f64,
        Value::Int64(i) => *i as f64,
        Value::Float32(f) => *f as f64,
        Value::Float64(f) => *f,
        Value::Numeric(d) => return Some(d.to_f64()),
        _ => return None,
    }))
}

/// float8 → float4 with PostgreSQL's overflow/underflow errors.
fn f64_to_f32(f: f64) -> Result<f32> {
    let r = f as f32;
    if r.is_infinite() && f.is_finite() {
        return Err(Error::NumericOutOfRange { message: "value out of range: overflow".into() });
    }
    if r == 0.0 && f != 0.0 {
        return Err(Error::NumericOutOfRange { message: "value out of range: underflow".into() });
    }
    Ok(r)
}

/// The type PostgreSQL resolves for UNION / CASE / VALUES branches of types `a` and `b`:
/// numbers promote along int2 < int4 < int8 < numeric < float4 < float8 (a `numeric` result
/// keeps its modifier only if both sides agree); a `varchar` first with a `varchar` or `text`
/// gives `varchar` (unconstrained unless equal), `char(n)` with itself gives `char(n)`, other
/// string mixes give `text`;
/// date with timestamp gives timestamp; equal types give that type. `None`: no common type.
pub fn common_type(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType as T;
    if a == b {
        return Some(*a);
    }
    // Arrays: the array of their elements' common type (PostgreSQL casts arrays implicitly as
    // their elements; its operators on arrays still want one type: the binder checks that).
    if let (Some(x), Some(y)) = (a.element(), b.element()) {
        return common_type(&x, &y).and_then(|e| e.array_of());
    }
    if let (Some(ra), Some(rb)) = (numeric_rank(a), numeric_rank(b)) {
        return Some(match (a, b) {
            (T::Numeric(_), T::Numeric(_)) => T::Numeric(None),
            _ if ra >= rb => match a {
                T::Numeric(_) => T::Numeric(None),
                other => *other,
            },
            _ => match b {
                T::Numeric(_) => T::Numeric(None),
                other => *other,
            },
        });
    }
    if is_string(a) && is_string(b) {
        // PostgreSQL keeps the first type of the string category (each casts implicitly to
        // the other); Aspen has no char without a length, so a char(n) first gives text.
        return Some(match (a, b) {
            (T::Varchar(_), T::Varchar(_) | T::Text) => T::Varchar(None),
            _ => T::Text,
        });
    }
    match (a, b) {
        (T::Date, T::Timestamp) | (T::Timestamp, T::Date) => Some(T::Timestamp),
        // An oid compares with an integer as a bigint.
        (T::RegType, T::Int16 | T::Int32 | T::Int64)
        | (T::Int16 | T::Int32 | T::Int64, T::RegType) => Some(T::Int64),
        (T::Date | T::Timestamp, T::TimestampTz) | (T::TimestampTz, T::Date | T::Timestamp) => {
            Some(T::TimestampTz)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::text::{format_text, parse_text};
    use CastKind::*;
    use DataType as T;

    fn c(v: Value, from: T, to: T, kind: CastKind) -> Result<String> {
        cast(v, &from, &to, kind).map(|v| format_text(&v, &to))
    }

    fn num(s: &str) -> Value {
        parse_text(s, &T::Numeric(None)).unwrap()
    }

    #[test]
    fn numeric_casts_match_postgres() {
        let f = Value::Float64;
        // Float → int rounds half to even; numeric → int half away from zero.
        for (v, want) in [(2.5, "2"), (3.5, "4"), (-2.5, "-2"), (2.4999, "2"), (-0.5, "0")] {
            assert_eq!(c(f(v), T::Float64, T::Int32, Assignment).unwrap(), want, "{v}");
        }
        for (v, want) in [("2.5", "3"), ("-2.5", "-3"), ("2.49", "2")] {
            assert_eq!(c(num(v), T::Numeric(None), T::Int32, Assignment).unwrap(), want, "{v}");
        }
        assert_eq!(
            c(Value::Int64(3_000_000_000), T::Int64, T::Int32, Assignment).unwrap_err().to_string(),
            "integer out of range"
        );
        assert_eq!(
            c(Value::Int32(40000), T::Int32, T::Int16, Assignment).unwrap_err().to_string(),
            "smallint out of range"
        );
        assert_eq!(c(f(f64::NAN), T::Float64, T::Int64, Explicit).unwrap_err().sqlstate(), "22003");
        assert_eq!(
            c(f(9.3e18), T::Float64, T::Int64, Explicit).unwrap_err().to_string(),
            "bigint out of range"
        );
        // PostgreSQL: float8 → numeric keeps 15 significant digits.
        for (v, want) in [
            (0.1, "0.1"),
            (303.6600036621094, "303.660003662109"),
            (1e20, "100000000000000000000"),
            (123456789.0, "123456789"),
            (1e-20, "0.00000000000000000001"),
            (1.23456789012345, "1.23456789012345"),
        ] {
            assert_eq!(c(f(v), T::Float64, T::Numeric(None), Assignment).unwrap(), want, "{v}");
        }
        assert_eq!(
            c(f(303.6600036621094), T::Float64, T::Numeric(Some((12, 2))), Assignment).unwrap(),
            "303.66"
        );
        assert_eq!(
            c(Value::Float32(0.1), T::Float32, T::Numeric(None), Assignment).unwrap(),
            "0.1"
        );
        assert_eq!(
            c(Value::Float32(1.0000001), T::Float32, T::Numeric(None), Assignment).unwrap(),
            "1"
        );
        assert_eq!(
            c(num("12.345"), T::Numeric(None), T::Numeric(Some((4, 2))), Assignment).unwrap(),
            "12.35"
        );
        assert_eq!(
            c(num("123.45"), T::Numeric(None), T::Numeric(Some((4, 2))), Assignment)
                .unwrap_err()
                .to_string(),
            "numeric field overflow"
        );
        assert_eq!(
            c(Value::Int32(7), T::Int32, T::Numeric(Some((5, 2))), Implicit).unwrap(),
            "7.00"
        );
        assert_eq!(c(num("0.1"), T::Numeric(None), T::Float64, Implicit).unwrap(), "0.1");
        assert_eq!(
            c(Value::Float32(0.1), T::Float32, T::Float64, Implicit).unwrap(),
            "0.10000000149011612"
        );
        assert_eq!(
            c(f(1e300), T::Float64, T::Float32, Assignment).unwrap_err().to_string(),
            "value out of range: overflow"
        );
        assert_eq!(
            c(f(1e-300), T::Float64, T::Float32, Assignment).unwrap_err().to_string(),
            "value out of range: underflow"
        );
        assert_eq!(
            c(Value::Int64(16777217), T::Int64, T::Float32, Implicit).unwrap(),
            "1.6777216e+07"
        );
    }

    #[test]
    fn string_casts_match_postgres() {
        let t = |s: &str| Value::Text(s.into());
        assert_eq!(c(t("abcd"), T::Text, T::Varchar(Some(3)), Explicit).unwrap(), "abc");
        assert_eq!(
            c(t("abcd"), T::Text, T::Varchar(Some(3)), Assignment).unwrap_err().sqlstate(),
            "22001"
        );
        assert_eq!(c(t("abc   "), T::Text, T::Varchar(Some(3)), Assignment).unwrap(), "abc");
        assert_eq!(c(t("abcd"), T::Text, T::Char(3), Explicit).unwrap(), "abc");
        assert_eq!(c(t("ab"), T::Varchar(None), T::Char(3), Assignment).unwrap(), "ab ");
        assert_eq!(c(t("ab "), T::Char(3), T::Text, Implicit).unwrap(), "ab");
        assert_eq!(c(t("ab "), T::Char(3), T::Varchar(None), Implicit).unwrap(), "ab");
        assert_eq!(c(t("ab "), T::Char(3), T::Char(5), Implicit).unwrap(), "ab   ");
        assert_eq!(
            c(Value::Int32(12345), T::Int32, T::Varchar(Some(3)), Assignment)
                .unwrap_err()
                .sqlstate(),
            "22001"
        );
        assert_eq!(c(Value::Int32(12345), T::Int32, T::Varchar(Some(3)), Explicit).unwrap(), "123");
        assert_eq!(c(Value::Bool(true), T::Bool, T::Text, Assignment).unwrap(), "true");
        assert_eq!(c(t(" 42 "), T::Text, T::Int32, Explicit).unwrap(), "42");
        assert_eq!(c(t("x"), T::Text, T::Int32, Explicit).unwrap_err().sqlstate(), "22P02");
        assert_eq!(c(num("1.50"), T::Numeric(None), T::Text, Assignment).unwrap(), "1.50");
        assert_eq!(c(Value::Bytea(vec![1, 2]), T::Bytea, T::Text, Assignment).unwrap(), "\\x0102");
    }

    #[test]
    fn other_casts() {
        let ts = parse_text("2024-01-02 03:04:05", &T::Timestamp).unwrap();
        assert_eq!(c(ts, T::Timestamp, T::Date, Assignment).unwrap(), "2024-01-02");
        let d = parse_text("2024-01-02", &T::Date).unwrap();
        assert_eq!(c(d, T::Date, T::Timestamp, Implicit).unwrap(), "2024-01-02 00:00:00");
        assert_eq!(c(Value::Bool(true), T::Bool, T::Int32, Explicit).unwrap(), "1");
        assert_eq!(c(Value::Int32(-3), T::Int32, T::Bool, Explicit).unwrap(), "t");
        assert_eq!(c(Value::Null, T::Int32, T::Date, Explicit).unwrap(), "");
        assert_eq!(
            c(Value::Int32(1), T::Int32, T::Date, Explicit).unwrap_err().sqlstate(),
            "42846"
        );
    }

    #[test]
    fn cast_contexts_follow_pg_cast() {
        for (from, to, least) in [
            (T::Int16, T::Int32, Some(Implicit)),
            (T::Int32, T::Int64, Some(Implicit)),
            (T::Int64, T::Numeric(None), Some(Implicit)),
            (T::Numeric(None), T::Float32, Some(Implicit)),
            (T::Float32, T::Float64, Some(Implicit)),
            (T::Int64, T::Int32, Some(Assignment)),
            (T::Float64, T::Int32, Some(Assignment)),
            (T::Float64, T::Numeric(Some((12, 2))), Some(Assignment)),
            (T::Float32, T::Numeric(None), Some(Assignment)),
            (T::Numeric(None), T::Int32, Some(Assignment)),
            (T::Numeric(Some((5, 2))), T::Numeric(Some((4, 1))), Some(Implicit)),
            (T::Varchar(Some(5)), T::Text, Some(Implicit)),
            (T::Text, T::Char(3), Some(Implicit)),
            (T::Char(3), T::Varchar(None), Some(Implicit)),
            (T::Date, T::Timestamp, Some(Implicit)),
            (T::Timestamp, T::Date, Some(Assignment)),
            (T::Int32, T::Text, Some(Assignment)),
            (T::Bool, T::Varchar(None), Some(Assignment)),
            (T::Text, T::Int32, Some(Explicit)),
            (T::Varchar(None), T::Timestamp, Some(Explicit)),
            (T::Bool, T::Int32, Some(Explicit)),
            (T::Int32, T::Bool, Some(Explicit)),
            (T::Int64, T::Bool, None),
            (T::Date, T::Int32, None),
            (T::Bytea, T::Int32, None),
        ] {
            for kind in [Implicit, Assignment, Explicit] {
                let want = least.is_some_and(|l| l <= kind);
                assert_eq!(cast_allowed(&from, &to, kind), want, "{from:?} → {to:?} {kind:?}");
            }
        }
    }

    #[test]
    fn common_type_follows_postgres_promotion() {
        for (a, b, want) in [
            (T::Int16, T::Int32, Some(T::Int32)),
            (T::Int64, T::Int32, Some(T::Int64)),
            (T::Int32, T::Numeric(Some((5, 2))), Some(T::Numeric(None))),
            (T::Numeric(Some((5, 2))), T::Numeric(Some((5, 2))), Some(T::Numeric(Some((5, 2))))),
            (T::Numeric(Some((5, 2))), T::Numeric(Some((7, 2))), Some(T::Numeric(None))),
            (T::Numeric(None), T::Float32, Some(T::Float32)),
            (T::Float32, T::Float64, Some(T::Float64)),
            (T::Varchar(Some(3)), T::Varchar(Some(5)), Some(T::Varchar(None))),
            (T::Char(2), T::Varchar(None), Some(T::Text)),
            (T::Char(2), T::Char(2), Some(T::Char(2))),
            (T::Date, T::Timestamp, Some(T::Timestamp)),
            (T::Int32, T::Text, None),
            (T::Bool, T::Int32, None),
        ] {
            assert_eq!(common_type(&a, &b), want, "{a:?} {b:?}");
            assert_eq!(common_type(&b, &a), want, "{b:?} {a:?}");
        }
        // Among strings the first type wins.
        assert_eq!(common_type(&T::Varchar(Some(3)), &T::Text), Some(T::Varchar(None)));
        assert_eq!(common_type(&T::Text, &T::Varchar(Some(3))), Some(T::Text));
    }
}
