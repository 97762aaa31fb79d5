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
    /// New records the first table's run is made room for ([`ReplayBatch::reserve`]).
    expected: usize,
}

impl Engine {
    /// A batch for one partition of replayed writes (module doc).
    pub fn replay_batch(&self) -> ReplayBatch {
        ReplayBatch { engine: self.clone(), tables: Vec::new(), updated: 0, expected: 0 }
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
            let mut all = merge_runs(runs);
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
            for (key, record) in table.primary.bulk_insert(all) {
                let (tid, row) = record.read().expect("a new replayed record is unlocked");
                replay_one(&table, &key, row, Ssn(tid.wssn()))?;
            }
        }
        Ok(())
    }
}

/// Merges runs sorted by key into one sorted run (equal keys side by side, in no particular
/// order): pairwise, each merge into a vector of exactly its length, so an entry moves once per
/// level (once for the usual two runs, one per recovery thread) instead of a concatenation
/// followed by a merge sort with its scratch buffer.
fn merge_runs(mut runs: Vec<Run>) -> Run {
    while runs.len() > 1 {
        let mut merged = Vec::with_capacity(runs.len().div_ceil(2));
        let mut runs_iter = runs.into_iter();
        while let Some(a) = runs_iter.next() {
            merged.push(match runs_iter.next() {
                Some(b) => merge_two(a, b),
                None => a,
            });
        }
        runs = merged;
    }
    runs.pop().unwrap_or_default()
}

/// Merges two runs sorted by key.
fn merge_two(a: Run, b: Run) -> Run {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.0 <= y.0,
            (Some(_), None) => {
                out.extend(a);
                return out;
            }
            (None, _) => {
                out.extend(b);
                return out;
            }
        };
        out.extend(if take_a { a.next() } else { b.next() });
    }
}

impl ReplayBatch {
    /// Hint: about `writes` installs are coming, most of them for one table. If the first table
    /// the batch meets is empty (every install a new key), its run starts with room for them
    /// instead of growing by doubling (each step a copy of the run into fresh memory).
    pub fn reserve(&mut self, writes: usize) {
        self.expected = writes;
    }

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
                // Into an index that holds keys, most installs may be updates in place.
                let expected = std::mem::take(&mut self.expected);
                let records = Vec::with_capacity(if probe { 0 } else { expected });
                self.tables.push(NewRecords { table: t, probe, records });
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
                    old.set_row_locked(row.map(crate::Row::from));
                    old.tid.store_unlocked(next);
                    self.updated += 1;
                    return Ok(());
                }
                // A tombstone: replaced by a new record, like `replay_install` does.
                return replay_one(t, key, row.map(crate::Row::from), ssn);
            }
        }
        if row.is_none() {
            // A new tombstone: `finish_replay` sweeps the table (set here rather than found
            // by a pass over every new record in `replay_bulk`).
            t.replay_tombstones.store(true, Ordering::Relaxed);
        }
        let record = Record::replayed(key, row.map(crate::Row::from), ssn);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: &[u32]) -> Run {
        keys.iter()
            .map(|k| {
                let key = k.to_be_bytes();
                (IKey::new(&key), Record::replayed(&key, Some(crate::Row::from(vec![1])), Ssn(1)))
            })
            .collect()
    }

    fn keys(run: &Run) -> Vec<Vec<u8>> {
        run.iter().map(|(k, _)| k.to_vec()).collect()
    }

    /// Merging sorted runs gives what sorting their concatenation gives, for any number of
    /// runs (odd ones left over at a level), with equal keys across runs and empty runs.
    #[test]
    fn merged_runs_are_sorted() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 40) as u32
        };
        for k in 0..7 {
            let runs: Vec<Vec<u32>> = (0..k)
                .map(|i| {
                    let mut r: Vec<u32> = (0..(i * 37) % 100).map(|_| next() % 200).collect();
                    r.sort_unstable();
                    r
                })
                .collect();
            let mut want: Vec<u32> = runs.concat();
            want.sort_unstable();
            let got = merge_runs(runs.iter().map(|r| run(r)).collect());
            assert_eq!(keys(&got), keys(&run(&want)), "{k} runs");
        }
    }

    /// The same keys in several batches: the newest write wins whichever batch holds it, a
    /// newest delete leaves no row.
    #[test]
    fn bulk_keeps_the_newest_across_batches() {
        let engine = Engine::new(Arc::new(wal::Log::new(2)));
        let t = TableId(1);
        engine.create_table(t, vec![]);
        // (batch, key, row or delete, ssn)
        type Write = (usize, &'static [u8], Option<&'static [u8]>, u64);
        let writes: &[Write] = &[
            (0, b"a", Some(b"a0"), 5),
            (1, b"a", Some(b"a1"), 9),
            (2, b"a", Some(b"a2"), 7),
            (0, b"b", Some(b"b0"), 8),
            (2, b"b", None, 3),
            (1, b"c", Some(b"c1"), 4),
            (2, b"c", None, 6),
            (2, b"d", None, 2),
            (0, b"e", Some(b"e0"), 1),
        ];
        let mut batches: Vec<ReplayBatch> = (0..3).map(|_| engine.replay_batch()).collect();
        for &(b, key, row, ssn) in writes {
            batches[b].install(t, key, row.map(<[u8]>::to_vec), Ssn(ssn)).unwrap();
        }
        engine.replay_bulk(batches).unwrap();
        engine.finish_replay(Ssn(9)).unwrap();
        let mut tx = engine.begin(0);
        let mut got = Vec::new();
        for key in [b"a", b"b", b"c", b"d", b"e"] {
            got.push(tx.get(t, key).unwrap().map(|r| r.to_vec()));
        }
        let want: Vec<Option<Vec<u8>>> =
            vec![Some(b"a1".to_vec()), Some(b"b0".to_vec()), None, None, Some(b"e0".to_vec())];
        assert_eq!(got, want);
        assert_eq!(engine.row_count(t), 3);
    }
}
