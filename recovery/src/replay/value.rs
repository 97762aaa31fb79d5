//! Parallel value replay: [`stage`] (the scan and the replay in one pass over the log), then
//! [`StagedLog::install`]; and [`replay`] (a second pass after [`RecoveryPlan::scan`]).
//!
//! ```text
//!  device 0 ─ reader ─┐  entries batched by partition of hash(table, key)
//!  device 1 ─ reader ─┼──► worker 0: stage (newest per key) ─┐  StagedLog::install:
//!  device 2 ─ reader ─┘    worker 1: stage                   ─┼► Target::install_staged
//!   (each also scans:       ...                               ─┘  (per partition, in parallel)
//!    counts, ends, RSNe)                                          then Target::finish_staged
//!  caller's thread: progress reports until every reader and worker is done
//! ```
//!
//! One reader thread per device reads its records with `wal::SegmentReader`, selects them
//! ([`crate::replay`]'s rule), walks their value payloads in place ([`super::for_each_value`],
//! no allocation per record) and copies each entry's key and row into a per-partition batch
//! buffer (one allocation per [`BATCH_BYTES`]), sent over a bounded
//! `std::sync::mpsc::sync_channel`. Every entry of one `(table, key)` goes to the same worker,
//! so workers share nothing.
//!
//! **One pass** ([`stage`]). Each reader also does the scan's bookkeeping
//! (`plan::DeviceScanner`), so the log is read and checksummed once, and the
//! [`RecoveryPlan`] comes out of the same pass. The catch is RSNe, which is only known once
//! every device has been read to its end. A record on device `d` with `S < ssn`, not blind,
//! is replayed iff `ssn <= RSNe = min over devices e of max(last_e, S)`; `ssn <= last_d`
//! holds (the record is valid), so it is iff `ssn <= H_d = min over e != d of max(last_e, S)`.
//! Every reader publishes the SSN of the last record it has read ([`Frontier`]), a lower bound
//! of `last_e`, and whether it is done (then it is `last_e`). That bounds `H_d` from below
//! (the published SSNs) and from above (the done devices'); when the rule gives the same
//! answer at both bounds (it is monotone in RSNe) the record is decided, otherwise the reader
//! copies it into its **held** queue and stages it as the other readers advance, at the latest
//! once all are done. Devices read at similar speeds keep the queue short. Beyond
//! [`HELD_BYTES`] held, a reader waits for the others. That cannot deadlock: the reader holding
//! the smallest SSN `s` waits for some `e` whose published `last_e < s`; `e` holds nothing
//! (whatever it holds it has read, so its SSN is `<= last_e < s`; a waiting reader publishes
//! exactly where it is), so it is not waiting: it reads on, or is done, which decides `s`. A
//! reader far ahead of the others in SSNs — one device's log starts with a bulk load that the
//! others' records follow — thus waits while the others catch up, which on a busy machine
//! leaves its core to the others and to the workers; the alternative, leaving a gap and reading
//! it again at the end, measured slower (the gap can be a whole device, read once more while
//! the other readers idle).
//!
//! Errors keep the two-pass order: every reader scans its device to the end even after
//! another thread failed (it only stops staging), so a damaged record makes the pass fail
//! with the first failing device in id order, as [`RecoveryPlan::scan`] does; only if every
//! device scans cleanly does an error of the replay itself (a payload that does not parse, a
//! command record, a refused install) count. Nothing reaches the target before the whole log
//! has checked: staging is private to the workers until [`StagedLog::install`].
//!
//! **Two passes** ([`replay`]). With a plan from [`RecoveryPlan::scan`], RSNe is known and
//! every record is decided at once; the readers read the devices a second time.
//!
//! **Staging** ([`Stage`]). A worker keeps, per `(table, key)` of its partition, only the
//! write with the largest SSN (last writer wins; order does not matter, even for one key, whose
//! writes come from several devices in any order). A newer write overwrites the staged row in
//! place (no allocation when it is no longer than the staged one). The writes sit in chunks
//! that never move ([`StagedWrites`]) and the hash table holds only 32 bits of their hashes and
//! their positions, so growing it moves 8 bytes a key; short keys are inline in the staged
//! write ([`Staged`]), so a lookup that finds its key touches the one write it then updates,
//! and a new key touches no staged write at all (profiles showed the key comparison's cache
//! miss, and the table's growth, dominating the workers with 100-byte rows). When every
//! reader is done, each partition's surviving writes go to [`Target::install_staged`] — each
//! key exactly once, all partitions in parallel — and the caller's thread runs
//! [`Target::finish_staged`] (the engine's bulk index build). A log with `k` writes per key
//! thus costs the engine one install per key instead of `k`.
//!
//! Memory: the staged rows of the whole log tail, i.e. at most the size of the tables it
//! touches (they move into the engine without a copy), plus the channels' batches and the
//! held queues.
//!
//! Errors: the first error stops the staging (readers check a flag, a failed worker drops its
//! channel); installs that already happened stay, which is harmless because recovery fails.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::{Duration, Instant};

use wal::{ReadOptions, Record, RecordKind, SegmentNo, Ssn};

use crate::error::Error;
use crate::first_error::FirstError;
use crate::plan::{check_devices, DeviceLog, DeviceScanner, RecoveryPlan, ScanOptions, Scanned};
use crate::progress::{Phase, Progress, Summary};
use crate::replay::{for_each_value, select, Action};
use crate::target::{Staged, StagedWrites, Target};

/// How often the caller's `progress` is called while replay runs.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// The capacity of a batch's byte buffer; a batch is sent once it holds three quarters of it
/// (so that the last entry rarely makes it grow) or [`BATCH_ENTRIES`] entries. Below glibc's
/// mmap threshold, so that batch buffers are recycled by the allocator instead of being
/// mapped, faulted in and unmapped each time.
const BATCH_BYTES: usize = 64 << 10;

/// Entries per batch sent to a worker, at most.
const BATCH_ENTRIES: usize = 1024;

/// How far ahead in a batch a worker asks for an entry's index slot ([`Stage::prefetch`]) and
/// for its staged write ([`Stage::prefetch_write`]).
const PREFETCH_SLOT: usize = 32;
/// See [`PREFETCH_SLOT`].
const PREFETCH_WRITE: usize = 16;
/// How far ahead a worker asks for the staged row a newer write will overwrite
/// ([`Stage::prefetch_row`]).
const PREFETCH_ROW: usize = 6;
/// How many slots from its home [`Stage::peek`] looks at for a key's write.
const PREFETCH_PROBES: usize = 4;

/// Batches in flight per worker channel (bounds memory).
const CHANNEL_BATCHES: usize = 16;

/// Bytes of undecided records a reader of the single pass holds before it waits for the other
/// readers (module doc).
const HELD_BYTES: usize = 16 << 20;

/// A reader of the single pass publishes its progress every this many records or
/// [`PUBLISH_BYTES`] (and before it waits, and at its end), and then looks at the others': so
/// its cache line moves rarely.
const PUBLISH_EVERY: u64 = 32;

/// See [`PUBLISH_EVERY`].
const PUBLISH_BYTES: u64 = 256 << 10;

/// The knobs of the single pass ([`stage_with`]); tests turn them to extremes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tuning {
    /// Bytes of undecided records a reader holds at most ([`HELD_BYTES`]).
    pub(crate) held_cap: usize,
    /// Records between two publications of a reader's progress ([`PUBLISH_EVERY`]).
    pub(crate) publish_every: u64,
}

impl Tuning {
    pub(crate) const DEFAULT: Tuning =
        Tuning { held_cap: HELD_BYTES, publish_every: PUBLISH_EVERY };
}

/// How long a waiting reader sleeps at most before it looks at the others' progress again.
const WAIT_POLL: Duration = Duration::from_millis(1);

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

/// Spawns a scoped thread with a name (`replay-read-0`, …), so that profiles and debuggers
/// tell readers, staging workers and installers apart.
fn spawn_named<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    name: String,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new().name(name).spawn_scoped(s, f).expect("spawn a replay thread")
}

/// A fast seeded hash of `(table, key)`: the engine's index hash ([`txn::hash_key`]) with the
/// table folded into the seed. The seed is random per replay, so crafted keys cannot be aimed
/// at one bucket.
fn hash_entry(seed: u64, table: u32, key: &[u8]) -> u64 {
    txn::hash_key(seed ^ u64::from(table).wrapping_mul(0x9e37_79b9_7f4a_7c15), key)
}

/// The partition of an entry with hash `h`. It uses bits 40.. of the hash: a partition's
/// [`Stage`] takes the slot from the low bits, which must not be constant within a partition.
/// Those 24 bits, scaled to `threads` by a multiply and a shift (a division, `% threads`, was
/// a tenth of the readers' payload walk).
#[inline]
fn partition(h: u64, threads: usize) -> usize {
    ((((h >> 40) & 0xFF_FFFF) * threads as u64) >> 24) as usize
}

/// One worker's staging map: per `(table, key)` the write with the largest SSN (module doc).
/// The writes sit in arrival order of their keys in [`StagedWrites`] (chunks: no copy as they
/// grow), which is what [`Target::install_staged`] takes (no copy at the end); the index is an
/// open-addressing table (linear probing, at most half full) of 32 bits of their hashes and
/// their positions, 8 bytes a slot, so growing it moves little. It is not hashbrown's because
/// a worker looks up a batch of keys whose hashes it knows in advance: [`Stage::prefetch`]
/// asks for the slot of an entry a few ahead, [`Stage::prefetch_write`] for the staged write
/// that slot (or one a few slots on) points to, and [`Stage::prefetch_row`] for that write's
/// row, so that the lookup of the entry itself finds all three in the cache (profiles showed
/// the worker waiting on those misses with ~1 M keys; following the probe sequence, the row,
/// and looking twice as far ahead took the one-pass recovery of 100-byte rows from 0.60 to
/// 0.56 s, lower quartiles of 12 rounds each).
#[derive(Default)]
pub(crate) struct Stage {
    /// A power of two long (or empty); `Slot::at == EMPTY` marks a free slot.
    slots: Vec<Slot>,
    writes: StagedWrites,
}

/// A slot of [`Stage`]'s index: the low 32 bits of `hash(table, key)` (which also give the home
/// slot, so growing needs nothing else) and the write's position. Two keys of a partition
/// share those bits rarely (a few pairs per million keys); the key comparison tells them apart.
#[derive(Clone, Copy)]
struct Slot {
    hash: u32,
    at: u32,
}

const EMPTY: u32 = u32::MAX;

/// Asks the CPU to bring the cache line at `p` in; no effect on what the program computes.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults and reads nothing the program sees, whatever
    // the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Stage {
    /// The home slot of `hash`: its low bits ([`partition`] uses bits 40 and up). At most 2^32
    /// slots: [`Slot`] keeps 32 bits.
    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash as u32) as usize & (self.slots.len() - 1)
    }

    /// Hint: the entry with `hash` will be staged soon; fetch its home slot.
    #[inline]
    fn prefetch(&self, hash: u64) {
        if !self.slots.is_empty() {
            prefetch(&self.slots[self.home(hash)]);
        }
    }

    /// The position of the staged write whose slot holds the 32 hash bits of `hash`, looking
    /// at most [`PREFETCH_PROBES`] slots from its home (the index is at most half full, so
    /// nearly every key is found within them; the slots are in the cache by then:
    /// [`Stage::prefetch`]). A hint only: a match of the hash bits may be another key.
    #[inline]
    fn peek(&self, hash: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        for _ in 0..PREFETCH_PROBES {
            let slot = self.slots[i];
            if slot.at == EMPTY {
                return None;
            }
            if slot.hash == hash as u32 {
                return Some(slot.at as usize);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Hint: fetch the staged write of the entry with `hash`, if it has one ([`Stage::peek`]).
    #[inline]
    fn prefetch_write(&self, hash: u64) {
        if let Some(at) = self.peek(hash) {
            prefetch(self.writes.get(at));
        }
    }

    /// Hint: fetch the row of the staged write of the entry with `hash`, which a newer write
    /// overwrites (the write itself should be in the cache by now: [`Stage::prefetch_write`]).
    #[inline]
    fn prefetch_row(&self, hash: u64) {
        if let Some(at) = self.peek(hash) {
            prefetch(self.writes.get(at).row_ptr());
        }
    }

    /// Doubles the index (at least 1024 slots) and reinserts every write's slot.
    #[cold]
    fn grow(&mut self) {
        let len = (self.slots.len() * 2).max(1024);
        assert!(len <= 1 << 32, "at most 2^31 keys a partition");
        let old = std::mem::replace(&mut self.slots, vec![Slot { hash: 0, at: EMPTY }; len]);
        let mask = len - 1;
        for slot in old.into_iter().filter(|s| s.at != EMPTY) {
            let mut i = slot.hash as usize & mask;
            while self.slots[i].at != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }

    /// Stages a write: kept if its key is new or its SSN is larger than the staged one's.
    /// `hash` is [`hash_entry`] of `(table, key)`.
    pub(crate) fn put(&mut self, hash: u64, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) {
        if (self.writes.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let hash32 = hash as u32;
        let mut i = hash32 as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot.at == EMPTY {
                let at =
                    u32::try_from(self.writes.len()).expect("fewer than 2^32 keys a partition");
                assert!(at != EMPTY, "fewer than 2^32 - 1 keys a partition");
                self.slots[i] = Slot { hash: hash32, at };
                self.writes.push(Staged::new(table, key, row, ssn));
                return;
            }
            if slot.hash == hash32 {
                let staged = self.writes.get_mut(slot.at as usize);
                if staged.is(table, key) {
                    if ssn > staged.ssn {
                        staged.set(row, ssn);
                    }
                    return;
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The number of staged writes (one per key).
    fn len(&self) -> usize {
        self.writes.len()
    }

    /// The staged writes, each key once, in no particular order.
    pub(crate) fn into_writes(self) -> StagedWrites {
        self.writes
    }
}

#[derive(Default)]
struct Counters {
    bytes: AtomicU64,
    spill_bytes: AtomicU64,
    records: AtomicU64,
    replayed: AtomicU64,
    entries: AtomicU64,
}

impl Counters {
    /// The summary of a pass over `plan`'s devices that took `scan` before `replay`.
    fn summary(
        &self,
        plan: &RecoveryPlan,
        cut: Ssn,
        threads: usize,
        scan: Duration,
        replay: Duration,
    ) -> Summary {
        Summary {
            devices: plan.devices().len(),
            threads: threads.max(1),
            cut,
            rsne: plan.rsne(),
            scan,
            replay,
            bytes: self.bytes.load(Ordering::Relaxed),
            spill_bytes: self.spill_bytes.load(Ordering::Relaxed),
            records: self.records.load(Ordering::Relaxed),
            replayed: self.replayed.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
        }
    }
}

struct Shared {
    counters: Counters,
    /// The first error of the replay itself (not of the scan).
    errors: FirstError,
    /// A device's scan failed (the error is that reader's result): staging is pointless.
    scan_failed: AtomicBool,
    /// Batches the workers have staged, emptied, for the readers to fill again: a batch's
    /// buffers stay with the pass instead of being freed on a worker and allocated (and faulted
    /// in) again on a reader.
    spare: Mutex<Vec<Batch>>,
}

impl Shared {
    /// An empty batch: a spare one if there is one.
    fn batch(&self) -> Batch {
        let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).pop();
        spare.unwrap_or_else(Batch::with_capacity)
    }

    /// Gives a staged batch back for reuse, unless a large row grew it (a spilled payload can
    /// be far larger than a batch): that one is freed rather than kept for the whole pass.
    fn recycle(&self, mut batch: Batch) {
        if batch.bytes.capacity() > 2 * BATCH_BYTES {
            return;
        }
        batch.bytes.clear();
        batch.items.clear();
        self.spare.lock().unwrap_or_else(|p| p.into_inner()).push(batch);
    }

    fn fail(&self, e: Error) {
        self.errors.fail(e);
    }

    /// Whether staging should stop: some thread failed.
    fn stopped(&self) -> bool {
        // Acquire: pairs with the Release store of `scan_failed`.
        self.errors.failed() || self.scan_failed.load(Ordering::Acquire)
    }
}

/// One reader's progress, on a cache line of its own (readers poll each other's).
#[derive(Default)]
#[repr(align(128))]
struct DeviceProgress {
    /// The SSN of the last valid record read (0 before the first): a lower bound of the
    /// device's last durable SSN, and that SSN once `done`. Never decreases.
    last: AtomicU64,
    /// Set once the reader has read its last record (or failed). Once set, never unset, and
    /// `last` no longer changes.
    done: AtomicBool,
}

/// What the readers of the single pass know of each other (module doc).
struct Frontier {
    devices: Vec<DeviceProgress>,
    /// Readers in [`Frontier::wait`]; while there are any, progress is signalled too.
    waiting: AtomicUsize,
    /// Signalled when a reader is done or, while some reader waits, has progressed. Waiters
    /// also poll ([`WAIT_POLL`]), so a missed signal only delays them.
    lock: Mutex<()>,
    changed: Condvar,
}

impl Frontier {
    fn new(devices: usize) -> Frontier {
        Frontier {
            devices: (0..devices).map(|_| DeviceProgress::default()).collect(),
            waiting: AtomicUsize::new(0),
            lock: Mutex::new(()),
            changed: Condvar::new(),
        }
    }

    fn publish(&self, me: usize, last: Ssn) {
        self.devices[me].last.store(last.0, Ordering::Relaxed);
        if self.waiting.load(Ordering::Relaxed) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.changed.notify_all();
        }
    }

    /// Marks reader `me` done (idempotent) and wakes the waiting readers.
    fn finish(&self, me: usize) {
        // Release: pairs with the Acquire loads in `bounds`, so that a reader that sees
        // `done` sees the final `last`.
        self.devices[me].done.store(true, Ordering::Release);
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.changed.notify_all();
    }

    /// Lower and upper bounds of `H_me = min over e != me of max(last_e, cut)` (module doc);
    /// `Ssn(u64::MAX)` stands for "no bound".
    fn bounds(&self, me: usize, cut: Ssn) -> (Ssn, Ssn) {
        let (mut lo, mut hi) = (u64::MAX, u64::MAX);
        for (e, p) in self.devices.iter().enumerate() {
            if e == me {
                continue;
            }
            // Acquire: pairs with the Release store in `finish`.
            let done = p.done.load(Ordering::Acquire);
            let last = p.last.load(Ordering::Relaxed).max(cut.0);
            lo = lo.min(last);
            if done {
                hi = hi.min(last);
            }
        }
        (Ssn(lo), Ssn(hi))
    }

    /// Sleeps until another reader is done or progresses, or [`WAIT_POLL`] has passed.
    fn wait(&self) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let _unused = self.changed.wait_timeout(guard, WAIT_POLL);
        self.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How a reader decides whether a record is replayed.
#[derive(Clone, Copy)]
enum Horizon<'a> {
    /// RSNe is known (the plan's second pass).
    Known(Ssn),
    /// RSNe is learned during the single pass; `me` is this reader's index.
    Learning { frontier: &'a Frontier, me: usize },
}

impl Horizon<'_> {
    /// The rule's answer for `record`, or `None` if the other readers' progress does not
    /// decide it yet.
    fn decide(&self, record: &Record<'_>, cut: Ssn, bounds: (Ssn, Ssn)) -> Option<Action> {
        let (lo, hi) = match self {
            Horizon::Known(rsne) => return Some(select(record, cut, *rsne)),
            Horizon::Learning { .. } => bounds,
        };
        let at_lo = select(record, cut, lo);
        (at_lo == select(record, cut, hi)).then_some(at_lo)
    }

    fn bounds(&self, cut: Ssn) -> (Ssn, Ssn) {
        match self {
            Horizon::Known(rsne) => (*rsne, *rsne),
            Horizon::Learning { frontier, me } => frontier.bounds(*me, cut),
        }
    }
}

/// A record the reader could not decide yet, copied out of the reader's buffer.
struct Held {
    segment: SegmentNo,
    offset: u64,
    ssn: Ssn,
    kind: RecordKind,
    blind: bool,
    /// Its payload in `HeldQueue::bytes`.
    start: usize,
    len: usize,
}

/// Undecided records of one reader, in SSN order.
#[derive(Default)]
struct HeldQueue {
    held: VecDeque<Held>,
    bytes: Vec<u8>,
    /// Bytes at the front of `bytes` that belong to records already decided.
    consumed: usize,
}

impl HeldQueue {
    fn push(&mut self, segment: SegmentNo, offset: u64, record: &Record<'_>) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(record.payload);
        self.held.push_back(Held {
            segment,
            offset,
            ssn: record.ssn,
            kind: record.kind,
            blind: record.blind,
            start,
            len: record.payload.len(),
        });
    }

    /// Bytes held for undecided records.
    fn held_bytes(&self) -> usize {
        self.bytes.len() - self.consumed
    }

    /// Forgets everything.
    fn clear(&mut self) {
        self.held.clear();
        self.bytes.clear();
        self.consumed = 0;
    }

    /// Calls `f` with each front record that `decide` decides, in order, and removes it; stops
    /// at the first undecided one.
    fn drain_decided(
        &mut self,
        mut decide: impl FnMut(&Record<'_>) -> Option<Action>,
        mut f: impl FnMut(SegmentNo, u64, &Record<'_>, Action),
    ) {
        while let Some(h) = self.held.front() {
            let record = Record {
                ssn: h.ssn,
                kind: h.kind,
                blind: h.blind,
                payload: &self.bytes[h.start..h.start + h.len],
            };
            let Some(action) = decide(&record) else { break };
            f(h.segment, h.offset, &record, action);
            self.consumed = h.start + h.len;
            self.held.pop_front();
        }
        if self.held.is_empty() {
            self.bytes.clear();
            self.consumed = 0;
        } else if self.consumed > self.bytes.len() / 2 && self.consumed >= BATCH_BYTES {
            // Keep the buffer from growing: move the undecided tail to the front.
            let gone = self.consumed;
            self.bytes.drain(..gone);
            for h in &mut self.held {
                h.start -= gone;
            }
            self.consumed = 0;
        }
    }
}

/// The log of every device read once and reduced to the newest write per `(table, key)`,
/// partitioned as the workers staged it; made by [`stage`] (or inside [`replay`]) and
/// installed with [`StagedLog::install`]. Nothing has reached a target yet.
pub struct StagedLog {
    stages: Vec<Stage>,
    summary: Summary,
}

impl std::fmt::Debug for StagedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedLog")
            .field("partitions", &self.stages.len())
            .field("writes", &self.writes())
            .field("summary", &self.summary)
            .finish()
    }
}

impl StagedLog {
    /// Staged writes: one per `(table, key)` that a replayed entry wrote.
    pub fn writes(&self) -> usize {
        self.stages.iter().map(Stage::len).sum()
    }

    /// Installs the staged writes into `target`: [`Target::install_staged`] once per partition,
    /// all partitions in parallel (no key is in two), then [`Target::finish_staged`] on the
    /// caller's thread. Returns the replay's [`Summary`], whose `replay` time covers the pass
    /// that staged the log and this install (not what ran in between).
    ///
    /// Errors: [`Error::Install`] or whatever the target returns; installs that already
    /// happened stay.
    pub fn install(self, target: &dyn Target) -> Result<Summary, Error> {
        let start = Instant::now();
        let StagedLog { stages, mut summary } = self;
        let errors = FirstError::default();
        std::thread::scope(|s| {
            let mut stages = stages.into_iter();
            let first = stages.next();
            for (i, stage) in stages.enumerate() {
                let errors = &errors;
                spawn_named(s, format!("replay-install-{}", i + 1), move || {
                    if let Err(e) = target.install_staged(stage.into_writes()) {
                        errors.fail(e);
                    }
                });
            }
            if let Some(stage) = first {
                if let Err(e) = target.install_staged(stage.into_writes()) {
                    errors.fail(e);
                }
            }
        });
        if !errors.failed() {
            if let Err(e) = target.finish_staged() {
                errors.fail(e);
            }
        }
        errors.into_result()?;
        summary.replay += start.elapsed();
        Ok(summary)
    }
}

/// Reads every device of `devices` **once** (one reader thread per device, `threads` staging
/// workers, at least 1): the scan of [`RecoveryPlan::scan`] and the staging of [`replay`] in
/// the same pass (module doc). Returns the plan — the same as [`RecoveryPlan::scan`] with
/// `options` would have made — and the log reduced to the newest write per key of every value
/// record with `S < ssn <= RSNe`, plus every blind value record `> S`, where `S =
/// options.checkpoint_ssn`. [`StagedLog::install`] then installs it; in between the plan can
/// be sealed and a checkpoint loaded. `progress` is called on the caller's thread every
/// [`PROGRESS_INTERVAL`] and once at the end (`bytes_total`: the segments' sizes, an upper
/// bound, until the final report, whose totals are what was read).
///
/// Errors: those of [`RecoveryPlan::scan`] first (a damaged record, a read failure, a bad
/// device list; the first failing device in id order); then [`Error::Corrupt`] for a value
/// payload that does not parse and [`Error::Unsupported`] for a command record that would
/// have to be replayed.
pub fn stage(
    devices: Vec<DeviceLog>,
    options: ScanOptions,
    threads: usize,
    progress: &dyn Fn(&Progress),
) -> Result<(RecoveryPlan, StagedLog), Error> {
    stage_with(devices, options, threads, Tuning::DEFAULT, progress)
}

/// [`stage`] with other [`Tuning`] (tests use tiny caps, so that readers wait for each other
/// all the time, and publish at every record).
pub(crate) fn stage_with(
    mut devices: Vec<DeviceLog>,
    options: ScanOptions,
    threads: usize,
    tuning: Tuning,
    progress: &dyn Fn(&Progress),
) -> Result<(RecoveryPlan, StagedLog), Error> {
    let start = Instant::now();
    check_devices(&mut devices)?;
    let cut = options.checkpoint_ssn;
    let read = ReadOptions { unsynced_window: options.unsynced_window };
    let bytes_total = devices
        .iter()
        .flat_map(|d| &d.segments)
        .map(|(_, segment)| segment.len().unwrap_or(0))
        .sum();
    let frontier = Frontier::new(devices.len());
    let run = run_pass(
        &devices,
        read,
        cut,
        |me| Horizon::Learning { frontier: &frontier, me },
        |me| frontier.finish(me),
        tuning,
        threads,
        (bytes_total, 0),
        progress,
    );
    let plan = RecoveryPlan::from_scans(devices, run.scans, options, start)?;
    run.shared.errors.into_result()?;
    let c = &run.shared.counters;
    let summary = c.summary(&plan, cut, threads, Duration::ZERO, start.elapsed());
    Ok((plan, StagedLog { stages: run.stages, summary }))
}

/// Replays `plan` into `target`: every value record with `cut < ssn <= RSNe`, plus every blind
/// value record `> cut` (DESIGN.md §5), read a second time after the scan, staged on `threads`
/// worker threads (at least 1; one reader thread per device besides) and installed with
/// [`StagedLog::install`] (each key once, the newest write). Markers and abort records are
/// skipped; a command record that would have to be replayed fails with [`Error::Unsupported`]
/// (PACMAN is a later step). `progress` is called on the caller's thread every
/// [`PROGRESS_INTERVAL`] and once at the end. [`stage`] does the same in one pass with the
/// scan.
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
    let start = Instant::now();
    let rsne = plan.rsne();
    let run = run_pass(
        &plan.devices,
        plan.read_options(),
        cut,
        |_| Horizon::Known(rsne),
        |_| {},
        Tuning::DEFAULT,
        threads,
        (plan.bytes(), plan.records()),
        progress,
    );
    // A device that fails now changed since the scan.
    for scanned in run.scans {
        scanned?;
    }
    run.shared.errors.into_result()?;
    let c = &run.shared.counters;
    let summary = c.summary(plan, cut, threads, plan.scan_time(), start.elapsed());
    StagedLog { stages: run.stages, summary }.install(target)
}

/// What one pass of readers and workers produced.
struct Pass {
    /// Per device, in the order of the devices given.
    scans: Vec<Scanned>,
    /// Per worker (empty if the pass failed).
    stages: Vec<Stage>,
    shared: Shared,
}

/// Runs one reader per device and `threads` staging workers until all are done, reporting
/// progress on the caller's thread. `horizon(i)` is the rule of the reader of `devices[i]`,
/// and `finished(i)` runs when that reader has stopped, whatever the outcome.
#[allow(clippy::too_many_arguments)]
fn run_pass<'h>(
    devices: &[DeviceLog],
    read: ReadOptions,
    cut: Ssn,
    horizon: impl Fn(usize) -> Horizon<'h> + Sync,
    finished: impl Fn(usize) + Sync,
    tuning: Tuning,
    threads: usize,
    (bytes_total, records_total): (u64, u64),
    progress: &dyn Fn(&Progress),
) -> Pass {
    let threads = threads.max(1);
    let start = Instant::now();
    let seed = std::hash::RandomState::new().hash_one(0x5eed_u64);
    let shared = Shared {
        counters: Counters::default(),
        errors: FirstError::default(),
        scan_failed: AtomicBool::new(false),
        spare: Mutex::new(Vec::new()),
    };
    // `records_total` 0: the totals are estimates until the end, where they are what was done.
    let report = |shared: &Shared, end: bool| {
        let bytes_done = shared.counters.bytes.load(Ordering::Relaxed);
        let records_done = shared.counters.records.load(Ordering::Relaxed);
        let exact = end && records_total == 0;
        progress(&Progress {
            phase: Phase::Replay,
            bytes_done,
            bytes_total: if exact { bytes_done } else { bytes_total.max(bytes_done) },
            records_done,
            records_total: if exact { records_done } else { records_total },
            elapsed: start.elapsed(),
        })
    };
    let (scans, stages) = std::thread::scope(|s| {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let mut senders = Vec::with_capacity(threads);
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let (tx, rx) = mpsc::sync_channel::<Batch>(CHANNEL_BATCHES);
            senders.push(tx);
            let (shared, done) = (&shared, done_tx.clone());
            let name = format!("replay-stage-{}", workers.len());
            workers.push(spawn_named(s, name, move || {
                let stage = worker(rx, shared);
                drop(done);
                stage
            }));
        }
        let mut readers = Vec::with_capacity(devices.len());
        for (i, device) in devices.iter().enumerate() {
            let (shared, senders, done) = (&shared, senders.clone(), done_tx.clone());
            let (horizon, finished) = (&horizon, &finished);
            readers.push(spawn_named(s, format!("replay-read-{i}"), move || {
                let mut out = Dispatch::new(device.clone(), seed, senders, shared);
                let scanned = read_device(device, read, cut, horizon(i), tuning, &mut out, shared);
                if scanned.is_err() {
                    // Release: pairs with the Acquire load in `Shared::stopped`.
                    shared.scan_failed.store(true, Ordering::Release);
                }
                finished(i);
                drop(out);
                drop(done);
                scanned
            }));
        }
        drop(senders);
        drop(done_tx);
        // Every thread holds a `done` sender: disconnection means all have finished.
        while let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(PROGRESS_INTERVAL) {
            report(&shared, false);
        }
        let scans: Vec<Scanned> =
            readers.into_iter().map(|h| h.join().expect("replay reader panicked")).collect();
        let stages: Vec<Stage> =
            workers.into_iter().map(|h| h.join().expect("replay worker panicked")).collect();
        (scans, stages)
    });
    report(&shared, true);
    let stages = if shared.stopped() { Vec::new() } else { stages };
    Pass { scans, stages, shared }
}

/// Stages every batch of its partition until every reader is done (or some thread failed:
/// then the stage is incomplete and is dropped).
fn worker(rx: mpsc::Receiver<Batch>, shared: &Shared) -> Stage {
    let mut stage = Stage::default();
    for batch in rx {
        let n = batch.items.len() as u64;
        let items = &batch.items;
        for (i, item) in items.iter().enumerate() {
            // Look ahead: the slot of the entry PREFETCH_SLOT ahead, the staged write of the one
            // PREFETCH_WRITE ahead (whose slot was asked for earlier), the staged row of the one
            // PREFETCH_ROW ahead (whose write was asked for earlier).
            if let Some(ahead) = items.get(i + PREFETCH_SLOT) {
                stage.prefetch(ahead.hash);
            }
            if let Some(ahead) = items.get(i + PREFETCH_WRITE) {
                stage.prefetch_write(ahead.hash);
            }
            if let Some(ahead) = items.get(i + PREFETCH_ROW) {
                stage.prefetch_row(ahead.hash);
            }
            let start = item.start as usize;
            let key = &batch.bytes[start..start + item.key_len as usize];
            let row = (item.row_len != u32::MAX).then(|| {
                let at = start + item.key_len as usize;
                &batch.bytes[at..at + item.row_len as usize]
            });
            stage.put(item.hash, item.table, key, row, item.ssn);
        }
        shared.counters.entries.fetch_add(n, Ordering::Relaxed);
        shared.recycle(batch);
        if shared.stopped() {
            break; // drops `rx`: readers sending here stop staging
        }
    }
    stage
}

/// A reader's way to the workers: one batch per partition.
struct Dispatch {
    /// The device's log (its id for errors, its spill files for spilled records).
    log: DeviceLog,
    seed: u64,
    senders: Vec<mpsc::SyncSender<Batch>>,
    batches: Vec<Batch>,
    replayed: u64,
    /// A worker's channel closed, or some thread failed: nothing more is staged.
    stopped: bool,
}

impl Dispatch {
    fn new(
        log: DeviceLog,
        seed: u64,
        senders: Vec<mpsc::SyncSender<Batch>>,
        shared: &Shared,
    ) -> Dispatch {
        let batches = senders.iter().map(|_| shared.batch()).collect();
        Dispatch { log, seed, senders, batches, replayed: 0, stopped: false }
    }

    /// Carries out `action` for `record` (at `segment`, `offset`): sends its entries to the
    /// workers, or records why the replay fails.
    fn apply(
        &mut self,
        segment: SegmentNo,
        offset: u64,
        record: &Record<'_>,
        action: Action,
        shared: &Shared,
    ) {
        if self.stopped {
            return;
        }
        match action {
            Action::Skip => {}
            Action::Unsupported => {
                let device = self.log.device;
                shared.fail(Error::Unsupported { device, segment, offset, ssn: record.ssn });
                self.stopped = true;
            }
            Action::Values => {
                self.replayed += 1;
                let ssn = record.ssn;
                // A spilled record stands for the value payload in its spill file.
                let spilled = match record.kind {
                    RecordKind::Spilled => {
                        match self.log.read_spill(segment, offset, record.payload) {
                            Ok(payload) => {
                                let n = payload.len() as u64;
                                shared.counters.spill_bytes.fetch_add(n, Ordering::Relaxed);
                                Some(payload)
                            }
                            Err(e) => {
                                shared.fail(e);
                                self.stopped = true;
                                return;
                            }
                        }
                    }
                    _ => None,
                };
                let payload = spilled.as_deref().unwrap_or(record.payload);
                let threads = self.senders.len();
                let (seed, batches, senders) = (self.seed, &mut self.batches, &self.senders);
                let mut closed = false;
                let parsed = for_each_value(payload, |table, key, row| {
                    let h = hash_entry(seed, table, key);
                    let p = partition(h, threads);
                    batches[p].push(h, table, key, row, ssn);
                    if batches[p].is_full() {
                        let full = std::mem::replace(&mut batches[p], shared.batch());
                        // A closed channel: the worker stopped because something failed.
                        closed |= senders[p].send(full).is_err();
                    }
                });
                if let Err(reason) = parsed {
                    let device = self.log.device;
                    shared.fail(Error::Corrupt { device, segment, offset, reason });
                    self.stopped = true;
                }
                self.stopped |= closed;
            }
        }
    }

    /// Sends the partly filled batches.
    fn flush(&mut self) {
        for (p, batch) in std::mem::take(&mut self.batches).into_iter().enumerate() {
            if self.stopped {
                return;
            }
            if !batch.items.is_empty() {
                self.stopped |= self.senders[p].send(batch).is_err();
            }
        }
    }
}

/// Reads one device: scans it (the result is its scan, `Err` if the device's log is damaged
/// or unreadable) and hands its selected records to `out`. Replay errors go to `shared`. With
/// a known RSNe it stops early once staging stopped (the plan's scan has checked the device);
/// while learning RSNe it always reads to the end, so that the scan's result is complete.
///
/// While learning, a record the others' progress does not decide is held; once more than
/// `tuning.held_cap` bytes are held, the reader publishes exactly where it is and waits until
/// the others' progress decides enough of them (module doc: this cannot deadlock).
fn read_device(
    log: &DeviceLog,
    read: ReadOptions,
    cut: Ssn,
    horizon: Horizon<'_>,
    tuning: Tuning,
    out: &mut Dispatch,
    shared: &Shared,
) -> Scanned {
    let mut scanner = DeviceScanner::new(log, cut);
    let learning = matches!(horizon, Horizon::Learning { .. });
    let Some(mut reader) = log.reader(read) else { return Ok(scanner.finish(None)) };
    let mut held = HeldQueue::default();
    let (mut bytes, mut records) = (0u64, 0u64);
    let c = &shared.counters;
    let flush_counts = |bytes: &mut u64, records: &mut u64, out: &mut Dispatch| {
        c.bytes.fetch_add(std::mem::take(bytes), Ordering::Relaxed);
        c.records.fetch_add(std::mem::take(records), Ordering::Relaxed);
        c.replayed.fetch_add(std::mem::take(&mut out.replayed), Ordering::Relaxed);
    };
    let mut bounds = horizon.bounds(cut);
    while let Some(r) = reader.next_record()? {
        scanner.record(&r)?;
        records += 1;
        bytes += r.record.encoded_len() as u64;
        // Every so many records or bytes (a bulk load's records can be megabytes long).
        let tick = records % tuning.publish_every == 0 || bytes >= PUBLISH_BYTES;
        if let (true, Horizon::Learning { frontier, me }) = (tick, horizon) {
            frontier.publish(me, r.record.ssn);
        }
        if out.stopped {
            if !learning {
                return Ok(scanner.finish(None));
            }
            held.clear();
        } else {
            // Staging does not depend on the order of records, so a decided record goes at
            // once even when older ones are held.
            match horizon.decide(&r.record, cut, bounds) {
                Some(action) => out.apply(r.segment, r.offset, &r.record, action, shared),
                None => held.push(r.segment, r.offset, &r.record),
            }
            if !held.held.is_empty() && (tick || held.held_bytes() > tuning.held_cap) {
                bounds = horizon.bounds(cut);
                drain(&mut held, horizon, cut, bounds, out, shared);
                if let Horizon::Learning { frontier, me } = horizon {
                    if held.held_bytes() > tuning.held_cap {
                        // Others may be waiting for this reader: publish exactly where it is.
                        frontier.publish(me, r.record.ssn);
                    }
                    while held.held_bytes() > tuning.held_cap && !out.stopped && !shared.stopped() {
                        frontier.wait();
                        bounds = horizon.bounds(cut);
                        drain(&mut held, horizon, cut, bounds, out, shared);
                    }
                }
            }
        }
        if tick {
            // Fresh bounds for the next records (stale ones are only more cautious: `select`
            // is monotone in RSNe, so a record decided between stale bounds is decided).
            bounds = horizon.bounds(cut);
            flush_counts(&mut bytes, &mut records, out);
            out.stopped |= shared.stopped();
        }
    }
    let end = reader.end().expect("a reader that returned None has an end");
    drop(reader);
    flush_counts(&mut bytes, &mut records, out);
    if let Horizon::Learning { frontier, me } = horizon {
        if let Some(last) = end.last_ssn {
            frontier.publish(me, last);
        }
        frontier.finish(me);
        // Every held record is decided once every reader is done.
        while !held.held.is_empty() && !out.stopped && !shared.stopped() {
            drain(&mut held, horizon, cut, horizon.bounds(cut), out, shared);
            if !held.held.is_empty() {
                frontier.wait();
            }
        }
    }
    c.replayed.fetch_add(std::mem::take(&mut out.replayed), Ordering::Relaxed);
    out.flush();
    Ok(scanner.finish(Some(end)))
}

/// Applies the decided records at the front of `held`.
fn drain(
    held: &mut HeldQueue,
    horizon: Horizon<'_>,
    cut: Ssn,
    bounds: (Ssn, Ssn),
    out: &mut Dispatch,
    shared: &Shared,
) {
    held.drain_decided(
        |record| horizon.decide(record, cut, bounds),
        |segment, offset, record, action| out.apply(segment, offset, record, action, shared),
    );
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

    /// A staged row that a longer one replaces grows to exactly that length: the row moves
    /// into the engine with its allocation, so slack would stay for the table's life.
    #[test]
    fn a_replaced_row_keeps_no_slack() {
        let mut stage = Stage::default();
        let h = hash_entry(1, 1, b"k");
        stage.put(h, 1, b"k", Some(&[1; 100]), Ssn(1));
        stage.put(h, 1, b"k", Some(&[2; 101]), Ssn(2));
        stage.put(h, 1, b"k", Some(&[3; 90]), Ssn(3));
        stage.put(h, 1, b"k", Some(&[4; 103]), Ssn(4));
        let writes = stage.into_writes();
        assert_eq!(writes.len(), 1);
        let row = writes.into_iter().next().expect("one").with_owned_row(|_, _, row, _| row);
        let row = row.expect("a row");
        assert_eq!(row, vec![4; 103]);
        assert_eq!(row.capacity(), 103, "no slack beyond the newest row");
    }

    /// The stage's index finds a key past slots of other keys with the same full hash or the
    /// same home slot, across its growth, and never loses or duplicates a key.
    #[test]
    fn stage_probes_past_collisions_and_grows() {
        let mut stage = Stage::default();
        let keys = 5000u32;
        // Hashes: few distinct ones (many keys share a full hash), all in few home slots.
        let hash = |k: u32| u64::from(k % 7) << 20;
        for round in 0..3u64 {
            for k in 0..keys {
                let row = format!("{k}@{round}");
                stage.prefetch(hash(k));
                stage.prefetch_write(hash(k));
                stage.prefetch_row(hash(k));
                stage.put(hash(k), 1, &k.to_le_bytes(), Some(row.as_bytes()), Ssn(10 + round));
            }
        }
        // An older write of every key changes nothing.
        for k in 0..keys {
            stage.put(hash(k), 1, &k.to_le_bytes(), None, Ssn(1));
        }
        assert_eq!(stage.len(), keys as usize);
        // The hint finds the first write with the hash bits when it is near its home slot
        // (16384 slots: every key's home is slot 0, key k sits in slot k).
        assert_eq!(stage.peek(hash(3)), Some(3));
        assert_eq!(stage.peek(0x2000), None, "home slot (8192, past the cluster) empty");
        let mut got: Vec<(Vec<u8>, Option<Vec<u8>>, u64)> = stage
            .into_writes()
            .into_iter()
            .map(|s| (s.key().to_vec(), s.row().map(<[u8]>::to_vec), s.ssn.0))
            .collect();
        got.sort();
        let mut want: Vec<_> = (0..keys)
            .map(|k| (k.to_le_bytes().to_vec(), Some(format!("{k}@2").into_bytes()), 12))
            .collect();
        want.sort();
        assert!(got == want, "every key once, with its newest row");
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

    /// The single pass's decision for a record on device 0 of three, from what devices 1 and 2
    /// have published: `Some` only when every possible final RSNe gives the same answer.
    #[test]
    fn undecided_until_the_other_devices_say() {
        let value =
            |ssn, blind| Record { ssn: Ssn(ssn), kind: RecordKind::Value, blind, payload: &[] };
        let marker = Record { ssn: Ssn(50), kind: RecordKind::Marker, blind: false, payload: &[] };
        use Action::{Skip, Values};
        // (cut, device 1 (last, done), device 2 (last, done), record, decision)
        let cases = [
            (0, (10, false), (20, false), value(5, false), Some(Values)),
            (0, (10, false), (20, false), value(10, false), Some(Values)),
            (0, (10, false), (20, false), value(11, false), None),
            (0, (10, false), (20, false), value(11, true), Some(Values)),
            (0, (10, true), (20, false), value(11, false), Some(Skip)),
            (0, (10, false), (20, true), value(15, false), None),
            (0, (10, false), (20, true), value(21, false), Some(Skip)),
            (0, (30, true), (40, true), value(31, false), Some(Skip)),
            (0, (30, true), (40, true), value(30, false), Some(Values)),
            (0, (0, true), (40, false), value(1, false), Some(Skip)),
            (0, (0, true), (40, false), value(1, true), Some(Values)),
            (25, (0, true), (0, true), value(25, true), Some(Skip)),
            (25, (10, false), (20, false), value(26, false), None),
            (25, (10, true), (20, true), value(26, false), Some(Skip)),
            (25, (10, false), (20, false), value(24, false), Some(Skip)),
            (0, (10, false), (20, false), marker, Some(Skip)),
        ];
        for (cut, (l1, d1), (l2, d2), record, want) in cases {
            let frontier = Frontier::new(3);
            frontier.publish(0, Ssn(1000)); // its own progress does not matter
            for (e, last, done) in [(1, l1, d1), (2, l2, d2)] {
                frontier.publish(e, Ssn(last));
                if done {
                    frontier.finish(e);
                }
            }
            let horizon = Horizon::Learning { frontier: &frontier, me: 0 };
            let bounds = horizon.bounds(Ssn(cut));
            assert_eq!(
                horizon.decide(&record, Ssn(cut), bounds),
                want,
                "cut {cut}, devices {l1}/{d1} {l2}/{d2}, {record:?}"
            );
        }
        // One device: nothing to wait for.
        let frontier = Frontier::new(1);
        let horizon = Horizon::Learning { frontier: &frontier, me: 0 };
        let bounds = horizon.bounds(Ssn::ZERO);
        assert_eq!(horizon.decide(&value(99, false), Ssn::ZERO, bounds), Some(Values));
    }

    /// Held records come out in order, as far as they are decided, and the buffer is compacted
    /// without losing bytes.
    #[test]
    fn held_queue_drains_the_decided_prefix() {
        let mut held = HeldQueue::default();
        let payloads: Vec<Vec<u8>> =
            (0..200u64).map(|i| vec![i as u8; 1000 + i as usize]).collect();
        for (i, p) in payloads.iter().enumerate() {
            let r = Record {
                ssn: Ssn(i as u64 + 1),
                kind: RecordKind::Value,
                blind: false,
                payload: p,
            };
            held.push(SegmentNo(3), i as u64 * 7, &r);
        }
        let mut seen = Vec::new();
        for upto in [0u64, 50, 120, 120, 200] {
            held.drain_decided(
                |r| (r.ssn.0 <= upto).then_some(Action::Values),
                |segment, offset, r, _| {
                    assert_eq!(segment, SegmentNo(3));
                    assert_eq!(offset, (r.ssn.0 - 1) * 7);
                    seen.push((r.ssn.0, r.payload.to_vec()));
                },
            );
            assert_eq!(seen.len() as u64, upto);
            let left: usize = payloads[upto as usize..].iter().map(Vec::len).sum();
            assert_eq!(held.held_bytes(), left);
        }
        let want: Vec<_> =
            payloads.iter().enumerate().map(|(i, p)| (i as u64 + 1, p.clone())).collect();
        assert_eq!(seen, want);
        assert!(held.bytes.is_empty());
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
