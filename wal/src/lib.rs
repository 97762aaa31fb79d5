//! # wal — Poplar parallel logging (this issue: SSN allocation only)
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
//! Both are checked by tests in [`buffer`] (a std multi-thread test, and a `loom` model under
//! `RUSTFLAGS="--cfg loom" cargo test -p wal`).
//!
//! ## Raising `L.ssn`
//!
//! [`Log::raise_all`] raises every buffer's `L.ssn` to a target under each latch. The checkpoint
//! cut (DESIGN.md §5) and idle-device markers (§3) use it: after it returns, every new SSN on
//! every buffer is larger than the target.
//!
//! ## Not here yet (next issue)
//!
//! There are no log devices yet: a [`Reservation`] reserves a byte range in a counter, not in a
//! real buffer, and [`Reservation::fill`] only accounts for the bytes. Still to come: the record
//! format `[len][crc32c][ssn][flags][payload]`, the segment index of reserved vs. filled bytes
//! (Algorithm 2), logger threads, DSN per device, `CSN = min DSN`, the acknowledge rule,
//! idle-device markers written to disk, and the fault policy (no retry after a failed
//! `fdatasync`). Until then nothing is durable and every SSN is "acknowledged" at once.

mod buffer;
mod ssn;
mod sync;

pub use buffer::{Log, Reservation};
pub use ssn::Ssn;
