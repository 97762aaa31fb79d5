//! PostgreSQL binary wire formats (`*recv` / `*send`), all big-endian:
//!
//! | type | bytes |
//! |---|---|
//! | bool | 1 (0 = false, anything else true) |
//! | int2 / int4 / int8 | 2 / 4 / 8, two's complement |
//! | float4 / float8 | 4 / 8, IEEE 754 |
//! | numeric | `ndigits i16, weight i16, sign u16, dscale u16`, then `ndigits` base-10000 digits (i16) |
//! | text / varchar / bpchar | UTF-8 bytes, no terminator |
//! | date | i32 days since 2000-01-01 |
//! | timestamp | i64 microseconds since 2000-01-01 00:00:00 |
//! | bytea | the raw bytes |
//!
//! A numeric's value is `Σ digit[i] × 10000^(weight - i)`; `sign` is `0x0000` positive,
//! `0x4000` negative, `0xC000` NaN, `0xD000` Infinity, `0xF000` -Infinity (the special values
//! have no digits and weight and dscale 0); `dscale` is the display scale. Leading and trailing
//! zero digits are not sent; zero is `ndigits = 0, weight = 0`.

use super::cast::{cast_zoned, CastKind};
use super::datetime::{self, Zone};
use super::interval::Interval;
use super::numeric::{Mag, Numeric, Parts};
use super::text::fit_string;
use super::value::Value;
use crate::error::{Error, Result};
use catalog::DataType;

/// `22P03` with PostgreSQL's message for a value of the wrong size.
fn bad_format() -> Error {
    Error::InvalidBinaryRepresentation { message: "incorrect binary data format".into() }
}

fn fixed<const N: usize>(b: &[u8]) -> Result<[u8; N]> {
    b.try_into().map_err(|_| bad_format())
}

/// Decodes a binary-format value of type `ty` (a Bind parameter). The type modifier is applied
/// as in PostgreSQL's `*recv`: `numeric(p,s)` rounds and checks, `varchar(n)`/`char(n)` check
/// the length (`22001`) and pad.
pub fn decode_binary(b: &[u8], ty: &DataType) -> Result<Value> {
    Ok(match ty {
        // `void_recv`: no bytes.
        DataType::Void if b.is_empty() => Value::Text(String::new()),
        DataType::Void => return Err(bad_format()),
        // `regtyperecv`: the OID, an unsigned 4-byte integer.
        DataType::RegType => Value::Int64(u32::from_be_bytes(fixed(b)?).into()),
        DataType::Bool => Value::Bool(fixed::<1>(b)?[0] != 0),
        DataType::Int16 => Value::Int16(i16::from_be_bytes(fixed(b)?)),
        DataType::Int32 => Value::Int32(i32::from_be_bytes(fixed(b)?)),
        DataType::Int64 => Value::Int64(i64::from_be_bytes(fixed(b)?)),
        DataType::Float32 => Value::Float32(f32::from_be_bytes(fixed(b)?)),
        DataType::Float64 => Value::Float64(f64::from_be_bytes(fixed(b)?)),
        DataType::Numeric(typmod) => {
            let d = decode_numeric(b)?;
            Value::Numeric(match typmod {
                Some((p, s)) => d.apply_typmod(*p as u32, *s as u32)?,
                None => d,
            })
        }
        DataType::Text | DataType::Varchar(_) | DataType::Char(_) => {
            let s = std::str::from_utf8(b).map_err(|e| invalid_utf8(b, e))?;
            Value::Text(fit_string(s.to_owned(), ty, false)?)
        }
        DataType::Name => {
            let s = std::str::from_utf8(b).map_err(|e| invalid_utf8(b, e))?;
            Value::Text(super::text::name_in(s))
        }
        DataType::Date => {
            let days = i32::from_be_bytes(fixed(b)?);
            Value::Date(datetime::pg_days_to_date(days).ok_or_else(|| {
                Error::DatetimeFieldOverflow { message: "date out of range".into() }
            })?)
        }
        DataType::Timestamp => {
            let us = i64::from_be_bytes(fixed(b)?);
            Value::Timestamp(datetime::pg_micros_to_timestamp(us).ok_or_else(|| {
                Error::DatetimeFieldOverflow { message: "timestamp out of range".into() }
            })?)
        }
        DataType::Bytea => Value::Bytea(b.to_vec()),
        DataType::TimestampTz => {
            let us = i64::from_be_bytes(fixed(b)?);
            Value::TimestampTz(datetime::pg_micros_to_timestamp(us).ok_or_else(|| {
                Error::DatetimeFieldOverflow { message: "timestamp out of range".into() }
            })?)
        }
        DataType::Interval => Value::Interval(Interval::from_be_bytes(fixed(b)?)),
        // `uuid_recv` reads 16 bytes: fewer is a short message, more a bad format.
        DataType::Uuid if b.len() < 16 => {
            return Err(Error::ProtocolViolation {
                message: "insufficient data left in message".into(),
            })
        }
        DataType::Uuid => Value::Uuid(fixed(b)?),
        DataType::Time => {
            let us = i64::from_be_bytes(fixed(b)?);
            if !(0..=datetime::USECS_PER_DAY).contains(&us) {
                return Err(Error::DatetimeFieldOverflow { message: "time out of range".into() });
            }
            Value::Time(us)
        }
        DataType::Array(e) => super::array::decode_array_binary(b, &e.data_type())?,
        // `json_recv`: the text.
        DataType::Json => {
            let s = std::str::from_utf8(b).map_err(|_| Error::CharacterNotInRepertoire {
                message: "invalid byte sequence for encoding \"UTF8\"".into(),
            })?;
            super::json::check(s)?;
            Value::Json(s.into())
        }
        // `jsonb_recv`: a version byte (1), then the text.
        DataType::Jsonb => match b.split_first() {
            Some((1, text)) => {
                let s = std::str::from_utf8(text).map_err(|_| Error::CharacterNotInRepertoire {
                    message: "invalid byte sequence for encoding \"UTF8\"".into(),
                })?;
                Value::Jsonb(std::sync::Arc::new(super::Jsonb::parse(s)?))
            }
            Some((v, _)) => {
                return Err(Error::InvalidBinaryRepresentation {
                    message: format!("unsupported jsonb version number {v}"),
                })
            }
            None => {
                return Err(Error::ProtocolViolation {
                    message: "insufficient data left in message".into(),
                })
            }
        },
    })
}

/// Decodes a binary value sent as type `sent` into a value of type `target`, applying an
/// assignment cast (e.g. JDBC `setLong` sends int8 for an `integer` column: `22003` if it does
/// not fit). Equivalent to `decode_binary` followed by `cast(.., CastKind::Assignment)`.
/// `zone` is the session's, for a `timestamp` sent for a `timestamptz` or the other way round.
pub fn decode_binary_as(b: &[u8], sent: &DataType, target: &DataType, zone: Zone) -> Result<Value> {
    let v = decode_binary(b, sent)?;
    if sent == target {
        return Ok(v);
    }
    cast_zoned(v, sent, target, CastKind::Assignment, zone)
}

fn invalid_utf8(b: &[u8], e: std::str::Utf8Error) -> Error {
    let at = e.valid_up_to();
    let len = e.error_len().unwrap_or(b.len() - at).clamp(1, 4);
    let hex: Vec<String> =
        b[at..(at + len).min(b.len())].iter().map(|x| format!("0x{x:02x}")).collect();
    Error::CharacterNotInRepertoire {
        message: format!("invalid byte sequence for encoding \"UTF8\": {}", hex.join(" ")),
    }
}

/// Decodes PostgreSQL's binary numeric. Digits hidden by `dscale` are truncated, as
/// `numeric_recv` does; values beyond numeric's limits fail with `22003`.
fn decode_numeric(b: &[u8]) -> Result<Numeric> {
    let invalid = |what: &str| Error::InvalidBinaryRepresentation {
        message: format!("invalid {what} in external \"numeric\" value"),
    };
    if b.len() < 8 {
        return Err(bad_format());
    }
    let ndigits = i16::from_be_bytes([b[0], b[1]]);
    let weight = i16::from_be_bytes([b[2], b[3]]) as i64;
    let sign = u16::from_be_bytes([b[4], b[5]]);
    let dscale = u16::from_be_bytes([b[6], b[7]]);
    if ndigits < 0 || b.len() != 8 + 2 * ndigits as usize {
        return Err(bad_format());
    }
    let negative = match sign {
        0x0000 => false,
        0x4000 => true,
        0xC000 | 0xD000 | 0xF000 => false,
        _ => return Err(invalid("sign")),
    };
    if dscale & 0x3FFF != dscale {
        return Err(invalid("scale"));
    }
    let ndigits = ndigits as usize;
    let mut decimal_digits: Vec<u8> = Vec::with_capacity(ndigits * 4);
    for i in 0..ndigits {
        let d = u16::from_be_bytes([b[8 + 2 * i], b[9 + 2 * i]]);
        if d >= 10000 {
            return Err(invalid("digit"));
        }
        decimal_digits.extend_from_slice(&[
            (d / 1000) as u8,
            (d / 100 % 10) as u8,
            (d / 10 % 10) as u8,
            (d % 10) as u8,
        ]);
    }
    match sign {
        0xC000 => return Ok(Numeric::NAN),
        0xD000 => return Ok(Numeric::INFINITY),
        0xF000 => return Ok(Numeric::NEG_INFINITY),
        _ => {}
    }
    // The digits × 10^exp; keep at most `dscale` fractional digits (truncating), then show
    // exactly `dscale`.
    let exp = 4 * (weight + 1 - ndigits as i64);
    let dscale = dscale as i64;
    let first = decimal_digits.iter().position(|&d| d != 0).unwrap_or(decimal_digits.len());
    let digits = &decimal_digits[first..];
    if digits.is_empty() {
        return Numeric::from_mag(false, Mag::zero(), dscale as u32);
    }
    if digits.len() as i64 + exp > super::numeric::MAX_INT_DIGITS as i64 {
        return Err(super::numeric::overflow());
    }
    let mut mag = Mag::from_digits(digits);
    if exp >= 0 {
        mag = mag.mul_pow10((exp + dscale) as u64);
    } else if -exp > dscale {
        mag = mag.div_pow10((-exp - dscale) as u64);
    } else {
        mag = mag.mul_pow10((dscale + exp) as u64);
    }
    let negative = negative && !mag.is_zero();
    Numeric::from_mag(negative, mag, dscale as u32)
}

/// Appends the binary form of `v` as type `ty` (a DataRow column). Integers and floats are
/// written at the width of `ty`; NULL appends nothing (the caller writes length -1).
pub fn encode_binary(v: &Value, ty: &DataType, out: &mut Vec<u8>) {
    match (v, ty) {
        (Value::Null, _) => {}
        (Value::Bool(b), _) => out.push(*b as u8),
        (Value::Int16(_) | Value::Int32(_) | Value::Int64(_), _) => {
            let i = match v {
                Value::Int16(i) => *i as i64,
                Value::Int32(i) => *i as i64,
                Value::Int64(i) => *i,
                _ => unreachable!("matched an integer"),
            };
            match ty {
                DataType::Int16 => out.extend_from_slice(&(i as i16).to_be_bytes()),
                DataType::Int32 => out.extend_from_slice(&(i as i32).to_be_bytes()),
                DataType::RegType => out.extend_from_slice(&(i as u32).to_be_bytes()),
                _ => out.extend_from_slice(&i.to_be_bytes()),
            }
        }
        (Value::Float32(f), DataType::Float64) => out.extend_from_slice(&(*f as f64).to_be_bytes()),
        (Value::Float32(f), _) => out.extend_from_slice(&f.to_be_bytes()),
        (Value::Float64(f), DataType::Float32) => out.extend_from_slice(&(*f as f32).to_be_bytes()),
        (Value::Float64(f), _) => out.extend_from_slice(&f.to_be_bytes()),
        (Value::Numeric(d), _) => encode_numeric(d, out),
        (Value::Text(s), _) => out.extend_from_slice(s.as_bytes()),
        (Value::Date(d), _) => out.extend_from_slice(&datetime::date_to_pg_days(*d).to_be_bytes()),
        (Value::Timestamp(t) | Value::TimestampTz(t), _) => {
            out.extend_from_slice(&datetime::timestamp_to_pg_micros(*t).to_be_bytes())
        }
        (Value::Interval(i), _) => out.extend_from_slice(&i.to_be_bytes()),
        (Value::Bytea(b), _) => out.extend_from_slice(b),
        (Value::Uuid(u), _) => out.extend_from_slice(u),
        (Value::Json(s), _) => out.extend_from_slice(s.as_bytes()),
        (Value::Jsonb(j), _) => {
            out.push(1);
            out.extend_from_slice(j.to_text().as_bytes());
        }
        (Value::Time(t), _) => out.extend_from_slice(&t.to_be_bytes()),
        (Value::Array(items), _) => {
            let elem = ty.element().unwrap_or_else(|| super::value::array_elem_type(items));
            super::array::encode_array_binary(items, &elem, out)
        }
    }
}

/// Appends PostgreSQL's binary numeric for `d` (see the module doc).
fn encode_numeric(d: &Numeric, out: &mut Vec<u8>) {
    // PostgreSQL reads the special values' dscale out of their short header, which gives 32
    // for the infinities; send the same bytes.
    let special = |sign: u16, dscale: u16, out: &mut Vec<u8>| {
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&sign.to_be_bytes());
        out.extend_from_slice(&dscale.to_be_bytes());
    };
    let (negative, scale, digits) = match d.parts() {
        Parts::NaN => return special(0xC000, 0, out),
        Parts::Inf => return special(0xD000, 0x20, out),
        Parts::NegInf => return special(0xF000, 0x20, out),
        Parts::Small { m, scale } => (m < 0, scale, m.unsigned_abs().to_string()),
        Parts::Big { neg, scale, mag } => {
            let mut s = String::new();
            mag.write_digits(&mut s);
            (neg, scale, s)
        }
    };
    // Align the fraction to whole base-10000 digits by appending zeros, and the integer part
    // by prepending them; then cut into groups of 4 decimal digits.
    let digits = if digits == "0" { "" } else { digits.as_str() };
    let pad_right = (4 - scale as usize % 4) % 4;
    let frac_groups = (scale as usize + pad_right) / 4;
    let len = digits.len() + pad_right;
    let pad_left = (4 - len % 4) % 4;
    let mut padded = Vec::with_capacity(pad_left + len);
    padded.resize(pad_left, 0u8);
    padded.extend(digits.bytes().map(|c| c - b'0'));
    padded.resize(pad_left + len, 0);
    let groups: Vec<u16> =
        padded.chunks(4).map(|c| c.iter().fold(0u16, |acc, &x| acc * 10 + x as u16)).collect();
    let (ndigits, weight, sent) = match groups.iter().position(|&g| g != 0) {
        None => (0i16, 0i16, &[][..]),
        Some(first) => {
            let last = groups.iter().rposition(|&g| g != 0).expect("a nonzero group exists");
            let weight = groups.len() as i64 - 1 - frac_groups as i64 - first as i64;
            ((last - first + 1) as i16, weight as i16, &groups[first..=last])
        }
    };
    let sign: u16 = if negative && ndigits > 0 { 0x4000 } else { 0 };
    out.extend_from_slice(&ndigits.to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&scale.to_be_bytes());
    for g in sent {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::text::{format_text, parse_text};

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Byte strings from PostgreSQL 15: `COPY (SELECT v::numeric) TO STDOUT (FORMAT binary)`.
    const PG_NUMERIC: &[(&str, &str)] = &[
        ("1.50", "000200000000000200011388"),
        ("0", "0000000000000000"),
        ("0.00", "0000000000000002"),
        ("-12345.678", "0003000140000003000109291a7c"),
        ("10000", "00010001000000000001"),
        ("100000000000000000000", "00010005000000000001"),
        ("0.0001", "0001ffff000000040001"),
        ("0.00001234", "0001fffe0000000804d2"),
        ("97.76000213623047", "000500000000000e00611db000d51856125c"),
        ("-0.5", "0001ffff400000011388"),
        ("123456789.123456789", "0006000200000009000109291a8504d2162e2328"),
        ("9999.9999", "0002000000000004270f270f"),
        ("100000000.00", "00010002000000020001"),
        ("NaN", "00000000c0000000"),
        ("Infinity", "00000000d0000020"),
        ("-Infinity", "00000000f0000020"),
        ("0.00000000000000000001", "0001fffb000000140001"),
        (
            "12345678901234567890123456789012345678901.5",
            "000c000a00000001000109291a85007b11d722c509291a85007b11d722c51388",
        ),
        ("-0.000000000000000000000000000000000000000012345", "0002fff54000002d04d21388"),
    ];

    #[test]
    fn numeric_matches_postgres_bytes() {
        let ty = DataType::Numeric(None);
        for (text, bytes) in PG_NUMERIC {
            let v = parse_text(text, &ty).unwrap();
            let mut out = Vec::new();
            encode_binary(&v, &ty, &mut out);
            assert_eq!(hex(&out), *bytes, "encode {text}");
            let back = decode_binary(&unhex(bytes), &ty).unwrap();
            assert_eq!(format_text(&back, &ty), *text, "decode {text}");
        }
    }

    #[test]
    fn numeric_decode_truncates_to_dscale_and_applies_typmod() {
        // 1.2345 sent with dscale 2 → 1.23 (numeric_recv truncates).
        let b = unhex("000200000000000200010929");
        assert_eq!(
            format_text(&decode_binary(&b, &DataType::Numeric(None)).unwrap(), &DataType::Text),
            "1.23"
        );
        // JDBC sends 303.6600036621094 for a numeric(6,2) column.
        let v = parse_text("303.6600036621094", &DataType::Numeric(None)).unwrap();
        let mut out = Vec::new();
        encode_binary(&v, &DataType::Numeric(None), &mut out);
        let got = decode_binary(&out, &DataType::Numeric(Some((6, 2)))).unwrap();
        assert_eq!(format_text(&got, &DataType::Text), "303.66");
        for bad in ["0001", "000100000000000027", "0001000000000000ffff", "000100000123000000010"] {
            let b = unhex(&bad[..bad.len() / 2 * 2]);
            assert_eq!(
                decode_binary(&b, &DataType::Numeric(None)).unwrap_err().sqlstate(),
                "22P03",
                "{bad}"
            );
        }
        // PostgreSQL rejects an infinity for numeric(p,s) after decoding it.
        assert_eq!(
            decode_binary(&unhex("00000000d0000000"), &DataType::Numeric(Some((5, 2))))
                .unwrap_err()
                .sqlstate(),
            "22003"
        );
        // The largest weight: 10000^32767, 131069 digits.
        let v = decode_binary(&unhex("00017fff000000000001"), &DataType::Numeric(None)).unwrap();
        assert_eq!(format_text(&v, &DataType::Text).len(), 131_069);
    }

    #[test]
    fn fixed_width_types_round_trip_and_check_length() {
        let cases: Vec<(DataType, &str, &str)> = vec![
            (DataType::Bool, "t", "01"),
            (DataType::Int16, "-2", "fffe"),
            (DataType::Int32, "3001", "00000bb9"),
            (DataType::Int64, "1", "0000000000000001"),
            (DataType::Float64, "172.06", "406581eb851eb852"),
            (DataType::Float32, "1.5", "3fc00000"),
            (DataType::Date, "2000-01-02", "00000001"),
            (DataType::Date, "1999-12-31", "ffffffff"),
            (DataType::Timestamp, "2000-01-01 00:00:01", "00000000000f4240"),
            (DataType::Text, "hé", "68c3a9"),
            (DataType::Char(3), "ab ", "616220"),
            (DataType::Bytea, "\\x00ff", "00ff"),
        ];
        for (ty, text, bytes) in cases {
            let v = parse_text(text, &ty).unwrap();
            let mut out = Vec::new();
            encode_binary(&v, &ty, &mut out);
            assert_eq!(hex(&out), bytes, "{ty:?} {text}");
            assert_eq!(decode_binary(&out, &ty).unwrap(), v, "{ty:?} {text}");
            if ty.type_size() > 0 {
                out.push(0);
                let e = decode_binary(&out, &ty).unwrap_err();
                assert_eq!(
                    (e.sqlstate(), e.to_string().as_str()),
                    ("22P03", "incorrect binary data format")
                );
            }
        }
        // The int8 OID/width follows `ty`, not the value's variant.
        let mut out = Vec::new();
        encode_binary(&Value::Int32(7), &DataType::Int64, &mut out);
        assert_eq!(hex(&out), "0000000000000007");
        assert_eq!(decode_binary(&[0xff], &DataType::Text).unwrap_err().sqlstate(), "22021");
        assert_eq!(
            decode_binary(b"abcd", &DataType::Varchar(Some(3))).unwrap_err().sqlstate(),
            "22001"
        );
    }

    #[test]
    fn decode_as_applies_assignment_cast() {
        let b = 5i64.to_be_bytes();
        assert_eq!(
            decode_binary_as(&b, &DataType::Int64, &DataType::Int32, Zone::UTC).unwrap(),
            Value::Int32(5)
        );
        let b = 3_000_000_000i64.to_be_bytes();
        let e = decode_binary_as(&b, &DataType::Int64, &DataType::Int32, Zone::UTC).unwrap_err();
        assert_eq!(e.to_string(), "integer out of range");
        let b = 303.6600036621094f64.to_be_bytes();
        let v =
            decode_binary_as(&b, &DataType::Float64, &DataType::Numeric(Some((6, 2))), Zone::UTC)
                .unwrap();
        assert_eq!(format_text(&v, &DataType::Text), "303.66");
    }
}
