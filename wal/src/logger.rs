//! One logger thread per device: write the filled prefix, `fdatasync`, publish the DSN.
//!
//! ```text
//! loop {
//!     if fewer pairs are in flight than allowed (adapted, at most max_in_flight: see
//!       [`crate::depth`]), the open segment is not empty, and
//!       a flush is due (see below):
//!         if a CSN waiter wants more than our DSN and our L.ssn: reserve a marker first (it
//!           rides in this pair instead of a pair of its own after it)
//!         close it (under the latch)                      -- everything reserved so far
//!         while it is not filled, complete the pairs in flight (publish their DSNs)
//!         wait until it is filled                         -- the filled-prefix rule (Alg. 2)
//!         copy it out, split at record boundaries where a segment file ends (rotate: wait
//!           for every pair in flight, then create the next segment file), and submit
//!           write+fdatasync pairs at the file offset -- written straight from the ring
//!           instead when it goes out synchronously with nothing in flight and fits the file
//!     else if pairs are in flight:
//!         wait for the oldest; publish DSN = SSN of its last record; give its ring space back
//!     else (idle):
//!         if a CSN waiter wants more than our DSN: reserve a marker (raises L.ssn under the
//!           latch, Algorithm 1 with base = wanted - 1) and fill it -- it goes out next round
//!         else sleep until a flush is due, lazy bytes arrive (start the lazy timer), shutdown
//!           or a failure
//! }
//! ```
//!
//! Group commit without a timer: a lone commit is written as soon as it is filled, and what
//! arrives during a write+sync goes out together in the next round. `group_commit_delay`
//! optionally sleeps before closing a segment, to batch more under light load.
//!
//! **Eager and lazy records.** A flush is *due* when somebody waits for this device: an eager
//! fill or a blind waiter raised `want` above the DSN, or a CSN waiter raised `wanted` above
//! it; or at shutdown; or when the open segment is under pressure (a quarter of the ring, or a
//! reserver waiting for space); or when the lazy timer ran out. Records of
//! `synchronous_commit = off` commits are filled *lazily* ([`crate::Reservation::lazy`]): they
//! neither wake the logger nor make a flush due, so they go out with the next eager record or
//! when the timer (`lazy_flush_delay` after the logger first saw them) runs out -- a few big
//! writes and syncs instead of one pair per commit, like PostgreSQL's `wal_writer_delay`.
//! With a zero delay every flush is due at once (no lazy records).
//!
//! **Requesters flush.** On a device whose write+sync pairs are fast (tmpfs, or a disk with a
//! power-safe write cache: below [`LogOptions::assist_below`] on a moving average), waking the
//! logger costs more than the pair itself: a futex wake, an inter-processor interrupt and two
//! context switches for a few microseconds of I/O, and on a machine with few cores the logger
//! takes a core from the committers whenever it runs. There a requester ([`crate::Log::request`],
//! and the waits that request) whose device's logger is idle takes the logger's state (a lock
//! the logger holds from its wake-up until it is idle again with nothing in flight) and runs
//! the flush itself: the same close, filled-prefix wait, marker and DSN publication, with a
//! synchronous `write` + `fdatasync` instead of an io_uring pair. If the lock is taken it
//! wakes the logger as before (which then flushes what the holder left), so no request is
//! lost. Reservations into an empty segment then do not wake the logger for its lazy timer;
//! an idle logger looks at the open segment every `lazy_flush_delay` instead, and when it does
//! write, it writes the same way (a synchronous pair, none in flight behind it: with io_uring
//! its pairs would keep it busy, so requesters would never find it idle). On slower devices
//! nothing changes: the one logger thread per device does all the writing, pipelined.
//!
//! DSNs are published strictly in submission order: pair `k`'s sync does not cover pair
//! `k-1`'s write if that one had not completed (see [`crate::device`]), so pair `k` counts only
//! once every earlier pair completed `Ok`. Ring space is released with the DSN, so the bytes
//! written but not yet synced never exceed the ring size: recovery reads a device with
//! `ReadOptions { unsynced_window: ring_bytes }`.

use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::buffer::{Inner, Log, Reserved, Space, MIN_RESERVATION};
use crate::depth::Depth;
use crate::device::{DeviceId, DeviceOptions, LogDevice, Pending, SegmentNo};
use crate::error::Error;
use crate::record::{Record, RecordKind, HEADER_LEN, LEN_OFFSET, SSN_OFFSET};
use crate::ssn::Ssn;
use crate::store::{DirStore, OneSegment, SegmentStore};
use crate::sync::{AtomicBool, AtomicU64, Mutex, Ordering};

/// How often the logger re-checks a closed segment for its last fills before it turns to the
/// pairs in flight (a few microseconds).
const FILL_SPINS: u32 = 2000;

/// Options of a log with devices.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// Bytes of each buffer's ring: the most a device can have reserved but not yet durable
    /// (back-pressure), and the largest record. Default 8 MiB.
    pub ring_bytes: usize,
    /// The most write+sync pairs a logger keeps in flight (pipelining on io_uring); within
    /// it, the logger keeps as many as its measurements say pay on the device
    /// (module `depth`). Default 4.
    pub max_in_flight: usize,
    /// Sleep this long before writing, to batch more (the group-commit timer). Default zero:
    /// write as soon as the previous sync returned.
    pub group_commit_delay: Duration,
    /// The longest a lazily filled record ([`crate::Reservation::lazy`]) that nobody waits for
    /// stays in the buffer before the logger writes it anyway (PostgreSQL's
    /// `wal_writer_delay`). Default 10 ms. Zero: lazy records are written like eager ones.
    pub lazy_flush_delay: Duration,
    /// Requesters ([`crate::Log::request`], and the waits that request) write and sync for
    /// an idle logger themselves while the device's write+sync pairs take less than this on
    /// average, and the logger itself writes one synchronous pair at a time there (module doc,
    /// "Requesters flush"): on a device that fast, handing a pair to the logger thread or an
    /// io_uring worker costs a good part of the pair. Zero: always the logger, through
    /// io_uring where available. Default 50 µs (a server's connection thread blocked in a
    /// disk's `fdatasync` delays its other connections: BENCHMARKS.md). Only with a non-zero
    /// `lazy_flush_delay`.
    pub assist_below: Duration,
    /// `L.ssn` of every buffer at start: at restart, at least the largest SSN found in the log
    /// (I2 across restarts). Default [`Ssn::ZERO`].
    pub start_ssn: Ssn,
    /// How [`Log::open`] opens segment files (segment size, preallocation, io_uring).
    pub device: DeviceOptions,
    /// Per device (index `d` = device `d`), the segments that existed before this open, each
    /// with the SSN of its last valid record (`None`: it has none), as recovery's scan found
    /// them. They are registered as closed, so [`Log::delete_segments_below`] can delete them
    /// once a checkpoint covers them; segments not listed here are never deleted by this log.
    /// Every listed segment must exist in the device's store and come before the segment this
    /// log starts. Default: empty (nothing adopted).
    pub existing_segments: Vec<Vec<(SegmentNo, Option<Ssn>)>>,
    /// Per device, the spill files that valid records of the existing segments refer to, with
    /// those records' SSNs, as recovery's scan found them: adopted, so that
    /// [`Log::delete_segments_below`] deletes them once a checkpoint covers their records.
    /// Spill files not listed are left alone (recovery deletes the orphans). Default: empty.
    pub existing_spills: Vec<Vec<(u64, Ssn)>>,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            ring_bytes: 8 << 20,
            max_in_flight: 4,
            group_commit_delay: Duration::ZERO,
            lazy_flush_delay: Duration::from_millis(10),
            assist_below: Duration::from_micros(50),
            start_ssn: Ssn::ZERO,
            device: DeviceOptions::default(),
            existing_segments: Vec::new(),
            existing_spills: Vec::new(),
        }
    }
}

/// A segment this log wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SegmentMeta {
    no: SegmentNo,
    /// The SSN of its last durable record.
    last_ssn: Option<Ssn>,
    /// The logger moved on to a later segment.
    closed: bool,
}

/// Per-device state shared with the public API.
#[derive(Debug)]
pub(crate) struct DeviceState {
    /// `DSN`: only grows; see `Inner::publish_dsn`.
    pub(crate) dsn: AtomicU64,
    store: Box<dyn SegmentStore>,
    segments: Mutex<Vec<SegmentMeta>>,
    /// Spill files whose records are in this device's log: (id, the record's SSN).
    spills: Mutex<Vec<(u64, Ssn)>>,
    /// The id of the next spill file.
    next_spill: AtomicU64,
    /// The flushing side (`None` in models without loggers): held by the logger thread while
    /// it works, and by a requester that flushes for an idle logger ([`Inner::assist`]).
    pub(crate) flush: Mutex<Option<Logger>>,
    /// Whether requesters flush for an idle logger: the device's pairs are fast (below
    /// [`LogOptions::assist_below`] on average), so a requester's own write+sync costs less
    /// than waking the logger. Then a reservation into an empty segment does not wake the
    /// logger either (it ticks instead).
    pub(crate) assist: AtomicBool,
    /// The logger's current limit of pairs in flight ([`crate::depth`]), for reports.
    in_flight_limit: AtomicU64,
}

impl DeviceState {
    /// A device with no segment files and DSN 0, for models of the DSN/CSN protocol that run
    /// without logger threads (`durability::loom_tests`).
    #[cfg(all(test, loom))]
    pub(crate) fn for_model() -> DeviceState {
        DeviceState {
            dsn: AtomicU64::new(0),
            store: Box::new(crate::testing::MemStore::new(1 << 16)),
            segments: Mutex::new(Vec::new()),
            spills: Mutex::new(Vec::new()),
            next_spill: AtomicU64::new(0),
            flush: Mutex::new(None),
            assist: AtomicBool::new(false),
            in_flight_limit: AtomicU64::new(1),
        }
    }
}

impl Inner {
    /// Records that spill file `id` belongs to the record of SSN `ssn` on `device` (from the
    /// fill of that record), so that it is deleted with the log it belongs to.
    pub(crate) fn register_spill(&self, device: usize, id: u64, ssn: Ssn) {
        if let Some(state) = self.devices.get(device) {
            state.spills.lock().push((id, ssn));
        }
    }
}

#[derive(Debug)]
struct InFlight {
    pending: Pending,
    last_ssn: Ssn,
    ring_end: u64,
    /// When the pair was submitted (its time to completion feeds [`Logger::pair_ns`]).
    submitted: Instant,
    /// How many pairs were in flight when it was submitted (a sample for [`Depth`]; a pair
    /// written and synced on the flushing thread is one of depth 0).
    depth: usize,
}

/// What one turn of the logger's loop did.
enum Step {
    /// Wrote, completed a pair or reserved a marker: turn again.
    Worked,
    /// Nothing in flight and nothing due: the logger may sleep.
    Idle,
    /// The log failed, or shut down with everything written.
    Stop,
}

/// The flushing side of one device: what the module doc's loop works with. It lives in the
/// device's [`DeviceState::flush`] lock, which the logger thread holds while it works (from a
/// wake-up until it is idle again, with nothing in flight), and which a requester takes when it
/// flushes for an idle logger ([`Inner::assist`]).
#[derive(Debug)]
pub(crate) struct Logger {
    d: usize,
    segment: Box<dyn LogDevice>,
    segment_no: SegmentNo,
    file_offset: u64,
    segment_size: u64,
    pending: VecDeque<InFlight>,
    /// How many of the pairs through io_uring may be in flight (module [`crate::depth`]).
    depth: Depth,
    delay: Duration,
    lazy_delay: Duration,
    /// When the lazy records in the open segment must go out (set when the logger first sees
    /// them while no flush is due; cleared when it closes a segment).
    lazy_deadline: Option<Instant>,
    pool: Vec<Vec<u8>>,
    /// Requesters flush themselves while pairs take less than this on average (zero: never).
    assist_below: Duration,
    /// Moving average of the time from a pair's submission to its completion, ns (`None`
    /// before the first pair).
    pair_ns: Option<u64>,
}

/// The logger thread of device `d`.
fn run(inner: Arc<Inner>, d: usize) {
    request_short_slice();
    if let Err(e) = run_inner(&inner, d) {
        inner.fail(&Error::io(DeviceId(d as u16), e));
    }
}

/// The scheduler slice a logger thread asks for ([`request_short_slice`]).
const LOGGER_SLICE: Duration = Duration::from_micros(100);

/// Asks the kernel for a short scheduler slice for this thread (`sched_setattr` with
/// `sched_runtime` under `SCHED_OTHER`, Linux 6.12 and later; older kernels ignore it or refuse
/// it, and the logger runs as before). A logger sleeps most of the time and works briefly after
/// each sync; while the committers keep every core busy, EEVDF lets a waking task with a shorter
/// slice preempt the running one at once, instead of at the end of the running one's slice
/// (0.75 ms and more). It stays a fair share, unlike a real-time class (which measured worse:
/// BENCHMARKS.md, "the logger at real-time priority"). Measured: p99 commit latency on one
/// device at 16 sessions per core 0.25-0.36 ms against 0.53-0.85 ms without (BENCHMARKS.md,
/// session of 2026-11-27 02:51–).
fn request_short_slice() {
    /// `struct sched_attr`, version 0 (48 bytes).
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }
    // The thread's nice value stays as it is (`sched_setattr` sets it too); if it cannot be
    // read, 0 is written, which needs no privilege.
    // SAFETY: errno is this thread's; getpriority takes no pointers.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if nice == -1 && *libc::__errno_location() != 0 {
            0
        } else {
            nice
        }
    };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: LOGGER_SLICE.as_nanos() as u64,
        deadline: 0,
        period: 0,
    };
    // SAFETY: `attr` is a valid `sched_attr` of the size it states, alive for the call; pid 0
    // is the calling thread.
    // A refusal leaves the default slice: nothing else depends on it.
    let _ = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
}

fn run_inner(inner: &Inner, d: usize) -> io::Result<()> {
    let b = &inner.buffers[d];
    let device = &inner.devices[d];
    loop {
        // Work, holding the flusher, until nothing is in flight and nothing is due.
        let (lazy_delay, lazy_deadline, delay) = {
            let mut guard = device.flush.lock();
            let logger = guard.as_mut().expect("a device with a logger thread has its flusher");
            // Lazy bytes seen for the first time (woken for them, or at a tick): start the
            // timer. A deadline left over from before a requester's flush only makes the next
            // flush come early.
            if logger.lazy_deadline.is_none()
                && !logger.flush_due(inner)
                && !b.latch.lock().open.is_empty()
            {
                logger.lazy_deadline = Some(Instant::now() + logger.lazy_delay);
            }
            loop {
                match logger.step(inner)? {
                    Step::Worked => {}
                    Step::Idle => break,
                    Step::Stop => return Ok(()),
                }
            }
            (logger.lazy_delay, logger.lazy_deadline, logger.delay)
        };
        // Idle, or holding lazy records back until `lazy_deadline`. Requesters may flush for
        // us meanwhile (`Inner::assist`). While they do, a reservation into an empty segment
        // does not wake us (`Inner::reserve`), so we look at the open segment every
        // `lazy_delay` instead: an unrequested lazy record still goes out within two delays.
        let timing = lazy_deadline.is_some();
        let tick =
            (!timing && device.assist.load(Ordering::Relaxed)).then(|| Instant::now() + lazy_delay);
        let ring_capacity = b.ring.as_ref().expect("a logged buffer has a ring").capacity();
        b.demand.wait_until_deadline(
            || {
                let (open, pressed) = {
                    let l = b.latch.lock();
                    (!l.open.is_empty(), l.pressed(ring_capacity))
                };
                (open && (!timing || pressed || flush_due(inner, d, lazy_delay, lazy_deadline)))
                    || inner.shutdown.load(Ordering::Acquire)
                    || inner.failed.load(Ordering::Acquire)
                    || marker_needed(inner, d)
            },
            lazy_deadline.or(tick),
        );
        if !delay.is_zero() && !inner.shutdown.load(Ordering::Acquire) {
            std::thread::sleep(delay);
        }
    }
}

/// Whether the open segment of device `d` goes out now, lazy records included (module doc);
/// pressure is checked under the latch by the caller.
fn flush_due(inner: &Inner, d: usize, lazy_delay: Duration, deadline: Option<Instant>) -> bool {
    // Acquire (all three): pairs with the Release stores of fillers, waiters and `Drop`.
    let want = inner.buffers[d].want.load(Ordering::Acquire);
    let wanted = inner.wanted.load(Ordering::Acquire);
    lazy_delay.is_zero()
        || want.max(wanted) > inner.dsn(d).0
        || inner.shutdown.load(Ordering::Acquire)
        || deadline.is_some_and(|t| Instant::now() >= t)
}

fn marker_needed(inner: &Inner, d: usize) -> bool {
    inner.wanted.load(Ordering::Acquire) > inner.dsn(d).0
}

impl Inner {
    /// A requester's flush (module doc, "Requesters flush"): if device `d` is fast and its
    /// logger idle, writes and syncs what is filled on it (with a marker if a CSN waiter needs
    /// one) on this thread and publishes the DSN. Returns false if it did not (the logger is
    /// busy, or the device slow): the caller wakes the logger instead.
    pub(crate) fn assist(&self, d: usize) -> bool {
        let Some(device) = self.devices.get(d) else { return false };
        if !device.assist.load(Ordering::Relaxed) {
            return false;
        }
        let Some(mut guard) = device.flush.try_lock() else { return false };
        let Some(logger) = guard.as_mut() else { return false };
        if let Err(e) = logger.flush_now(self) {
            drop(guard);
            self.fail(&Error::io(DeviceId(d as u16), e));
        }
        true
    }
}

impl Logger {
    /// One turn of the module doc's loop.
    fn step(&mut self, inner: &Inner) -> io::Result<Step> {
        let b = &inner.buffers[self.d];
        // Acquire (here and below for `failed`, `shutdown`, `wanted`): pairs with the Release
        // stores in `fail`, `Drop for Log` and `Inner::wait`. Another device's failure stops
        // this logger too.
        if inner.failed.load(Ordering::Acquire) {
            return Ok(Step::Stop);
        }
        if self.pending.len() < self.depth.allowed() {
            let due = self.flush_due(inner);
            let ring_capacity = b.ring.as_ref().expect("a logged buffer has a ring").capacity();
            if due && self.marker_behind(inner) {
                // A CSN waiter wants an SSN this device has not reached: the marker rides in
                // the pair about to go out instead of a pair of its own afterwards.
                self.reserve_marker(inner);
            }
            // On a fast device the logger writes as its requesters do: synchronously, one pair
            // at a time (module doc, "Requesters flush"). So it does where one pair in flight
            // pays best ([`crate::depth`]): it would only wait for that pair, and through
            // io_uring the pair costs a hand-off to a kernel worker more.
            let direct =
                inner.devices[self.d].assist.load(Ordering::Relaxed) || self.depth.allowed() == 1;
            if self.flush_open(inner, |l| due || l.pressed(ring_capacity), direct)? {
                return Ok(Step::Worked);
            }
            if self.pending.is_empty() {
                if inner.shutdown.load(Ordering::Acquire) {
                    return Ok(Step::Stop);
                }
                if marker_needed(inner, self.d) {
                    self.reserve_marker(inner);
                    return Ok(Step::Worked);
                }
                return Ok(Step::Idle);
            }
        }
        self.complete_oldest(inner)?;
        Ok(Step::Worked)
    }

    /// A requester's flush ([`Inner::assist`]): everything filled goes out now, synchronously
    /// (`write_at` + `sync`, not through io_uring, whose sync would wake a kernel worker), and
    /// its DSN is published before this returns.
    fn flush_now(&mut self, inner: &Inner) -> io::Result<()> {
        // The logger holds the flusher while pairs are in flight, so there are none, except
        // when it stopped on an I/O error and has not failed the log yet: finishing them then
        // meets the same error.
        while !self.pending.is_empty() {
            self.complete_oldest(inner)?;
        }
        if inner.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        if self.marker_behind(inner) {
            self.reserve_marker(inner);
        }
        self.flush_open(inner, |_| true, true)?;
        while !self.pending.is_empty() {
            self.complete_oldest(inner)?;
        }
        Ok(())
    }

    /// Closes the open segment if it is not empty and `close` says so (under the latch),
    /// waits until it is filled (the filled-prefix rule) and writes it. Returns whether it
    /// closed one. `direct`: write and sync on this thread ([`Logger::flush_now`]).
    fn flush_open(
        &mut self,
        inner: &Inner,
        close: impl FnOnce(&crate::buffer::Latched) -> bool,
        direct: bool,
    ) -> io::Result<bool> {
        let b = &inner.buffers[self.d];
        let closed = {
            let mut l = b.latch.lock();
            if close(&l) {
                l.open.close()
            } else {
                None
            }
        };
        let Some(segment) = closed else { return Ok(false) };
        self.lazy_deadline = None;
        // A filler between its reservation and its fill (preempted, on a busy machine) must
        // not hold back the DSN of pairs already on their way: after a short spin (a fill
        // takes well under a microsecond once running), while the segment is not filled,
        // complete the pairs in flight first.
        let mut spins = 0;
        while !b.index.is_filled(&segment) && spins < FILL_SPINS {
            std::hint::spin_loop();
            spins += 1;
        }
        while !b.index.is_filled(&segment) && !self.pending.is_empty() {
            self.complete_oldest(inner)?;
        }
        b.index.wait_filled(&segment);
        let ring = b.ring.as_ref().expect("a logged buffer has a ring");
        if direct && self.write_from_ring(inner, segment.start, segment.end)? {
            b.index.recycle(&segment);
            return Ok(true);
        }
        let mut bytes = self.pool.pop().unwrap_or_default();
        bytes.clear();
        // SAFETY: the segment is closed and filled (acquire in `is_filled`), and its space is
        // released only after this copy is durable (Ring protocol).
        unsafe { ring.read(segment.start, segment.end, &mut bytes) };
        b.index.recycle(&segment);
        self.write(inner, bytes, segment.start, direct)?;
        Ok(true)
    }

    /// Whether the open segment goes out now, lazy records included (module doc); pressure is
    /// checked under the latch by the caller.
    fn flush_due(&self, inner: &Inner) -> bool {
        flush_due(inner, self.d, self.lazy_delay, self.lazy_deadline)
    }

    /// Whether a CSN waiter wants an SSN above both this device's DSN and its `L.ssn`: no
    /// record reserved so far here can satisfy it, so the flush about to start should carry a
    /// marker.
    fn marker_behind(&self, inner: &Inner) -> bool {
        let wanted = inner.wanted.load(Ordering::Acquire);
        wanted > inner.dsn(self.d).0 && wanted > inner.buffers[self.d].latch.lock().ssn.0
    }

    /// Reserves and fills an idle-device marker at SSN `>= wanted`: Algorithm 1 with base
    /// `wanted - 1` raises `L.ssn` under the latch first, so no later record on this device
    /// takes a smaller SSN; the marker is written and synced like any record before it counts.
    fn reserve_marker(&mut self, inner: &Inner) {
        let wanted = Ssn(inner.wanted.load(Ordering::Acquire));
        let base = Ssn(wanted.0 - 1);
        match inner.reserve(self.d, base, MIN_RESERVATION, Space::TryNow) {
            Reserved::Ok { ssn, offset, slot } => {
                let mut bytes = Vec::with_capacity(MIN_RESERVATION);
                Record { ssn, kind: RecordKind::Marker, blind: false, payload: &[] }
                    .encode_into(&mut bytes);
                // SAFETY: just reserved with `slot`; filled once, here.
                // Not eager: the logger itself goes on to flush it (`wanted` > DSN is due).
                unsafe { inner.fill_raw(self.d, slot, offset, MIN_RESERVATION, &bytes, None) };
            }
            // Failed: the loop stops. Full: others reserved meanwhile; their records go first.
            Reserved::Failed { .. } | Reserved::Full => {}
        }
    }

    /// Writes `bytes` (whole records from ring offset `ring_start`) to the current segment
    /// file, rotating at record boundaries when a segment is full. `direct`: each pair is
    /// written and synced before this returns.
    fn write(
        &mut self,
        inner: &Inner,
        mut bytes: Vec<u8>,
        ring_start: u64,
        direct: bool,
    ) -> io::Result<()> {
        let total = bytes.len();
        let mut pos = 0;
        while pos < total {
            let room = self.segment_size - self.file_offset;
            let mut end = pos;
            let mut last_ssn = None;
            while end < total {
                let len = record_len(&bytes[end..]);
                if (end + len - pos) as u64 > room {
                    break;
                }
                last_ssn = Some(record_ssn(&bytes[end..]));
                end += len;
            }
            let Some(last_ssn) = last_ssn else {
                self.rotate(inner)?;
                continue;
            };
            let chunk = if pos == 0 && end == total {
                std::mem::take(&mut bytes)
            } else {
                bytes[pos..end].to_vec()
            };
            if self.pending.len() >= self.depth.allowed() {
                self.complete_oldest(inner)?;
            }
            let submitted = Instant::now();
            let depth = self.pending.len();
            self.depth.submitted(depth);
            let pending = if direct && depth == 0 {
                // Nothing in flight: this sync covers this write (and only what is written).
                let (offset, segment) = (self.file_offset, &self.segment);
                let outcome =
                    segment.write_at(offset, &chunk).and_then(|()| segment.sync()).map(|()| chunk);
                Pending::ready(outcome)
            } else {
                self.segment.submit_write_sync(self.file_offset, chunk)?
            };
            self.file_offset += (end - pos) as u64;
            self.pending.push_back(InFlight {
                pending,
                last_ssn,
                ring_end: ring_start + end as u64,
                submitted,
                depth,
            });
            if direct {
                self.complete_oldest(inner)?;
            }
            pos = end;
        }
        if bytes.capacity() > 0 {
            self.recycle(bytes);
        }
        Ok(())
    }

    /// Writes the closed, filled ring range `[start, end)` straight from the ring and syncs it
    /// on this thread, then publishes its DSN: [`Logger::write`]'s direct path without the
    /// copy into a buffer. Only with nothing in flight (so this sync covers exactly this write)
    /// and when the range fits in the current segment file (no rotation); returns whether it
    /// wrote. The ring space stays unreleased until `complete_oldest`, after the sync.
    fn write_from_ring(&mut self, inner: &Inner, start: u64, end: u64) -> io::Result<bool> {
        if !self.pending.is_empty() || end - start > self.segment_size - self.file_offset {
            return Ok(false);
        }
        let ring = inner.buffers[self.d].ring.as_ref().expect("a logged buffer has a ring");
        let submitted = Instant::now();
        let (last_ssn, outcome) = {
            // SAFETY: `[start, end)` is closed and filled, and released only by
            // `complete_oldest` below, after this block has dropped the slices.
            let slices = unsafe { ring.slices(start, end) };
            let Some(last_ssn) = last_record_ssn(slices) else { return Ok(false) };
            self.depth.submitted(0);
            let mut offset = self.file_offset;
            let outcome = slices
                .into_iter()
                .filter(|s| !s.is_empty())
                .try_for_each(|s| {
                    let written = self.segment.write_at(offset, s);
                    offset += s.len() as u64;
                    written
                })
                .and_then(|()| self.segment.sync());
            (last_ssn, outcome)
        };
        self.file_offset += end - start;
        self.pending.push_back(InFlight {
            pending: Pending::ready(outcome.map(|()| Vec::new())),
            last_ssn,
            ring_end: end,
            submitted,
            depth: 0,
        });
        self.complete_oldest(inner)?;
        Ok(true)
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        if buf.capacity() > 0 && self.pool.len() < self.depth.max() + 1 {
            self.pool.push(buf);
        }
    }

    /// Waits for the oldest pair; publishes its DSN and releases its ring space.
    fn complete_oldest(&mut self, inner: &Inner) -> io::Result<()> {
        let f = self.pending.pop_front().expect("a pair in flight");
        let buf = self.segment.wait(f.pending)?;
        self.recycle(buf);
        let took = f.submitted.elapsed();
        self.depth.completed(f.depth, took);
        inner.devices[self.d].in_flight_limit.store(self.depth.limit() as u64, Ordering::Relaxed);
        self.time_pair(inner, took);
        {
            let mut segments = inner.devices[self.d].segments.lock();
            let current = segments.last_mut().expect("the current segment");
            current.last_ssn = Some(f.last_ssn);
        }
        inner.publish_dsn(self.d, f.last_ssn);
        let b = &inner.buffers[self.d];
        b.latch.lock().released = f.ring_end;
        b.space.notify_all();
        Ok(())
    }

    /// Feeds one pair's time into the moving average and decides whether requesters flush
    /// themselves ([`DeviceState::assist`]). Only with a lazy timer: requesters that flush do
    /// not wake the logger for lazy bytes, which then rely on its ticks.
    fn time_pair(&mut self, inner: &Inner, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let avg = match self.pair_ns {
            None => sample,
            Some(avg) => avg - avg / 8 + sample / 8,
        };
        self.pair_ns = Some(avg);
        let fast = !self.lazy_delay.is_zero() && u128::from(avg) < self.assist_below.as_nanos();
        inner.devices[self.d].assist.store(fast, Ordering::Relaxed);
    }

    /// Closes the current segment file (every pair on it completed, so it is synced) and
    /// starts the next.
    fn rotate(&mut self, inner: &Inner) -> io::Result<()> {
        while !self.pending.is_empty() {
            self.complete_oldest(inner)?;
        }
        let next = SegmentNo(self.segment_no.0 + 1);
        let device = &inner.devices[self.d];
        let full = std::mem::replace(&mut self.segment, device.store.create(next)?);
        device.store.retire(full);
        self.segment_no = next;
        self.file_offset = 0;
        let mut segments = device.segments.lock();
        if let Some(last) = segments.last_mut() {
            last.closed = true;
        }
        segments.push(SegmentMeta { no: next, last_ssn: None, closed: false });
        Ok(())
    }
}

/// The SSN of the last of the whole records that `a` then `b` hold (a ring range that may wrap
/// inside a record); `None` if they hold none.
fn last_record_ssn([a, b]: [&[u8]; 2]) -> Option<Ssn> {
    let total = a.len() + b.len();
    let (mut pos, mut last) = (0, None);
    let mut straddling = [0u8; HEADER_LEN];
    while pos < total {
        let header = if pos + HEADER_LEN <= a.len() {
            &a[pos..]
        } else if pos >= a.len() {
            &b[pos - a.len()..]
        } else {
            let head = a.len() - pos;
            straddling[..head].copy_from_slice(&a[pos..]);
            straddling[head..].copy_from_slice(&b[..HEADER_LEN - head]);
            &straddling[..]
        };
        last = Some(record_ssn(header));
        pos += record_len(header);
    }
    debug_assert_eq!(pos, total, "whole records");
    last
}

fn record_len(bytes: &[u8]) -> usize {
    u32::from_le_bytes(bytes[LEN_OFFSET..LEN_OFFSET + 4].try_into().expect("4 bytes")) as usize
}

fn record_ssn(bytes: &[u8]) -> Ssn {
    Ssn(u64::from_le_bytes(bytes[SSN_OFFSET..SSN_OFFSET + 8].try_into().expect("8 bytes")))
}

impl Log {
    /// Opens a log over the device directories `dirs` (`wal/0 … wal/N-1`; created if
    /// missing): one buffer and one logger per directory. Each device starts a new segment
    /// after the last existing one (old segments are recovery's; they are never appended to).
    pub fn open(dirs: &[PathBuf], options: &LogOptions) -> Result<Log, Error> {
        let stores = dirs
            .iter()
            .enumerate()
            .map(|(d, dir)| {
                DirStore::open(dir, options.device)
                    .map(|s| Box::new(s) as Box<dyn SegmentStore>)
                    .map_err(|e| Error::io(DeviceId(d as u16), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Log::with_stores(stores, options)
    }

    /// A log whose device `d` is the single segment `devices[d]` (it never rotates): for
    /// tests with `MemDevice`, `FaultyDevice`, `ThrottledDevice`.
    pub fn with_devices(
        devices: Vec<Box<dyn LogDevice>>,
        options: &LogOptions,
    ) -> Result<Log, Error> {
        let stores = devices
            .into_iter()
            .map(|d| {
                Box::new(OneSegment(parking_lot::Mutex::new(Some(d)))) as Box<dyn SegmentStore>
            })
            .collect();
        Log::with_stores(stores, options)
    }

    /// A log over `stores`, one device each, with a logger thread per device.
    ///
    /// # Panics
    /// If `stores` is empty or has more than `u16::MAX` entries, or the options cannot hold a
    /// marker (`ring_bytes` or a segment size below [`MIN_RESERVATION`], `max_in_flight` 0).
    pub fn with_stores(
        stores: Vec<Box<dyn SegmentStore>>,
        options: &LogOptions,
    ) -> Result<Log, Error> {
        assert!(!stores.is_empty() && stores.len() <= usize::from(u16::MAX), "1 ..= 65535 devices");
        assert!(options.ring_bytes >= MIN_RESERVATION, "ring_bytes below one record header");
        assert!(options.max_in_flight > 0, "max_in_flight must be at least 1");
        let mut first = Vec::new();
        let mut adopted = Vec::new();
        let mut spills = Vec::new();
        let mut max_record = options.ring_bytes;
        for (d, store) in stores.iter().enumerate() {
            let err = |e| Error::io(DeviceId(d as u16), e);
            let size = store.segment_size();
            assert!(size >= MIN_RESERVATION as u64, "segment size below one record header");
            max_record = max_record.min(usize::try_from(size).unwrap_or(usize::MAX));
            let mut listed = store.list().map_err(err)?;
            listed.sort();
            let no = listed.last().map_or(SegmentNo(0), |n| SegmentNo(n.0 + 1));
            let mut existing = options.existing_segments.get(d).cloned().unwrap_or_default();
            existing.sort();
            existing.dedup_by_key(|(no, _)| *no);
            for (old, _) in &existing {
                if listed.binary_search(old).is_err() {
                    return Err(err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("existing segment {} of device {d} is not in its store", old.0),
                    )));
                }
            }
            adopted.push(
                existing
                    .into_iter()
                    .map(|(no, last_ssn)| SegmentMeta { no, last_ssn, closed: true })
                    .collect::<Vec<_>>(),
            );
            first.push(no);
            let adopted_spills = options.existing_spills.get(d).cloned().unwrap_or_default();
            let on_disk = store.list_spills().map_err(err)?;
            let next = on_disk.iter().chain(adopted_spills.iter().map(|(id, _)| id)).max().copied();
            spills.push((adopted_spills, next.map_or(0, |m| m + 1)));
        }
        // Create the first segments only once every device's options checked out.
        let first = stores
            .iter()
            .zip(first)
            .enumerate()
            .map(|(d, (store, no))| {
                store.create(no).map(|seg| (no, seg)).map_err(|e| Error::io(DeviceId(d as u16), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let buffers = (0..stores.len())
            .map(|_| Log::new_buffer(options.ring_bytes, options.start_ssn))
            .collect();
        let devices = stores
            .into_iter()
            .zip(first)
            .zip(adopted)
            .zip(spills)
            .enumerate()
            .map(|(d, (((store, (no, segment)), mut segments), (spills, next_spill)))| {
                segments.push(SegmentMeta { no, last_ssn: None, closed: false });
                // Pairs that run at submit never overlap: one at a time.
                let max_depth = if segment.overlaps_pairs() { options.max_in_flight } else { 1 };
                let logger = Logger {
                    d,
                    segment_size: store.segment_size(),
                    segment,
                    segment_no: no,
                    file_offset: 0,
                    pending: VecDeque::new(),
                    depth: Depth::new(max_depth),
                    delay: options.group_commit_delay,
                    lazy_delay: options.lazy_flush_delay,
                    lazy_deadline: None,
                    pool: Vec::new(),
                    assist_below: options.assist_below,
                    pair_ns: None,
                };
                DeviceState {
                    dsn: AtomicU64::new(0),
                    store,
                    segments: Mutex::new(segments),
                    spills: Mutex::new(spills),
                    next_spill: AtomicU64::new(next_spill),
                    flush: Mutex::new(Some(logger)),
                    assist: AtomicBool::new(false),
                    in_flight_limit: AtomicU64::new(1),
                }
            })
            .collect::<Box<[_]>>();
        let n = devices.len();
        let mut log = Log::from_parts(buffers, devices, max_record);
        let mut handles = Vec::new();
        for d in 0..n {
            let inner = log.inner.clone();
            let handle = std::thread::Builder::new()
                .name(format!("wal-logger-{d}"))
                .spawn(move || run(inner, d))
                .map_err(|e| Error::io(DeviceId(d as u16), e))?;
            handles.push(handle);
        }
        log.set_loggers(handles);
        Ok(log)
    }

    /// How many write+sync pairs the logger of `device` currently lets be in flight (adapted to
    /// the device: module `depth`; 1 before its first pair, and for devices whose pairs run
    /// at submit).
    pub fn in_flight_limit(&self, device: DeviceId) -> usize {
        self.inner
            .devices
            .get(usize::from(device.0))
            .map_or(0, |d| d.in_flight_limit.load(Ordering::Relaxed) as usize)
    }

    /// Whether requesters currently flush `device` themselves when its logger is idle (its
    /// pairs are fast: [`LogOptions::assist_below`]; module doc, "Requesters flush").
    pub fn assisting(&self, device: DeviceId) -> bool {
        self.inner
            .devices
            .get(usize::from(device.0))
            .is_some_and(|d| d.assist.load(Ordering::Relaxed))
    }

    /// The segments of `device` that this log knows, oldest first: those adopted from
    /// [`LogOptions::existing_segments`], then those it wrote (the last one is current).
    pub fn segments(&self, device: DeviceId) -> Vec<SegmentNo> {
        match self.inner.devices.get(usize::from(device.0)) {
            Some(state) => state.segments.lock().iter().map(|s| s.no).collect(),
            None => Vec::new(),
        }
    }

    /// Writes `payload` (a value payload too large for one record) to a new spill file of
    /// `buffer`'s device and syncs it; returns the reference to put in a
    /// [`RecordKind::Spilled`](crate::RecordKind::Spilled) record reserved on the same buffer
    /// afterwards. Filling that record registers the file, which is deleted with the log it
    /// belongs to ([`Log::delete_segments_below`]). A failure fails the log, as a failed log
    /// write does, except on a store that keeps no spill files ([`Error::RecordSize`], the log
    /// unharmed). An in-memory log writes nothing.
    pub fn spill(&self, buffer: usize, payload: &[u8]) -> Result<crate::SpillRef, Error> {
        let Some(state) = self.inner.devices.get(buffer) else {
            return Ok(crate::SpillRef::of(0, payload));
        };
        if let Some(e) = self.inner.failure_error() {
            return Err(e);
        }
        let id = state.next_spill.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = state.store.write_spill(id, payload) {
            if e.kind() == io::ErrorKind::Unsupported {
                // A store without spill files (a test double): the transaction is too large
                // for this log, and nothing failed. What it accepts is a payload that needs no
                // spill file.
                let (len, min, max) = (payload.len(), MIN_RESERVATION, self.spill_threshold());
                return Err(Error::RecordSize { len, min, max });
            }
            let error = Error::io(DeviceId(buffer as u16), e);
            self.inner.fail(&error);
            return Err(self.inner.failure_error().unwrap_or(error));
        }
        Ok(crate::SpillRef::of(id, payload))
    }

    /// The spill files of `device` this log knows: (id, SSN of the record that refers to it).
    pub fn spills(&self, device: DeviceId) -> Vec<(u64, Ssn)> {
        match self.inner.devices.get(usize::from(device.0)) {
            Some(state) => state.spills.lock().clone(),
            None => Vec::new(),
        }
    }

    /// Deletes every closed segment (on every device) all of whose records have an SSN below
    /// `ssn`, e.g. `cut + 1` once a checkpoint at `cut` is valid, oldest first, stopping at a
    /// device's first segment that must stay, and every spill file whose record has an SSN
    /// below `ssn`. Closed segments are those this log moved on from
    /// and those adopted at open ([`LogOptions::existing_segments`]); the current segment of a
    /// device is never deleted. Returns the segments deleted. A failed deletion is reported
    /// and leaves the remaining files in place; it does not fail the log.
    pub fn delete_segments_below(&self, ssn: Ssn) -> Result<Vec<(DeviceId, SegmentNo)>, Error> {
        let mut deleted = Vec::new();
        for (d, state) in self.inner.devices.iter().enumerate() {
            let mut spills = state.spills.lock();
            while let Some(i) = spills.iter().position(|(_, s)| *s < ssn) {
                let (id, _) = spills[i];
                match state.store.remove_spill(id) {
                    // Already gone (a crash after the delete, before the log forgot it).
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    other => other.map_err(|e| Error::io(DeviceId(d as u16), e))?,
                }
                spills.swap_remove(i);
            }
            drop(spills);
            let mut segments = state.segments.lock();
            while let Some(first) = segments.first().copied() {
                if !first.closed || first.last_ssn.is_some_and(|last| last >= ssn) {
                    break;
                }
                state.store.remove(first.no).map_err(|e| Error::io(DeviceId(d as u16), e))?;
                segments.remove(0);
                deleted.push((DeviceId(d as u16), first.no));
            }
        }
        Ok(deleted)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The last record's SSN is found wherever the ring wraps: between records, inside a
    /// header, or inside a payload.
    #[test]
    fn last_record_ssn_at_every_wrap_point() {
        let mut bytes = Vec::new();
        for (ssn, len) in [(7, 0), (9, 3), (12, 40), (13, 1)] {
            let payload = vec![0xAB; len];
            Record { ssn: Ssn(ssn), kind: RecordKind::Value, blind: false, payload: &payload }
                .encode_into(&mut bytes);
        }
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(last_record_ssn([a, b]), Some(Ssn(13)), "wrapped at {cut}");
        }
        assert_eq!(last_record_ssn([&[], &[]]), None);
    }
}
