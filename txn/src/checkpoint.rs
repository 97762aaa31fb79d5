//! Transaction-consistent checkpoints: the cut and copy-on-write (DESIGN.md §5).
//!
//! A checkpoint must hold exactly the committed state as of an SSN `S`: every version with
//! `wssn <= S` that was current at `S`, nothing written after. Recovery then loads it and
//! replays the log records with `ssn > S` on top (recovery's `checkpoint` module writes and
//! loads the files; this module provides the consistent view).
//!
//! ## The cut ([`crate::Engine::begin_checkpoint`])
//!
//! ```text
//! committer (commit step 3-4)              begin_checkpoint
//!   lock, validate                           close the install gate ──┐ waits until no
//!   gate.enter()   ◄── waits while closed    S = log.max_ssn()        │ committer is
//!   reserve: ssn = max(base, L.ssn) + 1      log.raise_all(S)         │ between enter
//!   fill, install (+ copy-on-write)          tables = snapshot        │ and leave
//!   gate.leave()                             publish COW {S, map}     │
//!                                            open the gate ◄──────────┘
//! ```
//!
//! The **install gate** ([`InstallGate`]) is a striped counter of committers between "about to
//! reserve an SSN" and "installed", one stripe per committer thread ([`thread_stripe`]; threads
//! take the [`GATE_STRIPES`] stripes in turn), so that committers on different cores never write
//! the same counter. (Striping by log buffer, as before, made two cores that share a buffer
//! write the same counter twice per commit, on top of the buffer's latch.) A committer increments its stripe and then checks the
//! `closed` flag; the checkpoint sets `closed` and then waits for every stripe to drain. Both
//! sides use `SeqCst` (a Dekker store-load pair, like the fence in `commit`): either the
//! checkpoint sees the committer's increment and waits for it, or the committer sees `closed`,
//! backs out before reserving, and waits. While the gate is closed nobody reserves, so
//! `S = max L.ssn` is read in one step, and `raise_all(S)` makes every later SSN on every
//! buffer `> S`. Therefore:
//!
//! - every transaction with `ssn <= S` has installed when the gate opens again (it entered the
//!   gate before reserving, and the checkpoint waited for it to leave);
//! - every transaction that installs afterwards has `ssn > S`.
//!
//! Idle-device markers reserve SSNs without the gate; they carry no writes, so they may take
//! any SSN. Commits that write nothing (read-only, lock-only) never enter the gate.
//!
//! ## Copy-on-write
//!
//! While a checkpoint is active, `install` checks every update and delete: if the record's
//! version before this writer (the TID before locking) has `wssn <= S`, the writer (whose SSN
//! is `> S`) stores that pre-image `(key, row, wssn)` in the checkpoint's preserved map before
//! it replaces the row, while it still holds the record's lock. It is stored at most once per
//! record: after this install the record's wssn is `> S`, so no later writer preserves it
//! again; and at `S` a key has at most one live record, so at most one pre-image per key.
//! Preserved entries are keyed by the table object (not only its id), so a commit that
//! installs into a table truncated before the cut never feeds the fresh table's checkpoint.
//!
//! ## The scan ([`CheckpointCut::scan`])
//!
//! Walks the primary index (no index lock is held while rows are reported) and reports each
//! live record whose wssn is `<= S`. It skips insert placeholders (their SSN will be `> S`),
//! deleted records, and versions `> S` (their pre-image, if there was one `<= S`, is in the
//! preserved map: the writer put it there before storing its TID, and the scan reads the map
//! after it saw that TID). A record that is locked with a wssn `<= S` is being committed: the
//! scan waits for its holder (the holder never waits for the scan), then looks again. Deleted
//! records leave the index, so after the index the scan reports the table's preserved
//! pre-images too.
//!
//! A `(key, ssn)` can be reported **twice**: the scan reads a record at version `v <= S`, then
//! a writer overwrites it and preserves `v`, which the scan reports again from the map. Both
//! reports are the same version; a loader that keeps the largest SSN per key (recovery's
//! `Target`) ignores the second. Avoiding it would mean locking records during the scan.
//!
//! Never reported: a version with `wssn > S`, a record deleted at or before `S`, an insert
//! placeholder, a table created after the cut (not in [`CheckpointCut::tables`]).
//!
//! Secondary indexes are not part of a checkpoint: recovery rebuilds them from the rows
//! (`Engine::finish_replay`).

use crate::engine::{Inner, Table};
use crate::error::Error;
use crate::record::Record;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::{Key, Row, TableId};
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;
use wal::Ssn;

/// Stripes of the [`InstallGate`]: more than the committer threads of a usual machine, so that
/// two of them rarely share one.
pub(crate) const GATE_STRIPES: usize = 64;

/// This thread's stripe of the [`InstallGate`]: threads are numbered in the order they first
/// commit.
pub(crate) fn thread_stripe() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    STRIPE.with(|s| *s)
}

/// One stripe of the [`InstallGate`], on its own cache lines.
#[repr(align(128))]
struct Stripe(AtomicU64);

/// The `closed` flag of the [`InstallGate`], on its own cache lines: committers only read it.
#[repr(align(128))]
struct Closed(AtomicBool);

/// Committers between "about to reserve an SSN" and "installed", striped by log buffer; see the
/// module doc.
pub(crate) struct InstallGate {
    /// Set by a checkpoint while it takes its cut; committers do not enter while it is set.
    closed: Closed,
    /// Committers inside the gate, per stripe.
    stripes: Box<[Stripe]>,
}

/// A committer's place inside the [`InstallGate`]; dropping it leaves.
#[must_use = "dropping the guard leaves the install gate"]
pub(crate) struct GateGuard<'a>(&'a Stripe);

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        // Release: pairs with the SeqCst (acquiring) load in `close` that sees the stripe
        // drained, so the checkpoint sees everything this committer installed.
        self.0 .0.fetch_sub(1, Ordering::Release);
    }
}

/// Waits a little without ever giving up (both sides of the gate wait for something that
/// always ends: a cut that takes microseconds, or an install that never blocks on the cut).
fn pause(spins: &mut u32) {
    *spins += 1;
    if *spins <= 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

impl InstallGate {
    fn new(stripes: usize) -> InstallGate {
        InstallGate {
            closed: Closed(AtomicBool::new(false)),
            stripes: (0..stripes.max(1)).map(|_| Stripe(AtomicU64::new(0))).collect(),
        }
    }

    /// Enters the gate on `stripe` (the committer's [`thread_stripe`]), waiting while a
    /// checkpoint takes its cut.
    pub(crate) fn enter(&self, stripe: usize) -> GateGuard<'_> {
        let s = &self.stripes[stripe % self.stripes.len()];
        loop {
            // SeqCst: the committer's half of a Dekker pair (increment, then load `closed`);
            // `close` stores `closed`, then loads the stripes. SeqCst forbids both loads
            // missing the other side's store.
            s.0.fetch_add(1, Ordering::SeqCst);
            if !self.closed.0.load(Ordering::SeqCst) {
                return GateGuard(s);
            }
            s.0.fetch_sub(1, Ordering::Release);
            let mut spins = 0;
            // Acquire: pairs with the Release store in `open`, so a committer that gets in
            // after a cut sees the copy-on-write state published before it.
            while self.closed.0.load(Ordering::Acquire) {
                pause(&mut spins);
            }
        }
    }

    /// Closes the gate and waits until no committer is inside. The caller must not be inside
    /// the gate itself, and only one caller may close at a time.
    fn close(&self) {
        // SeqCst: the checkpoint's half of the Dekker pair in `enter`.
        self.closed.0.store(true, Ordering::SeqCst);
        for s in self.stripes.iter() {
            let mut spins = 0;
            // SeqCst (also acquiring): see `enter`; reading 0 synchronizes with every
            // committer's Release decrement before it.
            while s.0.load(Ordering::SeqCst) != 0 {
                pause(&mut spins);
            }
        }
    }

    /// Reopens the gate.
    fn open(&self) {
        // Release: pairs with the Acquire loads in `enter`.
        self.closed.0.store(false, Ordering::Release);
    }
}

/// Pre-images preserved by writers while a checkpoint is active, sharded by the writer's log
/// buffer (no key is ever looked up: each record is preserved at most once).
struct Preserved {
    /// Per shard: table object address → `(key, row, wssn)`.
    shards: Box<[Mutex<PreservedShard>]>,
}

/// One shard of [`Preserved`]: table object address → `(key, row, wssn)`.
type PreservedShard = HashMap<usize, Vec<(Key, Row, Ssn)>>;

/// The address of a table object: the identity preserved entries are keyed by.
fn table_addr(table: &Arc<Table>) -> usize {
    Arc::as_ptr(table) as usize
}

/// The engine's checkpoint state: the gate, and the copy-on-write state of the active
/// checkpoint.
pub(crate) struct CheckpointState {
    pub(crate) gate: InstallGate,
    /// The cut `S` of the active checkpoint, or 0 when none is active. `S = 0` also reads as
    /// "nothing to preserve", which is right: no committed version has wssn 0.
    cut: AtomicU64,
    preserved: ArcSwapOption<Preserved>,
    /// A checkpoint is active (from `begin_checkpoint` until its cut is dropped).
    active: AtomicBool,
}

impl CheckpointState {
    pub(crate) fn new() -> CheckpointState {
        CheckpointState {
            gate: InstallGate::new(GATE_STRIPES),
            cut: AtomicU64::new(0),
            preserved: ArcSwapOption::empty(),
            active: AtomicBool::new(false),
        }
    }

    /// What an install with SSN `ssn` must preserve into, if a checkpoint is active. Call
    /// inside the gate.
    pub(crate) fn cow(&self, ssn: Ssn) -> Option<Cow> {
        // Acquire: pairs with the Release store in `begin_checkpoint` (also ordered by the
        // gate's open/enter pair).
        let cut = self.cut.load(Ordering::Acquire);
        if cut == 0 {
            return None;
        }
        debug_assert!(ssn.0 > cut, "a committer inside the gate after the cut has ssn > S");
        let preserved = self.preserved.load_full()?;
        Some(Cow { cut, preserved })
    }
}

/// Copy-on-write context of one install (see the module doc).
pub(crate) struct Cow {
    cut: u64,
    preserved: Arc<Preserved>,
}

impl Cow {
    /// Called by a writer holding `record`'s lock, before it replaces or removes the row:
    /// preserves `(key, row, wssn)` if the version it replaces (`prior_wssn`, the TID before
    /// locking) is covered by the cut.
    pub(crate) fn preserve(
        &self,
        table: &Arc<Table>,
        shard: usize,
        key: &[u8],
        prior_wssn: u64,
        record: &Record,
    ) {
        if prior_wssn > self.cut {
            return;
        }
        let Some(row) = record.row_locked() else {
            debug_assert!(false, "a locked live record has a row");
            return;
        };
        let shards = &self.preserved.shards;
        let mut map = shards[shard % shards.len()].lock();
        map.entry(table_addr(table)).or_default().push((key.to_vec(), row, Ssn(prior_wssn)));
    }
}

/// A transaction-consistent view of the engine at the cut `S` = [`CheckpointCut::ssn`], from
/// [`crate::Engine::begin_checkpoint`]. `Send + Sync`: several threads may scan different
/// tables at once.
///
/// While it lives, writers with `ssn > S` copy the versions `<= S` they replace into it
/// (copy-on-write), which costs memory proportional to the rows changed meanwhile. **Dropping
/// it ends the checkpoint**: copy-on-write stops and the preserved pre-images are freed; a new
/// checkpoint may begin.
///
/// Durability is not its business: a checkpoint counts only once its files are synced and
/// `CSN >= S` (recovery's `write_checkpoint` waits for both).
pub struct CheckpointCut {
    inner: Arc<Inner>,
    ssn: Ssn,
    tables: Vec<Arc<Table>>,
    preserved: Arc<Preserved>,
}

impl fmt::Debug for CheckpointCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckpointCut")
            .field("ssn", &self.ssn)
            .field("tables", &self.tables())
            .finish()
    }
}

impl crate::Engine {
    /// Starts a checkpoint at a transaction-consistent cut `S` (module `checkpoint`): closes the
    /// install gate (waiting for committers between SSN reservation and install), takes
    /// `S = max L.ssn`, raises every buffer's `L.ssn` to `S`, snapshots the table list, turns
    /// copy-on-write on, and reopens the gate. Committers are held for that long only.
    ///
    /// [`Error::CheckpointActive`] if another checkpoint's [`CheckpointCut`] is still alive.
    /// Must not be called from inside a commit.
    pub fn begin_checkpoint(&self) -> Result<CheckpointCut, Error> {
        let state = &self.inner.checkpoint;
        // Acquire: pairs with the Release store in `CheckpointCut::drop`.
        if state.active.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err()
        {
            return Err(Error::CheckpointActive);
        }
        state.gate.close();
        let log = &self.inner.log;
        let ssn = log.max_ssn();
        log.raise_all(ssn);
        let mut tables: Vec<Arc<Table>> = self.inner.tables.load().values().cloned().collect();
        tables.sort_by_key(|t| t.id);
        let shards = log.n_buffers();
        let preserved = Arc::new(Preserved {
            shards: (0..shards).map(|_| Mutex::new(HashMap::new())).collect(),
        });
        state.preserved.store(Some(preserved.clone()));
        // Release: pairs with the Acquire load in `CheckpointState::cow`.
        state.cut.store(ssn.0, Ordering::Release);
        state.gate.open();
        Ok(CheckpointCut { inner: self.inner.clone(), ssn, tables, preserved })
    }
}

impl CheckpointCut {
    /// The cut `S`: the checkpoint holds every version with `wssn <= S` that was current at
    /// `S`, and nothing written after it.
    pub fn ssn(&self) -> Ssn {
        self.ssn
    }

    /// The tables that existed at the cut, in id order.
    pub fn tables(&self) -> Vec<TableId> {
        self.tables.iter().map(|t| t.id).collect()
    }

    /// The approximate number of entries of `table` now (for progress estimates); 0 if it is
    /// not one of [`CheckpointCut::tables`].
    pub fn approx_rows(&self, table: TableId) -> usize {
        self.table(table).map_or(0, |t| t.primary.len())
    }

    fn table(&self, table: TableId) -> Option<&Arc<Table>> {
        self.tables.iter().find(|t| t.id == table)
    }

    /// Calls `f(key, row, wssn)` for every row of `table` as of the cut, with the SSN of the
    /// version (module doc). Never reports a version `> S` or a row deleted at or before `S`.
    /// **May report the same `(key, ssn)` twice** (once from the index, once as a preserved
    /// pre-image, when a writer overwrote the row during the scan), always the same version;
    /// consumers keep the largest SSN per key. Rows come in key order, then preserved
    /// pre-images in no particular order.
    ///
    /// Takes no record lock; waits for a record that a committer holds locked with a version
    /// `<= S` (the committer is between lock and install and never waits for the scan).
    /// [`Error::TableDropped`] if `table` is not one of [`CheckpointCut::tables`]. Tables may
    /// be scanned concurrently from several threads, and a table may be scanned again.
    #[allow(clippy::type_complexity)] // the callback's shape is the API: (key, row, wssn)
    pub fn scan(&self, table: TableId, f: &mut dyn FnMut(&[u8], &[u8], Ssn)) -> Result<(), Error> {
        let t = self.table(table).ok_or(Error::TableDropped(table))?;
        let cut = self.ssn.0;
        t.primary.range(Bound::Unbounded, Bound::Unbounded, false, &mut |key, record| loop {
            // Placeholders (their SSN will be > S), deleted records, and versions > S (their
            // pre-image <= S, if any, is in the preserved map; a holder that aborts restores
            // the same wssn > S) are skipped without waiting.
            let tid = record.tid.load();
            if tid.is_absent() || tid.wssn() > cut {
                return true;
            }
            // Unlocked, or locked by a committer that will install or abort without waiting
            // for us: `read` waits (bounded) for a consistent unlocked snapshot; we retry
            // after its bound, never giving up.
            let Ok((tid, row)) = record.read() else { continue };
            if tid.is_absent() || tid.wssn() > cut {
                return true;
            }
            f(key, &row.expect("a live record has a row"), Ssn(tid.wssn()));
            return true;
        });
        let addr = table_addr(t);
        for shard in self.preserved.shards.iter() {
            let entries: Vec<(Key, Row, Ssn)> =
                shard.lock().get(&addr).map(|v| v.to_vec()).unwrap_or_default();
            for (key, row, ssn) in &entries {
                debug_assert!(ssn.0 <= cut);
                f(key, row, *ssn);
            }
        }
        Ok(())
    }

    /// Rows preserved by copy-on-write so far (over all tables).
    pub fn preserved_rows(&self) -> usize {
        self.preserved.shards.iter().map(|s| s.lock().values().map(Vec::len).sum::<usize>()).sum()
    }
}

impl Drop for CheckpointCut {
    fn drop(&mut self) {
        let state = &self.inner.checkpoint;
        // Release: pairs with the Acquire load in `CheckpointState::cow`. A writer that already
        // took the map preserves into it harmlessly; it is freed with its last reference.
        state.cut.store(0, Ordering::Release);
        state.preserved.store(None);
        // Release: pairs with the Acquire compare_exchange in `begin_checkpoint`.
        state.active.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// What the gate costs a committer (enter + leave, uncontended). Run with
    /// `cargo test -p txn --release --lib gate_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "benchmark"]
    fn gate_cost() {
        let gate = InstallGate::new(2);
        let n = 50_000_000u64;
        let start = std::time::Instant::now();
        for i in 0..n {
            let g = gate.enter((i & 1) as usize);
            std::hint::black_box(&g);
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!("install gate enter + leave: {ns:.1} ns");
    }

    /// The gate: a closer waits for everyone inside; nobody enters while it is closed.
    #[test]
    fn gate_excludes_committers_while_closed() {
        let gate = Arc::new(InstallGate::new(2));
        let inside = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let (gate, inside, stop) = (gate.clone(), inside.clone(), stop.clone());
                std::thread::spawn(move || {
                    // At least once, whenever the thread gets to run: the gate is open at the
                    // end, so every worker passes it (no timing assumption).
                    let mut n = 0u64;
                    loop {
                        let g = gate.enter(i);
                        inside.fetch_add(1, Ordering::SeqCst);
                        std::hint::spin_loop();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(g);
                        n += 1;
                        if stop.load(Ordering::Relaxed) {
                            return n;
                        }
                    }
                })
            })
            .collect();
        for _ in 0..200 {
            gate.close();
            for _ in 0..10 {
                assert_eq!(inside.load(Ordering::SeqCst), 0, "a committer inside a closed gate");
            }
            gate.open();
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            assert!(w.join().unwrap() > 0);
        }
    }
}
