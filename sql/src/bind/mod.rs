//! The binder: sqlparser AST → our typed IR (`plan::Statement` or a utility `Command`).
//!
//! Names are resolved against one immutable catalog snapshot; identifiers fold to lower case
//! unless quoted; every expression gets a type; parameters get their types from the client
//! (declared OIDs) or by inference from their context (`col = $1` gives `$1` the column's type).
//! Only this module and `parse` may name sqlparser types.

mod array;
mod ddl;
pub(crate) mod dml;
mod expr;
mod func;
mod jsonb;
mod select;

use std::sync::Arc;

use catalog::{DataType, Snapshot, Table};
use sqlparser::ast::{self as ast, Ident, ObjectName, ObjectNamePart, Spanned};

pub use ddl::{Command, CreateTable, IndexSpec, RoleOptions, SetValue};
pub(crate) use select::{row_local, uncorrelated, walk as walk_expr, width_of};

use crate::error::{Error, Result, Span};
use crate::plan::{Query, Statement as PlanStatement};

/// The result of binding one statement.
#[derive(Debug, Clone)]
pub enum Bound {
    /// A query or DML statement, planned.
    Plan(PlanStatement),
    /// A utility statement (DDL, transaction control, SET/SHOW).
    Command(Command),
}

/// One column visible in a scope.
#[derive(Debug, Clone)]
pub(crate) struct ScopeColumn {
    /// Table name or alias it belongs to.
    pub relation: Option<String>,
    /// Column name.
    pub name: String,
    /// Type.
    pub data_type: DataType,
    /// Source (table oid, attnum) for RowDescription.
    pub source: Option<(u32, i16)>,
    /// A dropped column of a table ([`catalog::Column::dropped`]): it keeps its place in the
    /// row, but no name finds it and `*` leaves it out.
    pub hidden: bool,
    /// The column of a `JOIN … USING` / `NATURAL JOIN` merged into the other side's: found
    /// only by its qualified name (`b.id`), and `*` leaves it out.
    pub shadowed: bool,
    /// The one column of a set-returning function in FROM: the function's relation name
    /// finds it too (PostgreSQL's whole-row value of a one-column function, `FROM
    /// jsonb_array_elements_text(x) AS tag … WHERE tag = 'a'`).
    pub whole_row: bool,
}

/// The columns of the current FROM clause (a concatenated row).
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// What `*` stands for, when a USING / NATURAL join put its merged columns first (as
    /// PostgreSQL does); otherwise the visible columns in order.
    pub star: Option<Vec<usize>>,
}

impl Scope {
    pub fn from_table(table: &Table, alias: &str) -> Scope {
        Scope {
            columns: table
                .columns
                .iter()
                .map(|c| ScopeColumn {
                    relation: Some(alias.to_string()),
                    name: c.name.clone(),
                    data_type: c.data_type,
                    source: Some((table.id.oid(), c.position as i16 + 1)),
                    hidden: c.dropped,
                    shadowed: false,
                    whole_row: false,
                })
                .collect(),
            star: None,
        }
    }

    /// The columns `*` stands for, with their indexes in the row.
    pub fn star(&self) -> Vec<(usize, &ScopeColumn)> {
        match &self.star {
            Some(star) => star.iter().map(|&i| (i, &self.columns[i])).collect(),
            None => self.visible().filter(|(_, c)| !c.shadowed).collect(),
        }
    }

    /// The columns SQL sees (not [`ScopeColumn::hidden`]), with their indexes in the row.
    pub fn visible(&self) -> impl Iterator<Item = (usize, &ScopeColumn)> + '_ {
        self.columns.iter().enumerate().filter(|(_, c)| !c.hidden)
    }
}

/// An identifier as PostgreSQL prints it (`quote_identifier`, the `quote_ident` function): bare
/// when it is lower case letters, digits and underscores and no key word that is not
/// unreserved, quoted otherwise.
pub(crate) fn display_ident(name: &str) -> String {
    let bare = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !ddl::is_reserved(name);
    if bare {
        name.to_string()
    } else {
        crate::copy::quote_ident(name)
    }
}

/// PostgreSQL 15's `pg_catalog` relations, which people query by their bare name (`pg_catalog`
/// is always on PostgreSQL's search path). Those Aspen does not answer
/// (`describe::system` has the rest) are `0A000`, not `42P01`.
const SYSTEM_CATALOGS: &[&str] = &[
    "pg_aggregate",
    "pg_am",
    "pg_amop",
    "pg_amproc",
    "pg_attrdef",
    "pg_attribute",
    "pg_auth_members",
    "pg_authid",
    "pg_available_extension_versions",
    "pg_available_extensions",
    "pg_backend_memory_contexts",
    "pg_cast",
    "pg_class",
    "pg_collation",
    "pg_config",
    "pg_constraint",
    "pg_conversion",
    "pg_cursors",
    "pg_database",
    "pg_db_role_setting",
    "pg_default_acl",
    "pg_depend",
    "pg_description",
    "pg_enum",
    "pg_event_trigger",
    "pg_extension",
    "pg_file_settings",
    "pg_foreign_server",
    "pg_foreign_table",
    "pg_group",
    "pg_hba_file_rules",
    "pg_index",
    "pg_indexes",
    "pg_inherits",
    "pg_init_privs",
    "pg_language",
    "pg_largeobject",
    "pg_locks",
    "pg_matviews",
    "pg_namespace",
    "pg_opclass",
    "pg_operator",
    "pg_opfamily",
    "pg_partitioned_table",
    "pg_policies",
    "pg_policy",
    "pg_prepared_statements",
    "pg_prepared_xacts",
    "pg_proc",
    "pg_publication",
    "pg_publication_tables",
    "pg_range",
    "pg_replication_origin",
    "pg_replication_origin_status",
    "pg_replication_slots",
    "pg_rewrite",
    "pg_roles",
    "pg_rules",
    "pg_seclabels",
    "pg_sequence",
    "pg_sequences",
    "pg_settings",
    "pg_shadow",
    "pg_shdepend",
    "pg_shmem_allocations",
    "pg_stat_activity",
    "pg_stat_all_indexes",
    "pg_stat_all_tables",
    "pg_stat_archiver",
    "pg_stat_bgwriter",
    "pg_stat_database",
    "pg_stat_database_conflicts",
    "pg_stat_gssapi",
    "pg_stat_progress_analyze",
    "pg_stat_progress_basebackup",
    "pg_stat_progress_cluster",
    "pg_stat_progress_copy",
    "pg_stat_progress_create_index",
    "pg_stat_progress_vacuum",
    "pg_stat_recovery_prefetch",
    "pg_stat_replication",
    "pg_stat_replication_slots",
    "pg_stat_slru",
    "pg_stat_ssl",
    "pg_stat_subscription",
    "pg_stat_subscription_stats",
    "pg_stat_sys_indexes",
    "pg_stat_sys_tables",
    "pg_stat_user_functions",
    "pg_stat_user_indexes",
    "pg_stat_user_tables",
    "pg_stat_wal",
    "pg_stat_wal_receiver",
    "pg_stat_xact_all_tables",
    "pg_stat_xact_sys_tables",
    "pg_stat_xact_user_functions",
    "pg_stat_xact_user_tables",
    "pg_statio_all_indexes",
    "pg_statio_all_sequences",
    "pg_statio_all_tables",
    "pg_statio_sys_indexes",
    "pg_statio_sys_sequences",
    "pg_statio_sys_tables",
    "pg_statio_user_indexes",
    "pg_statio_user_sequences",
    "pg_statio_user_tables",
    "pg_statistic",
    "pg_statistic_ext",
    "pg_stats",
    "pg_stats_ext",
    "pg_subscription",
    "pg_tables",
    "pg_tablespace",
    "pg_timezone_abbrevs",
    "pg_timezone_names",
    "pg_transform",
    "pg_trigger",
    "pg_ts_config",
    "pg_type",
    "pg_user",
    "pg_user_mappings",
    "pg_views",
];

/// Binds statements against one catalog snapshot.
pub struct Binder<'a> {
    pub(crate) snapshot: &'a Snapshot,
    pub(crate) sql: &'a str,
    /// Parameter types: declared by the client, or inferred (None until known).
    pub(crate) params: Vec<Option<DataType>>,
    /// Enclosing scopes, innermost last (for correlated subqueries).
    pub(crate) outer: Vec<Scope>,
    /// Aggregate calls collected while binding a grouped SELECT list.
    pub(crate) aggs: Option<Vec<crate::plan::AggCall>>,
    /// The WITH queries in scope, innermost last (see `Binder::bind_query`).
    pub(crate) ctes: Vec<Cte>,
    /// Window calls collected while binding a SELECT list and its ORDER BY: the width of the
    /// rows they extend, and the calls (each adds a column after those). `None` where window
    /// functions are not allowed.
    pub(crate) windows: Option<(usize, Vec<crate::plan::WindowCall>)>,
    /// The WINDOW clause of the SELECT being bound (each definition resolved against the
    /// earlier ones), innermost SELECT's last.
    pub(crate) named_windows: Vec<(String, ast::WindowSpec)>,
    /// The SELECT being bound had set-returning functions of its select list moved to FROM
    /// (`select::select_list_srfs`): it must not group.
    pub(crate) select_list_srfs: bool,
    /// The next working-table id (recursive WITH queries).
    pub(crate) next_working: usize,
    /// `FOR UPDATE OF a, b`: the relations the SELECT about to be bound locks (`None`: all of
    /// them). Set by the query around the SELECT, taken by the SELECT before its FROM.
    pub(crate) lock_of: Option<Vec<String>>,
    /// The data-modifying WITH queries of the statement being bound (working table id,
    /// statement), run before it (`Statement::With`).
    pub(crate) dml_ctes: Vec<(usize, PlanStatement)>,
    /// The next WITH list may hold INSERT / UPDATE / DELETE: it is the statement's own (set
    /// for the top-level statement's WITH; `push_ctes` clears it).
    pub(crate) dml_allowed: bool,
    /// While a window aggregate's argument is bound: the query's aggregates, which it may use
    /// (`sum(count(*)) OVER ()`). `None` otherwise: aggregates do not nest.
    pub(crate) window_arg_aggs: Option<Vec<crate::plan::AggCall>>,
    /// The tables and views named in FROM so far (a view's own are its binder's): what a
    /// CREATE VIEW's query depends on.
    pub(crate) relations_read: Vec<catalog::TableId>,
}

/// A WITH query (non-recursive): bound afresh where it is referenced, as a derived table
/// would be, seeing only what its definition sees.
#[derive(Debug, Clone)]
pub(crate) struct Cte {
    pub name: String,
    /// A data-modifying WITH query: the working table its RETURNING rows fill, and their
    /// columns.
    pub materialized: Option<(usize, Vec<crate::plan::OutColumn>)>,
    /// Column names given after its name, if any.
    pub columns: Vec<String>,
    pub query: ast::Query,
    /// How many enclosing scopes its definition had.
    pub outer_depth: usize,
    /// Defined in WITH RECURSIVE: it may refer to itself.
    pub recursive: bool,
    /// While its recursive term is bound: the working table that a self-reference reads.
    pub working: Option<Working>,
}

/// A recursive WITH query's working table, as its recursive term sees it.
#[derive(Debug, Clone)]
pub(crate) struct Working {
    pub id: usize,
    pub columns: Vec<crate::plan::OutColumn>,
    /// How many times the recursive term referred to it (PostgreSQL allows one).
    pub uses: std::rc::Rc<std::cell::Cell<usize>>,
    /// `outer.len()` where the recursive term is bound: a reference from deeper is inside a
    /// subquery, which PostgreSQL refuses.
    pub depth: usize,
}

/// Folds an identifier as PostgreSQL does: lower case unless quoted.
pub(crate) fn ident(id: &Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

impl<'a> Binder<'a> {
    /// A binder for `sql` with the client's declared parameter types (None = infer).
    pub fn new(snapshot: &'a Snapshot, sql: &'a str, params: Vec<Option<DataType>>) -> Self {
        Binder {
            snapshot,
            sql,
            params,
            outer: Vec::new(),
            aggs: None,
            ctes: Vec::new(),
            windows: None,
            named_windows: Vec::new(),
            select_list_srfs: false,
            next_working: 0,
            lock_of: None,
            dml_ctes: Vec::new(),
            dml_allowed: false,
            window_arg_aggs: None,
            relations_read: Vec::new(),
        }
    }

    /// Binds one statement; its data-modifying WITH queries, if any, go in front of it
    /// (`Statement::With`).
    pub fn bind(&mut self, stmt: &ast::Statement) -> Result<Bound> {
        self.dml_ctes.clear();
        let bound = self.bind_top(stmt)?;
        self.with_dml_ctes(bound)
    }

    /// [`Binder::bind_statement`] of a statement whose own WITH list may modify data.
    fn bind_top(&mut self, stmt: &ast::Statement) -> Result<Bound> {
        self.dml_allowed = matches!(stmt, ast::Statement::Query(q) if q.with.is_some());
        self.bind_statement(stmt)
    }

    /// `bound` with the data-modifying WITH queries bound since in front of it.
    fn with_dml_ctes(&mut self, bound: Bound) -> Result<Bound> {
        let ctes = std::mem::take(&mut self.dml_ctes);
        if ctes.is_empty() {
            return Ok(bound);
        }
        match bound {
            Bound::Plan(main) => {
                dml::check_with_snapshot(self.snapshot, &ctes, &main)?;
                Ok(Bound::Plan(PlanStatement::With { ctes, main: Box::new(main) }))
            }
            Bound::Command(_) => Err(Error::internal("a WITH query in front of a command")),
        }
    }

    /// [`Binder::bind`] without the statement's data-modifying WITH queries.
    fn bind_statement(&mut self, stmt: &ast::Statement) -> Result<Bound> {
        use ast::Statement as S;
        if let S::Query(q) = stmt {
            if let Some(command) = ddl::set_config_command(q)? {
                return Ok(Bound::Command(command));
            }
        }
        Ok(match stmt {
            // WITH … INSERT / UPDATE / DELETE: the WITH queries are visible to the statement.
            S::Query(q)
                if q.with.is_some()
                    && matches!(
                        q.body.as_ref(),
                        ast::SetExpr::Insert(_) | ast::SetExpr::Update(_) | ast::SetExpr::Delete(_)
                    ) =>
            {
                let visible = self.ctes.len();
                let bound =
                    self.push_ctes(q.with.as_ref().expect("checked")).and_then(|()| {
                        match q.body.as_ref() {
                            ast::SetExpr::Insert(s)
                            | ast::SetExpr::Update(s)
                            | ast::SetExpr::Delete(s) => self.bind_statement(s),
                            _ => unreachable!("matched above"),
                        }
                    });
                self.ctes.truncate(visible);
                return bound;
            }
            S::Explain { analyze, statement, format, options, .. } => {
                let analyzing = *analyze
                    || options
                        .iter()
                        .flatten()
                        .any(|o| o.name.value.eq_ignore_ascii_case("analyze"));
                if analyzing {
                    return Err(Error::unsupported("EXPLAIN ANALYZE"));
                }
                if format.is_some()
                    || options.iter().flatten().any(|o| o.name.value.eq_ignore_ascii_case("format"))
                {
                    return Err(Error::unsupported("EXPLAIN (FORMAT …)"));
                }
                // The explained statement's data-modifying WITH queries are explained, not run.
                let explained = self.bind_top(statement)?;
                let lines = match self.with_dml_ctes(explained)? {
                    Bound::Plan(stmt) => stmt.explain(),
                    Bound::Command(_) => {
                        return Err(Error::unsupported("EXPLAIN of a utility statement"))
                    }
                };
                let rows = lines.into_iter().map(|l| vec![crate::types::Value::Text(l)]).collect();
                let query = crate::metadata::constant(vec![("QUERY PLAN", DataType::Text)], rows);
                Bound::Plan(PlanStatement::Query(query))
            }
            S::Query(q) => {
                let query = self.bind_query(q)?;
                Bound::Plan(PlanStatement::Query(query))
            }
            S::Insert(insert) => Bound::Plan(self.bind_insert(insert)?),
            S::Update(update) => Bound::Plan(self.bind_update(update)?),
            S::Delete(delete) => Bound::Plan(self.bind_delete(delete)?),
            other => Bound::Command(self.bind_command(other)?),
        })
    }

    /// Final parameter types; an unknown parameter defaults to `text` as PostgreSQL's
    /// `unknown` literal would.
    pub fn param_types(&self) -> Vec<DataType> {
        self.params.iter().map(|p| p.unwrap_or(DataType::Text)).collect()
    }

    pub(crate) fn span_of(&self, node: &impl Spanned) -> Option<Span> {
        let loc = node.span().start;
        crate::parse::offset_of(self.sql, loc).map(|start| Span { start })
    }

    /// Where the string literal `'text'` is written inside `node` (the first place, as a
    /// plain quoted literal), else where `node` starts: what an error about the literal's
    /// value points at.
    pub(crate) fn literal_span(&self, node: &impl Spanned, text: &str) -> Option<Span> {
        let start = self.span_of(node)?.start;
        let end = node.span().end;
        let end = crate::parse::offset_of(self.sql, end).unwrap_or(self.sql.len());
        let written = self.sql.get(start..end.max(start))?;
        let quoted = format!("'{}'", text.replace('\'', "''"));
        Some(Span { start: start + written.find(&quoted).unwrap_or(0) })
    }

    /// Resolves a (possibly schema-qualified) table name: a table, not a view (what is
    /// written, altered or indexed).
    pub(crate) fn table(&self, name: &ObjectName) -> Result<Arc<Table>> {
        let table = self.relation(name)?;
        if table.is_view() {
            return Err(Error::WrongObjectType {
                message: format!("\"{}\" is not a table", table.name),
            });
        }
        Ok(table)
    }

    /// [`Binder::table`] for INSERT, UPDATE or DELETE (`what`): a view is `0A000` (PostgreSQL
    /// writes through simple views; Aspen's are read-only).
    pub(crate) fn table_to_write(&self, name: &ObjectName, what: &str) -> Result<Arc<Table>> {
        let table = self.relation(name)?;
        if table.is_view() {
            return Err(Error::unsupported(format!("{what} view \"{}\"", table.name)));
        }
        Ok(table)
    }

    /// Resolves a (possibly schema-qualified) name of a table or a view (what FROM reads).
    /// A `pg_catalog` or `information_schema` relation Aspen answers
    /// ([`crate::describe::system`]), as constant rows from this binder's snapshot.
    pub(crate) fn system_relation(&self, name: &ObjectName) -> Result<Option<Query>> {
        let (schema, table) = self.object_name(name)?;
        if schema.as_deref().is_some_and(|s| s != "pg_catalog" && s != "information_schema") {
            return Ok(None);
        }
        Ok(crate::describe::system::relation(self.snapshot, schema.as_deref(), &table))
    }

    pub(crate) fn relation(&self, name: &ObjectName) -> Result<Arc<Table>> {
        let (schema, table) = self.object_name(name)?;
        let span = self.span_of(name);
        let system = |schema: &str| Error::Unsupported {
            feature: format!("system catalog {schema}.{table}"),
            span,
        };
        match schema.as_deref() {
            None | Some("public") => {}
            Some(s @ ("pg_catalog" | "information_schema")) => return Err(system(s)),
            Some(s) => return Err(Error::UndefinedTable { name: format!("{s}.{table}"), span }),
        }
        // PostgreSQL searches pg_catalog first: a bare name of one of its relations means
        // that relation even when `public` has a table of the same name.
        if schema.is_none() && SYSTEM_CATALOGS.contains(&table.as_str()) {
            return Err(system("pg_catalog"));
        }
        if self.snapshot.sequence(&table).is_some_and(|(t, _)| t.is_sequence()) {
            return Err(Error::Unsupported {
                feature: format!("using sequence \"{table}\" as a table"),
                span,
            });
        }
        self.snapshot.table(&table).cloned().ok_or(Error::UndefinedTable { name: table, span })
    }

    /// Splits `[schema.]name`; only the `public` schema exists.
    pub(crate) fn object_name(&self, name: &ObjectName) -> Result<(Option<String>, String)> {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(id) => Ok(ident(id)),
                other => Err(Error::Unsupported {
                    feature: format!("object name {other}"),
                    span: self.span_of(name),
                }),
            })
            .collect::<Result<_>>()?;
        match parts.as_slice() {
            [t] => Ok((None, t.clone())),
            [s, t] => Ok((Some(s.clone()), t.clone())),
            [_, s, t] => Ok((Some(s.clone()), t.clone())),
            _ => Err(Error::Syntax {
                message: format!("improper qualified name (too many dotted names): {name}"),
                span: self.span_of(name),
            }),
        }
    }
}
