//! Log devices: where log bytes go (DESIGN.md §3, STYLE §1 rule 2 "wal → disk").
//!
//! A [`LogDevice`] is one append target, in practice one *segment file*. A Poplar log device
//! ([`DeviceId`]) is a directory holding a sequence of segments ([`SegmentNo`]); one logger
//! thread owns it. Every byte that `wal` and `recovery` write or read goes through this trait,
//! so that the test doubles of `crate::testing` can crash, tear, fail and slow it.
//!
//! ## Durability contract
//!
//! - Bytes written with [`LogDevice::write_at`] are **durable only after a later
//!   [`LogDevice::sync`] returns `Ok`** (on a file: `fdatasync`). Before that a crash may keep
//!   any subset of them, in any order, at page granularity: a torn tail may hold garbage or
//!   even complete records that were never synced (see [`crate::reader`]).
//! - [`LogDevice::submit_write_sync`] + [`LogDevice::wait`] is a write followed by a sync of
//!   the same device; `wait` returning `Ok` makes those bytes durable. With several pairs in
//!   flight, a pair's sync covers its own write but **not** an earlier pair's write that had not
//!   completed yet: bytes up to offset `x` are durable only once *every* pair ending at or
//!   before `x` has completed `Ok`. A logger publishes its DSN in submission order.
//! - **Fault policy: no retry.** After a failed write or sync the device must not be written or
//!   synced again, because the kernel may have dropped the dirty pages and a later `fdatasync`
//!   could then report success for data that is gone. The implementations here enforce it: after
//!   the first failure every write and sync fails at once (reads still work). The caller marks
//!   the device failed, acknowledges nothing whose record was on it, and shuts down so that
//!   recovery starts from what is durable.
//! - Growing a file (writing past its end, [`LogDevice::allocate`], [`LogDevice::truncate`]) is
//!   durable after the next sync too: `fdatasync` flushes the size when reads need it. Creating a
//!   file is durable only after its directory is synced, which [`open_device`] does.
//!
//! ## Implementations
//!
//! | type | writes | sync | pipelining |
//! |---|---|---|---|
//! | [`FileDevice`] | `pwrite` | `fdatasync` | none: `submit_write_sync` completes before returning |
//! | [`UringDevice`] | `pwrite`; pairs: io_uring `WRITE` linked to `FSYNC(DATASYNC)` | `fdatasync` | any number of pairs in flight |
//! | [`MappedDevice`] | a copy into a shared mapping of the segment | `fdatasync`; none on tmpfs | none |
//!
//! [`open_device`] picks `UringDevice` and falls back to `FileDevice` when `IoUring::new` fails
//! (seccomp, old kernels, sandboxes: EPERM, ENOSYS, or anything else); on a memory file system
//! the store asks for `MappedDevice` ([`crate::store::for_memory_fs`]). It preallocates the file
//! to the segment size. Prefer [`Preallocate::ZeroFill`]: overwriting written zeros does not make
//! `fdatasync` journal extent changes, which makes the sync floor about 40% lower than appending
//! (research/crates.md §4).
//!
//! All implementations are `Send + Sync`: methods take `&self`, and a device can be shared with
//! `Arc` (the blanket impls forward). Dropping a device waits for its in-flight I/O.

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use io_uring::{opcode, squeue, types, IoUring};

use crate::sync::{AtomicBool, Mutex, Ordering};

/// Identifies one Poplar log device (one log buffer, one logger, one sequence of segments).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct DeviceId(pub u16);

/// The number of a segment file within one device's sequence; segments are read in this order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct SegmentNo(pub u64);

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for SegmentNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A log device (one segment file). See the module doc for the durability contract.
pub trait LogDevice: Send + Sync + fmt::Debug {
    /// Writes all of `bytes` at `offset`, growing the device if needed. Not durable until a
    /// later [`LogDevice::sync`] returns `Ok`. After an error the device is failed: do not retry.
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()>;

    /// Makes every write that completed before this call durable (`fdatasync`). After an error
    /// the device is failed: do not retry, and treat every unsynced write as lost.
    fn sync(&self) -> io::Result<()>;

    /// Reads up to `buf.len()` bytes at `offset`; returns fewer only at the end of the device.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// The current length in bytes (including preallocated space).
    fn len(&self) -> io::Result<u64>;

    /// Whether the device holds no bytes.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Sets the length to `len`, dropping or zero-extending the end. Durable after a sync.
    fn truncate(&self, len: u64) -> io::Result<()>;

    /// Makes the device at least `len` bytes long, with storage allocated for `[0, len)`
    /// (`fallocate`); bytes never written read as zero. Never shrinks. Durable after a sync.
    fn allocate(&self, len: u64) -> io::Result<()>;

    /// Starts writing `buf` at `offset` followed by a sync; [`LogDevice::wait`] returns the
    /// outcome and the buffer. Several pairs may be in flight (see the module doc for what a
    /// completed pair makes durable). The default runs both synchronously.
    fn submit_write_sync(&self, offset: u64, buf: Vec<u8>) -> io::Result<Pending> {
        let result = self.write_at(offset, &buf).and_then(|()| self.sync()).map(|()| buf);
        Ok(Pending(PendingState::Ready(result)))
    }

    /// Whether [`LogDevice::submit_write_sync`] returns while its pair is still in flight, so
    /// that several pairs can be on the device at once (the logger then measures how many pay:
    /// module `depth`). The default (pairs run at submit) says no.
    fn overlaps_pairs(&self) -> bool {
        false
    }

    /// Waits for a pair submitted to this device; `Ok` means its bytes are durable (given that
    /// every earlier pair also completed `Ok`), and gives the buffer back for reuse.
    ///
    /// # Panics
    /// If `pending` is in flight on another [`UringDevice`].
    fn wait(&self, pending: Pending) -> io::Result<Vec<u8>> {
        pending.into_ready()
    }

    /// Writes `bytes` at `offset` and makes them durable (a pair, waited for).
    fn write_and_sync(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let pending = self.submit_write_sync(offset, bytes.to_vec())?;
        self.wait(pending).map(drop)
    }
}

/// A write+sync pair in flight, from [`LogDevice::submit_write_sync`]. Pass it to
/// [`LogDevice::wait`] of the same device. Dropping it does not cancel the I/O (the device keeps
/// the buffer until the kernel is done with it) but loses the outcome.
#[must_use = "the outcome of a write+sync is only known through LogDevice::wait"]
#[derive(Debug)]
pub struct Pending(PendingState);

enum PendingState {
    /// Already complete (synchronous devices).
    Ready(io::Result<Vec<u8>>),
    /// Completes when the closure returns (test doubles that emulate a device with several
    /// pairs in flight, e.g. `testing::ThrottledDevice::pipelined`).
    Deferred(Box<dyn FnOnce() -> io::Result<Vec<u8>> + Send>),
    /// In flight on the [`UringDevice`] whose `token` is `device`.
    Uring { device: u64, id: u64 },
}

impl fmt::Debug for PendingState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PendingState::Ready(result) => f.debug_tuple("Ready").field(result).finish(),
            PendingState::Deferred(_) => f.write_str("Deferred"),
            PendingState::Uring { device, id } => {
                f.debug_struct("Uring").field("device", device).field("id", id).finish()
            }
        }
    }
}

impl Pending {
    /// A pair that has already completed with `result`: for devices that complete at submit
    /// (test doubles and wrappers outside this module).
    pub fn ready(result: io::Result<Vec<u8>>) -> Pending {
        Pending(PendingState::Ready(result))
    }

    /// A pair whose outcome `complete` waits for and returns, on the thread that waits for the
    /// pair (for devices that emulate pairs in flight outside this module).
    pub fn deferred(complete: impl FnOnce() -> io::Result<Vec<u8>> + Send + 'static) -> Pending {
        Pending(PendingState::Deferred(Box::new(complete)))
    }

    /// The outcome of a pair that completed at submit, or of a deferred pair (waiting for it).
    ///
    /// # Panics
    /// If the pair is still in flight on a [`UringDevice`]: it must be waited on that device.
    pub fn into_ready(self) -> io::Result<Vec<u8>> {
        match self.0 {
            PendingState::Ready(result) => result,
            PendingState::Deferred(complete) => complete(),
            PendingState::Uring { .. } => {
                panic!("an io_uring pair must be waited on the UringDevice that submitted it")
            }
        }
    }
}

macro_rules! forward_log_device {
    ($ty:ty) => {
        impl<D: LogDevice + ?Sized> LogDevice for $ty {
            fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
                (**self).write_at(offset, bytes)
            }
            fn sync(&self) -> io::Result<()> {
                (**self).sync()
            }
            fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
                (**self).read_at(offset, buf)
            }
            fn len(&self) -> io::Result<u64> {
                (**self).len()
            }
            fn truncate(&self, len: u64) -> io::Result<()> {
                (**self).truncate(len)
            }
            fn allocate(&self, len: u64) -> io::Result<()> {
                (**self).allocate(len)
            }
            fn submit_write_sync(&self, offset: u64, buf: Vec<u8>) -> io::Result<Pending> {
                (**self).submit_write_sync(offset, buf)
            }
            fn overlaps_pairs(&self) -> bool {
                (**self).overlaps_pairs()
            }
            fn wait(&self, pending: Pending) -> io::Result<Vec<u8>> {
                (**self).wait(pending)
            }
            fn write_and_sync(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
                (**self).write_and_sync(offset, bytes)
            }
        }
    };
}
forward_log_device!(Box<D>);
forward_log_device!(Arc<D>);

/// The "failed" bit of a device (the fault policy). Once set, never unset: every later write and
/// sync fails with [`Poison::error`].
#[derive(Debug)]
pub(crate) struct Poison(AtomicBool);

impl Poison {
    pub(crate) fn new() -> Poison {
        Poison(AtomicBool::new(false))
    }

    /// `Err` once the device has failed.
    pub(crate) fn check(&self) -> io::Result<()> {
        // Relaxed: the bit orders nothing else; a racing write that misses it fails on its own or
        // is never acknowledged, because the failing caller stops the logger.
        if self.0.load(Ordering::Relaxed) {
            Err(Poison::error())
        } else {
            Ok(())
        }
    }

    /// Records a failure and passes the error through.
    pub(crate) fn fail(&self, e: io::Error) -> io::Error {
        self.0.store(true, Ordering::Relaxed);
        e
    }

    /// Runs a write or sync: refused if failed, and a failure poisons.
    pub(crate) fn guard<T>(&self, op: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        self.check()?;
        op().map_err(|e| self.fail(e))
    }

    pub(crate) fn error() -> io::Error {
        io::Error::other("log device failed earlier; writes and syncs are not retried (DESIGN §3)")
    }
}

/// Reads until `buf` is full or the end of the file.
fn read_full_at(file: &File, mut offset: u64, mut buf: &mut [u8]) -> io::Result<usize> {
    let mut total = 0;
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => break,
            Ok(n) => {
                total += n;
                offset += n as u64;
                buf = &mut buf[n..];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

fn fdatasync(file: &File) -> io::Result<()> {
    loop {
        // SAFETY: `file` is borrowed for the whole call, so its descriptor is open.
        let rc = unsafe { libc::fdatasync(file.as_raw_fd()) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `fallocate(fd, 0, 0, len)` if the file is shorter; falls back to writing zeros where the
/// file system lacks it.
fn fallocate(file: &File, len: u64) -> io::Result<()> {
    let current = file.metadata()?.len();
    if len <= current {
        return Ok(());
    }
    match allocate_range(file, len) {
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => zero_fill_file(file, current, len),
        other => other,
    }
}

/// `fallocate(fd, 0, 0, len)` whatever the file's length (it allocates holes below it too).
fn allocate_range(file: &File, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(io::Error::other)?;
    loop {
        // SAFETY: `file` is borrowed for the whole call, so its descriptor is open; mode 0 only
        // allocates and extends, it never discards data.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// The chunk size of zero-filling.
const ZERO_CHUNK: usize = 1 << 20;

pub(crate) fn zero_fill_file(file: &File, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; ZERO_CHUNK];
    let mut at = from;
    while at < to {
        let n = ((to - at) as usize).min(ZERO_CHUNK);
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// Writes zeros over `[from, to)` of `device` (not synced). The [`Preallocate::ZeroFill`] path,
/// and the way to clear a torn tail before appending after it (see [`crate::reader`]).
pub fn zero_fill(device: &dyn LogDevice, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; ZERO_CHUNK.min(to.saturating_sub(from) as usize)];
    let mut at = from;
    while at < to {
        let n = ((to - at) as usize).min(ZERO_CHUNK);
        device.write_at(at, &zeros[..n])?;
        at += n as u64;
    }
    Ok(())
}

fn open_file(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
}

/// A segment file written with `pwrite` and synced with `fdatasync`: the fallback where
/// io_uring is unavailable, and the reference the io_uring device is tested against.
#[derive(Debug)]
pub struct FileDevice {
    file: File,
    poison: Poison,
}

impl FileDevice {
    /// Opens `path` for reading and writing, creating it if missing; never truncates. Does not
    /// sync the directory (see [`open_device`]).
    pub fn open(path: &Path) -> io::Result<FileDevice> {
        Ok(FileDevice::from_file(open_file(path)?))
    }

    /// Wraps an open file (read and write access).
    pub fn from_file(file: File) -> FileDevice {
        FileDevice { file, poison: Poison::new() }
    }
}

impl LogDevice for FileDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.poison.guard(|| self.file.write_all_at(bytes, offset))
    }

    fn sync(&self) -> io::Result<()> {
        self.poison.guard(|| fdatasync(&self.file))
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        read_full_at(&self.file, offset, buf)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.poison.guard(|| self.file.set_len(len))
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.poison.guard(|| fallocate(&self.file, len))
    }
}

/// Default number of submission queue entries of a [`UringDevice`] ring.
pub const DEFAULT_RING_ENTRIES: u32 = 64;

/// The largest buffer one io_uring write takes (Linux caps one write at 0x7fff_f000 bytes).
const MAX_URING_WRITE: usize = 1 << 30;

/// `user_data` bit that marks the FSYNC of a pair (the WRITE has it clear); the pair's id is
/// `user_data >> 1`.
const SYNC_BIT: u64 = 1;

/// Process-wide source of [`UringDevice`] tokens, so that a [`Pending`] waited on the wrong
/// device panics instead of waiting forever. A plain counter, not part of any modeled protocol,
/// hence std's atomic rather than `crate::sync`'s.
static NEXT_URING_TOKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A segment file whose write+sync pairs go through io_uring: `WRITE` linked (`IO_LINK`) to
/// `FSYNC(DATASYNC)`, so the sync starts only after the write succeeded and is cancelled
/// (`-ECANCELED`) if it failed. Several pairs can be in flight; that is where io_uring beats
/// `pwrite` + `fdatasync` (research/crates.md §4: 2.4× the syncs/s at depth 16).
///
/// Plain [`LogDevice::write_at`] and [`LogDevice::sync`] use `pwrite` and `fdatasync` on the
/// same file.
///
/// Waiting holds the ring's lock: one thread (the device's logger) is expected to submit and
/// wait; other threads calling in are correct but serialized.
pub struct UringDevice {
    state: Mutex<UringState>,
    /// The file and its fault state; plain writes, syncs and reads go through it unchanged.
    plain: FileDevice,
    token: u64,
}

struct UringState {
    ring: IoUring,
    next_id: u64,
    /// Pairs submitted and not yet handed back by `wait`. Each owns the buffer its WRITE SQE
    /// points into; an entry is removed only after both of its CQEs have been reaped.
    in_flight: HashMap<u64, InFlight>,
}

struct InFlight {
    buf: Vec<u8>,
    write: Option<i32>,
    sync: Option<i32>,
}

impl fmt::Debug for UringDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UringDevice").field("file", &self.plain.file).finish_non_exhaustive()
    }
}

impl UringDevice {
    /// Opens (or creates) `path` with a ring of `entries` submission entries. Fails if io_uring
    /// is unavailable (for example `EPERM` under seccomp, `ENOSYS` on old kernels).
    pub fn open(path: &Path, entries: u32) -> io::Result<UringDevice> {
        UringDevice::from_file(open_file(path)?, entries)
    }

    /// Wraps an open file (read and write access) with a new ring.
    pub fn from_file(file: File, entries: u32) -> io::Result<UringDevice> {
        Ok(UringDevice::with_ring(file, IoUring::new(entries.max(2))?))
    }

    fn with_ring(file: File, ring: IoUring) -> UringDevice {
        UringDevice {
            state: Mutex::new(UringState { ring, next_id: 0, in_flight: HashMap::new() }),
            plain: FileDevice::from_file(file),
            token: NEXT_URING_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Pairs submitted and not yet waited for (including abandoned ones still in the kernel).
    pub fn in_flight(&self) -> usize {
        self.state.lock().in_flight.len()
    }

    /// Moves every available CQE into its pair.
    fn reap(state: &mut UringState) {
        let UringState { ring, in_flight, .. } = state;
        for cqe in ring.completion() {
            let id = cqe.user_data() >> 1;
            let pair = in_flight.get_mut(&id).expect("a CQE for a pair this device submitted");
            if cqe.user_data() & SYNC_BIT == 0 {
                pair.write = Some(cqe.result());
            } else {
                pair.sync = Some(cqe.result());
            }
        }
    }

    fn outcome(&self, pair: InFlight) -> io::Result<Vec<u8>> {
        let write = pair.write.expect("complete pair");
        let sync = pair.sync.expect("complete pair");
        let result = if write < 0 {
            Err(io::Error::from_raw_os_error(-write))
        } else if write as usize != pair.buf.len() {
            Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short io_uring write: {write} of {} bytes", pair.buf.len()),
            ))
        } else if sync < 0 {
            Err(io::Error::from_raw_os_error(-sync))
        } else {
            Ok(pair.buf)
        };
        result.map_err(|e| self.plain.poison.fail(e))
    }
}

impl LogDevice for UringDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.plain.write_at(offset, bytes)
    }

    fn sync(&self) -> io::Result<()> {
        self.plain.sync()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.plain.read_at(offset, buf)
    }

    fn len(&self) -> io::Result<u64> {
        self.plain.len()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.plain.truncate(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.plain.allocate(len)
    }

    fn overlaps_pairs(&self) -> bool {
        true
    }

    fn submit_write_sync(&self, offset: u64, buf: Vec<u8>) -> io::Result<Pending> {
        assert!(buf.len() <= MAX_URING_WRITE, "one io_uring write of {} bytes", buf.len());
        self.plain.poison.check()?;
        let mut guard = self.state.lock();
        let state = &mut *guard;
        // Keep the completion queue (2 × entries) from overflowing: at most entries / 2 pairs.
        let max_pairs = state.ring.params().sq_entries() as usize / 2;
        loop {
            Self::reap(state);
            // Pairs whose CQEs are reaped no longer occupy the completion queue.
            let busy = state.in_flight.values().filter(|p| p.write.is_none() || p.sync.is_none());
            if busy.count() < max_pairs.max(1) {
                break;
            }
            match state.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.plain.poison.fail(e)),
            }
        }
        let id = state.next_id;
        state.next_id += 1;
        // Insert first: the Vec's heap block, which the SQE points into, never moves while the
        // Vec sits in the map (moving a Vec moves its pointer, not its heap block).
        let pair = state.in_flight.entry(id).or_insert(InFlight { buf, write: None, sync: None });
        let fd = types::Fd(self.plain.file.as_raw_fd());
        let write = opcode::Write::new(fd, pair.buf.as_ptr(), pair.buf.len() as u32)
            .offset(offset)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(id << 1);
        let sync = opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build()
            .user_data(id << 1 | SYNC_BIT);
        // SAFETY: the WRITE SQE points into `in_flight[id].buf`, whose heap block stays alive and
        // unmoved until both CQEs of pair `id` are reaped: `wait` removes the entry only then, and
        // `Drop` waits for every pair (or leaks the buffers if it cannot). The fd belongs to
        // `self.plain.file`, which `Drop` also keeps open until then (it drops after the wait). Both
        // SQEs go in one `push_multiple`, so the link never dangles.
        let pushed = unsafe { state.ring.submission().push_multiple(&[write, sync]) };
        if pushed.is_err() {
            // Nothing was queued (push_multiple is all or nothing): safe to take the buffer back.
            state.in_flight.remove(&id);
            return Err(io::Error::other("io_uring submission queue full"));
        }
        loop {
            match state.ring.submit() {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The SQEs may still be queued: the buffer stays in `in_flight` for `Drop`.
                Err(e) => return Err(self.plain.poison.fail(e)),
            }
        }
        Ok(Pending(PendingState::Uring { device: self.token, id }))
    }

    fn wait(&self, pending: Pending) -> io::Result<Vec<u8>> {
        let id = match pending.0 {
            PendingState::Ready(result) => return result,
            PendingState::Deferred(complete) => return complete(),
            PendingState::Uring { device, id } => {
                assert_eq!(device, self.token, "Pending waited on another UringDevice");
                id
            }
        };
        let mut guard = self.state.lock();
        let state = &mut *guard;
        loop {
            Self::reap(state);
            let pair = state.in_flight.get(&id).expect("each Pending is waited at most once");
            if pair.write.is_some() && pair.sync.is_some() {
                let pair = state.in_flight.remove(&id).expect("present");
                return self.outcome(pair);
            }
            match state.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The pair is still in flight: its buffer stays in `in_flight` for `Drop`.
                Err(e) => return Err(self.plain.poison.fail(e)),
            }
        }
    }
}

impl Drop for UringDevice {
    fn drop(&mut self) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        loop {
            Self::reap(state);
            state.in_flight.retain(|_, p| p.write.is_none() || p.sync.is_none());
            if state.in_flight.is_empty() {
                return;
            }
            match state.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // The kernel may still read these buffers: leak them rather than free memory
                    // that a write in flight points into.
                    for (_, pair) in state.in_flight.drain() {
                        std::mem::forget(pair.buf);
                    }
                    return;
                }
            }
        }
    }
}

/// A segment file written through a shared memory mapping of its preallocated length: a write is
/// a `memcpy` into the page cache, with no system call. The device [`open_device`] picks with
/// [`Backend::Auto`] on a memory file system (tmpfs, [`crate::store::for_memory_fs`]), where a
/// `pwrite` costs more in the kernel than the copy it makes (a profile of the logging suite had
/// `pwrite` at 3.7% of all CPU, ~140 ns per read-modify-write transaction: BENCHMARKS.md,
/// 2026-11-27) and `fdatasync` does nothing.
///
/// - Writes inside the mapping are copies; writes past it (the file grew after it was mapped)
///   go through `pwrite`. Reads always use `pread`: Linux keeps both views of a file in the same
///   page cache, so either sees the other's bytes.
/// - [`LogDevice::sync`] is `fdatasync`, which also writes back pages dirtied through the mapping;
///   on a memory file system, where the kernel's `fdatasync` is a no-op, it makes no call at
///   all. Durability is then what the file system offers: stores to a shared mapping are in the
///   page cache at once and survive the process, as `pwrite`'s bytes would.
/// - The mapping covers only allocated blocks (`fallocate` over the file's length first), so a
///   store never faults for want of space: a full disk fails at open, not with `SIGBUS` later.
///   [`LogDevice::truncate`] below the mapped length shrinks the part written through it.
/// - Copies are serialized by a mutex (one writer, the logger or a requester it lets flush, so
///   uncontended), which keeps two writers of one range from racing in memory Rust owns.
pub struct MappedDevice {
    plain: FileDevice,
    map: Mutex<Mapping>,
    /// The file is on a memory file system: `sync` makes no call (see the type doc).
    memory_fs: bool,
}

/// The mapping of `[0, len)` of the file, or of nothing (`len` 0). `usable` ≤ `len` is how much
/// of it is backed by the file now ([`LogDevice::truncate`] lowers it).
struct Mapping {
    ptr: *mut u8,
    len: usize,
    usable: usize,
}

// SAFETY: the mapping is plain shared memory; `MappedDevice` reaches it only under its mutex.
unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: `ptr..ptr+len` is the mapping `MappedDevice::from_file` created, unmapped
            // only here.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

impl fmt::Debug for MappedDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedDevice")
            .field("file", &self.plain.file)
            .field("mapped", &self.map.lock().len)
            .field("memory_fs", &self.memory_fs)
            .finish()
    }
}

impl MappedDevice {
    /// Opens (or creates) `path` and maps its current length (see [`MappedDevice::from_file`]).
    pub fn open(path: &Path) -> io::Result<MappedDevice> {
        MappedDevice::from_file(open_file(path)?)
    }

    /// Maps `file` (read and write access) over its current length, after allocating every
    /// block of it; a file of length 0 maps nothing, and every write goes through `pwrite`.
    pub fn from_file(file: File) -> io::Result<MappedDevice> {
        let memory_fs = on_memory_fs(&file);
        let len = usize::try_from(file.metadata()?.len()).map_err(io::Error::other)?;
        let mut map = Mapping { ptr: std::ptr::null_mut(), len: 0, usable: 0 };
        if len > 0 {
            allocate_range(&file, len as u64)?;
            // SAFETY: a new shared mapping of an open file descriptor; the kernel picks the
            // address. MAP_POPULATE maps every page now instead of faulting on each first store.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    file.as_raw_fd(),
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            map = Mapping { ptr: ptr.cast(), len, usable: len };
        }
        Ok(MappedDevice { plain: FileDevice::from_file(file), map: Mutex::new(map), memory_fs })
    }

    /// Fails the device as a failed write would (tests of what a failed device refuses).
    #[cfg(test)]
    pub(crate) fn poison(&self) {
        self.plain.poison.fail(io::Error::other("poisoned by a test"));
    }

    /// How many bytes from offset 0 are written through the mapping.
    pub fn mapped_len(&self) -> usize {
        self.map.lock().usable
    }

    /// Writes zeros over everything written through the mapping (`[0, mapped_len)`): a
    /// segment file reused for a new segment ([`crate::DirStore`] on a memory file system)
    /// must read as zeros past its end, as a new one does. On tmpfs its pages stay allocated
    /// and mapped, so this is a `memset`, where creating a segment costs the kernel an
    /// allocation, a clearing and a mapping of every page. Durable after a sync.
    pub fn zero(&self) -> io::Result<()> {
        self.plain.poison.check()?;
        let map = self.map.lock();
        // SAFETY: `[ptr, ptr + usable)` is inside the live mapping and backed by allocated
        // blocks of the file; the mutex keeps writers out.
        unsafe { std::ptr::write_bytes(map.ptr, 0, map.usable) };
        Ok(())
    }
}

/// Whether `file` is on tmpfs (`fstatfs`), whose `fdatasync` is a no-op.
pub(crate) fn on_memory_fs(file: &File) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: the descriptor is open for the call and `st` is a writable `statfs`.
    if unsafe { libc::fstatfs(file.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstatfs returned 0, so it filled the struct (zeroed before anyway).
    unsafe { st.assume_init() }.f_type == libc::TMPFS_MAGIC
}

impl LogDevice for MappedDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.plain.poison.check()?;
        let map = self.map.lock();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let inside = map.usable.saturating_sub(start).min(bytes.len());
        if inside > 0 {
            // SAFETY: `start + inside <= usable <= len`, inside the live mapping, which is
            // backed by allocated blocks of the file (`from_file`, `truncate`); the mutex keeps
            // other writers out, and `bytes` cannot alias it (readers use `pread`).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.ptr.add(start), inside) };
        }
        drop(map);
        if inside < bytes.len() {
            self.plain.write_at(offset + inside as u64, &bytes[inside..])?;
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        if self.memory_fs {
            return self.plain.poison.check();
        }
        self.plain.sync()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.plain.read_at(offset, buf)
    }

    fn len(&self) -> io::Result<u64> {
        self.plain.len()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut map = self.map.lock();
        map.usable = map.usable.min(usize::try_from(len).unwrap_or(usize::MAX));
        self.plain.truncate(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.plain.allocate(len)
    }
}

/// How [`open_device`] preallocates a segment file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Preallocate {
    /// Do not preallocate; the file grows as it is written.
    None,
    /// `fallocate`: fast, but the first write to each block still changes extent metadata.
    Fallocate,
    /// Write zeros over the whole segment, then sync: slow once, cheapest `fdatasync` afterwards.
    ZeroFill,
}

/// Which implementation [`open_device`] uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Backend {
    /// io_uring if it works here, otherwise `pwrite` + `fdatasync`.
    Auto,
    /// Always [`FileDevice`].
    File,
    /// Always [`UringDevice`]; fail if io_uring is unavailable.
    Uring,
    /// Always [`MappedDevice`] (the choice of [`crate::store::for_memory_fs`]).
    Mapped,
}

/// Options of [`open_device`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DeviceOptions {
    /// The size a segment file is preallocated to.
    pub segment_size: u64,
    /// How it is preallocated.
    pub preallocate: Preallocate,
    /// Which implementation to use.
    pub backend: Backend,
    /// Submission entries of the io_uring ring (pairs in flight ≤ entries / 2).
    pub ring_entries: u32,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        DeviceOptions {
            segment_size: 64 << 20,
            preallocate: Preallocate::ZeroFill,
            backend: Backend::Auto,
            ring_entries: DEFAULT_RING_ENTRIES,
        }
    }
}

/// What [`open_device`] opened.
#[derive(Debug)]
pub struct OpenedDevice {
    /// The device.
    pub device: Box<dyn LogDevice>,
    /// Whether it is a [`UringDevice`].
    pub uring: bool,
    /// Why io_uring was not used, when [`Backend::Auto`] fell back to [`FileDevice`].
    pub fallback_reason: Option<io::Error>,
}

/// Opens (creating if missing) the segment file `path`, preallocates it to
/// `options.segment_size` if it is shorter, and makes the file and its size durable: syncs the
/// file, and the parent directory when the file was created. Never truncates an existing file.
pub fn open_device(path: &Path, options: &DeviceOptions) -> io::Result<OpenedDevice> {
    if options.backend == Backend::Mapped {
        let device = Box::new(open_mapped(path, options)?);
        return Ok(OpenedDevice { device, uring: false, fallback_reason: None });
    }
    let existed = path.try_exists()?;
    let file = open_file(path)?;
    let (device, uring, fallback_reason): (Box<dyn LogDevice>, _, _) = match options.backend {
        Backend::File => (Box::new(FileDevice::from_file(file)), false, None),
        Backend::Uring => {
            (Box::new(UringDevice::from_file(file, options.ring_entries)?), true, None)
        }
        Backend::Auto => match IoUring::new(options.ring_entries.max(2)) {
            Ok(ring) => (Box::new(UringDevice::with_ring(file, ring)), true, None),
            Err(e) => (Box::new(FileDevice::from_file(file)), false, Some(e)),
        },
        Backend::Mapped => unreachable!("opened above"),
    };
    preallocate(&*device, options)?;
    device.sync()?;
    if !existed {
        sync_parent(path)?;
    }
    Ok(OpenedDevice { device, uring, fallback_reason })
}

/// [`open_device`] with [`Backend::Mapped`] (whatever `options.backend` says), as the
/// [`MappedDevice`] itself: preallocated first, so that the mapping covers the whole segment.
pub fn open_mapped(path: &Path, options: &DeviceOptions) -> io::Result<MappedDevice> {
    let existed = path.try_exists()?;
    let plain = FileDevice::from_file(open_file(path)?);
    preallocate(&plain, options)?;
    let device = MappedDevice::from_file(plain.file)?;
    device.sync()?;
    if !existed {
        sync_parent(path)?;
    }
    Ok(device)
}

/// Syncs the directory that holds `path` (a new or renamed name in it is then durable).
fn sync_parent(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

/// Grows `device` to `options.segment_size` as `options.preallocate` says (never shrinks).
fn preallocate(device: &dyn LogDevice, options: &DeviceOptions) -> io::Result<()> {
    let len = device.len()?;
    if len < options.segment_size {
        match options.preallocate {
            Preallocate::None => {}
            Preallocate::Fallocate => device.allocate(options.segment_size)?,
            Preallocate::ZeroFill => zero_fill(device, len, options.segment_size)?,
        }
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn round_trip(device: &dyn LogDevice) {
        device.write_at(0, b"hello ").unwrap();
        device.sync().unwrap();
        device.write_and_sync(6, b"world").unwrap();
        let mut buf = vec![0u8; 16];
        assert_eq!(device.read_at(0, &mut buf).unwrap(), 11);
        assert_eq!(&buf[..11], b"hello world");
        // Several pairs in flight, waited for out of order.
        let pending: Vec<_> = (0..8u8)
            .map(|i| device.submit_write_sync(11 + u64::from(i) * 4, vec![i; 4]).unwrap())
            .collect();
        let mut bufs: Vec<_> = pending.into_iter().rev().map(|p| device.wait(p).unwrap()).collect();
        bufs.reverse();
        assert_eq!(bufs[3], vec![3; 4], "wait gives the buffer back");
        assert_eq!(device.len().unwrap(), 11 + 32);
        let mut buf = vec![0u8; 32];
        assert_eq!(device.read_at(11, &mut buf).unwrap(), 32);
        assert!(buf.chunks(4).enumerate().all(|(i, c)| c == [i as u8; 4]));
        device.allocate(4096).unwrap();
        assert_eq!(device.len().unwrap(), 4096);
        device.allocate(100).unwrap();
        assert_eq!(device.len().unwrap(), 4096, "allocate never shrinks");
        let mut tail = vec![1u8; 8];
        device.read_at(4088, &mut tail).unwrap();
        assert_eq!(tail, [0; 8], "allocated bytes read as zero");
        device.truncate(5).unwrap();
        device.sync().unwrap();
        assert_eq!(device.len().unwrap(), 5);
    }

    #[test]
    fn file_device_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let device = FileDevice::open(&dir.path().join("seg")).unwrap();
        round_trip(&device);
        drop(device);
        let reopened = FileDevice::open(&dir.path().join("seg")).unwrap();
        assert_eq!(reopened.len().unwrap(), 5, "open never truncates");
    }

    fn uring_or_skip(path: &Path) -> Option<UringDevice> {
        match UringDevice::open(path, 8) {
            Ok(d) => Some(d),
            Err(e) => {
                println!("skipping: io_uring is unavailable here: {e}");
                None
            }
        }
    }

    #[test]
    fn uring_device_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let Some(device) = uring_or_skip(&dir.path().join("seg")) else { return };
        round_trip(&device);
        assert_eq!(device.in_flight(), 0);
        // More pairs than the ring holds at once (8 entries = 4 pairs): submit waits for room.
        let pending: Vec<_> = (0..20u64)
            .map(|i| device.submit_write_sync(i * 100, vec![i as u8; 100]).unwrap())
            .collect();
        for p in pending {
            device.wait(p).unwrap();
        }
        let mut buf = vec![0u8; 2000];
        device.read_at(0, &mut buf).unwrap();
        assert!(buf.chunks(100).enumerate().all(|(i, c)| c.iter().all(|&b| b == i as u8)));
        // Abandoned pairs are waited for by Drop.
        let _ = device.submit_write_sync(0, vec![7; 10]).unwrap();
        drop(device);
    }

    #[test]
    fn uring_failed_write_cancels_its_sync_and_poisons() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        File::create(&path).unwrap();
        // A read-only descriptor: every write fails with EBADF.
        let file = OpenOptions::new().read(true).open(&path).unwrap();
        let device = match UringDevice::from_file(file, 8) {
            Ok(d) => d,
            Err(e) => return println!("skipping: io_uring is unavailable here: {e}"),
        };
        let p = device.submit_write_sync(0, vec![1; 10]).unwrap();
        let e = device.wait(p).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
        let e = device.submit_write_sync(0, vec![1; 10]).unwrap_err();
        assert!(e.to_string().contains("not retried"), "{e}");
        assert!(device.sync().is_err(), "sync after a failed write is refused");
    }

    /// A mapped segment: writes inside the mapping are copies, writes past it (after the file
    /// grew, or after a truncate below the mapped length) go through `pwrite`, and `pread` and
    /// a reopened file see every byte. On disk and on tmpfs (where `sync` makes no call).
    #[test]
    fn mapped_device_writes_through_its_mapping_and_past_it() {
        let disk = tempfile::tempdir().unwrap();
        let memory = crate::tests::tmpfs_tempdir("only the disk half ran");
        for dir in std::iter::once(disk.path()).chain(memory.as_ref().map(|d| d.path())) {
            let path = dir.join("seg");
            let empty = MappedDevice::open(&path).unwrap();
            assert_eq!(empty.mapped_len(), 0, "an empty file maps nothing");
            round_trip(&empty);
            drop(empty);
            fs_set_len(&path, 8192);
            let device = MappedDevice::open(&path).unwrap();
            assert_eq!(device.mapped_len(), 8192);
            device.write_at(0, b"hello").unwrap();
            device.write_at(8190, b"abcd").unwrap();
            device.sync().unwrap();
            assert_eq!(device.len().unwrap(), 8194, "the part past the mapping grew the file");
            let mut buf = [0u8; 5];
            assert_eq!(device.read_at(0, &mut buf).unwrap(), 5);
            assert_eq!(&buf, b"hello");
            let mut buf = [0u8; 4];
            assert_eq!(device.read_at(8190, &mut buf).unwrap(), 4);
            assert_eq!(&buf, b"abcd");
            device.truncate(100).unwrap();
            assert_eq!(device.mapped_len(), 100);
            device.write_at(200, b"past").unwrap();
            device.sync().unwrap();
            assert_eq!(device.len().unwrap(), 204);
            drop(device);
            let reopened = FileDevice::open(&path).unwrap();
            let mut buf = vec![0u8; 204];
            assert_eq!(reopened.read_at(0, &mut buf).unwrap(), 204);
            assert_eq!(&buf[..5], b"hello");
            assert!(buf[100..200].iter().all(|&b| b == 0), "truncated, then zero-extended");
            assert_eq!(&buf[200..], b"past");
        }
    }

    #[test]
    fn mapped_device_refuses_a_read_only_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        fs_set_len(&path, 4096);
        let file = OpenOptions::new().read(true).open(&path).unwrap();
        assert!(MappedDevice::from_file(file).is_err(), "no writable mapping of a read-only file");
    }

    fn fs_set_len(path: &Path, len: u64) {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap()
            .set_len(len)
            .unwrap();
    }

    #[test]
    fn file_device_failure_poisons() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        File::create(&path).unwrap();
        let device = FileDevice::from_file(OpenOptions::new().read(true).open(&path).unwrap());
        assert_eq!(device.write_at(0, b"x").unwrap_err().raw_os_error(), Some(libc::EBADF));
        let e = device.sync().unwrap_err();
        assert!(e.to_string().contains("not retried"), "{e}");
    }

    #[test]
    fn open_device_preallocates_and_picks_a_backend() {
        let dir = tempfile::tempdir().unwrap();
        let preallocations = [Preallocate::None, Preallocate::Fallocate, Preallocate::ZeroFill];
        let cases = [Backend::Auto, Backend::Mapped]
            .into_iter()
            .flat_map(|backend| preallocations.map(|preallocate| (backend, preallocate)));
        for (i, (backend, preallocate)) in cases.enumerate() {
            let path = dir.path().join(format!("seg{i}"));
            let options = DeviceOptions {
                segment_size: 1 << 16,
                preallocate,
                backend,
                ..DeviceOptions::default()
            };
            let opened = open_device(&path, &options).unwrap();
            if let Some(why) = &opened.fallback_reason {
                println!("open_device fell back to FileDevice: {why}");
            }
            let uring = backend == Backend::Auto && opened.fallback_reason.is_none();
            assert_eq!(opened.uring, uring);
            let expected = if preallocate == Preallocate::None { 0 } else { 1 << 16 };
            assert_eq!(opened.device.len().unwrap(), expected, "{preallocate:?}");
            opened.device.write_and_sync(0, b"abc").unwrap();
            drop(opened);
            let again =
                open_device(&path, &DeviceOptions { backend: Backend::File, ..options }).unwrap();
            let mut buf = [0u8; 3];
            again.device.read_at(0, &mut buf).unwrap();
            assert_eq!(&buf, b"abc", "reopening keeps the data");
        }
    }
}
