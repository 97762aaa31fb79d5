//! Values and descriptions on the wire: RowDescription fields from result columns, DataRow
//! encoding (text or binary per column), and Bind parameter decoding.
//!
//! The value formats themselves (PostgreSQL's type input/output and send/receive functions) live
//! in `sql::types`; this module only frames them: NULL as length -1, one format code per column,
//! and the column metadata clients read (table OID, attnum, type OID, typlen, typmod).

use bytes::{BufMut, BytesMut};
use catalog::DataType;
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use sql::{ColumnInfo, Value};

use sql::types::{decode_binary_as, encode_binary, format_text_zoned_into, parse_text_zoned, Zone};

/// The pgwire `Type` for a SQL type (every `DataType` is a built-in PostgreSQL type).
pub fn pg_type(data_type: &DataType) -> Type {
    Type::from_oid(data_type.oid()).unwrap_or(Type::UNKNOWN)
}

/// The format of result column `idx` under the Bind message's result format codes. Never
/// panics: a code list of the wrong length is rejected at Bind (see `handler::check_bind`), and
/// here it falls back to text.
pub fn column_format(format: &Format, idx: usize) -> FieldFormat {
    match format {
        Format::UnifiedText => FieldFormat::Text,
        Format::UnifiedBinary => FieldFormat::Binary,
        Format::Individual(codes) => FieldFormat::from(codes.get(idx).copied().unwrap_or(0)),
    }
}

/// The formats of all `n` result columns.
pub fn column_formats(format: &Format, n: usize) -> Vec<FieldFormat> {
    (0..n).map(|i| column_format(format, i)).collect()
}

/// The pgwire field description of one result column.
pub fn field_info(column: &ColumnInfo, format: FieldFormat) -> FieldInfo {
    FieldInfo::new(
        column.name.clone(),
        column.table_oid.map(|oid| oid as i32),
        column.column_id,
        pg_type(&column.data_type),
        format,
    )
    .with_type_size(column.data_type.type_size())
    .with_type_modifier(column.data_type.typmod())
}

/// RowDescription for `columns`, each in its format from `formats` (text where missing).
pub fn row_description(columns: &[ColumnInfo], formats: &[FieldFormat]) -> RowDescription {
    RowDescription::new(
        columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let format = formats.get(i).copied().unwrap_or(FieldFormat::Text);
                FieldDescription::from(&field_info(c, format))
            })
            .collect(),
    )
}

/// Encodes rows into DataRow messages. Reuses its buffers across rows.
pub struct RowEncoder<'a> {
    columns: &'a [ColumnInfo],
    formats: &'a [FieldFormat],
    binary: Vec<u8>,
    text: String,
    zone: Zone,
}

impl<'a> RowEncoder<'a> {
    /// An encoder for rows of `columns`, column `i` in `formats[i]` (text where missing).
    /// `zone`: the session's time zone, in which `timestamptz` values print as text.
    pub fn new(columns: &'a [ColumnInfo], formats: &'a [FieldFormat], zone: Zone) -> Self {
        RowEncoder {
            columns,
            formats,
            zone,
            binary: Vec::with_capacity(64),
            text: String::with_capacity(64),
        }
    }

    /// One DataRow. Values beyond the described columns are not sent; a row shorter than the
    /// description is padded with NULLs (neither happens with a correct plan).
    pub fn encode(&mut self, row: &[Value]) -> DataRow {
        let mut buf = BytesMut::with_capacity(16 * self.columns.len());
        for (i, column) in self.columns.iter().enumerate() {
            match row.get(i) {
                None | Some(Value::Null) => buf.put_i32(-1),
                Some(value) => {
                    let bytes = match self.formats.get(i).copied().unwrap_or(FieldFormat::Text) {
                        FieldFormat::Binary => {
                            self.binary.clear();
                            encode_binary(value, &column.data_type, &mut self.binary);
                            &self.binary[..]
                        }
                        FieldFormat::Text => {
                            self.text.clear();
                            format_text_zoned_into(
                                value,
                                &column.data_type,
                                self.zone,
                                &mut self.text,
                            );
                            self.text.as_bytes()
                        }
                    };
                    buf.put_i32(bytes.len() as i32);
                    buf.put_slice(bytes);
                }
            }
        }
        DataRow::new(buf, self.columns.len() as i16)
    }
}

/// Decodes one Bind parameter into a value of the statement's parameter type `target`. `None`
/// is SQL NULL. Binary values are in the format of the type the client declared at Parse
/// (`sent`, e.g. int8 from JDBC `setLong` for an `integer` parameter) and are cast to `target`;
/// text values go through `target`'s input function. `zone` is the session's time zone.
pub fn decode_param(
    bytes: Option<&[u8]>,
    binary: bool,
    sent: Option<&DataType>,
    target: &DataType,
    zone: Zone,
) -> Result<Value, sql::Error> {
    let Some(bytes) = bytes else { return Ok(Value::Null) };
    if binary {
        return decode_binary_as(bytes, sent.unwrap_or(target), target, zone);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let bad = &bytes[e.valid_up_to()..];
        let shown: Vec<String> =
            bad.iter().take(e.error_len().unwrap_or(1)).map(|b| format!("0x{b:02x}")).collect();
        sql::Error::CharacterNotInRepertoire {
            message: format!("invalid byte sequence for encoding \"UTF8\": {}", shown.join(" ")),
        }
    })?;
    parse_text_zoned(text, target, zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, data_type: DataType) -> ColumnInfo {
        ColumnInfo { name: name.into(), data_type, table_oid: Some(16384), column_id: Some(2) }
    }

    #[test]
    fn row_description_carries_type_metadata_and_formats() {
        let cols =
            [column("amount", DataType::Numeric(Some((12, 2)))), column("n", DataType::Int32)];
        let desc = row_description(&cols, &[FieldFormat::Binary]);
        let f = &desc.fields;
        assert_eq!((f[0].type_id, f[0].type_modifier, f[0].type_size), (1700, 786438, -1));
        assert_eq!((f[0].table_id, f[0].column_id, f[0].format_code), (16384, 2, 1));
        assert_eq!(
            (f[1].type_id, f[1].type_size, f[1].type_modifier, f[1].format_code),
            (23, 4, -1, 0)
        );
    }

    #[test]
    fn individual_formats_never_panic() {
        let format = Format::Individual(vec![1]);
        assert_eq!(column_format(&format, 0), FieldFormat::Binary);
        assert_eq!(column_format(&format, 5), FieldFormat::Text);
    }

    #[test]
    fn data_row_text_binary_and_null() {
        let cols = [
            column("a", DataType::Int32),
            column("b", DataType::Int32),
            column("c", DataType::Text),
        ];
        let formats = [FieldFormat::Text, FieldFormat::Binary, FieldFormat::Text];
        let mut enc = RowEncoder::new(&cols, &formats, Zone::UTC);
        let row = enc.encode(&[Value::Int32(42), Value::Int32(7), Value::Null]);
        assert_eq!(row.field_count, 3);
        let expected: Vec<u8> = [
            &2i32.to_be_bytes()[..],
            b"42",
            &4i32.to_be_bytes(),
            &7i32.to_be_bytes(),
            &(-1i32).to_be_bytes(),
        ]
        .concat();
        assert_eq!(&row.data[..], &expected[..]);
    }

    #[test]
    fn params_decode_text_binary_null_and_reject_bad_utf8() {
        assert_eq!(
            decode_param(None, true, None, &DataType::Int32, Zone::UTC).unwrap(),
            Value::Null
        );
        assert_eq!(
            decode_param(Some(b"17"), false, None, &DataType::Int64, Zone::UTC).unwrap(),
            Value::Int64(17)
        );
        assert_eq!(
            decode_param(Some(&3001i32.to_be_bytes()), true, None, &DataType::Int32, Zone::UTC)
                .unwrap(),
            Value::Int32(3001)
        );
        // JDBC setLong for an integer parameter: int8 bytes, assignment-cast to int4.
        let sent = DataType::from_oid(20);
        assert_eq!(
            decode_param(
                Some(&7i64.to_be_bytes()),
                true,
                sent.as_ref(),
                &DataType::Int32,
                Zone::UTC
            )
            .unwrap(),
            Value::Int32(7)
        );
        let err = decode_param(
            Some(&(1i64 << 40).to_be_bytes()),
            true,
            sent.as_ref(),
            &DataType::Int32,
            Zone::UTC,
        )
        .unwrap_err();
        assert_eq!(err.sqlstate(), "22003");
        let err =
            decode_param(Some(b"a\xff"), false, None, &DataType::Text, Zone::UTC).unwrap_err();
        assert_eq!(err.sqlstate(), "22021");
        assert_eq!(err.to_string(), "invalid byte sequence for encoding \"UTF8\": 0xff");
        let err = decode_param(Some(b"x"), false, None, &DataType::Int32, Zone::UTC).unwrap_err();
        assert_eq!(err.sqlstate(), "22P02");
    }

    #[test]
    fn numeric_binary_matches_postgres() {
        // 97.76000213623047 with dscale 11, as pgjdbc sends it (research/benchbase.md §4.2).
        let d = sql::types::Numeric::parse("97.76000213623047").unwrap().round(11).unwrap();
        let mut out = Vec::new();
        encode_binary(&Value::Numeric(d), &DataType::Numeric(None), &mut out);
        let words: Vec<u16> = out.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
        assert_eq!(words, [4, 0, 0, 11, 97, 7600, 213, 6230]);
    }
}
