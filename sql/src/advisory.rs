//! Advisory locks: PostgreSQL's `pg_advisory_lock` family. Applications (and migration tools:
//! Rails, Prisma, golang-migrate, Flyway…) use them as a named mutex that lives outside the
//! data: a lock on a 64-bit key (or a pair of 32-bit keys, a separate key space), exclusive or
//! shared, held by a session until it unlocks it or ends, or by a transaction until it ends.
//!
//! They have nothing to do with the optimistic engine: no row is locked and nothing is
//! logged. One table per database under one mutex; a session that must wait sleeps on a
//! condition variable in short steps, checking its statement's timeout and cancel flag
//! between them, so a waiting statement always ends. As in PostgreSQL:
//!
//! - a session's own holds never block it, and each acquisition is counted (a lock taken
//!   twice must be unlocked twice); session-level and transaction-level holds count apart;
//! - exclusive conflicts with every other session's hold, shared only with exclusive;
//! - a waiter that has waited `deadlock_timeout` (1 s) looks for a cycle of sessions each
//!   waiting for a lock another holds, and if it closes one, fails with `40P01`.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// The key of an advisory lock: `pg_advisory_lock(bigint)` and `pg_advisory_lock(int, int)`
/// lock in different key spaces (PostgreSQL's `objsubid` 1 and 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockKey {
    /// One `bigint`.
    Int8(i64),
    /// Two `int`s.
    Int4Pair(i32, i32),
}

impl LockKey {
    /// As `pg_locks` and PostgreSQL's messages show it: `[database,classid,objid,objsubid]`.
    fn describe(self) -> String {
        let (classid, objid, subid) = match self {
            LockKey::Int8(k) => ((k >> 32) as u32, k as u32, 1),
            LockKey::Int4Pair(a, b) => (a as u32, b as u32, 2),
        };
        format!(
            "advisory lock [{},{classid},{objid},{subid}]",
            crate::describe::system::DATABASE_OID
        )
    }
}

/// Exclusive or shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `pg_advisory_lock`: conflicts with every other session's hold.
    Exclusive,
    /// `pg_advisory_lock_shared`: conflicts only with another session's exclusive hold.
    Shared,
}

impl Mode {
    /// The lock mode as PostgreSQL's messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Exclusive => "ExclusiveLock",
            Mode::Shared => "ShareLock",
        }
    }
}

/// Held until the session unlocks it or ends, or until the transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `pg_advisory_lock`.
    Session,
    /// `pg_advisory_xact_lock`.
    Transaction,
}

/// One session's holds on one key: counts by mode and scope.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    /// `[exclusive, shared]` × `[session, transaction]`.
    counts: [[u32; 2]; 2],
}

impl Held {
    fn slot(&mut self, mode: Mode, scope: Scope) -> &mut u32 {
        &mut self.counts[mode as usize][scope as usize]
    }

    fn holds(&self, mode: Mode) -> bool {
        self.counts[mode as usize].iter().any(|n| *n > 0)
    }

    fn is_empty(&self) -> bool {
        self.counts.iter().flatten().all(|n| *n == 0)
    }
}

/// Who a session is, for the lock table and for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Holder {
    /// Unique per session of the database.
    pub id: u64,
    /// The process id its BackendKeyData gave (what `pg_backend_pid()` answers).
    pub pid: i32,
}

#[derive(Default)]
struct Table {
    locks: HashMap<LockKey, HashMap<Holder, Held>>,
    /// What each waiting session waits for.
    waiting: HashMap<Holder, (LockKey, Mode)>,
}

impl Table {
    /// The sessions other than `who` whose holds on `key` keep `who` from taking it in
    /// `mode`.
    fn blockers(&self, who: Holder, key: LockKey, mode: Mode) -> Vec<Holder> {
        let Some(holders) = self.locks.get(&key) else { return Vec::new() };
        holders
            .iter()
            .filter(|(h, held)| {
                **h != who
                    && match mode {
                        Mode::Exclusive => !held.is_empty(),
                        Mode::Shared => held.holds(Mode::Exclusive),
                    }
            })
            .map(|(h, _)| *h)
            .collect()
    }

    /// A cycle of waits through `who`: the sessions `who` waits for, the ones they wait
    /// for, … back to `who`. Returns the session `who` waits for on that cycle.
    fn deadlock(&self, who: Holder) -> Option<Holder> {
        let (key, mode) = self.waiting.get(&who)?;
        for first in self.blockers(who, *key, *mode) {
            let mut seen = HashSet::new();
            let mut stack = vec![first];
            while let Some(h) = stack.pop() {
                if h == who {
                    return Some(first);
                }
                if !seen.insert(h) {
                    continue;
                }
                if let Some((k, m)) = self.waiting.get(&h) {
                    stack.extend(self.blockers(h, *k, *m));
                }
            }
        }
        None
    }

    /// Lets `clear` zero some of `who`'s counts on every key, dropping the holds (and keys)
    /// left empty.
    fn release(&mut self, who: Holder, clear: impl Fn(&mut Held)) {
        self.locks.retain(|_, holders| {
            if let Some(held) = holders.get_mut(&who) {
                clear(held);
                if held.is_empty() {
                    holders.remove(&who);
                }
            }
            !holders.is_empty()
        });
    }
}

/// The advisory locks of a database.
#[derive(Default)]
pub struct AdvisoryLocks {
    table: Mutex<Table>,
    released: Condvar,
}

/// PostgreSQL's `deadlock_timeout` default: how long a waiter waits before it looks for a
/// deadlock.
const DEADLOCK_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a waiter sleeps between checks of its statement's timeout and cancel flag.
const STEP: Duration = Duration::from_millis(10);

impl AdvisoryLocks {
    /// Takes `key` in `mode` for `who`, held for `scope`. Without `wait` (the `pg_try_…`
    /// forms) answers whether it could take it at once; with it, waits until it can, calling
    /// `wait` between steps (it fails when the statement times out or is canceled), and fails
    /// with `40P01` if waiting would never end.
    pub fn lock(
        &self,
        who: Holder,
        key: LockKey,
        mode: Mode,
        scope: Scope,
        wait: Option<&dyn Fn() -> Result<()>>,
    ) -> Result<bool> {
        let started = Instant::now();
        let mut checked_deadlock = false;
        let mut table = self.table.lock();
        loop {
            if table.blockers(who, key, mode).is_empty() {
                table.waiting.remove(&who);
                let held = table.locks.entry(key).or_default().entry(who).or_default();
                *held.slot(mode, scope) += 1;
                return Ok(true);
            }
            let Some(check) = wait else { return Ok(false) };
            table.waiting.insert(who, (key, mode));
            if !checked_deadlock && started.elapsed() >= DEADLOCK_TIMEOUT {
                checked_deadlock = true;
                if let Some(blocker) = table.deadlock(who) {
                    table.waiting.remove(&who);
                    let detail = format!(
                        "Process {} waits for {} on {}; blocked by process {}.",
                        who.pid,
                        mode.name(),
                        key.describe(),
                        blocker.pid
                    );
                    return Err(Error::Deadlock { detail });
                }
            }
            self.released.wait_for(&mut table, STEP);
            let checked = parking_lot::MutexGuard::unlocked(&mut table, check);
            if let Err(e) = checked {
                table.waiting.remove(&who);
                return Err(e);
            }
        }
    }

    /// `pg_advisory_unlock`: releases one session-level hold of `key` in `mode`; false if
    /// `who` had none (transaction-level holds cannot be released early).
    pub fn unlock(&self, who: Holder, key: LockKey, mode: Mode) -> bool {
        self.unlock_scoped(who, key, mode, Scope::Session)
    }

    /// Releases one hold of `key` in `mode` and `scope` (a transaction-level one when a
    /// rollback to a savepoint undoes its taking); false if `who` had none.
    pub fn unlock_scoped(&self, who: Holder, key: LockKey, mode: Mode, scope: Scope) -> bool {
        let mut table = self.table.lock();
        let Some(holders) = table.locks.get_mut(&key) else { return false };
        let Some(held) = holders.get_mut(&who) else { return false };
        let slot = held.slot(mode, scope);
        if *slot == 0 {
            return false;
        }
        *slot -= 1;
        if held.is_empty() {
            holders.remove(&who);
            if holders.is_empty() {
                table.locks.remove(&key);
            }
        }
        drop(table);
        self.released.notify_all();
        true
    }

    /// Releases every hold of `who` in `scope` (`pg_advisory_unlock_all` for the session
    /// scope; the end of a transaction for the transaction scope).
    pub fn release_all(&self, who: Holder, scope: Scope) {
        self.table.lock().release(who, |held| {
            held.counts[0][scope as usize] = 0;
            held.counts[1][scope as usize] = 0;
        });
        self.released.notify_all();
    }

    /// The end of a session: everything it holds.
    pub fn release_session(&self, who: Holder) {
        let mut table = self.table.lock();
        table.release(who, |held| *held = Held::default());
        table.waiting.remove(&who);
        drop(table);
        self.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(id: u64) -> Holder {
        Holder { id, pid: id as i32 }
    }

    #[test]
    fn exclusive_conflicts_with_others_but_not_with_its_holder() {
        let locks = AdvisoryLocks::default();
        let k = LockKey::Int8(7);
        assert!(locks.lock(who(1), k, Mode::Exclusive, Scope::Session, None).unwrap());
        assert!(locks.lock(who(1), k, Mode::Exclusive, Scope::Session, None).unwrap());
        assert!(locks.lock(who(1), k, Mode::Shared, Scope::Transaction, None).unwrap());
        assert!(!locks.lock(who(2), k, Mode::Shared, Scope::Session, None).unwrap());
        // The other key space is another lock.
        assert!(locks
            .lock(who(2), LockKey::Int4Pair(0, 7), Mode::Exclusive, Scope::Session, None)
            .unwrap());
        // Two session holds: two unlocks; the transaction's shared hold stays.
        assert!(locks.unlock(who(1), k, Mode::Exclusive));
        assert!(locks.unlock(who(1), k, Mode::Exclusive));
        assert!(!locks.unlock(who(1), k, Mode::Exclusive));
        assert!(!locks.lock(who(2), k, Mode::Exclusive, Scope::Session, None).unwrap());
        assert!(locks.lock(who(2), k, Mode::Shared, Scope::Session, None).unwrap());
        locks.release_all(who(1), Scope::Transaction);
        locks.release_all(who(2), Scope::Session);
        assert!(locks.table.lock().locks.is_empty());
    }

    #[test]
    fn a_waiter_gets_the_lock_when_it_is_released() {
        let locks = std::sync::Arc::new(AdvisoryLocks::default());
        let k = LockKey::Int8(1);
        assert!(locks.lock(who(1), k, Mode::Exclusive, Scope::Session, None).unwrap());
        let l = locks.clone();
        let waiter = std::thread::spawn(move || {
            l.lock(who(2), k, Mode::Exclusive, Scope::Session, Some(&|| Ok(()))).unwrap()
        });
        while !locks.table.lock().waiting.contains_key(&who(2)) {
            std::thread::yield_now();
        }
        locks.release_session(who(1));
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_wait_ends_when_its_check_fails() {
        let locks = AdvisoryLocks::default();
        let k = LockKey::Int8(1);
        locks.lock(who(1), k, Mode::Exclusive, Scope::Session, None).unwrap();
        let canceled = || Err(Error::QueryCanceled);
        let r = locks.lock(who(2), k, Mode::Shared, Scope::Session, Some(&canceled));
        assert!(matches!(r, Err(Error::QueryCanceled)));
        assert!(locks.table.lock().waiting.is_empty());
    }

    #[test]
    fn a_cycle_of_waits_is_a_deadlock() {
        let mut table = Table::default();
        let (a, b) = (LockKey::Int8(1), LockKey::Int8(2));
        table.locks.entry(a).or_default().entry(who(1)).or_default().counts[0][0] = 1;
        table.locks.entry(b).or_default().entry(who(2)).or_default().counts[0][0] = 1;
        table.waiting.insert(who(1), (b, Mode::Shared));
        assert_eq!(table.deadlock(who(1)), None);
        table.waiting.insert(who(2), (a, Mode::Exclusive));
        assert_eq!(table.deadlock(who(1)), Some(who(2)));
        assert_eq!(table.deadlock(who(2)), Some(who(1)));
    }
}
