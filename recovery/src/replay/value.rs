//! Parallel value replay: [`replay`].
//!
//! ```text
//!  device 0 ─ reader ─┐   entries batched by partition = hash(table, key) % threads
//!  device 1 ─ reader ─┼──► worker 0 ─┐
//!  device 2 ─ reader ─┘    worker 1 ─┼─► Target::install (last writer wins)
//!                          ...      ─┘
//!  caller's thread: progress reports until every thread is done
//! ```
//!
//! Records are read in a **second pass** over the devices (the scan keeps nothing but counts
//! and ends): memory stays bounded for multi-GB logs, and the scan has already proven every
//! device free of corruption before anything is installed. One reader thread per device
//! selects records ([`crate::replay`]'s rule), decodes value payloads, and sends owned entries
//! in batches over bounded `std::sync::mpsc::sync_channel`s (std's channel is the crossbeam
//! implementation; using it adds no dependency). Every entry of one `(table, key)` goes to the
//! same worker, so no two installs of a key run at once and no latch is needed. Order does
//! not matter, even for one key (its writes come from several devices in any order): the
//! target keeps the version with the largest SSN ([`crate::Target`]'s contract).
//!
//! Errors: the first error stops every thread (readers check a flag, a failed worker drops its
//! channel); installs that already happened stay, which is harmless because recovery fails.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wal::Ssn;

use crate::error::Error;
use crate::plan::{DeviceLog, RecoveryPlan};
use crate::progress::{Phase, Progress, Summary};
use crate::replay::{bad_payload, select, Action};
use crate::target::Target;

/// How often the caller's `progress` is called while replay runs.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// Entries per batch sent to a worker.
const BATCH: usize = 1024;

/// Batches in flight per worker channel (bounds memory).
const CHANNEL_BATCHES: usize = 16;

/// One write to install.
struct Entry {
    table: u32,
    key: Vec<u8>,
    row: Option<Vec<u8>>,
    ssn: Ssn,
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
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    target: &'a dyn Target,
}

impl Shared<'_> {
    fn fail(&self, e: Error) {
        self.failed.store(true, Ordering::Release);
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
    }
}

/// The partition of `(table, key)`: FNV-1a, stable across runs.
fn partition(table: u32, key: &[u8], threads: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in table.to_le_bytes().iter().chain(key) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % threads as u64) as usize
}

/// Replays `plan` into `target`: every value record with `cut < ssn <= RSNe`, plus every blind
/// value record `> cut` (DESIGN.md §5), on `threads` install threads (at least 1) plus one
/// reader thread per device. Markers and abort records are skipped; a command record that would
/// have to be replayed fails with [`Error::Unsupported`] (PACMAN is a later step). `progress`
/// is called on the caller's thread every [`PROGRESS_INTERVAL`] and once at the end.
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
    let shared = Shared {
        counters: Counters::default(),
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
        target,
    };
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
            let (tx, rx) = mpsc::sync_channel::<Vec<Entry>>(CHANNEL_BATCHES);
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
                if let Err(e) = read_device(device, plan, cut, &senders, shared) {
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
    report(&shared);
    if let Some(e) = shared.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
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

fn worker(rx: mpsc::Receiver<Vec<Entry>>, shared: &Shared<'_>) {
    for batch in rx {
        let n = batch.len() as u64;
        for e in batch {
            if let Err(message) = shared.target.install(e.table, &e.key, e.row.as_deref(), e.ssn) {
                shared.fail(Error::Install { table: e.table, key: e.key, ssn: e.ssn, message });
                return; // drops `rx`: readers sending here stop
            }
        }
        shared.counters.entries.fetch_add(n, Ordering::Relaxed);
    }
}

/// Reads one device, sends its selected entries to the workers. `Ok` also when it stopped
/// because another thread failed (that thread recorded the error).
fn read_device(
    log: &DeviceLog,
    plan: &RecoveryPlan,
    cut: Ssn,
    senders: &[mpsc::SyncSender<Vec<Entry>>],
    shared: &Shared<'_>,
) -> Result<(), Error> {
    let Some(mut reader) = log.reader(plan.read_options()) else { return Ok(()) };
    let rsne = plan.rsne();
    let threads = senders.len();
    let mut batches: Vec<Vec<Entry>> = (0..threads).map(|_| Vec::with_capacity(BATCH)).collect();
    let (mut bytes, mut records, mut replayed) = (0u64, 0u64, 0u64);
    let c = &shared.counters;
    let flush_counts = |bytes: &mut u64, records: &mut u64, replayed: &mut u64| {
        c.bytes.fetch_add(std::mem::take(bytes), Ordering::Relaxed);
        c.records.fetch_add(std::mem::take(records), Ordering::Relaxed);
        c.replayed.fetch_add(std::mem::take(replayed), Ordering::Relaxed);
    };
    while let Some(r) = reader.next_record()? {
        if shared.failed.load(Ordering::Acquire) {
            return Ok(());
        }
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
                let entries = r.record.values().map_err(|e| bad_payload(log.device, &r, e))?;
                for e in entries {
                    let p = partition(e.table, e.key, threads);
                    batches[p].push(Entry {
                        table: e.table,
                        key: e.key.to_vec(),
                        row: e.row.map(<[u8]>::to_vec),
                        ssn: r.record.ssn,
                    });
                    if batches[p].len() >= BATCH {
                        let full = std::mem::replace(&mut batches[p], Vec::with_capacity(BATCH));
                        if senders[p].send(full).is_err() {
                            return Ok(()); // the worker failed and recorded why
                        }
                    }
                }
            }
        }
        if records % 4096 == 0 {
            flush_counts(&mut bytes, &mut records, &mut replayed);
        }
    }
    flush_counts(&mut bytes, &mut records, &mut replayed);
    for (p, batch) in batches.into_iter().enumerate() {
        if !batch.is_empty() && senders[p].send(batch).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_is_stable_and_in_range() {
        for threads in 1..8 {
            for k in 0..100u32 {
                let key = k.to_le_bytes();
                let p = partition(k % 3, &key, threads);
                assert!(p < threads);
                assert_eq!(p, partition(k % 3, &key, threads));
            }
        }
        // Not everything in one partition.
        let used: std::collections::BTreeSet<_> =
            (0..100u32).map(|k| partition(1, &k.to_le_bytes(), 4)).collect();
        assert_eq!(used.len(), 4);
    }
}
