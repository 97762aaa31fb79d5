//! Errors of recovery. Every variant stops recovery: nothing is skipped (STYLE rule 12).

use std::io;
use std::path::PathBuf;

use wal::{Corrupt, DeviceId, SegmentNo, Ssn};

/// Why recovery stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A damaged record that is not part of a torn tail (valid records follow it, it sits in a
    /// closed segment, it breaks I2, or its CRC checks but its payload does not parse). The
    /// operator must restore the device from elsewhere; recovery never skips it.
    #[error("log device {device} segment {segment} is corrupt at byte offset {offset}: {reason}")]
    Corrupt {
        /// The device.
        device: DeviceId,
        /// The segment file of the device.
        segment: SegmentNo,
        /// The byte offset of the damaged record within the segment.
        offset: u64,
        /// What is wrong there.
        reason: Corrupt,
    },
    /// Reading a log device failed (any `wal::Error` other than `Corrupt`).
    #[error(transparent)]
    Log(wal::Error),
    /// A log directory could not be listed or a segment file opened.
    #[error("cannot read log directory {path}: {source}")]
    Dir {
        /// The directory or file.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: io::Error,
    },
    /// The same device appears twice in a plan.
    #[error("log device {0} is listed twice")]
    DuplicateDevice(DeviceId),
    /// A plan needs at least one device.
    #[error("recovery needs at least one log device")]
    NoDevices,
    /// A command record (DESIGN.md §4) must be replayed; PACMAN replay is not built yet.
    #[error(
        "replay of command records (PACMAN) is not supported yet: log device {device} segment \
         {segment} offset {offset} holds a command record with SSN {ssn} that recovery must replay"
    )]
    Unsupported {
        /// The device.
        device: DeviceId,
        /// The segment file of the device.
        segment: SegmentNo,
        /// The byte offset of the record within the segment.
        offset: u64,
        /// The record's SSN.
        ssn: Ssn,
    },
    /// Startup could not open the database (catalog, device list, finishing the replay).
    #[error("{0}")]
    Startup(String),
    /// The [`crate::Target`] refused an entry.
    #[error("installing table {table} key {key:02x?} at SSN {ssn} failed: {message}")]
    Install {
        /// The table.
        table: u32,
        /// The key bytes.
        key: Vec<u8>,
        /// The SSN of the record.
        ssn: Ssn,
        /// What the target reported.
        message: String,
    },
    /// Reading or writing a checkpoint file or directory failed.
    #[error("checkpoint file {path}: {source}")]
    CheckpointIo {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: io::Error,
    },
    /// A checkpoint file (data or metadata) does not match its checksums, its metadata or its
    /// format. Recovery never skips it: restore the file, or remove the checkpoint by hand
    /// knowing that the log below it may be gone.
    #[error("checkpoint file {path} is corrupt at byte offset {offset}: {reason}")]
    CheckpointCorrupt {
        /// The file.
        path: PathBuf,
        /// Where the damage was found.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
    /// Scanning a checkpoint cut failed.
    #[error("checkpoint scan: {0}")]
    CheckpointScan(txn::Error),
    /// `write_checkpoint` needs at least one directory.
    #[error("a checkpoint needs at least one directory")]
    NoCheckpointDirs,
}

impl From<wal::Error> for Error {
    fn from(e: wal::Error) -> Error {
        match e {
            wal::Error::Corrupt { device, segment, offset, reason } => {
                Error::Corrupt { device, segment, offset, reason }
            }
            other => Error::Log(other),
        }
    }
}
