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
//!
//! Counting is 1-based and covers every call of the kind, including the write and sync that
//! [`LogDevice::submit_write_sync`] performs (the wrappers use its default, synchronous
//! implementation, so their faults and delays apply to pairs too).

use std::io;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::device::{LogDevice, Poison, SegmentNo};
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
#[derive(Debug)]
pub struct ThrottledDevice<D> {
    inner: D,
    bytes_per_sec: u64,
    sync_latency: Duration,
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
            busy_until: Mutex::new(Instant::now()),
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

/// Wraps a new segment's [`MemDevice`] into the device the log writes (faults, throttling).
pub type WrapSegment = dyn Fn(SegmentNo, Arc<MemDevice>) -> Box<dyn LogDevice> + Send + Sync;

/// An in-memory [`SegmentStore`]: each segment is a [`MemDevice`], kept for inspection (and
/// optionally wrapped, e.g. in a [`FaultyDevice`] or [`ThrottledDevice`], before the log sees
/// it). Share it with the log as `Arc<MemStore>`.
pub struct MemStore {
    segment_size: u64,
    segments: Mutex<BTreeMap<SegmentNo, Arc<MemDevice>>>,
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
            wrap: Box::new(wrap),
        })
    }

    /// The segments that exist, in order.
    pub fn segments(&self) -> Vec<(SegmentNo, Arc<MemDevice>)> {
        self.segments.lock().iter().map(|(no, d)| (*no, d.clone())).collect()
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
}
