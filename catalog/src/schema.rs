//! The schema model: tables, columns, indexes, constraints and SQL data types.

use serde::{Deserialize, Serialize};

use crate::ids::{IndexId, TableId};

/// A SQL data type as stored in the catalog. Type modifiers (length, precision) are part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DataType {
    /// `boolean` (OID 16)
    Bool,
    /// `smallint` / int2 (OID 21)
    Int16,
    /// `integer` / int4 (OID 23)
    Int32,
    /// `bigint` / int8 (OID 20)
    Int64,
    /// `real` / float4 (OID 700)
    Float32,
    /// `double precision` / float8 (OID 701)
    Float64,
    /// `numeric(p,s)` (OID 1700), `1 <= p <= 1000`, `0 <= s <= p`; `None` = unconstrained
    /// `numeric`.
    Numeric(Option<(u16, u16)>),
    /// `varchar(n)` (OID 1043); `None` = no length limit.
    Varchar(Option<u32>),
    /// `char(n)` / bpchar (OID 1042), blank-padded to n.
    Char(u32),
    /// `text` (OID 25)
    Text,
    /// `date` (OID 1082)
    Date,
    /// `timestamp` without time zone (OID 1114), microsecond precision.
    Timestamp,
    /// `bytea` (OID 17)
    Bytea,
    /// `timestamp with time zone` (OID 1184): a UTC instant, microsecond precision.
    TimestampTz,
    /// `interval` (OID 1186): months, days and microseconds.
    Interval,
    /// `time` without time zone (OID 1083): microseconds since midnight, `24:00:00` included.
    Time,
    /// `uuid` (OID 2950): 16 bytes, ordered bytewise.
    Uuid,
    /// `jsonb` (OID 3802): a JSON document in PostgreSQL's normalized form.
    Jsonb,
    /// `json` (OID 114): a JSON document kept as written.
    Json,
    /// `void` (OID 2278): what a function returns that returns nothing (`pg_sleep`). Its value
    /// prints as an empty string. Never a column's type.
    Void,
    /// `regtype` (OID 2206): a type's OID that reads and prints as the type's name
    /// (`'integer'::regtype`, `to_regtype(name)`, `oid::regtype::text`). Its values are
    /// `bigint`s; never a column's type.
    RegType,
    /// `name` (OID 19): an identifier of at most 63 bytes, what the system catalogs' name
    /// columns are (`pg_class.relname`, `pg_attribute.attname`). Its values are text and it
    /// behaves as text; clients see its OID (node-postgres leaves a `name[]` as its text,
    /// where it parses a `text[]`). Never a column's type.
    Name,
    /// A one-dimensional array of a scalar type without a type modifier (`integer[]`,
    /// `text[]`, OIDs as `pg_type.typarray`).
    Array(ArrayElem),
}

/// The element type of an array type: a scalar type without its type modifier (PostgreSQL
/// keeps `varchar(10)[]`'s length; Aspen refuses such arrays rather than ignore it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArrayElem {
    /// `boolean[]`
    Bool,
    /// `smallint[]`
    Int16,
    /// `integer[]`
    Int32,
    /// `bigint[]`
    Int64,
    /// `real[]`
    Float32,
    /// `double precision[]`
    Float64,
    /// `numeric[]`
    Numeric,
    /// `character varying[]`
    Varchar,
    /// `text[]`
    Text,
    /// `date[]`
    Date,
    /// `timestamp[]`
    Timestamp,
    /// `bytea[]`
    Bytea,
    /// `timestamptz[]`
    TimestampTz,
    /// `interval[]`
    Interval,
    /// `time[]`
    Time,
    /// `uuid[]`
    Uuid,
    /// `jsonb[]`
    Jsonb,
    /// `json[]`
    Json,
    /// `name[]`
    Name,
}

impl ArrayElem {
    /// The element's type.
    pub fn data_type(self) -> DataType {
        match self {
            ArrayElem::Bool => DataType::Bool,
            ArrayElem::Int16 => DataType::Int16,
            ArrayElem::Int32 => DataType::Int32,
            ArrayElem::Int64 => DataType::Int64,
            ArrayElem::Float32 => DataType::Float32,
            ArrayElem::Float64 => DataType::Float64,
            ArrayElem::Numeric => DataType::Numeric(None),
            ArrayElem::Varchar => DataType::Varchar(None),
            ArrayElem::Text => DataType::Text,
            ArrayElem::Date => DataType::Date,
            ArrayElem::Timestamp => DataType::Timestamp,
            ArrayElem::Bytea => DataType::Bytea,
            ArrayElem::TimestampTz => DataType::TimestampTz,
            ArrayElem::Interval => DataType::Interval,
            ArrayElem::Time => DataType::Time,
            ArrayElem::Uuid => DataType::Uuid,
            ArrayElem::Jsonb => DataType::Jsonb,
            ArrayElem::Json => DataType::Json,
            ArrayElem::Name => DataType::Name,
        }
    }

    /// The element kind of `ty`; `None` for a type Aspen has no array of (one with a type
    /// modifier, `char(n)`, `void`, an array).
    pub fn of(ty: &DataType) -> Option<ArrayElem> {
        Some(match ty {
            DataType::Bool => ArrayElem::Bool,
            DataType::Int16 => ArrayElem::Int16,
            DataType::Int32 => ArrayElem::Int32,
            DataType::Int64 => ArrayElem::Int64,
            DataType::Float32 => ArrayElem::Float32,
            DataType::Float64 => ArrayElem::Float64,
            DataType::Numeric(None) => ArrayElem::Numeric,
            DataType::Varchar(None) => ArrayElem::Varchar,
            DataType::Text => ArrayElem::Text,
            DataType::Date => ArrayElem::Date,
            DataType::Timestamp => ArrayElem::Timestamp,
            DataType::Bytea => ArrayElem::Bytea,
            DataType::TimestampTz => ArrayElem::TimestampTz,
            DataType::Interval => ArrayElem::Interval,
            DataType::Time => ArrayElem::Time,
            DataType::Uuid => ArrayElem::Uuid,
            DataType::Jsonb => ArrayElem::Jsonb,
            DataType::Json => ArrayElem::Json,
            DataType::Name => ArrayElem::Name,
            _ => return None,
        })
    }

    /// The OID of the array type (`pg_type.typarray` of the element).
    pub fn array_oid(self) -> u32 {
        match self {
            ArrayElem::Bool => 1000,
            ArrayElem::Int16 => 1005,
            ArrayElem::Int32 => 1007,
            ArrayElem::Int64 => 1016,
            ArrayElem::Float32 => 1021,
            ArrayElem::Float64 => 1022,
            ArrayElem::Numeric => 1231,
            ArrayElem::Varchar => 1015,
            ArrayElem::Text => 1009,
            ArrayElem::Date => 1182,
            ArrayElem::Timestamp => 1115,
            ArrayElem::Bytea => 1001,
            ArrayElem::TimestampTz => 1185,
            ArrayElem::Interval => 1187,
            ArrayElem::Time => 1183,
            ArrayElem::Uuid => 2951,
            ArrayElem::Jsonb => 3807,
            ArrayElem::Json => 199,
            ArrayElem::Name => 1003,
        }
    }

    /// Every element kind, for lookups by OID.
    pub const ALL: [ArrayElem; 19] = [
        ArrayElem::Bool,
        ArrayElem::Int16,
        ArrayElem::Int32,
        ArrayElem::Int64,
        ArrayElem::Float32,
        ArrayElem::Float64,
        ArrayElem::Numeric,
        ArrayElem::Varchar,
        ArrayElem::Text,
        ArrayElem::Date,
        ArrayElem::Timestamp,
        ArrayElem::Bytea,
        ArrayElem::TimestampTz,
        ArrayElem::Interval,
        ArrayElem::Time,
        ArrayElem::Uuid,
        ArrayElem::Jsonb,
        ArrayElem::Json,
        ArrayElem::Name,
    ];
}

impl DataType {
    /// PostgreSQL type OID.
    pub fn oid(&self) -> u32 {
        match self {
            DataType::Bool => 16,
            DataType::Int16 => 21,
            DataType::Int32 => 23,
            DataType::Int64 => 20,
            DataType::Float32 => 700,
            DataType::Float64 => 701,
            DataType::Numeric(_) => 1700,
            DataType::Varchar(_) => 1043,
            DataType::Char(_) => 1042,
            DataType::Text => 25,
            DataType::Date => 1082,
            DataType::Timestamp => 1114,
            DataType::Bytea => 17,
            DataType::TimestampTz => 1184,
            DataType::Interval => 1186,
            DataType::Time => 1083,
            DataType::Uuid => 2950,
            DataType::Jsonb => 3802,
            DataType::Json => 114,
            DataType::Void => 2278,
            DataType::RegType => 2206,
            DataType::Name => 19,
            DataType::Array(e) => e.array_oid(),
        }
    }

    /// The element type of an array type; `None` for a scalar.
    pub fn element(&self) -> Option<DataType> {
        match self {
            DataType::Array(e) => Some(e.data_type()),
            _ => None,
        }
    }

    /// The array type of elements of this type, if Aspen has one.
    pub fn array_of(&self) -> Option<DataType> {
        ArrayElem::of(self).map(DataType::Array)
    }

    /// The unconstrained type of a type OID a client declares for a parameter, if Aspen has
    /// it. `bpchar` has no unconstrained form, so it maps to `text` (the column's own type then
    /// applies length and padding).
    pub fn from_oid(oid: u32) -> Option<DataType> {
        Some(match oid {
            16 => DataType::Bool,
            21 => DataType::Int16,
            23 => DataType::Int32,
            20 => DataType::Int64,
            700 => DataType::Float32,
            701 => DataType::Float64,
            1700 => DataType::Numeric(None),
            1043 => DataType::Varchar(None),
            1042 | 25 => DataType::Text,
            1082 => DataType::Date,
            1114 => DataType::Timestamp,
            1184 => DataType::TimestampTz,
            1186 => DataType::Interval,
            1083 => DataType::Time,
            2950 => DataType::Uuid,
            3802 => DataType::Jsonb,
            114 => DataType::Json,
            17 => DataType::Bytea,
            2206 => DataType::RegType,
            19 => DataType::Name,
            // `_bpchar` (1014): its elements read as text.
            1014 => DataType::Array(ArrayElem::Text),
            oid => DataType::Array(ArrayElem::ALL.into_iter().find(|e| e.array_oid() == oid)?),
        })
    }

    /// PostgreSQL `atttypmod`: -1 when unconstrained; `n + 4` for varchar/char;
    /// `((p << 16) | s) + 4` for numeric.
    pub fn typmod(&self) -> i32 {
        match self {
            DataType::Numeric(Some((p, s))) => (((*p as i32) << 16) | *s as i32) + 4,
            DataType::Varchar(Some(n)) | DataType::Char(n) => *n as i32 + 4,
            _ => -1,
        }
    }

    /// `typlen` as PostgreSQL reports it (-1 for variable length).
    pub fn type_size(&self) -> i16 {
        match self {
            DataType::Bool => 1,
            DataType::Int16 => 2,
            DataType::Int32 | DataType::Float32 | DataType::Date | DataType::RegType => 4,
            DataType::Int64
            | DataType::Float64
            | DataType::Timestamp
            | DataType::TimestampTz
            | DataType::Time => 8,
            DataType::Interval | DataType::Uuid => 16,
            DataType::Name => 64,
            _ => -1,
        }
    }

    /// The name PostgreSQL's errors give a type (`format_type_be`): without its type modifier,
    /// e.g. `character varying` for `character varying(10)`.
    pub fn base_name(&self) -> String {
        match self {
            DataType::Numeric(_) => "numeric".into(),
            DataType::Varchar(_) => "character varying".into(),
            DataType::Char(_) => "character".into(),
            DataType::Array(e) => format!("{}[]", e.data_type().base_name()),
            other => other.sql_name(),
        }
    }

    /// The name PostgreSQL's `format_type` gives, e.g. `character varying(10)`.
    pub fn sql_name(&self) -> String {
        match self {
            DataType::Bool => "boolean".into(),
            DataType::Int16 => "smallint".into(),
            DataType::Int32 => "integer".into(),
            DataType::Int64 => "bigint".into(),
            DataType::Float32 => "real".into(),
            DataType::Float64 => "double precision".into(),
            DataType::Numeric(None) => "numeric".into(),
            DataType::Numeric(Some((p, s))) => format!("numeric({p},{s})"),
            DataType::Varchar(None) => "character varying".into(),
            DataType::Varchar(Some(n)) => format!("character varying({n})"),
            DataType::Char(n) => format!("character({n})"),
            DataType::Text => "text".into(),
            DataType::Date => "date".into(),
            DataType::Timestamp => "timestamp without time zone".into(),
            DataType::Bytea => "bytea".into(),
            DataType::TimestampTz => "timestamp with time zone".into(),
            DataType::Interval => "interval".into(),
            DataType::Time => "time without time zone".into(),
            DataType::Uuid => "uuid".into(),
            DataType::Jsonb => "jsonb".into(),
            DataType::Json => "json".into(),
            DataType::Void => "void".into(),
            DataType::RegType => "regtype".into(),
            DataType::Name => "name".into(),
            DataType::Array(e) => format!("{}[]", e.data_type().sql_name()),
        }
    }
}

/// A column default, kept as SQL text and re-parsed by the binder (so the catalog stays free of
/// expression types), plus the common cases the binder can recognise quickly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDefault {
    /// The default expression as SQL text, e.g. `0`, `'abc'`, `CURRENT_TIMESTAMP`.
    pub sql: String,
}

/// A column of a table. Columns are addressed by position (`Column::position`, 0-based).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Name, already case-folded.
    pub name: String,
    /// Position in the row, 0-based; `attnum` is `position + 1`.
    pub position: u16,
    /// The type, with its modifiers.
    pub data_type: DataType,
    /// `NOT NULL` (primary-key columns are always not null).
    pub not_null: bool,
    /// `DEFAULT …`, if any.
    pub default: Option<ColumnDefault>,
    /// The sequence of a `serial` or identity column, which belongs to the column (it goes
    /// with it when the table is dropped). Its counter lives outside the schema
    /// ([`crate::Catalog::nextval`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<Sequence>,
    /// Dropped by `ALTER TABLE … DROP COLUMN` (PostgreSQL's `attisdropped`): the column keeps
    /// its position in the rows already written (so that they decode, and so that the drop is
    /// one catalog write, atomic across a crash), but SQL no longer sees it. Its name becomes
    /// `........pg.dropped.N........` and it has no default, no constraint and no sequence.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dropped: bool,
}

/// How a column's sequence supplies its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Generated {
    /// `serial` / `bigserial` / `smallserial`: the column's default is
    /// `nextval('<sequence>'::regclass)`.
    Serial,
    /// `GENERATED BY DEFAULT AS IDENTITY`: the sequence fills the column when no value is
    /// given.
    ByDefault,
    /// `GENERATED ALWAYS AS IDENTITY`: only the sequence gives values.
    Always,
    /// A sequence of its own (`CREATE SEQUENCE`). It is kept as a table that holds no rows and
    /// whose one column, `last_value`, owns the sequence ([`Table::is_sequence`]); the table's
    /// name is the sequence's.
    Standalone,
}

/// A sequence owned by a column (PostgreSQL's `serial` and identity columns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequence {
    /// Its relation name, e.g. `t_id_seq` (tables, indexes and sequences share one namespace).
    pub name: String,
    /// How it supplies the column's values.
    pub generated: Generated,
    /// The first value.
    pub start: i64,
    /// The step between values (never zero).
    pub increment: i64,
    /// The smallest value.
    pub min: i64,
    /// The largest value.
    pub max: i64,
}

impl Sequence {
    /// A sequence counting 1, 2, 3, … up to the largest value of `data_type` (an integer
    /// type), as `serial` and identity columns have by default.
    pub fn counting(name: String, generated: Generated, data_type: DataType) -> Sequence {
        let max = match data_type {
            DataType::Int16 => i16::MAX as i64,
            DataType::Int32 => i32::MAX as i64,
            _ => i64::MAX,
        };
        Sequence { name, generated, start: 1, increment: 1, min: 1, max }
    }
}

/// An index on a table. The primary key is an index with `primary = true`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Index {
    /// Identity.
    pub id: IndexId,
    /// Name, e.g. `t_pkey`, `t_a_key`, or the user's.
    pub name: String,
    /// Key columns by position, in key order.
    pub columns: Vec<u16>,
    /// Enforces uniqueness (NULLs never conflict, as in PostgreSQL).
    pub unique: bool,
    /// Is this the primary key?
    pub primary: bool,
    /// Declared as a constraint (PRIMARY KEY, or UNIQUE in CREATE / ALTER TABLE) rather than by
    /// CREATE INDEX: psql's `\d` says `UNIQUE CONSTRAINT` instead of `UNIQUE`. Catalogs written
    /// before this was kept read as `false` except for primary keys.
    #[serde(default)]
    pub constraint: bool,
    /// A partial index's `WHERE` condition, as SQL text over the table's columns: only rows
    /// that meet it are in the index's unique key (the SQL layer binds and evaluates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
}

/// `ON DELETE` / `ON UPDATE` action of a foreign key: what happens to the rows that reference
/// a key when it is deleted or changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FkAction {
    /// `NO ACTION` (the default): an error if rows still reference the key when the statement
    /// ends, unless the statement put the key back.
    #[default]
    NoAction,
    /// `RESTRICT`: an error if rows still reference the key when the statement ends, even if
    /// the statement put the key back.
    Restrict,
    /// `CASCADE`: the referencing rows are deleted (ON DELETE) or take the new key (ON UPDATE).
    Cascade,
    /// `SET NULL`: the referencing columns become NULL.
    SetNull,
    /// `SET DEFAULT`: the referencing columns take their defaults, which must then reference
    /// a row.
    SetDefault,
}

impl FkAction {
    /// The action as SQL writes it (`pg_get_constraintdef`).
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A foreign key constraint, stored in the catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForeignKey {
    /// Constraint name, e.g. `t_a_fkey`.
    pub name: String,
    /// Referencing columns (positions in this table).
    pub columns: Vec<u16>,
    /// Referenced table.
    pub ref_table: TableId,
    /// Referenced columns (positions in the referenced table).
    pub ref_columns: Vec<u16>,
    /// `ON DELETE` action.
    pub on_delete: FkAction,
    /// `ON UPDATE` action (catalogs written before it was kept read as NO ACTION, the only
    /// one accepted then).
    #[serde(default)]
    pub on_update: FkAction,
    /// `DEFERRABLE` / `INITIALLY DEFERRED` (catalogs written before it was kept read as NOT
    /// DEFERRABLE, the only timing accepted then).
    #[serde(default, skip_serializing_if = "Deferral::is_not_deferrable")]
    pub deferral: Deferral,
}

/// When a foreign key's NO ACTION checks run — that each written row's reference exists, and
/// that a removed key is no longer referenced: when the statement ends, or when the
/// transaction commits (PostgreSQL's deferred constraint triggers). RESTRICT and the
/// referential actions (CASCADE, SET NULL, SET DEFAULT) always act when the statement ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Deferral {
    /// `NOT DEFERRABLE` (the default): always when the statement ends.
    #[default]
    NotDeferrable,
    /// `DEFERRABLE INITIALLY IMMEDIATE`: when the statement ends unless `SET CONSTRAINTS …
    /// DEFERRED` says otherwise for the transaction.
    Immediate,
    /// `DEFERRABLE INITIALLY DEFERRED`: at commit unless `SET CONSTRAINTS … IMMEDIATE`.
    Deferred,
}

impl Deferral {
    /// Whether this is `NOT DEFERRABLE` (the default, not written to the catalog).
    pub fn is_not_deferrable(&self) -> bool {
        *self == Deferral::NotDeferrable
    }

    /// The clause `pg_get_constraintdef` ends with: empty, ` DEFERRABLE` or ` DEFERRABLE
    /// INITIALLY DEFERRED`.
    pub fn sql(self) -> &'static str {
        match self {
            Deferral::NotDeferrable => "",
            Deferral::Immediate => " DEFERRABLE",
            Deferral::Deferred => " DEFERRABLE INITIALLY DEFERRED",
        }
    }
}

/// A `CHECK` constraint, stored in the catalog: a boolean expression over the row that no row
/// written may make false (NULL passes, as in PostgreSQL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Constraint name, e.g. `t_a_check`.
    pub name: String,
    /// The expression as SQL text over the table's unqualified column names, bound afresh
    /// wherever rows are written.
    pub sql: String,
    /// The columns it reads (positions): a column named by a check cannot be renamed, as the
    /// text names it.
    pub columns: Vec<u16>,
}

/// A table. Every table has a primary index; a table declared without a primary key gets a
/// hidden one over an internal row id (`Table::hidden_pk`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Identity.
    pub id: TableId,
    /// Name, already case-folded.
    pub name: String,
    /// Columns in position order.
    pub columns: Vec<Column>,
    /// All indexes; the primary one (if declared) has `primary = true`.
    pub indexes: Vec<Index>,
    /// Foreign keys declared on this table.
    pub foreign_keys: Vec<ForeignKey>,
    /// True when no PRIMARY KEY was declared: rows are keyed by a hidden row id.
    pub hidden_pk: bool,
    /// A view (`CREATE VIEW`): a name for a query, with no rows of its own. Its columns are
    /// the query's when it was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<ViewDef>,
    /// `CHECK` constraints, in the order they were added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// `COMMENT ON TABLE` / `VIEW` (PostgreSQL's `pg_description` of the relation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `COMMENT ON COLUMN`, by column position.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub column_comments: std::collections::BTreeMap<u16, String>,
    /// A standalone sequence's owning column (`ALTER SEQUENCE … OWNED BY table.column`): the
    /// sequence is dropped with that table or column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<(TableId, u16)>,
}

/// What a view is: its query, and the tables that query reads (which cannot be dropped while
/// the view exists, unless the drop cascades to it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewDef {
    /// The query's text, bound afresh wherever the view is read.
    pub query: String,
    /// The tables (and views) the query reads.
    pub depends: Vec<TableId>,
    /// The query's own output column names when the view was created: where the view is read,
    /// the query bound afresh must still begin with these columns (a table it reads with `*`
    /// may have gained columns since; those are left out, as PostgreSQL's view keeps the
    /// columns `*` stood for when it was created).
    pub query_columns: Vec<String>,
}

impl Table {
    /// Whether this is a view ([`Table::view`]).
    pub fn is_view(&self) -> bool {
        self.view.is_some()
    }

    /// Finds a column by (folded) name; a dropped column is not found.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.visible_columns().find(|c| c.name == name)
    }

    /// The columns SQL sees, in order: every column but the dropped ones. (`columns` is the
    /// physical row: positions index it.)
    pub fn visible_columns(&self) -> impl Iterator<Item = &Column> + '_ {
        self.columns.iter().filter(|c| !c.dropped)
    }

    /// Whether this "table" is a sequence of its own ([`Generated::Standalone`]): not a table
    /// for SQL, only a name for `nextval` and friends.
    pub fn is_sequence(&self) -> bool {
        matches!(
            self.columns.as_slice(),
            [c] if c.sequence.as_ref().is_some_and(|s| s.generated == Generated::Standalone)
        )
    }

    /// The primary index, if one was declared.
    pub fn primary_index(&self) -> Option<&Index> {
        self.indexes.iter().find(|i| i.primary)
    }
}
