//! One-dimensional arrays (`integer[]`, `text[]`, …) as PostgreSQL 15 reads, prints, sends and
//! orders them. A [`Value::Array`] holds its elements (NULL ones as `Value::Null`), each of the
//! element type the plan gives; the lower bound is always 1. Multidimensional arrays and
//! explicit bounds (`'[0:1]={1,2}'`) are `0A000`.
//!
//! - Text (`array_in` / `array_out`): `{1,2,NULL}`; an element is double-quoted on output when
//!   it is empty, spells `NULL`, or holds `{ } , " \` or white space, with `"` and `\`
//!   backslash-escaped inside the quotes.
//! - Binary (`array_recv` / `array_send`): `ndim i32, has_null i32, element oid u32`, then per
//!   dimension `length i32, lower bound i32`, then per element `length i32` (`-1` for NULL)
//!   and the element's own binary form.
//! - Order (`btarraycmp`): element by element, NULL elements after every value and equal to
//!   each other; a proper prefix sorts first. Equality follows the same rule, so
//!   `ARRAY[1,NULL] = ARRAY[1,NULL]` is true.

use std::cmp::Ordering;
use std::sync::Arc;

use catalog::DataType;

use super::binary::{decode_binary, encode_binary};
use super::compare::sort_cmp;
use super::datetime::Zone;
use super::text::{format_text_zoned_into, parse_text_zoned};
use super::value::Value;
use crate::error::{Error, Result};

/// `22P02` "malformed array literal" for input text `s`, with PostgreSQL's detail.
fn malformed(s: &str, detail: &str) -> Error {
    Error::InvalidArray { text: s.into(), detail: detail.into() }
}

/// White space as `array_isspace` sees it.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0B' | '\x0C')
}

/// Splits the text form of a one-dimensional array into its elements' texts (`None` for an
/// unquoted NULL), as `array_in` reads them.
pub(crate) fn split_text(s: &str) -> Result<Vec<Option<String>>> {
    let body = s.trim_start_matches(is_space);
    if body.starts_with('[') {
        return Err(Error::unsupported("array bounds in an array literal"));
    }
    let Some(body) = body.strip_prefix('{') else {
        return Err(malformed(s, "Array value must start with \"{\" or dimension information."));
    };
    let mut out = Vec::new();
    let mut chars = body.chars().peekable();
    let skip_space = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        while chars.peek().is_some_and(|c| is_space(*c)) {
            chars.next();
        }
    };
    skip_space(&mut chars);
    if chars.peek() == Some(&'}') {
        chars.next();
    } else {
        loop {
            skip_space(&mut chars);
            let mut item = String::new();
            let mut quoted = false;
            match chars.peek() {
                Some('{') => return Err(Error::unsupported("multidimensional arrays")),
                Some('"') => {
                    quoted = true;
                    chars.next();
                    loop {
                        match chars.next() {
                            None => return Err(malformed(s, "Unexpected end of input.")),
                            Some('"') => break,
                            Some('\\') => item.push(
                                chars
                                    .next()
                                    .ok_or_else(|| malformed(s, "Unexpected end of input."))?,
                            ),
                            Some(c) => item.push(c),
                        }
                    }
                    skip_space(&mut chars);
                }
                _ => {
                    // Trailing white space is cut, but not when escaped.
                    let mut keep = 0;
                    while let Some(&c) = chars.peek() {
                        if c == ',' || c == '}' {
                            break;
                        }
                        if c == '{' || c == '"' {
                            return Err(malformed(s, &format!("Unexpected \"{c}\" character.")));
                        }
                        chars.next();
                        if c == '\\' {
                            item.push(
                                chars
                                    .next()
                                    .ok_or_else(|| malformed(s, "Unexpected end of input."))?,
                            );
                            keep = item.len();
                        } else {
                            item.push(c);
                            if !is_space(c) {
                                keep = item.len();
                            }
                        }
                    }
                    item.truncate(keep);
                    if item.is_empty() {
                        let c = chars
                            .peek()
                            .copied()
                            .map_or("end of input".into(), |c| format!("\"{c}\" character"));
                        return Err(malformed(s, &format!("Unexpected {c}.")));
                    }
                }
            }
            out.push(if !quoted && item.eq_ignore_ascii_case("null") { None } else { Some(item) });
            match chars.next() {
                Some(',') => {}
                Some('}') => break,
                None => return Err(malformed(s, "Unexpected end of input.")),
                Some(c) => return Err(malformed(s, &format!("Unexpected \"{c}\" character."))),
            }
        }
    }
    if chars.any(|c| !is_space(c)) {
        return Err(malformed(s, "Junk after closing right brace."));
    }
    Ok(out)
}

/// Reads the text form of an array of `elem` (each element through `elem`'s input function).
pub(crate) fn parse_array(s: &str, elem: &DataType, zone: Zone) -> Result<Value> {
    let items = split_text(s)?
        .into_iter()
        .map(|item| match item {
            None => Ok(Value::Null),
            Some(t) => parse_text_zoned(&t, elem, zone),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Array(Arc::new(items)))
}

/// Appends the text form of `items` (elements of type `elem`) to `out`.
pub(crate) fn write_array(items: &[Value], elem: &DataType, zone: Zone, out: &mut String) {
    out.push('{');
    let mut text = String::new();
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if v.is_null() {
            out.push_str("NULL");
            continue;
        }
        text.clear();
        format_text_zoned_into(v, elem, zone, &mut text);
        let quote = text.is_empty()
            || text.eq_ignore_ascii_case("null")
            || text.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || is_space(c));
        if quote {
            out.push('"');
            for c in text.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        } else {
            out.push_str(&text);
        }
    }
    out.push('}');
}

/// `22P03` with `array_recv`'s message.
fn bad_binary(message: &str) -> Error {
    Error::InvalidBinaryRepresentation { message: message.into() }
}

fn be_i32(b: &[u8], at: usize) -> Result<i32> {
    b.get(at..at + 4)
        .map(|x| i32::from_be_bytes(x.try_into().expect("four bytes")))
        .ok_or_else(|| bad_binary("insufficient data left in message"))
}

/// Reads the binary form of an array of `elem` (a Bind parameter).
pub(crate) fn decode_array_binary(b: &[u8], elem: &DataType) -> Result<Value> {
    let ndim = be_i32(b, 0)?;
    let _has_null = be_i32(b, 4)?;
    let oid = be_i32(b, 8)? as u32;
    let mut at = 12;
    let len = match ndim {
        0 => 0,
        1 => {
            let len = be_i32(b, at)?;
            let lower = be_i32(b, at + 4)?;
            at += 8;
            if len < 0 {
                return Err(bad_binary("invalid array dimensions"));
            }
            if lower != 1 && len > 0 {
                return Err(Error::unsupported("an array whose lower bound is not 1"));
            }
            len as usize
        }
        n if n < 0 => return Err(bad_binary(&format!("invalid number of dimensions: {n}"))),
        _ => return Err(Error::unsupported("multidimensional arrays")),
    };
    // `array_recv` reads the elements with the element type the array says it has; Aspen's
    // element types are its own, so a different element OID is refused as PostgreSQL does.
    if oid != elem.oid() && !(oid == 1042 && *elem == DataType::Text) {
        return Err(Error::DatatypeMismatch {
            message: format!(
                "binary data has array element type {oid} instead of expected {}",
                elem.oid()
            ),
            span: None,
        });
    }
    let mut items = Vec::with_capacity(len.min(1 << 16));
    for _ in 0..len {
        let n = be_i32(b, at)?;
        at += 4;
        if n == -1 {
            items.push(Value::Null);
            continue;
        }
        let n = usize::try_from(n).map_err(|_| bad_binary("insufficient data left in message"))?;
        let bytes =
            b.get(at..at + n).ok_or_else(|| bad_binary("insufficient data left in message"))?;
        at += n;
        items.push(decode_binary(bytes, elem)?);
    }
    if at != b.len() {
        return Err(bad_binary("incorrect binary data format in array element"));
    }
    Ok(Value::Array(Arc::new(items)))
}

/// Appends the binary form of `items` (elements of type `elem`) to `out`.
pub(crate) fn encode_array_binary(items: &[Value], elem: &DataType, out: &mut Vec<u8>) {
    let ndim: i32 = if items.is_empty() { 0 } else { 1 };
    out.extend_from_slice(&ndim.to_be_bytes());
    out.extend_from_slice(&i32::from(items.iter().any(Value::is_null)).to_be_bytes());
    out.extend_from_slice(&elem.oid().to_be_bytes());
    if ndim == 1 {
        out.extend_from_slice(&(items.len() as i32).to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
    }
    for v in items {
        if v.is_null() {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        encode_binary(v, elem, out);
        let n = (out.len() - at - 4) as i32;
        out[at..at + 4].copy_from_slice(&n.to_be_bytes());
    }
}

/// PostgreSQL's array order (`btarraycmp`), total: element by element in the ORDER BY order
/// (NULL elements last), then the shorter array first.
pub(crate) fn cmp(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match sort_cmp(x, y) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// SQL equality of two elements as the array operators use it (`@>`, `<@`, `&&`,
/// `array_position`, `array_remove`): NULL equals nothing.
fn elem_eq(x: &Value, y: &Value) -> bool {
    super::compare(x, y) == Some(Ordering::Equal)
}

/// `a @> b`: every element of `b` is an element of `a` (`array_contain_compare`: NULL
/// matches nothing, so a NULL element in `b` makes it false).
pub(crate) fn contains(a: &[Value], b: &[Value]) -> bool {
    b.iter().all(|y| a.iter().any(|x| elem_eq(x, y)))
}

/// `a && b`: an element in common (NULLs never match).
pub(crate) fn overlaps(a: &[Value], b: &[Value]) -> bool {
    b.iter().any(|y| a.iter().any(|x| elem_eq(x, y)))
}

/// The 1-based position of the first element at or after `start` (1-based) that is not
/// distinct from `x` (`array_position`: NULL finds a NULL element).
pub(crate) fn position(a: &[Value], x: &Value, start: usize) -> Option<usize> {
    a.iter()
        .enumerate()
        .skip(start.saturating_sub(1))
        .find(|(_, y)| not_distinct(x, y))
        .map(|(i, _)| i + 1)
}

/// `IS NOT DISTINCT FROM` for elements.
pub(crate) fn not_distinct(x: &Value, y: &Value) -> bool {
    match (x.is_null(), y.is_null()) {
        (true, true) => true,
        (false, false) => elem_eq(x, y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(a: &[Option<i32>]) -> Vec<Value> {
        a.iter().map(|x| x.map_or(Value::Null, Value::Int32)).collect()
    }

    #[test]
    fn text_round_trip_and_quoting() {
        let s = |t: &str| split_text(t).unwrap();
        assert_eq!(s("{a,b}"), vec![Some("a".into()), Some("b".into())]);
        assert_eq!(
            s(r#" { "a b" , c\,d , NULL,"NULL", x\  }"#),
            vec![
                Some("a b".into()),
                Some("c,d".into()),
                None,
                Some("NULL".into()),
                Some("x ".into())
            ]
        );
        assert_eq!(s("{}"), Vec::<Option<String>>::new());
        assert_eq!(s("{ }"), Vec::<Option<String>>::new());
        for bad in ["a,b", "{a,}", "{a", "{a}x", "{,a}", "{\"a}", "{a\"b}", "{a b\"}"] {
            assert!(split_text(bad).is_err(), "{bad}");
        }
        assert!(matches!(split_text("{{1},{2}}"), Err(Error::Unsupported { .. })));
        let items = vec![
            Value::Text("".into()),
            Value::Text("null".into()),
            Value::Text("a b".into()),
            Value::Text("q\"\\".into()),
            Value::Null,
            Value::Text("plain".into()),
        ];
        let mut out = String::new();
        write_array(&items, &DataType::Text, Zone::UTC, &mut out);
        assert_eq!(out, r#"{"","null","a b","q\"\\",NULL,plain}"#);
        let back = parse_array(&out, &DataType::Text, Zone::UTC).unwrap();
        assert_eq!(back, Value::Array(Arc::new(items)));
    }

    #[test]
    fn binary_round_trip() {
        for items in [ints(&[Some(1), None, Some(-3)]), ints(&[])] {
            let mut out = Vec::new();
            encode_array_binary(&items, &DataType::Int32, &mut out);
            let back = decode_array_binary(&out, &DataType::Int32).unwrap();
            assert_eq!(back, Value::Array(Arc::new(items)));
            assert!(decode_array_binary(&out, &DataType::Int64).is_err() || out.len() == 12);
        }
        assert!(decode_array_binary(&[0, 0, 0, 1], &DataType::Int32).is_err());
    }

    #[test]
    fn order_and_membership() {
        let a = ints(&[Some(1), Some(2)]);
        let b = ints(&[Some(1), Some(2), Some(0)]);
        let n = ints(&[Some(1), None]);
        assert_eq!(cmp(&a, &b), Ordering::Less);
        assert_eq!(cmp(&n, &a), Ordering::Greater);
        assert_eq!(cmp(&n, &n), Ordering::Equal);
        assert!(contains(&b, &a) && !contains(&a, &b) && !contains(&n, &n));
        assert!(overlaps(&a, &n) && !overlaps(&ints(&[None]), &n));
        assert_eq!(position(&b, &Value::Int32(2), 1), Some(2));
        assert_eq!(position(&b, &Value::Int32(1), 2), None);
        assert_eq!(position(&n, &Value::Null, 1), Some(2));
    }
}
