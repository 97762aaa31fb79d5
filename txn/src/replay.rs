//! Recovery's bulk install: [`ReplayBatch`] and [`Engine::replay_bulk`].
//!
//! [`Engine::replay_install`] applies one logged write at a time: a hash probe, then (for a key
//! it replaces) a TID lock, an `ArcSwap` store, a tree remove and a tree insert, each under the
//! table's write lock. Recovery can do much better when it has already reduced the log to the
//! newest write per key (last writer wins, recovery's `replay` module): each surviving key is
//! then installed once, and keys the table does not hold yet are inserted in bulk.
//!
//! ```text
//!  partition worker 0: batch.install(table, key, row, ssn) ─┐  key in the index: updated in
//!  partition worker 1: batch.install(...)                   ─┤  place (last writer wins);
//!  ...                                                       │  else a new record, kept in
//!                                                            ▼  the batch
//!  one thread: Engine::replay_bulk(batches) ── per table: sort each batch's new records (in
//!               parallel), merge (last writer wins on equal keys), OrderedIndex::bulk_insert:
//!               an empty index is built in one pass (tree + hash on two threads), a non-empty
//!               one takes each lock once
//! ```
//!
//! The semantics are [`Engine::replay_install`]'s: after `replay_bulk` every key holds the
//! version with the largest SSN among everything installed (by either API); a delete leaves an
//! `ABSENT|UNLINKED` tombstone carrying its SSN, which [`Engine::finish_replay`] removes, and
//! secondary indexes are rebuilt there. Records are never resurrected: `UNLINKED` is terminal,
//! so a newer write to a key whose record is a tombstone gets a new record.
//!
//! **Only for recovery, before the engine serves transactions**: new records are invisible to
//! lookups until `replay_bulk` returns, and `bulk_insert` on an empty index replaces it whole.

use std::sync::Arc;

use crate::engine::{replay_one, Engine, Table};
use crate::error::Error;
use crate::index::IKey;
use crate::record::Record;
use crate::sync::Ordering;
use crate::tid::{Tid, WSSN_MASK};
use crate::TableId;
use wal::Ssn;

/// New records with their keys (sorted by key once `replay_bulk` has sorted them).
type Run = Vec<(IKey, Arc<Record>)>;

/// One table's new records in a [`ReplayBatch`].
struct NewRecords {
    table: Arc<Table>,
    /// Whether the primary index held anything when the batch first met the table (else no
    /// key can be in it: nothing but `replay_bulk` adds records while batches are filled).
    probe: bool,
    records: Run,
}

/// The writes of one recovery partition, on their way into the engine (module doc). Made by
/// [`Engine::replay_batch`], filled by one thread with [`ReplayBatch::install`], handed to
/// [`Engine::replay_bulk`] together with the other partitions' batches. `Send`.
///
/// Dropping a batch without `replay_bulk` loses its new keys (updates of existing keys were
/// applied in place at once): recovery then fails anyway.
pub struct ReplayBatch {
    engine: Engine,
    tables: Vec<NewRecords>,
    updated: u64,
}

impl Engine {
    /// A batch for one partition of replayed writes (module doc).
    pub fn replay_batch(&self) -> ReplayBatch {
        ReplayBatch { engine: self.clone(), tables: Vec::new(), updated: 0 }
    }

    /// Recovery: inserts the new records of `batches` into their tables' primary indexes, in
    /// bulk (module doc). Equal keys in several batches, or a key that entered the index since
    /// its batch looked, are resolved by last writer wins as [`Engine::replay_install`] does.
    /// Call [`Engine::finish_replay`] after the last one.
    ///
    /// Only before the engine serves transactions, and not concurrently with any other
    /// replay call for the same tables.
    pub fn replay_bulk(&self, batches: Vec<ReplayBatch>) -> Result<(), Error> {
        // Group the runs by table.
        let mut by_table: Vec<(Arc<Table>, Vec<Run>)> = Vec::new();
        for batch in batches {
            for run in batch.tables {
                match by_table.iter_mut().find(|(t, _)| Arc::ptr_eq(t, &run.table)) {
                    Some((_, runs)) => runs.push(run.records),
                    None => by_table.push((run.table, vec![run.records])),
                }
            }
        }
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        for (table, mut runs) in by_table {
            // Sort the runs in parallel (each is one partition's keys, in hash order).
            let chunk = runs.len().div_ceil(parallelism).max(1);
            std::thread::scope(|s| {
                for group in runs.chunks_mut(chunk) {
                    s.spawn(move || {
                        for run in group {
                            run.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                        }
                    });
                }
            });
            // Concatenated sorted runs: the stable sort merges them (it finds the runs).
            let mut all = runs.concat();
            drop(runs);
            if !all.windows(2).all(|w| w[0].0 <= w[1].0) {
                all.sort_by(|a, b| a.0.cmp(&b.0));
            }
            // Equal keys (the same key in two batches): keep the largest SSN.
            all.dedup_by(|later, earlier| {
                if later.0 != earlier.0 {
                    return false;
                }
                if later.1.tid.load().wssn() > earlier.1.tid.load().wssn() {
                    std::mem::swap(later, earlier);
                }
                true
            });
            let tombstones = all.iter().filter(|(_, r)| r.tid.load().is_unlinked()).count();
            if tombstones > 0 {
                table.replay_tombstones.store(true, Ordering::Relaxed);
            }
            for (key, record) in table.primary.bulk_insert(all) {
                let (tid, row) = record.read().expect("a new replayed record is unlocked");
                replay_one(&table, &key, row, Ssn(tid.wssn()))?;
            }
        }
        Ok(())
    }
}

impl ReplayBatch {
    /// Installs the write of `key` at `ssn` (`row = None` deletes), last writer wins against
    /// what the table holds: a key in the index is updated in place at once (or left alone if
    /// its version is as new or newer); a new key waits in the batch for
    /// [`Engine::replay_bulk`]. Installing one key twice in a batch, or in two batches, is
    /// allowed (the bulk merge keeps the newest) but wastes work: recovery sends each key once.
    ///
    /// Calls for one key must not run concurrently (other batches may install other keys
    /// meanwhile). [`Error::TableDropped`] if the table does not exist.
    pub fn install(
        &mut self,
        table: TableId,
        key: &[u8],
        row: Option<Vec<u8>>,
        ssn: Ssn,
    ) -> Result<(), Error> {
        assert!(ssn.0 > 0 && ssn.0 <= WSSN_MASK, "replayed ssn {ssn} out of range");
        let i = match self.tables.iter().position(|n| n.table.id == table) {
            Some(i) => i,
            None => {
                let t = self.engine.inner.table(table).ok_or(Error::TableDropped(table))?;
                let probe = t.primary.len() > 0;
                self.tables.push(NewRecords { table: t, probe, records: Vec::new() });
                self.tables.len() - 1
            }
        };
        let new = &mut self.tables[i];
        let t = &new.table;
        // An empty index (no checkpoint loaded): nothing to probe.
        if new.probe {
            if let Some(old) = t.primary.get(key) {
                let tid = old.tid.load();
                if tid.wssn() >= ssn.0 {
                    return Ok(());
                }
                if !tid.is_unlinked() {
                    // Live: update in place (a delete makes the record the tombstone).
                    old.tid.lock().map_err(|_| {
                        Error::conflict(table, "record locked during replay (same key twice?)")
                    })?;
                    let next = if row.is_some() { Tid::live(ssn) } else { Tid::deleted(ssn) };
                    if row.is_none() {
                        t.replay_tombstones.store(true, Ordering::Relaxed);
                    }
                    old.set_row_locked(row.map(Arc::new));
                    old.tid.store_unlocked(next);
                    self.updated += 1;
                    return Ok(());
                }
                // A tombstone: replaced by a new record, like `replay_install` does.
                return replay_one(t, key, row.map(Arc::new), ssn);
            }
        }
        let record = Record::replayed(key, row.map(Arc::new), ssn);
        new.records.push((record.key.clone(), record));
        Ok(())
    }

    /// New keys waiting for [`Engine::replay_bulk`].
    pub fn pending(&self) -> usize {
        self.tables.iter().map(|n| n.records.len()).sum()
    }

    /// Keys that were in the index and were updated in place.
    pub fn updated(&self) -> u64 {
        self.updated
    }
}
