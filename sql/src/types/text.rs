//! Text input and output functions, as PostgreSQL 15's `*in` / `*out` functions behave with
//! `DateStyle = ISO`, `bytea_output = hex` and `extra_float_digits >= 1` (shortest round-trip
//! floats, which is what every driver asks for).

use catalog::DataType;

use super::datetime::{self, Kind, Zone};
use super::interval::{parse_interval, write_interval};
use super::numeric::Numeric;
use super::value::Value;
use crate::error::{Error, Result};

/// Parses the text form of a value of type `ty` (PostgreSQL's input function, with the type
/// modifier applied as an assignment would: an overlong `varchar(n)` / `char(n)` value fails
/// with `22001` unless the excess is only spaces, which are cut silently; `char(n)` is padded).
///
/// For an explicit cast of a literal (`'abcd'::varchar(3)` truncates), parse with the
/// unconstrained type and then call `cast(.., CastKind::Explicit)`.
///
/// Errors: `22P02` invalid input syntax, `22003` out of range, `22007`/`22008` for dates and
/// timestamps, `22001` string too long.
///
/// A `timestamptz` without its own zone is read in UTC: where a session's `TimeZone` applies,
/// use [`parse_text_zoned`].
pub fn parse_text(s: &str, ty: &DataType) -> Result<Value> {
    parse_text_zoned(s, ty, Zone::UTC)
}

/// [`parse_text`] in the session time zone `zone` (which only `timestamptz` looks at).
pub fn parse_text_zoned(s: &str, ty: &DataType, zone: Zone) -> Result<Value> {
    Ok(match ty {
        // `void_in` takes anything.
        DataType::Void => Value::Text(String::new()),
        DataType::RegType => Value::Int64(super::regtype::parse(s)?.into()),
        DataType::Bool => Value::Bool(parse_bool(s)?),
        DataType::Int16 => Value::Int16(
            parse_int(s, "smallint")?.try_into().map_err(|_| int_range(s, "smallint"))?,
        ),
        DataType::Int32 => {
            Value::Int32(parse_int(s, "integer")?.try_into().map_err(|_| int_range(s, "integer"))?)
        }
        DataType::Int64 => Value::Int64(parse_int(s, "bigint")?),
        DataType::Float32 => Value::Float32(parse_float4(s)?),
        DataType::Float64 => Value::Float64(parse_float8(s)?),
        DataType::Numeric(typmod) => {
            let d = Numeric::parse(s.trim_matches(is_pg_space))?;
            Value::Numeric(match typmod {
                Some((p, sc)) => d.apply_typmod(*p as u32, *sc as u32)?,
                None => d,
            })
        }
        DataType::Text | DataType::Varchar(None) => Value::Text(s.to_owned()),
        DataType::Name => Value::Text(name_in(s)),
        DataType::Varchar(Some(_)) | DataType::Char(_) => {
            Value::Text(fit_string(s.to_owned(), ty, false)?)
        }
        DataType::Date => Value::Date(datetime::parse_datetime(s, Kind::Date)?.date()),
        DataType::Timestamp => Value::Timestamp(datetime::parse_datetime(s, Kind::Timestamp)?),
        DataType::Bytea => Value::Bytea(parse_bytea(s)?),
        DataType::TimestampTz => Value::TimestampTz(datetime::parse_timestamptz(s, zone)?),
        DataType::Interval => Value::Interval(parse_interval(s)?),
        DataType::Uuid => Value::Uuid(parse_uuid(s)?),
        DataType::Jsonb => Value::Jsonb(std::sync::Arc::new(super::Jsonb::parse(s)?)),
        DataType::Json => {
            super::json::check(s)?;
            Value::Json(s.into())
        }
        DataType::Time => Value::Time(datetime::parse_time(s)?),
        DataType::Array(e) => super::array::parse_array(s, &e.data_type(), zone)?,
    })
}

/// `uuid_in`: 32 hex digits, optionally in braces, with a hyphen allowed after any group of
/// four (`a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`, `{A0EEBC999C0B4EF8BB6D6BB9BD380A11}`);
/// nothing else, not even spaces (`22P02`).
fn parse_uuid(s: &str) -> Result<[u8; 16]> {
    let bad = || Error::InvalidTextRepresentation {
        message: format!("invalid input syntax for type uuid: \"{s}\""),
    };
    let b = s.as_bytes();
    let braces = b.first() == Some(&b'{');
    let mut i = usize::from(braces);
    let mut out = [0u8; 16];
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    for (n, byte) in out.iter_mut().enumerate() {
        let (Some(hi), Some(lo)) =
            (b.get(i).copied().and_then(digit), b.get(i + 1).copied().and_then(digit))
        else {
            return Err(bad());
        };
        *byte = hi << 4 | lo;
        i += 2;
        if b.get(i) == Some(&b'-') && n % 2 == 1 && n < 15 {
            i += 1;
        }
    }
    if braces {
        if b.get(i) != Some(&b'}') {
            return Err(bad());
        }
        i += 1;
    }
    if i != b.len() {
        return Err(bad());
    }
    Ok(out)
}

/// The text form of `v` (PostgreSQL's output function). `ty` is the value's SQL type; the
/// `Value` variant decides the format. NULL formats as the empty string: callers must send the
/// NULL marker instead.
pub fn format_text(v: &Value, ty: &DataType) -> String {
    let mut out = String::new();
    format_text_into(v, ty, &mut out);
    out
}

/// [`format_text`] appending to `out`, to reuse one buffer per result row. A `timestamptz`
/// prints in UTC: where a session's `TimeZone` applies, use [`format_text_zoned_into`].
pub fn format_text_into(v: &Value, ty: &DataType, out: &mut String) {
    format_text_zoned_into(v, ty, Zone::UTC, out)
}

/// [`format_text`] in the session time zone `zone` (which only `timestamptz` looks at).
pub fn format_text_zoned(v: &Value, ty: &DataType, zone: Zone) -> String {
    let mut out = String::new();
    format_text_zoned_into(v, ty, zone, &mut out);
    out
}

/// [`format_text_zoned`] appending to `out`.
pub fn format_text_zoned_into(v: &Value, ty: &DataType, zone: Zone, out: &mut String) {
    use std::fmt::Write;
    match v {
        Value::Null => {}
        Value::Bool(b) => out.push(if *b { 't' } else { 'f' }),
        Value::Int16(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Int32(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Int64(i) if *ty == DataType::RegType => super::regtype::write(*i, out),
        Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float32(f) => write_float4(*f, out),
        Value::Float64(f) => write_float8(*f, out),
        Value::Numeric(d) => d.write_text(out),
        Value::Text(s) => out.push_str(s),
        Value::Date(d) => datetime::write_date(*d, out),
        Value::Timestamp(t) => datetime::write_timestamp(*t, out),
        Value::TimestampTz(t) => datetime::write_timestamptz(*t, zone, out),
        Value::Interval(i) => write_interval(*i, out),
        Value::Time(t) => datetime::write_time(*t, out),
        Value::Jsonb(j) => j.write(out),
        Value::Json(s) => out.push_str(s),
        Value::Array(items) => {
            let elem = ty.element().unwrap_or_else(|| super::value::array_elem_type(items));
            super::array::write_array(items, &elem, zone, out)
        }
        Value::Bytea(b) => {
            out.push_str("\\x");
            for byte in b {
                let _ = write!(out, "{byte:02x}");
            }
        }
        Value::Uuid(u) => {
            for (n, byte) in u.iter().enumerate() {
                if matches!(n, 4 | 6 | 8 | 10) {
                    out.push('-');
                }
                let _ = write!(out, "{byte:02x}");
            }
        }
    }
}

/// `namein`: at most 63 bytes (NAMEDATALEN - 1), cut at a character boundary.
pub(crate) fn name_in(s: &str) -> String {
    const MAX: usize = 63;
    let cut = (0..=MAX.min(s.len())).rev().find(|&at| s.is_char_boundary(at)).unwrap_or(0);
    s[..cut].to_owned()
}

/// Whitespace as PostgreSQL's `isspace` sees it in the C locale.
fn is_pg_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// `boolin`: `t`, `true`, `y`, `yes`, `on`, `1` and `f`, `false`, `n`, `no`, `off`, `0`, and
/// any unique prefix of these words, case-insensitive, with surrounding whitespace.
fn parse_bool(input: &str) -> Result<bool> {
    let s = input.trim_matches(is_pg_space).to_ascii_lowercase();
    let prefix_of = |word: &str| !s.is_empty() && word.starts_with(s.as_str());
    let v = match s.as_bytes().first() {
        Some(b't') if prefix_of("true") => Some(true),
        Some(b'y') if prefix_of("yes") => Some(true),
        Some(b'f') if prefix_of("false") => Some(false),
        Some(b'n') if prefix_of("no") => Some(false),
        Some(b'o') if s.len() >= 2 && prefix_of("on") => Some(true),
        Some(b'o') if s.len() >= 2 && prefix_of("off") => Some(false),
        _ if s == "1" => Some(true),
        _ if s == "0" => Some(false),
        _ => None,
    };
    v.ok_or_else(|| Error::invalid_input("boolean", input))
}

/// `22003`: value "x" is out of range for type T.
fn int_range(input: &str, ty: &str) -> Error {
    Error::NumericOutOfRange { message: format!("value \"{input}\" is out of range for type {ty}") }
}

/// `pg_strtoint*`: optional whitespace, sign, decimal digits, optional whitespace. Range errors
/// are reported against `ty` (the caller narrows further).
fn parse_int(input: &str, ty: &str) -> Result<i64> {
    let s = input.trim_matches(is_pg_space);
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid_input(ty, input));
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        // Accumulate negatively so i64::MIN parses.
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_sub((b - b'0') as i64))
            .ok_or_else(|| int_range(input, ty))?;
    }
    if neg {
        Ok(v)
    } else {
        v.checked_neg().ok_or_else(|| int_range(input, ty))
    }
}

/// Shared float input: strtod syntax plus `inf`/`infinity`/`nan`, surrounding whitespace;
/// overflow to infinity or underflow to zero of a finite literal is `22003`.
fn parse_float<F: std::str::FromStr + Copy>(
    input: &str,
    ty: &str,
    is_inf: impl Fn(F) -> bool,
    is_zero: impl Fn(F) -> bool,
) -> Result<F> {
    let s = input.trim_matches(is_pg_space);
    let v: F = s.parse().map_err(|_| Error::invalid_input(ty, input))?;
    let body = s.trim_start_matches(['+', '-']);
    let is_word = body.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
    if !is_word {
        let mantissa = body.split(['e', 'E']).next().unwrap_or("");
        let nonzero_digits = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
        if is_inf(v) || (is_zero(v) && nonzero_digits) {
            return Err(Error::NumericOutOfRange {
                message: format!("\"{s}\" is out of range for type {ty}"),
            });
        }
    }
    Ok(v)
}

fn parse_float8(input: &str) -> Result<f64> {
    parse_float(input, "double precision", |v: f64| v.is_infinite(), |v: f64| v == 0.0)
}

fn parse_float4(input: &str) -> Result<f32> {
    parse_float(input, "real", |v: f32| v.is_infinite(), |v: f32| v == 0.0)
}

/// Formats the shortest round-trip digits of a float the way PostgreSQL 15 does: fixed
/// notation when the decimal exponent is in `-4..max_fixed_exp`, otherwise `d.ddde+XX`.
fn write_float_shortest(sci: &str, max_fixed_exp: i32, out: &mut String) {
    // `sci` is Rust's `{:e}` output: shortest round-trip digits, e.g. "-1.2345e17", "1e-7".
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` output has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if neg {
        out.push('-');
    }
    if exp < -4 || exp >= max_fixed_exp {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        if exp.abs() < 10 {
            out.push('0');
        }
        out.push_str(&exp.abs().to_string());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
}

/// The shortest decimal (in Rust's `{:e}` form) that PostgreSQL's Ryu-based output picks for
/// `v`. Rust's shortest digits may lie exactly on the boundary between `v` and a neighbour when
/// `v`'s mantissa is even (they parse back to `v` only by round-half-even); PostgreSQL's Ryu
/// does not accept the boundaries, so such a result is replaced by the shortest correctly
/// rounded digits strictly inside the rounding interval.
fn pg_shortest<F>(v: F, max_digits: usize) -> String
where
    F: Copy + PartialEq + std::fmt::LowerExp + std::str::FromStr,
{
    let shortest = format!("{v:e}");
    if strictly_inside(&shortest, v) {
        return shortest;
    }
    let start =
        shortest.split('e').next().map_or(1, |m| m.bytes().filter(u8::is_ascii_digit).count());
    for digits in start + 1..=max_digits {
        let s = format!("{v:.*e}", digits - 1);
        let (m, e) = s.split_once('e').expect("`{:e}` output has an exponent");
        let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
        let s = format!("{m}e{e}");
        if s.parse::<F>().ok() == Some(v) && strictly_inside(&s, v) {
            return s;
        }
    }
    format!("{v:.*e}", max_digits - 1)
}

/// Whether the decimal `sci` (Rust `{:e}` form) parses to `v` even when nudged by a relative
/// 1e-20 in either direction, i.e. it is not on a rounding boundary.
fn strictly_inside<F: Copy + PartialEq + std::str::FromStr>(sci: &str, v: F) -> bool {
    let (m, e) = sci.split_once('e').expect("`{:e}` output has an exponent");
    let e: i32 = e.parse().expect("`{:e}` exponent is an integer");
    let (sign, m) = match m.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", m),
    };
    let mut digits: Vec<u8> = m.bytes().filter(u8::is_ascii_digit).collect();
    let exp = e - (digits.len() as i32 - 1) - 20;
    let up = format!("{sign}{}00000000000000000001e{exp}", String::from_utf8_lossy(&digits));
    // Decrement the digit string (it is nonzero), then append nines.
    for d in digits.iter_mut().rev() {
        if *d == b'0' {
            *d = b'9';
        } else {
            *d -= 1;
            break;
        }
    }
    let down = format!("{sign}{}99999999999999999999e{exp}", String::from_utf8_lossy(&digits));
    up.parse::<F>().ok() == Some(v) && down.parse::<F>().ok() == Some(v)
}

/// Appends a `double precision` as PostgreSQL prints it (`1e+20`, `1.5e-07`, `-0`, `NaN`).
pub(crate) fn write_float8(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
    } else {
        let sci = if v.to_bits() & 1 == 0 { pg_shortest(v, 17) } else { format!("{v:e}") };
        write_float_shortest(&sci, 15, out);
    }
}

/// Appends a `real` as PostgreSQL prints it (fixed notation only below 1e6).
pub(crate) fn write_float4(v: f32, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
    } else {
        let sci = if v.to_bits() & 1 == 0 { pg_shortest(v, 9) } else { format!("{v:e}") };
        write_float_shortest(&sci, 6, out);
    }
}

/// `byteain`: `\x` followed by hex digit pairs (whitespace allowed between pairs), or the
/// escape format (`\\`, `\ooo`, other characters literally).
fn parse_bytea(s: &str) -> Result<Vec<u8>> {
    match s.strip_prefix("\\x").or_else(|| s.strip_prefix("\\X")) {
        Some(hex) => hex_decode(hex),
        None => escape_decode(s),
    }
}

/// PostgreSQL's `hex_decode` (bytea's hex input, `decode(…, 'hex')`): pairs of hex digits,
/// whitespace between them skipped; `22023` for a bad digit or an odd count.
pub(crate) fn hex_decode(s: &str) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 2);
    // The first byte that is no hex digit starts a character (multi-byte ones included).
    let hex = |i: usize| -> Result<u8> {
        (b[i] as char).to_digit(16).map(|d| d as u8).ok_or_else(|| {
            let c = s.get(i..).and_then(|t| t.chars().next()).unwrap_or('?');
            Error::InvalidParameterValue { message: format!("invalid hexadecimal digit: \"{c}\"") }
        })
    };
    let mut i = 0;
    while i < b.len() {
        if matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
            continue;
        }
        let hi = hex(i)?;
        if i + 1 >= b.len() {
            return Err(Error::InvalidParameterValue {
                message: "invalid hexadecimal data: odd number of digits".into(),
            });
        }
        out.push(hi << 4 | hex(i + 1)?);
        i += 2;
    }
    Ok(out)
}

/// PostgreSQL's escape format (bytea's escape input, `decode(…, 'escape')`): `\\` is a
/// backslash, `\ooo` an octal byte; any other backslash is `22P02` "invalid input syntax for
/// type bytea".
pub(crate) fn escape_decode(s: &str) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else if i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && (b'0'..=b'7').contains(&b[i + 2])
            && (b'0'..=b'7').contains(&b[i + 3])
        {
            out.push((b[i + 1] - b'0') << 6 | (b[i + 2] - b'0') << 3 | (b[i + 3] - b'0'));
            i += 4;
        } else {
            return Err(Error::InvalidTextRepresentation {
                message: "invalid input syntax for type bytea".into(),
            });
        }
    }
    Ok(out)
}

/// Applies a string type's length: `varchar(n)` cuts at n characters, `char(n)` cuts and then
/// pads with spaces to n. Cutting anything but spaces fails with `22001` unless `explicit`
/// (an explicit cast truncates silently, as in PostgreSQL). `text` and `varchar` return `s`.
pub(crate) fn fit_string(mut s: String, ty: &DataType, explicit: bool) -> Result<String> {
    let (n, pad) = match ty {
        DataType::Varchar(Some(n)) => (*n as usize, false),
        DataType::Char(n) => (*n as usize, true),
        DataType::Name => return Ok(name_in(&s)),
        _ => return Ok(s),
    };
    // Fast path: byte length bounds character length.
    if s.len() <= n {
        if pad {
            let chars = s.chars().count();
            s.extend(std::iter::repeat_n(' ', n - chars));
        }
        return Ok(s);
    }
    match s.char_indices().nth(n) {
        None => {
            if pad {
                let chars = s.chars().count();
                s.extend(std::iter::repeat_n(' ', n - chars));
            }
            Ok(s)
        }
        Some((cut, _)) => {
            if !explicit && !s[cut..].bytes().all(|b| b == b' ') {
                return Err(Error::StringDataRightTruncation {
                    message: format!("value too long for type {}", ty.sql_name()),
                });
            }
            s.truncate(cut);
            Ok(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str, ty: DataType) -> String {
        format_text(&parse_text(s, &ty).unwrap(), &ty)
    }

    fn err(s: &str, ty: DataType) -> (String, String) {
        let e = parse_text(s, &ty).unwrap_err();
        (e.sqlstate().to_owned(), e.to_string())
    }

    #[test]
    fn bool_input_matches_postgres() {
        for (s, want) in [
            (" TRUE ", "t"),
            ("y", "t"),
            ("of", "f"),
            ("off", "f"),
            ("On", "t"),
            ("1", "t"),
            ("0", "f"),
            ("tr", "t"),
            ("n", "f"),
            ("FALSE", "f"),
        ] {
            assert_eq!(ok(s, DataType::Bool), want, "{s}");
        }
        for bad in ["o", "", "2", "truee", "yes please"] {
            assert_eq!(err(bad, DataType::Bool).0, "22P02", "{bad}");
        }
        assert_eq!(err("o", DataType::Bool).1, "invalid input syntax for type boolean: \"o\"");
    }

    #[test]
    fn int_input_matches_postgres() {
        assert_eq!(ok(" 12 ", DataType::Int32), "12");
        assert_eq!(ok("+12", DataType::Int16), "12");
        assert_eq!(ok("-0", DataType::Int64), "0");
        assert_eq!(ok("-9223372036854775808", DataType::Int64), "-9223372036854775808");
        assert_eq!(ok("-32768", DataType::Int16), "-32768");
        assert_eq!(
            err("3000000000", DataType::Int32),
            ("22003".into(), "value \"3000000000\" is out of range for type integer".into())
        );
        assert_eq!(err("32768", DataType::Int16).0, "22003");
        assert_eq!(err("9223372036854775808", DataType::Int64).0, "22003");
        assert_eq!(
            err("abc", DataType::Int32),
            ("22P02".into(), "invalid input syntax for type integer: \"abc\"".into())
        );
        for bad in ["1.5", "", " ", "1 2", "--1", "0x10", "1e3"] {
            assert_eq!(err(bad, DataType::Int32).0, "22P02", "{bad}");
        }
    }

    #[test]
    fn numeric_input_and_output() {
        assert_eq!(ok(" 1.5e3 ", DataType::Numeric(None)), "1500");
        assert_eq!(ok("-0.00", DataType::Numeric(None)), "0.00");
        assert_eq!(ok("12.345", DataType::Numeric(Some((4, 2)))), "12.35");
        assert_eq!(err("123.45", DataType::Numeric(Some((4, 2)))).0, "22003");
        assert_eq!(ok(" -Infinity ", DataType::Numeric(None)), "-Infinity");
        assert_eq!(ok("NaN", DataType::Numeric(Some((4, 2)))), "NaN");
        assert_eq!(err("inf", DataType::Numeric(Some((4, 2)))).1, "numeric field overflow");
        assert_eq!(
            format_text(
                &Value::Numeric(Numeric::from_i64_scaled(150, 2)),
                &DataType::Numeric(None)
            ),
            "1.50"
        );
    }

    #[test]
    fn float_input_and_output_match_postgres() {
        let f8 = DataType::Float64;
        for (s, want) in [
            ("1e20", "1e+20"),
            ("1.5e-7", "1.5e-07"),
            ("-0", "-0"),
            ("0.1", "0.1"),
            ("1e15", "1e+15"),
            ("1e14", "100000000000000"),
            ("123456789012345.6", "123456789012345.6"),
            ("123456789012345678", "1.2345678901234568e+17"),
            ("1e-4", "0.0001"),
            ("1e-5", "1e-05"),
            ("0.00012", "0.00012"),
            (" inf", "Infinity"),
            ("-Infinity", "-Infinity"),
            ("nan", "NaN"),
            ("1e100", "1e+100"),
            ("4.9e-324", "5e-324"),
            ("2.5", "2.5"),
            ("100", "100"),
            // Rust's shortest digits would be the boundary value itself; PostgreSQL's differ.
            ("-6.81064538484e+18", "-6.810645384839999e+18"),
        ] {
            assert_eq!(ok(s, f8), want, "{s}");
        }
        let f4 = DataType::Float32;
        for (s, want) in [
            ("0.1", "0.1"),
            ("1e20", "1e+20"),
            ("3.4e38", "3.4e+38"),
            ("1e5", "100000"),
            ("1e6", "1e+06"),
            ("12345678", "1.2345678e+07"),
            ("1e-4", "0.0001"),
            ("1e-5", "1e-05"),
            ("123456.7", "123456.7"),
            ("66937832.414145656", "6.6937832e+07"),
        ] {
            assert_eq!(ok(s, f4), want, "{s}");
        }
        assert_eq!(
            err(" 1e400", f8),
            ("22003".into(), "\"1e400\" is out of range for type double precision".into())
        );
        assert_eq!(err("1e-400", f8).0, "22003");
        assert_eq!(err("1e40", f4).1, "\"1e40\" is out of range for type real");
        assert_eq!(err("abc", f8).1, "invalid input syntax for type double precision: \"abc\"");
        assert_eq!(ok("0e5", f8), "0");
    }

    #[test]
    fn string_input_applies_length() {
        assert_eq!(ok("abc   ", DataType::Varchar(Some(3))), "abc");
        assert_eq!(
            err("abcd", DataType::Varchar(Some(3))),
            ("22001".into(), "value too long for type character varying(3)".into())
        );
        assert_eq!(err("abcd", DataType::Char(3)).1, "value too long for type character(3)");
        assert_eq!(ok("ab", DataType::Char(4)), "ab  ");
        assert_eq!(ok("éé", DataType::Char(3)), "éé ");
        assert_eq!(ok("ééé", DataType::Varchar(Some(3))), "ééé");
        assert_eq!(ok("  x ", DataType::Text), "  x ");
    }

    #[test]
    fn date_timestamp_bytea_round_trip() {
        assert_eq!(ok(" 2024-1-2 ", DataType::Date), "2024-01-02");
        assert_eq!(ok("2024-01-02 10:00", DataType::Date), "2024-01-02");
        assert_eq!(
            ok("2026-11-21 23:39:17.422+00", DataType::Timestamp),
            "2026-11-21 23:39:17.422"
        );
        assert_eq!(ok("\\x0102", DataType::Bytea), "\\x0102");
        assert_eq!(ok("\\x01 02", DataType::Bytea), "\\x0102");
        assert_eq!(ok("ab\\001c", DataType::Bytea), "\\x61620163");
        assert_eq!(ok("a\\\\b", DataType::Bytea), "\\x615c62");
        assert_eq!(ok("abc", DataType::Bytea), "\\x616263");
        assert_eq!(err("\\x012", DataType::Bytea).0, "22023");
        assert_eq!(err("\\xzz", DataType::Bytea).0, "22023");
        assert_eq!(err("a\\9", DataType::Bytea).0, "22P02");
    }
}
