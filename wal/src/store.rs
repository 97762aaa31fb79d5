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
use std::sync::Arc;

use crate::device::{open_device, DeviceOptions, LogDevice, SegmentNo};

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
#[derive(Debug)]
pub struct DirStore {
    dir: PathBuf,
    options: DeviceOptions,
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
        Ok(DirStore { dir: dir.to_path_buf(), options })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
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
        Ok(open_device(&path, &self.options)?.device)
    }

    fn remove(&self, no: SegmentNo) -> io::Result<()> {
        fs::remove_file(self.dir.join(segment_file_name(no)))?;
        File::open(&self.dir)?.sync_all()
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
