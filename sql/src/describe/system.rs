//! `pg_catalog` and `information_schema` relations that applications and tools query directly
//! (`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`, `SELECT 1
//! FROM pg_tables WHERE tablename = 't'`, an ORM reading `information_schema.columns`), as
//! constant rows built from the catalog snapshot a statement is bound against. Unlike the
//! recognised psql and pgjdbc queries ([`super`], [`crate::metadata`]) these are ordinary
//! relations: a query may filter, join, group and order them as it likes.
//!
//! `pg_attrdef` lists column defaults with the expression's text in `adbin`, which
//! `pg_get_expr` returns as it is (PostgreSQL keeps a node tree there and prints the same text).
//! `pg_settings` lists the parameters SHOW knows, its `setting` read when the statement runs.
//! They list what Aspen has: the `public` schema's tables, views, indexes and sequences, the
//! types of [`DataType`], one database and one role (the current ones), and the three schemas.
//! They do not list themselves (PostgreSQL's list its own catalogs too), nor system columns
//! (`attnum` < 0). PostgreSQL's column names and order are kept, with Aspen's types: `name` is
//! `name`, `"char"` is `text`, `oid` and `xid` are `bigint`, array and `pg_node_tree` columns are
//! NULL `text`, `information_schema`'s `cardinal_number` is `integer`. OIDs are those of
//! [`super::Relation::oid`]. Views say they are not insertable or updatable (Aspen's are
//! read-only). Any other relation of either schema answers `0A000`, as before.

use catalog::{ArrayElem, DataType, Deferral, Generated, Index, Snapshot, Table};

use super::{deparse_default, index_def, relations, storage, ConstraintKind, Relation, SCHEMA};
use crate::metadata::{rows_query, text};
use crate::plan::{Expr, Func, Query};
use crate::types::Value;

const T: DataType = DataType::Text;
/// PostgreSQL's `name` columns.
const N: DataType = DataType::Name;
const B: DataType = DataType::Bool;
const I2: DataType = DataType::Int16;
const I4: DataType = DataType::Int32;
const OID: DataType = DataType::Int64;

/// `pg_catalog`'s namespace OID, and `information_schema`'s (PostgreSQL 15's, on a fresh
/// cluster).
const PG_CATALOG: i64 = 11;
const INFORMATION_SCHEMA: i64 = 13207;
const PUBLIC: i64 = 2200;
/// The database's OID (`pg_database.oid`; PostgreSQL's `postgres` database has 5).
pub(crate) const DATABASE_OID: i64 = 5;

/// The bootstrap superuser's OID, which owns everything here.
const OWNER: i64 = 10;

/// The relation `schema.name` (`schema` `None`: a bare name, which PostgreSQL looks up in
/// `pg_catalog` first), or `None` if it is not one of these.
pub(crate) fn relation(snapshot: &Snapshot, schema: Option<&str>, name: &str) -> Option<Query> {
    let (columns, rows): (&[(&str, DataType)], Vec<Vec<Expr>>) = match (schema, name) {
        (Some("information_schema"), "tables") => (INFO_TABLES, info_tables(snapshot)),
        (Some("information_schema"), "columns") => (INFO_COLUMNS, info_columns(snapshot)),
        (Some("information_schema"), "schemata") => (INFO_SCHEMATA, info_schemata()),
        (Some("information_schema"), "views") => (INFO_VIEWS, info_views(snapshot)),
        (Some("information_schema"), "table_constraints") => {
            (INFO_TABLE_CONSTRAINTS, info_table_constraints(snapshot))
        }
        (Some("information_schema"), "key_column_usage") => {
            (INFO_KEY_COLUMN_USAGE, info_key_column_usage(snapshot))
        }
        (Some("information_schema"), "constraint_column_usage") => {
            (INFO_CONSTRAINT_COLUMN_USAGE, info_constraint_column_usage(snapshot))
        }
        (Some("information_schema"), "referential_constraints") => {
            (INFO_REFERENTIAL_CONSTRAINTS, info_referential_constraints(snapshot))
        }
        (None | Some("pg_catalog"), name) => match name {
            "pg_tables" => (PG_TABLES, pg_tables(snapshot)),
            "pg_indexes" => (PG_INDEXES, pg_indexes(snapshot)),
            "pg_views" => (PG_VIEWS, pg_views(snapshot)),
            "pg_namespace" => (PG_NAMESPACE, pg_namespace()),
            "pg_class" => (PG_CLASS, pg_class(snapshot)),
            "pg_attribute" => (PG_ATTRIBUTE, pg_attribute(snapshot)),
            "pg_attrdef" => (PG_ATTRDEF, pg_attrdef(snapshot)),
            "pg_type" => (PG_TYPE, pg_type()),
            "pg_database" => (PG_DATABASE, pg_database()),
            "pg_roles" => (PG_ROLES, pg_roles(snapshot)),
            "pg_user" => (PG_USER, pg_user(snapshot)),
            "pg_settings" => (PG_SETTINGS, pg_settings()),
            // Aspen has no range types; clients look them up on connect (Sequelize).
            "pg_range" => (PG_RANGE, Vec::new()),
            "pg_sequence" => (PG_SEQUENCE, pg_sequence(snapshot)),
            "pg_am" => (PG_AM, pg_am()),
            "pg_inherits" => (PG_INHERITS, Vec::new()),
            "pg_index" => (PG_INDEX, pg_index(snapshot)),
            "pg_constraint" => (PG_CONSTRAINT, pg_constraint(snapshot)),
            // Aspen has no enum types.
            "pg_enum" => (PG_ENUM, Vec::new()),
            "pg_description" => (PG_DESCRIPTION, pg_description(snapshot)),
            "pg_statio_all_tables" => (PG_STATIO_ALL_TABLES, pg_statio_all_tables(snapshot)),
            _ => return None,
        },
        _ => return None,
    };
    Some(rows_query(columns.to_vec(), rows))
}

fn lit(v: Value) -> Expr {
    Expr::Literal(v)
}

fn t(s: &str) -> Expr {
    lit(text(s))
}

fn null() -> Expr {
    lit(Value::Null)
}

fn oid(v: impl Into<i64>) -> Expr {
    lit(Value::Int64(v.into()))
}

fn b(v: bool) -> Expr {
    lit(Value::Bool(v))
}

fn i2(v: i16) -> Expr {
    lit(Value::Int16(v))
}

fn i4(v: i32) -> Expr {
    lit(Value::Int32(v))
}

fn yes_no(v: bool) -> Expr {
    t(if v { "YES" } else { "NO" })
}

fn database() -> Expr {
    Expr::Func(Func::CurrentDatabase, vec![])
}

/// The owner of every object: the bootstrap superuser (see `describe::owner`).
fn owner() -> Expr {
    t(catalog::roles::BOOTSTRAP_ROLE)
}

/// The tables and views SQL sees (not standalone sequences), in name order.
fn tables(snapshot: &Snapshot) -> Vec<&Table> {
    let mut out: Vec<&Table> =
        snapshot.tables().map(|t| t.as_ref()).filter(|t| !t.is_sequence()).collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Whether a foreign key starts or ends at `table` (PostgreSQL implements them as triggers on
/// both tables).
fn has_triggers(snapshot: &Snapshot, table: &Table) -> bool {
    !table.foreign_keys.is_empty()
        || snapshot.tables().any(|o| o.foreign_keys.iter().any(|fk| fk.ref_table == table.id))
}

/// Whether column `position` of `table` is NOT NULL as PostgreSQL sees it.
fn not_null(table: &Table, column: &catalog::Column) -> bool {
    column.not_null || table.primary_index().is_some_and(|pk| pk.columns.contains(&column.position))
}

/// `udt_name` / `typname` of a type.
pub(crate) fn type_name(data_type: DataType) -> &'static str {
    match data_type {
        DataType::Bool => "bool",
        DataType::Int16 => "int2",
        DataType::Int32 => "int4",
        DataType::Int64 => "int8",
        DataType::Float32 => "float4",
        DataType::Float64 => "float8",
        DataType::Numeric(_) => "numeric",
        DataType::Varchar(_) => "varchar",
        DataType::Char(_) => "bpchar",
        DataType::Text => "text",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp",
        DataType::Bytea => "bytea",
        DataType::TimestampTz => "timestamptz",
        DataType::Interval => "interval",
        DataType::Uuid => "uuid",
        DataType::Jsonb => "jsonb",
        DataType::Json => "json",
        DataType::Time => "time",
        DataType::Void => "void",
        DataType::RegType => "regtype",
        DataType::Name => "name",
        DataType::Array(e) => match e {
            ArrayElem::Bool => "_bool",
            ArrayElem::Int16 => "_int2",
            ArrayElem::Int32 => "_int4",
            ArrayElem::Int64 => "_int8",
            ArrayElem::Float32 => "_float4",
            ArrayElem::Float64 => "_float8",
            ArrayElem::Numeric => "_numeric",
            ArrayElem::Varchar => "_varchar",
            ArrayElem::Text => "_text",
            ArrayElem::Date => "_date",
            ArrayElem::Timestamp => "_timestamp",
            ArrayElem::Bytea => "_bytea",
            ArrayElem::TimestampTz => "_timestamptz",
            ArrayElem::Interval => "_interval",
            ArrayElem::Time => "_time",
            ArrayElem::Uuid => "_uuid",
            ArrayElem::Jsonb => "_jsonb",
            ArrayElem::Json => "_json",
            ArrayElem::Name => "_name",
        },
    }
}

const INFO_TABLES: &[(&str, DataType)] = &[
    ("table_catalog", T),
    ("table_schema", T),
    ("table_name", T),
    ("table_type", T),
    ("self_referencing_column_name", T),
    ("reference_generation", T),
    ("user_defined_type_catalog", T),
    ("user_defined_type_schema", T),
    ("user_defined_type_name", T),
    ("is_insertable_into", T),
    ("is_typed", T),
    ("commit_action", T),
];

fn info_tables(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    tables(snapshot)
        .into_iter()
        .map(|table| {
            let view = table.is_view();
            vec![
                database(),
                t(SCHEMA),
                t(&table.name),
                t(if view { "VIEW" } else { "BASE TABLE" }),
                null(),
                null(),
                null(),
                null(),
                null(),
                yes_no(!view),
                t("NO"),
                null(),
            ]
        })
        .collect()
}

const INFO_COLUMNS: &[(&str, DataType)] = &[
    ("table_catalog", T),
    ("table_schema", T),
    ("table_name", T),
    ("column_name", T),
    ("ordinal_position", I4),
    ("column_default", T),
    ("is_nullable", T),
    ("data_type", T),
    ("character_maximum_length", I4),
    ("character_octet_length", I4),
    ("numeric_precision", I4),
    ("numeric_precision_radix", I4),
    ("numeric_scale", I4),
    ("datetime_precision", I4),
    ("interval_type", T),
    ("interval_precision", I4),
    ("character_set_catalog", T),
    ("character_set_schema", T),
    ("character_set_name", T),
    ("collation_catalog", T),
    ("collation_schema", T),
    ("collation_name", T),
    ("domain_catalog", T),
    ("domain_schema", T),
    ("domain_name", T),
    ("udt_catalog", T),
    ("udt_schema", T),
    ("udt_name", T),
    ("scope_catalog", T),
    ("scope_schema", T),
    ("scope_name", T),
    ("maximum_cardinality", I4),
    ("dtd_identifier", T),
    ("is_self_referencing", T),
    ("is_identity", T),
    ("identity_generation", T),
    ("identity_start", T),
    ("identity_increment", T),
    ("identity_maximum", T),
    ("identity_minimum", T),
    ("identity_cycle", T),
    ("is_generated", T),
    ("generation_expression", T),
    ("is_updatable", T),
];

/// `information_schema`'s numbers for a type (each `None` where PostgreSQL has NULL).
#[derive(Default)]
struct TypeNumbers {
    /// `character_maximum_length`, `character_octet_length`.
    chars: Option<i32>,
    octets: Option<i32>,
    /// `numeric_precision`, `numeric_precision_radix`, `numeric_scale`.
    precision: Option<i32>,
    radix: Option<i32>,
    scale: Option<i32>,
    /// `datetime_precision`.
    datetime: Option<i32>,
}

fn type_numbers(data_type: DataType) -> TypeNumbers {
    const MAX_OCTETS: i32 = 1_073_741_824;
    let binary = |bits: i32, scale: Option<i32>| TypeNumbers {
        precision: Some(bits),
        radix: Some(2),
        scale,
        ..TypeNumbers::default()
    };
    match data_type {
        DataType::Int16 => binary(16, Some(0)),
        DataType::Int32 => binary(32, Some(0)),
        DataType::Int64 => binary(64, Some(0)),
        DataType::Float32 => binary(24, None),
        DataType::Float64 => binary(53, None),
        DataType::Numeric(fixed) => TypeNumbers {
            precision: fixed.map(|(p, _)| i32::from(p)),
            radix: Some(10),
            scale: fixed.map(|(_, s)| i32::from(s)),
            ..TypeNumbers::default()
        },
        DataType::Varchar(Some(n)) | DataType::Char(n) => {
            let n = i32::try_from(n).unwrap_or(i32::MAX);
            TypeNumbers {
                chars: Some(n),
                octets: Some(n.saturating_mul(4)),
                ..TypeNumbers::default()
            }
        }
        DataType::Varchar(None) | DataType::Text => {
            TypeNumbers { octets: Some(MAX_OCTETS), ..TypeNumbers::default() }
        }
        DataType::Date => TypeNumbers { datetime: Some(0), ..TypeNumbers::default() },
        DataType::Timestamp | DataType::TimestampTz | DataType::Interval | DataType::Time => {
            TypeNumbers { datetime: Some(6), ..TypeNumbers::default() }
        }
        DataType::Bool
        | DataType::Bytea
        | DataType::Uuid
        | DataType::Void
        | DataType::RegType
        | DataType::Name
        | DataType::Jsonb
        | DataType::Json
        | DataType::Array(_) => TypeNumbers::default(),
    }
}

fn info_columns(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let opt = |v: Option<i32>| v.map_or_else(null, i4);
    let mut rows = Vec::new();
    for table in tables(snapshot) {
        let view = table.is_view();
        for c in table.visible_columns() {
            let n = type_numbers(c.data_type);
            let identity = c.sequence.as_ref().filter(|s| s.generated != Generated::Serial);
            let default = match (&c.default, identity) {
                (Some(d), None) => deparse_default(&d.sql, c.data_type),
                _ => None,
            };
            let attnum = i32::from(c.position) + 1;
            let mut row = vec![
                database(),
                t(SCHEMA),
                t(&table.name),
                t(&c.name),
                i4(attnum),
                default.map_or_else(null, |d| t(&d)),
                yes_no(view || !not_null(table, c)),
                t(&match c.data_type {
                    DataType::Array(_) => "ARRAY".to_string(),
                    other => other.base_name(),
                }),
                opt(n.chars),
                opt(n.octets),
                opt(n.precision),
                opt(n.radix),
                opt(n.scale),
                opt(n.datetime),
                null(),
                null(),
            ];
            row.extend((0..9).map(|_| null()));
            row.extend([database(), t("pg_catalog"), t(type_name(c.data_type))]);
            row.extend([null(), null(), null(), null()]);
            row.extend([t(&attnum.to_string()), t("NO"), yes_no(identity.is_some())]);
            match identity {
                Some(seq) => row.extend([
                    t(if seq.generated == Generated::Always { "ALWAYS" } else { "BY DEFAULT" }),
                    t(&seq.start.to_string()),
                    t(&seq.increment.to_string()),
                    t(&seq.max.to_string()),
                    t(&seq.min.to_string()),
                ]),
                None => row.extend((0..5).map(|_| null())),
            }
            row.extend([t("NO"), t("NEVER"), null(), yes_no(!view)]);
            rows.push(row);
        }
    }
    rows
}

const INFO_SCHEMATA: &[(&str, DataType)] = &[
    ("catalog_name", T),
    ("schema_name", T),
    ("schema_owner", T),
    ("default_character_set_catalog", T),
    ("default_character_set_schema", T),
    ("default_character_set_name", T),
    ("sql_path", T),
];

fn info_schemata() -> Vec<Vec<Expr>> {
    [("information_schema", owner()), ("pg_catalog", owner()), (SCHEMA, t("pg_database_owner"))]
        .into_iter()
        .map(|(name, owner)| vec![database(), t(name), owner, null(), null(), null(), null()])
        .collect()
}

const INFO_VIEWS: &[(&str, DataType)] = &[
    ("table_catalog", T),
    ("table_schema", T),
    ("table_name", T),
    ("view_definition", T),
    ("check_option", T),
    ("is_updatable", T),
    ("is_insertable_into", T),
    ("is_trigger_updatable", T),
    ("is_trigger_deletable", T),
    ("is_trigger_insertable_into", T),
];

fn info_views(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let views = tables(snapshot).into_iter().filter_map(|t| Some((t, t.view.as_ref()?)));
    views
        .map(|(view, def)| {
            let mut row = vec![database(), t(SCHEMA), t(&view.name), t(&def.query), t("NONE")];
            row.extend((0..5).map(|_| t("NO")));
            row
        })
        .collect()
}

const INFO_TABLE_CONSTRAINTS: &[(&str, DataType)] = &[
    ("constraint_catalog", T),
    ("constraint_schema", T),
    ("constraint_name", T),
    ("table_catalog", T),
    ("table_schema", T),
    ("table_name", T),
    ("constraint_type", T),
    ("is_deferrable", T),
    ("initially_deferred", T),
    ("enforced", T),
    ("nulls_distinct", T),
];

fn info_table_constraints(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for table in tables(snapshot).into_iter().filter(|t| !t.is_view()) {
        let mut row = |name: &str, kind: &str, nulls_distinct: Expr, deferral: Deferral| {
            let yes = |b: bool| t(if b { "YES" } else { "NO" });
            rows.push(vec![
                database(),
                t(SCHEMA),
                t(name),
                database(),
                t(SCHEMA),
                t(&table.name),
                t(kind),
                yes(deferral != Deferral::NotDeferrable),
                yes(deferral == Deferral::Deferred),
                t("YES"),
                nulls_distinct,
            ]);
        };
        let fixed = Deferral::NotDeferrable;
        for index in table.indexes.iter().filter(|i| i.constraint) {
            match index.primary {
                true => row(&index.name, "PRIMARY KEY", null(), fixed),
                false => row(&index.name, "UNIQUE", t("YES"), fixed),
            }
        }
        for fk in &table.foreign_keys {
            row(&fk.name, "FOREIGN KEY", null(), fk.deferral);
        }
        for check in &table.checks {
            row(&check.name, "CHECK", null(), fixed);
        }
        for c in table.visible_columns().filter(|c| not_null(table, c)) {
            let name = format!("{PUBLIC}_{}_{}_not_null", table.id.oid(), c.position + 1);
            row(&name, "CHECK", null(), fixed);
        }
    }
    rows
}

const INFO_KEY_COLUMN_USAGE: &[(&str, DataType)] = &[
    ("constraint_catalog", T),
    ("constraint_schema", T),
    ("constraint_name", T),
    ("table_catalog", T),
    ("table_schema", T),
    ("table_name", T),
    ("column_name", T),
    ("ordinal_position", I4),
    ("position_in_unique_constraint", I4),
];

fn info_key_column_usage(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for table in tables(snapshot).into_iter().filter(|t| !t.is_view()) {
        let mut row = |constraint: &str, position: u16, ordinal: usize, unique: Option<usize>| {
            let column = &table.columns[usize::from(position)].name;
            rows.push(vec![
                database(),
                t(SCHEMA),
                t(constraint),
                database(),
                t(SCHEMA),
                t(&table.name),
                t(column),
                i4(ordinal as i32 + 1),
                unique.map_or_else(null, |u| i4(u as i32 + 1)),
            ]);
        };
        for index in table.indexes.iter().filter(|i| i.constraint) {
            for (ordinal, position) in index.columns.iter().enumerate() {
                row(&index.name, *position, ordinal, None);
            }
        }
        for fk in &table.foreign_keys {
            // Where each referenced column stands in the referenced table's unique key.
            let key = referenced_key(snapshot, fk);
            for (ordinal, (position, referenced)) in
                fk.columns.iter().zip(&fk.ref_columns).enumerate()
            {
                let unique = key.and_then(|k| k.columns.iter().position(|c| c == referenced));
                row(&fk.name, *position, ordinal, unique.or(Some(ordinal)));
            }
        }
    }
    rows
}

const INFO_CONSTRAINT_COLUMN_USAGE: &[(&str, DataType)] = &[
    ("table_catalog", T),
    ("table_schema", T),
    ("table_name", T),
    ("column_name", T),
    ("constraint_catalog", T),
    ("constraint_schema", T),
    ("constraint_name", T),
];

/// The columns each constraint uses: a primary key's or unique constraint's own, a check's
/// (those its expression reads), and a foreign key's *referenced* columns (ORMs join this to
/// key_column_usage to find what a foreign key references).
fn info_constraint_column_usage(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    let mut row = |table: &Table, position: u16, constraint: &str| {
        rows.push(vec![
            database(),
            t(SCHEMA),
            t(&table.name),
            t(&table.columns[usize::from(position)].name),
            database(),
            t(SCHEMA),
            t(constraint),
        ]);
    };
    for table in tables(snapshot).into_iter().filter(|t| !t.is_view()) {
        for index in table.indexes.iter().filter(|i| i.constraint) {
            for position in &index.columns {
                row(table, *position, &index.name);
            }
        }
        for check in &table.checks {
            for position in &check.columns {
                row(table, *position, &check.name);
            }
        }
        for fk in &table.foreign_keys {
            let Some(referenced) = snapshot.table_by_id(fk.ref_table) else { continue };
            for position in &fk.ref_columns {
                row(referenced, *position, &fk.name);
            }
        }
    }
    rows
}

/// The unique index of the referenced table that `fk` references: one over exactly its
/// referenced columns (in any order), the primary key first.
fn referenced_key<'a>(snapshot: &'a Snapshot, fk: &catalog::ForeignKey) -> Option<&'a Index> {
    let referenced = snapshot.table_by_id(fk.ref_table)?;
    referenced
        .indexes
        .iter()
        .filter(|i| {
            i.unique
                && i.columns.len() == fk.ref_columns.len()
                && fk.ref_columns.iter().all(|c| i.columns.contains(c))
        })
        .min_by_key(|i| !i.primary)
}

const INFO_REFERENTIAL_CONSTRAINTS: &[(&str, DataType)] = &[
    ("constraint_catalog", T),
    ("constraint_schema", T),
    ("constraint_name", T),
    ("unique_constraint_catalog", T),
    ("unique_constraint_schema", T),
    ("unique_constraint_name", T),
    ("match_option", T),
    ("update_rule", T),
    ("delete_rule", T),
];

fn info_referential_constraints(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for table in tables(snapshot).into_iter().filter(|t| !t.is_view()) {
        for fk in &table.foreign_keys {
            // A key made by CREATE UNIQUE INDEX is no constraint: PostgreSQL shows NULL.
            let key = referenced_key(snapshot, fk).filter(|i| i.constraint);
            let (catalog, schema, name) = match key {
                Some(k) => (database(), t(SCHEMA), t(&k.name)),
                None => (null(), null(), null()),
            };
            rows.push(vec![
                database(),
                t(SCHEMA),
                t(&fk.name),
                catalog,
                schema,
                name,
                t("NONE"),
                t(fk.on_update.sql()),
                t(fk.on_delete.sql()),
            ]);
        }
    }
    rows
}

const PG_TABLES: &[(&str, DataType)] = &[
    ("schemaname", N),
    ("tablename", N),
    ("tableowner", N),
    ("tablespace", N),
    ("hasindexes", B),
    ("hasrules", B),
    ("hastriggers", B),
    ("rowsecurity", B),
];

fn pg_tables(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let base = tables(snapshot).into_iter().filter(|t| !t.is_view());
    base.map(|table| {
        vec![
            t(SCHEMA),
            t(&table.name),
            owner(),
            null(),
            b(!table.indexes.is_empty()),
            b(false),
            b(has_triggers(snapshot, table)),
            b(false),
        ]
    })
    .collect()
}

const PG_INDEXES: &[(&str, DataType)] =
    &[("schemaname", N), ("tablename", N), ("indexname", N), ("tablespace", N), ("indexdef", T)];

fn pg_indexes(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for table in tables(snapshot) {
        for index in &table.indexes {
            rows.push(vec![
                t(SCHEMA),
                t(&table.name),
                t(&index.name),
                null(),
                t(&index_def(table, index)),
            ]);
        }
    }
    rows
}

const PG_VIEWS: &[(&str, DataType)] =
    &[("schemaname", N), ("viewname", N), ("viewowner", N), ("definition", T)];

fn pg_views(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let views = tables(snapshot).into_iter().filter_map(|t| Some((t, t.view.as_ref()?)));
    views.map(|(view, def)| vec![t(SCHEMA), t(&view.name), owner(), t(&def.query)]).collect()
}

const PG_NAMESPACE: &[(&str, DataType)] =
    &[("oid", OID), ("nspname", N), ("nspowner", OID), ("nspacl", T)];

fn pg_namespace() -> Vec<Vec<Expr>> {
    // `public` belongs to pg_database_owner (OID 6171), as in PostgreSQL 15.
    [
        (PG_CATALOG, "pg_catalog", OWNER),
        (PUBLIC, SCHEMA, 6171),
        (INFORMATION_SCHEMA, "information_schema", OWNER),
    ]
    .into_iter()
    .map(|(id, name, owner)| vec![oid(id), t(name), oid(owner), null()])
    .collect()
}

const PG_CLASS: &[(&str, DataType)] = &[
    ("oid", OID),
    ("relname", N),
    ("relnamespace", OID),
    ("reltype", OID),
    ("reloftype", OID),
    ("relowner", OID),
    ("relam", OID),
    ("relfilenode", OID),
    ("reltablespace", OID),
    ("relpages", I4),
    ("reltuples", DataType::Float32),
    ("relallvisible", I4),
    ("reltoastrelid", OID),
    ("relhasindex", B),
    ("relisshared", B),
    ("relpersistence", T),
    ("relkind", T),
    ("relnatts", I2),
    ("relchecks", I2),
    ("relhasrules", B),
    ("relhastriggers", B),
    ("relhassubclass", B),
    ("relrowsecurity", B),
    ("relforcerowsecurity", B),
    ("relispopulated", B),
    ("relreplident", T),
    ("relispartition", B),
    ("relrewrite", OID),
    ("relfrozenxid", OID),
    ("relminmxid", OID),
    ("relacl", T),
    ("reloptions", T),
    ("relpartbound", T),
];

fn pg_class(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for r in relations(snapshot) {
        // kind, access method, attributes, checks, has index, has rules, triggers, tuples
        let (kind, am, natts, checks, has_index, rules, triggers, tuples) = match &r {
            Relation::Table(t) => (
                "r",
                2,
                t.columns.len(),
                t.checks.len(),
                !t.indexes.is_empty(),
                false,
                has_triggers(snapshot, t),
                -1.0,
            ),
            Relation::View(t) => ("v", 0, t.columns.len(), 0, false, true, false, -1.0),
            Relation::Index(_, i) => ("i", 403, i.columns.len(), 0, false, false, false, 0.0),
            Relation::Sequence(..) => ("S", 0, 3, 0, false, false, false, 1.0),
        };
        let file = if matches!(r, Relation::View(_)) { 0 } else { r.oid() };
        let replident = if matches!(r, Relation::Table(_)) { "d" } else { "n" };
        let mut row = vec![oid(r.oid()), t(r.name()), oid(PUBLIC), oid(0), oid(0), oid(OWNER)];
        row.extend([oid(am), oid(file), oid(0), i4(0), lit(Value::Float32(tuples)), i4(0)]);
        row.extend([oid(0), b(has_index), b(false), t("p"), t(kind)]);
        row.extend([i2(natts as i16), i2(checks as i16), b(rules), b(triggers)]);
        row.extend([b(false), b(false), b(false), b(true), t(replident), b(false)]);
        row.extend([oid(0), oid(0), oid(0), null(), null(), null()]);
        rows.push(row);
    }
    rows
}

const PG_ATTRIBUTE: &[(&str, DataType)] = &[
    ("attrelid", OID),
    ("attname", N),
    ("atttypid", OID),
    ("attstattarget", I4),
    ("attlen", I2),
    ("attnum", I2),
    ("attndims", I4),
    ("attcacheoff", I4),
    ("atttypmod", I4),
    ("attbyval", B),
    ("attalign", T),
    ("attstorage", T),
    ("attcompression", T),
    ("attnotnull", B),
    ("atthasdef", B),
    ("atthasmissing", B),
    ("attidentity", T),
    ("attgenerated", T),
    ("attisdropped", B),
    ("attislocal", B),
    ("attinhcount", I4),
    ("attcollation", OID),
    ("attacl", T),
    ("attoptions", T),
    ("attfdwoptions", T),
    ("attmissingval", T),
];

/// `typalign` of a type.
fn align(data_type: DataType) -> &'static str {
    if data_type == DataType::Uuid {
        return "c";
    }
    match data_type.type_size() {
        1 => "c",
        2 => "s",
        8 | 16 => "d",
        _ => "i",
    }
}

/// The collation of a type's values: `default` (100) for strings, none (0) otherwise.
fn collation(data_type: DataType) -> i64 {
    match data_type {
        DataType::Varchar(_) | DataType::Char(_) | DataType::Text => 100,
        _ => 0,
    }
}

fn pg_attribute(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    let mut push =
        |relid: u32, attnum: usize, c: &catalog::Column, table: &Table, of_table: bool| {
            let ty = c.data_type;
            let (typid, identity) = if c.dropped {
                (0, "")
            } else {
                let identity = match c.sequence.as_ref().map(|s| s.generated) {
                    Some(Generated::Always) => "a",
                    Some(Generated::ByDefault) => "d",
                    _ => "",
                };
                (ty.oid(), identity)
            };
            let has_default = of_table && c.default.is_some();
            let mut row = vec![oid(relid), t(&c.name), oid(typid), i4(-1), i2(ty.type_size())];
            row.extend([i2(attnum as i16), i4(0), i4(-1), i4(ty.typmod())]);
            row.extend([b(matches!(ty.type_size(), 1 | 2 | 4 | 8)), t(align(ty)), t(storage(ty))]);
            row.extend([t(""), b(of_table && not_null(table, c)), b(has_default), b(false)]);
            row.extend([t(identity), t(""), b(c.dropped), b(true), i4(0), oid(collation(ty))]);
            row.extend([null(), null(), null(), null()]);
            rows.push(row);
        };
    for r in relations(snapshot) {
        match r {
            Relation::Table(table) | Relation::View(table) => {
                for c in &table.columns {
                    push(table.id.oid(), usize::from(c.position) + 1, c, table, true);
                }
            }
            Relation::Index(table, index) => {
                for (i, position) in index.columns.iter().enumerate() {
                    let c = &table.columns[usize::from(*position)];
                    push(index.id.oid(), i + 1, c, table, false);
                }
            }
            Relation::Sequence(..) => {}
        }
    }
    rows
}

const PG_ATTRDEF: &[(&str, DataType)] =
    &[("oid", OID), ("adrelid", OID), ("adnum", I2), ("adbin", T)];

/// Column defaults (identity columns have none, as in PostgreSQL). `adbin` holds the
/// expression's SQL text where PostgreSQL keeps its node tree, so that `pg_get_expr(adbin,
/// adrelid)` gives what PostgreSQL's gives (`nextval('t_id_seq'::regclass)`). The OID of a
/// default is its table's OID × 2¹⁶ + its column number.
fn pg_attrdef(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for table in tables(snapshot).into_iter().filter(|t| !t.is_view()) {
        for c in table.visible_columns() {
            let identity = c.sequence.as_ref().is_some_and(|s| s.generated != Generated::Serial);
            let Some(d) = c.default.as_ref().filter(|_| !identity) else { continue };
            let Some(text) = deparse_default(&d.sql, c.data_type) else { continue };
            let attnum = c.position as i16 + 1;
            let relid = i64::from(table.id.oid());
            rows.push(vec![
                oid((relid << 16) + i64::from(attnum)),
                oid(relid),
                i2(attnum),
                t(&text),
            ]);
        }
    }
    rows
}

const PG_TYPE: &[(&str, DataType)] = &[
    ("oid", OID),
    ("typname", N),
    ("typnamespace", OID),
    ("typowner", OID),
    ("typlen", I2),
    ("typbyval", B),
    ("typtype", T),
    ("typcategory", T),
    ("typispreferred", B),
    ("typisdefined", B),
    ("typdelim", T),
    ("typrelid", OID),
    ("typsubscript", T),
    ("typelem", OID),
    ("typarray", OID),
    ("typinput", T),
    ("typoutput", T),
    ("typreceive", T),
    ("typsend", T),
    ("typmodin", T),
    ("typmodout", T),
    ("typanalyze", T),
    ("typalign", T),
    ("typstorage", T),
    ("typnotnull", B),
    ("typbasetype", OID),
    ("typtypmod", I4),
    ("typndims", I4),
    ("typcollation", OID),
    ("typdefaultbin", T),
    ("typdefault", T),
    ("typacl", T),
];

/// A type as `pg_type` describes it: its category, whether it is preferred in it, its array
/// type, and the prefix of its I/O functions (`int4` → `int4in`, `int4out`, `int4recv`,
/// `int4send`; `date_` → `date_in` …), and whether it takes a type modifier.
struct TypeRow {
    ty: DataType,
    category: &'static str,
    preferred: bool,
    array: i64,
    io: &'static str,
    typmod: bool,
}

const fn ty(
    ty: DataType,
    category: &'static str,
    preferred: bool,
    array: i64,
    io: &'static str,
    typmod: bool,
) -> TypeRow {
    TypeRow { ty, category, preferred, array, io, typmod }
}

const TYPES: [TypeRow; 22] = [
    ty(DataType::Bool, "B", true, 1000, "bool", false),
    ty(DataType::Bytea, "U", false, 1001, "bytea", false),
    ty(DataType::Int64, "N", false, 1016, "int8", false),
    ty(DataType::Int16, "N", false, 1005, "int2", false),
    ty(DataType::Int32, "N", false, 1007, "int4", false),
    ty(DataType::Text, "S", true, 1009, "text", false),
    ty(DataType::Float32, "N", false, 1021, "float4", false),
    ty(DataType::Float64, "N", true, 1022, "float8", false),
    ty(DataType::Char(1), "S", false, 1014, "bpchar", true),
    ty(DataType::Varchar(None), "S", false, 1015, "varchar", true),
    ty(DataType::Date, "D", false, 1182, "date_", false),
    ty(DataType::Timestamp, "D", false, 1115, "timestamp_", true),
    ty(DataType::TimestampTz, "D", true, 1185, "timestamptz_", true),
    ty(DataType::Interval, "T", true, 1187, "interval_", true),
    ty(DataType::Numeric(None), "N", false, 1231, "numeric_", true),
    ty(DataType::Uuid, "U", false, 2951, "uuid_", false),
    ty(DataType::Time, "D", false, 1183, "time_", true),
    ty(DataType::Jsonb, "U", false, 3807, "jsonb_", false),
    ty(DataType::Json, "U", false, 199, "json_", false),
    ty(DataType::Void, "P", false, 0, "void_", false),
    // Aspen has no `_regtype` (2211): no array of it.
    ty(DataType::RegType, "N", false, 0, "regtype", false),
    ty(DataType::Name, "S", false, 1003, "name", false),
];

/// Every type `pg_type` lists, by its `typname` (`int4`, `_int4`, …).
pub(crate) fn types_by_name() -> impl Iterator<Item = (&'static str, DataType)> {
    TYPES
        .iter()
        .map(|r| r.ty)
        .chain(ArrayElem::ALL.into_iter().map(DataType::Array))
        .map(|ty| (type_name(ty), ty))
}

fn pg_type() -> Vec<Vec<Expr>> {
    TYPES
        .iter()
        .map(|r| {
            let ty = r.ty;
            let (len, kind) = match ty {
                DataType::Void => (4, "p"),
                _ => (ty.type_size(), "b"),
            };
            let name = type_name(ty);
            let (modin, modout) = match r.typmod {
                true => (format!("{name}typmodin"), format!("{name}typmodout")),
                false => ("-".to_string(), "-".to_string()),
            };
            let io = |what: &str| t(&format!("{}{what}", r.io));
            let mut row = vec![oid(ty.oid()), t(name), oid(PG_CATALOG), oid(OWNER)];
            row.extend([i2(len), b(matches!(len, 1 | 2 | 4 | 8)), t(kind), t(r.category)]);
            row.extend([b(r.preferred), b(true), t(","), oid(0), t("-"), oid(0), oid(r.array)]);
            row.extend([io("in"), io("out"), io("recv"), io("send"), t(&modin), t(&modout)]);
            row.extend([t("-"), t(align(ty)), t(storage(ty)), b(false), oid(0), i4(-1), i4(0)]);
            row.extend([oid(collation(ty)), null(), null(), null()]);
            row
        })
        .chain(ArrayElem::ALL.into_iter().map(|e| {
            // The array type of each element type: `_int4`, category A, `array_in` …
            let (ty, elem) = (DataType::Array(e), e.data_type());
            let mut row = vec![oid(ty.oid()), t(type_name(ty)), oid(PG_CATALOG), oid(OWNER)];
            row.extend([i2(-1), b(false), t("b"), t("A"), b(false), b(true), t(","), oid(0)]);
            row.extend([t("array_subscript_handler"), oid(elem.oid()), oid(0)]);
            row.extend([t("array_in"), t("array_out"), t("array_recv"), t("array_send")]);
            row.extend([t("-"), t("-"), t("array_typanalyze"), t(&align(elem).replace('c', "i"))]);
            row.extend([t("x"), b(false), oid(0), i4(-1), i4(0)]);
            row.extend([oid(collation(elem)), null(), null(), null()]);
            row
        }))
        .collect()
}

const PG_INDEX: &[(&str, DataType)] = &[
    ("indexrelid", OID),
    ("indrelid", OID),
    ("indnatts", I2),
    ("indnkeyatts", I2),
    ("indisunique", B),
    ("indnullsnotdistinct", B),
    ("indisprimary", B),
    ("indisexclusion", B),
    ("indimmediate", B),
    ("indisclustered", B),
    ("indisvalid", B),
    ("indcheckxmin", B),
    ("indisready", B),
    ("indislive", B),
    ("indisreplident", B),
    ("indkey", T),
    ("indcollation", T),
    ("indclass", T),
    ("indoption", T),
    ("indexprs", T),
    ("indpred", T),
];

/// Every index: `indkey` and `indoption` as `int2vector` prints them (`1 3`: attribute numbers;
/// `0 0`: every key ascending, NULLs last), which clients split; `indpred` a partial index's
/// condition as text (what `pg_get_expr` returns, as for `pg_attrdef.adbin`); `indcollation`
/// and `indclass` NULL. A table without a primary key has none here (its hidden key is no
/// index PostgreSQL would have).
fn pg_index(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for table in tables(snapshot).into_iter().filter(|t| !t.is_view()) {
        for index in &table.indexes {
            let n = index.columns.len() as i16;
            let key: Vec<String> = index.columns.iter().map(|c| (c + 1).to_string()).collect();
            let mut row = vec![oid(index.id.oid()), oid(table.id.oid()), i2(n), i2(n)];
            row.extend([b(index.unique), b(false), b(index.primary), b(false), b(true)]);
            row.extend([b(false), b(true), b(false), b(true), b(true), b(false)]);
            row.extend([t(&key.join(" ")), null(), null(), t(&vec!["0"; key.len()].join(" "))]);
            row.extend([null(), index.predicate.as_deref().map_or_else(null, t)]);
            rows.push(row);
        }
    }
    rows
}

const I2S: DataType = DataType::Array(ArrayElem::Int16);

const PG_CONSTRAINT: &[(&str, DataType)] = &[
    ("oid", OID),
    ("conname", N),
    ("connamespace", OID),
    ("contype", T),
    ("condeferrable", B),
    ("condeferred", B),
    ("convalidated", B),
    ("conrelid", OID),
    ("contypid", OID),
    ("conindid", OID),
    ("conparentid", OID),
    ("confrelid", OID),
    ("confupdtype", T),
    ("confdeltype", T),
    ("confmatchtype", T),
    ("conislocal", B),
    ("coninhcount", I2),
    ("connoinherit", B),
    ("conkey", I2S),
    ("confkey", I2S),
    ("conpfeqop", T),
    ("conppeqop", T),
    ("conffeqop", T),
    ("confdelsetcols", T),
    ("conexclop", T),
    ("conbin", T),
];

/// The public schema's primary keys, unique constraints, foreign keys and checks, with the
/// OIDs `pg_get_constraintdef` takes (`super::constraints`). `conkey` and `confkey` are the
/// `int2[]` of column numbers; a check's `conbin` is its expression as text (what
/// `pg_get_expr` returns, as for `pg_attrdef.adbin`); the operator arrays are NULL.
fn pg_constraint(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let attnums = |cols: &[u16]| {
        lit(Value::Array(std::sync::Arc::new(
            cols.iter().map(|c| Value::Int16(*c as i16 + 1)).collect(),
        )))
    };
    let action = |a: catalog::FkAction| {
        t(match a {
            catalog::FkAction::NoAction => "a",
            catalog::FkAction::Restrict => "r",
            catalog::FkAction::Cascade => "c",
            catalog::FkAction::SetNull => "n",
            catalog::FkAction::SetDefault => "d",
        })
    };
    let mut rows = Vec::new();
    for c in super::constraints(snapshot) {
        let (kind, index, deferral, key, conbin) = match &c.kind {
            ConstraintKind::Key(i) => {
                let kind = if i.primary { "p" } else { "u" };
                (kind, i.id.oid(), Deferral::NotDeferrable, attnums(&i.columns), null())
            }
            ConstraintKind::Foreign(fk) => {
                let index = referenced_key(snapshot, fk).map_or(0, |i| i.id.oid());
                ("f", index, fk.deferral, attnums(&fk.columns), null())
            }
            ConstraintKind::Check(ch) => {
                ("c", 0, Deferral::NotDeferrable, attnums(&ch.columns), t(&ch.sql))
            }
        };
        let mut row = vec![oid(c.oid), t(c.name), oid(PUBLIC), t(kind)];
        row.extend([b(deferral != Deferral::NotDeferrable), b(deferral == Deferral::Deferred)]);
        row.extend([b(true), oid(c.table.id.oid()), oid(0), oid(index), oid(0)]);
        match &c.kind {
            ConstraintKind::Foreign(fk) => {
                row.extend([oid(fk.ref_table.oid()), action(fk.on_update), action(fk.on_delete)]);
                row.push(t("s"));
            }
            _ => row.extend([oid(0), t(" "), t(" "), t(" ")]),
        }
        row.extend([b(true), i2(0), b(false)]);
        let fkey = match &c.kind {
            ConstraintKind::Foreign(fk) => attnums(&fk.ref_columns),
            _ => null(),
        };
        row.extend([key, fkey, null(), null(), null(), null(), null(), conbin]);
        rows.push(row);
    }
    rows
}

const PG_ENUM: &[(&str, DataType)] =
    &[("oid", OID), ("enumtypid", OID), ("enumsortorder", DataType::Float32), ("enumlabel", N)];

const PG_DESCRIPTION: &[(&str, DataType)] =
    &[("objoid", OID), ("classoid", OID), ("objsubid", I4), ("description", T)];

/// `pg_class` (1259), the catalog of the objects COMMENT ON describes here.
const PG_CLASS_OID: i64 = 1259;

/// The comments of tables and views (`objsubid` 0) and of their columns (`objsubid` the
/// column's number).
fn pg_description(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let mut rows = Vec::new();
    for table in tables(snapshot) {
        let relid = oid(table.id.oid());
        if let Some(c) = &table.comment {
            rows.push(vec![relid.clone(), oid(PG_CLASS_OID), i4(0), t(c)]);
        }
        for (position, c) in &table.column_comments {
            rows.push(vec![relid.clone(), oid(PG_CLASS_OID), i4(i32::from(*position) + 1), t(c)]);
        }
    }
    rows
}

const PG_STATIO_ALL_TABLES: &[(&str, DataType)] = &[
    ("relid", OID),
    ("schemaname", N),
    ("relname", N),
    ("heap_blks_read", OID),
    ("heap_blks_hit", OID),
    ("idx_blks_read", OID),
    ("idx_blks_hit", OID),
    ("toast_blks_read", OID),
    ("toast_blks_hit", OID),
    ("tidx_blks_read", OID),
    ("tidx_blks_hit", OID),
];

/// The tables, with no block I/O counted (an in-memory engine reads no blocks): `idx_*` 0
/// where a table has indexes and NULL otherwise, no TOAST (NULL), as PostgreSQL shows for a
/// fresh table.
fn pg_statio_all_tables(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let zero = || lit(Value::Int64(0));
    let mut rows = Vec::new();
    for table in tables(snapshot).into_iter().filter(|t| !t.is_view()) {
        let idx = if table.indexes.is_empty() { null() } else { zero() };
        let mut row = vec![oid(table.id.oid()), t(SCHEMA), t(&table.name), zero(), zero()];
        row.extend([idx.clone(), idx, null(), null(), null(), null()]);
        rows.push(row);
    }
    rows
}

const PG_SEQUENCE: &[(&str, DataType)] = &[
    ("seqrelid", OID),
    ("seqtypid", OID),
    ("seqstart", DataType::Int64),
    ("seqincrement", DataType::Int64),
    ("seqmax", DataType::Int64),
    ("seqmin", DataType::Int64),
    ("seqcache", DataType::Int64),
    ("seqcycle", B),
];

/// Every sequence (of a `serial` or identity column, or of its own): its type is its column's,
/// and it caches one value and does not cycle (Aspen's sequences have neither option).
fn pg_sequence(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let i8 = |v: i64| lit(Value::Int64(v));
    relations(snapshot)
        .into_iter()
        .filter_map(|r| match &r {
            Relation::Sequence(_, column, seq) => Some(vec![
                oid(r.oid()),
                oid(column.data_type.oid()),
                i8(seq.start),
                i8(seq.increment),
                i8(seq.max),
                i8(seq.min),
                i8(1),
                b(false),
            ]),
            _ => None,
        })
        .collect()
}

/// No table inherits from another (Aspen has no inheritance or partitions): empty.
const PG_INHERITS: &[(&str, DataType)] =
    &[("inhrelid", OID), ("inhparent", OID), ("inhseqno", I4), ("inhdetachpending", B)];

const PG_AM: &[(&str, DataType)] = &[("oid", OID), ("amname", N), ("amhandler", T), ("amtype", T)];

/// PostgreSQL 15's access methods, with their OIDs: `pg_class.relam` says `heap` for tables and
/// `btree` for indexes, the only two Aspen has.
fn pg_am() -> Vec<Vec<Expr>> {
    [
        (2, "heap", "heap_tableam_handler", "t"),
        (403, "btree", "bthandler", "i"),
        (405, "hash", "hashhandler", "i"),
        (783, "gist", "gisthandler", "i"),
        (2742, "gin", "ginhandler", "i"),
        (4000, "spgist", "spghandler", "i"),
        (3580, "brin", "brinhandler", "i"),
    ]
    .into_iter()
    .map(|(id, name, handler, kind)| vec![oid(id), t(name), t(handler), t(kind)])
    .collect()
}

const PG_RANGE: &[(&str, DataType)] = &[
    ("rngtypid", OID),
    ("rngsubtype", OID),
    ("rngmultitypid", OID),
    ("rngcollation", OID),
    ("rngsubopc", OID),
    ("rngcanonical", T),
    ("rngsubdiff", T),
];

const PG_DATABASE: &[(&str, DataType)] = &[
    ("oid", OID),
    ("datname", N),
    ("datdba", OID),
    ("encoding", I4),
    ("datlocprovider", T),
    ("datistemplate", B),
    ("datallowconn", B),
    ("datconnlimit", I4),
    ("datfrozenxid", OID),
    ("datminmxid", OID),
    ("dattablespace", OID),
    ("datcollate", T),
    ("datctype", T),
    ("daticulocale", T),
    ("datcollversion", T),
    ("datacl", T),
];

fn pg_database() -> Vec<Vec<Expr>> {
    // Encoding 6 is UTF8; 1663 is pg_default.
    let mut row = vec![oid(DATABASE_OID), database(), oid(OWNER), i4(6), t("c"), b(false), b(true)];
    row.extend([i4(-1), oid(0), oid(0), oid(1663), t("C.UTF-8"), t("C.UTF-8")]);
    row.extend([null(), null(), null()]);
    vec![row]
}

const PG_ROLES: &[(&str, DataType)] = &[
    ("rolname", N),
    ("rolsuper", B),
    ("rolinherit", B),
    ("rolcreaterole", B),
    ("rolcreatedb", B),
    ("rolcanlogin", B),
    ("rolreplication", B),
    ("rolconnlimit", I4),
    ("rolpassword", T),
    ("rolvaliduntil", DataType::TimestampTz),
    ("rolbypassrls", B),
    ("rolconfig", T),
    ("oid", OID),
];

/// One row per role of the catalog (`CREATE ROLE`); the password is always shown as
/// `********`, as PostgreSQL's view does.
fn pg_roles(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let roles = snapshot.roles().iter();
    roles
        .map(|r| {
            let mut row = vec![t(&r.name), b(r.superuser), b(r.inherit), b(r.create_role)];
            row.extend([b(r.create_db), b(r.login), b(r.replication), i4(-1)]);
            row.extend([t("********"), null(), b(r.bypass_rls), null(), oid(r.oid)]);
            row
        })
        .collect()
}

const PG_USER: &[(&str, DataType)] = &[
    ("usename", N),
    ("usesysid", OID),
    ("usecreatedb", B),
    ("usesuper", B),
    ("userepl", B),
    ("usebypassrls", B),
    ("passwd", T),
    ("valuntil", DataType::TimestampTz),
    ("useconfig", T),
];

/// The roles that may log in (`pg_user`).
fn pg_user(snapshot: &Snapshot) -> Vec<Vec<Expr>> {
    let users = snapshot.roles().iter().filter(|r| r.login);
    users
        .map(|r| {
            let mut row = vec![t(&r.name), oid(r.oid), b(r.create_db), b(r.superuser)];
            row.extend([b(r.replication), b(r.bypass_rls), t("********"), null(), null()]);
            row
        })
        .collect()
}

const PG_SETTINGS: &[(&str, DataType)] = &[
    ("name", T),
    ("setting", T),
    ("unit", T),
    ("category", T),
    ("short_desc", T),
    ("extra_desc", T),
    ("context", T),
    ("vartype", T),
    ("source", T),
    ("min_val", T),
    ("max_val", T),
    ("enumvals", T),
    ("boot_val", T),
    ("reset_val", T),
    ("sourcefile", T),
    ("sourceline", I4),
    ("pending_restart", B),
];

/// One row per parameter SHOW knows; `setting` is the session's value when the statement runs
/// (`current_setting`). What Aspen does not track (unit, category, source, bounds) is NULL.
fn pg_settings() -> Vec<Vec<Expr>> {
    let mut params: Vec<_> = crate::session::parameters().collect();
    params.sort_by_key(|p| p.0.to_ascii_lowercase());
    params
        .into_iter()
        .map(|(name, default, description, settable)| {
            let setting = Expr::Func(Func::CurrentSetting, vec![t(name)]);
            // The type as the default's form tells it.
            let vartype = match default {
                "on" | "off" => "bool",
                d if d.parse::<i64>().is_ok() => "integer",
                _ => "string",
            };
            let mut row = vec![t(name), setting, null(), null(), t(description), null()];
            row.extend([t(if settable { "user" } else { "internal" }), t(vartype), null()]);
            row.extend([null(), null(), null(), t(default), null(), null(), null(), b(false)]);
            row
        })
        .collect()
}
