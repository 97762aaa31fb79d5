//! # recovery — log scan, RSNe and parallel value replay (checkpoints and PACMAN: not yet)
//!
//! DESIGN.md §5, the part that exists: after a crash, find how far the log is durable on every
//! device and replay it into the storage engine.
//!
//! ## What exists
//!
//! 1. [`RecoveryPlan::scan`] (`plan.rs`) reads every device ([`DeviceLog`]: from a `wal/<n>/`
//!    directory with [`DeviceLog::from_dir`], or from in-memory segments) to the end of its valid
//!    log with `wal::SegmentReader`, one thread per device, with
//!    [`ScanOptions::unsynced_window`] = the logger's `ring_bytes` ([`ScanOptions::for_log`]).
//!    A torn tail ends a device's log at its last good record; any other damaged record is
//!    [`Error::Corrupt`] `{ device, segment, offset, reason }` and recovery stops (never
//!    skipped). It computes **`RSNe = min over devices of the SSN of the last durable record`**
//!    (value, command, marker or abort; a device without records counts as 0).
//! 2. [`replay()`] (`replay/value.rs`) reads the devices a second time and installs, through
//!    [`Target::install`], every entry of every value record with **`S < ssn <= RSNe`**, plus
//!    every **blind** value record with `ssn > S` (acknowledged at its own device's DSN). Markers
//!    and abort records carry no writes and are skipped. Entries are partitioned by
//!    hash(table, key) over `threads` install threads; the target keeps the largest SSN per key
//!    (last writer wins), so no order and no latch is needed. It reports [`Progress`] (phase,
//!    bytes and records done, rate, ETA) and returns a [`Summary`] (time per phase, GB/s).
//! 3. [`SerialReplayer`] (`replay/serial.rs`) is the oracle: one thread, all devices merged in
//!    SSN order. Tests check parallel == serial == a model of the workload.
//!
//! ```text
//! devices ──scan──► RecoveryPlan { per device: end, last SSN;  RSNe = min }
//!                        │
//!                        ├─► replay(plan, S, target, threads, progress)   (parallel)
//!                        └─► SerialReplayer::new(plan).replay(S, target)  (oracle)
//! select: kind = value  and  S < ssn  and  (ssn <= RSNe  or  blind)
//! ```
//!
//! ## The seam
//!
//! [`Target`] (`target.rs`) is STYLE's `recovery::Target`: `install(table, key, row, ssn)`,
//! last writer wins, deletes leave a tombstone until replay ends. The adapter over
//! `txn::Engine::replay_install` is not here yet (this crate does not use txn internals);
//! [`testing::MapTarget`] is the in-memory double.
//!
//! ## What does not exist yet
//!
//! - **Checkpoints** (the cut `S`, copy-on-write writers, metadata, loading the newest valid
//!   one): callers pass `S` themselves (`Ssn::ZERO` = replay everything). With checkpoints and
//!   log deletion, a device's last durable SSN must become `max(last record, S)`.
//! - **PACMAN** replay of command records: a command record that must be replayed makes replay
//!   fail with [`Error::Unsupported`] (it is never skipped).
//! - Zero-filling a discarded torn tail ([`DeviceScan::end`] says where) before the log is
//!   reopened, and the server's startup sequence (catalog → checkpoint → RSNe → replay).
//!
//! ## Testing
//!
//! Logs are built by encoding `wal::Record`s into `wal::testing::MemDevice` segments (torn
//! tails, corruption in the middle, several devices) and by writing through `wal::Log::open`
//! into real segment directories. `src/tests.rs` covers RSNe over devices, records beyond RSNe
//! (excluded unless blind), a torn tail lowering RSNe, a corrupt record as a hard error,
//! command records as `Unsupported`, and randomized parallel-vs-serial equivalence.

mod error;
mod plan;
mod progress;
mod replay;
pub mod startup;
mod target;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

pub use error::Error;
pub use plan::{DeviceLog, DeviceScan, RecoveryPlan, ScanOptions, Sealed};
pub use progress::{Phase, Progress, Summary};
pub use replay::serial::SerialReplayer;
pub use replay::value::{replay, PROGRESS_INTERVAL};
pub use target::{EngineTarget, Target};
