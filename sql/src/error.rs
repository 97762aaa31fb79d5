//! Errors of the SQL layer, and the one place where a SQLSTATE is chosen (`Error::sqlstate`).
//!
//! Every error a client can act on has its own variant; the message text follows PostgreSQL 15
//! where PostgreSQL has the same error. `sqlstate()` is an exhaustive match with no catch-all arm,
//! so adding a variant forces a decision about its code.

use std::fmt;

/// `$on` on the `span` of the variants that carry one (bound as `$span`), else `$none`.
macro_rules! with_span {
    ($e:expr, $span:ident => $on:expr, $none:expr) => {
        match $e {
            Error::Syntax { $span, .. }
            | Error::Unsupported { $span, .. }
            | Error::UndefinedTable { $span, .. }
            | Error::UndefinedColumn { $span, .. }
            | Error::MissingFromEntry { $span, .. }
            | Error::AmbiguousColumn { $span, .. }
            | Error::UndefinedFunction { $span, .. }
            | Error::AmbiguousFunction { $span, .. }
            | Error::DatatypeMismatch { $span, .. }
            | Error::CannotCoerce { $span, .. }
            | Error::Grouping { $span, .. }
            | Error::InvalidColumnReference { $span, .. }
            | Error::SyntaxMisuse { $span, .. }
            | Error::Positioned { $span, .. } => $on,
            _ => $none,
        }
    };
}

/// Result alias for the SQL layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A byte offset range into the statement text (0-based), for the ErrorResponse `position`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Byte offset of the first character of the offending construct.
    pub start: usize,
}

/// An error of the SQL layer. Boxed payloads keep `Result<T>` small. Field meanings are given
/// by each variant's doc (message text, source span, names).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// `42601`: the text does not parse.
    Syntax { message: String, span: Option<Span> },
    /// `0A000`: valid SQL we do not support; `feature` names the construct.
    Unsupported { feature: String, span: Option<Span> },
    /// `42P01`: relation "x" does not exist.
    UndefinedTable { name: String, span: Option<Span> },
    /// `42P01`: missing FROM-clause entry for table "x".
    MissingFromEntry { table: String, span: Option<Span> },
    /// `42703`: column "x" does not exist.
    UndefinedColumn { name: String, span: Option<Span> },
    /// `42702`: column reference "x" is ambiguous.
    AmbiguousColumn { name: String, span: Option<Span> },
    /// `42703` / `42702` / `42701`: a column of `JOIN … USING` that one side (`left` or
    /// `right`) does not have, has more than once, or that the list names twice.
    UsingColumn { name: String, side: &'static str, fault: UsingFault },
    /// `42883`: function / operator does not exist.
    UndefinedFunction { name: String, span: Option<Span> },
    /// `42725`: function is not unique (several candidates fit equally well).
    AmbiguousFunction { name: String, span: Option<Span> },
    /// `42704`: undefined object (index, type, …).
    UndefinedObject { message: String },
    /// `42P07`: relation "x" already exists.
    DuplicateTable { name: String },
    /// `42701`: column "x" specified more than once / already exists.
    DuplicateColumn { name: String },
    /// `42P16`: invalid table definition (e.g. multiple primary keys).
    InvalidTableDefinition { message: String },
    /// `42804`: datatype mismatch (e.g. argument of WHERE must be type boolean).
    DatatypeMismatch { message: String, span: Option<Span> },
    /// `42846`: cannot cast type x to y.
    CannotCoerce { message: String, span: Option<Span> },
    /// `42803`: grouping error (column must appear in GROUP BY).
    Grouping { message: String, span: Option<Span> },
    /// `42P10`: invalid column reference (e.g. ORDER BY position out of range).
    InvalidColumnReference { message: String, span: Option<Span> },
    /// `42P02`: there is no parameter $n.
    UndefinedParameter { message: String },
    /// `42P18`: could not determine data type (of parameter $n, of an empty array).
    IndeterminateDatatype { message: String },
    /// `42601`-class misuse that PostgreSQL reports as syntax error with a message (e.g. INSERT
    /// has more expressions than target columns).
    SyntaxMisuse { message: String, span: Option<Span> },
    /// `42809`: wrong object type.
    WrongObjectType { message: String },
    /// `2BP01`: cannot drop because other objects depend on it.
    DependentObjects { message: String, detail: String },
    /// `22003`: numeric value out of range.
    NumericOutOfRange { message: String },
    /// `22003`: "numeric field overflow" from a `numeric(p,s)` modifier; `detail` is
    /// PostgreSQL's DETAIL line (the bound the value must round below).
    NumericFieldOverflow { detail: String },
    /// `22012`: division by zero.
    DivisionByZero,
    /// `22P02`: invalid input syntax for type x: "v".
    InvalidTextRepresentation { message: String },
    /// `22P02`: invalid input syntax for type json; `detail` is the JSON lexer's
    /// ("Token "x" is invalid.").
    InvalidJson { detail: String },
    /// `22P02`: malformed array literal: "text"; `detail` says what `array_in` found.
    InvalidArray { text: String, detail: String },
    /// `22P05`: unsupported Unicode escape sequence (`\u0000` in jsonb).
    UnsupportedUnicodeEscape { detail: String },
    /// `22P03`: invalid binary representation.
    InvalidBinaryRepresentation { message: String },
    /// `22001`: value too long for type character varying(n).
    StringDataRightTruncation { message: String },
    /// `22007`: invalid datetime format.
    InvalidDatetimeFormat { message: String },
    /// `22008`: date/time field value out of range.
    DatetimeFieldOverflow { message: String },
    /// `22015`: an interval field out of range in interval input.
    IntervalFieldOverflow { message: String },
    /// `22023`: invalid parameter value (e.g. unknown SET value).
    InvalidParameterValue { message: String },
    /// `22023`: an invalid TimeZone value, with PostgreSQL's DETAIL saying why.
    InvalidZone { message: String, detail: String },
    /// `22021`: invalid byte sequence for encoding "UTF8".
    CharacterNotInRepertoire { message: String },
    /// `2201W`/`2201X`: invalid LIMIT / OFFSET.
    InvalidRowCount { message: String, sqlstate: &'static str },
    /// `21000`: more than one row returned by a subquery used as an expression.
    CardinalityViolation { message: String },
    /// `22004`/`22000`-class: other data exceptions with a PostgreSQL code.
    DataException { message: String, sqlstate: &'static str },
    /// `23505`: duplicate key value violates unique constraint "c".
    UniqueViolation { constraint: String, detail: String, table: String },
    /// `23505` while building a unique index over existing rows.
    UniqueIndexBuild { index: String, detail: String },
    /// `42701`: column "x" of relation "t" already exists.
    DuplicateColumnExists { name: String },
    /// `42701`: column "c" of relation "t" appears more than once (in ANALYZE's list).
    ColumnListedTwice { column: String, table: String },
    /// `42830`: invalid foreign key (no unique constraint matching the referenced columns).
    InvalidForeignKey { message: String },
    /// `42710`: duplicate object (e.g. a constraint name already used on the table).
    DuplicateObject { message: String },
    /// `55000`: object not in prerequisite state (e.g. COPY FREEZE of a table this
    /// transaction did not create or truncate).
    ObjectNotInPrerequisiteState { message: String },
    /// `55006`: the object is in use (e.g. current user cannot be dropped).
    ObjectInUse { message: String },
    /// `55P02`: parameter "x" cannot be changed.
    CantChangeRuntimeParam { name: String },
    /// `42P20`: a window function where none is allowed.
    Windowing { message: String },
    /// `42712`: a name given twice where it must be unique (WITH query names).
    DuplicateAlias { message: String },
    /// `42P01`: sequence "x" does not exist (DROP SEQUENCE).
    UndefinedSequence { name: String },
    /// `428C9`: a value other than DEFAULT for a `GENERATED ALWAYS AS IDENTITY` column
    /// (`update`: in UPDATE … SET, else INSERT).
    /// `detail`: "Column "c" is an identity column defined as GENERATED ALWAYS."
    GeneratedAlways { column: String, update: bool, detail: String },
    /// `0A000` with a full PostgreSQL message (e.g. cannot truncate a referenced table).
    UnsupportedMessage { message: String },
    /// `42939`: a name of a kind reserved for the system (`pg_` schemas); `detail` says why.
    ReservedName { message: String, detail: String },
    /// `42P06`: schema "x" already exists.
    DuplicateSchema { message: String },
    /// `0A000`: cannot alter type of a column used by a view or rule; `detail` names them
    /// (`rule _RETURN on view v depends on column "c"`).
    ColumnUsedByView { detail: String },
    /// `23502`: null value in column "c" of relation "t" violates not-null constraint.
    /// `row`: the DETAIL, "Failing row contains (…)." where the row is known.
    NotNullViolation { column: String, table: String, row: Option<Box<str>> },
    /// `23502`: column "c" of relation "t" contains null values (a NOT NULL column or a
    /// primary key added to a table whose rows have NULL there).
    ColumnContainsNulls { column: String, table: String },
    /// `23514`: new row for relation "t" violates check constraint "c"; `row` is the DETAIL,
    /// "Failing row contains (…).".
    CheckViolation { constraint: String, table: String, row: Box<str> },
    /// `23514`: check constraint "c" of relation "t" is violated by some row (adding it).
    CheckViolatedBySomeRow { constraint: String, table: String },
    /// `23503`: foreign key violation: a row of `table` references a missing row
    /// (`referenced_from` `None`), or a row of `table` that a row of table `referenced_from`
    /// references is deleted or re-keyed.
    /// (Boxed strings keep `Error` small.)
    ForeignKeyViolation {
        constraint: Box<str>,
        detail: Box<str>,
        table: Box<str>,
        referenced_from: Option<Box<str>>,
    },
    /// `40001`: could not serialize access (OCC validation failed or a conflict).
    SerializationFailure { message: String },
    /// `40P01`: deadlock detected (sessions waiting for each other's advisory locks).
    Deadlock { detail: String },
    /// `42P01`: DROP TABLE or DROP VIEW of a name that is no relation: `<kind> "name" does not
    /// exist` (`kind` `table` or `view`).
    UndefinedToDrop { kind: &'static str, name: String },
    /// `54023`: too many arguments (GROUPING's 31).
    TooManyArguments { message: String },
    /// `0A000`: a prepared statement, bound again after DDL, would return other columns than
    /// the client was given ("cached plan must not change result type").
    ResultTypeChanged,
    /// `42P05`: PREPARE of a name already in use.
    DuplicatePreparedStatement { name: String },
    /// `26000`: EXECUTE or DEALLOCATE of a name not prepared.
    UndefinedPreparedStatement { name: String },
    /// `42602`: invalid name syntax (a relation name written as text that does not parse).
    InvalidName { message: String },
    /// `3B001`: RELEASE or ROLLBACK TO of a savepoint the transaction does not have.
    UndefinedSavepoint { name: String },
    /// `42601`: EXECUTE with too few or too many arguments.
    WrongParameterCount { name: String, detail: String },
    /// `25P02`: current transaction is aborted, commands ignored until end of transaction block.
    InFailedTransaction,
    /// `25001`: active SQL transaction (e.g. SET TRANSACTION ISOLATION after a query).
    ActiveTransaction { message: String },
    /// `25P01`: no transaction in progress (a warning in PostgreSQL; used for notices).
    NoActiveTransaction { message: String },
    /// `42704` for `SHOW x` / `SET x` of an unknown parameter: unrecognized configuration
    /// parameter.
    UnrecognizedParameter { name: String },
    /// `54001`: statement too complex (e.g. nesting too deep).
    StatementTooComplex { message: String },
    /// `54000`: program limit exceeded (e.g. too many parameters or columns).
    ProgramLimitExceeded { message: String },
    /// `54011`: too many columns (e.g. CUBE's 12 elements).
    TooManyColumns { message: String },
    /// `08P01`: protocol violation reported through the SQL layer (bad parameter count …).
    ProtocolViolation { message: String },
    /// `57014`: canceling statement due to user request.
    QueryCanceled,
    /// `57014`: canceling statement due to statement timeout (`statement_timeout`).
    StatementTimeout,
    /// `58030`: I/O error (e.g. failed log device).
    IoError { message: String },
    /// `XX001`: data corrupted.
    DataCorrupted { message: String },
    /// `XX000`: internal error — a bug in Aspen. Never used for user mistakes.
    Internal { message: String },
    /// `error`, with where it happened (the ErrorResponse `W` field, psql's CONTEXT line),
    /// e.g. `COPY t, line 2, column b: "x"`. Everything else is `error`'s.
    Context { error: Box<Error>, context: String },
    /// `error`, with a suggestion (the ErrorResponse `H` field, psql's HINT line).
    Hinted { error: Box<Error>, hint: String },
    /// `error`, pointing at the construct it comes from (the ErrorResponse `P` field): a
    /// literal that does not convert to its type, at the literal.
    Positioned { error: Box<Error>, span: Option<Span> },
}

/// What is wrong with a column of `JOIN … USING` ([`Error::UsingColumn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsingFault {
    /// The side does not have it.
    Missing,
    /// The side has it more than once.
    Ambiguous,
    /// The list names it twice.
    Repeated,
}
impl Error {
    /// [`Error::GeneratedAlways`] for `column`.
    pub fn generated_always(column: &str, update: bool) -> Error {
        Error::GeneratedAlways {
            column: column.to_string(),
            update,
            detail: format!(
                "Column \"{column}\" is an identity column defined as GENERATED ALWAYS."
            ),
        }
    }

    /// The PostgreSQL SQLSTATE for this error. Exhaustive: no catch-all arm.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Error::Syntax { .. } => "42601",
            Error::SyntaxMisuse { .. } => "42601",
            Error::Unsupported { .. } => "0A000",
            Error::UndefinedTable { .. } => "42P01",
            Error::MissingFromEntry { .. } => "42P01",
            Error::UndefinedColumn { .. } => "42703",
            Error::AmbiguousColumn { .. } => "42702",
            Error::UsingColumn { fault: UsingFault::Missing, .. } => "42703",
            Error::UsingColumn { fault: UsingFault::Ambiguous, .. } => "42702",
            Error::UsingColumn { fault: UsingFault::Repeated, .. } => "42701",
            Error::UndefinedFunction { .. } => "42883",
            Error::AmbiguousFunction { .. } => "42725",
            Error::UndefinedObject { .. } => "42704",
            Error::DuplicateTable { .. } => "42P07",
            Error::DuplicateColumn { .. } => "42701",
            Error::InvalidTableDefinition { .. } => "42P16",
            Error::DatatypeMismatch { .. } => "42804",
            Error::CannotCoerce { .. } => "42846",
            Error::Grouping { .. } => "42803",
            Error::InvalidColumnReference { .. } => "42P10",
            Error::UndefinedParameter { .. } => "42P02",
            Error::IndeterminateDatatype { .. } => "42P18",
            Error::WrongObjectType { .. } => "42809",
            Error::DependentObjects { .. } => "2BP01",
            Error::NumericOutOfRange { .. } => "22003",
            Error::NumericFieldOverflow { .. } => "22003",
            Error::DivisionByZero => "22012",
            Error::InvalidTextRepresentation { .. }
            | Error::InvalidJson { .. }
            | Error::InvalidArray { .. } => "22P02",
            Error::UnsupportedUnicodeEscape { .. } => "22P05",
            Error::InvalidBinaryRepresentation { .. } => "22P03",
            Error::StringDataRightTruncation { .. } => "22001",
            Error::InvalidDatetimeFormat { .. } => "22007",
            Error::DatetimeFieldOverflow { .. } => "22008",
            Error::IntervalFieldOverflow { .. } => "22015",
            Error::InvalidParameterValue { .. } | Error::InvalidZone { .. } => "22023",
            Error::CharacterNotInRepertoire { .. } => "22021",
            Error::InvalidRowCount { sqlstate, .. } => sqlstate,
            Error::CardinalityViolation { .. } => "21000",
            Error::DataException { sqlstate, .. } => sqlstate,
            Error::UniqueViolation { .. } => "23505",
            Error::NotNullViolation { .. } => "23502",
            Error::ColumnContainsNulls { .. } => "23502",
            Error::CheckViolation { .. } | Error::CheckViolatedBySomeRow { .. } => "23514",
            Error::UniqueIndexBuild { .. } => "23505",
            Error::DuplicateColumnExists { .. } => "42701",
            Error::ColumnListedTwice { .. } => "42701",
            Error::InvalidForeignKey { .. } => "42830",
            Error::DuplicateObject { .. } => "42710",
            Error::ObjectNotInPrerequisiteState { .. } => "55000",
            Error::ObjectInUse { .. } => "55006",
            Error::GeneratedAlways { .. } => "428C9",
            Error::UndefinedSequence { .. } => "42P01",
            Error::DuplicateAlias { .. } => "42712",
            Error::Windowing { .. } => "42P20",
            Error::CantChangeRuntimeParam { .. } => "55P02",
            Error::UnsupportedMessage { .. } | Error::ColumnUsedByView { .. } => "0A000",
            Error::ReservedName { .. } => "42939",
            Error::DuplicateSchema { .. } => "42P06",
            Error::ForeignKeyViolation { .. } => "23503",
            Error::SerializationFailure { .. } => "40001",
            Error::Deadlock { .. } => "40P01",
            Error::ResultTypeChanged => "0A000",
            Error::TooManyArguments { .. } => "54023",
            Error::UndefinedToDrop { .. } => "42P01",
            Error::DuplicatePreparedStatement { .. } => "42P05",
            Error::UndefinedPreparedStatement { .. } => "26000",
            Error::UndefinedSavepoint { .. } => "3B001",
            Error::InvalidName { .. } => "42602",
            Error::WrongParameterCount { .. } => "42601",
            Error::InFailedTransaction => "25P02",
            Error::ActiveTransaction { .. } => "25001",
            Error::NoActiveTransaction { .. } => "25P01",
            Error::UnrecognizedParameter { .. } => "42704",
            Error::StatementTooComplex { .. } => "54001",
            Error::ProgramLimitExceeded { .. } => "54000",
            Error::TooManyColumns { .. } => "54011",
            Error::ProtocolViolation { .. } => "08P01",
            Error::QueryCanceled | Error::StatementTimeout => "57014",
            Error::IoError { .. } => "58030",
            Error::DataCorrupted { .. } => "XX001",
            Error::Internal { .. } => "XX000",
            Error::Context { error, .. }
            | Error::Hinted { error, .. }
            | Error::Positioned { error, .. } => error.sqlstate(),
        }
    }

    /// DESIGN.md §2: a statement that fails inside a transaction whose reads no longer
    /// validate may have failed *because* it read inconsistent data (a torn pair of rows can
    /// divide by zero or violate a constraint). The client must then see `40001`, which is
    /// retryable, not the error the inconsistent read caused. `reads_valid` is asked only when
    /// the error is not already a serialization failure.
    pub fn or_serialization_failure(self, reads_valid: impl FnOnce() -> bool) -> Error {
        match self {
            Error::SerializationFailure { .. } => self,
            other if reads_valid() => other,
            _ => Error::SerializationFailure {
                message: "could not serialize access due to concurrent update".into(),
            },
        }
    }

    /// Whether retrying the same statement or transaction may succeed (serialization failures).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Context { error, .. }
            | Error::Hinted { error, .. }
            | Error::Positioned { error, .. } => error.is_retryable(),
            other => matches!(other, Error::SerializationFailure { .. }),
        }
    }

    /// `self` with `context` (see [`Error::Context`]), unless it has one already: the
    /// innermost place wins, as PostgreSQL's innermost error context callback runs first.
    pub fn with_context(self, context: impl FnOnce() -> String) -> Error {
        match self {
            Error::Context { .. } => self,
            error => Error::Context { error: Box::new(error), context: context() },
        }
    }

    /// Where the error happened (ErrorResponse `W`), if known.
    pub fn context(&self) -> Option<&str> {
        match self {
            Error::Context { context, .. } => Some(context),
            Error::Hinted { error, .. } | Error::Positioned { error, .. } => error.context(),
            _ => None,
        }
    }

    /// `self` pointing at `span` (see [`Error::Positioned`]), unless it points somewhere
    /// already.
    pub(crate) fn at(self, at: Option<Span>) -> Error {
        if at.is_none() || with_span!(&self, span => span.is_some(), false) {
            return self;
        }
        if let Error::Hinted { error, hint } = self {
            return Error::Hinted { error: Box::new(error.at(at)), hint };
        }
        Error::Positioned { error: Box::new(self), span: at }
    }

    /// `self` with a hint (see [`Error::Hinted`]).
    pub fn with_hint(self, hint: impl Into<String>) -> Error {
        Error::Hinted { error: Box::new(self), hint: hint.into() }
    }

    /// The suggestion for the user (ErrorResponse `H`), if any.
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::Hinted { hint, .. } => Some(hint),
            Error::Context { error, .. } | Error::Positioned { error, .. } => error.hint(),
            Error::GeneratedAlways { update: false, .. } => {
                Some("Use OVERRIDING SYSTEM VALUE to override.")
            }
            Error::UndefinedFunction { name, .. } => Some(if name.starts_with("operator ") {
                "No operator matches the given name and argument types. You might need to add \
                 explicit type casts."
            } else {
                "No function matches the given name and argument types. You might need to add \
                 explicit type casts."
            }),
            _ => None,
        }
    }

    /// The error without its position: for an error in a statement Aspen wrote itself (COPY
    /// runs an INSERT or SELECT of its own), whose offsets mean nothing in the client's text.
    pub(crate) fn without_position(mut self) -> Error {
        if let Some(span) = self.span_mut() {
            *span = None;
        }
        self
    }

    fn span_mut(&mut self) -> Option<&mut Option<Span>> {
        with_span!(self, span => Some(span), None)
    }

    /// The error position (1-based character offset into the statement, as the PostgreSQL
    /// ErrorResponse `P` field), if the error points at a construct.
    pub fn position(&self, sql: &str) -> Option<usize> {
        if let Error::Hinted { error, .. } = self {
            return error.position(sql);
        }
        let span = with_span!(self, span => *span, None)?;
        let start = span.start.min(sql.len());
        // PostgreSQL counts characters, not bytes, and starts at 1.
        Some(sql.get(..start).map(|s| s.chars().count()).unwrap_or(start) + 1)
    }

    /// Extra detail line (ErrorResponse `D`), if any.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Error::UniqueViolation { detail, .. }
            | Error::UniqueIndexBuild { detail, .. }
            | Error::NumericFieldOverflow { detail }
            | Error::GeneratedAlways { detail, .. }
            | Error::WrongParameterCount { detail, .. }
            | Error::InvalidJson { detail }
            | Error::InvalidArray { detail, .. }
            | Error::UnsupportedUnicodeEscape { detail } => Some(detail),
            Error::ForeignKeyViolation { detail, .. } => Some(detail),
            Error::Deadlock { detail } | Error::ColumnUsedByView { detail } => Some(detail),
            Error::InvalidZone { detail, .. } => Some(detail),
            Error::DependentObjects { detail, .. } | Error::ReservedName { detail, .. } => {
                (!detail.is_empty()).then_some(detail)
            }
            Error::NotNullViolation { row, .. } => row.as_deref(),
            Error::CheckViolation { row, .. } => Some(row),
            Error::Context { error, .. }
            | Error::Hinted { error, .. }
            | Error::Positioned { error, .. } => error.detail(),
            _ => None,
        }
    }

    /// The PostgreSQL routine that reports this error (ErrorResponse `R`), where clients act on
    /// it: pgjdbc prepares a statement afresh and retries on `RevalidateCachedQuery`.
    pub fn routine(&self) -> Option<&'static str> {
        match self {
            Error::ResultTypeChanged => Some("RevalidateCachedQuery"),
            Error::Context { error, .. }
            | Error::Hinted { error, .. }
            | Error::Positioned { error, .. } => error.routine(),
            _ => None,
        }
    }

    /// Severity for the ErrorResponse; everything here is `ERROR`.
    pub fn severity(&self) -> &'static str {
        "ERROR"
    }

    /// `2BP01` for a DROP of `object` (e.g. `index t_pkey`), which `owner` (e.g. `constraint
    /// t_pkey on table t`) requires, with PostgreSQL's hint to drop that instead.
    pub fn required_by(object: &str, owner: &str) -> Error {
        Error::DependentObjects {
            message: format!("cannot drop {object} because {owner} requires it"),
            detail: String::new(),
        }
        .with_hint(format!("You can drop {owner} instead."))
    }

    /// Shorthand for an internal error (a bug).
    pub fn internal(message: impl Into<String>) -> Error {
        Error::Internal { message: message.into() }
    }

    /// Shorthand for `0A000` naming the construct.
    pub fn unsupported(feature: impl Into<String>) -> Error {
        Error::Unsupported { feature: feature.into(), span: None }
    }

    /// `0A000` with a complete message.
    pub fn unsupported_msg(message: impl Into<String>) -> Error {
        Error::UnsupportedMessage { message: message.into() }
    }

    /// Turns a unique violation found while building an index into PostgreSQL's
    /// "could not create unique index" form.
    pub fn with_create_index_message(self) -> Error {
        match self {
            Error::UniqueViolation { constraint, detail, .. } => {
                Error::UniqueIndexBuild { index: constraint, detail }
            }
            other => other,
        }
    }

    /// Shorthand for `22003` with PostgreSQL's usual message.
    pub fn out_of_range(type_name: &str) -> Error {
        Error::NumericOutOfRange { message: format!("{type_name} out of range") }
    }

    /// Shorthand for `22P02`: invalid input syntax for type {ty}: "{value}".
    pub fn invalid_input(type_name: &str, value: &str) -> Error {
        Error::InvalidTextRepresentation {
            message: format!("invalid input syntax for type {type_name}: \"{value}\""),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Syntax { message, .. } => write!(f, "{message}"),
            Error::SyntaxMisuse { message, .. } => write!(f, "{message}"),
            Error::Unsupported { feature, .. } => write!(f, "{feature} is not supported"),
            Error::UndefinedTable { name, .. } => write!(f, "relation \"{name}\" does not exist"),
            Error::MissingFromEntry { table, .. } => {
                write!(f, "missing FROM-clause entry for table \"{table}\"")
            }
            Error::UndefinedColumn { name, .. } => write!(f, "column {name} does not exist"),
            Error::AmbiguousColumn { name, .. } => {
                write!(f, "column reference \"{name}\" is ambiguous")
            }
            Error::UsingColumn { name, side, fault: UsingFault::Missing } => write!(
                f,
                "column \"{name}\" specified in USING clause does not exist in {side} table"
            ),
            Error::UsingColumn { name, side, fault: UsingFault::Ambiguous } => {
                write!(f, "common column name \"{name}\" appears more than once in {side} table")
            }
            Error::UsingColumn { name, fault: UsingFault::Repeated, .. } => {
                write!(f, "column name \"{name}\" appears more than once in USING clause")
            }
            // `name` is "function f(types)" or "operator <signature>", as PostgreSQL words each.
            Error::UndefinedFunction { name, .. } => match name.strip_prefix("operator ") {
                Some(signature) => write!(f, "operator does not exist: {signature}"),
                None => write!(f, "{name} does not exist"),
            },
            Error::AmbiguousFunction { name, .. } => match name.strip_prefix("operator ") {
                Some(signature) => write!(f, "operator is not unique: {signature}"),
                None => write!(f, "{name} is not unique"),
            },
            Error::UndefinedObject { message } => write!(f, "{message}"),
            Error::DuplicateTable { name } => write!(f, "relation \"{name}\" already exists"),
            Error::DuplicateColumn { name } => {
                write!(f, "column \"{name}\" specified more than once")
            }
            Error::InvalidTableDefinition { message } => write!(f, "{message}"),
            Error::DatatypeMismatch { message, .. } => write!(f, "{message}"),
            Error::CannotCoerce { message, .. } => write!(f, "{message}"),
            Error::Grouping { message, .. } => write!(f, "{message}"),
            Error::InvalidColumnReference { message, .. } => write!(f, "{message}"),
            Error::UndefinedParameter { message } => write!(f, "{message}"),
            Error::IndeterminateDatatype { message } => write!(f, "{message}"),
            Error::WrongObjectType { message } => write!(f, "{message}"),
            Error::DependentObjects { message, .. } => write!(f, "{message}"),
            Error::NumericOutOfRange { message } => write!(f, "{message}"),
            Error::NumericFieldOverflow { .. } => write!(f, "numeric field overflow"),
            Error::DivisionByZero => write!(f, "division by zero"),
            Error::InvalidTextRepresentation { message } => write!(f, "{message}"),
            Error::InvalidJson { .. } => write!(f, "invalid input syntax for type json"),
            Error::InvalidArray { text, .. } => write!(f, "malformed array literal: \"{text}\""),
            Error::UnsupportedUnicodeEscape { .. } => {
                write!(f, "unsupported Unicode escape sequence")
            }
            Error::InvalidBinaryRepresentation { message } => write!(f, "{message}"),
            Error::StringDataRightTruncation { message } => write!(f, "{message}"),
            Error::InvalidDatetimeFormat { message } => write!(f, "{message}"),
            Error::DatetimeFieldOverflow { message } | Error::IntervalFieldOverflow { message } => {
                write!(f, "{message}")
            }
            Error::InvalidParameterValue { message } | Error::InvalidZone { message, .. } => {
                write!(f, "{message}")
            }
            Error::CharacterNotInRepertoire { message } => write!(f, "{message}"),
            Error::InvalidRowCount { message, .. } => write!(f, "{message}"),
            Error::CardinalityViolation { message } => write!(f, "{message}"),
            Error::DataException { message, .. } => write!(f, "{message}"),
            Error::UniqueViolation { constraint, .. } => {
                write!(f, "duplicate key value violates unique constraint \"{constraint}\"")
            }
            Error::UniqueIndexBuild { index, .. } => {
                write!(f, "could not create unique index \"{index}\"")
            }
            Error::DuplicateColumnExists { name } => write!(f, "column \"{name}\" already exists"),
            Error::ColumnListedTwice { column, table } => {
                write!(f, "column \"{column}\" of relation \"{table}\" appears more than once")
            }
            Error::InvalidForeignKey { message } => write!(f, "{message}"),
            Error::DuplicateObject { message } => write!(f, "{message}"),
            Error::CantChangeRuntimeParam { name } => {
                write!(f, "parameter \"{name}\" cannot be changed")
            }
            Error::UnsupportedMessage { message } => write!(f, "{message}"),
            Error::ReservedName { message, .. } | Error::DuplicateSchema { message } => {
                write!(f, "{message}")
            }
            Error::ColumnUsedByView { .. } => {
                write!(f, "cannot alter type of a column used by a view or rule")
            }
            Error::ObjectNotInPrerequisiteState { message } | Error::ObjectInUse { message } => {
                write!(f, "{message}")
            }
            Error::UndefinedSequence { name } => write!(f, "sequence \"{name}\" does not exist"),
            Error::ResultTypeChanged => write!(f, "cached plan must not change result type"),
            Error::TooManyArguments { message } => write!(f, "{message}"),
            Error::UndefinedToDrop { kind, name } => write!(f, "{kind} \"{name}\" does not exist"),
            Error::DuplicatePreparedStatement { name } => {
                write!(f, "prepared statement \"{name}\" already exists")
            }
            Error::UndefinedPreparedStatement { name } => {
                write!(f, "prepared statement \"{name}\" does not exist")
            }
            Error::UndefinedSavepoint { name } => write!(f, "savepoint \"{name}\" does not exist"),
            Error::InvalidName { message } => write!(f, "{message}"),
            Error::WrongParameterCount { name, .. } => {
                write!(f, "wrong number of parameters for prepared statement \"{name}\"")
            }
            Error::DuplicateAlias { message } | Error::Windowing { message } => {
                write!(f, "{message}")
            }
            Error::GeneratedAlways { column, update: false, .. } => {
                write!(f, "cannot insert a non-DEFAULT value into column \"{column}\"")
            }
            Error::GeneratedAlways { column, update: true, .. } => {
                write!(f, "column \"{column}\" can only be updated to DEFAULT")
            }
            Error::ColumnContainsNulls { column, table } => {
                write!(f, "column \"{column}\" of relation \"{table}\" contains null values")
            }
            Error::CheckViolation { constraint, table, .. } => write!(
                f,
                "new row for relation \"{table}\" violates check constraint \"{constraint}\""
            ),
            Error::CheckViolatedBySomeRow { constraint, table } => write!(
                f,
                "check constraint \"{constraint}\" of relation \"{table}\" is violated by some row"
            ),
            Error::NotNullViolation { column, table, .. } => write!(
                f,
                "null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"
            ),
            Error::ForeignKeyViolation { constraint, table, referenced_from: None, .. } => write!(
                f,
                "insert or update on table \"{table}\" violates foreign key constraint \"{constraint}\""
            ),
            Error::ForeignKeyViolation { constraint, table, referenced_from: Some(child), .. } => {
                write!(
                    f,
                    "update or delete on table \"{table}\" violates foreign key constraint \"{constraint}\" on table \"{child}\""
                )
            }
            Error::SerializationFailure { message } => write!(f, "{message}"),
            Error::Deadlock { .. } => write!(f, "deadlock detected"),
            Error::InFailedTransaction => write!(
                f,
                "current transaction is aborted, commands ignored until end of transaction block"
            ),
            Error::ActiveTransaction { message } => write!(f, "{message}"),
            Error::NoActiveTransaction { message } => write!(f, "{message}"),
            Error::UnrecognizedParameter { name } => {
                write!(f, "unrecognized configuration parameter \"{name}\"")
            }
            Error::StatementTooComplex { message } => write!(f, "{message}"),
            Error::ProgramLimitExceeded { message } | Error::TooManyColumns { message } => {
                write!(f, "{message}")
            }
            Error::ProtocolViolation { message } => write!(f, "{message}"),
            Error::QueryCanceled => write!(f, "canceling statement due to user request"),
            Error::StatementTimeout => write!(f, "canceling statement due to statement timeout"),
            Error::IoError { message } => write!(f, "{message}"),
            Error::DataCorrupted { message } => write!(f, "{message}"),
            Error::Internal { message } => write!(f, "internal error: {message}"),
            Error::Context { error, .. }
            | Error::Hinted { error, .. }
            | Error::Positioned { error, .. } => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_stays_small() {
        assert!(std::mem::size_of::<Error>() <= 80, "{}", std::mem::size_of::<Error>());
    }

    #[test]
    fn stale_reads_turn_errors_into_serialization_failures() {
        let stale = Error::DivisionByZero.or_serialization_failure(|| false);
        assert_eq!(stale.sqlstate(), "40001");
        let fresh = Error::DivisionByZero.or_serialization_failure(|| true);
        assert_eq!(fresh.sqlstate(), "22012");
        let conflict = Error::SerializationFailure { message: "x".into() };
        assert_eq!(conflict.or_serialization_failure(|| panic!("not asked")).sqlstate(), "40001");
    }

    #[test]
    fn position_counts_characters_from_one() {
        let e = Error::UndefinedTable { name: "t".into(), span: Some(Span { start: 16 }) };
        assert_eq!(e.position("SELECT 'é' FROM t"), Some(16));
        assert_eq!(e.sqlstate(), "42P01");
    }
}
