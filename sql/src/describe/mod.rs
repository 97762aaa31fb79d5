//! psql's describe commands (`\d`, `\dt`, `\di`, `\ds`, `\d NAME`, `\d+ NAME`, `\dn[+]`,
//! `\du[+]`, `\l[+]`, `\dv`), answered from the catalog. Of a view, `\d NAME` shows the columns; `\d+
//! NAME` also asks for its definition (`pg_get_viewdef`), which is not answered (0A000).
//!
//! psql implements its backslash commands as `pg_catalog` queries, which Aspen does not have
//! (see [`crate::metadata`] for pgjdbc's). As there, the queries are recognised by their text
//! and answered with constant rows in the columns and order PostgreSQL 15 gives, so psql prints
//! what it would print against PostgreSQL:
//!
//! - the relation lists (`\d`, `\dt`, `\di`, with or without a pattern) and the lookup that
//!   starts `\d NAME` are parsed: a fixed select list and `FROM`, then `WHERE` conditions
//!   from a known set, where psql's name patterns arrive as POSIX regular expressions;
//! - the queries `\d NAME` and `\d+ NAME` then send for each relation found (its columns,
//!   indexes, foreign keys, and policies, triggers, partitions … which are always empty here)
//!   differ only in the relation's OID, so they are kept verbatim in `queries.tsv`, with
//!   `$OID` where psql puts it.
//!
//! `\dt+` and `\di+` are not answered: their `Size` column has no honest value for rows that
//! live in memory.
//!
//! The texts are those of psql 15 talking to a server that reports version 15 (psql picks its
//! queries by the server's version). Other psql versions send other texts; like any other
//! `pg_catalog` query they are not recognised and answer `0A000`. A table's OID is
//! [`catalog::TableId::oid`], an index's [`catalog::IndexId::oid`]; the one schema is `public`,
//! owned by `pg_database_owner`, and relations by the bootstrap superuser `postgres` (Aspen
//! keeps no owners; `ALTER … OWNER TO` takes only that role).

use catalog::{DataType, FkAction, Generated, Index, Snapshot, Table};

pub(crate) mod system;

use crate::bind::display_ident;
use crate::metadata::{constant, literal, rows_query as query, text};
use crate::plan::{Expr, Func, Query};
use crate::types::Value;

/// A recognised psql describe query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Describe {
    /// `\d`, `\dt`, `\di` (and combinations such as `\dti`), with an optional pattern.
    List {
        /// Tables are listed (`relkind` `r` asked for).
        tables: bool,
        /// Indexes are listed (`relkind` `i`).
        indexes: bool,
        /// Sequences are listed (`relkind` `S`).
        sequences: bool,
        /// Views are listed (`relkind` `v`).
        views: bool,
        /// The `Table` column of `\di`.
        table_column: bool,
        /// The relation name as a regular expression.
        name: Option<String>,
        /// The schema name as a regular expression.
        schema: Option<String>,
    },
    /// The first query of `\d NAME`: OIDs and names of the matching relations.
    Lookup {
        /// The relation name as a regular expression.
        name: Option<String>,
        /// The schema name as a regular expression.
        schema: Option<String>,
    },
    /// One of the per-relation queries of `\d NAME`.
    Detail {
        /// Which query.
        query: Detail,
        /// The relation's OID.
        oid: u32,
    },
    /// `\dn` (`verbose`: `\dn+`, with access privileges, which Aspen does not keep, and
    /// the description).
    Schemas {
        /// `+`.
        verbose: bool,
    },
    /// `\l` (`verbose`: `\l+`, with size — no figure for rows in memory —, tablespace and
    /// description).
    Databases {
        /// `+`.
        verbose: bool,
    },
    /// `\du` (`verbose`: `\du+`, with each role's description): the roles of the catalog.
    Roles {
        /// `+`.
        verbose: bool,
    },
}

/// The per-relation queries of `\d NAME`, named as in `queries.tsv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// `relkind`, `relhasindex`, `relhastriggers`, access method, …
    Info,
    /// A table's columns: type, default, `NOT NULL`; with `verbose` (`\d+`) also storage,
    /// compression, statistics target and description.
    Columns {
        /// `\d+`.
        verbose: bool,
    },
    /// A table's indexes with their constraints.
    Indexes,
    /// A table's CHECK constraints.
    Checks,
    /// A table's foreign keys.
    ForeignKeys,
    /// The foreign keys that reference a table.
    ReferencedBy,
    /// An index's columns; with `verbose` (`\d+`) also storage and statistics target.
    IndexColumns {
        /// `\d+`.
        verbose: bool,
    },
    /// An index's kind and table.
    IndexInfo,
    /// A sequence's type, range and step.
    Sequence,
    /// The column that owns a sequence.
    SequenceOwner,
    /// A query whose answer is always empty here (policies, statistics, publications,
    /// triggers, inheritance, partitions), with its number of columns.
    Empty(usize),
}

/// The verbatim queries: (name, normalized text with `$OID`).
fn templates() -> impl Iterator<Item = (&'static str, &'static str)> {
    include_str!("queries.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split_once('\t'))
}

/// What a template's name means.
fn detail_named(name: &str) -> Option<Describe> {
    let query = match name {
        "info" | "info_verbose" => Detail::Info,
        "columns" => Detail::Columns { verbose: false },
        "columns_verbose" => Detail::Columns { verbose: true },
        "indexes" => Detail::Indexes,
        "checks" => Detail::Checks,
        "foreign_keys" => Detail::ForeignKeys,
        "referenced_by" => Detail::ReferencedBy,
        "index_columns" => Detail::IndexColumns { verbose: false },
        "index_columns_verbose" => Detail::IndexColumns { verbose: true },
        "index_info" => Detail::IndexInfo,
        "sequence" => Detail::Sequence,
        "sequence_owner" => Detail::SequenceOwner,
        "policies" => Detail::Empty(6),
        "statistics" => Detail::Empty(9),
        "publications" => Detail::Empty(3),
        "triggers" => Detail::Empty(5),
        "inherits" => Detail::Empty(1),
        "partitions" => Detail::Empty(4),
        "schemas" => return Some(Describe::Schemas { verbose: false }),
        "schemas_verbose" => return Some(Describe::Schemas { verbose: true }),
        "databases" => return Some(Describe::Databases { verbose: false }),
        "databases_verbose" => return Some(Describe::Databases { verbose: true }),
        "roles" => return Some(Describe::Roles { verbose: false }),
        "roles_verbose" => return Some(Describe::Roles { verbose: true }),
        _ => return None,
    };
    Some(Describe::Detail { query, oid: 0 })
}

const LIST_SELECT: &str = "SELECT n.nspname as \"Schema\", c.relname as \"Name\", CASE \
    c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' \
    WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN \
    'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \
    \"Type\", pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\"";
const LIST_TABLE_COLUMN: &str = ", c2.relname as \"Table\"";
const LIST_FROM: &str = " FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON \
    n.oid = c.relnamespace";
/// In the relation lists unless only sequences are asked for.
const LIST_AM_JOIN: &str = " LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam";
const LIST_INDEX_JOIN: &str = " LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid LEFT \
    JOIN pg_catalog.pg_class c2 ON i.indrelid = c2.oid";
const LIST_KINDS: &str = " WHERE c.relkind IN (";
const LIST_ORDER: &str = " ORDER BY 1,2";
const LOOKUP_SELECT: &str = "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c \
    LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE";
const LOOKUP_ORDER: &str = " ORDER BY 2, 3";
/// The conditions psql adds to hide system schemas (there are none to hide here).
const SYSTEM_SCHEMAS: [&str; 3] = [
    " AND n.nspname <> 'pg_catalog'",
    " AND n.nspname !~ '^pg_toast'",
    " AND n.nspname <> 'information_schema'",
];
const VISIBLE: &str = " AND pg_catalog.pg_table_is_visible(c.oid)";
const NAME_MATCH: &str = " AND c.relname OPERATOR(pg_catalog.~) ";
const SCHEMA_MATCH: &str = " AND n.nspname OPERATOR(pg_catalog.~) ";
const COLLATE: &str = " COLLATE pg_catalog.default";

/// Recognises a psql describe query in `text` (whitespace normalized, no trailing `;`).
pub(crate) fn recognize(text: &str) -> Option<Describe> {
    if let Some(rest) = text.strip_prefix(LIST_SELECT) {
        let (table_column, rest) = match rest.strip_prefix(LIST_TABLE_COLUMN) {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let rest = rest.strip_prefix(LIST_FROM)?;
        let rest = rest.strip_prefix(LIST_AM_JOIN).unwrap_or(rest);
        let rest = if table_column { rest.strip_prefix(LIST_INDEX_JOIN)? } else { rest };
        let (kinds, rest) = rest.strip_prefix(LIST_KINDS)?.split_once(')')?;
        let kinds: Vec<&str> = kinds.split(',').collect();
        let (name, schema) = conditions(rest.strip_suffix(LIST_ORDER)?)?;
        return Some(Describe::List {
            tables: kinds.contains(&"'r'"),
            indexes: kinds.contains(&"'i'"),
            sequences: kinds.contains(&"'S'"),
            views: kinds.contains(&"'v'"),
            table_column,
            name,
            schema,
        });
    }
    if let Some(rest) = text.strip_prefix(LOOKUP_SELECT) {
        let conds = format!(" AND{}", rest.strip_suffix(LOOKUP_ORDER)?);
        let (name, schema) = conditions(&conds)?;
        return Some(Describe::Lookup { name, schema });
    }
    // The verbatim ones: every OID literal must be the same one.
    let mut oid = None;
    let mut templated = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\'') {
        templated.push_str(&rest[..at]);
        let (value, after) = literal(&rest[at..])?;
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            let n: u32 = value.parse().ok()?;
            if oid.is_some_and(|o| o != n) {
                return None;
            }
            oid = Some(n);
            templated.push_str("'$OID'");
        } else {
            templated.push_str(&rest[at..rest.len() - after.len()]);
        }
        rest = after;
    }
    templated.push_str(rest);
    let (name, _) = templates().find(|(_, t)| *t == templated)?;
    match detail_named(name)? {
        Describe::Detail { query, .. } => Some(Describe::Detail { query, oid: oid? }),
        other => Some(other),
    }
}

/// Parses psql's `WHERE` conditions after the first one (each starting ` AND `): the
/// relation and schema name patterns, if any. `None` for any other condition, or a pattern
/// that is not a valid regular expression.
fn conditions(mut rest: &str) -> Option<(Option<String>, Option<String>)> {
    let (mut name, mut schema) = (None, None);
    while !rest.is_empty() {
        if let Some(r) = SYSTEM_SCHEMAS.iter().find_map(|c| rest.strip_prefix(c)) {
            rest = r;
        } else if let Some(r) = rest.strip_prefix(VISIBLE) {
            rest = r;
        } else if let Some(r) = rest.strip_prefix(NAME_MATCH) {
            let (pattern, r) = literal(r)?;
            regex::Regex::new(&pattern).ok()?;
            name = Some(pattern);
            rest = r.strip_prefix(COLLATE)?;
        } else if let Some(r) = rest.strip_prefix(SCHEMA_MATCH) {
            let (pattern, r) = literal(r)?;
            regex::Regex::new(&pattern).ok()?;
            schema = Some(pattern);
            rest = r.strip_prefix(COLLATE)?;
        } else {
            return None;
        }
    }
    Some((name, schema))
}

/// The only schema.
const SCHEMA: &str = "public";

/// A name filter: an optional regular expression (checked when recognised), compiled once.
struct Pattern(Option<regex::Regex>);

impl Pattern {
    fn new(pattern: &Option<String>) -> Pattern {
        Pattern(pattern.as_deref().and_then(|p| regex::Regex::new(p).ok()))
    }

    fn matches(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|re| re.is_match(name))
    }
}

/// A relation of the catalog: a table, or one of its indexes.
enum Relation<'a> {
    Table(&'a Table),
    /// A view: listed, and described by its columns (`\d+ NAME` would also ask for its
    /// definition, which is not answered).
    View(&'a Table),
    Index(&'a Table, &'a Index),
    /// The sequence of a column.
    Sequence(&'a Table, &'a catalog::Column, &'a catalog::Sequence),
}

impl Relation<'_> {
    fn oid(&self) -> u32 {
        match self {
            Relation::Table(t) | Relation::View(t) => t.id.oid(),
            Relation::Index(_, i) => i.id.oid(),
            Relation::Sequence(t, c, _) => catalog::sequence_oid(t.id, c.position),
        }
    }

    fn name(&self) -> &str {
        match self {
            Relation::Table(t) | Relation::View(t) => &t.name,
            Relation::Index(_, i) => &i.name,
            Relation::Sequence(_, _, s) => &s.name,
        }
    }
}

/// Every relation, tables and their indexes.
/// The OIDs of the relations `pg_class` lists (all of them in `public`, on the search path).
pub(crate) fn relation_oids(snapshot: &Snapshot) -> Vec<u32> {
    relations(snapshot).iter().map(Relation::oid).collect()
}

fn relations(snapshot: &Snapshot) -> Vec<Relation<'_>> {
    let mut out = Vec::new();
    for t in snapshot.tables() {
        if t.is_view() {
            out.push(Relation::View(t.as_ref()));
            continue;
        }
        if let (true, [c]) = (t.is_sequence(), t.columns.as_slice()) {
            out.extend(c.sequence.as_ref().map(|s| Relation::Sequence(t.as_ref(), c, s)));
            continue;
        }
        out.push(Relation::Table(t.as_ref()));
        out.extend(t.indexes.iter().map(|i| Relation::Index(t.as_ref(), i)));
        for c in &t.columns {
            out.extend(c.sequence.as_ref().map(|s| Relation::Sequence(t.as_ref(), c, s)));
        }
    }
    out
}

/// The answer to `q` as a constant query over `snapshot`.
pub(crate) fn answer(snapshot: &Snapshot, q: &Describe) -> Query {
    match q {
        Describe::List { tables, indexes, sequences, views, table_column, name, schema } => {
            let mut rows: Vec<(String, Vec<Expr>)> = Vec::new();
            let name = Pattern::new(name);
            if Pattern::new(schema).matches(SCHEMA) {
                for r in relations(snapshot) {
                    let (kind, table) = match &r {
                        Relation::Table(_) if *tables => ("table", None),
                        Relation::View(_) if *views => ("view", None),
                        Relation::Index(t, _) if *indexes => ("index", Some(t.name.as_str())),
                        Relation::Sequence(..) if *sequences => ("sequence", None),
                        _ => continue,
                    };
                    if !name.matches(r.name()) {
                        continue;
                    }
                    let mut row = vec![lit(text(SCHEMA)), lit(text(r.name())), lit(text(kind))];
                    row.push(owner());
                    if *table_column {
                        row.push(lit(table.map_or(Value::Null, text)));
                    }
                    rows.push((r.name().to_string(), row));
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            let mut cols = vec!["Schema", "Name", "Type", "Owner"];
            if *table_column {
                cols.push("Table");
            }
            query(cols.into_iter().map(|c| (c, DataType::Text)).collect(), strip(rows))
        }
        Describe::Lookup { name, schema } => {
            let mut rows: Vec<(String, Vec<Value>)> = Vec::new();
            let name = Pattern::new(name);
            if Pattern::new(schema).matches(SCHEMA) {
                for r in relations(snapshot).iter().filter(|r| name.matches(r.name())) {
                    let row = vec![text(&r.oid().to_string()), text(SCHEMA), text(r.name())];
                    rows.push((r.name().to_string(), row));
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            let cols = vec![("oid", DataType::Text), ("nspname", DataType::Text)];
            constant([cols, vec![("relname", DataType::Text)]].concat(), strip(rows))
        }
        Describe::Detail { query: which, oid } => {
            let relation = relations(snapshot).into_iter().find(|r| r.oid() == *oid);
            detail(snapshot, *which, relation)
        }
        Describe::Schemas { verbose: false } => constant(
            vec![("Name", DataType::Text), ("Owner", DataType::Text)],
            vec![vec![text(SCHEMA), text("pg_database_owner")]],
        ),
        Describe::Schemas { verbose: true } => {
            let cols = ["Name", "Owner", "Access privileges", "Description"];
            constant(
                cols.iter().map(|c| (*c, DataType::Text)).collect(),
                vec![vec![
                    text(SCHEMA),
                    text("pg_database_owner"),
                    Value::Null,
                    text("standard public schema"),
                ]],
            )
        }
        Describe::Roles { verbose } => {
            let b = |v: bool| lit(Value::Bool(v));
            // psql's `\du` hides `pg_` roles; Aspen has none.
            let rows = snapshot
                .roles()
                .iter()
                .map(|r| {
                    let mut row = vec![lit(text(&r.name)), b(r.superuser), b(r.inherit)];
                    row.extend([b(r.create_role), b(r.create_db), b(r.login)]);
                    row.extend([lit(Value::Int32(-1)), lit(Value::Null), lit(text("{}"))]);
                    if *verbose {
                        row.push(lit(Value::Null));
                    }
                    row.extend([b(r.replication), b(r.bypass_rls)]);
                    row
                })
                .collect();
            let t = DataType::Text;
            let cols = vec![
                ("rolname", t),
                ("rolsuper", DataType::Bool),
                ("rolinherit", DataType::Bool),
                ("rolcreaterole", DataType::Bool),
                ("rolcreatedb", DataType::Bool),
                ("rolcanlogin", DataType::Bool),
                ("rolconnlimit", DataType::Int32),
                ("rolvaliduntil", t),
                ("memberof", t),
                ("rolreplication", DataType::Bool),
                ("rolbypassrls", DataType::Bool),
            ];
            let cols = match verbose {
                true => [&cols[..9], &[("description", t)], &cols[9..]].concat(),
                false => cols,
            };
            query(cols, rows)
        }
        Describe::Databases { verbose } => {
            let mut row = vec![
                Expr::Func(Func::CurrentDatabase, vec![]),
                owner(),
                lit(text("UTF8")),
                lit(text("C")),
                lit(text("C")),
                lit(Value::Null),
                lit(text("libc")),
                lit(Value::Null),
            ];
            let mut cols = vec![
                "Name",
                "Owner",
                "Encoding",
                "Collate",
                "Ctype",
                "ICU Locale",
                "Locale Provider",
                "Access privileges",
            ];
            if *verbose {
                row.extend([lit(Value::Null), lit(text("pg_default")), lit(Value::Null)]);
                cols.extend(["Size", "Tablespace", "Description"]);
            }
            query(cols.iter().map(|c| (*c, DataType::Text)).collect(), vec![row])
        }
    }
}

/// One of `\d NAME`'s per-relation queries about `relation` (`None`: no such OID, no rows).
fn detail(snapshot: &Snapshot, which: Detail, relation: Option<Relation<'_>>) -> Query {
    let t = DataType::Text;
    let b = DataType::Bool;
    let (cols, rows): (Vec<(&str, DataType)>, Vec<Vec<Value>>) = match which {
        Detail::Info => {
            let cols = vec![
                ("relchecks", DataType::Int16),
                ("relkind", t),
                ("relhasindex", b),
                ("relhasrules", b),
                ("relhastriggers", b),
                ("relrowsecurity", b),
                ("relforcerowsecurity", b),
                ("relhasoids", b),
                ("relispartition", b),
                ("?column?", t),
                ("reltablespace", t),
                ("reloftype", t),
                ("relpersistence", t),
                ("relreplident", t),
                ("amname", t),
            ];
            let rows = relation.iter().map(|r| {
                let (kind, has_index, triggers, replident, am) = match r {
                    // Foreign keys are triggers in PostgreSQL, on both tables.
                    Relation::Table(t) => {
                        let referenced = snapshot
                            .tables()
                            .any(|o| o.foreign_keys.iter().any(|fk| fk.ref_table == t.id));
                        let triggers = referenced || !t.foreign_keys.is_empty();
                        ("r", !t.indexes.is_empty(), triggers, "d", "heap")
                    }
                    Relation::Index(..) => ("i", false, false, "n", "btree"),
                    Relation::Sequence(..) => ("S", false, false, "n", ""),
                    Relation::View(_) => ("v", false, false, "n", ""),
                };
                let checks = match r {
                    Relation::Table(t) => t.checks.len() as i16,
                    _ => 0,
                };
                let mut row = vec![Value::Int16(checks), text(kind), Value::Bool(has_index)];
                row.extend([Value::Bool(false), Value::Bool(triggers)]);
                row.extend([false; 4].map(Value::Bool));
                row.extend([text(""), text("0"), text(""), text("p"), text(replident)]);
                row.push(if am.is_empty() { Value::Null } else { text(am) });
                row
            });
            (cols, rows.collect())
        }
        Detail::Columns { verbose } => {
            let mut cols = vec![
                ("attname", t),
                ("format_type", t),
                ("pg_get_expr", t),
                ("attnotnull", b),
                ("attcollation", t),
                ("attidentity", t),
                ("attgenerated", t),
            ];
            if verbose {
                cols.extend([
                    ("attstorage", t),
                    ("attcompression", t),
                    ("attstattarget", t),
                    ("col_description", t),
                ]);
            }
            let rows = match relation {
                Some(Relation::Table(table) | Relation::View(table)) => table
                    .visible_columns()
                    .map(|c| {
                        let default =
                            c.default.as_ref().and_then(|d| deparse_default(&d.sql, c.data_type));
                        let mut row = vec![
                            text(&c.name),
                            text(&c.data_type.sql_name()),
                            default.map_or(Value::Null, |d| text(&d)),
                            Value::Bool(c.not_null),
                            Value::Null,
                            text(match c.sequence.as_ref().map(|s| s.generated) {
                                Some(Generated::Always) => "a",
                                Some(Generated::ByDefault) => "d",
                                _ => "",
                            }),
                            text(""),
                        ];
                        if verbose {
                            row.extend([text(storage(c.data_type)), text(""), Value::Null]);
                            row.push(
                                table
                                    .column_comments
                                    .get(&c.position)
                                    .map_or(Value::Null, |d| text(d)),
                            );
                        }
                        row
                    })
                    .collect(),
                _ => vec![],
            };
            (cols, rows)
        }
        Detail::Indexes => {
            let cols = vec![
                ("relname", t),
                ("indisprimary", b),
                ("indisunique", b),
                ("indisclustered", b),
                ("indisvalid", b),
                ("pg_get_indexdef", t),
                ("pg_get_constraintdef", t),
                ("contype", t),
                ("condeferrable", b),
                ("condeferred", b),
                ("indisreplident", b),
                ("reltablespace", t),
            ];
            let mut rows = Vec::new();
            if let Some(Relation::Table(table)) = relation {
                for i in &table.indexes {
                    let (condef, contype, deferrable) = match constraint_def(table, i) {
                        Some((def, kind)) => (text(&def), text(kind), Value::Bool(false)),
                        None => (Value::Null, Value::Null, Value::Null),
                    };
                    let row = vec![
                        text(&i.name),
                        Value::Bool(i.primary),
                        Value::Bool(i.unique),
                        Value::Bool(false),
                        Value::Bool(true),
                        text(&index_def_as(table, i, true)),
                        condef,
                        contype,
                        deferrable.clone(),
                        deferrable,
                        Value::Bool(false),
                        text("0"),
                    ];
                    rows.push(((!i.primary, i.name.clone()), row));
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            (cols, strip(rows))
        }
        Detail::Checks => {
            let cols = vec![("conname", t), ("pg_get_constraintdef", t)];
            let mut rows = Vec::new();
            if let Some(Relation::Table(table)) = relation {
                for c in &table.checks {
                    rows.push((
                        c.name.clone(),
                        vec![text(&c.name), text(&format!("CHECK ({})", c.sql))],
                    ));
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            (cols, strip(rows))
        }
        Detail::ForeignKeys => {
            let cols = vec![("sametable", b), ("conname", t), ("condef", t), ("ontable", t)];
            let mut rows = Vec::new();
            if let Some(Relation::Table(table)) = relation {
                for fk in &table.foreign_keys {
                    let def = foreign_key_def(snapshot, table, fk);
                    let row = vec![
                        Value::Bool(true),
                        text(&fk.name),
                        text(&def),
                        text(&display_ident(&table.name)),
                    ];
                    rows.push((fk.name.clone(), row));
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            (cols, strip(rows))
        }
        Detail::ReferencedBy => {
            let cols = vec![("conname", t), ("ontable", t), ("condef", t)];
            let mut rows = Vec::new();
            if let Some(Relation::Table(table)) = relation {
                for other in snapshot.tables() {
                    for fk in other.foreign_keys.iter().filter(|fk| fk.ref_table == table.id) {
                        let def = foreign_key_def(snapshot, other, fk);
                        let row =
                            vec![text(&fk.name), text(&display_ident(&other.name)), text(&def)];
                        rows.push((fk.name.clone(), row));
                    }
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            (cols, strip(rows))
        }
        Detail::IndexColumns { verbose } => {
            let mut cols = vec![("attname", t), ("format_type", t), ("is_key", t), ("indexdef", t)];
            if verbose {
                cols.extend([("attstorage", t), ("attstattarget", t)]);
            }
            let rows = match relation {
                Some(Relation::Index(table, index)) => index
                    .columns
                    .iter()
                    .map(|p| {
                        let c = &table.columns[usize::from(*p)];
                        let sql_name = c.data_type.sql_name();
                        let mut row = vec![
                            text(&c.name),
                            text(&sql_name),
                            text("yes"),
                            text(&display_ident(&c.name)),
                        ];
                        if verbose {
                            row.extend([text(storage(c.data_type)), Value::Null]);
                        }
                        row
                    })
                    .collect(),
                _ => vec![],
            };
            (cols, rows)
        }
        Detail::IndexInfo => {
            let cols = vec![
                ("indisunique", b),
                ("indisprimary", b),
                ("indisclustered", b),
                ("indisvalid", b),
                ("condeferrable", b),
                ("condeferred", b),
                ("indisreplident", b),
                ("indnullsnotdistinct", b),
                ("amname", t),
                ("relname", t),
                ("pg_get_expr", t),
            ];
            let rows = match relation {
                Some(Relation::Index(table, i)) => {
                    let mut row = vec![Value::Bool(i.unique), Value::Bool(i.primary)];
                    row.extend([false, true, false, false, false, false].map(Value::Bool));
                    row.extend([text("btree"), text(&table.name), Value::Null]);
                    vec![row]
                }
                _ => vec![],
            };
            (cols, rows)
        }
        Detail::Sequence => {
            let i = DataType::Int64;
            let cols = vec![
                ("Type", t),
                ("Start", i),
                ("Minimum", i),
                ("Maximum", i),
                ("Increment", i),
                ("Cycles?", t),
                ("Cache", i),
            ];
            let rows = match relation {
                Some(Relation::Sequence(_, c, s)) => {
                    let mut row = vec![text(&c.data_type.sql_name())];
                    row.extend([s.start, s.min, s.max, s.increment].map(Value::Int64));
                    row.extend([text("no"), Value::Int64(1)]);
                    vec![row]
                }
                _ => vec![],
            };
            (cols, rows)
        }
        Detail::SequenceOwner => {
            let cols = vec![("?column?", t), ("deptype", t)];
            let rows = match relation {
                Some(Relation::Sequence(table, c, s)) if s.generated != Generated::Standalone => {
                    let owner = format!(
                        "{SCHEMA}.{}.{}",
                        display_ident(&table.name),
                        display_ident(&c.name)
                    );
                    let deptype = if s.generated == Generated::Serial { "a" } else { "i" };
                    vec![vec![text(&owner), text(deptype)]]
                }
                _ => vec![],
            };
            (cols, rows)
        }
        Detail::Empty(n) => {
            let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
            (names[..n.min(names.len())].iter().map(|c| (*c, t)).collect(), vec![])
        }
    };
    constant(cols, rows)
}

/// `attstorage` of a column of type `data_type` (PostgreSQL's `typstorage`): `p` plain for
/// fixed-length types, `m` main for numeric, `x` extended for the other variable-length ones.
fn storage(data_type: DataType) -> &'static str {
    match data_type {
        DataType::Numeric(_) => "m",
        DataType::Varchar(_) | DataType::Char(_) | DataType::Text | DataType::Bytea => "x",
        _ => "p",
    }
}

/// `pg_get_indexdef`: `CREATE [UNIQUE] INDEX name ON public.table USING btree (cols)`.
/// A constraint as `pg_constraint` lists it.
pub(crate) struct Constraint<'a> {
    pub(crate) oid: u32,
    pub(crate) table: &'a Table,
    pub(crate) name: &'a str,
    pub(crate) kind: ConstraintKind<'a>,
}

/// What a [`Constraint`] is.
pub(crate) enum ConstraintKind<'a> {
    /// A primary key or unique constraint, and its index.
    Key(&'a Index),
    /// A foreign key.
    Foreign(&'a catalog::ForeignKey),
    /// A CHECK constraint.
    Check(&'a catalog::Check),
}

impl Constraint<'_> {
    /// `pg_get_constraintdef`; `pretty` drops a CHECK's outer parentheses, as PostgreSQL's
    /// pretty form does.
    pub(crate) fn def(&self, snapshot: &Snapshot, pretty: bool) -> String {
        match &self.kind {
            ConstraintKind::Key(i) => {
                constraint_def(self.table, i).map(|(d, _)| d).unwrap_or_default()
            }
            ConstraintKind::Foreign(fk) => foreign_key_def(snapshot, self.table, fk),
            ConstraintKind::Check(c) if pretty => format!("CHECK ({})", c.sql),
            ConstraintKind::Check(c) => format!("CHECK (({}))", c.sql),
        }
    }
}

/// The constraints of the public schema's tables — primary keys, unique constraints, foreign
/// keys and checks, each table's in that order — with their OIDs ([`catalog::constraint_oid`]).
pub(crate) fn constraints(snapshot: &Snapshot) -> Vec<Constraint<'_>> {
    let mut out = Vec::new();
    for table in snapshot.tables().filter(|t| !t.is_view()) {
        let table = table.as_ref();
        let keys = table
            .indexes
            .iter()
            .filter(|i| i.constraint)
            .map(|i| (&i.name, ConstraintKind::Key(i)));
        let fks = table.foreign_keys.iter().map(|f| (&f.name, ConstraintKind::Foreign(f)));
        let checks = table.checks.iter().map(|c| (&c.name, ConstraintKind::Check(c)));
        for (ordinal, (name, kind)) in keys.chain(fks).chain(checks).enumerate() {
            let oid = catalog::constraint_oid(table.id, ordinal as u16);
            out.push(Constraint { oid, table, name, kind });
        }
    }
    out
}

/// Each index's OID, its `pg_get_indexdef` (pretty or not) and its key columns as
/// `pg_get_indexdef(oid, n, …)` prints the nth.
pub(crate) fn index_definitions(
    snapshot: &Snapshot,
    pretty: bool,
) -> Vec<(u32, String, Vec<String>)> {
    let mut out = Vec::new();
    for t in snapshot.tables().filter(|t| !t.is_view()) {
        for i in &t.indexes {
            let columns =
                i.columns.iter().map(|c| display_ident(&t.columns[usize::from(*c)].name)).collect();
            out.push((i.id.oid(), index_def_as(t, i, pretty), columns));
        }
    }
    out
}

fn index_def(table: &Table, index: &Index) -> String {
    index_def_as(table, index, false)
}

/// [`index_def`]; `pretty` as `pg_get_indexdef(…, 0, true)` (psql's `\d`): the table without
/// its schema (`public` is on the search path) and a partial index's condition without the
/// parentheses around it.
fn index_def_as(table: &Table, index: &Index, pretty: bool) -> String {
    let condition = match (&index.predicate, pretty) {
        (None, _) => String::new(),
        (Some(p), true) => format!(" WHERE {p}"),
        (Some(p), false) => format!(" WHERE ({p})"),
    };
    let schema = if pretty { String::new() } else { format!("{SCHEMA}.") };
    format!(
        "CREATE {}INDEX {} ON {schema}{} USING btree ({}){condition}",
        if index.unique { "UNIQUE " } else { "" },
        display_ident(&index.name),
        display_ident(&table.name),
        column_list(table, &index.columns),
    )
}

/// `pg_get_constraintdef` of the constraint an index backs, and its `contype`.
fn constraint_def(table: &Table, index: &Index) -> Option<(String, &'static str)> {
    let columns = column_list(table, &index.columns);
    match (index.primary, index.constraint) {
        (true, _) => Some((format!("PRIMARY KEY ({columns})"), "p")),
        (false, true) => Some((format!("UNIQUE ({columns})"), "u")),
        (false, false) => None,
    }
}

/// `pg_get_constraintdef` of a foreign key of `table`.
fn foreign_key_def(snapshot: &Snapshot, table: &Table, fk: &catalog::ForeignKey) -> String {
    let (target, target_columns) = match snapshot.table_by_id(fk.ref_table) {
        Some(t) => (display_ident(&t.name), column_list(t, &fk.ref_columns)),
        None => ("?".into(), String::new()),
    };
    let action = |on: &str, a: FkAction| match a {
        FkAction::NoAction => String::new(),
        a => format!(" ON {on} {}", a.sql()),
    };
    format!(
        "FOREIGN KEY ({}) REFERENCES {target}({target_columns}){}{}{}",
        column_list(table, &fk.columns),
        action("UPDATE", fk.on_update),
        action("DELETE", fk.on_delete),
        fk.deferral.sql(),
    )
}

/// The named columns, as PostgreSQL lists them: `a, b`.
fn column_list(table: &Table, positions: &[u16]) -> String {
    let names = positions.iter().filter_map(|p| table.columns.get(usize::from(*p)));
    names.map(|c| display_ident(&c.name)).collect::<Vec<_>>().join(", ")
}

/// A column default as `pg_get_expr` prints it, for the forms people write; anything else is
/// shown as it was written. `None` for `DEFAULT NULL`, which PostgreSQL does not keep.
///
/// - A string literal became a constant of the column's type when the table was created: it
///   prints in the type's output form, with a cast unless the bare form reads back as the
///   same type (non-negative `integer` and `numeric`, and `boolean`).
/// - A number keeps its own type (`integer`, `bigint` or `numeric` by its form) and prints the
///   same way.
/// - The SQL-standard functions print in upper case, `now()` as is.
fn deparse_default(sql: &str, data_type: DataType) -> Option<String> {
    let trimmed = sql.trim();
    let upper = trimmed.to_ascii_uppercase();
    match upper.as_str() {
        "NULL" => return None,
        "TRUE" | "FALSE" => return Some(trimmed.to_ascii_lowercase()),
        "CURRENT_TIMESTAMP" | "CURRENT_DATE" | "LOCALTIMESTAMP" => return Some(upper),
        "NOW()" => return Some("now()".into()),
        _ => {}
    }
    if let Some((value, "")) = literal(trimmed) {
        let Ok(constant) = crate::types::parse_text(&value, &data_type) else {
            return Some(trimmed.to_string());
        };
        return Some(constant_text(&crate::types::format_text(&constant, &data_type), data_type));
    }
    let digits = trimmed.strip_prefix('-').map_or(trimmed, str::trim_start);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let number =
            if digits.len() < trimmed.len() { format!("-{digits}") } else { digits.into() };
        let literal_type = if digits.contains('.') {
            DataType::Numeric(None)
        } else if number.parse::<i32>().is_ok() {
            DataType::Int32
        } else if number.parse::<i64>().is_ok() {
            DataType::Int64
        } else {
            DataType::Numeric(None)
        };
        return Some(constant_text(&number, literal_type));
    }
    Some(trimmed.to_string())
}

/// A constant of `data_type` whose output form is `value`, as `get_const_expr` prints it.
fn constant_text(value: &str, data_type: DataType) -> String {
    match (data_type, value) {
        (DataType::Bool, "t") => return "true".into(),
        (DataType::Bool, "f") => return "false".into(),
        _ => {}
    }
    let bare = match data_type {
        DataType::Int32 | DataType::Numeric(_) => !value.starts_with('-') && value != "NaN",
        _ => false,
    };
    if bare {
        return value.to_string();
    }
    let cast = match data_type {
        DataType::Varchar(_) => "character varying".to_string(),
        DataType::Char(_) => "bpchar".to_string(),
        other => other.base_name(),
    };
    format!("'{}'::{cast}", value.replace('\'', "''"))
}

fn lit(v: Value) -> Expr {
    Expr::Literal(v)
}

/// The owner of every object: Aspen keeps no owners, so everything belongs to the bootstrap
/// superuser (`ALTER … OWNER TO` takes only it).
fn owner() -> Expr {
    lit(text(catalog::roles::BOOTSTRAP_ROLE))
}

/// The rows of `(key, row)` pairs, keys dropped.
fn strip<K, R>(rows: Vec<(K, R)>) -> Vec<R> {
    rows.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_normalized_and_named() {
        let mut n = 0;
        for (name, text) in templates() {
            assert_eq!(text.split_whitespace().collect::<Vec<_>>().join(" "), text, "{name}");
            assert!(detail_named(name).is_some(), "unknown template {name}");
            n += 1;
        }
        assert_eq!(n, 25);
    }

    #[test]
    fn detail_queries_carry_one_oid() {
        let (_, info) = templates().find(|(n, _)| *n == "info").unwrap();
        let q = info.replace("$OID", "16386");
        assert_eq!(recognize(&q), Some(Describe::Detail { query: Detail::Info, oid: 16386 }));
        let (_, refs) = templates().find(|(n, _)| *n == "referenced_by").unwrap();
        let two = refs.replacen("$OID", "16386", 1).replacen("$OID", "16388", 1);
        assert_eq!(recognize(&two), None, "two different OIDs");
        assert_eq!(recognize(&info.replace("$OID", "x")), None);
    }

    #[test]
    fn list_conditions_parse() {
        let q = format!(
            "{LIST_SELECT}{LIST_FROM} WHERE c.relkind IN ('r','p','t','s','') AND c.relname \
             OPERATOR(pg_catalog.~) '^(u.*)$' COLLATE pg_catalog.default AND n.nspname \
             OPERATOR(pg_catalog.~) '^(public)$' COLLATE pg_catalog.default{LIST_ORDER}"
        );
        let want = Describe::List {
            tables: true,
            indexes: false,
            sequences: false,
            views: false,
            table_column: false,
            name: Some("^(u.*)$".into()),
            schema: Some("^(public)$".into()),
        };
        assert_eq!(recognize(&q), Some(want));
        let other = q.replace(" AND n.nspname", " OR n.nspname");
        assert_eq!(recognize(&other), None);
        let bad = q.replace("^(u.*)$", "^(u[)$");
        assert_eq!(recognize(&bad), None, "not a regular expression");
    }

    #[test]
    fn defaults_print_as_pg_get_expr_does() {
        // What PostgreSQL 15's `\d` printed for these (2026-11-26).
        let cases = [
            ("7", DataType::Int64, "7"),
            ("'7'", DataType::Int64, "'7'::bigint"),
            ("'1.5'", DataType::Numeric(None), "1.5"),
            ("'x'", DataType::Text, "'x'::text"),
            ("'it''s'", DataType::Varchar(Some(10)), "'it''s'::character varying"),
            ("'x'", DataType::Char(3), "'x  '::bpchar"),
            (
                "'2020-01-01 00:00'",
                DataType::Timestamp,
                "'2020-01-01 00:00:00'::timestamp without time zone",
            ),
            ("'t'", DataType::Bool, "true"),
            ("current_timestamp", DataType::Timestamp, "CURRENT_TIMESTAMP"),
            ("-7", DataType::Int32, "'-7'::integer"),
            ("'-7'", DataType::Int32, "'-7'::integer"),
            ("-1.5", DataType::Float64, "'-1.5'::numeric"),
            ("2147483648", DataType::Int32, "'2147483648'::bigint"),
            ("0.0", DataType::Numeric(Some((12, 2))), "0.0"),
            ("1 + 2", DataType::Int32, "1 + 2"),
        ];
        for (sql, ty, want) in cases {
            assert_eq!(deparse_default(sql, ty).as_deref(), Some(want), "{sql}");
        }
        assert_eq!(deparse_default("NULL", DataType::Text), None);
    }

    #[test]
    fn identifiers_are_quoted_when_needed() {
        assert_eq!(display_ident("abc_1"), "abc_1");
        assert_eq!(display_ident("Abc"), "\"Abc\"");
        assert_eq!(display_ident("order"), "\"order\"");
        assert_eq!(display_ident("1a"), "\"1a\"");
    }
}
