//! `Value`: one SQL datum in memory.

use std::sync::Arc;

use super::interval::Interval;
use super::jsonb::Jsonb;
use super::numeric::Numeric;
use catalog::{ArrayElem, DataType};
use chrono::{NaiveDate, NaiveDateTime};

/// One SQL value. The SQL type of a value is carried next to it (by the plan), not inside it:
/// `Text` serves `text`, `varchar(n)` and `char(n)` (already blank-padded), `Numeric` serves
/// every `numeric(p,s)` (a [`Numeric`] carries its display scale).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// boolean
    Bool(bool),
    /// smallint
    Int16(i16),
    /// integer
    Int32(i32),
    /// bigint
    Int64(i64),
    /// real
    Float32(f32),
    /// double precision
    Float64(f64),
    /// numeric
    Numeric(Numeric),
    /// text, varchar, char
    Text(String),
    /// date
    Date(NaiveDate),
    /// timestamp without time zone (microsecond precision)
    Timestamp(NaiveDateTime),
    /// bytea
    Bytea(Vec<u8>),
    /// timestamp with time zone: the UTC instant (microsecond precision)
    TimestampTz(NaiveDateTime),
    /// interval
    Interval(Interval),
    /// uuid: its 16 bytes
    Uuid([u8; 16]),
    /// time without time zone: microseconds since midnight, 0 ..= 86,400,000,000
    Time(i64),
    /// jsonb
    Jsonb(Arc<Jsonb>),
    /// json: the text as written
    Json(Arc<str>),
    /// A one-dimensional array (lower bound 1): its elements, NULL ones as `Null`
    /// (`types::array`).
    Array(Arc<Vec<Value>>),
}

impl Value {
    /// Is this SQL NULL?
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The PostgreSQL name of this value's natural type (`integer`, `numeric`, `text`, ...);
    /// `unknown` for NULL. For error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "unknown",
            Value::Bool(_) => "boolean",
            Value::Int16(_) => "smallint",
            Value::Int32(_) => "integer",
            Value::Int64(_) => "bigint",
            Value::Float32(_) => "real",
            Value::Float64(_) => "double precision",
            Value::Numeric(_) => "numeric",
            Value::Text(_) => "text",
            Value::Date(_) => "date",
            Value::Timestamp(_) => "timestamp without time zone",
            Value::Bytea(_) => "bytea",
            Value::TimestampTz(_) => "timestamp with time zone",
            Value::Interval(_) => "interval",
            Value::Uuid(_) => "uuid",
            Value::Time(_) => "time without time zone",
            Value::Jsonb(_) => "jsonb",
            Value::Json(_) => "json",
            Value::Array(_) => "array",
        }
    }

    /// This value's natural type: `Text` for strings, unconstrained `Numeric` for numerics;
    /// `None` for NULL.
    pub fn data_type(&self) -> Option<DataType> {
        Some(match self {
            Value::Null => return None,
            Value::Bool(_) => DataType::Bool,
            Value::Int16(_) => DataType::Int16,
            Value::Int32(_) => DataType::Int32,
            Value::Int64(_) => DataType::Int64,
            Value::Float32(_) => DataType::Float32,
            Value::Float64(_) => DataType::Float64,
            Value::Numeric(_) => DataType::Numeric(None),
            Value::Text(_) => DataType::Text,
            Value::Date(_) => DataType::Date,
            Value::Timestamp(_) => DataType::Timestamp,
            Value::Bytea(_) => DataType::Bytea,
            Value::TimestampTz(_) => DataType::TimestampTz,
            Value::Interval(_) => DataType::Interval,
            Value::Uuid(_) => DataType::Uuid,
            Value::Time(_) => DataType::Time,
            Value::Jsonb(_) => DataType::Jsonb,
            Value::Json(_) => DataType::Json,
            Value::Array(items) => {
                DataType::Array(ArrayElem::of(&array_elem_type(items)).unwrap_or(ArrayElem::Text))
            }
        })
    }
}

/// The element type of an array's values when no plan says it: the type of its first
/// non-NULL element, `text` when there is none.
pub(crate) fn array_elem_type(items: &[Value]) -> DataType {
    items.iter().find_map(Value::data_type).unwrap_or(DataType::Text)
}
