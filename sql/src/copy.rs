//! `COPY table [(columns)] FROM STDIN`: the statement's options and the decoder of the rows
//! the client streams (CopyData messages), in PostgreSQL's text and CSV formats.
//!
//! The statement is recognised before sqlparser (`crate::parse`), whose COPY grammar lacks
//! options PostgreSQL takes (pgbench sends `copy pgbench_accounts from stdin with (freeze
//! on)`). [`CopyDecoder`] turns the byte stream into rows of optional strings, each then put
//! through the column type's text input ([`crate::types::parse_text`]) by the session, which
//! inserts the rows in one transaction (`Session::start_copy`).
//!
//! `FREEZE` is accepted and does nothing (there are no tuple visibility hints to set);
//! PostgreSQL also refuses it unless the table was created or truncated in the same
//! transaction, which pgbench's COPY is.
//!
//! `COPY table [(columns)] TO STDOUT` and `COPY (query) TO STDOUT` run the query and
//! [`encode_row`] its rows in the same formats.
//!
//! A COPY runs when it is alone in a simple Query (`Session::start_copy`) or prepared and
//! executed (`Session::start_copy_prepared`). Not supported (`0A000`): a COPY among other
//! statements of one Query, a file or program as the source or target, the binary format,
//! `FORCE_*` and `HEADER MATCH`.

use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{Error, Result};

/// A parsed `COPY … FROM STDIN` or `COPY … TO STDOUT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyStatement {
    /// Which way the rows go, and where to or from.
    pub kind: CopyKind,
    /// How the rows are encoded.
    pub format: CopyFormat,
    /// `FREEZE`: nothing to do in Aspen, but PostgreSQL only takes it for a table created or
    /// truncated in the same transaction, and so does [`crate::Session::start_copy`].
    pub freeze: bool,
}

/// The two directions of COPY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyKind {
    /// `COPY table [(columns)] FROM STDIN`.
    From {
        /// The table, quoted for SQL text (`"public"."t"`).
        table: String,
        /// The table's own name, unquoted and unqualified (`t`): PostgreSQL's name for it in
        /// error contexts.
        name: String,
        /// The listed columns (folded or as quoted), empty for all of them.
        columns: Vec<String>,
    },
    /// `COPY table [(columns)] TO STDOUT` or `COPY (query) TO STDOUT`.
    To {
        /// The query whose rows go out.
        query: String,
        /// The table's own name (as in `From`), for the table form.
        name: Option<String>,
    },
}

/// Text or CSV, with the options of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyFormat {
    /// CSV (else text).
    pub csv: bool,
    /// The field separator (tab in text, comma in CSV).
    pub delimiter: u8,
    /// The string that stands for NULL (`\N` in text, the empty unquoted field in CSV).
    pub null: String,
    /// Whether the first line is a header to skip.
    pub header: bool,
    /// CSV's quote character.
    pub quote: u8,
    /// CSV's character that escapes a quote inside quotes (the quote itself by default).
    pub escape: u8,
}

impl CopyFormat {
    fn text() -> CopyFormat {
        CopyFormat {
            csv: false,
            delimiter: b'\t',
            null: "\\N".into(),
            header: false,
            quote: b'"',
            escape: b'"',
        }
    }
}

fn unsupported(feature: &str) -> Error {
    Error::Unsupported { feature: feature.into(), span: None }
}

fn syntax(message: impl Into<String>) -> Error {
    Error::Syntax { message: message.into(), span: None }
}

/// Parses one COPY statement's tokens (whitespace included, no `;`).
pub(crate) fn parse_copy(sql: &str, tokens: &[TokenWithSpan]) -> Result<CopyStatement> {
    let spanned: Vec<&TokenWithSpan> =
        tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let toks: Vec<&Token> = spanned.iter().map(|t| &t.token).collect();
    let mut p = Cursor { toks: &toks, at: 1 };
    let mut columns = Vec::new();
    let mut name = String::new();
    let (table, query) = if p.peek() == Some(&Token::LParen) {
        // COPY (query) TO: the text between the parentheses, which must balance.
        let open = p.at;
        let mut depth = 0usize;
        loop {
            match p.peek() {
                Some(Token::LParen) => depth += 1,
                Some(Token::RParen) => depth -= 1,
                Some(_) => {}
                None => return Err(p.error()),
            }
            p.at += 1;
            if depth == 0 {
                break;
            }
        }
        // Byte offsets of the two (one-byte) parentheses.
        let at = |i: usize| crate::parse::offset_of(sql, spanned[i].span.start);
        match (at(open), at(p.at - 1)) {
            (Some(start), Some(end)) => (sql[start + 1..end].to_string(), true),
            _ => return Err(p.error()),
        }
    } else {
        let mut table = vec![p.ident("a table name")?];
        while p.eat(&Token::Period) {
            table.push(p.ident("a table name")?);
        }
        name = table.last().cloned().unwrap_or_default();
        (table.iter().map(|n| quote_ident(n)).collect::<Vec<_>>().join("."), false)
    };
    if !query && p.eat(&Token::LParen) {
        loop {
            columns.push(p.ident("a column name")?);
            if p.eat(&Token::RParen) {
                break;
            }
            p.expect(&Token::Comma)?;
        }
    }
    let to = match p.word().as_deref() {
        Some("from") if !query => false,
        Some("to") => true,
        _ => return Err(p.error()),
    };
    let (way, std) = if to { ("TO", "stdout") } else { ("FROM", "stdin") };
    match p.word().as_deref() {
        Some(w) if w == std => {}
        Some("program") => return Err(unsupported(&format!("COPY {way} PROGRAM"))),
        _ if matches!(p.prev(), Some(Token::SingleQuotedString(_))) => {
            return Err(unsupported(&format!(
                "COPY {way} a file (use COPY {way} {}, as psql's \\copy does)",
                std.to_uppercase()
            )))
        }
        _ => return Err(p.error()),
    }
    let mut format = CopyFormat::text();
    let csv_defaults = |format: &mut CopyFormat| {
        format.csv = true;
        format.delimiter = b',';
        format.null = String::new();
    };
    let mut explicit = (None::<u8>, None::<String>);
    let mut freeze = false;
    p.word_is("with");
    if p.eat(&Token::LParen) {
        // WITH ( option [value] [, ...] )
        loop {
            let name = p.word().ok_or_else(|| p.error())?;
            let value = match p.peek() {
                Some(Token::Comma | Token::RParen) => None,
                _ => Some(p.value()?),
            };
            match (name.as_str(), value) {
                ("format", Some(v)) => match v.to_ascii_lowercase().as_str() {
                    "text" => {}
                    "csv" => csv_defaults(&mut format),
                    "binary" => return Err(unsupported("COPY FORMAT binary")),
                    other => return Err(syntax(format!("COPY format \"{other}\" not recognized"))),
                },
                ("freeze", v) => freeze = bool_value(v.as_deref())?,
                ("delimiter", Some(v)) => explicit.0 = Some(one_byte(&v, "delimiter")?),
                ("null", Some(v)) => explicit.1 = Some(v),
                ("header", v) if v.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("match")) => {
                    return Err(unsupported("COPY HEADER MATCH"))
                }
                ("header", v) => format.header = bool_value(v.as_deref())?,
                ("quote", Some(v)) => format.quote = one_byte(&v, "quote")?,
                ("escape", Some(v)) => format.escape = one_byte(&v, "escape")?,
                ("encoding", Some(v)) => {
                    let v = v.to_ascii_lowercase().replace(['-', '_'], "");
                    if v != "utf8" {
                        return Err(unsupported("COPY ENCODING other than UTF8"));
                    }
                }
                ("force_quote" | "force_not_null" | "force_null", _) => {
                    return Err(unsupported(&format!("COPY {}", name.to_uppercase())))
                }
                (name, _) => return Err(syntax(format!("option \"{name}\" not recognized"))),
            }
            if p.eat(&Token::RParen) {
                break;
            }
            p.expect(&Token::Comma)?;
        }
    } else {
        // The pre-9.0 form: [WITH] [BINARY] [DELIMITER [AS] 'c'] [NULL [AS] 's'] [CSV [HEADER]
        // [QUOTE [AS] 'q'] [ESCAPE [AS] 'e']].
        while let Some(word) = p.word() {
            let arg = |p: &mut Cursor| {
                p.word_is("as");
                p.value()
            };
            match word.as_str() {
                "binary" => return Err(unsupported("COPY FORMAT binary")),
                "csv" => csv_defaults(&mut format),
                "header" => format.header = true,
                "delimiter" => explicit.0 = Some(one_byte(&arg(&mut p)?, "delimiter")?),
                "null" => explicit.1 = Some(arg(&mut p)?),
                "quote" => format.quote = one_byte(&arg(&mut p)?, "quote")?,
                "escape" => format.escape = one_byte(&arg(&mut p)?, "escape")?,
                "force" => return Err(unsupported("COPY FORCE")),
                _ => return Err(p.error()),
            }
        }
    }
    if p.at < toks.len() {
        return Err(p.error());
    }
    if let Some(d) = explicit.0 {
        format.delimiter = d;
    }
    if let Some(n) = explicit.1 {
        format.null = n;
    }
    if !format.csv && (format.delimiter == b'\\' || format.delimiter == b'\n') {
        return Err(unsupported("this COPY delimiter"));
    }
    let kind = match (to, query) {
        (false, _) => CopyKind::From { table, name, columns },
        (true, true) => CopyKind::To { query: table, name: None },
        (true, false) if columns.is_empty() => {
            CopyKind::To { query: format!("SELECT * FROM {table}"), name: Some(name) }
        }
        (true, false) => {
            let columns: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
            CopyKind::To {
                query: format!("SELECT {} FROM {table}", columns.join(", ")),
                name: Some(name),
            }
        }
    };
    Ok(CopyStatement { kind, format, freeze })
}

/// Appends one row of COPY TO output (text or CSV, with its newline) to `out`: each value's
/// text form, `None` as the NULL string.
pub fn encode_row(format: &CopyFormat, fields: &[Option<String>], out: &mut Vec<u8>) {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(format.delimiter);
        }
        let Some(v) = field else {
            out.extend_from_slice(format.null.as_bytes());
            continue;
        };
        if format.csv {
            let needs_quotes = v.is_empty()
                || *v == format.null
                || v == "\\."
                || v.bytes().any(|b| {
                    b == format.delimiter || b == format.quote || b == b'\n' || b == b'\r'
                });
            if !needs_quotes {
                out.extend_from_slice(v.as_bytes());
                continue;
            }
            out.push(format.quote);
            for b in v.bytes() {
                if b == format.quote || b == format.escape {
                    out.push(format.escape);
                }
                out.push(b);
            }
            out.push(format.quote);
        } else {
            for b in v.bytes() {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    8 => out.extend_from_slice(b"\\b"),
                    11 => out.extend_from_slice(b"\\v"),
                    12 => out.extend_from_slice(b"\\f"),
                    b if b == format.delimiter => out.extend_from_slice(&[b'\\', b]),
                    b => out.push(b),
                }
            }
        }
    }
    out.push(b'\n');
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn bool_value(v: Option<&str>) -> Result<bool> {
    match v.map(str::to_ascii_lowercase).as_deref() {
        None | Some("true" | "on" | "1") => Ok(true),
        Some("false" | "off" | "0") => Ok(false),
        Some(other) => Err(Error::InvalidParameterValue {
            message: format!("a Boolean value is required, not \"{other}\""),
        }),
    }
}

fn one_byte(v: &str, what: &str) -> Result<u8> {
    match v.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(Error::UnsupportedMessage {
            message: format!("COPY {what} must be a single one-byte character"),
        }),
    }
}

/// A cursor over a statement's tokens (whitespace removed).
struct Cursor<'a> {
    toks: &'a [&'a Token],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.toks.get(self.at).copied()
    }
    fn prev(&self) -> Option<&'a Token> {
        self.at.checked_sub(1).and_then(|i| self.toks.get(i).copied())
    }
    fn eat(&mut self, t: &Token) -> bool {
        let hit = self.peek() == Some(t);
        self.at += usize::from(hit);
        hit
    }
    fn expect(&mut self, t: &Token) -> Result<()> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(self.error())
        }
    }
    /// The next token if it is a word (folded to lower case unless quoted), consumed; a
    /// string literal is consumed too but gives `None`.
    fn word(&mut self) -> Option<String> {
        match self.peek()? {
            Token::Word(w) => {
                self.at += 1;
                Some(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() })
            }
            Token::SingleQuotedString(_) => {
                self.at += 1;
                None
            }
            _ => None,
        }
    }
    fn word_is(&mut self, word: &str) -> bool {
        let hit = matches!(self.peek(), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
        self.at += usize::from(hit);
        hit
    }
    fn ident(&mut self, what: &str) -> Result<String> {
        match self.peek() {
            Some(Token::Word(_)) => Ok(self.word().expect("a word")),
            _ => Err(syntax(format!("{} (expected {what})", self.error_message()))),
        }
    }
    /// An option value: a string literal, a word or a number.
    fn value(&mut self) -> Result<String> {
        let v = match self.peek() {
            Some(Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s)) => s.clone(),
            Some(Token::Word(w)) => w.value.clone(),
            Some(Token::Number(n, _)) => n.clone(),
            _ => return Err(self.error()),
        };
        self.at += 1;
        Ok(v)
    }
    fn error_message(&self) -> String {
        match self.peek() {
            Some(t) => format!("syntax error at or near \"{t}\""),
            None => "syntax error at end of input".into(),
        }
    }
    fn error(&self) -> Error {
        syntax(self.error_message())
    }
}

/// Splits the client's byte stream into rows of fields (`None` = NULL). Feed it the CopyData
/// payloads in order, then [`CopyDecoder::finish`].
#[derive(Debug)]
pub struct CopyDecoder {
    format: CopyFormat,
    /// Bytes of a row not yet complete.
    pending: Vec<u8>,
    /// Lines decoded so far, the header included (PostgreSQL's line numbers in error contexts).
    line: u64,
    header_pending: bool,
    /// The end-of-data marker `\.` was seen: anything after it is ignored.
    ended: bool,
    /// The table's name, for error contexts.
    relation: String,
}

/// The rows a [`CopyDecoder`] hands out: each row's line number (PostgreSQL's: the header
/// counts) and its fields (`None` = NULL).
pub type RowSink<'a> = dyn FnMut(u64, Vec<Option<String>>) -> Result<()> + 'a;

/// How much of a line or value an error context shows (PostgreSQL's
/// `MAX_COPY_DATA_DISPLAY`): longer ones are cut there, at a character boundary, with "...".
pub(crate) fn printout(s: &str) -> String {
    const MAX: usize = 100;
    if s.len() <= MAX {
        return s.to_string();
    }
    let cut = (0..=MAX).rev().find(|&at| s.is_char_boundary(at)).unwrap_or(0);
    format!("{}...", &s[..cut])
}

/// `22P04`, the class PostgreSQL uses for malformed COPY data.
pub(crate) fn bad_copy(message: impl Into<String>) -> Error {
    Error::DataException { message: message.into(), sqlstate: "22P04" }
}

impl CopyDecoder {
    /// A decoder of rows in `format` for the table named `relation`. Errors of a row (its
    /// own, or the ones the row callback returns without a context) get PostgreSQL's context
    /// `COPY relation, line n: "the line"`.
    pub fn new(format: CopyFormat, relation: &str) -> CopyDecoder {
        let header_pending = format.header;
        CopyDecoder {
            format,
            pending: Vec::new(),
            line: 0,
            header_pending,
            ended: false,
            relation: relation.to_string(),
        }
    }

    /// Decodes the complete rows of `data` (with what was pending), calling `row` for each.
    pub fn feed(&mut self, data: &[u8], row: &mut RowSink<'_>) -> Result<()> {
        if self.ended {
            return Ok(());
        }
        self.pending.extend_from_slice(data);
        let buf = std::mem::take(&mut self.pending);
        let mut start = 0;
        while let Some(end) = self.record_end(&buf[start..]) {
            let record = &buf[start..start + end];
            start += end + 1;
            self.one(record, row)?;
            if self.ended {
                return Ok(());
            }
        }
        self.pending = buf[start..].to_vec();
        Ok(())
    }

    /// The end of the data: a last row without its newline.
    pub fn finish(&mut self, row: &mut RowSink<'_>) -> Result<()> {
        let rest = std::mem::take(&mut self.pending);
        // (A CSV quote left open is reported by `csv_fields`.)
        if !self.ended && !rest.is_empty() {
            self.one(&rest, row)?;
        }
        Ok(())
    }

    /// Where the record that starts `buf` ends (the index of its newline), if it does.
    fn record_end(&self, buf: &[u8]) -> Option<usize> {
        if !self.format.csv {
            return buf.iter().position(|&b| b == b'\n');
        }
        // CSV: a newline inside quotes belongs to the field.
        let (q, e) = (self.format.quote, self.format.escape);
        let mut quoted = false;
        let mut i = 0;
        while i < buf.len() {
            let b = buf[i];
            if quoted {
                if b == e && e != q && buf.get(i + 1) == Some(&q) {
                    i += 1;
                } else if b == q {
                    if q == e && buf.get(i + 1) == Some(&q) {
                        i += 1;
                    } else {
                        quoted = false;
                    }
                }
            } else if b == q {
                quoted = true;
            } else if b == b'\n' {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    fn one(&mut self, record: &[u8], row: &mut RowSink<'_>) -> Result<()> {
        let record = record.strip_suffix(b"\r").unwrap_or(record);
        // PostgreSQL counts physical lines: a CSV record with newlines in a quoted field is
        // reported at its last line (a text record has none).
        self.line += 1;
        if self.format.csv {
            self.line += record.iter().filter(|&&b| b == b'\n').count() as u64;
        }
        if record == b"\\." {
            self.ended = true;
            return Ok(());
        }
        if self.header_pending {
            self.header_pending = false;
            return Ok(());
        }
        let fields =
            if self.format.csv { self.csv_fields(record) } else { self.text_fields(record) };
        fields.and_then(|fields| row(self.line, fields)).map_err(|e| {
            e.with_context(|| {
                format!(
                    "COPY {}, line {}: \"{}\"",
                    self.relation,
                    self.line,
                    printout(&String::from_utf8_lossy(record))
                )
            })
        })
    }

    fn text_fields(&self, record: &[u8]) -> Result<Vec<Option<String>>> {
        record
            .split(|&b| b == self.format.delimiter)
            .map(|raw| {
                if raw == self.format.null.as_bytes() {
                    return Ok(None);
                }
                utf8(unescape_text(raw)).map(Some)
            })
            .collect()
    }

    fn csv_fields(&self, record: &[u8]) -> Result<Vec<Option<String>>> {
        let (d, q, e) = (self.format.delimiter, self.format.quote, self.format.escape);
        let mut fields = Vec::new();
        let mut i = 0;
        loop {
            let mut value = Vec::new();
            let mut was_quoted = false;
            let start = i;
            while i < record.len() && record[i] != d {
                if record[i] == q {
                    was_quoted = true;
                    i += 1;
                    loop {
                        match record.get(i) {
                            None => return Err(bad_copy("unterminated CSV quoted field")),
                            Some(&b) if b == e && record.get(i + 1) == Some(&q) => {
                                value.push(q);
                                i += 2;
                            }
                            Some(&b) if b == q => {
                                i += 1;
                                break;
                            }
                            Some(&b) => {
                                value.push(b);
                                i += 1;
                            }
                        }
                    }
                } else {
                    value.push(record[i]);
                    i += 1;
                }
            }
            let raw = &record[start..i];
            fields.push(if !was_quoted && raw == self.format.null.as_bytes() {
                None
            } else {
                Some(utf8(value)?)
            });
            if i >= record.len() {
                return Ok(fields);
            }
            i += 1; // the delimiter
        }
    }
}

fn utf8(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| Error::CharacterNotInRepertoire {
        message: format!(
            "invalid byte sequence for encoding \"UTF8\": 0x{:02x}",
            e.as_bytes()[e.utf8_error().valid_up_to()]
        ),
    })
}

/// Text format's backslash escapes: `\b \f \n \r \t \v`, `\\`, octal `\ooo`, hex `\xhh`, and
/// a backslash before any other character stands for that character.
fn unescape_text(raw: &[u8]) -> Vec<u8> {
    if !raw.contains(&b'\\') {
        return raw.to_vec();
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if b != b'\\' || i >= raw.len() {
            out.push(b);
            continue;
        }
        let c = raw[i];
        i += 1;
        match c {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(v as u8);
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut v = 0u32;
                for _ in 0..2 {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(sql: &str) -> Result<CopyStatement> {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let tokens =
            sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().unwrap();
        parse_copy(sql, &tokens)
    }

    fn rows(format: &CopyFormat, chunks: &[&[u8]]) -> Result<Vec<Vec<Option<String>>>> {
        let mut d = CopyDecoder::new(format.clone(), "t");
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut |_, r| {
                out.push(r);
                Ok(())
            })?;
        }
        d.finish(&mut |_, r| {
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn statements() {
        let from = |table: &str, name: &str, columns: &[&str]| CopyKind::From {
            table: table.into(),
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
        };
        let c = copy("copy pgbench_accounts from stdin with (freeze on)").unwrap();
        assert!(c.freeze);
        assert!(!copy("copy t from stdin (freeze off)").unwrap().freeze);
        assert_eq!(c.kind, from("\"pgbench_accounts\"", "pgbench_accounts", &[]));
        assert!(!c.format.csv);
        let c = copy("COPY public.\"T\" (a, \"B\") FROM STDIN WITH (FORMAT csv, HEADER, NULL 'x')")
            .unwrap();
        assert_eq!(c.kind, from("\"public\".\"T\"", "T", &["a", "B"]));
        assert!(c.format.csv && c.format.header && c.format.delimiter == b',');
        assert_eq!(c.format.null, "x");
        let c = copy("copy t from stdin csv header delimiter as ';'").unwrap();
        assert!(c.format.csv && c.format.header && c.format.delimiter == b';');
        let code = |sql: &str| copy(sql).unwrap_err().sqlstate();
        let c = copy("copy (select a, ')' from t) to stdout with csv header").unwrap();
        assert!(c.format.csv && c.format.header);
        assert_eq!(c.kind, CopyKind::To { query: "select a, ')' from t".into(), name: None });
        let to = |query: &str| CopyKind::To { query: query.into(), name: Some("t".into()) };
        assert_eq!(
            copy("COPY t (a, \"B\") TO STDOUT").unwrap().kind,
            to("SELECT \"a\", \"B\" FROM \"t\"")
        );
        assert_eq!(copy("copy t to stdout").unwrap().kind, to("SELECT * FROM \"t\""));
        assert_eq!(code("copy (select 1) from stdin"), "42601");
        assert_eq!(code("copy t to '/tmp/x'"), "0A000");
        assert_eq!(code("copy t from '/etc/passwd'"), "0A000");
        assert_eq!(code("copy t from stdin (format binary)"), "0A000");
        assert_eq!(code("copy t from stdin (bogus 1)"), "42601");
        assert_eq!(code("copy t from stdin (freeze maybe)"), "22023");
        assert_eq!(code("copy t from"), "42601");
        assert_eq!(code("copy t from stdin (delimiter 'ab')"), "0A000");
    }

    #[test]
    fn errors_say_where_they_happened() {
        let context = |format: CopyFormat, data: &[u8], fail_at: u64| {
            let mut d = CopyDecoder::new(format, "t");
            let err = d
                .feed(data, &mut |line, _| {
                    if line == fail_at {
                        Err(Error::QueryCanceled)
                    } else {
                        Ok(())
                    }
                })
                .unwrap_err();
            (err.sqlstate(), err.context().map(str::to_string))
        };
        // The line's own text, NULL markers and all.
        assert_eq!(
            context(CopyFormat::text(), b"1\tx\n\\N\t2\n", 2),
            ("57014", Some("COPY t, line 2: \"\\N\t2\"".into()))
        );
        // Physical lines: a CSV field with a newline makes its record two lines long.
        let csv = copy("copy t from stdin csv").unwrap().format;
        assert_eq!(
            context(csv.clone(), b"1,\"a\nb\"\n2,3\n", 3),
            ("57014", Some("COPY t, line 3: \"2,3\"".into()))
        );
        // A malformed row is reported at its line too; a context already there stays.
        let mut d = CopyDecoder::new(csv, "t");
        let err = d
            .feed(b"1,2\n\"open\n", &mut |_, _| Ok(()))
            .and_then(|()| d.finish(&mut |_, _| Ok(())));
        assert_eq!(err.unwrap_err().context(), Some("COPY t, line 3: \"\"open\n\""));
        let inner = Error::QueryCanceled.with_context(|| "inner".into());
        assert_eq!(inner.with_context(|| "outer".into()).context(), Some("inner"));
        // Long lines and values are cut at 100 bytes, on a character boundary.
        assert_eq!(printout(&"é".repeat(60)), format!("{}...", "é".repeat(50)));
        assert_eq!(printout("short"), "short");
    }

    #[test]
    fn text_rows_across_chunks() {
        let f = CopyFormat::text();
        let got = rows(&f, &[b"1\ta\\tb\t\\N\n2\t", b"x\\\\y\t\\101\\x41\n", b"3\t\t"]).unwrap();
        assert_eq!(
            got,
            [
                vec![s("1"), s("a\tb"), None],
                vec![s("2"), s("x\\y"), s("AA")],
                vec![s("3"), s(""), s("")],
            ]
        );
        // The end marker stops the data; a CRLF line ends like a LF one.
        let got = rows(&f, &[b"1\r\n\\.\nignored\n"]).unwrap();
        assert_eq!(got, [vec![s("1")]]);
        assert_eq!(rows(&f, &[b"\xff\n"]).unwrap_err().sqlstate(), "22021");
    }

    #[test]
    fn rows_out() {
        let mut out = Vec::new();
        let text = CopyFormat::text();
        encode_row(&text, &[s("a\tb\\c\nd"), None, s("")], &mut out);
        assert_eq!(out, b"a\\tb\\\\c\\nd\t\\N\t\n");
        // What is written reads back as it was.
        assert_eq!(rows(&text, &[&out]).unwrap(), [vec![s("a\tb\\c\nd"), None, s("")]]);
        let csv = copy("copy t to stdout csv").unwrap().format;
        let mut out = Vec::new();
        encode_row(&csv, &[s("x,\"y\""), None, s(""), s("plain")], &mut out);
        assert_eq!(out, b"\"x,\"\"y\"\"\",,\"\",plain\n");
        assert_eq!(rows(&csv, &[&out]).unwrap(), [vec![s("x,\"y\""), None, s(""), s("plain")]]);
    }

    #[test]
    fn csv_rows() {
        let f = copy("copy t from stdin (format csv, header true)").unwrap().format;
        let got =
            rows(&f, &[b"a,b,c\n1,\"x, \"\"y\"\"\",\n2,\"line", b"\nbreak\",\"\"\n"]).unwrap();
        assert_eq!(got, [vec![s("1"), s("x, \"y\""), None], vec![s("2"), s("line\nbreak"), s("")]]);
        assert_eq!(rows(&f, &[b"h\n\"open\n"]).unwrap_err().sqlstate(), "22P04");
    }
}
