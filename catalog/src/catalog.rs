//! `Catalog`: the only writer of the schema. Each DDL operation validates against the current
//! snapshot, persists its change in one atomic, synced store batch, and then publishes a new
//! snapshot with the next version. The persisted layout is documented in the crate doc.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use crate::ids::{CatalogVersion, IndexId, TableId};
use crate::roles::{role_key, Role, Roles, ROLE_PREFIX};
use crate::schema::{Column, DataType, ForeignKey, Generated, Index, Sequence, Table};
use crate::snapshot::Snapshot;
use crate::store::{CatalogStore, MemStore, RocksStore};
use crate::Error;

/// The version of the persisted layout, stored under [`KEY_FORMAT`].
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Key of the layout version (JSON number, [`FORMAT_VERSION`]).
pub(crate) const KEY_FORMAT: &str = "meta/format";
/// Key of the version of the last committed DDL (JSON number).
pub(crate) const KEY_VERSION: &str = "meta/version";
/// Key of the next `TableId` to assign (JSON number); ids are never reused.
pub(crate) const KEY_NEXT_TABLE_ID: &str = "meta/next_table_id";
/// Key of the next `IndexId` to assign (JSON number); ids are never reused.
pub(crate) const KEY_NEXT_INDEX_ID: &str = "meta/next_index_id";
/// Prefix of table keys: `table/` followed by the id in 10 zero-padded decimal digits, so that
/// key order is id order. The value is the `Table` as JSON.
pub(crate) const TABLE_PREFIX: &str = "table/";

/// The first id assigned to a table and to an index. Zero is never a valid id.
const FIRST_ID: u32 = 1;
/// PostgreSQL's limit on the number of columns in a table.
const MAX_COLUMNS: usize = 1600;

/// Prefix of sequence keys: `sequence/`, the owning table's id (10 digits), `/`, the column's
/// position (5 digits). The value is the largest value the sequence may have handed out.
pub(crate) const SEQUENCE_PREFIX: &str = "sequence/";

/// Values a sequence reserves at once at first ([`Catalog::nextval`]); each further
/// reservation doubles it, up to [`MAX_SEQUENCE_CHUNK`].
const FIRST_SEQUENCE_CHUNK: i128 = 32;
/// The most values one reservation covers: a crash skips at most this many.
const MAX_SEQUENCE_CHUNK: i128 = 1 << 16;

/// The store key of the sequence owned by column `position` of table `table`.
pub(crate) fn sequence_key(table: TableId, position: u16) -> String {
    format!("{SEQUENCE_PREFIX}{:010}/{position:05}", table.0)
}

/// The table and column of a sequence key, if `key` is one.
fn parse_sequence_key(key: &str) -> Option<(TableId, u16)> {
    let (table, position) = key.strip_prefix(SEQUENCE_PREFIX)?.split_once('/')?;
    Some((TableId(table.parse().ok()?), position.parse().ok()?))
}

/// The counter of one sequence. Not transactional: a value handed out is never handed out
/// again, whether or not the transaction that took it commits.
#[derive(Debug)]
struct SequenceCounter {
    /// The value the next `nextval` returns (outside the sequence's range once it is used
    /// up). `i128`, so that stepping past `i64::MAX` cannot overflow.
    next: i128,
    /// The largest (for a descending sequence, smallest) value the store covers: `nextval`
    /// writes a new one before it returns a value beyond it. `None`: nothing written yet.
    covered: Option<i128>,
    /// How many values the next reservation covers.
    chunk: i128,
}

/// Sequence counters by owning table and column.
type SequenceCounters = std::collections::HashMap<(TableId, u16), Arc<Mutex<SequenceCounter>>>;

/// The store key of table `id`.
pub(crate) fn table_key(id: TableId) -> String {
    format!("{TABLE_PREFIX}{:010}", id.0)
}

/// An index to create, before the catalog assigns its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    /// Name, already case-folded and chosen by the binder (e.g. `t_pkey`, `t_a_key`).
    pub name: String,
    /// Key columns by position, in key order.
    pub columns: Vec<u16>,
    /// Enforce uniqueness. Forced to true for a primary key.
    pub unique: bool,
    /// Is this the primary key? Its columns become `NOT NULL`.
    pub primary: bool,
    /// Declared as a constraint (PRIMARY KEY or UNIQUE) rather than by CREATE INDEX.
    pub constraint: bool,
    /// A partial index's `WHERE` condition (SQL text).
    pub predicate: Option<String>,
}

/// A table to create, before the catalog assigns its ids.
#[derive(Debug, Clone, PartialEq)]
pub struct TableDef {
    /// Name, already case-folded.
    pub name: String,
    /// Columns in order. `Column::position` is ignored and assigned from the order.
    pub columns: Vec<Column>,
    /// Indexes, including the primary key if one is declared.
    pub indexes: Vec<IndexDef>,
    /// Foreign keys; `ref_table` is already resolved, so it names an existing table.
    pub foreign_keys: Vec<ForeignKey>,
    /// True exactly when no index is primary: rows are keyed by a hidden row id.
    pub hidden_pk: bool,
    /// A view's query and the tables it reads ([`Table::view`]); `None` for a table.
    pub view: Option<crate::schema::ViewDef>,
    /// `CHECK` constraints ([`Table::checks`]).
    pub checks: Vec<crate::schema::Check>,
}

/// The id counters. They only grow, and are persisted with every DDL batch (and when a
/// [`DdlBatch`] reserves ids).
#[derive(Debug, Clone, Copy)]
struct Counters {
    next_table_id: u32,
    next_index_id: u32,
}

/// Where a DDL operation takes the ids it assigns.
trait Ids {
    fn table_id(&mut self) -> Result<TableId, Error>;
    fn index_id(&mut self) -> Result<IndexId, Error>;
}

impl Ids for Counters {
    fn table_id(&mut self) -> Result<TableId, Error> {
        let id = self.next_table_id;
        self.next_table_id = id
            .checked_add(1)
            .ok_or_else(|| Error::InvalidDefinition("table ids exhausted".into()))?;
        Ok(TableId(id))
    }

    fn index_id(&mut self) -> Result<IndexId, Error> {
        let id = self.next_index_id;
        self.next_index_id = id
            .checked_add(1)
            .ok_or_else(|| Error::InvalidDefinition("index ids exhausted".into()))?;
        Ok(IndexId(id))
    }
}

/// Fresh ids from the counters, remembered so that the operation can be validated again at
/// commit with the same ids ([`Replayed`]).
struct Recording<'a> {
    counters: &'a mut Counters,
    ids: RecordedIds,
}

impl Ids for Recording<'_> {
    fn table_id(&mut self) -> Result<TableId, Error> {
        let id = self.counters.table_id()?;
        self.ids.tables.push(id);
        Ok(id)
    }

    fn index_id(&mut self) -> Result<IndexId, Error> {
        let id = self.counters.index_id()?;
        self.ids.indexes.push(id);
        Ok(id)
    }
}

/// The ids an operation was given when it was staged, handed out again in the same order.
#[derive(Debug, Clone, Default)]
struct RecordedIds {
    tables: Vec<TableId>,
    indexes: Vec<IndexId>,
}

struct Replayed<'a> {
    tables: std::slice::Iter<'a, TableId>,
    indexes: std::slice::Iter<'a, IndexId>,
}

impl Ids for Replayed<'_> {
    fn table_id(&mut self) -> Result<TableId, Error> {
        Ok(*self.tables.next().expect("replayed in the order it was staged"))
    }

    fn index_id(&mut self) -> Result<IndexId, Error> {
        Ok(*self.indexes.next().expect("replayed in the order it was staged"))
    }
}

/// One schema change: what a DDL statement asks of the catalog. The fields are the arguments
/// of the [`Catalog`] method named in each variant.
#[allow(missing_docs)]
#[derive(Debug, Clone)]
pub enum Ddl {
    /// See [`Catalog::create_table`].
    CreateTable(TableDef),
    /// See [`Catalog::drop_tables`].
    DropTables { ids: Vec<TableId>, cascade: bool },
    /// See [`Catalog::create_index`] (a primary `def` adds the primary key).
    CreateIndex { table: TableId, def: IndexDef },
    /// See [`Catalog::drop_index`].
    DropIndex(IndexId),
    /// See [`Catalog::add_column`].
    AddColumn { table: TableId, column: Column },
    /// See [`Catalog::add_foreign_key`].
    AddForeignKey { table: TableId, fk: ForeignKey },
    /// See [`Catalog::alter_column`].
    AlterColumn { table: TableId, position: u16, change: ColumnChange },
    /// See [`Catalog::rename_table`].
    RenameTable { table: TableId, name: String },
    /// `ALTER INDEX … RENAME TO name`: an index that backs a PRIMARY KEY or UNIQUE constraint
    /// renames the constraint with it (one name, as in PostgreSQL).
    RenameIndex { table: TableId, index: IndexId, name: String },
    /// `ALTER TABLE … RENAME CONSTRAINT old TO name`: a check, a foreign key, or the index of a
    /// PRIMARY KEY or UNIQUE constraint.
    RenameConstraint { table: TableId, old: String, name: String },
    /// `COMMENT ON TABLE | VIEW | COLUMN … IS …`: the relation's (`column` `None`) or a
    /// column's comment set, or removed (`comment` `None`).
    Comment { table: TableId, column: Option<u16>, comment: Option<String> },
    /// Adds a `CHECK` constraint; checking that existing rows satisfy it is the caller's job.
    AddCheck { table: TableId, check: crate::schema::Check },
    /// `ALTER TABLE … DROP CONSTRAINT name` of a `CHECK` constraint or a foreign key (an index
    /// that backs a constraint is dropped with [`Ddl::DropIndex`]).
    DropConstraint { table: TableId, name: String },
    /// `ALTER TABLE … DROP COLUMN`: the column at `position` is marked dropped
    /// ([`Column::dropped`]); the table's indexes, checks and foreign keys that use it go with
    /// it, as in PostgreSQL. Foreign keys of other tables that reference it are in the way
    /// ([`Error::DependentObjects`]) unless `cascade`, which drops them too. A column of the
    /// primary key the rows are keyed by cannot be dropped. Views are the caller's to check.
    DropColumn { table: TableId, position: u16, cascade: bool },
    /// `ALTER SEQUENCE … OWNED BY table.column | NONE` of a standalone sequence.
    SetSequenceOwner { sequence: TableId, owner: Option<(TableId, u16)> },
}

/// What `ALTER TABLE … ALTER COLUMN` changes ([`Catalog::alter_column`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnChange {
    /// `SET DEFAULT` (`Some`) or `DROP DEFAULT` (`None`).
    Default(Option<crate::ColumnDefault>),
    /// `SET NOT NULL` (`true`) or `DROP NOT NULL` (`false`).
    NotNull(bool),
    /// `RENAME COLUMN … TO name`.
    Rename(String),
    /// `[SET DATA] TYPE t`, where the rows need no rewrite: the caller has checked that every
    /// row's bytes mean the same values under `t` (and that those values fit it). An
    /// identity column's sequence that counted to the old type's largest value counts to the
    /// new one's.
    Type(DataType),
    /// `ADD GENERATED … AS IDENTITY`: the column's values come from this new sequence.
    Identity(Sequence),
}

/// What a successful [`Ddl`] produced.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The created table (`CreateTable`).
    pub table: Option<TableId>,
    /// The created index (`CreateIndex`).
    pub index: Option<Index>,
    /// PostgreSQL-style notices (`DropTables … cascade`).
    pub notices: Vec<String>,
    /// What a `DropTables` dropped besides the tables it named (views with `cascade`, owned
    /// sequences), or the sequences a `DropColumn` dropped with their owning column.
    pub cascaded: Vec<TableId>,
}

/// The tables a DDL operation writes (created or changed) and deletes.
#[derive(Default)]
struct Change {
    put: Vec<Table>,
    delete: Vec<TableId>,
}

/// Private snapshot versions have the top bit set, so they never equal a published version
/// (a plan cached against one is never mistaken for a plan of the published catalog).
const PRIVATE_VERSION: u64 = 1 << 63;
static NEXT_PRIVATE_VERSION: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(PRIVATE_VERSION);

/// Schema changes of one transaction, not yet visible to anyone else (transactional DDL).
///
/// [`Catalog::stage`] validates each change against the batch's private snapshot and applies
/// it there; [`Catalog::prepare`] validates the whole batch again under the writer lock and
/// [`PreparedDdl::publish`] makes it durable and visible at once. Dropping the batch (or the
/// prepared commit) is the rollback: nothing was published. The ids a staged change assigns
/// are reserved durably when it is staged, so they are never handed out twice, even if the
/// batch is rolled back and the server restarts (log records may already name them).
#[derive(Debug, Clone)]
pub struct DdlBatch {
    base: Arc<Snapshot>,
    working: Arc<Snapshot>,
    ops: Vec<(Ddl, RecordedIds)>,
}

impl DdlBatch {
    /// The catalog as this transaction sees it: the published snapshot it started from plus
    /// its own changes. Its version is private (never equal to a published one).
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.working
    }

    /// Whether nothing has been staged.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// A batch validated under the catalog's writer lock, ready to publish. Other DDL waits while
/// this exists; dropping it publishes nothing.
pub struct PreparedDdl<'a> {
    catalog: &'a Catalog,
    counters: parking_lot::MutexGuard<'a, Counters>,
    version: CatalogVersion,
    tables: BTreeMap<TableId, Arc<Table>>,
    puts: Vec<(String, Vec<u8>)>,
    deletes: Vec<String>,
}

impl PreparedDdl<'_> {
    /// Writes the batch (synced, atomic) and publishes the new snapshot.
    pub fn publish(self) -> Result<Arc<Snapshot>, Error> {
        let mut puts = meta_puts(self.version, *self.counters);
        puts.extend(self.puts);
        self.catalog.store.write_batch(puts, self.deletes)?;
        // The writer lock is held: no role changes meanwhile.
        let roles = self.catalog.current.load().roles_arc();
        let published = Arc::new(Snapshot::new(self.version, self.tables).with_roles(roles));
        self.catalog.current.store(published.clone());
        tracing::debug!(version = self.version.0, "catalog version published (transaction)");
        Ok(published)
    }
}

/// The schema catalog: owns the store and publishes snapshots, and keeps the counters of the
/// sequences of `serial` and identity columns.
///
/// - Readers call [`Catalog::snapshot`], which is lock-free and never waits for DDL.
/// - DDL operations are serialized by one writer lock. Each one is durable before it is
///   visible: its batch is synced to the store before the new snapshot is published, so a
///   snapshot never shows a change that a crash could lose. A failed operation (validation or
///   store error) publishes nothing and consumes no ids.
/// - Every successful DDL publishes a snapshot whose version is exactly one more than the
///   previous one; the version is persisted, so it keeps growing across restarts.
/// - Transactional DDL stages changes in a [`DdlBatch`] and publishes them together (one
///   version for the whole batch); see [`Catalog::stage`].
///
/// `Catalog` is `Send + Sync`; share it as `Arc<Catalog>`.
pub struct Catalog {
    store: Box<dyn CatalogStore>,
    current: ArcSwap<Snapshot>,
    /// The writer lock. Held for the whole validate → persist → publish sequence.
    writer: Mutex<Counters>,
    /// Sequence counters by owning table and column, made at first use (or at load, from the
    /// store). Each has its own lock, so that only users of one sequence wait for its writes.
    sequences: Mutex<SequenceCounters>,
}

impl Catalog {
    /// Opens the catalog in the RocksDB database at `dir` (created if missing) and loads it.
    pub fn open(dir: &Path) -> Result<Catalog, Error> {
        Catalog::with_store(Box::new(RocksStore::open(dir)?))
    }

    /// An empty catalog over a fresh [`MemStore`]; for tests.
    pub fn in_memory() -> Catalog {
        Catalog::with_store(Box::new(MemStore::new())).expect("an empty MemStore always loads")
    }

    /// Opens the catalog over any store and loads it. An empty store is initialized with the
    /// `meta/` keys; any other content must be a valid catalog in the current layout
    /// (see the crate doc).
    pub fn with_store(store: Box<dyn CatalogStore>) -> Result<Catalog, Error> {
        let (role_entries, entries): (Vec<_>, Vec<_>) =
            store.load_all()?.into_iter().partition(|(key, _)| key.starts_with(ROLE_PREFIX));
        let roles = Roles::load(role_entries)?;
        let (snapshot, counters, covered) = if entries.is_empty() {
            let counters = Counters { next_table_id: FIRST_ID, next_index_id: FIRST_ID };
            let version = CatalogVersion(0);
            store.write_batch(meta_puts(version, counters), Vec::new())?;
            (Snapshot::empty(version), counters, Vec::new())
        } else {
            load(entries)?
        };
        let snapshot = snapshot.with_roles(roles.all().cloned().collect());
        tracing::debug!(version = snapshot.version().0, "catalog loaded");
        // A restarted sequence continues after the last value it may have handed out.
        let mut sequences = std::collections::HashMap::new();
        for ((table, position), covered) in covered {
            let Some(seq) = snapshot.column_sequence(table, position) else { continue };
            let counter = SequenceCounter {
                next: i128::from(covered) + i128::from(seq.increment),
                covered: Some(covered.into()),
                chunk: FIRST_SEQUENCE_CHUNK,
            };
            sequences.insert((table, position), Arc::new(Mutex::new(counter)));
        }
        Ok(Catalog {
            store,
            current: ArcSwap::from_pointee(snapshot),
            writer: Mutex::new(counters),
            sequences: Mutex::new(sequences),
        })
    }

    /// The role named `name`.
    pub fn role(&self, name: &str) -> Option<Role> {
        self.current.load().roles().iter().find(|r| r.name == name).cloned()
    }

    /// Every role, by name.
    pub fn roles(&self) -> Vec<Role> {
        self.current.load().roles().to_vec()
    }

    /// Creates `role` (its OID is assigned) and writes it to the store before it is visible.
    ///
    /// Errors: [`Error::DuplicateObject`] if a role of that name exists; [`Error::Store`].
    pub fn create_role(&self, role: Role) -> Result<Role, Error> {
        self.change_roles(|roles| {
            let role = roles.prepare_create(role)?;
            let put = role_put(&role)?;
            roles.put(role.clone());
            Ok((role, vec![put], Vec::new()))
        })
    }

    /// Changes the role named `name` with `change` (which must not rename it) and writes it.
    ///
    /// Errors: [`Error::UndefinedObject`] if there is no such role; [`Error::Store`].
    pub fn alter_role(&self, name: &str, change: impl FnOnce(&mut Role)) -> Result<(), Error> {
        self.change_roles(|roles| {
            let mut role = roles.existing(name)?.clone();
            change(&mut role);
            debug_assert_eq!(role.name, name, "alter_role does not rename");
            let put = role_put(&role)?;
            roles.put(role);
            Ok(((), vec![put], Vec::new()))
        })
    }

    /// Renames role `name` to `new_name` (its password verifier does not depend on the name).
    ///
    /// Errors: [`Error::UndefinedObject`]; [`Error::DuplicateObject`] if `new_name` is taken;
    /// [`Error::InvalidDefinition`] for the bootstrap superuser, whose name the catalog knows
    /// it by; [`Error::Store`].
    pub fn rename_role(&self, name: &str, new_name: &str) -> Result<(), Error> {
        self.change_roles(|roles| {
            let mut role = roles.existing(name)?.clone();
            if role.oid == crate::roles::BOOTSTRAP_ROLE_OID {
                return Err(Error::InvalidDefinition(format!("role {name} cannot be renamed")));
            }
            if roles.get(new_name).is_some() {
                return Err(Error::DuplicateObject(format!("role \"{new_name}\" already exists")));
            }
            role.name = new_name.to_owned();
            let put = role_put(&role)?;
            roles.remove(name);
            roles.put(role);
            Ok(((), vec![put], vec![role_key(name)]))
        })
    }

    /// Drops the role named `name`.
    ///
    /// Errors: [`Error::UndefinedObject`] if there is no such role; [`Error::DependentObjects`]
    /// for the bootstrap superuser, as PostgreSQL; [`Error::Store`].
    pub fn drop_role(&self, name: &str) -> Result<(), Error> {
        self.change_roles(|roles| {
            if roles.existing(name)?.oid == crate::roles::BOOTSTRAP_ROLE_OID {
                return Err(Error::DependentObjects {
                    message: format!(
                        "cannot drop role {name} because it is required by the database system"
                    ),
                    detail: None,
                });
            }
            roles.remove(name);
            Ok(((), Vec::new(), vec![role_key(name)]))
        })
    }

    /// One role change, under the writer lock: `change` edits the roles of the current snapshot
    /// and says what to put and delete in the store; that is written with the next catalog
    /// version, then the same tables are published with the new roles. A new version, because
    /// what was bound against the old one (a plan reading `pg_roles`) is stale.
    fn change_roles<R>(
        &self,
        change: impl FnOnce(&mut Roles) -> Result<(R, Vec<(String, Vec<u8>)>, Vec<String>), Error>,
    ) -> Result<R, Error> {
        let counters = self.writer.lock();
        let current = self.current.load_full();
        let mut roles = Roles::of(current.roles());
        let (out, mut puts, deletes) = change(&mut roles)?;
        let version = CatalogVersion(current.version().0 + 1);
        puts.extend(meta_puts(version, *counters));
        self.store.write_batch(puts, deletes)?;
        let roles = roles.all().cloned().collect();
        let tables = current.table_map().clone();
        self.current.store(Arc::new(Snapshot::new(version, tables).with_roles(roles)));
        Ok(out)
    }

    /// `nextval`: the next value of `seq`, the sequence of column `position` of table `table`
    /// (as the caller's snapshot defines it; the table may be one its transaction is still
    /// creating). Not transactional, like PostgreSQL's: every call returns a new value.
    ///
    /// Durable before it is returned: values are reserved in chunks by a synced store write
    /// (32 values at first, doubling up to 65536), and after a restart the sequence continues
    /// after the reserved ones, so a value is never returned twice, and a crash skips at most
    /// one chunk.
    ///
    /// Errors: [`Error::SequenceLimit`] once the sequence has returned its last value;
    /// [`Error::Store`] if the reservation cannot be written.
    pub fn nextval(
        &self,
        table: TableId,
        position: u16,
        seq: &crate::Sequence,
    ) -> Result<i64, Error> {
        let counter = self.sequence_counter(table, position, seq);
        let mut c = counter.lock();
        let value = c.next;
        let increment = i128::from(seq.increment);
        if value > seq.max.into() || value < seq.min.into() {
            let (bound, which) =
                if increment > 0 { (seq.max, "maximum") } else { (seq.min, "minimum") };
            return Err(Error::SequenceLimit {
                message: format!(
                    "nextval: reached {which} value of sequence \"{}\" ({bound})",
                    seq.name
                ),
                exhausted: true,
            });
        }
        let covered =
            c.covered.is_some_and(|l| if increment > 0 { value <= l } else { value >= l });
        if !covered {
            let end = (value + increment * (c.chunk - 1)).clamp(seq.min.into(), seq.max.into());
            self.write_sequence(table, position, end)?;
            c.covered = Some(end);
            c.chunk = (c.chunk * 2).min(MAX_SEQUENCE_CHUNK);
        }
        c.next = value + increment;
        Ok(value as i64)
    }

    /// `setval`: the sequence's next `nextval` returns `value` plus its increment
    /// (`is_called`), or `value` itself. Written to the store before it returns.
    ///
    /// Errors: [`Error::SequenceLimit`] if `value` is outside the sequence's range.
    pub fn setval(
        &self,
        table: TableId,
        position: u16,
        seq: &crate::Sequence,
        value: i64,
        is_called: bool,
    ) -> Result<(), Error> {
        if value > seq.max || value < seq.min {
            return Err(Error::SequenceLimit {
                message: format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})",
                    seq.name, seq.min, seq.max
                ),
                exhausted: false,
            });
        }
        let counter = self.sequence_counter(table, position, seq);
        let mut c = counter.lock();
        let increment = i128::from(seq.increment);
        let next = if is_called { i128::from(value) + increment } else { value.into() };
        // Covered up to the value before `next`: a restart continues at `next`.
        self.write_sequence(table, position, next - increment)?;
        c.covered = Some(next - increment);
        c.chunk = FIRST_SEQUENCE_CHUNK;
        c.next = next;
        Ok(())
    }

    /// Writes where every sequence stands exactly (its last value handed out), so that a
    /// restart after a clean shutdown skips no value. Call when no session is left.
    pub fn settle_sequences(&self) -> Result<(), Error> {
        let counters: Vec<_> = self.sequences.lock().iter().map(|(k, c)| (*k, c.clone())).collect();
        let snapshot = self.snapshot();
        let mut puts = Vec::new();
        let mut settled = Vec::new();
        for ((table, position), counter) in counters {
            let c = counter.lock();
            let Some(seq) = snapshot.column_sequence(table, position) else { continue };
            let last = c.next - i128::from(seq.increment);
            if c.covered.is_some_and(|covered| covered != last) {
                let Ok(value) = i64::try_from(last) else { continue };
                puts.push((sequence_key(table, position), value.to_string().into_bytes()));
                settled.push((counter.clone(), last));
            }
        }
        if puts.is_empty() {
            return Ok(());
        }
        {
            let _writer = self.writer.lock();
            self.store.write_batch(puts, Vec::new())?;
        }
        for (counter, last) in settled {
            let mut c = counter.lock();
            c.covered = Some(last);
            c.chunk = FIRST_SEQUENCE_CHUNK;
        }
        Ok(())
    }

    fn sequence_counter(
        &self,
        table: TableId,
        position: u16,
        seq: &crate::Sequence,
    ) -> Arc<Mutex<SequenceCounter>> {
        let mut sequences = self.sequences.lock();
        let counter = sequences.entry((table, position)).or_insert_with(|| {
            let counter = SequenceCounter {
                next: seq.start.into(),
                covered: None,
                chunk: FIRST_SEQUENCE_CHUNK,
            };
            Arc::new(Mutex::new(counter))
        });
        counter.clone()
    }

    /// Writes (synced) that the sequence may have handed out values up to `covered`. Under
    /// the writer lock, as the store's contract asks.
    fn write_sequence(&self, table: TableId, position: u16, covered: i128) -> Result<(), Error> {
        let value = i64::try_from(covered).unwrap_or(if covered > 0 { i64::MAX } else { i64::MIN });
        let _writer = self.writer.lock();
        let put = (sequence_key(table, position), value.to_string().into_bytes());
        self.store.write_batch(vec![put], Vec::new())
    }

    /// The current snapshot. Lock-free; the snapshot stays valid (and unchanged) for as long
    /// as it is held, whatever DDL runs meanwhile.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Creates a table with its indexes and foreign keys, assigning its `TableId` and the
    /// `IndexId`s (in the order of `def.indexes`).
    ///
    /// Errors: [`Error::DuplicateTable`] if a relation is named `def.name`;
    /// [`Error::DuplicateIndexName`] if an index name is taken (by any relation, the new table
    /// or another index of `def`); [`Error::DuplicateColumn`]; [`Error::UndefinedTable`] if a
    /// foreign key references a table that does not exist; [`Error::InvalidForeignKey`] if the
    /// referenced columns are not exactly the columns of a unique index;
    /// [`Error::InvalidDefinition`] for anything else malformed (e.g. two primary keys).
    pub fn create_table(&self, def: TableDef) -> Result<Arc<Table>, Error> {
        let (published, applied) = self.apply(Ddl::CreateTable(def))?;
        let id = applied.table.expect("set by a successful CreateTable");
        Ok(published.table_by_id(id).expect("the new snapshot holds the new table").clone())
    }

    /// Drops tables `ids` and their indexes together (one DROP TABLE statement), and returns
    /// PostgreSQL-style notices. Foreign keys between the dropped tables go with them.
    ///
    /// Without `cascade`, fails with [`Error::DependentObjects`] if a foreign key of a table
    /// not dropped references one that is. With `cascade`, those foreign keys are removed in
    /// the same atomic batch, and one notice `drop cascades to constraint <fk> on table <t>` is
    /// returned for each. Ids are never reused.
    pub fn drop_tables(&self, ids: Vec<TableId>, cascade: bool) -> Result<Vec<String>, Error> {
        Ok(self.apply(Ddl::DropTables { ids, cascade })?.1.notices)
    }

    /// Creates an index on `table` and returns it with its assigned id. A `def` with
    /// `primary = true` behaves as [`Catalog::add_primary_key`].
    ///
    /// Errors: [`Error::UndefinedTable`], [`Error::DuplicateIndexName`],
    /// [`Error::InvalidDefinition`].
    pub fn create_index(&self, table: TableId, def: IndexDef) -> Result<Index, Error> {
        let applied = self.apply(Ddl::CreateIndex { table, def })?.1;
        Ok(applied.index.expect("set by a successful CreateIndex"))
    }

    /// Adds the primary key `def` (its `primary` flag is forced on) to `table`, which then no
    /// longer has a hidden primary key. Its columns become `NOT NULL`; checking that existing
    /// rows have no NULLs or duplicates is the caller's job, before calling this.
    ///
    /// Errors as [`Catalog::create_index`], and [`Error::InvalidDefinition`] (`multiple primary
    /// keys for table "t" are not allowed`) if the table already has one.
    pub fn add_primary_key(&self, table: TableId, def: IndexDef) -> Result<Index, Error> {
        self.create_index(table, IndexDef { primary: true, ..def })
    }

    /// Drops index `id`.
    ///
    /// Errors: [`Error::UndefinedObject`]; [`Error::DependentObjects`] if it is the primary
    /// key (PostgreSQL: `cannot drop index x because constraint x on table t requires it`) or
    /// if a foreign key needs it as the only unique index over its referenced columns.
    pub fn drop_index(&self, id: IndexId) -> Result<(), Error> {
        self.apply(Ddl::DropIndex(id))?;
        Ok(())
    }

    /// Appends `column` to `table`; its position is assigned (the current column count).
    /// Filling existing rows with its default is the caller's job.
    ///
    /// Errors: [`Error::UndefinedTable`], [`Error::DuplicateColumn`],
    /// [`Error::InvalidDefinition`] (too many columns, empty name).
    pub fn add_column(&self, table: TableId, column: Column) -> Result<(), Error> {
        self.apply(Ddl::AddColumn { table, column })?;
        Ok(())
    }

    /// Adds foreign key `fk` to `table` (`ALTER TABLE … ADD FOREIGN KEY`). Unlike
    /// [`Catalog::create_table`], `fk.ref_table` may be `table` itself. Checking that existing
    /// rows satisfy it is the caller's job.
    ///
    /// Errors: [`Error::UndefinedTable`], [`Error::InvalidForeignKey`],
    /// [`Error::InvalidDefinition`].
    pub fn add_foreign_key(&self, table: TableId, fk: ForeignKey) -> Result<(), Error> {
        self.apply(Ddl::AddForeignKey { table, fk })?;
        Ok(())
    }

    /// Changes column `position` of `table` (`ALTER TABLE … ALTER COLUMN`): its default, or
    /// whether it is NOT NULL. Checking that existing rows have no NULL for `SET NOT NULL` is the
    /// caller's job.
    ///
    /// Errors: [`Error::UndefinedTable`]; [`Error::InvalidDefinition`] for `DROP NOT NULL` on a
    /// primary-key column (PostgreSQL: `column "a" is in a primary key`) or a column that does
    /// not exist.
    pub fn alter_column(
        &self,
        table: TableId,
        position: u16,
        change: ColumnChange,
    ) -> Result<(), Error> {
        self.apply(Ddl::AlterColumn { table, position, change })?;
        Ok(())
    }

    /// Renames `table` (`ALTER TABLE … RENAME TO name`). Its indexes, constraints and the
    /// sequences of its columns keep their names, as in PostgreSQL.
    ///
    /// Errors: [`Error::UndefinedTable`]; [`Error::DuplicateTable`] if a relation is named
    /// `name`.
    pub fn rename_table(&self, table: TableId, name: String) -> Result<(), Error> {
        self.apply(Ddl::RenameTable { table, name })?;
        Ok(())
    }

    /// Starts a batch of transactional schema changes on top of the current snapshot.
    pub fn begin_batch(&self) -> DdlBatch {
        let base = self.snapshot();
        DdlBatch { working: base.clone(), base, ops: Vec::new() }
    }

    /// Applies `ddl` to `batch` only: validated against the batch's snapshot, visible to no one
    /// else. Ids it assigns are reserved durably (the counters are persisted) before it
    /// returns. On error the batch is unchanged.
    pub fn stage(&self, batch: &mut DdlBatch, ddl: Ddl) -> Result<Applied, Error> {
        let mut counters = self.writer.lock();
        let mut next = *counters;
        let mut recording = Recording { counters: &mut next, ids: RecordedIds::default() };
        let (change, applied) = validate(&batch.working, ddl.clone(), &mut recording)?;
        let ids = recording.ids;
        if !ids.tables.is_empty() || !ids.indexes.is_empty() {
            let published = self.current.load().version();
            self.store.write_batch(meta_puts(published, next), Vec::new())?;
            *counters = next;
        }
        drop(counters);
        let version =
            CatalogVersion(NEXT_PRIVATE_VERSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let mut tables = batch.working.table_map().clone();
        apply_change(&mut tables, change);
        let roles = batch.working.roles_arc();
        batch.working = Arc::new(Snapshot::new(version, tables).with_roles(roles));
        batch.ops.push((ddl, ids));
        Ok(applied)
    }

    /// Commit, step 1: takes the writer lock and validates `batch` against the current
    /// snapshot. If no DDL was published since the batch began, its snapshot is taken as is;
    /// otherwise each change is validated again, in order, with the ids it was given, and a
    /// table that the batch changes and someone else changed meanwhile is a conflict
    /// ([`Error::ConcurrentChange`]). Publishing is [`PreparedDdl::publish`].
    pub fn prepare(&self, batch: DdlBatch) -> Result<PreparedDdl<'_>, Error> {
        let counters = self.writer.lock();
        let current = self.current.load_full();
        let base = batch.base.table_map();
        let working = batch.working.table_map();
        let tables = if current.version() == batch.base.version() {
            working.clone()
        } else {
            let touched = base
                .iter()
                .filter(|(id, t)| working.get(id).is_none_or(|w| !Arc::ptr_eq(w, t)))
                .map(|(id, _)| *id);
            for id in touched {
                if current.table_map().get(&id).is_none_or(|c| !Arc::ptr_eq(c, &base[&id])) {
                    return Err(Error::ConcurrentChange(base[&id].name.clone()));
                }
            }
            let mut snapshot = current.clone();
            for (ddl, ids) in &batch.ops {
                let mut replayed =
                    Replayed { tables: ids.tables.iter(), indexes: ids.indexes.iter() };
                let (change, _) = validate(&snapshot, ddl.clone(), &mut replayed)?;
                let mut tables = snapshot.table_map().clone();
                apply_change(&mut tables, change);
                let roles = snapshot.roles_arc();
                snapshot = Arc::new(Snapshot::new(snapshot.version(), tables).with_roles(roles));
            }
            snapshot.table_map().clone()
        };
        let mut puts = Vec::new();
        let mut deletes = Vec::new();
        for (id, table) in &tables {
            if current.table_map().get(id).is_none_or(|c| !Arc::ptr_eq(c, table)) {
                puts.push((table_key(*id), encode_table(table)));
                deletes.extend(lost_sequence_keys(current.table_by_id(*id), table));
            }
        }
        for (id, table) in current.table_map() {
            if !tables.contains_key(id) {
                deletes.push(table_key(*id));
                deletes.extend(sequence_keys(table));
            }
        }
        Ok(PreparedDdl {
            catalog: self,
            counters,
            version: CatalogVersion(current.version().0 + 1),
            tables,
            puts,
            deletes,
        })
    }

    /// Runs one DDL operation: under the writer lock, it is validated against the current
    /// snapshot; the change, the new version and the counters are written in one batch; only
    /// then are the counters kept and the new snapshot published. Returns the published
    /// snapshot and what the operation produced.
    fn apply(&self, ddl: Ddl) -> Result<(Arc<Snapshot>, Applied), Error> {
        let mut counters = self.writer.lock();
        let current = self.current.load_full();
        let mut next_counters = *counters;
        let (change, applied) = validate(&current, ddl, &mut next_counters)?;
        let version = CatalogVersion(current.version().0 + 1);

        let mut puts = meta_puts(version, next_counters);
        let mut deletes = Vec::new();
        for id in &change.delete {
            deletes.push(table_key(*id));
            deletes.extend(current.table_by_id(*id).into_iter().flat_map(|t| sequence_keys(t)));
        }
        for table in &change.put {
            puts.push((table_key(table.id), encode_table(table)));
            deletes.extend(lost_sequence_keys(current.table_by_id(table.id), table));
        }
        self.store.write_batch(puts, deletes)?;

        let mut tables = current.table_map().clone();
        apply_change(&mut tables, change);
        *counters = next_counters;
        let published = Arc::new(Snapshot::new(version, tables).with_roles(current.roles_arc()));
        self.current.store(published.clone());
        tracing::debug!(version = version.0, "catalog version published");
        Ok((published, applied))
    }
}

fn apply_change(tables: &mut BTreeMap<TableId, Arc<Table>>, change: Change) {
    for id in change.delete {
        tables.remove(&id);
    }
    for table in change.put {
        tables.insert(table.id, Arc::new(table));
    }
}

/// Validates `ddl` against `snapshot` and computes its change; ids come from `ids`.
fn validate(snapshot: &Snapshot, ddl: Ddl, ids: &mut dyn Ids) -> Result<(Change, Applied), Error> {
    let mut applied = Applied::default();
    let change = match ddl {
        Ddl::CreateTable(def) => {
            if snapshot.relation_exists(&def.name) {
                return Err(Error::DuplicateTable(def.name));
            }
            check_name(&def.name, "table")?;
            if def.hidden_pk == def.indexes.iter().any(|i| i.primary) {
                return Err(Error::InvalidDefinition(format!(
                    "table \"{}\": hidden_pk must be set exactly when no primary key is declared",
                    def.name
                )));
            }
            let mut columns = def.columns;
            check_columns(&mut columns)?;
            let mut table = Table {
                id: ids.table_id()?,
                name: def.name,
                columns,
                indexes: Vec::new(),
                foreign_keys: Vec::new(),
                hidden_pk: def.hidden_pk,
                view: def.view,
                checks: Vec::new(),
                comment: None,
                column_comments: Default::default(),
                owned_by: None,
            };
            for index in def.indexes {
                if snapshot.relation_exists(&index.name) || index.name == table.name {
                    return Err(Error::DuplicateIndexName(index.name));
                }
                let id = ids.index_id()?;
                add_index(&mut table, id, index)?;
            }
            for fk in def.foreign_keys {
                add_foreign_key(snapshot, &mut table, fk)?;
            }
            for check in def.checks {
                add_check(&mut table, check)?;
            }
            let mut names: HashSet<&str> = table.indexes.iter().map(|i| i.name.as_str()).collect();
            names.insert(&table.name);
            for seq in table.columns.iter().filter_map(|c| c.sequence.as_ref()) {
                check_sequence(snapshot, seq)?;
                if seq.generated == crate::Generated::Standalone {
                    if !table.is_sequence() || seq.name != table.name {
                        return Err(Error::InvalidDefinition(format!(
                            "sequence {}: a standalone sequence is a table of its own name with \
                             one column",
                            seq.name
                        )));
                    }
                    continue;
                }
                if !names.insert(&seq.name) {
                    return Err(Error::DuplicateTable(seq.name.clone()));
                }
            }
            applied.table = Some(table.id);
            Change { put: vec![table], delete: Vec::new() }
        }
        Ddl::DropTables { mut ids, cascade } => {
            let tables = ids
                .iter()
                .map(|&id| must_get_table(snapshot, id))
                .collect::<Result<Vec<_>, _>>()?;
            // Sequences owned by a dropped table go with it, without a notice (PostgreSQL's
            // automatic dependency).
            let owned: Vec<TableId> = snapshot
                .tables()
                .filter(|s| !ids.contains(&s.id))
                .filter(|s| s.owned_by.is_some_and(|(owner, _)| ids.contains(&owner)))
                .map(|s| s.id)
                .collect();
            ids.extend(&owned);
            applied.cascaded.extend(owned);
            // Views over what is dropped (and views over those): in the way, or dropped too.
            let mut views: Vec<&Table> = Vec::new();
            loop {
                let found: Vec<(&Table, &Table)> = snapshot
                    .tables()
                    .filter(|v| !ids.contains(&v.id))
                    .filter_map(|v| {
                        let def = v.view.as_ref()?;
                        let on = def.depends.iter().find(|d| ids.contains(d))?;
                        Some((&**v, &**must_get_table(snapshot, *on).ok()?))
                    })
                    .collect();
                if found.is_empty() {
                    break;
                }
                if !cascade {
                    let detail: Vec<String> = found
                        .iter()
                        .map(|(v, on)| {
                            let kind = if on.is_view() { "view" } else { "table" };
                            format!("view {} depends on {kind} {}", v.name, on.name)
                        })
                        .collect();
                    let what = |t: &Table| if t.is_view() { "view" } else { "table" };
                    return Err(Error::DependentObjects {
                        message: match tables.as_slice() {
                            [t] => format!(
                                "cannot drop {} {} because other objects depend on it",
                                what(t),
                                t.name
                            ),
                            _ => "cannot drop desired object(s) because other objects depend \
                                  on them"
                                .into(),
                        },
                        detail: Some(detail.join("\n")),
                    });
                }
                for (v, _) in found {
                    ids.push(v.id);
                    applied.cascaded.push(v.id);
                    views.push(v);
                }
            }
            // Foreign keys of tables that stay, on the tables listed last first (PostgreSQL's
            // order in its DETAIL).
            let dependents: Vec<_> = tables
                .iter()
                .rev()
                .flat_map(|table| {
                    snapshot
                        .referencing_fks(table.id)
                        .into_iter()
                        .filter(|(referencing, _)| !ids.contains(&referencing.id))
                        .map(move |(referencing, fk)| (table, referencing, fk))
                })
                .collect();
            let lines: Vec<String> = dependents
                .iter()
                .map(|(_, t, fk)| format!("constraint {} on table {}", fk.name, t.name))
                .collect();
            if !cascade && !lines.is_empty() {
                let detail: Vec<String> = lines
                    .iter()
                    .zip(&dependents)
                    .map(|(l, (table, _, _))| format!("{l} depends on table {}", table.name))
                    .collect();
                return Err(Error::DependentObjects {
                    message: match tables.as_slice() {
                        [table] => format!(
                            "cannot drop table {} because other objects depend on it",
                            table.name
                        ),
                        _ => "cannot drop desired object(s) because other objects depend on them"
                            .into(),
                    },
                    detail: Some(detail.join("\n")),
                });
            }
            let mut change = Change { put: Vec::new(), delete: ids.clone() };
            let mut referencing: BTreeMap<TableId, Table> = BTreeMap::new();
            for (_, t, _) in &dependents {
                referencing
                    .entry(t.id)
                    .or_insert_with(|| Table::clone(t))
                    .foreign_keys
                    .retain(|fk| !ids.contains(&fk.ref_table));
            }
            change.put.extend(referencing.into_values());
            applied.notices = lines.into_iter().map(|l| format!("drop cascades to {l}")).collect();
            applied
                .notices
                .extend(views.iter().map(|v| format!("drop cascades to view {}", v.name)));
            change
        }
        Ddl::CreateIndex { table, def } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            if snapshot.relation_exists(&def.name) {
                return Err(Error::DuplicateIndexName(def.name));
            }
            let id = ids.index_id()?;
            applied.index = Some(add_index(&mut changed, id, def)?);
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::DropIndex(id) => {
            let (table, index) = snapshot
                .index_by_id(id)
                .ok_or_else(|| Error::UndefinedObject(format!("index {} does not exist", id.0)))?;
            if index.primary {
                return Err(Error::DependentObjects {
                    message: format!(
                        "cannot drop index {0} because constraint {0} on table {1} requires it",
                        index.name, table.name
                    ),
                    detail: None,
                });
            }
            let mut changed = Table::clone(table);
            changed.indexes.retain(|i| i.id != id);
            let dependents: Vec<String> = snapshot
                .referencing_fks(table.id)
                .into_iter()
                .filter(|(_, fk)| unique_index_for(&changed, &fk.ref_columns).is_none())
                .map(|(t, fk)| {
                    format!(
                        "constraint {} on table {} depends on index {}",
                        fk.name, t.name, index.name
                    )
                })
                .collect();
            if !dependents.is_empty() {
                return Err(Error::DependentObjects {
                    message: format!(
                        "cannot drop index {} because other objects depend on it",
                        index.name
                    ),
                    detail: Some(dependents.join("\n")),
                });
            }
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::AddColumn { table, column } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            if let Some(seq) = &column.sequence {
                check_sequence(snapshot, seq)?;
            }
            changed.columns.push(column);
            check_columns(&mut changed.columns)?;
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::AddForeignKey { table, fk } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            add_foreign_key(snapshot, &mut changed, fk)?;
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::AlterColumn { table, position, change } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            let in_primary_key =
                changed.primary_index().is_some_and(|pk| pk.columns.contains(&position));
            let column = changed.columns.get_mut(usize::from(position)).ok_or_else(|| {
                Error::InvalidDefinition(format!(
                    "column {position} of {} does not exist",
                    changed.name
                ))
            })?;
            match change {
                ColumnChange::Default(default) => column.default = default,
                ColumnChange::NotNull(false) if in_primary_key => {
                    return Err(Error::InvalidDefinition(format!(
                        "column \"{}\" is in a primary key",
                        column.name
                    )))
                }
                ColumnChange::NotNull(not_null) => column.not_null = not_null,
                ColumnChange::Rename(_)
                    if changed.checks.iter().any(|c| c.columns.contains(&position)) =>
                {
                    return Err(Error::InvalidDefinition(format!(
                        "column {position} of {} is named by a check constraint",
                        changed.name
                    )))
                }
                ColumnChange::Rename(name) => {
                    check_name(&name, "column")?;
                    column.name = name.clone();
                    check_columns(&mut changed.columns)?;
                }
                ColumnChange::Type(data_type) => {
                    if let Some(seq) = column.sequence.as_mut() {
                        let old =
                            Sequence::counting(String::new(), seq.generated, column.data_type);
                        if seq.generated != Generated::Serial && seq.max == old.max {
                            seq.max =
                                Sequence::counting(String::new(), seq.generated, data_type).max;
                        }
                    }
                    column.data_type = data_type;
                }
                ColumnChange::Identity(seq) => {
                    check_sequence(snapshot, &seq)?;
                    if column.sequence.is_some() || column.default.is_some() || !column.not_null {
                        return Err(Error::InvalidDefinition(format!(
                            "column {} cannot become an identity column",
                            column.name
                        )));
                    }
                    column.sequence = Some(seq);
                }
            }
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::RenameTable { table, name } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            check_name(&name, "table")?;
            if snapshot.relation_exists(&name) {
                return Err(Error::DuplicateTable(name));
            }
            if changed.is_sequence() {
                return Err(Error::InvalidDefinition(format!("{} is a sequence", changed.name)));
            }
            changed.name = name;
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::RenameIndex { table, index, name } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            let Some(pos) = changed.indexes.iter().position(|i| i.id == index) else {
                return Err(Error::UndefinedObject(format!("index {} does not exist", index.0)));
            };
            rename_index(snapshot, &mut changed, pos, name)?;
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::RenameConstraint { table, old, name } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            if let Some(pos) = changed.indexes.iter().position(|i| i.constraint && i.name == old) {
                rename_index(snapshot, &mut changed, pos, name)?;
            } else {
                check_name(&name, "constraint")?;
                if constraint_name_taken(&changed, &name) {
                    return Err(Error::DuplicateObject(format!(
                        "constraint \"{name}\" for relation \"{}\" already exists",
                        changed.name
                    )));
                }
                let check = changed.checks.iter_mut().find(|c| c.name == old);
                let renamed = match check {
                    Some(c) => Some(&mut c.name),
                    None => {
                        changed.foreign_keys.iter_mut().find(|f| f.name == old).map(|f| &mut f.name)
                    }
                };
                match renamed {
                    Some(n) => *n = name,
                    None => {
                        return Err(Error::UndefinedObject(format!(
                            "constraint \"{old}\" for table \"{}\" does not exist",
                            changed.name
                        )))
                    }
                }
            }
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::Comment { table, column, comment } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            match column {
                None => changed.comment = comment,
                Some(c) if changed.columns.get(usize::from(c)).is_none_or(|c| c.dropped) => {
                    return Err(Error::InvalidDefinition(format!(
                        "column {c} of {} does not exist",
                        changed.name
                    )))
                }
                Some(c) => match comment {
                    Some(text) => {
                        changed.column_comments.insert(c, text);
                    }
                    None => {
                        changed.column_comments.remove(&c);
                    }
                },
            }
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::AddCheck { table, check } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            add_check(&mut changed, check)?;
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::DropColumn { table, position, cascade } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            let column =
                changed.columns.get(usize::from(position)).filter(|c| !c.dropped).ok_or_else(
                    || {
                        Error::InvalidDefinition(format!(
                            "column {position} of {} does not exist",
                            changed.name
                        ))
                    },
                )?;
            let name = column.name.clone();
            let keyed = !changed.hidden_pk;
            if keyed && changed.primary_index().is_some_and(|pk| pk.columns.contains(&position)) {
                return Err(Error::InvalidDefinition(format!(
                    "column \"{name}\" is in the primary key of \"{}\"",
                    changed.name
                )));
            }
            let dependents: Vec<(&Arc<Table>, &ForeignKey)> = snapshot
                .referencing_fks(table)
                .into_iter()
                .filter(|(t, fk)| t.id != table && fk.ref_columns.contains(&position))
                .collect();
            let lines: Vec<String> = dependents
                .iter()
                .map(|(t, fk)| format!("constraint {} on table {}", fk.name, t.name))
                .collect();
            if !cascade && !lines.is_empty() {
                let detail: Vec<String> = lines
                    .iter()
                    .map(|l| format!("{l} depends on column {name} of table {}", changed.name))
                    .collect();
                return Err(Error::DependentObjects {
                    message: format!(
                        "cannot drop column {name} of table {} because other objects depend on \
                         it",
                        changed.name
                    ),
                    detail: Some(detail.join("\n")),
                });
            }
            let uses = |columns: &[u16]| columns.contains(&position);
            changed.indexes.retain(|i| !uses(&i.columns));
            changed.checks.retain(|c| !uses(&c.columns));
            changed.column_comments.remove(&position);
            // Its own foreign keys on the column, and those that reference it from this table.
            let refers = |f: &ForeignKey| f.ref_table == table && uses(&f.ref_columns);
            changed.foreign_keys.retain(|f| !uses(&f.columns) && !refers(f));
            let column = &mut changed.columns[usize::from(position)];
            *column = Column {
                name: format!("........pg.dropped.{}........", position + 1),
                position,
                data_type: column.data_type,
                not_null: false,
                default: None,
                sequence: None,
                dropped: true,
            };
            let mut referencing: BTreeMap<TableId, Table> = BTreeMap::new();
            for (t, _) in &dependents {
                referencing
                    .entry(t.id)
                    .or_insert_with(|| Table::clone(t))
                    .foreign_keys
                    .retain(|fk| !(fk.ref_table == table && uses(&fk.ref_columns)));
            }
            applied.notices = lines.into_iter().map(|l| format!("drop cascades to {l}")).collect();
            // Sequences owned by the column go with it, without a notice (PostgreSQL's
            // automatic dependency).
            let owned: Vec<TableId> = snapshot
                .tables()
                .filter(|s| s.owned_by == Some((table, position)))
                .map(|s| s.id)
                .collect();
            applied.cascaded.extend(&owned);
            let mut put = vec![changed];
            put.extend(referencing.into_values());
            Change { put, delete: owned }
        }
        Ddl::SetSequenceOwner { sequence, owner } => {
            let mut changed = Table::clone(must_get_table(snapshot, sequence)?);
            if !changed.is_sequence() {
                return Err(Error::InvalidDefinition(format!(
                    "\"{}\" is not a sequence",
                    changed.name
                )));
            }
            if let Some((table, position)) = owner {
                let t = must_get_table(snapshot, table)?;
                let live = t.columns.get(usize::from(position)).is_some_and(|c| !c.dropped);
                if t.is_view() || t.is_sequence() || !live {
                    return Err(Error::InvalidDefinition(format!(
                        "sequence cannot be owned by relation \"{}\"",
                        t.name
                    )));
                }
            }
            changed.owned_by = owner;
            Change { put: vec![changed], delete: Vec::new() }
        }
        Ddl::DropConstraint { table, name } => {
            let mut changed = Table::clone(must_get_table(snapshot, table)?);
            let (checks, fks) = (changed.checks.len(), changed.foreign_keys.len());
            changed.checks.retain(|c| c.name != name);
            changed.foreign_keys.retain(|f| f.name != name);
            if (checks, fks) == (changed.checks.len(), changed.foreign_keys.len()) {
                return Err(Error::UndefinedObject(format!(
                    "constraint \"{name}\" of relation \"{}\" does not exist",
                    changed.name
                )));
            }
            Change { put: vec![changed], delete: Vec::new() }
        }
    };
    Ok((change, applied))
}

/// The `meta/` puts written with every batch.
/// The store keys of the sequences of `table`'s columns.
fn sequence_keys(table: &Table) -> impl Iterator<Item = String> + '_ {
    let owned = table.columns.iter().filter(|c| c.sequence.is_some());
    owned.map(|c| sequence_key(table.id, c.position))
}

/// The store keys of the sequences that `old`'s columns had and `new`'s no longer have (a
/// dropped column's).
fn lost_sequence_keys(old: Option<&Arc<Table>>, new: &Table) -> Vec<String> {
    let Some(old) = old else { return Vec::new() };
    old.columns
        .iter()
        .filter(|c| c.sequence.is_some())
        .filter(|c| new.columns.get(usize::from(c.position)).is_none_or(|n| n.sequence.is_none()))
        .map(|c| sequence_key(old.id, c.position))
        .collect()
}

/// The store entry of `role`.
fn role_put(role: &Role) -> Result<(String, Vec<u8>), Error> {
    let value = serde_json::to_vec(role).map_err(|e| Error::Store(e.to_string()))?;
    Ok((role_key(&role.name), value))
}

fn meta_puts(version: CatalogVersion, counters: Counters) -> Vec<(String, Vec<u8>)> {
    vec![
        (KEY_FORMAT.into(), FORMAT_VERSION.to_string().into_bytes()),
        (KEY_VERSION.into(), version.0.to_string().into_bytes()),
        (KEY_NEXT_TABLE_ID.into(), counters.next_table_id.to_string().into_bytes()),
        (KEY_NEXT_INDEX_ID.into(), counters.next_index_id.to_string().into_bytes()),
    ]
}

fn encode_table(table: &Table) -> Vec<u8> {
    serde_json::to_vec(table).expect("a Table has only string map keys and always serializes")
}

/// Rebuilds the snapshot and counters from the store's entries, checking what the DDL
/// operations guarantee: known keys, matching ids, unique names, ids below the counters and
/// foreign keys that reference existing tables.
/// The sequence values reserved in the store, by owning table and column.
type Reserved = Vec<((TableId, u16), i64)>;

fn load(entries: Vec<(String, Vec<u8>)>) -> Result<(Snapshot, Counters, Reserved), Error> {
    fn number<T: std::str::FromStr>(key: &str, value: &[u8]) -> Result<T, Error> {
        std::str::from_utf8(value)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::Store(format!("{key}: not a number")))
    }
    let (mut format, mut version, mut next_table, mut next_index) = (None, None, None, None);
    let mut tables = BTreeMap::new();
    let mut reserved = Vec::new();
    for (key, value) in entries {
        match key.as_str() {
            KEY_FORMAT => format = Some(number::<u32>(&key, &value)?),
            KEY_VERSION => version = Some(number::<u64>(&key, &value)?),
            KEY_NEXT_TABLE_ID => next_table = Some(number::<u32>(&key, &value)?),
            KEY_NEXT_INDEX_ID => next_index = Some(number::<u32>(&key, &value)?),
            _ if key.starts_with(TABLE_PREFIX) => {
                let table: Table = serde_json::from_slice(&value)
                    .map_err(|e| Error::Store(format!("{key}: {e}")))?;
                if key != table_key(table.id) {
                    return Err(Error::Store(format!("{key} holds table {}", table.id)));
                }
                tables.insert(table.id, Arc::new(table));
            }
            _ if key.starts_with(SEQUENCE_PREFIX) => {
                let owner = parse_sequence_key(&key)
                    .ok_or_else(|| Error::Store(format!("malformed sequence key {key}")))?;
                reserved.push((owner, number::<i64>(&key, &value)?));
            }
            _ => return Err(Error::Store(format!("unknown key {key}"))),
        }
    }
    match format {
        Some(FORMAT_VERSION) => {}
        Some(other) => return Err(Error::Store(format!("unsupported format version {other}"))),
        None => return Err(Error::Store(format!("{KEY_FORMAT} is missing"))),
    }
    let missing = |key: &str| Error::Store(format!("{key} is missing"));
    let version = CatalogVersion(version.ok_or_else(|| missing(KEY_VERSION))?);
    let counters = Counters {
        next_table_id: next_table.ok_or_else(|| missing(KEY_NEXT_TABLE_ID))?,
        next_index_id: next_index.ok_or_else(|| missing(KEY_NEXT_INDEX_ID))?,
    };
    let mut names = HashSet::new();
    for table in tables.values() {
        if table.id.0 >= counters.next_table_id {
            return Err(Error::Store(format!("table {} is not below the id counter", table.id)));
        }
        let index_names = table.indexes.iter().map(|i| &i.name);
        // A standalone sequence's name is its table's.
        let owned = table.columns.iter().filter(|_| !table.is_sequence());
        let sequence_names = owned.filter_map(|c| c.sequence.as_ref().map(|s| &s.name));
        for name in std::iter::once(&table.name).chain(index_names).chain(sequence_names) {
            if !names.insert(name.clone()) {
                return Err(Error::Store(format!("relation name {name} is used twice")));
            }
        }
        if let Some(index) = table.indexes.iter().find(|i| i.id.0 >= counters.next_index_id) {
            return Err(Error::Store(format!("index {} is not below the id counter", index.id.0)));
        }
        if let Some(fk) = table.foreign_keys.iter().find(|fk| !tables.contains_key(&fk.ref_table)) {
            return Err(Error::Store(format!(
                "foreign key {} references a missing table",
                fk.name
            )));
        }
    }
    Ok((Snapshot::new(version, tables), counters, reserved))
}

fn must_get_table(snapshot: &Snapshot, id: TableId) -> Result<&Arc<Table>, Error> {
    snapshot.table_by_id(id).ok_or_else(|| Error::UndefinedTable(id.to_string()))
}

/// A column's sequence: a free relation name, a step, and a start within its range.
fn check_sequence(snapshot: &Snapshot, seq: &crate::Sequence) -> Result<(), Error> {
    check_name(&seq.name, "sequence")?;
    if snapshot.relation_exists(&seq.name) {
        return Err(Error::DuplicateTable(seq.name.clone()));
    }
    if seq.increment == 0 {
        return Err(Error::InvalidDefinition("INCREMENT must not be zero".into()));
    }
    if seq.min > seq.max || seq.start < seq.min || seq.start > seq.max {
        return Err(Error::InvalidDefinition(format!(
            "START value ({}) must be between MINVALUE ({}) and MAXVALUE ({})",
            seq.start, seq.min, seq.max
        )));
    }
    Ok(())
}

fn check_name(name: &str, what: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::InvalidDefinition(format!("{what} name must not be empty")));
    }
    Ok(())
}

/// Assigns column positions from their order and checks names and the column limit.
fn check_columns(columns: &mut [Column]) -> Result<(), Error> {
    if columns.len() > MAX_COLUMNS {
        return Err(Error::InvalidDefinition(format!(
            "tables can have at most {MAX_COLUMNS} columns"
        )));
    }
    let mut names = HashSet::new();
    for (position, column) in columns.iter_mut().enumerate() {
        check_name(&column.name, "column")?;
        if !names.insert(column.name.as_str()) {
            return Err(Error::DuplicateColumn(column.name.clone()));
        }
        column.position = u16::try_from(position).expect("at most MAX_COLUMNS columns");
    }
    Ok(())
}

/// Checks that `columns` are valid, non-empty positions in `table`.
fn check_positions(table: &Table, columns: &[u16], what: &str) -> Result<(), Error> {
    if columns.is_empty() {
        return Err(Error::InvalidDefinition(format!("{what} must have at least one column")));
    }
    if let Some(bad) = columns.iter().find(|&&c| usize::from(c) >= table.columns.len()) {
        return Err(Error::InvalidDefinition(format!(
            "{what}: column position {bad} does not exist in table \"{}\"",
            table.name
        )));
    }
    Ok(())
}

/// Adds index `def` to `table` with identity `id`. The caller has checked that the name is
/// free in the snapshot; this checks it against the table's own indexes.
fn add_index(table: &mut Table, id: IndexId, def: IndexDef) -> Result<Index, Error> {
    check_name(&def.name, "index")?;
    if table.indexes.iter().any(|i| i.name == def.name) {
        return Err(Error::DuplicateIndexName(def.name));
    }
    check_positions(table, &def.columns, &format!("index \"{}\"", def.name))?;
    if def.primary {
        if table.primary_index().is_some() {
            return Err(Error::InvalidDefinition(format!(
                "multiple primary keys for table \"{}\" are not allowed",
                table.name
            )));
        }
        let mut seen = HashSet::new();
        for &c in &def.columns {
            let column = &mut table.columns[usize::from(c)];
            if !seen.insert(c) {
                return Err(Error::InvalidDefinition(format!(
                    "column \"{}\" appears twice in primary key constraint",
                    column.name
                )));
            }
            column.not_null = true;
        }
        table.hidden_pk = false;
    }
    let index = Index {
        id,
        name: def.name,
        columns: def.columns,
        unique: def.unique || def.primary,
        primary: def.primary,
        constraint: def.constraint || def.primary,
        predicate: def.predicate,
    };
    table.indexes.push(index.clone());
    Ok(index)
}

/// A unique index of `table` whose key columns are, as a set, exactly `columns` — what
/// PostgreSQL requires of the columns a foreign key references.
fn unique_index_for<'a>(table: &'a Table, columns: &[u16]) -> Option<&'a Index> {
    let wanted: HashSet<u16> = columns.iter().copied().collect();
    table.indexes.iter().find(|i| {
        i.unique
            && i.predicate.is_none()
            && i.columns.len() == wanted.len()
            && i.columns.iter().copied().collect::<HashSet<_>>() == wanted
    })
}

/// Whether `name` names a constraint of `table`: a check, a foreign key, or an index that backs
/// a PRIMARY KEY or UNIQUE constraint (PostgreSQL keeps them in one namespace per table).
fn constraint_name_taken(table: &Table, name: &str) -> bool {
    table.checks.iter().any(|c| c.name == name)
        || table.foreign_keys.iter().any(|f| f.name == name)
        || table.indexes.iter().any(|i| i.constraint && i.name == name)
}

/// Renames `table`'s index at `pos` (and its constraint, if it backs one): the name must be
/// free among the relations (indexes share their namespace) and, for a constraint, among the
/// table's constraints.
fn rename_index(
    snapshot: &Snapshot,
    table: &mut Table,
    pos: usize,
    name: String,
) -> Result<(), Error> {
    check_name(&name, "index")?;
    if snapshot.relation_exists(&name) || table.indexes.iter().any(|i| i.name == name) {
        return Err(Error::DuplicateTable(name));
    }
    if table.indexes[pos].constraint && constraint_name_taken(table, &name) {
        return Err(Error::DuplicateObject(format!(
            "constraint \"{name}\" for relation \"{}\" already exists",
            table.name
        )));
    }
    table.indexes[pos].name = name;
    Ok(())
}

/// Validates `check` as a `CHECK` constraint of `table` and adds it.
fn add_check(table: &mut Table, check: crate::schema::Check) -> Result<(), Error> {
    check_name(&check.name, "constraint")?;
    if constraint_name_taken(table, &check.name) {
        return Err(Error::DuplicateObject(format!(
            "constraint \"{}\" for relation \"{}\" already exists",
            check.name, table.name
        )));
    }
    if let Some(bad) = check.columns.iter().find(|&&c| usize::from(c) >= table.columns.len()) {
        return Err(Error::InvalidDefinition(format!(
            "check constraint \"{}\": column position {bad} does not exist in table \"{}\"",
            check.name, table.name
        )));
    }
    table.checks.push(check);
    Ok(())
}

/// Validates `fk` as a foreign key of `table` and adds it. The referenced table is looked up
/// in `snapshot`, except that a reference to `table` itself uses `table` as it is now.
fn add_foreign_key(snapshot: &Snapshot, table: &mut Table, fk: ForeignKey) -> Result<(), Error> {
    check_name(&fk.name, "constraint")?;
    if constraint_name_taken(table, &fk.name) {
        return Err(Error::DuplicateObject(format!(
            "constraint \"{}\" for relation \"{}\" already exists",
            fk.name, table.name
        )));
    }
    let what = format!("foreign key \"{}\"", fk.name);
    check_positions(table, &fk.columns, &what)?;
    let referenced: &Table =
        if fk.ref_table == table.id { table } else { must_get_table(snapshot, fk.ref_table)? };
    if fk.columns.len() != fk.ref_columns.len() {
        return Err(Error::InvalidForeignKey(
            "number of referencing and referenced columns for foreign key disagree".into(),
        ));
    }
    check_positions(referenced, &fk.ref_columns, &what)?;
    if unique_index_for(referenced, &fk.ref_columns).is_none() {
        return Err(Error::InvalidForeignKey(format!(
            "there is no unique constraint matching given keys for referenced table \"{}\"",
            referenced.name
        )));
    }
    table.foreign_keys.push(fk);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::schema::{ColumnDefault, DataType, FkAction};

    fn column(name: &str, data_type: DataType) -> Column {
        Column {
            name: name.into(),
            position: 0,
            data_type,
            not_null: false,
            default: None,
            sequence: None,
            dropped: false,
        }
    }

    fn index(name: &str, columns: &[u16], unique: bool, primary: bool) -> IndexDef {
        IndexDef {
            predicate: None,
            name: name.into(),
            columns: columns.to_vec(),
            unique,
            primary,
            constraint: primary,
        }
    }

    /// `name(id int, v text)` with primary key `name_pkey (id)`.
    fn simple(name: &str) -> TableDef {
        TableDef {
            name: name.into(),
            columns: vec![column("id", DataType::Int32), column("v", DataType::Text)],
            indexes: vec![index(&format!("{name}_pkey"), &[0], true, true)],
            foreign_keys: Vec::new(),
            hidden_pk: false,
            view: None,
            checks: Vec::new(),
        }
    }

    /// [`simple`] table `name` whose column 1 references column 0 of `parent`.
    fn child_of(name: &str, parent: TableId) -> TableDef {
        TableDef {
            foreign_keys: vec![fk(&format!("{name}_fk"), &[1], parent, &[0])],
            ..simple(name)
        }
    }

    fn fk(name: &str, columns: &[u16], ref_table: TableId, ref_columns: &[u16]) -> ForeignKey {
        ForeignKey {
            name: name.into(),
            columns: columns.to_vec(),
            ref_table,
            ref_columns: ref_columns.to_vec(),
            on_delete: FkAction::Cascade,
            on_update: FkAction::NoAction,
            deferral: crate::schema::Deferral::NotDeferrable,
        }
    }

    /// A store that wraps [`MemStore`] and fails writes while `fail` is set.
    #[derive(Clone, Default)]
    struct FailingStore {
        inner: MemStore,
        fail: Arc<AtomicBool>,
    }

    impl CatalogStore for FailingStore {
        fn load_all(&self) -> Result<Vec<(String, Vec<u8>)>, Error> {
            self.inner.load_all()
        }

        fn write_batch(
            &self,
            puts: Vec<(String, Vec<u8>)>,
            deletes: Vec<String>,
        ) -> Result<(), Error> {
            if self.fail.load(Ordering::Relaxed) {
                return Err(Error::Store("injected failure".into()));
            }
            self.inner.write_batch(puts, deletes)
        }
    }

    #[test]
    fn create_table_assigns_ids_and_bumps_version() {
        let catalog = Catalog::in_memory();
        let empty = catalog.snapshot();
        assert_eq!(empty.version(), CatalogVersion(0));

        let mut def = simple("a");
        def.columns[0].position = 7; // ignored: positions come from the order
        def.indexes.push(index("a_v_idx", &[1], false, false));
        let a = catalog.create_table(def).unwrap();
        assert_eq!(a.id, TableId(1));
        assert_eq!(a.indexes.iter().map(|i| i.id).collect::<Vec<_>>(), [IndexId(1), IndexId(2)]);
        assert_eq!(a.columns.iter().map(|c| c.position).collect::<Vec<_>>(), [0, 1]);
        assert!(a.columns[0].not_null, "primary key columns are NOT NULL");
        let b = catalog.create_table(simple("b")).unwrap();
        assert_eq!((b.id, b.indexes[0].id), (TableId(2), IndexId(3)));

        let snapshot = catalog.snapshot();
        assert_eq!(snapshot.version(), CatalogVersion(2));
        assert_eq!(snapshot.tables().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(snapshot.table_by_id(TableId(2)).unwrap().name, "b");
        let (table, idx) = snapshot.index_by_name("a_v_idx").unwrap();
        assert_eq!((table.id, idx.id), (TableId(1), IndexId(2)));
        assert!(snapshot.table("a_v_idx").is_none(), "an index is not a table");
        assert!(snapshot.index_by_name("a").is_none(), "a table is not an index");
        assert!(snapshot.relation_exists("a_pkey"));
        assert_eq!(snapshot.must_get_table("zz").unwrap_err(), Error::UndefinedTable("zz".into()));
        // The old snapshot is unchanged.
        assert_eq!(empty.tables().count(), 0);
        assert!(empty.table("a").is_none());
    }

    #[test]
    fn roles_survive_a_restart_and_the_bootstrap_role_stays() {
        let store = MemStore::new();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        let names =
            |c: &Catalog| c.roles().into_iter().map(|r| (r.name, r.oid)).collect::<Vec<_>>();
        assert_eq!(names(&catalog), [("postgres".to_owned(), 10)]);
        let bob = catalog.create_role(Role::new("bob".into(), true)).unwrap();
        assert_eq!(bob.oid, 16384);
        let carol = catalog.create_role(Role::new("carol".into(), false)).unwrap();
        assert_eq!(carol.oid, 16385);
        assert!(matches!(
            catalog.create_role(Role::new("bob".into(), true)),
            Err(Error::DuplicateObject(m)) if m == "role \"bob\" already exists"
        ));
        let verifier = crate::Verifier::new("secret").to_string();
        catalog.alter_role("bob", |r| r.password = Some(verifier.clone())).unwrap();
        catalog.alter_role("postgres", |r| r.password = Some(verifier.clone())).unwrap();
        assert!(matches!(catalog.alter_role("dave", |_| {}), Err(Error::UndefinedObject(_))));
        assert!(matches!(catalog.drop_role("postgres"), Err(Error::DependentObjects { .. })));
        catalog.drop_role("carol").unwrap();
        assert!(matches!(catalog.drop_role("carol"), Err(Error::UndefinedObject(_))));

        let reopened = Catalog::with_store(Box::new(store.clone())).unwrap();
        assert_eq!(names(&reopened), [("bob".to_owned(), 16384), ("postgres".to_owned(), 10)]);
        assert_eq!(reopened.role("bob").unwrap().password.as_deref(), Some(verifier.as_str()));
        assert_eq!(reopened.role("postgres").unwrap().password.as_deref(), Some(verifier.as_str()));
        assert!(reopened.role("postgres").unwrap().superuser);
        // OIDs follow the largest in use: nothing stored refers to a role by its OID.
        assert_eq!(reopened.create_role(Role::new("erin".into(), true)).unwrap().oid, 16385);
        // A rename keeps the OID and the password.
        assert!(matches!(reopened.rename_role("bob", "erin"), Err(Error::DuplicateObject(_))));
        assert!(matches!(reopened.rename_role("postgres", "x"), Err(Error::InvalidDefinition(_))));
        reopened.rename_role("bob", "robert").unwrap();
        let again = Catalog::with_store(Box::new(store.clone())).unwrap();
        assert!(again.role("bob").is_none());
        let robert = again.role("robert").unwrap();
        assert_eq!((robert.oid, robert.password.as_deref()), (16384, Some(verifier.as_str())));
        assert_eq!(again.snapshot().roles().len(), 3, "the snapshot lists them too");
    }

    #[test]
    fn a_batch_is_private_until_published_and_publishes_one_version() {
        let store = MemStore::new();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        catalog.create_table(simple("a")).unwrap();
        let mut batch = catalog.begin_batch();
        let b = catalog.stage(&mut batch, Ddl::CreateTable(simple("b"))).unwrap().table.unwrap();
        catalog
            .stage(
                &mut batch,
                Ddl::AddColumn { table: TableId(1), column: column("w", DataType::Int64) },
            )
            .unwrap();
        catalog
            .stage(&mut batch, Ddl::DropTables { ids: vec![TableId(1)], cascade: false })
            .unwrap();
        assert!(batch.snapshot().table("b").is_some() && batch.snapshot().table("a").is_none());
        assert!(batch.snapshot().version().0 >= PRIVATE_VERSION, "private versions never collide");
        // Nobody else sees the batch.
        assert_eq!(catalog.snapshot().version(), CatalogVersion(1));
        assert!(catalog.snapshot().table("b").is_none() && catalog.snapshot().table("a").is_some());
        // The reserved id is durable at once: a restart does not hand it out again.
        let reopened = Catalog::with_store(Box::new(store.clone())).unwrap();
        assert_eq!(reopened.writer.lock().next_table_id, b.0 + 1);
        drop(reopened);

        let published = catalog.prepare(batch).unwrap().publish().unwrap();
        assert_eq!(published.version(), CatalogVersion(2), "one version for the whole batch");
        assert_eq!(published.tables().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["b"]);
        let reloaded = Catalog::with_store(Box::new(store)).unwrap().snapshot();
        assert_eq!(reloaded.tables().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn a_dropped_batch_publishes_nothing_and_a_failed_stage_changes_nothing() {
        let catalog = Catalog::in_memory();
        let mut batch = catalog.begin_batch();
        catalog.stage(&mut batch, Ddl::CreateTable(simple("a"))).unwrap();
        let before = batch.snapshot().clone();
        let err = catalog.stage(&mut batch, Ddl::CreateTable(simple("a"))).unwrap_err();
        assert_eq!(err, Error::DuplicateTable("a".into()));
        assert!(Arc::ptr_eq(batch.snapshot(), &before));
        drop(catalog.prepare(batch).unwrap()); // prepared, never published
        assert_eq!(catalog.snapshot().version(), CatalogVersion(0));
        assert!(catalog.snapshot().table("a").is_none());
        // Ids of a rolled-back batch are not reused.
        assert_eq!(catalog.create_table(simple("a")).unwrap().id, TableId(2));
    }

    #[test]
    fn a_batch_commits_over_unrelated_ddl_but_not_over_a_change_of_its_tables() {
        let catalog = Catalog::in_memory();
        catalog.create_table(simple("a")).unwrap();
        catalog.create_table(simple("b")).unwrap();
        let mut batch = catalog.begin_batch();
        catalog.stage(&mut batch, Ddl::CreateTable(simple("c"))).unwrap();
        catalog
            .stage(
                &mut batch,
                Ddl::AddColumn { table: TableId(1), column: column("w", DataType::Int64) },
            )
            .unwrap();
        // Unrelated DDL meanwhile: the batch is validated again and still commits.
        catalog.create_table(simple("d")).unwrap();
        let published = catalog.prepare(batch).unwrap().publish().unwrap();
        assert_eq!(
            published.tables().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
        assert_eq!(published.table("a").unwrap().columns.len(), 3);

        // A concurrent change of a table the batch changed: conflict.
        let mut batch = catalog.begin_batch();
        catalog
            .stage(
                &mut batch,
                Ddl::AddColumn { table: TableId(2), column: column("w", DataType::Int64) },
            )
            .unwrap();
        catalog.add_column(TableId(2), column("z", DataType::Int64)).unwrap();
        assert_eq!(catalog.prepare(batch).err(), Some(Error::ConcurrentChange("b".into())));
        // A concurrent create of the same name: the re-validation fails.
        let mut batch = catalog.begin_batch();
        catalog.stage(&mut batch, Ddl::CreateTable(simple("e"))).unwrap();
        catalog.create_table(simple("e")).unwrap();
        assert_eq!(catalog.prepare(batch).err(), Some(Error::DuplicateTable("e".into())));
    }

    #[test]
    fn relation_names_share_one_namespace() {
        let catalog = Catalog::in_memory();
        catalog.create_table(simple("a")).unwrap();
        let version = catalog.snapshot().version();

        assert_eq!(
            catalog.create_table(simple("a")).unwrap_err(),
            Error::DuplicateTable("a".into())
        );
        assert_eq!(
            catalog.create_table(simple("a_pkey")).unwrap_err(),
            Error::DuplicateTable("a_pkey".into())
        );
        let mut def = simple("b");
        def.indexes[0].name = "a".into();
        assert_eq!(catalog.create_table(def).unwrap_err(), Error::DuplicateIndexName("a".into()));
        let mut def = simple("b");
        def.indexes[0].name = "b".into();
        assert_eq!(catalog.create_table(def).unwrap_err(), Error::DuplicateIndexName("b".into()));
        let mut def = simple("b");
        def.indexes.push(index("b_pkey", &[1], false, false));
        assert_eq!(
            catalog.create_table(def).unwrap_err(),
            Error::DuplicateIndexName("b_pkey".into())
        );
        assert_eq!(
            catalog.create_index(TableId(1), index("a", &[1], false, false)).unwrap_err(),
            Error::DuplicateIndexName("a".into())
        );
        assert_eq!(catalog.snapshot().version(), version, "failed DDL publishes nothing");
        // No id was consumed by the failures.
        assert_eq!(catalog.create_table(simple("b")).unwrap().id, TableId(2));
    }

    #[test]
    fn invalid_table_definitions() {
        let catalog = Catalog::in_memory();
        let mut def = simple("t");
        def.columns.push(column("v", DataType::Int64));
        assert_eq!(catalog.create_table(def).unwrap_err(), Error::DuplicateColumn("v".into()));

        let mut def = simple("t");
        def.indexes.push(index("t_pkey2", &[1], true, true));
        assert_eq!(
            catalog.create_table(def).unwrap_err(),
            Error::InvalidDefinition(
                "multiple primary keys for table \"t\" are not allowed".into()
            )
        );

        let mut def = simple("t");
        def.hidden_pk = true;
        assert!(matches!(catalog.create_table(def), Err(Error::InvalidDefinition(_))));
        let mut def = simple("t");
        def.indexes.clear();
        assert!(matches!(catalog.create_table(def), Err(Error::InvalidDefinition(_))));

        let mut def = simple("t");
        def.indexes.push(index("t_x", &[2], false, false));
        assert!(matches!(catalog.create_table(def), Err(Error::InvalidDefinition(_))));
        let mut def = simple("t");
        def.indexes.push(index("t_x", &[], false, false));
        assert!(matches!(catalog.create_table(def), Err(Error::InvalidDefinition(_))));
        let mut def = simple("t");
        def.indexes[0].columns = vec![0, 0];
        assert!(matches!(catalog.create_table(def), Err(Error::InvalidDefinition(_))));

        assert_eq!(catalog.snapshot().version(), CatalogVersion(0));
        assert!(catalog.snapshot().tables().next().is_none());
    }

    #[test]
    fn foreign_keys_need_a_unique_index() {
        let catalog = Catalog::in_memory();
        let mut def = simple("parent");
        def.indexes.push(index("parent_v_idx", &[1], false, false));
        let parent = catalog.create_table(def).unwrap();

        let child = |fks: Vec<ForeignKey>| TableDef { foreign_keys: fks, ..simple("child") };
        assert_eq!(
            catalog.create_table(child(vec![fk("f", &[1], TableId(99), &[0])])).unwrap_err(),
            Error::UndefinedTable("t99".into())
        );
        assert_eq!(
            catalog.create_table(child(vec![fk("f", &[1], parent.id, &[1])])).unwrap_err(),
            Error::InvalidForeignKey(
                "there is no unique constraint matching given keys for referenced table \"parent\""
                    .into()
            )
        );
        assert!(matches!(
            catalog.create_table(child(vec![fk("f", &[0, 1], parent.id, &[0])])),
            Err(Error::InvalidForeignKey(_))
        ));
        assert!(matches!(
            catalog.create_table(child(vec![fk("f", &[5], parent.id, &[0])])),
            Err(Error::InvalidDefinition(_))
        ));
        let twice = vec![fk("f", &[1], parent.id, &[0]), fk("f", &[0], parent.id, &[0])];
        assert!(matches!(catalog.create_table(child(twice)), Err(Error::DuplicateObject(_))));

        let child = catalog.create_table(child(vec![fk("f", &[1], parent.id, &[0])])).unwrap();
        let snapshot = catalog.snapshot();
        let refs = snapshot.referencing_fks(parent.id);
        assert_eq!(refs.len(), 1);
        assert_eq!((refs[0].0.id, refs[0].1.name.as_str()), (child.id, "f"));
        assert!(snapshot.referencing_fks(child.id).is_empty());
    }

    /// One DROP TABLE of several tables: foreign keys among them need no cascade, even in a
    /// cycle; one from a table that stays is reported for all of them at once.
    #[test]
    fn drop_tables_together() {
        let catalog = Catalog::in_memory();
        let a = catalog.create_table(simple("a")).unwrap();
        let b = catalog.create_table(child_of("b", a.id)).unwrap();
        catalog.add_foreign_key(a.id, fk("a_fk", &[1], b.id, &[0])).unwrap();
        let c = catalog.create_table(child_of("c", b.id)).unwrap();
        assert_eq!(
            catalog.drop_tables(vec![a.id, b.id], false).unwrap_err(),
            Error::DependentObjects {
                message: "cannot drop desired object(s) because other objects depend on them"
                    .into(),
                detail: Some("constraint c_fk on table c depends on table b".into()),
            }
        );
        assert!(catalog.drop_tables(vec![a.id, c.id, b.id], false).unwrap().is_empty());
        let snapshot = catalog.snapshot();
        assert!(["a", "b", "c"].iter().all(|t| snapshot.table(t).is_none()));
    }

    /// A view is in the way of dropping what it reads, and goes with it when the drop
    /// cascades (views over it too); it survives a restart with its query.
    #[test]
    fn views_depend_on_what_they_read() {
        let store = MemStore::new();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        let a = catalog.create_table(simple("a")).unwrap();
        let view = |name: &str, on: TableId| TableDef {
            name: name.into(),
            columns: vec![column("id", DataType::Int32)],
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            hidden_pk: true,
            view: Some(crate::schema::ViewDef {
                query: "SELECT id FROM a".into(),
                depends: vec![on],
                query_columns: vec!["id".into()],
            }),
            checks: Vec::new(),
        };
        let v = catalog.create_table(view("v", a.id)).unwrap();
        let w = catalog.create_table(view("w", v.id)).unwrap();
        assert_eq!(
            catalog.drop_tables(vec![a.id], false).unwrap_err(),
            Error::DependentObjects {
                message: "cannot drop table a because other objects depend on it".into(),
                detail: Some("view v depends on table a".into()),
            }
        );
        let reopened = Catalog::with_store(Box::new(store.clone())).unwrap();
        let stored = reopened.snapshot().table("w").cloned().unwrap();
        assert_eq!(stored.view.as_ref().map(|d| d.depends.clone()), Some(vec![v.id]));
        drop(reopened);
        let applied = catalog.apply(Ddl::DropTables { ids: vec![a.id], cascade: true }).unwrap().1;
        assert_eq!(applied.cascaded, vec![v.id, w.id]);
        assert_eq!(applied.notices, ["drop cascades to view v", "drop cascades to view w"]);
        let snapshot = catalog.snapshot();
        assert!(["a", "v", "w"].iter().all(|t| snapshot.table(t).is_none()));
    }

    /// ALTER COLUMN changes one column's default or nullability, durably; a primary-key column
    /// stays NOT NULL.
    /// CHECK constraints share one namespace per table with foreign keys and PRIMARY KEY /
    /// UNIQUE constraints; DROP CONSTRAINT removes a check or a foreign key by name; a column a
    /// check names cannot be renamed (its text names it).
    #[test]
    fn checks_are_constraints_by_name() {
        let catalog = Catalog::with_store(Box::new(MemStore::new())).unwrap();
        let parent = catalog.create_table(simple("parent")).unwrap();
        let fk = ForeignKey {
            name: "child_fk".into(),
            columns: vec![0],
            ref_table: parent.id,
            ref_columns: vec![0],
            on_delete: FkAction::NoAction,
            on_update: FkAction::NoAction,
            deferral: crate::schema::Deferral::NotDeferrable,
        };
        let check = |name: &str, columns: Vec<u16>| crate::schema::Check {
            name: name.into(),
            sql: "id > 0".into(),
            columns,
        };
        let t = catalog
            .create_table(TableDef {
                foreign_keys: vec![fk],
                checks: vec![check("child_id_check", vec![0])],
                ..simple("child")
            })
            .unwrap();
        for taken in ["child_id_check", "child_fk", "child_pkey"] {
            let err = catalog.apply(Ddl::AddCheck { table: t.id, check: check(taken, vec![0]) });
            assert!(matches!(err, Err(Error::DuplicateObject(_))), "{taken}: {err:?}");
        }
        let err = catalog.apply(Ddl::AddCheck { table: t.id, check: check("far", vec![9]) });
        assert!(matches!(err, Err(Error::InvalidDefinition(_))), "{err:?}");
        let rename = Ddl::AlterColumn {
            table: t.id,
            position: 0,
            change: ColumnChange::Rename("other".into()),
        };
        assert!(matches!(catalog.apply(rename), Err(Error::InvalidDefinition(_))));
        catalog.apply(Ddl::AddCheck { table: t.id, check: check("second", vec![]) }).unwrap();
        assert_eq!(catalog.snapshot().table("child").unwrap().checks.len(), 2);
        for name in ["child_id_check", "child_fk", "second"] {
            catalog.apply(Ddl::DropConstraint { table: t.id, name: name.into() }).unwrap();
        }
        let after = catalog.snapshot().table("child").cloned().unwrap();
        assert!(after.checks.is_empty() && after.foreign_keys.is_empty());
        let err = catalog.apply(Ddl::DropConstraint { table: t.id, name: "second".into() });
        assert!(matches!(err, Err(Error::UndefinedObject(_))), "{err:?}");
    }

    /// DROP COLUMN marks the column dropped in place (positions stay), takes the indexes,
    /// checks and foreign keys that use it and its sequence's stored counter with it, and is
    /// durable; another table's foreign key on it is in the way unless `cascade`; a column of
    /// the primary key stays.
    #[test]
    fn drop_column_marks_it_dropped_and_takes_what_uses_it() {
        let store = MemStore::new();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        let mut serial = column("n", DataType::Int32);
        serial.sequence = Some(crate::Sequence::counting(
            "t_n_seq".into(),
            crate::Generated::Serial,
            DataType::Int32,
        ));
        let t = catalog
            .create_table(TableDef {
                columns: vec![
                    column("id", DataType::Int32),
                    column("v", DataType::Text),
                    serial,
                    column("w", DataType::Int64),
                ],
                indexes: vec![
                    index("t_pkey", &[0], true, true),
                    IndexDef { constraint: true, ..index("t_v_key", &[1], true, false) },
                    index("t_vw", &[3, 1], false, false),
                    index("t_w", &[3], false, false),
                ],
                checks: vec![crate::schema::Check {
                    name: "t_v_check".into(),
                    sql: "v <> ''".into(),
                    columns: vec![1],
                }],
                ..simple("t")
            })
            .unwrap();
        let seq = t.columns[2].sequence.clone().unwrap();
        catalog.nextval(t.id, 2, &seq).unwrap();
        let sequence_keys = |store: &MemStore| -> usize {
            let all = store.load_all().unwrap();
            all.iter().filter(|(k, _)| k.starts_with(SEQUENCE_PREFIX)).count()
        };
        assert_eq!(sequence_keys(&store), 1);
        let child = catalog.create_table(TableDef {
            foreign_keys: vec![fk("child_fk", &[1], t.id, &[1])],
            ..simple("child")
        });
        let child = child.unwrap();
        let drop = |position, cascade| Ddl::DropColumn { table: t.id, position, cascade };
        let err = catalog.apply(drop(1, false)).unwrap_err();
        assert!(matches!(err, Error::DependentObjects { .. }), "{err:?}");
        assert!(matches!(catalog.apply(drop(0, true)), Err(Error::InvalidDefinition(_))));
        let applied = catalog.apply(drop(1, true)).unwrap().1;
        assert_eq!(applied.notices, ["drop cascades to constraint child_fk on table child"]);
        catalog.apply(drop(2, false)).unwrap();
        assert!(matches!(catalog.apply(drop(2, false)), Err(Error::InvalidDefinition(_))));
        assert_eq!(sequence_keys(&store), 0, "the serial column's counter went with it");

        let reopened = Catalog::with_store(Box::new(store.clone())).unwrap();
        let snapshot = reopened.snapshot();
        let after = snapshot.table("t").unwrap();
        let columns: Vec<(&str, u16, bool)> =
            after.columns.iter().map(|c| (c.name.as_str(), c.position, c.dropped)).collect();
        assert_eq!(
            columns,
            [
                ("id", 0, false),
                ("........pg.dropped.2........", 1, true),
                ("........pg.dropped.3........", 2, true),
                ("w", 3, false),
            ]
        );
        assert!(after.columns[2].sequence.is_none() && after.checks.is_empty());
        let indexes: Vec<&str> = after.indexes.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(indexes, ["t_pkey", "t_w"]);
        assert!(after.column("........pg.dropped.2........").is_none());
        let visible: Vec<&str> = after.visible_columns().map(|c| c.name.as_str()).collect();
        assert_eq!(visible, ["id", "w"]);
        assert!(snapshot.table_by_id(child.id).unwrap().foreign_keys.is_empty());
        assert!(!snapshot.relation_exists("t_n_seq"));
    }

    #[test]
    fn alter_column_changes_default_and_not_null() {
        let store = MemStore::new();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        let a = catalog.create_table(simple("a")).unwrap();
        let seven = ColumnChange::Default(Some(ColumnDefault { sql: "7".into() }));
        catalog.alter_column(a.id, 1, seven).unwrap();
        catalog.alter_column(a.id, 1, ColumnChange::NotNull(true)).unwrap();
        assert_eq!(
            catalog.alter_column(a.id, 0, ColumnChange::NotNull(false)).unwrap_err(),
            Error::InvalidDefinition("column \"id\" is in a primary key".into())
        );
        assert!(catalog.alter_column(a.id, 2, ColumnChange::NotNull(true)).is_err());
        let reopened = Catalog::with_store(Box::new(store.clone())).unwrap();
        let v = reopened.snapshot().table("a").unwrap().columns[1].clone();
        assert_eq!(v.default.as_ref().map(|d| d.sql.as_str()), Some("7"));
        assert!(v.not_null);
        reopened.alter_column(a.id, 1, ColumnChange::Default(None)).unwrap();
        reopened.alter_column(a.id, 1, ColumnChange::NotNull(false)).unwrap();
        let v = reopened.snapshot().table("a").unwrap().columns[1].clone();
        assert!(v.default.is_none() && !v.not_null);
        assert!(reopened.snapshot().table("a").unwrap().columns[0].not_null);
    }

    #[test]
    fn alter_column_type_keeps_a_custom_identity_bound() {
        let catalog = Catalog::in_memory();
        let mut def = simple("a");
        def.columns[0].sequence =
            Some(Sequence::counting("a_id_seq".into(), Generated::Always, DataType::Int32));
        let mut b = simple("b");
        b.columns[0].sequence =
            Some(Sequence { max: 1000, ..def.columns[0].sequence.clone().unwrap() });
        b.columns[0].sequence.as_mut().unwrap().name = "b_id_seq".into();
        let (a, b) = (catalog.create_table(def).unwrap(), catalog.create_table(b).unwrap());
        for t in [a.id, b.id] {
            catalog.alter_column(t, 0, ColumnChange::Type(DataType::Int64)).unwrap();
        }
        let snapshot = catalog.snapshot();
        let column = |t: &str| snapshot.table(t).unwrap().columns[0].clone();
        assert_eq!(column("a").data_type, DataType::Int64);
        // The default bound follows the type; one the user chose stays.
        assert_eq!(column("a").sequence.unwrap().max, i64::MAX);
        assert_eq!(column("b").sequence.unwrap().max, 1000);
    }

    #[test]
    fn drop_table_restrict_and_cascade() {
        let catalog = Catalog::in_memory();
        let parent = catalog.create_table(simple("parent")).unwrap();
        let c1 = catalog.create_table(child_of("c1", parent.id)).unwrap();
        catalog.create_table(child_of("c2", parent.id)).unwrap();
        let version = catalog.snapshot().version();

        assert_eq!(
            catalog.drop_tables(vec![parent.id], false).unwrap_err(),
            Error::DependentObjects {
                message: "cannot drop table parent because other objects depend on it".into(),
                detail: Some(
                    "constraint c1_fk on table c1 depends on table parent\n\
                     constraint c2_fk on table c2 depends on table parent"
                        .into()
                ),
            }
        );
        assert_eq!(catalog.snapshot().version(), version);

        // Dropping a referencing table needs no cascade.
        assert!(catalog.drop_tables(vec![c1.id], false).unwrap().is_empty());
        assert_eq!(
            catalog.drop_tables(vec![parent.id], true).unwrap(),
            ["drop cascades to constraint c2_fk on table c2"]
        );
        let snapshot = catalog.snapshot();
        assert_eq!(snapshot.version(), CatalogVersion(version.0 + 2));
        assert!(snapshot.table("parent").is_none());
        assert!(snapshot.index_by_name("parent_pkey").is_none());
        assert!(snapshot.table("c2").unwrap().foreign_keys.is_empty());
        assert_eq!(
            catalog.drop_tables(vec![parent.id], false).unwrap_err(),
            Error::UndefinedTable(parent.id.to_string())
        );
        // Names are free again; ids are not reused.
        assert_eq!(catalog.create_table(simple("parent")).unwrap().id, TableId(4));
    }

    #[test]
    fn drop_index_rules() {
        let catalog = Catalog::in_memory();
        let mut def = simple("p");
        def.indexes.push(index("p_v_key", &[1], true, false));
        def.indexes.push(index("p_v_idx", &[1], false, false));
        let p = catalog.create_table(def).unwrap();
        let pkey = p.indexes[0].id;
        catalog
            .create_table(TableDef {
                foreign_keys: vec![fk("c_fk", &[1], p.id, &[1])],
                ..simple("c")
            })
            .unwrap();

        assert_eq!(
            catalog.drop_index(pkey).unwrap_err(),
            Error::DependentObjects {
                message:
                    "cannot drop index p_pkey because constraint p_pkey on table p requires it"
                        .into(),
                detail: None,
            }
        );
        assert_eq!(
            catalog.drop_index(p.indexes[1].id).unwrap_err(),
            Error::DependentObjects {
                message: "cannot drop index p_v_key because other objects depend on it".into(),
                detail: Some("constraint c_fk on table c depends on index p_v_key".into()),
            }
        );
        catalog.drop_index(p.indexes[2].id).unwrap();
        assert!(catalog.snapshot().index_by_name("p_v_idx").is_none());
        assert!(matches!(catalog.drop_index(p.indexes[2].id), Err(Error::UndefinedObject(_))));

        // A second unique index over the same columns releases the first.
        let again = catalog.create_index(p.id, index("p_v_key2", &[1], true, false)).unwrap();
        assert_eq!(again.id, IndexId(5));
        catalog.drop_index(p.indexes[1].id).unwrap();
    }

    #[test]
    fn alter_table_operations() {
        let catalog = Catalog::in_memory();
        let t = catalog
            .create_table(TableDef { indexes: Vec::new(), hidden_pk: true, ..simple("t") })
            .unwrap();
        let mut c = column("w", DataType::Numeric(Some((10, 2))));
        c.default = Some(ColumnDefault { sql: "0".into() });
        catalog.add_column(t.id, c).unwrap();
        assert_eq!(
            catalog.add_column(t.id, column("v", DataType::Int32)).unwrap_err(),
            Error::DuplicateColumn("v".into())
        );
        assert_eq!(
            catalog.add_column(TableId(42), column("x", DataType::Int32)).unwrap_err(),
            Error::UndefinedTable("t42".into())
        );
        let table = catalog.snapshot().table("t").unwrap().clone();
        assert_eq!(table.columns[2].position, 2);
        assert_eq!(table.columns[2].default.as_ref().unwrap().sql, "0");

        let pk = catalog.add_primary_key(t.id, index("t_pkey", &[0, 2], false, false)).unwrap();
        assert!(pk.primary && pk.unique);
        let table = catalog.snapshot().table("t").unwrap().clone();
        assert!(!table.hidden_pk);
        assert!(
            table.columns[0].not_null && !table.columns[1].not_null && table.columns[2].not_null
        );
        assert_eq!(
            catalog.add_primary_key(t.id, index("t_pkey2", &[1], true, true)).unwrap_err(),
            Error::InvalidDefinition(
                "multiple primary keys for table \"t\" are not allowed".into()
            )
        );

        // A self-referencing foreign key can be added once the table exists.
        catalog.add_foreign_key(t.id, fk("t_self", &[1, 0], t.id, &[2, 0])).unwrap();
        let snapshot = catalog.snapshot();
        assert_eq!(snapshot.referencing_fks(t.id)[0].1.name, "t_self");
        assert_eq!(snapshot.version(), CatalogVersion(4));
        // Dropping a table that only references itself needs no cascade.
        assert!(catalog.drop_tables(vec![t.id], false).unwrap().is_empty());
    }

    #[test]
    fn failed_store_write_publishes_nothing() {
        let store = FailingStore::default();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        catalog.create_table(simple("a")).unwrap();
        store.fail.store(true, Ordering::Relaxed);
        assert!(matches!(catalog.create_table(simple("b")), Err(Error::Store(_))));
        assert!(matches!(catalog.drop_tables(vec![TableId(1)], false), Err(Error::Store(_))));
        let snapshot = catalog.snapshot();
        assert_eq!(snapshot.version(), CatalogVersion(1));
        assert!(snapshot.table("b").is_none() && snapshot.table("a").is_some());

        store.fail.store(false, Ordering::Relaxed);
        let b = catalog.create_table(simple("b")).unwrap();
        assert_eq!((b.id, b.indexes[0].id), (TableId(2), IndexId(2)), "no id was consumed");
    }

    #[test]
    fn reload_restores_snapshot_version_and_counters() {
        let store = MemStore::new();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        catalog.create_table(simple("a")).unwrap();
        let b = catalog.create_table(simple("b")).unwrap();
        catalog.drop_tables(vec![b.id], false).unwrap();
        let before = catalog.snapshot();
        drop(catalog);

        let catalog = Catalog::with_store(Box::new(store)).unwrap();
        let after = catalog.snapshot();
        assert_eq!(after.version(), before.version());
        assert_eq!(after.tables().collect::<Vec<_>>(), before.tables().collect::<Vec<_>>());
        let c = catalog.create_table(simple("c")).unwrap();
        assert_eq!((c.id, c.indexes[0].id), (TableId(3), IndexId(3)));
    }

    /// The keys and values match the layout table in the crate doc.
    #[test]
    fn persisted_layout_matches_the_doc() {
        let store = MemStore::new();
        let catalog = Catalog::with_store(Box::new(store.clone())).unwrap();
        let table = catalog.create_table(simple("a")).unwrap();
        let entries = store.load_all().unwrap();
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "meta/format",
                "meta/next_index_id",
                "meta/next_table_id",
                "meta/version",
                "table/0000000001"
            ]
        );
        let value = |key: &str| entries.iter().find(|(k, _)| k == key).unwrap().1.clone();
        assert_eq!(value("meta/format"), b"1");
        assert_eq!(value("meta/version"), b"1");
        assert_eq!(value("meta/next_table_id"), b"2");
        assert_eq!(value("meta/next_index_id"), b"2");
        let stored: Table = serde_json::from_slice(&value("table/0000000001")).unwrap();
        assert_eq!(stored, *table);
    }

    #[test]
    fn load_rejects_foreign_content() {
        let store = MemStore::new();
        store.write_batch(vec![("other/key".into(), b"x".to_vec())], Vec::new()).unwrap();
        assert!(matches!(Catalog::with_store(Box::new(store)), Err(Error::Store(_))));

        let store = MemStore::new();
        Catalog::with_store(Box::new(store.clone())).unwrap();
        store.write_batch(vec![(KEY_FORMAT.into(), b"2".to_vec())], Vec::new()).unwrap();
        assert!(matches!(Catalog::with_store(Box::new(store)), Err(Error::Store(_))));
    }
}
