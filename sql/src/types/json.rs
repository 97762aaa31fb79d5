//! `json` (OID 114): JSON kept exactly as it was written — white space, key order, duplicate
//! keys, `\u0000` — once checked against the grammar (the errors are jsonb's, `22P02`). It
//! has no equality or order (PostgreSQL's has no `=`), so it is never a key, a group or a sort
//! key; the binder refuses those as PostgreSQL does.
//!
//! Navigation (`->`, `->>`, `#>`, the set-returning functions) walks the text and gives back
//! the text of what it finds, as written: `'{"a": [1,  2]}'::json -> 'a'` is `[1,  2]`; of
//! duplicate keys the last one counts. The functions that build json write PostgreSQL's
//! layout: `{"a" : 1, "b" : 2}` (json_build_object), `[1, 2]` (json_build_array, json_agg),
//! `{ "a" : 1 }` (json_object_agg).

use super::jsonb::{write_string, Parser};
use crate::error::{Error, Result};

/// Checks `s` as json input.
pub fn check(s: &str) -> Result<()> {
    Parser::json(s).check_whole()
}

/// The kind of the value `text` holds, as json_typeof names it.
pub fn type_name(text: &str) -> &'static str {
    match text.trim_start_matches([' ', '\t', '\n', '\r']).as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// An object's members (keys decoded, values as written), or `None` if `text` is not an
/// object.
pub fn members(text: &str) -> Result<Option<Vec<(String, &str)>>> {
    let mut p = Parser::json(text);
    if p.peek() != Some(b'{') {
        return Ok(None);
    }
    p.expect(b'{')?;
    let mut out = Vec::new();
    if p.peek() == Some(b'}') {
        return Ok(Some(out));
    }
    loop {
        let key = p.string_value()?;
        p.expect(b':')?;
        out.push((key, p.value_text()?));
        match p.peek() {
            Some(b',') => p.expect(b',')?,
            _ => return Ok(Some(out)),
        }
    }
}

/// An array's elements as written, or `None` if `text` is not an array.
pub fn elements(text: &str) -> Result<Option<Vec<&str>>> {
    let mut p = Parser::json(text);
    if p.peek() != Some(b'[') {
        return Ok(None);
    }
    p.expect(b'[')?;
    let mut out = Vec::new();
    if p.peek() == Some(b']') {
        return Ok(Some(out));
    }
    loop {
        out.push(p.value_text()?);
        match p.peek() {
            Some(b',') => p.expect(b',')?,
            _ => return Ok(Some(out)),
        }
    }
}

/// `->` with a key: the last member named `key`, if `text` is an object.
pub fn get_key<'a>(text: &'a str, key: &str) -> Result<Option<&'a str>> {
    Ok(members(text)?.and_then(|m| m.into_iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)))
}

/// `->` with an index: element `i` of an array (negative counts from the end).
pub fn get_index(text: &str, i: i64) -> Result<Option<&str>> {
    let Some(items) = elements(text)? else { return Ok(None) };
    let i = if i < 0 { items.len() as i64 + i } else { i };
    Ok(usize::try_from(i).ok().and_then(|i| items.get(i).copied()))
}

/// `#>`: follows `path` (keys, or integers for arrays).
pub fn get_path<'a>(text: &'a str, path: &[&str]) -> Result<Option<&'a str>> {
    let mut at = text;
    for step in path {
        let next = match type_name(at) {
            "object" => get_key(at, step)?,
            "array" => match step.trim().parse::<i64>() {
                Ok(i) => get_index(at, i)?,
                Err(_) => None,
            },
            _ => None,
        };
        let Some(next) = next else { return Ok(None) };
        at = next;
    }
    Ok(Some(at))
}

/// `->>`: a string decoded, NULL for `null`, anything else as written.
pub fn as_text(value: &str) -> Result<Option<String>> {
    match type_name(value) {
        "null" => Ok(None),
        "string" => {
            let s = Parser::json(value).string_value()?;
            if s.contains('\0') {
                return Err(Error::UnsupportedUnicodeEscape {
                    detail: "\\u0000 cannot be converted to text.".into(),
                });
            }
            Ok(Some(s))
        }
        _ => Ok(Some(value.trim_matches([' ', '\t', '\n', '\r']).to_string())),
    }
}

/// An object of `pairs` (values already json text) in one of PostgreSQL's layouts: what
/// opens it, what follows a key, what separates members, what closes it.
fn object_text(pairs: &[(String, String)], layout: [&str; 4]) -> String {
    let [open, colon, comma, close] = layout;
    let mut out = String::from(open);
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push_str(comma);
        }
        write_string(k, &mut out);
        out.push_str(colon);
        out.push_str(v);
    }
    out.push_str(close);
    out
}

/// json_build_object's layout: `{"a" : 1, "b" : 2}`.
pub fn build_object(pairs: &[(String, String)]) -> String {
    object_text(pairs, ["{", " : ", ", ", "}"])
}

/// json_object_agg's layout: `{ "a" : 1, "b" : 2 }`.
pub fn object_agg(pairs: &[(String, String)]) -> String {
    object_text(pairs, ["{ ", " : ", ", ", " }"])
}

/// row_to_json's layout: `{"a":1,"b":"x"}`.
pub fn row(pairs: &[(String, String)]) -> String {
    object_text(pairs, ["{", ":", ",", "}"])
}

/// json_agg's layout of rows: `[{…}, \n {…}]` (a NULL row is `null`, without the newline).
pub fn array_of_rows(items: &[String]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
            if item != "null" {
                out.push_str("\n ");
            }
        }
        out.push_str(item);
    }
    out.push(']');
    out
}

/// json_build_array's and json_agg's layout: `[1, 2]`.
pub fn array(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn navigation_gives_the_text_as_written() {
        let doc = r#" {"a" : [1,  2], "b":"x\ny", "a2": null, "b": {"c" : true}} "#;
        assert_eq!(get_key(doc, "a").unwrap(), Some("[1,  2]"));
        assert_eq!(get_key(doc, "b").unwrap(), Some(r#"{"c" : true}"#));
        assert_eq!(get_path(doc, &["a", "-1"]).unwrap(), Some("2"));
        assert_eq!(get_path(doc, &["b", "c"]).unwrap(), Some("true"));
        assert_eq!(get_path(doc, &["a", "x"]).unwrap(), None);
        assert_eq!(as_text(r#""x\ny""#).unwrap().as_deref(), Some("x\ny"));
        assert_eq!(as_text("null").unwrap(), None);
        assert!(as_text(r#""\u0000""#).is_err());
        assert_eq!(type_name("  [1]"), "array");
        assert!(check(r#""\u0000""#).is_ok());
        assert!(check("1e400").is_ok());
        assert!(check("{").is_err());
    }
}
