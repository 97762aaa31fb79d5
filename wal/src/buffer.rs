//! Log buffers: the latch, SSN allocation (Poplar Algorithm 1), the byte ring and reservations.
//! See the crate doc for the algorithm and its invariants.

use std::cell::UnsafeCell;
use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::durability::Failure;
use crate::error::Error;
use crate::record::{Record, RecordKind, HEADER_LEN, LEN_OFFSET, SSN_OFFSET};
use crate::segment_index::{OpenSegment, SegmentIndex};
use crate::ssn::Ssn;
use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, Ordering, Padded, Parker};

/// The smallest reservation a log with devices accepts: one record header. Dropping a
/// reservation unfilled writes an abort record of exactly the reserved size into it, and the
/// smallest record is a header with an empty payload.
pub const MIN_RESERVATION: usize = HEADER_LEN;

/// The state that the buffer latch protects.
#[derive(Debug)]
pub(crate) struct Latched {
    /// `L.ssn`: the largest SSN handed out by (or raised into) this buffer. Only grows.
    pub(crate) ssn: Ssn,
    /// The open segment of the segment index; `open.end` is `L.reserved`, the logical offset
    /// where the next reservation starts. Only grows.
    pub(crate) open: OpenSegment,
    /// Logical offset below which the logger has made the bytes durable and given the ring
    /// space back. Reservations stay within `released + ring size` (back-pressure).
    pub(crate) released: u64,
    /// Reservers waiting for ring space: the logger writes the open segment at once, even
    /// lazily filled bytes nobody waits for.
    pub(crate) space_waiters: u32,
}

impl Latched {
    /// Whether the open segment must go out now whatever waits for it: a reserver waits for
    /// ring space, or it holds a quarter of the ring (lazy records are written in big writes,
    /// long before they could block anybody).
    pub(crate) fn pressed(&self, ring_capacity: u64) -> bool {
        self.space_waiters > 0 || self.open.end - self.open.start >= ring_capacity / 4
    }
}

/// A fixed-size byte ring holding a buffer's reserved bytes at `offset % capacity`.
///
/// Access protocol (what makes the `unsafe` sound): a reservation's range is written only by
/// its [`Reservation`] (ranges are disjoint: the latch hands them out), and only while not yet
/// counted as filled; the logger reads a range only after the segment index says it is filled;
/// a range's ring space is handed out again only after the logger released it (under the latch)
/// after its last read.
pub(crate) struct Ring {
    data: Box<[UnsafeCell<u8>]>,
}

// SAFETY: the bytes are accessed through raw pointers under the protocol in the type doc, which
// guarantees that no two threads access the same byte at once unless both read.
unsafe impl Sync for Ring {}

impl fmt::Debug for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring").field("capacity", &self.data.len()).finish()
    }
}

/// How many bytes past its record [`Reservation::fill_record`] asks the CPU to bring into its
/// cache, for the next record on the buffer. The ring is larger than a core's cache, so the
/// lines a record is written to are cold; the segment index's `fetch_add` right after the copy
/// then waits for those stores to reach the cache. A profile of the logging suite (one committer,
/// memory device) had ~150 ns per commit, 4–5% of it, on that `fetch_add`; with the lines
/// fetched one commit ahead it was a fifth of that (BENCHMARKS.md, 2026-11-26 21:28–).
const PREFETCH_AHEAD: usize = 256;

impl Ring {
    fn new(capacity: usize) -> Ring {
        Ring { data: (0..capacity).map(|_| UnsafeCell::new(0)).collect() }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.data.len() as u64
    }

    /// The two ring slices of `[offset, offset + len)` (the second is empty unless it wraps).
    fn split(&self, offset: u64, len: usize) -> [(usize, usize); 2] {
        let cap = self.data.len();
        let at = (offset % cap as u64) as usize;
        let first = len.min(cap - at);
        [(at, first), (0, len - first)]
    }

    fn base(&self) -> *mut u8 {
        UnsafeCell::raw_get(self.data.as_ptr())
    }

    /// Copies `bytes` to logical offset `offset`.
    ///
    /// # Safety
    /// The caller owns `[offset, offset + bytes.len())` under the protocol of the type doc: it
    /// is reserved to the caller, not yet counted as filled, and at most the ring's capacity
    /// past the released offset.
    unsafe fn write(&self, offset: u64, bytes: &[u8]) {
        let mut from = 0;
        for (at, n) in self.split(offset, bytes.len()) {
            // SAFETY: `at + n <= capacity` by `split`; the caller owns these bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes[from..].as_ptr(), self.base().add(at), n)
            };
            from += n;
        }
    }

    /// The ring bytes of `[offset, offset + len)` as one slice, unless the range wraps.
    ///
    /// # Safety
    /// As [`Ring::write`]: the caller owns the range, and holds no other reference into it.
    #[allow(clippy::mut_from_ref)]
    unsafe fn contiguous_mut(&self, offset: u64, len: usize) -> Option<&mut [u8]> {
        let [(at, n), _] = self.split(offset, len);
        // SAFETY: `at + n <= capacity` by `split`; the caller owns these bytes exclusively.
        (n == len).then(|| unsafe { std::slice::from_raw_parts_mut(self.base().add(at), n) })
    }

    /// Hints the CPU to bring the cache lines of `[offset, offset + len)` into its cache (see
    /// [`PREFETCH_AHEAD`]). Only a hint: it reads nothing and writes nothing.
    fn prefetch(&self, offset: u64, len: usize) {
        for (at, n) in self.split(offset, len) {
            let mut line = at & !63;
            while line < at + n {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: a prefetch never faults and has no effect on memory; `line` is inside
                // the ring (`split` keeps `at + n <= capacity`).
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
                    _mm_prefetch::<_MM_HINT_ET0>(self.base().add(line) as *const i8);
                }
                line += 64;
            }
        }
    }

    /// The bytes of logical range `[start, end)` in place: one slice, or two where the range
    /// wraps (the second empty otherwise). For writing them to a device without a copy.
    ///
    /// # Safety
    /// As [`Ring::read`], for as long as the slices live: the range is filled and is not
    /// released before they are dropped.
    pub(crate) unsafe fn slices(&self, start: u64, end: u64) -> [&[u8]; 2] {
        self.split(start, (end - start) as usize).map(|(at, n)| {
            // SAFETY: `at + n <= capacity` by `split`; no writer touches a filled, unreleased
            // range, so shared reads are sound while the caller keeps it unreleased.
            unsafe { std::slice::from_raw_parts(self.base().add(at).cast_const(), n) }
        })
    }

    /// Appends the bytes of logical range `[start, end)` to `out`.
    ///
    /// # Safety
    /// The range is filled (the segment index says so, with an acquire load) and not released.
    pub(crate) unsafe fn read(&self, start: u64, end: u64, out: &mut Vec<u8>) {
        for (at, n) in self.split(start, (end - start) as usize) {
            let len = out.len();
            out.reserve(n);
            // SAFETY: `at + n <= capacity` by `split`; no writer touches a filled, unreleased
            // range, and `out` has room for `n` more bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(self.base().add(at), out.as_mut_ptr().add(len), n);
                out.set_len(len + n);
            }
        }
    }
}

/// One log buffer. Aligned so that two buffers' latches never share a cache line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Buffer {
    pub(crate) latch: Mutex<Latched>,
    /// Reservers waiting for ring space wait here (with `latch`); the logger notifies after
    /// raising `released`, and on failure.
    pub(crate) space: Condvar,
    /// The bytes; `None` for an in-memory log (nothing is written anywhere).
    pub(crate) ring: Option<Ring>,
    /// Which reserved bytes are filled; the logger waits in it for a closed segment's fills.
    pub(crate) index: SegmentIndex,
    /// Wakes this buffer's logger while it is idle or holds lazy records back: after an eager
    /// fill, a reservation into an empty open segment or one under pressure, a new durability
    /// target (`want`, `Inner::wanted`), a failure, or shutdown. Lazy fills do not ring it, so
    /// a record nobody waits for costs no wake-up.
    pub(crate) demand: Parker,
    /// The largest SSN whose `DSN` on this device somebody needs: eager fills and blind
    /// waiters raise it. Only grows.
    pub(crate) want: AtomicU64,
    /// Reservations dropped without `fill` (each became an abort record). Relaxed statistic.
    aborted: AtomicU64,
}

/// What the logger threads and the public API share.
#[derive(Debug)]
///
/// Every commit reads `buffers` and `devices`; loggers and waiters write `durable`,
/// `durable_cv`, `cv_waiters`, `wanted` and `watchers` often. Those are [`Padded`] so that
/// their writes do not take the read-mostly fields' cache line from the committers.
pub(crate) struct Inner {
    pub(crate) buffers: Box<[Buffer]>,
    /// One per buffer for a log with devices; empty for an in-memory log.
    pub(crate) devices: Box<[crate::logger::DeviceState]>,
    /// Held while publishing a DSN or a failure, and by the first few blocked committers
    /// around their check-then-wait on `durable_cv` (`Inner::wait`).
    pub(crate) durable: Padded<Mutex<()>>,
    pub(crate) durable_cv: Condvar,
    /// Committers blocked on `durable_cv` (`Inner::wait`).
    pub(crate) cv_waiters: Padded<AtomicU64>,
    /// The first failure; once set, never unset.
    pub(crate) failure: Mutex<Option<Failure>>,
    /// Whether `failure` is set. Once set, never unset.
    pub(crate) failed: AtomicBool,
    /// The largest SSN that a waiter needs CSN to reach: idle devices write markers up to it.
    /// Only grows.
    pub(crate) wanted: Padded<AtomicU64>,
    /// Set by `Drop for Log`: loggers flush what is reserved, then exit. Never unset.
    pub(crate) shutdown: AtomicBool,
    /// The largest reservation: the ring size and the smallest segment size bound it.
    pub(crate) max_record: usize,
    /// Callbacks waiting for tickets to become durable ([`Log::when_durable`]), run by the
    /// thread that publishes the DSN that completes them (or fails the log).
    pub(crate) watchers: Padded<Mutex<Vec<crate::durability::Watcher>>>,
}

/// The set of log buffers, one per log device, with their logger threads. `Send + Sync`;
/// shared by all sessions (usually in an `Arc`).
///
/// Two kinds exist:
/// - [`Log::new`]: **in-memory**, no devices. SSN allocation works as everywhere; nothing is
///   written, and every wait returns `Ok` at once (everything counts as durable). For tests and
///   for running without durability.
/// - [`Log::open`] / [`Log::with_stores`] / [`Log::with_devices`]: one logger thread per
///   device. A record is durable only after a wait on its [`Ticket`](crate::Ticket) returned
///   `Ok` (see [`Log::wait_durable`] for the acknowledge rule).
///
/// Dropping a `Log` makes every logger write and sync what is reserved, then joins them.
///
/// Aligned to its own cache lines: every commit and every acknowledgement reads `inner`
/// through it, and a small allocation (an `Arc<Log>` is 48 bytes) would otherwise share its
/// line with whatever the allocator put next to it, written by any thread.
#[derive(Debug)]
#[repr(align(128))]
pub struct Log {
    pub(crate) inner: Arc<Inner>,
    loggers: Vec<JoinHandle<()>>,
}

/// Where a reservation's bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// An in-memory log: the reservation only allocates the SSN; nothing is kept.
    Memory,
    /// In the ring, in segment `seq` of the segment index.
    Ring { seq: u64 },
    /// The log has failed: the SSN is allocated but nothing will be written; every wait on it
    /// fails.
    Detached,
}

/// A byte range reserved in one log buffer, stamped with the transaction's SSN.
///
/// Fill it with [`Reservation::fill`] or [`Reservation::fill_record`], outside the latch.
/// **Dropping it unfilled writes an abort record** of the reserved size into the range
/// (DESIGN.md §4: a transaction that fails after allocating its SSN leaves a marker), so the
/// logger's filled prefix can always advance past it.
///
/// Do not reserve again on the same buffer while holding an unfilled reservation: with a full
/// ring, the second reservation would wait for space that only the first one's fill frees.
#[must_use = "a reservation must be filled; dropping it writes an abort record"]
#[derive(Debug)]
pub struct Reservation<'a> {
    /// The SSN allocated to the transaction (I1: larger than its `base`).
    pub ssn: Ssn,
    log: &'a Log,
    buffer: usize,
    offset: u64,
    len: usize,
    slot: Slot,
    done: bool,
    /// Whether a waiter will want this record durable: see [`Reservation::lazy`].
    eager: bool,
}

impl Buffer {
    fn new(ring: Option<Ring>, start_ssn: Ssn) -> Buffer {
        Buffer {
            latch: Mutex::new(Latched {
                ssn: start_ssn,
                open: OpenSegment::new(0, 0),
                released: 0,
                space_waiters: 0,
            }),
            space: Condvar::new(),
            ring,
            index: SegmentIndex::new(2),
            demand: Parker::new(),
            want: AtomicU64::new(0),
            aborted: AtomicU64::new(0),
        }
    }
}

/// How [`Inner::reserve`] treats a full ring.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    /// Wait for the logger to release space (back-pressure).
    Wait,
    /// Give up (the logger itself reserving a marker must never wait for itself).
    TryNow,
}

/// The result of [`Inner::reserve`].
pub(crate) enum Reserved {
    /// The range `[offset, offset + len)` of segment `seq` (or counted only, in memory).
    Ok { ssn: Ssn, offset: u64, slot: Slot },
    /// The log has failed; `ssn` was still allocated (I1 holds for the caller).
    Failed { ssn: Ssn, error: Error },
    /// `Space::TryNow` and the ring is full.
    Full,
}

impl Inner {
    pub(crate) fn in_memory(&self) -> bool {
        self.devices.is_empty()
    }

    pub(crate) fn failure_error(&self) -> Option<Error> {
        self.failure.lock().as_ref().map(Failure::to_error)
    }

    /// Copies `bytes` (the whole reserved range when `slot` is a ring slot) to `offset` and
    /// publishes the range as filled ([`Inner::publish`]).
    ///
    /// # Safety
    /// `[offset, offset + len)` was reserved by [`Inner::reserve`] with `slot`, and this is the
    /// only fill of it.
    pub(crate) unsafe fn fill_raw(
        &self,
        buffer: usize,
        slot: Slot,
        offset: u64,
        len: usize,
        bytes: &[u8],
        eager: Option<Ssn>,
    ) {
        if let (Slot::Ring { .. }, Some(ring)) = (slot, &self.buffers[buffer].ring) {
            debug_assert_eq!(bytes.len(), len);
            // SAFETY: the latch gave this range to the caller within the released offset plus
            // the ring size, and it is not counted as filled yet, so nobody else reads or writes
            // it (the Ring protocol).
            unsafe { ring.write(offset, bytes) };
        }
        // SAFETY: the caller's guarantee; the bytes are in place.
        unsafe { self.publish(buffer, slot, len, eager) };
    }

    /// Publishes the `len` bytes of a ring slot, already in place, as filled: the segment
    /// index counts them (waking the logger if it waits for them). `eager`: somebody will wait
    /// for record `ssn`, so the logger writes it now rather than at its next lazy flush. An
    /// in-memory slot has nothing to publish.
    ///
    /// # Safety
    /// The range was reserved by [`Inner::reserve`] with `slot`, its bytes are written, and
    /// this is the only publication of it.
    unsafe fn publish(&self, buffer: usize, slot: Slot, len: usize, eager: Option<Ssn>) {
        let b = &self.buffers[buffer];
        if let (Slot::Ring { seq }, Some(_)) = (slot, &b.ring) {
            b.index.add_filled(seq, len as u64);
            if let Some(ssn) = eager {
                // Release: pairs with the logger's Acquire load; `demand` orders the wake-up.
                b.want.fetch_max(ssn.0, Ordering::Release);
                b.demand.notify();
            }
        }
    }

    /// Algorithm 1 with back-pressure: see [`Log::reserve`].
    pub(crate) fn reserve(&self, buffer: usize, base: Ssn, len: usize, space: Space) -> Reserved {
        let b = &self.buffers[buffer];
        let mut l = b.latch.lock();
        let Some(ring) = &b.ring else {
            let ssn = base.max(l.ssn).next();
            l.ssn = ssn;
            let (offset, _) = l.open.reserve(len as u64, ssn);
            return Reserved::Ok { ssn, offset, slot: Slot::Memory };
        };
        loop {
            // Acquire: pairs with the Release store in `fail`, which then takes every latch, so
            // every reservation after a failure (in latch order) sees it.
            if self.failed.load(Ordering::Acquire) {
                let ssn = base.max(l.ssn).next();
                l.ssn = ssn;
                drop(l);
                let error = self.failure_error().expect("failed implies a failure");
                return Reserved::Failed { ssn, error };
            }
            if l.open.end + len as u64 <= l.released + ring.capacity() {
                break;
            }
            if space == Space::TryNow {
                return Reserved::Full;
            }
            // The logger must write even lazy records now: count this waiter (under the latch,
            // which the logger's check takes) and wake it.
            l.space_waiters += 1;
            drop(l);
            b.demand.notify();
            l = b.latch.lock();
            if !self.failed.load(Ordering::Acquire)
                && l.open.end + len as u64 > l.released + ring.capacity()
            {
                l = b.space.wait(l);
            }
            l.space_waiters -= 1;
        }
        let ssn = base.max(l.ssn).next();
        l.ssn = ssn;
        let was_empty = l.open.is_empty();
        let (offset, seq) = l.open.reserve(len as u64, ssn);
        let pressed = l.pressed(ring.capacity());
        drop(l);
        // An idle logger learns that lazy bytes arrived (it starts its flush timer), or that
        // the open segment grew big; otherwise the reservation costs it nothing. Not while
        // requesters flush for it (`Inner::assist`): it ticks then, and a wake-up per flush
        // would cost what their flushing saves.
        let ticking = || self.devices.get(buffer).is_some_and(|d| d.assist.load(Ordering::Relaxed));
        if (was_empty && !ticking()) || pressed {
            b.demand.notify();
        }
        Reserved::Ok { ssn, offset, slot: Slot::Ring { seq } }
    }
}

impl Log {
    /// An in-memory log with `n_buffers` buffers, all at `L.ssn = Ssn::ZERO`, and no devices:
    /// nothing is written and every wait returns `Ok` at once.
    ///
    /// # Panics
    /// If `n_buffers` is zero.
    pub fn new(n_buffers: usize) -> Log {
        assert!(n_buffers > 0, "a log needs at least one buffer");
        let buffers = (0..n_buffers).map(|_| Buffer::new(None, Ssn::ZERO)).collect();
        Log::from_parts(buffers, Box::new([]), usize::MAX)
    }

    pub(crate) fn from_parts(
        buffers: Box<[Buffer]>,
        devices: Box<[crate::logger::DeviceState]>,
        max_record: usize,
    ) -> Log {
        let inner = Inner {
            buffers,
            devices,
            durable: Padded(Mutex::new(())),
            durable_cv: Condvar::new(),
            cv_waiters: Padded(AtomicU64::new(0)),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            wanted: Padded(AtomicU64::new(0)),
            shutdown: AtomicBool::new(false),
            max_record,
            watchers: Padded(Mutex::new(Vec::new())),
        };
        Log { inner: Arc::new(inner), loggers: Vec::new() }
    }

    pub(crate) fn new_buffer(ring_bytes: usize, start_ssn: Ssn) -> Buffer {
        Buffer::new(Some(Ring::new(ring_bytes)), start_ssn)
    }

    pub(crate) fn set_loggers(&mut self, loggers: Vec<JoinHandle<()>>) {
        self.loggers = loggers;
    }

    /// The number of buffers (= devices, for a log with devices).
    pub fn n_buffers(&self) -> usize {
        self.inner.buffers.len()
    }

    /// The largest `len` that [`Log::reserve`] accepts: the ring size, or a segment's size if
    /// that is smaller. Unbounded for an in-memory log.
    pub fn max_record_len(&self) -> usize {
        self.inner.max_record
    }

    /// Whether this log has no devices ([`Log::new`]): reservations only allocate SSNs, and
    /// nothing filled into them is kept, so a committer need not encode a record at all.
    pub fn is_in_memory(&self) -> bool {
        self.inner.in_memory()
    }

    /// Value payloads longer than this go to a spill file ([`Log::spill`]) rather than into a
    /// record: a quarter of [`Log::max_record_len`], so that one large transaction never fills
    /// a buffer's ring (it would wait for the ring to drain and stall the device's other
    /// commits meanwhile). Unbounded for an in-memory log.
    pub fn spill_threshold(&self) -> usize {
        if self.inner.in_memory() {
            usize::MAX
        } else {
            self.inner.max_record / 4
        }
    }

    /// Algorithm 1: allocates `ssn = max(base, L.ssn) + 1` in `buffer` and reserves `len` bytes
    /// after every earlier reservation of that buffer, both under the buffer latch.
    ///
    /// Guarantees I1 (`ssn > base`) and I2 (within a buffer, SSNs strictly increase in byte
    /// order). With devices, `len` must be the exact encoded size of the record that will fill
    /// it ([`crate::Record::encoded_len_for`]), at least [`MIN_RESERVATION`]; the call blocks
    /// while the buffer's ring has no room (back-pressure).
    ///
    /// If the log has failed, the SSN is still allocated but the reservation is *detached*:
    /// nothing is written, and every wait on it returns the failure. Use [`Log::try_reserve`]
    /// to learn about the failure here.
    ///
    /// # Panics
    /// If `buffer >= self.n_buffers()`, or (with devices) `len` is outside
    /// `MIN_RESERVATION..=self.max_record_len()`.
    pub fn reserve(&self, buffer: usize, base: Ssn, len: usize) -> Reservation<'_> {
        match self.reserve_inner(buffer, base, len, Space::Wait) {
            Ok(r) => r,
            Err((error @ Error::RecordSize { .. }, _)) => panic!("{error}"),
            Err((_, ssn)) => Reservation {
                ssn,
                log: self,
                buffer,
                offset: 0,
                len,
                slot: Slot::Detached,
                done: true,
                eager: true,
            },
        }
    }

    /// [`Log::reserve`], but a failed log or a bad `len` is an error ([`Error::DeviceFailed`],
    /// [`Error::NoSpace`], [`Error::RecordSize`]).
    pub fn try_reserve(
        &self,
        buffer: usize,
        base: Ssn,
        len: usize,
    ) -> Result<Reservation<'_>, Error> {
        self.reserve_inner(buffer, base, len, Space::Wait).map_err(|(e, _)| e)
    }

    fn reserve_inner(
        &self,
        buffer: usize,
        base: Ssn,
        len: usize,
        space: Space,
    ) -> Result<Reservation<'_>, (Error, Ssn)> {
        let inner = &*self.inner;
        assert!(buffer < inner.buffers.len(), "buffer {buffer} of {}", inner.buffers.len());
        if !inner.in_memory() && !(MIN_RESERVATION..=inner.max_record).contains(&len) {
            let error = Error::RecordSize { len, min: MIN_RESERVATION, max: inner.max_record };
            return Err((error, Ssn::ZERO));
        }
        match inner.reserve(buffer, base, len, space) {
            Reserved::Ok { ssn, offset, slot } => Ok(Reservation {
                ssn,
                log: self,
                buffer,
                offset,
                len,
                slot,
                done: false,
                eager: true,
            }),
            Reserved::Failed { ssn, error } => Err((error, ssn)),
            Reserved::Full => unreachable!("only the logger reserves with Space::TryNow"),
        }
    }

    /// `max L.ssn` over all buffers: every SSN handed out so far is `<=` this.
    pub fn max_ssn(&self) -> Ssn {
        self.inner.buffers.iter().map(|b| b.latch.lock().ssn).max().unwrap_or(Ssn::ZERO)
    }

    /// Raises `L.ssn` of every buffer to at least `target`, each under its latch. After it
    /// returns, every SSN allocated on any buffer is larger than `target` (checkpoint cut,
    /// idle-device progress; DESIGN.md §3 and §5). It does not change any DSN.
    pub fn raise_all(&self, target: Ssn) {
        for b in self.inner.buffers.iter() {
            let mut l = b.latch.lock();
            l.ssn = l.ssn.max(target);
        }
    }

    /// `L.ssn` of one buffer.
    pub fn buffer_ssn(&self, buffer: usize) -> Ssn {
        self.inner.buffers[buffer].latch.lock().ssn
    }

    /// Bytes reserved so far in one buffer.
    pub fn reserved_bytes(&self, buffer: usize) -> u64 {
        self.inner.buffers[buffer].latch.lock().open.end
    }

    /// Reservations of one buffer that were dropped unfilled (abort records).
    pub fn aborted_reservations(&self, buffer: usize) -> u64 {
        self.inner.buffers[buffer].aborted.load(Ordering::Relaxed)
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        // Release: pairs with the loggers' Acquire loads; the wake-up is ordered by `notify`.
        self.inner.shutdown.store(true, Ordering::Release);
        for b in self.inner.buffers.iter() {
            b.demand.notify();
        }
        for logger in self.loggers.drain(..) {
            if logger.join().is_err() && !std::thread::panicking() {
                panic!("a wal logger thread panicked");
            }
        }
    }
}

impl Reservation<'_> {
    /// The buffer (= device) this range belongs to.
    pub fn buffer(&self) -> usize {
        self.buffer
    }

    /// The first byte of the range, as a logical offset within its buffer (0 if detached).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The length of the range.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the log had failed: nothing will be written, every wait fails.
    pub fn is_detached(&self) -> bool {
        self.slot == Slot::Detached
    }

    /// The durability ticket of this record; `blind` says whether the transaction wrote
    /// without reading (DESIGN.md §3, the acknowledge rule).
    pub fn ticket(&self, blind: bool) -> crate::Ticket {
        crate::Ticket { ssn: self.ssn, device: crate::DeviceId(self.buffer as u16), blind }
    }

    /// Marks the record as one nobody will wait for (`synchronous_commit = off`): the logger
    /// writes it with whatever goes out next, or at its next lazy flush
    /// ([`crate::LogOptions::lazy_flush_delay`]), instead of waking up for it. A later wait on
    /// its ticket still works: waiting asks the loggers for it.
    pub fn lazy(mut self) -> Self {
        self.eager = false;
        self
    }

    /// Copies the encoded record into the reserved range; the logger may write it from now on.
    ///
    /// With devices, `bytes` must be one whole record of exactly [`Reservation::len`] bytes
    /// carrying this reservation's SSN (see [`Reservation::fill_record`]). An in-memory log
    /// accepts anything up to `len` and keeps none of it.
    ///
    /// # Panics
    /// If `bytes` breaks those rules (a wrong record would corrupt the log).
    pub fn fill(mut self, bytes: &[u8]) {
        match self.slot {
            Slot::Memory => {
                assert!(
                    bytes.len() <= self.len,
                    "record of {} bytes overflows a reservation of {} bytes (ssn {})",
                    bytes.len(),
                    self.len,
                    self.ssn
                );
            }
            Slot::Ring { .. } => {
                assert_eq!(bytes.len(), self.len, "a record must fill its reservation exactly");
                let len =
                    u32::from_le_bytes(bytes[LEN_OFFSET..LEN_OFFSET + 4].try_into().expect("4"));
                let ssn =
                    u64::from_le_bytes(bytes[SSN_OFFSET..SSN_OFFSET + 8].try_into().expect("8"));
                assert_eq!(len as usize, self.len, "the record's len field");
                assert_eq!(Ssn(ssn), self.ssn, "the record must carry the reservation's SSN");
                debug_assert!(
                    matches!(Record::decode(bytes), Ok(Some(_))),
                    "fill with a record that does not decode"
                );
            }
            Slot::Detached => {}
        }
        self.complete(bytes);
    }

    /// Encodes a record of `kind` with this reservation's SSN and `payload`, and fills the range
    /// with it. With devices, the reservation's length must be
    /// `Record::encoded_len_for(payload.len())`.
    ///
    /// A [`RecordKind::Spilled`] record's payload is the [`crate::SpillRef`] that
    /// [`Log::spill`] returned; filling it registers the spill file with this record's SSN.
    ///
    /// # Panics
    /// If a spilled record's payload is not a spill reference.
    pub fn fill_record(mut self, kind: RecordKind, blind: bool, payload: &[u8]) {
        if kind == RecordKind::Spilled && self.slot != Slot::Detached {
            let spill = crate::SpillRef::decode(payload).expect("a spilled record's payload");
            self.log.inner.register_spill(self.buffer, spill.id, self.ssn);
        }
        let record = Record { ssn: self.ssn, kind, blind, payload };
        match self.slot {
            // Nothing is written (in-memory or failed log): no record to encode.
            Slot::Memory | Slot::Detached => self.fill(&[]),
            Slot::Ring { .. } => {
                assert_eq!(record.encoded_len(), self.len, "a record must fill its reservation");
                let ring = self.log.inner.buffers[self.buffer].ring.as_ref().expect("a ring");
                // SAFETY: this reservation owns its range (the Ring protocol) and has not filled
                // it (`fill_record` takes `self`; `done` is set only by filling).
                match unsafe { ring.contiguous_mut(self.offset, self.len) } {
                    // Encoded in place (most records: only one that wraps takes a copy).
                    Some(out) => {
                        record.write_to(out);
                        debug_assert!(
                            matches!(Record::decode(out), Ok(Some(_))),
                            "a record that does not decode"
                        );
                        self.done = true;
                        let eager = self.eager.then_some(self.ssn);
                        // SAFETY: reserved with this slot, written just now, published once.
                        unsafe { self.log.inner.publish(self.buffer, self.slot, self.len, eager) };
                        ring.prefetch(self.offset + self.len as u64, PREFETCH_AHEAD);
                    }
                    None => {
                        let mut bytes = Vec::with_capacity(self.len);
                        record.encode_into(&mut bytes);
                        self.fill(&bytes);
                    }
                }
            }
        }
    }

    /// Copies `bytes` in (ring) and publishes the range as filled.
    fn complete(&mut self, bytes: &[u8]) {
        if self.done {
            return;
        }
        self.done = true;
        let eager = self.eager.then_some(self.ssn);
        // SAFETY: this reservation owns its range and has not filled it before (`done` was
        // false).
        unsafe {
            self.log.inner.fill_raw(self.buffer, self.slot, self.offset, self.len, bytes, eager)
        };
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let b = &self.log.inner.buffers[self.buffer];
        b.aborted.fetch_add(1, Ordering::Relaxed);
        let bytes = match self.slot {
            Slot::Ring { .. } => {
                let payload = vec![0u8; self.len - HEADER_LEN];
                let mut bytes = Vec::with_capacity(self.len);
                Record { ssn: self.ssn, kind: RecordKind::Abort, blind: false, payload: &payload }
                    .encode_into(&mut bytes);
                bytes
            }
            Slot::Memory | Slot::Detached => Vec::new(),
        };
        self.complete(&bytes);
    }
}
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn ssn_is_max_of_base_and_buffer_plus_one() {
        let log = Log::new(2);
        let r = log.reserve(0, Ssn::ZERO, 10);
        assert_eq!(r.ssn, Ssn(1));
        assert_eq!(r.offset(), 0);
        r.fill(&[0; 10]);
        let r = log.reserve(0, Ssn(7), 5);
        assert_eq!(r.ssn, Ssn(8));
        assert_eq!(r.offset(), 10);
        r.fill(&[]);
        // A smaller base still gets a larger SSN than L.ssn (I2).
        let r = log.reserve(0, Ssn(2), 1);
        assert_eq!(r.ssn, Ssn(9));
        r.fill(&[1]);
        // Buffers are independent.
        let r = log.reserve(1, Ssn(3), 1);
        assert_eq!(r.ssn, Ssn(4));
        r.fill(&[1]);
        assert_eq!(log.max_ssn(), Ssn(9));
        assert_eq!(log.reserved_bytes(0), 16);
    }

    #[test]
    fn raise_all_bounds_every_later_ssn() {
        let log = Log::new(3);
        log.reserve(1, Ssn(41), 0).fill(&[]);
        log.raise_all(log.max_ssn());
        assert_eq!(log.buffer_ssn(0), Ssn(42));
        assert_eq!(log.buffer_ssn(2), Ssn(42));
        for b in 0..3 {
            let r = log.reserve(b, Ssn::ZERO, 1);
            assert!(r.ssn > Ssn(42));
            r.fill(&[]);
        }
        // Raising never lowers.
        log.raise_all(Ssn(5));
        assert_eq!(log.buffer_ssn(0), Ssn(43));
    }

    #[test]
    fn dropped_reservation_is_an_abort_marker() {
        let log = Log::new(1);
        drop(log.reserve(0, Ssn::ZERO, 8));
        assert_eq!(log.aborted_reservations(0), 1);
    }

    #[test]
    #[should_panic(expected = "overflows")]
    fn overfill_panics() {
        let log = Log::new(1);
        log.reserve(0, Ssn::ZERO, 1).fill(&[0, 0]);
    }

    /// I1 and I2 under contention: 4 threads reserve on 2 buffers with random bases; per buffer,
    /// sorting reservations by offset must give strictly increasing SSNs, ranges must tile the
    /// buffer, and every SSN must exceed its base.
    #[test]
    fn i1_i2_hold_under_contention() {
        let log = Arc::new(Log::new(2));
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                    for i in 0..20_000u64 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let buffer = (x % 2) as usize;
                        let base = Ssn(if i % 3 == 0 { log.max_ssn().0 } else { x % 1000 });
                        let len = (x % 64) as usize + 1;
                        let r = log.reserve(buffer, base, len);
                        assert!(r.ssn > base, "I1: ssn {} <= base {}", r.ssn, base);
                        seen.push((buffer, r.offset(), r.len(), r.ssn));
                        r.fill(&[]);
                    }
                    seen
                })
            })
            .collect();
        let mut all: Vec<_> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort();
        for buffer in 0..2 {
            let mut next_offset = 0;
            let mut last = Ssn::ZERO;
            for &(_, offset, len, ssn) in all.iter().filter(|r| r.0 == buffer) {
                assert_eq!(offset, next_offset, "ranges tile the buffer");
                assert!(ssn > last, "I2: ssn {ssn} after {last} in byte order");
                next_offset += len as u64;
                last = ssn;
            }
            assert_eq!(log.reserved_bytes(buffer), next_offset);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Every interleaving of two reservations on one buffer and a `raise_all`: I1, I2, and SSNs
    /// above the raised target once `raise_all` has returned.
    #[test]
    fn alloc_i1_i2() {
        loom::model(|| {
            let log = Arc::new(Log::new(1));
            let threads: Vec<_> = [3u64, 1]
                .into_iter()
                .map(|base| {
                    let log = log.clone();
                    loom::thread::spawn(move || {
                        let r = log.reserve(0, Ssn(base), base as usize);
                        assert!(r.ssn > Ssn(base));
                        let out = (r.offset(), r.ssn);
                        r.fill(&[]);
                        out
                    })
                })
                .collect();
            log.raise_all(Ssn(10));
            let after = log.reserve(0, Ssn::ZERO, 1);
            assert!(after.ssn > Ssn(10));
            let mut got: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            got.push((after.offset(), after.ssn));
            after.fill(&[]);
            got.sort();
            assert!(got.windows(2).all(|w| w[0].1 < w[1].1), "I2: {got:?}");
        });
    }
}
