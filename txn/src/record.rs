//! Records: a TID word, the primary key, and an immutable row published by pointer swap.
//!
//! The row pointer sits under a one-byte lock of its own (held for an `Arc` clone or swap):
//! a reader clones the `Arc` and checks the TID around it; a writer, already holding the TID
//! lock, swaps it. `arc_swap` did the same without a lock, but its store walks every thread's
//! debt list, which grows with the number of threads that ever read a row (`Debt::pay_all` was
//! 7 % of an in-process logging run and a visible share of every update over the wire).

use crate::index::IKey;
use crate::tid::{Backoff, Tid, TidWord};
use crate::Row;
use parking_lot::Mutex;
use std::sync::Arc;

/// One row slot of a table. Every index entry of the row (primary and secondary) points at the
/// same `Arc<Record>`.
///
/// The row pointer changes only while `LOCK` is held, and before the TID that publishes it is
/// stored, so `tid, row, tid` with equal TIDs is a consistent read ([`Record::read`]).
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) tid: TidWord,
    /// The primary key. Never changes: an update that changes the primary key is a delete and an
    /// insert. Inline when short (see [`IKey`]): hash lookups compare it.
    pub(crate) key: IKey,
    row: Mutex<Option<Row>>,
}

impl Record {
    /// A locked `ABSENT` insert placeholder, holding the row its insert will publish (no reader
    /// looks at the row of an `ABSENT` record, so the install only has to store the TID).
    pub(crate) fn placeholder(key: &[u8], row: Option<Row>) -> Arc<Record> {
        Arc::new(Record {
            tid: TidWord::new(Tid::PLACEHOLDER),
            key: IKey::new(key),
            row: Mutex::new(row),
        })
    }

    /// A record written by recovery's replay: live at `ssn` with `row`, or (row `None`) a
    /// tombstone `ssn|ABSENT|UNLINKED` that keeps the delete's SSN in the primary index until
    /// replay ends (see [`crate::Engine::replay_install`]).
    pub(crate) fn replayed(key: &[u8], row: Option<Row>, ssn: wal::Ssn) -> Arc<Record> {
        let tid = if row.is_some() { Tid::live(ssn) } else { Tid::deleted(ssn) };
        Arc::new(Record { tid: TidWord::new(tid), key: IKey::new(key), row: Mutex::new(row) })
    }

    /// A consistent `(tid, row)` snapshot, waiting (bounded) while the record is locked. The row
    /// is `None` iff the TID is `ABSENT`. `Err(())` if the record stayed locked.
    pub(crate) fn read(&self) -> Result<(Tid, Option<Row>), ()> {
        let mut backoff = Backoff::new();
        loop {
            let t1 = self.tid.load();
            if !t1.is_locked() {
                if t1.is_absent() {
                    return Ok((t1, None));
                }
                let row = self.row.lock().clone();
                if self.tid.load() == t1 {
                    debug_assert!(row.is_some(), "a live record has a row");
                    return Ok((t1, row));
                }
            }
            if !backoff.snooze() {
                return Err(());
            }
        }
    }

    /// The current row. Only meaningful while the caller holds `LOCK`.
    pub(crate) fn row_locked(&self) -> Option<Row> {
        debug_assert!(self.tid.load().is_locked());
        self.row.lock().clone()
    }

    /// Publishes a row. The caller holds `LOCK` and stores the TID afterwards.
    pub(crate) fn set_row_locked(&self, row: Option<Row>) {
        debug_assert!(self.tid.load().is_locked());
        let old = std::mem::replace(&mut *self.row.lock(), row);
        drop(old); // outside the row lock: the last reference frees the row
    }
}
