//! SQL values and types, behaving as PostgreSQL 15 does for the types Aspen supports
//! (`catalog::DataType`):
//!
//! - `text`: input/output functions (`parse_text`, `format_text`);
//! - `binary`: the binary wire formats of Bind parameters and DataRow columns;
//! - `cast`: casts and their contexts (`cast`, `cast_allowed`, `common_type`);
//! - `arith`: operator result types and evaluation with PostgreSQL's overflow and scale rules;
//! - `compare`: SQL comparison and the ORDER BY total order;
//! - `encoding`: the storage row format and the memcmp-ordered key format;
//! - `like`: `LIKE` / `ILIKE`;
//! - `array`: one-dimensional arrays of the scalar types (`integer[]`, `text[]`, …);
//! - `jsonb`, `json`: the JSON types — jsonb as a tree in PostgreSQL's normalized form and
//!   order, json as the text it was written in (its parser is jsonb's).
//!
//! A `Value` does not carry its SQL type; the plan does. Functions that need the type (text
//! output of `char(n)`, binary widths, row decoding) take a `DataType`. `numeric` is a
//! [`Numeric`]: PostgreSQL's arbitrary precision (131072 digits before the point, 16383 after),
//! `NaN` and `±Infinity` (see `numeric`).

mod arith;
pub(crate) mod array;
mod binary;
mod cast;
mod compare;
mod datetime;
mod encoding;
mod interval;
pub(crate) mod json;
mod jsonb;
mod like;
mod numeric;
pub(crate) mod regtype;
#[cfg(test)]
pub(crate) mod test_rng;
mod text;
mod value;

pub use arith::{arith, arith_result_type, arith_zoned, is_datetime_op, negate, ArithOp};
pub use binary::{decode_binary, decode_binary_as, encode_binary};
pub(crate) use cast::is_string;
pub use cast::{cast, cast_allowed, cast_zoned, common_type, zone_dependent, CastKind};
pub use compare::{compare, compare_as, sort_cmp, sort_cmp_as};
pub use datetime::{datetime_unit, Zone};
pub(crate) use datetime::{make_date, make_timestamp};
pub use encoding::{
    decode_column, decode_row, decode_row_id_key, encode_key, encode_key_as, encode_row,
    retypes_in_place, KEY_NULL,
};
pub use interval::{age, Interval};
pub(crate) use jsonb::invalid_parameter as jsonb_error;
pub use jsonb::Jsonb;
pub use like::{like, like_escape};
pub use numeric::Numeric;
pub(crate) use text::{escape_decode, hex_decode};
pub use text::{
    format_text, format_text_into, format_text_zoned, format_text_zoned_into, parse_text,
    parse_text_zoned,
};
pub use value::Value;
