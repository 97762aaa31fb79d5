//! [`RecoveryPlan`]: which segments each device has, where each device's valid log ends, and
//! RSNe. Pure apart from reading the devices; unit tested below.
//!
//! ```text
//! device 0:  r(1) r(4) r(7) m(9) |torn          last durable SSN 9
//! device 1:  r(2) r(3) r(8)                     last durable SSN 8   ─► RSNe = min = 8
//! device 2:  r(5) r(6) m(10) b(12)              last durable SSN 12
//! ```
//!
//! A device's *last durable SSN* is the SSN of its last valid record of any kind (value,
//! command, marker, abort). Why the minimum: DSN(d) is always the SSN of a durable record on
//! `d` (wal's idle-marker rule), so `CSN = min DSN <= min over devices of the last durable SSN`
//! = RSNe. Every non-blind transaction acknowledged before the crash had `ssn <= CSN <= RSNe`;
//! a blind one had `ssn <= DSN` of its own device only, so blind records above RSNe are
//! replayed too (DESIGN.md §5). A device without any record counts as [`Ssn::ZERO`]: its CSN
//! never moved, so nothing non-blind was acknowledged.
//!
//! The torn-tail/corruption decision is `wal::SegmentReader`'s (see `wal::reader`); read with
//! [`ScanOptions::unsynced_window`] = the logger's `ring_bytes` ([`ScanOptions::for_log`]),
//! the most bytes a logger ever has written but not yet synced.
//!
//! After replay, [`RecoveryPlan::seal`] turns unacknowledged records above RSNe into aborts and
//! zero-fills torn tails, so the log can be reopened and recovered from again.
//!
//! **With a checkpoint** at cut `S` ([`ScanOptions::checkpoint_ssn`]), a device's last durable
//! SSN is `max(last record, S)`: a valid checkpoint implies `CSN >= S` when it was written, so
//! every device had durable records up to `S` then, and segments wholly below `S` may have
//! been deleted since (a device whose log was deleted down to nothing still counts as `S`).
//!
//! The scan also records, per device and per segment, the SSN of the segment's last valid
//! record ([`RecoveryPlan::existing_segments`]): the reopened log adopts them
//! (`wal::LogOptions::existing_segments`) so that it can delete them once a later checkpoint
//! covers them. Likewise the spill files that valid spilled records refer to
//! ([`RecoveryPlan::existing_spills`]); spill files no valid record refers to (their
//! transaction never got its record written) are orphans
//! ([`RecoveryPlan::delete_orphan_spills`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wal::{
    DeviceId, FileDevice, LogDevice, LogEnd, ReadOptions, ReadRecord, RecordKind, SegmentNo,
    SegmentReader, Ssn,
};

use crate::error::Error;

/// Where a device's spill files are (`wal::Log::spill`).
#[derive(Clone, Debug)]
enum Spills {
    /// None: a spilled record is corruption.
    None,
    /// The device directory (`spill-<id>.dat`, [`wal::store::spill_file_name`]).
    Dir(PathBuf),
    /// A store (tests).
    Store(Arc<dyn wal::SegmentStore>),
}

/// One device's log: its id and its segments, in increasing order.
#[derive(Clone, Debug)]
pub struct DeviceLog {
    /// The device.
    pub device: DeviceId,
    /// Its segments in increasing [`SegmentNo`] order (checked by [`RecoveryPlan::scan`]).
    pub segments: Vec<(SegmentNo, Arc<dyn LogDevice>)>,
    spills: Spills,
}

impl DeviceLog {
    /// A device log over the given segments (and no spill files).
    pub fn new(device: DeviceId, segments: Vec<(SegmentNo, Arc<dyn LogDevice>)>) -> DeviceLog {
        DeviceLog { device, segments, spills: Spills::None }
    }

    /// The same, with the spill files of `store`.
    pub fn with_spill_store(mut self, store: Arc<dyn wal::SegmentStore>) -> DeviceLog {
        self.spills = Spills::Store(store);
        self
    }

    /// The value payload of the spilled record at `segment`/`offset` whose payload (a
    /// `wal::SpillRef`) is `reference`: mapped from its file in a directory, read from a
    /// store.
    pub(crate) fn read_spill(
        &self,
        segment: SegmentNo,
        offset: u64,
        reference: &[u8],
    ) -> Result<SpillBytes, Error> {
        let at = |reason| Error::Corrupt { device: self.device, segment, offset, reason };
        let corrupt = |what| at(wal::Corrupt::Payload { what });
        let spill = wal::SpillRef::decode(reference).map_err(at)?;
        let read = match &self.spills {
            Spills::None => return Err(corrupt("spilled record without spill files")),
            Spills::Dir(dir) => MappedFile::open(&dir.join(wal::store::spill_file_name(spill.id)))
                .map(SpillBytes::Mapped),
            Spills::Store(store) => store.read_spill(spill.id).map(SpillBytes::Read),
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(corrupt("spill file missing"))
            }
            Err(e) => return Err(Error::Log(wal::Error::io(self.device, e))),
        };
        if !spill.matches(&bytes) {
            return Err(corrupt("spill file does not match its record"));
        }
        Ok(bytes)
    }

    /// The spill files that exist on this device.
    fn spill_files(&self) -> std::io::Result<Vec<u64>> {
        match &self.spills {
            Spills::None => Ok(Vec::new()),
            Spills::Dir(dir) => wal::store::list_spill_files(dir),
            Spills::Store(store) => store.list_spills(),
        }
    }

    /// Deletes spill file `id`, durably.
    fn remove_spill(&self, id: u64) -> std::io::Result<()> {
        match &self.spills {
            Spills::None => Ok(()),
            Spills::Dir(dir) => {
                std::fs::remove_file(dir.join(wal::store::spill_file_name(id)))?;
                std::fs::File::open(dir)?.sync_all()
            }
            Spills::Store(store) => store.remove_spill(id),
        }
    }

    /// The segment files of directory `dir` (`wal/<n>/`, as `wal::Log::open` lays them out:
    /// `<segment as 20 digits>.log`, found with [`wal::list_segments`]), opened with
    /// [`FileDevice`]. Recovery only reads them.
    pub fn from_dir(device: DeviceId, dir: &Path) -> Result<DeviceLog, Error> {
        let listed = wal::list_segments(dir)
            .map_err(|source| Error::Dir { path: dir.to_path_buf(), source })?;
        let mut segments = Vec::with_capacity(listed.len());
        for (no, path) in listed {
            let file = FileDevice::open(&path).map_err(|source| Error::Dir { path, source })?;
            segments.push((no, Arc::new(file) as Arc<dyn LogDevice>));
        }
        Ok(DeviceLog { device, segments, spills: Spills::Dir(dir.to_path_buf()) })
    }

    /// A reader over every segment, or `None` if the device has none.
    pub(crate) fn reader(&self, options: ReadOptions) -> Option<SegmentReader<'_>> {
        if self.segments.is_empty() {
            return None;
        }
        let segments = self.segments.iter().map(|(no, d)| (*no, &**d as &dyn LogDevice)).collect();
        Some(SegmentReader::new(self.device, segments, options))
    }
}

/// Options of [`RecoveryPlan::scan`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct ScanOptions {
    /// Passed to `wal::ReadOptions`: the most bytes the logger had written but not synced.
    /// The right value is the logger's `LogOptions::ring_bytes` (ring space is freed only
    /// when synced). 0 treats any valid record after a bad one as proof of corruption, which
    /// can reject a log whose unsynced pages reached the disk out of order.
    pub unsynced_window: u64,
    /// The cut `S` of the checkpoint recovery loaded ([`Ssn::ZERO`] if none): every device's
    /// last durable SSN counts as at least `S` (module doc).
    pub checkpoint_ssn: Ssn,
}

impl ScanOptions {
    /// The options for a log written with `options`, without a checkpoint.
    pub fn for_log(options: &wal::LogOptions) -> ScanOptions {
        ScanOptions { unsynced_window: options.ring_bytes as u64, checkpoint_ssn: Ssn::ZERO }
    }

    /// These options with the checkpoint cut `S`.
    #[must_use]
    pub fn with_checkpoint(self, checkpoint_ssn: Ssn) -> ScanOptions {
        ScanOptions { checkpoint_ssn, ..self }
    }
}

/// What the scan found on one device.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DeviceScan {
    /// The device.
    pub device: DeviceId,
    /// Where its valid log ends (`None` if it has no segment). A writer that resumes the device
    /// must not append after a tail with `discarded > 0` without zero-filling it (`wal::reader`).
    pub end: Option<LogEnd>,
    /// The SSN of its last valid record (any kind), if any.
    pub last_ssn: Option<Ssn>,
    /// Valid records.
    pub records: u64,
    /// Bytes of the valid records.
    pub bytes: u64,
    /// Command records among them (replay of those is not supported yet).
    pub commands: u64,
}

/// One device's segments, each with the SSN of its last valid record.
pub(crate) type SegmentSsns = Vec<(SegmentNo, Option<Ssn>)>;
/// One device's spill files that valid records refer to, with those records' SSNs.
pub(crate) type SpillSsns = Vec<(u64, Ssn)>;

/// The devices, where each one's log ends, and RSNe.
#[derive(Debug)]
pub struct RecoveryPlan {
    pub(crate) devices: Vec<DeviceLog>,
    scans: Vec<DeviceScan>,
    /// Per device (in id order), per segment: the SSN of its last valid record.
    segments: Vec<SegmentSsns>,
    /// Per device (in id order): the spill files valid records refer to.
    spills: Vec<SpillSsns>,
    rsne: Ssn,
    options: ScanOptions,
    scan_time: Duration,
}

impl RecoveryPlan {
    /// Reads every device to the end of its valid log (one thread per device), and computes
    /// RSNe = min over devices of the last durable SSN, `max(last record, S)` with
    /// `S = options.checkpoint_ssn` (module doc).
    ///
    /// Fails with [`Error::Corrupt`] for a damaged record that is not a torn tail, with
    /// [`Error::Log`] if a device cannot be read, and with [`Error::NoDevices`] /
    /// [`Error::DuplicateDevice`] for a bad device list. Devices are sorted by id.
    ///
    /// # Panics
    /// If a device's segments are not in strictly increasing order.
    pub fn scan(mut devices: Vec<DeviceLog>, options: ScanOptions) -> Result<RecoveryPlan, Error> {
        let start = Instant::now();
        check_devices(&mut devices)?;
        let read = ReadOptions { unsynced_window: options.unsynced_window };
        let results: Vec<Scanned> = std::thread::scope(|s| {
            let cut = options.checkpoint_ssn;
            let handles: Vec<_> =
                devices.iter().map(|d| s.spawn(move || scan_device(d, read, cut))).collect();
            handles.into_iter().map(|h| h.join().expect("scan thread panicked")).collect()
        });
        RecoveryPlan::from_scans(devices, results, options, start)
    }

    /// The plan of `devices` (checked and sorted by [`check_devices`]) from what each device's
    /// scan found, in the same order: the first failing device in id order makes it fail, so
    /// the error is deterministic. `start`: when the scan began.
    pub(crate) fn from_scans(
        devices: Vec<DeviceLog>,
        results: Vec<Scanned>,
        options: ScanOptions,
        start: Instant,
    ) -> Result<RecoveryPlan, Error> {
        let mut scans = Vec::with_capacity(results.len());
        let mut segments = Vec::with_capacity(results.len());
        let mut spills = Vec::with_capacity(results.len());
        for (scan, segs, spilled) in results.into_iter().collect::<Result<Vec<_>, _>>()? {
            scans.push(scan);
            segments.push(segs);
            spills.push(spilled);
        }
        let cut = options.checkpoint_ssn;
        let rsne =
            scans.iter().map(|s| s.last_ssn.unwrap_or(Ssn::ZERO).max(cut)).min().unwrap_or(cut);
        let plan = RecoveryPlan {
            devices,
            scans,
            segments,
            spills,
            rsne,
            options,
            scan_time: start.elapsed(),
        };
        tracing::info!(
            devices = plan.scans.len(),
            rsne = plan.rsne.0,
            bytes = plan.bytes(),
            records = plan.records(),
            "recovery scan done in {:.3} s",
            plan.scan_time.as_secs_f64()
        );
        Ok(plan)
    }

    /// RSNe: the minimum over devices of the last durable SSN (the SSN of the device's last
    /// valid record, or the checkpoint cut if that is larger).
    pub fn rsne(&self) -> Ssn {
        self.rsne
    }

    /// The checkpoint cut `S` the plan was made with ([`ScanOptions::checkpoint_ssn`]).
    pub fn checkpoint_ssn(&self) -> Ssn {
        self.options.checkpoint_ssn
    }

    /// The largest SSN recovery knows of: every device's last valid record and the checkpoint
    /// cut. Every SSN allocated after recovery must be above it: pass it to
    /// `txn::Engine::finish_replay` and as the reopened log's `wal::LogOptions::start_ssn`.
    pub fn max_ssn(&self) -> Ssn {
        self.scans
            .iter()
            .filter_map(|s| s.last_ssn)
            .max()
            .unwrap_or(Ssn::ZERO)
            .max(self.options.checkpoint_ssn)
    }

    /// Per device in id order (index `d` is `DeviceId(d)` when the devices are `0..N`, as
    /// `wal::Log::open` numbers them), every segment scanned with the SSN of its last valid
    /// record (`None` if it has none). This is what `wal::LogOptions::existing_segments`
    /// wants, so that the reopened log can delete these segments once a checkpoint covers
    /// them. Call it after [`RecoveryPlan::seal`] or before: sealing keeps every SSN.
    pub fn existing_segments(&self) -> Vec<Vec<(SegmentNo, Option<Ssn>)>> {
        self.segments.clone()
    }

    /// Per device in id order, the spill files that valid spilled records refer to, with
    /// those records' SSNs: what `wal::LogOptions::existing_spills` wants.
    pub fn existing_spills(&self) -> Vec<Vec<(u64, Ssn)>> {
        self.spills.clone()
    }

    /// Deletes the spill files that no valid record refers to (a transaction wrote its spill
    /// file but its record never became durable, or was torn): nothing can ever need them.
    /// Returns how many were deleted.
    pub fn delete_orphan_spills(&self) -> Result<usize, Error> {
        let mut deleted = 0;
        for (log, referenced) in self.devices.iter().zip(&self.spills) {
            let io = |e| Error::Log(wal::Error::io(log.device, e));
            for id in log.spill_files().map_err(io)? {
                if !referenced.iter().any(|(r, _)| *r == id) {
                    log.remove_spill(id).map_err(io)?;
                    deleted += 1;
                }
            }
        }
        Ok(deleted)
    }

    /// Per device, in id order.
    pub fn devices(&self) -> &[DeviceScan] {
        &self.scans
    }

    /// Bytes of valid records over all devices.
    pub fn bytes(&self) -> u64 {
        self.scans.iter().map(|s| s.bytes).sum()
    }

    /// Valid records over all devices.
    pub fn records(&self) -> u64 {
        self.scans.iter().map(|s| s.records).sum()
    }

    /// How long the scan took.
    pub fn scan_time(&self) -> Duration {
        self.scan_time
    }

    /// The read options of the scan (replay reads with the same).
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions { unsynced_window: self.options.unsynced_window }
    }

    /// Makes the devices safe to append to and to recover from again, after replay and before
    /// the log is reopened for new transactions:
    ///
    /// 1. Every non-blind value or command record with `ssn > RSNe` was never acknowledged and
    ///    was not replayed. It stays in its segment, and once new records push RSNe past it a
    ///    later recovery would replay it, resurrecting a transaction nobody saw commit. Each is
    ///    overwritten in place by an Abort record of the same length and SSN (so the devices'
    ///    SSN order, I2, and every later offset are unchanged, and replay skips it).
    /// 2. A torn tail (`LogEnd::discarded > 0`) is zero-filled: once the log resumes in a new
    ///    segment, leftover bytes in a segment that is no longer the last read as corruption.
    ///
    /// Each touched segment is synced before returning. Idempotent, and safe to crash in the
    /// middle of: it changes no device's last durable SSN, so a recovery that restarts sees the
    /// same RSNe and seals the rest.
    pub fn seal(&self) -> Result<Sealed, Error> {
        let mut sealed = Sealed::default();
        for (log, scan) in self.devices.iter().zip(&self.scans) {
            let Some(mut reader) = log.reader(self.read_options()) else { continue };
            let mut overwrite = Vec::new();
            while let Some(r) = reader.next_record()? {
                let rec = &r.record;
                let unacknowledged = rec.ssn > self.rsne && !rec.blind && rec.kind.is_transaction();
                if unacknowledged {
                    overwrite.push((r.segment, r.offset, rec.ssn, rec.encoded_len()));
                }
            }
            drop(reader);
            let device_of = |segment: SegmentNo| {
                log.segments.iter().find(|(no, _)| *no == segment).map(|(_, d)| d.clone())
            };
            let io = |e: std::io::Error| Error::Log(wal::Error::io(log.device, e));
            let mut touched: Vec<SegmentNo> = Vec::new();
            for (segment, offset, ssn, len) in overwrite {
                let Some(dev) = device_of(segment) else { continue };
                let zeros = vec![0u8; len - wal::record::HEADER_LEN];
                let abort =
                    wal::Record { ssn, kind: RecordKind::Abort, blind: false, payload: &zeros };
                let mut bytes = Vec::with_capacity(len);
                abort.encode_into(&mut bytes);
                debug_assert_eq!(bytes.len(), len, "an abort record replaces one of equal length");
                dev.write_at(offset, &bytes).map_err(io)?;
                sealed.aborted += 1;
                if !touched.contains(&segment) {
                    touched.push(segment);
                }
            }
            if let Some(end) = scan.end.filter(|e| e.discarded > 0) {
                if let Some(dev) = device_of(end.segment) {
                    // Zero in bounded chunks: a torn tail is at most the unsynced window.
                    let mut at = end.offset;
                    let stop = end.offset + end.discarded;
                    let chunk = vec![0u8; 64 << 10];
                    while at < stop {
                        let n = (stop - at).min(chunk.len() as u64) as usize;
                        dev.write_at(at, &chunk[..n]).map_err(io)?;
                        at += n as u64;
                    }
                    sealed.zeroed_bytes += end.discarded;
                    if !touched.contains(&end.segment) {
                        touched.push(end.segment);
                    }
                }
            }
            for segment in touched {
                if let Some(dev) = device_of(segment) {
                    dev.sync().map_err(io)?;
                }
            }
        }
        Ok(sealed)
    }
}

/// What [`RecoveryPlan::seal`] changed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Sealed {
    /// Unacknowledged records (non-blind, above RSNe) overwritten by Abort records.
    pub aborted: u64,
    /// Torn-tail bytes zero-filled.
    pub zeroed_bytes: u64,
}

/// What one device's scan found, or why it failed.
pub(crate) type Scanned = Result<(DeviceScan, SegmentSsns, SpillSsns), Error>;

/// Sorts `devices` by id and rejects an empty list and duplicate ids.
pub(crate) fn check_devices(devices: &mut [DeviceLog]) -> Result<(), Error> {
    if devices.is_empty() {
        return Err(Error::NoDevices);
    }
    devices.sort_by_key(|d| d.device);
    if let Some(w) = devices.windows(2).find(|w| w[0].device == w[1].device) {
        return Err(Error::DuplicateDevice(w[0].device));
    }
    Ok(())
}

/// The bookkeeping of one device's scan, fed every valid record in order: what the device
/// holds and, per segment, the SSN of its last valid record. [`RecoveryPlan::scan`] and the
/// single-pass [`crate::stage`] share it.
pub(crate) struct DeviceScanner {
    scan: DeviceScan,
    segments: SegmentSsns,
    /// Spill files of records above the checkpoint cut (those at or below it are not needed:
    /// orphans from here on).
    spills: SpillSsns,
    cut: Ssn,
    /// Segments are in order and so are records: a cursor finds each record's segment.
    at: usize,
}

impl DeviceScanner {
    pub(crate) fn new(log: &DeviceLog, cut: Ssn) -> DeviceScanner {
        DeviceScanner {
            scan: DeviceScan {
                device: log.device,
                end: None,
                last_ssn: None,
                records: 0,
                bytes: 0,
                commands: 0,
            },
            segments: log.segments.iter().map(|(no, _)| (*no, None)).collect(),
            spills: Vec::new(),
            cut,
            at: 0,
        }
    }

    /// Counts the next valid record of the device. A spilled record whose payload is not a
    /// spill reference is corruption.
    #[inline]
    pub(crate) fn record(&mut self, r: &ReadRecord<'_>) -> Result<(), Error> {
        let scan = &mut self.scan;
        scan.records += 1;
        scan.bytes += r.record.encoded_len() as u64;
        scan.commands += u64::from(r.record.kind == RecordKind::Command);
        scan.last_ssn = Some(r.record.ssn);
        if r.record.kind == RecordKind::Spilled && r.record.ssn > self.cut {
            let spill = wal::SpillRef::decode(r.record.payload).map_err(|reason| {
                Error::Corrupt { device: scan.device, segment: r.segment, offset: r.offset, reason }
            })?;
            self.spills.push((spill.id, r.record.ssn));
        }
        while self.segments[self.at].0 != r.segment {
            self.at += 1;
        }
        self.segments[self.at].1 = Some(r.record.ssn);
        Ok(())
    }

    /// The result, given where the reader said the log ends (`None`: the device has no
    /// segment).
    pub(crate) fn finish(mut self, end: Option<LogEnd>) -> (DeviceScan, SegmentSsns, SpillSsns) {
        if let Some(end) = end {
            debug_assert_eq!((end.last_ssn, end.records), (self.scan.last_ssn, self.scan.records));
        }
        self.scan.end = end;
        (self.scan, self.segments, self.spills)
    }
}

/// Scans one device: what it holds, and per segment the SSN of its last valid record.
fn scan_device(log: &DeviceLog, options: ReadOptions, cut: Ssn) -> Scanned {
    let mut scanner = DeviceScanner::new(log, cut);
    let Some(mut reader) = log.reader(options) else { return Ok(scanner.finish(None)) };
    while let Some(r) = reader.next_record()? {
        scanner.record(&r)?;
    }
    let end = reader.end().expect("a reader that returned None has an end");
    Ok(scanner.finish(Some(end)))
}

/// A spill file's bytes, as [`DeviceLog::read_spill`] returns them.
pub(crate) enum SpillBytes {
    /// Read by a store.
    Read(Vec<u8>),
    /// Mapped from the file.
    Mapped(MappedFile),
}

impl std::ops::Deref for SpillBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            SpillBytes::Read(bytes) => bytes,
            SpillBytes::Mapped(file) => file.bytes(),
        }
    }
}

/// A file mapped read-only. A spill file is as large as the transaction it holds (a bulk
/// load: hundreds of MB); reading it copied every byte into fresh memory that the kernel
/// zeroed first (57–134 ms for 112 MB on the test VM, against 7 ms to map and touch it).
///
/// Only recovery maps files, and only spill files, which nothing writes, truncates or
/// deletes while it runs: the log is opened (and checkpoints delete spill files) only after
/// recovery has finished with them.
pub(crate) struct MappedFile {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

impl MappedFile {
    fn open(path: &std::path::Path) -> std::io::Result<MappedFile> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).expect("a spill file fits in memory");
        if len == 0 {
            return Ok(MappedFile { ptr: std::ptr::NonNull::dangling(), len });
        }
        // SAFETY: a new private read-only mapping of the whole open file; the result is
        // checked for MAP_FAILED below, and the file descriptor may be closed afterwards.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // Read ahead generously: the payload is walked once, front to back. (Advice only.)
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        let ptr = std::ptr::NonNull::new(ptr.cast()).expect("mmap does not return null");
        Ok(MappedFile { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop` (or is dangling with `len` 0),
        // and nothing modifies the file meanwhile (type doc).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmaps exactly the mapping `open` made; no slice of it outlives `self`.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}
