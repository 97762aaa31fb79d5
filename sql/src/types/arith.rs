//! Arithmetic operators: result-type resolution for the binder and evaluation with PostgreSQL's
//! overflow, division and scale rules.

use super::cast::narrow_int;
use super::datetime::Zone;
use super::interval::Interval;
use super::numeric::Numeric;
use super::value::Value;
use crate::error::{Error, Result};
use catalog::DataType;
use chrono::TimeDelta;

/// A binary arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (integer division truncates toward zero)
    Div,
    /// `%` (the sign follows the dividend)
    Mod,
}

impl ArithOp {
    /// The operator's SQL spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
        }
    }
}

fn int_width(ty: &DataType) -> Option<u8> {
    match ty {
        DataType::Int16 => Some(0),
        DataType::Int32 => Some(1),
        DataType::Int64 => Some(2),
        _ => None,
    }
}

/// The result type of `a op b` as PostgreSQL's operator resolution picks it, or `None` when no
/// such operator exists (the binder reports `42883`). Both operands are then cast implicitly to
/// the operand type that goes with it: integers to the wider integer, integer with numeric to
/// `numeric`, anything with a float to `float8` (but `float4 op float4` is `float4`);
/// `date ± integer` is `date`, `date - date` is `integer`. Floats have no `%`. The date and
/// time operators: `timestamp[tz] ± interval` and `date ± interval` (a `timestamp`),
/// `timestamp[tz] - timestamp[tz]` (an `interval`), `interval ± interval`, `interval * number`
/// and `interval / number`.
///
/// The operand type to cast to is the result type, except for the date and time operators
/// ([`is_datetime_op`]: keep the operands as they are, with an integer as `integer`).
pub fn arith_result_type(op: ArithOp, a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType as T;
    if is_datetime_op(a, b) {
        return datetime_result_type(op, a, b);
    }
    if let (Some(wa), Some(wb)) = (int_width(a), int_width(b)) {
        return Some(if wa >= wb { *a } else { *b });
    }
    let is_num = |t: &DataType| int_width(t).is_some() || matches!(t, T::Numeric(_));
    let is_float = |t: &DataType| matches!(t, T::Float32 | T::Float64);
    if is_num(a) && is_num(b) {
        return Some(T::Numeric(None));
    }
    if (is_num(a) || is_float(a)) && (is_num(b) || is_float(b)) {
        if op == ArithOp::Mod {
            return None;
        }
        return Some(if *a == T::Float32 && *b == T::Float32 { T::Float32 } else { T::Float64 });
    }
    match (op, a, b) {
        (ArithOp::Add, T::Date, t) | (ArithOp::Add, t, T::Date) if int_width(t).is_some() => {
            Some(T::Date)
        }
        (ArithOp::Sub, T::Date, t) if int_width(t).is_some() => Some(T::Date),
        (ArithOp::Sub, T::Date, T::Date) => Some(T::Int32),
        _ => None,
    }
}

/// Whether `a op b` is one of the date and time operators, whose operands keep their types.
pub fn is_datetime_op(a: &DataType, b: &DataType) -> bool {
    use DataType as T;
    [a, b]
        .iter()
        .any(|t| matches!(t, T::Date | T::Timestamp | T::TimestampTz | T::Interval | T::Time))
}

fn datetime_result_type(op: ArithOp, a: &DataType, b: &DataType) -> Option<DataType> {
    use ArithOp::*;
    use DataType as T;
    let is_number = |t: &DataType| {
        int_width(t).is_some() || matches!(t, T::Numeric(_) | T::Float32 | T::Float64)
    };
    Some(match (op, a, b) {
        (Add, T::Date, t) | (Add, t, T::Date) if int_width(t).is_some() => T::Date,
        (Sub, T::Date, t) if int_width(t).is_some() => T::Date,
        (Sub, T::Date, T::Date) => T::Int32,
        (Add, T::Date | T::Timestamp, T::Interval)
        | (Add, T::Interval, T::Date | T::Timestamp)
        | (Sub, T::Date | T::Timestamp, T::Interval) => T::Timestamp,
        (Add, T::TimestampTz, T::Interval)
        | (Add, T::Interval, T::TimestampTz)
        | (Sub, T::TimestampTz, T::Interval) => T::TimestampTz,
        (Sub, T::Timestamp | T::TimestampTz | T::Date, T::Timestamp | T::TimestampTz | T::Date) => {
            T::Interval
        }
        (Add | Sub, T::Interval, T::Interval) => T::Interval,
        (Add, T::Time, T::Interval) | (Add, T::Interval, T::Time) | (Sub, T::Time, T::Interval) => {
            T::Time
        }
        (Sub, T::Time, T::Time) => T::Interval,
        (Add, T::Date, T::Time) | (Add, T::Time, T::Date) => T::Timestamp,
        (Mul, T::Interval, t) | (Mul, t, T::Interval) if is_number(t) => T::Interval,
        (Div, T::Interval, t) if is_number(t) => T::Interval,
        _ => return None,
    })
}

fn timestamp_range() -> Error {
    Error::DatetimeFieldOverflow { message: "timestamp out of range".into() }
}

/// `t + i` for a local (zone-free) timestamp, as PostgreSQL's `timestamp_pl_interval`: months
/// first (the day clamped to the month's end: Jan 31 + 1 mon = Feb 29), then days, then time.
fn local_plus(t: chrono::NaiveDateTime, i: Interval) -> Result<chrono::NaiveDateTime> {
    let t = local_plus_calendar(t, i)?;
    t.checked_add_signed(TimeDelta::microseconds(i.micros)).ok_or_else(timestamp_range)
}

/// The months and days of `i` added to `t`.
fn local_plus_calendar(t: chrono::NaiveDateTime, i: Interval) -> Result<chrono::NaiveDateTime> {
    let months = chrono::Months::new(i.months.unsigned_abs());
    let t = if i.months >= 0 { t.checked_add_months(months) } else { t.checked_sub_months(months) }
        .ok_or_else(timestamp_range)?;
    t.checked_add_signed(TimeDelta::days(i64::from(i.days))).ok_or_else(timestamp_range)
}

/// `t + i` for a `timestamptz`: months and days are added to the local time in `zone` (so
/// `+ 1 day` across a daylight-saving change keeps the wall-clock time), then the time part.
fn zoned_plus(
    utc: chrono::NaiveDateTime,
    i: Interval,
    zone: Zone,
) -> Result<chrono::NaiveDateTime> {
    let utc = if i.months != 0 || i.days != 0 {
        let local = zone.to_local(utc).ok_or_else(timestamp_range)?;
        zone.to_utc(local_plus_calendar(local, i)?).ok_or_else(timestamp_range)?
    } else {
        utc
    };
    utc.checked_add_signed(TimeDelta::microseconds(i.micros)).ok_or_else(timestamp_range)
}

/// `a - b` of two timestamps as an interval (`timestamp_mi`): the difference in time, whole
/// days moved out of it (`justify_hours`).
fn timestamp_diff(a: chrono::NaiveDateTime, b: chrono::NaiveDateTime) -> Result<Interval> {
    let micros = (a - b)
        .num_microseconds()
        .ok_or_else(|| Error::DatetimeFieldOverflow { message: "interval out of range".into() })?;
    Interval { months: 0, days: 0, micros }.justify_hours()
}

/// The date and time operators (see [`arith_result_type`]); `None` if `l op r` is not one.
fn datetime_arith(op: ArithOp, l: &Value, r: &Value, zone: Zone) -> Option<Result<Value>> {
    use ArithOp::*;
    use Value as V;
    let midnight = |d: &chrono::NaiveDate| d.and_time(chrono::NaiveTime::MIN);
    let factor = |v: &Value| -> Option<f64> {
        Some(match v {
            V::Int16(i) => f64::from(*i),
            V::Int32(i) => f64::from(*i),
            V::Int64(i) => *i as f64,
            V::Float32(f) => f64::from(*f),
            V::Float64(f) => *f,
            V::Numeric(n) => n.to_f64_lossy(),
            _ => return None,
        })
    };
    let days = |v: &Value| match v {
        V::Int16(i) => Some(i64::from(*i)),
        V::Int32(i) => Some(i64::from(*i)),
        V::Int64(i) => Some(*i),
        _ => None,
    };
    Some(match (op, l, r) {
        (Add | Sub, V::Date(d), n) | (Add, n, V::Date(d)) if days(n).is_some() => {
            let n = days(n).expect("checked");
            let n = if op == Sub { -n } else { n };
            let out = TimeDelta::try_days(n).and_then(|delta| d.checked_add_signed(delta));
            out.map(V::Date)
                .ok_or_else(|| Error::DatetimeFieldOverflow { message: "date out of range".into() })
        }
        (Sub, V::Date(a), V::Date(b)) => Ok(V::Int32((*a - *b).num_days() as i32)),
        (Add, V::Timestamp(t), V::Interval(i)) | (Add, V::Interval(i), V::Timestamp(t)) => {
            local_plus(*t, *i).map(V::Timestamp)
        }
        (Add, V::Date(d), V::Interval(i)) | (Add, V::Interval(i), V::Date(d)) => {
            local_plus(midnight(d), *i).map(V::Timestamp)
        }
        (Sub, V::Timestamp(_) | V::Date(_) | V::TimestampTz(_), V::Interval(i)) => {
            return match i.checked_neg() {
                Ok(neg) => datetime_arith(Add, l, &V::Interval(neg), zone),
                Err(e) => Some(Err(e)),
            }
        }
        (Add, V::TimestampTz(t), V::Interval(i)) | (Add, V::Interval(i), V::TimestampTz(t)) => {
            zoned_plus(*t, *i, zone).map(V::TimestampTz)
        }
        (Sub, V::Timestamp(a), V::Timestamp(b)) | (Sub, V::TimestampTz(a), V::TimestampTz(b)) => {
            timestamp_diff(*a, *b).map(V::Interval)
        }
        // `time_pl_interval`: the interval's time part, wrapped into one day (its days and
        // months do not move a time of day).
        (Add, V::Time(t), V::Interval(i)) | (Add, V::Interval(i), V::Time(t)) => {
            Ok(V::Time(time_plus(*t, i.micros)))
        }
        (Sub, V::Time(t), V::Interval(i)) => Ok(V::Time(time_plus(*t, i.micros.wrapping_neg()))),
        (Sub, V::Time(a), V::Time(b)) => {
            Ok(V::Interval(Interval { months: 0, days: 0, micros: a - b }))
        }
        (Add, V::Date(d), V::Time(t)) | (Add, V::Time(t), V::Date(d)) => midnight(d)
            .checked_add_signed(TimeDelta::microseconds(*t))
            .map(V::Timestamp)
            .ok_or_else(timestamp_range),
        (Add, V::Interval(a), V::Interval(b)) => a.checked_add(*b).map(V::Interval),
        (Sub, V::Interval(a), V::Interval(b)) => a.checked_sub(*b).map(V::Interval),
        (Mul, V::Interval(i), n) | (Mul, n, V::Interval(i)) => {
            i.mul_f64(factor(n)?).map(V::Interval)
        }
        (Div, V::Interval(i), n) => i.div_f64(factor(n)?).map(V::Interval),
        _ => return None,
    })
}

/// A time of day moved by `micros`, wrapped into `[0, 24:00)`.
fn time_plus(t: i64, micros: i64) -> i64 {
    let day = i128::from(super::datetime::USECS_PER_DAY);
    (i128::from(t) + i128::from(micros)).rem_euclid(day) as i64
}

fn int_overflow(v: &Value) -> Error {
    Error::out_of_range(match v {
        Value::Int16(_) => "smallint",
        Value::Int32(_) => "integer",
        _ => "bigint",
    })
}

/// Rank for promoting mismatched operands (see [`arith`]).
fn promote_rank(v: &Value) -> Option<u8> {
    Some(match v {
        Value::Int16(_) => 0,
        Value::Int32(_) => 1,
        Value::Int64(_) => 2,
        Value::Numeric(_) => 3,
        Value::Float32(_) => 4,
        Value::Float64(_) => 5,
        _ => return None,
    })
}

/// Converts a numeric-kind value to the representation of rank `rank` (a numeric becoming a
/// float can fail: `22003` beyond the float's range, as PostgreSQL's cast does).
fn promote(v: &Value, rank: u8) -> Result<Value> {
    let as_i64 = |v: &Value| match v {
        Value::Int16(i) => *i as i64,
        Value::Int32(i) => *i as i64,
        Value::Int64(i) => *i,
        _ => 0,
    };
    let as_f64 = |v: &Value| -> Result<f64> {
        Ok(match v {
            Value::Float32(f) => *f as f64,
            Value::Float64(f) => *f,
            Value::Numeric(d) => d.to_f64()?,
            other => as_i64(other) as f64,
        })
    };
    Ok(match rank {
        1 => Value::Int32(as_i64(v) as i32),
        2 => Value::Int64(as_i64(v)),
        3 => match v {
            Value::Numeric(d) => Value::Numeric(d.clone()),
            other => Value::Numeric(Numeric::from(as_i64(other))),
        },
        4 => Value::Float32(as_f64(v)? as f32),
        5 => Value::Float64(as_f64(v)?),
        _ => v.clone(),
    })
}

fn no_operator(op: ArithOp, l: &Value, r: &Value) -> Error {
    Error::UndefinedFunction {
        name: format!("operator {} {} {}", l.type_name(), op.symbol(), r.type_name()),
        span: None,
    }
}

/// Evaluates `l op r`. Operands should already have the operand type from
/// [`arith_result_type`]; mismatched numeric operands are promoted along int2 < int4 < int8 <
/// numeric < float4 < float8 (a float4 meeting anything but float4 becomes float8).
///
/// NULL in gives NULL out. Errors: integer overflow → `22003` "smallint/integer/bigint out of
/// range"; division (or `%`) by zero → `22012` for every type; float overflow → `22003` "value
/// out of range: overflow" (underflow likewise); numeric overflow → `22003` "value overflows
/// numeric format". Numeric `+`/`-` keep the larger scale, `*` the sum of the scales, `/` uses
/// PostgreSQL's `select_div_scale` (`1/3` = 0.33333333333333333333); numeric `NaN` and
/// infinities follow PostgreSQL (see [`Numeric`]).
pub fn arith(op: ArithOp, l: &Value, r: &Value) -> Result<Value> {
    arith_zoned(op, l, r, Zone::UTC)
}

/// [`arith`] in the session time zone `zone` (which only `timestamptz ± interval` looks at).
pub fn arith_zoned(op: ArithOp, l: &Value, r: &Value, zone: Zone) -> Result<Value> {
    use Value as V;
    if l.is_null() || r.is_null() {
        return Ok(V::Null);
    }
    match (l, r) {
        (V::Int16(a), V::Int16(b)) => {
            return int_op(op, *a as i64, *b as i64)
                .and_then(|x| narrow_int(x, &DataType::Int16))
                .map_err(|e| if matches!(e, Error::DivisionByZero) { e } else { int_overflow(l) })
        }
        (V::Int32(a), V::Int32(b)) => {
            return int_op(op, *a as i64, *b as i64)
                .and_then(|x| narrow_int(x, &DataType::Int32))
                .map_err(|e| if matches!(e, Error::DivisionByZero) { e } else { int_overflow(l) })
        }
        (V::Int64(a), V::Int64(b)) => return int_op(op, *a, *b).map(V::Int64),
        (V::Float64(a), V::Float64(b)) => return float_op(op, *a, *b).map(V::Float64),
        (V::Float32(a), V::Float32(b)) => {
            return float_op(op, *a as f64, *b as f64).and_then(|x| {
                let y = x as f32;
                if y.is_infinite() && x.is_finite() {
                    Err(float_overflow())
                } else if y == 0.0 && x != 0.0 {
                    Err(float_underflow())
                } else {
                    Ok(V::Float32(y))
                }
            })
        }
        (V::Numeric(a), V::Numeric(b)) => return numeric_op(op, a, b).map(V::Numeric),
        // numeric with an integer: the integer widens exactly (what `promote` would do, without
        // building the intermediate values).
        (V::Numeric(a), V::Int16(_) | V::Int32(_) | V::Int64(_)) => {
            let b = Numeric::from(int_value(r));
            return numeric_op(op, a, &b).map(V::Numeric);
        }
        (V::Int16(_) | V::Int32(_) | V::Int64(_), V::Numeric(b)) => {
            let a = Numeric::from(int_value(l));
            return numeric_op(op, &a, b).map(V::Numeric);
        }
        // The date and time operators, after the numbers (which every row of most
        // arithmetic is).
        _ => {
            if let Some(result) = datetime_arith(op, l, r, zone) {
                return result;
            }
        }
    }
    match (promote_rank(l), promote_rank(r)) {
        (Some(a), Some(b)) if a != b => {
            let mut rank = a.max(b);
            if rank == 4 {
                // float4 with a non-float4 operand resolves to float8, as in PostgreSQL.
                rank = 5;
            }
            if rank >= 4 && op == ArithOp::Mod {
                return Err(no_operator(op, l, r));
            }
            arith(op, &promote(l, rank)?, &promote(r, rank)?)
        }
        _ => Err(no_operator(op, l, r)),
    }
}

/// The value of an integer of any width (0 for other values; callers match integers first).
fn int_value(v: &Value) -> i64 {
    match v {
        Value::Int16(i) => *i as i64,
        Value::Int32(i) => *i as i64,
        Value::Int64(i) => *i,
        _ => 0,
    }
}

/// Integer arithmetic in i64 (narrowed by the caller); `Err(NumericOutOfRange)` on overflow.
fn int_op(op: ArithOp, a: i64, b: i64) -> Result<i64> {
    let overflow = || Error::out_of_range("bigint");
    match op {
        ArithOp::Add => a.checked_add(b).ok_or_else(overflow),
        ArithOp::Sub => a.checked_sub(b).ok_or_else(overflow),
        ArithOp::Mul => a.checked_mul(b).ok_or_else(overflow),
        ArithOp::Div => {
            if b == 0 {
                return Err(Error::DivisionByZero);
            }
            a.checked_div(b).ok_or_else(overflow)
        }
        ArithOp::Mod => {
            if b == 0 {
                return Err(Error::DivisionByZero);
            }
            // i64::MIN % -1 overflows in Rust; PostgreSQL returns 0.
            Ok(a.checked_rem(b).unwrap_or(0))
        }
    }
}

fn float_overflow() -> Error {
    Error::NumericOutOfRange { message: "value out of range: overflow".into() }
}

fn float_underflow() -> Error {
    Error::NumericOutOfRange { message: "value out of range: underflow".into() }
}

/// float8 arithmetic with PostgreSQL's checks (`float8pl`, `float8mi`, `float8mul`, `float8div`).
fn float_op(op: ArithOp, a: f64, b: f64) -> Result<f64> {
    let r = match op {
        ArithOp::Add => a + b,
        ArithOp::Sub => a - b,
        ArithOp::Mul => a * b,
        ArithOp::Div => {
            if b == 0.0 && !a.is_nan() {
                return Err(Error::DivisionByZero);
            }
            a / b
        }
        ArithOp::Mod => return Err(Error::internal("float % has no operator")),
    };
    if r.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(float_overflow());
    }
    let underflow = match op {
        ArithOp::Mul => r == 0.0 && a != 0.0 && b != 0.0,
        ArithOp::Div => r == 0.0 && a != 0.0 && !b.is_infinite(),
        _ => false,
    };
    if underflow {
        return Err(float_underflow());
    }
    Ok(r)
}

/// Kept out of line so that [`arith`], which handles every type, stays small and the numeric
/// fast paths (inlined here) run in a tight function of their own.
#[inline(never)]
fn numeric_op(op: ArithOp, a: &Numeric, b: &Numeric) -> Result<Numeric> {
    match op {
        ArithOp::Add => a.add(b),
        ArithOp::Sub => a.sub(b),
        ArithOp::Mul => a.mul(b),
        ArithOp::Div => a.div(b),
        ArithOp::Mod => a.rem(b),
    }
}

/// Unary minus. NULL gives NULL; `-(-2147483648)` is `22003` "integer out of range".
pub fn negate(v: &Value) -> Result<Value> {
    use Value as V;
    Ok(match v {
        V::Null => V::Null,
        V::Int16(i) => V::Int16(i.checked_neg().ok_or_else(|| int_overflow(v))?),
        V::Int32(i) => V::Int32(i.checked_neg().ok_or_else(|| int_overflow(v))?),
        V::Int64(i) => V::Int64(i.checked_neg().ok_or_else(|| int_overflow(v))?),
        V::Float32(f) => V::Float32(-f),
        V::Float64(f) => V::Float64(-f),
        V::Numeric(d) => V::Numeric(d.neg()),
        V::Interval(i) => V::Interval(i.checked_neg()?),
        other => {
            return Err(Error::UndefinedFunction {
                name: format!("operator - {}", other.type_name()),
                span: None,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::text::{format_text, parse_text};
    use ArithOp::*;
    use DataType as T;

    fn num(s: &str) -> Value {
        parse_text(s, &T::Numeric(None)).unwrap()
    }

    fn show(v: Result<Value>) -> String {
        match v {
            Ok(v) => format_text(&v, &T::Text),
            Err(e) => format!("{}: {e}", e.sqlstate()),
        }
    }

    #[test]
    fn integer_arithmetic_matches_postgres() {
        let i = Value::Int32;
        for (op, a, b, want) in [
            (Add, i(2147483647), i(1), "22003: integer out of range"),
            (Div, i(-2147483648), i(-1), "22003: integer out of range"),
            (Mod, i(-2147483648), i(-1), "0"),
            (Div, i(-7), i(2), "-3"),
            (Mod, i(-7), i(2), "-1"),
            (Mod, i(7), i(-2), "1"),
            (Div, i(1), i(0), "22012: division by zero"),
            (Mod, i(1), i(0), "22012: division by zero"),
            (Mul, i(46341), i(46341), "22003: integer out of range"),
            (Sub, i(3), i(5), "-2"),
        ] {
            assert_eq!(show(arith(op, &a, &b)), want, "{a:?} {op:?} {b:?}");
        }
        assert_eq!(
            show(arith(Add, &Value::Int16(32767), &Value::Int16(1))),
            "22003: smallint out of range"
        );
        assert_eq!(
            show(arith(Mul, &Value::Int64(i64::MAX), &Value::Int64(2))),
            "22003: bigint out of range"
        );
        assert_eq!(show(arith(Add, &Value::Int16(1), &Value::Int64(2))), "3");
        assert_eq!(show(arith(Add, &Value::Null, &Value::Int64(2))), "");
    }

    #[test]
    fn numeric_arithmetic_matches_postgres() {
        for (op, a, b, want) in [
            (Mul, "1.23", "4.567", "5.61741"),
            (Add, "1.5", "2.25", "3.75"),
            (Sub, "1.50", "1.5", "0.00"),
            (Div, "100", "3", "33.3333333333333333"),
            (Div, "1", "3", "0.33333333333333333333"),
            (Div, "10", "4", "2.5000000000000000"),
            (Mod, "5.5", "2", "1.5"),
            (Mod, "-5.5", "2", "-1.5"),
            (Mod, "5.50", "2", "1.50"),
            (Div, "1.0", "0", "22012: division by zero"),
            (Mul, "2.00", "3.0", "6.000"),
        ] {
            assert_eq!(show(arith(op, &num(a), &num(b))), want, "{a} {op:?} {b}");
        }
        // numeric + int4 (S_YTD + $2) promotes the integer.
        assert_eq!(show(arith(Add, &num("1.50"), &Value::Int32(2))), "3.50");
        assert_eq!(
            show(arith(Mul, &num("79228162514264337593543950335"), &num("2"))),
            "158456325028528675187087900670"
        );
        assert_eq!(
            show(arith(Mul, &num("1e100000"), &num("1e100000"))),
            "22003: value overflows numeric format"
        );
        assert_eq!(show(arith(Add, &num("1e400"), &Value::Float64(1.0))).get(..5), Some("22003"));
    }

    #[test]
    fn float_arithmetic_matches_postgres() {
        let f = Value::Float64;
        assert_eq!(show(arith(Div, &f(1.0), &f(0.0))), "22012: division by zero");
        assert_eq!(show(arith(Mul, &f(1e308), &f(10.0))), "22003: value out of range: overflow");
        assert_eq!(
            show(arith(Mul, &f(1e-300), &f(1e-300))),
            "22003: value out of range: underflow"
        );
        assert_eq!(show(arith(Add, &f(f64::INFINITY), &f(1.0))), "Infinity");
        assert_eq!(show(arith(Div, &f(f64::NAN), &f(0.0))), "NaN");
        assert_eq!(show(arith(Add, &f(0.1), &f(0.2))), "0.30000000000000004");
        assert_eq!(show(arith(Div, &Value::Float32(1.0), &Value::Float32(3.0))), "0.33333334");
        assert_eq!(show(arith(Div, &Value::Float32(1.0), &Value::Int32(3))), "0.3333333333333333");
        assert!(arith(Mod, &f(1.0), &f(2.0)).is_err());
    }

    #[test]
    fn date_arithmetic() {
        let d = |s: &str| parse_text(s, &T::Date).unwrap();
        assert_eq!(show(arith(Add, &d("2024-01-31"), &Value::Int32(1))), "2024-02-01");
        assert_eq!(show(arith(Sub, &d("2024-03-01"), &Value::Int32(1))), "2024-02-29");
        assert_eq!(show(arith(Add, &Value::Int32(1), &d("2024-01-31"))), "2024-02-01");
        assert_eq!(show(arith(Sub, &d("2024-03-01"), &d("2024-02-01"))), "29");
        assert_eq!(arith(Add, &d("2024-03-01"), &d("2024-02-01")).unwrap_err().sqlstate(), "42883");
    }

    #[test]
    fn negate_checks_overflow() {
        assert_eq!(show(negate(&Value::Int32(i32::MIN))), "22003: integer out of range");
        assert_eq!(show(negate(&num("0.00"))), "0.00");
        assert_eq!(show(negate(&num("1.5"))), "-1.5");
        assert_eq!(show(negate(&Value::Float64(0.0))), "-0");
    }

    #[test]
    fn result_types_follow_postgres() {
        for (op, a, b, want) in [
            (Add, T::Int32, T::Int32, Some(T::Int32)),
            (Add, T::Int16, T::Int16, Some(T::Int16)),
            (Mul, T::Int16, T::Int64, Some(T::Int64)),
            (Add, T::Int32, T::Numeric(Some((12, 2))), Some(T::Numeric(None))),
            (Add, T::Numeric(Some((12, 2))), T::Numeric(Some((12, 2))), Some(T::Numeric(None))),
            (Add, T::Float32, T::Int32, Some(T::Float64)),
            (Add, T::Float32, T::Numeric(None), Some(T::Float64)),
            (Mul, T::Float32, T::Float32, Some(T::Float32)),
            (Mod, T::Float64, T::Float64, None),
            (Add, T::Date, T::Int32, Some(T::Date)),
            (Add, T::Int32, T::Date, Some(T::Date)),
            (Sub, T::Date, T::Date, Some(T::Int32)),
            (Add, T::Date, T::Date, None),
            (Add, T::Text, T::Int32, None),
            (Sub, T::Timestamp, T::Timestamp, Some(T::Interval)),
            (Add, T::Timestamp, T::Timestamp, None),
            (Add, T::Date, T::Interval, Some(T::Timestamp)),
            (Sub, T::TimestampTz, T::Interval, Some(T::TimestampTz)),
            (Sub, T::Interval, T::TimestampTz, None),
            (Mul, T::Numeric(None), T::Interval, Some(T::Interval)),
            (Div, T::Int32, T::Interval, None),
        ] {
            assert_eq!(arith_result_type(op, &a, &b), want, "{a:?} {op:?} {b:?}");
        }
    }
}
