//! The engine: tables, their indexes, and DDL.

use crate::checkpoint::CheckpointState;
use crate::error::Error;
use crate::index::{new_primary_index, new_secondary_index, Insert, OrderedIndex};
use crate::record::Record;
use crate::sync::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use crate::tid::Tid;
use crate::transaction::Transaction;
use crate::Row;
use crate::{IndexId, TableId};
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

/// Secondary index definition given by the SQL layer.
///
/// `key_of(row)` returns the index key bytes of a row (memcmp-ordered, and prefix-free per
/// column, like the primary key encoding) and whether any key column is NULL. NULLs never
/// conflict in unique indexes, as in PostgreSQL.
///
/// Entry keys: non-unique indexes store `key ++ primary key`; unique ones store `key` alone,
/// unless it has a NULL (then `key ++ primary key`).
#[derive(Clone)]
pub struct IndexSpec {
    /// The index id, unique within its table.
    pub id: IndexId,
    /// Whether two visible rows may not share a non-NULL key.
    pub unique: bool,
    /// Extracts `(key, has_null)` from a row. Must be deterministic.
    #[allow(clippy::type_complexity)]
    pub key_of: Arc<dyn Fn(&[u8]) -> (Vec<u8>, bool) + Send + Sync>,
}

impl fmt::Debug for IndexSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexSpec").field("id", &self.id).field("unique", &self.unique).finish()
    }
}

/// A secondary index: its spec and its entries.
pub(crate) struct Secondary {
    pub(crate) spec: IndexSpec,
    pub(crate) index: Box<dyn OrderedIndex>,
}

impl Secondary {
    /// The entry key of `row` (primary key `pk`) in this index.
    pub(crate) fn entry_key(&self, row: &[u8], pk: &[u8]) -> Vec<u8> {
        let (mut key, has_null) = (self.spec.key_of)(row);
        if !self.spec.unique || has_null {
            key.extend_from_slice(pk);
        }
        key
    }

    /// The key that must be unique, if this index is unique and the key has no NULL.
    pub(crate) fn unique_key(&self, row: &[u8]) -> Option<Vec<u8>> {
        if !self.spec.unique {
            return None;
        }
        let (key, has_null) = (self.spec.key_of)(row);
        (!has_null).then_some(key)
    }
}

/// [`Table::state`]: the table is in use.
const LIVE: u8 = 0;
/// [`Table::state`]: the table was dropped. Once set, never unset.
const DROPPED: u8 = 1;
/// [`Table::state`]: the table was truncated and replaced by a fresh one. Once set, never unset.
const TRUNCATED: u8 = 2;

/// A table: primary index, secondary indexes, and its watermarks.
pub(crate) struct Table {
    pub(crate) id: TableId,
    pub(crate) primary: Box<dyn OrderedIndex>,
    pub(crate) secondaries: ArcSwap<Vec<Arc<Secondary>>>,
    state: AtomicU8,
    next_row_id: AtomicU64,
    /// The largest SSN of a committed delete in this table. Inserters include it in their base,
    /// so that re-inserting a deleted key takes a larger SSN than the delete even when the
    /// deleted record has already left the index (recovery replays last-writer-wins per key).
    pub(crate) delete_ssn: AtomicU64,
    /// DESIGN.md §4: the largest SSN of a command-logged transaction that read the table. Nothing
    /// raises it yet; writers already include it in their base.
    pub(crate) cmd_read_ssn: AtomicU64,
    /// Recovery: set when replay may have left a delete tombstone in the primary index, so
    /// that [`Engine::finish_replay`] looks for them only then.
    pub(crate) replay_tombstones: AtomicBool,
}

impl Table {
    fn new(id: TableId, specs: Vec<IndexSpec>, next_row_id: u64, delete_ssn: u64) -> Table {
        let secondaries = specs
            .into_iter()
            .map(|spec| Arc::new(Secondary { spec, index: new_secondary_index() }))
            .collect();
        Table {
            id,
            primary: new_primary_index(),
            secondaries: ArcSwap::from_pointee(secondaries),
            state: AtomicU8::new(LIVE),
            next_row_id: AtomicU64::new(next_row_id),
            delete_ssn: AtomicU64::new(delete_ssn),
            cmd_read_ssn: AtomicU64::new(0),
            replay_tombstones: AtomicBool::new(false),
        }
    }

    /// Ok if the table is live; the error a transaction touching it gets otherwise.
    pub(crate) fn check_live(&self) -> Result<(), Error> {
        match self.state.load(Ordering::Acquire) {
            LIVE => Ok(()),
            DROPPED => Err(Error::TableDropped(self.id)),
            _ => Err(Error::conflict(self.id, "table truncated concurrently")),
        }
    }

    pub(crate) fn secondary(&self, index: IndexId) -> Result<Arc<Secondary>, Error> {
        self.secondaries
            .load()
            .iter()
            .find(|s| s.spec.id == index)
            .cloned()
            .ok_or(Error::NoSuchIndex { table: self.id, index })
    }
}

/// [`Engine::replay_install`] of one write into `t`, with an owned row: last writer wins by
/// SSN; a replaced live record is retired (`UNLINKED`) and leaves the index, and the new
/// record (a tombstone if `row` is `None`) takes its place.
pub(crate) fn replay_one(
    t: &Table,
    key: &[u8],
    row: Option<Row>,
    ssn: wal::Ssn,
) -> Result<(), Error> {
    if row.is_none() {
        t.replay_tombstones.store(true, Ordering::Relaxed);
    }
    let new = Record::replayed(key, row, ssn);
    loop {
        if let Some(old) = t.primary.get(key) {
            let tid = old.tid.load();
            if tid.wssn() >= ssn.0 {
                return Ok(());
            }
            if !tid.is_unlinked() {
                // Retire the old version as records leave indexes normally (UNLINKED).
                old.tid.lock().map_err(|_| {
                    Error::conflict(t.id, "record locked during replay (same key twice?)")
                })?;
                old.set_row_locked(None);
                old.tid.store_unlocked(Tid::deleted(ssn));
            }
            t.primary.remove(key, &old);
        }
        if let Insert::Inserted { .. } = t.primary.insert_if_absent(key, &new) {
            return Ok(());
        }
    }
}

/// A secondary index of `spec` over the committed rows of `t`. [`Error::UniqueViolation`] if
/// the index is unique and two rows share a non-NULL key.
fn build_secondary(t: &Table, spec: IndexSpec) -> Result<Secondary, Error> {
    let table = t.id;
    let secondary = Secondary { spec, index: new_secondary_index() };
    let mut result = Ok(());
    t.primary.range(Bound::Unbounded, Bound::Unbounded, false, &mut |_, rec| {
        let Ok((tid, row)) = rec.read() else {
            result = Err(Error::conflict(table, "record locked during index build"));
            return false;
        };
        let Some(row) = row.filter(|_| !tid.is_absent()) else { return true };
        let key = secondary.entry_key(&row, &rec.key);
        match secondary.index.insert_if_absent(&key, rec) {
            Insert::Inserted { .. } | Insert::Present => true,
            Insert::Exists => {
                result = Err(Error::UniqueViolation { table, index: Some(secondary.spec.id) });
                false
            }
        }
    });
    result.map(|()| secondary)
}

pub(crate) struct Inner {
    pub(crate) log: Arc<wal::Log>,
    /// Copy-on-write map: readers never lock; DDL replaces it under `ddl`.
    pub(crate) tables: ArcSwap<HashMap<TableId, Arc<Table>>>,
    ddl: Mutex<()>,
    /// The install gate and the active checkpoint's copy-on-write state (module `checkpoint`).
    pub(crate) checkpoint: CheckpointState,
}

/// Frees a table that left the engine (dropped, replaced, truncated) on a thread of its own: its
/// rows and indexes take ~0.6 s per million rows to free, which DROP TABLE would otherwise wait
/// for. Only the last reference frees anything (a transaction may still hold the table); if no
/// thread can be started, it is freed here.
fn retire(old: Arc<Table>) {
    if Arc::strong_count(&old) > 1 || old.primary.len() < RETIRE_INLINE_BELOW {
        return;
    }
    let _ = std::thread::Builder::new().name("aspen-reclaim".into()).spawn(move || drop(old));
}

/// Tables with fewer rows are freed by whoever drops the last reference (a thread costs more).
const RETIRE_INLINE_BELOW: usize = 10_000;

impl Inner {
    pub(crate) fn table(&self, id: TableId) -> Option<Arc<Table>> {
        self.tables.load().get(&id).cloned()
    }
}

/// The transaction engine: all tables and indexes, shared by all sessions. `Send + Sync`, cheap
/// to clone (an `Arc`).
///
/// DDL (`create_*`, `drop_*`, `truncate`) is not transactional. It takes effect at once;
/// transactions that touched a dropped or truncated table fail ([`Error::TableDropped`] or
/// [`Error::Conflict`]). `create_index` and `drop_index` must not run while transactions write the
/// table (the SQL layer serializes DDL against DML on the table).
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl Engine {
    /// An engine with no tables that allocates SSNs from `log`.
    pub fn new(log: Arc<wal::Log>) -> Engine {
        let checkpoint = CheckpointState::new();
        Engine {
            inner: Arc::new(Inner {
                log,
                tables: ArcSwap::from_pointee(HashMap::new()),
                ddl: Mutex::new(()),
                checkpoint,
            }),
        }
    }

    /// The log this engine allocates SSNs from.
    pub fn log(&self) -> &Arc<wal::Log> {
        &self.inner.log
    }

    fn replace_table(&self, id: TableId, table: Option<Table>) -> Option<Arc<Table>> {
        let mut map = HashMap::clone(&self.inner.tables.load());
        let old = match table {
            Some(t) => map.insert(id, Arc::new(t)),
            None => map.remove(&id),
        };
        self.inner.tables.store(Arc::new(map));
        old
    }

    /// Creates an empty table (replacing any table with that id, as if dropped first).
    pub fn create_table(&self, table: TableId, indexes: Vec<IndexSpec>) {
        let _ddl = self.inner.ddl.lock();
        if let Some(old) = self.replace_table(table, Some(Table::new(table, indexes, 1, 0))) {
            old.state.store(DROPPED, Ordering::Release);
            retire(old);
        }
    }

    /// Drops a table. Transactions that touched it fail with [`Error::TableDropped`].
    pub fn drop_table(&self, table: TableId) {
        let _ddl = self.inner.ddl.lock();
        if let Some(old) = self.replace_table(table, None) {
            old.state.store(DROPPED, Ordering::Release);
            retire(old);
        }
    }

    /// Empties a table, keeping its indexes and its row-id counter. Not transactional and
    /// **not logged**: a recovery would bring the rows back, so the SQL layer's `TRUNCATE` does
    /// not use it (it deletes every row in one logged transaction): transactions that touched the table before fail with
    /// [`Error::Conflict`]; a commit that had already validated may still install into the old
    /// table, which is as if it committed just before the truncate.
    pub fn truncate(&self, table: TableId) {
        let _ddl = self.inner.ddl.lock();
        let Some(old) = self.inner.table(table) else { return };
        old.state.store(TRUNCATED, Ordering::Release);
        let specs = old.secondaries.load().iter().map(|s| s.spec.clone()).collect();
        let fresh = Table::new(
            table,
            specs,
            old.next_row_id.load(Ordering::Relaxed),
            old.delete_ssn.load(Ordering::Acquire),
        );
        if let Some(old) = self.replace_table(table, Some(fresh)) {
            retire(old);
        }
    }

    /// Adds a secondary index, built from the rows committed so far.
    /// [`Error::UniqueViolation`] if the index is unique and two rows share a non-NULL key;
    /// [`Error::TableDropped`] if there is no such table.
    pub fn create_index(&self, table: TableId, spec: IndexSpec) -> Result<(), Error> {
        let _ddl = self.inner.ddl.lock();
        let t = self.inner.table(table).ok_or(Error::TableDropped(table))?;
        let secondary = build_secondary(&t, spec)?;
        let mut list = Vec::clone(&t.secondaries.load());
        list.retain(|s| s.spec.id != secondary.spec.id);
        list.push(Arc::new(secondary));
        t.secondaries.store(Arc::new(list));
        Ok(())
    }

    /// Recovery (DESIGN.md §5): applies one write of a value record with SSN `ssn` directly, no
    /// transaction. `row = None` deletes `key`. Last writer wins per key: if the key already
    /// holds a version or a delete with an SSN `>= ssn`, nothing happens, so records may be
    /// applied in any order.
    ///
    /// Only for recovery, before any transaction runs. Thread-safe for distinct keys (recovery
    /// partitions by (table, key)); two concurrent calls for the same key are not allowed.
    ///
    /// Only the primary index is written here. A delete leaves a tombstone record carrying its
    /// SSN in the primary index (invisible to transactions), so that an older insert applied
    /// later loses. Secondary indexes are rebuilt by [`Engine::finish_replay`], which must be
    /// called once after the last `replay_install`: maintaining them here would meet transient
    /// unique-key clashes (row A takes key x at SSN 10 while row B's x from SSN 5 is still there
    /// because B's update to y at SSN 8 has not been applied yet).
    ///
    /// For writes already reduced to the newest per key, [`Engine::replay_batch`] and
    /// [`Engine::replay_bulk`] do the same in bulk (module `replay`).
    ///
    /// [`Error::TableDropped`] if the table does not exist.
    pub fn replay_install(
        &self,
        table: TableId,
        key: &[u8],
        row: Option<&[u8]>,
        ssn: wal::Ssn,
    ) -> Result<(), Error> {
        assert!(ssn.0 > 0 && ssn.0 <= crate::tid::WSSN_MASK, "replayed ssn {ssn} out of range");
        let t = self.inner.table(table).ok_or(Error::TableDropped(table))?;
        replay_one(&t, key, row.map(Row::from), ssn)
    }

    /// Recovery: makes [`Engine::next_row_id`] of `table` return at least `v` from now on (pass
    /// the largest replayed hidden row id + 1), so hidden row ids are never reused. No-op if
    /// the table does not exist.
    pub fn set_next_row_id_at_least(&self, table: TableId, v: u64) {
        if let Some(t) = self.inner.table(table) {
            t.next_row_id.fetch_max(v, Ordering::Relaxed);
        }
    }

    /// Recovery: ends the replay. Raises every log buffer's `L.ssn` to `max_ssn`
    /// ([`wal::Log::raise_all`]) so that every SSN allocated from now on is larger than every
    /// replayed one (pass the largest SSN recovery found: at least RSNe, and at least every
    /// replayed blind record's SSN). Then, per table, drops the delete tombstones that
    /// [`Engine::replay_install`] left in the primary index and rebuilds every secondary index
    /// from the rows ([`Error::UniqueViolation`] if the replayed rows break a unique index,
    /// which a consistent log never does).
    ///
    /// Call once, after the last `replay_install` returned and before any transaction begins.
    pub fn finish_replay(&self, max_ssn: wal::Ssn) -> Result<(), Error> {
        self.inner.log.raise_all(max_ssn);
        let _ddl = self.inner.ddl.lock();
        for t in self.inner.tables.load().values() {
            if t.replay_tombstones.swap(false, Ordering::Relaxed) {
                let mut tombstones = Vec::new();
                t.primary.range_quick(Bound::Unbounded, Bound::Unbounded, &mut |_, rec| {
                    if rec.tid.load().is_unlinked() {
                        tombstones.push(rec.clone());
                    }
                    true
                });
                for rec in tombstones {
                    t.primary.remove(rec.key.as_slice(), &rec);
                }
            }
            let specs: Vec<IndexSpec> =
                t.secondaries.load().iter().map(|s| s.spec.clone()).collect();
            if specs.is_empty() {
                continue;
            }
            let mut list = Vec::with_capacity(specs.len());
            for spec in specs {
                list.push(Arc::new(build_secondary(t, spec)?));
            }
            t.secondaries.store(Arc::new(list));
        }
        Ok(())
    }

    /// Removes a secondary index (no-op if absent).
    pub fn drop_index(&self, table: TableId, index: IndexId) {
        let _ddl = self.inner.ddl.lock();
        let Some(t) = self.inner.table(table) else { return };
        let mut list = Vec::clone(&t.secondaries.load());
        list.retain(|s| s.spec.id != index);
        t.secondaries.store(Arc::new(list));
    }

    /// The next hidden row id of a table without a primary key: strictly increasing per table,
    /// starting at 1, never reused (not even after truncate). 0 if the table does not exist.
    pub fn next_row_id(&self, table: TableId) -> u64 {
        self.inner.table(table).map_or(0, |t| t.next_row_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Starts a transaction whose commit allocates its SSN from log buffer
    /// `log_buffer % n_buffers`.
    pub fn begin(&self, log_buffer: usize) -> Transaction {
        Transaction::new(self.inner.clone(), log_buffer % self.inner.log.n_buffers())
    }

    /// Approximate number of rows (counts entries being inserted or removed too).
    pub fn row_count(&self, table: TableId) -> usize {
        self.inner.table(table).map_or(0, |t| t.primary.len())
    }
}
