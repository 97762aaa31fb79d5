//! SQL comparison (`=`, `<`, ... with NULL → unknown) and the total order used by ORDER BY,
//! sorting and keys.
//!
//! Numbers compare across types as PostgreSQL's cross-type operators do: integers of any width
//! by value, integer with numeric exactly, anything with a float as float8. Floats follow
//! PostgreSQL, not IEEE: `NaN = NaN`, and NaN is greater than every other value, including
//! `Infinity`; `-0 = 0`. Numerics likewise: `NaN = NaN`, above `Infinity` (see [`Numeric`]). Strings compare bytewise (the C collation). Dates compare with
//! timestamps as midnight of that day.

use std::cmp::Ordering;

use super::numeric::Numeric;
use super::value::Value;
use catalog::DataType;

/// PostgreSQL's float comparison (`float8_cmp_internal`): NaN is equal to itself and greater
/// than everything else; `-0 = 0`.
pub(crate) fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).expect("neither side is NaN"),
    }
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int16(i) => Some(*i as i64),
        Value::Int32(i) => Some(*i as i64),
        Value::Int64(i) => Some(*i),
        _ => None,
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Float32(f) => Some(*f as f64),
        Value::Float64(f) => Some(*f),
        Value::Numeric(d) => Some(d.to_f64_lossy()),
        other => as_i64(other).map(|i| i as f64),
    }
}

/// SQL comparison of two values of comparable types. `None` if either is NULL (the result is
/// unknown) or the types are not comparable (the binder should have rejected that). Strings
/// compare as `text`; use [`compare_as`] for `char(n)`.
pub fn compare(l: &Value, r: &Value) -> Option<Ordering> {
    use Value as V;
    Some(match (l, r) {
        (V::Null, _) | (_, V::Null) => return None,
        (V::Bool(a), V::Bool(b)) => a.cmp(b),
        (V::Text(a), V::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
        (V::Numeric(a), V::Numeric(b)) => a.cmp(b),
        (V::Date(a), V::Date(b)) => a.cmp(b),
        (V::Timestamp(a), V::Timestamp(b)) => a.cmp(b),
        (V::Date(a), V::Timestamp(b)) => a.and_time(chrono::NaiveTime::MIN).cmp(b),
        (V::Timestamp(a), V::Date(b)) => a.cmp(&b.and_time(chrono::NaiveTime::MIN)),
        (V::Bytea(a), V::Bytea(b)) => a.cmp(b),
        (V::TimestampTz(a), V::TimestampTz(b)) => a.cmp(b),
        (V::Interval(a), V::Interval(b)) => a.cmp_span(b),
        (V::Uuid(a), V::Uuid(b)) => a.cmp(b),
        (V::Time(a), V::Time(b)) => a.cmp(b),
        (V::Jsonb(a), V::Jsonb(b)) => a.cmp_total(b),
        // No order of its own (the binder refuses one): bytes, so that sorting cannot fail.
        (V::Json(a), V::Json(b)) => a.as_bytes().cmp(b.as_bytes()),
        (V::Array(a), V::Array(b)) => super::array::cmp(a, b),
        (V::Numeric(a), other) if as_i64(other).is_some() => {
            a.cmp(&Numeric::from(as_i64(other).expect("checked")))
        }
        (other, V::Numeric(b)) if as_i64(other).is_some() => {
            Numeric::from(as_i64(other).expect("checked")).cmp(b)
        }
        _ => match (as_i64(l), as_i64(r)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => float_cmp(as_f64(l)?, as_f64(r)?),
        },
    })
}

/// Trailing spaces are insignificant in `char(n)` (PostgreSQL's `bpcharcmp`).
pub(crate) fn bpchar_trim(s: &str) -> &str {
    s.trim_end_matches(' ')
}

/// [`compare`] for values of type `ty`: as `compare`, except that for `char(n)` trailing
/// spaces are insignificant (`'a '::char(3) = 'a'::char(3)`).
pub fn compare_as(l: &Value, r: &Value, ty: &DataType) -> Option<Ordering> {
    match (l, r, ty) {
        (Value::Text(a), Value::Text(b), DataType::Char(_)) => {
            Some(bpchar_trim(a).as_bytes().cmp(bpchar_trim(b).as_bytes()))
        }
        _ => compare(l, r),
    }
}

/// Rank of a value's kind, to make [`sort_cmp`] total even for incomparable values.
fn kind_rank(v: &Value) -> u8 {
    match v {
        Value::Bool(_) => 0,
        Value::Int16(_)
        | Value::Int32(_)
        | Value::Int64(_)
        | Value::Float32(_)
        | Value::Float64(_)
        | Value::Numeric(_) => 1,
        Value::Text(_) => 2,
        Value::Date(_) | Value::Timestamp(_) => 3,
        Value::Bytea(_) => 4,
        Value::TimestampTz(_) => 5,
        Value::Interval(_) => 6,
        Value::Uuid(_) => 7,
        Value::Time(_) => 8,
        Value::Jsonb(_) => 9,
        Value::Json(_) => 10,
        Value::Array(_) => 11,
        Value::Null => 12,
    }
}

/// The total order of ORDER BY (ascending, NULLS LAST — PostgreSQL's default): NULL after
/// everything, NaN after every other float, otherwise [`compare`]. [`encode_key`] bytes sort
/// in this order.
///
/// [`encode_key`]: super::encode_key
pub fn sort_cmp(l: &Value, r: &Value) -> Ordering {
    match (l, r) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        _ => compare(l, r).unwrap_or_else(|| kind_rank(l).cmp(&kind_rank(r))),
    }
}

/// [`sort_cmp`] for values of type `ty` (`char(n)` ignores trailing spaces).
pub fn sort_cmp_as(l: &Value, r: &Value, ty: &DataType) -> Ordering {
    match (l, r) {
        (Value::Null, _) | (_, Value::Null) => sort_cmp(l, r),
        _ => compare_as(l, r, ty).unwrap_or_else(|| kind_rank(l).cmp(&kind_rank(r))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::text::parse_text;
    use Ordering::*;

    fn num(s: &str) -> Value {
        parse_text(s, &DataType::Numeric(None)).unwrap()
    }

    #[test]
    fn comparisons_match_postgres() {
        let nan = Value::Float64(f64::NAN);
        let inf = Value::Float64(f64::INFINITY);
        for (l, r, want) in [
            (Value::Int16(5), Value::Int64(5), Some(Equal)),
            (Value::Int32(-1), Value::Int64(1), Some(Less)),
            (num("1.5"), num("1.50"), Some(Equal)),
            (Value::Int32(2), num("1.99"), Some(Greater)),
            (num("0.1"), Value::Float64(0.1), Some(Equal)),
            (Value::Int32(1), Value::Float64(1.5), Some(Less)),
            (nan.clone(), inf.clone(), Some(Greater)),
            (nan.clone(), nan.clone(), Some(Equal)),
            (Value::Float64(-0.0), Value::Float64(0.0), Some(Equal)),
            (Value::Float32(0.5), Value::Float64(0.5), Some(Equal)),
            (Value::Text("a".into()), Value::Text("B".into()), Some(Greater)),
            (Value::Text("a ".into()), Value::Text("a".into()), Some(Greater)),
            (Value::Text("é".into()), Value::Text("z".into()), Some(Greater)),
            (Value::Bool(false), Value::Bool(true), Some(Less)),
            (Value::Null, Value::Int32(1), None),
            (Value::Text("1".into()), Value::Int32(1), None),
            (
                parse_text("2024-01-02", &DataType::Date).unwrap(),
                parse_text("2024-01-02 00:00:00", &DataType::Timestamp).unwrap(),
                Some(Equal),
            ),
        ] {
            assert_eq!(compare(&l, &r), want, "{l:?} vs {r:?}");
        }
        let (a, b) = (Value::Text("a  ".into()), Value::Text("a".into()));
        assert_eq!(compare_as(&a, &b, &DataType::Char(3)), Some(Equal));
        assert_eq!(compare_as(&a, &b, &DataType::Text), Some(Greater));
    }

    #[test]
    fn sort_order_puts_nulls_and_nan_last() {
        let mut v = vec![
            Value::Null,
            Value::Float64(f64::NAN),
            Value::Float64(f64::INFINITY),
            Value::Float64(1.0),
            Value::Float64(f64::NEG_INFINITY),
        ];
        v.sort_by(sort_cmp);
        assert_eq!(
            format!("{v:?}"),
            "[Float64(-inf), Float64(1.0), Float64(inf), Float64(NaN), Null]"
        );
        assert_eq!(sort_cmp(&Value::Null, &Value::Null), Equal);
    }
}
