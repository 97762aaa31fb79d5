//! Sessions: one per connection. Transaction control, prepare / bind / execute, SET / SHOW.
//!
//! Transaction model (DESIGN.md §2): every transaction is SERIALIZABLE. Outside a transaction
//! block each statement runs in its own transaction and commits at once; a statement that fails
//! OCC validation is retried up to `AUTOCOMMIT_RETRIES` times before the client sees `40001`.
//! Inside a block (BEGIN … COMMIT) an error puts the block into the failed state: every
//! statement gets `25P02` until ROLLBACK (or COMMIT, which then reports ROLLBACK).
//! Several statements of one simple Query, or of one extended-protocol pipeline (up to Sync),
//! outside a block form an *implicit* transaction, as in PostgreSQL: it commits at the end and
//! an error rolls all of it back.
//!
//! DDL is transactional. Each transaction stages its schema changes in a private catalog
//! batch ([`catalog::DdlBatch`]) that its own statements bind against; the engine objects it
//! creates exist at once (nobody else can name them) and are dropped on rollback, the ones it
//! drops are removed after commit. COMMIT validates the batch under the catalog's writer lock,
//! commits the rows and waits until they are durable, then publishes the batch: a crash in
//! between leaves rows under table ids the catalog never named, which recovery skips. SET is
//! transactional too (undone by a rollback).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use catalog::{Catalog, DataType, Snapshot, Table, TableId};
use chrono::NaiveDateTime;
use parking_lot::RwLock;

use crate::bind::{Binder, Bound, Command, RoleOptions, SetValue};
use crate::error::{Error, Result};
use crate::exec::constraints::{
    check_foreign_key, check_row, unique_error, write_updated, Referential,
};
use crate::exec::{self, Ctx, Env};
use crate::parse::Parsed;
use crate::plan::{Access, Expr, InsertValue, OutColumn, Plan, Statement};
use crate::types::{self, Value};

/// How many times an autocommit statement that fails validation is retried by the server.
pub const AUTOCOMMIT_RETRIES: usize = 8;

/// Plan cache capacity (entries); the cache is cleared when it fills.
pub const PLAN_CACHE_CAPACITY: usize = 4096;

/// Server-wide options of a [`Database`] (the durability wiring lives in `recovery::startup`).
#[derive(Debug, Clone, Default)]
pub struct DatabaseOptions {
    /// Server default of `synchronous_commit` (`true` = "on": acknowledge only durable commits).
    pub synchronous_commit: bool,
    /// Read-only server parameters shown by `SHOW` (e.g. `data_directory`, `aspen.wal_dirs`),
    /// by canonical GUC name. Names that are not GUCs are ignored.
    pub settings: Vec<(&'static str, String)>,
}

/// Runs a checkpoint (DESIGN.md §5) for the `CHECKPOINT` statement. Installed by
/// `recovery::startup` (the SQL layer does not depend on `recovery`); an in-memory database
/// has none and `CHECKPOINT` does nothing there.
pub trait Checkpointer: Send + Sync {
    /// Takes a checkpoint and returns when it is valid (or why it failed).
    fn checkpoint(&self) -> std::result::Result<(), String>;
}

/// Whether a plan runs in a bounded, short time: every table access is a point get, an index
/// range bounded by key values, or stops after a LIMIT; nothing generates rows without bound.
/// (Subqueries inside expressions are not inspected.)
fn plan_is_short(plan: &crate::plan::Plan) -> bool {
    use crate::plan::{Access, Plan};
    if !plan.exprs().into_iter().all(expr_is_short) {
        return false;
    }
    match plan {
        Plan::Values { .. } => true,
        Plan::Scan { access, limit, .. } => match access {
            Access::PointGet(_) | Access::Each { .. } => true,
            Access::Range { eq, lo, hi, .. } => {
                !eq.is_empty() || lo.is_some() || hi.is_some() || limit.is_some()
            }
            Access::Full => limit.is_some(),
        },
        // A recursive union's steps are not bounded.
        Plan::GenerateSeries { .. }
        | Plan::JsonbRows { .. }
        | Plan::Unnest { .. }
        | Plan::RecursiveUnion { .. } => false,
        other => other.inputs().into_iter().all(plan_is_short),
    }
}

/// Whether an expression evaluates quickly: its subqueries' plans are short, and it does not
/// wait (`pg_sleep`, `pg_advisory_lock`).
fn expr_is_short(e: &Expr) -> bool {
    let mut short = true;
    crate::bind::walk_expr(e, &mut |x| match x {
        Expr::Subquery(p) | Expr::Exists(p, _) | Expr::InSubquery(_, p, _) => {
            short &= plan_is_short(p)
        }
        Expr::Func(f, _) if f.waits() => short = false,
        _ => {}
    });
    short
}

/// A bound statement cached for reuse.
#[derive(Debug)]
struct Cached {
    bound: Bound,
    param_types: Vec<DataType>,
    columns: Option<Arc<Vec<ColumnInfo>>>,
    version: u64,
    /// [`Prepared::is_short`], decided once when the statement is bound.
    short: bool,
}

/// Cached plans by (statement text, declared parameter OIDs).
type PlanCache = std::collections::HashMap<(String, Vec<u32>), Arc<Cached>>;

/// The shared database: catalog, engine, plan cache. One per server.
pub struct Database {
    catalog: Catalog,
    engine: txn::Engine,
    plans: RwLock<PlanCache>,
    next_buffer: AtomicUsize,
    log_buffers: usize,
    /// Server-level values of GUCs (over their built-in defaults).
    settings: BTreeMap<&'static str, String>,
    checkpointer: std::sync::OnceLock<Arc<dyn Checkpointer>>,
    /// Orders schema changes against the commits of writers: a writer's commit (its check that
    /// the tables it wrote are unchanged, and the engine commit) holds it shared; a schema
    /// change holds it exclusively from its engine commit until its catalog is published. So a
    /// writer either commits before the change's engine commit (whose validation then sees the
    /// writer's rows, as its scans must) or sees the published change and fails (`40001`).
    schema_gate: RwLock<()>,
    /// The sessions' advisory locks.
    advisory: crate::advisory::AdvisoryLocks,
    /// Numbers the sessions (their identity in `advisory`).
    next_session: std::sync::atomic::AtomicU64,
}

impl Database {
    /// A database whose catalog and log live in memory (tests, benchmarks): nothing survives
    /// the process. A durable database is opened by `recovery::startup`.
    pub fn in_memory(log_buffers: usize) -> Arc<Database> {
        let log = Arc::new(wal::Log::new(log_buffers.max(1)));
        let options = DatabaseOptions { synchronous_commit: true, settings: vec![] };
        Database::new(Catalog::in_memory(), txn::Engine::new(log), options)
    }

    /// A database over `catalog` and `engine`: creates an empty engine table (with its
    /// secondary indexes) for every catalog table. Recovery then replays rows into
    /// [`Database::engine`] and calls [`Database::restore_row_ids`].
    pub fn new(catalog: Catalog, engine: txn::Engine, options: DatabaseOptions) -> Arc<Database> {
        server_start_time();
        let log_buffers = engine.log().n_buffers();
        let mut settings = BTreeMap::new();
        let sync = if options.synchronous_commit { "on" } else { "off" };
        settings.insert("synchronous_commit", sync.to_string());
        for (name, value) in options.settings {
            if let Some(g) = guc(name) {
                settings.insert(g.name, value);
            }
        }
        let db = Database {
            catalog,
            engine,
            plans: RwLock::new(Default::default()),
            next_buffer: AtomicUsize::new(0),
            log_buffers,
            settings,
            checkpointer: std::sync::OnceLock::new(),
            schema_gate: RwLock::new(()),
            advisory: Default::default(),
            next_session: Default::default(),
        };
        let snapshot = db.catalog.snapshot();
        for table in snapshot.tables() {
            db.engine.create_table(exec::tid(table), index_specs(&snapshot, table));
        }
        Arc::new(db)
    }

    /// Recovery, after the rows are replayed: hidden row ids (tables without a primary key)
    /// continue above the largest one present, so none is reused.
    pub fn restore_row_ids(&self) -> Result<()> {
        let snapshot = self.catalog.snapshot();
        for table in snapshot.tables().filter(|t| t.primary_index().is_none()) {
            let mut t = self.engine.begin(0);
            let mut last = None;
            t.scan(
                exec::tid(table),
                None,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                true,
                &mut |k, _| {
                    last = Some(k.to_vec());
                    false
                },
            )
            .map_err(exec::txn_error)?;
            t.abort();
            if let Some(id) = last.as_deref().and_then(types::decode_row_id_key) {
                self.engine.set_next_row_id_at_least(exec::tid(table), id as u64 + 1);
            }
        }
        Ok(())
    }

    /// Installs the checkpointer that `CHECKPOINT` calls (once; later calls are ignored).
    pub fn set_checkpointer(&self, checkpointer: Arc<dyn Checkpointer>) {
        let _ = self.checkpointer.set(checkpointer);
    }

    /// Takes a checkpoint now (the `CHECKPOINT` statement; also periodic and at shutdown).
    /// Does nothing for an in-memory database.
    pub fn checkpoint(&self) -> Result<()> {
        match self.checkpointer.get() {
            Some(c) => c.checkpoint().map_err(|message| Error::IoError {
                message: format!("checkpoint failed: {message}"),
            }),
            None => Ok(()),
        }
    }

    /// The current catalog snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.catalog.snapshot()
    }

    /// The catalog (for recovery: which tables exist, its version).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The transaction engine (for recovery, benchmarks and tests).
    pub fn engine(&self) -> &txn::Engine {
        &self.engine
    }
}

/// The engine's secondary-index specs for a table: each computes its key from row bytes.
/// A partial index's key of a row outside its WHERE condition is reported as having a NULL,
/// so that it never clashes (its entry is then keyed by the primary key too): uniqueness holds
/// among the rows that meet the condition, as in PostgreSQL. (Such indexes serve no scans:
/// `bind::select::choose_access` passes them by.)
fn index_specs(snapshot: &Snapshot, table: &Table) -> Vec<txn::IndexSpec> {
    let types = exec::column_types(table);
    table
        .indexes
        .iter()
        .filter(|i| !i.primary)
        .map(|i| {
            let cols: Vec<usize> = i.columns.iter().map(|c| *c as usize).collect();
            let types = types.clone();
            let predicate = i.predicate.as_ref().and_then(|p| {
                let bound = crate::bind::dml::stored_expr(p).and_then(|e| {
                    Binder::new(snapshot, p, Vec::new()).bind_index_predicate(&e, table)
                });
                match bound {
                    Ok((_, expr, _)) => Some(expr),
                    // Never expected (the column guards keep the text binding); a full unique
                    // index is stricter, never looser.
                    Err(e) => {
                        tracing::warn!(index = %i.name, error = %e, "partial index condition no longer binds");
                        None
                    }
                }
            });
            // Decodes only the key columns (this runs for every write of an indexed table).
            let key_of = move |row: &[u8]| -> (Vec<u8>, bool) {
                let key_vals: Vec<Value> = cols
                    .iter()
                    .map(|c| {
                        types::decode_column(row, &types, *c)
                            .expect("engine rows are written by encode_row with these types")
                    })
                    .collect();
                let mut has_null = key_vals.iter().any(|v| v.is_null());
                if let Some(p) = &predicate {
                    has_null |= !exec::meets_index_predicate(p, row, &types);
                }
                let mut k = Vec::new();
                types::encode_key(&key_vals, &mut k);
                (k, has_null)
            };
            txn::IndexSpec { id: txn::IndexId(i.id.0), unique: i.unique, key_of: Arc::new(key_of) }
        })
        .collect()
}

pub(crate) fn catalog_error(e: catalog::Error) -> Error {
    use catalog::Error as C;
    match e {
        C::UndefinedTable(name) => Error::UndefinedTable { name, span: None },
        C::DuplicateTable(name) | C::DuplicateIndexName(name) => Error::DuplicateTable { name },
        C::DuplicateColumn(name) => Error::DuplicateColumnExists { name },
        C::UndefinedObject(message) => Error::UndefinedObject { message },
        C::DependentObjects { message, detail } => {
            Error::DependentObjects { message, detail: detail.unwrap_or_default() }
        }
        C::InvalidDefinition(message) => Error::InvalidTableDefinition { message },
        C::InvalidForeignKey(message) => Error::InvalidForeignKey { message },
        C::DuplicateObject(message) => Error::DuplicateObject { message },
        C::Store(message) => Error::IoError { message: format!("catalog store: {message}") },
        e @ C::ConcurrentChange(_) => Error::SerializationFailure { message: e.to_string() },
        C::SequenceLimit { message, exhausted } => {
            Error::DataException { message, sqlstate: if exhausted { "2200H" } else { "22003" } }
        }
    }
}

/// When this server started: the first database it opened (`pg_postmaster_start_time()`).
static STARTED: std::sync::OnceLock<NaiveDateTime> = std::sync::OnceLock::new();

/// The server's start time ([`STARTED`]), UTC.
pub fn server_start_time() -> NaiveDateTime {
    *STARTED.get_or_init(now)
}

/// PostgreSQL's hint when objects depend on what a DROP without CASCADE would remove.
const CASCADE_HINT: &str = "Use DROP ... CASCADE to drop the dependent objects too.";

/// Transaction status as reported in ReadyForQuery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    /// `I`: not in a transaction block.
    Idle,
    /// `T`: in a transaction block.
    InBlock,
    /// `E`: in a failed transaction block (statements get 25P02 until ROLLBACK).
    Failed,
}

/// A result column, as described in RowDescription.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnInfo {
    /// Column name as PostgreSQL names it (`?column?`, `count`, alias, …).
    pub name: String,
    /// The SQL type (gives OID, typmod, typlen).
    pub data_type: DataType,
    /// Source table OID, if the column is a plain table column.
    pub table_oid: Option<u32>,
    /// Source column number (attnum), if the column is a plain table column.
    pub column_id: Option<i16>,
}

impl From<&OutColumn> for ColumnInfo {
    fn from(c: &OutColumn) -> Self {
        ColumnInfo {
            name: c.name.clone(),
            data_type: c.data_type,
            table_oid: c.source.map(|s| s.0),
            column_id: c.source.map(|s| s.1),
        }
    }
}

/// The command tag of a finished statement (CommandComplete). An empty `command` means the
/// statement text was empty (EmptyQueryResponse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// e.g. `INSERT`, `SELECT`, `CREATE TABLE`.
    pub command: String,
    /// Row count, for commands that report one.
    pub rows: Option<u64>,
}

impl Tag {
    fn new(command: &str) -> Tag {
        Tag { command: command.to_string(), rows: None }
    }

    fn rows(command: &str, n: usize) -> Tag {
        Tag { command: command.to_string(), rows: Some(n as u64) }
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.command.as_str(), self.rows) {
            ("INSERT", Some(n)) => write!(f, "INSERT 0 {n}"),
            (c, Some(n)) => write!(f, "{c} {n}"),
            (c, None) => write!(f, "{c}"),
        }
    }
}

/// A notice to send before the statement's result (e.g. `NOTICE: table "t" does not exist,
/// skipping`).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// `NOTICE` or `WARNING`.
    pub severity: &'static str,
    /// SQLSTATE, e.g. `00000`, `25P01`.
    pub code: &'static str,
    /// Message text.
    pub message: String,
}

/// The outcome of one statement.
#[derive(Debug, Clone)]
pub struct Output {
    /// CommandComplete tag.
    pub tag: Tag,
    /// Result columns; `None` for statements that return no rows (NoData).
    pub columns: Option<Arc<Vec<ColumnInfo>>>,
    /// Result rows (already materialised; values match `columns`).
    pub rows: Vec<Vec<Value>>,
    /// Notices to send before the result.
    pub notices: Vec<Notice>,
    /// The session's time zone when the statement finished: its timestamptz values print in
    /// it (a later statement of the same Query may change it).
    pub zone: types::Zone,
}

/// What [`Session::start_copy`] started.
#[derive(Debug)]
pub enum CopyStart {
    /// `COPY … FROM STDIN`: the client sends the rows next.
    In(CopyIn),
    /// `COPY … TO STDOUT`: the rows to send.
    Out(CopyOut),
}

/// The result of `COPY … TO STDOUT`.
#[derive(Debug)]
pub struct CopyOut {
    /// Columns per row (CopyOutResponse).
    pub columns: usize,
    /// Rows copied (`COPY n`).
    pub rows: u64,
    format: crate::copy::CopyFormat,
    /// The header line's fields, if asked for.
    header: Option<Vec<Option<String>>>,
    types: Vec<DataType>,
    /// The session's time zone (timestamptz values print in it).
    zone: types::Zone,
    /// The rows not encoded yet.
    pending: std::vec::IntoIter<Vec<Value>>,
}

/// How many bytes of encoded lines a COPY TO puts in one CopyData message (at least one line).
const COPY_OUT_CHUNK: usize = 64 << 10;

impl CopyOut {
    /// The next CopyData payload: whole lines (the header first, if asked for), about
    /// [`COPY_OUT_CHUNK`] bytes, encoded only now, so that a big COPY holds its rows once and
    /// one message at a time instead of every line at once. `None` once all rows are out.
    pub fn next_chunk(&mut self) -> Option<Vec<u8>> {
        let mut chunk = Vec::new();
        if let Some(names) = self.header.take() {
            crate::copy::encode_row(&self.format, &names, &mut chunk);
        }
        let mut fields = Vec::with_capacity(self.types.len());
        let zone = self.zone;
        while chunk.len() < COPY_OUT_CHUNK {
            let Some(row) = self.pending.next() else { break };
            fields.clear();
            fields.extend(
                row.iter()
                    .zip(&self.types)
                    .map(|(v, ty)| (!v.is_null()).then(|| types::format_text_zoned(v, ty, zone))),
            );
            crate::copy::encode_row(&self.format, &fields, &mut chunk);
        }
        (!chunk.is_empty()).then_some(chunk)
    }
}

/// A `COPY … FROM STDIN` in progress ([`Session::start_copy`]).
#[derive(Debug)]
pub struct CopyIn {
    decoder: crate::copy::CopyDecoder,
    /// The table's name, for error contexts.
    relation: String,
    /// An error the copy meets as soon as it runs (COPY FREEZE refused).
    refused: Option<Box<Error>>,
    /// The target columns, in the order of the data's fields.
    columns: Vec<String>,
    /// `INSERT INTO t (columns) VALUES ($1, …)`, run once per row.
    insert: Arc<Prepared>,
    rows: u64,
    /// Whether the COPY runs in a transaction of its own (no block was open).
    own: bool,
}

impl CopyIn {
    /// The number of columns each row carries (CopyInResponse).
    pub fn columns(&self) -> usize {
        self.columns.len()
    }
}

impl Output {
    fn tag(tag: Tag) -> Output {
        Output { tag, columns: None, rows: vec![], notices: vec![], zone: types::Zone::UTC }
    }

    fn with_notice(
        mut self,
        severity: &'static str,
        code: &'static str,
        message: String,
    ) -> Output {
        self.notices.push(Notice { severity, code, message });
        self
    }

    /// DROP … IF EXISTS of something missing: PostgreSQL's notice, `missing` being e.g.
    /// `index "i" does not exist`.
    fn skipping(self, missing: &str) -> Output {
        self.with_notice("NOTICE", "00000", format!("{missing}, skipping"))
    }
}

/// A prepared statement: parsed, bound and planned; cheap to clone (`Arc`).
#[derive(Debug)]
pub struct Prepared {
    /// The statement text.
    pub sql: String,
    /// Parameter types ($1 … $n), inferred where the client sent OID 0.
    pub param_types: Vec<DataType>,
    /// Result columns, or `None` if the statement returns no rows.
    pub columns: Option<Arc<Vec<ColumnInfo>>>,
    oids: Vec<u32>,
    plan: Option<Arc<Cached>>,
    /// A COPY statement (run by [`Session::start_copy`], not by
    /// [`Session::execute_prepared`]).
    copy: Option<crate::copy::CopyStatement>,
}

/// The session's open transaction: a block (BEGIN …) or an implicit transaction.
struct OpenTxn {
    /// `None` once the block has failed (the engine transaction was aborted).
    txn: Option<txn::Transaction>,
    now: NaiveDateTime,
    /// Opened by the protocol, not by BEGIN: the statements of one multi-statement Query, or
    /// of an extended-protocol pipeline up to Sync. It commits at the end of the Query or at
    /// Sync, and an error rolls all of it back (PostgreSQL's implicit transaction block).
    implicit: bool,
    /// Schema changes made in this transaction, private until it commits.
    ddl: Option<PendingDdl>,
    /// The session settings before the first SET of this transaction, restored if it rolls
    /// back (SET is transactional in PostgreSQL).
    saved_settings: Option<Settings>,
    /// Parameters SET LOCAL in this transaction, with the session's value to go back to when
    /// it commits (`None`: the default); a plain SET of one of them changes that value.
    local_restore: BTreeMap<&'static str, Option<String>>,
    /// Tables TRUNCATEd in this transaction (COPY FREEZE takes only these and new ones).
    truncated: Vec<TableId>,
    /// SAVEPOINTs, innermost last.
    savepoints: Vec<SavepointState>,
    /// The engine transaction of a block that failed while it had savepoints: ROLLBACK TO
    /// SAVEPOINT takes it back (and `txn` is `None` meanwhile, as in any failed block).
    parked: Option<txn::Transaction>,
    /// Tables created after a savepoint that ROLLBACK TO took back: out of the catalog, but
    /// left in the engine until the transaction ends (its read set may name them, and commit
    /// validates that every table it read is still there).
    doomed: Vec<EngineObject>,
    /// Which deferrable foreign keys' checks wait for the commit (SET CONSTRAINTS).
    fk_timing: exec::FkTiming,
}

/// What `SAVEPOINT name` remembers, for ROLLBACK TO: the write set, the schema changes so
/// far, the settings and what was truncated.
struct SavepointState {
    name: String,
    writes: txn::Savepoint,
    /// The catalog batch and how many engine objects had been created and dropped.
    ddl: Option<(catalog::DdlBatch, usize, usize)>,
    settings: Settings,
    truncated: usize,
    /// How many transaction-level advisory locks the transaction had taken.
    xact_locks: usize,
}

impl OpenTxn {
    fn new(txn: txn::Transaction, implicit: bool) -> OpenTxn {
        OpenTxn { txn: Some(txn), implicit, ..OpenTxn::failed() }
    }

    /// What a failed block keeps until ROLLBACK: only the fact that it failed.
    fn failed() -> OpenTxn {
        OpenTxn {
            txn: None,
            now: now(),
            implicit: false,
            ddl: None,
            saved_settings: None,
            local_restore: BTreeMap::new(),
            truncated: Vec::new(),
            savepoints: Vec::new(),
            parked: None,
            doomed: Vec::new(),
            fk_timing: exec::FkTiming::default(),
        }
    }

    /// Whether `table` was created or truncated in this transaction.
    fn made_or_emptied(&self, table: TableId) -> bool {
        self.truncated.contains(&table)
            || self.ddl.as_ref().is_some_and(|d| {
                d.created.iter().any(|o| matches!(o, EngineObject::Table(t) if *t == table))
            })
    }
}

/// Transactional DDL: the catalog batch of one transaction and the engine objects behind it.
///
/// Tables and indexes a transaction creates exist in the engine at once (its own statements
/// write them; nobody else can name them, since they are not in the published catalog) and
/// are removed if it rolls back. Tables and indexes it drops stay in the engine until the
/// batch is published. At COMMIT the batch is validated under the catalog's writer lock, the
/// rows are committed and made durable, and only then is the batch published: a crash in
/// between leaves rows of a table the catalog never named, which recovery ignores.
struct PendingDdl {
    batch: catalog::DdlBatch,
    /// Engine objects created by this transaction (dropped on rollback).
    created: Vec<EngineObject>,
    /// Engine objects this transaction drops (dropped once it has committed).
    dropped: Vec<EngineObject>,
}

#[derive(Debug, Clone, Copy)]
enum EngineObject {
    Table(TableId),
    Index(TableId, catalog::IndexId),
}

impl EngineObject {
    fn drop_from(self, engine: &txn::Engine) {
        match self {
            EngineObject::Table(t) => engine.drop_table(txn::TableId(t.0)),
            EngineObject::Index(t, i) => engine.drop_index(txn::TableId(t.0), txn::IndexId(i.0)),
        }
    }
}

/// A server parameter (GUC) known to Aspen.
struct Guc {
    name: &'static str,
    default: &'static str,
    /// Sent as ParameterStatus when it changes (GUC_REPORT).
    report: bool,
    description: &'static str,
}

/// The parameters Aspen knows. `SET` of anything else is `42704`, as in PostgreSQL.
const GUCS: &[Guc] = &[
    Guc {
        name: "aspen.checkpoint_dirs",
        default: "",
        report: false,
        description: "Directories checkpoints are written to, one writer each.",
    },
    Guc {
        name: "aspen.group_commit_delay",
        default: "0",
        report: false,
        description: "How long a log writer waits to batch more commits before it writes.",
    },
    Guc {
        name: "aspen.wal_assist_below",
        default: "50us",
        report: false,
        description: "A connection writes and syncs for an idle log writer itself while the \
                      device's write+sync takes less than this.",
    },
    Guc {
        name: "aspen.wal_dirs",
        default: "",
        report: false,
        description: "Write-ahead log devices (one log buffer and one logger thread each).",
    },
    Guc {
        name: "aspen.wal_pairs_in_flight",
        default: "4",
        report: false,
        description: "The most write+sync pairs a log writer keeps in flight (it adapts within).",
    },
    Guc {
        name: "checkpoint_timeout",
        default: "0",
        report: false,
        description: "Sets the maximum time between automatic checkpoints (0 = none).",
    },
    Guc {
        name: "data_directory",
        default: "",
        report: false,
        description: "Sets the server's data directory.",
    },
    Guc {
        name: "application_name",
        default: "",
        report: true,
        description: "Sets the application name to be reported in statistics and logs.",
    },
    Guc {
        name: "client_encoding",
        default: "UTF8",
        report: true,
        description: "Sets the client's character set encoding.",
    },
    Guc {
        name: "client_min_messages",
        default: "notice",
        report: false,
        description: "Sets the message levels that are sent to the client.",
    },
    Guc {
        name: "DateStyle",
        default: "ISO, MDY",
        report: true,
        description: "Sets the display format for date and time values.",
    },
    Guc {
        name: "default_transaction_isolation",
        default: "serializable",
        report: false,
        description: "Aspen runs every transaction SERIALIZABLE.",
    },
    Guc {
        name: "default_transaction_read_only",
        default: "off",
        report: true,
        description: "Sets the default read-only status of new transactions.",
    },
    Guc {
        name: "extra_float_digits",
        default: "1",
        report: false,
        description: "Sets the number of digits displayed for floating-point values.",
    },
    Guc {
        name: "in_hot_standby",
        default: "off",
        report: true,
        description: "Shows whether hot standby is currently active.",
    },
    Guc {
        name: "integer_datetimes",
        default: "on",
        report: true,
        description: "Shows whether datetimes are integer based.",
    },
    Guc {
        name: "IntervalStyle",
        default: "postgres",
        report: true,
        description: "Sets the display format for interval values.",
    },
    Guc {
        name: "is_superuser",
        default: "on",
        report: true,
        description: "Shows whether the current user is a superuser.",
    },
    Guc {
        name: "lc_messages",
        default: "C",
        report: false,
        description: "Sets the language in which messages are displayed.",
    },
    Guc {
        name: "lock_timeout",
        default: "0",
        report: false,
        description: "Accepted; Aspen's OCC never waits for locks.",
    },
    Guc {
        name: "max_connections",
        default: "1000",
        report: false,
        description: "Sets the maximum number of concurrent connections.",
    },
    Guc {
        name: "check_function_bodies",
        default: "on",
        report: false,
        description: "Check routine bodies during CREATE FUNCTION (accepted; no functions here).",
    },
    Guc {
        name: "default_table_access_method",
        default: "heap",
        report: false,
        description: "Sets the default table access method for new tables (only heap).",
    },
    Guc {
        name: "default_tablespace",
        default: "",
        report: false,
        description:
            "Sets the default tablespace to create tables and indexes in (only the default).",
    },
    Guc {
        name: "row_security",
        default: "on",
        report: false,
        description: "Enable row security (accepted; there are no row security policies).",
    },
    Guc {
        name: "xmloption",
        default: "content",
        report: false,
        description: "Sets whether XML data in implicit parsing is a document or content fragment.",
    },
    Guc {
        name: "password_encryption",
        default: "scram-sha-256",
        report: false,
        description: "Chooses the algorithm for encrypting passwords (only scram-sha-256).",
    },
    Guc {
        name: "search_path",
        default: "\"$user\", public",
        report: false,
        description: "Sets the schema search order for names that are not schema-qualified.",
    },
    Guc {
        name: "server_encoding",
        default: "UTF8",
        report: true,
        description: "Shows the server (database) character set encoding.",
    },
    Guc {
        name: "server_version",
        default: "15.0",
        report: true,
        description: "Shows the server version.",
    },
    Guc {
        name: "server_version_num",
        default: "150000",
        report: false,
        description: "Shows the server version as an integer.",
    },
    Guc {
        name: "session_authorization",
        default: "postgres",
        report: true,
        description: "Sets the session user name.",
    },
    Guc {
        name: "standard_conforming_strings",
        default: "on",
        report: true,
        description: "Causes '...' strings to treat backslashes literally.",
    },
    Guc {
        name: "statement_timeout",
        default: "0",
        report: false,
        description: "Sets the maximum allowed duration of any statement.",
    },
    Guc {
        name: "synchronous_commit",
        default: "on",
        report: false,
        description: "Sets the current transaction's synchronization level.",
    },
    Guc {
        name: "TimeZone",
        default: "UTC",
        report: true,
        description: "Sets the time zone for displaying and interpreting time stamps.",
    },
    Guc {
        name: "transaction_isolation",
        default: "serializable",
        report: false,
        description: "Aspen runs every transaction SERIALIZABLE.",
    },
    Guc {
        name: "transaction_read_only",
        default: "off",
        report: false,
        description: "Shows whether the current transaction is read-only.",
    },
    Guc {
        name: "wal_writer_delay",
        default: "10ms",
        report: false,
        description: "The longest a commit made with synchronous_commit off waits before the \
                      log writes it (sooner when any commit waits).",
    },
    Guc {
        name: "idle_in_transaction_session_timeout",
        default: "0",
        report: false,
        description: "Sets the maximum allowed idle time between queries, when in a transaction.",
    },
];

/// Parameters that cannot be changed with SET.
const READ_ONLY_GUCS: &[&str] = &[
    "aspen.checkpoint_dirs",
    "aspen.group_commit_delay",
    "aspen.wal_assist_below",
    "aspen.wal_dirs",
    "aspen.wal_pairs_in_flight",
    "wal_writer_delay",
    "checkpoint_timeout",
    "data_directory",
    "server_version",
    "server_version_num",
    "server_encoding",
    "integer_datetimes",
    "in_hot_standby",
    "is_superuser",
    "max_connections",
    "transaction_isolation",
];

/// Every parameter Aspen knows: its name, built-in default, description, and whether SET may
/// change it (`pg_settings`).
pub(crate) fn parameters() -> impl Iterator<Item = (&'static str, &'static str, &'static str, bool)>
{
    GUCS.iter().map(|g| (g.name, g.default, g.description, !READ_ONLY_GUCS.contains(&g.name)))
}

fn guc(name: &str) -> Option<&'static Guc> {
    GUCS.iter().find(|g| g.name.eq_ignore_ascii_case(name))
}

/// A session's own parameter values, shared (cheaply cloned) with what evaluates
/// expressions for it ([`exec::Env::settings`]); copied on write.
type Settings = Arc<BTreeMap<&'static str, String>>;

/// The value of server parameter `name`: the session's own, else the server's, else the
/// built-in default (SHOW, `current_setting`).
pub(crate) fn setting_value(
    session: &BTreeMap<&'static str, String>,
    server: &BTreeMap<&'static str, String>,
    name: &str,
) -> Option<String> {
    let Some(g) = guc(name) else {
        // A placeholder (`app.user`): only once SET.
        return session.get(name.to_lowercase().as_str()).cloned();
    };
    let value = session.get(g.name).or_else(|| server.get(g.name));
    Some(value.cloned().unwrap_or_else(|| g.default.to_string()))
}

/// The most distinct placeholder names (`SET app.x`) a server keeps.
const MAX_PLACEHOLDERS: usize = 10_000;

/// The name a placeholder parameter (`a.b`, case-folded) is kept under: settings are keyed by
/// `&'static str`, so each distinct name is allocated once for the life of the server (at
/// most [`MAX_PLACEHOLDERS`]). `None` with `create` false when it was never SET.
fn placeholder(name: &str, create: bool) -> Result<Option<&'static str>> {
    static NAMES: parking_lot::Mutex<std::collections::BTreeSet<&'static str>> =
        parking_lot::Mutex::new(std::collections::BTreeSet::new());
    let lower = name.to_lowercase();
    let mut names = NAMES.lock();
    if let Some(known) = names.get(lower.as_str()) {
        return Ok(Some(known));
    }
    if !create {
        return Ok(None);
    }
    let valid = lower.split('.').all(|part| {
        part.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    });
    if !valid {
        return Err(Error::InvalidName {
            message: format!("invalid configuration parameter name \"{name}\""),
        });
    }
    if names.len() >= MAX_PLACEHOLDERS {
        return Err(Error::ProgramLimitExceeded {
            message: format!("more than {MAX_PLACEHOLDERS} placeholder parameters"),
        });
    }
    let kept: &'static str = Box::leak(lower.into_boxed_str());
    names.insert(kept);
    Ok(Some(kept))
}

/// One client session.
pub struct Session {
    db: Arc<Database>,
    txn: Option<OpenTxn>,
    /// Session values that differ from the defaults, by canonical name.
    settings: Settings,
    /// Shared with deferred updates' functions (which may evaluate `current_user`).
    user: Arc<str>,
    database: Arc<str>,
    /// The `TimeZone` setting, resolved.
    zone: types::Zone,
    /// The `statement_timeout` setting, resolved (`None` when off).
    statement_timeout: Option<std::time::Duration>,
    /// Set by a CancelRequest ([`Session::cancel_flag`]): the running statement stops with
    /// `57014` at its next check. Cleared when a statement starts, so a request that arrives
    /// while the session is idle cancels nothing (as in PostgreSQL).
    cancel: Arc<std::sync::atomic::AtomicBool>,
    log_buffer: usize,
    /// Durability waits of commits whose results are still held (see [`Session::take_acks`]).
    pending_acks: Vec<wal::Ticket>,
    /// The definitions the current transaction's statements were planned with for the tables
    /// it wrote, where those were the published ones (see `Session::note_written`): its commit
    /// fails if one changed since ([`Database`]'s `schema_gate`).
    written: parking_lot::Mutex<Vec<Arc<Table>>>,
    /// The checks of deferred foreign keys the current transaction's statements left for its
    /// commit (`exec::constraints`): run before it commits, or by SET CONSTRAINTS … IMMEDIATE.
    pending_checks: parking_lot::Mutex<Vec<exec::PendingCheck>>,
    /// Whether the caller awaits [`Session::take_acks`] itself (the server, asynchronously)
    /// instead of the session blocking in every commit.
    defer_acks: bool,
    /// Statements outside a block open an implicit transaction that lasts until
    /// [`Session::sync`] (or the end of a multi-statement Query) instead of committing alone.
    pipelined: bool,
    /// The last value `nextval` (or `setval`) gave this session for each sequence, by owning
    /// table and column: what `currval` returns.
    currvals: parking_lot::Mutex<HashMap<(u32, u16), i64>>,
    /// The statements PREPARE made, by name, until DEALLOCATE, DISCARD ALL or the session's
    /// end (not transactional, as in PostgreSQL). The extended protocol's named statements
    /// are the server's and live apart from these.
    prepared: HashMap<String, SqlPrepared>,
    /// Who this session is to the advisory locks (and its BackendKeyData process id).
    holder: crate::advisory::Holder,
    /// The advisory locks its transaction took (`pg_advisory_xact_lock`), in order: released
    /// when it ends ([`Session::end_of_call`]), and those taken after a savepoint when the
    /// transaction rolls back to it.
    xact_locks: parking_lot::Mutex<Vec<(crate::advisory::LockKey, crate::advisory::Mode)>>,
    /// Whether the running statement took or released an advisory lock: it is then not
    /// retried after a conflict, which would take or release it again.
    advisory_used: std::sync::atomic::AtomicBool,
    /// Warnings raised while a statement's expressions ran (`pg_advisory_unlock` of a lock
    /// not held), sent with its result.
    warnings: parking_lot::Mutex<Vec<Notice>>,
    /// The reported parameters (GUC_REPORT) as the client last heard them, by name: see
    /// [`Session::changed_reports`].
    reported: BTreeMap<String, String>,
    /// The settings as they were when `reported` was last brought up to date.
    reported_from: Option<Settings>,
}

/// A statement of SQL-level PREPARE ([`Command::Prepare`]).
struct SqlPrepared {
    /// The PREPARE's text (error positions point into it) and its statement, to bind again
    /// when the catalog changed.
    sql: Arc<str>,
    statement: Parsed,
    oids: Vec<u32>,
    cached: Arc<Cached>,
}

impl Drop for Session {
    /// A session dropped without [`Session::close`] still lets go of its advisory locks.
    fn drop(&mut self) {
        self.db.advisory.release_session(self.holder);
    }
}

impl crate::exec::SessionFunctions for Session {
    fn advisory(
        &self,
        call: crate::plan::AdvisoryCall,
        key: Option<crate::advisory::LockKey>,
        wait: &dyn Fn() -> Result<()>,
    ) -> Result<Value> {
        use crate::advisory::Scope;
        use crate::plan::AdvisoryOp as Op;
        let locks = &self.db.advisory;
        let void = Value::Text(String::new());
        self.advisory_used.store(true, Ordering::Relaxed);
        let Some(key) = key else {
            locks.release_all(self.holder, Scope::Session);
            return Ok(void);
        };
        let taken = |ok: bool| {
            if ok && call.scope == Scope::Transaction {
                self.xact_locks.lock().push((key, call.mode));
            }
            ok
        };
        Ok(match call.op {
            Op::Lock => {
                taken(locks.lock(self.holder, key, call.mode, call.scope, Some(wait))?);
                void
            }
            Op::TryLock => {
                Value::Bool(taken(locks.lock(self.holder, key, call.mode, call.scope, None)?))
            }
            Op::Unlock => {
                let unlocked = locks.unlock(self.holder, key, call.mode);
                if !unlocked {
                    self.warnings.lock().push(Notice {
                        severity: "WARNING",
                        code: "01000",
                        message: format!("you don't own a lock of type {}", call.mode.name()),
                    });
                }
                Value::Bool(unlocked)
            }
            Op::UnlockAll => {
                locks.release_all(self.holder, Scope::Session);
                void
            }
        })
    }

    fn backend_pid(&self) -> i32 {
        self.holder.pid
    }

    fn nextval(&self, table: u32, position: u16) -> Result<i64> {
        let (id, seq) = self.sequence_of(table, position)?;
        let value = self.db.catalog.nextval(id, position, &seq).map_err(catalog_error)?;
        self.currvals.lock().insert((table, position), value);
        Ok(value)
    }

    fn currval(&self, table: u32, position: u16) -> Result<i64> {
        let (_, seq) = self.sequence_of(table, position)?;
        self.currvals.lock().get(&(table, position)).copied().ok_or_else(|| {
            Error::ObjectNotInPrerequisiteState {
                message: format!(
                    "currval of sequence \"{}\" is not yet defined in this session",
                    seq.name
                ),
            }
        })
    }

    fn setval(&self, table: u32, position: u16, value: i64, is_called: bool) -> Result<i64> {
        let (id, seq) = self.sequence_of(table, position)?;
        self.db.catalog.setval(id, position, &seq, value, is_called).map_err(catalog_error)?;
        if is_called {
            self.currvals.lock().insert((table, position), value);
        }
        Ok(value)
    }
}

impl Session {
    /// CREATE … IF NOT EXISTS of a name a relation has: PostgreSQL's notice under `tag`.
    fn exists_skip(&self, name: &str, if_not_exists: bool, tag: &str) -> Option<Output> {
        (if_not_exists && self.snapshot().relation_exists(name)).then(|| {
            Output::tag(Tag::new(tag)).with_notice(
                "NOTICE",
                "42P07",
                format!("relation \"{name}\" already exists, skipping"),
            )
        })
    }

    /// Stages the creation of table `def` and creates its (empty) engine table.
    fn create_staged(&mut self, def: catalog::TableDef) -> Result<Arc<Table>> {
        let id = self.stage(catalog::Ddl::CreateTable(def))?.table.expect("created");
        let table = self.snapshot().table_by_id(id).expect("staged").clone();
        self.db.engine.create_table(exec::tid(&table), index_specs(&self.snapshot(), &table));
        self.pending_ddl().created.push(EngineObject::Table(id));
        Ok(table)
    }

    /// The columns whose default calls a sequence function on the standalone sequence `seq`.
    fn defaults_using(&self, snapshot: &Snapshot, seq: TableId) -> Result<Vec<(Arc<Table>, u16)>> {
        let mut out = Vec::new();
        for table in snapshot.tables().filter(|t| !t.is_sequence()) {
            for column in table.columns.iter().filter(|c| c.default.is_some()) {
                let mut binder = Binder::new(snapshot, "", vec![]);
                let default = binder.column_default(table, usize::from(column.position))?;
                let mut uses = false;
                crate::bind::walk_expr(&default, &mut |x| {
                    if let crate::plan::Expr::Func(
                        crate::plan::Func::NextVal
                        | crate::plan::Func::CurrVal
                        | crate::plan::Func::SetVal,
                        args,
                    ) = x
                    {
                        uses |= matches!(args.first(), Some(crate::plan::Expr::Literal(Value::Int64(id))) if *id == i64::from(seq.0));
                    }
                });
                if uses {
                    out.push((table.clone(), column.position));
                }
            }
        }
        Ok(out)
    }

    /// The sequence owned by column `position` of table `table`, as this session sees the
    /// catalog.
    fn sequence_of(
        &self,
        table: u32,
        position: u16,
    ) -> Result<(catalog::TableId, catalog::Sequence)> {
        let id = catalog::TableId(table);
        match self.snapshot().column_sequence(id, position).cloned() {
            Some(seq) => Ok((id, seq)),
            None => {
                Err(Error::UndefinedTable { name: format!("with OID {}", id.oid()), span: None })
            }
        }
    }
}

impl Prepared {
    /// The COPY this statement is, if it is one: executing it starts the copy
    /// ([`Session::start_copy`]).
    pub fn copy(&self) -> Option<&crate::copy::CopyStatement> {
        self.copy.as_ref()
    }

    /// Whether executing this statement is short and never waits for I/O, so a server may run
    /// it on the thread that serves its connection's socket: transaction control, SET / SHOW,
    /// and queries and DML whose table accesses are bounded (see `plan_is_short`). DDL,
    /// CHECKPOINT and unbounded scans are not. [`Session::runs_briefly`] adds the session's
    /// state (a COMMIT that publishes schema changes waits for the log).
    pub fn is_short(&self) -> bool {
        self.plan.as_ref().is_none_or(|c| c.short)
    }
}

/// Whether a RETURNING list evaluates quickly ([`expr_is_short`]).
fn returning_is_short(returning: &Option<Vec<(Expr, OutColumn)>>) -> bool {
    returning.iter().flatten().all(|(e, _)| expr_is_short(e))
}

/// Whether a statement's plans and expressions are all short ([`plan_is_short`]).
fn statement_is_short(stmt: &Statement) -> bool {
    match stmt {
        Statement::Query(q) => plan_is_short(&q.plan),
        Statement::Insert { source, returning, .. } => {
            plan_is_short(source) && returning_is_short(returning)
        }
        Statement::Update { scan, sets, returning, .. } => {
            plan_is_short(scan)
                && sets.iter().all(|(_, e)| expr_is_short(e))
                && returning_is_short(returning)
        }
        Statement::Delete { scan, returning, .. } => {
            plan_is_short(scan) && returning_is_short(returning)
        }
        Statement::With { ctes, main } => {
            ctes.iter().all(|(_, s)| statement_is_short(s)) && statement_is_short(main)
        }
    }
}

/// [`Prepared::is_short`] of a bound statement.
fn bound_is_short(bound: &Bound) -> bool {
    match bound {
        Bound::Plan(stmt) => statement_is_short(stmt),
        Bound::Command(
            Command::Begin(_)
            | Command::Commit
            | Command::Rollback
            | Command::Set { .. }
            | Command::SetLocal { .. }
            | Command::SetTransaction
            | Command::Show(_)
            | Command::ShowAll
            | Command::Reset(_)
            | Command::NoOp(_),
        ) => true,
        Bound::Command(_) => false,
    }
}

impl Session {
    /// Whether executing `stmt` now is short (see [`Prepared::is_short`]): also false for
    /// COMMIT, ROLLBACK and a Sync-ending statement while the transaction holds schema changes
    /// (publishing them waits until its rows are durable).
    pub fn runs_briefly(&self, stmt: &Prepared) -> bool {
        stmt.is_short() && !self.private_catalog()
    }

    /// A new session on `db`. `params` are the startup parameters (user, database,
    /// application_name, …). Its commits take their SSNs from the log buffers in turn with the
    /// other sessions of `db` (see [`Session::on_log_buffer`]).
    pub fn new(db: Arc<Database>, params: &[(String, String)]) -> Session {
        let n = db.next_buffer.fetch_add(1, Ordering::Relaxed);
        Session::on_log_buffer(db, params, n)
    }

    /// [`Session::new`], whose commits take their SSNs from log buffer `n % buffers`. A server
    /// that runs sessions on a few threads chooses `n` so that sessions on different threads
    /// use different buffers where it can: two cores that share a buffer share its latch.
    pub fn on_log_buffer(db: Arc<Database>, params: &[(String, String)], n: usize) -> Session {
        let log_buffer = n % db.log_buffers;
        let holder =
            crate::advisory::Holder { id: db.next_session.fetch_add(1, Ordering::Relaxed), pid: 0 };
        let mut s = Session {
            db,
            txn: None,
            settings: Settings::default(),
            user: "postgres".into(),
            database: "postgres".into(),
            zone: types::Zone::UTC,
            statement_timeout: None,
            cancel: Default::default(),
            log_buffer,
            pending_acks: Vec::new(),
            defer_acks: false,
            pipelined: false,
            written: Default::default(),
            pending_checks: Default::default(),
            currvals: Default::default(),
            prepared: HashMap::new(),
            holder,
            xact_locks: Default::default(),
            advisory_used: Default::default(),
            reported: BTreeMap::new(),
            reported_from: None,
            warnings: Default::default(),
        };
        for (k, v) in params {
            match k.as_str() {
                "user" => s.user = v.as_str().into(),
                "database" => s.database = v.as_str().into(),
                _ => {
                    if let Some(g) = guc(k) {
                        // A time zone Aspen cannot read is left at the default.
                        let v = if g.name == "TimeZone" {
                            time_zone_setting(v)
                        } else {
                            Some(v.clone())
                        };
                        if let (false, Some(v)) = (READ_ONLY_GUCS.contains(&g.name), v) {
                            Arc::make_mut(&mut s.settings).insert(g.name, v);
                        }
                    }
                }
            }
        }
        s.refresh_settings();
        if !params.iter().any(|(k, _)| k == "database") {
            s.database = s.user.clone();
        }
        let user = s.user.to_string();
        Arc::make_mut(&mut s.settings).insert("session_authorization", user);
        s
    }

    /// Resolves the settings statements read (`TimeZone`, `statement_timeout`) again, after any
    /// change to the settings, so that no statement parses them.
    fn refresh_settings(&mut self) {
        let setting = self.setting("TimeZone").unwrap_or_default();
        self.zone = types::Zone::from_setting(&setting).map_or(types::Zone::UTC, |(z, _)| z);
        let timeout = self.setting("statement_timeout").and_then(|v| duration_ms(&v).ok());
        self.statement_timeout = timeout.filter(|&ms| ms > 0).map(std::time::Duration::from_millis);
    }

    /// The session's time zone.
    pub fn zone(&self) -> types::Zone {
        self.zone
    }

    /// What expressions read from the session, for a statement at `now`.
    fn env(&self, now: NaiveDateTime) -> exec::Env<'_> {
        env_of(now, &self.user, &self.database, self.zone, &self.settings, &self.db)
    }

    /// The session's part of an [`Env`], owned, for work that borrows the session mutably.
    fn owned_env(&self) -> OwnedEnv {
        OwnedEnv {
            user: self.user.clone(),
            database: self.database.clone(),
            zone: self.zone,
            settings: self.settings.clone(),
            db: self.db.clone(),
        }
    }

    /// When a statement starting now must stop: `statement_timeout` from now, if set.
    fn statement_deadline(&self) -> Option<std::time::Instant> {
        self.statement_timeout.map(|t| std::time::Instant::now() + t)
    }

    /// The flag that cancels this session's running statement when set (from any thread):
    /// what the server's CancelRequest handler, and its shutdown, set.
    pub fn cancel_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.cancel.clone()
    }

    /// Notes the parameters the client was told at startup (ParameterStatus): those a SET
    /// can change (GUC_REPORT) are the baseline of [`Session::changed_reports`].
    pub fn mark_reported(&mut self, params: &[(String, String)]) {
        self.reported = params
            .iter()
            .filter(|(name, _)| guc(name).is_some_and(|g| g.report))
            .cloned()
            .collect();
    }

    /// The reported parameters whose value changed since the client last heard it, to send
    /// as ParameterStatus before ReadyForQuery — as PostgreSQL (14 and later) does: a SET,
    /// the end of a SET LOCAL, a ROLLBACK that undid a SET, each reported once per cycle.
    /// An error that fails a transaction block takes its settings back at once, and that is
    /// reported with the error.
    pub fn changed_reports(&mut self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        // Nothing to look at unless the session's settings changed since the last look: they
        // are shared while unchanged (and the last look keeps a reference, so any change makes
        // a new map).
        if self.reported_from.as_ref().is_some_and(|s| Arc::ptr_eq(s, &self.settings)) {
            return out;
        }
        self.reported_from = Some(self.settings.clone());
        for (name, heard) in self.reported.iter_mut() {
            let Some(now) = setting_value(&self.settings, &self.db.settings, name) else {
                continue;
            };
            if *heard != now {
                heard.clone_from(&now);
                out.push((name.clone(), now));
            }
        }
        out
    }

    /// The value of a server parameter for this session: the session's own value, else the
    /// server's, else the built-in default.
    pub fn setting(&self, name: &str) -> Option<String> {
        setting_value(&self.settings, &self.db.settings, name)
    }

    /// The acknowledge rule (DESIGN.md §3) is applied by whoever sends results to the client.
    /// By default the session itself blocks in every commit until the commit may be
    /// acknowledged. With `defer = true` it only records what must become durable, and the
    /// caller must await every ticket of [`Session::take_acks`] (`wal::Log::wait_durable`)
    /// before it sends any result of the statements it just ran.
    pub fn set_deferred_acks(&mut self, defer: bool) {
        self.defer_acks = defer;
    }

    /// The durability tickets that results produced since the last call wait for (empty when
    /// nothing needs waiting: all durable already, `synchronous_commit = off`, or acks not
    /// deferred).
    pub fn take_acks(&mut self) -> Vec<wal::Ticket> {
        std::mem::take(&mut self.pending_acks)
    }

    /// Whether commits wait for durability (`synchronous_commit` is not `off`).
    fn synchronous_commit(&self) -> bool {
        let v = self
            .settings
            .get("synchronous_commit")
            .or_else(|| self.db.settings.get("synchronous_commit"));
        v.is_none_or(|v| v != "off")
    }

    /// Commits `t` and applies the acknowledge rule: a writer's results wait until its record
    /// is durable (SSN ≤ CSN, or its own device's DSN if blind), a read-only transaction's until
    /// SSN ≤ CSN. With `synchronous_commit = off` nothing waits (as in PostgreSQL).
    fn commit(&mut self, mut t: txn::Transaction) -> Result<()> {
        let synchronous = self.synchronous_commit();
        // Nobody waits for the record now: with `synchronous_commit = off` never, with
        // deferred acknowledgements not until the caller requests the ticket.
        if !synchronous || self.defer_acks {
            t.set_lazy_log();
        }
        let written = std::mem::take(self.written.get_mut());
        let info = if written.is_empty() {
            // Wrote no table whose definition anyone else could change: no gate to take (a
            // read-only statement pays nothing here).
            t.commit().map_err(exec::txn_error)?
        } else {
            let _gate = self.db.schema_gate.read();
            check_written(&self.db, &written)?;
            t.commit().map_err(exec::txn_error)?
        };
        if !synchronous {
            return Ok(());
        }
        let ticket = info.ticket.unwrap_or(wal::Ticket {
            ssn: info.ssn,
            device: wal::DeviceId(0),
            blind: false,
        });
        self.require_durable(ticket, false)
    }

    /// Commits `t` and blocks until it is durable, whatever `synchronous_commit` says: DDL
    /// that rewrites rows must have them durable before it changes the catalog.
    fn commit_durable_now(&mut self, t: txn::Transaction) -> Result<()> {
        let info = t.commit().map_err(exec::txn_error)?;
        match info.ticket {
            Some(ticket) => self.require_durable(ticket, true),
            None => Ok(()),
        }
    }

    /// Holds the current results until `ticket` is durable: blocks if `block` or acks are not
    /// deferred, else records it for [`Session::take_acks`].
    fn require_durable(&mut self, ticket: wal::Ticket, block: bool) -> Result<()> {
        let log = self.db.engine.log();
        if log.is_durable(ticket) {
            return Ok(());
        }
        if self.defer_acks && !block {
            self.pending_acks.push(ticket);
            return Ok(());
        }
        log.wait_durable(ticket).map_err(|e| exec::txn_error(txn::Error::from(e)))
    }

    /// Simple query protocol: runs every statement of `sql` in order and stops after the first
    /// error (which is the last element). An empty string gives an empty vector.
    ///
    /// Several statements outside a block form one implicit transaction, as in PostgreSQL: it
    /// commits after the last statement (a failure to commit is the last element) and an error
    /// rolls all of it back. COMMIT or ROLLBACK inside it end it early; BEGIN turns it into a
    /// block.
    pub fn execute_simple(&mut self, sql: &str) -> Vec<Result<Output>> {
        let stmts = match crate::parse::parse(sql) {
            Ok(s) => s,
            Err(e) => return vec![Err(self.fail(e))],
        };
        let implicit = stmts.len() > 1;
        self.pipelined = implicit;
        let mut out = Vec::with_capacity(stmts.len());
        for stmt in &stmts {
            let result = self.run_ast(sql, stmt, &[], &[]).map(|o| self.stamp_zone(o));
            let failed = result.is_err();
            out.push(result.map_err(|e| self.fail(e)));
            if failed {
                break;
            }
        }
        self.pipelined = false;
        if let Err(e) = self.end_implicit() {
            out.push(Err(e));
        }
        self.end_of_call();
        out
    }

    /// Simple query protocol for a Query holding exactly one statement, already prepared (with
    /// no parameters): the same as [`Session::execute_simple`] on its text. Lets a server
    /// classify the statement ([`Session::runs_briefly`]) before choosing where to run it.
    pub fn execute_simple_prepared(&mut self, stmt: &Prepared) -> Vec<Result<Output>> {
        self.pipelined = false;
        let mut out = vec![self.execute_prepared(stmt, Vec::new())];
        if let Err(e) = self.end_implicit() {
            out.push(Err(e));
        }
        self.end_of_call();
        out
    }

    /// Extended protocol Parse: `param_oids[i]` is the client's declared OID (0 = infer).
    pub fn prepare(&mut self, sql: &str, param_oids: &[u32]) -> Result<Arc<Prepared>> {
        self.prepare_with(sql, param_oids, true)
    }

    /// Prepares the text of a simple Query, to classify it ([`Session::runs_briefly`]) and run
    /// it with [`Session::execute_simple_prepared`]. Unlike [`Session::prepare`] it leaves the
    /// shared plan cache alone: simple-protocol texts usually carry their literals, so caching
    /// them would only evict the plans of prepared statements.
    pub fn prepare_simple(&mut self, sql: &str) -> Result<Arc<Prepared>> {
        self.prepare_with(sql, &[], false)
    }

    fn prepare_with(
        &mut self,
        sql: &str,
        param_oids: &[u32],
        cache: bool,
    ) -> Result<Arc<Prepared>> {
        if let Some(copy) = lone_copy(sql)? {
            return Ok(Arc::new(Prepared {
                sql: sql.to_string(),
                param_types: Vec::new(),
                columns: None,
                oids: param_oids.to_vec(),
                plan: None,
                copy: Some(copy),
            }));
        }
        let cached = self.plan(sql, param_oids, cache)?;
        let columns = cached.as_deref().and_then(|c| self.result_columns(c));
        Ok(Arc::new(Prepared {
            sql: sql.to_string(),
            param_types: cached.as_ref().map(|c| c.param_types.clone()).unwrap_or_default(),
            columns,
            oids: param_oids.to_vec(),
            plan: cached,
            copy: None,
        }))
    }

    /// The result columns of `cached` as Describe gives them: EXECUTE's are those of the
    /// statement PREPARE made under its name (none if there is none yet).
    fn result_columns(&self, cached: &Cached) -> Option<Arc<Vec<ColumnInfo>>> {
        match &cached.bound {
            Bound::Command(Command::Execute { name, .. }) => {
                self.prepared.get(name).and_then(|p| p.cached.columns.clone())
            }
            _ => cached.columns.clone(),
        }
    }

    /// Extended protocol Execute of a bound portal. `params` are already decoded to
    /// `stmt.param_types`. The full result is returned.
    pub fn execute_prepared(&mut self, stmt: &Prepared, params: Vec<Value>) -> Result<Output> {
        let out = self.execute_portal(stmt, params);
        self.end_of_call();
        out
    }

    /// [`Session::execute_prepared`] but for what ends the call.
    fn execute_portal(&mut self, stmt: &Prepared, params: Vec<Value>) -> Result<Output> {
        let Some(cached) = &stmt.plan else {
            return Ok(Output::tag(Tag::new("")));
        };
        if params.len() != stmt.param_types.len() {
            return Err(Error::ProtocolViolation {
                message: format!(
                    "bind message supplies {} parameters, but prepared statement requires {}",
                    params.len(),
                    stmt.param_types.len()
                ),
            });
        }
        let cached = if cached.version == self.snapshot().version().0 {
            cached.clone()
        } else {
            // The catalog changed since Parse: bind again. The client decodes the rows by the
            // columns it was given then, so those must not change (PostgreSQL: 0A000, which
            // pgjdbc answers by preparing the statement afresh).
            match self.plan(&stmt.sql, &stmt.oids, true) {
                Ok(Some(c)) if self.result_columns(&c) != stmt.columns => {
                    return Err(self.fail(Error::ResultTypeChanged));
                }
                Ok(Some(c)) => c,
                Ok(None) => return Ok(Output::tag(Tag::new(""))),
                Err(e) => return Err(self.fail(e)),
            }
        };
        let result = self.run_bound(&cached, &params).map(|o| self.stamp_zone(o));
        result.map_err(|e| self.fail(e))
    }

    /// Records in `out` the zone its timestamptz values print in (the session's, now).
    fn stamp_zone(&self, out: Output) -> Output {
        Output { zone: self.zone, ..out }
    }

    /// Extended protocol: whether more messages follow before the next Sync. If so, the next
    /// statement outside a block opens an implicit transaction that [`Session::sync`] commits
    /// (PostgreSQL runs everything up to Sync as one transaction); if the next message is
    /// Sync, the statement is that whole transaction and commits (or is retried) at once.
    pub fn set_pipelined(&mut self, pipelined: bool) {
        self.pipelined = pipelined;
    }

    /// Extended protocol Sync: commits the implicit transaction, if one is open. On failure it
    /// is rolled back and the error is returned (the client sees it before ReadyForQuery).
    pub fn sync(&mut self) -> Result<()> {
        self.pipelined = false;
        let ended = self.end_implicit();
        self.end_of_call();
        ended
    }

    /// The end of a client's call (a Query, an Execute, a Sync, a COPY, an error): if no
    /// transaction is open any more, the advisory locks its transaction took are released,
    /// as PostgreSQL releases them when the transaction ends.
    fn end_of_call(&mut self) {
        if self.txn.is_none() && !self.xact_locks.get_mut().is_empty() {
            self.xact_locks.get_mut().clear();
            self.db.advisory.release_all(self.holder, crate::advisory::Scope::Transaction);
        }
    }

    /// The process id the session's BackendKeyData gave the client (`pg_backend_pid()`, and
    /// how advisory-lock deadlocks name it).
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.holder.pid = pid;
    }

    /// Commits the implicit transaction, if one is open.
    fn end_implicit(&mut self) -> Result<()> {
        match self.txn.take() {
            Some(open) if open.implicit => self.commit_open(open),
            other => {
                self.txn = other;
                Ok(())
            }
        }
    }

    /// The catalog as this session sees it: the published snapshot, plus the schema changes
    /// of its open transaction.
    fn snapshot(&self) -> Arc<Snapshot> {
        match &self.txn {
            Some(OpenTxn { ddl: Some(d), .. }) => d.batch.snapshot().clone(),
            _ => self.db.catalog.snapshot(),
        }
    }

    /// Whether binding must not use (or fill) the shared plan cache: this session sees
    /// schema changes nobody else does.
    fn private_catalog(&self) -> bool {
        matches!(&self.txn, Some(OpenTxn { ddl: Some(_), .. }))
    }

    /// Opens an implicit transaction (see [`OpenTxn::implicit`]).
    fn open_implicit(&mut self) {
        let t = self.db.engine.begin(self.log_buffer);
        self.txn = Some(OpenTxn::new(t, true));
    }

    /// Commits an open transaction: its rows, then its schema changes. Without schema
    /// changes this is [`Session::commit`] (the acknowledge rule). With them, the catalog
    /// batch is validated under the catalog's writer lock, the rows commit and are made
    /// durable (blocking), and then the batch is published. Any failure rolls everything back.
    fn commit_open(&mut self, mut open: OpenTxn) -> Result<()> {
        // Tables a ROLLBACK TO took back go once the commit has validated the reads of them.
        let doomed = std::mem::take(&mut open.doomed);
        let local = std::mem::take(&mut open.local_restore);
        let result = self.commit_open_inner(open);
        // SET LOCAL ends with the transaction (a rollback has restored every setting).
        if result.is_ok() && !local.is_empty() {
            let settings = Arc::make_mut(&mut self.settings);
            for (name, value) in local {
                match value {
                    Some(v) => settings.insert(name, v),
                    None => settings.remove(name),
                };
            }
            self.refresh_settings();
        }
        for object in doomed.into_iter().rev() {
            object.drop_from(&self.db.engine);
        }
        result
    }

    fn commit_open_inner(&mut self, mut open: OpenTxn) -> Result<()> {
        let Some(mut t) = open.txn.take() else {
            self.rollback_open(open);
            return Ok(());
        };
        // Deferred foreign keys are checked first: a violation rolls the transaction back.
        if let Err(e) = self.run_pending_checks(&mut t, open.now, None) {
            t.abort();
            self.rollback_open(open);
            return Err(e);
        }
        let Some(pending) = open.ddl.take() else {
            let result = self.commit(t);
            if result.is_err() {
                self.rollback_open(open);
            }
            return result;
        };
        let db = self.db.clone();
        let engine = &db.engine;
        let written = std::mem::take(self.written.get_mut());
        let result = (|| {
            let _gate = db.schema_gate.write();
            check_written(&db, &written)?;
            let prepared = db.catalog.prepare(pending.batch).map_err(catalog_error)?;
            self.commit_durable_now(t)?;
            prepared.publish().map_err(catalog_error)
        })();
        match result {
            Ok(_) => {
                for object in pending.dropped {
                    object.drop_from(engine);
                }
                Ok(())
            }
            Err(e) => {
                for object in pending.created.into_iter().rev() {
                    object.drop_from(engine);
                }
                self.rollback_open(open);
                Err(e)
            }
        }
    }

    /// Before a statement writes `table`: remembers the definition it was planned with, which
    /// the commit checks is still the published one ([`check_written`]). A plan made against a
    /// definition that is neither the published one nor this transaction's own uncommitted
    /// change is stale (a schema change was published since): `40001`. A table this
    /// transaction created or changed itself is not watched here: the catalog's commit check
    /// catches a concurrent change of it.
    fn note_written(&self, table: &Arc<Table>) -> Result<()> {
        let mut written = self.written.lock();
        if written.iter().any(|t| t.id == table.id) {
            return Ok(());
        }
        let published = self.db.catalog.snapshot();
        match published.table_by_id(table.id) {
            Some(p) if same_table(p, table) => written.push(table.clone()),
            _ => {
                let own =
                    self.snapshot().table_by_id(table.id).is_some_and(|o| same_table(o, table));
                if !own {
                    return Err(concurrent_change(&table.name));
                }
            }
        }
        Ok(())
    }

    /// Rolls an open transaction back: aborts its engine transaction, removes the engine
    /// objects its schema changes created, and restores the settings it changed.
    fn rollback_open(&mut self, open: OpenTxn) {
        self.written.get_mut().clear();
        self.pending_checks.get_mut().clear();
        if let Some(pending) = open.ddl {
            for object in pending.created.into_iter().rev() {
                object.drop_from(&self.db.engine);
            }
        }
        for object in open.doomed.into_iter().rev() {
            object.drop_from(&self.db.engine);
        }
        if let Some(saved) = open.saved_settings {
            self.settings = saved;
            self.refresh_settings();
        }
        drop(open.txn);
    }

    /// ROLLBACK TO [SAVEPOINT] name: the write set, schema changes, settings and truncations
    /// go back to what they were at the savepoint, which stays (later ones go); a failed block
    /// is in progress again. Reads made since stay in the read set (see
    /// [`txn::Transaction::rollback_to`]). Indexes created since are dropped now; tables, at
    /// the end of the transaction ([`OpenTxn::doomed`]).
    fn rollback_to_savepoint(&mut self, name: &str) -> Result<Output> {
        let db = self.db.clone();
        let Some(open) = self.txn.as_mut().filter(|o| !o.implicit) else {
            return Err(outside_block("ROLLBACK TO SAVEPOINT"));
        };
        let i = savepoint_index(open, name)?;
        let mut t = open
            .txn
            .take()
            .or_else(|| open.parked.take())
            .ok_or_else(|| Error::internal("a block with savepoints lost its transaction"))?;
        open.savepoints.truncate(i + 1);
        let sp = &open.savepoints[i];
        t.rollback_to(&sp.writes);
        open.txn = Some(t);
        let created_since = match (open.ddl.as_mut(), &sp.ddl) {
            (Some(pending), Some((batch, created, dropped))) => {
                pending.batch = batch.clone();
                pending.dropped.truncate(*dropped);
                pending.created.split_off(*created)
            }
            (Some(_), None) => open.ddl.take().map(|p| p.created).unwrap_or_default(),
            (None, _) => Vec::new(),
        };
        for object in created_since.into_iter().rev() {
            match object {
                EngineObject::Index(..) => object.drop_from(&db.engine),
                EngineObject::Table(_) => open.doomed.push(object),
            }
        }
        open.truncated.truncate(sp.truncated);
        // Advisory locks taken since go, as PostgreSQL releases a subtransaction's locks.
        let since = self.xact_locks.get_mut().split_off(sp.xact_locks);
        for (key, mode) in since {
            db.advisory.unlock_scoped(self.holder, key, mode, crate::advisory::Scope::Transaction);
        }
        let settings = sp.settings.clone();
        if settings != self.settings {
            self.settings = settings;
            self.refresh_settings();
        }
        Ok(Output::tag(Tag::new("ROLLBACK")))
    }

    /// The status for ReadyForQuery. An implicit transaction is not a block (`I`).
    pub fn status(&self) -> TxnStatus {
        match &self.txn {
            None | Some(OpenTxn { implicit: true, .. }) => TxnStatus::Idle,
            Some(OpenTxn { txn: None, .. }) => TxnStatus::Failed,
            Some(_) => TxnStatus::InBlock,
        }
    }

    /// An error raised outside the SQL layer (e.g. the protocol layer rejecting a message's
    /// encoding) fails the current transaction, as any statement error does: a block enters
    /// the failed state, an implicit transaction is rolled back.
    pub fn fail_transaction(&mut self) {
        self.fail_open_transaction();
        self.end_of_call();
    }

    /// [`Session::fail_transaction`] but for what ends the call.
    fn fail_open_transaction(&mut self) {
        let Some(mut open) = self.txn.take() else { return };
        if !open.implicit && !open.savepoints.is_empty() {
            // ROLLBACK TO SAVEPOINT may take the block back: keep everything, the engine
            // transaction parked (unless a statement lost it, when only ROLLBACK is left).
            if let Some(t) = open.txn.take() {
                open.parked = Some(t);
            }
            if open.parked.is_some() {
                self.txn = Some(open);
                return;
            }
        }
        let block = !open.implicit;
        self.rollback_open(open);
        if block {
            self.txn = Some(OpenTxn::failed());
        }
    }

    /// Whether an explicit transaction block is open (or failed).
    /// 0A000 for `what`, a change Aspen applies at once, where PostgreSQL could still roll it
    /// back: in a transaction block, or among other statements of one Query.
    fn refuse_in_transaction(&self, what: &str) -> Result<()> {
        if self.txn.is_some() || self.pipelined {
            return Err(Error::unsupported(format!(
                "{what} inside a transaction block or among other statements of one Query"
            )));
        }
        Ok(())
    }

    /// CREATE, ALTER or DROP ROLE: applied to the catalog at once (roles are not
    /// transactional here), so refused in a transaction.
    fn run_role_command(&mut self, command: &Command) -> Result<Output> {
        let (what, tag) = match command {
            Command::CreateRole { .. } => ("CREATE ROLE", "CREATE ROLE"),
            Command::AlterRole { .. } | Command::RenameRole { .. } => ("ALTER ROLE", "ALTER ROLE"),
            _ => ("DROP ROLE", "DROP ROLE"),
        };
        self.refuse_in_transaction(what)?;
        let catalog = self.db.catalog();
        let mut notices = Vec::new();
        match command {
            Command::CreateRole { role, options } => {
                let mut role = role.clone();
                with_verifier(options, &mut notices)?.apply(&mut role);
                catalog.create_role(role).map_err(catalog_error)?;
            }
            Command::AlterRole { name, options } => {
                let options = with_verifier(options, &mut notices)?;
                let name = name.as_deref().unwrap_or(&self.user);
                catalog.alter_role(name, |role| options.apply(role)).map_err(catalog_error)?;
            }
            Command::RenameRole { name, new_name } => {
                if **name == *self.user {
                    return Err(Error::unsupported_msg("session user cannot be renamed"));
                }
                match catalog.rename_role(name, new_name) {
                    Err(catalog::Error::InvalidDefinition(message)) => {
                        return Err(Error::unsupported_msg(message))
                    }
                    other => other.map_err(catalog_error)?,
                }
            }
            Command::DropRole { names, if_exists } => {
                for name in names {
                    if catalog.role(name).is_none() && !*if_exists {
                        return Err(catalog_error(catalog::Error::UndefinedObject(format!(
                            "role \"{name}\" does not exist"
                        ))));
                    }
                    if **name == *self.user {
                        return Err(Error::ObjectInUse {
                            message: "current user cannot be dropped".into(),
                        });
                    }
                }
                for name in names {
                    match catalog.drop_role(name) {
                        Err(catalog::Error::UndefinedObject(missing)) => notices.push(Notice {
                            severity: "NOTICE",
                            code: "00000",
                            message: format!("{missing}, skipping"),
                        }),
                        other => other.map_err(catalog_error)?,
                    }
                }
            }
            _ => unreachable!("run_role_command runs role commands"),
        }
        let mut out = Output::tag(Tag::new(tag));
        out.notices = notices;
        Ok(out)
    }

    fn in_block(&self) -> bool {
        matches!(&self.txn, Some(open) if !open.implicit)
    }

    /// Starts the COPY of a prepared statement ([`Prepared::copy`]), from a simple Query or
    /// an Execute.
    ///
    /// - `COPY … FROM STDIN`: the rows then arrive through [`Session::copy_data`] and are
    ///   committed by [`Session::finish_copy`], all in one transaction: the open block, or one
    ///   of the COPY's own. An error fails that transaction (the caller reports it once the
    ///   client ends the copy).
    /// - `COPY … TO STDOUT`: runs the query now and returns its rows, which [`CopyOut`]
    ///   encodes as the connection sends them.
    pub fn start_copy(&mut self, copy: &crate::copy::CopyStatement) -> Result<CopyStart> {
        // A view's rows are its query's: PostgreSQL copies them only with COPY (query) TO.
        let view = |name: &str| self.snapshot().table(name).is_some_and(|t| t.is_view());
        match &copy.kind {
            crate::copy::CopyKind::To { name: Some(name), .. } if view(name) => Err(self.fail(
                Error::WrongObjectType { message: format!("cannot copy from view \"{name}\"") }
                    .with_hint("Try the COPY (SELECT ...) TO variant."),
            )),
            crate::copy::CopyKind::From { name, .. } if view(name) => {
                Err(self.fail(Error::WrongObjectType {
                    message: format!("cannot copy to view \"{name}\""),
                }))
            }
            crate::copy::CopyKind::To { query, .. } => self.copy_out(query, &copy.format),
            crate::copy::CopyKind::From { table, name, columns } => self
                .prepare_copy(table, name, columns, &copy.format, copy.freeze)
                .map(CopyStart::In)
                .map_err(|e| self.fail(e)),
        }
    }

    /// `COPY … TO STDOUT`: the query's rows, each encoded as one CopyData payload.
    fn copy_out(&mut self, query: &str, format: &crate::copy::CopyFormat) -> Result<CopyStart> {
        // The query's result, then any error committing its transaction.
        let mut results = self.execute_simple(query).into_iter();
        let out = results
            .next()
            .unwrap_or_else(|| {
                Err(Error::Syntax { message: "syntax error at end of input".into(), span: None })
            })
            .map_err(Error::without_position)?;
        if let Some(Err(e)) = results.next() {
            return Err(e);
        }
        let columns = out.columns.clone().ok_or_else(|| Error::Unsupported {
            feature: "COPY of a statement that returns no rows".into(),
            span: None,
        })?;
        Ok(CopyStart::Out(CopyOut {
            columns: columns.len(),
            rows: out.rows.len() as u64,
            format: format.clone(),
            header: format.header.then(|| columns.iter().map(|c| Some(c.name.clone())).collect()),
            types: columns.iter().map(|c| c.data_type).collect(),
            zone: self.zone,
            pending: out.rows.into_iter(),
        }))
    }

    fn prepare_copy(
        &mut self,
        table: &str,
        name: &str,
        columns: &[String],
        format: &crate::copy::CopyFormat,
        freeze: bool,
    ) -> Result<CopyIn> {
        if let Some(OpenTxn { txn: None, .. }) = &self.txn {
            return Err(Error::InFailedTransaction);
        }
        let columns = if columns.is_empty() {
            let select = format!("SELECT * FROM {table}");
            let all = self.prepare_with(&select, &[], false).map_err(Error::without_position)?;
            all.columns
                .as_ref()
                .map(|c| c.iter().map(|c| c.name.clone()).collect())
                .unwrap_or_default()
        } else {
            columns.to_vec()
        };
        let quoted: Vec<String> = columns.iter().map(|c| crate::copy::quote_ident(c)).collect();
        let params: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let insert = self
            .prepare_with(
                &format!(
                    "INSERT INTO {table} ({}) VALUES ({})",
                    quoted.join(", "),
                    params.join(", ")
                ),
                &[],
                false,
            )
            .map_err(Error::without_position)?;
        // PostgreSQL refuses FREEZE once the copy has started (after CopyInResponse).
        let id = self.snapshot().table(name).map(|t| t.id);
        let refused = (freeze
            && !id.is_some_and(|id| self.txn.as_ref().is_some_and(|o| o.made_or_emptied(id))))
        .then(|| {
            Box::new(Error::ObjectNotInPrerequisiteState {
                message: "cannot perform COPY FREEZE because the table was not created or \
                          truncated in the current subtransaction"
                    .into(),
            })
        });
        let own = self.txn.is_none();
        if own {
            self.open_implicit();
        }
        Ok(CopyIn {
            decoder: crate::copy::CopyDecoder::new(format.clone(), name),
            relation: name.to_string(),
            refused,
            columns,
            insert,
            rows: 0,
            own,
        })
    }

    /// Inserts the complete rows of the next CopyData payload.
    pub fn copy_data(&mut self, copy: &mut CopyIn, data: &[u8]) -> Result<()> {
        if let Some(e) = copy.refused.take() {
            return Err(self.fail(*e));
        }
        let CopyIn { decoder, relation, columns, insert, rows, .. } = copy;
        let result = decoder.feed(data, &mut |line, fields| {
            self.copy_row(relation, line, columns, insert, fields)?;
            *rows += 1;
            Ok(())
        });
        result.map_err(|e| self.fail(e))
    }

    /// The client's CopyDone: inserts a last unterminated row, commits the COPY's own
    /// transaction, and returns `COPY n`.
    pub fn finish_copy(&mut self, mut copy: CopyIn) -> Result<Output> {
        if let Some(e) = copy.refused.take() {
            return Err(self.fail(*e));
        }
        let CopyIn { decoder, relation, columns, insert, rows, .. } = &mut copy;
        let result = decoder.finish(&mut |line, fields| {
            self.copy_row(relation, line, columns, insert, fields)?;
            *rows += 1;
            Ok(())
        });
        result.map_err(|e| self.fail(e))?;
        if copy.own {
            self.end_implicit()?;
        }
        self.end_of_call();
        Ok(Output::tag(Tag::rows("COPY", copy.rows as usize)))
    }

    /// The client's CopyFail (or a lost connection): the COPY's transaction fails.
    pub fn abort_copy(&mut self, _copy: CopyIn) {
        self.fail_transaction();
    }

    /// Inserts one row of a COPY FROM. Its errors carry PostgreSQL's contexts: a value that
    /// does not convert names its column and value; an error of the insert itself (a
    /// duplicate key) only the line, except a NOT NULL violation, which gets the whole line
    /// from the decoder (PostgreSQL checks it before it buffers the row, the key only when it
    /// writes the buffer).
    fn copy_row(
        &mut self,
        relation: &str,
        line: u64,
        columns: &[String],
        insert: &Prepared,
        fields: Vec<Option<String>>,
    ) -> Result<()> {
        if fields.len() > columns.len() {
            return Err(crate::copy::bad_copy("extra data after last expected column"));
        }
        if let Some(missing) = columns.get(fields.len()) {
            return Err(crate::copy::bad_copy(format!("missing data for column \"{missing}\"")));
        }
        let values = fields
            .iter()
            .zip(&insert.param_types)
            .zip(columns)
            .map(|((f, ty), column)| match f {
                None => Ok(Value::Null),
                Some(text) => crate::types::parse_text_zoned(text, ty, self.zone).map_err(|e| {
                    e.with_context(|| {
                        let value = crate::copy::printout(text);
                        format!("COPY {relation}, line {line}, column {column}: \"{value}\"")
                    })
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        self.execute_prepared(insert, values).map(drop).map_err(|e| match e {
            Error::NotNullViolation { .. } => e,
            e => e.with_context(|| format!("COPY {relation}, line {line}")),
        })
    }

    /// Called when the connection ends: rolls back any open transaction.
    pub fn close(&mut self) {
        if let Some(open) = self.txn.take() {
            self.rollback_open(open);
        }
        self.db.advisory.release_session(self.holder);
    }

    /// Records a statement error: inside a block the block fails (its transaction is aborted).
    fn fail(&mut self, e: Error) -> Error {
        self.fail_transaction();
        e
    }

    /// Parses and binds (through the plan cache if `cache`). `None` for an empty statement.
    fn plan(&mut self, sql: &str, oids: &[u32], cache: bool) -> Result<Option<Arc<Cached>>> {
        let snapshot = self.snapshot();
        let private = !cache || self.private_catalog();
        let key = (sql.to_string(), oids.to_vec());
        if !private {
            if let Some(c) = self.db.plans.read().get(&key) {
                if c.version == snapshot.version().0 {
                    return Ok(Some(c.clone()));
                }
            }
        }
        let stmts = crate::parse::parse(sql)?;
        let stmt = match stmts.as_slice() {
            [] => return Ok(None),
            [s] => s,
            _ => {
                return Err(Error::SyntaxMisuse {
                    message: "cannot insert multiple commands into a prepared statement".into(),
                    span: None,
                })
            }
        };
        let cached = Arc::new(self.bind(&snapshot, sql, stmt, oids)?);
        if private {
            return Ok(Some(cached));
        }
        let mut plans = self.db.plans.write();
        if plans.len() >= PLAN_CACHE_CAPACITY {
            plans.clear();
        }
        plans.insert(key, cached.clone());
        Ok(Some(cached))
    }

    fn bind(&self, snapshot: &Snapshot, sql: &str, stmt: &Parsed, oids: &[u32]) -> Result<Cached> {
        let declared: Vec<Option<DataType>> =
            oids.iter().map(|o| oid_type(*o)).collect::<Result<_>>()?;
        let mut binder = Binder::new(snapshot, sql, declared);
        let bound = match stmt {
            Parsed::Sql(stmt) => binder.bind(stmt)?,
            Parsed::Checkpoint => Bound::Command(Command::Checkpoint),
            Parsed::SetConstraints { names, deferred } => {
                Bound::Command(binder.bind_set_constraints(names.as_deref(), *deferred)?)
            }
            Parsed::Metadata(q) => {
                Bound::Plan(Statement::Query(crate::metadata::answer(snapshot, q)))
            }
            Parsed::AlterSequence { if_exists, name, action } => {
                Bound::Command(binder.bind_alter_sequence(*if_exists, name, action)?)
            }
            Parsed::Maintenance { vacuum, analyze, tables } => {
                // PostgreSQL's order: the option first, then each table and its columns, and
                // no error position.
                if !analyze && tables.iter().any(|(_, columns)| !columns.is_empty()) {
                    return Err(Error::unsupported_msg(
                        "ANALYZE option must be specified when a column list is provided",
                    ));
                }
                for (name, columns) in tables {
                    let table = binder.table(name).map_err(Error::without_position)?;
                    let mut seen: Vec<String> = Vec::with_capacity(columns.len());
                    for c in columns {
                        let c = crate::bind::ident(c);
                        if table.column(&c).is_none() {
                            return Err(Error::UndefinedColumn {
                                name: format!("\"{c}\" of relation \"{}\"", table.name),
                                span: None,
                            });
                        }
                        if seen.contains(&c) {
                            return Err(Error::ColumnListedTwice {
                                column: c,
                                table: table.name.clone(),
                            });
                        }
                        seen.push(c);
                    }
                }
                Bound::Command(Command::Maintenance { vacuum: *vacuum })
            }
            // A COPY that `Session::start_copy` did not take: not alone in its Query message.
            Parsed::Copy(_) => {
                return Err(Error::Unsupported {
                    feature: "COPY among other statements in one Query message".into(),
                    span: None,
                })
            }
        };
        let columns = match &bound {
            Bound::Plan(p) => {
                p.columns().map(|cols| Arc::new(cols.iter().map(ColumnInfo::from).collect()))
            }
            Bound::Command(Command::Show(name)) => {
                let name = guc(name).map(|g| g.name.to_string()).unwrap_or_else(|| name.clone());
                let name =
                    if name.eq_ignore_ascii_case("timezone") { "TimeZone".into() } else { name };
                Some(Arc::new(vec![text_column(&name)]))
            }
            Bound::Command(Command::ShowAll) => Some(Arc::new(vec![
                text_column("name"),
                text_column("setting"),
                text_column("description"),
            ])),
            Bound::Command(Command::SetConfig { column, .. }) => {
                Some(Arc::new(vec![text_column(column)]))
            }
            Bound::Command(_) => None,
        };
        Ok(Cached {
            param_types: binder.param_types(),
            short: bound_is_short(&bound),
            bound,
            columns,
            version: snapshot.version().0,
        })
    }

    fn run_ast(
        &mut self,
        sql: &str,
        stmt: &Parsed,
        oids: &[u32],
        params: &[Value],
    ) -> Result<Output> {
        let snapshot = self.snapshot();
        let cached = self.bind(&snapshot, sql, stmt, oids)?;
        self.run_bound(&cached, params)
    }

    fn run_bound(&mut self, cached: &Cached, params: &[Value]) -> Result<Output> {
        match &cached.bound {
            Bound::Command(cmd) => self.run_command(cmd),
            Bound::Plan(stmt) => {
                let out = self.run_statement(stmt, cached, params);
                let warnings = std::mem::take(self.warnings.get_mut());
                out.map(|mut o| {
                    o.notices.extend(warnings);
                    o
                })
            }
        }
    }

    /// A query or DML statement: in the open transaction, or in its own.
    fn run_statement(
        &mut self,
        stmt: &Statement,
        cached: &Cached,
        params: &[Value],
    ) -> Result<Output> {
        if let Some(OpenTxn { txn: None, .. }) = &self.txn {
            return Err(Error::InFailedTransaction);
        }
        if self.txn.is_none() && self.pipelined {
            self.open_implicit();
        }
        if self.txn.is_some() {
            return self.run_in_block(stmt, cached, params);
        }
        // Autocommit: run, commit; retry a bounded number of times on conflicts.
        let mut attempt = 0;
        loop {
            let now = now();
            let mut t = self.db.engine.begin(self.log_buffer);
            self.written.get_mut().clear();
            // A deferrable UPDATE runs as an ordinary one first: alone in its
            // transaction, it reads and commits within this call, so a conflict is
            // rare and deferring would be pure overhead. A retry defers it, so a hot
            // row's increments stop conflicting instead of using up the retries.
            let defer = attempt > 0;
            *self.advisory_used.get_mut() = false;
            self.pending_checks.get_mut().clear();
            let result = self
                .run_plan(&mut t, now, stmt, cached, params, defer)
                .and_then(|out| self.run_pending_checks(&mut t, now, None).map(|()| out));
            let result = match result {
                Ok(out) => self.commit(t).map(|_| out),
                Err(e) => {
                    let e = e.or_serialization_failure(|| t.reads_still_valid());
                    t.abort();
                    Err(e)
                }
            };
            match result {
                Err(e)
                    if e.is_retryable()
                        && attempt < AUTOCOMMIT_RETRIES
                        && !*self.advisory_used.get_mut() =>
                {
                    attempt += 1;
                    std::thread::yield_now();
                }
                other => return other,
            }
        }
    }

    fn run_in_block(
        &mut self,
        stmt: &Statement,
        cached: &Cached,
        params: &[Value],
    ) -> Result<Output> {
        let open = self.txn.as_mut().expect("checked by caller");
        let now = open.now;
        let mut t = open.txn.take().expect("checked by caller");
        let mut result = self.run_plan(&mut t, now, stmt, cached, params, true);
        // An UPDATE or DELETE that met no row may have missed one that this transaction read
        // and another one since deleted (or changed): the count would show the client a state
        // its transaction cannot commit in. If its reads no longer validate (they never will
        // again: TIDs do not repeat), it is PostgreSQL's 40001 "concurrent delete" instead.
        if let Ok(out) = &result {
            if matches!(out.tag.command.as_str(), "UPDATE" | "DELETE")
                && out.tag.rows == Some(0)
                && !t.reads_still_valid()
            {
                result = Err(Error::SerializationFailure {
                    message: "could not serialize access due to concurrent delete".into(),
                });
            }
        }
        match result {
            Ok(out) => {
                // Rows shown inside a block must not be taken back by a crash either: they wait
                // until everything read so far is durable (SSN of the reads <= CSN).
                let read = t.read_ssn();
                if let Some(open) = &mut self.txn {
                    open.txn = Some(t);
                }
                if self.synchronous_commit() {
                    let ticket = wal::Ticket { ssn: read, device: wal::DeviceId(0), blind: false };
                    self.require_durable(ticket, false)?;
                }
                Ok(out)
            }
            Err(e) => {
                let e = e.or_serialization_failure(|| t.reads_still_valid());
                match &mut self.txn {
                    // ROLLBACK TO SAVEPOINT may take the block back to before this statement.
                    Some(open) if !open.savepoints.is_empty() => open.parked = Some(t),
                    _ => t.abort(),
                }
                Err(e)
            }
        }
    }

    /// Runs one bound statement in `t`. `defer` lets a deferrable UPDATE run as a deferred
    /// update ([`deferred_update`]).
    fn run_plan(
        &self,
        t: &mut txn::Transaction,
        now: NaiveDateTime,
        stmt: &Statement,
        cached: &Cached,
        params: &[Value],
        defer: bool,
    ) -> Result<Output> {
        let mut ctx = Ctx {
            txn: t,
            engine: &self.db.engine,
            params,
            outer: vec![],
            env: self.env(now),
            session: Some(self),
            recursion: Default::default(),
            deadline: self.statement_deadline(),
            cancel: Some(&self.cancel),
            initplans: Default::default(),
            rows_read: 0,
            fk_timing: self.txn.as_ref().map(|o| o.fk_timing.clone()).unwrap_or_default(),
            pending_checks: Vec::new(),
        };
        self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        let out = self.run_in(&mut ctx, stmt, cached, defer)?;
        if !ctx.pending_checks.is_empty() {
            self.pending_checks.lock().append(&mut ctx.pending_checks);
        }
        Ok(out)
    }

    /// Runs the deferred foreign-key checks the transaction `t` has pending — those of the
    /// constraints `only` names, or all — against its rows as they are now; the others stay
    /// pending.
    fn run_pending_checks(
        &self,
        t: &mut txn::Transaction,
        now: NaiveDateTime,
        only: Option<&[String]>,
    ) -> Result<()> {
        let checks = {
            let mut pending = self.pending_checks.lock();
            if pending.is_empty() {
                return Ok(());
            }
            match only {
                None => std::mem::take(&mut *pending),
                Some(names) => {
                    let (run, keep) = std::mem::take(&mut *pending)
                        .into_iter()
                        .partition(|c| names.iter().any(|n| n == c.constraint()));
                    *pending = keep;
                    run
                }
            }
        };
        let snapshot = self.snapshot();
        let mut ctx = Ctx::internal(t, &self.db.engine, self.env(now));
        exec::constraints::check_pending(&mut ctx, &snapshot, checks)
    }

    /// [`Session::run_plan`] in `ctx`.
    fn run_in(
        &self,
        ctx: &mut Ctx<'_>,
        stmt: &Statement,
        cached: &Cached,
        defer: bool,
    ) -> Result<Output> {
        match stmt {
            Statement::With { ctes, main } => {
                for (id, cte) in ctes {
                    let out = self.run_in(ctx, cte, cached, false)?;
                    ctx.recursion.working.insert(*id, out.rows);
                }
                self.run_in(ctx, main, cached, false)
            }
            Statement::Query(q) => {
                let rows = ctx.run(&q.plan)?;
                Ok(Output {
                    tag: Tag::rows("SELECT", rows.len()),
                    columns: cached.columns.clone(),
                    rows,
                    notices: vec![],
                    zone: self.zone,
                })
            }
            Statement::Insert { table, source, targets, returning, on_conflict, checks } => {
                self.note_written(table)?;
                let rows = ctx.run(source)?;
                let mut out_rows = Vec::new();
                let mut n = 0;
                let snapshot = self.snapshot();
                // Foreign keys hold at the end of the statement (PostgreSQL), so a row may
                // reference one inserted after it, or itself.
                let mut referential = Referential::new(&snapshot, table);
                // ON CONFLICT DO UPDATE: the rows this statement inserted or updated.
                let mut touched: HashSet<Vec<u8>> = HashSet::new();
                for src in rows {
                    let mut row = Vec::with_capacity(targets.len());
                    for t in targets {
                        row.push(match t {
                            InsertValue::Source(i) => src[*i].clone(),
                            InsertValue::Default(e) => ctx.eval(e, &[])?,
                        });
                    }
                    let row = check_row(table, checks, row, &ctx.env)?;
                    let key = exec::primary_key(table, &row, &self.db.engine);
                    let mut bytes = Vec::with_capacity(64);
                    types::encode_row(&row, &mut bytes);
                    // ON CONFLICT with a target: the clashing row on that index, looked up first
                    // (PostgreSQL's arbiter index), so a clash on another index is still 23505.
                    let clash = match on_conflict {
                        Some(oc) if oc.index.is_some() => clashing_row(ctx, table, oc, &row)?,
                        _ => None,
                    };
                    let row = match (clash, on_conflict) {
                        (Some(_), Some(oc)) if oc.update.is_none() => continue, // DO NOTHING
                        (Some((old_key, old)), Some(oc)) => {
                            let update = oc.update.as_ref().expect("DO UPDATE");
                            let (proposed, touched) = (&row, &mut touched);
                            match upsert(
                                ctx, table, checks, update, old_key, &old, proposed, touched,
                            )? {
                                Some(new) => {
                                    referential.changed(&snapshot, table, &old, Some(&new));
                                    new
                                }
                                None => continue, // its WHERE did not hold
                            }
                        }
                        _ => {
                            let pk = on_conflict.as_ref().map(|_| key.bytes.clone());
                            match exec::insert_row(ctx.txn, table, key, bytes) {
                                Ok(()) => touched.extend(pk),
                                // DO NOTHING without a target: any clash.
                                Err(txn::Error::UniqueViolation { .. })
                                    if on_conflict
                                        .as_ref()
                                        .is_some_and(|oc| oc.index.is_none()) =>
                                {
                                    continue
                                }
                                Err(e) => return Err(unique_error(e, table, &row)),
                            }
                            row
                        }
                    };
                    n += 1;
                    if let Some(r) = returning {
                        out_rows.push(
                            r.iter().map(|(e, _)| ctx.eval(e, &row)).collect::<Result<Vec<_>>>()?,
                        );
                    }
                    referential.written(table, &row);
                }
                referential.finish(ctx, &snapshot)?;
                Ok(dml_output("INSERT", n, returning.is_some(), cached, out_rows))
            }
            Statement::Update { table, scan, sets, returning, deferrable, checks, from } => {
                self.note_written(table)?;
                if *deferrable && defer && deferred_update(ctx, table, scan, sets, self)? {
                    return Ok(dml_output("UPDATE", 1, false, cached, Vec::new()));
                }
                let (rows, others) = scan_joined(ctx, scan, from.as_deref())?;
                let n = rows.len();
                let mut out_rows = Vec::new();
                let snapshot = self.snapshot();
                // As for INSERT: the new rows' foreign keys are checked when the statement ends,
                // and so are the rows that reference a key it changed.
                let sets_fk = sets.iter().any(|(c, _)| {
                    table.foreign_keys.iter().any(|fk| fk.columns.contains(&(*c as u16)))
                });
                let mut referential = Referential::new(&snapshot, table);
                for (i, (key, old)) in rows.into_iter().enumerate() {
                    // With FROM, SET and RETURNING read the other tables' row after the target's.
                    let other = others.get(i);
                    let joined = other.map(|o| [old.as_slice(), o].concat());
                    let input = joined.as_deref().unwrap_or(&old);
                    let mut new = old.clone();
                    for (col, e) in sets.iter() {
                        new[*col] = ctx.eval(e, input)?;
                    }
                    let new = check_row(table, checks, new, &ctx.env)?;
                    if sets_fk {
                        referential.written(table, &new);
                    }
                    referential.changed(&snapshot, table, &old, Some(&new));
                    write_updated(ctx, table, key, &old, &new)?;
                    if let Some(r) = returning {
                        let joined = other.map(|o| [new.as_slice(), o].concat());
                        let row = joined.as_deref().unwrap_or(&new);
                        out_rows.push(
                            r.iter().map(|(e, _)| ctx.eval(e, row)).collect::<Result<Vec<_>>>()?,
                        );
                    }
                }
                referential.finish(ctx, &snapshot)?;
                Ok(dml_output("UPDATE", n, returning.is_some(), cached, out_rows))
            }
            Statement::Delete { table, scan, returning, from } => {
                self.note_written(table)?;
                let (rows, others) = scan_joined(ctx, scan, from.as_deref())?;
                let n = rows.len();
                let mut out_rows = Vec::new();
                let snapshot = self.snapshot();
                let mut referential = Referential::new(&snapshot, table);
                for (i, (key, old)) in rows.into_iter().enumerate() {
                    ctx.txn.delete(exec::tid(table), &key).map_err(exec::txn_error)?;
                    referential.changed(&snapshot, table, &old, None);
                    if let Some(r) = returning {
                        let joined = others.get(i).map(|o| [old.as_slice(), o].concat());
                        let row = joined.as_deref().unwrap_or(&old);
                        out_rows.push(
                            r.iter().map(|(e, _)| ctx.eval(e, row)).collect::<Result<Vec<_>>>()?,
                        );
                    }
                }
                referential.finish(ctx, &snapshot)?;
                Ok(dml_output("DELETE", n, returning.is_some(), cached, out_rows))
            }
        }
    }

    /// EXECUTE of a statement PREPARE made: its arguments evaluated to its parameter types,
    /// then the statement runs as the extended protocol's Execute would run it.
    fn execute_sql_prepared(
        &mut self,
        name: &str,
        sql: &str,
        args: &[sqlparser::ast::Expr],
    ) -> Result<Output> {
        let snapshot = self.snapshot();
        let prepared = self
            .prepared
            .get(name)
            .ok_or_else(|| Error::UndefinedPreparedStatement { name: name.into() })?;
        let cached = if prepared.cached.version == snapshot.version().0 {
            prepared.cached.clone()
        } else {
            // The catalog changed since PREPARE: bind again.
            let cached = Arc::new(self.bind(
                &snapshot,
                &prepared.sql,
                &prepared.statement,
                &prepared.oids,
            )?);
            if cached.columns != prepared.cached.columns {
                return Err(Error::ResultTypeChanged);
            }
            if let Some(p) = self.prepared.get_mut(name) {
                p.cached = cached.clone();
            }
            cached
        };
        let expected = cached.param_types.len();
        if args.len() != expected {
            return Err(Error::WrongParameterCount {
                name: name.into(),
                detail: format!("Expected {expected} parameters but got {}.", args.len()),
            });
        }
        let mut binder = Binder::new(&snapshot, sql, Vec::new());
        let exprs = binder.bind_execute_args(args, &cached.param_types)?;
        let env = self.owned_env();
        let env = env.env(now());
        let params = exprs
            .iter()
            .map(|e| exec::eval_pure(e, &[], &[], &[], &env))
            .collect::<Result<Vec<_>>>()?;
        self.run_bound(&cached, &params)
    }

    fn run_command(&mut self, cmd: &Command) -> Result<Output> {
        let failed = matches!(self.txn, Some(OpenTxn { txn: None, .. }));
        match cmd {
            Command::Begin(tag) => {
                match &mut self.txn {
                    // BEGIN inside an implicit transaction makes it a block: what ran before
                    // it belongs to the block (PostgreSQL, without a warning).
                    Some(open) if open.implicit => open.implicit = false,
                    Some(_) if failed => return Err(Error::InFailedTransaction),
                    Some(_) => {
                        return Ok(Output::tag(Tag::new(tag)).with_notice(
                            "WARNING",
                            "25001",
                            "there is already a transaction in progress".into(),
                        ))
                    }
                    None => {
                        let t = self.db.engine.begin(self.log_buffer);
                        self.txn = Some(OpenTxn::new(t, false));
                    }
                }
                Ok(Output::tag(Tag::new(tag)))
            }
            Command::Commit => {
                let no_block = Output::tag(Tag::new("COMMIT")).with_notice(
                    "WARNING",
                    "25P01",
                    "there is no transaction in progress".into(),
                );
                match self.txn.take() {
                    None => Ok(no_block),
                    Some(open @ OpenTxn { txn: None, .. }) => {
                        self.rollback_open(open);
                        Ok(Output::tag(Tag::new("ROLLBACK")))
                    }
                    // COMMIT inside an implicit transaction commits it, with a warning.
                    Some(open) if open.implicit => self.commit_open(open).map(|_| no_block),
                    Some(open) => self.commit_open(open).map(|_| Output::tag(Tag::new("COMMIT"))),
                }
            }
            Command::Rollback => {
                let out = Output::tag(Tag::new("ROLLBACK"));
                match self.txn.take() {
                    None => Ok(out.with_notice(
                        "WARNING",
                        "25P01",
                        "there is no transaction in progress".into(),
                    )),
                    Some(open) => {
                        let implicit = open.implicit;
                        self.rollback_open(open);
                        Ok(if implicit {
                            out.with_notice(
                                "WARNING",
                                "25P01",
                                "there is no transaction in progress".into(),
                            )
                        } else {
                            out
                        })
                    }
                }
            }
            Command::RollbackTo(name) => self.rollback_to_savepoint(name),
            _ if failed => Err(Error::InFailedTransaction),
            Command::SetConstraints { names, deferred } => {
                let tag = Output::tag(Tag::new("SET CONSTRAINTS"));
                let Some(open) = self.txn.as_mut() else {
                    return Ok(tag.with_notice(
                        "WARNING",
                        "25P01",
                        "SET CONSTRAINTS can only be used in transaction blocks".into(),
                    ));
                };
                open.fk_timing.set(names.as_deref(), *deferred);
                if !*deferred {
                    // IMMEDIATE checks what waits for those constraints now.
                    let now = open.now;
                    self.with_txn(|s, t| s.run_pending_checks(t, now, names.as_deref()))?;
                }
                Ok(tag)
            }
            Command::Savepoint(name) => {
                let Some(open) = self.txn.as_mut().filter(|o| !o.implicit) else {
                    return Err(outside_block("SAVEPOINT"));
                };
                let t = open.txn.as_ref().ok_or(Error::InFailedTransaction)?;
                let ddl =
                    open.ddl.as_ref().map(|d| (d.batch.clone(), d.created.len(), d.dropped.len()));
                open.savepoints.push(SavepointState {
                    name: name.clone(),
                    writes: t.savepoint(),
                    ddl,
                    settings: self.settings.clone(),
                    truncated: open.truncated.len(),
                    xact_locks: self.xact_locks.get_mut().len(),
                });
                Ok(Output::tag(Tag::new("SAVEPOINT")))
            }
            Command::Release(name) => {
                let Some(open) = self.txn.as_mut().filter(|o| !o.implicit) else {
                    return Err(outside_block("RELEASE SAVEPOINT"));
                };
                let i = savepoint_index(open, name)?;
                open.savepoints.truncate(i);
                Ok(Output::tag(Tag::new("RELEASE")))
            }
            Command::SetTransaction => Ok(Output::tag(Tag::new("SET"))),
            Command::Set { name, value } => {
                self.save_settings();
                self.set_scoped(name, value, false)
            }
            Command::SetLocal { name, value } => {
                self.save_settings();
                if self.txn.is_none() {
                    // As PostgreSQL: a warning, and no effect.
                    guc(name).ok_or_else(|| Error::UnrecognizedParameter { name: name.clone() })?;
                    return Ok(Output::tag(Tag::new("SET")).with_notice(
                        "WARNING",
                        "25P01",
                        "SET LOCAL can only be used in transaction blocks".into(),
                    ));
                }
                self.set_scoped(name, value, true)
            }
            Command::SetConfig { name, value, column, local } => {
                self.save_settings();
                let (out, shown) = if *local && self.txn.is_none() {
                    // Only for this statement's own transaction, which ends now.
                    let shown = match guc(name) {
                        Some(g) => validate_setting(g.name, value)?,
                        None if name.contains('.') => value.clone(),
                        None => return Err(Error::UnrecognizedParameter { name: name.clone() }),
                    };
                    (Output::tag(Tag::new("SET")), shown)
                } else {
                    let out = self.set_scoped(name, &SetValue::Value(value.clone()), *local)?;
                    // What SHOW now gives (a placeholder `a.b` is not kept: the value given).
                    (out, self.setting(name).unwrap_or_else(|| value.clone()))
                };
                Ok(Output {
                    tag: Tag::rows("SELECT", 1),
                    columns: Some(Arc::new(vec![text_column(column)])),
                    rows: vec![vec![Value::Text(shown)]],
                    ..out
                })
            }
            Command::Reset(name) => match name {
                None => {
                    self.save_settings();
                    let user = self.user.to_string();
                    let settings = Arc::make_mut(&mut self.settings);
                    // Placeholders stay defined, empty (as PostgreSQL's RESET ALL leaves them).
                    let placeholders: Vec<&'static str> =
                        settings.keys().filter(|k| guc(k).is_none()).copied().collect();
                    settings.clear();
                    settings.insert("session_authorization", user);
                    settings.extend(placeholders.into_iter().map(|k| (k, String::new())));
                    self.refresh_settings();
                    Ok(Output::tag(Tag::new("RESET")))
                }
                Some(n) => {
                    self.save_settings();
                    let out = self.set(n, &SetValue::Default)?;
                    Ok(Output { tag: Tag::new("RESET"), ..out })
                }
            },
            Command::Show(name) => {
                let lname = name.to_lowercase();
                let value = match lname.as_str() {
                    "timezone" | "time zone" => self.setting("TimeZone"),
                    _ => self.setting(&lname),
                }
                .ok_or_else(|| Error::UnrecognizedParameter { name: name.clone() })?;
                let col = match guc(&lname) {
                    Some(g) => g.name,
                    None if lname.contains('.') => lname.as_str(),
                    None => "TimeZone",
                };
                Ok(Output {
                    tag: Tag::new("SHOW"),
                    columns: Some(Arc::new(vec![text_column(col)])),
                    rows: vec![vec![Value::Text(value)]],
                    notices: vec![],
                    zone: self.zone,
                })
            }
            Command::ShowAll => {
                let mut rows: Vec<Vec<Value>> = GUCS
                    .iter()
                    .map(|g| {
                        vec![
                            Value::Text(g.name.to_string()),
                            Value::Text(self.setting(g.name).unwrap_or_default()),
                            Value::Text(g.description.to_string()),
                        ]
                    })
                    .collect();
                rows.sort_by_key(|r| match &r[0] {
                    Value::Text(s) => s.to_lowercase(),
                    _ => String::new(),
                });
                Ok(Output {
                    tag: Tag::new("SHOW"),
                    columns: Some(Arc::new(vec![
                        text_column("name"),
                        text_column("setting"),
                        text_column("description"),
                    ])),
                    rows,
                    notices: vec![],
                    zone: self.zone,
                })
            }
            Command::NoOp(tag) => {
                if *tag == "DISCARD ALL" {
                    self.prepared.clear();
                }
                Ok(Output::tag(Tag::new(tag)))
            }
            Command::Skip { tag, code, message } => {
                Ok(Output::tag(Tag::new(tag)).with_notice("NOTICE", code, message.clone()))
            }
            Command::Prepare { name, sql, statement, oids } => {
                if self.prepared.contains_key(name) {
                    return Err(Error::DuplicatePreparedStatement { name: name.clone() });
                }
                let statement = Parsed::Sql(statement.clone());
                let cached = Arc::new(self.bind(&self.snapshot(), sql, &statement, oids)?);
                let sql = sql.clone();
                let oids = oids.clone();
                self.prepared.insert(name.clone(), SqlPrepared { sql, statement, oids, cached });
                Ok(Output::tag(Tag::new("PREPARE")))
            }
            Command::Execute { name, sql, args } => self.execute_sql_prepared(name, sql, args),
            Command::Deallocate(None) => {
                self.prepared.clear();
                Ok(Output::tag(Tag::new("DEALLOCATE ALL")))
            }
            Command::Deallocate(Some(name)) => match self.prepared.remove(name) {
                Some(_) => Ok(Output::tag(Tag::new("DEALLOCATE"))),
                None => Err(Error::UndefinedPreparedStatement { name: name.clone() }),
            },
            Command::Maintenance { vacuum: true } if self.in_block() => {
                Err(Error::ActiveTransaction {
                    message: "VACUUM cannot run inside a transaction block".into(),
                })
            }
            Command::Maintenance { vacuum } => {
                Ok(Output::tag(Tag::new(if *vacuum { "VACUUM" } else { "ANALYZE" })))
            }
            Command::Checkpoint => {
                // As in PostgreSQL, also allowed inside a transaction block (it is not part of it).
                self.db.checkpoint()?;
                Ok(Output::tag(Tag::new("CHECKPOINT")))
            }
            Command::CreateRole { .. }
            | Command::AlterRole { .. }
            | Command::RenameRole { .. }
            | Command::DropRole { .. } => self.run_role_command(cmd),
            Command::RestartSequence { table, position, sequence, value } => {
                self.refuse_in_transaction("ALTER SEQUENCE … RESTART")?;
                let bound = if *value < sequence.min {
                    Some(("less than MINVALUE", sequence.min))
                } else if *value > sequence.max {
                    Some(("greater than MAXVALUE", sequence.max))
                } else {
                    None
                };
                if let Some((what, limit)) = bound {
                    return Err(Error::InvalidParameterValue {
                        message: format!("RESTART value ({value}) cannot be {what} ({limit})"),
                    });
                }
                let catalog = self.db.catalog();
                catalog
                    .setval(table.id, *position, sequence, *value, false)
                    .map_err(catalog_error)?;
                Ok(Output::tag(Tag::new("ALTER SEQUENCE")))
            }
            ddl => {
                // DDL always runs in a transaction: the open one (block or implicit), else one
                // of its own that commits at once.
                if self.txn.is_some() {
                    return self.run_ddl(ddl);
                }
                self.open_implicit();
                if self.pipelined {
                    return self.run_ddl(ddl);
                }
                let open_after = |s: &mut Session| s.txn.take().expect("opened above");
                match self.run_ddl(ddl) {
                    Ok(out) => {
                        let open = open_after(self);
                        self.commit_open(open).map(|_| out)
                    }
                    Err(e) => {
                        let open = open_after(self);
                        self.rollback_open(open);
                        Err(e)
                    }
                }
            }
        }
    }

    /// Before the first SET in a transaction: remembers the settings, to restore them if it
    /// rolls back. Outside a transaction, SET takes effect for the session at once.
    fn save_settings(&mut self) {
        if self.txn.is_none() && self.pipelined {
            self.open_implicit();
        }
        if let Some(open) = &mut self.txn {
            if open.saved_settings.is_none() {
                open.saved_settings = Some(self.settings.clone());
            }
        }
    }

    /// SET (`local`: SET LOCAL) inside or outside a transaction: [`Session::set`], and the
    /// value a SET LOCAL goes back to when the transaction commits ([`OpenTxn::local_restore`]).
    fn set_scoped(&mut self, name: &str, value: &SetValue, local: bool) -> Result<Output> {
        // The key the setting is kept under (a placeholder's only once it was ever SET).
        let key = |name: &str| -> Result<Option<&'static str>> {
            match guc(name) {
                Some(g) => Ok(Some(g.name)),
                None => placeholder(name, false),
            }
        };
        let before = key(name)?.and_then(|n| self.settings.get(n).cloned());
        let out = self.set(name, value)?;
        let Some(n) = key(name)? else { return Ok(out) };
        let after = self.settings.get(n).cloned();
        if let Some(open) = self.txn.as_mut() {
            if local {
                open.local_restore.entry(n).or_insert(before);
            } else if let Some(restore) = open.local_restore.get_mut(n) {
                *restore = after;
            }
        }
        Ok(out)
    }

    fn set(&mut self, name: &str, value: &SetValue) -> Result<Output> {
        let Some(g) = guc(name) else {
            // Placeholder parameters (`app.user`), as PostgreSQL: any value, kept as given.
            if !name.contains('.') {
                return Err(Error::UnrecognizedParameter { name: name.to_string() });
            }
            // Once SET, it stays defined in the session: RESET makes it empty.
            let name = placeholder(name, true)?.expect("created");
            let value = match value {
                SetValue::Default => String::new(),
                SetValue::Value(v) => v.clone(),
            };
            Arc::make_mut(&mut self.settings).insert(name, value);
            return Ok(Output::tag(Tag::new("SET")));
        };
        if READ_ONLY_GUCS.contains(&g.name) {
            return Err(Error::CantChangeRuntimeParam { name: g.name.to_string() });
        }
        match value {
            SetValue::Default => {
                Arc::make_mut(&mut self.settings).remove(g.name);
            }
            SetValue::Value(v) => {
                let v = validate_setting(g.name, v)?;
                Arc::make_mut(&mut self.settings).insert(g.name, v);
            }
        }
        self.refresh_settings();
        Ok(Output::tag(Tag::new("SET")))
    }

    /// Stages a schema change in the open transaction's catalog batch.
    fn stage(&mut self, ddl: catalog::Ddl) -> Result<catalog::Applied> {
        let open = self.txn.as_mut().expect("DDL runs in a transaction");
        let pending = open.ddl.get_or_insert_with(|| PendingDdl {
            batch: self.db.catalog.begin_batch(),
            created: Vec::new(),
            dropped: Vec::new(),
        });
        self.db.catalog.stage(&mut pending.batch, ddl).map_err(catalog_error)
    }

    /// The pending DDL of the open transaction (after a [`Session::stage`]).
    fn pending_ddl(&mut self) -> &mut PendingDdl {
        self.txn
            .as_mut()
            .and_then(|open| open.ddl.as_mut())
            .expect("staged in the open transaction")
    }

    /// Runs `f` with the open transaction's engine transaction (DDL that reads or rewrites
    /// rows does it inside the transaction, so it commits or rolls back with it).
    fn with_txn<R>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut txn::Transaction) -> Result<R>,
    ) -> Result<R> {
        let open = self.txn.as_mut().expect("DDL runs in a transaction");
        let mut t = open.txn.take().expect("not a failed block");
        let result = f(self, &mut t);
        if let Some(open) = &mut self.txn {
            open.txn = Some(t);
        }
        result
    }

    /// Drops tables or views `ids` together (DROP TABLE, DROP VIEW), and with `cascade` the
    /// foreign keys and views that depend on them; `out` gets the notices.
    fn drop_relations(
        &mut self,
        ids: Vec<TableId>,
        cascade: bool,
        mut out: Output,
    ) -> Result<Output> {
        let applied = self.stage(catalog::Ddl::DropTables { ids: ids.clone(), cascade }).map_err(
            |e| match e {
                e @ Error::DependentObjects { .. } => e.with_hint(CASCADE_HINT),
                other => other,
            },
        )?;
        for n in applied.notices {
            out = out.with_notice("NOTICE", "00000", n);
        }
        for id in ids.into_iter().chain(applied.cascaded) {
            self.pending_ddl().dropped.push(EngineObject::Table(id));
        }
        Ok(out)
    }

    fn run_ddl(&mut self, cmd: &Command) -> Result<Output> {
        let db = self.db.clone();
        let engine = &db.engine;
        match cmd {
            Command::CreateTable(ct) => {
                if let Some(skip) = self.exists_skip(&ct.def.name, ct.if_not_exists, "CREATE TABLE")
                {
                    return Ok(skip);
                }
                let mut def = ct.def.clone();
                let self_refs: Vec<catalog::ForeignKey> = def
                    .foreign_keys
                    .iter()
                    .filter(|f| f.ref_table == TableId(u32::MAX))
                    .cloned()
                    .collect();
                def.foreign_keys.retain(|f| f.ref_table != TableId(u32::MAX));
                let id = self.create_staged(def)?.id;
                for mut fk in self_refs {
                    fk.ref_table = id;
                    self.stage(catalog::Ddl::AddForeignKey { table: id, fk })?;
                }
                Ok(Output::tag(Tag::new("CREATE TABLE")))
            }
            Command::CreateView(ct) => {
                self.create_staged(ct.def.clone())?;
                Ok(Output::tag(Tag::new("CREATE VIEW")))
            }
            Command::DropView { names, if_exists, cascade } => {
                let snapshot = self.snapshot();
                let mut out = Output::tag(Tag::new("DROP VIEW"));
                let mut ids = Vec::new();
                for n in names {
                    match snapshot.table(n) {
                        Some(t) if t.is_view() => ids.push(t.id),
                        Some(_) => {
                            return Err(Error::WrongObjectType {
                                message: format!("\"{n}\" is not a view"),
                            }
                            .with_hint("Use DROP TABLE to remove a table."))
                        }
                        None if *if_exists => {
                            out = out.skipping(&format!("view \"{n}\" does not exist"));
                        }
                        None => {
                            return Err(Error::UndefinedToDrop { kind: "view", name: n.clone() })
                        }
                    }
                }
                if ids.is_empty() {
                    return Ok(out);
                }
                self.drop_relations(ids, *cascade, out)
            }
            Command::CreateTableAs { create, query } => {
                let (name, if_not_exists) = (&create.def.name, create.if_not_exists);
                if let Some(skip) = self.exists_skip(name, if_not_exists, "CREATE TABLE AS") {
                    return Ok(skip);
                }
                let table = self.create_staged(create.def.clone())?;
                let owned = self.owned_env();
                let n = self.with_txn(|_, t| {
                    let mut ctx = Ctx::internal(t, engine, owned.env(now()));
                    let rows = ctx.run(&query.plan)?;
                    let n = rows.len();
                    for row in rows {
                        let row = check_row(&table, &[], row, &ctx.env)?;
                        let key = exec::primary_key(&table, &row, engine);
                        let mut bytes = Vec::with_capacity(64);
                        types::encode_row(&row, &mut bytes);
                        exec::insert_row(ctx.txn, &table, key, bytes).map_err(exec::txn_error)?;
                    }
                    Ok(n)
                })?;
                Ok(Output::tag(Tag::rows("SELECT", n)))
            }
            Command::CreateSequence(ct, owner) => {
                if let Some(skip) =
                    self.exists_skip(&ct.def.name, ct.if_not_exists, "CREATE SEQUENCE")
                {
                    return Ok(skip);
                }
                let sequence = self.create_staged(ct.def.clone())?.id;
                if owner.is_some() {
                    self.stage(catalog::Ddl::SetSequenceOwner { sequence, owner: *owner })?;
                }
                Ok(Output::tag(Tag::new("CREATE SEQUENCE")))
            }
            Command::DropSequence { names, if_exists, cascade } => {
                let snapshot = self.snapshot();
                let mut out = Output::tag(Tag::new("DROP SEQUENCE"));
                let mut dropped = Vec::new();
                for n in names {
                    match snapshot.sequence(n) {
                        Some((t, _)) if t.is_sequence() => dropped.push(t.clone()),
                        // A serial column's: its default uses it (the column owns it).
                        Some((t, c)) if c.default.is_some() && !*cascade => {
                            return Err(Error::DependentObjects {
                                message: format!(
                                    "cannot drop sequence {n} because other objects depend on it"
                                ),
                                detail: format!(
                                    "default value for column {} of table {} depends on sequence \
                                     {n}",
                                    c.name, t.name
                                ),
                            }
                            .with_hint(CASCADE_HINT))
                        }
                        Some((_, c)) if c.default.is_some() => {
                            return Err(Error::unsupported(
                                "DROP SEQUENCE … CASCADE of a serial column's sequence",
                            ))
                        }
                        // An identity column's.
                        Some((t, c)) => {
                            return Err(Error::required_by(
                                &format!("sequence {n}"),
                                &format!("column {} of table {}", c.name, t.name),
                            ))
                        }
                        None if snapshot.relation_exists(n) => {
                            return Err(Error::WrongObjectType {
                                message: format!("\"{n}\" is not a sequence"),
                            }
                            .with_hint("Use DROP TABLE to remove a table."))
                        }
                        None if *if_exists => {
                            out = out.skipping(&format!("sequence \"{n}\" does not exist"));
                        }
                        None => return Err(Error::UndefinedSequence { name: n.clone() }),
                    }
                }
                if dropped.is_empty() {
                    return Ok(out);
                }
                // Column defaults that call nextval on them (PostgreSQL's dependencies).
                let mut users = Vec::new();
                for seq in &dropped {
                    for (table, position) in self.defaults_using(&snapshot, seq.id)? {
                        users.push((seq.clone(), table, position));
                    }
                }
                fn line((_, table, position): &(Arc<Table>, Arc<Table>, u16)) -> String {
                    let column = &table.columns[usize::from(*position)].name;
                    format!("default value for column {column} of table {}", table.name)
                }
                if !users.is_empty() && !*cascade {
                    let detail: Vec<String> = users
                        .iter()
                        .map(|u| format!("{} depends on sequence {}", line(u), u.0.name))
                        .collect();
                    let message = match dropped.as_slice() {
                        [seq] => format!(
                            "cannot drop sequence {} because other objects depend on it",
                            seq.name
                        ),
                        _ => "cannot drop desired object(s) because other objects depend on them"
                            .into(),
                    };
                    let detail = detail.join("\n");
                    return Err(Error::DependentObjects { message, detail }.with_hint(CASCADE_HINT));
                }
                for user in &users {
                    let what = format!("drop cascades to {}", line(user));
                    out = out.with_notice("NOTICE", "00000", what);
                    let (_, table, position) = user;
                    self.stage(catalog::Ddl::AlterColumn {
                        table: table.id,
                        position: *position,
                        change: catalog::ColumnChange::Default(None),
                    })?;
                }
                let ids = dropped.iter().map(|t| t.id).collect();
                self.stage(catalog::Ddl::DropTables { ids, cascade: false })?;
                for t in dropped {
                    self.pending_ddl().dropped.push(EngineObject::Table(t.id));
                }
                Ok(out)
            }
            Command::DropTable { names, if_exists, cascade } => {
                let snapshot = self.snapshot();
                let mut out = Output::tag(Tag::new("DROP TABLE"));
                let mut tables = Vec::new();
                for n in names {
                    match snapshot.table(n) {
                        Some(t) if t.is_view() => {
                            return Err(Error::WrongObjectType {
                                message: format!("\"{n}\" is not a table"),
                            }
                            .with_hint("Use DROP VIEW to remove a view."))
                        }
                        Some(t) => tables.push(t.clone()),
                        None if *if_exists => {
                            out = out.skipping(&format!("table \"{n}\" does not exist"));
                        }
                        None => {
                            return Err(Error::UndefinedToDrop { kind: "table", name: n.clone() })
                        }
                    }
                }
                // One statement drops its tables together (the catalog decides which foreign
                // keys are in the way).
                if tables.is_empty() {
                    return Ok(out);
                }
                let ids = tables.iter().map(|t| t.id).collect();
                self.drop_relations(ids, *cascade, out)
            }
            Command::CreateIndex(spec) | Command::AddIndex(spec) => {
                let is_alter = matches!(cmd, Command::AddIndex(_));
                let tag = if is_alter { "ALTER TABLE" } else { "CREATE INDEX" };
                let snapshot = self.snapshot();
                if spec.if_not_exists && snapshot.index_by_name(&spec.def.name).is_some() {
                    return Ok(Output::tag(Tag::new(tag)).with_notice(
                        "NOTICE",
                        "42P07",
                        format!("relation \"{}\" already exists, skipping", spec.def.name),
                    ));
                }
                let table = snapshot.table_by_id(spec.table.id).cloned().ok_or_else(|| {
                    Error::UndefinedTable { name: spec.table.name.clone(), span: None }
                })?;
                if spec.def.primary {
                    return self.add_primary_key(&table, spec).map(|_| Output::tag(Tag::new(tag)));
                }
                let index = self
                    .stage(catalog::Ddl::CreateIndex { table: table.id, def: spec.def.clone() })?
                    .index
                    .expect("created");
                let snapshot = self.snapshot();
                let txn_spec = snapshot
                    .table_by_id(table.id)
                    .and_then(|t| {
                        index_specs(&snapshot, t).into_iter().find(|s| s.id.0 == index.id.0)
                    })
                    .expect("staged");
                engine.create_index(exec::tid(&table), txn_spec).map_err(|e| match e {
                    txn::Error::UniqueViolation { .. } => Error::UniqueViolation {
                        constraint: index.name.clone(),
                        detail: "Key values are duplicated in existing rows.".into(),
                        table: table.name.clone(),
                    }
                    .with_create_index_message(),
                    other => exec::txn_error(other),
                })?;
                self.pending_ddl().created.push(EngineObject::Index(table.id, index.id));
                Ok(Output::tag(Tag::new(tag)))
            }
            Command::DropIndex { names, if_exists } => {
                let mut out = Output::tag(Tag::new("DROP INDEX"));
                for n in names {
                    let snapshot = self.snapshot();
                    match snapshot.index_by_name(n) {
                        // A PRIMARY KEY or UNIQUE constraint's index goes with its constraint.
                        Some((t, i)) if i.constraint => {
                            return Err(Error::required_by(
                                &format!("index {n}"),
                                &format!("constraint {} on table {}", i.name, t.name),
                            ))
                        }
                        Some((t, i)) => {
                            self.stage(catalog::Ddl::DropIndex(i.id))?;
                            self.pending_ddl().dropped.push(EngineObject::Index(t.id, i.id));
                        }
                        None if *if_exists => {
                            out = out.skipping(&format!("index \"{n}\" does not exist"));
                        }
                        None => {
                            return Err(Error::UndefinedObject {
                                message: format!("index \"{n}\" does not exist"),
                            })
                        }
                    }
                }
                Ok(out)
            }
            Command::Truncate(tables, cascaded) => {
                let snapshot = self.snapshot();
                for t in tables {
                    for (child, fk) in snapshot.referencing_fks(t.id) {
                        if !tables.iter().any(|x| x.id == child.id) {
                            return Err(Error::unsupported_msg(format!(
                                "cannot truncate a table referenced in a foreign key constraint (table \"{}\" references \"{}\" via \"{}\")",
                                child.name, t.name, fk.name
                            )));
                        }
                    }
                }
                // Deletes every row in the transaction, so recovery sees the truncate in SSN
                // order like any other write, and a rollback undoes it.
                self.with_txn(|_, t| {
                    for table in tables {
                        t.delete_all(exec::tid(table)).map_err(exec::txn_error)?;
                    }
                    Ok(())
                })?;
                if let Some(open) = &mut self.txn {
                    open.truncated.extend(tables.iter().map(|t| t.id));
                }
                let mut out = Output::tag(Tag::new("TRUNCATE TABLE"));
                for name in cascaded {
                    out = out.with_notice(
                        "NOTICE",
                        "00000",
                        format!("truncate cascades to table \"{name}\""),
                    );
                }
                Ok(out)
            }
            Command::RenameTable { table, name } => {
                self.stage(catalog::Ddl::RenameTable { table: table.id, name: name.clone() })?;
                Ok(Output::tag(Tag::new("ALTER TABLE")))
            }
            Command::SetSequenceOwner { sequence, owner } => {
                self.stage(catalog::Ddl::SetSequenceOwner { sequence: *sequence, owner: *owner })?;
                Ok(Output::tag(Tag::new("ALTER SEQUENCE")))
            }
            Command::Comment { table, column, comment } => {
                let (table, column, comment) = (table.id, *column, comment.clone());
                self.stage(catalog::Ddl::Comment { table, column, comment })?;
                Ok(Output::tag(Tag::new("COMMENT")))
            }
            Command::RenameIndex { table, index, name } => {
                let (table, index, name) = (table.id, *index, name.clone());
                self.stage(catalog::Ddl::RenameIndex { table, index, name })?;
                Ok(Output::tag(Tag::new("ALTER INDEX")))
            }
            Command::RenameConstraint { table, old, name } => {
                let (table, old, name) = (table.id, old.clone(), name.clone());
                self.stage(catalog::Ddl::RenameConstraint { table, old, name })?;
                Ok(Output::tag(Tag::new("ALTER TABLE")))
            }
            Command::AlterColumn { table, position, change } => {
                match change {
                    catalog::ColumnChange::NotNull(true) => {
                        self.check_no_nulls(table, *position)?
                    }
                    catalog::ColumnChange::Type(to) => self.check_retype(table, *position, to)?,
                    _ => {}
                }
                self.stage(catalog::Ddl::AlterColumn {
                    table: table.id,
                    position: *position,
                    change: change.clone(),
                })?;
                if let catalog::ColumnChange::Type(_) = change {
                    self.refuse_broken_views(table, *position)?;
                }
                Ok(Output::tag(Tag::new("ALTER TABLE")))
            }
            Command::AddColumn { table, column, if_not_exists, checks } => {
                if table.column(&column.name).is_some() {
                    if *if_not_exists {
                        return Ok(Output::tag(Tag::new("ALTER TABLE")).with_notice(
                            "NOTICE",
                            "42701",
                            format!(
                                "column \"{}\" of relation \"{}\" already exists, skipping",
                                column.name, table.name
                            ),
                        ));
                    }
                    return Err(Error::DuplicateColumnExists {
                        name: format!("{}\" of relation \"{}", column.name, table.name),
                    });
                }
                self.add_column(table, column)?;
                if !checks.is_empty() {
                    let table = self
                        .snapshot()
                        .table_by_id(table.id)
                        .cloned()
                        .ok_or_else(|| Error::internal("the altered table is gone"))?;
                    for (check, expr) in checks {
                        self.add_check(&table, check, expr)?;
                    }
                }
                Ok(Output::tag(Tag::new("ALTER TABLE")))
            }
            Command::AddCheck { table, check, expr } => {
                self.add_check(table, check, expr)?;
                Ok(Output::tag(Tag::new("ALTER TABLE")))
            }
            Command::AlterTableActions { sql, actions } => {
                let mut out = Output::tag(Tag::new("ALTER TABLE"));
                for action in actions {
                    let snapshot = self.snapshot();
                    let cmd = Binder::new(&snapshot, sql, Vec::new()).bind_command(action)?;
                    out.notices.extend(self.run_ddl(&cmd)?.notices);
                }
                Ok(out)
            }
            Command::DropColumn { table, name, position, cascade } => {
                let out = Output::tag(Tag::new("ALTER TABLE"));
                let Some(position) = *position else {
                    let missing =
                        format!("column \"{name}\" of relation \"{}\" does not exist", table.name);
                    return Ok(out.skipping(&missing));
                };
                self.drop_column(table, name, position, *cascade, out)
            }
            Command::DropConstraint { table, name, if_exists } => {
                let index = table.indexes.iter().find(|i| i.constraint && i.name == *name);
                if let Some(index) = index {
                    if index.primary {
                        return Err(Error::unsupported("dropping a PRIMARY KEY constraint"));
                    }
                    // A foreign key that needs the index: PostgreSQL's words for the constraint.
                    self.stage(catalog::Ddl::DropIndex(index.id)).map_err(|e| match e {
                        Error::DependentObjects { detail, .. } => Error::DependentObjects {
                            message: format!(
                                "cannot drop constraint {name} on table {} because other \
                                 objects depend on it",
                                table.name
                            ),
                            detail,
                        }
                        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."),
                        other => other,
                    })?;
                    self.pending_ddl().dropped.push(EngineObject::Index(table.id, index.id));
                    return Ok(Output::tag(Tag::new("ALTER TABLE")));
                }
                let known = table.checks.iter().any(|c| c.name == *name)
                    || table.foreign_keys.iter().any(|f| f.name == *name);
                if !known {
                    let missing = format!(
                        "constraint \"{name}\" of relation \"{}\" does not exist",
                        table.name
                    );
                    if *if_exists {
                        return Ok(Output::tag(Tag::new("ALTER TABLE")).skipping(&missing));
                    }
                    return Err(Error::UndefinedObject { message: missing });
                }
                self.stage(catalog::Ddl::DropConstraint { table: table.id, name: name.clone() })?;
                Ok(Output::tag(Tag::new("ALTER TABLE")))
            }
            Command::AddForeignKey { table, fk } => {
                // The catalog checks the definition (a unique index on the referenced columns)
                // first, then every existing row must satisfy it, as in PostgreSQL.
                self.stage(catalog::Ddl::AddForeignKey { table: table.id, fk: fk.clone() })?;
                let snapshot = self.snapshot();
                let engine = self.db.engine.clone();
                let owned = self.owned_env();
                self.with_txn(|_, t| {
                    let types = exec::column_types(table);
                    let rows = exec::all_rows(t, table)?;
                    let mut ctx = Ctx::internal(t, &engine, owned.env(now()));
                    for (_, bytes) in rows {
                        let row = types::decode_row(&bytes, &types)?;
                        check_foreign_key(&mut ctx, &snapshot, table, fk, &row)?;
                    }
                    Ok(())
                })?;
                Ok(Output::tag(Tag::new("ALTER TABLE")))
            }
            other => Err(Error::internal(format!("unexpected command {other:?}"))),
        }
    }

    /// ALTER TABLE … DROP COLUMN: the catalog marks the column dropped and drops the indexes,
    /// checks and foreign keys that use it (and, with CASCADE, other tables' foreign keys
    /// that reference it). No row is rewritten: rows keep the column's value in its place,
    /// unread, so the whole change is one catalog write. A view whose query no longer binds
    /// as it did without the column depends on it: in the way, or dropped with CASCADE.
    fn drop_column(
        &mut self,
        table: &Arc<Table>,
        name: &str,
        position: u16,
        cascade: bool,
        mut out: Output,
    ) -> Result<Output> {
        let in_the_way = |detail: Vec<String>| {
            Error::DependentObjects {
                message: format!(
                    "cannot drop column {name} of table {} because other objects depend on it",
                    table.name
                ),
                detail: detail.join("\n"),
            }
            .with_hint(CASCADE_HINT)
        };
        let applied = self
            .stage(catalog::Ddl::DropColumn { table: table.id, position, cascade })
            .map_err(|e| match e {
            Error::DependentObjects { detail, .. } => {
                in_the_way(detail.lines().map(str::to_string).collect())
            }
            other => other,
        })?;
        for n in applied.notices {
            out = out.with_notice("NOTICE", "00000", n);
        }
        for id in applied.cascaded {
            self.pending_ddl().dropped.push(EngineObject::Table(id));
        }
        let snapshot = self.snapshot();
        let broken: Vec<&Arc<Table>> = snapshot
            .tables()
            .filter(|v| v.view.as_ref().is_some_and(|d| d.depends.contains(&table.id)))
            .filter(|v| !Binder::view_still_binds(&snapshot, v))
            .collect();
        if !broken.is_empty() {
            if !cascade {
                return Err(in_the_way(
                    broken
                        .iter()
                        .map(|v| {
                            format!(
                                "view {} depends on column {name} of table {}",
                                v.name, table.name
                            )
                        })
                        .collect(),
                ));
            }
            out = self.drop_relations(broken.iter().map(|v| v.id).collect(), true, out)?;
        }
        for index in table.indexes.iter().filter(|i| i.columns.contains(&position)) {
            self.pending_ddl().dropped.push(EngineObject::Index(table.id, index.id));
        }
        Ok(out)
    }

    /// ALTER TABLE … ADD COLUMN: existing rows get the default (or NULL); NOT NULL without a
    /// default on a non-empty table fails as in PostgreSQL. The rows are rewritten in the
    /// transaction (so they commit, durably, before the catalog names the column).
    fn add_column(&mut self, table: &Arc<Table>, column: &catalog::Column) -> Result<()> {
        let snapshot = self.snapshot();
        // Compute the fill value first; a volatile default (random()) is evaluated again for
        // every row, as in PostgreSQL.
        let mut with_col = (**table).clone();
        let mut col = column.clone();
        col.position = table.columns.len() as u16;
        with_col.columns.push(col.clone());
        let mut binder = Binder::new(&snapshot, "", vec![]);
        let default = binder.column_default(&with_col, col.position as usize)?;
        let mut volatile = false;
        crate::bind::walk_expr(&default, &mut |x| {
            volatile |= matches!(
                x,
                crate::plan::Expr::Func(
                    crate::plan::Func::Random | crate::plan::Func::GenRandomUuid,
                    _
                )
            )
        });
        let fill = {
            let e = &default;
            let mut t = self.db.engine.begin(self.log_buffer);
            let mut ctx = Ctx::internal(&mut t, &self.db.engine, self.env(now()));
            ctx.eval(e, &[])?
        };
        let owned = self.owned_env();
        self.with_txn(|_, t| {
            let types = exec::column_types(table);
            let rows = exec::all_rows(t, table)?;
            if fill.is_null() && col.not_null && !rows.is_empty() {
                return Err(Error::ColumnContainsNulls {
                    column: col.name.clone(),
                    table: table.name.clone(),
                });
            }
            let env = owned.env(now());
            for (k, bytes) in rows {
                let mut row = types::decode_row(&bytes, &types)?;
                row.push(if volatile {
                    exec::eval_pure(&default, &[], &[], &[], &env)?
                } else {
                    fill.clone()
                });
                let mut out = Vec::new();
                types::encode_row(&row, &mut out);
                t.update(exec::tid(table), &k, out).map_err(exec::txn_error)?;
            }
            Ok(())
        })?;
        self.stage(catalog::Ddl::AddColumn { table: table.id, column: col })?;
        Ok(())
    }

    /// ALTER TABLE … ADD CHECK (and ADD COLUMN … CHECK): every row this transaction sees must
    /// satisfy `expr` (the scan validates at commit, so a violating row inserted meanwhile
    /// fails the commit instead); then the catalog gets the constraint.
    fn add_check(&mut self, table: &Arc<Table>, check: &catalog::Check, expr: &Expr) -> Result<()> {
        let owned = self.owned_env();
        self.with_txn(|_, t| {
            let types = exec::column_types(table);
            let env = owned.env(now());
            for (_, bytes) in exec::all_rows(t, table)? {
                let row = types::decode_row(&bytes, &types)?;
                if exec::eval_pure(expr, &row, &[], &[], &env)? == Value::Bool(false) {
                    return Err(Error::CheckViolatedBySomeRow {
                        constraint: check.name.clone(),
                        table: table.name.clone(),
                    });
                }
            }
            Ok(())
        })?;
        self.stage(catalog::Ddl::AddCheck { table: table.id, check: check.clone() })?;
        Ok(())
    }

    /// ALTER TABLE … ALTER COLUMN … SET NOT NULL: every row this transaction sees must have a
    /// value in column `position` (the scan validates at commit, so a NULL inserted meanwhile
    /// fails the commit instead).
    fn check_no_nulls(&mut self, table: &Arc<Table>, position: u16) -> Result<()> {
        self.with_txn(|_, t| {
            let types = exec::column_types(table);
            let column = usize::from(position);
            let mut found: Result<bool> = Ok(false);
            let all = std::ops::Bound::Unbounded;
            t.scan(exec::tid(table), None, all, all, false, &mut |_, row| {
                found = types::decode_column(row, &types, column).map(|v| v.is_null());
                matches!(found, Ok(false))
            })
            .map_err(exec::txn_error)?;
            if found? {
                return Err(Error::ColumnContainsNulls {
                    column: table.columns[column].name.clone(),
                    table: table.name.clone(),
                });
            }
            Ok(())
        })
    }

    /// ALTER TABLE … ALTER COLUMN … TYPE `to` (one the rows need no rewrite for:
    /// `types::retypes_in_place`): every value of the column must convert to `to` as an
    /// assignment does (else its error: 22003 out of range, 22001 too long) and stay the same
    /// value — one that would change (a varchar's trailing spaces cut) needs the rewrite
    /// Aspen does not do.
    fn check_retype(&mut self, table: &Arc<Table>, position: u16, to: &DataType) -> Result<()> {
        self.with_txn(|_, t| {
            let types = exec::column_types(table);
            let column = usize::from(position);
            let from = &types[column];
            let mut outcome: Result<()> = Ok(());
            let all = std::ops::Bound::Unbounded;
            t.scan(exec::tid(table), None, all, all, false, &mut |_, row| {
                outcome = types::decode_column(row, &types, column).and_then(|v| {
                    let cast = types::cast(v.clone(), from, to, types::CastKind::Assignment)?;
                    // The same value is the same bytes (the row is not rewritten).
                    let (mut stored, mut wanted) = (Vec::new(), Vec::new());
                    types::encode_row(std::slice::from_ref(&v), &mut stored);
                    types::encode_row(std::slice::from_ref(&cast), &mut wanted);
                    if stored != wanted {
                        return Err(Error::unsupported(format!(
                            "ALTER COLUMN … TYPE {} that changes a stored value ({})",
                            to.sql_name(),
                            types::format_text(&v, from)
                        )));
                    }
                    Ok(())
                });
                outcome.is_ok()
            })
            .map_err(exec::txn_error)?;
            outcome
        })
    }

    /// After a column's type changed: a view on its table that no longer binds as it was
    /// created (its column types changed) is in the way, as in PostgreSQL (which refuses any
    /// view that reads the column).
    fn refuse_broken_views(&mut self, table: &Arc<Table>, position: u16) -> Result<()> {
        let snapshot = self.snapshot();
        let broken = snapshot
            .tables()
            .filter(|v| v.view.as_ref().is_some_and(|d| d.depends.contains(&table.id)))
            .find(|v| !Binder::view_still_binds(&snapshot, v));
        match broken {
            Some(v) => Err(Error::ColumnUsedByView {
                detail: format!(
                    "rule _RETURN on view {} depends on column \"{}\"",
                    v.name,
                    table.columns[usize::from(position)].name
                ),
            }),
            None => Ok(()),
        }
    }

    /// ALTER TABLE … ADD PRIMARY KEY: re-keys every row by the new key (in the transaction),
    /// checking NOT NULL and uniqueness.
    fn add_primary_key(&mut self, table: &Arc<Table>, spec: &crate::bind::IndexSpec) -> Result<()> {
        if table.primary_index().is_some() {
            return Err(Error::InvalidTableDefinition {
                message: format!(
                    "multiple primary keys for table \"{}\" are not allowed",
                    table.name
                ),
            });
        }
        self.with_txn(|_, t| {
            let types = exec::column_types(table);
            // Every row goes, to come back under its new key below.
            let rows = t.delete_all(exec::tid(table)).map_err(exec::txn_error)?;
            let mut rekeyed = Vec::with_capacity(rows.len());
            for bytes in rows {
                let mut key_vals = Vec::with_capacity(spec.def.columns.len());
                for c in &spec.def.columns {
                    // Only the key's columns are decoded.
                    let v = types::decode_column(&bytes, &types, *c as usize)?;
                    if v.is_null() {
                        return Err(Error::ColumnContainsNulls {
                            column: table.columns[*c as usize].name.clone(),
                            table: table.name.clone(),
                        });
                    }
                    key_vals.push(v);
                }
                let mut nk = Vec::new();
                types::encode_key(&key_vals, &mut nk);
                rekeyed.push((nk, bytes));
            }
            // Sorted by the new key: duplicates are neighbours (no hashing of every key), and
            // the inserts below go into the write set in order.
            rekeyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if rekeyed.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(Error::UniqueViolation {
                    constraint: spec.def.name.clone(),
                    detail: "Key values are duplicated in existing rows.".into(),
                    table: table.name.clone(),
                }
                .with_create_index_message());
            }
            for (new, bytes) in rekeyed {
                t.insert(exec::tid(table), new, bytes.to_vec()).map_err(exec::txn_error)?;
            }
            Ok(())
        })?;
        let def = catalog::IndexDef { primary: true, ..spec.def.clone() };
        self.stage(catalog::Ddl::CreateIndex { table: table.id, def })?;
        Ok(())
    }
}

/// The same table definition (the same `Arc`, or equal).
fn same_table(a: &Arc<Table>, b: &Arc<Table>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// The `(key, row)` pairs an UPDATE or DELETE changes: the rows of `scan`, and with FROM /
/// USING only those that meet a row of the other tables; second, the first row each meets
/// (one per target row; empty without FROM).
fn scan_joined(
    ctx: &mut Ctx,
    scan: &Plan,
    from: Option<&crate::plan::JoinedFrom>,
) -> Result<exec::JoinedTargets> {
    let rows = ctx.scan(scan)?;
    match from {
        Some(from) => ctx.join_others(rows, from),
        None => Ok((rows, Vec::new())),
    }
}

/// A savepoint command outside a transaction block: 25P01, as in PostgreSQL.
/// `options` with the password, if any, as the role keeps it ([`role_password`]).
fn with_verifier(options: &RoleOptions, notices: &mut Vec<Notice>) -> Result<RoleOptions> {
    let mut options = options.clone();
    if let Some(given) = options.password.take() {
        options.password = Some(role_password(given.as_deref(), notices)?);
    }
    Ok(options)
}

/// A password as given to CREATE or ALTER ROLE, as the role keeps it: a SCRAM verifier, made
/// from the password, or the one given (PostgreSQL reads text that does not parse as a
/// verifier as a password). The empty password clears it, with PostgreSQL's notice.
fn role_password(given: Option<&str>, notices: &mut Vec<Notice>) -> Result<Option<String>> {
    let Some(text) = given else { return Ok(None) };
    if text.is_empty() {
        notices.push(Notice {
            severity: "NOTICE",
            code: "00000",
            message: "empty string is not a valid password, clearing password".into(),
        });
        return Ok(None);
    }
    if let Some(verifier) = catalog::Verifier::parse(text) {
        return Ok(Some(verifier.to_string()));
    }
    let md5 = text.strip_prefix("md5").is_some_and(|h| {
        h.len() == 32 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if md5 {
        return Err(Error::unsupported("an MD5-encrypted password"));
    }
    Ok(Some(catalog::Verifier::new(text).to_string()))
}

fn outside_block(what: &str) -> Error {
    Error::NoActiveTransaction { message: format!("{what} can only be used in transaction blocks") }
}

/// The innermost savepoint named `name` (3B001 if there is none).
fn savepoint_index(open: &OpenTxn, name: &str) -> Result<usize> {
    open.savepoints
        .iter()
        .rposition(|s| s.name == name)
        .ok_or_else(|| Error::UndefinedSavepoint { name: name.into() })
}

/// `40001` if a table this transaction wrote was changed (or dropped) by a schema change
/// published since its first write: its rows were checked against the old definition (a NOT
/// NULL, a foreign key or a column it did not know). Call with `schema_gate` held.
fn check_written(db: &Database, written: &[Arc<Table>]) -> Result<()> {
    if written.is_empty() {
        return Ok(());
    }
    let snapshot = db.catalog.snapshot();
    for old in written {
        let unchanged =
            snapshot.table_by_id(old.id).is_some_and(|now| Arc::ptr_eq(now, old) || **now == **old);
        if !unchanged {
            return Err(concurrent_change(&old.name));
        }
    }
    Ok(())
}

fn concurrent_change(table: &str) -> Error {
    Error::SerializationFailure {
        message: format!(
            "could not serialize access due to a concurrent change of table \"{table}\""
        ),
    }
}

/// The COPY statement that `sql` is, if it is exactly one (a cheap look at its first word
/// first: every prepared statement passes here).
fn lone_copy(sql: &str) -> Result<Option<crate::copy::CopyStatement>> {
    let first = sql.trim_start().get(..4);
    if !first.is_some_and(|w| w.eq_ignore_ascii_case("copy")) {
        return Ok(None);
    }
    match <[Parsed; 1]>::try_from(crate::parse::parse(sql)?) {
        Ok([Parsed::Copy(copy)]) => Ok(Some(copy)),
        _ => Ok(None),
    }
}

fn text_column(name: &str) -> ColumnInfo {
    ColumnInfo {
        name: name.to_string(),
        data_type: DataType::Text,
        table_oid: None,
        column_id: None,
    }
}

fn dml_output(
    cmd: &str,
    n: usize,
    returning: bool,
    cached: &Cached,
    rows: Vec<Vec<Value>>,
) -> Output {
    Output {
        tag: Tag::rows(cmd, n),
        columns: if returning { cached.columns.clone() } else { None },
        rows,
        notices: vec![],
        zone: types::Zone::UTC,
    }
}

/// The current time as a timestamp without time zone (UTC), microsecond precision.
fn now() -> NaiveDateTime {
    let t = chrono::Utc::now().naive_utc();
    t.with_nanosecond_trunc()
}

trait TruncNanos {
    fn with_nanosecond_trunc(self) -> Self;
}

impl TruncNanos for NaiveDateTime {
    fn with_nanosecond_trunc(self) -> Self {
        use chrono::Timelike;
        let micros = self.nanosecond() / 1000;
        self.with_nanosecond(micros * 1000).unwrap_or(self)
    }
}

/// Maps a client-declared parameter OID to a type (`None` = infer).
fn oid_type(oid: u32) -> Result<Option<DataType>> {
    match oid {
        0 | 705 => Ok(None),
        other => DataType::from_oid(other)
            .map(Some)
            .ok_or_else(|| Error::unsupported(format!("parameter type OID {other}"))),
    }
}

/// Validates a SET value for the parameters whose values change Aspen's behaviour.
/// The session's names and time zone, owned (see [`Session::owned_env`]).
struct OwnedEnv {
    user: Arc<str>,
    database: Arc<str>,
    zone: types::Zone,
    settings: Settings,
    db: Arc<Database>,
}

impl OwnedEnv {
    fn env(&self, now: NaiveDateTime) -> Env<'_> {
        env_of(now, &self.user, &self.database, self.zone, &self.settings, &self.db)
    }
}

/// What expressions read from a session (or a copy of its state, [`OwnedEnv`]) at `now`.
fn env_of<'a>(
    now: NaiveDateTime,
    user: &'a str,
    database: &'a str,
    zone: types::Zone,
    settings: &'a BTreeMap<&'static str, String>,
    db: &'a Database,
) -> Env<'a> {
    Env { now, user, database, zone, settings, server_settings: &db.settings }
}

/// A `TimeZone` value as `SHOW` gives it back, or `None` if it names no zone. A number (`SET
/// TIME ZONE 5`) is hours east of Greenwich, spelled as PostgreSQL spells it (`<+05>-05`).
pub fn time_zone_setting(v: &str) -> Option<String> {
    if let Ok(hours) = v.trim().parse::<f64>() {
        // PostgreSQL's limit: less than a week.
        if !hours.is_finite() || hours.abs() >= 168.0 {
            return None;
        }
        let minutes = (hours.abs() * 60.0).round() as i64;
        let (h, m) = (minutes / 60, minutes % 60);
        let east = if hours < 0.0 { '-' } else { '+' };
        let west = if hours < 0.0 { '+' } else { '-' };
        let hm = if m == 0 { format!("{h:02}") } else { format!("{h:02}:{m:02}") };
        return Some(format!("<{east}{hm}>{west}{hm}"));
    }
    types::Zone::from_setting(v).map(|(_, canonical)| canonical)
}

/// A time setting (`statement_timeout`, `lock_timeout`, …) in milliseconds, read as
/// PostgreSQL reads it: a number of milliseconds, or a number with a unit (`us`, `ms`, `s`,
/// `min`, `h`, `d`), rounded to whole milliseconds; 0 turns it off. `Err` holds the rejected
/// value in milliseconds when it is out of range (`None` when it does not parse).
fn duration_ms(v: &str) -> std::result::Result<u64, Option<f64>> {
    let v = v.trim();
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (number, unit) = (v[..split].trim(), v[split..].trim());
    let n: f64 = number.parse().map_err(|_| None)?;
    let scale = match unit {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return Err(None),
    };
    let ms = (n * scale).round();
    if !ms.is_finite() || !(0.0..=i32::MAX as f64).contains(&ms) {
        return Err(Some(ms));
    }
    Ok(ms as u64)
}

/// A time setting as `SHOW` gives it back: in the largest unit that divides it (`1500ms`,
/// `90s`, `2min`), `0` when off.
fn duration_setting(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    let units = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1_000, "s"), (1, "ms")];
    let (size, unit) = units.iter().find(|(size, _)| ms.is_multiple_of(*size)).expect("ms divides");
    format!("{}{unit}", ms / size)
}

fn validate_setting(name: &str, v: &str) -> Result<String> {
    match name {
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
            match duration_ms(v) {
                Ok(ms) => Ok(duration_setting(ms)),
                Err(Some(ms)) => Err(Error::InvalidParameterValue {
                    message: format!(
                        "{ms} ms is outside the valid range for parameter \"{name}\" (0 .. {})",
                        i32::MAX
                    ),
                }),
                Err(None) => Err(Error::InvalidParameterValue {
                    message: format!("invalid value for parameter \"{name}\": \"{v}\""),
                }),
            }
        }
        "TimeZone" => time_zone_setting(v).ok_or_else(|| Error::InvalidParameterValue {
            message: format!("invalid value for parameter \"TimeZone\": \"{v}\""),
        }),
        "client_encoding" => {
            let norm = v.to_uppercase().replace(['-', '_'], "");
            if norm == "UTF8" || norm == "UNICODE" {
                Ok("UTF8".into())
            } else {
                Err(Error::unsupported(format!("client_encoding \"{v}\" (only UTF8)")))
            }
        }
        "DateStyle" => {
            if v.to_uppercase().starts_with("ISO") {
                Ok(if v.contains(',') { v.to_string() } else { "ISO, MDY".into() })
            } else {
                Err(Error::unsupported(format!("DateStyle \"{v}\" (only ISO)")))
            }
        }
        "password_encryption" => match v.trim().to_lowercase().as_str() {
            "scram-sha-256" => Ok("scram-sha-256".into()),
            "md5" => Err(Error::unsupported("password_encryption md5")),
            _ => Err(Error::InvalidParameterValue {
                message: format!("invalid value for parameter \"password_encryption\": \"{v}\""),
            }),
        },
        "check_function_bodies" | "row_security" => match v.trim().to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Ok("on".into()),
            "off" | "false" | "no" | "0" => Ok("off".into()),
            _ => Err(Error::InvalidParameterValue {
                message: format!("parameter \"{name}\" requires a Boolean value"),
            }),
        },
        "xmloption" => match v.trim().to_lowercase().as_str() {
            l @ ("content" | "document") => Ok(l.to_string()),
            _ => Err(Error::InvalidParameterValue {
                message: format!("invalid value for parameter \"xmloption\": \"{v}\""),
            }),
        },
        "default_tablespace" => match v.trim() {
            "" | "pg_default" => Ok(v.trim().to_string()),
            _ => Err(Error::unsupported("tablespaces")),
        },
        "default_table_access_method" => match v.trim() {
            "heap" => Ok("heap".into()),
            _ => Err(Error::unsupported(format!("table access method \"{v}\""))),
        },
        "synchronous_commit" => match v.trim().to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Ok("on".into()),
            "off" | "false" | "no" | "0" => Ok("off".into()),
            l @ ("local" | "remote_write" | "remote_apply") => Ok(l.to_string()),
            _ => Err(Error::InvalidParameterValue {
                message: format!("invalid value for parameter \"synchronous_commit\": \"{v}\""),
            }),
        },
        "extra_float_digits" => match v.trim().parse::<i32>() {
            Ok(n) if (-15..=3).contains(&n) => Ok(n.to_string()),
            _ => Err(Error::InvalidParameterValue {
                message: format!("invalid value for parameter \"extra_float_digits\": \"{v}\""),
            }),
        },
        "default_transaction_isolation" => {
            let l = v.to_lowercase();
            if ["serializable", "repeatable read", "read committed", "read uncommitted"]
                .contains(&l.as_str())
            {
                Ok("serializable".into())
            } else {
                Err(Error::InvalidParameterValue {
                    message: format!(
                        "invalid value for parameter \"default_transaction_isolation\": \"{v}\""
                    ),
                })
            }
        }
        _ => Ok(v.to_string()),
    }
}

/// Runs a deferrable UPDATE (one row by primary key, see `Statement::Update::deferrable`) as
/// a deferred update: the transaction records the SET expressions as a function of the row and
/// applies it at commit to the row current then (`txn::Transaction::update_deferred`). The
/// expressions are evaluated now too, on the committed row, so that their errors are the
/// statement's. Returns false where the transaction does not defer it (no row at the key, or
/// this transaction already wrote or locked the row): the ordinary path then runs.
fn deferred_update(
    ctx: &mut Ctx,
    table: &Arc<Table>,
    scan: &Plan,
    sets: &Arc<[(usize, Expr)]>,
    session: &Session,
) -> Result<bool> {
    let Plan::Scan { access: Access::PointGet(keys), .. } = scan else { return Ok(false) };
    let pk_cols = table.primary_index().map_or(&[][..], |i| &i.columns);
    let Some(key) = ctx.key_values(table, keys, pk_cols)? else { return Ok(false) };
    let mut k = Vec::with_capacity(16);
    types::encode_key(&key, &mut k);
    let (table_, sets) = (table.clone(), sets.clone());
    let (params, now) = (ctx.params.to_vec(), ctx.env.now);
    let owned = session.owned_env();
    let engine = session.db.engine.clone();
    let types = exec::column_types(table);
    let f = move |old: &[u8]| -> Result<Vec<u8>> {
        let old = types::decode_row(old, &types)?;
        // The expressions are row-local (no subquery): the transaction is never used.
        let mut scratch = engine.begin(0);
        let mut ctx =
            Ctx { params: &params, ..Ctx::internal(&mut scratch, &engine, owned.env(now)) };
        let mut new = old.clone();
        for (col, e) in sets.iter() {
            new[*col] = ctx.eval(e, &old)?;
        }
        // No CHECK reads a column a deferrable update sets (`Statement::Update::deferrable`).
        let new = check_row(&table_, &[], new, &ctx.env)?;
        let mut bytes = Vec::with_capacity(64);
        types::encode_row(&new, &mut bytes);
        Ok(bytes)
    };
    ctx.txn.update_deferred(exec::tid(table), &k, Arc::new(f)).map_err(exec::txn_error)?
}

/// The row (key and values) that `proposed` would clash with on ON CONFLICT's target index,
/// if any. NULLs never clash. The lookup is a read like any other: validated at commit.
fn clashing_row(
    ctx: &mut Ctx,
    table: &Arc<Table>,
    oc: &crate::plan::OnConflict,
    proposed: &[Value],
) -> Result<Option<(Vec<u8>, Vec<Value>)>> {
    use crate::plan::{Access, Expr, Plan};
    if oc.columns.iter().any(|c| proposed[*c].is_null()) {
        return Ok(None);
    }
    let values: Vec<Expr> =
        oc.columns.iter().map(|c| Expr::Literal(proposed[*c].clone())).collect();
    let access = match oc.index {
        Some(Some(index)) => Access::Range { index: Some(index), eq: values, lo: None, hi: None },
        _ => Access::PointGet(values),
    };
    let lookup = Plan::Scan {
        table: table.clone(),
        access,
        filter: None,
        reverse: false,
        limit: None,
        for_update: false,
    };
    Ok(ctx.scan(&lookup)?.into_iter().next())
}

/// ON CONFLICT DO UPDATE of the existing row `old` (under `key`) that `proposed` clashed with:
/// applies the SET expressions (over `old` followed by `proposed`) and returns the new row, or
/// `None` when the WHERE does not hold. A row this statement already inserted or updated is
/// not updated again (`21000`, as in PostgreSQL).
#[allow(clippy::too_many_arguments)]
fn upsert(
    ctx: &mut Ctx,
    table: &Arc<Table>,
    checks: &[crate::plan::Check],
    update: &crate::plan::ConflictUpdate,
    key: Vec<u8>,
    old: &[Value],
    proposed: &[Value],
    touched: &mut HashSet<Vec<u8>>,
) -> Result<Option<Vec<Value>>> {
    if touched.contains(&key) {
        return Err(Error::CardinalityViolation {
            message: "ON CONFLICT DO UPDATE command cannot affect row a second time".into(),
        }
        .with_hint(
            "Ensure that no rows proposed for insertion within the same command have duplicate \
             constrained values.",
        ));
    }
    let both: Vec<Value> = old.iter().chain(proposed).cloned().collect();
    if let Some(filter) = &update.filter {
        if ctx.eval(filter, &both)? != Value::Bool(true) {
            return Ok(None);
        }
    }
    let mut new = old.to_vec();
    for (col, e) in &update.sets {
        new[*col] = ctx.eval(e, &both)?;
    }
    let new = check_row(table, checks, new, &ctx.env)?;
    touched.insert(write_updated(ctx, table, key, old, &new)?);
    Ok(Some(new))
}
