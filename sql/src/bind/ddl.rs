//! Binding utility statements: DDL, transaction control, SET / SHOW / RESET.

use std::sync::Arc;

use catalog::{
    Column, ColumnDefault, DataType, Deferral, FkAction, ForeignKey, Generated, IndexDef, Sequence,
    Table, TableDef, TableId,
};
use sqlparser::ast::{self as ast, ColumnOption, Statement as S, TableConstraint};

use super::{ident, Binder, Scope};
use crate::error::{Error, Result, Span};
use crate::plan::{Expr, Func};
use crate::types::CastKind;

/// The value of a SET.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// `SET x TO DEFAULT` / `RESET x`.
    Default,
    /// A value, as text.
    Value(String),
}

/// A CREATE TABLE, resolved.
#[derive(Debug, Clone)]
pub struct CreateTable {
    /// The definition for the catalog.
    pub def: TableDef,
    /// IF NOT EXISTS.
    pub if_not_exists: bool,
}

/// A CREATE INDEX, resolved.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    /// Table to index.
    pub table: Arc<Table>,
    /// The index definition.
    pub def: IndexDef,
    /// IF NOT EXISTS.
    pub if_not_exists: bool,
}

/// A bound utility statement.
#[derive(Debug, Clone)]
pub enum Command {
    /// BEGIN / START TRANSACTION (the tag to report).
    Begin(&'static str),
    /// COMMIT / END.
    Commit,
    /// ROLLBACK / ABORT.
    Rollback,
    /// SAVEPOINT name.
    Savepoint(String),
    /// RELEASE [SAVEPOINT] name.
    Release(String),
    /// ROLLBACK TO [SAVEPOINT] name.
    RollbackTo(String),
    /// SET name = value.
    Set {
        /// Parameter name (folded).
        name: String,
        /// New value.
        value: SetValue,
    },
    /// SET [SESSION CHARACTERISTICS AS] TRANSACTION ISOLATION LEVEL …: accepted, always
    /// serializable.
    SetTransaction,
    /// SHOW name.
    Show(String),
    /// SHOW ALL.
    ShowAll,
    /// RESET name / RESET ALL (None).
    Reset(Option<String>),
    /// CREATE TABLE.
    CreateTable(CreateTable),
    /// CREATE TABLE … AS query: a table of the query's columns (no keys), filled with its rows.
    CreateTableAs {
        /// The table.
        create: CreateTable,
        /// The query, bound before the table exists.
        query: Box<crate::plan::Query>,
    },
    /// CREATE VIEW: a catalog table without rows whose [`catalog::ViewDef`] holds the query.
    CreateView(CreateTable),
    /// DROP VIEW.
    DropView {
        /// View names.
        names: Vec<String>,
        /// IF EXISTS.
        if_exists: bool,
        /// CASCADE: drop the views that read them too.
        cascade: bool,
    },
    /// CREATE SEQUENCE: a sequence of its own, kept as a table of one column without rows
    /// ([`catalog::Table::is_sequence`]), and the column that owns it (`OWNED BY t.c`).
    CreateSequence(CreateTable, Option<(catalog::TableId, u16)>),
    /// DROP SEQUENCE.
    DropSequence {
        /// Sequence names.
        names: Vec<String>,
        /// IF EXISTS.
        if_exists: bool,
        /// CASCADE: drop the column defaults that use them too.
        cascade: bool,
    },
    /// DROP TABLE.
    DropTable {
        /// Table names.
        names: Vec<String>,
        /// IF EXISTS.
        if_exists: bool,
        /// CASCADE.
        cascade: bool,
    },
    /// CREATE INDEX.
    CreateIndex(IndexSpec),
    /// DROP INDEX.
    DropIndex {
        /// Index names.
        names: Vec<String>,
        /// IF EXISTS.
        if_exists: bool,
    },
    /// TRUNCATE: the tables named, then (CASCADE) the tables whose foreign keys reach them,
    /// which the second list names for PostgreSQL's notices.
    Truncate(Vec<Arc<Table>>, Vec<String>),
    /// ALTER TABLE … ADD COLUMN.
    AddColumn {
        /// Table.
        table: Arc<Table>,
        /// The new column (position assigned by the catalog).
        column: Column,
        /// IF NOT EXISTS.
        if_not_exists: bool,
        /// CHECK constraints declared with the column, with their expressions bound over the
        /// table with the column.
        checks: Vec<(catalog::Check, Expr)>,
    },
    /// ALTER TABLE … ADD [CONSTRAINT name] CHECK (…): existing rows must satisfy it.
    AddCheck {
        /// Table.
        table: Arc<Table>,
        /// The constraint as the catalog keeps it.
        check: catalog::Check,
        /// Its expression, bound over the table's row.
        expr: Expr,
    },
    /// ALTER TABLE … DROP CONSTRAINT [IF EXISTS] name.
    DropConstraint {
        /// Table.
        table: Arc<Table>,
        /// The constraint's name.
        name: String,
        /// IF EXISTS.
        if_exists: bool,
    },
    /// ALTER TABLE … DROP [COLUMN] [IF EXISTS] name [CASCADE].
    DropColumn {
        /// Table.
        table: Arc<Table>,
        /// The column's name.
        name: String,
        /// Its position, or `None` when there is no such column (IF EXISTS: a notice).
        position: Option<u16>,
        /// CASCADE: foreign keys and views that use the column are dropped too.
        cascade: bool,
    },
    /// ALTER TABLE with several actions (`ADD COLUMN a int, ADD COLUMN b int`): each one an
    /// ALTER TABLE of its own, bound and run in order when the statement runs (each sees the
    /// changes of those before it), all in the statement's transaction.
    AlterTableActions {
        /// The text the statement came in: error positions point into it.
        sql: Arc<str>,
        /// One ALTER TABLE statement per action.
        actions: Vec<ast::Statement>,
    },
    /// ALTER TABLE … RENAME TO.
    RenameTable {
        /// Table.
        table: Arc<Table>,
        /// Its new name.
        name: String,
    },
    /// ALTER TABLE … ALTER COLUMN … SET / DROP DEFAULT, SET / DROP NOT NULL; RENAME COLUMN.
    AlterColumn {
        /// Table.
        table: Arc<Table>,
        /// The column's position.
        position: u16,
        /// What changes.
        change: catalog::ColumnChange,
    },
    /// ALTER TABLE … ADD PRIMARY KEY / UNIQUE (as an index).
    AddIndex(IndexSpec),
    /// ALTER TABLE … ADD FOREIGN KEY.
    AddForeignKey {
        /// Table.
        table: Arc<Table>,
        /// The foreign key.
        fk: ForeignKey,
    },
    /// DISCARD ALL and other no-ops that only need a tag.
    NoOp(&'static str),
    /// A statement with nothing to do but a notice (`CREATE SCHEMA IF NOT EXISTS public`).
    Skip {
        /// The command tag.
        tag: &'static str,
        /// The notice's SQLSTATE.
        code: &'static str,
        /// The notice.
        message: String,
    },
    /// COMMENT ON TABLE | VIEW | COLUMN … IS ….
    Comment {
        /// The table or view.
        table: Arc<Table>,
        /// The column's position, for COMMENT ON COLUMN.
        column: Option<u16>,
        /// The comment; `None` (`IS NULL` or `IS ''`) removes it.
        comment: Option<String>,
    },
    /// ALTER INDEX … RENAME TO.
    RenameIndex {
        /// The index's table.
        table: Arc<Table>,
        /// The index.
        index: catalog::IndexId,
        /// Its new name.
        name: String,
    },
    /// ALTER TABLE … RENAME CONSTRAINT old TO name.
    RenameConstraint {
        /// Table.
        table: Arc<Table>,
        /// The constraint's name.
        old: String,
        /// Its new name.
        name: String,
    },
    /// CHECKPOINT (parsed by `parse`, not by sqlparser).
    Checkpoint,
    /// SET CONSTRAINTS: the deferrable foreign keys named (`None`: all) are deferred or
    /// immediate for the rest of the transaction.
    SetConstraints {
        /// Constraint names (each names one or more deferrable foreign keys).
        names: Option<Vec<String>>,
        /// DEFERRED (else IMMEDIATE).
        deferred: bool,
    },
    /// PREPARE name [(types)] AS statement. The statement is bound when this runs, and the
    /// session keeps it under its name (`Session`'s SQL-level prepared statements).
    Prepare {
        /// Its name (folded).
        name: String,
        /// The text the PREPARE came in: error positions point into it.
        sql: Arc<str>,
        /// The statement: SELECT, VALUES, INSERT, UPDATE or DELETE.
        statement: Box<ast::Statement>,
        /// OIDs of the declared parameter types (later ones are inferred).
        oids: Vec<u32>,
    },
    /// EXECUTE name [(arguments)]: the arguments are bound against the prepared statement's
    /// parameter types when this runs.
    Execute {
        /// The prepared statement's name (folded).
        name: String,
        /// The text the EXECUTE came in.
        sql: Arc<str>,
        /// The arguments, one per parameter.
        args: Vec<ast::Expr>,
    },
    /// DEALLOCATE [PREPARE] name, or ALL (`None`).
    Deallocate(Option<String>),
    /// VACUUM (`vacuum`) or ANALYZE of existing tables: nothing to do (`Parsed::Maintenance`).
    Maintenance {
        /// VACUUM (else ANALYZE), which PostgreSQL refuses inside a transaction block.
        vacuum: bool,
    },
    /// SET LOCAL name = value: until the transaction ends.
    SetLocal {
        /// The parameter.
        name: String,
        /// Its value for the rest of the transaction.
        value: SetValue,
    },
    /// `SELECT set_config(name, value, is_local)` with constant arguments: SET, returning the
    /// new value in a column named `column`.
    SetConfig {
        /// The parameter.
        name: String,
        /// Its new value.
        value: String,
        /// `is_local` (SET LOCAL).
        local: bool,
        /// The result column's name.
        column: String,
    },
    /// `ALTER SEQUENCE … OWNED BY` of a standalone sequence.
    SetSequenceOwner {
        /// The sequence.
        sequence: TableId,
        /// The owning table and column, or none.
        owner: Option<(TableId, u16)>,
    },
    /// `ALTER SEQUENCE … RESTART [[WITH] n]`: the next nextval returns `value`.
    RestartSequence {
        /// The table holding the sequence.
        table: Arc<Table>,
        /// The column holding it.
        position: u16,
        /// The sequence.
        sequence: Sequence,
        /// What the next nextval returns.
        value: i64,
    },
    /// CREATE ROLE / CREATE USER.
    CreateRole {
        /// The new role with PostgreSQL's defaults, before `options`.
        role: catalog::Role,
        /// What the statement sets.
        options: RoleOptions,
    },
    /// ALTER ROLE / ALTER USER name [WITH] options.
    AlterRole {
        /// The role (`None`: CURRENT_USER, SESSION_USER or CURRENT_ROLE, the session's).
        name: Option<String>,
        /// What the statement sets.
        options: RoleOptions,
    },
    /// ALTER ROLE name RENAME TO new_name.
    RenameRole {
        /// The role.
        name: String,
        /// Its new name.
        new_name: String,
    },
    /// DROP ROLE / DROP USER [IF EXISTS] names.
    DropRole {
        /// The roles.
        names: Vec<String>,
        /// IF EXISTS.
        if_exists: bool,
    },
}

/// The role attributes a CREATE or ALTER ROLE sets (`None`: left as it is).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleOptions {
    /// SUPERUSER / NOSUPERUSER.
    pub superuser: Option<bool>,
    /// CREATEDB / NOCREATEDB.
    pub create_db: Option<bool>,
    /// CREATEROLE / NOCREATEROLE.
    pub create_role: Option<bool>,
    /// INHERIT / NOINHERIT.
    pub inherit: Option<bool>,
    /// LOGIN / NOLOGIN.
    pub login: Option<bool>,
    /// REPLICATION / NOREPLICATION.
    pub replication: Option<bool>,
    /// BYPASSRLS / NOBYPASSRLS.
    pub bypass_rls: Option<bool>,
    /// PASSWORD 'text' (`Some(Some(text))`: the password or a verifier, as given) or PASSWORD
    /// NULL (`Some(None)`).
    pub password: Option<Option<String>>,
}

impl RoleOptions {
    /// Sets the attributes given on `role`; the password as it is (the caller has turned it
    /// into a verifier).
    pub fn apply(&self, role: &mut catalog::Role) {
        let set = |field: &mut bool, value: Option<bool>| {
            if let Some(v) = value {
                *field = v;
            }
        };
        set(&mut role.superuser, self.superuser);
        set(&mut role.create_db, self.create_db);
        set(&mut role.create_role, self.create_role);
        set(&mut role.inherit, self.inherit);
        set(&mut role.login, self.login);
        set(&mut role.replication, self.replication);
        set(&mut role.bypass_rls, self.bypass_rls);
        if let Some(password) = &self.password {
            role.password = password.clone();
        }
    }
}

impl Binder<'_> {
    pub(crate) fn bind_command(&mut self, stmt: &S) -> Result<Command> {
        Ok(match stmt {
            S::StartTransaction { begin, modes, .. } => {
                check_modes(modes)?;
                Command::Begin(if *begin { "BEGIN" } else { "START TRANSACTION" })
            }
            S::Commit { chain: false, .. } => Command::Commit,
            S::Rollback { chain: false, savepoint: None } => Command::Rollback,
            S::Rollback { chain: false, savepoint: Some(name) } => Command::RollbackTo(ident(name)),
            S::Savepoint { name } => Command::Savepoint(ident(name)),
            S::ReleaseSavepoint { name } => Command::Release(ident(name)),
            S::Set(set) => self.bind_set(set)?,
            S::ShowVariable { variable } => {
                let name = variable.iter().map(ident).collect::<Vec<_>>().join(" ");
                match name.as_str() {
                    "all" => Command::ShowAll,
                    "transaction isolation level" => Command::Show("transaction_isolation".into()),
                    "time zone" => Command::Show("timezone".into()),
                    // A qualified name (`SHOW aspen.wal_dirs`).
                    _ => Command::Show(variable.iter().map(ident).collect::<Vec<_>>().join(".")),
                }
            }
            S::Reset(r) => match &r.reset {
                ast::Reset::ALL => Command::Reset(None),
                ast::Reset::ConfigurationParameter(name) => {
                    Command::Reset(Some(parameter_name(name)))
                }
                _ => return Err(Error::unsupported("RESET SESSION AUTHORIZATION")),
            },
            S::CreateTable(ct) if ct.query.is_some() => self.bind_create_table_as(ct)?,
            S::CreateTable(ct) => Command::CreateTable(self.bind_create_table(ct)?),
            S::Drop { object_type, if_exists, names, cascade, .. } => {
                let names = names
                    .iter()
                    .map(|n| self.object_name(n).map(|(_, t)| t))
                    .collect::<Result<Vec<_>>>()?;
                match object_type {
                    ast::ObjectType::Table => {
                        Command::DropTable { names, if_exists: *if_exists, cascade: *cascade }
                    }
                    ast::ObjectType::Index => Command::DropIndex { names, if_exists: *if_exists },
                    ast::ObjectType::View => {
                        Command::DropView { names, if_exists: *if_exists, cascade: *cascade }
                    }
                    ast::ObjectType::Sequence => {
                        Command::DropSequence { names, if_exists: *if_exists, cascade: *cascade }
                    }
                    ast::ObjectType::Role | ast::ObjectType::User => {
                        if *cascade {
                            return Err(Error::unsupported("DROP ROLE … CASCADE"));
                        }
                        Command::DropRole { names, if_exists: *if_exists }
                    }
                    other => return Err(Error::unsupported(format!("DROP {other}"))),
                }
            }
            S::CreateIndex(ci) => Command::CreateIndex(self.bind_create_index(ci)?),
            S::CreateSequence {
                temporary,
                if_not_exists,
                name,
                data_type,
                sequence_options,
                owned_by,
            } => {
                if *temporary {
                    return Err(Error::unsupported("temporary sequences"));
                }
                let owner = match owned_by {
                    Some(target) => self.sequence_owner(target)?,
                    None => None,
                };
                let name = self.new_relation_name(name)?;
                let data_type = match data_type {
                    None => DataType::Int64,
                    Some(t) => match self.data_type(t)? {
                        t @ (DataType::Int16 | DataType::Int32 | DataType::Int64) => t,
                        _ => {
                            return Err(Error::InvalidParameterValue {
                                message: "sequence type must be smallint, integer, or bigint"
                                    .into(),
                            })
                        }
                    },
                };
                let seq = sequence_with(
                    name.clone(),
                    Generated::Standalone,
                    data_type,
                    sequence_options,
                )?;
                // The column's type is the sequence's (`\d` shows it).
                let column = Column {
                    name: "last_value".into(),
                    position: 0,
                    data_type,
                    not_null: true,
                    default: None,
                    sequence: Some(seq),
                    dropped: false,
                };
                let def = TableDef {
                    name,
                    columns: vec![column],
                    indexes: vec![],
                    foreign_keys: vec![],
                    hidden_pk: true,
                    view: None,
                    checks: Vec::new(),
                };
                Command::CreateSequence(CreateTable { def, if_not_exists: *if_not_exists }, owner)
            }
            S::Truncate(t) => {
                let mut tables = Vec::new();
                for target in &t.table_names {
                    tables.push(self.table(&target.name)?);
                }
                if matches!(t.identity, Some(ast::TruncateIdentityOption::Restart)) {
                    return Err(Error::unsupported("TRUNCATE … RESTART IDENTITY"));
                }
                // CASCADE: every table whose foreign keys reference one truncated, level by
                // level.
                let mut cascaded = Vec::new();
                if matches!(t.cascade, Some(ast::CascadeOption::Cascade)) {
                    let mut next = 0;
                    while next < tables.len() {
                        for (child, _) in self.snapshot.referencing_fks(tables[next].id) {
                            if !tables.iter().any(|x| x.id == child.id) {
                                cascaded.push(child.name.clone());
                                tables.push(child.clone());
                            }
                        }
                        next += 1;
                    }
                }
                Command::Truncate(tables, cascaded)
            }
            S::AlterTable(at) => self.bind_alter_table(at)?,
            S::AlterIndex {
                name,
                operation: ast::AlterIndexOperation::RenameIndex { index_name },
            } => {
                let (_, old) = self.object_name(name)?;
                let (_, new) = self.object_name(index_name)?;
                match self.snapshot.index_by_name(&old) {
                    Some((table, index)) => {
                        Command::RenameIndex { table: table.clone(), index: index.id, name: new }
                    }
                    // PostgreSQL renames any relation this way.
                    None => {
                        let table = self.relation(name)?;
                        if self.snapshot.relation_exists(&new) {
                            return Err(Error::DuplicateTable { name: new });
                        }
                        self.refuse_if_viewed(&table, "renaming a table")?;
                        Command::RenameTable { table, name: new }
                    }
                }
            }
            S::Comment { object_type, object_name, comment, .. } => {
                self.bind_comment(*object_type, object_name, comment)?
            }
            S::CreateSchema { schema_name, if_not_exists, .. } => {
                let name = match schema_name {
                    ast::SchemaName::Simple(n) => self.object_name(n)?.1,
                    _ => return Err(Error::unsupported("CREATE SCHEMA AUTHORIZATION")),
                };
                if name.starts_with("pg_") {
                    return Err(Error::ReservedName {
                        message: format!("unacceptable schema name \"{name}\""),
                        detail: "The prefix \"pg_\" is reserved for system schemas.".into(),
                    });
                }
                if !matches!(name.as_str(), "public" | "information_schema") {
                    return Err(Error::unsupported("CREATE SCHEMA"));
                }
                let message = format!("schema \"{name}\" already exists");
                if !*if_not_exists {
                    return Err(Error::DuplicateSchema { message });
                }
                Command::Skip {
                    tag: "CREATE SCHEMA",
                    code: "42P06",
                    message: format!("{message}, skipping"),
                }
            }
            S::CreateRole(cr) => bind_create_role(cr)?,
            S::AlterRole { name, operation } => {
                // CURRENT_USER, SESSION_USER, CURRENT_ROLE: the session's role.
                let current = name.quote_style.is_none()
                    && ["current_user", "session_user", "current_role"]
                        .iter()
                        .any(|w| name.value.eq_ignore_ascii_case(w));
                let keyword = name.value.to_uppercase();
                let name = if current { None } else { Some(role_name(name)?) };
                match (operation, name) {
                    (ast::AlterRoleOperation::WithOptions { options }, name) => {
                        Command::AlterRole { name, options: role_options(options)? }
                    }
                    (ast::AlterRoleOperation::RenameRole { role_name: new }, Some(name)) => {
                        Command::RenameRole { name, new_name: role_name(new)? }
                    }
                    (ast::AlterRoleOperation::RenameRole { .. }, None) => {
                        return Err(Error::ReservedName {
                            message: format!("{keyword} cannot be used as a role name here"),
                            detail: String::new(),
                        })
                    }
                    (
                        ast::AlterRoleOperation::Set { .. } | ast::AlterRoleOperation::Reset { .. },
                        _,
                    ) => return Err(Error::unsupported("ALTER ROLE … SET / RESET")),
                    (other, _) => return Err(Error::unsupported(format!("ALTER ROLE {other}"))),
                }
            }
            S::Discard { .. } => Command::NoOp("DISCARD ALL"),
            S::CreateView(cv) => self.bind_create_view(cv)?,
            S::Prepare { name, data_types, statement } => {
                // PostgreSQL's grammar takes these only (PreparableStmt).
                if !matches!(**statement, S::Query(_) | S::Insert(_) | S::Update(_) | S::Delete(_))
                {
                    let text = statement.to_string();
                    let word = text.split_whitespace().next().unwrap_or_default();
                    // At the statement's first word: the first time it follows the name.
                    let after = crate::parse::offset_of(self.sql, name.span.start).unwrap_or(0);
                    let span = self.sql.get(after..).and_then(|rest| {
                        let rest = rest.to_ascii_lowercase();
                        rest.find(&word.to_ascii_lowercase()).map(|i| Span { start: after + i })
                    });
                    return Err(Error::Syntax {
                        message: format!("syntax error at or near \"{word}\""),
                        span,
                    });
                }
                let oids = data_types
                    .iter()
                    .map(|t| self.data_type(t).map(|t| t.oid()))
                    .collect::<Result<_>>()?;
                Command::Prepare {
                    name: ident(name),
                    sql: self.sql.into(),
                    statement: statement.clone(),
                    oids,
                }
            }
            S::Execute {
                name: Some(name),
                parameters,
                immediate: false,
                into,
                using,
                output: false,
                default: false,
                ..
            } if into.is_empty() && using.is_empty() => Command::Execute {
                name: self.object_name(name)?.1,
                sql: self.sql.into(),
                args: parameters.clone(),
            },
            S::Deallocate { name, .. } => {
                let all = name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all");
                Command::Deallocate((!all).then(|| ident(name)))
            }
            S::Query(_) | S::Insert(_) | S::Update(_) | S::Delete(_) => {
                return Err(Error::internal("DML reached bind_command"))
            }
            other => {
                let text = other.to_string();
                let words: Vec<&str> = text.split_whitespace().take(2).collect();
                return Err(Error::unsupported(words.join(" ")));
            }
        })
    }

    /// COMMENT ON TABLE / VIEW / COLUMN: the relation must be of the kind named (42809), the
    /// column must exist (42703); an empty comment removes it, as `IS NULL` does.
    fn bind_comment(
        &mut self,
        object_type: ast::CommentObject,
        name: &ast::ObjectName,
        comment: &Option<String>,
    ) -> Result<Command> {
        use ast::CommentObject as O;
        let comment = comment.clone().filter(|c| !c.is_empty());
        match object_type {
            O::Table | O::View => {
                let table = self.relation(name)?;
                let want_view = object_type == O::View;
                if table.is_view() != want_view {
                    let kind = if want_view { "view" } else { "table" };
                    return Err(Error::WrongObjectType {
                        message: format!("\"{}\" is not a {kind}", table.name),
                    });
                }
                Ok(Command::Comment { table, column: None, comment })
            }
            O::Column => {
                let mut parts = name.0.clone();
                let Some(column) = parts.pop().filter(|_| !parts.is_empty()) else {
                    return Err(Error::Syntax {
                        message: "column name must be qualified".into(),
                        span: None,
                    });
                };
                let table = self.relation(&ast::ObjectName(parts))?;
                let column = match column {
                    ast::ObjectNamePart::Identifier(id) => ident(&id),
                    other => other.to_string(),
                };
                let Some(c) = table.column(&column) else {
                    return Err(Error::UndefinedColumn {
                        name: format!("\"{column}\" of relation \"{}\"", table.name),
                        span: None,
                    });
                };
                Ok(Command::Comment { column: Some(c.position), table, comment })
            }
            other => Err(Error::unsupported(format!("COMMENT ON {other}"))),
        }
    }

    /// The name of a relation CREATE makes: not a reserved word unless quoted, and in the
    /// `public` schema if qualified (the only one).
    fn new_relation_name(&self, name: &ast::ObjectName) -> Result<String> {
        if let Some(ast::ObjectNamePart::Identifier(id)) = name.0.last() {
            check_name(id)?;
        }
        let (schema, name) = self.object_name(name)?;
        if let Some(s) = schema.filter(|s| s != "public") {
            return Err(Error::UndefinedObject {
                message: format!("schema \"{s}\" does not exist"),
            });
        }
        Ok(name)
    }

    /// `0A000` for `what` on a table a view reads: a view keeps its query as text, which would
    /// no longer name it (PostgreSQL's views follow a rename).
    fn refuse_if_viewed(&self, table: &Table, what: &str) -> Result<()> {
        let viewer = self
            .snapshot
            .tables()
            .find(|v| v.view.as_ref().is_some_and(|d| d.depends.contains(&table.id)));
        match viewer {
            Some(v) => Err(Error::unsupported(format!(
                "{what} that view \"{}\" reads ({})",
                v.name, table.name
            ))),
            None => Ok(()),
        }
    }

    /// CREATE VIEW name [(columns)] AS query: the query is bound now, for its columns and for
    /// the relations it reads, and kept as text.
    fn bind_create_view(&mut self, cv: &ast::CreateView) -> Result<Command> {
        if cv.or_replace || cv.or_alter {
            return Err(Error::unsupported("CREATE OR REPLACE VIEW"));
        }
        if cv.materialized {
            return Err(Error::unsupported("materialized views"));
        }
        if cv.temporary {
            return Err(Error::unsupported("temporary views"));
        }
        if cv.if_not_exists {
            return Err(Error::Syntax {
                message: "syntax error at or near \"NOT\"".into(),
                span: None,
            });
        }
        if !matches!(cv.options, ast::CreateTableOptions::None) || cv.params.is_some() {
            return Err(Error::unsupported("view options"));
        }
        let name = self.new_relation_name(&cv.name)?;
        self.relations_read.clear();
        let query = self.bind_query(&cv.query)?;
        if let Some(n) = self.params.len().checked_sub(1) {
            return Err(Error::UndefinedParameter {
                message: format!("there is no parameter ${}", n + 1),
            });
        }
        if cv.columns.len() > query.columns.len() {
            return Err(Error::Syntax {
                message: "CREATE VIEW specifies more column names than columns".into(),
                span: None,
            });
        }
        let mut columns: Vec<Column> = Vec::with_capacity(query.columns.len());
        for (position, c) in query.columns.iter().enumerate() {
            let name = cv.columns.get(position).map_or_else(|| c.name.clone(), |v| ident(&v.name));
            if columns.iter().any(|x| x.name == name) {
                return Err(Error::DuplicateColumn { name });
            }
            storable(&name, c.data_type)?;
            columns.push(Column {
                name,
                position: position as u16,
                data_type: c.data_type,
                not_null: false,
                default: None,
                sequence: None,
                dropped: false,
            });
        }
        let mut depends = std::mem::take(&mut self.relations_read);
        depends.sort();
        depends.dedup();
        let view = catalog::ViewDef {
            query: cv.query.to_string(),
            depends,
            query_columns: query.columns.iter().map(|c| c.name.clone()).collect(),
        };
        let def = TableDef {
            name,
            columns,
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            hidden_pk: true,
            view: Some(view),
            checks: Vec::new(),
        };
        Ok(Command::CreateView(CreateTable { def, if_not_exists: false }))
    }

    /// EXECUTE's arguments as expressions of the prepared statement's parameter types `types`
    /// (as many as there are arguments), as PostgreSQL's `EvaluateParams` forms them: each is
    /// an expression without columns, subqueries or aggregates, coerced for assignment.
    pub(crate) fn bind_execute_args(
        &mut self,
        args: &[ast::Expr],
        types: &[DataType],
    ) -> Result<Vec<crate::plan::Expr>> {
        let scope = Scope::default();
        let mut out = Vec::with_capacity(args.len());
        for (i, (arg, ty)) in args.iter().zip(types).enumerate() {
            let t = self.bind_expr(arg, &scope)?;
            if super::select::contains_subquery(&t.expr) {
                return Err(Error::unsupported_msg("cannot use subquery in EXECUTE parameter"));
            }
            let e = if t.unknown {
                self.coerce(t, *ty, CastKind::Assignment, arg)?
            } else if t.ty == *ty {
                t.expr
            } else if crate::types::cast_allowed(&t.ty, ty, CastKind::Assignment) {
                super::expr::fold_cast(t.expr, t.ty, *ty, CastKind::Assignment)?
            } else {
                return Err(Error::DatatypeMismatch {
                    message: format!(
                        "parameter ${} of type {} cannot be coerced to the expected type {}",
                        i + 1,
                        t.ty.base_name(),
                        ty.base_name()
                    ),
                    span: self.span_of(arg),
                }
                .with_hint("You will need to rewrite or cast the expression."));
            };
            out.push(e);
        }
        // A parameter of the EXECUTE's own (sent by a client over the extended protocol).
        if let Some(n) = self.params.len().checked_sub(1) {
            return Err(Error::UndefinedParameter {
                message: format!("there is no parameter ${}", n + 1),
            });
        }
        Ok(out)
    }

    fn bind_set(&mut self, set: &ast::Set) -> Result<Command> {
        use ast::Set as St;
        Ok(match set {
            St::SingleAssignment { scope, variable, values, .. } => {
                let name = parameter_name(variable);
                let value = match values.as_slice() {
                    [ast::Expr::Identifier(id)]
                        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default") =>
                    {
                        SetValue::Default
                    }
                    vals => SetValue::Value(
                        vals.iter().map(set_value_text).collect::<Vec<_>>().join(", "),
                    ),
                };
                match scope {
                    Some(ast::ContextModifier::Local) => Command::SetLocal { name, value },
                    _ => Command::Set { name, value },
                }
            }
            St::SetTransaction { modes, snapshot: None, .. } => {
                check_modes(modes)?;
                Command::SetTransaction
            }
            St::SetTimeZone { value, local } => {
                let name = "timezone".to_owned();
                let value = match value {
                    ast::Expr::Identifier(id)
                        if id.quote_style.is_none()
                            && ["local", "default"]
                                .iter()
                                .any(|w| id.value.eq_ignore_ascii_case(w)) =>
                    {
                        SetValue::Default
                    }
                    ast::Expr::Interval(iv) => SetValue::Value(interval_zone(iv)?),
                    other => SetValue::Value(set_value_text(other)),
                };
                if *local {
                    Command::SetLocal { name, value }
                } else {
                    Command::Set { name, value }
                }
            }
            St::SetNames { charset_name, .. } => Command::Set {
                name: "client_encoding".into(),
                value: SetValue::Value(charset_name.to_string()),
            },
            other => return Err(Error::unsupported(format!("{other}"))),
        })
    }

    /// Converts a SQL type name to ours.
    pub(crate) fn data_type(&self, t: &ast::DataType) -> Result<DataType> {
        use ast::DataType as D;
        let len = |l: &Option<ast::CharacterLength>, default: Option<u32>| -> Result<Option<u32>> {
            match l {
                None => Ok(default),
                Some(ast::CharacterLength::IntegerLength { length, .. }) => {
                    if *length == 0 || *length > 10_485_760 {
                        return Err(Error::InvalidParameterValue {
                            message: format!("length for type varchar must be between 1 and 10485760, not {length}"),
                        });
                    }
                    Ok(Some(*length as u32))
                }
                Some(ast::CharacterLength::Max) => Err(Error::unsupported("length MAX")),
            }
        };
        Ok(match t {
            D::SmallInt(_) | D::Int2(_) => DataType::Int16,
            D::Int(_) | D::Integer(_) | D::Int4(_) => DataType::Int32,
            D::BigInt(_) | D::Int8(_) => DataType::Int64,
            D::Real | D::Float4 => DataType::Float32,
            D::DoublePrecision | D::Float8 | D::Double(_) => DataType::Float64,
            D::Float(info) => match info {
                ast::ExactNumberInfo::Precision(p) if *p <= 24 => DataType::Float32,
                _ => DataType::Float64,
            },
            D::Numeric(info) | D::Decimal(info) | D::Dec(info) => match info {
                ast::ExactNumberInfo::None => DataType::Numeric(None),
                ast::ExactNumberInfo::Precision(p) => {
                    DataType::Numeric(Some((check_precision(*p)?, 0)))
                }
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                    let p = check_precision(*p)?;
                    if *s < 0 || *s as u64 > p as u64 {
                        return Err(Error::InvalidParameterValue {
                            message: format!(
                                "NUMERIC scale {s} must be between 0 and precision {p}"
                            ),
                        });
                    }
                    DataType::Numeric(Some((p, *s as u16)))
                }
            },
            D::Varchar(l) | D::CharacterVarying(l) => DataType::Varchar(len(l, None)?),
            D::Char(l) | D::Character(l) => DataType::Char(len(l, Some(1))?.unwrap_or(1)),
            D::Text => DataType::Text,
            D::Bool | D::Boolean => DataType::Bool,
            D::Date => DataType::Date,
            // A precision below 6 rounds every value PostgreSQL stores; Aspen keeps no type
            // modifier for timestamps, so only the default (6) is accepted.
            D::Timestamp(Some(p), _) if *p != 6 => {
                return Err(Error::unsupported(format!(
                    "timestamp({p}) (only the default precision, 6)"
                )))
            }
            D::Timestamp(_, tz) => match tz {
                ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone => DataType::Timestamp,
                ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => DataType::TimestampTz,
            },
            D::Time(Some(p), _) if *p != 6 => {
                return Err(Error::unsupported(format!(
                    "time({p}) (only the default precision, 6)"
                )))
            }
            D::Time(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
                DataType::Time
            }
            D::Time(..) => return Err(Error::unsupported("time with time zone")),
            D::Interval { fields: None, precision: None } => DataType::Interval,
            D::Uuid => DataType::Uuid,
            D::JSONB => DataType::Jsonb,
            D::JSON => DataType::Json,
            D::Interval { .. } => {
                return Err(Error::unsupported("interval with fields or a precision"))
            }
            D::Bytea => DataType::Bytea,
            D::Array(
                ast::ArrayElemTypeDef::SquareBracket(inner, _)
                | ast::ArrayElemTypeDef::Qualified(inner, _),
            ) => {
                let elem = self.data_type(inner)?;
                // `int[][]` is `int[]`, as in PostgreSQL (which does not enforce dimensions).
                if elem.element().is_some() {
                    return Ok(elem);
                }
                DataType::Array(catalog::ArrayElem::of(&elem).ok_or_else(|| {
                    Error::unsupported(format!(
                        "arrays of {} (an array's elements take no type modifier)",
                        elem.sql_name()
                    ))
                })?)
            }
            D::Custom(name, mods) if mods.is_empty() => {
                let (_, n) = self.object_name(name)?;
                match n.as_str() {
                    "int2" => DataType::Int16,
                    "int4" | "int" => DataType::Int32,
                    "int8" => DataType::Int64,
                    "float4" => DataType::Float32,
                    "float8" => DataType::Float64,
                    "bpchar" => DataType::Char(1),
                    "bool" => DataType::Bool,
                    "serial" | "bigserial" | "smallserial" | "serial2" | "serial4" | "serial8" => {
                        return Err(Error::unsupported(format!(
                            "type {n} outside CREATE TABLE (ADD COLUMN, casts)"
                        )))
                    }
                    "timestamptz" => return Err(Error::unsupported("timestamp with time zone")),
                    "timetz" => return Err(Error::unsupported("time with time zone")),
                    "jsonb" => DataType::Jsonb,
                    "json" => DataType::Json,
                    "regtype" => DataType::RegType,
                    "name" => DataType::Name,
                    _ => {
                        return Err(Error::UndefinedObject {
                            message: format!("type \"{n}\" does not exist"),
                        })
                    }
                }
            }
            other => return Err(Error::unsupported(format!("type {other}"))),
        })
    }

    /// `CREATE TABLE name AS query`: the columns are the query's, named and typed as its
    /// result (a name given twice is 42701); no constraints.
    fn bind_create_table_as(&mut self, ct: &ast::CreateTable) -> Result<Command> {
        let Some(q) = &ct.query else { return Err(Error::internal("no query")) };
        if !ct.columns.is_empty() || !ct.constraints.is_empty() {
            return Err(Error::unsupported("CREATE TABLE … AS with a column list"));
        }
        let mut plain = ct.clone();
        plain.query = None;
        let mut create = self.bind_create_table(&plain)?;
        let query = self.bind_query(q)?;
        for (position, c) in query.columns.iter().enumerate() {
            if create.def.columns.iter().any(|x| x.name == c.name) {
                return Err(Error::DuplicateColumn { name: c.name.clone() });
            }
            storable(&c.name, c.data_type)?;
            create.def.columns.push(Column {
                name: c.name.clone(),
                position: position as u16,
                data_type: c.data_type,
                not_null: false,
                default: None,
                sequence: None,
                dropped: false,
            });
        }
        Ok(Command::CreateTableAs { create, query: Box::new(query) })
    }

    /// `CREATE TABLE t (LIKE source [EXCLUDING DEFAULTS])`: the source's columns with their
    /// names, types and NOT NULL, as PostgreSQL copies them by default — no default, identity,
    /// constraint or index (INCLUDING … answers 0A000).
    fn like_columns(&self, like: &ast::CreateTableLike) -> Result<Vec<Column>> {
        if matches!(like.defaults, Some(ast::CreateTableLikeDefaults::Including)) {
            return Err(Error::unsupported("LIKE … INCLUDING DEFAULTS"));
        }
        let source = self.relation(&like.name)?;
        if source.is_sequence() {
            return Err(Error::unsupported("LIKE of a sequence"));
        }
        Ok(source
            .visible_columns()
            .enumerate()
            .map(|(position, c)| Column {
                name: c.name.clone(),
                position: position as u16,
                data_type: c.data_type,
                not_null: c.not_null
                    || source
                        .primary_index()
                        .is_some_and(|pk| !source.hidden_pk && pk.columns.contains(&c.position)),
                default: None,
                sequence: None,
                dropped: false,
            })
            .collect())
    }

    fn bind_create_table(&mut self, ct: &ast::CreateTable) -> Result<CreateTable> {
        if ct.query.is_some() || ct.clone.is_some() {
            return Err(Error::unsupported("CREATE TABLE AS / CLONE"));
        }
        let like = match &ct.like {
            None => Vec::new(),
            Some(ast::CreateTableLikeKind::Parenthesized(like))
                if ct.columns.is_empty() && ct.constraints.is_empty() =>
            {
                self.like_columns(like)?
            }
            // `CREATE TABLE t LIKE s` (MySQL's form) is no PostgreSQL syntax.
            Some(_) => {
                return Err(Error::Syntax {
                    message: "syntax error at or near \"LIKE\"".into(),
                    span: None,
                })
            }
        };
        if ct.temporary {
            return Err(Error::unsupported("temporary tables"));
        }
        if ct.partition_by.is_some() {
            return Err(Error::unsupported("partitioned tables (PARTITION BY)"));
        }
        if ct.partition_of.is_some() || ct.for_values.is_some() {
            return Err(Error::unsupported("partitions (PARTITION OF)"));
        }
        if ct.inherits.is_some() {
            return Err(Error::unsupported("table inheritance (INHERITS)"));
        }
        if let ast::CreateTableOptions::With(options) = &ct.table_options {
            storage_parameters(options)?;
        }
        let name = self.new_relation_name(&ct.name)?;
        let mut columns: Vec<Column> = like;
        let mut indexes: Vec<IndexDef> = Vec::new();
        // Unnamed unique constraints: their place in `indexes` and PostgreSQL's base name.
        let mut unnamed: Vec<(usize, String)> = Vec::new();
        let mut fks: Vec<ForeignKey> = Vec::new();
        let mut pending_fk: Vec<PendingFk> = Vec::new();
        // CHECK constraints as written: column constraints in column order, then the table's.
        let mut pending_checks: Vec<(Option<String>, &ast::CheckConstraint)> = Vec::new();
        for (pos, cd) in ct.columns.iter().enumerate() {
            check_name(&cd.name)?;
            let cname = ident(&cd.name);
            if columns.iter().any(|c| c.name == cname) {
                return Err(Error::DuplicateColumn { name: cname });
            }
            let (data_type, serial) = match serial_type(&cd.data_type) {
                Some(t) => (t, true),
                None => (self.data_type(&cd.data_type)?, false),
            };
            storable(&cname, data_type)?;
            let mut column = Column {
                name: cname.clone(),
                position: pos as u16,
                data_type,
                not_null: false,
                default: None,
                sequence: None,
                dropped: false,
            };
            let mut taken = |n: &str| {
                self.snapshot.relation_exists(n)
                    || n == name
                    || columns
                        .iter()
                        .any(|c: &Column| c.sequence.as_ref().is_some_and(|s| s.name == n))
            };
            let seq_name = sequence_name(&name, &cname, &mut taken);
            if serial {
                if cd.options.iter().any(|o| matches!(o.option, ColumnOption::Default(_))) {
                    return Err(Error::Syntax {
                        message: format!(
                            "multiple default values specified for column \"{cname}\" of table \"{name}\""
                        ),
                        span: None,
                    });
                }
                column.not_null = true;
                column.default = Some(ColumnDefault {
                    sql: format!("nextval('{}'::regclass)", super::display_ident(&seq_name)),
                });
                column.sequence =
                    Some(Sequence::counting(seq_name.clone(), Generated::Serial, data_type));
            }
            for opt in &cd.options {
                let cons_name = opt.name.as_ref().map(ident);
                match &opt.option {
                    ColumnOption::Null => {}
                    ColumnOption::NotNull => column.not_null = true,
                    ColumnOption::Default(e) => {
                        self.check_default(e, data_type)?;
                        column.default = Some(ColumnDefault { sql: e.to_string() });
                    }
                    ColumnOption::Check(c) => {
                        pending_checks.push((cons_name.or_else(|| c.name.as_ref().map(ident)), c))
                    }
                    ColumnOption::PrimaryKey(pk) => {
                        key_options(pk.characteristics, &pk.include)?;
                        column.not_null = true;
                        indexes.push(IndexDef {
                            name: cons_name.unwrap_or_else(|| format!("{name}_pkey")),
                            columns: vec![pos as u16],
                            unique: true,
                            primary: true,
                            constraint: true,
                            predicate: None,
                        });
                    }
                    ColumnOption::Unique(u) => {
                        key_options(u.characteristics, &u.include)?;
                        nulls_distinct(u.nulls_distinct == ast::NullsDistinctOption::NotDistinct)?;
                        indexes.push(IndexDef {
                            name: match cons_name {
                                Some(n) => n,
                                None => {
                                    unnamed.push((indexes.len(), format!("{name}_{cname}_key")));
                                    String::new()
                                }
                            },
                            columns: vec![pos as u16],
                            unique: true,
                            primary: false,
                            constraint: true,
                            predicate: None,
                        })
                    }
                    ColumnOption::ForeignKey(fk) => {
                        pending_fk.push((vec![cname.clone()], fk, cons_name))
                    }
                    // The collations Aspen has are its bytewise order: nothing to keep.
                    ColumnOption::Collation(c) if crate::types::is_string(&data_type) => {
                        super::expr::check_collation(c)?
                    }
                    ColumnOption::Generated {
                        generated_as: g @ (ast::GeneratedAs::Always | ast::GeneratedAs::ByDefault),
                        sequence_options,
                        generation_expr: None,
                        ..
                    } => {
                        if column.sequence.is_some() {
                            return Err(Error::Syntax {
                                message: format!(
                                    "multiple identity specifications for column \"{cname}\" of table \"{name}\""
                                ),
                                span: None,
                            });
                        }
                        if !matches!(data_type, DataType::Int16 | DataType::Int32 | DataType::Int64)
                        {
                            return Err(Error::InvalidParameterValue {
                                message:
                                    "identity column type must be smallint, integer, or bigint"
                                        .into(),
                            });
                        }
                        let generated = match g {
                            ast::GeneratedAs::Always => Generated::Always,
                            _ => Generated::ByDefault,
                        };
                        let options = sequence_options.as_deref().unwrap_or_default();
                        column.sequence =
                            Some(sequence_with(seq_name.clone(), generated, data_type, options)?);
                        column.not_null = true;
                    }
                    other => return Err(Error::unsupported(format!("column option {other}"))),
                }
            }
            if column.default.is_some()
                && column.sequence.as_ref().is_some_and(|s| s.generated != Generated::Serial)
            {
                return Err(Error::Syntax {
                    message: format!(
                        "both default and identity specified for column \"{cname}\" of table \"{name}\""
                    ),
                    span: None,
                });
            }
            columns.push(column);
        }
        let col_pos = |n: &str, cols: &[Column]| -> Result<u16> {
            cols.iter().find(|c| c.name == n).map(|c| c.position).ok_or_else(|| {
                Error::UndefinedColumn { name: format!("\"{n}\" named in key"), span: None }
            })
        };
        for c in &ct.constraints {
            match c {
                TableConstraint::PrimaryKey(pk) => {
                    key_options(pk.characteristics, &pk.include)?;
                    let cols = self.index_columns(&pk.columns)?;
                    let mut positions = Vec::new();
                    for n in &cols {
                        let p = col_pos(n, &columns)?;
                        columns[p as usize].not_null = true;
                        positions.push(p);
                    }
                    indexes.push(IndexDef {
                        name: pk.name.as_ref().map(ident).unwrap_or_else(|| format!("{name}_pkey")),
                        columns: positions,
                        unique: true,
                        primary: true,
                        constraint: true,
                        predicate: None,
                    });
                }
                TableConstraint::Unique(u) => {
                    key_options(u.characteristics, &u.include)?;
                    nulls_distinct(u.nulls_distinct == ast::NullsDistinctOption::NotDistinct)?;
                    let cols = self.index_columns(&u.columns)?;
                    let positions =
                        cols.iter().map(|n| col_pos(n, &columns)).collect::<Result<Vec<_>>>()?;
                    indexes.push(IndexDef {
                        name: match u.name.as_ref() {
                            Some(n) => ident(n),
                            None => {
                                unnamed.push((
                                    indexes.len(),
                                    format!("{name}_{}_key", cols.join("_")),
                                ));
                                String::new()
                            }
                        },
                        columns: positions,
                        unique: true,
                        primary: false,
                        constraint: true,
                        predicate: None,
                    });
                }
                TableConstraint::ForeignKey(fk) => pending_fk.push((
                    fk.columns.iter().map(ident).collect(),
                    fk,
                    fk.name.as_ref().map(ident),
                )),
                TableConstraint::Check(c) => pending_checks.push((c.name.as_ref().map(ident), c)),
                other => return Err(Error::unsupported(format!("table constraint {other}"))),
            }
        }
        if indexes.iter().filter(|i| i.primary).count() > 1 {
            return Err(Error::InvalidTableDefinition {
                message: format!("multiple primary keys for table \"{name}\" are not allowed"),
            });
        }
        for (cols, spec, cons_name) in pending_fk {
            let ref_cols: Vec<String> = spec.referred_columns.iter().map(ident).collect();
            let positions =
                cols.iter().map(|n| col_pos(n, &columns)).collect::<Result<Vec<_>>>()?;
            let (ref_id, ref_positions) = if self.object_name(&spec.foreign_table)?.1 == name {
                // Self-reference.
                let rc = if ref_cols.is_empty() {
                    indexes
                        .iter()
                        .find(|i| i.primary)
                        .map(|i| i.columns.clone())
                        .unwrap_or_default()
                } else {
                    ref_cols.iter().map(|n| col_pos(n, &columns)).collect::<Result<Vec<_>>>()?
                };
                (TableId(u32::MAX), rc) // this table: resolved once it is created
            } else {
                self.referenced_key(&spec.foreign_table, &ref_cols)?
            };
            let taken = |n: &str| fks.iter().any(|f: &ForeignKey| f.name == n);
            let fk = foreign_key(
                &name,
                &cols,
                positions,
                (ref_id, ref_positions),
                spec,
                cons_name,
                taken,
            )?;
            fks.push(fk);
        }
        for index in &indexes {
            for &p in &index.columns {
                no_json_key(columns[usize::from(p)].data_type)?;
            }
        }
        let hidden_pk = !indexes.iter().any(|i| i.primary);
        let mut checks: Vec<catalog::Check> = Vec::new();
        if !pending_checks.is_empty() {
            let shape = Table {
                id: TableId(0),
                name: name.clone(),
                columns: columns.clone(),
                indexes: Vec::new(),
                foreign_keys: Vec::new(),
                hidden_pk,
                view: None,
                checks: Vec::new(),
                comment: None,
                column_comments: Default::default(),
                owned_by: None,
            };
            for (given, c) in pending_checks {
                let taken = |n: &str| checks.iter().any(|c: &catalog::Check| c.name == n);
                if let Some(n) = given.as_deref().filter(|n| taken(n)) {
                    return Err(Error::DuplicateObject {
                        message: format!("check constraint \"{n}\" already exists"),
                    });
                }
                let check = self.bind_check(c, given, &shape, taken)?.0;
                checks.push(check);
            }
        }
        let indexes = self.merge_key_constraints(indexes, unnamed);
        Ok(CreateTable {
            def: TableDef {
                name,
                columns,
                indexes,
                foreign_keys: fks,
                hidden_pk,
                view: None,
                checks,
            },
            if_not_exists: ct.if_not_exists,
        })
    }

    fn index_columns(&self, cols: &[ast::IndexColumn]) -> Result<Vec<String>> {
        cols.iter()
            .map(|c| match &c.column.expr {
                ast::Expr::Identifier(id) => Ok(ident(id)),
                other => Err(Error::unsupported(format!("index on expression {other}"))),
            })
            .collect()
    }

    fn bind_create_index(&mut self, ci: &ast::CreateIndex) -> Result<IndexSpec> {
        if !ci.include.is_empty() {
            return Err(Error::unsupported("covering indexes (INCLUDE)"));
        }
        nulls_distinct(ci.nulls_distinct == Some(false))?;
        if let Some(u) = &ci.using {
            let using = u.to_string().to_lowercase();
            if using != "btree" && using != "hash" {
                return Err(Error::unsupported(format!("index method {using}")));
            }
        }
        let table = self.table(&ci.table_name)?;
        let cols = self.index_columns(&ci.columns)?;
        let mut positions = Vec::new();
        for n in &cols {
            let c = table
                .column(n)
                .ok_or_else(|| Error::UndefinedColumn { name: format!("\"{n}\""), span: None })?;
            no_json_key(c.data_type)?;
            positions.push(c.position);
        }
        let name = match &ci.name {
            Some(n) => self.object_name(n)?.1,
            None => format!("{}_{}_idx", table.name, cols.join("_")),
        };
        let predicate = match &ci.predicate {
            Some(p) => Some(self.bind_index_predicate(p, &table)?.0),
            None => None,
        };
        Ok(IndexSpec {
            table,
            def: IndexDef {
                name,
                columns: positions,
                unique: ci.unique,
                primary: false,
                constraint: false,
                predicate,
            },
            if_not_exists: ci.if_not_exists,
        })
    }

    /// A partial index's WHERE condition over `table`'s row: as a CHECK's (boolean, no
    /// subqueries, aggregates or parameters), and immutable — only operators, casts that do
    /// not depend on the time zone and a few functions of their arguments alone (`42P17`
    /// otherwise, as PostgreSQL's "functions in index predicate must be marked IMMUTABLE").
    /// Returns its text (as the catalog keeps it), the bound condition and the columns it
    /// reads.
    pub(crate) fn bind_index_predicate(
        &mut self,
        e: &ast::Expr,
        table: &Table,
    ) -> Result<(String, Expr, Vec<u16>)> {
        let (expr, columns) = self.bind_check_expr(e, table)?;
        let mut immutable = true;
        super::select::walk(&expr, &mut |x| match x {
            Expr::Func(f, _) => {
                immutable &= matches!(
                    f,
                    Func::Lower
                        | Func::Upper
                        | Func::Length
                        | Func::Trim
                        | Func::LTrim
                        | Func::RTrim
                )
            }
            // A cast that may read the session's time zone (to or from a date/time type).
            Expr::Cast(_, to, _) => {
                immutable &= !matches!(
                    to,
                    DataType::TimestampTz | DataType::Timestamp | DataType::Date | DataType::Time
                ) && !crate::types::is_string(to);
            }
            _ => {}
        });
        if !immutable {
            return Err(Error::DataException {
                message: "functions in index predicate must be marked IMMUTABLE".into(),
                sqlstate: "42P17",
            });
        }
        let mut text = e;
        while let ast::Expr::Nested(inner) = text {
            text = inner;
        }
        Ok((text.to_string(), expr, columns))
    }

    /// Whether a partial index of `table` reads column `position` in its WHERE condition.
    pub(crate) fn partial_index_reads(&mut self, table: &Table, position: u16) -> Result<bool> {
        for i in &table.indexes {
            if let Some(p) = &i.predicate {
                let e = super::dml::stored_expr(p)?;
                if self.bind_index_predicate(&e, table)?.2.contains(&position) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Checks a column default as PostgreSQL's `cookDefault` does when a table is created or
    /// altered: it must bind and be of a type assignable to the column; an untyped literal must
    /// read as the type (`int DEFAULT 'x'` is 22P02 now). Nothing is evaluated: a default too
    /// long or too large for the column fails only when a row takes it.
    fn check_default(&mut self, e: &ast::Expr, data_type: DataType) -> Result<()> {
        let t = self.bind_expr(e, &Scope::default())?;
        let to = match data_type {
            DataType::Varchar(_) => DataType::Varchar(None),
            DataType::Char(_) => DataType::Text,
            DataType::Numeric(_) => DataType::Numeric(None),
            other => other,
        };
        if t.unknown || t.ty == to || !crate::types::cast_allowed(&t.ty, &to, CastKind::Assignment)
        {
            self.coerce(t, to, CastKind::Assignment, e)?;
        }
        Ok(())
    }

    /// A CHECK constraint of `table` (which may not exist yet: its shape): its expression bound
    /// ([`Binder::bind_check_expr`]) and its name, `given` or PostgreSQL's
    /// `<table>_<column>_check` when it reads one column, `<table>_check` otherwise, with a
    /// number appended while `taken`.
    fn bind_check(
        &mut self,
        c: &ast::CheckConstraint,
        given: Option<String>,
        table: &Table,
        taken: impl Fn(&str) -> bool,
    ) -> Result<(catalog::Check, Expr)> {
        if c.enforced == Some(false) {
            return Err(Error::unsupported("NOT ENFORCED"));
        }
        let (expr, columns) = self.bind_check_expr(&c.expr, table)?;
        let name = match given {
            Some(name) => name,
            None => {
                let base = match columns.as_slice() {
                    [one] => format!("{}_{}_check", table.name, table.columns[*one as usize].name),
                    _ => format!("{}_check", table.name),
                };
                (0..)
                    .map(|i| if i == 0 { base.clone() } else { format!("{base}{i}") })
                    .find(|n| !taken(n))
                    .expect("some suffix is free")
            }
        };
        // Kept without its outer parentheses: psql shows `CHECK (a > 0)` for `CHECK ((a > 0))`.
        let mut text = c.expr.as_ref();
        while let ast::Expr::Nested(inner) = text {
            text = inner;
        }
        Ok((catalog::Check { name, sql: text.to_string(), columns }, expr))
    }

    /// Binds a CHECK constraint's expression over `table`'s row as PostgreSQL's
    /// `cookConstraint` does: boolean (42804), without subqueries (0A000), aggregates (42803),
    /// window functions (42P20) or parameters (42P02). Returns it and the columns it reads.
    /// The catalog keeps its text and binds it again by column name wherever rows are written,
    /// so a column qualified by the table's name, which the text would tie to the table's
    /// name, is refused (0A000).
    pub(crate) fn bind_check_expr(
        &mut self,
        e: &ast::Expr,
        table: &Table,
    ) -> Result<(Expr, Vec<u16>)> {
        let params = self.params.len();
        let qualified = Scope::from_table(table, &table.name);
        let mut scope = qualified.clone();
        for c in &mut scope.columns {
            c.relation = None;
        }
        let expr = match self.bind_condition(e, &scope, "CHECK") {
            Ok(expr) => expr,
            Err(_) if self.bind_condition(e, &qualified, "CHECK").is_ok() => {
                return Err(Error::unsupported("a qualified column name in a CHECK constraint"))
            }
            Err(Error::Grouping { span, .. }) => {
                return Err(Error::Grouping {
                    message: "aggregate functions are not allowed in check constraints".into(),
                    span,
                })
            }
            Err(Error::Windowing { .. }) => {
                return Err(Error::Windowing {
                    message: "window functions are not allowed in check constraints".into(),
                })
            }
            Err(other) => return Err(other),
        };
        if self.params.len() > params {
            return Err(Error::UndefinedParameter {
                message: format!("there is no parameter ${}", params + 1),
            });
        }
        if super::select::contains_subquery(&expr) {
            return Err(Error::unsupported_msg("cannot use subquery in check constraint"));
        }
        let mut columns = Vec::new();
        super::select::walk(&expr, &mut |x| {
            if let Expr::Column(i) = x {
                columns.push(*i as u16);
            }
        });
        columns.sort_unstable();
        columns.dedup();
        Ok((expr, columns))
    }

    /// ALTER TABLE with several actions: [`Command::AlterTableActions`]. A rename is a
    /// statement of its own in PostgreSQL's grammar, never one action among others.
    /// A CREATE TABLE's primary key and unique constraints as PostgreSQL keeps them
    /// (`transformIndexConstraints`): one that repeats an earlier one's columns (the primary
    /// key counting as first) is dropped, its name going to the earlier one if that has none;
    /// then each unnamed one (`unnamed`: its position and base name) gets a free name.
    fn merge_key_constraints(
        &self,
        indexes: Vec<IndexDef>,
        unnamed: Vec<(usize, String)>,
    ) -> Vec<IndexDef> {
        let base_of = |i: usize| unnamed.iter().find(|(at, _)| *at == i).map(|(_, b)| b.clone());
        let mut order: Vec<usize> = (0..indexes.len()).collect();
        if let Some(pk) = indexes.iter().position(|i| i.primary) {
            order.retain(|&i| i != pk);
            order.insert(0, pk);
        }
        let mut kept: Vec<(IndexDef, Option<String>)> = Vec::new();
        for i in order {
            let index = indexes[i].clone();
            match kept.iter_mut().find(|(k, _)| k.columns == index.columns) {
                Some((prior, base)) => {
                    prior.unique |= index.unique;
                    if base.is_some() && base_of(i).is_none() {
                        prior.name = index.name;
                        *base = None;
                    }
                }
                None => kept.push((index, base_of(i))),
            }
        }
        // Named in creation order, as PostgreSQL names each index when it creates it: an
        // unnamed one avoids the names before it (a later explicit name that takes one already
        // chosen is then 42P07, as in PostgreSQL).
        let mut out: Vec<IndexDef> = Vec::with_capacity(kept.len());
        for (mut index, base) in kept {
            if let Some(base) = base {
                index.name = self.free_name(&base, &out);
            }
            out.push(index);
        }
        out
    }

    /// The name for an unnamed unique constraint's index: `base`, or `base1`, `base2`, … while
    /// a relation of the catalog or an index of `pending` (the statement's own) has it, as
    /// PostgreSQL's `ChooseRelationName` picks.
    fn free_name(&self, base: &str, pending: &[IndexDef]) -> String {
        (0..)
            .map(|i| if i == 0 { base.to_string() } else { format!("{base}{i}") })
            .find(|n| {
                !self.snapshot.relation_exists(n)
                    && self.snapshot.index_by_name(n).is_none()
                    && self.snapshot.sequence(n).is_none()
                    && !pending.iter().any(|i| i.name == *n)
            })
            .expect("some suffix is free")
    }

    /// `SET CONSTRAINTS`: each name must name a constraint (42704), and to defer it, every
    /// constraint of that name must be deferrable (42809) — a foreign key declared DEFERRABLE;
    /// primary keys, unique and check constraints never are in Aspen. (IMMEDIATE may name
    /// any constraint, as in PostgreSQL.)
    pub(crate) fn bind_set_constraints(
        &mut self,
        names: Option<&[ast::ObjectName]>,
        deferred: bool,
    ) -> Result<Command> {
        let Some(names) = names else {
            return Ok(Command::SetConstraints { names: None, deferred });
        };
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let (_, n) = self.object_name(name)?;
            let mut found = false;
            for t in self.snapshot.tables() {
                for fk in t.foreign_keys.iter().filter(|f| f.name == n) {
                    found = true;
                    if deferred && fk.deferral == Deferral::NotDeferrable {
                        return Err(Error::WrongObjectType {
                            message: format!("constraint \"{n}\" is not deferrable"),
                        });
                    }
                }
                if constraint_name_taken(t, &n) && !t.foreign_keys.iter().any(|f| f.name == n) {
                    found = true;
                    if !deferred {
                        continue;
                    }
                    return Err(Error::WrongObjectType {
                        message: format!("constraint \"{n}\" is not deferrable"),
                    });
                }
            }
            if !found {
                return Err(Error::UndefinedObject {
                    message: format!("constraint \"{n}\" does not exist"),
                });
            }
            out.push(n);
        }
        Ok(Command::SetConstraints { names: Some(out), deferred })
    }

    /// `ALTER SEQUENCE` (`crate::parse::SequenceAction`).
    pub(crate) fn bind_alter_sequence(
        &mut self,
        if_exists: bool,
        name: &ast::ObjectName,
        action: &crate::parse::SequenceAction,
    ) -> Result<Command> {
        use crate::parse::SequenceAction as A;
        let (_, n) = self.object_name(name)?;
        let Some((table, column)) = self.snapshot.sequence(&n) else {
            if self.snapshot.relation_exists(&n) {
                return Err(Error::WrongObjectType {
                    message: format!("\"{n}\" is not a sequence"),
                });
            }
            if if_exists {
                return Ok(Command::Skip {
                    tag: "ALTER SEQUENCE",
                    code: "00000",
                    message: format!("relation \"{n}\" does not exist, skipping"),
                });
            }
            return Err(Error::UndefinedTable { name: n, span: self.span_of(name) });
        };
        let (table, position) = (table.clone(), column.position);
        let sequence = column.sequence.clone().expect("a sequence's column has one");
        Ok(match action {
            A::OwnerTo(role) => {
                return self.bind_owner_to(name, &ast::Owner::Ident(role.clone()), "ALTER SEQUENCE")
            }
            A::Restart(value) => Command::RestartSequence {
                value: value.unwrap_or(sequence.start),
                table,
                position,
                sequence,
            },
            A::OwnedBy(owner) => {
                let owner = match owner {
                    None => None,
                    Some(target) => self.sequence_owner(target)?,
                };
                if !table.is_sequence() {
                    // A serial or identity column's: it belongs to that column already.
                    if owner == Some((table.id, position)) {
                        return Ok(Command::NoOp("ALTER SEQUENCE"));
                    }
                    return Err(Error::unsupported(
                        "ALTER SEQUENCE … OWNED BY of a serial or identity column's sequence",
                    ));
                }
                Command::SetSequenceOwner { sequence: table.id, owner }
            }
        })
    }

    /// The column `OWNED BY table.column` names (`None` for `OWNED BY NONE`): the table must
    /// exist and have the column.
    fn sequence_owner(
        &mut self,
        target: &ast::ObjectName,
    ) -> Result<Option<(catalog::TableId, u16)>> {
        let parts = &target.0;
        if let [only] = parts.as_slice() {
            if only.as_ident().is_some_and(|i| i.quote_style.is_none() && ident(i) == "none") {
                return Ok(None);
            }
        }
        let Some((column, relation)) = parts.split_last().filter(|(_, r)| !r.is_empty()) else {
            return Err(Error::Syntax {
                message: "invalid relation name in OWNED BY option".into(),
                span: None,
            });
        };
        let owner = self.table(&ast::ObjectName(relation.to_vec()))?;
        let column = column.as_ident().map(ident).unwrap_or_default();
        let Some(c) = owner.column(&column) else {
            return Err(Error::UndefinedColumn {
                name: format!("\"{column}\" of relation \"{}\"", owner.name),
                span: None,
            });
        };
        Ok(Some((owner.id, c.position)))
    }

    /// `ALTER TABLE / SEQUENCE / VIEW name OWNER TO role`. Aspen keeps no owners: every
    /// relation belongs to the bootstrap superuser, so giving it to that role changes nothing
    /// (what pg_dump writes for a database `postgres` owns) and giving it to another is 0A000.
    pub(crate) fn bind_owner_to(
        &mut self,
        name: &ast::ObjectName,
        owner: &ast::Owner,
        tag: &'static str,
    ) -> Result<Command> {
        let (_, relation) = self.object_name(name)?;
        if !self.snapshot.relation_exists(&relation) {
            return Err(Error::UndefinedTable { name: relation, span: self.span_of(name) });
        }
        let role = match owner {
            ast::Owner::Ident(id) => ident(id),
            _ => return Err(Error::unsupported(format!("OWNER TO {owner}"))),
        };
        if !self.snapshot.roles().iter().any(|r| r.name == role) {
            return Err(Error::UndefinedObject {
                message: format!("role \"{role}\" does not exist"),
            });
        }
        if role != catalog::roles::BOOTSTRAP_ROLE {
            return Err(Error::unsupported(format!(
                "OWNER TO {role} (every relation is owned by {})",
                catalog::roles::BOOTSTRAP_ROLE
            )));
        }
        Ok(Command::NoOp(tag))
    }

    fn bind_alter_table_actions(&mut self, at: &ast::AlterTable) -> Result<Command> {
        use ast::AlterTableOperation as Op;
        let is_rename = |op: &Op| {
            matches!(
                op,
                Op::RenameTable { .. } | Op::RenameColumn { .. } | Op::RenameConstraint { .. }
            )
        };
        if let Some(at_rename) = at.operations.iter().position(is_rename) {
            // The parser stops at the comma after a rename, or at a rename after a comma.
            let near = if at_rename == 0 { "," } else { "RENAME" };
            return Err(Error::Syntax {
                message: format!("syntax error at or near \"{near}\""),
                span: None,
            });
        }
        let actions = at
            .operations
            .iter()
            .map(|op| {
                let mut one = at.clone();
                one.operations = vec![op.clone()];
                ast::Statement::AlterTable(one)
            })
            .collect();
        Ok(Command::AlterTableActions { sql: Arc::from(self.sql), actions })
    }

    fn bind_alter_table(&mut self, at: &ast::AlterTable) -> Result<Command> {
        if let [ast::AlterTableOperation::OwnerTo { new_owner }] = at.operations.as_slice() {
            return self.bind_owner_to(&at.name, new_owner, "ALTER TABLE");
        }
        let table = self.table(&at.name)?;
        let [op] = at.operations.as_slice() else {
            return self.bind_alter_table_actions(at);
        };
        match op {
            ast::AlterTableOperation::AddColumn { column_def, if_not_exists, .. } => {
                let data_type = self.data_type(&column_def.data_type)?;
                storable(&ident(&column_def.name), data_type)?;
                let mut column = Column {
                    name: ident(&column_def.name),
                    position: table.columns.len() as u16,
                    data_type,
                    not_null: false,
                    default: None,
                    sequence: None,
                    dropped: false,
                };
                let mut pending_checks = Vec::new();
                for opt in &column_def.options {
                    match &opt.option {
                        ColumnOption::Null => {}
                        ColumnOption::NotNull => column.not_null = true,
                        ColumnOption::Default(e) => {
                            self.check_default(e, data_type)?;
                            column.default = Some(ColumnDefault { sql: e.to_string() });
                        }
                        ColumnOption::Check(c) => pending_checks
                            .push((opt.name.as_ref().or(c.name.as_ref()).map(ident), c)),
                        other => {
                            return Err(Error::unsupported(format!("ADD COLUMN with {other}")))
                        }
                    }
                }
                let mut checks: Vec<(catalog::Check, Expr)> = Vec::new();
                if !pending_checks.is_empty() && table.column(&column.name).is_none() {
                    let mut shape = (*table).clone();
                    shape.columns.push(column.clone());
                    for (given, c) in pending_checks {
                        let taken = |n: &str| {
                            constraint_name_taken(&table, n) || checks.iter().any(|c| c.0.name == n)
                        };
                        let check = self.bind_check(c, given, &shape, taken)?;
                        checks.push(check);
                    }
                }
                Ok(Command::AddColumn { table, column, if_not_exists: *if_not_exists, checks })
            }
            ast::AlterTableOperation::DropColumn {
                column_names, if_exists, drop_behavior, ..
            } => {
                let [column] = column_names.as_slice() else {
                    return Err(Error::unsupported("DROP COLUMN of several columns"));
                };
                let name = ident(column);
                let position = table.column(&name).map(|c| c.position);
                if position.is_none() && !*if_exists {
                    return Err(Error::UndefinedColumn {
                        name: format!("\"{name}\" of relation \"{}\"", table.name),
                        span: None,
                    });
                }
                if table.primary_index().is_some_and(|pk| {
                    !table.hidden_pk && position.is_some_and(|p| pk.columns.contains(&p))
                }) {
                    return Err(Error::unsupported("dropping a column of the primary key"));
                }
                if let Some(p) = position {
                    if self.partial_index_reads(&table, p)? {
                        return Err(Error::unsupported(
                            "dropping a column a partial index's WHERE reads",
                        ));
                    }
                }
                let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                Ok(Command::DropColumn { table, name, position, cascade })
            }
            ast::AlterTableOperation::RenameConstraint { old_name, new_name } => {
                check_name(new_name)?;
                Ok(Command::RenameConstraint { table, old: ident(old_name), name: ident(new_name) })
            }
            ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                self.refuse_if_viewed(&table, "renaming a column")?;
                let (old, new) = (ident(old_column_name), ident(new_column_name));
                let column = table.column(&old).ok_or_else(|| Error::UndefinedColumn {
                    name: format!("\"{old}\""),
                    span: None,
                })?;
                if table.checks.iter().any(|c| c.columns.contains(&column.position)) {
                    return Err(Error::unsupported("renaming a column a CHECK constraint reads"));
                }
                if self.partial_index_reads(&table, column.position)? {
                    return Err(Error::unsupported(
                        "renaming a column a partial index's WHERE reads",
                    ));
                }
                if table.column(&new).is_some() {
                    return Err(Error::DuplicateColumnExists {
                        name: format!("{new}\" of relation \"{}", table.name),
                    });
                }
                check_name(new_column_name)?;
                let change = catalog::ColumnChange::Rename(new);
                Ok(Command::AlterColumn { position: column.position, table, change })
            }
            ast::AlterTableOperation::RenameTable { table_name } => {
                self.refuse_if_viewed(&table, "renaming a table")?;
                let (ast::RenameTableNameKind::As(name) | ast::RenameTableNameKind::To(name)) =
                    table_name;
                let (schema, name) = self.object_name(name)?;
                if schema.is_some() {
                    return Err(Error::Syntax {
                        message: "syntax error: the new name of a table takes no schema".into(),
                        span: None,
                    });
                }
                if self.snapshot.relation_exists(&name) {
                    return Err(Error::DuplicateTable { name });
                }
                Ok(Command::RenameTable { table, name })
            }
            ast::AlterTableOperation::AlterColumn { column_name, op } => {
                let name = ident(column_name);
                let column = table.column(&name).ok_or_else(|| Error::UndefinedColumn {
                    name: format!("\"{name}\" of relation \"{}\"", table.name),
                    span: None,
                })?;
                let identity =
                    column.sequence.as_ref().is_some_and(|s| s.generated != Generated::Serial);
                if let ast::AlterColumnOperation::AddGenerated { generated_as, sequence_options } =
                    op
                {
                    let not = |what: &str| Error::ObjectNotInPrerequisiteState {
                        message: format!("column \"{name}\" of relation \"{}\" {what}", table.name),
                    };
                    if !matches!(
                        column.data_type,
                        DataType::Int16 | DataType::Int32 | DataType::Int64
                    ) {
                        return Err(Error::InvalidParameterValue {
                            message: "identity column type must be smallint, integer, or bigint"
                                .into(),
                        });
                    }
                    if identity {
                        return Err(not("is already an identity column"));
                    }
                    if !column.not_null {
                        return Err(not("must be declared NOT NULL before identity can be added"));
                    }
                    if column.default.is_some() || column.sequence.is_some() {
                        return Err(not("already has a default value"));
                    }
                    let generated = match generated_as {
                        Some(ast::GeneratedAs::Always) => Generated::Always,
                        Some(ast::GeneratedAs::ByDefault) => Generated::ByDefault,
                        _ => return Err(Error::unsupported("ADD GENERATED … AS IDENTITY")),
                    };
                    let seq_name = sequence_name(&table.name, &name, &mut |n: &str| {
                        self.snapshot.relation_exists(n)
                    });
                    let options = sequence_options.as_deref().unwrap_or_default();
                    let seq = sequence_with(seq_name, generated, column.data_type, options)?;
                    let change = catalog::ColumnChange::Identity(seq);
                    return Ok(Command::AlterColumn { position: column.position, table, change });
                }
                let retype = matches!(op, ast::AlterColumnOperation::SetDataType { .. });
                if identity && !matches!(op, ast::AlterColumnOperation::SetNotNull) && !retype {
                    return Err(Error::SyntaxMisuse {
                        message: format!(
                            "column \"{name}\" of relation \"{}\" is an identity column",
                            table.name
                        ),
                        span: None,
                    });
                }
                let change = match op {
                    ast::AlterColumnOperation::SetNotNull => catalog::ColumnChange::NotNull(true),
                    ast::AlterColumnOperation::DropNotNull => catalog::ColumnChange::NotNull(false),
                    ast::AlterColumnOperation::DropDefault => catalog::ColumnChange::Default(None),
                    ast::AlterColumnOperation::SetDefault { value } => {
                        self.check_default(value, column.data_type)?;
                        catalog::ColumnChange::Default(Some(ColumnDefault {
                            sql: value.to_string(),
                        }))
                    }
                    ast::AlterColumnOperation::SetDataType { data_type, using, .. } => {
                        if using.is_some() {
                            return Err(Error::unsupported("ALTER COLUMN … TYPE … USING"));
                        }
                        if self.partial_index_reads(&table, column.position)? {
                            return Err(Error::unsupported(
                                "changing the type of a column a partial index's WHERE reads",
                            ));
                        }
                        let to = self.data_type(data_type)?;
                        storable(&column.name, to)?;
                        let from = column.data_type;
                        let narrower = |t: &DataType| match t {
                            DataType::Int16 => 0,
                            DataType::Int32 => 1,
                            _ => 2,
                        };
                        if identity && narrower(&to) < narrower(&from) {
                            return Err(Error::unsupported(
                                "narrowing the type of an identity column",
                            ));
                        }
                        if !crate::types::retypes_in_place(&from, &to) {
                            return Err(Error::unsupported(format!(
                                "ALTER COLUMN … TYPE from {} to {} (its rows would have to be \
                                 rewritten)",
                                from.sql_name(),
                                to.sql_name()
                            )));
                        }
                        catalog::ColumnChange::Type(to)
                    }
                    other => return Err(Error::unsupported(format!("ALTER COLUMN … {other}"))),
                };
                Ok(Command::AlterColumn { position: column.position, table, change })
            }
            ast::AlterTableOperation::AddConstraint { constraint, not_valid } => match constraint {
                TableConstraint::PrimaryKey(pk) => {
                    key_options(pk.characteristics, &pk.include)?;
                    let cols = self.index_columns(&pk.columns)?;
                    let positions = cols
                        .iter()
                        .map(|n| {
                            table.column(n).map(|c| c.position).ok_or_else(|| {
                                Error::UndefinedColumn { name: format!("\"{n}\""), span: None }
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let name = pk
                        .name
                        .as_ref()
                        .map(ident)
                        .unwrap_or_else(|| format!("{}_pkey", table.name));
                    for &p in &positions {
                        no_json_key(table.columns[usize::from(p)].data_type)?;
                    }
                    Ok(Command::AddIndex(IndexSpec {
                        table,
                        def: IndexDef {
                            name,
                            columns: positions,
                            unique: true,
                            primary: true,
                            constraint: true,
                            predicate: None,
                        },
                        if_not_exists: false,
                    }))
                }
                TableConstraint::Unique(u) => {
                    key_options(u.characteristics, &u.include)?;
                    nulls_distinct(u.nulls_distinct == ast::NullsDistinctOption::NotDistinct)?;
                    let cols = self.index_columns(&u.columns)?;
                    let positions = cols
                        .iter()
                        .map(|n| {
                            table.column(n).map(|c| c.position).ok_or_else(|| {
                                Error::UndefinedColumn { name: format!("\"{n}\""), span: None }
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let name = match u.name.as_ref() {
                        Some(n) => ident(n),
                        None => {
                            self.free_name(&format!("{}_{}_key", table.name, cols.join("_")), &[])
                        }
                    };
                    for &p in &positions {
                        no_json_key(table.columns[usize::from(p)].data_type)?;
                    }
                    Ok(Command::AddIndex(IndexSpec {
                        table,
                        def: IndexDef {
                            name,
                            columns: positions,
                            unique: true,
                            primary: false,
                            constraint: true,
                            predicate: None,
                        },
                        if_not_exists: false,
                    }))
                }
                TableConstraint::ForeignKey(spec) => {
                    let cols: Vec<String> = spec.columns.iter().map(ident).collect();
                    let positions = fk_positions(&table, &cols)?;
                    let ref_cols: Vec<String> = spec.referred_columns.iter().map(ident).collect();
                    let referenced = self.referenced_key(&spec.foreign_table, &ref_cols)?;
                    let name = spec.name.as_ref().map(ident);
                    let taken = |n: &str| table.foreign_keys.iter().any(|f| f.name == n);
                    let fk =
                        foreign_key(&table.name, &cols, positions, referenced, spec, name, taken)?;
                    Ok(Command::AddForeignKey { table, fk })
                }
                // NOT VALID (here and for a foreign key): Aspen validates the existing rows at
                // once, as a VALIDATE CONSTRAINT right after would.
                TableConstraint::Check(c) => {
                    let _ = not_valid;
                    let taken = |n: &str| constraint_name_taken(&table, n);
                    let given = c.name.as_ref().map(ident);
                    let (check, expr) = self.bind_check(c, given, &table, taken)?;
                    Ok(Command::AddCheck { table, check, expr })
                }
                other => Err(Error::unsupported(format!("ALTER TABLE ADD {other}"))),
            },
            // Every constraint Aspen has is validated (NOT VALID ones when added).
            ast::AlterTableOperation::ValidateConstraint { name } => {
                let name = ident(name);
                let known = table.checks.iter().any(|c| c.name == name)
                    || table.foreign_keys.iter().any(|f| f.name == name)
                    || table.indexes.iter().any(|i| i.constraint && i.name == name);
                if !known {
                    return Err(Error::UndefinedObject {
                        message: format!(
                            "constraint \"{name}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    });
                }
                Ok(Command::NoOp("ALTER TABLE"))
            }
            ast::AlterTableOperation::DropConstraint { if_exists, name, drop_behavior } => {
                if drop_behavior == &Some(ast::DropBehavior::Cascade) {
                    return Err(Error::unsupported("DROP CONSTRAINT … CASCADE"));
                }
                Ok(Command::DropConstraint { table, name: ident(name), if_exists: *if_exists })
            }
            other => Err(Error::unsupported(format!("ALTER TABLE {other}"))),
        }
    }

    /// The referenced side of a foreign key to an existing table: its id and the positions of
    /// `ref_cols`, or of its primary key when none are named.
    fn referenced_key(
        &mut self,
        ref_name: &ast::ObjectName,
        ref_cols: &[String],
    ) -> Result<(TableId, Vec<u16>)> {
        let rt = self.table(ref_name)?;
        let rc = if ref_cols.is_empty() {
            rt.primary_index().map(|i| i.columns.clone()).ok_or_else(|| Error::UndefinedObject {
                message: format!("there is no primary key for referenced table \"{}\"", rt.name),
            })?
        } else {
            fk_positions(&rt, ref_cols)?
        };
        Ok((rt.id, rc))
    }
}

/// The positions of the columns `cols` of `table`, named in a foreign key.
fn fk_positions(table: &Table, cols: &[String]) -> Result<Vec<u16>> {
    cols.iter()
        .map(|n| {
            table.column(n).map(|c| c.position).ok_or_else(|| Error::UndefinedColumn {
                name: format!("\"{n}\" referenced in foreign key constraint"),
                span: None,
            })
        })
        .collect()
}

/// The foreign key `spec` of table `table` on the columns `cols` (at `positions`), referencing
/// `(table id, positions)`, named `name` or PostgreSQL's `<table>_<columns>_fkey` (with 1, 2, …
/// appended while `taken` says the table has a foreign key of that name, as PostgreSQL does):
/// the column
/// counts must agree (42830). Every action is enforced, MATCH SIMPLE, NOT DEFERRABLE or
/// DEFERRABLE [INITIALLY DEFERRED] (NO ACTION's checks then wait for SET CONSTRAINTS or the
/// commit); another match or NOT ENFORCED answers 0A000 naming it rather than being accepted
/// and not enforced.
fn foreign_key(
    table: &str,
    cols: &[String],
    positions: Vec<u16>,
    (ref_table, ref_columns): (TableId, Vec<u16>),
    spec: &ast::ForeignKeyConstraint,
    name: Option<String>,
    taken: impl Fn(&str) -> bool,
) -> Result<ForeignKey> {
    use ast::ReferentialAction as A;
    if ref_columns.len() != positions.len() {
        return Err(Error::InvalidForeignKey {
            message: "number of referencing and referenced columns for foreign key disagree".into(),
        });
    }
    let action = |a: Option<A>| match a {
        None | Some(A::NoAction) => FkAction::NoAction,
        Some(A::Restrict) => FkAction::Restrict,
        Some(A::Cascade) => FkAction::Cascade,
        Some(A::SetNull) => FkAction::SetNull,
        Some(A::SetDefault) => FkAction::SetDefault,
    };
    let (on_delete, on_update) = (action(spec.on_delete), action(spec.on_update));
    if let Some(m) = spec.match_kind.filter(|m| *m != ast::ConstraintReferenceMatchKind::Simple) {
        return Err(Error::unsupported(format!("foreign keys with {m}")));
    }
    if let Some(c) = spec.characteristics.filter(|c| c.enforced == Some(false)) {
        return Err(Error::unsupported(format!("foreign keys {c}")));
    }
    let c = spec.characteristics.unwrap_or_default();
    let deferred = c.initially == Some(ast::DeferrableInitial::Deferred);
    let deferral = match c.deferrable {
        Some(false) if deferred => {
            return Err(Error::Syntax {
                message: "constraint declared INITIALLY DEFERRED must be DEFERRABLE".into(),
                span: None,
            })
        }
        _ if deferred => Deferral::Deferred,
        Some(true) => Deferral::Immediate,
        _ => Deferral::NotDeferrable,
    };
    let name = name.unwrap_or_else(|| {
        let base = format!("{table}_{}_fkey", cols.join("_"));
        (0..)
            .map(|i| if i == 0 { base.clone() } else { format!("{base}{i}") })
            .find(|n| !taken(n))
            .expect("some suffix is free")
    });
    Ok(ForeignKey {
        name,
        columns: positions,
        ref_table,
        ref_columns,
        on_delete,
        on_update,
        deferral,
    })
}

/// The integer type of `serial` / `bigserial` / `smallserial` (and `serial2/4/8`), if that is
/// what `t` names.
fn serial_type(t: &ast::DataType) -> Option<DataType> {
    let ast::DataType::Custom(name, mods) = t else { return None };
    if !mods.is_empty() || name.0.len() != 1 {
        return None;
    }
    match name.to_string().to_ascii_lowercase().as_str() {
        "serial" | "serial4" => Some(DataType::Int32),
        "bigserial" | "serial8" => Some(DataType::Int64),
        "smallserial" | "serial2" => Some(DataType::Int16),
        _ => None,
    }
}

/// The name PostgreSQL gives the sequence of column `column` of table `table`:
/// `<table>_<column>_seq`, with a number appended while the name is `taken`.
fn sequence_name(table: &str, column: &str, taken: &mut dyn FnMut(&str) -> bool) -> String {
    let base = format!("{table}_{column}_seq");
    (0..)
        .map(|i| if i == 0 { base.clone() } else { format!("{base}{i}") })
        .find(|n| !taken(n))
        .expect("some suffix is free")
}

/// An identity column's sequence: PostgreSQL's defaults for `data_type`, changed by the
/// options of `GENERATED … AS IDENTITY (…)`.
fn sequence_with(
    name: String,
    generated: Generated,
    data_type: DataType,
    options: &[ast::SequenceOptions],
) -> Result<Sequence> {
    let mut seq = Sequence::counting(name, generated, data_type);
    let type_max = seq.max;
    let (mut min, mut max, mut start) = (None, None, None);
    for option in options {
        match option {
            ast::SequenceOptions::IncrementBy(e, _) => seq.increment = int_option(e)?,
            ast::SequenceOptions::MinValue(e) => min = e.as_ref().map(int_option).transpose()?,
            ast::SequenceOptions::MaxValue(e) => max = e.as_ref().map(int_option).transpose()?,
            ast::SequenceOptions::StartWith(e, _) => start = Some(int_option(e)?),
            ast::SequenceOptions::Cache(e) => {
                int_option(e)?;
            }
            // The flag says `NO CYCLE`.
            ast::SequenceOptions::Cycle(true) => {}
            ast::SequenceOptions::Cycle(false) => {
                return Err(Error::unsupported("sequences that CYCLE"))
            }
        }
    }
    if seq.increment == 0 {
        return Err(Error::InvalidParameterValue { message: "INCREMENT must not be zero".into() });
    }
    let type_min = -type_max - 1;
    let (default_min, default_max) = if seq.increment > 0 { (1, type_max) } else { (type_min, -1) };
    seq.min = min.unwrap_or(default_min);
    seq.max = max.unwrap_or(default_max);
    for (bound, what) in [(seq.min, "MINVALUE"), (seq.max, "MAXVALUE")] {
        if bound < type_min || bound > type_max {
            return Err(Error::InvalidParameterValue {
                message: format!(
                    "{what} ({bound}) is out of range for sequence data type {}",
                    data_type.sql_name()
                ),
            });
        }
    }
    if seq.min >= seq.max {
        return Err(Error::InvalidParameterValue {
            message: format!("MINVALUE ({}) must be less than MAXVALUE ({})", seq.min, seq.max),
        });
    }
    seq.start = start.unwrap_or(if seq.increment > 0 { seq.min } else { seq.max });
    if seq.start < seq.min {
        return Err(Error::InvalidParameterValue {
            message: format!(
                "START value ({}) cannot be less than MINVALUE ({})",
                seq.start, seq.min
            ),
        });
    }
    if seq.start > seq.max {
        return Err(Error::InvalidParameterValue {
            message: format!(
                "START value ({}) cannot be greater than MAXVALUE ({})",
                seq.start, seq.max
            ),
        });
    }
    Ok(seq)
}

/// A sequence option's value: an integer constant, possibly negative.
fn int_option(e: &ast::Expr) -> Result<i64> {
    let (negative, inner) = match e {
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => (true, expr.as_ref()),
        other => (false, other),
    };
    let text = match inner {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    let text = if negative { format!("-{text}") } else { text };
    text.parse().map_err(|_| Error::Syntax {
        message: format!("syntax error at or near \"{e}\""),
        span: None,
    })
}

/// A foreign key as written: (its columns, the rest of it, its constraint name).
type PendingFk<'a> = (Vec<String>, &'a ast::ForeignKeyConstraint, Option<String>);

/// Whether `word` (lower case) is one of PostgreSQL's key words that are not unreserved: fully
/// reserved, or reserved as a column or type / function name (`pg_get_keywords()` with
/// `catcode <> 'U'`). PostgreSQL's `quote_identifier` quotes an identifier spelled like one.
pub(crate) fn is_reserved(word: &str) -> bool {
    RESERVED.contains(&word) || NAME_RESERVED.contains(&word)
}

/// PostgreSQL 15's key words that may not be a column name (`catcode` C) or a type or function
/// name (`catcode` T) unless quoted.
const NAME_RESERVED: &[&str] = &[
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "char",
    "character",
    "coalesce",
    "collation",
    "concurrently",
    "cross",
    "current_schema",
    "dec",
    "decimal",
    "exists",
    "extract",
    "float",
    "freeze",
    "full",
    "greatest",
    "grouping",
    "ilike",
    "inner",
    "inout",
    "int",
    "integer",
    "interval",
    "is",
    "isnull",
    "join",
    "least",
    "left",
    "like",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "notnull",
    "nullif",
    "numeric",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "position",
    "precision",
    "real",
    "right",
    "row",
    "setof",
    "similar",
    "smallint",
    "substring",
    "tablesample",
    "time",
    "timestamp",
    "treat",
    "trim",
    "values",
    "varchar",
    "verbose",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// PostgreSQL's fully reserved key words: they cannot name a table or column unless quoted.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// Rejects an unquoted reserved key word used as a name, as PostgreSQL's grammar does.
fn check_name(id: &ast::Ident) -> Result<()> {
    if id.quote_style.is_none() && RESERVED.contains(&id.value.to_lowercase().as_str()) {
        return Err(Error::Syntax {
            message: format!("syntax error at or near \"{}\"", id.value),
            span: None,
        });
    }
    Ok(())
}

fn check_precision(p: u64) -> Result<u16> {
    if p == 0 || p > 1000 {
        return Err(Error::InvalidParameterValue {
            message: format!("NUMERIC precision {p} must be between 1 and 1000"),
        });
    }
    Ok(p as u16)
}

fn check_modes(modes: &[ast::TransactionMode]) -> Result<()> {
    for m in modes {
        if let ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadOnly) = m {
            // Read-only transactions are accepted; writes in them are still checked by nothing
            // here yet, so refuse rather than silently allow.
            return Err(Error::unsupported("READ ONLY transactions"));
        }
    }
    Ok(())
}

/// SET values as PostgreSQL receives them: identifiers and strings unquoted, numbers as text.
/// `SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE` (what Sequelize and other ORMs send on
/// connect): the fixed offset as the POSIX-style zone PostgreSQL shows for it,
/// `<+05:30>-05:30` (`<+00>-00` for UTC). The interval is read plainly (`'+05:30'` is hours and
/// minutes), or as hours with `HOUR`; other fields are 0A000. Months or days in it are 22023,
/// as in PostgreSQL.
fn interval_zone(iv: &ast::Interval) -> Result<String> {
    use ast::DateTimeField as F;
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => return Err(Error::unsupported(format!("SET TIME ZONE {other}"))),
    };
    let shown = format!("INTERVAL '{text}'");
    let invalid = |detail: &str| Error::InvalidZone {
        message: format!("invalid value for parameter \"TimeZone\": \"{shown}\""),
        detail: detail.into(),
    };
    let iv_value = match (&iv.leading_field, &iv.last_field) {
        (None, None) | (Some(F::Hour), Some(F::Minute | F::Second)) => {
            match crate::types::parse_text(&text, &DataType::Interval)? {
                crate::types::Value::Interval(i) => i,
                _ => return Err(Error::internal("an interval parsed as something else")),
            }
        }
        (Some(F::Hour), None) => {
            let hours: i64 = text.trim().parse().map_err(|_| Error::InvalidTextRepresentation {
                message: format!("invalid input syntax for type interval: \"{text}\""),
            })?;
            crate::types::Interval { months: 0, days: 0, micros: hours * 3_600_000_000 }
        }
        _ => {
            return Err(Error::unsupported(format!(
                "SET TIME ZONE {}",
                ast::Expr::Interval(iv.clone())
            )))
        }
    };
    if iv_value.months != 0 {
        return Err(invalid("Cannot specify months in time zone interval."));
    }
    if iv_value.days != 0 {
        return Err(invalid("Cannot specify days in time zone interval."));
    }
    let secs = iv_value.micros / 1_000_000;
    let hms = |s: i64| {
        let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
        match (m, sec) {
            (0, 0) => format!("{h:02}"),
            (_, 0) => format!("{h:02}:{m:02}"),
            _ => format!("{h:02}:{m:02}:{sec:02}"),
        }
    };
    let (ahead, behind) = if secs < 0 { ('-', '+') } else { ('+', '-') };
    Ok(format!("<{ahead}{}>{behind}{}", hms(secs.abs()), hms(secs.abs())))
}

fn set_value_text(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(id) => id.value.clone(),
        other => other.to_string(),
    }
}

/// A primary key or unique constraint's options Aspen can honour: none of DEFERRABLE (its
/// uniqueness would be checked at commit; Aspen checks it at once), NOT ENFORCED, INCLUDE.
fn key_options(c: Option<ast::ConstraintCharacteristics>, include: &[ast::Ident]) -> Result<()> {
    if let Some(c) = c.filter(|c| {
        c.deferrable == Some(true)
            || c.initially == Some(ast::DeferrableInitial::Deferred)
            || c.enforced == Some(false)
    }) {
        return Err(Error::unsupported(format!("unique and primary key constraints {c}")));
    }
    if !include.is_empty() {
        return Err(Error::unsupported("INCLUDE columns of a unique or primary key constraint"));
    }
    Ok(())
}

/// `NULLS NOT DISTINCT` (PostgreSQL 15) makes NULLs equal for a unique index. Aspen's unique
/// indexes let NULLs repeat, so it is refused, never ignored.
fn nulls_distinct(not_distinct: bool) -> Result<()> {
    if not_distinct {
        return Err(Error::unsupported("NULLS NOT DISTINCT"));
    }
    Ok(())
}

/// `WITH (…)` of CREATE TABLE: PostgreSQL's table storage parameters are accepted and mean
/// nothing to an in-memory engine; any other name is an error, as in PostgreSQL.
fn storage_parameters(options: &[ast::SqlOption]) -> Result<()> {
    const KNOWN: &[&str] = &[
        "fillfactor",
        "toast_tuple_target",
        "parallel_workers",
        "autovacuum_enabled",
        "autovacuum_vacuum_threshold",
        "autovacuum_vacuum_insert_threshold",
        "autovacuum_analyze_threshold",
        "autovacuum_vacuum_scale_factor",
        "autovacuum_vacuum_insert_scale_factor",
        "autovacuum_analyze_scale_factor",
        "autovacuum_vacuum_cost_delay",
        "autovacuum_vacuum_cost_limit",
        "autovacuum_freeze_min_age",
        "autovacuum_freeze_max_age",
        "autovacuum_freeze_table_age",
        "autovacuum_multixact_freeze_min_age",
        "autovacuum_multixact_freeze_max_age",
        "autovacuum_multixact_freeze_table_age",
        "log_autovacuum_min_duration",
        "user_catalog_table",
        "vacuum_index_cleanup",
        "vacuum_truncate",
        "oids",
    ];
    for option in options {
        let key = match option {
            ast::SqlOption::KeyValue { key, .. } | ast::SqlOption::Ident(key) => key,
            other => return Err(Error::unsupported(format!("table option {other}"))),
        };
        let name = ident(key);
        if !KNOWN.contains(&name.as_str()) {
            return Err(Error::InvalidParameterValue {
                message: format!("unrecognized parameter \"{name}\""),
            });
        }
    }
    Ok(())
}

/// Whether `name` names a constraint of `table` (a check, a foreign key, a PRIMARY KEY or
/// UNIQUE constraint): constraints share one namespace per table, as in PostgreSQL.
fn constraint_name_taken(table: &Table, name: &str) -> bool {
    table.checks.iter().any(|c| c.name == name)
        || table.foreign_keys.iter().any(|f| f.name == name)
        || table.indexes.iter().any(|i| i.constraint && i.name == name)
}

/// `42P16` for a column of a pseudo-type (`void`, what `pg_sleep` returns), which no table or
/// view column may have; `0A000` for one of type `regtype`, which Aspen does not store.
fn storable(name: &str, ty: DataType) -> Result<()> {
    match ty {
        DataType::Void => Err(Error::InvalidTableDefinition {
            message: format!("column \"{name}\" has pseudo-type void"),
        }),
        // PostgreSQL stores a regtype column (as an OID); Aspen refuses rather than keep it.
        DataType::RegType | DataType::Name => {
            Err(Error::unsupported(format!("column \"{name}\" of type {}", ty.sql_name())))
        }
        _ => Ok(()),
    }
}

/// A role's name: one identifier, not one PostgreSQL reserves.
fn role_name(name: &ast::Ident) -> Result<String> {
    let name = ident(name);
    if name.starts_with("pg_") {
        return Err(Error::ReservedName {
            message: format!("role name \"{name}\" is reserved"),
            detail: "Role names starting with \"pg_\" are reserved.".into(),
        });
    }
    if ["public", "none"].contains(&name.as_str()) {
        return Err(Error::ReservedName {
            message: format!("role name \"{name}\" is reserved"),
            detail: String::new(),
        });
    }
    Ok(name)
}

/// CREATE ROLE (and CREATE USER, which the parser made `CREATE ROLE … LOGIN`).
fn bind_create_role(cr: &ast::CreateRole) -> Result<Command> {
    let [name] = cr.names.as_slice() else {
        return Err(Error::unsupported("CREATE ROLE of several roles"));
    };
    let name = match name.0.as_slice() {
        [part] => role_name(part.as_ident().ok_or_else(|| Error::unsupported("CREATE ROLE"))?)?,
        _ => return Err(Error::unsupported("CREATE ROLE of a qualified name")),
    };
    if cr.if_not_exists {
        return Err(Error::unsupported("CREATE ROLE IF NOT EXISTS"));
    }
    if cr.connection_limit.is_some() {
        return Err(Error::unsupported("CONNECTION LIMIT"));
    }
    if cr.valid_until.is_some() {
        return Err(Error::unsupported("VALID UNTIL"));
    }
    let members = [&cr.in_role, &cr.in_group, &cr.role, &cr.user, &cr.admin];
    if members.iter().any(|m| !m.is_empty()) || cr.authorization_owner.is_some() {
        return Err(Error::unsupported("role membership (IN ROLE, ROLE, ADMIN)"));
    }
    let options = RoleOptions {
        superuser: cr.superuser,
        create_db: cr.create_db,
        create_role: cr.create_role,
        inherit: cr.inherit,
        login: cr.login,
        replication: cr.replication,
        bypass_rls: cr.bypassrls,
        password: cr.password.as_ref().map(password).transpose()?,
    };
    Ok(Command::CreateRole { role: catalog::Role::new(name, false), options })
}

/// The options of ALTER ROLE … [WITH].
fn role_options(options: &[ast::RoleOption]) -> Result<RoleOptions> {
    use ast::RoleOption as O;
    let mut out = RoleOptions::default();
    for option in options {
        match option {
            O::SuperUser(v) => out.superuser = Some(*v),
            O::CreateDB(v) => out.create_db = Some(*v),
            O::CreateRole(v) => out.create_role = Some(*v),
            O::Inherit(v) => out.inherit = Some(*v),
            O::Login(v) => out.login = Some(*v),
            O::Replication(v) => out.replication = Some(*v),
            O::BypassRLS(v) => out.bypass_rls = Some(*v),
            O::Password(p) => out.password = Some(password(p)?),
            O::ConnectionLimit(_) => return Err(Error::unsupported("CONNECTION LIMIT")),
            O::ValidUntil(_) => return Err(Error::unsupported("VALID UNTIL")),
        }
    }
    Ok(out)
}

/// PASSWORD 'text' or PASSWORD NULL.
fn password(p: &ast::Password) -> Result<Option<String>> {
    match p {
        ast::Password::NullPassword => Ok(None),
        ast::Password::Password(ast::Expr::Value(v)) => match &v.value {
            ast::Value::SingleQuotedString(s) => Ok(Some(s.clone())),
            ast::Value::Null => Ok(None),
            other => Err(Error::Syntax {
                message: format!("syntax error at or near \"{other}\""),
                span: None,
            }),
        },
        ast::Password::Password(other) => Err(Error::Syntax {
            message: format!("syntax error at or near \"{other}\""),
            span: None,
        }),
    }
}

/// `SELECT [pg_catalog.]set_config(name, value, is_local) [AS c]` and nothing else: the
/// statement pg_dump starts with (`set_config('search_path', '', false)`), run as a SET.
/// `None` for any other statement; 0A000 when the arguments are not constants.
pub(crate) fn set_config_command(q: &ast::Query) -> Result<Option<Command>> {
    let ast::SetExpr::Select(select) = q.body.as_ref() else { return Ok(None) };
    let plain = q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none();
    let plain = plain && select.from.is_empty() && select.selection.is_none();
    let [item] = select.projection.as_slice() else { return Ok(None) };
    let (expr, alias) = match item {
        ast::SelectItem::UnnamedExpr(e) => (e, None),
        ast::SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident(alias))),
        _ => return Ok(None),
    };
    let ast::Expr::Function(f) = expr else { return Ok(None) };
    let name: Vec<String> = f.name.0.iter().filter_map(|p| p.as_ident()).map(ident).collect();
    let named = matches!(
        name.iter().map(String::as_str).collect::<Vec<_>>().as_slice(),
        ["set_config"] | ["pg_catalog", "set_config"]
    );
    if !plain || !named {
        return Ok(None);
    }
    let ast::FunctionArguments::List(list) = &f.args else { return Ok(None) };
    let args: Vec<&ast::Expr> = list
        .args
        .iter()
        .filter_map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect();
    let constant = |e: &ast::Expr| match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.clone()),
            ast::Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        _ => None,
    };
    let [n, v, l] = args.as_slice() else { return Ok(None) };
    let (Some(name), Some(value), Some(local)) = (constant(n), constant(v), constant(l)) else {
        return Err(Error::unsupported("set_config with arguments that are not constants"));
    };
    let local = match local.as_str() {
        "true" | "t" | "on" => true,
        "false" | "f" | "off" => false,
        _ => return Err(Error::unsupported("set_config with arguments that are not constants")),
    };
    let column = alias.unwrap_or_else(|| "set_config".to_owned());
    Ok(Some(Command::SetConfig { name, value, local, column }))
}

/// A configuration parameter's name as SET and RESET name it: a placeholder keeps its prefix
/// (`app.user`).
fn parameter_name(name: &ast::ObjectName) -> String {
    name.0.iter().filter_map(|p| p.as_ident()).map(ident).collect::<Vec<_>>().join(".")
}

/// json has no equality, so no btree index (a key, a unique constraint) can hold it: `42704`,
/// as PostgreSQL's missing operator class.
fn no_json_key(data_type: DataType) -> Result<()> {
    if data_type == DataType::Json {
        return Err(Error::UndefinedObject {
            message: "data type json has no default operator class for access method \"btree\""
                .into(),
        });
    }
    Ok(())
}
