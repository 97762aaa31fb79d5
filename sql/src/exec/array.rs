//! The array operators and functions ([`ArrayFunc`]) and unnest, over one-dimensional arrays
//! with lower bound 1 (`types::array`). NULL handling is PostgreSQL's: the strict ones never
//! get here with a NULL argument ([`ArrayFunc::strict`]); the others say below what a NULL
//! does.

use std::sync::Arc;

use super::{int_arg as int, text_arg as text};
use crate::error::{Error, Result};
use crate::plan::ArrayFunc;
use crate::types::{self, array, Value, Zone};

fn items(v: &Value) -> Result<&[Value]> {
    match v {
        Value::Array(a) => Ok(a),
        other => Err(Error::internal(format!("an array function got {}", other.type_name()))),
    }
}

fn array(items: Vec<Value>) -> Value {
    Value::Array(Arc::new(items))
}

/// The text of an element, as its output function writes it.
fn element_text(v: &Value, zone: Zone) -> String {
    let ty = v.data_type().unwrap_or(catalog::DataType::Text);
    types::format_text_zoned(v, &ty, zone)
}

/// Runs `f` on `args`.
pub(crate) fn call(f: ArrayFunc, mut args: Vec<Value>, zone: Zone) -> Result<Value> {
    let len = |v: &Value| items(v).map(<[Value]>::len);
    Ok(match f {
        ArrayFunc::Build => array(args),
        ArrayFunc::Subscript => {
            let a = items(&args[0])?;
            match int(&args[1]) {
                Some(i) if i >= 1 && (i as u64) <= a.len() as u64 => a[i as usize - 1].clone(),
                _ => Value::Null,
            }
        }
        ArrayFunc::Slice { lower, upper } => {
            let a = items(&args[0])?;
            let n = a.len() as i64;
            let lo = if lower { int(&args[1]).unwrap_or(1) } else { 1 }.max(1);
            let hi = if upper { int(&args[1 + usize::from(lower)]).unwrap_or(n) } else { n }.min(n);
            if lo > hi {
                array(Vec::new())
            } else {
                array(a[lo as usize - 1..hi as usize].to_vec())
            }
        }
        // A NULL array is no elements; both NULL is NULL.
        ArrayFunc::Cat => {
            let b = args.pop().expect("two arguments");
            let a = args.pop().expect("two arguments");
            match (a, b) {
                (Value::Null, b) => b,
                (a, Value::Null) => a,
                (a, b) => {
                    let mut out = items(&a)?.to_vec();
                    out.extend_from_slice(items(&b)?);
                    array(out)
                }
            }
        }
        ArrayFunc::Append => {
            let x = args.pop().expect("two arguments");
            let mut out = match &args[0] {
                Value::Null => Vec::new(),
                a => items(a)?.to_vec(),
            };
            out.push(x);
            array(out)
        }
        ArrayFunc::Prepend => {
            let mut out = vec![args[0].clone()];
            if !args[1].is_null() {
                out.extend_from_slice(items(&args[1])?);
            }
            array(out)
        }
        ArrayFunc::Contains => Value::Bool(array::contains(items(&args[0])?, items(&args[1])?)),
        ArrayFunc::Overlaps => Value::Bool(array::overlaps(items(&args[0])?, items(&args[1])?)),
        // NULL over an empty array is still false (ANY) or true (ALL).
        ArrayFunc::Any { op, all } => match &args[1] {
            Value::Null => Value::Null,
            a => quantified(items(a)?, all, |y| types::compare(&args[0], y).map(|o| op.holds(o))),
        },
        // As ANY: true if a pattern matches, else NULL if the text or a pattern is NULL.
        ArrayFunc::Like { ci, negated } => match (&args[1], text(&args[0])) {
            (Value::Null, _) => Value::Null,
            (p, _) if items(p)?.is_empty() => Value::Bool(false),
            (_, None) => Value::Null,
            (p, Some(x)) => {
                quantified(items(p)?, false, |p| text(p).map(|p| types::like(x, p, ci) != negated))
            }
        },
        ArrayFunc::Length | ArrayFunc::Upper => match (len(&args[0])?, int(&args[1])) {
            (n, Some(1)) if n > 0 => Value::Int32(n as i32),
            _ => Value::Null,
        },
        ArrayFunc::Lower => match (len(&args[0])?, int(&args[1])) {
            (n, Some(1)) if n > 0 => Value::Int32(1),
            _ => Value::Null,
        },
        ArrayFunc::Ndims => match len(&args[0])? {
            0 => Value::Null,
            _ => Value::Int32(1),
        },
        ArrayFunc::Dims => match len(&args[0])? {
            0 => Value::Null,
            n => Value::Text(format!("[1:{n}]")),
        },
        ArrayFunc::Cardinality => Value::Int32(len(&args[0])? as i32),
        // NULL is found as a NULL element; a NULL array finds nothing.
        ArrayFunc::Position => {
            if args[0].is_null() {
                return Ok(Value::Null);
            }
            let start = match args.get(2) {
                None => 1,
                Some(Value::Null) => {
                    return Err(Error::DataException {
                        message: "initial position must not be null".into(),
                        sqlstate: "22004",
                    })
                }
                Some(v) => int(v).unwrap_or(1).max(1) as usize,
            };
            match array::position(items(&args[0])?, &args[1], start) {
                Some(i) => Value::Int32(i as i32),
                None => Value::Null,
            }
        }
        ArrayFunc::Positions => {
            if args[0].is_null() {
                return Ok(Value::Null);
            }
            let a = items(&args[0])?;
            array(
                (1..=a.len())
                    .filter(|&i| array::not_distinct(&a[i - 1], &args[1]))
                    .map(|i| Value::Int32(i as i32))
                    .collect(),
            )
        }
        ArrayFunc::Remove => {
            if args[0].is_null() {
                return Ok(Value::Null);
            }
            let a = items(&args[0])?;
            array(a.iter().filter(|y| !array::not_distinct(y, &args[1])).cloned().collect())
        }
        ArrayFunc::Replace => {
            if args[0].is_null() {
                return Ok(Value::Null);
            }
            let a = items(&args[0])?;
            array(
                a.iter()
                    .map(
                        |y| {
                            if array::not_distinct(y, &args[1]) {
                                args[2].clone()
                            } else {
                                y.clone()
                            }
                        },
                    )
                    .collect(),
            )
        }
        // NULL elements are left out unless a (non-NULL) text for them is given.
        ArrayFunc::ToString => {
            let (Value::Array(a), Some(sep)) = (&args[0], text(&args[1])) else {
                return Ok(Value::Null);
            };
            let null = args.get(2).and_then(text);
            let mut out = String::new();
            let mut first = true;
            for v in a.iter() {
                let piece = match v {
                    Value::Null => match null {
                        Some(n) => n.to_string(),
                        None => continue,
                    },
                    v => element_text(v, zone),
                };
                if !first {
                    out.push_str(sep);
                }
                first = false;
                out.push_str(&piece);
            }
            Value::Text(out)
        }
        // A NULL separator splits into characters; an empty one gives the whole string.
        ArrayFunc::FromString => {
            let Some(s) = text(&args[0]) else { return Ok(Value::Null) };
            let null = args.get(2).and_then(text);
            if s.is_empty() {
                return Ok(array(Vec::new()));
            }
            let pieces: Vec<String> = match text(&args[1]) {
                None => s.chars().map(String::from).collect(),
                Some("") => vec![s.to_string()],
                Some(sep) => s.split(sep).map(str::to_string).collect(),
            };
            array(
                pieces
                    .into_iter()
                    .map(|p| if Some(p.as_str()) == null { Value::Null } else { Value::Text(p) })
                    .collect(),
            )
        }
    })
}

/// `x op ANY (items)` (or ALL), three-valued: `test` says whether `op` holds for an element
/// (`None`: unknown, a NULL). ANY is true once it holds, ALL false once it does not; otherwise
/// NULL if some element was unknown; an empty array gives false (ANY) or true (ALL).
fn quantified(items: &[Value], all: bool, test: impl Fn(&Value) -> Option<bool>) -> Value {
    let mut unknown = false;
    for y in items {
        match test(y) {
            None => unknown = true,
            Some(holds) if holds != all => return Value::Bool(!all),
            Some(_) => {}
        }
    }
    if unknown {
        Value::Null
    } else {
        Value::Bool(all)
    }
}

/// The rows of `unnest(a)`: one per element, with its position (bigint) when `ordinality`.
pub(crate) fn unnest(arrays: &[Value], ordinality: bool) -> Result<Vec<Vec<Value>>> {
    let lists = arrays
        .iter()
        .map(|a| if a.is_null() { Ok(&[][..]) } else { items(a) })
        .collect::<Result<Vec<_>>>()?;
    let n = lists.iter().map(|l| l.len()).max().unwrap_or(0);
    Ok((0..n)
        .map(|i| {
            let mut row: Vec<Value> =
                lists.iter().map(|l| l.get(i).cloned().unwrap_or(Value::Null)).collect();
            if ordinality {
                row.push(Value::Int64(i as i64 + 1));
            }
            row
        })
        .collect())
}
