//! The seam to the storage engine: [`Target`], the [`Staged`] writes of the bulk path, and the
//! engine adapter [`EngineTarget`].

use std::sync::Mutex;

use wal::Ssn;

use crate::error::Error;

/// Where replay installs rows (STYLE rule 2: `recovery → txn, sql`). The adapter over
/// `txn::Engine` implements it ([`EngineTarget`]); `testing::MapTarget` (feature `testing`) is
/// the test double.
///
/// Contract:
/// - **Last writer wins.** `install(table, key, row, ssn)` makes `row` the version of `key`
///   unless the key already holds a version with an SSN `>= ssn`, in which case it does nothing.
///   Replay calls it in no particular order across keys *and* for one key (entries of one key
///   come from several devices), so the outcome must depend only on the set of calls.
/// - **Deletes leave a trace.** `row = None` deletes `key` at `ssn`; the target must remember
///   that SSN (a tombstone) until replay ends, or an older install arriving later would bring
///   the row back. Dropping tombstones after replay is the adapter's business.
/// - **No latches needed**: replay sends every call for one `(table, key)` to the same thread,
///   so two calls for one key never run concurrently. Calls for different keys do.
/// - **The bulk path.** [`crate::replay()`] (or [`crate::stage()`] and
///   [`crate::StagedLog::install`]) and [`crate::load_checkpoint`] first reduce their input to
///   [`Staged`] writes (for the log: the newest per key) and hand them over with
///   [`Target::install_staged`], one call per partition, concurrently, no key in two
///   concurrent calls; then call [`Target::finish_staged`] once, after every `install_staged`
///   returned. The result must be as if each staged write had gone through `install`, and it
///   must be complete (visible) once `finish_staged` returns. The defaults do exactly that,
///   one `install` at a time.
/// - **Durability**: none. Replayed rows are durable because the log holds them; the target
///   keeps them in memory.
/// - An `Err` stops recovery ([`crate::Error::Install`]).
pub trait Target: Sync {
    /// Installs `row` (or deletes, if `None`) as the version of `(table, key)` written at `ssn`,
    /// last writer wins (see the trait doc).
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String>;

    /// Installs every write of `writes` (last writer wins, as `install`). Their effect may stay
    /// invisible until [`Target::finish_staged`] returns. The default calls `install` for each.
    fn install_staged(&self, writes: StagedWrites) -> Result<(), Error> {
        for w in writes {
            self.install(w.table, w.key(), w.row(), w.ssn).map_err(|message| Error::Install {
                table: w.table,
                key: w.key().to_vec(),
                ssn: w.ssn,
                message,
            })?;
        }
        Ok(())
    }

    /// Makes every staged write complete and visible; called once after the last
    /// `install_staged` of a replay or load returned. The default does nothing.
    fn finish_staged(&self) -> Result<(), Error> {
        Ok(())
    }
}

/// One write as recovery stages it: `(table, key)` at `ssn`, with its row or a delete. A short
/// key is kept inline (a [`txn::IKey`], as the engine's index keys), so that the staging map compares keys without
/// touching another allocation; the row has its own allocation, which becomes the engine's row
/// without a copy ([`Staged::with_owned_row`]) and is reused when a newer write replaces it.
#[derive(Clone, PartialEq, Eq)]
pub struct Staged {
    /// The table id.
    pub table: u32,
    /// The writer's SSN.
    pub ssn: Ssn,
    key: txn::IKey,
    /// Ignored (kept for reuse) when `deleted`.
    row: Vec<u8>,
    deleted: bool,
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged")
            .field("table", &self.table)
            .field("ssn", &self.ssn)
            .field("key", &self.key())
            .field("row", &self.row())
            .finish()
    }
}

impl Staged {
    /// A write of `row` (a delete if `None`) to `(table, key)` at `ssn`.
    pub fn new(table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Staged {
        assert!(u32::try_from(key.len()).is_ok(), "a logged key is below 4 GiB");
        let key = txn::IKey::new(key);
        Staged { table, ssn, key, row: row.unwrap_or_default().to_vec(), deleted: row.is_none() }
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.key.as_slice()
    }

    /// Whether this is a write of `(table, key)`.
    #[inline]
    pub(crate) fn is(&self, table: u32, key: &[u8]) -> bool {
        self.table == table && self.key() == key
    }

    /// Where the row's bytes are (a dangling but aligned pointer when it has none): for a
    /// prefetch hint.
    #[inline]
    pub(crate) fn row_ptr(&self) -> *const u8 {
        self.row.as_ptr()
    }

    /// The row, or `None` for a delete.
    pub fn row(&self) -> Option<&[u8]> {
        (!self.deleted).then_some(&self.row[..])
    }

    /// Replaces the version by `row` at `ssn`, reusing the row's allocation when it fits. A
    /// longer row grows it to exactly its length, not to twice the capacity: the row moves
    /// into the engine as it is, so slack would stay allocated for the table's life (and the
    /// allocator can often grow a block in place by the few bytes a counter gains).
    pub(crate) fn set(&mut self, row: Option<&[u8]>, ssn: Ssn) {
        let bytes = row.unwrap_or_default();
        self.row.clear();
        self.row.reserve_exact(bytes.len());
        self.row.extend_from_slice(bytes);
        self.deleted = row.is_none();
        self.ssn = ssn;
    }

    /// Calls `f(table, key, row, ssn)` with the row as an owned vector (no copy, no
    /// allocation).
    pub fn with_owned_row<R>(self, f: impl FnOnce(u32, &[u8], Option<Vec<u8>>, Ssn) -> R) -> R {
        let Staged { table, ssn, key, row, deleted, .. } = self;
        f(table, key.as_slice(), (!deleted).then_some(row), ssn)
    }
}

/// Staged writes in chunks of a fixed capacity ([`StagedWrites::CHUNK`] writes, ~1 MiB), what
/// [`Target::install_staged`] takes. Recovery does not know how many keys a partition (or a
/// checkpoint file) holds until it has read them all; a vector grown by doubling copied every
/// write again at each step and touched twice the memory the writes need, fresh pages the
/// kernel zeroes first (profiles of a cold recovery showed both). Chunks never move.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StagedWrites {
    /// Full chunks, then the last one; each allocated with capacity [`StagedWrites::CHUNK`].
    chunks: Vec<Vec<Staged>>,
    len: usize,
}

impl StagedWrites {
    /// Writes per chunk (a power of two: a position splits into chunk and index by shifts).
    pub const CHUNK: usize = 1 << 14;

    /// No writes.
    pub fn new() -> StagedWrites {
        StagedWrites::default()
    }

    /// The number of writes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `w` at position `len()`.
    pub fn push(&mut self, w: Staged) {
        if self.len.is_multiple_of(Self::CHUNK) {
            self.chunks.push(Vec::with_capacity(Self::CHUNK));
        }
        self.chunks.last_mut().expect("a chunk with room").push(w);
        self.len += 1;
    }

    /// The write at position `at` (`< len()`).
    #[inline]
    pub fn get(&self, at: usize) -> &Staged {
        &self.chunks[at / Self::CHUNK][at % Self::CHUNK]
    }

    /// The write at position `at` (`< len()`), to change.
    #[inline]
    pub fn get_mut(&mut self, at: usize) -> &mut Staged {
        &mut self.chunks[at / Self::CHUNK][at % Self::CHUNK]
    }

    /// Keeps only the writes for which `keep` holds, in order. Nothing moves if it holds for
    /// all (the usual case: recovery drops only the writes of tables dropped since); else the
    /// kept writes are gathered into new chunks. `keep` must be a plain predicate: it may be
    /// asked about a write twice.
    pub fn retain(&mut self, mut keep: impl FnMut(&Staged) -> bool) {
        if self.chunks.iter().flatten().all(&mut keep) {
            return;
        }
        *self = std::mem::take(self).into_iter().filter(keep).collect();
    }
}

impl IntoIterator for StagedWrites {
    type Item = Staged;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<Staged>>>;

    /// The writes in order; each chunk is freed once it has been walked.
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

impl FromIterator<Staged> for StagedWrites {
    fn from_iter<I: IntoIterator<Item = Staged>>(iter: I) -> StagedWrites {
        let mut writes = StagedWrites::new();
        for w in iter {
            writes.push(w);
        }
        writes
    }
}

impl From<Vec<Staged>> for StagedWrites {
    fn from(writes: Vec<Staged>) -> StagedWrites {
        writes.into_iter().collect()
    }
}

/// The adapter over the storage engine. `install` goes through `txn::Engine::replay_install`
/// (last writer wins with tombstones); the bulk path through `txn::ReplayBatch` (each staged
/// write installed once: existing keys updated in place, new keys inserted in bulk by
/// `txn::Engine::replay_bulk` in [`Target::finish_staged`]). After replay the caller runs
/// `txn::Engine::finish_replay(max_ssn)` (drops tombstones, rebuilds secondary indexes, raises
/// every log buffer's `L.ssn`).
///
/// Only before the engine serves transactions (the bulk path's rule).
pub struct EngineTarget<'a> {
    engine: &'a txn::Engine,
    /// Batches staged and not yet merged by `finish_staged`.
    pending: Mutex<Vec<txn::ReplayBatch>>,
}

impl<'a> EngineTarget<'a> {
    /// The adapter over `engine`.
    pub fn new(engine: &'a txn::Engine) -> EngineTarget<'a> {
        EngineTarget { engine, pending: Mutex::new(Vec::new()) }
    }
}

impl Target for EngineTarget<'_> {
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String> {
        self.engine.replay_install(txn::TableId(table), key, row, ssn).map_err(|e| e.to_string())
    }

    fn install_staged(&self, writes: StagedWrites) -> Result<(), Error> {
        let mut batch = self.engine.replay_batch();
        batch.reserve(writes.len());
        for w in writes {
            w.with_owned_row(|table, key, row, ssn| {
                batch.install(txn::TableId(table), key, row, ssn).map_err(|e| Error::Install {
                    table,
                    key: key.to_vec(),
                    ssn,
                    message: e.to_string(),
                })
            })?;
        }
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).push(batch);
        Ok(())
    }

    fn finish_staged(&self) -> Result<(), Error> {
        let batches = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        self.engine.replay_bulk(batches).map_err(|e| Error::Install {
            table: 0,
            key: Vec::new(),
            ssn: Ssn::ZERO,
            message: format!("bulk install: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(i: usize) -> Staged {
        let key = (i as u64).to_be_bytes();
        Staged::new(
            (i % 3) as u32,
            &key,
            (!i.is_multiple_of(5)).then_some(&key[..]),
            Ssn(i as u64 + 1),
        )
    }

    /// Across chunk boundaries: positions, changes through `get_mut`, order, `retain`.
    #[test]
    fn staged_writes_keep_positions_and_order_across_chunks() {
        let n = 2 * StagedWrites::CHUNK + 17;
        let mut writes: StagedWrites = (0..n).map(write).collect();
        assert_eq!(writes.len(), n);
        assert_eq!(writes.chunks.len(), 3);
        assert!(writes.chunks.iter().all(|c| c.capacity() == StagedWrites::CHUNK), "no growth");
        for at in [0, 1, StagedWrites::CHUNK - 1, StagedWrites::CHUNK, n - 1] {
            assert_eq!(writes.get(at), &write(at));
        }
        writes.get_mut(StagedWrites::CHUNK).set(None, Ssn(1 << 40));
        assert_eq!(writes.get(StagedWrites::CHUNK).row(), None);
        assert_eq!(writes.get(StagedWrites::CHUNK).ssn, Ssn(1 << 40));
        writes.get_mut(StagedWrites::CHUNK).set(Some(b"back"), Ssn(7));
        let all: Vec<Staged> = writes.clone().into_iter().collect();
        assert_eq!(all.len(), n);
        assert_eq!(all[StagedWrites::CHUNK].row(), Some(&b"back"[..]));
        assert!((0..n).filter(|&i| i != StagedWrites::CHUNK).all(|i| all[i] == write(i)));

        let mut kept = writes.clone();
        kept.retain(|_| true);
        assert_eq!(kept, writes, "keeping everything changes nothing");
        kept.retain(|w| w.table != 1);
        let expected: Vec<Staged> = all.iter().filter(|w| w.table != 1).cloned().collect();
        assert_eq!(kept.len(), expected.len());
        assert_eq!(kept.into_iter().collect::<Vec<_>>(), expected);
        assert_eq!(StagedWrites::from(expected.clone()).into_iter().collect::<Vec<_>>(), expected);
        assert!(StagedWrites::new().is_empty());
    }
}
