//! The seam to the storage engine: [`Target`].

use wal::Ssn;

/// Where replay installs rows (STYLE rule 2: `recovery → txn, sql`). The adapter over
/// `txn::Engine::replay_install` implements it ([`EngineTarget`]); `testing::MapTarget` (feature
/// `testing`) is the test double.
///
/// Contract:
/// - **Last writer wins.** `install(table, key, row, ssn)` makes `row` the version of `key`
///   unless the key already holds a version with an SSN `>= ssn`, in which case it does nothing.
///   Replay calls it in no particular order across keys *and* for one key (entries of one key
///   come from several devices), so the outcome must depend only on the set of calls.
/// - **Deletes leave a trace.** `row = None` deletes `key` at `ssn`; the target must remember
///   that SSN (a tombstone) until replay ends, or an older install arriving later would bring
///   the row back. Dropping tombstones after replay is the adapter's business.
/// - **No latches needed**: replay sends every call for one `(table, key)` to the same thread,
///   so two calls for one key never run concurrently. Calls for different keys do.
/// - **Durability**: none. Replayed rows are durable because the log holds them; the target
///   keeps them in memory.
/// - An `Err` stops recovery ([`crate::Error::Install`]).
pub trait Target: Sync {
    /// Installs `row` (or deletes, if `None`) as the version of `(table, key)` written at `ssn`,
    /// last writer wins (see the trait doc).
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String>;
}

/// The adapter over the storage engine: installs through `txn::Engine::replay_install`, which is
/// last-writer-wins with tombstones. After replay the caller runs
/// `txn::Engine::finish_replay(max_ssn)` (drops tombstones, rebuilds secondary indexes, raises
/// every log buffer's `L.ssn`).
pub struct EngineTarget<'a>(pub &'a txn::Engine);

impl Target for EngineTarget<'_> {
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String> {
        self.0.replay_install(txn::TableId(table), key, row, ssn).map_err(|e| e.to_string())
    }
}
