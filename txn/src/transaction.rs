//! The read phase: `get`, `scan`, `insert`, `update`, `delete` into private sets.

use crate::engine::{Inner, Secondary, Table};
use crate::error::Error;
use crate::index::{is_empty_range, IKey};
use crate::record::Record;
use crate::tid::Tid;
use crate::{IndexId, Key, Row, TableId};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

/// What a write-set entry does at commit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WriteKind {
    /// A new key: a placeholder is published at lock time.
    Insert,
    /// A new row for an existing record.
    Update,
    /// Removes an existing record.
    Delete,
    /// `SELECT … FOR UPDATE`: locked and validated, nothing installed or logged.
    LockOnly,
    /// An update whose new row is computed at commit from the row current then
    /// ([`Transaction::update_deferred`]); becomes an `Update` in the lock phase.
    Deferred,
}

/// The function of a deferred update ([`Transaction::update_deferred`]): the new row from the
/// current one, or why it no longer applies.
pub type RowFn<E> = Arc<dyn Fn(&[u8]) -> Result<Vec<u8>, E> + Send + Sync>;

/// A deferred update's function as the write set keeps it.
pub(crate) type DeferredFn = RowFn<String>;

/// Applies this transaction's deferred update of a row of `table` to `row` as it is now; an
/// update that no longer applies to it (its function fails) is a serialization failure.
pub(crate) fn apply_deferred(f: &DeferredFn, table: TableId, row: &[u8]) -> Result<Vec<u8>, Error> {
    f(row).map_err(|_| Error::conflict(table, "deferred update no longer applies"))
}

#[derive(Clone)]
pub(crate) struct WriteEntry {
    pub(crate) kind: WriteKind,
    /// The existing record (all kinds but `Insert`).
    pub(crate) record: Option<Arc<Record>>,
    /// The new row (`Insert`, `Update`).
    pub(crate) row: Option<Row>,
    /// The function of a `Deferred` entry.
    pub(crate) deferred: Option<DeferredFn>,
    /// A `Deferred` entry's function applied to the version with this TID (at the statement):
    /// the commit reuses it when the row has not changed since.
    pub(crate) computed: Option<(Tid, Row)>,
}

impl WriteEntry {
    fn new(kind: WriteKind, record: Option<Arc<Record>>, row: Option<Row>) -> WriteEntry {
        WriteEntry { kind, record, row, deferred: None, computed: None }
    }
}

/// The writes of one table, in key order (the global lock order is (table id, key)).
#[derive(Clone)]
pub(crate) struct TableWrites {
    pub(crate) table: Arc<Table>,
    pub(crate) entries: BTreeMap<Key, WriteEntry>,
    /// The unique-index keys of this transaction's own new rows: (index, key) → primary key.
    unique: HashMap<(IndexId, Vec<u8>), Key>,
    /// [`Transaction::delete_all`] deleted every committed row this transaction sees, under a
    /// scan of the whole table that validates at commit: an insert needs no committed read.
    emptied: bool,
}

/// The part of a row a reader used ([`Transaction::get_projected`]): bytes compared for
/// equality, e.g. the encoded values of some columns.
pub type Projection = Arc<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

/// A point read that found a row.
pub(crate) struct ReadEntry {
    pub(crate) table: TableId,
    pub(crate) record: Arc<Record>,
    pub(crate) tid: Tid,
    /// For a projected read: the projection and the row as read. If this transaction holds the
    /// record locked at commit, the read validates when the projection of the row then equals
    /// the projection of this one, even if the TID moved. The projections are computed only
    /// then: a read whose TID did not move validates without them.
    pub(crate) projected: Option<(Projection, Row)>,
}

/// Phantom protection: what a scan (or a point-get miss) covered.
pub(crate) enum ScanEntry {
    /// `get` found no row at `key` in the primary index (a scan of `[key, key]`).
    Miss { table: usize, key: IKey },
    /// Entries of `index` (primary if `None`) in `[lo, hi]` (exact bounds), ascending, with the
    /// TIDs seen; `UNLINKED` records excluded.
    Range {
        table: usize,
        index: Option<Arc<Secondary>>,
        lo: Bound<Key>,
        hi: Bound<Key>,
        seen: Vec<(Arc<Record>, Tid)>,
    },
}

/// A serializable transaction (Silo OCC, SSN commit timestamps; see the crate doc).
///
/// The read phase holds no locks and publishes nothing, so dropping a `Transaction` (or calling
/// [`Transaction::abort`]) simply discards it. After any method returns an error the
/// transaction may be in any state; the caller should abort it (commit would fail validation if
/// the error was a conflict).
pub struct Transaction {
    pub(crate) inner: Arc<Inner>,
    pub(crate) buffer: usize,
    /// Tables touched, in first-touch order; `ScanEntry` refers to them by position.
    pub(crate) tables: Vec<Arc<Table>>,
    pub(crate) reads: Vec<ReadEntry>,
    pub(crate) scans: Vec<ScanEntry>,
    pub(crate) writes: BTreeMap<TableId, TableWrites>,
    /// The max wssn of everything observed so far (rows read, scan entries, tombstones).
    pub(crate) base: u64,
    /// Nobody will wait for this transaction's record unasked: see
    /// [`Transaction::set_lazy_log`].
    pub(crate) lazy_log: bool,
    /// Inserted under a fresh key ([`Transaction::insert_fresh`]): never blind, like an insert
    /// that recorded its uniqueness check as a read.
    pub(crate) inserted_fresh: bool,
}

/// A transaction's writes at one point of its read phase (SQL's `SAVEPOINT`), to go back to
/// with [`Transaction::rollback_to`].
#[derive(Clone)]
pub struct Savepoint {
    writes: BTreeMap<TableId, TableWrites>,
    inserted_fresh: bool,
}

/// The result of a successful commit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CommitInfo {
    /// The commit SSN: allocated from the log for writers, `base` for read-only transactions.
    pub ssn: wal::Ssn,
    /// True if nothing was written (lock-only `FOR UPDATE` entries do not count).
    pub read_only: bool,
    /// What a writer waits on before it is acknowledged ([`wal::Log::wait_durable`]); `None`
    /// for a read-only transaction (it waits for `ssn <= CSN` with [`wal::Log::wait_csn`]).
    /// [`Transaction::commit_durable`] does the waiting.
    pub ticket: Option<wal::Ticket>,
}

/// Converts the API's prefix bounds into exact bounds on entry keys; `None` if the range is
/// empty.
fn exact_bounds(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Option<(Bound<Key>, Bound<Key>)> {
    let lo = match lo {
        Bound::Included(l) => Bound::Included(l.to_vec()),
        Bound::Excluded(l) => Bound::Included(prefix_successor(l)?),
        Bound::Unbounded => Bound::Unbounded,
    };
    let hi = match hi {
        Bound::Included(h) => prefix_successor(h).map_or(Bound::Unbounded, Bound::Excluded),
        Bound::Excluded(h) => Bound::Excluded(h.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    Some((lo, hi))
}

/// The smallest key greater than every key starting with `prefix`; `None` if there is none.
fn prefix_successor(prefix: &[u8]) -> Option<Key> {
    let mut k = prefix.to_vec();
    while let Some(last) = k.pop() {
        if last < 0xFF {
            k.push(last + 1);
            return Some(k);
        }
    }
    None
}

fn contains(lo: &Bound<Key>, hi: &Bound<Key>, key: &[u8]) -> bool {
    let above = match lo {
        Bound::Included(l) => key >= l.as_slice(),
        Bound::Excluded(l) => key > l.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(h) => key <= h.as_slice(),
        Bound::Excluded(h) => key < h.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

pub(crate) fn as_ref(b: &Bound<Key>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Transaction {
    pub(crate) fn new(inner: Arc<Inner>, buffer: usize) -> Transaction {
        Transaction {
            inner,
            buffer,
            tables: Vec::new(),
            reads: Vec::new(),
            scans: Vec::new(),
            writes: BTreeMap::new(),
            base: 0,
            lazy_log: false,
            inserted_fresh: false,
        }
    }

    /// Says that nobody will wait for this transaction to become durable
    /// (`synchronous_commit = off`), or not before asking for it with `wal::Log::request`
    /// (the server's demand-driven group commit): its value record is filled lazily
    /// ([`wal::Reservation::lazy`]), so the logger writes it with the next record somebody
    /// waits for, or after `wal::LogOptions::lazy_flush_delay`, instead of waking up for it.
    /// Waiting for its ticket later still works (the wait asks the loggers for it).
    pub fn set_lazy_log(&mut self) {
        self.lazy_log = true;
    }

    /// The position of `id` in `self.tables`, looking it up on first touch.
    fn slot(&mut self, id: TableId) -> Result<usize, Error> {
        if let Some(i) = self.tables.iter().position(|t| t.id == id) {
            self.tables[i].check_live()?;
            return Ok(i);
        }
        let t = self.inner.table(id).ok_or(Error::TableDropped(id))?;
        t.check_live()?;
        self.tables.push(t);
        Ok(self.tables.len() - 1)
    }

    fn own(&self, table: TableId, key: &[u8]) -> Option<&WriteEntry> {
        self.writes.get(&table)?.entries.get(key)
    }

    /// Reads the committed record at `key`, recording the read (or the miss). Returns the row if
    /// one is visible; its record is then `self.reads.last()` (see [`Transaction::last_read`]).
    fn read_committed(&mut self, slot: usize, key: &[u8]) -> Result<Option<Row>, Error> {
        let t = &self.tables[slot];
        // Fast path for get-then-update: reuse the last (whole-row) read of the same key.
        if let Some(last) = self.reads.last().filter(|r| r.projected.is_none()) {
            if last.table == t.id && last.record.key.as_slice() == key {
                if let Ok((tid, Some(row))) = last.record.read() {
                    if tid == last.tid {
                        return Ok(Some(row));
                    }
                }
            }
        }
        let Some(record) = t.primary.get(key) else {
            self.scans.push(ScanEntry::Miss { table: slot, key: IKey::new(key) });
            return Ok(None);
        };
        let (tid, row) =
            record.read().map_err(|()| Error::conflict(t.id, "record stayed locked"))?;
        self.base = self.base.max(tid.wssn());
        match row {
            Some(row) if !tid.is_absent() => {
                if self.reads.capacity() == 0 {
                    self.reads.reserve(8);
                }
                self.reads.push(ReadEntry { table: t.id, record, tid, projected: None });
                Ok(Some(row))
            }
            _ => {
                self.scans.push(ScanEntry::Miss { table: slot, key: IKey::new(key) });
                Ok(None)
            }
        }
    }

    /// The record of the row [`Transaction::read_committed`] just returned.
    fn last_read(&self) -> Arc<Record> {
        self.reads.last().expect("read_committed recorded the read").record.clone()
    }

    /// The row at primary key `key`, or `None`. Sees this transaction's own writes. A miss is
    /// recorded for phantom protection (a later insert of `key` by another transaction makes
    /// this one fail at commit).
    pub fn get(&mut self, table: TableId, key: &[u8]) -> Result<Option<Row>, Error> {
        let slot = self.slot(table)?;
        if let Some(e) = self.own(table, key) {
            match e.kind {
                WriteKind::Insert | WriteKind::Update => return Ok(e.row.clone()),
                WriteKind::Delete => return Ok(None),
                WriteKind::Deferred => return self.materialize(slot, key).map(Some),
                WriteKind::LockOnly => {}
            }
        }
        self.read_committed(slot, key)
    }

    /// Like [`Transaction::get`], and also locks the row at commit (`SELECT … FOR UPDATE`): the
    /// row must be unchanged then, nothing is logged for it.
    pub fn get_for_update(&mut self, table: TableId, key: &[u8]) -> Result<Option<Row>, Error> {
        let slot = self.slot(table)?;
        if let Some(e) = self.own(table, key) {
            match e.kind {
                WriteKind::Insert | WriteKind::Update => return Ok(e.row.clone()),
                WriteKind::Delete => return Ok(None),
                WriteKind::Deferred => return self.materialize(slot, key).map(Some),
                WriteKind::LockOnly => {}
            }
        }
        let Some(row) = self.read_committed(slot, key)? else { return Ok(None) };
        let record = self.last_read();
        self.table_writes(slot).entries.entry(key.to_vec()).or_insert(WriteEntry::new(
            WriteKind::LockOnly,
            Some(record),
            None,
        ));
        Ok(Some(row))
    }

    fn table_writes(&mut self, slot: usize) -> &mut TableWrites {
        let t = &self.tables[slot];
        self.writes.entry(t.id).or_insert_with(|| TableWrites {
            table: t.clone(),
            entries: BTreeMap::new(),
            unique: HashMap::new(),
            emptied: false,
        })
    }

    /// Checks the unique secondary indexes for a new row version of `pk`; returns the keys to
    /// register as this transaction's own.
    fn check_unique(
        &mut self,
        slot: usize,
        pk: &[u8],
        row: &[u8],
    ) -> Result<Vec<(IndexId, Vec<u8>)>, Error> {
        let t = self.tables[slot].clone();
        let secondaries = t.secondaries.load();
        let mut keys = Vec::new();
        for s in secondaries.iter() {
            let Some(key) = s.unique_key(row) else { continue };
            let id = s.spec.id;
            let violation = Error::UniqueViolation { table: t.id, index: Some(id) };
            let own = self.writes.get(&t.id);
            if let Some(holder) = own.and_then(|w| w.unique.get(&(id, key.clone()))) {
                if holder.as_slice() != pk {
                    return Err(violation);
                }
            }
            if let Some(record) = s.index.get(&key) {
                let (tid, _) =
                    record.read().map_err(|()| Error::conflict(t.id, "record stayed locked"))?;
                let overridden = own
                    .and_then(|w| w.entries.get(record.key.as_slice()))
                    .is_some_and(|e| matches!(e.kind, WriteKind::Update | WriteKind::Delete));
                if !tid.is_absent() && record.key.as_slice() != pk && !overridden {
                    self.base = self.base.max(tid.wssn());
                    self.reads.push(ReadEntry { table: t.id, record, tid, projected: None });
                    return Err(violation);
                }
            }
            keys.push((id, key));
        }
        Ok(keys)
    }

    /// Forgets the unique keys of this transaction's own row version `row` of `pk`.
    fn forget_unique(&mut self, slot: usize, pk: &[u8], row: &[u8]) {
        let t = &self.tables[slot];
        let Some(w) = self.writes.get_mut(&t.id) else { return };
        if w.unique.is_empty() {
            return;
        }
        for s in t.secondaries.load().iter() {
            if let Some(key) = s.unique_key(row) {
                let k = (s.spec.id, key);
                if w.unique.get(&k).is_some_and(|holder| holder.as_slice() == pk) {
                    w.unique.remove(&k);
                }
            }
        }
    }

    fn put(&mut self, slot: usize, key: Key, entry: WriteEntry, unique: Vec<(IndexId, Vec<u8>)>) {
        let w = self.table_writes(slot);
        for k in unique {
            w.unique.insert(k, key.clone());
        }
        w.entries.insert(key, entry);
    }

    /// Inserts a row. [`Error::UniqueViolation`] (`index: None`) if a row with this primary key is
    /// visible, or (`Some(id)`) if a unique secondary key is taken by a visible row. Uniqueness
    /// is checked again at commit, where a clash is a [`Error::Conflict`].
    pub fn insert(&mut self, table: TableId, key: Key, row: Vec<u8>) -> Result<(), Error> {
        let slot = self.slot(table)?;
        let row = Row::from(row);
        let (kind, record) = match self.own(table, &key).map(|e| (e.kind, e.record.clone())) {
            Some((WriteKind::Delete, record)) => (WriteKind::Update, record),
            Some(_) => return Err(Error::UniqueViolation { table, index: None }),
            None => {
                // After `delete_all`, no committed row is visible here, and the whole-table
                // scan it recorded stands for the miss.
                let emptied = self.writes.get(&table).is_some_and(|w| w.emptied);
                if !emptied && self.read_committed(slot, &key)?.is_some() {
                    return Err(Error::UniqueViolation { table, index: None });
                }
                (WriteKind::Insert, None)
            }
        };
        let unique = self.check_unique(slot, &key, &row)?;
        self.put(slot, key, WriteEntry::new(kind, record, Some(row)), unique);
        Ok(())
    }

    /// Inserts a row under a key that was never used before: a fresh hidden row id from
    /// [`crate::Engine::next_row_id`] (the caller's promise). As [`Transaction::insert`], but
    /// without looking the key up in this transaction's writes or among the committed rows, and
    /// without recording that miss for validation: a bulk load (COPY into a table without a
    /// primary key) pays neither per row. Nothing is lost: the commit still publishes the key
    /// with an insert-if-absent (a clash would be a conflict), orders the transaction after
    /// the table's deletes, and the transaction is never blind, as if it had recorded the miss.
    /// Unique secondary keys are checked as in [`Transaction::insert`].
    pub fn insert_fresh(&mut self, table: TableId, key: Key, row: Vec<u8>) -> Result<(), Error> {
        let slot = self.slot(table)?;
        let row = Row::from(row);
        debug_assert!(self.own(table, &key).is_none(), "a fresh key is already written");
        let unique = self.check_unique(slot, &key, &row)?;
        self.inserted_fresh = true;
        self.put(slot, key, WriteEntry::new(WriteKind::Insert, None, Some(row)), unique);
        Ok(())
    }

    /// Replaces the row at `key`, which must be visible to this transaction (the caller read
    /// it). The primary key cannot change (that is a delete and an insert). Unique secondary
    /// keys are checked as in [`Transaction::insert`]. [`Error::NotFound`] if this transaction
    /// deleted the key; [`Error::Conflict`] if the committed row is gone.
    pub fn update(&mut self, table: TableId, key: &[u8], row: Vec<u8>) -> Result<(), Error> {
        let slot = self.slot(table)?;
        let row = Row::from(row);
        if self.own(table, key).is_some_and(|e| e.kind == WriteKind::Deferred) {
            self.materialize(slot, key)?;
        }
        let (kind, record) = match self.own(table, key) {
            Some(e) => match e.kind {
                WriteKind::Delete => return Err(Error::NotFound { table }),
                WriteKind::Insert => (WriteKind::Insert, None),
                WriteKind::Update | WriteKind::LockOnly => (WriteKind::Update, e.record.clone()),
                WriteKind::Deferred => unreachable!("materialized above"),
            },
            None => match self.read_committed(slot, key)? {
                Some(_) => (WriteKind::Update, Some(self.last_read())),
                None => return Err(Error::conflict(table, "updated row is gone")),
            },
        };
        let unique = self.check_unique(slot, key, &row)?;
        if let Some(old) = self.own(table, key).and_then(|e| e.row.clone()) {
            self.forget_unique(slot, key, &old);
        }
        self.put(slot, key.to_vec(), WriteEntry::new(kind, record, Some(row)), unique);
        Ok(())
    }

    /// Updates the row at `key` without reading it now: `f` computes the new row from the row
    /// that is current when this transaction commits, in the lock phase, with the record
    /// locked (`UPDATE t SET c = c + 1 WHERE pk = $1` on a hot row then never fails validation
    /// because another transaction updated the row first; the two commute). The transaction
    /// depends on the version `f` reads exactly as on a read: its SSN exceeds that version's,
    /// and its record is never blind.
    ///
    /// `f` must be a pure function of the row (the caller's business: no reads of other rows)
    /// and must not change the primary key or any secondary index key. It is called once now,
    /// on the row committed now, so that an error the statement would raise is raised by the
    /// statement (`Ok(Err(e))`, nothing recorded); at commit, an error means the update no
    /// longer applies to the row as it is then, and the commit fails with [`Error::Conflict`].
    ///
    /// Returns `Ok(Ok(false))`, recording nothing, where it does not defer: no committed row at
    /// `key` (the caller's ordinary path then records the miss), or this transaction already
    /// wrote or locked `key` (it has read the row; the ordinary path applies). A second deferred
    /// update of the same key composes with the first. A later read of the key in this
    /// transaction (`get`, `get_for_update`, `update`, a `scan` of the table) first reads the
    /// current row and applies `f` ("materializes" it): from then on it is an ordinary read and
    /// update.
    pub fn update_deferred<E: std::fmt::Display + 'static>(
        &mut self,
        table: TableId,
        key: &[u8],
        f: RowFn<E>,
    ) -> Result<Result<bool, E>, Error> {
        let slot = self.slot(table)?;
        let earlier = match self.own(table, key) {
            Some(e) if e.kind == WriteKind::Deferred => e.deferred.clone(),
            // `SELECT … FOR UPDATE` read the row (and validates that read); the deferred update
            // takes over its lock.
            Some(e) if e.kind == WriteKind::LockOnly => None,
            Some(_) => return Ok(Ok(false)),
            None => None,
        };
        let t = &self.tables[slot];
        let Some(record) = t.primary.get(key) else { return Ok(Ok(false)) };
        let (tid, row) =
            record.read().map_err(|()| Error::conflict(t.id, "record stayed locked"))?;
        let Some(current) = row.filter(|_| !tid.is_absent()) else { return Ok(Ok(false)) };
        // Not a read (nothing to validate), but the caller reports that the row exists: results
        // shown before commit wait until `read_ssn()` is durable, so it covers this version.
        self.base = self.base.max(tid.wssn());
        // The statement's own check, on the row committed now (after the earlier deferred
        // update of the same key, if any).
        let earlier_row =
            earlier.as_ref().map(|g| apply_deferred(g, table, &current)).transpose()?;
        let computed = match f(earlier_row.as_deref().unwrap_or(&current)) {
            Ok(row) => Row::from(row),
            Err(e) => return Ok(Err(e)),
        };
        let f: DeferredFn = match earlier {
            Some(g) => Arc::new(move |row: &[u8]| f(&g(row)?).map_err(|e| e.to_string())),
            None => Arc::new(move |row: &[u8]| f(row).map_err(|e| e.to_string())),
        };
        let mut entry = WriteEntry::new(WriteKind::Deferred, Some(record), None);
        entry.deferred = Some(f);
        entry.computed = Some((tid, computed));
        self.put(slot, key.to_vec(), entry, Vec::new());
        Ok(Ok(true))
    }

    /// Like [`Transaction::get`] (or [`Transaction::get_for_update`] when `for_update`), for a
    /// caller that uses only what `proj` extracts from the row (some of its columns). The read
    /// is recorded with the projection: if this transaction holds the record locked at commit
    /// (it updates the row, or read it `for_update`), the read validates as long as the
    /// projection of the row then equals what it was, even if other columns changed (value
    /// validation under our own lock: the row cannot change before we install). Otherwise it
    /// validates like any read (TID unchanged).
    ///
    /// A deferred update of `key` by this transaction stays deferred: the row returned is the
    /// update applied to the committed row, and it is applied again at commit to the row then
    /// (the projection of the committed row must be unchanged, so whatever the caller used of
    /// the returned row is what commits, unless it used a column the update changes and
    /// another transaction changed it meanwhile, which fails validation).
    pub fn get_projected(
        &mut self,
        table: TableId,
        key: &[u8],
        for_update: bool,
        proj: Projection,
    ) -> Result<Option<Row>, Error> {
        let slot = self.slot(table)?;
        let deferred = match self.own(table, key) {
            Some(e) => match e.kind {
                WriteKind::Insert | WriteKind::Update => return Ok(e.row.clone()),
                WriteKind::Delete => return Ok(None),
                WriteKind::Deferred => Some((
                    e.deferred.clone().expect("a deferred entry has its function"),
                    e.record.clone().expect("a deferred entry has its record"),
                )),
                WriteKind::LockOnly => None,
            },
            None => None,
        };
        let t = &self.tables[slot];
        let record = match &deferred {
            Some((_, record)) => record.clone(),
            None => match t.primary.get(key) {
                Some(record) => record,
                None => {
                    self.scans.push(ScanEntry::Miss { table: slot, key: IKey::new(key) });
                    return Ok(None);
                }
            },
        };
        let (tid, row) =
            record.read().map_err(|()| Error::conflict(t.id, "record stayed locked"))?;
        self.base = self.base.max(tid.wssn());
        let Some(row) = row.filter(|_| !tid.is_absent()) else {
            if deferred.is_some() {
                return Err(Error::conflict(table, "updated row is gone"));
            }
            self.scans.push(ScanEntry::Miss { table: slot, key: IKey::new(key) });
            return Ok(None);
        };
        let read =
            ReadEntry { table, record: record.clone(), tid, projected: Some((proj, row.clone())) };
        self.reads.push(read);
        if let Some((f, _)) = deferred {
            return Ok(Some(Row::from(apply_deferred(&f, table, &row)?)));
        }
        if for_update {
            self.table_writes(slot).entries.entry(key.to_vec()).or_insert(WriteEntry::new(
                WriteKind::LockOnly,
                Some(record),
                None,
            ));
        }
        Ok(Some(row))
    }

    /// Turns this transaction's deferred update of `key` into an ordinary read of the current
    /// row and update with the function applied; returns the new row.
    fn materialize(&mut self, slot: usize, key: &[u8]) -> Result<Row, Error> {
        let table = self.tables[slot].id;
        let entry = self
            .writes
            .get_mut(&table)
            .and_then(|w| w.entries.remove(key))
            .expect("materialize: a deferred entry");
        let f = entry.deferred.expect("a deferred entry has its function");
        let Some(old) = self.read_committed(slot, key)? else {
            return Err(Error::conflict(table, "updated row is gone"));
        };
        let record = self.last_read();
        let new = Row::from(apply_deferred(&f, table, &old)?);
        let entry = WriteEntry::new(WriteKind::Update, Some(record), Some(new.clone()));
        self.put(slot, key.to_vec(), entry, Vec::new());
        Ok(new)
    }

    /// Materializes every deferred update of the table in `slot` (before a scan over it).
    fn materialize_all(&mut self, slot: usize) -> Result<(), Error> {
        let table = self.tables[slot].id;
        let Some(w) = self.writes.get(&table) else { return Ok(()) };
        let keys: Vec<Key> = w
            .entries
            .iter()
            .filter(|(_, e)| e.kind == WriteKind::Deferred)
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.materialize(slot, &key)?;
        }
        Ok(())
    }

    /// Deletes the row at `key`, which must be visible to this transaction. Errors as
    /// [`Transaction::update`].
    pub fn delete(&mut self, table: TableId, key: &[u8]) -> Result<(), Error> {
        let slot = self.slot(table)?;
        let own = self.own(table, key).map(|e| (e.kind, e.record.clone(), e.row.clone()));
        if let Some((_, _, Some(old))) = &own {
            self.forget_unique(slot, key, old);
        }
        match own {
            Some((WriteKind::Delete, ..)) => Err(Error::NotFound { table }),
            Some((WriteKind::Insert, ..)) => {
                self.table_writes(slot).entries.remove(key);
                Ok(())
            }
            Some((_, record, _)) => {
                let entry = WriteEntry::new(WriteKind::Delete, record, None);
                self.put(slot, key.to_vec(), entry, Vec::new());
                Ok(())
            }
            None => match self.read_committed(slot, key)? {
                Some(_) => {
                    let record = Some(self.last_read());
                    let entry = WriteEntry::new(WriteKind::Delete, record, None);
                    self.put(slot, key.to_vec(), entry, Vec::new());
                    Ok(())
                }
                None => Err(Error::conflict(table, "deleted row is gone")),
            },
        }
    }

    /// Deletes every row of `table` this transaction sees (TRUNCATE; ALTER TABLE … ADD
    /// PRIMARY KEY re-inserts what it returns under new keys) and returns their rows, in key
    /// order. One scan of the primary index does the reading: its entry, validated at commit,
    /// holds every record deleted here with its TID and covers the whole table against
    /// phantoms, so no delete reads its key again, and later inserts into the table need no
    /// committed read either ([`Transaction::insert`]): each finds its key among this
    /// transaction's deletes or absent. Rows this transaction wrote itself go as
    /// [`Transaction::delete`] takes them.
    pub fn delete_all(&mut self, table: TableId) -> Result<Vec<Row>, Error> {
        let all = Bound::Unbounded;
        let mut rows = Vec::new();
        self.scan(table, None, all, all, false, &mut |k, r| {
            rows.push((k.to_vec(), r.clone()));
            true
        })?;
        let slot = self.slot(table)?;
        // The scan's entry, taken out while the deletes go into the write set (and put back):
        // the committed records it passed, in key order; every committed row it returned is
        // among them.
        let entry = self.scans.pop().expect("a scan of the whole table records its entry");
        let ScanEntry::Range { seen, .. } = &entry else {
            unreachable!("a range scan records a range entry")
        };
        let mut next = 0;
        let mut out = Vec::with_capacity(rows.len());
        for (key, row) in rows {
            if self.own(table, &key).is_some() {
                self.delete(table, &key)?;
            } else {
                while seen[next].0.key.as_slice() != key.as_slice() {
                    next += 1;
                }
                let entry = WriteEntry::new(WriteKind::Delete, Some(seen[next].0.clone()), None);
                self.put(slot, key, entry, Vec::new());
            }
            out.push(row);
        }
        self.scans.push(entry);
        self.table_writes(slot).emptied = true;
        Ok(out)
    }

    /// The write set as it is now (SQL's `SAVEPOINT`). A copy: it costs as much as the writes
    /// so far.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint { writes: self.writes.clone(), inserted_fresh: self.inserted_fresh }
    }

    /// Forgets every write since `savepoint` (SQL's `ROLLBACK TO SAVEPOINT`), also after an
    /// error left the write set half-done. What was read since stays in the read and scan sets
    /// and is validated at commit: the client saw those rows, and what it does next may
    /// depend on them (PostgreSQL's SSI keeps a rolled-back subtransaction's reads too).
    pub fn rollback_to(&mut self, savepoint: &Savepoint) {
        self.writes = savepoint.writes.clone();
        self.inserted_fresh = savepoint.inserted_fresh;
    }

    /// Whether the transaction has inserted, updated or deleted anything (lock-only entries from
    /// [`Transaction::get_for_update`] do not count).
    pub fn has_writes(&self) -> bool {
        self.writes.values().any(|w| w.entries.values().any(|e| e.kind != WriteKind::LockOnly))
    }

    /// The largest SSN among the versions this transaction has read so far (its `base` before
    /// commit): results computed from those reads may be released once this SSN is `<= CSN`.
    pub fn read_ssn(&self) -> wal::Ssn {
        wal::Ssn(self.base)
    }

    /// Ordered scan over the primary index (`index == None`) or a secondary index.
    ///
    /// Bounds are *prefix* bounds on entry keys: `hi = Included(p)` includes every entry that
    /// starts with `p`, `lo = Excluded(p)` excludes every entry that starts with `p`; `Included`
    /// low and `Excluded` high bounds compare bytewise. So `lo = hi = Included(k)` is "all
    /// entries with key prefix `k`": on a secondary index, every row whose index key is `k`; on
    /// the primary index, a key-prefix scan (a full key, prefix-free encoded, matches itself).
    ///
    /// Calls `f(primary_key, row)` for each visible row in index order (descending if
    /// `reverse`), merging this transaction's own inserts, updates and deletes; `f` returns false
    /// to stop. The range covered (up to where `f` stopped) is recorded for phantom protection.
    pub fn scan(
        &mut self,
        table: TableId,
        index: Option<IndexId>,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        f: &mut dyn FnMut(&[u8], &Row) -> bool,
    ) -> Result<(), Error> {
        let slot = self.slot(table)?;
        // Own rows are merged into the scan: a deferred update's row must exist first.
        self.materialize_all(slot)?;
        let t = self.tables[slot].clone();
        let secondary = index.map(|id| t.secondary(id)).transpose()?;
        let Some((lo, hi)) = exact_bounds(lo, hi) else { return Ok(()) };
        if is_empty_range(as_ref(&lo), as_ref(&hi)) {
            return Ok(());
        }
        let own = self.writes.get(&table);

        // This transaction's own row versions in range, as (entry key, primary key, row).
        let mut overlay: Vec<(Key, &[u8], &Row)> = Vec::new();
        if let Some(w) = own {
            for (pk, e) in &w.entries {
                let Some(row) = &e.row else { continue };
                let ek = match &secondary {
                    None => pk.clone(),
                    Some(s) => s.entry_key(row, pk),
                };
                if contains(&lo, &hi, &ek) {
                    overlay.push((ek, pk, row));
                }
            }
            overlay.sort_by(|a, b| a.0.cmp(&b.0));
            if reverse {
                overlay.reverse();
            }
        }
        let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };

        let mut seen = Vec::new();
        let mut stopped: Option<Key> = None;
        let mut failed = false;
        let mut base = self.base;
        let mut next = 0;
        let idx = secondary.as_ref().map_or(&*t.primary, |s| &*s.index);
        idx.range(as_ref(&lo), as_ref(&hi), reverse, &mut |ek, record| {
            let Ok((tid, row)) = record.read() else {
                failed = true;
                return false;
            };
            base = base.max(tid.wssn());
            if tid.is_unlinked() {
                return true;
            }
            while next < overlay.len() && before(&overlay[next].0, ek) {
                let (oek, pk, row) = &overlay[next];
                next += 1;
                if !f(pk, row) {
                    stopped = Some(oek.clone());
                    return false;
                }
            }
            seen.push((record.clone(), tid));
            let overridden = own
                .and_then(|w| w.entries.get(record.key.as_slice()))
                .is_some_and(|e| e.kind != WriteKind::LockOnly);
            let Some(row) = row.filter(|_| !overridden && !tid.is_absent()) else { return true };
            if !f(&record.key, &row) {
                stopped = Some(ek.to_vec());
                return false;
            }
            true
        });
        if failed {
            return Err(Error::conflict(table, "record stayed locked"));
        }
        if stopped.is_none() {
            for (oek, pk, row) in &overlay[next..] {
                if !f(pk, row) {
                    stopped = Some(oek.clone());
                    break;
                }
            }
        }
        let (lo, hi) = match stopped {
            Some(k) if reverse => (Bound::Included(k), hi),
            Some(k) => (lo, Bound::Included(k)),
            None => (lo, hi),
        };
        if reverse {
            seen.reverse();
        }
        self.base = base;
        self.scans.push(ScanEntry::Range { table: slot, index: secondary, lo, hi, seen });
        Ok(())
    }

    /// Aborts: discards the private sets. Equivalent to dropping the transaction.
    pub fn abort(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
        let (lo, hi) = exact_bounds(Bound::Excluded(b"a"), Bound::Included(b"c")).unwrap();
        assert_eq!(lo, Bound::Included(b"b".to_vec()));
        assert_eq!(hi, Bound::Excluded(b"d".to_vec()));
        assert!(exact_bounds(Bound::Excluded(&[0xFF]), Bound::Unbounded).is_none());
    }
}
