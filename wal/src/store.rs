//! Where a device's segment files come from: [`SegmentStore`].
//!
//! A Poplar log device is a directory `wal/<n>/` holding fixed-size segment files
//! `<segment>.log`, `<segment>` being the [`SegmentNo`] as 20 zero-padded decimal digits so that
//! names sort in segment order. [`DirStore`] is that directory; the logger asks it for a new
//! segment when the current one is full and deletes segments that a checkpoint covers. Every
//! file-system call of the log goes through this trait or [`LogDevice`] (STYLE rule 7), so tests
//! use `testing::MemStore` instead.

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::collections::BTreeMap;

use crate::device::{
    open_device, open_mapped, zero_fill_file, Backend, DeviceOptions, LogDevice, MappedDevice,
    Preallocate, SegmentNo,
};

/// The segment files of one log device.
///
/// Contract: [`SegmentStore::create`] returns a segment that is empty or zero-filled (so the
/// reader sees its end) and whose creation is durable; [`SegmentStore::remove`] deletes a
/// segment durably. Both are called by one logger thread at a time, `remove` possibly
/// concurrently with `create` of another segment.
pub trait SegmentStore: Send + Sync + fmt::Debug {
    /// The size of each segment: the logger never writes a record across the end.
    fn segment_size(&self) -> u64;

    /// The segments that exist, in increasing order.
    fn list(&self) -> io::Result<Vec<SegmentNo>>;

    /// Creates segment `no` (it must not exist), preallocated and durable.
    fn create(&self, no: SegmentNo) -> io::Result<Box<dyn LogDevice>>;

    /// Deletes segment `no`, durably.
    fn remove(&self, no: SegmentNo) -> io::Result<()>;

    /// Takes a segment the logger is done with (full, every write on it synced), to be closed.
    /// The default closes it at once; [`DirStore`] unmaps a mapped one on another thread.
    fn retire(&self, segment: Box<dyn LogDevice>) {
        drop(segment);
    }

    /// Writes spill file `id` (it must not exist) with `bytes`, durably: contents and name
    /// are synced when this returns (see [`crate::Log::spill`]). Stores without spill files
    /// return `Unsupported`.
    fn write_spill(&self, id: u64, bytes: &[u8]) -> io::Result<()> {
        let _ = (id, bytes);
        Err(io::Error::new(io::ErrorKind::Unsupported, "this log store keeps no spill files"))
    }

    /// Reads spill file `id`.
    fn read_spill(&self, id: u64) -> io::Result<Vec<u8>> {
        let _ = id;
        Err(io::Error::new(io::ErrorKind::Unsupported, "this log store keeps no spill files"))
    }

    /// Deletes spill file `id`, durably.
    fn remove_spill(&self, id: u64) -> io::Result<()> {
        let _ = id;
        Err(io::Error::new(io::ErrorKind::Unsupported, "this log store keeps no spill files"))
    }

    /// The spill files that exist, in increasing order.
    fn list_spills(&self) -> io::Result<Vec<u64>> {
        Ok(Vec::new())
    }
}

impl<S: SegmentStore + ?Sized> SegmentStore for Arc<S> {
    fn segment_size(&self) -> u64 {
        (**self).segment_size()
    }
    fn list(&self) -> io::Result<Vec<SegmentNo>> {
        (**self).list()
    }
    fn create(&self, no: SegmentNo) -> io::Result<Box<dyn LogDevice>> {
        (**self).create(no)
    }
    fn remove(&self, no: SegmentNo) -> io::Result<()> {
        (**self).remove(no)
    }
    fn retire(&self, segment: Box<dyn LogDevice>) {
        (**self).retire(segment)
    }
    fn write_spill(&self, id: u64, bytes: &[u8]) -> io::Result<()> {
        (**self).write_spill(id, bytes)
    }
    fn read_spill(&self, id: u64) -> io::Result<Vec<u8>> {
        (**self).read_spill(id)
    }
    fn remove_spill(&self, id: u64) -> io::Result<()> {
        (**self).remove_spill(id)
    }
    fn list_spills(&self) -> io::Result<Vec<u64>> {
        (**self).list_spills()
    }
}

/// The file name of spill file `id`: `spill-<id as 20 digits>.dat`.
pub fn spill_file_name(id: u64) -> String {
    format!("spill-{id:020}.dat")
}

/// The spill files in directory `dir`, in increasing order.
pub fn list_spill_files(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(digits) = name.strip_prefix("spill-").and_then(|n| n.strip_suffix(".dat")) else {
            continue;
        };
        if digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(id) = digits.parse() {
                out.push(id);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The file name of segment `no`: `<no as 20 digits>.log`.
pub fn segment_file_name(no: SegmentNo) -> String {
    format!("{:020}.log", no.0)
}

/// The segments in directory `dir`, in increasing order, with their paths. Files whose name is
/// not a segment name are ignored.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(SegmentNo, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(digits) = name.strip_suffix(".log") else { continue };
        if digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = digits.parse() {
                out.push((SegmentNo(n), entry.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A log device directory (`wal/<n>/`) of segment files opened with [`open_device`].
///
/// Preparing a new segment is slow: zero-filling one on a disk ([`Preallocate::ZeroFill`]) takes
/// tens of milliseconds for 16 MiB, and on a memory file system allocating and mapping 64 MiB
/// (`fallocate` zeroes every page, `MAP_POPULATE` maps each one) takes 10–30 ms of a core.
/// Done when the current segment fills up, it would stall every commit on the device (the
/// logging suite measured 6–9% of read-modify-write throughput on tmpfs). So the store keeps a
/// *spare*: a background thread prepares `spare.tmp` (not a segment name, so never listed) —
/// zero-filled and synced on a disk, allocated, mapped and synced on a memory file system — and
/// [`SegmentStore::create`] renames it into place and syncs the directory, then starts the
/// next spare. A spare left by a crash is deleted when the store opens (it may be short). For
/// the same reason a retired mapped segment is unmapped on a thread of its own
/// ([`SegmentStore::retire`]).
///
/// On a memory file system even a spare costs a core 50 ms per 64 MiB segment (allocating,
/// clearing and mapping every page, and later unmapping and freeing them): at the log rates of
/// the logging suite, 5–6% of all CPU. So the store there *recycles* segments, as PostgreSQL
/// recycles WAL files: it keeps the mapping of every segment it created until the segment is
/// removed; a removed segment (up to [`RECYCLED_SEGMENTS`] at a time) is renamed to
/// `recycled-<no>.tmp` instead of deleted, and the next spare is that file, zeroed through its
/// mapping (a `memset`: 1 ms). Like the spare, a recycled file has no segment name, so neither
/// the reader nor [`SegmentStore::list`] ever sees its old records, and leftovers of a crash
/// are deleted when the store opens; it gets a segment name only once it reads as zeros.
#[derive(Debug)]
pub struct DirStore {
    dir: PathBuf,
    options: DeviceOptions,
    /// The spare being prepared (or ready).
    spare: parking_lot::Mutex<Option<std::thread::JoinHandle<io::Result<Spare>>>>,
    /// On a memory file system, segments are recycled (`None` elsewhere).
    recycling: Option<Recycling>,
    /// Set when the store is dropped: a spare being zero-filled stops at its next MiB.
    dropped: Arc<AtomicBool>,
}

/// The most removed segments a [`DirStore`] on a memory file system keeps for reuse: the
/// memory they hold (64 MiB each by default) against how many segments a burst of commits
/// can fill before the next checkpoint removes more.
pub const RECYCLED_SEGMENTS: usize = 4;

/// The mappings a recycling [`DirStore`] keeps.
#[derive(Debug, Default)]
struct Recycling {
    /// Every segment created by this store and not removed yet, with its mapping.
    live: parking_lot::Mutex<BTreeMap<SegmentNo, Arc<MappedDevice>>>,
    /// Removed segments waiting for reuse: their file (under a recycled name) and mapping.
    removed: parking_lot::Mutex<Vec<(PathBuf, Arc<MappedDevice>)>>,
}

/// A prepared spare segment.
enum Spare {
    /// A zero-filled and synced file, opened when it is taken.
    File(PathBuf),
    /// A segment already opened (allocated, mapped and synced), whose file is at this path.
    Opened(PathBuf, Box<dyn LogDevice>),
    /// The same, on a recycling store, which keeps the mapping.
    Mapped(PathBuf, Arc<MappedDevice>),
}

impl Spare {
    fn path(&self) -> &Path {
        match self {
            Spare::File(path) | Spare::Opened(path, _) | Spare::Mapped(path, _) => path,
        }
    }
}

/// The spare segment's file name.
const SPARE_FILE: &str = "spare.tmp";

/// The name of removed segment `no` while it waits for reuse.
fn recycled_file_name(no: SegmentNo) -> String {
    format!("recycled-{:020}.tmp", no.0)
}

/// Whether `name` is a spare's or a recycled segment's: never a segment, deleted at open.
fn is_leftover(name: &str) -> bool {
    name == SPARE_FILE || (name.starts_with("recycled-") && name.ends_with(".tmp"))
}

impl DirStore {
    /// The store in `dir`, created (and its parent synced) if missing.
    pub fn open(dir: &Path, options: DeviceOptions) -> io::Result<DirStore> {
        if !dir.try_exists()? {
            fs::create_dir_all(dir)?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                File::open(parent)?.sync_all()?;
            }
        }
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name().to_str().is_some_and(is_leftover) {
                fs::remove_file(entry.path())?;
            }
        }
        let memory_fs = in_memory_fs(dir);
        let options = if memory_fs { for_memory_fs(options) } else { options };
        let recycling = (memory_fs && options.backend == Backend::Mapped).then(Recycling::default);
        Ok(DirStore {
            dir: dir.to_path_buf(),
            options,
            spare: parking_lot::Mutex::new(None),
            recycling,
            dropped: Arc::default(),
        })
    }

    /// The options its segments are opened with (after [`for_memory_fs`] where it applies).
    pub fn options(&self) -> &DeviceOptions {
        &self.options
    }

    /// Starts preparing a spare segment in the background: zero-filled on a zero-fill store,
    /// opened (allocated and mapped) on a memory file system; other stores create segments
    /// inline, which costs them little.
    fn prepare_spare(&self) {
        let opened = self.options.backend == Backend::Mapped;
        if self.options.preallocate != Preallocate::ZeroFill && !opened {
            return;
        }
        let (path, options) = (self.dir.join(SPARE_FILE), self.options);
        let recycled = self.recycling.as_ref().and_then(|r| r.removed.lock().pop());
        let recycling = self.recycling.is_some();
        let dropped = self.dropped.clone();
        let thread = std::thread::Builder::new().name("wal-spare".into()).spawn(move || {
            yield_to_commits();
            if let Some((path, device)) = recycled {
                device.zero()?;
                device.sync()?;
                return Ok(Spare::Mapped(path, device));
            }
            if recycling {
                if path.try_exists()? {
                    fs::remove_file(&path)?;
                }
                return Ok(Spare::Mapped(path.clone(), Arc::new(open_mapped(&path, &options)?)));
            }
            if opened {
                // A spare a failed thread left behind may be partly allocated: start afresh.
                if path.try_exists()? {
                    fs::remove_file(&path)?;
                }
                let device = open_device(&path, &options)?.device;
                return Ok(Spare::Opened(path, device));
            }
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)?;
            zero_fill_paced(&file, options.segment_size, &dropped)?;
            file.sync_all()?;
            Ok(Spare::File(path))
        });
        // Without a thread there is no spare: segments are then prepared inline.
        *self.spare.lock() = thread.ok();
    }

    /// The prepared spare, if one was being prepared and is complete (waits for it).
    fn take_spare(&self) -> Option<Spare> {
        let thread = self.spare.lock().take()?;
        thread.join().ok()?.ok()
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Syncs the directory: a name created, renamed or removed in it is then durable.
    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    /// Registers the mapping of new segment `no` for recycling and hands the logger its device.
    fn keep(&self, no: SegmentNo, device: Arc<MappedDevice>) -> Box<dyn LogDevice> {
        if let Some(recycling) = &self.recycling {
            recycling.live.lock().insert(no, device.clone());
        }
        Box::new(device)
    }
}

impl Drop for DirStore {
    /// Waits for a spare still being prepared: nothing of a dropped store may write in its
    /// directory afterwards (a store opened there again would find a `spare.tmp` it did not
    /// make).
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::Relaxed);
        if let Some(thread) = self.spare.get_mut().take() {
            let _ = thread.join();
        }
    }
}

/// Lowers the calling thread's priority (nice 10; on Linux a thread has its own): a spare or
/// retired segment is work for the cores' idle moments, not a reason to preempt a committer or
/// a logger. It still gets a share of a busy machine (a tenth of a nice-0 thread's weight), so
/// the spare is ready long before the segment in use fills. A refusal changes nothing else.
fn yield_to_commits() {
    // SAFETY: no pointers; `who` 0 is the calling thread.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
}

/// Zero-fills `[0, size)` of the spare, writing each MiB back before the next is written
/// (`sync_file_range` with both waits): the disk then never holds more than a MiB of the
/// spare's writeback in front of the log's own `fdatasync`. Written all at once and synced at
/// the end, 64 MiB of zeros stalled the commits behind them for tens of milliseconds. Where
/// `sync_file_range` fails (not Linux, or a file system without it), the rest goes unpaced.
/// Stops with `Interrupted` once `dropped` is set (the spare is then never used).
fn zero_fill_paced(file: &fs::File, size: u64, dropped: &AtomicBool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    const STEP: u64 = 1 << 20;
    let mut at = 0;
    let mut paced = true;
    while at < size {
        if dropped.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "the log store was dropped"));
        }
        let end = (at + STEP).min(size);
        zero_fill_file(file, at, end)?;
        if paced {
            let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER;
            // SAFETY: a valid open descriptor and a range inside the file; the call only
            // starts and waits for writeback of that range.
            let rc = unsafe {
                libc::sync_file_range(file.as_raw_fd(), at as i64, (end - at) as i64, flags)
            };
            paced = rc == 0;
        }
        at = end;
    }
    Ok(())
}

/// Whether `dir` is on a file system that lives in memory (tmpfs), where `fdatasync`
/// returns at once and nothing is gained by writing asynchronously.
pub fn in_memory_fs(dir: &Path) -> bool {
    File::open(dir).is_ok_and(|d| crate::device::on_memory_fs(&d))
}

/// Device options for a memory file system: with [`Backend::Auto`], writes through a mapping
/// of the segment ([`crate::MappedDevice`]: a copy, no system call, and no call for a sync that
/// costs nothing) instead of io_uring, which hands every buffered write and sync to a kernel
/// worker thread (two thread switches per pair); and `fallocate` instead of writing zeros
/// (which would only fill the pages twice).
pub fn for_memory_fs(mut options: DeviceOptions) -> DeviceOptions {
    if options.backend == Backend::Auto {
        options.backend = Backend::Mapped;
    }
    if options.preallocate == Preallocate::ZeroFill {
        options.preallocate = Preallocate::Fallocate;
    }
    options
}

impl SegmentStore for DirStore {
    fn segment_size(&self) -> u64 {
        self.options.segment_size
    }

    fn list(&self) -> io::Result<Vec<SegmentNo>> {
        Ok(list_segments(&self.dir)?.into_iter().map(|(no, _)| no).collect())
    }

    fn create(&self, no: SegmentNo) -> io::Result<Box<dyn LogDevice>> {
        let path = self.dir.join(segment_file_name(no));
        if path.try_exists()? {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("segment {} exists already", path.display()),
            ));
        }
        let device = match self.take_spare() {
            Some(spare) => {
                fs::rename(spare.path(), &path)?;
                self.sync_dir()?;
                match spare {
                    Spare::Opened(_, device) => device,
                    Spare::Mapped(_, device) => self.keep(no, device),
                    Spare::File(_) => open_device(&path, &self.options)?.device,
                }
            }
            None if self.recycling.is_some() => {
                self.keep(no, Arc::new(open_mapped(&path, &self.options)?))
            }
            None => open_device(&path, &self.options)?.device,
        };
        self.prepare_spare();
        Ok(device)
    }

    fn retire(&self, segment: Box<dyn LogDevice>) {
        if self.recycling.is_some() {
            // The store keeps the mapping until the segment is removed (`keep`).
            drop(segment);
        } else if self.options.backend == Backend::Mapped {
            // Unmapping 64 MiB page by page takes milliseconds: not on the logger's time. If no
            // thread can be started, the closure (and the segment) is dropped here.
            let _ = std::thread::Builder::new().name("wal-retire".into()).spawn(move || {
                yield_to_commits();
                drop(segment);
            });
        } else {
            drop(segment);
        }
    }

    fn remove(&self, no: SegmentNo) -> io::Result<()> {
        let path = self.dir.join(segment_file_name(no));
        let Some(recycling) = &self.recycling else {
            fs::remove_file(&path)?;
            return self.sync_dir();
        };
        let device = recycling.live.lock().remove(&no);
        if let Some(device) = device {
            let mut removed = recycling.removed.lock();
            let whole = device.mapped_len() as u64 == self.options.segment_size;
            if removed.len() < RECYCLED_SEGMENTS && whole {
                let recycled = self.dir.join(recycled_file_name(no));
                fs::rename(&path, &recycled)?;
                removed.push((recycled, device));
                drop(removed);
                return self.sync_dir();
            }
            drop(removed);
            // Unmapping takes milliseconds: not on the caller's time.
            let _ = std::thread::Builder::new().name("wal-retire".into()).spawn(move || {
                yield_to_commits();
                drop(device);
            });
        }
        fs::remove_file(&path)?;
        self.sync_dir()
    }

    fn write_spill(&self, id: u64, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let path = self.dir.join(spill_file_name(id));
        let mut file = fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        self.sync_dir()
    }

    fn read_spill(&self, id: u64) -> io::Result<Vec<u8>> {
        fs::read(self.dir.join(spill_file_name(id)))
    }

    fn remove_spill(&self, id: u64) -> io::Result<()> {
        fs::remove_file(self.dir.join(spill_file_name(id)))?;
        self.sync_dir()
    }

    fn list_spills(&self) -> io::Result<Vec<u64>> {
        list_spill_files(&self.dir)
    }
}

/// A store of exactly one segment, the device given: for tests and tools that hand the log
/// plain [`LogDevice`]s. Its segment size is unbounded, so it never rotates.
#[derive(Debug)]
pub(crate) struct OneSegment(pub(crate) parking_lot::Mutex<Option<Box<dyn LogDevice>>>);

impl SegmentStore for OneSegment {
    fn segment_size(&self) -> u64 {
        u64::MAX
    }

    fn list(&self) -> io::Result<Vec<SegmentNo>> {
        Ok(Vec::new())
    }

    fn create(&self, no: SegmentNo) -> io::Result<Box<dyn LogDevice>> {
        match (no, self.0.lock().take()) {
            (SegmentNo(0), Some(device)) => Ok(device),
            _ => Err(io::Error::other("a single-device log has one segment")),
        }
    }

    fn remove(&self, _no: SegmentNo) -> io::Result<()> {
        Err(io::Error::other("a single-device log cannot delete its only segment"))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn options() -> DeviceOptions {
        DeviceOptions { segment_size: 1 << 20, ..DeviceOptions::default() }
    }

    /// A store in a new directory on the tmpfs at `/dev/shm`, or `None` (saying `skipped`)
    /// where there is none.
    fn store_on_tmpfs(skipped: &str) -> Option<(tempfile::TempDir, DirStore)> {
        let tmp = crate::tests::tmpfs_tempdir(skipped)?;
        let store = DirStore::open(tmp.path(), options()).unwrap();
        Some((tmp, store))
    }

    fn assert_zeroed_segment(dir: &Path, no: SegmentNo) {
        let file = File::open(dir.join(segment_file_name(no))).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 1 << 20, "segment {no:?} is full size");
        let mut buf = vec![1u8; 1 << 20];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert!(buf.iter().all(|b| *b == 0), "segment {no:?} is zero-filled");
    }

    /// On a memory file system the store writes through a mapping and `fallocate`s (no io_uring
    /// worker hop, no zero-filling); elsewhere it keeps the options it was given. Its segments
    /// after the first come from a spare opened in the background: full size, reading as
    /// zeros, and written through (a write to the device is in the file under its new name).
    #[test]
    fn memory_file_systems_map_and_open_the_spare_ahead() {
        let disk = tempfile::tempdir().unwrap();
        if !in_memory_fs(disk.path()) {
            assert_eq!(*DirStore::open(disk.path(), options()).unwrap().options(), options());
        }
        let Some((tmp, store)) = store_on_tmpfs("only the disk half ran") else { return };
        assert_eq!(store.options().backend, Backend::Mapped);
        assert_eq!(store.options().preallocate, Preallocate::Fallocate);
        let explicit = DeviceOptions { backend: Backend::Uring, ..options() };
        assert_eq!(for_memory_fs(explicit).backend, Backend::Uring, "an explicit choice stays");
        let first = store.create(SegmentNo(0)).unwrap();
        assert_zeroed_segment(tmp.path(), SegmentNo(0));
        for n in 1..=2 {
            let device = store.create(SegmentNo(n)).unwrap();
            assert_zeroed_segment(tmp.path(), SegmentNo(n));
            device.write_at(100, b"record").unwrap();
            device.sync().unwrap();
            let mut buf = [0u8; 6];
            File::open(tmp.path().join(segment_file_name(SegmentNo(n))))
                .unwrap()
                .read_exact_at(&mut buf, 100)
                .unwrap();
            assert_eq!(&buf, b"record", "segment {n} is the spare's file, renamed");
            store.retire(device);
        }
        store.retire(first);
        assert!(
            matches!(store.take_spare(), Some(Spare::Mapped(..))),
            "the next segment is already opened"
        );
        assert_eq!(store.list().unwrap(), [SegmentNo(0), SegmentNo(1), SegmentNo(2)]);
    }

    fn inode(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).unwrap().ino()
    }

    /// On a memory file system a removed segment's file becomes a later segment: under its
    /// recycled name meanwhile (never listed), zeroed before it gets a segment name again, at
    /// most `RECYCLED_SEGMENTS` kept; leftovers of a crash are deleted at open.
    #[test]
    fn memory_file_systems_recycle_removed_segments() {
        let Some((tmp, store)) = store_on_tmpfs("nothing to test") else { return };
        let n = RECYCLED_SEGMENTS as u64 + 2;
        let mut inodes = Vec::new();
        for no in 0..n {
            let device = store.create(SegmentNo(no)).unwrap();
            device.write_at(0, &[0xA5; 4096]).unwrap();
            device.write_at((1 << 20) - 3, b"end").unwrap();
            device.sync().unwrap();
            inodes.push(inode(&tmp.path().join(segment_file_name(SegmentNo(no)))));
            store.retire(device);
        }
        for no in 0..n {
            store.remove(SegmentNo(no)).unwrap();
        }
        assert!(store.list().unwrap().is_empty(), "removed segments are not listed");
        let mut recycled: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with("recycled-"))
            .collect();
        recycled.sort();
        let expected: Vec<_> =
            (0..RECYCLED_SEGMENTS as u64).map(|no| recycled_file_name(SegmentNo(no))).collect();
        assert_eq!(recycled, expected, "the first removed are kept, the rest deleted");
        // The spare prepared at the last create is a fresh file; after it, the recycled ones.
        for no in n..n + 1 + RECYCLED_SEGMENTS as u64 {
            let device = store.create(SegmentNo(no)).unwrap();
            let path = tmp.path().join(segment_file_name(SegmentNo(no)));
            assert_zeroed_segment(tmp.path(), SegmentNo(no));
            let reused = inodes[..RECYCLED_SEGMENTS].contains(&inode(&path));
            assert_eq!(reused, no > n, "segment {no} reuses a removed segment's file");
            device.write_at(8, b"new").unwrap();
            let mut buf = [0u8; 3];
            File::open(&path).unwrap().read_exact_at(&mut buf, 8).unwrap();
            assert_eq!(&buf, b"new", "segment {no} writes through to its file");
            store.retire(device);
        }
        store.remove(SegmentNo(n)).unwrap();
        assert!(tmp.path().join(recycled_file_name(SegmentNo(n))).exists());
        drop(store);
        let reopened = DirStore::open(tmp.path(), options()).unwrap();
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|name| name.ends_with(".log")), "leftovers removed: {names:?}");
        assert_eq!(reopened.list().unwrap().len(), RECYCLED_SEGMENTS);
    }

    /// A removed segment that cannot be renamed for reuse (here a directory is in the way) is
    /// an error, and nothing is lost: the segment stays listed with its bytes, a retry deletes
    /// it, and the store goes on recycling the segments after it.
    #[test]
    fn a_failed_recycle_keeps_the_segment() {
        let Some((tmp, store)) = store_on_tmpfs("nothing to test") else { return };
        for no in 0..2 {
            let device = store.create(SegmentNo(no)).unwrap();
            device.write_at(0, &[0xA5; 64]).unwrap();
            device.sync().unwrap();
            store.retire(device);
        }
        let blocker = tmp.path().join(recycled_file_name(SegmentNo(0)));
        std::fs::create_dir(&blocker).unwrap();
        store.remove(SegmentNo(0)).expect_err("renaming onto a directory fails");
        assert_eq!(store.list().unwrap(), [SegmentNo(0), SegmentNo(1)]);
        let mut head = [0u8; 64];
        File::open(tmp.path().join(segment_file_name(SegmentNo(0))))
            .unwrap()
            .read_exact_at(&mut head, 0)
            .unwrap();
        assert_eq!(head, [0xA5; 64], "the segment keeps its records");
        store.remove(SegmentNo(0)).unwrap();
        assert_eq!(store.list().unwrap(), [SegmentNo(1)]);
        std::fs::remove_dir(&blocker).unwrap();
        store.remove(SegmentNo(1)).unwrap();
        assert!(tmp.path().join(recycled_file_name(SegmentNo(1))).exists(), "recycled again");
        let device = store.create(SegmentNo(2)).unwrap();
        store.retire(device);
        let device = store.create(SegmentNo(3)).unwrap();
        assert_zeroed_segment(tmp.path(), SegmentNo(3));
        store.retire(device);
    }

    /// A recycled segment whose device failed cannot be zeroed, so it never becomes a
    /// segment again: the spare thread gives up on it, the next segment is created inline
    /// (full size, zeros, written through), and the leftover recycled file is deleted when the
    /// store is opened again.
    #[test]
    fn a_recycled_segment_that_cannot_be_zeroed_is_not_used() {
        let Some((tmp, store)) = store_on_tmpfs("nothing to test") else { return };
        let device = store.create(SegmentNo(0)).unwrap();
        device.write_at(0, &[0xA5; 64]).unwrap();
        device.sync().unwrap();
        let live = store
            .recycling
            .as_ref()
            .expect("tmpfs recycles")
            .live
            .lock()
            .get(&SegmentNo(0))
            .cloned();
        live.expect("segment 0 is kept for recycling").poison();
        device.write_at(64, &[1]).expect_err("a failed device refuses writes");
        store.retire(device);
        store.remove(SegmentNo(0)).unwrap();
        let recycled = tmp.path().join(recycled_file_name(SegmentNo(0)));
        assert!(recycled.exists(), "removed into the recycled name");
        // Takes the spare prepared at the first create; the next spare is the failed segment.
        store.retire(store.create(SegmentNo(1)).unwrap());
        let device = store.create(SegmentNo(2)).unwrap();
        assert!(recycled.exists(), "the failed segment is not reused");
        assert_zeroed_segment(tmp.path(), SegmentNo(2));
        device.write_at(0, b"record").unwrap();
        device.sync().unwrap();
        let mut head = [0u8; 6];
        File::open(tmp.path().join(segment_file_name(SegmentNo(2))))
            .unwrap()
            .read_exact_at(&mut head, 0)
            .unwrap();
        assert_eq!(&head, b"record", "the inline segment is written through");
        store.retire(device);
        assert_eq!(store.list().unwrap(), [SegmentNo(1), SegmentNo(2)]);
        drop(store);
        let store = DirStore::open(tmp.path(), options()).unwrap();
        assert!(!recycled.exists(), "a leftover recycled file is deleted at open");
        assert_eq!(store.list().unwrap(), [SegmentNo(1), SegmentNo(2)]);
    }

    /// Dropping a store while its spare is being zero-filled (64 MiB, paced: it takes a while
    /// on a disk) waits for the spare's thread, which stops at its next MiB; whatever it left
    /// is never a segment, and is gone once the store is opened again.
    #[test]
    fn a_store_dropped_during_a_zero_fill_leaves_no_segment_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let options = DeviceOptions { segment_size: 64 << 20, ..DeviceOptions::default() };
        let store = DirStore::open(tmp.path(), options).unwrap();
        let device = store.create(SegmentNo(7)).unwrap();
        device.write_at(0, b"record").unwrap();
        device.sync().unwrap();
        drop(device);
        drop(store); // the spare for segment 8 is (most likely) still being zero-filled
        let spare = tmp.path().join(SPARE_FILE);
        if let Ok(meta) = std::fs::metadata(&spare) {
            assert!(meta.len() <= 64 << 20, "the spare never grows past a segment");
        }
        let store = DirStore::open(tmp.path(), options).unwrap();
        assert!(!spare.exists(), "a leftover spare is deleted at open");
        assert_eq!(store.list().unwrap(), [SegmentNo(7)]);
        let mut head = [0u8; 6];
        File::open(tmp.path().join(segment_file_name(SegmentNo(7))))
            .unwrap()
            .read_exact_at(&mut head, 0)
            .unwrap();
        assert_eq!(&head, b"record");
    }

    /// Spill files: written whole and durable, read back, listed in id order (other files
    /// ignored), deleted; an existing id is refused.
    #[test]
    fn spill_files_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let store = DirStore::open(tmp.path(), options()).unwrap();
        store.write_spill(12, b"twelve").unwrap();
        store.write_spill(3, b"three").unwrap();
        std::fs::write(tmp.path().join("spill-x.dat"), b"not a spill").unwrap();
        assert_eq!(store.list_spills().unwrap(), [3, 12]);
        assert_eq!(store.read_spill(12).unwrap(), b"twelve");
        assert!(store.write_spill(3, b"again").is_err(), "ids are never reused");
        store.remove_spill(3).unwrap();
        assert_eq!(store.list_spills().unwrap(), [12]);
        assert!(store.list().unwrap().is_empty(), "spill files are not segments");
    }

    /// Segments after the first come from the spare, renamed into place: full size, zeroed,
    /// listed; the spare itself is never listed, and a leftover spare is removed on open.
    #[test]
    fn segments_come_from_a_zeroed_spare() {
        let tmp = tempfile::tempdir().unwrap();
        let store = DirStore::open(tmp.path(), options()).unwrap();
        for n in 1..=3 {
            let device = store.create(SegmentNo(n)).unwrap();
            device.write_at(0, b"record").unwrap();
            device.sync().unwrap();
        }
        assert!(store.take_spare().is_some(), "a spare is prepared after each create");
        assert_eq!(store.list().unwrap(), [SegmentNo(1), SegmentNo(2), SegmentNo(3)]);
        store.create(SegmentNo(4)).unwrap(); // inline: the spare was taken above
        for n in 4..=5 {
            if n == 5 {
                store.create(SegmentNo(5)).unwrap(); // from the spare prepared by create(4)
            }
            assert_zeroed_segment(tmp.path(), SegmentNo(n));
        }
        let spare = tmp.path().join(SPARE_FILE);
        drop(store.take_spare());
        std::fs::write(&spare, b"short").unwrap();
        let reopened = DirStore::open(tmp.path(), options()).unwrap();
        assert!(!spare.exists(), "a leftover spare is removed on open");
        assert_eq!(reopened.list().unwrap().len(), 5);
    }
}
