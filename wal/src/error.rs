//! Errors of the log.
//!
//! Contract: an [`Error`] is final for its device. [`Error::DeviceFailed`] and
//! [`Error::NoSpace`] mean a write or `fdatasync` failed; the fault policy (DESIGN.md §3) forbids
//! retrying it, because the kernel may already have dropped the dirty pages. [`Error::Corrupt`]
//! means recovery found a damaged record that is *not* a torn tail; recovery must stop, never
//! skip it (STYLE rule 12). No variant carries a SQLSTATE: `sql::Error` maps `DeviceFailed` and
//! `NoSpace` to `58030` and `Corrupt` to `XX001`.

use std::io;

use crate::device::{DeviceId, SegmentNo};
use crate::record::Corrupt;

/// An error of the log. See the module doc for what each variant obliges the caller to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A write, `fdatasync` or read on a log device failed. The device must not be written again.
    #[error("log device {device} failed: {source}")]
    DeviceFailed {
        /// The device.
        device: DeviceId,
        /// What the operating system reported.
        #[source]
        source: io::Error,
    },
    /// A write on a log device failed because its file system is full (`ENOSPC`). Handled like
    /// [`Error::DeviceFailed`]: no retry.
    #[error(
        "log device {device} is out of space (ENOSPC); free disk space, then restart to recover"
    )]
    NoSpace {
        /// The device.
        device: DeviceId,
    },
    /// A reservation's length is outside what the log accepts: below one record header (the
    /// abort record that replaces an unfilled reservation needs it) or above the ring or
    /// segment size. A caller bug or an oversized transaction; the log is unaffected.
    #[error("a log record of {len} bytes is outside the accepted {min}..={max} bytes")]
    RecordSize {
        /// The requested length.
        len: usize,
        /// [`crate::MIN_RESERVATION`].
        min: usize,
        /// [`crate::Log::max_record_len`].
        max: usize,
    },
    /// A damaged record that is not part of a torn tail (see [`crate::reader`]).
    #[error("log device {device} segment {segment} is corrupt at byte offset {offset}: {reason}")]
    Corrupt {
        /// The device.
        device: DeviceId,
        /// The segment file of the device.
        segment: SegmentNo,
        /// The byte offset of the damaged record (or damaged byte) within the segment.
        offset: u64,
        /// What is wrong there.
        reason: Corrupt,
    },
}

impl Error {
    /// Classifies an I/O error of `device`: `ENOSPC` becomes [`Error::NoSpace`], anything else
    /// [`Error::DeviceFailed`].
    pub fn io(device: DeviceId, source: io::Error) -> Error {
        if source.raw_os_error() == Some(libc::ENOSPC) {
            Error::NoSpace { device }
        } else {
            Error::DeviceFailed { device, source }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn enospc_is_no_space() {
        let e = Error::io(DeviceId(3), io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(matches!(e, Error::NoSpace { device: DeviceId(3) }), "{e:?}");
        let e = Error::io(DeviceId(1), io::Error::from_raw_os_error(libc::EIO));
        assert!(matches!(e, Error::DeviceFailed { device: DeviceId(1), .. }), "{e:?}");
        assert!(e.to_string().contains("log device 1 failed"), "{e}");
    }

    #[test]
    fn result_stays_small() {
        // Six words: the Corrupt variant (device, segment, offset, a 24-byte reason) is the largest.
        assert!(std::mem::size_of::<Error>() <= 48, "{}", std::mem::size_of::<Error>());
    }
}
