//! Evaluation of the jsonb operators and functions ([`JsonbFunc`]; the semantics live in
//! `types::jsonb`). NULL arguments of the strict ones never arrive here.

use std::sync::Arc;

use catalog::DataType;

use crate::error::{Error, Result};
use crate::plan::{JsonbFunc, JsonbRows};
use crate::types::{self, Jsonb, Numeric, Value, Zone};

fn jsonb(v: &Value) -> Result<&Jsonb> {
    match v {
        Value::Jsonb(j) => Ok(j),
        other => Err(Error::internal(format!("jsonb argument is {}", other.type_name()))),
    }
}

fn text(v: &Value) -> Result<&str> {
    match v {
        Value::Text(s) => Ok(s),
        other => Err(Error::internal(format!("text argument is {}", other.type_name()))),
    }
}

fn out(j: Jsonb) -> Value {
    Value::Jsonb(Arc::new(j))
}

/// A path's steps; `None` if one is NULL (the result is then NULL).
fn steps(args: &[Value]) -> Result<Option<Vec<&str>>> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        match a {
            Value::Null => return Ok(None),
            other => out.push(text(other)?),
        }
    }
    Ok(Some(out))
}

/// A json result: the text as written.
fn json_out(s: &str) -> Value {
    Value::Json(s.into())
}

/// The json operators and functions: the text navigated as written (`types::json`).
fn call_json(f: JsonbFunc, text: &str, args: &[Value]) -> Result<Value> {
    use crate::types::json;
    let got = |found: Option<&str>, as_text: bool| -> Result<Value> {
        Ok(match (found, as_text) {
            (None, _) => Value::Null,
            (Some(v), false) => json_out(v),
            (Some(v), true) => json::as_text(v)?.map_or(Value::Null, Value::Text),
        })
    };
    match f {
        JsonbFunc::Get | JsonbFunc::GetText => {
            let found = match &args[1] {
                Value::Int32(i) => json::get_index(text, *i as i64)?,
                other => json::get_key(text, self::text(other)?)?,
            };
            got(found, f == JsonbFunc::GetText)
        }
        JsonbFunc::Path | JsonbFunc::PathText => {
            let Some(path) = steps(&args[1..])? else { return Ok(Value::Null) };
            got(json::get_path(text, &path)?, f == JsonbFunc::PathText)
        }
        JsonbFunc::Typeof => Ok(Value::Text(json::type_name(text).into())),
        JsonbFunc::ArrayLength => match json::elements(text)? {
            Some(items) => Ok(Value::Int32(items.len() as i32)),
            None if json::type_name(text) == "object" => {
                Err(crate::types::jsonb_error("cannot get array length of a non-array"))
            }
            None => Err(crate::types::jsonb_error("cannot get array length of a scalar")),
        },
        other => Err(Error::internal(format!("{} of json", other.name()))),
    }
}

/// to_json: a json value as written, anything else as to_jsonb gives it, in text.
pub(crate) fn to_json_text(v: &Value, zone: Zone) -> String {
    match v {
        Value::Json(s) => s.to_string(),
        // array_to_json's layout: no spaces.
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|x| to_json_text(x, zone)).collect();
            format!("[{}]", parts.join(","))
        }
        // Nothing else fails to convert: only json text is read.
        other => to_jsonb(other, zone).map(|j| j.to_text()).unwrap_or_default(),
    }
}

/// A json[b]_build_object key (`json`: json_build_object's): the value's text as to_jsonb
/// keys it; NULL is refused with each function's message.
fn object_key(v: &Value, zone: Zone, position: usize, json: bool) -> Result<String> {
    to_jsonb(v, zone)?.into_key()?.ok_or_else(|| {
        types::jsonb_error(match json {
            true => format!("argument {position} cannot be null"),
            false => format!("argument {position}: key must not be null"),
        })
    })
}

/// The key/value pairs of json[b]_build_object's arguments, each value made by `value`.
fn build_pairs<V>(
    args: &[Value],
    zone: Zone,
    json: bool,
    value: impl Fn(&Value) -> Result<V>,
) -> Result<Vec<(String, V)>> {
    if !args.len().is_multiple_of(2) {
        return Err(types::jsonb_error("argument list must have even number of elements"));
    }
    args.chunks(2)
        .enumerate()
        .map(|(i, kv)| Ok((object_key(&kv[0], zone, 2 * i + 1, json)?, value(&kv[1])?)))
        .collect()
}

pub(super) fn call(f: JsonbFunc, args: &[Value], zone: Zone) -> Result<Value> {
    // The navigation functions over json walk its text; the rest take json as a value.
    let navigates = matches!(
        f,
        JsonbFunc::Get
            | JsonbFunc::GetText
            | JsonbFunc::Path
            | JsonbFunc::PathText
            | JsonbFunc::Typeof
            | JsonbFunc::ArrayLength
    );
    if let (Some(Value::Json(text)), true) = (args.first(), navigates) {
        return call_json(f, text, args);
    }
    Ok(match f {
        JsonbFunc::ToJson => json_out(&to_json_text(&args[0], zone)),
        JsonbFunc::JsonRow => {
            let pairs: Vec<(String, String)> = args
                .chunks(2)
                .map(|kv| Ok((self::text(&kv[0])?.to_string(), to_json_text(&kv[1], zone))))
                .collect::<Result<_>>()?;
            json_out(&crate::types::json::row(&pairs))
        }
        JsonbFunc::JsonBuildArray => json_out(&crate::types::json::array(
            &args.iter().map(|a| to_json_text(a, zone)).collect::<Vec<_>>(),
        )),
        JsonbFunc::JsonBuildObject => {
            let pairs = build_pairs(args, zone, true, |v| Ok(to_json_text(v, zone)))?;
            json_out(&crate::types::json::build_object(&pairs))
        }
        JsonbFunc::Get | JsonbFunc::GetText => {
            let j = jsonb(&args[0])?;
            let found = match &args[1] {
                Value::Int32(i) => j.get_index(*i as i64),
                other => j.get_key(text(other)?),
            };
            match (found, f) {
                (None, _) => Value::Null,
                (Some(v), JsonbFunc::Get) => out(v.clone()),
                (Some(v), _) => v.as_text().map_or(Value::Null, Value::Text),
            }
        }
        JsonbFunc::Path | JsonbFunc::PathText => {
            let j = jsonb(&args[0])?;
            let Some(path) = steps(&args[1..])? else { return Ok(Value::Null) };
            match (j.get_path(&path), f) {
                (None, _) => Value::Null,
                (Some(v), JsonbFunc::Path) => out(v.clone()),
                (Some(v), _) => v.as_text().map_or(Value::Null, Value::Text),
            }
        }
        JsonbFunc::Contains => Value::Bool(jsonb(&args[0])?.contains(jsonb(&args[1])?)),
        JsonbFunc::Exists => Value::Bool(jsonb(&args[0])?.exists(text(&args[1])?)),
        JsonbFunc::ExistsAny | JsonbFunc::ExistsAll => {
            let j = jsonb(&args[0])?;
            // NULL keys are skipped, as PostgreSQL's jsonb_exists_any / _all do.
            let mut keys = args[1..].iter().filter(|a| !a.is_null()).map(text);
            if f == JsonbFunc::ExistsAny {
                Value::Bool(keys.try_fold(false, |acc, k| Ok::<_, Error>(acc || j.exists(k?)))?)
            } else {
                Value::Bool(keys.try_fold(true, |acc, k| Ok::<_, Error>(acc && j.exists(k?)))?)
            }
        }
        JsonbFunc::Concat => out(jsonb(&args[0])?.concat(jsonb(&args[1])?)),
        JsonbFunc::Delete => {
            let j = jsonb(&args[0])?;
            out(match &args[1] {
                Value::Int32(i) => j.delete_index(*i as i64)?,
                other => j.delete_key(text(other)?)?,
            })
        }
        JsonbFunc::DeletePath => {
            let j = jsonb(&args[0])?;
            let Some(path) = steps(&args[1..])? else { return Ok(Value::Null) };
            out(j.delete_path(&path)?)
        }
        JsonbFunc::Typeof => Value::Text(jsonb(&args[0])?.type_name().into()),
        JsonbFunc::ArrayLength => Value::Int32(jsonb(&args[0])?.array_length()?),
        JsonbFunc::StripNulls => out(jsonb(&args[0])?.strip_nulls()),
        JsonbFunc::Pretty => Value::Text(jsonb(&args[0])?.pretty()),
        JsonbFunc::ToJsonb => out(to_jsonb(&args[0], zone)?),
        JsonbFunc::BuildArray => {
            out(Jsonb::Array(args.iter().map(|a| to_jsonb(a, zone)).collect::<Result<_>>()?))
        }
        JsonbFunc::BuildObject => {
            out(Jsonb::object(build_pairs(args, zone, false, |v| to_jsonb(v, zone))?))
        }
        JsonbFunc::Set => {
            if args[..2].iter().any(Value::is_null) {
                return Ok(Value::Null);
            }
            let Some(path) = steps(&args[3..])? else { return Ok(Value::Null) };
            let create = matches!(args[2], Value::Bool(true));
            out(jsonb(&args[0])?.set_path(&path, jsonb(&args[1])?, create)?)
        }
    })
}

/// The rows of a jsonb set-returning function over `j`; `22023` when `j` is not the kind
/// of container it takes.
pub(super) fn rows(f: JsonbRows, j: &Jsonb) -> Result<Vec<Vec<Value>>> {
    let bad = |message: String| Err(Error::DataException { message, sqlstate: "22023" });
    let text = |v: &Jsonb| v.as_text().map_or(Value::Null, Value::Text);
    match (f, j) {
        (JsonbRows::ArrayElements | JsonbRows::ArrayElementsText, Jsonb::Array(items)) => Ok(items
            .iter()
            .map(|v| match f {
                JsonbRows::ArrayElements => vec![out(v.clone())],
                _ => vec![text(v)],
            })
            .collect()),
        (JsonbRows::ArrayElements | JsonbRows::ArrayElementsText, Jsonb::Object(_)) => {
            bad("cannot extract elements from an object".into())
        }
        (JsonbRows::ArrayElements | JsonbRows::ArrayElementsText, _) => {
            bad("cannot extract elements from a scalar".into())
        }
        (JsonbRows::Each | JsonbRows::EachText, Jsonb::Object(pairs)) => Ok(pairs
            .iter()
            .map(|(k, v)| {
                let v = if f == JsonbRows::Each { out(v.clone()) } else { text(v) };
                vec![Value::Text(k.clone()), v]
            })
            .collect()),
        (JsonbRows::Each | JsonbRows::EachText, _) => {
            bad(format!("cannot call {} on a non-object", f.name()))
        }
        (JsonbRows::ObjectKeys, Jsonb::Object(pairs)) => {
            Ok(pairs.iter().map(|(k, _)| vec![Value::Text(k.clone())]).collect())
        }
        (JsonbRows::ObjectKeys, Jsonb::Array(_)) => {
            bad("cannot call jsonb_object_keys on an array".into())
        }
        (JsonbRows::ObjectKeys, _) => bad("cannot call jsonb_object_keys on a scalar".into()),
        (json, _) => Err(Error::internal(format!("{} of jsonb", json.name()))),
    }
}

/// The rows of a json set-returning function over `text` (values as written).
pub(super) fn json_rows(f: JsonbRows, text: &str) -> Result<Vec<Vec<Value>>> {
    use crate::types::json;
    let bad = |message: String| Err(Error::DataException { message, sqlstate: "22023" });
    let as_text =
        |v: &str| -> Result<Value> { Ok(json::as_text(v)?.map_or(Value::Null, Value::Text)) };
    match f {
        JsonbRows::JsonArrayElements | JsonbRows::JsonArrayElementsText => {
            let Some(items) = json::elements(text)? else {
                return bad(match json::type_name(text) {
                    "object" => format!("cannot call {} on a non-array", f.name()),
                    _ => format!("cannot call {} on a scalar", f.name()),
                });
            };
            items
                .into_iter()
                .map(|v| match f {
                    JsonbRows::JsonArrayElements => Ok(vec![json_out(v)]),
                    _ => Ok(vec![as_text(v)?]),
                })
                .collect()
        }
        JsonbRows::JsonEach | JsonbRows::JsonEachText | JsonbRows::JsonObjectKeys => {
            let Some(members) = json::members(text)? else {
                return bad(match (f, json::type_name(text)) {
                    (JsonbRows::JsonObjectKeys, "array") => {
                        "cannot call json_object_keys on an array".into()
                    }
                    (JsonbRows::JsonObjectKeys, _) => {
                        "cannot call json_object_keys on a scalar".into()
                    }
                    (_, "array") => "cannot deconstruct an array as an object".into(),
                    _ => "cannot deconstruct a scalar".into(),
                });
            };
            members
                .into_iter()
                .map(|(k, v)| match f {
                    JsonbRows::JsonObjectKeys => Ok(vec![Value::Text(k)]),
                    JsonbRows::JsonEach => Ok(vec![Value::Text(k), json_out(v)]),
                    _ => Ok(vec![Value::Text(k), as_text(v)?]),
                })
                .collect()
        }
        other => Err(Error::internal(format!("{} of json", other.name()))),
    }
}

/// `to_jsonb`: numbers and booleans as themselves (a float or numeric NaN or infinity as a
/// string), dates and timestamps as ISO 8601 strings (`2024-01-02T03:04:05`, with `+HH:MM`
/// for timestamptz), jsonb as itself, anything else as the string of its output text.
pub(crate) fn to_jsonb(v: &Value, zone: Zone) -> Result<Jsonb> {
    let show = |v: &Value| types::format_text_zoned(v, &value_type(v), zone);
    Ok(match v {
        // json is read as jsonb input (its `\u0000` cannot be: 22P05).
        Value::Json(s) => Jsonb::parse(s)?,
        Value::Null => Jsonb::Null,
        Value::Bool(b) => Jsonb::Bool(*b),
        Value::Int16(i) => Jsonb::Number(Numeric::from(*i)),
        Value::Int32(i) => Jsonb::Number(Numeric::from(*i)),
        Value::Int64(i) => Jsonb::Number(Numeric::from(*i)),
        Value::Numeric(n) if n.is_finite() => Jsonb::Number(n.clone()),
        Value::Float32(_) | Value::Float64(_) => {
            let s = show(v);
            match Numeric::parse(&s) {
                Ok(n) if n.is_finite() => Jsonb::Number(n),
                _ => Jsonb::String(s),
            }
        }
        Value::Jsonb(j) => (**j).clone(),
        Value::Array(items) => {
            Jsonb::Array(items.iter().map(|x| to_jsonb(x, zone)).collect::<Result<_>>()?)
        }
        Value::Timestamp(_) => Jsonb::String(show(v).replacen(' ', "T", 1)),
        Value::TimestampTz(_) => {
            let mut s = show(v).replacen(' ', "T", 1);
            // XSD offsets have minutes: +02 → +02:00.
            let tail = s.rfind(['+', '-']).map(|i| &s[i..]);
            if tail.is_some_and(|t| t.len() == 3 && s.contains('T')) {
                s.push_str(":00");
            }
            Jsonb::String(s)
        }
        Value::Text(s) => Jsonb::String(s.clone()),
        other => Jsonb::String(show(other)),
    })
}

fn value_type(v: &Value) -> DataType {
    v.data_type().unwrap_or(DataType::Text)
}
