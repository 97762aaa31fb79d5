//! JDBC `DatabaseMetaData` queries, answered from the catalog.
//!
//! pgjdbc implements `getTables`, `getColumns`, `getIndexInfo` and `getImportedKeys` /
//! `getExportedKeys` / `getCrossReference` as large `pg_catalog` queries (window functions,
//! regular expressions, `::regclass`, array subscripts, `pg_get_expr`, …; the text pgjdbc
//! 42.7.4 sends is in `../shared/research/benchbase.md` §6). Aspen has no `pg_catalog` tables,
//! so instead of executing those queries it recognises them by their fixed text, reads the
//! filters pgjdbc splices into them (schema and table names or `LIKE` patterns, always string
//! literals), and answers from the catalog snapshot with the columns, types and row order
//! PostgreSQL 15 gives. BenchBase reads the schema this way at the start of every run.
//!
//! The answer is a constant `VALUES` plan, so it goes through the plan cache like any query
//! and is rebound when the catalog changes. A query that merely resembles these (other
//! `pg_catalog` SQL) is not recognised and gets the usual error for an unknown relation.
//!
//! What Aspen's catalog cannot say is answered as PostgreSQL would for a fresh table: no
//! comments (`REMARKS`, `description` NULL), no identity or generated columns, base types only
//! (`typtype` `b`), index statistics zero (`CARDINALITY`, `PAGES`), every index a btree in
//! ascending order.

use catalog::{DataType, FkAction, Snapshot, Table};

use crate::plan::{Expr, OutColumn, Plan, Query};
use crate::types::{like, Value};

/// A recognised metadata query and its filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaQuery {
    /// `getTables`.
    Tables {
        /// Schema name `LIKE` pattern.
        schema: Option<String>,
        /// Table name `LIKE` pattern.
        table: Option<String>,
        /// Whether the requested types include `TABLE` (the only kind of relation Aspen has).
        tables: bool,
    },
    /// `getColumns`.
    Columns {
        /// Schema name `LIKE` pattern.
        schema: Option<String>,
        /// Table name `LIKE` pattern.
        table: Option<String>,
        /// Column name `LIKE` pattern.
        column: Option<String>,
    },
    /// `getIndexInfo`.
    IndexInfo {
        /// Schema name.
        schema: Option<String>,
        /// Table name.
        table: Option<String>,
        /// Only unique indexes.
        unique: bool,
    },
    /// `getImportedKeys` / `getExportedKeys` / `getCrossReference`.
    Keys {
        /// Schema of the referenced table.
        pk_schema: Option<String>,
        /// Name of the referenced table.
        pk_table: Option<String>,
        /// Schema of the referencing table.
        fk_schema: Option<String>,
        /// Name of the referencing table.
        fk_table: Option<String>,
        /// Ordered by the referencing table (`getExportedKeys`) rather than the referenced one.
        exported: bool,
    },
    /// `SELECT setting FROM pg_catalog.pg_settings WHERE name='max_index_keys'` (pgjdbc, before
    /// its first foreign-key query).
    MaxIndexKeys,
    /// One of psql's describe queries (`\d` and friends: [`crate::describe`]).
    Psql(crate::describe::Describe),
}

const TABLES_PREFIX: &str = "SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS \
    TABLE_NAME, CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema' WHEN true THEN";
const TABLES_SUFFIX: &str = "ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME";
/// The `types` clause pgjdbc adds for `"TABLE"`.
const TABLES_TYPE_TABLE: &str = "( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> \
    'information_schema' )";
const COLUMNS_PREFIX: &str = "SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,\
    a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,\
    t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum,";
const COLUMNS_SUFFIX: &str = "ORDER BY nspname,c.relname,attnum";
const INDEX_PREFIX: &str = "SELECT tmp.TABLE_CAT, tmp.TABLE_SCHEM, tmp.TABLE_NAME, \
    tmp.NON_UNIQUE, tmp.INDEX_QUALIFIER, tmp.INDEX_NAME, tmp.TYPE, tmp.ORDINAL_POSITION, \
    trim(both '\"' from pg_catalog.pg_get_indexdef(tmp.CI_OID, tmp.ORDINAL_POSITION, false)) \
    AS COLUMN_NAME,";
const INDEX_SUFFIX: &str = "ORDER BY NON_UNIQUE, TYPE, INDEX_NAME, ORDINAL_POSITION";
const KEYS_PREFIX: &str = "SELECT NULL::text AS PKTABLE_CAT, pkn.nspname AS PKTABLE_SCHEM, \
    pkc.relname AS PKTABLE_NAME, pka.attname AS PKCOLUMN_NAME, NULL::text AS FKTABLE_CAT, \
    fkn.nspname AS FKTABLE_SCHEM, fkc.relname AS FKTABLE_NAME, fka.attname AS FKCOLUMN_NAME, \
    pos.n AS KEY_SEQ,";
const KEYS_BY_PK: &str = "ORDER BY pkn.nspname,pkc.relname, con.conname,pos.n";
const KEYS_BY_FK: &str = "ORDER BY fkn.nspname,fkc.relname,con.conname,pos.n";
const MAX_INDEX_KEYS: &str =
    "SELECT setting FROM pg_catalog.pg_settings WHERE name='max_index_keys'";

/// PostgreSQL's `max_index_keys` (a compile-time constant there too).
const MAX_INDEX_KEYS_VALUE: &str = "32";

/// pgjdbc's lookups of a type by name (`PGobject` parameters) and by OID
/// (`ResultSetMetaData.getColumnType`) through the search path (`TypeInfoCache`), which
/// subscript the array `current_schemas(false)`. Every Aspen type lives in `pg_catalog`, which
/// that path does not list (so PostgreSQL's `sp.r` is NULL for all of them): they come down
/// to the plain queries after them, which Aspen runs.
const PGJDBC_TYPE_LOOKUPS: [(&str, &str); 2] = [
    (
        "SELECT pg_type.oid, typname FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid, \
         ns.nspname, r.r from pg_namespace as ns join ( select s.r, (current_schemas(false))[s.r] \
         as nspname from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as \
         r using ( nspname ) ) as sp ON sp.nspoid = typnamespace WHERE typname = $1 ORDER BY \
         sp.r, pg_type.oid DESC LIMIT 1",
        "SELECT pg_type.oid, typname FROM pg_catalog.pg_type WHERE typname = $1 \
         ORDER BY pg_type.oid DESC LIMIT 1",
    ),
    (
        "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, \
         pg_type.oid FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r \
         from pg_namespace as ns join ( select s.r, (current_schemas(false))[s.r] as nspname from \
         generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r using ( \
         nspname ) ) as sp ON sp.nspoid = typnamespace WHERE pg_type.oid = $1 ORDER BY sp.r, \
         pg_type.oid DESC",
        "SELECT typinput = 'array_in' AS is_array, typtype, typname, pg_type.oid \
         FROM pg_catalog.pg_type WHERE pg_type.oid = $1 ORDER BY pg_type.oid DESC",
    ),
];

/// The query Aspen runs instead of `sql`, if `sql` is one of pgjdbc's type lookups.
pub fn equivalent(sql: &str) -> Option<&'static str> {
    if sql.len() > 2048 || !sql.contains("current_schemas(false))[s.r]") {
        return None;
    }
    let text = normalize(sql);
    let text = text.strip_suffix(';').map(str::trim_end).unwrap_or(&text);
    PGJDBC_TYPE_LOOKUPS.iter().find(|(theirs, _)| *theirs == text).map(|(_, ours)| *ours)
}

/// Recognises one of pgjdbc's metadata queries in `sql` (whitespace-insensitive: the constants
/// above are written normalized, one space between tokens). `None` for
/// anything else, which then goes to the parser as usual.
pub fn recognize(sql: &str) -> Option<MetaQuery> {
    // Cheap test first: every recognised query reads pg_catalog.
    if sql.len() > 16 << 10 || !sql.contains("pg_catalog.") {
        return None;
    }
    let text = normalize(sql);
    let text = text.strip_suffix(';').map(str::trim_end).unwrap_or(&text);
    if text == MAX_INDEX_KEYS {
        return Some(MetaQuery::MaxIndexKeys);
    }
    if text.starts_with(TABLES_PREFIX) && text.ends_with(TABLES_SUFFIX) {
        // No types clause at all means every type; otherwise TABLE must be among them.
        let typed = text.contains("AND (false ");
        return Some(MetaQuery::Tables {
            schema: literal_after(text, " AND n.nspname LIKE ")?,
            table: literal_after(text, " AND c.relname LIKE ")?,
            tables: !typed || text.contains(TABLES_TYPE_TABLE),
        });
    }
    if text.starts_with(COLUMNS_PREFIX) && text.ends_with(COLUMNS_SUFFIX) {
        return Some(MetaQuery::Columns {
            schema: literal_after(text, " AND n.nspname LIKE ")?,
            table: literal_after(text, " AND c.relname LIKE ")?,
            column: literal_after(text, " AND attname LIKE ")?,
        });
    }
    if text.starts_with(INDEX_PREFIX) && text.ends_with(INDEX_SUFFIX) {
        return Some(MetaQuery::IndexInfo {
            schema: literal_after(text, " AND n.nspname = ")?,
            table: literal_after(text, " AND ct.relname = ")?,
            unique: text.contains(" AND i.indisunique "),
        });
    }
    if text.starts_with(KEYS_PREFIX) && (text.ends_with(KEYS_BY_PK) || text.ends_with(KEYS_BY_FK)) {
        return Some(MetaQuery::Keys {
            pk_schema: literal_after(text, " AND pkn.nspname = ")?,
            pk_table: literal_after(text, " AND pkc.relname = ")?,
            fk_schema: literal_after(text, " AND fkn.nspname = ")?,
            fk_table: literal_after(text, " AND fkc.relname = ")?,
            exported: text.ends_with(KEYS_BY_FK),
        });
    }
    crate::describe::recognize(text).map(MetaQuery::Psql)
}

/// `sql` with every run of whitespace turned into one space, trimmed.
fn normalize(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The string literal right after `marker` in `text`: `Some(None)` when the marker is absent
/// (no such filter), `Some(Some(s))` for a well-formed literal, `None` when the marker is
/// followed by anything else (not a query pgjdbc wrote: not recognised).
fn literal_after(text: &str, marker: &str) -> Option<Option<String>> {
    let Some(at) = text.find(marker) else { return Some(None) };
    literal(&text[at + marker.len()..]).map(|(value, _)| Some(value))
}

/// The string literal (`'…'` with doubled quotes, or `E'…'` with backslash escapes) that
/// `text` starts with, and the text after it. `None` when `text` does not start with a
/// complete literal.
pub(crate) fn literal(text: &str) -> Option<(String, &str)> {
    let (escapes, rest) = match text.strip_prefix(['E', 'e']) {
        Some(r) => (true, r),
        None => (false, text),
    };
    let mut chars = rest.strip_prefix('\'')?.chars();
    let mut out = String::new();
    loop {
        match chars.next()? {
            '\'' => {
                if chars.as_str().starts_with('\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return Some((out, chars.as_str()));
                }
            }
            '\\' if escapes => out.push(chars.next()?),
            c => out.push(c),
        }
    }
}

/// The only schema.
const SCHEMA: &str = "public";

/// Whether `name` matches an optional `LIKE` pattern.
fn matches(name: &str, pattern: &Option<String>) -> bool {
    pattern.as_deref().is_none_or(|p| like(name, p, false))
}

/// Whether `name` equals an optional exact filter.
fn equals(name: &str, filter: &Option<String>) -> bool {
    filter.as_deref().is_none_or(|f| f == name)
}

/// The answer to `q` as a constant query over `snapshot`.
pub fn answer(snapshot: &Snapshot, q: &MetaQuery) -> Query {
    // Standalone sequences and views are kept as tables, but are not tables to a client.
    let mut tables: Vec<&Table> = snapshot
        .tables()
        .filter(|t| !t.is_sequence() && !t.is_view())
        .map(|t| t.as_ref())
        .collect();
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    match q {
        MetaQuery::Tables { schema, table, tables: wanted } => {
            let rows = tables
                .iter()
                .filter(|t| *wanted && matches(SCHEMA, schema) && matches(&t.name, table))
                .map(|t| {
                    let mut row = vec![Value::Null, text(SCHEMA), text(&t.name), text("TABLE")];
                    row.push(Value::Null);
                    row.extend((0..5).map(|_| text("")));
                    row
                })
                .collect();
            let cols = [
                "table_cat",
                "table_schem",
                "table_name",
                "table_type",
                "remarks",
                "type_cat",
                "type_schem",
                "type_name",
                "self_referencing_col_name",
                "ref_generation",
            ];
            constant(cols.iter().map(|c| (*c, DataType::Text)).collect(), rows)
        }
        MetaQuery::Columns { schema, table, column } => {
            let mut rows = Vec::new();
            for t in tables.iter().filter(|t| matches(SCHEMA, schema) && matches(&t.name, table)) {
                let key: Vec<u16> =
                    t.primary_index().map(|i| i.columns.clone()).unwrap_or_default();
                for c in t.visible_columns() {
                    if !matches(&c.name, column) {
                        continue;
                    }
                    let attnum = usize::from(c.position);
                    rows.push(vec![
                        text(SCHEMA),
                        text(&t.name),
                        text(&c.name),
                        Value::Int32(c.data_type.oid() as i32),
                        Value::Bool(c.not_null || key.contains(&c.position)),
                        Value::Int32(c.data_type.typmod()),
                        Value::Int16(c.data_type.type_size()),
                        Value::Int32(-1),
                        Value::Int64(attnum as i64 + 1),
                        // pgjdbc selects nullif(attidentity, ''): NULL unless an identity.
                        match c.sequence.as_ref().map(|s| s.generated) {
                            Some(catalog::Generated::Always) => text("a"),
                            Some(catalog::Generated::ByDefault) => text("d"),
                            _ => Value::Null,
                        },
                        Value::Null,
                        c.default.as_ref().map_or(Value::Null, |d| text(&d.sql)),
                        Value::Null,
                        Value::Int32(0),
                        text("b"),
                    ]);
                }
            }
            let cols = vec![
                ("nspname", DataType::Text),
                ("relname", DataType::Text),
                ("attname", DataType::Text),
                ("atttypid", DataType::Int32),
                ("attnotnull", DataType::Bool),
                ("atttypmod", DataType::Int32),
                ("attlen", DataType::Int16),
                ("typtypmod", DataType::Int32),
                ("attnum", DataType::Int64),
                ("attidentity", DataType::Text),
                ("attgenerated", DataType::Text),
                ("adsrc", DataType::Text),
                ("description", DataType::Text),
                ("typbasetype", DataType::Int32),
                ("typtype", DataType::Text),
            ];
            constant(cols, rows)
        }
        MetaQuery::IndexInfo { schema, table, unique } => {
            // ORDER BY NON_UNIQUE, TYPE, INDEX_NAME, ORDINAL_POSITION (TYPE is always 3).
            let mut keyed = Vec::new();
            if equals(SCHEMA, schema) {
                for t in tables.iter().filter(|t| equals(&t.name, table)) {
                    for i in t.indexes.iter().filter(|i| i.unique || !unique) {
                        for (n, col) in i.columns.iter().enumerate() {
                            let row = vec![
                                Value::Null,
                                text(SCHEMA),
                                text(&t.name),
                                Value::Bool(!i.unique),
                                Value::Null,
                                text(&i.name),
                                Value::Int32(3),
                                Value::Int32(n as i32 + 1),
                                text(&t.columns[*col as usize].name),
                                text("A"),
                                Value::Float32(0.0),
                                Value::Int32(0),
                                Value::Null,
                            ];
                            keyed.push(((!i.unique, i.name.clone(), n), row));
                        }
                    }
                }
            }
            let rows = sorted(keyed);
            let cols = vec![
                ("table_cat", DataType::Text),
                ("table_schem", DataType::Text),
                ("table_name", DataType::Text),
                ("non_unique", DataType::Bool),
                ("index_qualifier", DataType::Text),
                ("index_name", DataType::Text),
                ("type", DataType::Int32),
                ("ordinal_position", DataType::Int32),
                ("column_name", DataType::Text),
                ("asc_or_desc", DataType::Text),
                ("cardinality", DataType::Float32),
                ("pages", DataType::Int32),
                ("filter_condition", DataType::Text),
            ];
            constant(cols, rows)
        }
        MetaQuery::Keys { pk_schema, pk_table, fk_schema, fk_table, exported } => {
            // Keyed by (ordering table, constraint name, key_seq) for the query's ORDER BY.
            let mut keyed = Vec::new();
            let schemas = equals(SCHEMA, pk_schema) && equals(SCHEMA, fk_schema);
            for fk_t in tables.iter().filter(|t| schemas && equals(&t.name, fk_table)) {
                for fk in &fk_t.foreign_keys {
                    let Some(pk_t) = snapshot.table_by_id(fk.ref_table) else { continue };
                    if !equals(&pk_t.name, pk_table) {
                        continue;
                    }
                    // The unique index that backs the reference (`conindid`).
                    let backing = pk_t
                        .indexes
                        .iter()
                        .filter(|i| {
                            i.unique
                                && i.predicate.is_none()
                                && same_columns(&i.columns, &fk.ref_columns)
                        })
                        .min_by_key(|i| !i.primary);
                    let Some(backing) = backing else { continue };
                    for (n, (col, ref_col)) in fk.columns.iter().zip(&fk.ref_columns).enumerate() {
                        let row = vec![
                            Value::Null,
                            text(SCHEMA),
                            text(&pk_t.name),
                            text(&pk_t.columns[*ref_col as usize].name),
                            Value::Null,
                            text(SCHEMA),
                            text(&fk_t.name),
                            text(&fk_t.columns[*col as usize].name),
                            Value::Int32(n as i32 + 1),
                            Value::Int32(jdbc_rule(fk.on_update)),
                            Value::Int32(jdbc_rule(fk.on_delete)),
                            text(&fk.name),
                            text(&backing.name),
                            // DatabaseMetaData's importedKeyInitiallyDeferred (5),
                            // …InitiallyImmediate (6), …NotDeferrable (7).
                            Value::Int32(match fk.deferral {
                                catalog::Deferral::Deferred => 5,
                                catalog::Deferral::Immediate => 6,
                                catalog::Deferral::NotDeferrable => 7,
                            }),
                        ];
                        let by = if *exported { &fk_t.name } else { &pk_t.name };
                        keyed.push(((by.clone(), fk.name.clone(), n), row));
                    }
                }
            }
            let cols = vec![
                ("pktable_cat", DataType::Text),
                ("pktable_schem", DataType::Text),
                ("pktable_name", DataType::Text),
                ("pkcolumn_name", DataType::Text),
                ("fktable_cat", DataType::Text),
                ("fktable_schem", DataType::Text),
                ("fktable_name", DataType::Text),
                ("fkcolumn_name", DataType::Text),
                ("key_seq", DataType::Int32),
                ("update_rule", DataType::Int32),
                ("delete_rule", DataType::Int32),
                ("fk_name", DataType::Text),
                ("pk_name", DataType::Text),
                ("deferrability", DataType::Int32),
            ];
            constant(cols, sorted(keyed))
        }
        MetaQuery::MaxIndexKeys => {
            constant(vec![("setting", DataType::Text)], vec![vec![text(MAX_INDEX_KEYS_VALUE)]])
        }
        MetaQuery::Psql(d) => crate::describe::answer(snapshot, d),
    }
}

/// Whether two column lists hold the same columns (a unique index backs a foreign key whose
/// referenced columns it covers exactly, in any order).
fn same_columns(a: &[u16], b: &[u16]) -> bool {
    a.len() == b.len() && a.iter().all(|c| b.contains(c))
}

/// The rows in the order of their keys (the query's ORDER BY).
fn sorted<K: Ord>(mut keyed: Vec<(K, Vec<Value>)>) -> Vec<Vec<Value>> {
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, row)| row).collect()
}

pub(crate) fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// A constant query: `rows` under the named, typed columns.
pub(crate) fn constant(columns: Vec<(&str, DataType)>, rows: Vec<Vec<Value>>) -> Query {
    let rows = rows.into_iter().map(|r| r.into_iter().map(Expr::Literal).collect()).collect();
    rows_query(columns, rows)
}

/// A query of rows that may hold expressions (the current user, the database).
pub(crate) fn rows_query(columns: Vec<(&str, DataType)>, rows: Vec<Vec<Expr>>) -> Query {
    let width = columns.len();
    Query {
        plan: Plan::Values { rows, width },
        columns: columns
            .into_iter()
            .map(|(name, data_type)| OutColumn { name: name.to_string(), data_type, source: None })
            .collect(),
    }
}

/// JDBC's `DatabaseMetaData` rule number for a foreign key action (`importedKeyCascade` = 0,
/// `Restrict` = 1, `SetNull` = 2, `NoAction` = 3, `SetDefault` = 4), as pgjdbc derives it from
/// `confupdtype` / `confdeltype`.
fn jdbc_rule(action: FkAction) -> i32 {
    match action {
        FkAction::Cascade => 0,
        FkAction::Restrict => 1,
        FkAction::SetNull => 2,
        FkAction::NoAction => 3,
        FkAction::SetDefault => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_texts_are_written_normalized() {
        for c in [
            TABLES_PREFIX,
            TABLES_SUFFIX,
            TABLES_TYPE_TABLE,
            COLUMNS_PREFIX,
            COLUMNS_SUFFIX,
            INDEX_PREFIX,
            INDEX_SUFFIX,
            KEYS_PREFIX,
            KEYS_BY_PK,
            KEYS_BY_FK,
            MAX_INDEX_KEYS,
        ] {
            assert_eq!(normalize(c), c);
        }
    }

    #[test]
    fn literals_follow_pgjdbc_quoting() {
        let t = "x AND c.relname LIKE 'it''s' AND n.nspname LIKE E'a\\\\b' y";
        assert_eq!(literal_after(t, " AND c.relname LIKE "), Some(Some("it's".into())));
        assert_eq!(literal_after(t, " AND n.nspname LIKE "), Some(Some("a\\b".into())));
        assert_eq!(literal_after(t, " AND attname LIKE "), Some(None));
        assert_eq!(literal_after("a AND attname LIKE 'open", " AND attname LIKE "), None);
        assert_eq!(literal_after("a AND attname LIKE lower('x')", " AND attname LIKE "), None);
    }

    #[test]
    fn other_catalog_queries_are_not_recognised() {
        assert_eq!(recognize("SELECT * FROM pg_catalog.pg_class"), None);
        assert_eq!(recognize("SELECT 1"), None);
        assert_eq!(
            recognize("select  setting from pg_catalog.pg_settings where name='max_index_keys'"),
            None,
            "pgjdbc's exact text only"
        );
        assert_eq!(
            recognize("SELECT setting FROM pg_catalog.pg_settings\n WHERE name='max_index_keys';"),
            Some(MetaQuery::MaxIndexKeys)
        );
    }
}
