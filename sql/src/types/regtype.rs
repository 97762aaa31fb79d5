//! `regtype`: a type's OID that reads and prints as the type's name, as PostgreSQL's
//! `regtypein` / `regtypeout` do. Clients use it to look types up: psycopg 3's `TypeInfo`
//! (which SQLAlchemy runs on every new connection) asks
//! `SELECT …, oid::regtype::text … FROM pg_type t WHERE t.oid = to_regtype($1)`.
//!
//! A value is the OID as a `bigint` ([`crate::types::Value::Int64`]); only its type says to
//! print the name. The names are those of the types `pg_type` lists, by `typname` (`int4`,
//! `_int4`) or by their SQL spelling (`integer`, `character varying(10)`, `int[]`), folded
//! to lower case unless quoted, optionally qualified by `pg_catalog`; a type modifier is read
//! and ignored. A number reads as the OID itself. A name of no type Aspen has is `42704`
//! (or NULL from `to_regtype`).

use super::Value;
use crate::error::{Error, Result};
use catalog::DataType;

/// The OID `input` names, `None` if it names no type Aspen has (`to_regtype`'s NULL).
pub(crate) fn lookup(input: &str) -> Option<u32> {
    let s = input.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    // `[]` suffixes (any number: PostgreSQL's arrays have no fixed dimensions).
    let mut base = s;
    let mut array = false;
    while let Some(rest) = base.strip_suffix("[]") {
        (base, array) = (rest.trim_end(), true);
    }
    let name = normalize(base)?;
    let ty = by_name(&name)?;
    let ty = if array && ty.element().is_none() {
        // `bpchar`'s array is `_bpchar` (1014), whose elements Aspen reads as text.
        if ty.oid() == 1042 {
            return Some(1014);
        }
        ty.array_of()?
    } else {
        ty
    };
    Some(match ty {
        DataType::Char(_) => 1042,
        other => other.oid(),
    })
}

/// `regtypein`: the OID `input` names; `42704` if it names no type.
pub(crate) fn parse(input: &str) -> Result<u32> {
    lookup(input).ok_or_else(|| Error::UndefinedObject {
        message: format!("type \"{}\" does not exist", input.trim()),
    })
}

/// `regtypeout`: the type's name as `format_type` prints it (without a modifier), `-` for 0,
/// and the number itself for an OID of no type.
pub(crate) fn write(oid: i64, out: &mut String) {
    if oid == 0 {
        out.push('-');
        return;
    }
    let name = crate::exec::builtin::format_type(oid, None);
    if name == "???" {
        out.push_str(&oid.to_string());
    } else {
        out.push_str(&name);
    }
}

/// The type name in `s` as one lower-case (unless quoted) name with single spaces, without a
/// type modifier or a `pg_catalog.` qualifier; `None` for a qualifier other than
/// `pg_catalog`, or unbalanced quotes or parentheses.
fn normalize(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    let mut depth = 0usize;
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.push('"');
            }
            '"' => quoted = !quoted,
            _ if quoted => out.push(c),
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            _ if depth > 0 => {}
            c if c.is_whitespace() => {
                if !out.is_empty() && !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.push(c.to_ascii_lowercase()),
        }
    }
    if quoted || depth > 0 {
        return None;
    }
    let out = out.trim_end().to_string();
    match out.split_once('.') {
        Some((schema, name)) if schema.trim() == "pg_catalog" => Some(name.trim().to_string()),
        Some(_) => None,
        None => Some(out),
    }
}

/// The type a normalized name names: a `typname` or an SQL spelling PostgreSQL's grammar
/// gives a type.
fn by_name(name: &str) -> Option<DataType> {
    let sql = match name {
        "integer" | "int" => Some(DataType::Int32),
        "smallint" => Some(DataType::Int16),
        "bigint" => Some(DataType::Int64),
        "real" => Some(DataType::Float32),
        "double precision" | "float" => Some(DataType::Float64),
        "boolean" => Some(DataType::Bool),
        "character varying" | "char varying" => Some(DataType::Varchar(None)),
        "character" | "char" => Some(DataType::Char(1)),
        "decimal" | "dec" => Some(DataType::Numeric(None)),
        "timestamp without time zone" => Some(DataType::Timestamp),
        "timestamp with time zone" => Some(DataType::TimestampTz),
        "time without time zone" => Some(DataType::Time),
        _ => None,
    };
    sql.or_else(|| {
        crate::describe::system::types_by_name().find(|(n, _)| *n == name).map(|(_, ty)| ty)
    })
}

/// The `regtype` value of `input`, or NULL (`to_regtype`).
pub(crate) fn to_regtype(input: &str) -> Value {
    lookup(input).map_or(Value::Null, |oid| Value::Int64(oid.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names PostgreSQL 15 reads, and what it prints for them (`'x'::regtype`).
    #[test]
    fn names_read_and_print_as_postgres_does() {
        for (input, want) in [
            ("int4", "integer"),
            ("INTEGER", "integer"),
            ("  int  ", "integer"),
            ("pg_catalog.int8", "bigint"),
            ("character varying(10)", "character varying"),
            ("varchar", "character varying"),
            ("char", "character"),
            ("bpchar", "character"),
            ("numeric(10, 2)", "numeric"),
            ("double   precision", "double precision"),
            ("timestamp with time zone", "timestamp with time zone"),
            ("timestamptz", "timestamp with time zone"),
            ("int4[]", "integer[]"),
            ("_int4", "integer[]"),
            ("text[][]", "text[]"),
            ("character(3)[]", "character[]"),
            ("\"int4\"", "integer"),
            ("jsonb", "jsonb"),
            ("regtype", "regtype"),
            ("23", "integer"),
            ("0", "-"),
            ("999999", "999999"),
        ] {
            let oid = parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            let mut out = String::new();
            write(oid.into(), &mut out);
            assert_eq!(out, want, "{input}");
        }
    }

    /// Names of no type Aspen has: `42704` from the cast, NULL from `to_regtype`.
    #[test]
    fn unknown_names_are_not_types() {
        for input in ["hstore", "\"INT4\"", "public.int4", "int4(", "citext[]", "", "timetz"] {
            assert!(lookup(input).is_none(), "{input}");
            assert_eq!(to_regtype(input), Value::Null, "{input}");
        }
        let e = parse("hstore").unwrap_err();
        assert_eq!(e.to_string(), "type \"hstore\" does not exist");
    }
}
