//! # recovery — checkpoints, log scan, RSNe and parallel value replay (PACMAN: not yet)
//!
//! DESIGN.md §5: after a crash, load the newest valid checkpoint, find how far the log is
//! durable on every device, and replay the log above the checkpoint into the storage engine.
//!
//! ## What exists
//!
//! 0. **Checkpoints** (`checkpoint/`). [`write_checkpoint`] writes a `txn::CheckpointCut`
//!    (the engine's transaction-consistent cut `S` with copy-on-write, see `txn`'s
//!    `checkpoint` module) into checkpoint directories, one writer thread per directory, every
//!    row with its SSN and CRC-32C per block and per file; waits until `CSN >= S`; then writes
//!    the metadata last and atomically. [`newest_checkpoint`] finds the newest checkpoint whose
//!    metadata exists, [`load_checkpoint`] loads it in parallel (one reader per file) through
//!    [`Target::install`], checking every checksum (a mismatch is
//!    [`Error::CheckpointCorrupt`], never skipped), and [`delete_older_checkpoints`] retires
//!    the older ones. Once a checkpoint is valid, `wal::Log::delete_segments_below(S + 1)`
//!    may delete the log it covers.
//! 1. [`RecoveryPlan::scan`] (`plan.rs`) reads every device ([`DeviceLog`]: from a `wal/<n>/`
//!    directory with [`DeviceLog::from_dir`], or from in-memory segments) to the end of its valid
//!    log with `wal::SegmentReader`, one thread per device, with
//!    [`ScanOptions::unsynced_window`] = the logger's `ring_bytes` ([`ScanOptions::for_log`]).
//!    A torn tail ends a device's log at its last good record; any other damaged record is
//!    [`Error::Corrupt`] `{ device, segment, offset, reason }` and recovery stops (never
//!    skipped). It computes **`RSNe = min over devices of max(SSN of the last durable record,
//!    S)`** (value, command, marker or abort; a device without records counts as 0, or as `S`
//!    with [`ScanOptions::checkpoint_ssn`] = `S`: its segments below `S` may have been
//!    deleted). It also records each segment's last SSN ([`RecoveryPlan::existing_segments`]),
//!    which the reopened log adopts (`wal::LogOptions::existing_segments`) so that the next
//!    checkpoint can delete them.
//! 2. [`stage()`] (`replay/value.rs`) does the scan of step 1 and the staging of the replay in
//!    **one pass** over the log: one reader thread per device, which also does the scan's
//!    bookkeeping, so every byte is read and checksummed once and the same [`RecoveryPlan`]
//!    comes out. It selects every entry of every value record with **`S < ssn <= RSNe`**,
//!    plus every **blind** value record with `ssn > S` (acknowledged at its own device's DSN);
//!    markers and abort records carry no writes and are skipped. A *spilled* record (a large
//!    transaction) is staged from the spill file it names, checked against the record; a
//!    missing or mismatching file fails recovery ([`Error::Corrupt`]). The plan lists the
//!    spill files records refer to ([`RecoveryPlan::existing_spills`], adopted by the
//!    reopened log) and [`RecoveryPlan::delete_orphan_spills`] removes the others. RSNe is only known at the end,
//!    so a reader decides a record as soon as the other readers' published progress bounds
//!    RSNe far enough, and holds the few it cannot decide yet (bounded: beyond, it waits for
//!    the other readers; module doc). Entries are partitioned by
//!    hash(table, key) over `threads` workers; each worker **stages** its partition without
//!    locks, keeping only the write with the largest SSN per key (last writer wins, so no
//!    order and no latch is needed). Nothing reaches the target during the
//!    pass: a damaged record anywhere fails it first (scan errors keep precedence, first
//!    failing device in id order). [`StagedLog::install`] then hands the survivors to
//!    [`Target::install_staged`] (each key once, all partitions in parallel) and runs
//!    [`Target::finish_staged`] on the caller's thread (for the engine: the bulk index build
//!    of `txn::Engine::replay_bulk`); in between, the plan can be sealed and a checkpoint
//!    loaded, as [`startup`] does. [`replay()`] is the same staging and install as a second
//!    pass over a plan from [`RecoveryPlan::scan`] (RSNe known up front). Both report
//!    [`Progress`] (phase, bytes and records done, rate, ETA) and return a [`Summary`] (time
//!    per phase, GB/s).
//! 3. [`SerialReplayer`] (`replay/serial.rs`) is the oracle: one thread, all devices merged in
//!    SSN order. Tests check parallel == serial == a model of the workload.
//! 4. [`RecoveryPlan::seal`] turns unacknowledged records above RSNe into aborts and zero-fills
//!    torn tails; [`startup`] is the server's startup sequence.
//!
//! ```text
//! checkpoint dirs ──newest_checkpoint──► CheckpointMeta { S, files } ──load_checkpoint──┐
//! devices ──stage(checkpoint_ssn = S)──► RecoveryPlan { per device: end, last SSN;        │
//!          (one pass)                 │                RSNe = min max(last, S) }         │
//!                                     └─► StagedLog ──install(target)──► (parallel) ◄────┤
//! devices ──scan(checkpoint_ssn = S)──► RecoveryPlan                                      │
//!                        ├─► replay(plan, S, target, threads, progress)  (second pass) ◄──┘
//!                        └─► SerialReplayer::new(plan).replay(S, target)  (oracle)
//! select: kind = value  and  S < ssn  and  (ssn <= RSNe  or  blind)
//! then:   Engine::finish_replay(plan.max_ssn())
//! ```
//!
//! ## The seam
//!
//! [`Target`] (`target.rs`) is STYLE's `recovery::Target`: `install(table, key, row, ssn)`,
//! last writer wins, deletes leave a tombstone until replay ends, plus the bulk path
//! (`install_staged` of [`Staged`] writes, in chunks that never move: [`StagedWrites`]; then
//! `finish_staged`; the defaults fall back to `install`). [`EngineTarget`] is the adapter
//! over `txn::Engine::replay_install` and `txn::ReplayBatch` / `txn::Engine::replay_bulk`
//! (existing keys updated in place, new keys inserted in bulk; only before the engine serves
//! transactions); `testing::MapTarget` (feature `testing`) is the in-memory double.
//! [`load_checkpoint`] stages each file's rows the same way.
//! A checkpoint may hold the same `(key, ssn)` twice (copy-on-write); last-writer-wins makes
//! the second install a no-op.
//!
//! ## What does not exist yet
//!
//! - [`startup`] does not load checkpoints yet, and nothing here schedules them: wiring them
//!   into the server (a checkpoint daemon, `CHECKPOINT`) is separate work.
//! - **PACMAN** replay of command records: a command record that must be replayed makes replay
//!   fail with [`Error::Unsupported`] (it is never skipped).
//! - A fault-injecting file shim for checkpoint files (STYLE rule 7): they use `std::fs`.
//!
//! ## Testing
//!
//! Logs are built by encoding `wal::Record`s into `wal::testing::MemDevice` segments (torn
//! tails, corruption in the middle, several devices) and by writing through `wal::Log::open`
//! into real segment directories. `src/tests.rs` covers RSNe over devices (with and without a
//! checkpoint cut), records beyond RSNe (excluded unless blind), a torn tail lowering RSNe, a
//! corrupt record as a hard error, command records as `Unsupported`, per-segment last SSNs,
//! and randomized parallel-vs-serial equivalence (40 seeds, deletes, re-inserts, keys whose
//! newest write is a delete, blind records, torn tails, checkpoint cuts): into `MapTarget`s,
//! and into engines — serial per-entry `replay_install` against the bulk path (two passes and
//! one pass) on top of the checkpoint's rows (so checkpoint-loaded rows are updated and
//! deleted by the log), replayed twice — all equal to a model. Every case also runs the one
//! pass, whose plan must equal the scan's, with room for undecided records and with almost
//! none (readers then wait for each other all the time), as does a log whose first
//! device starts with a bulk load; the one pass must report a damaged record before a replay
//! error elsewhere, and a device without records must hold RSNe at `S`. `replay/value.rs`
//! checks the one pass's decision rule case by case. `checkpoint/format.rs` checks the
//! documented byte layouts. `tests/checkpoint_round_trip.rs` runs a bank workload on real
//! directories while a checkpoint is written, deletes the log below `S`, recovers
//! (checkpoint + log above `S`) into a fresh engine and compares; restarts adopting the old segments and deletes them
//! after the next checkpoint; ignores a checkpoint whose metadata was never written; and
//! rejects flipped bytes, truncation and missing files with an error naming the file.

mod checkpoint;
mod durable_file;
mod error;
mod first_error;
mod plan;
mod progress;
mod replay;
pub mod startup;
mod target;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

pub use checkpoint::{
    delete_older_checkpoints, load_checkpoint, newest_checkpoint, write_checkpoint, CheckpointFile,
    CheckpointMeta,
};
pub use error::Error;
pub use plan::{DeviceLog, DeviceScan, RecoveryPlan, ScanOptions, Sealed};
pub use progress::{Phase, Progress, Summary};
pub use replay::serial::SerialReplayer;
pub use replay::value::{replay, stage, StagedLog, PROGRESS_INTERVAL};
pub use target::{EngineTarget, Staged, StagedWrites, Target};
