//! Test doubles for [`LogDevice`] (STYLE rule 7: doubles wrap the real thing). Compiled for this
//! crate's tests and, with the `testing` feature, for other crates' tests.
//!
//! - [`MemDevice`]: an in-memory device that remembers what is synced, and can
//!   [`crash`](MemDevice::crash): keep only synced bytes, plus optionally a prefix of the unsynced
//!   writes (a torn tail).
//! - [`FaultyDevice`]: wraps any device and fails the Nth write, sync or read, answers `ENOSPC`,
//!   or tears a write at a byte. After an injected failure it behaves like a real failed device
//!   (every write and sync refused) and counts attempts, so tests can check "no retry".
//! - [`ThrottledDevice`]: wraps any device with an emulated bandwidth and `fdatasync` latency
//!   (DESIGN §8: device-scaling benchmarks where the log, not the CPU, is the bottleneck).
//! - [`StripedDevice`]: RAID-0 over several devices, each driven by its own thread, so that a
//!   single log buffer can use N emulated devices at once (the centralized-log baseline of the
//!   device-scaling benchmark: one sequence over N devices, against Poplar's N sequences).
//!
//! Counting is 1-based and covers every call of the kind, including the write and sync that
//! [`LogDevice::submit_write_sync`] performs (the wrappers use its default, synchronous
//! implementation, so their faults and delays apply to pairs too).

use std::io;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use std::sync::mpsc;

use crate::device::{LogDevice, Pending, Poison, SegmentNo};
use crate::store::SegmentStore;
use crate::sync::{AtomicU64, Mutex, Ordering};

/// An unsynced change to a [`MemDevice`], kept until the next sync or crash.
#[derive(Debug)]
enum Unsynced {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Default)]
struct MemState {
    /// What reads see (the page cache).
    data: Vec<u8>,
    /// What survives a crash (the disk).
    durable: Vec<u8>,
    /// Changes since the last sync, in order.
    unsynced: Vec<Unsynced>,
}

fn apply_write(image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let offset = usize::try_from(offset).expect("in-memory offset");
    if image.len() < offset + bytes.len() {
        image.resize(offset + bytes.len(), 0);
    }
    image[offset..offset + bytes.len()].copy_from_slice(bytes);
}

/// An in-memory [`LogDevice`]. Writes are visible to reads at once and durable after
/// [`LogDevice::sync`]; [`MemDevice::crash`] throws away what was not synced.
#[derive(Debug)]
pub struct MemDevice {
    state: Mutex<MemState>,
}

impl MemDevice {
    /// An empty device.
    pub fn new() -> MemDevice {
        MemDevice::with_bytes(Vec::new())
    }

    /// A device holding `bytes`, all durable.
    pub fn with_bytes(bytes: Vec<u8>) -> MemDevice {
        MemDevice {
            state: Mutex::new(MemState {
                data: bytes.clone(),
                durable: bytes,
                unsynced: Vec::new(),
            }),
        }
    }

    /// What reads see now.
    pub fn bytes(&self) -> Vec<u8> {
        self.state.lock().data.clone()
    }

    /// What a crash without any torn write would keep.
    pub fn durable_bytes(&self) -> Vec<u8> {
        self.state.lock().durable.clone()
    }

    /// Bytes written since the last sync (the most [`MemDevice::crash`] can keep).
    pub fn unsynced_bytes(&self) -> usize {
        let state = self.state.lock();
        state
            .unsynced
            .iter()
            .map(|u| if let Unsynced::Write { bytes, .. } = u { bytes.len() } else { 0 })
            .sum()
    }

    /// Simulates a crash and restart: the device keeps its synced contents plus the first
    /// `torn_prefix` bytes of the unsynced writes, applied in the order they were written (the
    /// last one partly, if `torn_prefix` ends inside it). An unsynced length change is kept only
    /// if the budget is not used up before it, so `crash(0)` keeps exactly the synced state.
    /// Afterwards everything the device holds counts as synced.
    pub fn crash(&self, torn_prefix: usize) {
        let mut state = self.state.lock();
        let state = &mut *state;
        let mut budget = torn_prefix;
        for change in state.unsynced.drain(..) {
            if budget == 0 {
                break;
            }
            match change {
                Unsynced::Write { offset, bytes } => {
                    let n = bytes.len().min(budget);
                    apply_write(&mut state.durable, offset, &bytes[..n]);
                    budget -= n;
                }
                Unsynced::SetLen(len) => state.durable.resize(len as usize, 0),
            }
        }
        state.unsynced.clear();
        state.data = state.durable.clone();
    }

    /// Changes the byte at `offset` in place, durably (it must be synced already), bypassing the device contract: simulates media
    /// corruption (bit rot) for reader tests.
    pub fn corrupt(&self, offset: usize, f: impl FnOnce(&mut u8)) {
        let mut state = self.state.lock();
        assert!(
            offset < state.durable.len(),
            "corrupt() changes synced bytes only (offset {offset})"
        );
        f(&mut state.data[offset]);
        let byte = state.data[offset];
        state.durable[offset] = byte;
    }
}

impl Default for MemDevice {
    fn default() -> Self {
        MemDevice::new()
    }
}

impl LogDevice for MemDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.state.lock();
        apply_write(&mut state.data, offset, bytes);
        state.unsynced.push(Unsynced::Write { offset, bytes: bytes.to_vec() });
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        let state = &mut *state;
        for change in state.unsynced.drain(..) {
            match change {
                Unsynced::Write { offset, bytes } => {
                    apply_write(&mut state.durable, offset, &bytes)
                }
                Unsynced::SetLen(len) => state.durable.resize(len as usize, 0),
            }
        }
        Ok(())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let state = self.state.lock();
        let start = (offset as usize).min(state.data.len());
        let n = buf.len().min(state.data.len() - start);
        buf[..n].copy_from_slice(&state.data[start..start + n]);
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.state.lock().data.len() as u64)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        state.data.resize(len as usize, 0);
        state.unsynced.push(Unsynced::SetLen(len));
        Ok(())
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        if (state.data.len() as u64) < len {
            state.data.resize(len as usize, 0);
            state.unsynced.push(Unsynced::SetLen(len));
        }
        Ok(())
    }
}

/// When to fail: the Nth call of a kind (1-based), or never.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Nth(Option<u64>);

impl Nth {
    fn hits(self, call: u64) -> bool {
        self.0 == Some(call)
    }
}

/// A device wrapper that injects faults (sled's `fallible!`). Configure with the builder
/// methods; see the module doc for counting. Each injected write or sync failure poisons the
/// wrapper like a real failure (reads keep working and never poison).
#[derive(Debug)]
pub struct FaultyDevice<D> {
    inner: D,
    fail_write: Nth,
    no_space_write: Nth,
    tear_write: Option<(u64, usize)>,
    fail_sync: Nth,
    fail_read: Nth,
    writes: AtomicU64,
    syncs: AtomicU64,
    reads: AtomicU64,
    after_failure: AtomicU64,
    poison: Poison,
}

impl<D: LogDevice> FaultyDevice<D> {
    /// Wraps `inner` with no faults configured.
    pub fn new(inner: D) -> FaultyDevice<D> {
        FaultyDevice {
            inner,
            fail_write: Nth::default(),
            no_space_write: Nth::default(),
            tear_write: None,
            fail_sync: Nth::default(),
            fail_read: Nth::default(),
            writes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            after_failure: AtomicU64::new(0),
            poison: Poison::new(),
        }
    }

    /// The `n`th write fails with `EIO` and writes nothing.
    #[must_use]
    pub fn fail_write(mut self, n: u64) -> Self {
        self.fail_write = Nth(Some(n));
        self
    }

    /// The `n`th write fails with `ENOSPC` and writes nothing.
    #[must_use]
    pub fn no_space_on_write(mut self, n: u64) -> Self {
        self.no_space_write = Nth(Some(n));
        self
    }

    /// The `n`th write passes only its first `at` bytes to the inner device, then fails with
    /// `EIO` (the process or the disk died mid-write).
    #[must_use]
    pub fn tear_write(mut self, n: u64, at: usize) -> Self {
        self.tear_write = Some((n, at));
        self
    }

    /// The `n`th sync fails with `EIO` without syncing.
    #[must_use]
    pub fn fail_sync(mut self, n: u64) -> Self {
        self.fail_sync = Nth(Some(n));
        self
    }

    /// The `n`th read fails with `EIO`.
    #[must_use]
    pub fn fail_read(mut self, n: u64) -> Self {
        self.fail_read = Nth(Some(n));
        self
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Writes attempted so far (including failed and refused ones).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Syncs attempted so far (including failed and refused ones).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Writes, syncs, truncates and allocates attempted after the first failure: the fault
    /// policy says this stays 0.
    pub fn attempts_after_failure(&self) -> u64 {
        self.after_failure.load(Ordering::Relaxed)
    }

    /// Whether a fault has been injected (the device is failed).
    pub fn failed(&self) -> bool {
        self.poison.check().is_err()
    }

    /// Refuses and counts the call if the device already failed.
    fn refuse_if_failed(&self) -> io::Result<()> {
        self.poison.check().inspect_err(|_| {
            self.after_failure.fetch_add(1, Ordering::Relaxed);
        })
    }
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

impl<D: LogDevice> LogDevice for FaultyDevice<D> {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let call = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        self.refuse_if_failed()?;
        if self.fail_write.hits(call) {
            return Err(self.poison.fail(eio()));
        }
        if self.no_space_write.hits(call) {
            return Err(self.poison.fail(io::Error::from_raw_os_error(libc::ENOSPC)));
        }
        if let Some((n, at)) = self.tear_write {
            if n == call {
                let at = at.min(bytes.len());
                return Err(self
                    .poison
                    .fail(self.inner.write_at(offset, &bytes[..at]).err().unwrap_or_else(eio)));
            }
        }
        self.poison.guard(|| self.inner.write_at(offset, bytes))
    }

    fn sync(&self) -> io::Result<()> {
        let call = self.syncs.fetch_add(1, Ordering::Relaxed) + 1;
        self.refuse_if_failed()?;
        if self.fail_sync.hits(call) {
            return Err(self.poison.fail(eio()));
        }
        self.poison.guard(|| self.inner.sync())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let call = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_read.hits(call) {
            return Err(eio());
        }
        self.inner.read_at(offset, buf)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.refuse_if_failed()?;
        self.poison.guard(|| self.inner.truncate(len))
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.refuse_if_failed()?;
        self.poison.guard(|| self.inner.allocate(len))
    }
}

/// A device wrapper with an emulated bandwidth and `fdatasync` latency, by sleeping. Writes
/// queue behind each other as on one disk: a write of `n` bytes finishes `n / bandwidth` after
/// the later of its start and the previous write's finish. A sync sleeps `sync_latency` after
/// the queued writes have finished. The delays are lower bounds (sleeps may overshoot).
///
/// Two models of a write+sync pair ([`LogDevice::submit_write_sync`]):
/// - [`ThrottledDevice::new`], **serial**: the pair runs at submit, so a logger with one
///   thread has one pair on the device at a time and the device idles during every sync;
/// - [`ThrottledDevice::pipelined`]: the submit sleeps through the transfer only (the bandwidth
///   is the device's, one transfer at a time) and the pair completes `sync_latency` later, when
///   it is waited for. Meanwhile the next pair's transfer can run, as on a disk that accepts
///   several commands (io_uring's pairs in flight). The flushes complete in submission order.
///   The bytes reach the inner device (and its sync) at submit: earlier than the emulated
///   completion, which only makes data durable sooner than the log is told.
#[derive(Debug)]
pub struct ThrottledDevice<D> {
    inner: D,
    bytes_per_sec: u64,
    sync_latency: Duration,
    pipelined: bool,
    /// When the emulated disk finishes the writes queued so far.
    busy_until: Mutex<Instant>,
}

impl<D: LogDevice> ThrottledDevice<D> {
    /// Wraps `inner`; `bytes_per_sec == 0` means unlimited bandwidth.
    pub fn new(inner: D, bytes_per_sec: u64, sync_latency: Duration) -> ThrottledDevice<D> {
        ThrottledDevice {
            inner,
            bytes_per_sec,
            sync_latency,
            pipelined: false,
            busy_until: Mutex::new(Instant::now()),
        }
    }

    /// Wraps `inner` as a device that overlaps a pair's sync with later transfers (see the
    /// type's doc); `bytes_per_sec == 0` means unlimited bandwidth.
    pub fn pipelined(inner: D, bytes_per_sec: u64, sync_latency: Duration) -> ThrottledDevice<D> {
        ThrottledDevice {
            pipelined: true,
            ..ThrottledDevice::new(inner, bytes_per_sec, sync_latency)
        }
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    fn transfer_time(&self, bytes: usize) -> Duration {
        if self.bytes_per_sec == 0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(bytes as f64 / self.bytes_per_sec as f64)
        }
    }
}

/// Sleeps until `deadline` (`thread::sleep` may wake early on some platforms; loop).
fn sleep_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        std::thread::sleep(deadline - now);
    }
}

impl<D: LogDevice> LogDevice for ThrottledDevice<D> {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let done = {
            let mut busy = self.busy_until.lock();
            *busy = (*busy).max(Instant::now()) + self.transfer_time(bytes.len());
            *busy
        };
        sleep_until(done);
        self.inner.write_at(offset, bytes)
    }

    fn sync(&self) -> io::Result<()> {
        let writes_done = *self.busy_until.lock();
        sleep_until(writes_done.max(Instant::now()) + self.sync_latency);
        self.inner.sync()
    }

    fn overlaps_pairs(&self) -> bool {
        self.pipelined
    }

    fn submit_write_sync(&self, offset: u64, buf: Vec<u8>) -> io::Result<Pending> {
        if !self.pipelined {
            let result = self.write_at(offset, &buf).and_then(|()| self.sync()).map(|()| buf);
            return Ok(Pending::ready(result));
        }
        // The transfer occupies the device (and the submitting thread, like a copy); the
        // sync's latency is the waiter's.
        let result = self.write_at(offset, &buf).and_then(|()| self.inner.sync()).map(|()| buf);
        let due = Instant::now() + self.sync_latency;
        Ok(Pending::deferred(move || {
            sleep_until(due);
            result
        }))
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset, buf)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.inner.allocate(len)
    }
}

/// One request to a member of a [`StripedDevice`], answered on `reply`.
enum StripeJob {
    /// Write each `(member offset, bytes)` in order; if `sync`, the last write (an empty one
    /// if there is none) goes as a write+sync pair, answered with its [`Pending`].
    Io { writes: Vec<(u64, Vec<u8>)>, sync: bool, reply: mpsc::Sender<io::Result<Option<Pending>>> },
    /// Set the member's length (`allocate` if `grow`, else `truncate`).
    SetLen { len: u64, grow: bool, reply: mpsc::Sender<io::Result<Option<Pending>>> },
}

/// RAID-0 (striping) over `N` member devices: logical bytes `[k·unit, (k+1)·unit)` live on
/// member `k mod N` at member offset `(k div N)·unit`. Each member has its own thread, so a
/// write's pieces go to all members **in parallel** (with [`ThrottledDevice`] members the
/// emulated bandwidth adds up), and a sync syncs **every** member in parallel (as a flush of a
/// Linux `md` RAID-0 array reaches every member disk), completing when the slowest is done.
///
/// The benchmark use: one log buffer (one SSN sequence, one logger) over N throttled devices,
/// the centralized baseline that Poplar's N buffers are compared with on the same N devices.
/// [`LogDevice::submit_write_sync`] sends each member its pieces and the sync in one request.
///
/// The fault policy holds per member (a failed member refuses later writes); the wrapper
/// passes the first error of a request on. Reads assemble the stripes; the logical length is
/// the largest end written, allocated or truncated to.
pub struct StripedDevice {
    unit: u64,
    members: Vec<mpsc::Sender<StripeJob>>,
    /// Direct access to the members, for reads (reads do not need the member threads).
    devices: Vec<Arc<dyn LogDevice>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    len: Mutex<u64>,
}

impl fmt::Debug for StripedDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StripedDevice")
            .field("unit", &self.unit)
            .field("members", &self.devices.len())
            .finish_non_exhaustive()
    }
}

impl StripedDevice {
    /// Stripes over `members` (at least one) in units of `unit` bytes (at least 1), starting one
    /// thread per member. The members should be empty.
    ///
    /// # Panics
    /// If `members` is empty, `unit` is 0, or a thread cannot be started.
    pub fn new(members: Vec<Arc<dyn LogDevice>>, unit: u64) -> StripedDevice {
        assert!(!members.is_empty(), "a striped device needs at least one member");
        assert!(unit > 0, "the stripe unit must be at least one byte");
        let mut senders = Vec::with_capacity(members.len());
        let mut threads = Vec::with_capacity(members.len());
        for (m, device) in members.iter().enumerate() {
            let (tx, rx) = mpsc::channel::<StripeJob>();
            let device = device.clone();
            let thread = std::thread::Builder::new()
                .name(format!("stripe-member-{m}"))
                .spawn(move || {
                    for job in rx {
                        match job {
                            StripeJob::Io { mut writes, sync, reply } => {
                                let pair = if sync {
                                    Some(writes.pop().unwrap_or((0, Vec::new())))
                                } else {
                                    None
                                };
                                let result = writes
                                    .iter()
                                    .try_for_each(|(offset, bytes)| device.write_at(*offset, bytes))
                                    .and_then(|()| {
                                        pair.map(|(offset, bytes)| {
                                            let pending =
                                                device.submit_write_sync(offset, bytes)?;
                                            let device = device.clone();
                                            Ok(Pending::deferred(move || device.wait(pending)))
                                        })
                                        .transpose()
                                    });
                                let _ = reply.send(result);
                            }
                            StripeJob::SetLen { len, grow, reply } => {
                                let result =
                                    if grow { device.allocate(len) } else { device.truncate(len) };
                                let _ = reply.send(result.map(|()| None));
                            }
                        }
                    }
                })
                .expect("start a stripe member thread");
            senders.push(tx);
            threads.push(thread);
        }
        StripedDevice { unit, members: senders, devices: members, threads, len: Mutex::new(0) }
    }

    /// The member devices.
    pub fn members(&self) -> &[Arc<dyn LogDevice>] {
        &self.devices
    }

    /// The pieces of logical range `[offset, offset + len)`: `(member, member offset, start
    /// within the range, piece length)`, in logical order.
    fn pieces(&self, offset: u64, len: usize) -> Vec<(usize, u64, usize, usize)> {
        let n = self.devices.len() as u64;
        let mut out = Vec::new();
        let mut at = offset;
        let end = offset + len as u64;
        while at < end {
            let stripe = at / self.unit;
            let within = at % self.unit;
            let piece = (self.unit - within).min(end - at);
            let member_offset = (stripe / n) * self.unit + within;
            out.push((
                (stripe % n) as usize,
                member_offset,
                (at - offset) as usize,
                piece as usize,
            ));
            at += piece;
        }
        out
    }

    /// The length member `m` has when the logical length is `len`.
    fn member_len(&self, len: u64, m: usize) -> u64 {
        let n = self.devices.len() as u64;
        let (full, rest) = (len / self.unit, len % self.unit);
        let m = m as u64;
        let whole = full / n + u64::from(full % n > m);
        whole * self.unit + if full % n == m { rest } else { 0 }
    }

    /// Sends one request to each member in `to` (built by `job`) and waits for every answer;
    /// returns the first error, or the pairs the members started.
    fn run(
        &self,
        to: impl IntoIterator<Item = usize>,
        mut job: impl FnMut(usize, mpsc::Sender<io::Result<Option<Pending>>>) -> StripeJob,
    ) -> io::Result<Vec<Pending>> {
        let (reply, answers) = mpsc::channel();
        let mut sent = 0;
        for m in to {
            self.members[m]
                .send(job(m, reply.clone()))
                .map_err(|_| io::Error::other("stripe member thread is gone"))?;
            sent += 1;
        }
        drop(reply);
        let mut result = Ok(Vec::new());
        for _ in 0..sent {
            let answer =
                answers.recv().map_err(|_| io::Error::other("stripe member thread is gone"))?;
            match (&mut result, answer) {
                (Ok(pairs), Ok(pair)) => pairs.extend(pair),
                (Ok(_), Err(e)) => result = Err(e),
                (Err(_), _) => {}
            }
        }
        result
    }

    /// Waits for every pair of `pairs`; the first error.
    fn wait_all(pairs: Vec<Pending>) -> io::Result<()> {
        let mut result = Ok(());
        for pair in pairs {
            let outcome = pair.into_ready();
            if result.is_ok() {
                result = outcome.map(drop);
            }
        }
        result
    }

    /// Writes `bytes` at `offset` across the members in parallel, then (if `sync`) syncs every
    /// member in parallel: the members' pairs, still to be waited for.
    fn write_striped(&self, offset: u64, bytes: &[u8], sync: bool) -> io::Result<Vec<Pending>> {
        // A member's pieces of one write are contiguous on the member (stripes k and k + N
        // are neighbours there): coalesce them, so each member gets one write per call.
        let mut per_member: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); self.devices.len()];
        for (m, member_offset, start, n) in self.pieces(offset, bytes.len()) {
            let piece = &bytes[start..start + n];
            match per_member[m].last_mut() {
                Some((at, run)) if *at + run.len() as u64 == member_offset => {
                    run.extend_from_slice(piece)
                }
                _ => per_member[m].push((member_offset, piece.to_vec())),
            }
        }
        let to: Vec<usize> =
            (0..self.devices.len()).filter(|&m| sync || !per_member[m].is_empty()).collect();
        let pairs = self.run(to, |m, reply| StripeJob::Io {
            writes: std::mem::take(&mut per_member[m]),
            sync,
            reply,
        })?;
        let mut len = self.len.lock();
        *len = (*len).max(offset + bytes.len() as u64);
        Ok(pairs)
    }

    fn set_len(&self, len: u64, grow: bool) -> io::Result<()> {
        self.run(0..self.devices.len(), |m, reply| StripeJob::SetLen {
            len: self.member_len(len, m),
            grow,
            reply,
        })?;
        let mut current = self.len.lock();
        *current = if grow { (*current).max(len) } else { len };
        Ok(())
    }
}

impl Drop for StripedDevice {
    fn drop(&mut self) {
        self.members.clear(); // closes the channels: the member threads end
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl LogDevice for StripedDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.write_striped(offset, bytes, false).map(drop)
    }

    fn sync(&self) -> io::Result<()> {
        let pairs = self.run(0..self.devices.len(), |_, reply| StripeJob::Io {
            writes: Vec::new(),
            sync: true,
            reply,
        })?;
        StripedDevice::wait_all(pairs)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let len = *self.len.lock();
        let n = buf.len().min(len.saturating_sub(offset) as usize);
        for (m, member_offset, start, piece) in self.pieces(offset, n) {
            let got = self.devices[m].read_at(member_offset, &mut buf[start..start + piece])?;
            // Never-written parts of a member read as zeros.
            buf[start + got..start + piece].fill(0);
        }
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(*self.len.lock())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.set_len(len, false)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        if len <= *self.len.lock() {
            return Ok(());
        }
        self.set_len(len, true)
    }

    fn overlaps_pairs(&self) -> bool {
        self.devices.iter().any(|d| d.overlaps_pairs())
    }

    /// One request per member: its pieces, then its sync (all members, in parallel). The pair
    /// completes when every member's has: at submit with serial members, later with
    /// [`ThrottledDevice::pipelined`] ones.
    fn submit_write_sync(&self, offset: u64, buf: Vec<u8>) -> io::Result<Pending> {
        let pairs = match self.write_striped(offset, &buf, true) {
            Ok(pairs) => pairs,
            Err(e) => return Ok(Pending::ready(Err(e))),
        };
        Ok(Pending::deferred(move || StripedDevice::wait_all(pairs).map(|()| buf)))
    }
}

/// Wraps a new segment's [`MemDevice`] into the device the log writes (faults, throttling).
pub type WrapSegment = dyn Fn(SegmentNo, Arc<MemDevice>) -> Box<dyn LogDevice> + Send + Sync;

/// An in-memory [`SegmentStore`]: each segment is a [`MemDevice`], kept for inspection (and
/// optionally wrapped, e.g. in a [`FaultyDevice`] or [`ThrottledDevice`], before the log sees
/// it). Share it with the log as `Arc<MemStore>`.
pub struct MemStore {
    segment_size: u64,
    segments: Mutex<BTreeMap<SegmentNo, Arc<MemDevice>>>,
    spills: Mutex<BTreeMap<u64, Vec<u8>>>,
    wrap: Box<WrapSegment>,
}

impl fmt::Debug for MemStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemStore").field("segment_size", &self.segment_size).finish_non_exhaustive()
    }
}

impl MemStore {
    /// A store of unwrapped segments of `segment_size` bytes.
    pub fn new(segment_size: u64) -> Arc<MemStore> {
        MemStore::with_wrapper(segment_size, |_, device| Box::new(device))
    }

    /// A store whose new segments are passed through `wrap`.
    pub fn with_wrapper(
        segment_size: u64,
        wrap: impl Fn(SegmentNo, Arc<MemDevice>) -> Box<dyn LogDevice> + Send + Sync + 'static,
    ) -> Arc<MemStore> {
        Arc::new(MemStore {
            segment_size,
            segments: Mutex::new(BTreeMap::new()),
            spills: Mutex::new(BTreeMap::new()),
            wrap: Box::new(wrap),
        })
    }

    /// The segments that exist, in order.
    pub fn segments(&self) -> Vec<(SegmentNo, Arc<MemDevice>)> {
        self.segments.lock().iter().map(|(no, d)| (*no, d.clone())).collect()
    }

    /// The spill files that exist (written whole and durable, as a synced file is).
    pub fn spills(&self) -> BTreeMap<u64, Vec<u8>> {
        self.spills.lock().clone()
    }
}

impl SegmentStore for MemStore {
    fn segment_size(&self) -> u64 {
        self.segment_size
    }

    fn list(&self) -> io::Result<Vec<SegmentNo>> {
        Ok(self.segments.lock().keys().copied().collect())
    }

    fn create(&self, no: SegmentNo) -> io::Result<Box<dyn LogDevice>> {
        let device = Arc::new(MemDevice::new());
        let mut segments = self.segments.lock();
        if segments.contains_key(&no) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("segment {no}")));
        }
        segments.insert(no, device.clone());
        drop(segments);
        Ok((self.wrap)(no, device))
    }

    fn remove(&self, no: SegmentNo) -> io::Result<()> {
        match self.segments.lock().remove(&no) {
            Some(_) => Ok(()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("segment {no}"))),
        }
    }

    fn write_spill(&self, id: u64, bytes: &[u8]) -> io::Result<()> {
        let mut spills = self.spills.lock();
        if spills.contains_key(&id) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("spill {id}")));
        }
        spills.insert(id, bytes.to_vec());
        Ok(())
    }

    fn read_spill(&self, id: u64) -> io::Result<Vec<u8>> {
        self.spills
            .lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("spill {id}")))
    }

    fn remove_spill(&self, id: u64) -> io::Result<()> {
        match self.spills.lock().remove(&id) {
            Some(_) => Ok(()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("spill {id}"))),
        }
    }

    fn list_spills(&self) -> io::Result<Vec<u64>> {
        Ok(self.spills.lock().keys().copied().collect())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn mem_device_crash_keeps_synced_and_torn_prefix() {
        let d = MemDevice::new();
        d.write_at(0, b"abcd").unwrap();
        d.sync().unwrap();
        d.write_at(4, b"efgh").unwrap();
        d.write_at(8, b"ijkl").unwrap();
        assert_eq!(d.bytes(), b"abcdefghijkl");
        assert_eq!(d.durable_bytes(), b"abcd");
        assert_eq!(d.unsynced_bytes(), 8);
        d.crash(6);
        assert_eq!(d.bytes(), b"abcdefghij", "4 synced + first 6 unsynced bytes in write order");
        d.write_at(10, b"zz").unwrap();
        d.crash(0);
        assert_eq!(d.bytes(), b"abcdefghij", "the crash made its survivors durable");
        d.truncate(2).unwrap();
        d.crash(0);
        assert_eq!(d.bytes(), b"abcdefghij", "an unsynced truncate is lost too");
        d.truncate(2).unwrap();
        d.allocate(5).unwrap();
        d.sync().unwrap();
        d.crash(0);
        assert_eq!(d.bytes(), b"ab\0\0\0");
    }

    #[test]
    fn faulty_device_fails_the_nth_write_and_refuses_retries() {
        let d = FaultyDevice::new(MemDevice::new()).fail_write(2);
        d.write_at(0, b"one").unwrap();
        let e = d.write_at(3, b"two").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        assert!(d.failed());
        assert_eq!(d.attempts_after_failure(), 0);
        assert!(d.write_at(3, b"two").is_err(), "a retry is refused");
        assert!(d.sync().is_err(), "a sync after a failed write is refused");
        assert_eq!(d.attempts_after_failure(), 2);
        assert_eq!(d.inner().bytes(), b"one", "the failed write wrote nothing");
        let mut buf = [0; 3];
        assert_eq!(d.read_at(0, &mut buf).unwrap(), 3, "reads still work");
    }

    #[test]
    fn faulty_device_fails_the_nth_sync() {
        let d = FaultyDevice::new(MemDevice::new()).fail_sync(2);
        d.write_and_sync(0, b"a").unwrap();
        d.write_at(1, b"b").unwrap();
        assert_eq!(d.sync().unwrap_err().raw_os_error(), Some(libc::EIO));
        d.inner().crash(0);
        assert_eq!(d.inner().bytes(), b"a", "the unsynced byte is lost");
        assert_eq!((d.writes(), d.syncs()), (2, 2));
    }

    #[test]
    fn faulty_device_enospc_maps_to_no_space() {
        let d = FaultyDevice::new(MemDevice::new()).no_space_on_write(1);
        let e = d.write_and_sync(0, b"x").unwrap_err();
        let e = crate::Error::io(crate::DeviceId(2), e);
        assert!(matches!(e, crate::Error::NoSpace { .. }), "{e:?}");
        assert!(e.to_string().contains("out of space"), "{e}");
    }

    #[test]
    fn faulty_device_tears_a_write() {
        let d = FaultyDevice::new(Arc::new(MemDevice::new())).tear_write(2, 3);
        d.write_at(0, b"head").unwrap();
        assert!(d.write_at(4, b"tail-bytes").is_err());
        assert_eq!(d.inner().bytes(), b"headtai");
        assert!(d.failed());
    }

    #[test]
    fn faulty_device_fails_a_read_without_poisoning() {
        let d = FaultyDevice::new(MemDevice::with_bytes(b"xyz".to_vec())).fail_read(1);
        let mut buf = [0; 3];
        assert!(d.read_at(0, &mut buf).is_err());
        assert_eq!(d.read_at(0, &mut buf).unwrap(), 3);
        d.write_at(3, b"w").unwrap();
    }

    #[test]
    fn faulty_device_applies_to_pairs() {
        let d = FaultyDevice::new(MemDevice::new()).fail_sync(1);
        let p = d.submit_write_sync(0, vec![1; 4]).unwrap();
        assert!(d.wait(p).is_err());
        assert!(d.submit_write_sync(4, vec![1; 4]).and_then(|p| d.wait(p)).is_err());
        assert_eq!(d.attempts_after_failure(), 1);
    }

    /// Lower bounds only: sleeping never returns early, so these cannot flake.
    #[test]
    fn throttled_device_delays_at_least_as_configured() {
        let d = ThrottledDevice::new(MemDevice::new(), 1_000_000, Duration::from_millis(20));
        let start = Instant::now();
        d.sync().unwrap();
        assert!(start.elapsed() >= Duration::from_millis(20), "a sync takes at least its latency");
        let start = Instant::now();
        d.write_at(0, &[0; 50_000]).unwrap(); // 50 ms at 1 MB/s
        assert!(start.elapsed() >= Duration::from_millis(50));
        let start = Instant::now();
        d.write_at(50_000, &[0; 10_000]).unwrap(); // 10 ms
        d.sync().unwrap(); // + 20 ms
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert_eq!(d.inner().durable_bytes().len(), 60_000);
        // Two threads share the emulated bandwidth: 2 × 20 KB at 1 MB/s takes at least 40 ms.
        let d = Arc::new(ThrottledDevice::new(MemDevice::new(), 1_000_000, Duration::ZERO));
        let start = Instant::now();
        let threads: Vec<_> = (0..2u64)
            .map(|i| {
                let d = d.clone();
                std::thread::spawn(move || d.write_at(i * 20_000, &[1; 20_000]).unwrap())
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert!(start.elapsed() >= Duration::from_millis(40));
    }

    /// A pipelined device's pair occupies the submitter for the transfer only and completes a
    /// sync latency later, at its wait; a striped device over such members does the same.
    /// Lower bounds, plus "submit does not sleep the sync latency", checked with a latency no
    /// test run could reach by accident.
    #[test]
    fn pipelined_throttled_device_completes_pairs_at_their_wait() {
        let d = ThrottledDevice::pipelined(MemDevice::new(), 1_000_000, Duration::from_millis(20));
        let start = Instant::now();
        let first = d.submit_write_sync(0, vec![1; 10_000]).unwrap(); // 10 ms at 1 MB/s
        let second = d.submit_write_sync(10_000, vec![2; 10_000]).unwrap(); // queued: 20 ms
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert_eq!(d.wait(first).unwrap().len(), 10_000);
        assert_eq!(d.wait(second).unwrap(), vec![2; 10_000]);
        assert!(start.elapsed() >= Duration::from_millis(40), "the last transfer + its sync");
        assert_eq!(d.inner().durable_bytes().len(), 20_000);

        let hour = Duration::from_secs(3600);
        let start = Instant::now();
        let d = ThrottledDevice::pipelined(MemDevice::new(), 0, hour);
        drop(d.submit_write_sync(0, vec![3; 8]).unwrap());
        let members: Vec<Arc<dyn LogDevice>> = (0..2)
            .map(|_| Arc::new(ThrottledDevice::pipelined(MemDevice::new(), 0, hour)) as _)
            .collect();
        let striped = StripedDevice::new(members, 4);
        drop(striped.submit_write_sync(0, vec![4; 16]).unwrap());
        assert!(start.elapsed() < hour, "neither submit waited for its sync");

        let members: Vec<Arc<dyn LogDevice>> = (0..2)
            .map(|_| {
                Arc::new(ThrottledDevice::pipelined(MemDevice::new(), 0, Duration::from_millis(20)))
                    as _
            })
            .collect();
        let striped = StripedDevice::new(members, 4);
        let start = Instant::now();
        let pair = striped.submit_write_sync(0, (0..16).collect()).unwrap();
        assert_eq!(striped.wait(pair).unwrap(), (0..16).collect::<Vec<u8>>());
        assert!(start.elapsed() >= Duration::from_millis(20));
        let mut buf = [0; 16];
        assert_eq!(striped.read_at(0, &mut buf).unwrap(), 16);
        assert_eq!(buf.to_vec(), (0..16).collect::<Vec<u8>>());
    }

    #[test]
    fn striped_device_round_trips_across_stripes() {
        let members: Vec<Arc<MemDevice>> = (0..3).map(|_| Arc::new(MemDevice::new())).collect();
        let d = StripedDevice::new(
            members.iter().map(|m| m.clone() as Arc<dyn LogDevice>).collect(),
            4,
        );
        let bytes: Vec<u8> = (0..30).collect();
        d.write_at(2, &bytes[..20]).unwrap();
        d.submit_write_sync(22, bytes[20..].to_vec()).and_then(|p| d.wait(p)).unwrap();
        assert_eq!(d.len().unwrap(), 32);
        let mut buf = vec![0xAA; 40];
        assert_eq!(d.read_at(0, &mut buf).unwrap(), 32);
        assert_eq!(&buf[..2], &[0, 0]);
        assert_eq!(&buf[2..32], &bytes[..]);
        // Logical stripes 0, 3, 6 are member 0's stripes 0, 1, 2.
        assert_eq!(members[0].durable_bytes(), [0, 0, 0, 1, 10, 11, 12, 13, 22, 23, 24, 25]);
        assert_eq!(members[1].durable_bytes(), [2, 3, 4, 5, 14, 15, 16, 17, 26, 27, 28, 29]);
        assert_eq!(members[2].durable_bytes(), [6, 7, 8, 9, 18, 19, 20, 21]);
        d.truncate(9).unwrap();
        d.sync().unwrap();
        let lens: Vec<usize> = members.iter().map(|m| m.durable_bytes().len()).collect();
        assert_eq!(lens, [4, 4, 1], "9 bytes: stripes 0, 1 whole and 1 byte of stripe 2");
        d.allocate(13).unwrap();
        assert_eq!(d.len().unwrap(), 13);
        let mut buf = vec![0xAA; 13];
        assert_eq!(d.read_at(0, &mut buf).unwrap(), 13);
        assert_eq!(&buf[..9], &[0, 0, 0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(&buf[9..], &[0; 4], "allocated bytes read as zero");
    }

    #[test]
    fn striped_device_sends_each_member_one_write_per_call() {
        let members: Vec<Arc<FaultyDevice<MemDevice>>> =
            (0..3).map(|_| Arc::new(FaultyDevice::new(MemDevice::new()))).collect();
        let d = StripedDevice::new(
            members.iter().map(|m| m.clone() as Arc<dyn LogDevice>).collect(),
            4,
        );
        d.write_and_sync(1, &[9; 40]).unwrap();
        for m in &members {
            assert_eq!((m.writes(), m.syncs()), (1, 1), "stripes k, k + 3, ... coalesced");
        }
        d.sync().unwrap();
        assert!(members.iter().all(|m| m.syncs() == 2), "a sync reaches every member");
    }

    /// Lower bounds, and upper bounds with a wide margin: the members work in parallel, so a
    /// sync of four members costs one member's latency (100 ms), not four (400 ms).
    #[test]
    fn striped_device_syncs_and_writes_members_in_parallel() {
        let members: Vec<Arc<dyn LogDevice>> = (0..4)
            .map(|_| {
                let throttled =
                    ThrottledDevice::new(MemDevice::new(), 1_000_000, Duration::from_millis(100));
                Arc::new(throttled) as Arc<dyn LogDevice>
            })
            .collect();
        let d = StripedDevice::new(members, 1000);
        let start = Instant::now();
        d.sync().unwrap();
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(100), "{took:?}");
        assert!(took < Duration::from_millis(300), "four syncs ran one after another: {took:?}");
        // 40 KB over four 1 MB/s members: 10 ms each in parallel (40 ms on one), then 100 ms.
        let start = Instant::now();
        d.write_and_sync(0, &[7; 40_000]).unwrap();
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(110), "{took:?}");
        assert!(
            took < Duration::from_millis(330),
            "the members did not work in parallel: {took:?}"
        );
    }
}

/// For goldenscript test files: asserts that the `*.txt` scripts in `dir` are exactly `listed`
/// (a script that exists but is never run, or one listed but missing, fails).
pub fn check_scripts_listed(dir: &std::path::Path, listed: &[&str]) {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| p.file_stem().expect("stem").to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut listed: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "{}/*.txt and the scripts! list differ", dir.display());
}
