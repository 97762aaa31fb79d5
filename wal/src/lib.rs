//! # wal — Poplar parallel logging (so far: SSN allocation, record format, devices, reader)
//!
//! Aspen writes its log to N log devices, each with one log buffer. A committing transaction
//! picks the buffer of its session and takes a *serial sequence number* (SSN) from it. SSNs are
//! the commit timestamps of the whole system: recovery replays records in SSN order, and the
//! durability rule compares SSNs against per-device watermarks (DESIGN.md §3).
//!
//! ## Algorithm 1 (SSN allocation), as implemented by [`Log::reserve`]
//!
//! ```text
//! base = max(wssn of every record read or written, cmd_read_ssn of every table written)
//!                       (computed by txn, passed in)
//! lock   L.latch                          -- L = the session's log buffer
//! ssn    = max(base, L.ssn) + 1
//! L.ssn  = ssn
//! offset = L.reserved; L.reserved += len  -- reserve the byte range [offset, offset + len)
//! unlock L.latch
//! copy the record into [offset, offset + len)   -- Reservation::fill, outside the latch
//! ```
//!
//! Read-only transactions never call `reserve`: their SSN is `base`.
//!
//! ## Invariants
//!
//! - **I1** `ssn(T) > base(T)`: a transaction's SSN is larger than the wssn of everything it read
//!   or overwrote (RAW, WAW), and than `cmd_read_ssn` of the tables it wrote. `txn` computes
//!   `base`; this crate guarantees the strict inequality.
//! - **I2** Within one buffer, SSNs strictly increase in byte order: the SSN and the byte range
//!   are taken under the same latch, and `L.ssn` only grows.
//!
//! Both are checked by tests in `buffer.rs` (a std multi-thread test, and a `loom` model under
//! `RUSTFLAGS="--cfg loom" cargo test -p wal`).
//!
//! ## Raising `L.ssn`
//!
//! [`Log::raise_all`] raises every buffer's `L.ssn` to a target under each latch. The checkpoint
//! cut (DESIGN.md §5) and idle-device markers (§3) use it: after it returns, every new SSN on
//! every buffer is larger than the target.
//!
//! ## The record format ([`record`])
//!
//! `[len u32][crc32c u32][ssn u64][flags u8][payload]`, little-endian; `len` counts the whole
//! record; the CRC-32C covers every field but itself; flags carry the kind (value, command,
//! marker, abort) and the BLIND bit. The byte-layout table is in [`record`]'s doc and a test
//! checks it. Zero-filled space is never a valid record.
//!
//! ## Devices and the fault policy ([`device`])
//!
//! A [`LogDevice`] is one segment file; a Poplar device ([`DeviceId`]) is a sequence of segments
//! ([`SegmentNo`]). Bytes are durable only after [`LogDevice::sync`] (or a write+sync pair's
//! [`LogDevice::wait`]) returns `Ok`. **A failed write or sync is never retried**: the kernel may
//! have dropped the dirty pages, and a later `fdatasync` could succeed over lost data. The
//! devices here refuse every write and sync after their first failure; the caller marks the
//! device failed, acknowledges nothing whose record was on it, and shuts down (DESIGN.md §3).
//!
//! The fsync sequence of a segment: [`open_device`] creates the file, preallocates it
//! (zero-fill by default), `fdatasync`s it and `fsync`s its directory; afterwards each group is a
//! write linked to an `fdatasync` ([`UringDevice`], several in flight) or `pwrite` then
//! `fdatasync` ([`FileDevice`], where io_uring is unavailable). With several pairs in flight,
//! bytes up to `x` are durable only once every pair ending at or before `x` has completed.
//!
//! ## Reading back ([`reader`])
//!
//! [`SegmentReader`] yields a device's records in order and checks I2 (SSNs strictly increase).
//! It ends the log at a torn tail (bad bytes with no valid record after them) and fails with
//! [`Error::Corrupt`] for a bad record that valid records follow: recovery never skips one.
//!
//! ## Testing
//!
//! `testing` (with the `testing` feature, or in this crate's tests) has `MemDevice` (crash
//! keeps synced bytes plus a torn prefix), `FaultyDevice` (fail the Nth write/sync/read,
//! `ENOSPC`, torn write) and `ThrottledDevice` (emulated bandwidth and sync latency). The reader
//! is tested by truncating a log at every byte of its tail and by flipping every bit of a log.
//!
//! ## Not here yet (next slice)
//!
//! A [`Reservation`] still reserves a byte range in a counter, not in a real buffer, and
//! [`Reservation::fill`] only accounts for the bytes. Still to come: the segment index of
//! reserved vs. filled bytes (Algorithm 2), logger threads over [`LogDevice`] (segment rotation:
//! sync a segment before writing the next; read with `unsynced_window` = the bytes a logger keeps
//! in flight), DSN per device, `CSN = min DSN`, the acknowledge rule, and idle-device markers
//! written to disk. Until then nothing is durable and every SSN is "acknowledged" at once.

mod buffer;
pub mod device;
mod error;
pub mod reader;
pub mod record;
mod ssn;
mod sync;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use buffer::{Log, Reservation};
pub use device::{
    open_device, zero_fill, Backend, DeviceId, DeviceOptions, FileDevice, LogDevice, OpenedDevice,
    Pending, Preallocate, SegmentNo, UringDevice,
};
pub use error::Error;
pub use reader::{LogEnd, ReadOptions, ReadRecord, SegmentReader};
pub use record::{Corrupt, Record, RecordKind, ValueEntry};
pub use ssn::Ssn;
