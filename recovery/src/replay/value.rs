//! Parallel value replay: [`replay`].
//!
//! ```text
//!  device 0 ─ reader ─┐  entries batched by partition = hash(table, key) % threads
//!  device 1 ─ reader ─┼──► worker 0: stage (newest per key) ─┐ when all readers are done:
//!  device 2 ─ reader ─┘    worker 1: stage                   ─┼► Target::install_staged
//!                          ...                                ─┘  (per worker, in parallel)
//!  caller's thread: progress reports until every thread is done, then Target::finish_staged
//! ```
//!
//! Records are read in a **second pass** over the devices (the scan keeps nothing but counts
//! and ends): the scan has already proven every device free of corruption before anything is
//! installed. One reader thread per device selects records ([`crate::replay`]'s rule), walks
//! their value payloads in place ([`super::for_each_value`], no allocation per record) and
//! copies each entry's key and row into a per-partition batch buffer (one allocation per
//! [`BATCH_BYTES`]), sent over a bounded `std::sync::mpsc::sync_channel`. Every entry of one
//! `(table, key)` goes to the same worker, so workers share nothing.
//!
//! **Staging** ([`Stage`]). A worker keeps, per `(table, key)` of its partition, only the
//! write with the largest SSN (last writer wins; order does not matter, even for one key, whose
//! writes come from several devices in any order). A newer write overwrites the staged bytes
//! in place (no allocation when the row is no longer than the staged one). When every reader
//! is done, each worker hands its surviving writes to [`Target::install_staged`] — each key
//! exactly once, all partitions in parallel — and the caller's thread runs
//! [`Target::finish_staged`] (the engine's bulk index build). A log with `k` writes per key
//! thus costs the engine one install per key instead of `k`.
//!
//! Memory: the staged rows of the whole log tail, i.e. at most the size of the tables it
//! touches (they move into the engine without a copy), plus the channels' batches.
//!
//! Errors: the first error stops every thread (readers check a flag, a failed worker drops its
//! channel); installs that already happened stay, which is harmless because recovery fails.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hashbrown::hash_table::{Entry as SlotEntry, HashTable};
use wal::Ssn;

use crate::error::Error;
use crate::first_error::FirstError;
use crate::plan::{DeviceLog, RecoveryPlan};
use crate::progress::{Phase, Progress, Summary};
use crate::replay::{bad_payload, for_each_value, select, Action};
use crate::target::{Staged, Target};

/// How often the caller's `progress` is called while replay runs.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// The capacity of a batch's byte buffer; a batch is sent once it holds three quarters of it
/// (so that the last entry rarely makes it grow) or [`BATCH_ENTRIES`] entries. Below glibc's
/// mmap threshold, so that batch buffers are recycled by the allocator instead of being
/// mapped, faulted in and unmapped each time.
const BATCH_BYTES: usize = 64 << 10;

/// Entries per batch sent to a worker, at most.
const BATCH_ENTRIES: usize = 1024;

/// Batches in flight per worker channel (bounds memory).
const CHANNEL_BATCHES: usize = 16;

/// One entry of a [`Batch`]: where its key and row are in `Batch::bytes`.
struct Item {
    hash: u64,
    table: u32,
    ssn: Ssn,
    /// Offset of the key in `Batch::bytes`; the row follows it.
    start: u32,
    key_len: u32,
    /// `u32::MAX` for a delete.
    row_len: u32,
}

/// Entries for one worker, their bytes in one buffer.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    items: Vec<Item>,
}

impl Batch {
    fn with_capacity() -> Batch {
        Batch { bytes: Vec::with_capacity(BATCH_BYTES), items: Vec::with_capacity(BATCH_ENTRIES) }
    }

    fn push(&mut self, hash: u64, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) {
        let start = u32::try_from(self.bytes.len()).expect("a batch stays below 4 GiB");
        self.bytes.extend_from_slice(key);
        let row_len = match row {
            Some(r) => {
                self.bytes.extend_from_slice(r);
                r.len() as u32
            }
            None => u32::MAX,
        };
        self.items.push(Item { hash, table, ssn, start, key_len: key.len() as u32, row_len });
    }

    fn is_full(&self) -> bool {
        self.bytes.len() >= BATCH_BYTES / 4 * 3 || self.items.len() >= BATCH_ENTRIES
    }
}

/// A fast seeded hash of `(table, key)`: the engine's index hash ([`txn::hash_key`]) with the
/// table folded into the seed. The seed is random per replay, so crafted keys cannot be aimed
/// at one bucket.
fn hash_entry(seed: u64, table: u32, key: &[u8]) -> u64 {
    txn::hash_key(seed ^ u64::from(table).wrapping_mul(0x9e37_79b9_7f4a_7c15), key)
}

/// The partition of an entry with hash `h`. It uses bits 40.. of the hash: hashbrown takes
/// the bucket from the low bits and its tag from the top 7, which must not be constant within a
/// partition.
fn partition(h: u64, threads: usize) -> usize {
    ((h >> 40) & 0xFF_FFFF) as usize % threads
}

/// One worker's staging map: per `(table, key)` the write with the largest SSN (module doc).
#[derive(Default)]
pub(crate) struct Stage {
    map: HashTable<Staged>,
}

impl Stage {
    /// Stages a write: kept if its key is new or its SSN is larger than the staged one's.
    pub(crate) fn put(&mut self, hash: u64, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) {
        let eq = |s: &Staged| s.table == table && s.key() == key;
        match self.map.entry(hash, eq, |s| s.hash) {
            SlotEntry::Occupied(mut e) => {
                let staged = e.get_mut();
                if ssn > staged.ssn {
                    staged.set(row, ssn);
                }
            }
            SlotEntry::Vacant(e) => {
                e.insert(Staged::with_hash(hash, table, key, row, ssn));
            }
        }
    }

    /// The staged writes, each key once, in no particular order.
    pub(crate) fn into_writes(self) -> Vec<Staged> {
        self.map.into_iter().collect()
    }
}

#[derive(Default)]
struct Counters {
    bytes: AtomicU64,
    records: AtomicU64,
    replayed: AtomicU64,
    entries: AtomicU64,
}

struct Shared<'a> {
    counters: Counters,
    errors: FirstError,
    target: &'a dyn Target,
}

impl Shared<'_> {
    fn fail(&self, e: Error) {
        self.errors.fail(e);
    }
}

/// Replays `plan` into `target`: every value record with `cut < ssn <= RSNe`, plus every blind
/// value record `> cut` (DESIGN.md §5), staged on `threads` worker threads (at least 1; one
/// reader thread per device besides) and installed with [`Target::install_staged`] (each key
/// once, the newest write) and [`Target::finish_staged`]. Markers and abort records are
/// skipped; a command record that would have to be replayed fails with [`Error::Unsupported`]
/// (PACMAN is a later step). `progress` is called on the caller's thread every
/// [`PROGRESS_INTERVAL`] and once at the end.
///
/// Errors: [`Error::Corrupt`] for a value payload that does not parse (or a device that changed
/// since the scan), [`Error::Log`] for a read failure, [`Error::Install`] if the target refuses
/// an entry.
pub fn replay(
    plan: &RecoveryPlan,
    cut: Ssn,
    target: &dyn Target,
    threads: usize,
    progress: &dyn Fn(&Progress),
) -> Result<Summary, Error> {
    let threads = threads.max(1);
    let start = Instant::now();
    let seed = std::hash::RandomState::new().hash_one(0x5eed_u64);
    let shared = Shared { counters: Counters::default(), errors: FirstError::default(), target };
    let report = |shared: &Shared<'_>| {
        progress(&Progress {
            phase: Phase::Replay,
            bytes_done: shared.counters.bytes.load(Ordering::Relaxed),
            bytes_total: plan.bytes(),
            records_done: shared.counters.records.load(Ordering::Relaxed),
            records_total: plan.records(),
            elapsed: start.elapsed(),
        })
    };
    std::thread::scope(|s| {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let mut senders = Vec::with_capacity(threads);
        for _ in 0..threads {
            let (tx, rx) = mpsc::sync_channel::<Batch>(CHANNEL_BATCHES);
            senders.push(tx);
            let (shared, done) = (&shared, done_tx.clone());
            s.spawn(move || {
                worker(rx, shared);
                drop(done);
            });
        }
        for device in &plan.devices {
            let (shared, senders, done) = (&shared, senders.clone(), done_tx.clone());
            s.spawn(move || {
                if let Err(e) = read_device(device, plan, cut, seed, &senders, shared) {
                    shared.fail(e);
                }
                drop(done);
            });
        }
        drop(senders);
        drop(done_tx);
        // Every thread holds a `done` sender: disconnection means all have finished.
        while let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(PROGRESS_INTERVAL) {
            report(&shared);
        }
    });
    if !shared.errors.failed() {
        if let Err(e) = target.finish_staged() {
            shared.fail(e);
        }
    }
    report(&shared);
    shared.errors.into_result()?;
    let c = &shared.counters;
    Ok(Summary {
        devices: plan.devices().len(),
        threads,
        cut,
        rsne: plan.rsne(),
        scan: plan.scan_time(),
        replay: start.elapsed(),
        bytes: c.bytes.load(Ordering::Relaxed),
        records: c.records.load(Ordering::Relaxed),
        replayed: c.replayed.load(Ordering::Relaxed),
        entries: c.entries.load(Ordering::Relaxed),
    })
}

/// Stages every batch of its partition, then (once every reader is done and unless another
/// thread failed) installs the survivors.
fn worker(rx: mpsc::Receiver<Batch>, shared: &Shared<'_>) {
    let mut stage = Stage::default();
    for batch in rx {
        let n = batch.items.len() as u64;
        for item in &batch.items {
            let start = item.start as usize;
            let key = &batch.bytes[start..start + item.key_len as usize];
            let row = (item.row_len != u32::MAX).then(|| {
                let at = start + item.key_len as usize;
                &batch.bytes[at..at + item.row_len as usize]
            });
            stage.put(item.hash, item.table, key, row, item.ssn);
        }
        shared.counters.entries.fetch_add(n, Ordering::Relaxed);
        if shared.errors.failed() {
            return; // drops `rx`: readers sending here stop
        }
    }
    if shared.errors.failed() {
        return;
    }
    if let Err(e) = shared.target.install_staged(stage.into_writes()) {
        shared.fail(e);
    }
}

/// Reads one device, sends its selected entries to the workers. `Ok` also when it stopped
/// because another thread failed (that thread recorded the error).
fn read_device(
    log: &DeviceLog,
    plan: &RecoveryPlan,
    cut: Ssn,
    seed: u64,
    senders: &[mpsc::SyncSender<Batch>],
    shared: &Shared<'_>,
) -> Result<(), Error> {
    let Some(mut reader) = log.reader(plan.read_options()) else { return Ok(()) };
    let rsne = plan.rsne();
    let threads = senders.len();
    let mut batches: Vec<Batch> = (0..threads).map(|_| Batch::with_capacity()).collect();
    let (mut bytes, mut records, mut replayed) = (0u64, 0u64, 0u64);
    let c = &shared.counters;
    let flush_counts = |bytes: &mut u64, records: &mut u64, replayed: &mut u64| {
        c.bytes.fetch_add(std::mem::take(bytes), Ordering::Relaxed);
        c.records.fetch_add(std::mem::take(records), Ordering::Relaxed);
        c.replayed.fetch_add(std::mem::take(replayed), Ordering::Relaxed);
    };
    while let Some(r) = reader.next_record()? {
        records += 1;
        bytes += r.record.encoded_len() as u64;
        match select(&r.record, cut, rsne) {
            Action::Skip => {}
            Action::Unsupported => {
                return Err(Error::Unsupported {
                    device: log.device,
                    segment: r.segment,
                    offset: r.offset,
                    ssn: r.record.ssn,
                })
            }
            Action::Values => {
                replayed += 1;
                let ssn = r.record.ssn;
                let mut stopped = false;
                let spilled = log.spilled_payload(&r)?;
                let payload = spilled.as_deref().unwrap_or(r.record.payload);
                for_each_value(payload, |table, key, row| {
                    let h = hash_entry(seed, table, key);
                    let p = partition(h, threads);
                    batches[p].push(h, table, key, row, ssn);
                    if batches[p].is_full() {
                        let full = std::mem::replace(&mut batches[p], Batch::with_capacity());
                        // A closed channel: the worker failed and recorded why.
                        stopped |= senders[p].send(full).is_err();
                    }
                })
                .map_err(|e| bad_payload(log.device, &r, e))?;
                if stopped {
                    return Ok(());
                }
            }
        }
        if records % 4096 == 0 {
            flush_counts(&mut bytes, &mut records, &mut replayed);
            if shared.errors.failed() {
                return Ok(());
            }
        }
    }
    flush_counts(&mut bytes, &mut records, &mut replayed);
    for (p, batch) in batches.into_iter().enumerate() {
        if !batch.items.is_empty() && senders[p].send(batch).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_is_in_range_and_spread() {
        for threads in 1..8 {
            for k in 0..100u32 {
                let key = k.to_le_bytes();
                let h = hash_entry(7, k % 3, &key);
                assert!(partition(h, threads) < threads);
                assert_eq!(h, hash_entry(7, k % 3, &key), "deterministic for one seed");
            }
        }
        // Not everything in one partition.
        let used: std::collections::BTreeSet<_> =
            (0..100u32).map(|k| partition(hash_entry(7, 1, &k.to_le_bytes()), 4)).collect();
        assert_eq!(used.len(), 4);
        // The table is part of the hash.
        assert_ne!(hash_entry(7, 1, b"k"), hash_entry(7, 2, b"k"));
        assert_ne!(hash_entry(7, 1, b"k"), hash_entry(7, 1, b"k\0"));
    }

    /// The stage keeps the largest SSN per key, whatever the order, deletes included, and
    /// reuses a staged allocation for a newer row.
    #[test]
    fn stage_keeps_the_newest_write_per_key() {
        let mut stage = Stage::default();
        let put = |stage: &mut Stage, table: u32, key: &[u8], row: Option<&[u8]>, ssn: u64| {
            stage.put(hash_entry(1, table, key), table, key, row, Ssn(ssn));
        };
        put(&mut stage, 1, b"a", Some(b"a5"), 5);
        put(&mut stage, 1, b"a", Some(b"a3"), 3);
        put(&mut stage, 1, b"a", Some(b"a9"), 9);
        put(&mut stage, 2, b"a", Some(b"other table"), 1);
        put(&mut stage, 1, b"b", Some(b"b2"), 2);
        put(&mut stage, 1, b"b", None, 4);
        put(&mut stage, 1, b"b", Some(b"b3"), 3);
        put(&mut stage, 1, b"c", None, 4);
        put(&mut stage, 1, b"c", Some(b"c reinserted, longer"), 6);
        let mut got: Vec<_> = stage
            .into_writes()
            .into_iter()
            .map(|s| (s.table, s.key().to_vec(), s.row().map(<[u8]>::to_vec), s.ssn.0))
            .collect();
        got.sort();
        let v = |s: &[u8]| Some(s.to_vec());
        assert_eq!(
            got,
            vec![
                (1, b"a".to_vec(), v(b"a9"), 9),
                (1, b"b".to_vec(), None, 4),
                (1, b"c".to_vec(), v(b"c reinserted, longer"), 6),
                (2, b"a".to_vec(), v(b"other table"), 1),
            ]
        );
    }

    #[test]
    fn staged_owned_row_moves_without_losing_bytes() {
        for key_len in [0usize, 1, 8, 64, 65, 300] {
            let key: Vec<u8> = (0..key_len).map(|i| i as u8).collect();
            for row in [None, Some(&b""[..]), Some(&b"row bytes"[..])] {
                let s = Staged::new(3, &key, row, Ssn(7));
                assert_eq!((s.key(), s.row()), (&key[..], row));
                s.with_owned_row(|table, k, r, ssn| {
                    assert_eq!((table, k, r.as_deref(), ssn), (3, &key[..], row, Ssn(7)));
                });
            }
        }
    }
}
