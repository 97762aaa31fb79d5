//! What the durability suites (`logging`, `scaling`, `latency`, `replay`; issue 3) share: log
//! configurations, the key-value table and its transactions, and a driver that runs many
//! committer threads for a fixed window and counts what completed inside it.
//!
//! ## The table and the transactions
//!
//! The engine suite's table ([`super::engine`]): int8 key, ~100-byte row `(k, v, pad)` encoded
//! with `sql::types`. Two transactions, each one value record of one entry when logged:
//!
//! - insert: `begin; insert(new key); commit` (write-only; keys from a shared counter, never
//!   reused);
//! - RMW: `begin; get; decode; v += 1; encode; update; commit`, retried on conflict.
//!
//! Neither is *blind* in the acknowledge rule's sense: `txn` records an insert's uniqueness
//! check as a read (a miss), and `update` reads the row it replaces, so both wait for
//! `ssn <= CSN`, not for their own device's DSN.
//!
//! ## The driver ([`drive`])
//!
//! `committers` threads start at once and run transactions back to back, committing as
//! [`Commit`] says: without waiting, blocking in `commit_durable`, or with deferred
//! acknowledgement over many sessions per thread. A commit counts when it is *acknowledged*
//! (returns, or is seen durable) inside the window `[start + warmup, start + warmup + window)`;
//! threads stop at the end of the window. Throughput is the count over the window; latency (when
//! asked for) runs from the start of the commit call to the acknowledgement. Sampled at both
//! ends of the window: log bytes filled, write+sync pairs issued (group commit), and the
//! process's CPU time and context switches (`getrusage`), which say whether the two cores, the
//! wake-ups or the log were the limit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sql::types::{decode_row, encode_row};
use sql::Value;
use wal::testing::{StripedDevice, ThrottledDevice};
use wal::{DirStore, LogDevice, LogOptions, Pending, SegmentStore};

use super::engine::{key, row, row_types, PAD_LEN, TABLE};
use super::Rng;

/// Stack size of committer threads: the transactions are shallow, and the suites start
/// hundreds of threads.
const COMMITTER_STACK: usize = 256 << 10;
/// Rows per transaction while loading the table.
const LOAD_BATCH: u64 = 1000;
/// More than a value entry's bytes besides its key and row (table id, lengths, flags).
const LOAD_ENTRY_OVERHEAD: usize = 16;

/// A scratch directory `<base>/aspen-bench-<pid>-<n>`, removed (with its contents) on drop.
#[derive(Debug)]
pub(super) struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub(super) fn new(base: &Path, name: &str) -> std::io::Result<Scratch> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("aspen-bench-{}-{n}-{name}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Scratch { path })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// `wal/0 … wal/n-1` inside the scratch directory.
    pub(super) fn device_dirs(&self, n: usize) -> Vec<PathBuf> {
        (0..n).map(|d| self.path.join("wal").join(d.to_string())).collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Write+sync pairs and their bytes, shared by every segment of one device.
#[derive(Debug, Default)]
pub(super) struct PairCounts {
    pairs: AtomicU64,
    bytes: AtomicU64,
    /// Pairs of one record header or less: an idle-device marker written alone.
    markers: AtomicU64,
    /// Pair times ([`PairCounts::start_timing`]): on only during a latency measurement's
    /// window.
    timing: AtomicBool,
    /// When the current synchronous pair's first `write_at` started (then `sync` ends it).
    write_started: parking_lot::Mutex<Option<Instant>>,
    /// When each pair in flight through io_uring was submitted, oldest first (the log waits
    /// for its pairs in submission order). Kept whether timing or not, so that each `wait`
    /// pops its own pair's submission.
    submitted: parking_lot::Mutex<std::collections::VecDeque<Instant>>,
    /// Each pair that ended while timing: when it started (its first write, or its
    /// submission) and when the log learned that it was durable, in ns since timing started.
    times: parking_lot::Mutex<(Option<Instant>, Vec<PairTime>)>,
}

/// One write+sync pair's start and end, in ns since the window started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct PairTime {
    pub(super) start: u64,
    pub(super) end: u64,
}

impl PairTime {
    /// How long the pair took (ns).
    pub(super) fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

impl PairCounts {
    /// (write+sync pairs, bytes in them, marker-only pairs) so far.
    fn get(&self) -> (u64, u64, u64) {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (load(&self.pairs), load(&self.bytes), load(&self.markers))
    }

    fn count_write(&self, len: usize) {
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
        if len <= wal::MIN_RESERVATION {
            self.markers.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Starts timing pairs, forgetting earlier times. A pair that started before is not
    /// timed.
    fn start_timing(&self) {
        *self.times.lock() = (Some(Instant::now()), Vec::new());
        *self.write_started.lock() = None;
        self.timing.store(true, Ordering::Relaxed);
    }

    /// Stops timing and returns the pairs timed, in the order they ended.
    fn take_times(&self) -> Vec<PairTime> {
        self.timing.store(false, Ordering::Relaxed);
        std::mem::take(&mut self.times.lock().1)
    }

    fn timing(&self) -> bool {
        self.timing.load(Ordering::Relaxed)
    }

    fn ended(&self, started: Option<Instant>) {
        if !self.timing() {
            return;
        }
        let end = Instant::now();
        let mut times = self.times.lock();
        // A pair that started before timing did is left out, as a synchronous one is.
        if let (Some(epoch), Some(started)) = (times.0, started) {
            if started >= epoch {
                let ns = |t: Instant| (t - epoch).as_nanos() as u64;
                times.1.push(PairTime { start: ns(started), end: ns(end) });
            }
        }
    }
}

/// A [`LogDevice`] wrapper that counts write+sync pairs and their bytes (group commit) into
/// shared [`PairCounts`], and otherwise forwards everything, including pipelined pairs.
#[derive(Debug)]
pub(super) struct Counted<D> {
    inner: D,
    counts: Arc<PairCounts>,
}

impl<D: LogDevice> LogDevice for Counted<D> {
    // A pair is a `submit_write_sync`, or a `write_at` then a `sync` (a requester's flush,
    // `wal::LogOptions::assist_below`); the log calls nothing else on a segment.
    fn write_at(&self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.counts.count_write(bytes.len());
        if self.counts.timing() {
            self.counts.write_started.lock().get_or_insert_with(Instant::now);
        }
        self.inner.write_at(offset, bytes)
    }
    fn sync(&self) -> std::io::Result<()> {
        self.counts.pairs.fetch_add(1, Ordering::Relaxed);
        let result = self.inner.sync();
        if self.counts.timing() {
            let started = self.counts.write_started.lock().take();
            self.counts.ended(started);
        }
        result
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read_at(offset, buf)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
    fn allocate(&self, len: u64) -> std::io::Result<()> {
        self.inner.allocate(len)
    }
    fn submit_write_sync(&self, offset: u64, buf: Vec<u8>) -> std::io::Result<Pending> {
        self.counts.pairs.fetch_add(1, Ordering::Relaxed);
        self.counts.count_write(buf.len());
        let submitted = Instant::now();
        let pending = self.inner.submit_write_sync(offset, buf)?;
        self.counts.submitted.lock().push_back(submitted);
        Ok(pending)
    }
    fn wait(&self, pending: Pending) -> std::io::Result<Vec<u8>> {
        let result = self.inner.wait(pending);
        let started = self.counts.submitted.lock().pop_front();
        self.counts.ended(started);
        result
    }
    fn overlaps_pairs(&self) -> bool {
        self.inner.overlaps_pairs()
    }
}

/// `inner`, counted into a new [`PairCounts`].
fn counted<D>(inner: D) -> (Counted<D>, Arc<PairCounts>) {
    let counts = Arc::new(PairCounts::default());
    (Counted { inner, counts: counts.clone() }, counts)
}

/// A [`SegmentStore`] whose segments are [`Counted`] into one [`PairCounts`].
#[derive(Debug)]
struct CountedStore<S> {
    inner: S,
    counts: Arc<PairCounts>,
}

impl<S: SegmentStore> SegmentStore for CountedStore<S> {
    fn segment_size(&self) -> u64 {
        self.inner.segment_size()
    }
    fn list(&self) -> std::io::Result<Vec<wal::SegmentNo>> {
        self.inner.list()
    }
    fn create(&self, no: wal::SegmentNo) -> std::io::Result<Box<dyn LogDevice>> {
        let inner = self.inner.create(no)?;
        Ok(Box::new(Counted { inner, counts: self.counts.clone() }))
    }
    fn remove(&self, no: wal::SegmentNo) -> std::io::Result<()> {
        self.inner.remove(no)
    }
    fn retire(&self, segment: Box<dyn LogDevice>) {
        self.inner.retire(segment)
    }
    fn write_spill(&self, id: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_spill(id, bytes)
    }
    fn read_spill(&self, id: u64) -> std::io::Result<Vec<u8>> {
        self.inner.read_spill(id)
    }
    fn remove_spill(&self, id: u64) -> std::io::Result<()> {
        self.inner.remove_spill(id)
    }
    fn list_spills(&self) -> std::io::Result<Vec<u64>> {
        self.inner.list_spills()
    }
}

/// How an emulated device runs a write+sync pair (`wal::testing::ThrottledDevice`'s two models).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceModel {
    /// One pair on the device at a time (`ThrottledDevice::new`).
    Serial,
    /// A pair's sync latency overlaps later transfers (`ThrottledDevice::pipelined`).
    Pipelined,
}

/// An emulated device for the scaling suite: bandwidth and `fdatasync` latency.
#[derive(Clone, Copy, Debug)]
pub(super) struct Emulated {
    pub(super) bytes_per_sec: u64,
    pub(super) sync: Duration,
    pub(super) model: DeviceModel,
}

impl Emulated {
    fn device(self) -> ThrottledDevice<Sink> {
        match self.model {
            DeviceModel::Serial => {
                ThrottledDevice::new(Sink::default(), self.bytes_per_sec, self.sync)
            }
            DeviceModel::Pipelined => {
                ThrottledDevice::pipelined(Sink::default(), self.bytes_per_sec, self.sync)
            }
        }
    }
}

/// The medium of an emulated device: it keeps the length written and drops the bytes (the
/// scaling suite never reads its logs back).
///
/// It was a `MemDevice`, whose one never-rotated segment grew its vectors by doubling: a
/// write that crossed a power of two copied the whole log so far (hundreds of MB late in a
/// run), on the logger thread, after the emulated transfer. Every device's DSN waited for it
/// (CSN = min DSN), so all devices went idle together for 45–85 ms at a time: 15–25% of a
/// 4-device row's bandwidth, and the 100–600 ms p99s of its insert rows.
#[derive(Debug, Default)]
struct Sink {
    len: AtomicU64,
}

impl LogDevice for Sink {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.len.fetch_max(offset + bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn read_at(&self, _offset: u64, _buf: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "an emulated device keeps no bytes",
        ))
    }
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.len.load(Ordering::Relaxed))
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.len.store(len, Ordering::Relaxed);
        Ok(())
    }
    fn allocate(&self, len: u64) -> std::io::Result<()> {
        self.len.fetch_max(len, Ordering::Relaxed);
        Ok(())
    }
}

/// Where a configuration's log goes.
#[derive(Clone, Debug)]
pub(super) enum LogKind {
    /// No devices: `wal::Log::new(buffers)` (SSNs are allocated; no record is encoded or
    /// written).
    Off { buffers: usize },
    /// `n` device directories under `base` (`wal::Log` over `wal::DirStore`s: zero-filled
    /// segments, io_uring where available, the suite's `LogOptions`).
    Dirs { base: PathBuf, n: usize },
    /// `n` devices in this process's memory ([`RamStore`]: a write is a copy into a buffer, a
    /// sync nothing): the logging machinery without any kernel I/O.
    Memory { n: usize },
    /// Poplar over `n` emulated devices: `n` buffers, `n` loggers, `n` SSN sequences.
    Poplar { n: usize, device: Emulated },
    /// The centralized baseline: one buffer (one SSN sequence, one logger) whose device is a
    /// [`StripedDevice`] over `n` emulated devices in stripes of `unit` bytes.
    Central { n: usize, device: Emulated, unit: u64 },
}

/// Segments in this process's memory for [`LogKind::Memory`]: a write copies into a buffer of
/// the segment's size, a sync does nothing. Buffers are allocated and touched up front and
/// reused after a segment is removed, so no page is faulted in while the log runs either: no
/// kernel work at all. (Stale bytes of a reused buffer are never read: the bench does not
/// recover these logs.)
#[derive(Debug)]
struct RamStore {
    segment_size: u64,
    segments: parking_lot::Mutex<std::collections::BTreeMap<wal::SegmentNo, Arc<RamDevice>>>,
    free: Arc<parking_lot::Mutex<Vec<Vec<u8>>>>,
}

impl RamStore {
    /// Buffers allocated (and their pages touched) up front: a measurement window writes a
    /// few segments, and the bench deletes them after each.
    const SPARE_SEGMENTS: usize = 4;

    fn new(segment_size: u64) -> RamStore {
        let free = (0..Self::SPARE_SEGMENTS)
            .map(|_| {
                let mut bytes = vec![0u8; segment_size as usize];
                bytes.iter_mut().step_by(4096).for_each(|b| *b = 1);
                bytes
            })
            .collect();
        RamStore {
            segment_size,
            segments: Default::default(),
            free: Arc::new(parking_lot::Mutex::new(free)),
        }
    }
}

/// One segment of a [`RamStore`]; gives its buffer back to the store's free list when dropped.
#[derive(Debug)]
struct RamDevice {
    bytes: parking_lot::Mutex<Vec<u8>>,
    free: Arc<parking_lot::Mutex<Vec<Vec<u8>>>>,
}

impl Drop for RamDevice {
    fn drop(&mut self) {
        self.free.lock().push(std::mem::take(&mut *self.bytes.lock()));
    }
}

impl SegmentStore for RamStore {
    fn segment_size(&self) -> u64 {
        self.segment_size
    }
    fn list(&self) -> std::io::Result<Vec<wal::SegmentNo>> {
        Ok(self.segments.lock().keys().copied().collect())
    }
    fn create(&self, no: wal::SegmentNo) -> std::io::Result<Box<dyn LogDevice>> {
        let size = self.segment_size as usize;
        let bytes = self.free.lock().pop().unwrap_or_else(|| vec![0; size]);
        let device =
            Arc::new(RamDevice { bytes: parking_lot::Mutex::new(bytes), free: self.free.clone() });
        self.segments.lock().insert(no, device.clone());
        Ok(Box::new(device))
    }
    fn remove(&self, no: wal::SegmentNo) -> std::io::Result<()> {
        self.segments.lock().remove(&no);
        Ok(())
    }
}

impl LogDevice for RamDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        let offset = offset as usize;
        self.bytes.lock()[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let bytes = self.bytes.lock();
        let start = (offset as usize).min(bytes.len());
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.bytes.lock().len() as u64)
    }
    fn truncate(&self, _len: u64) -> std::io::Result<()> {
        Ok(())
    }
    fn allocate(&self, _len: u64) -> std::io::Result<()> {
        Ok(())
    }
}

/// An open log with what the suites read from it.
pub(super) struct OpenLog {
    pub(super) log: Arc<wal::Log>,
    counters: Vec<Arc<PairCounts>>,
    /// Keeps the segment directories until the log is dropped (declared after `log`, so the
    /// log's loggers finish before the files go).
    _scratch: Option<Scratch>,
}

impl OpenLog {
    pub(super) fn open(
        kind: &LogKind,
        options: &LogOptions,
    ) -> Result<OpenLog, Box<dyn std::error::Error>> {
        Ok(match kind {
            LogKind::Off { buffers } => OpenLog {
                log: Arc::new(wal::Log::new(*buffers)),
                counters: Vec::new(),
                _scratch: None,
            },
            LogKind::Dirs { base, n } => {
                let scratch = Scratch::new(base, "log")?;
                let mut stores: Vec<Box<dyn SegmentStore>> = Vec::new();
                let mut counters = Vec::new();
                for dir in scratch.device_dirs(*n) {
                    let counts = Arc::new(PairCounts::default());
                    let inner = DirStore::open(&dir, options.device)?;
                    stores.push(Box::new(CountedStore { inner, counts: counts.clone() }));
                    counters.push(counts);
                }
                let log = wal::Log::with_stores(stores, options)?;
                OpenLog { log: Arc::new(log), counters, _scratch: Some(scratch) }
            }
            LogKind::Memory { n } => {
                let (stores, counters): (Vec<Box<dyn SegmentStore>>, Vec<_>) = (0..*n)
                    .map(|_| {
                        let counts = Arc::new(PairCounts::default());
                        let inner = RamStore::new(options.device.segment_size);
                        let store = CountedStore { inner, counts: counts.clone() };
                        (Box::new(store) as Box<dyn SegmentStore>, counts)
                    })
                    .unzip();
                let log = wal::Log::with_stores(stores, options)?;
                OpenLog { log: Arc::new(log), counters, _scratch: None }
            }
            LogKind::Poplar { n, device } => {
                let (devices, counters): (Vec<Box<dyn LogDevice>>, Vec<_>) = (0..*n)
                    .map(|_| {
                        let (d, c) = counted(device.device());
                        (Box::new(d) as Box<dyn LogDevice>, c)
                    })
                    .unzip();
                let log = wal::Log::with_devices(devices, options)?;
                OpenLog { log: Arc::new(log), counters, _scratch: None }
            }
            LogKind::Central { n, device, unit } => {
                let members =
                    (0..*n).map(|_| Arc::new(device.device()) as Arc<dyn LogDevice>).collect();
                let (striped, counts) = counted(StripedDevice::new(members, *unit));
                let log = wal::Log::with_devices(vec![Box::new(striped)], options)?;
                OpenLog { log: Arc::new(log), counters: vec![counts], _scratch: None }
            }
        })
    }

    /// Bytes reserved in every buffer so far (each reservation is filled right after it is
    /// taken).
    pub(super) fn log_bytes(&self) -> u64 {
        (0..self.log.n_buffers()).map(|b| self.log.reserved_bytes(b)).sum()
    }

    /// Write+sync pairs, their bytes, and marker-only pairs so far, over every counted device
    /// (0 if not counted).
    pub(super) fn pair_counts(&self) -> (u64, u64, u64) {
        self.counters
            .iter()
            .map(|c| c.get())
            .fold((0, 0, 0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2))
    }

    /// Starts timing every counted device's write+sync pairs ([`PairCounts::start_timing`]).
    pub(super) fn start_pair_times(&self) {
        self.counters.iter().for_each(|c| c.start_timing());
    }

    /// Stops timing and returns each counted device's pairs.
    pub(super) fn take_pair_times(&self) -> Vec<Vec<PairTime>> {
        self.counters.iter().map(|c| c.take_times()).collect()
    }

    /// Deletes the closed segments that only hold records written so far (as a checkpoint
    /// would allow), so that long runs do not fill tmpfs or the disk.
    pub(super) fn trim(&self) {
        if let Err(e) = self.log.delete_segments_below(self.log.max_ssn()) {
            eprintln!("bench: could not delete old log segments: {e}");
        }
    }
}

/// A transaction kind of [`drive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Workload {
    /// `begin; insert(new key); commit`.
    Insert,
    /// `begin; get; update(v + 1); commit`.
    Rmw,
}

impl Workload {
    pub(super) fn label(self) -> &'static str {
        match self {
            Workload::Insert => "insert (write-only)",
            Workload::Rmw => "read-modify-write",
        }
    }
}

/// How a transaction commits and is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Commit {
    /// `commit()`: installed, never waited for (`synchronous_commit = off`).
    NoWait,
    /// `commit_durable()`: the committer thread blocks until the acknowledge rule holds.
    Durable,
    /// Deferred acknowledgement, as a server that does not block a thread per commit does
    /// (`server::ack`): each committer thread serves `sessions` sessions round robin (session
    /// `j` of thread `i` uses log buffer `i · sessions + j`). It runs a session's transaction
    /// with `commit()`, its record filled lazily, keeps the ticket, and acknowledges tickets in
    /// commit order once `Log::is_durable` says so; a session's next transaction starts only
    /// after its previous one was acknowledged, so when all `sessions` wait, the thread blocks
    /// in `Log::wait_durable` on the oldest. Its tickets are requested (`Log::request`) every
    /// `server::ack::REQUEST_BATCH` commits and before it blocks: the server's demand-driven
    /// group commit, where a connection thread requests before it parks. Latency is commit →
    /// acknowledgement seen.
    Deferred { sessions: usize },
    /// An open loop: transactions arrive at `per_second` in all (a Poisson process on each
    /// committer thread, one thread per core), whenever the earlier ones are acknowledged.
    /// Each commit is filled lazily and watched (`Log::watch`, as `server::ack` watches a
    /// connection's commit), and requested when the thread is about to sleep until its next
    /// arrival, or every `server::ack::REQUEST_BATCH` commits. Latency is commit → the
    /// watcher's notification (on the thread that published the DSN). Unlike a closed loop,
    /// whose sessions commit again as soon as they are acknowledged, and so always just after
    /// the next write+sync has started, these commits fall anywhere in a sync's cycle.
    Open { per_second: u64 },
}

impl Commit {
    pub(super) fn label(self) -> String {
        match self {
            Commit::NoWait => "`commit` (no wait)".into(),
            Commit::Durable => "`commit_durable`".into(),
            Commit::Deferred { sessions } => format!("deferred ack, {sessions} sessions/thread"),
            Commit::Open { per_second } => {
                format!("open loop, {} txn/s offered", super::fmt_rate(per_second as f64))
            }
        }
    }
}

/// An engine over one log with the bench table loaded.
pub(super) struct Bed {
    pub(super) engine: txn::Engine,
    pub(super) log: OpenLog,
    rows: u64,
    next_insert: AtomicU64,
    pad: String,
}

impl Bed {
    /// Opens the log with `options`, creates the table and loads `rows` rows (through the log,
    /// without waiting), then waits until the load is durable.
    pub(super) fn new(
        kind: &LogKind,
        rows: u64,
        options: &LogOptions,
    ) -> Result<Bed, Box<dyn std::error::Error>> {
        Bed::with_pad(kind, rows, PAD_LEN, options)
    }

    /// [`Bed::new`] with rows padded by `pad_len` characters instead of [`PAD_LEN`].
    pub(super) fn with_pad(
        kind: &LogKind,
        rows: u64,
        pad_len: usize,
        options: &LogOptions,
    ) -> Result<Bed, Box<dyn std::error::Error>> {
        let log = OpenLog::open(kind, options)?;
        let engine = txn::Engine::new(log.log.clone());
        engine.create_table(TABLE, vec![]);
        let pad = "x".repeat(pad_len);
        // Each load transaction's value payload stays within the log's spill threshold: a
        // store without spill files (the memory rows' `RamStore`) refuses a bigger one, and a
        // small ring (`--ring-kib`) lowers the threshold.
        let budget = log.log.spill_threshold() / 2;
        let mut k = 1;
        while k <= rows {
            let mut t = engine.begin(0);
            let (mut i, mut bytes) = (k, 0);
            while i <= rows && i < k + LOAD_BATCH && (i == k || bytes < budget) {
                let (key, row) = (key(i), row(i, 0, &pad));
                bytes += key.len() + row.len() + LOAD_ENTRY_OVERHEAD;
                t.insert(TABLE, key, row)?;
                i += 1;
            }
            t.commit()?;
            k = i;
        }
        log.log.wait_csn(log.log.max_ssn())?;
        Ok(Bed { engine, log, rows, next_insert: AtomicU64::new(rows + 1), pad })
    }

    /// One transaction of `workload` on log buffer `buffer`, retried on conflict, committed
    /// with `commit_durable` if `durable`, else `commit`. Returns what the commit returned,
    /// when the (last) commit call started, and the conflicts retried.
    fn run_one(
        &self,
        workload: Workload,
        durable: bool,
        buffer: usize,
        rng: &mut Rng,
        // Fill the record lazily (`Transaction::set_lazy_log`): somebody requests it later.
        lazy: bool,
    ) -> Result<(txn::CommitInfo, Instant, u64), txn::Error> {
        let types = row_types();
        let mut conflicts = 0;
        let k = match workload {
            Workload::Insert => self.next_insert.fetch_add(1, Ordering::Relaxed),
            Workload::Rmw => rng.range(1, self.rows),
        };
        let kb = key(k);
        loop {
            let mut t = self.engine.begin(buffer);
            if lazy {
                t.set_lazy_log();
            }
            let prepared = match workload {
                Workload::Insert => t.insert(TABLE, kb.clone(), row(k, 0, &self.pad)),
                Workload::Rmw => (|| {
                    let old = t.get(TABLE, &kb)?.expect("every key in 1..=rows was loaded");
                    let mut values = decode_row(&old, &types).expect("the bench wrote this row");
                    if let Value::Int64(v) = &mut values[1] {
                        *v += 1;
                    }
                    let mut new = Vec::with_capacity(old.len());
                    encode_row(&values, &mut new);
                    t.update(TABLE, &kb, new)
                })(),
            };
            let started = Instant::now();
            let result =
                prepared.and_then(|()| if durable { t.commit_durable() } else { t.commit() });
            match result {
                Ok(info) => return Ok((info, started, conflicts)),
                Err(txn::Error::Conflict { .. }) => conflicts += 1,
                Err(e) => return Err(e),
            }
        }
    }
}

/// What one committer thread counted inside the window.
#[derive(Default)]
struct Counts {
    commits: u64,
    conflicts: u64,
    latencies: Vec<u64>,
    /// Open loop: how late each counted commit was called after its scheduled arrival (ns).
    late: Vec<u64>,
}

/// The window and what to record, shared by the committer threads.
struct Window {
    start: Instant,
    end: Instant,
    record_latency: bool,
}

impl Window {
    /// Counts one acknowledgement at `now` of a commit that started at `started`. Returns
    /// false once the window has ended (the thread should stop).
    fn count(&self, counts: &mut Counts, started: Instant, now: Instant, retried: u64) -> bool {
        if now >= self.end {
            return false;
        }
        if now >= self.start {
            counts.commits += 1;
            counts.conflicts += retried;
            if self.record_latency {
                counts.latencies.push((now - started).as_nanos() as u64);
            }
        }
        true
    }
}

/// One committer thread of [`drive`].
fn committer(
    bed: &Bed,
    workload: Workload,
    commit: Commit,
    id: usize,
    committers: usize,
    window: &Window,
    stop: &AtomicBool,
) -> Result<Counts, Box<dyn std::error::Error + Send + Sync>> {
    let mut rng = Rng::new(0xC0FF_EE00 + id as u64);
    let mut counts = Counts::default();
    let log = &bed.log.log;
    match commit {
        Commit::NoWait | Commit::Durable => {
            while !stop.load(Ordering::Relaxed) {
                let (_, started, retried) =
                    bed.run_one(workload, commit == Commit::Durable, id, &mut rng, false)?;
                if !window.count(&mut counts, started, Instant::now(), retried) {
                    break;
                }
            }
        }
        Commit::Deferred { sessions } => {
            // Unacknowledged commits in commit order: (ticket, commit started, conflicts).
            let mut pending = std::collections::VecDeque::with_capacity(sessions);
            // Demand-driven group commit, as `server::ack` does: records are filled lazily and
            // requested every `REQUEST_BATCH` commits and when the thread is about to block.
            let mut unrequested = Unrequested::default();
            let mut session = 0;
            'run: while !stop.load(Ordering::Relaxed) {
                // Session `session` of this thread is the server's session number
                // `id + session * committers`: the server hands out log buffers and connection
                // threads to its sessions in turn, in the same order, so a thread's sessions
                // share the buffers of its residue (with as many buffers as threads: one).
                let (info, started, retried) =
                    bed.run_one(workload, false, id + session * committers, &mut rng, true)?;
                session = (session + 1) % sessions;
                let ticket = info.ticket.expect("every bench transaction writes");
                debug_assert!(!ticket.blind, "an insert records its uniqueness check as a read");
                pending.push_back((ticket, started, retried));
                unrequested.add(log, ticket);
                // The oldest session must be acknowledged before it runs again.
                if pending.len() >= sessions {
                    unrequested.request(log);
                    log.wait_durable(pending[0].0)?;
                }
                while let Some(&(ticket, started, retried)) = pending.front() {
                    if !log.is_durable(ticket) {
                        break;
                    }
                    pending.pop_front();
                    if !window.count(&mut counts, started, Instant::now(), retried) {
                        break 'run;
                    }
                }
            }
        }
        Commit::Open { per_second } => {
            counts = open_loop(bed, workload, per_second, id, committers, window)?;
        }
    }
    Ok(counts)
}

/// A committer thread's commits not requested yet (demand-driven group commit, as
/// `server::ack` does): requested every [`crate::ack::REQUEST_BATCH`] commits, and whenever
/// the thread is about to block or sleep.
#[derive(Default)]
struct Unrequested {
    /// The largest unrequested ticket: every bench transaction is non-blind, so requesting it
    /// asks for every smaller one.
    largest: Option<wal::Ticket>,
    count: usize,
}

impl Unrequested {
    fn add(&mut self, log: &wal::Log, ticket: wal::Ticket) {
        if self.largest.is_none_or(|u| u.ssn < ticket.ssn) {
            self.largest = Some(ticket);
        }
        self.count += 1;
        if self.count >= crate::ack::REQUEST_BATCH {
            self.request(log);
        }
    }

    /// Requests what waits; returns the ticket requested, if any.
    fn request(&mut self, log: &wal::Log) -> Option<wal::Ticket> {
        self.count = 0;
        let t = self.largest.take()?;
        log.request(t);
        Some(t)
    }
}

/// The commits a thread of [`Commit::Open`] watches: (scheduled arrival, commit started,
/// acknowledged), and how many watchers have run.
struct Acks {
    seen: parking_lot::Mutex<Vec<(Instant, Instant, Instant)>>,
    done: AtomicU64,
}

/// One committer thread of [`Commit::Open`]: runs until the window ends, then waits for its
/// watchers and counts the commits that started inside the window.
fn open_loop(
    bed: &Bed,
    workload: Workload,
    per_second: u64,
    id: usize,
    committers: usize,
    window: &Window,
) -> Result<Counts, Box<dyn std::error::Error + Send + Sync>> {
    // Sleeps end within a microsecond of their deadline, not the default 50 µs later, so the
    // arrivals keep their schedule. A refusal only makes them later.
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64) };
    let mut rng = Rng::new(0x0BE0_0000 + id as u64);
    let log = &bed.log.log;
    let mean_gap = committers as f64 / per_second.max(1) as f64;
    // Room for every commit up front: the watchers push on the thread that publishes the
    // DSN, which must not stop to copy a growing vector.
    let expected = (window.end - Instant::now()).as_secs_f64() / mean_gap;
    let acks = Arc::new(Acks {
        seen: parking_lot::Mutex::new(Vec::with_capacity((expected * 1.5) as usize + 1024)),
        done: AtomicU64::new(0),
    });
    let mut issued = 0u64;
    let mut unrequested = Unrequested::default();
    let mut next = Instant::now();
    loop {
        let now = Instant::now();
        if now >= window.end {
            break;
        }
        if next > now {
            // About to sleep: request what waits, as a connection thread does before it parks.
            unrequested.request(log);
            sleep_until(next.min(window.end));
            continue;
        }
        // Exponential gaps: a Poisson process of arrivals.
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let due = next;
        next += Duration::from_secs_f64(-(1.0 - u).ln() * mean_gap);
        let (info, started, _) = bed.run_one(workload, false, id, &mut rng, true)?;
        let ticket = info.ticket.expect("every bench transaction writes");
        let seen = Arc::clone(&acks);
        log.watch(
            vec![ticket],
            Box::new(move |outcome| {
                if outcome.is_ok() {
                    seen.seen.lock().push((due, started, Instant::now()));
                }
                seen.done.fetch_add(1, Ordering::Release);
            }),
        );
        issued += 1;
        unrequested.add(log, ticket);
    }
    if let Some(t) = unrequested.request(log) {
        log.wait_durable(t)?;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while acks.done.load(Ordering::Acquire) < issued {
        if Instant::now() > deadline {
            return Err("open loop: commits not acknowledged within 10 s".into());
        }
        std::thread::yield_now();
    }
    let mut counts = Counts::default();
    for &(due, started, acked) in acks.seen.lock().iter() {
        if started >= window.start && started < window.end {
            counts.commits += 1;
            if window.record_latency {
                counts.latencies.push((acked - started).as_nanos() as u64);
                counts.late.push((started - due).as_nanos() as u64);
            }
        }
    }
    Ok(counts)
}

/// What one [`drive`] measured.
#[derive(Clone, Debug, Default)]
pub(super) struct Cell {
    /// Commits that returned inside the window.
    pub(super) commits: u64,
    pub(super) conflicts: u64,
    pub(super) window: Duration,
    /// Log bytes reserved (and filled) during the window.
    pub(super) log_bytes: u64,
    /// Write+sync pairs (and their bytes) during the window, on counted devices.
    pub(super) pairs: u64,
    pub(super) pair_bytes: u64,
    /// Pairs that carried nothing but an idle-device marker.
    pub(super) marker_pairs: u64,
    /// CPU time of the whole process during the window.
    pub(super) cpu: Duration,
    /// Context switches of the whole process during the window.
    pub(super) switches: u64,
    /// `max L.ssn - min L.ssn` over the log's buffers at the end of the window: how far the
    /// devices' SSN sequences drifted apart (a commit waits for `CSN = min DSN`).
    pub(super) ssn_spread: u64,
    /// Commit-call durations in nanoseconds, if recorded (unsorted).
    pub(super) latencies: Vec<u64>,
    /// Open loop with latencies: how late each commit in the window was called after its
    /// scheduled arrival (ns; the thread was busy or held up). Its latency counts from the
    /// call, so a late call hides that wait.
    pub(super) late: Vec<u64>,
    /// With latencies: each counted device's write+sync pairs that ended in the window, in
    /// the order they ended.
    pub(super) pair_times: Vec<Vec<PairTime>>,
}

impl Cell {
    pub(super) fn rate(&self) -> f64 {
        self.commits as f64 / self.window.as_secs_f64()
    }

    /// Log megabytes (10^6 B) per second.
    pub(super) fn log_mb_per_sec(&self) -> f64 {
        self.log_bytes as f64 / self.window.as_secs_f64() / 1e6
    }

    /// Context switches per commit (blocking and waking threads is what waiting costs).
    pub(super) fn switches_per_commit(&self) -> f64 {
        self.switches as f64 / self.commits.max(1) as f64
    }

    /// CPU used over the window as a share of all cores.
    pub(super) fn cpu_share(&self) -> f64 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        self.cpu.as_secs_f64() / (self.window.as_secs_f64() * cores)
    }
}

/// CPU time (user + system) and context switches (voluntary + involuntary) of this process
/// so far, all threads including finished ones (`getrusage(RUSAGE_SELF)`).
/// `CLOCK_MONOTONIC` in seconds: the clock `perf record -k mono` stamps its samples with.
fn monotonic_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec; clock_gettime only writes into it.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

pub(super) fn process_usage() -> (Duration, u64) {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; getrusage only writes into it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return (Duration::ZERO, 0);
    }
    // SAFETY: getrusage returned 0, so it filled the struct (it was zeroed before anyway).
    let usage = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let switches = usage.ru_nvcsw as u64 + usage.ru_nivcsw as u64;
    (tv(usage.ru_utime) + tv(usage.ru_stime), switches)
}

fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        std::thread::sleep(deadline - now);
    }
}

/// Runs `committers` threads of `workload` on `bed` for `warmup + window` (see the module doc).
pub(super) fn drive(
    bed: &Bed,
    workload: Workload,
    commit: Commit,
    committers: usize,
    warmup: Duration,
    window: Duration,
    record_latency: bool,
) -> Result<Cell, Box<dyn std::error::Error>> {
    let stop = AtomicBool::new(false);
    let start = Instant::now() + warmup;
    let w = Window { start, end: start + window, record_latency };
    std::thread::scope(|s| {
        let mut workers = Vec::with_capacity(committers);
        for id in 0..committers {
            let (stop, w) = (&stop, &w);
            let worker = std::thread::Builder::new()
                .name(format!("committer-{id}"))
                .stack_size(COMMITTER_STACK)
                .spawn_scoped(s, move || {
                    let result = committer(bed, workload, commit, id, committers, w, stop);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    result
                })?;
            workers.push(worker);
        }
        sleep_until(w.start);
        if record_latency {
            bed.log.start_pair_times();
        }
        let (bytes0, (pairs0, pair_bytes0, markers0), (cpu0, switches0)) =
            (bed.log.log_bytes(), bed.log.pair_counts(), process_usage());
        let started = monotonic_seconds();
        sleep_until(w.end);
        if std::env::var_os("ASPEN_BENCH_CELL_TIMES").is_some() {
            // For `perf record -k mono` + `perf report --time START,END`: one cell's profile.
            eprintln!("cell window (CLOCK_MONOTONIC): {started:.6},{:.6}", monotonic_seconds());
        }
        let (bytes1, (pairs1, pair_bytes1, markers1), (cpu1, switches1)) =
            (bed.log.log_bytes(), bed.log.pair_counts(), process_usage());
        let pair_times = if record_latency { bed.log.take_pair_times() } else { Vec::new() };
        let log = &bed.log.log;
        let ssns: Vec<u64> = (0..log.n_buffers()).map(|b| log.buffer_ssn(b).0).collect();
        let ssn_spread = ssns.iter().max().unwrap_or(&0) - ssns.iter().min().unwrap_or(&0);
        let mut cell = Cell {
            window,
            log_bytes: bytes1 - bytes0,
            pairs: pairs1 - pairs0,
            pair_bytes: pair_bytes1 - pair_bytes0,
            marker_pairs: markers1 - markers0,
            cpu: cpu1.saturating_sub(cpu0),
            switches: switches1.saturating_sub(switches0),
            ssn_spread,
            pair_times,
            ..Cell::default()
        };
        let mut error = None;
        for worker in workers {
            match worker.join().expect("committer thread panicked") {
                Ok(counts) => {
                    cell.commits += counts.commits;
                    cell.conflicts += counts.conflicts;
                    cell.latencies.extend(counts.latencies);
                    cell.late.extend(counts.late);
                }
                Err(e) => error = Some(e),
            }
        }
        match error {
            Some(e) => Err(e as Box<dyn std::error::Error>),
            None => Ok(cell),
        }
    })
}

/// The `p`-quantile (0..=1) of sorted `values` (nearest rank).
pub(super) fn quantile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Median and range of repeated measurements.
#[derive(Clone, Copy, Debug)]
pub(super) struct Spread {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) max: f64,
}

impl Spread {
    pub(super) fn of(values: &[f64]) -> Spread {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let median = if v.is_empty() {
            0.0
        } else if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
        };
        Spread {
            median,
            min: v.first().copied().unwrap_or(0.0),
            max: v.last().copied().unwrap_or(0.0),
        }
    }

    /// `(max - min) / median` in percent: how far apart the repetitions were.
    pub(super) fn range_pct(&self) -> f64 {
        if self.median > 0.0 {
            (self.max - self.min) / self.median * 100.0
        } else {
            0.0
        }
    }
}

/// How the log writes in `dir`: io_uring if it works there, through a memory mapping on a memory
/// file system (`wal::DirStore` chooses it there), `pwrite` + `fdatasync` where io_uring is
/// unavailable.
pub(super) fn uring_status(dir: &Path) -> String {
    if wal::in_memory_fs(dir) {
        return "through a memory mapping, no sync call (memory file system)".to_string();
    }
    let path = dir.join(format!("aspen-bench-uring-probe-{}", std::process::id()));
    let status = match wal::UringDevice::open(&path, 8) {
        Ok(_) => "io_uring".to_string(),
        Err(e) => format!("pwrite + fdatasync (io_uring unavailable: {e})"),
    };
    let _ = std::fs::remove_file(&path);
    status
}

/// The file system type and device of `dir`, from `/proc/self/mounts` (longest matching mount
/// point), e.g. `tmpfs` or `ext4 on /dev/vda`.
pub(super) fn fs_of(dir: &Path) -> String {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let best = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && dir.starts_with(f[1])).then(|| (f[1].len(), f[0], f[2]))
        })
        .max_by_key(|m| m.0);
    match best {
        Some((_, _, "tmpfs")) => "tmpfs".to_string(),
        Some((_, dev, fstype)) => format!("{fstype} on {dev}"),
        None => "unknown file system".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The open loop keeps to its schedule: it commits no more than its offered rate allows
    /// (a loop that ran flat out, as a closed loop does, would commit many times more), and
    /// every counted commit has its latency from a watcher that ran.
    #[test]
    fn open_loop_commits_at_the_offered_rate() {
        let options = LogOptions::default();
        let bed = Bed::new(&LogKind::Memory { n: 2 }, 1_000, &options).unwrap();
        let window = Duration::from_millis(400);
        let per_second = 5_000;
        let cell = drive(
            &bed,
            Workload::Rmw,
            Commit::Open { per_second },
            2,
            Duration::from_millis(100),
            window,
            true,
        )
        .unwrap();
        let offered = per_second as f64 * window.as_secs_f64();
        assert!(cell.commits > 0, "no commit counted");
        // A Poisson count with mean 2,000 stays far below 3,000.
        assert!(
            (cell.commits as f64) < 1.5 * offered,
            "{} commits, {offered} offered",
            cell.commits
        );
        assert_eq!(cell.latencies.len() as u64, cell.commits);
        assert!(cell.latencies.iter().all(|&ns| ns > 0));
        assert_eq!(cell.late.len() as u64, cell.commits, "one lateness per counted commit");
    }

    /// A measurement that records latencies times every device's write+sync pairs in its
    /// window (and only then): one list per device, each pair shorter than the whole run.
    #[test]
    fn latency_cells_time_the_pairs() {
        let bed = Bed::new(&LogKind::Memory { n: 2 }, 1_000, &LogOptions::default()).unwrap();
        let (warmup, window) = (Duration::from_millis(50), Duration::from_millis(200));
        let commit = Commit::Deferred { sessions: 4 };
        let cell = drive(&bed, Workload::Rmw, commit, 2, warmup, window, true).unwrap();
        assert_eq!(cell.pair_times.len(), 2, "one list per device");
        assert!(cell.pair_times.iter().any(|t| !t.is_empty()), "no pair timed");
        let whole = (warmup + window).as_nanos() as u64;
        for pair in cell.pair_times.iter().flatten() {
            assert!(pair.start <= pair.end && pair.end < whole, "{pair:?}");
        }
        let cell = drive(&bed, Workload::Rmw, commit, 2, warmup, window, false).unwrap();
        assert!(cell.pair_times.is_empty(), "timed without latencies");

        // Pipelined emulated devices: pairs submitted through `submit_write_sync`, several in
        // flight; each `wait` ends its own pair (300 µs of emulated sync at least).
        let sync = Duration::from_micros(300);
        let device = Emulated { bytes_per_sec: 1 << 30, sync, model: DeviceModel::Pipelined };
        let kind = LogKind::Poplar { n: 2, device };
        let bed = Bed::new(&kind, 1_000, &LogOptions::default()).unwrap();
        let commit = Commit::Deferred { sessions: 64 };
        let cell = drive(&bed, Workload::Rmw, commit, 2, warmup, window, true).unwrap();
        let pairs: Vec<&PairTime> = cell.pair_times.iter().flatten().collect();
        assert!(!pairs.is_empty(), "no pair timed");
        for pair in pairs {
            assert!(pair.len() >= sync.as_nanos() as u64, "{pair:?}");
        }
    }

    /// A bed over devices without spill files loads its table in transactions that fit the
    /// log's records, however small the ring (`--ring-kib 256` made the memory rows fail: a
    /// 1,000-row load transaction is ~110 KB, above a quarter of that ring).
    #[test]
    fn a_small_ring_loads_the_memory_bed() {
        let options = LogOptions { ring_bytes: 64 << 10, ..LogOptions::default() };
        let bed = Bed::new(&LogKind::Memory { n: 2 }, 3_000, &options).unwrap();
        assert!(bed.log.log.spill_threshold() < 1_000 * 100, "the test must need small batches");
        let mut t = bed.engine.begin(0);
        assert!(t.get(TABLE, &key(3_000)).unwrap().is_some(), "the last row was loaded");
    }
}
