//! # wal — Poplar parallel logging: N devices, SSN allocation, DSN per device, CSN = min DSN
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
//! It checks the CRCs of the next three records at once, interleaved (`crc.rs`: a record's
//! CRC-32C in one pass of 8-byte steps, three records in about the time of one).
//!
//! ## Testing
//!
//! `testing` (with the `testing` feature, or in this crate's tests) has `MemDevice` (crash
//! keeps synced bytes plus a torn prefix), `FaultyDevice` (fail the Nth write/sync/read,
//! `ENOSPC`, torn write), `ThrottledDevice` (emulated bandwidth and sync latency; serial, or pipelined so that a
//! pair's sync overlaps the next pair's transfer) and
//! `MemStore` (in-memory segment files, each optionally wrapped). The reader is tested by
//! truncating a log at every byte of its tail and by flipping every bit of a log. The logger
//! tests (`tests.rs`) check, at the moment a wait returns, that a crash would keep the record
//! (and, for CSN waits, that every device's durable log reaches the SSN). `loom` models
//! (`RUSTFLAGS="--cfg loom" cargo test -p wal`) cover Algorithm 1, the segment index's
//! filled-prefix rule, the logger wake-up protocol (`sync::Parker`), and DSN/CSN publication
//! (`durability::loom_tests`: a CSN watcher runs once, after every device published; a failure
//! completes a racing watcher; an idle device's marker lets a CSN waiter finish).
//!
//! ## The life of a commit (the numbered flow)
//!
//! ```text
//!  worker                                   logger of device d            waiter
//!  1. r = log.reserve(d, base, len)  ──►    (parked; woken)
//!     ssn, byte range [o, o+len) under
//!     the latch; waits while the ring is
//!     full (back-pressure)
//!  2. r.fill_record(kind, blind, payload)   3. close the open segment,
//!     copy into the ring, count it filled      wait until it is filled
//!     in the segment index (Alg. 2)            (filled-prefix rule), copy
//!                                              out, write+fdatasync at the
//!                                              segment file offset
//!                                           4. DSN(d) = SSN of the last
//!                                              record of the pair; free
//!                                              ring space; wake waiters ──► 5. wait_durable(ticket)
//!                                                                            non-blind: ssn <= CSN
//!                                                                            blind: ssn <= DSN(d)
//! ```
//!
//! 1. [`Log::reserve`] / [`Log::try_reserve`] (`buffer.rs`): Algorithm 1 plus the byte range in
//!    the buffer's ring (`ring_bytes`, bounded). With devices a reservation is at least
//!    [`MIN_RESERVATION`] (17) bytes and exactly the record's encoded size.
//! 2. [`Reservation::fill`] / [`Reservation::fill_record`]: the record carries the
//!    reservation's SSN. **Dropping a reservation unfilled writes an abort record** of the same
//!    size (DESIGN.md §4), so the filled prefix always advances.
//! 3. The segment index (`segment_index.rs`, Algorithm 2): reservations count into the open
//!    segment; the logger closes it (group commit: as soon as the previous pair is submitted,
//!    no timer unless `group_commit_delay` is set) and writes it only once every byte is
//!    filled.
//! 4. The logger (`logger.rs`): one thread per device, write+`fdatasync` pairs
//!    ([`LogDevice::submit_write_sync`], on io_uring up to `max_in_flight`, as many as pay on
//!    the device: module `depth`), DSN published in submission order. Segment files
//!    `wal/<n>/<segment>.log` ([`DirStore`]) have a fixed size; a record never crosses one;
//!    the logger waits for every pair of a segment before it creates the next. [`Log::delete_segments_below`] removes closed segments a checkpoint
//!    covers. On a fast device (pairs under [`LogOptions::assist_below`] on average: tmpfs, a
//!    disk with a power-safe cache) a requester whose device's logger is idle runs the
//!    logger's flush itself, with a synchronous `write` + `fdatasync`, instead of waking it
//!    (`logger.rs`, "Requesters flush"): the same state, under the lock the logger holds while
//!    it works, so pairs are still written and published one at a time in order.
//! 5. Durability (`durability.rs`): [`Log::wait_durable`] with a [`Ticket`] applies the
//!    acknowledge rule; [`Log::wait_csn`] holds read-only results until `ssn <= CSN`;
//!    [`Log::when_durable`] is the same rule as a callback, run by the thread whose DSN
//!    publication completes it (the logger, or a requester flushing for it); [`Log::watch`] registers such a callback without asking for the records
//!    (the server acknowledges this way, without a thread of its own waiting, and requests
//!    the records when its connection thread goes idle). `synchronous_commit = off` is not
//!    waiting, and filling lazily (next section).
//!
//! ## Eager and lazy records
//!
//! An eager fill (the default) raises its device's `want` and wakes the logger: somebody will
//! wait for it, so it goes out now. A record filled after [`Reservation::lazy`]
//! (`synchronous_commit = off`: nobody waits; or a waiter that will [`Log::request`] it later,
//! batching the requests of many commits: demand-driven group commit) wakes nobody; it goes
//! out with the next record somebody wants on that device, when the open segment holds a
//! quarter of the ring or a reserver waits for space, at shutdown, or `lazy_flush_delay`
//! (PostgreSQL's `wal_writer_delay`, default 10 ms) after the logger first saw it. Waiting for
//! a lazy record's ticket asks for it ([`Log::request`]), so correctness never depends on the
//! timer.
//! This turns one write+`fdatasync` pair per asynchronous commit into a few big ones.
//!
//! ## Large transactions
//!
//! A record must fit in its buffer's ring. A transaction whose value payload is larger than
//! [`Log::spill_threshold`] (a quarter of that) writes it to a spill file of its device first
//! ([`Log::spill`]: written and synced, `spill-<id>.dat` next to the segments), then a small
//! [`RecordKind::Spilled`] record naming it ([`SpillRef`]: id, length, CRC-32C). Filling that
//! record registers the file; [`Log::delete_segments_below`] deletes it with its record.
//!
//! ## Idle devices
//!
//! A CSN waiter publishes its target (`wanted`) and wakes the loggers of devices whose DSN is
//! below it. A logger with nothing reserved and nothing in flight then reserves a **marker**
//! through Algorithm 1 with `base = wanted - 1`: this raises `L.ssn` under the latch (no later
//! record on the device takes a smaller SSN), gives the marker an SSN above every earlier
//! record (I2 for the reader), and the marker is written and synced like any record before the
//! DSN moves. A DSN is never advanced in memory alone: it is always the SSN of a durable record.
//!
//! ## Faults
//!
//! The first failed write, `fdatasync` or segment creation fails the whole log: every logger
//! stops, reservers get [`Error::DeviceFailed`] / [`Error::NoSpace`] ([`Log::try_reserve`]) or a
//! detached reservation ([`Log::reserve`]), and every waiter whose condition does not hold yet
//! gets the error. Nothing is retried. The server should shut down and recover.
//!
//! ## Reading back after a crash
//!
//! Bytes written but not yet synced never exceed `ring_bytes` per device (ring space is freed
//! only when its pair is synced): read with `ReadOptions { unsynced_window: ring_bytes }`.
//! A reopened log ([`Log::open`]) starts a new segment after the existing ones and takes
//! `LogOptions::start_ssn` (the largest SSN recovered) as every `L.ssn`. The existing segments
//! it is told about (`LogOptions::existing_segments`: per device, each segment's last SSN, as
//! recovery's scan found them) become closed segments of the new log, so that
//! [`Log::delete_segments_below`] deletes them too once a checkpoint covers them.
//!
//! ## Deadlock rule for callers
//!
//! Fill or drop a reservation before reserving again on the same buffer, and before waiting on
//! anything that depends on it: with a full ring, a second reservation waits for space that only
//! the first one's fill can free.

mod buffer;
mod crc;
mod depth;
pub mod device;
mod durability;
mod error;
mod logger;
pub mod reader;
pub mod record;
mod segment_index;
mod ssn;
pub mod store;
mod sync;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(all(test, not(loom)))]
mod tests;

pub use buffer::{Log, Reservation, MIN_RESERVATION};
pub use device::{
    open_device, zero_fill, Backend, DeviceId, DeviceOptions, FileDevice, LogDevice, MappedDevice,
    OpenedDevice, Pending, Preallocate, SegmentNo, UringDevice,
};
pub use durability::{Notify, Ticket};
pub use error::Error;
pub use logger::LogOptions;
pub use reader::{LogEnd, ReadOptions, ReadRecord, SegmentReader};
pub use record::{Corrupt, Record, RecordKind, SpillRef, ValueEntry};
pub use ssn::Ssn;
pub use store::{
    for_memory_fs, in_memory_fs, list_segments, segment_file_name, DirStore, SegmentStore,
};
