//! `jsonb` (OID 3802): PostgreSQL's binary JSON, kept here as a tree.
//!
//! What PostgreSQL 15 does, and so what this module does:
//!
//! - **Input** is RFC 8259 JSON (PostgreSQL's `json_lex`): numbers become `numeric` (their
//!   text as `numeric_in` reads it, so `1.50` keeps its scale and `1e2` is `100`), `\uXXXX`
//!   escapes are decoded (`\u0000` is refused: `22P05`), and an object keeps the last of
//!   duplicate keys. Errors are `22P02` "invalid input syntax for type json" with the lexer's
//!   detail ("Token "x" is invalid.", "The input string ended unexpectedly.", …).
//! - **Storage order** of an object's keys is shorter first, then bytewise; **output**
//!   (`JsonbToCString`) writes `{"a": 1, "b": [1, 2]}`, escaping `"`, `\` and control
//!   characters only.
//! - **Order** (`compareJsonbContainers`): object > array > boolean > number > string > null;
//!   more pairs or elements sort after fewer; then pair by pair (key, then value) or element by
//!   element. A top-level scalar is a one-element "raw scalar" array, below a real array of one
//!   element (so `[] < 'null' < [null]`). [`key_encode`] writes bytes that sort in this order.
//! - **Containment** (`@>`), existence (`?`), `->`, `->>`, `#>`, `||`, `-` and the functions
//!   follow `jsonb_util.c` / `jsonfuncs.c`; see each function.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::numeric::Numeric;
use crate::error::{Error, Result};

/// Deepest nesting accepted on input (PostgreSQL's limit is its stack depth; this one keeps
/// every recursive walk here far from the end of a thread's stack).
pub const MAX_DEPTH: usize = 1000;

/// One JSON value. An object's pairs are in storage order (see the module doc), keys unique.
#[derive(Debug, Clone, PartialEq)]
pub enum Jsonb {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number (never NaN or infinite).
    Number(Numeric),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Jsonb>),
    /// An object: (key, value) pairs in storage order.
    Object(Vec<(String, Jsonb)>),
}

/// PostgreSQL's storage order of object keys (`lengthCompareJsonbStringValue`).
fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// `22P02` "invalid input syntax for type json" with the lexer's detail.
fn syntax(detail: String) -> Error {
    Error::InvalidJson { detail }
}

/// `22023`, the code of the jsonb functions' argument errors.
pub(crate) fn invalid_parameter(message: impl Into<String>) -> Error {
    Error::DataException { message: message.into(), sqlstate: "22023" }
}

impl Jsonb {
    /// An object from pairs in any order; of duplicate keys the last wins.
    pub fn object(mut pairs: Vec<(String, Jsonb)>) -> Jsonb {
        // Stable: equal keys keep their order, and the last of each run is kept.
        pairs.sort_by(|a, b| key_order(&a.0, &b.0));
        let mut out: Vec<(String, Jsonb)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        Jsonb::Object(out)
    }

    /// Parses JSON text (see the module doc).
    pub fn parse(s: &str) -> Result<Jsonb> {
        let mut p = Parser { s: s.as_bytes(), text: s, i: 0, json: false };
        p.skip_ws();
        let v = p.value(0)?;
        p.skip_ws();
        if p.i < p.s.len() {
            let tok = p.token_at(p.i);
            return Err(syntax(format!("Expected end of input, but found \"{tok}\".")));
        }
        Ok(v)
    }

    /// `jsonb_typeof`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "number",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    /// The name PostgreSQL's cast errors give this kind of value ("cannot cast jsonb string
    /// to type integer").
    fn cast_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "numeric",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    /// This value as an object key, as jsonb_build_object and the object aggregates take one:
    /// a string's text, another scalar's output text; `None` for `null`; a container is
    /// `22023`.
    pub fn into_key(self) -> Result<Option<String>> {
        match self {
            Jsonb::Null => Ok(None),
            Jsonb::String(s) => Ok(Some(s)),
            Jsonb::Array(_) | Jsonb::Object(_) => {
                Err(invalid_parameter("key value must be scalar, not array, composite, or json"))
            }
            scalar => Ok(Some(scalar.to_text())),
        }
    }

    /// The number inside, for a cast to a numeric type named `to`.
    pub fn as_number(&self, to: &str) -> Result<&Numeric> {
        match self {
            Jsonb::Number(n) => Ok(n),
            other => Err(invalid_parameter(format!(
                "cannot cast jsonb {} to type {to}",
                other.cast_name()
            ))),
        }
    }

    /// The boolean inside, for a cast to `boolean`.
    pub fn as_bool(&self) -> Result<bool> {
        match self {
            Jsonb::Bool(b) => Ok(*b),
            other => Err(invalid_parameter(format!(
                "cannot cast jsonb {} to type boolean",
                other.cast_name()
            ))),
        }
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Jsonb::Array(_) | Jsonb::Object(_))
    }

    /// The output text (`jsonb_out`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// Appends the output text.
    pub fn write(&self, out: &mut String) {
        match self {
            Jsonb::Null => out.push_str("null"),
            Jsonb::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Jsonb::Number(n) => n.write_text(out),
            Jsonb::String(s) => write_string(s, out),
            Jsonb::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Jsonb::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_string(k, out);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// `jsonb_pretty`: four spaces per level, one element or pair per line.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(0, &mut out);
        out
    }

    fn write_pretty(&self, level: usize, out: &mut String) {
        let indent = |out: &mut String, level: usize| {
            out.push('\n');
            for _ in 0..level {
                out.push_str("    ");
            }
        };
        match self {
            Jsonb::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    indent(out, level + 1);
                    v.write_pretty(level + 1, out);
                }
                indent(out, level);
                out.push(']');
            }
            Jsonb::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    indent(out, level + 1);
                    write_string(k, out);
                    out.push_str(": ");
                    v.write_pretty(level + 1, out);
                }
                indent(out, level);
                out.push('}');
            }
            scalar => scalar.write(out),
        }
    }

    /// `->` with a key: the value under `key` of an object; NULL (None) otherwise.
    pub fn get_key(&self, key: &str) -> Option<&Jsonb> {
        match self {
            Jsonb::Object(pairs) => {
                pairs.binary_search_by(|(k, _)| key_order(k, key)).ok().map(|i| &pairs[i].1)
            }
            _ => None,
        }
    }

    /// `->` with an index: the element of an array (negative counts from the end). A
    /// top-level scalar is its own element 0 (PostgreSQL's raw-scalar array).
    pub fn get_index(&self, i: i64) -> Option<&Jsonb> {
        match self {
            scalar if scalar.is_scalar() => matches!(i, 0 | -1).then_some(self),
            Jsonb::Array(items) => {
                let i = if i < 0 { items.len() as i64 + i } else { i };
                usize::try_from(i).ok().and_then(|i| items.get(i))
            }
            _ => None,
        }
    }

    /// `#>` / `jsonb_extract_path`: follows `path` (keys, or integers for arrays).
    pub fn get_path<'a>(&'a self, path: &[&str]) -> Option<&'a Jsonb> {
        let mut at = self;
        for step in path {
            at = match at {
                Jsonb::Object(_) => at.get_key(step)?,
                Jsonb::Array(items) => {
                    let i = step.trim().parse::<i64>().ok()?;
                    let i = if i < 0 { items.len() as i64 + i } else { i };
                    items.get(usize::try_from(i).ok()?)?
                }
                _ => return None,
            };
        }
        Some(at)
    }

    /// `->>`: a string's text, NULL for `null`, otherwise the output text.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Jsonb::Null => None,
            Jsonb::String(s) => Some(s.clone()),
            other => Some(other.to_text()),
        }
    }

    /// `?`: `key` is a top-level key of an object, or a string element of an array (a
    /// top-level string scalar counts as such an array).
    pub fn exists(&self, key: &str) -> bool {
        match self {
            Jsonb::Object(_) => self.get_key(key).is_some(),
            Jsonb::Array(items) => items.iter().any(|v| matches!(v, Jsonb::String(s) if s == key)),
            Jsonb::String(s) => s == key,
            _ => false,
        }
    }

    /// `@>` (`JsonbDeepContains`): every pair of an object in `other` is in this object (a
    /// container value contained recursively, a scalar equal); every element of an array in
    /// `other` is in this array, in any order. A top-level scalar is a one-element array, so
    /// `'[1, 2]' @> '1'` holds and `'1' @> '[1]'` does not.
    pub fn contains(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (a, b) if a.is_scalar() && b.is_scalar() => scalar_eq(a, b),
            (Jsonb::Array(items), b) if b.is_scalar() => items.iter().any(|v| scalar_eq(v, b)),
            (a, _) if a.is_scalar() => false,
            _ => contains_container(self, other),
        }
    }

    /// `||` (`IteratorConcat`): two objects merge (the right one's keys win), two arrays
    /// concatenate, anything else is wrapped into an array first (an object as one element).
    pub fn concat(&self, other: &Jsonb) -> Jsonb {
        match (self, other) {
            (Jsonb::Object(a), Jsonb::Object(b)) => {
                let mut pairs = a.clone();
                pairs.extend(b.iter().cloned());
                Jsonb::object(pairs)
            }
            (a, b) => {
                let mut items = a.elements();
                items.extend(b.elements());
                Jsonb::Array(items)
            }
        }
    }

    /// This value as array elements: an array's elements, anything else as one.
    fn elements(&self) -> Vec<Jsonb> {
        match self {
            Jsonb::Array(items) => items.clone(),
            other => vec![other.clone()],
        }
    }

    /// `- text`: an object without `key`; an array without its string elements equal to
    /// `key`. A scalar: `22023` "cannot delete from scalar".
    pub fn delete_key(&self, key: &str) -> Result<Jsonb> {
        match self {
            Jsonb::Object(pairs) => {
                Ok(Jsonb::Object(pairs.iter().filter(|(k, _)| k != key).cloned().collect()))
            }
            Jsonb::Array(items) => Ok(Jsonb::Array(
                items
                    .iter()
                    .filter(|v| !matches!(v, Jsonb::String(s) if s == key))
                    .cloned()
                    .collect(),
            )),
            _ => Err(invalid_parameter("cannot delete from scalar")),
        }
    }

    /// `- integer`: an array without its element `i` (negative counts from the end; out of
    /// range: unchanged).
    pub fn delete_index(&self, i: i64) -> Result<Jsonb> {
        match self {
            Jsonb::Array(items) => {
                let n = items.len() as i64;
                let i = if i < 0 { n + i } else { i };
                let mut items = items.clone();
                if (0..n).contains(&i) {
                    items.remove(i as usize);
                }
                Ok(Jsonb::Array(items))
            }
            Jsonb::Object(_) => {
                Err(invalid_parameter("cannot delete from object using integer index"))
            }
            _ => Err(invalid_parameter("cannot delete from scalar")),
        }
    }

    /// `jsonb_array_length`.
    pub fn array_length(&self) -> Result<i32> {
        match self {
            Jsonb::Array(items) => Ok(items.len() as i32),
            Jsonb::Object(_) => Err(invalid_parameter("cannot get array length of a non-array")),
            _ => Err(invalid_parameter("cannot get array length of a scalar")),
        }
    }

    /// `jsonb_strip_nulls`: object fields whose value is `null` removed, at every depth
    /// (array elements stay).
    pub fn strip_nulls(&self) -> Jsonb {
        match self {
            Jsonb::Object(pairs) => Jsonb::Object(
                pairs
                    .iter()
                    .filter(|(_, v)| *v != Jsonb::Null)
                    .map(|(k, v)| (k.clone(), v.strip_nulls()))
                    .collect(),
            ),
            Jsonb::Array(items) => Jsonb::Array(items.iter().map(Jsonb::strip_nulls).collect()),
            other => other.clone(),
        }
    }

    /// `jsonb_set(target, path, new, create_missing)`: `new` put at `path` (`setPath`). A
    /// missing last key is added when `create` is set; a missing step before it leaves the
    /// value unchanged. Array steps must be integers (`22P02`); a scalar target is `22023`.
    pub fn set_path(&self, path: &[&str], new: &Jsonb, create: bool) -> Result<Jsonb> {
        if self.is_scalar() {
            return Err(invalid_parameter("cannot set path in scalar"));
        }
        if path.is_empty() {
            return Ok(self.clone());
        }
        self.set_at(path, 0, new, create)
    }

    fn set_at(&self, path: &[&str], level: usize, new: &Jsonb, create: bool) -> Result<Jsonb> {
        let last = level + 1 == path.len();
        let step = path[level];
        match self {
            Jsonb::Object(pairs) => {
                let mut pairs = pairs.clone();
                match pairs.binary_search_by(|(k, _)| key_order(k, step)) {
                    Ok(i) if last => pairs[i].1 = new.clone(),
                    Ok(i) => {
                        let inner = pairs[i].1.set_at(path, level + 1, new, create)?;
                        pairs[i].1 = inner;
                    }
                    Err(i) if last && create => pairs.insert(i, (step.to_string(), new.clone())),
                    Err(_) => {}
                }
                Ok(Jsonb::Object(pairs))
            }
            Jsonb::Array(items) => {
                let idx = array_step(step, level)?;
                let mut items = items.clone();
                let n = items.len() as i64;
                let at = if idx < 0 { n + idx } else { idx };
                if (0..n).contains(&at) {
                    let i = at as usize;
                    items[i] = if last {
                        new.clone()
                    } else {
                        items[i].set_at(path, level + 1, new, create)?
                    };
                } else if last && create {
                    // Before the first element or after the last, as PostgreSQL adds it.
                    if at < 0 {
                        items.insert(0, new.clone());
                    } else {
                        items.push(new.clone());
                    }
                }
                Ok(Jsonb::Array(items))
            }
            scalar => Ok(scalar.clone()),
        }
    }

    /// `#-`: the value at `path` removed, if there is one (`deletePath`). Array steps must be
    /// integers (`22P02`); a scalar is `22023`.
    pub fn delete_path(&self, path: &[&str]) -> Result<Jsonb> {
        if self.is_scalar() {
            return Err(invalid_parameter("cannot delete path in scalar"));
        }
        if path.is_empty() {
            return Ok(self.clone());
        }
        self.delete_at(path, 0)
    }

    fn delete_at(&self, path: &[&str], level: usize) -> Result<Jsonb> {
        let last = level + 1 == path.len();
        let step = path[level];
        match self {
            Jsonb::Object(pairs) => {
                let mut pairs = pairs.clone();
                if let Ok(i) = pairs.binary_search_by(|(k, _)| key_order(k, step)) {
                    if last {
                        pairs.remove(i);
                    } else {
                        let inner = pairs[i].1.delete_at(path, level + 1)?;
                        pairs[i].1 = inner;
                    }
                }
                Ok(Jsonb::Object(pairs))
            }
            Jsonb::Array(items) => {
                let idx = array_step(step, level)?;
                let mut items = items.clone();
                let n = items.len() as i64;
                let at = if idx < 0 { n + idx } else { idx };
                if (0..n).contains(&at) {
                    let i = at as usize;
                    if last {
                        items.remove(i);
                    } else {
                        items[i] = items[i].delete_at(path, level + 1)?;
                    }
                }
                Ok(Jsonb::Array(items))
            }
            scalar => Ok(scalar.clone()),
        }
    }

    /// The total order of the module doc.
    pub fn cmp_total(&self, other: &Jsonb) -> Ordering {
        compare_top(self, other)
    }
}

/// An array step of a path: an integer, or `22P02`.
fn array_step(step: &str, level: usize) -> Result<i64> {
    step.trim().parse().map_err(|_| Error::InvalidTextRepresentation {
        message: format!("path element at position {} is not an integer: \"{step}\"", level + 1),
    })
}

/// Equality of two scalars as containment and existence see it (numbers by value).
fn scalar_eq(a: &Jsonb, b: &Jsonb) -> bool {
    match (a, b) {
        (Jsonb::Null, Jsonb::Null) => true,
        (Jsonb::Bool(x), Jsonb::Bool(y)) => x == y,
        (Jsonb::Number(x), Jsonb::Number(y)) => x.cmp(y) == Ordering::Equal,
        (Jsonb::String(x), Jsonb::String(y)) => x == y,
        _ => false,
    }
}

fn contains_container(val: &Jsonb, cont: &Jsonb) -> bool {
    match (val, cont) {
        (Jsonb::Object(vp), Jsonb::Object(cp)) => {
            if vp.len() < cp.len() {
                return false;
            }
            cp.iter().all(|(k, cv)| match val.get_key(k) {
                None => false,
                Some(vv) if cv.is_scalar() => scalar_eq(vv, cv),
                Some(vv) => !vv.is_scalar() && contains_container(vv, cv),
            })
        }
        (Jsonb::Array(vi), Jsonb::Array(ci)) => ci.iter().all(|c| {
            if c.is_scalar() {
                vi.iter().any(|v| scalar_eq(v, c))
            } else {
                vi.iter().any(|v| !v.is_scalar() && contains_container(v, c))
            }
        }),
        _ => false,
    }
}

/// Rank of a value's type in PostgreSQL's order (`enum jbvType`).
fn rank(v: &Jsonb) -> u8 {
    match v {
        Jsonb::Null => 0,
        Jsonb::String(_) => 1,
        Jsonb::Number(_) => 2,
        Jsonb::Bool(_) => 3,
        Jsonb::Array(_) => 4,
        Jsonb::Object(_) => 5,
    }
}

/// Top level: a scalar is a raw-scalar array of one element.
fn compare_top(a: &Jsonb, b: &Jsonb) -> Ordering {
    match (a.is_scalar(), b.is_scalar()) {
        (true, true) | (false, false) => compare_value(a, b),
        (false, true) => container_vs_raw_scalar(a),
        (true, false) => container_vs_raw_scalar(b).reverse(),
    }
}

/// A top-level container against a top-level scalar: an array by its length against the raw
/// scalar's one element (the raw scalar first when equal); an object after every array.
fn container_vs_raw_scalar(c: &Jsonb) -> Ordering {
    match c {
        Jsonb::Array(items) => items.len().cmp(&1).then(Ordering::Greater),
        _ => Ordering::Greater,
    }
}

fn compare_value(a: &Jsonb, b: &Jsonb) -> Ordering {
    match (a, b) {
        (Jsonb::Null, Jsonb::Null) => Ordering::Equal,
        (Jsonb::Bool(x), Jsonb::Bool(y)) => x.cmp(y),
        (Jsonb::Number(x), Jsonb::Number(y)) => x.cmp(y),
        (Jsonb::String(x), Jsonb::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Jsonb::Array(x), Jsonb::Array(y)) => x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|(p, q)| compare_value(p, q))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }),
        (Jsonb::Object(x), Jsonb::Object(y)) => x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|((ka, va), (kb, vb))| {
                    ka.as_bytes().cmp(kb.as_bytes()).then_with(|| compare_value(va, vb))
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Appends bytes that sort as [`Jsonb::cmp_total`] and are equal exactly for equal values;
/// `string` writes a string's bytes self-delimited, `number` a number's.
pub(crate) fn key_encode(
    v: &Jsonb,
    out: &mut Vec<u8>,
    string: &impl Fn(&[u8], &mut Vec<u8>),
    number: &impl Fn(&Numeric, &mut Vec<u8>),
) {
    if v.is_scalar() {
        // The raw-scalar array: one element, below a real one-element array.
        out.push(0x50);
        out.extend_from_slice(&1u32.to_be_bytes());
        out.push(0);
    }
    key_value(v, out, string, number);
}

fn key_value(
    v: &Jsonb,
    out: &mut Vec<u8>,
    string: &impl Fn(&[u8], &mut Vec<u8>),
    number: &impl Fn(&Numeric, &mut Vec<u8>),
) {
    out.push(0x10 * (rank(v) + 1));
    match v {
        Jsonb::Null => {}
        Jsonb::Bool(b) => out.push(*b as u8),
        Jsonb::Number(n) => number(n, out),
        Jsonb::String(s) => string(s.as_bytes(), out),
        Jsonb::Array(items) => {
            out.extend_from_slice(&(items.len() as u32).to_be_bytes());
            out.push(1);
            for i in items {
                key_value(i, out, string, number);
            }
        }
        Jsonb::Object(pairs) => {
            out.extend_from_slice(&(pairs.len() as u32).to_be_bytes());
            for (k, val) in pairs {
                string(k.as_bytes(), out);
                key_value(val, out, string, number);
            }
        }
    }
}

/// PostgreSQL's `escape_json`.
pub(crate) fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub(crate) struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    /// Reading `json` (text kept as written): `\u0000` is accepted and numbers are only
    /// checked against the grammar.
    json: bool,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

impl<'a> Parser<'a> {
    /// A parser of `json` text (see [`Parser::json`]).
    pub(crate) fn json(text: &'a str) -> Parser<'a> {
        Parser { s: text.as_bytes(), text, i: 0, json: true }
    }

    /// Checks that the whole text is one JSON value.
    pub(crate) fn check_whole(&mut self) -> Result<()> {
        self.skip_ws();
        self.value(0)?;
        self.skip_ws();
        if self.i < self.s.len() {
            let tok = self.token_at(self.i);
            return Err(syntax(format!("Expected end of input, but found \"{tok}\".")));
        }
        Ok(())
    }

    /// The byte at the cursor after white space, if any.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    /// Steps over one expected byte (white space before it skipped).
    pub(crate) fn expect(&mut self, b: u8) -> Result<()> {
        if self.peek() != Some(b) {
            return Err(Error::internal("json text changed after it was checked"));
        }
        self.i += 1;
        Ok(())
    }

    /// The text of the value at the cursor (after white space), which it steps over.
    pub(crate) fn value_text(&mut self) -> Result<&'a str> {
        self.skip_ws();
        let start = self.i;
        self.value(0)?;
        Ok(&self.text[start..self.i])
    }

    /// The string at the cursor (after white space), decoded.
    pub(crate) fn string_value(&mut self) -> Result<String> {
        self.skip_ws();
        self.string()
    }

    fn skip_ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    /// The token PostgreSQL's lexer reports at `at`: a run of word characters, or one
    /// character.
    fn token_at(&self, at: usize) -> &str {
        let mut end = at;
        while end < self.s.len() && is_word(self.s[end]) {
            end += 1;
        }
        if end == at {
            end = at + self.text[at..].chars().next().map_or(0, char::len_utf8);
        }
        &self.text[at..end]
    }

    fn end(&self) -> Error {
        syntax("The input string ended unexpectedly.".into())
    }

    /// A value; `what` names the expectation in an error at the first token.
    fn value(&mut self, depth: usize) -> Result<Jsonb> {
        self.value_or(depth, |tok| format!("Expected JSON value, but found \"{tok}\"."))
    }

    fn value_or(&mut self, depth: usize, expected: impl Fn(&str) -> String) -> Result<Jsonb> {
        if depth > MAX_DEPTH {
            return Err(Error::StatementTooComplex {
                message: "stack depth limit exceeded".into(),
            });
        }
        let Some(&b) = self.s.get(self.i) else { return Err(self.end()) };
        match b {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => Ok(Jsonb::String(self.string()?)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => {
                let tok = self.token_at(self.i);
                match tok {
                    "true" => {
                        self.i += 4;
                        Ok(Jsonb::Bool(true))
                    }
                    "false" => {
                        self.i += 5;
                        Ok(Jsonb::Bool(false))
                    }
                    "null" => {
                        self.i += 4;
                        Ok(Jsonb::Null)
                    }
                    _ if tok.bytes().all(is_word) => {
                        Err(syntax(format!("Token \"{tok}\" is invalid.")))
                    }
                    _ => Err(syntax(expected(tok))),
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Jsonb> {
        self.i += 1;
        let mut pairs = Vec::new();
        self.skip_ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Jsonb::Object(pairs));
        }
        loop {
            match self.s.get(self.i) {
                None => return Err(self.end()),
                Some(b'"') => {}
                Some(_) => {
                    let tok = self.token_at(self.i);
                    let first = pairs.is_empty();
                    return Err(self.unexpected(tok, |t| {
                        if first {
                            format!("Expected string or \"}}\", but found \"{t}\".")
                        } else {
                            format!("Expected string, but found \"{t}\".")
                        }
                    }));
                }
            }
            let key = self.string()?;
            self.skip_ws();
            match self.s.get(self.i) {
                Some(b':') => self.i += 1,
                None => return Err(self.end()),
                Some(_) => {
                    let tok = self.token_at(self.i);
                    return Err(
                        self.unexpected(tok, |t| format!("Expected \":\", but found \"{t}\"."))
                    );
                }
            }
            self.skip_ws();
            let v = self.value(depth)?;
            pairs.push((key, v));
            if self.next_or_close(b'}')? {
                return Ok(Jsonb::object(pairs));
            }
        }
    }

    /// After a member or an element: a `,` (more follow: false) or `close` (true).
    fn next_or_close(&mut self, close: u8) -> Result<bool> {
        self.skip_ws();
        match self.s.get(self.i) {
            Some(b',') => {
                self.i += 1;
                self.skip_ws();
                Ok(false)
            }
            Some(&b) if b == close => {
                self.i += 1;
                Ok(true)
            }
            None => Err(self.end()),
            Some(_) => {
                let tok = self.token_at(self.i);
                let close = close as char;
                Err(self.unexpected(tok, |t| {
                    format!("Expected \",\" or \"{close}\", but found \"{t}\".")
                }))
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Jsonb> {
        self.i += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Jsonb::Array(items));
        }
        loop {
            let first = items.is_empty();
            let v = self.value_or(depth, |t| {
                if first {
                    format!("Expected array element or \"]\", but found \"{t}\".")
                } else {
                    format!("Expected JSON value, but found \"{t}\".")
                }
            })?;
            items.push(v);
            if self.next_or_close(b']')? {
                return Ok(Jsonb::Array(items));
            }
        }
    }

    /// An error at an unexpected token: an invalid word is reported as such, a valid token
    /// with `expected`.
    fn unexpected(&self, tok: &str, expected: impl Fn(&str) -> String) -> Error {
        if tok.bytes().all(is_word) && !matches!(tok, "true" | "false" | "null") {
            let numeric = tok.bytes().next().is_some_and(|b| b.is_ascii_digit());
            if !numeric || tok.bytes().any(|b| !b.is_ascii_digit()) {
                return syntax(format!("Token \"{tok}\" is invalid."));
            }
        }
        syntax(expected(tok))
    }

    /// A number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, not followed by a word
    /// character.
    fn number(&mut self) -> Result<Jsonb> {
        let start = self.i;
        let s = self.s;
        let mut i = self.i;
        let mut ok = true;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        match s.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while s.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            _ => ok = false,
        }
        if ok && s.get(i) == Some(&b'.') {
            i += 1;
            if !s.get(i).is_some_and(u8::is_ascii_digit) {
                ok = false;
            }
            while s.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        if ok && matches!(s.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(s.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !s.get(i).is_some_and(u8::is_ascii_digit) {
                ok = false;
            }
            while s.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        // Trailing word characters make the whole run one invalid token.
        while s.get(i).is_some_and(|b| is_word(*b)) {
            ok = false;
            i += 1;
        }
        if !ok {
            let end = i.max(start + 1);
            return Err(syntax(format!("Token \"{}\" is invalid.", &self.text[start..end])));
        }
        self.i = i;
        if self.json {
            return Ok(Jsonb::Null);
        }
        let n = Numeric::parse(&self.text[start..i])?;
        Ok(Jsonb::Number(n))
    }

    fn string(&mut self) -> Result<String> {
        self.i += 1; // the opening quote
        let mut out = String::new();
        let start = self.i;
        let mut run = self.i; // start of the bytes not yet copied
        loop {
            let Some(&b) = self.s.get(self.i) else {
                // An unterminated string is one invalid token, from its quote on.
                let tok = &self.text[start - 1..];
                return Err(syntax(format!("Token \"{tok}\" is invalid.")));
            };
            match b {
                b'"' => {
                    out.push_str(&self.text[run..self.i]);
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(&self.text[run..self.i]);
                    self.escape(&mut out, start)?;
                    run = self.i;
                }
                b if b < 0x20 => {
                    return Err(syntax(format!("Character with value 0x{b:02x} must be escaped.")))
                }
                _ => self.i += 1,
            }
        }
    }

    /// One escape sequence at `self.i` (the backslash), appended to `out`.
    fn escape(&mut self, out: &mut String, _start: usize) -> Result<()> {
        let Some(&c) = self.s.get(self.i + 1) else {
            self.i += 1;
            return Err(self.end());
        };
        self.i += 2;
        match c {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let hi = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate: a low one must follow.
                    if self.s.get(self.i) == Some(&b'\\') && self.s.get(self.i + 1) == Some(&b'u') {
                        self.i += 2;
                        let lo = self.hex4()?;
                        if (0xD800..0xDC00).contains(&lo) {
                            return Err(syntax(
                                "Unicode high surrogate must not follow a high surrogate.".into(),
                            ));
                        }
                        if !(0xDC00..0xE000).contains(&lo) {
                            return Err(syntax(
                                "Unicode low surrogate must follow a high surrogate.".into(),
                            ));
                        }
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    } else {
                        return Err(syntax(
                            "Unicode low surrogate must follow a high surrogate.".into(),
                        ));
                    }
                } else if (0xDC00..0xE000).contains(&hi) {
                    return Err(syntax(
                        "Unicode low surrogate must follow a high surrogate.".into(),
                    ));
                } else {
                    hi
                };
                if code == 0 && self.json {
                    out.push('\0');
                    return Ok(());
                }
                if code == 0 {
                    return Err(Error::UnsupportedUnicodeEscape {
                        detail: "\\u0000 cannot be converted to text.".into(),
                    });
                }
                out.push(char::from_u32(code).expect("not a surrogate"));
            }
            _ => {
                let at = self.i - 1;
                let tok = self.token_at(at).chars().next().map(String::from).unwrap_or_default();
                return Err(syntax(format!("Escape sequence \"\\{tok}\" is invalid.")));
            }
        }
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self.s.get(self.i..self.i + 4).filter(|d| d.iter().all(u8::is_ascii_hexdigit));
        let Some(d) = digits else {
            return Err(syntax("\"\\u\" must be followed by four hexadecimal digits.".into()));
        };
        let v = u32::from_str_radix(std::str::from_utf8(d).expect("ASCII"), 16).expect("hex");
        self.i += 4;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Jsonb {
        Jsonb::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn output_is_postgres_canonical_form() {
        for (input, want) in [
            (
                r#"{"b":1,"a":[1,2.50,{"c":null}],"aa":true}"#,
                r#"{"a": [1, 2.50, {"c": null}], "b": 1, "aa": true}"#,
            ),
            (r#"{"a":1,"a":2}"#, r#"{"a": 2}"#),
            ("  1e2 ", "100"),
            ("-0", "0"),
            (r#""\u00e9\n\/\u0001""#, "\"é\\n/\\u0001\""),
            ("[]", "[]"),
            ("{}", "{}"),
            (r#""\ud83d\ude00""#, "\"😀\""),
        ] {
            assert_eq!(p(input).to_text(), want, "{input}");
        }
    }

    #[test]
    fn bad_input_names_the_token() {
        for (input, detail) in [
            ("x", "Token \"x\" is invalid."),
            ("{", "The input string ended unexpectedly."),
            (r#"{"a":}"#, "Expected JSON value, but found \"}\"."),
            (r#"{"a" 1}"#, "Expected \":\", but found \"1\"."),
            ("[1 2]", "Expected \",\" or \"]\", but found \"2\"."),
            (r#"{"a":1 "b":2}"#, "Expected \",\" or \"}\", but found \"\"\"."),
            ("[1,", "The input string ended unexpectedly."),
            ("01", "Token \"01\" is invalid."),
            ("1 2", "Expected end of input, but found \"2\"."),
            (r#""\q""#, "Escape sequence \"\\q\" is invalid."),
            ("\"a\nb\"", "Character with value 0x0a must be escaped."),
            ("{1:2}", "Expected string or \"}\", but found \"1\"."),
        ] {
            match Jsonb::parse(input) {
                Err(Error::InvalidJson { detail: d }) => assert_eq!(d, detail, "{input}"),
                other => panic!("{input}: {other:?}"),
            }
        }
        assert!(matches!(Jsonb::parse(r#""\u0000""#), Err(Error::UnsupportedUnicodeEscape { .. })));
        let deep = "[".repeat(MAX_DEPTH + 5);
        assert!(matches!(Jsonb::parse(&deep), Err(Error::StatementTooComplex { .. })));
    }

    #[test]
    fn order_and_key_bytes_agree() {
        let values: Vec<Jsonb> = [
            "[]",
            "null",
            "\"a\"",
            "\"b\"",
            "1",
            "2.5",
            "false",
            "true",
            "[null]",
            "[1]",
            "[[]]",
            "[1, 2]",
            "{}",
            r#"{"a": 1}"#,
            r#"{"b": 0}"#,
            r#"{"a": 2}"#,
            r#"{"a": 1, "b": 1}"#,
            "[{}]",
            "[\"x\"]",
            "{\"aa\": 1}",
        ]
        .iter()
        .map(|s| p(s))
        .collect();
        let key = |v: &Jsonb| {
            let mut out = Vec::new();
            key_encode(
                v,
                &mut out,
                &|b: &[u8], o: &mut Vec<u8>| {
                    o.extend_from_slice(b);
                    o.push(0);
                },
                &|n: &Numeric, o: &mut Vec<u8>| {
                    o.extend_from_slice(&n.to_f64_lossy().to_bits().to_be_bytes())
                },
            );
            out
        };
        for a in &values {
            for b in &values {
                assert_eq!(
                    key(a).cmp(&key(b)),
                    a.cmp_total(b),
                    "{} vs {}",
                    a.to_text(),
                    b.to_text()
                );
            }
        }
        assert_eq!(p("[]").cmp_total(&p("null")), Ordering::Less);
        assert_eq!(p("null").cmp_total(&p("[null]")), Ordering::Less);
        assert_eq!(p("1.0").cmp_total(&p("1")), Ordering::Equal);
    }

    #[test]
    fn containment_and_existence() {
        assert!(p(r#"{"a":1,"b":{"c":[1,2]}}"#).contains(&p(r#"{"b":{"c":[2]}}"#)));
        assert!(!p(r#"{"a":1}"#).contains(&p(r#"{"a":"1"}"#)));
        assert!(p("[1,2,[3]]").contains(&p("[[3],1,1]")));
        assert!(p("[1,2]").contains(&p("1")));
        assert!(!p("1").contains(&p("[1]")));
        assert!(!p("[[1]]").contains(&p("1")));
        assert!(p(r#"["a", {"b": 1}]"#).exists("a"));
        assert!(!p(r#"[{"a": 1}]"#).exists("a"));
        assert!(p(r#""a""#).exists("a"));
    }

    #[test]
    fn concat_delete_and_set() {
        let t = |v: Jsonb| v.to_text();
        assert_eq!(t(p(r#"{"a":1}"#).concat(&p(r#"{"a":2,"b":3}"#))), r#"{"a": 2, "b": 3}"#);
        assert_eq!(t(p("1").concat(&p("[2]"))), "[1, 2]");
        assert_eq!(t(p(r#"{"a":1}"#).concat(&p("[2]"))), r#"[{"a": 1}, 2]"#);
        assert_eq!(t(p(r#"["a","b","a"]"#).delete_key("a").unwrap()), r#"["b"]"#);
        assert_eq!(t(p("[1,2,3]").delete_index(-1).unwrap()), "[1, 2]");
        assert!(p("1").delete_key("a").is_err());
        let set = p(r#"{"a":{"b":1},"c":[1,2]}"#);
        assert_eq!(
            t(set.set_path(&["a", "b"], &p("2"), true).unwrap()),
            r#"{"a": {"b": 2}, "c": [1, 2]}"#
        );
        assert_eq!(
            t(set.set_path(&["c", "-1"], &p("9"), true).unwrap()),
            r#"{"a": {"b": 1}, "c": [1, 9]}"#
        );
        assert_eq!(
            t(set.set_path(&["c", "10"], &p("9"), true).unwrap()),
            r#"{"a": {"b": 1}, "c": [1, 2, 9]}"#
        );
        assert_eq!(
            t(set.set_path(&["x", "y"], &p("9"), true).unwrap()),
            r#"{"a": {"b": 1}, "c": [1, 2]}"#
        );
    }
}
