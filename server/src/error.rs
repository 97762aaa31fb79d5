//! Errors on the wire: the one place where an error becomes an ErrorResponse.
//!
//! Statement errors come from the SQL layer as [`sql::Error`], which already decides the
//! SQLSTATE, message, detail and position. The protocol layer adds a few errors of its own that
//! concern prepared-statement and portal bookkeeping (PostgreSQL raises them in `postgres.c`,
//! outside the executor); they are [`ProtocolError`], with their SQLSTATE chosen in one
//! exhaustive match. Both kinds meet in [`error_info`].

use pgwire::error::{ErrorInfo, PgWireError};

/// Errors raised by the protocol layer itself, with PostgreSQL's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// `08P01`: a message that breaks the protocol (bad counts, bad format codes).
    Violation(String),
    /// `26000`: Bind or Describe names a prepared statement that does not exist.
    UndefinedStatement(String),
    /// `34000`: Execute or Describe names a portal that does not exist.
    UndefinedPortal(String),
    /// `42P05`: Parse reuses the name of an existing named prepared statement.
    DuplicateStatement(String),
    /// `42P03`: Bind reuses the name of an existing named portal.
    DuplicatePortal(String),
    /// `55000`: Execute of a portal whose command already ran to completion.
    PortalCannotRun(String),
    /// `22023`: a format code other than 0 (text) or 1 (binary).
    UnsupportedFormatCode(i16),
    /// `22021`: message text that is not valid UTF-8; the message names the bad bytes.
    InvalidEncoding(String),
}

impl ProtocolError {
    /// The SQLSTATE. Exhaustive: no catch-all arm.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            ProtocolError::Violation(_) => "08P01",
            ProtocolError::UndefinedStatement(_) => "26000",
            ProtocolError::UndefinedPortal(_) => "34000",
            ProtocolError::DuplicateStatement(_) => "42P05",
            ProtocolError::DuplicatePortal(_) => "42P03",
            ProtocolError::PortalCannotRun(_) => "55000",
            ProtocolError::UnsupportedFormatCode(_) => "22023",
            ProtocolError::InvalidEncoding(_) => "22021",
        }
    }
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolError::Violation(message) | ProtocolError::InvalidEncoding(message) => {
                write!(f, "{message}")
            }
            ProtocolError::UndefinedStatement(name) if name.is_empty() => {
                write!(f, "unnamed prepared statement does not exist")
            }
            ProtocolError::UndefinedStatement(name) => {
                write!(f, "prepared statement \"{name}\" does not exist")
            }
            ProtocolError::UndefinedPortal(name) => write!(f, "portal \"{name}\" does not exist"),
            ProtocolError::DuplicateStatement(name) => {
                write!(f, "prepared statement \"{name}\" already exists")
            }
            ProtocolError::DuplicatePortal(name) => write!(f, "cursor \"{name}\" already exists"),
            ProtocolError::PortalCannotRun(name) => write!(f, "portal \"{name}\" cannot be run"),
            ProtocolError::UnsupportedFormatCode(code) => {
                write!(f, "unsupported format code: {code}")
            }
        }
    }
}

/// An error to send to the client: either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum WireError {
    /// From the SQL layer.
    Sql {
        /// The error.
        error: sql::Error,
        /// The statement text its position refers to.
        sql: String,
    },
    /// From the protocol layer.
    Protocol(ProtocolError),
}

impl From<ProtocolError> for WireError {
    fn from(e: ProtocolError) -> Self {
        WireError::Protocol(e)
    }
}

/// The one conversion of an error into the fields of an ErrorResponse: severity (localized and
/// not), SQLSTATE, message, detail, position (1-based characters into `sql`) and context. Fields are
/// NUL-terminated on the wire, so a NUL inside a message or detail (a value quoted in it, a
/// bug) would end the field early and turn the rest into bogus fields: it becomes U+FFFD.
pub fn error_info(err: &WireError) -> ErrorInfo {
    let field = |s: String| if s.contains('\0') { s.replace('\0', "\u{FFFD}") } else { s };
    match err {
        WireError::Sql { error, sql } => {
            let mut info = ErrorInfo::new(
                error.severity().to_owned(),
                error.sqlstate().to_owned(),
                field(error.to_string()),
            );
            info.severity_nonlocalized = Some(error.severity().to_owned());
            info.detail = error.detail().map(|d| field(d.to_owned()));
            info.hint = error.hint().map(|h| field(h.to_owned()));
            info.position = error.position(sql).map(|p| p.to_string());
            info.where_context = error.context().map(|w| field(w.to_owned()));
            info.routine = error.routine().map(str::to_owned);
            info
        }
        WireError::Protocol(e) => {
            let mut info =
                ErrorInfo::new("ERROR".to_owned(), e.sqlstate().to_owned(), field(e.to_string()));
            info.severity_nonlocalized = Some("ERROR".to_owned());
            info
        }
    }
}

/// `error_info` wrapped for returning from a pgwire handler: pgwire then sends the
/// ErrorResponse and, in the extended protocol, discards messages until Sync.
pub fn to_pgwire(err: WireError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(&err)))
}

/// Shorthand: a SQL-layer error about statement text `sql`, as a pgwire error.
pub fn sql_error(error: sql::Error, sql: &str) -> PgWireError {
    to_pgwire(WireError::Sql { error, sql: sql.to_owned() })
}

/// Shorthand: a protocol-layer error, as a pgwire error.
pub fn protocol_error(error: ProtocolError) -> PgWireError {
    to_pgwire(WireError::Protocol(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_error_carries_code_message_and_position() {
        let error = sql::Error::UndefinedTable {
            name: "t".into(),
            span: Some(sql::error::Span { start: 14 }),
        };
        let info = error_info(&WireError::Sql { error, sql: "SELECT * FROM t".into() });
        assert_eq!(info.severity, "ERROR");
        assert_eq!(info.code, "42P01");
        assert_eq!(info.message, "relation \"t\" does not exist");
        assert_eq!(info.position.as_deref(), Some("15"));
        assert_eq!(info.detail, None);
    }

    #[test]
    fn detail_is_forwarded() {
        let error = sql::Error::UniqueViolation {
            constraint: "kv_pkey".into(),
            detail: "Key (k)=(1) already exists.".into(),
            table: "kv".into(),
        };
        let info = error_info(&WireError::Sql { error, sql: String::new() });
        assert_eq!(info.code, "23505");
        assert_eq!(info.detail.as_deref(), Some("Key (k)=(1) already exists."));
    }

    #[test]
    fn protocol_errors_use_postgres_messages() {
        let info = error_info(&ProtocolError::UndefinedStatement(String::new()).into());
        assert_eq!(
            (info.code.as_str(), info.message.as_str()),
            ("26000", "unnamed prepared statement does not exist")
        );
        let info = error_info(&ProtocolError::UndefinedStatement("S_1".into()).into());
        assert_eq!(info.message, "prepared statement \"S_1\" does not exist");
    }

    /// A NUL inside a message or detail would end the field on the wire: it never gets there.
    #[test]
    fn no_nul_reaches_a_field() {
        let error = sql::Error::UniqueViolation {
            constraint: "kv_pkey".into(),
            detail: "Key (k)=(a\0b) already exists.".into(),
            table: "k\0v".into(),
        };
        let info = error_info(&WireError::Sql { error, sql: String::new() });
        assert!(!info.message.contains('\0'), "{:?}", info.message);
        assert_eq!(info.detail.as_deref(), Some("Key (k)=(a\u{FFFD}b) already exists."));
    }

    /// Deleting a referenced row reads as PostgreSQL's message, naming both tables.
    #[test]
    fn referenced_row_message() {
        let error = sql::Error::ForeignKeyViolation {
            constraint: "emp_dept_id_fkey".into(),
            detail: "Key (id)=(1) is still referenced from table \"emp\".".into(),
            table: "dept".into(),
            referenced_from: Some("emp".into()),
        };
        let info = error_info(&WireError::Sql { error, sql: String::new() });
        assert_eq!(
            info.message,
            "update or delete on table \"dept\" violates foreign key constraint \"emp_dept_id_fkey\" on table \"emp\""
        );
    }
}
