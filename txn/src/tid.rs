//! The TID word of a record: `LOCK | ABSENT | UNLINKED | wssn`.
//!
//! ```text
//!  63     62       61        60 ............ 0
//! [LOCK][ABSENT][UNLINKED][ wssn (61 bits)  ]
//! ```
//!
//! Transitions (checked by [`Tid::can_transition_to`] in debug builds):
//!
//! ```text
//! placeholder  LOCK|ABSENT|0 ──install──▶ wssn            (insert committed)
//!                           └──abort────▶ ABSENT|UNLINKED  (insert failed)
//! live         wssn ──lock──▶ LOCK|wssn ──install──▶ ssn            (update, ssn > wssn)
//!                                       ├─install──▶ ssn|ABSENT|UNLINKED  (delete)
//!                                       └─unlock───▶ wssn           (abort, lock-only)
//! ```

use crate::sync::{AtomicU64, Ordering};
use wal::Ssn;

/// Held by the one committing transaction that may change the record's row and TID. Readers
/// never take it; they wait briefly while it is set.
pub(crate) const LOCK: u64 = 1 << 63;
/// The record has no row: an insert placeholder (with `LOCK`) or a deleted record (with
/// `UNLINKED`). Readers treat it as a miss.
pub(crate) const ABSENT: u64 = 1 << 62;
/// The record has left (or is leaving) every index. Once set, never unset: a later insert of the
/// key creates a new record, so any transaction holding this one fails validation.
pub(crate) const UNLINKED: u64 = 1 << 61;
/// The bits holding the wssn.
pub(crate) const WSSN_MASK: u64 = UNLINKED - 1;

/// A snapshot of a TID word.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Tid(pub(crate) u64);

impl Tid {
    /// A committed, live version written at `ssn`.
    pub(crate) fn live(ssn: Ssn) -> Tid {
        debug_assert!(ssn.0 <= WSSN_MASK, "ssn {ssn} overflows the TID word");
        Tid(ssn.0)
    }

    /// A deleted record, deleted at `ssn`.
    pub(crate) fn deleted(ssn: Ssn) -> Tid {
        Tid(Tid::live(ssn).0 | ABSENT | UNLINKED)
    }

    /// A fresh insert placeholder.
    pub(crate) const PLACEHOLDER: Tid = Tid(LOCK | ABSENT);
    /// A placeholder whose insert failed.
    pub(crate) const ABANDONED: Tid = Tid(ABSENT | UNLINKED);

    pub(crate) fn is_locked(self) -> bool {
        self.0 & LOCK != 0
    }
    pub(crate) fn is_absent(self) -> bool {
        self.0 & ABSENT != 0
    }
    pub(crate) fn is_unlinked(self) -> bool {
        self.0 & UNLINKED != 0
    }
    /// The SSN of the last writer.
    pub(crate) fn wssn(self) -> u64 {
        self.0 & WSSN_MASK
    }
    pub(crate) fn with_lock(self) -> Tid {
        Tid(self.0 | LOCK)
    }
    pub(crate) fn without_lock(self) -> Tid {
        Tid(self.0 & !LOCK)
    }

    /// The state machine in the module doc.
    pub(crate) fn can_transition_to(self, next: Tid) -> bool {
        if self.is_unlinked() {
            // Terminal, apart from nothing.
            return false;
        }
        if !self.is_locked() {
            // Only locking, keeping everything else.
            return next == self.with_lock();
        }
        if next.is_locked() {
            return false;
        }
        if self == Tid::PLACEHOLDER {
            return next == Tid::ABANDONED || (!next.is_absent() && !next.is_unlinked());
        }
        next == self.without_lock()
            || (!next.is_absent() && !next.is_unlinked() && next.wssn() > self.wssn())
            || (next.is_absent() && next.is_unlinked() && next.wssn() > self.wssn())
    }
}

/// Why [`TidWord::lock`] failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LockError {
    /// Another transaction held the lock for longer than the bounded wait.
    Busy,
    /// The record was deleted (or its insert failed).
    Unlinked,
}

/// Bounded waiting: a short spin, then yielding, then giving up (the caller returns Conflict).
pub(crate) struct Backoff(u32);

/// Iterations of [`Backoff::snooze`] that spin before yielding.
const SPIN_LIMIT: u32 = 64;
/// Iterations of [`Backoff::snooze`] before giving up.
const YIELD_LIMIT: u32 = 2_000;

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff(0)
    }

    /// Waits a little; false once the bound is reached.
    pub(crate) fn snooze(&mut self) -> bool {
        self.0 += 1;
        if self.0 <= SPIN_LIMIT {
            std::hint::spin_loop();
            true
        } else if self.0 <= YIELD_LIMIT {
            std::thread::yield_now();
            true
        } else {
            false
        }
    }
}

/// The atomic TID word of a record.
#[derive(Debug)]
pub(crate) struct TidWord(AtomicU64);

impl TidWord {
    pub(crate) fn new(tid: Tid) -> TidWord {
        TidWord(AtomicU64::new(tid.0))
    }

    /// Pairs with the `Release` in [`TidWord::store_unlocked`]: a reader that sees the new TID
    /// sees the row published before it.
    pub(crate) fn load(&self) -> Tid {
        Tid(self.0.load(Ordering::Acquire))
    }

    /// Sets `LOCK` on a live record, waiting (bounded) while someone else holds it. Returns the
    /// TID before locking.
    pub(crate) fn lock(&self) -> Result<Tid, LockError> {
        let mut backoff = Backoff::new();
        loop {
            let cur = Tid(self.0.load(Ordering::Relaxed));
            if cur.is_unlinked() {
                return Err(LockError::Unlinked);
            }
            if cur.is_locked() {
                if !backoff.snooze() {
                    return Err(LockError::Busy);
                }
                continue;
            }
            // Acquire pairs with the Release of the previous holder's store_unlocked, so we see
            // the row it installed.
            if self
                .0
                .compare_exchange_weak(
                    cur.0,
                    cur.with_lock().0,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return Ok(cur);
            }
        }
    }

    /// Replaces a locked TID by `next` (install, delete, abort or lock-only release). The caller
    /// holds the lock.
    pub(crate) fn store_unlocked(&self, next: Tid) {
        let cur = Tid(self.0.load(Ordering::Relaxed));
        debug_assert!(cur.can_transition_to(next), "bad TID transition {cur:?} -> {next:?}");
        // Release pairs with the Acquire in load() and lock(): the row stored before is visible
        // to whoever sees this TID.
        self.0.store(next.0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_disjoint() {
        assert_eq!(LOCK & ABSENT, 0);
        assert_eq!(LOCK & UNLINKED, 0);
        assert_eq!(ABSENT & UNLINKED, 0);
        assert_eq!(WSSN_MASK & (LOCK | ABSENT | UNLINKED), 0);
        assert_eq!(Tid::deleted(Ssn(5)).wssn(), 5);
    }

    #[test]
    fn transitions_follow_the_state_machine() {
        let live = Tid::live(Ssn(3));
        assert!(live.can_transition_to(live.with_lock()));
        assert!(!live.can_transition_to(Tid::live(Ssn(4))), "must lock first");
        let locked = live.with_lock();
        assert!(locked.can_transition_to(live), "abort restores");
        assert!(locked.can_transition_to(Tid::live(Ssn(4))), "install");
        assert!(!locked.can_transition_to(Tid::live(Ssn(3)).with_lock()));
        assert!(!locked.can_transition_to(Tid::live(Ssn(2))), "wssn only grows");
        assert!(locked.can_transition_to(Tid::deleted(Ssn(4))), "delete");
        assert!(Tid::PLACEHOLDER.can_transition_to(Tid::live(Ssn(1))));
        assert!(Tid::PLACEHOLDER.can_transition_to(Tid::ABANDONED));
        assert!(!Tid::deleted(Ssn(4)).can_transition_to(Tid::live(Ssn(9))), "UNLINKED is final");
        assert!(!Tid::ABANDONED.can_transition_to(Tid::ABANDONED.with_lock()));
    }

    #[test]
    fn lock_unlock_and_unlinked() {
        let w = TidWord::new(Tid::live(Ssn(7)));
        assert_eq!(w.lock(), Ok(Tid::live(Ssn(7))));
        assert!(w.load().is_locked());
        assert_eq!(w.lock(), Err(LockError::Busy), "a second locker gives up after the bound");
        w.store_unlocked(Tid::live(Ssn(9)));
        assert_eq!(w.load(), Tid::live(Ssn(9)));
        w.lock().unwrap();
        w.store_unlocked(Tid::deleted(Ssn(10)));
        assert_eq!(w.lock(), Err(LockError::Unlinked));
    }
}
