//! Evaluation of the built-in text and math functions (see `bind::func` for their
//! signatures). Arguments arrive already cast to the parameter types the binder chose, and
//! NULL arguments never reach the strict functions here (`exec::func` answers NULL first);
//! `greatest` and `least` skip NULLs themselves.
//!
//! Lengths and positions count characters, as PostgreSQL does in a UTF-8 database. Length
//! limits follow PostgreSQL's 1 GB allocation limit so that the same calls fail with `54000`.

use std::cell::Cell;
use std::cmp::Ordering;
use std::hash::{BuildHasher, RandomState};

use crate::error::{Error, Result};
use crate::plan::Func;
use crate::types::{self, Numeric, Value};

/// PostgreSQL's `MaxAllocSize - 1`: the largest allocation `AllocSizeIsValid` accepts.
const MAX_ALLOC: i64 = 0x3fff_ffff;
/// The 4-byte varlena header that PostgreSQL adds to every text value.
const VARHDRSZ: i64 = 4;
/// Bytes per character at most in UTF-8 (`pg_database_encoding_max_length`).
const MAX_CHAR_BYTES: i64 = 4;

/// PostgreSQL's `RADIANS_PER_DEGREE`.
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295;

/// PostgreSQL's overflow check of `result`, computed from `input`: infinite only if the input
/// was.
fn finite(input: f64, result: f64) -> Result<f64> {
    if result.is_infinite() && !input.is_infinite() {
        return Err(float_overflow());
    }
    Ok(result)
}

/// `quote_literal`: the string between single quotes, quotes and backslashes doubled, with an
/// `E` prefix when it holds a backslash.
fn quote_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    if s.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// `format(fmt, args…)`, PostgreSQL's `text_format`: `%[n$][-][width|*[m$]]{s,I,L}` and `%%`.
/// `show` prints a value as its type's output function does.
pub(crate) fn format(fmt: &str, args: &[Value], show: impl Fn(&Value) -> String) -> Result<String> {
    let bad = |message: String| Error::DataException { message, sqlstate: "22023" };
    let too_few = || bad("too few arguments for format()".into());
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::with_capacity(fmt.len());
    let mut next = 0usize; // the next argument taken without a position
    let mut i = 0;
    // A number at chars[*i..], if any.
    let number = |i: &mut usize| -> Option<usize> {
        let start = *i;
        while *i < chars.len() && chars[*i].is_ascii_digit() {
            *i += 1;
        }
        (start < *i)
            .then(|| chars[start..*i].iter().collect::<String>().parse().unwrap_or(usize::MAX))
    };
    // An argument position `n$` at chars[*i..], if any (0-based); `i` stays put otherwise.
    let position = |i: &mut usize| -> Result<Option<usize>> {
        let save = *i;
        match number(i) {
            Some(n) if *i < chars.len() && chars[*i] == '$' => {
                *i += 1;
                if n == 0 {
                    return Err(bad(
                        "format specifies argument 0, but arguments are numbered from 1".into(),
                    ));
                }
                Ok(Some(n - 1))
            }
            _ => {
                *i = save;
                Ok(None)
            }
        }
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        let unterminated = || bad("unterminated format() type specifier".into());
        if i >= chars.len() {
            return Err(unterminated());
        }
        if chars[i] == '%' {
            out.push('%');
            i += 1;
            continue;
        }
        // [n$]
        let argpos = position(&mut i)?;
        // [-]
        let mut left = false;
        while i < chars.len() && chars[i] == '-' {
            left = true;
            i += 1;
        }
        // [width | *[m$]]
        let mut width: Option<i64> = None;
        if i < chars.len() && chars[i] == '*' {
            i += 1;
            let widthpos = position(&mut i)?;
            let at = match widthpos {
                Some(p) => p,
                None => {
                    next += 1;
                    next - 1
                }
            };
            if widthpos.is_some() {
                next = at + 1;
            }
            let w = args.get(at).ok_or_else(too_few)?;
            width = Some(match w {
                Value::Null => 0,
                Value::Int16(n) => i64::from(*n),
                Value::Int32(n) => i64::from(*n),
                Value::Int64(n) => *n,
                other => {
                    show(other).trim().parse().map_err(|_| Error::InvalidTextRepresentation {
                        message: format!(
                            "invalid input syntax for type integer: \"{}\"",
                            show(other)
                        ),
                    })?
                }
            });
        } else if let Some(n) = number(&mut i) {
            width = Some(n.min(i32::MAX as usize) as i64);
        }
        if i >= chars.len() {
            return Err(unterminated());
        }
        let kind = chars[i];
        i += 1;
        if !matches!(kind, 's' | 'I' | 'L') {
            return Err(bad(format!("unrecognized format() type specifier \"{kind}\"")));
        }
        let at = match argpos {
            Some(p) => {
                next = p + 1;
                p
            }
            None => {
                next += 1;
                next - 1
            }
        };
        let value = args.get(at).ok_or_else(too_few)?;
        let text = match (kind, value) {
            ('s', Value::Null) => String::new(),
            ('s', v) => show(v),
            ('I', Value::Null) => {
                return Err(Error::DataException {
                    message: "null values cannot be formatted as an SQL identifier".into(),
                    sqlstate: "22004",
                })
            }
            ('I', v) => crate::bind::display_ident(&show(v)),
            (_, Value::Null) => "NULL".to_string(),
            (_, v) => quote_literal(&show(v)),
        };
        let (left, width) = match width {
            Some(w) if w < 0 => (true, w.unsigned_abs() as usize),
            Some(w) => (left, w as usize),
            None => (left, 0),
        };
        let pad = width.saturating_sub(text.chars().count());
        if (out.len() + text.len()).saturating_add(pad) as i64 > MAX_ALLOC - VARHDRSZ {
            return Err(too_large());
        }
        if left {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&text);
        }
    }
    Ok(out)
}

/// `22023`, PostgreSQL's code for a bad encoding name or bad encoded data.
fn invalid_value(message: String) -> Error {
    Error::DataException { message, sqlstate: "22023" }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `encode(data, format)`, PostgreSQL's `hex_encode`, `pg_base64_encode` (a line break after
/// every 76 characters, also at the very end) and `esc_encode` (NUL and bytes above 0x7F as
/// `\ooo`, a backslash doubled).
fn encode(data: &[u8], format: &str) -> Result<String> {
    Ok(match format.to_ascii_lowercase().as_str() {
        "hex" => data.iter().map(|b| format!("{b:02x}")).collect(),
        "base64" => {
            let mut out = String::with_capacity(data.len() * 4 / 3 + data.len() / 57 + 4);
            let (mut buf, mut pos, mut line) = (0u32, 2i32, 0usize);
            for &b in data {
                buf |= u32::from(b) << (pos * 8);
                pos -= 1;
                if pos < 0 {
                    for shift in [18, 12, 6, 0] {
                        out.push(BASE64[((buf >> shift) & 0x3f) as usize] as char);
                    }
                    line += 4;
                    pos = 2;
                    buf = 0;
                }
                if line >= 76 {
                    out.push('\n');
                    line = 0;
                }
            }
            if pos != 2 {
                out.push(BASE64[((buf >> 18) & 0x3f) as usize] as char);
                out.push(BASE64[((buf >> 12) & 0x3f) as usize] as char);
                out.push(if pos == 0 { BASE64[((buf >> 6) & 0x3f) as usize] as char } else { '=' });
                out.push('=');
            }
            out
        }
        "escape" => {
            let mut out = String::with_capacity(data.len());
            for &b in data {
                match b {
                    0 | 0x80..=0xff => out.push_str(&format!("\\{b:03o}")),
                    b'\\' => out.push_str("\\\\"),
                    b => out.push(b as char),
                }
            }
            out
        }
        _ => return Err(invalid_value(format!("unrecognized encoding: \"{format}\""))),
    })
}

/// `decode(text, format)`: the inverse of [`encode`], with PostgreSQL's errors (whitespace
/// is skipped in hex and base64); hex and escape are bytea's own input formats.
fn decode(s: &str, format: &str) -> Result<Vec<u8>> {
    let bytes = s.as_bytes();
    Ok(match format.to_ascii_lowercase().as_str() {
        "hex" => types::hex_decode(s)?,
        "base64" => {
            let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
            let (mut buf, mut pos, mut end) = (0u32, 0, 0);
            for (i, &c) in bytes.iter().enumerate() {
                if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                    continue;
                }
                let b = if c == b'=' {
                    if end == 0 {
                        end = match pos {
                            2 => 1,
                            3 => 2,
                            _ => {
                                return Err(invalid_value(
                                    "unexpected \"=\" while decoding base64 sequence".into(),
                                ))
                            }
                        };
                    }
                    0
                } else {
                    match BASE64.iter().position(|&x| x == c) {
                        Some(b) => b as u32,
                        None => {
                            let ch = s.get(i..).and_then(|t| t.chars().next()).unwrap_or('?');
                            return Err(invalid_value(format!(
                                "invalid symbol \"{ch}\" found while decoding base64 sequence"
                            )));
                        }
                    }
                };
                buf = (buf << 6) + b;
                pos += 1;
                if pos == 4 {
                    out.push((buf >> 16) as u8);
                    if end == 0 || end > 1 {
                        out.push((buf >> 8) as u8);
                    }
                    if end == 0 || end > 2 {
                        out.push(buf as u8);
                    }
                    buf = 0;
                    pos = 0;
                }
            }
            if pos != 0 {
                return Err(invalid_value("invalid base64 end sequence".into()));
            }
            out
        }
        "escape" => types::escape_decode(s)?,
        _ => return Err(invalid_value(format!("unrecognized encoding: \"{format}\""))),
    })
}

fn too_large() -> Error {
    Error::ProgramLimitExceeded { message: "requested length too large".into() }
}

fn float_overflow() -> Error {
    Error::NumericOutOfRange { message: "value out of range: overflow".into() }
}

fn float_underflow() -> Error {
    Error::NumericOutOfRange { message: "value out of range: underflow".into() }
}

fn text(v: &Value) -> Result<&str> {
    match v {
        Value::Text(s) => Ok(s),
        other => Err(Error::internal(format!("expected text, got {other:?}"))),
    }
}

fn int(v: &Value) -> Result<i64> {
    match v {
        Value::Int16(i) => Ok(*i as i64),
        Value::Int32(i) => Ok(*i as i64),
        Value::Int64(i) => Ok(*i),
        other => Err(Error::internal(format!("expected an integer, got {other:?}"))),
    }
}

fn float(v: &Value) -> Result<f64> {
    match v {
        Value::Float64(x) => Ok(*x),
        other => Err(Error::internal(format!("expected double precision, got {other:?}"))),
    }
}

/// Evaluates `f` over non-NULL arguments (any arguments for `greatest` / `least`).
pub(super) fn call(f: Func, args: &[Value]) -> Result<Value> {
    Ok(match f {
        Func::RegexMatch => {
            let ci = matches!(args[2], Value::Bool(true));
            Value::Bool(regex::compiled(text(&args[1])?, ci)?.is_match(text(&args[0])?))
        }
        Func::RegexpReplace => {
            let flags = args.get(3).map(text).transpose()?.unwrap_or("");
            regex::replace(text(&args[0])?, text(&args[1])?, text(&args[2])?, flags)?
        }
        Func::RegexpMatch | Func::RegexpSplitToArray => {
            let flags = args.get(2).map(text).transpose()?.unwrap_or("");
            let (s, pattern) = (text(&args[0])?, text(&args[1])?);
            if f == Func::RegexpMatch {
                regex::first_match(s, pattern, flags)?
            } else {
                regex::split(s, pattern, flags)?
            }
        }
        Func::Extract => datetime::extract(text(&args[0])?, &args[1], false)?,
        Func::DatePart => datetime::extract(text(&args[0])?, &args[1], true)?,
        Func::DateTrunc => datetime::trunc(text(&args[0])?, &args[1])?,
        Func::MakeDate => Value::Date(types::make_date(
            int(&args[0])? as i32,
            int(&args[1])? as i32,
            int(&args[2])? as i32,
        )?),
        Func::MakeTimestamp => {
            let fields: Vec<i32> =
                args[..5].iter().map(|a| int(a).map(|v| v as i32)).collect::<Result<_>>()?;
            Value::Timestamp(types::make_timestamp(
                [fields[0], fields[1], fields[2], fields[3], fields[4]],
                float(&args[5])?,
            )?)
        }
        Func::JustifyDays | Func::JustifyHours | Func::JustifyInterval => {
            let Value::Interval(i) = &args[0] else {
                return Err(Error::internal(format!("{f:?} of {:?}", args[0])));
            };
            Value::Interval(match f {
                Func::JustifyDays => i.justify_days()?,
                Func::JustifyHours => i.justify_hours()?,
                _ => i.justify_interval()?,
            })
        }
        Func::Repeat => repeat(text(&args[0])?, int(&args[1])?)?,
        Func::Replace => {
            let (s, from, to) = (text(&args[0])?, text(&args[1])?, text(&args[2])?);
            Value::Text(if from.is_empty() { s.to_string() } else { s.replace(from, to) })
        }
        Func::Left | Func::Right => {
            let (s, n) = (text(&args[0])?, int(&args[1])?);
            let len = s.chars().count() as i64;
            let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) };
            Value::Text(if f == Func::Left {
                s.chars().take(keep as usize).collect()
            } else {
                s.chars().skip((len - keep) as usize).collect()
            })
        }
        Func::LPad | Func::RPad => {
            let fill = match args.get(2) {
                Some(v) => text(v)?,
                None => " ",
            };
            pad(text(&args[0])?, int(&args[1])?, fill, f == Func::LPad)?
        }
        Func::StrPos => {
            let (s, sub) = (text(&args[0])?, text(&args[1])?);
            Value::Int32(match s.find(sub) {
                Some(byte) => s[..byte].chars().count() as i32 + 1,
                None => 0,
            })
        }
        Func::SplitPart => split_part(text(&args[0])?, text(&args[1])?, int(&args[2])?)?,
        Func::Reverse => Value::Text(text(&args[0])?.chars().rev().collect()),
        Func::OctetLength => Value::Int32(text(&args[0])?.len() as i32),
        Func::QuoteLiteral => Value::Text(quote_literal(text(&args[0])?)),
        Func::QuoteNullable => match &args[0] {
            Value::Null => Value::Text("NULL".into()),
            v => Value::Text(quote_literal(text(v)?)),
        },
        Func::QuoteIdent => Value::Text(crate::bind::display_ident(text(&args[0])?)),
        Func::Encode => match &args[0] {
            Value::Bytea(b) => Value::Text(encode(b, text(&args[1])?)?),
            other => return Err(Error::internal(format!("encode of {other:?}"))),
        },
        Func::Decode => Value::Bytea(decode(text(&args[0])?, text(&args[1])?)?),
        Func::NumNulls => Value::Int32(args.iter().filter(|a| a.is_null()).count() as i32),
        Func::NumNonNulls => Value::Int32(args.iter().filter(|a| !a.is_null()).count() as i32),
        // PostgreSQL's degrees() / radians(): one division / multiplication by its constant.
        Func::Degrees => {
            let x = float(&args[0])?;
            Value::Float64(finite(x, x / RADIANS_PER_DEGREE)?)
        }
        Func::Radians => {
            let x = float(&args[0])?;
            Value::Float64(finite(x, x * RADIANS_PER_DEGREE)?)
        }
        Func::InitCap => Value::Text(initcap(text(&args[0])?)),
        Func::StartsWith => Value::Bool(text(&args[0])?.starts_with(text(&args[1])?)),
        Func::Ascii => Value::Int32(text(&args[0])?.chars().next().map_or(0, |c| c as i32)),
        Func::Chr => chr(int(&args[0])?)?,
        Func::Md5 => {
            let bytes = match &args[0] {
                Value::Bytea(b) => b.as_slice(),
                other => text(other)?.as_bytes(),
            };
            Value::Text(md5_hex(bytes))
        }
        Func::Translate => {
            let (s, from, to) = (text(&args[0])?, text(&args[1])?, text(&args[2])?);
            let from: Vec<char> = from.chars().collect();
            let to: Vec<char> = to.chars().collect();
            Value::Text(
                s.chars()
                    .filter_map(|c| match from.iter().position(|&x| x == c) {
                        Some(i) => to.get(i).copied(),
                        None => Some(c),
                    })
                    .collect(),
            )
        }
        Func::ToHex => Value::Text(match &args[0] {
            Value::Int32(i) => format!("{:x}", *i as u32),
            other => format!("{:x}", int(other)? as u64),
        }),
        Func::Greatest | Func::Least => {
            let want = if f == Func::Greatest { Ordering::Greater } else { Ordering::Less };
            let mut best = Value::Null;
            for v in args.iter().filter(|v| !v.is_null()) {
                if best.is_null() || types::sort_cmp(v, &best) == want {
                    best = v.clone();
                }
            }
            best
        }
        Func::Sign => match &args[0] {
            Value::Numeric(n) => Value::Numeric(n.sign()),
            v => {
                let x = float(v)?;
                Value::Float64(if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                })
            }
        },
        Func::Sqrt => match &args[0] {
            Value::Numeric(n) => Value::Numeric(n.sqrt()?),
            v => {
                let x = float(v)?;
                if x < 0.0 {
                    return Err(Error::DataException {
                        message: "cannot take square root of a negative number".into(),
                        sqlstate: "2201F",
                    });
                }
                Value::Float64(x.sqrt())
            }
        },
        Func::Cbrt => Value::Float64(cbrt(float(&args[0])?)),
        Func::Exp => match &args[0] {
            Value::Numeric(n) => Value::Numeric(n.exp()?),
            v => Value::Float64(float_exp(float(v)?)?),
        },
        Func::Ln | Func::Log10 => match &args[0] {
            Value::Numeric(n) if f == Func::Ln => Value::Numeric(n.ln()?),
            Value::Numeric(n) => Value::Numeric(Numeric::log(&Numeric::from(10i64), n)?),
            v => Value::Float64(float_log(float(v)?, f == Func::Ln)?),
        },
        Func::Log => match (&args[0], &args[1]) {
            (Value::Numeric(b), Value::Numeric(x)) => Value::Numeric(Numeric::log(b, x)?),
            other => return Err(Error::internal(format!("log{other:?}"))),
        },
        Func::Power => match (&args[0], &args[1]) {
            (Value::Numeric(x), Value::Numeric(y)) => Value::Numeric(x.power(y)?),
            (x, y) => Value::Float64(float_pow(float(x)?, float(y)?)?),
        },
        Func::Pi => Value::Float64(std::f64::consts::PI),
        Func::Random => Value::Float64(random()),
        Func::RegTypeOut => match &args[0] {
            Value::Int64(oid) => {
                let mut name = String::new();
                crate::types::regtype::write(*oid, &mut name);
                Value::Text(name)
            }
            _ => Value::Null,
        },
        Func::ToRegType => match &args[0] {
            Value::Text(s) => crate::types::regtype::to_regtype(s),
            _ => Value::Null,
        },
        Func::GenRandomUuid => {
            let mut u = [0u8; 16];
            getrandom::getrandom(&mut u)
                .map_err(|e| Error::internal(format!("could not generate random values: {e}")))?;
            // RFC 4122 version 4, variant 1.
            u[6] = (u[6] & 0x0F) | 0x40;
            u[8] = (u[8] & 0x3F) | 0x80;
            Value::Uuid(u)
        }
        Func::DebugPanic => panic!("aspen_debug_panic() called"),
        Func::Div => match (&args[0], &args[1]) {
            (Value::Numeric(x), Value::Numeric(y)) => Value::Numeric(x.div_trunc(y)?),
            other => return Err(Error::internal(format!("div{other:?}"))),
        },
        Func::Gcd | Func::Lcm => match (&args[0], &args[1]) {
            (Value::Numeric(x), Value::Numeric(y)) if f == Func::Gcd => Value::Numeric(x.gcd(y)?),
            (Value::Numeric(x), Value::Numeric(y)) => Value::Numeric(x.lcm(y)?),
            (Value::Int32(a), Value::Int32(b)) => {
                let r = int_gcd_lcm(*a as i64, *b as i64, f == Func::Gcd, "integer")?;
                Value::Int32(i32::try_from(r).map_err(|_| Error::out_of_range("integer"))?)
            }
            (a, b) => Value::Int64(int_gcd_lcm(int(a)?, int(b)?, f == Func::Gcd, "bigint")?),
        },
        other => return Err(Error::internal(format!("{other:?} is not a builtin::call function"))),
    })
}

fn repeat(s: &str, n: i64) -> Result<Value> {
    if n <= 0 {
        return Ok(Value::Text(String::new()));
    }
    let total = (s.len() as i64).checked_mul(n).and_then(|t| t.checked_add(VARHDRSZ));
    if total.is_none_or(|t| t > MAX_ALLOC || t > i32::MAX as i64) {
        return Err(too_large());
    }
    Ok(Value::Text(s.repeat(n as usize)))
}

/// `lpad` / `rpad`: the result has exactly `len` characters; a longer string is cut at the
/// right for both.
fn pad(s: &str, len: i64, fill: &str, left: bool) -> Result<Value> {
    let len = len.max(0);
    if len * MAX_CHAR_BYTES + VARHDRSZ > MAX_ALLOC {
        return Err(too_large());
    }
    let have = s.chars().count() as i64;
    if have >= len || fill.is_empty() {
        return Ok(Value::Text(s.chars().take(len as usize).collect()));
    }
    let padding: String = fill.chars().cycle().take((len - have) as usize).collect();
    Ok(Value::Text(if left { padding + s } else { s.to_string() + &padding }))
}

/// `split_part`: fields counted from 1, or from the end when negative; 0 is `22023`.
fn split_part(s: &str, delim: &str, n: i64) -> Result<Value> {
    if n == 0 {
        return Err(Error::InvalidParameterValue {
            message: "field position must not be zero".into(),
        });
    }
    if s.is_empty() {
        return Ok(Value::Text(String::new()));
    }
    if delim.is_empty() {
        let whole = n == 1 || n == -1;
        return Ok(Value::Text(if whole { s.to_string() } else { String::new() }));
    }
    let fields: Vec<&str> = s.split(delim).collect();
    let idx = if n > 0 { n - 1 } else { fields.len() as i64 + n };
    Ok(Value::Text(
        usize::try_from(idx).ok().and_then(|i| fields.get(i)).map_or("", |f| f).to_string(),
    ))
}

/// The one character `mapping` yields, if it yields exactly one.
fn only(mut mapping: impl Iterator<Item = char>) -> Option<char> {
    let first = mapping.next()?;
    mapping.next().is_none().then_some(first)
}

/// A character's simple (one-to-one) upper case, as the C library's `towupper` gives it
/// under PostgreSQL's `C.UTF-8`: a full mapping to several characters (`ß` → `SS`) leaves the
/// character as it is.
fn upper_char(c: char) -> char {
    only(c.to_uppercase()).unwrap_or(c)
}

/// A character's simple lower case (`towlower`): `İ` is `i` (its full mapping adds a combining
/// dot); any other full mapping to several characters leaves the character as it is.
fn lower_char(c: char) -> char {
    match c {
        '\u{130}' => 'i',
        _ => only(c.to_lowercase()).unwrap_or(c),
    }
}

/// `upper(text)`, character by character ([`upper_char`]).
pub(crate) fn upper(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_uppercase();
    }
    s.chars().map(upper_char).collect()
}

/// `lower(text)`, character by character ([`lower_char`]).
pub(crate) fn lower(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    s.chars().map(lower_char).collect()
}

/// `initcap`: the first letter of each alphanumeric run upper case, the rest lower case, with
/// the simple case maps of `upper` and `lower`.
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_alnum = false;
    for c in s.chars() {
        out.push(if prev_alnum { lower_char(c) } else { upper_char(c) });
        prev_alnum = c.is_alphanumeric();
    }
    out
}

/// `chr(n)`: the character with code point `n`.
fn chr(n: i64) -> Result<Value> {
    if n < 0 {
        return Err(Error::InvalidParameterValue {
            message: "character number must be positive".into(),
        });
    }
    if n == 0 {
        return Err(Error::ProgramLimitExceeded { message: "null character not permitted".into() });
    }
    if n > 0x10ffff {
        return Err(Error::ProgramLimitExceeded {
            message: format!("requested character too large for encoding: {n}"),
        });
    }
    match char::from_u32(n as u32) {
        Some(c) => Ok(Value::Text(c.to_string())),
        None => Err(Error::ProgramLimitExceeded {
            message: format!("requested character not valid for encoding: {n}"),
        }),
    }
}

/// `exp` on `double precision`: `22003` on overflow, and on underflow to zero.
fn float_exp(x: f64) -> Result<f64> {
    if x.is_nan() {
        return Ok(x);
    }
    if x.is_infinite() {
        return Ok(if x > 0.0 { x } else { 0.0 });
    }
    let r = x.exp();
    if r.is_infinite() {
        return Err(float_overflow());
    }
    if r == 0.0 {
        return Err(float_underflow());
    }
    Ok(r)
}

/// `ln` / `log10` on `double precision`: `2201E` for zero and negative input.
fn float_log(x: f64, natural: bool) -> Result<f64> {
    if x == 0.0 {
        return Err(Error::DataException {
            message: "cannot take logarithm of zero".into(),
            sqlstate: "2201E",
        });
    }
    if x < 0.0 {
        return Err(Error::DataException {
            message: "cannot take logarithm of a negative number".into(),
            sqlstate: "2201E",
        });
    }
    let r = if natural { x.ln() } else { x.log10() };
    if r.is_infinite() && !x.is_infinite() {
        return Err(float_overflow());
    }
    if r == 0.0 && x != 1.0 {
        return Err(float_underflow());
    }
    Ok(r)
}

/// `power` on `double precision`, with PostgreSQL's (POSIX) special cases.
fn float_pow(x: f64, y: f64) -> Result<f64> {
    if x.is_nan() {
        return Ok(if y.is_nan() || y != 0.0 { f64::NAN } else { 1.0 });
    }
    if y.is_nan() {
        return Ok(if x != 1.0 { f64::NAN } else { 1.0 });
    }
    if x == 0.0 && y < 0.0 {
        return Err(Error::DataException {
            message: "zero raised to a negative power is undefined".into(),
            sqlstate: "2201F",
        });
    }
    if x < 0.0 && y.floor() != y {
        return Err(Error::DataException {
            message: "a negative number raised to a non-integer power yields a complex result"
                .into(),
            sqlstate: "2201F",
        });
    }
    if y.is_infinite() {
        let ax = x.abs();
        return Ok(if ax == 1.0 {
            1.0
        } else if y > 0.0 {
            if ax > 1.0 {
                y
            } else {
                0.0
            }
        } else if ax > 1.0 {
            0.0
        } else {
            -y
        });
    }
    if x.is_infinite() {
        if y == 0.0 {
            return Ok(1.0);
        }
        if x > 0.0 {
            return Ok(if y > 0.0 { x } else { 0.0 });
        }
        let odd = y == y.floor() && (y * 0.5) != (y * 0.5).floor();
        return Ok(if y > 0.0 {
            if odd {
                x
            } else {
                -x
            }
        } else if odd {
            -0.0
        } else {
            0.0
        });
    }
    let r = x.powf(y);
    if r.is_infinite() {
        return Err(float_overflow());
    }
    if r == 0.0 && x != 0.0 {
        return Err(float_underflow());
    }
    Ok(r)
}

/// `cbrt` exactly as glibc computes it (`sysdeps/ieee754/dbl-64/s_cbrt.c`), which PostgreSQL
/// calls: its last bit differs from a correctly rounded cube root (`cbrt(27)` is
/// 3.0000000000000004), and Rust's `f64::cbrt` is correctly rounded.
// glibc's constants are kept digit for digit, so that the port is checkable against it.
#[allow(clippy::excessive_precision)]
fn cbrt(x: f64) -> f64 {
    const CBRT2: f64 = 1.259_921_049_894_873_164_8;
    const SQR_CBRT2: f64 = 1.587_401_051_968_199_474_8;
    const FACTOR: [f64; 5] = [1.0 / SQR_CBRT2, 1.0 / CBRT2, 1.0, CBRT2, SQR_CBRT2];
    if x == 0.0 || !x.is_finite() {
        return x + x;
    }
    let (xm, xe) = frexp(x.abs());
    let u = 0.354_895_765_043_919_86
        + ((1.508_191_937_815_848_96
            + ((-2.114_994_941_673_712_87
                + ((2.446_931_225_635_344_3
                    + ((-1.834_692_774_836_130_86
                        + (0.784_932_344_976_639_262 - 0.145_263_899_385_486_377 * xm) * xm)
                        * xm))
                    * xm))
                * xm))
            * xm);
    let t2 = u * u * u;
    let ym = u * (t2 + 2.0 * xm) / (2.0 * t2 + xm) * FACTOR[(2 + xe % 3) as usize];
    let r = ym * f64::from_bits(((xe / 3 + 1023) as u64) << 52);
    if x < 0.0 {
        -r
    } else {
        r
    }
}

/// `frexp` for a finite positive `x`: `x = m × 2^e` with `0.5 <= m < 1`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * f64::from_bits((1023u64 + 54) << 52));
        return (m, e - 54);
    }
    (f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52)), exp - 1022)
}

/// `gcd` / `lcm` of two integers of a type whose name is `type_name`; the result must fit
/// the type (`gcd(-2147483648, 0)` does not).
fn int_gcd_lcm(a: i64, b: i64, gcd: bool, type_name: &str) -> Result<i64> {
    let range = || Error::out_of_range(type_name);
    let (x, y) = (a.unsigned_abs() as u128, b.unsigned_abs() as u128);
    let g = {
        let (mut p, mut q) = (x, y);
        while q != 0 {
            (p, q) = (q, p % q);
        }
        p
    };
    let max = if type_name == "integer" { i32::MAX as u128 } else { i64::MAX as u128 };
    if g > max {
        return Err(range());
    }
    if gcd {
        return Ok(g as i64);
    }
    if x == 0 || y == 0 {
        return Ok(0);
    }
    let l = x / g * y;
    if l > max {
        return Err(range());
    }
    Ok(l as i64)
}

thread_local! {
    /// xorshift64* state for `random()`, seeded per thread from the process's random keys.
    static RNG: Cell<u64> = Cell::new(RandomState::new().hash_one(0x5eed_u64) | 1);
}

/// A uniformly distributed `f64` in `[0, 1)`.
fn random() -> f64 {
    RNG.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// MD5 (RFC 1321) of `data` as 32 lower-case hex digits.
fn md5_hex(data: &[u8]) -> String {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> =
        (0..64).map(|i| ((i as f64 + 1.0).sin().abs() * 4294967296.0) as u32).collect();
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_le_bytes());
    let mut h: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    for chunk in msg.chunks(64) {
        let m: Vec<u32> =
            chunk.chunks(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        let [mut a, mut b, mut c, mut d] = h;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let t = d;
            d = c;
            c = b;
            b = b.wrapping_add(
                a.wrapping_add(f).wrapping_add(k[i]).wrapping_add(m[g]).rotate_left(S[i]),
            );
            a = t;
        }
        h = [
            h[0].wrapping_add(a),
            h[1].wrapping_add(b),
            h[2].wrapping_add(c),
            h[3].wrapping_add(d),
        ];
    }
    h.iter().flat_map(|w| w.to_le_bytes()).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_matches_rfc_1321_vectors() {
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        let long =
            b"12345678901234567890123456789012345678901234567890123456789012345678901234567890";
        assert_eq!(md5_hex(long), "57edf4a22be3c955ac49da2e2107b67a");
    }

    #[test]
    fn random_stays_in_unit_interval() {
        for _ in 0..10_000 {
            let r = random();
            assert!((0.0..1.0).contains(&r), "{r}");
        }
    }
}

/// EXTRACT, date_part and date_trunc, as PostgreSQL 15 computes them for `date` and
/// `timestamp without time zone` (proleptic Gregorian, ISO weeks).
mod datetime {
    use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

    use crate::error::{Error, Result};
    use crate::types::{datetime_unit as unit, Interval, Numeric, Value};

    fn unknown_unit(name: &str, date: bool) -> Error {
        let ty = if date { "date" } else { "timestamp without time zone" };
        Error::InvalidParameterValue {
            message: format!("unit \"{}\" not recognized for type {ty}", name.to_ascii_lowercase()),
        }
    }

    fn numeric(text: String) -> Result<Numeric> {
        Numeric::parse(&text)
    }

    /// `seconds` and `micros` (0 ≤ micros < 10⁶, the sign in `seconds`, or in the text when
    /// `seconds` is 0 and the value negative) as a numeric with six decimals.
    fn with_micros(total_micros: i64) -> Result<Numeric> {
        let sign = if total_micros < 0 { "-" } else { "" };
        let abs = total_micros.unsigned_abs();
        numeric(format!("{sign}{}.{:06}", abs / 1_000_000, abs % 1_000_000))
    }

    /// EXTRACT (numeric) or date_part (`float`: double precision) of `field` from a date or
    /// timestamp.
    pub(super) fn extract(field: &str, v: &Value, float: bool) -> Result<Value> {
        if let Value::Interval(i) = v {
            return extract_interval(field, i, float);
        }
        if let Value::Time(t) = v {
            return extract_time(field, *t, float);
        }
        let (t, date) = match v {
            Value::Timestamp(t) => (*t, false),
            Value::Date(d) => (d.and_hms_opt(0, 0, 0).expect("midnight exists"), true),
            other => return Err(Error::internal(format!("extract from {other:?}"))),
        };
        // date_part takes a date as the timestamp at its midnight; EXTRACT knows it is a date.
        let date = date && !float;
        let name = unit(field).ok_or_else(|| unknown_unit(field, date))?;
        if date && matches!(name, "microseconds" | "milliseconds" | "second" | "minute" | "hour") {
            return Err(Error::UnsupportedMessage {
                message: format!(
                    "unit \"{}\" not supported for type date",
                    field.to_ascii_lowercase()
                ),
            });
        }
        let micros_of_minute = i64::from(t.second()) * 1_000_000 + i64::from(t.nanosecond() / 1000);
        let year = i64::from(t.year());
        let whole = |n: i64| numeric(n.to_string());
        let value = match name {
            "microseconds" => whole(micros_of_minute)?,
            "milliseconds" => {
                numeric(format!("{}.{:03}", micros_of_minute / 1000, micros_of_minute % 1000))?
            }
            "second" => with_micros(micros_of_minute)?,
            "minute" => whole(i64::from(t.minute()))?,
            "hour" => whole(i64::from(t.hour()))?,
            "day" => whole(i64::from(t.day()))?,
            "week" => whole(i64::from(t.iso_week().week()))?,
            "month" => whole(i64::from(t.month()))?,
            "quarter" => whole((i64::from(t.month()) - 1) / 3 + 1)?,
            "year" => whole(year)?,
            "decade" => whole(year.div_euclid(10))?,
            "century" => {
                whole(if year > 0 { (year + 99) / 100 } else { -((99 - (year - 1)) / 100) })?
            }
            "millennium" => {
                whole(if year > 0 { (year + 999) / 1000 } else { -((999 - (year - 1)) / 1000) })?
            }
            "dow" => whole(i64::from(t.weekday().num_days_from_sunday()))?,
            "isodow" => whole(i64::from(t.weekday().number_from_monday()))?,
            "doy" => whole(i64::from(t.ordinal()))?,
            "isoyear" => whole(i64::from(t.iso_week().year()))?,
            "epoch" => {
                let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .expect("the epoch exists");
                let micros = (t - epoch).num_microseconds().ok_or_else(|| {
                    Error::NumericOutOfRange { message: "timestamp out of range".into() }
                })?;
                if date {
                    whole(micros / 1_000_000)?
                } else {
                    with_micros(micros)?
                }
            }
            _ => unreachable!("every unit is handled"),
        };
        Ok(if float {
            Value::Float64(value.to_string().parse().expect("a numeric's text is a float"))
        } else {
            Value::Numeric(value)
        })
    }

    /// EXTRACT / date_part of `field` from a time of day (PostgreSQL 15's `time_part`): its
    /// hour, minute, second (with microseconds), milliseconds, microseconds or epoch.
    fn extract_time(field: &str, t: i64, float: bool) -> Result<Value> {
        let ty = "time without time zone";
        let lower = field.to_ascii_lowercase();
        let name = unit(field).ok_or_else(|| Error::InvalidParameterValue {
            message: format!("unit \"{lower}\" not recognized for type {ty}"),
        })?;
        let whole = |n: i64| numeric(n.to_string());
        let micros_of_minute = t % 60_000_000;
        let value = match name {
            "microseconds" => whole(micros_of_minute)?,
            "milliseconds" => {
                numeric(format!("{}.{:03}", micros_of_minute / 1000, micros_of_minute % 1000))?
            }
            "second" => with_micros(micros_of_minute)?,
            "minute" => whole(t / 60_000_000 % 60)?,
            "hour" => whole(t / 3_600_000_000)?,
            "epoch" => with_micros(t)?,
            _ => {
                return Err(Error::UnsupportedMessage {
                    message: format!("unit \"{lower}\" not supported for type {ty}"),
                })
            }
        };
        Ok(if float {
            Value::Float64(value.to_string().parse().expect("a numeric's text is a float"))
        } else {
            Value::Numeric(value)
        })
    }

    /// EXTRACT / date_part of `field` from an interval (PostgreSQL 15's `interval_part`): the
    /// fields of its months (years and months), days and time; the epoch counts a year as
    /// 365.25 days and a month as 30.
    fn extract_interval(field: &str, i: &Interval, float: bool) -> Result<Value> {
        let name = unit(field).ok_or_else(|| Error::InvalidParameterValue {
            message: format!(
                "unit \"{}\" not recognized for type interval",
                field.to_ascii_lowercase()
            ),
        })?;
        let whole = |n: i64| numeric(n.to_string());
        let months = i64::from(i.months);
        let year = months / 12;
        let micros_of_minute = i.micros % 60_000_000;
        let value = match name {
            "microseconds" => whole(micros_of_minute)?,
            "milliseconds" => {
                let sign = if micros_of_minute < 0 { "-" } else { "" };
                let abs = micros_of_minute.unsigned_abs();
                numeric(format!("{sign}{}.{:03}", abs / 1000, abs % 1000))?
            }
            "second" => with_micros(micros_of_minute)?,
            "minute" => whole(i.micros / 60_000_000 % 60)?,
            "hour" => whole(i.micros / 3_600_000_000)?,
            "day" => whole(i64::from(i.days))?,
            "month" => whole(months % 12)?,
            "quarter" => whole((months % 12) / 3 + 1)?,
            "year" => whole(year)?,
            "decade" => whole(year / 10)?,
            "century" => whole(year / 100)?,
            "millennium" => whole(year / 1000)?,
            "epoch" => {
                // In microseconds, exactly: 365.25 days is 31,557,600 s.
                let secs_of_months = (months / 12) * 31_557_600 + (months % 12) * 30 * 86_400;
                let total = i128::from(i.micros)
                    + i128::from(secs_of_months + i64::from(i.days) * 86_400) * 1_000_000;
                let sign = if total < 0 { "-" } else { "" };
                let abs = total.unsigned_abs();
                numeric(format!("{sign}{}.{:06}", abs / 1_000_000, abs % 1_000_000))?
            }
            _ => {
                return Err(Error::UnsupportedMessage {
                    message: format!(
                        "unit \"{}\" not supported for type interval",
                        field.to_ascii_lowercase()
                    ),
                })
            }
        };
        Ok(if float {
            Value::Float64(value.to_string().parse().expect("a numeric's text is a float"))
        } else {
            Value::Numeric(value)
        })
    }

    /// date_trunc: `v` with every field below `field` at its start.
    pub(super) fn trunc(field: &str, v: &Value) -> Result<Value> {
        if let Value::Interval(i) = v {
            return trunc_interval(field, i).map(Value::Interval);
        }
        let Value::Timestamp(t) = v else {
            return Err(Error::internal(format!("date_trunc of {v:?}")));
        };
        let name = unit(field).ok_or_else(|| unknown_unit(field, false))?;
        let day = |d: NaiveDate| d.and_hms_opt(0, 0, 0).expect("midnight exists");
        let ymd = |y: i32, m: u32| NaiveDate::from_ymd_opt(y, m, 1).map(day);
        let floor = |y: i32, n: i32| y - y.rem_euclid(n);
        let out: Option<NaiveDateTime> = match name {
            "microseconds" => Some(*t),
            "milliseconds" => t.with_nanosecond(t.nanosecond() / 1_000_000 * 1_000_000),
            "second" => t.with_nanosecond(0),
            "minute" => t.with_nanosecond(0).and_then(|t| t.with_second(0)),
            "hour" => {
                t.with_nanosecond(0).and_then(|t| t.with_second(0)).and_then(|t| t.with_minute(0))
            }
            "day" => Some(day(t.date())),
            "week" => {
                let back = i64::from(t.weekday().num_days_from_monday());
                Some(day(t.date() - chrono::Duration::days(back)))
            }
            "month" => ymd(t.year(), t.month()),
            "quarter" => ymd(t.year(), (t.month() - 1) / 3 * 3 + 1),
            "year" => ymd(t.year(), 1),
            "decade" => ymd(floor(t.year(), 10), 1),
            "century" => ymd(floor(t.year() - 1, 100) + 1, 1),
            "millennium" => ymd(floor(t.year() - 1, 1000) + 1, 1),
            // Units of EXTRACT only (dow, epoch, …).
            _ => return Err(unknown_unit(field, false)),
        };
        out.map(Value::Timestamp).ok_or_else(|| Error::internal("date_trunc out of range"))
    }

    /// date_trunc of an interval (PostgreSQL's `interval_trunc`): its fields as years,
    /// months, days, hours, minutes, seconds and microseconds (each part keeping the sign of
    /// its stored component), with every field below `field` zeroed.
    fn trunc_interval(field: &str, i: &crate::types::Interval) -> Result<crate::types::Interval> {
        let name = unit(field).ok_or_else(|| unknown_unit(field, false))?;
        let (mut years, mut months) = (i.months / 12, i.months % 12);
        let mut days = i.days;
        const HOUR: i64 = 3_600_000_000;
        const MINUTE: i64 = 60_000_000;
        const SECOND: i64 = 1_000_000;
        let (mut hours, mut minutes) = (i.micros / HOUR, i.micros % HOUR / MINUTE);
        let mut micros = i.micros % MINUTE;
        let keep = |n: i32, unit: i32| n / unit * unit;
        match name {
            "microseconds" => {}
            "milliseconds" => micros = micros / 1000 * 1000,
            "second" => micros = micros / SECOND * SECOND,
            "minute" => micros = 0,
            "hour" => (minutes, micros) = (0, 0),
            "day" => (hours, minutes, micros) = (0, 0, 0),
            "month" | "quarter" | "year" | "decade" | "century" | "millennium" => {
                (days, hours, minutes, micros) = (0, 0, 0, 0);
                match name {
                    "quarter" => months = keep(months, 3),
                    "year" => months = 0,
                    "decade" => (years, months) = (keep(years, 10), 0),
                    "century" => (years, months) = (keep(years, 100), 0),
                    "millennium" => (years, months) = (keep(years, 1000), 0),
                    _ => {}
                }
            }
            "week" => {
                // PostgreSQL adds the detail "Months usually have fractional weeks."
                return Err(Error::unsupported_msg(format!(
                    "unit \"{field}\" not supported for type interval"
                )));
            }
            _ => return Err(unknown_unit(field, false)),
        }
        Ok(crate::types::Interval {
            months: years * 12 + months,
            days,
            micros: hours * HOUR + minutes * MINUTE + micros,
        })
    }
}

/// POSIX regular expressions (`~`, `~*`, regexp_replace), with the `regex` crate: PostgreSQL's
/// advanced expressions and Rust's agree on the common syntax (classes, quantifiers,
/// alternation, anchors, `[[:alpha:]]`); what the crate lacks (back-references, lookaround) is
/// an invalid expression (`2201B`), never a different match.
mod regex {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use crate::error::{Error, Result};
    use crate::types::Value;

    /// Compiled patterns by (pattern, case-insensitive), per thread; cleared when it grows.
    const CACHE_SIZE: usize = 64;

    thread_local! {
        static CACHE: RefCell<HashMap<(String, bool), ::regex::Regex>> = RefCell::new(HashMap::new());
    }

    pub(super) fn compiled(pattern: &str, ci: bool) -> Result<::regex::Regex> {
        CACHE.with(|cache| {
            let key = (pattern.to_string(), ci);
            if let Some(re) = cache.borrow().get(&key) {
                return Ok(re.clone());
            }
            let re =
                ::regex::RegexBuilder::new(pattern).case_insensitive(ci).build().map_err(|e| {
                    Error::DataException {
                        message: format!(
                            "invalid regular expression: {}",
                            first_line(&e.to_string())
                        ),
                        sqlstate: "2201B",
                    }
                })?;
            let mut cache = cache.borrow_mut();
            if cache.len() >= CACHE_SIZE {
                cache.clear();
            }
            cache.insert(key, re.clone());
            Ok(re)
        })
    }

    fn first_line(s: &str) -> &str {
        s.lines()
            .rev()
            .find(|l| l.starts_with("error:"))
            .map_or(s, |l| l.trim_start_matches("error: "))
    }

    /// The flags Aspen knows: (`g` global, `i` ignore case; `c` respect it).
    fn flags(flags: &str) -> Result<(bool, bool)> {
        let mut global = false;
        let mut ci = false;
        for f in flags.chars() {
            match f {
                'g' => global = true,
                'i' => ci = true,
                'c' => ci = false,
                other => {
                    return Err(Error::InvalidParameterValue {
                        message: format!("invalid regular expression option: \"{other}\""),
                    })
                }
            }
        }
        Ok((global, ci))
    }

    /// The compiled pattern of `function`, which takes no `g` flag (22023).
    fn without_global(pattern: &str, flags: &str, function: &str) -> Result<::regex::Regex> {
        if flags.contains('g') {
            return Err(Error::InvalidParameterValue {
                message: format!("{function}() does not support the \"global\" option"),
            });
        }
        compiled(pattern, self::flags(flags)?.1)
    }

    /// regexp_match: the first match's groups (the whole match when the pattern has none), a
    /// group that took no part NULL; NULL when nothing matches.
    pub(super) fn first_match(s: &str, pattern: &str, flags: &str) -> Result<Value> {
        let re = without_global(pattern, flags, "regexp_match")?;
        let Some(caps) = re.captures(s) else { return Ok(Value::Null) };
        let text =
            |m: Option<::regex::Match>| m.map_or(Value::Null, |m| Value::Text(m.as_str().into()));
        let items: Vec<Value> = if caps.len() == 1 {
            vec![text(caps.get(0))]
        } else {
            (1..caps.len()).map(|i| text(caps.get(i))).collect()
        };
        Ok(Value::Array(std::sync::Arc::new(items)))
    }

    /// regexp_split_to_array: the pieces between matches; an empty match at the start or the
    /// end of the string, or right after another match, splits nothing (PostgreSQL's rule, so
    /// that an empty pattern splits into characters).
    pub(super) fn split(s: &str, pattern: &str, flags: &str) -> Result<Value> {
        let re = without_global(pattern, flags, "regexp_split_to_array")?;
        let mut pieces = Vec::new();
        let (mut start, mut last_end) = (0, None);
        for m in re.find_iter(s) {
            if m.start() == m.end()
                && (m.start() == 0 || m.start() == s.len() || Some(m.start()) == last_end)
            {
                continue;
            }
            pieces.push(Value::Text(s[start..m.start()].into()));
            start = m.end();
            last_end = Some(m.end());
        }
        pieces.push(Value::Text(s[start..].into()));
        Ok(Value::Array(std::sync::Arc::new(pieces)))
    }

    /// regexp_replace: the first match (every match with flag `g`; `i` ignores case) replaced;
    /// in the replacement `\1`…`\9` are groups and `\&` the whole match.
    pub(super) fn replace(
        source: &str,
        pattern: &str,
        replacement: &str,
        flags: &str,
    ) -> Result<Value> {
        let (global, ci) = self::flags(flags)?;
        let re = compiled(pattern, ci)?;
        let mut rust = String::with_capacity(replacement.len());
        let mut chars = replacement.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '$' => rust.push_str("$$"),
                '\\' => match chars.peek().copied() {
                    Some(d @ '1'..='9') => {
                        chars.next();
                        rust.push_str(&format!("${{{d}}}"));
                    }
                    Some('&') => {
                        chars.next();
                        rust.push_str("${0}");
                    }
                    Some('\\') => {
                        chars.next();
                        rust.push('\\');
                    }
                    _ => rust.push('\\'),
                },
                other => rust.push(other),
            }
        }
        let out = if global {
            re.replace_all(source, rust.as_str())
        } else {
            re.replace(source, rust.as_str())
        };
        Ok(Value::Text(out.into_owned()))
    }
}

/// `format_type(oid, typmod)` as PostgreSQL 15 prints it (`format_type_extended`): the SQL
/// name of the types Aspen knows and a few it does not, the modifier where one was given
/// (`typmod` `None` is a NULL typmod: `bpchar` is then `character`, with -1 it is `bpchar`),
/// `???` for an unknown OID.
pub(crate) fn format_type(oid: i64, typmod: Option<i32>) -> String {
    let name = match oid {
        16 => "boolean",
        17 => "bytea",
        18 => "\"char\"",
        19 => "name",
        20 => "bigint",
        21 => "smallint",
        23 => "integer",
        25 => "text",
        26 => "oid",
        114 => "json",
        700 => "real",
        701 => "double precision",
        1042 => "character",
        1043 => "character varying",
        1082 => "date",
        1083 => "time without time zone",
        1114 => "timestamp without time zone",
        1184 => "timestamp with time zone",
        1186 => "interval",
        1266 => "time with time zone",
        1700 => "numeric",
        2206 => "regtype",
        2278 => "void",
        2950 => "uuid",
        3802 => "jsonb",
        // An array type: its element's name (with the modifier), then `[]`.
        _ => {
            return match u32::try_from(oid).ok().and_then(catalog::DataType::from_oid) {
                Some(catalog::DataType::Array(e)) if oid != 1014 => {
                    format!("{}[]", format_type(e.data_type().oid().into(), typmod))
                }
                _ if oid == 1014 => format!("{}[]", format_type(1042, typmod)),
                _ => "???".into(),
            }
        }
    };
    let Some(m) = typmod.filter(|m| *m >= 0) else {
        return if oid == 1042 && typmod.is_some() { "bpchar".into() } else { name.into() };
    };
    match oid {
        1042 | 1043 => format!("{name}({})", m - 4),
        1700 => format!("numeric({},{})", ((m - 4) >> 16) & 0xFFFF, (m - 4) & 0xFFFF),
        1083 | 1114 | 1184 | 1266 => {
            let (base, zone) = name.split_once(' ').expect("time types have two words");
            format!("{base}({m}) {zone}")
        }
        // The full field range (0x7FFF) with a precision (Aspen writes no other).
        1186 if m >> 16 == 0x7FFF && m & 0xFFFF != 0xFFFF => format!("interval({})", m & 0xFFFF),
        1186 => name.into(),
        _ => format!("{name}({m})"),
    }
}

/// `pg_size_pretty(bigint)` as PostgreSQL 15 computes it: bytes below 10 kB, then each unit
/// (kB, MB, GB, TB, PB) below 20 × 1024 − 1 of it, rounded half away from zero.
pub(crate) fn size_pretty(size: i64) -> String {
    // (name, limit, rounded, bits of the unit)
    const UNITS: [(&str, i64, bool, u32); 6] = [
        ("bytes", 10 * 1024, false, 0),
        ("kB", 20 * 1024 - 1, true, 10),
        ("MB", 20 * 1024 - 1, true, 20),
        ("GB", 20 * 1024 - 1, true, 30),
        ("TB", 20 * 1024 - 1, true, 40),
        ("PB", 20 * 1024 - 1, true, 50),
    ];
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    let mut size = size;
    for (i, (name, limit, round, bits)) in UNITS.iter().enumerate() {
        let last = i + 1 == UNITS.len();
        if last || size.unsigned_abs() < *limit as u64 {
            let size = if *round { half_rounded(size) } else { size };
            return format!("{size} {name}");
        }
        let (_, _, next_round, next_bits) = UNITS[i + 1];
        let shift = next_bits - bits - u32::from(next_round) + u32::from(*round);
        size /= 1i64 << shift;
    }
    unreachable!("the last unit always answers")
}
