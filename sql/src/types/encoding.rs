//! Storage encodings: the row format (compact, decoded with the table's column types) and the
//! key format (memcmp-ordered, one self-delimiting component per key column).
//!
//! # Row format
//!
//! | bytes | content |
//! |---|---|
//! | varint | number of encoded columns `n` |
//! | `ceil(n/8)` | NULL bitmap: bit `i % 8` of byte `i / 8` set = column `i` is NULL |
//! | ... | the non-NULL columns in order, each as below |
//!
//! | type | payload |
//! |---|---|
//! | bool | 1 byte, 0 or 1 |
//! | int2 / int4 / int8 | zigzag LEB128 varint (1 byte for -64..=63) |
//! | float4 / float8 | 4 / 8 bytes, little-endian IEEE 754 |
//! | numeric | a head byte `h`, see below |
//! | text / varchar / char / bytea | LEB128 length, then the bytes |
//! | date | 4 bytes little-endian, days since 2000-01-01 |
//! | timestamp, timestamptz | 8 bytes little-endian, microseconds since 2000-01-01 (UTC for timestamptz) |
//! | interval | 8 bytes microseconds, 4 bytes days, 4 bytes months, little-endian |
//! | array | LEB128 length, then the elements in this row format (a row of that many columns) |
//!
//! A numeric `±m × 10^-scale` whose head byte has bit 6 clear is `sign << 7 | scale` for
//! scale 0..=62 (`sign << 7 | 63` then a varint scale for larger ones), followed by `m` as a
//! varint: `numeric(12,2)` values take 1 + 1..4 bytes, and rows written before numerics
//! grew beyond 28 digits read unchanged. Head `0x40`/`0xC0` (positive/negative) is a mantissa
//! beyond 64 bits: varint scale, varint count of trailing zeros, varint count `n` of the
//! remaining digits, then those digits two per byte (high nibble first). `0x41` is `NaN`,
//! `0x42` `Infinity`, `0x43` `-Infinity`.
//!
//! Rows are written from `Value`s without their types and read back with the column types, so
//! each value must already have its column's type ([`cast`](super::cast) first): integer widths
//! are interchangeable (all are varints, read back at the column's width with a range check),
//! but a float, numeric or string in the wrong column reads back as garbage or `XX001`.
//! A row with fewer encoded columns than `types` (columns added later) reads the missing
//! trailing columns as NULL; extra encoded columns beyond `types` are ignored.
//!
//! # Key format
//!
//! Each component starts with a tag byte; NULL is the single byte `0xFF`, so NULLs sort last.
//!
//! | tag | type | rest |
//! |---|---|---|
//! | `0x01` | bool | 1 byte |
//! | `0x02` | int2 / int4 / int8 | 8 bytes big-endian, sign bit flipped — every width encodes as i64, so an int8 parameter finds an int4 key |
//! | `0x03` | float4 / float8 | the value as f64: 8 bytes big-endian, negative: all bits flipped, positive: sign bit flipped; `-0` encodes as `0`, every NaN as one NaN that sorts after `+Infinity` |
//! | `0x04` | numeric | `0x00` -Infinity; `0x7F` negative; `0x80` zero; `0x81` positive; `0xFE` Infinity; `0xFF` NaN. A nonzero finite value continues with its decimal exponent (of the first significant digit: one byte `0x40 + 64 + e` for -64 ≤ e < 64, else `0x3F` or `0xC0` and 4 bytes big-endian `e + 2^31`), its significant digits two per byte as `d1 × 10 + d2 + 1`, and `0x00`; negative values invert every byte after the class byte. Digits are of the trailing-zero-free value, so `1.5` and `1.50` encode equal |
//! | `0x05` | text / varchar / char | bytes with `0x00` escaped as `0x00 0xFF`, then `0x00 0x01`; `char(n)` trims trailing spaces when typed ([`encode_key_as`]) |
//! | `0x06` | date | 4 bytes big-endian, sign bit flipped, days since 2000-01-01 |
//! | `0x07` | timestamp | 8 bytes big-endian, sign bit flipped, microseconds since 2000-01-01 |
//! | `0x08` | bytea | as text |
//! | `0x09` | timestamptz | as timestamp (the UTC instant) |
//! | `0x0A` | interval | its comparison span (months as 30 days, days as 24 hours) in microseconds: 16 bytes big-endian, sign bit flipped — so `'1 mon'` and `'30 days'` are one key, as they are equal |
//! | `0x0F` | array | per element `0x01` and the element's component (`0xFF` for a NULL one), then `0x00`: a proper prefix sorts first |
//!
//! Byte order of encoded keys equals [`sort_cmp`](super::sort_cmp) order column by column, and
//! every component is self-delimiting, so a key prefix is a valid range-scan bound.

use super::compare::bpchar_trim;
use super::datetime;
use std::sync::Arc;

use super::interval::Interval;
use super::jsonb::{self, Jsonb};
use super::numeric::{Mag, Numeric, Parts};
use super::value::Value;
use crate::error::{Error, Result};
use catalog::DataType;

/// Tag byte of a NULL key component (sorts after every other tag).
pub const KEY_NULL: u8 = 0xFF;
const KEY_BOOL: u8 = 0x01;
const KEY_INT: u8 = 0x02;
const KEY_FLOAT: u8 = 0x03;
const KEY_NUMERIC: u8 = 0x04;
const KEY_TEXT: u8 = 0x05;
const KEY_DATE: u8 = 0x06;
const KEY_TIMESTAMP: u8 = 0x07;
const KEY_BYTEA: u8 = 0x08;
const KEY_TIMESTAMPTZ: u8 = 0x09;
const KEY_INTERVAL: u8 = 0x0A;
const KEY_UUID: u8 = 0x0B;
const KEY_TIME: u8 = 0x0C;
const KEY_JSONB: u8 = 0x0D;
const KEY_JSON: u8 = 0x0E;
const KEY_ARRAY: u8 = 0x0F;

fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    (u >> 1) as i64 ^ -((u & 1) as i64)
}

/// Appends the row format (see the module doc) of `values`.
pub fn encode_row(values: &[Value], out: &mut Vec<u8>) {
    put_varint(values.len() as u64, out);
    let bitmap_at = out.len();
    out.resize(bitmap_at + values.len().div_ceil(8), 0);
    for (i, v) in values.iter().enumerate() {
        match v {
            Value::Null => out[bitmap_at + i / 8] |= 1 << (i % 8),
            Value::Bool(b) => out.push(*b as u8),
            Value::Int16(x) => put_varint(zigzag(*x as i64), out),
            Value::Int32(x) => put_varint(zigzag(*x as i64), out),
            Value::Int64(x) => put_varint(zigzag(*x), out),
            Value::Float32(f) => out.extend_from_slice(&f.to_le_bytes()),
            Value::Float64(f) => out.extend_from_slice(&f.to_le_bytes()),
            Value::Numeric(d) => row_numeric(d, out),
            Value::Text(s) => {
                put_varint(s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
            Value::Bytea(b) => {
                put_varint(b.len() as u64, out);
                out.extend_from_slice(b);
            }
            Value::Date(d) => out.extend_from_slice(&datetime::date_to_pg_days(*d).to_le_bytes()),
            Value::Timestamp(t) | Value::TimestampTz(t) => {
                out.extend_from_slice(&datetime::timestamp_to_pg_micros(*t).to_le_bytes())
            }
            Value::Interval(i) => {
                out.extend_from_slice(&i.micros.to_le_bytes());
                out.extend_from_slice(&i.days.to_le_bytes());
                out.extend_from_slice(&i.months.to_le_bytes());
            }
            Value::Uuid(u) => out.extend_from_slice(u),
            Value::Time(t) => out.extend_from_slice(&t.to_le_bytes()),
            Value::Json(s) => {
                put_varint(s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
            // Its output text: read back by the JSON parser.
            Value::Jsonb(j) => {
                let s = j.to_text();
                put_varint(s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
            // Its length, then its elements as a row of that many columns.
            Value::Array(items) => {
                let mut inner = Vec::new();
                encode_row(items, &mut inner);
                put_varint(inner.len() as u64, out);
                out.extend_from_slice(&inner);
            }
        }
    }
}

/// Numeric head byte: a mantissa beyond 64 bits follows (`| 0x80` when negative).
const NUMERIC_BIG: u8 = 0x40;
/// Numeric head byte: the scale follows as a varint.
const NUMERIC_SCALE_VARINT: u8 = 0x3F;
const NUMERIC_NAN: u8 = 0x41;
const NUMERIC_INF: u8 = 0x42;
const NUMERIC_NEG_INF: u8 = 0x43;

/// The row payload of a numeric (see the module doc).
fn row_numeric(d: &Numeric, out: &mut Vec<u8>) {
    match d.parts() {
        Parts::Small { m, scale } => {
            let sign = ((m < 0) as u8) << 7;
            if scale < NUMERIC_SCALE_VARINT as u16 {
                out.push(sign | scale as u8);
            } else {
                out.push(sign | NUMERIC_SCALE_VARINT);
                put_varint(scale as u64, out);
            }
            put_varint(m.unsigned_abs(), out);
        }
        Parts::Big { neg, scale, mag } => {
            out.push(NUMERIC_BIG | ((neg as u8) << 7));
            put_varint(scale as u64, out);
            let mut s = String::new();
            mag.write_digits(&mut s);
            let sig = s.trim_end_matches('0');
            put_varint((s.len() - sig.len()) as u64, out);
            put_varint(sig.len() as u64, out);
            for pair in sig.as_bytes().chunks(2) {
                let hi = pair[0] - b'0';
                let lo = pair.get(1).map_or(0, |c| c - b'0');
                out.push(hi << 4 | lo);
            }
        }
        Parts::NaN => out.push(NUMERIC_NAN),
        Parts::Inf => out.push(NUMERIC_INF),
        Parts::NegInf => out.push(NUMERIC_NEG_INF),
    }
}

fn corrupt(what: &str) -> Error {
    Error::DataCorrupted { message: format!("corrupt row: {what}") }
}

/// A cursor over an encoded row.
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.i.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| corrupt("truncated"))?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("take returned N bytes"))
    }

    /// A LEB128 varint of up to 128 bits (numeric mantissas of rows written by older versions
    /// need more than 64); the first 63 bits are read in a `u64`.
    fn varint(&mut self) -> Result<u128> {
        let mut small: u64 = 0;
        let mut shift = 0;
        while shift < 63 {
            let byte = *self.b.get(self.i).ok_or_else(|| corrupt("truncated varint"))?;
            self.i += 1;
            small |= ((byte & 0x7F) as u64) << shift;
            if byte & 0x80 == 0 {
                return Ok(small as u128);
            }
            shift += 7;
        }
        let mut v = small as u128;
        loop {
            let byte = *self.b.get(self.i).ok_or_else(|| corrupt("truncated varint"))?;
            self.i += 1;
            if shift >= 128 {
                return Err(corrupt("varint too long"));
            }
            v |= ((byte & 0x7F) as u128) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn len(&mut self) -> Result<usize> {
        usize::try_from(self.varint()?).map_err(|_| corrupt("length"))
    }

    /// Reads the header: (encoded column count, NULL bitmap).
    fn header(&mut self) -> Result<(usize, &'a [u8])> {
        let n = self.len()?;
        let bitmap = self.take(n.div_ceil(8))?;
        Ok((n, bitmap))
    }

    fn int(&mut self) -> Result<i64> {
        let u = self.varint()?;
        Ok(unzigzag(u64::try_from(u).map_err(|_| corrupt("integer"))?))
    }

    /// A numeric payload (see the module doc).
    fn numeric(&mut self) -> Result<Numeric> {
        let head = self.array::<1>()?[0];
        let neg = head & 0x80 != 0;
        match head {
            NUMERIC_NAN => return Ok(Numeric::NAN),
            NUMERIC_INF => return Ok(Numeric::INFINITY),
            NUMERIC_NEG_INF => return Ok(Numeric::NEG_INFINITY),
            _ if head & 0x7F == NUMERIC_BIG => {}
            _ if head & 0x40 != 0 => return Err(corrupt("numeric head")),
            _ => {
                let scale = match head & 0x3F {
                    NUMERIC_SCALE_VARINT => self.len()?,
                    s => s as usize,
                };
                let m = self.varint()?;
                let scale = u32::try_from(scale).map_err(|_| corrupt("numeric scale"))?;
                return Numeric::from_u128_parts(neg, m, scale)
                    .ok_or_else(|| corrupt("numeric scale"));
            }
        }
        let scale = u32::try_from(self.len()?).map_err(|_| corrupt("numeric scale"))?;
        let zeros = self.len()?;
        let n = self.len()?;
        let packed = self.take(n.div_ceil(2))?;
        let mut digits = Vec::with_capacity(n + 1);
        for &b in packed {
            let (hi, lo) = (b >> 4, b & 0x0F);
            if hi > 9 || lo > 9 {
                return Err(corrupt("numeric digit"));
            }
            digits.extend_from_slice(&[hi, lo]);
        }
        digits.truncate(n);
        let mag = Mag::from_digits(&digits).mul_pow10(zeros as u64);
        Numeric::from_mag(neg, mag, scale).map_err(|_| corrupt("numeric"))
    }

    fn value(&mut self, ty: &DataType) -> Result<Value> {
        Ok(match ty {
            DataType::Void | DataType::RegType => return Err(corrupt("pseudo-type column")),
            DataType::Bool => Value::Bool(self.array::<1>()?[0] != 0),
            DataType::Int16 => Value::Int16(self.int()?.try_into().map_err(|_| corrupt("int2"))?),
            DataType::Int32 => Value::Int32(self.int()?.try_into().map_err(|_| corrupt("int4"))?),
            DataType::Int64 => Value::Int64(self.int()?),
            DataType::Float32 => Value::Float32(f32::from_le_bytes(self.array()?)),
            DataType::Float64 => Value::Float64(f64::from_le_bytes(self.array()?)),
            DataType::Numeric(_) => Value::Numeric(self.numeric()?),
            DataType::Text | DataType::Varchar(_) | DataType::Char(_) | DataType::Name => {
                let n = self.len()?;
                let s = std::str::from_utf8(self.take(n)?).map_err(|_| corrupt("utf-8"))?;
                Value::Text(s.to_owned())
            }
            DataType::Bytea => {
                let n = self.len()?;
                Value::Bytea(self.take(n)?.to_vec())
            }
            DataType::Json => {
                let n = self.len()?;
                let s = std::str::from_utf8(self.take(n)?).map_err(|_| corrupt("utf-8"))?;
                Value::Json(s.into())
            }
            DataType::Jsonb => {
                let n = self.len()?;
                let s = std::str::from_utf8(self.take(n)?).map_err(|_| corrupt("utf-8"))?;
                Value::Jsonb(Arc::new(Jsonb::parse(s).map_err(|_| corrupt("jsonb"))?))
            }
            DataType::Date => {
                let days = i32::from_le_bytes(self.array()?);
                Value::Date(datetime::pg_days_to_date(days).ok_or_else(|| corrupt("date"))?)
            }
            DataType::Timestamp => {
                let us = i64::from_le_bytes(self.array()?);
                Value::Timestamp(
                    datetime::pg_micros_to_timestamp(us).ok_or_else(|| corrupt("timestamp"))?,
                )
            }
            DataType::TimestampTz => {
                let us = i64::from_le_bytes(self.array()?);
                Value::TimestampTz(
                    datetime::pg_micros_to_timestamp(us).ok_or_else(|| corrupt("timestamptz"))?,
                )
            }
            DataType::Interval => {
                let micros = i64::from_le_bytes(self.array()?);
                let days = i32::from_le_bytes(self.array()?);
                let months = i32::from_le_bytes(self.array()?);
                Value::Interval(Interval { months, days, micros })
            }
            DataType::Uuid => Value::Uuid(self.array()?),
            DataType::Time => {
                let us = i64::from_le_bytes(self.array()?);
                if !(0..=datetime::USECS_PER_DAY).contains(&us) {
                    return Err(corrupt("time"));
                }
                Value::Time(us)
            }
            DataType::Array(e) => {
                let n = self.len()?;
                let mut inner = Reader { b: self.take(n)?, i: 0 };
                let (count, bitmap) = inner.header()?;
                let elem = e.data_type();
                let mut items = Vec::with_capacity(count.min(n));
                for i in 0..count {
                    items.push(if is_null(bitmap, i) {
                        Value::Null
                    } else {
                        inner.value(&elem)?
                    });
                }
                Value::Array(Arc::new(items))
            }
        })
    }

    /// Skips one value of type `ty` without materializing it.
    fn skip(&mut self, ty: &DataType) -> Result<()> {
        match ty {
            DataType::Void | DataType::RegType => Err(corrupt("pseudo-type column")),
            DataType::Bool => self.take(1).map(drop),
            DataType::Int16 | DataType::Int32 | DataType::Int64 => self.varint().map(drop),
            DataType::Float32 | DataType::Date => self.take(4).map(drop),
            DataType::Float64 | DataType::Timestamp | DataType::TimestampTz | DataType::Time => {
                self.take(8).map(drop)
            }
            DataType::Interval | DataType::Uuid => self.take(16).map(drop),
            DataType::Numeric(_) => self.numeric().map(drop),
            DataType::Text
            | DataType::Varchar(_)
            | DataType::Char(_)
            | DataType::Name
            | DataType::Bytea
            | DataType::Json
            | DataType::Jsonb
            | DataType::Array(_) => {
                let n = self.len()?;
                self.take(n).map(drop)
            }
        }
    }
}

fn is_null(bitmap: &[u8], i: usize) -> bool {
    bitmap[i / 8] & (1 << (i % 8)) != 0
}

/// Decodes a row written by [`encode_row`] with the table's column types. Fails with `XX001`
/// on malformed bytes.
pub fn decode_row(bytes: &[u8], types: &[DataType]) -> Result<Vec<Value>> {
    let mut r = Reader { b: bytes, i: 0 };
    let (n, bitmap) = r.header()?;
    let mut out = Vec::with_capacity(types.len());
    for (i, ty) in types.iter().enumerate() {
        if i >= n || is_null(bitmap, i) {
            out.push(Value::Null);
        } else {
            out.push(r.value(ty)?);
        }
    }
    Ok(out)
}

/// Whether the bytes [`encode_row`] writes for a column of type `from`, and its key
/// encoding, mean the same values when the column is of type `to`, so that ALTER COLUMN …
/// TYPE needs no rewrite: integers of any width (one zigzag varint, one key form), text and
/// varchar (the same string), numeric to unconstrained numeric or to a precision with the
/// same scale (the same digits and scale). The values must still fit `to`: the caller checks
/// them.
pub fn retypes_in_place(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    match (from, to) {
        (T::Int16 | T::Int32 | T::Int64, T::Int16 | T::Int32 | T::Int64) => true,
        (T::Text | T::Varchar(_), T::Text | T::Varchar(_)) => true,
        (T::Numeric(_), T::Numeric(None)) => true,
        (T::Numeric(Some((_, a))), T::Numeric(Some((_, b)))) => a == b,
        _ => from == to,
    }
}

/// Decodes only column `idx` of a row written by [`encode_row`], skipping the columns before
/// it without allocating.
pub fn decode_column(bytes: &[u8], types: &[DataType], idx: usize) -> Result<Value> {
    let mut r = Reader { b: bytes, i: 0 };
    let (n, bitmap) = r.header()?;
    let ty = types.get(idx).ok_or_else(|| Error::internal("decode_column: index out of range"))?;
    if idx >= n || is_null(bitmap, idx) {
        return Ok(Value::Null);
    }
    for (i, t) in types[..idx].iter().enumerate() {
        if !is_null(bitmap, i) {
            r.skip(t)?;
        }
    }
    r.value(ty)
}

/// Appends the memcmp-ordered key encoding (see the module doc) of `values`, one component
/// per value. Strings are encoded as `text`; use [`encode_key_as`] when a key column is
/// `char(n)`.
pub fn encode_key(values: &[Value], out: &mut Vec<u8>) {
    for v in values {
        encode_key_value(v, false, out);
    }
}

/// [`encode_key`] with the key columns' types: `char(n)` values drop trailing spaces, so the
/// key order is `char(n)`'s [`sort_cmp_as`](super::sort_cmp_as) order.
pub fn encode_key_as(values: &[Value], types: &[DataType], out: &mut Vec<u8>) {
    debug_assert_eq!(values.len(), types.len(), "one type per key value");
    for (v, ty) in values.iter().zip(types) {
        encode_key_value(v, matches!(ty, DataType::Char(_)), out);
    }
}

/// The hidden row id of a table without a primary key from its engine key (the key is
/// `encode_key([Int64(id)])`); `None` if `key` is not such a key.
pub fn decode_row_id_key(key: &[u8]) -> Option<i64> {
    match key {
        [KEY_INT, rest @ ..] if rest.len() == 8 => {
            let raw = u64::from_be_bytes(rest.try_into().ok()?);
            Some((raw ^ (1 << 63)) as i64)
        }
        _ => None,
    }
}

fn encode_key_value(v: &Value, bpchar: bool, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(KEY_NULL),
        Value::Bool(b) => out.extend_from_slice(&[KEY_BOOL, *b as u8]),
        Value::Int16(i) => key_int(*i as i64, out),
        Value::Int32(i) => key_int(*i as i64, out),
        Value::Int64(i) => key_int(*i, out),
        Value::Float32(f) => key_float(*f as f64, out),
        Value::Float64(f) => key_float(*f, out),
        Value::Numeric(d) => key_numeric(d, out),
        Value::Text(s) => {
            let s = if bpchar { bpchar_trim(s) } else { s };
            key_bytes(KEY_TEXT, s.as_bytes(), out)
        }
        Value::Bytea(b) => key_bytes(KEY_BYTEA, b, out),
        Value::Date(d) => {
            out.push(KEY_DATE);
            let days = datetime::date_to_pg_days(*d) as u32 ^ (1 << 31);
            out.extend_from_slice(&days.to_be_bytes());
        }
        Value::Timestamp(t) | Value::TimestampTz(t) => {
            out.push(if matches!(v, Value::Timestamp(_)) {
                KEY_TIMESTAMP
            } else {
                KEY_TIMESTAMPTZ
            });
            let us = datetime::timestamp_to_pg_micros(*t) as u64 ^ (1 << 63);
            out.extend_from_slice(&us.to_be_bytes());
        }
        Value::Interval(i) => {
            out.push(KEY_INTERVAL);
            let span = i.span() as u128 ^ (1 << 127);
            out.extend_from_slice(&span.to_be_bytes());
        }
        Value::Uuid(u) => {
            out.push(KEY_UUID);
            out.extend_from_slice(u);
        }
        Value::Time(t) => {
            out.push(KEY_TIME);
            out.extend_from_slice(&(*t as u64).to_be_bytes());
        }
        // json has no equality: never a key, but bytes that cannot fail.
        Value::Json(s) => key_bytes(KEY_JSON, s.as_bytes(), out),
        Value::Jsonb(j) => {
            out.push(KEY_JSONB);
            jsonb::key_encode(
                j,
                out,
                &|b: &[u8], out: &mut Vec<u8>| key_bytes(0, b, out),
                &|n, out| key_numeric(n, out),
            );
        }
        Value::Array(items) => {
            out.push(KEY_ARRAY);
            for v in items.iter() {
                out.push(0x01);
                encode_key_value(v, false, out);
            }
            out.push(0x00);
        }
    }
}

fn key_int(i: i64, out: &mut Vec<u8>) {
    out.push(KEY_INT);
    out.extend_from_slice(&(i as u64 ^ (1 << 63)).to_be_bytes());
}

fn key_float(f: f64, out: &mut Vec<u8>) {
    out.push(KEY_FLOAT);
    let f = if f.is_nan() {
        f64::NAN
    } else if f == 0.0 {
        0.0
    } else {
        f
    };
    let bits = f.to_bits();
    let bits = if bits >> 63 == 1 { !bits } else { bits ^ (1 << 63) };
    out.extend_from_slice(&bits.to_be_bytes());
}

fn key_bytes(tag: u8, b: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    for &byte in b {
        if byte == 0 {
            out.extend_from_slice(&[0x00, 0xFF]);
        } else {
            out.push(byte);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Numeric key class bytes, in order.
const KEY_NUMERIC_NEG_INF: u8 = 0x00;
const KEY_NUMERIC_NEG: u8 = 0x7F;
const KEY_NUMERIC_ZERO: u8 = 0x80;
const KEY_NUMERIC_POS: u8 = 0x81;
const KEY_NUMERIC_INF: u8 = 0xFE;
const KEY_NUMERIC_NAN: u8 = 0xFF;

fn key_numeric(d: &Numeric, out: &mut Vec<u8>) {
    out.push(KEY_NUMERIC);
    match d.parts() {
        Parts::NaN => out.push(KEY_NUMERIC_NAN),
        Parts::Inf => out.push(KEY_NUMERIC_INF),
        Parts::NegInf => out.push(KEY_NUMERIC_NEG_INF),
        Parts::Small { m: 0, .. } => out.push(KEY_NUMERIC_ZERO),
        Parts::Small { m, scale } => {
            // The digits of |m| without allocating: at most 19.
            let mut buf = [0u8; 20];
            let mut a = m.unsigned_abs();
            let mut start = buf.len();
            while a > 0 {
                start -= 1;
                buf[start] = (a % 10) as u8;
                a /= 10;
            }
            let digits = &buf[start..];
            let exp = digits.len() as i64 - 1 - scale as i64;
            let end = digits.iter().rposition(|&d| d != 0).expect("nonzero") + 1;
            key_significand(m < 0, exp, &digits[..end], out);
        }
        Parts::Big { .. } => {
            let (negative, exp, digits) = d.significand().expect("nonzero finite");
            key_significand(negative, exp, &digits, out);
        }
    }
}

/// The key bytes after the tag of a nonzero finite numeric (see the module doc).
fn key_significand(negative: bool, exp: i64, digits: &[u8], out: &mut Vec<u8>) {
    let flip = |b: u8| if negative { !b } else { b };
    out.push(if negative { KEY_NUMERIC_NEG } else { KEY_NUMERIC_POS });
    // -16383 - 20 <= exp <= 131071: one byte near 0, else a marker and 4 bytes.
    if (-64..64).contains(&exp) {
        out.push(flip((exp + 128) as u8));
    } else {
        out.push(flip(if exp < 0 { 0x3F } else { 0xC0 }));
        let biased = (exp + (1i64 << 31)) as u32;
        out.extend(biased.to_be_bytes().map(flip));
    }
    for pair in digits.chunks(2) {
        let d2 = pair.get(1).copied().unwrap_or(0);
        out.push(flip(pair[0] * 10 + d2 + 1));
    }
    out.push(flip(0x00));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::compare::{sort_cmp, sort_cmp_as};
    use crate::types::text::parse_text;
    use std::cmp::Ordering;

    use crate::types::test_rng::Rng;

    const TYPES: &[DataType] = &[
        DataType::Bool,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
        DataType::Numeric(None),
        DataType::Text,
        DataType::Char(4),
        DataType::Date,
        DataType::Timestamp,
        DataType::Bytea,
        DataType::TimestampTz,
        DataType::Interval,
        DataType::Uuid,
        DataType::Time,
        DataType::Jsonb,
        DataType::Json,
        DataType::Array(catalog::ArrayElem::Int32),
        DataType::Array(catalog::ArrayElem::Text),
        DataType::Array(catalog::ArrayElem::Numeric),
        DataType::Array(catalog::ArrayElem::Float64),
    ];

    /// A random JSON value with few distinct parts, so that equal and near-equal values meet.
    fn random_jsonb(rng: &mut Rng, depth: u32) -> Jsonb {
        let pick = |rng: &mut Rng, of: &[&str]| of[rng.below(of.len() as u64) as usize].to_string();
        match rng.below(if depth >= 3 { 4 } else { 6 }) {
            0 => Jsonb::Null,
            1 => Jsonb::Bool(rng.below(2) == 1),
            2 => Jsonb::Number(
                Numeric::parse(&pick(rng, &["0", "1", "1.0", "-2", "2.50", "1e3", "-0.001"]))
                    .unwrap(),
            ),
            3 => Jsonb::String(pick(rng, &["", "a", "b", "ab", "é", "a\"b"])),
            4 => Jsonb::Array((0..rng.below(4)).map(|_| random_jsonb(rng, depth + 1)).collect()),
            _ => Jsonb::object(
                (0..rng.below(4))
                    .map(|_| (pick(rng, &["", "a", "b", "aa"]), random_jsonb(rng, depth + 1)))
                    .collect(),
            ),
        }
    }

    /// A random value of type `ty`, biased towards edge cases; NULL one time in ten.
    fn random_value(rng: &mut Rng, ty: &DataType) -> Value {
        if rng.below(10) == 0 {
            return Value::Null;
        }
        let small = |rng: &mut Rng| rng.below(7) as i64 - 3;
        match ty {
            DataType::Void | DataType::RegType => unreachable!("no column is of these types"),
            DataType::Bool => Value::Bool(rng.below(2) == 1),
            DataType::Int16 => Value::Int16(match rng.below(3) {
                0 => small(rng) as i16,
                1 => [i16::MIN, i16::MAX, -1, 0][rng.below(4) as usize],
                _ => rng.next() as i16,
            }),
            DataType::Int32 => Value::Int32(match rng.below(3) {
                0 => small(rng) as i32,
                1 => [i32::MIN, i32::MAX, -1, 0, 128, -129][rng.below(6) as usize],
                _ => rng.next() as i32,
            }),
            DataType::Int64 => Value::Int64(match rng.below(3) {
                0 => small(rng),
                1 => [i64::MIN, i64::MAX, -1, 0][rng.below(4) as usize],
                _ => rng.next() as i64,
            }),
            DataType::Float32 => Value::Float32(match rng.below(3) {
                0 => small(rng) as f32 / 2.0,
                1 => [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, f32::MIN_POSITIVE]
                    [rng.below(6) as usize],
                _ => f32::from_bits(rng.next() as u32),
            }),
            DataType::Float64 => Value::Float64(match rng.below(3) {
                0 => small(rng) as f64 / 4.0,
                1 => [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 5e-324]
                    [rng.below(7) as usize],
                _ => f64::from_bits(rng.next()),
            }),
            DataType::Numeric(_) => {
                let text = match rng.below(6) {
                    0 => format!("{}", small(rng) * 10i64.pow(rng.below(4) as u32)),
                    1 => format!("{}", rng.next() as i64),
                    2 => format!("{}{:019}{:019}", small(rng), rng.next() >> 1, rng.next() >> 1),
                    3 => ["NaN", "Infinity", "-Infinity", "1e100", "-1e-100", "1e131071"]
                        [rng.below(6) as usize]
                        .to_string(),
                    4 => format!("{}e{}", rng.next() as i32, rng.below(400) as i64 - 200),
                    _ => ["0", "1", "-1", "15", "150", "-150", "10"][rng.below(7) as usize].into(),
                };
                let v = parse_text(&text, ty).unwrap();
                // Vary the display scale without changing the value.
                let Value::Numeric(n) = v else { unreachable!("parsed a numeric") };
                let scale = rng.below(70) as i64 + n.scale() as i64;
                let rounded = if n.is_finite() { n.round(scale).unwrap() } else { n };
                Value::Numeric(rounded)
            }
            DataType::Text | DataType::Varchar(_) | DataType::Char(_) | DataType::Name => {
                let alphabet = ["", "a", "b", " ", "\0", "é", "\u{7f}", "z", "\u{1}"];
                let n = rng.below(5);
                let mut s: String =
                    (0..n).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize]).collect();
                if let DataType::Char(n) = ty {
                    s = crate::types::text::fit_string(s, ty, true).unwrap();
                    debug_assert!(s.chars().count() == *n as usize);
                }
                Value::Text(s)
            }
            DataType::Date => {
                let days = rng.below(2_000_000) as i32 - 1_000_000;
                Value::Date(datetime::pg_days_to_date(days).unwrap())
            }
            DataType::Timestamp | DataType::TimestampTz => {
                let us = (rng.next() as i64) % (1i64 << 55);
                let t = datetime::pg_micros_to_timestamp(us).unwrap();
                if *ty == DataType::Timestamp {
                    Value::Timestamp(t)
                } else {
                    Value::TimestampTz(t)
                }
            }
            DataType::Interval => {
                let mut field = |extreme: i64| match rng.below(3) {
                    0 => small(rng),
                    1 => [extreme, -extreme, 0, 1, -1, 30][rng.below(6) as usize],
                    _ => rng.next() as i64 % extreme,
                };
                let months = field(i64::from(i32::MAX)) as i32;
                let days = field(i64::from(i32::MAX)) as i32;
                let micros = field(i64::MAX);
                Value::Interval(Interval { months, days, micros })
            }
            DataType::Bytea => {
                let n = rng.below(4);
                Value::Bytea((0..n).map(|_| [0u8, 1, 0xFF, 0x80][rng.below(4) as usize]).collect())
            }
            DataType::Uuid => {
                let mut u = [0u8; 16];
                for b in &mut u {
                    *b = [0u8, 1, 0x7F, 0x80, 0xFF][rng.below(5) as usize];
                }
                Value::Uuid(u)
            }
            DataType::Time => Value::Time(
                match rng.below(3) {
                    0 => [0, 1, datetime::USECS_PER_DAY, datetime::USECS_PER_DAY - 1]
                        [rng.below(4) as usize],
                    _ => rng.next() as i64 % (datetime::USECS_PER_DAY + 1),
                }
                .abs(),
            ),
            DataType::Jsonb => Value::Jsonb(Arc::new(random_jsonb(rng, 0))),
            DataType::Json => Value::Json(format!(" {} ", random_jsonb(rng, 0).to_text()).into()),
            DataType::Array(e) => Value::Array(Arc::new(
                (0..rng.below(4)).map(|_| random_value(rng, &e.data_type())).collect(),
            )),
        }
    }

    /// Row equality that treats NaN as equal to itself and compares numerics with scale.
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Float32(x), Value::Float32(y)) => x.to_bits() == y.to_bits(),
            (Value::Float64(x), Value::Float64(y)) => x.to_bits() == y.to_bits(),
            (Value::Numeric(x), Value::Numeric(y)) => {
                x == y && x.scale() == y.scale() && x.to_string() == y.to_string()
            }
            (Value::Jsonb(x), Value::Jsonb(y)) => x.to_text() == y.to_text(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
            }
            _ => a == b,
        }
    }

    #[test]
    fn row_round_trips() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..5000 {
            let n = rng.below(12) as usize;
            let types: Vec<DataType> =
                (0..n).map(|_| TYPES[rng.below(TYPES.len() as u64) as usize]).collect();
            let values: Vec<Value> = types.iter().map(|t| random_value(&mut rng, t)).collect();
            let mut buf = Vec::new();
            encode_row(&values, &mut buf);
            let back = decode_row(&buf, &types).unwrap();
            assert!(values.iter().zip(&back).all(|(a, b)| same(a, b)), "{values:?} {back:?}");
            for (i, v) in values.iter().enumerate() {
                assert!(same(&decode_column(&buf, &types, i).unwrap(), v), "column {i}");
            }
            // Every strict prefix is rejected rather than misread.
            for cut in 0..buf.len() {
                if let Ok(vals) = decode_row(&buf[..cut], &types) {
                    panic!("prefix {cut} of {} decoded as {vals:?}", buf.len());
                }
            }
        }
    }

    #[test]
    fn row_schema_evolution_and_int_widths() {
        let mut buf = Vec::new();
        encode_row(&[Value::Int64(7), Value::Text("x".into())], &mut buf);
        let types = [DataType::Int32, DataType::Text, DataType::Int64];
        assert_eq!(
            decode_row(&buf, &types).unwrap(),
            vec![Value::Int32(7), Value::Text("x".into()), Value::Null]
        );
        assert_eq!(decode_column(&buf, &types, 2).unwrap(), Value::Null);
        let mut buf = Vec::new();
        encode_row(&[Value::Int64(1 << 40)], &mut buf);
        assert_eq!(decode_row(&buf, &[DataType::Int32]).unwrap_err().sqlstate(), "XX001");
    }

    #[test]
    fn tpcc_customer_row_is_compact() {
        let t = |s: &str| Value::Text(s.into());
        let n = |s: &str| parse_text(s, &DataType::Numeric(None)).unwrap();
        let row = vec![
            Value::Int32(2999),
            Value::Int32(10),
            Value::Int32(1),
            n("0.1234"),
            t("GC"),
            t("BARBARBAR"),
            t("abcdefghijklmnop"),
            n("50000.00"),
            n("-10.00"),
            Value::Float64(10.0),
            Value::Int32(1),
            Value::Int32(0),
            t("abcdefghijklmnopqrst"),
            t("abcdefghijklmnopqrst"),
            t("abcdefghijklmnopqrst"),
            t("AB"),
            t("123411111"),
            t("1234567890123456"),
            parse_text("2024-01-02 03:04:05.123", &DataType::Timestamp).unwrap(),
            t("OE"),
            t(&"x".repeat(400)),
        ];
        // Raw: 3 ints (12) + 3 numerics (~24 as numeric(12,2) in 8 bytes) + float (8) + 2 ints
        // (8) + timestamp (8) + string bytes.
        let string_bytes: usize =
            row.iter().map(|v| if let Value::Text(s) = v { s.len() } else { 0 }).sum();
        let mut buf = Vec::new();
        encode_row(&row, &mut buf);
        let overhead = buf.len() - string_bytes;
        assert!(overhead <= 60, "{} bytes for {string_bytes} string bytes", buf.len());
    }

    #[test]
    fn numeric_row_bytes_are_unchanged_for_small_values() {
        // The format before numerics grew beyond 28 digits: `scale | sign << 7`, then the
        // mantissa as a varint. Rows written then read back unchanged, and are no larger now.
        let n = |s: &str| parse_text(s, &DataType::Numeric(None)).unwrap();
        let row = |v: Value| {
            let mut b = Vec::new();
            encode_row(&[v], &mut b);
            b
        };
        assert_eq!(row(n("50000.00")), [1, 0, 0x02, 0xC0, 0x96, 0xB1, 0x02]);
        assert_eq!(row(n("-10.00")), [1, 0, 0x82, 0xE8, 0x07]);
        assert_eq!(row(n("0.1234")), [1, 0, 0x04, 0xD2, 0x09]);
        let old = [
            1, 0, 0x1C, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xFF, 0x1F,
        ];
        // 2^96 - 1 at scale 28, as the old format wrote it.
        let v = decode_row(&old, &[DataType::Numeric(None)]).unwrap();
        assert_eq!(format_text_of(&v[0]), "7.9228162514264337593543950335");
        assert_eq!(row(n("NaN")), [1, 0, 0x41]);
    }

    fn format_text_of(v: &Value) -> String {
        crate::types::format_text(v, &DataType::Numeric(None))
    }

    #[test]
    fn key_order_equals_sort_order() {
        let mut rng = Rng(0xdead_beef_cafe_f00d);
        for ty in TYPES {
            let values: Vec<Value> = (0..400).map(|_| random_value(&mut rng, ty)).collect();
            let keys: Vec<Vec<u8>> = values
                .iter()
                .map(|v| {
                    let mut k = Vec::new();
                    encode_key_as(std::slice::from_ref(v), std::slice::from_ref(ty), &mut k);
                    k
                })
                .collect();
            for (a, ka) in values.iter().zip(&keys) {
                for (b, kb) in values.iter().zip(&keys) {
                    assert_eq!(ka.cmp(kb), sort_cmp_as(a, b, ty), "{ty:?}: {a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn composite_keys_are_prefix_free() {
        // (a, b) pairs: the first component must decide before the second is looked at.
        let mut rng = Rng(42);
        let types = [DataType::Text, DataType::Int32];
        let rows: Vec<Vec<Value>> =
            (0..300).map(|_| types.iter().map(|t| random_value(&mut rng, t)).collect()).collect();
        for a in &rows {
            for b in &rows {
                let (mut ka, mut kb) = (Vec::new(), Vec::new());
                encode_key(a, &mut ka);
                encode_key(b, &mut kb);
                let want = sort_cmp(&a[0], &b[0]).then_with(|| sort_cmp(&a[1], &b[1]));
                assert_eq!(ka.cmp(&kb), want, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn keys_equal_across_int_widths_and_numeric_scales() {
        let key = |v: Value| {
            let mut k = Vec::new();
            encode_key(&[v], &mut k);
            k
        };
        assert_eq!(key(Value::Int16(7)), key(Value::Int64(7)));
        for id in [1i64, 255, 1 << 40, i64::MAX] {
            assert_eq!(decode_row_id_key(&key(Value::Int64(id))), Some(id));
        }
        assert_eq!(decode_row_id_key(&key(Value::Text("x".into()))), None);
        assert_eq!(key(Value::Int32(-7)), key(Value::Int64(-7)));
        let n = |s: &str| parse_text(s, &DataType::Numeric(None)).unwrap();
        assert_eq!(key(n("1.5")), key(n("1.50")));
        assert_eq!(key(n("0")), key(n("-0.000")));
        assert_eq!(key(n("100")), key(n("1e2")));
        assert_eq!(key(n("-12345678901234567890123.4500")), key(n("-12345678901234567890123.45")));
        assert_eq!(key(n("9223372036854775808")), key(n("9223372036854775808.000")));
        assert_eq!(key(Value::Float64(-0.0)), key(Value::Float64(0.0)));
        assert_eq!(key(Value::Null), vec![KEY_NULL]);
        assert_eq!(key(Value::Int32(1)).cmp(&key(Value::Null)), Ordering::Less);
        let mut k = Vec::new();
        encode_key_as(&[Value::Text("ab  ".into())], &[DataType::Char(4)], &mut k);
        assert_eq!(k, key(Value::Text("ab".into())));
    }
}
