//! The commit phases, observed through the public API.

use std::sync::Arc;
use txn::{Engine, Error, TableId};
use wal::Ssn;

const T: TableId = TableId(1);

fn setup() -> (Engine, Arc<wal::Log>) {
    let log = Arc::new(wal::Log::new(2));
    let engine = Engine::new(log.clone());
    engine.create_table(T, vec![]);
    (engine, log)
}

#[test]
fn writer_ssn_exceeds_everything_read_and_read_only_ssn_is_base() {
    let (engine, log) = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"a".to_vec(), b"1".to_vec()).unwrap();
    let a = t.commit().unwrap();
    assert!(!a.read_only);
    // Buffer 1 is behind; the base still pushes the SSN above a's (I1).
    let mut t = engine.begin(1);
    assert!(t.get(T, b"a").unwrap().is_some());
    t.insert(T, b"b".to_vec(), b"2".to_vec()).unwrap();
    let b = t.commit().unwrap();
    assert!(b.ssn > a.ssn);
    assert_eq!(log.buffer_ssn(1), b.ssn);
    // Read-only: ssn = max wssn read, nothing reserved (no SSN taken from the buffer).
    let before = log.buffer_ssn(0);
    let mut t = engine.begin(0);
    t.get(T, b"a").unwrap();
    assert!(!t.has_writes());
    let r = t.commit().unwrap();
    assert_eq!(r, txn::CommitInfo { ssn: a.ssn, read_only: true, ticket: None });
    assert_eq!(log.buffer_ssn(0), before);
    // Lock-only writes log nothing either.
    let mut t = engine.begin(0);
    t.get_for_update(T, b"b").unwrap();
    assert!(!t.has_writes());
    assert_eq!(t.commit().unwrap(), txn::CommitInfo { ssn: b.ssn, read_only: true, ticket: None });
}

#[test]
fn insert_placeholder_conflict_leaves_no_trace() {
    let (engine, _) = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(0);
    t1.insert(T, b"k".to_vec(), b"1".to_vec()).unwrap();
    t2.insert(T, b"k".to_vec(), b"2".to_vec()).unwrap();
    t2.insert(T, b"l".to_vec(), b"2".to_vec()).unwrap();
    t1.commit().unwrap();
    assert!(t2.commit().unwrap_err().is_conflict());
    let mut t = engine.begin(0);
    assert_eq!(t.get(T, b"k").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(t.get(T, b"l").unwrap(), None);
    // The abandoned placeholder does not block a later insert.
    t.insert(T, b"l".to_vec(), b"3".to_vec()).unwrap();
    t.commit().unwrap();
}

#[test]
fn for_update_conflicts_with_a_concurrent_writer() {
    let (engine, _) = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"k".to_vec(), b"1".to_vec()).unwrap();
    t.commit().unwrap();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(0);
    t1.get_for_update(T, b"k").unwrap();
    t2.update(T, b"k", b"2".to_vec()).unwrap();
    t2.commit().unwrap();
    assert!(t1.commit().unwrap_err().is_conflict());
}

#[test]
fn own_writes_are_visible_and_abort_discards_them() {
    let (engine, _) = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"k".to_vec(), b"1".to_vec()).unwrap();
    t.update(T, b"k", b"2".to_vec()).unwrap();
    assert_eq!(t.get(T, b"k").unwrap().as_deref(), Some(&b"2"[..]));
    t.delete(T, b"k").unwrap();
    assert_eq!(t.get(T, b"k").unwrap(), None);
    assert!(!t.has_writes(), "insert then delete cancels out");
    t.insert(T, b"k".to_vec(), b"3".to_vec()).unwrap();
    drop(t);
    let mut t = engine.begin(0);
    assert_eq!(t.get(T, b"k").unwrap(), None);
}

#[test]
fn ddl_fails_transactions_that_touched_the_table() {
    let (engine, _) = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"k".to_vec(), b"1".to_vec()).unwrap();
    t.commit().unwrap();
    let mut t = engine.begin(0);
    t.get(T, b"k").unwrap();
    engine.truncate(T);
    assert!(t.commit().unwrap_err().is_conflict());
    assert_eq!(engine.row_count(T), 0);
    let mut t = engine.begin(0);
    t.get(T, b"k").unwrap();
    engine.drop_table(T);
    assert_eq!(t.commit(), Err(Error::TableDropped(T)));
    assert_eq!(engine.begin(0).get(T, b"k"), Err(Error::TableDropped(T)));
    engine.create_table(T, vec![]);
    let a = engine.next_row_id(T);
    assert!(engine.next_row_id(T) > a);
    assert!(Ssn::ZERO < Ssn(1));
}

/// A scan callback may run other transactions on the same table, even ones that change the
/// index being scanned (the index holds no lock while the callback runs). Whatever the scan
/// reports, commit keeps it serializable: a row inserted behind the scan's back either was
/// reported, or fails the scanner's validation.
#[test]
fn scan_callback_may_commit_into_the_scanned_table() {
    for (at, key) in [(0u8, 101u8), (0, 5), (7, 3), (3, 201)] {
        let (engine, _) = setup();
        let mut t = engine.begin(0);
        for i in (0u8..20).map(|i| i * 10) {
            t.insert(T, vec![i], vec![i]).unwrap();
        }
        t.commit().unwrap();

        let mut outer = engine.begin(0);
        let mut seen = Vec::new();
        let mut n = 0;
        outer
            .scan(
                T,
                None,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                false,
                &mut |k, _| {
                    if n == at {
                        let mut inner = engine.begin(1);
                        inner.insert(T, vec![key], vec![key]).unwrap();
                        inner.commit().unwrap();
                    }
                    n += 1;
                    seen.push(k[0]);
                    true
                },
            )
            .unwrap();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        outer.insert(T, vec![255], vec![0]).unwrap();
        let result = outer.commit();
        if seen.contains(&key) {
            assert!(result.is_ok(), "saw {key}, so the scan is consistent: {result:?}");
        } else {
            assert!(matches!(result, Err(Error::Conflict { .. })), "missed {key}: {result:?}");
        }
    }
}

/// Every key of `T`, by a scan in a transaction of its own (returned, not committed: the
/// caller commits it when its scan must validate).
fn keys(engine: &Engine) -> (txn::Transaction, Vec<Vec<u8>>) {
    let mut t = engine.begin(0);
    let mut keys = Vec::new();
    let all = std::ops::Bound::Unbounded;
    t.scan(T, None, all, all, false, &mut |k, _| {
        keys.push(k.to_vec());
        true
    })
    .unwrap();
    (t, keys)
}

#[test]
fn fresh_inserts_skip_the_uniqueness_read_but_keep_its_guarantees() {
    let (engine, _) = setup();
    let fresh = || engine.next_row_id(T).to_be_bytes().to_vec();
    let (a, b) = (fresh(), fresh());
    assert_ne!(a, b, "row ids are never handed out twice");

    // A scan that started before the insert sees it as a phantom at its own commit.
    let (mut reader, seen) = keys(&engine);
    assert!(seen.is_empty());
    let mut t = engine.begin(1);
    t.insert_fresh(T, a.clone(), b"1".to_vec()).unwrap();
    t.insert_fresh(T, b.clone(), b"2".to_vec()).unwrap();
    // Its own rows are visible to it, by key and in scans.
    assert_eq!(t.get(T, &a).unwrap().as_deref(), Some(&b"1"[..]));
    let info = t.commit().unwrap();
    // Never blind: it skipped the read an insert records, not what that read stands for.
    assert!(!info.ticket.expect("a writer has a ticket").blind);
    reader.insert(T, b"x".to_vec(), b"x".to_vec()).unwrap();
    assert!(reader.commit().unwrap_err().is_conflict(), "the phantom went unnoticed");
    assert_eq!(keys(&engine).1, vec![a.clone(), b.clone()]);

    // A key that was not fresh after all is still caught at commit, leaving no trace.
    let mut t = engine.begin(0);
    let c = fresh();
    t.insert_fresh(T, c.clone(), b"3".to_vec()).unwrap();
    t.insert_fresh(T, a.clone(), b"4".to_vec()).unwrap();
    assert!(t.commit().unwrap_err().is_conflict());
    let mut t = engine.begin(0);
    assert_eq!(t.get(T, &a).unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(t.get(T, &c).unwrap(), None);

    // Deleting a fresh row in its own transaction leaves nothing to commit for it.
    let mut t = engine.begin(0);
    let d = fresh();
    t.insert_fresh(T, d.clone(), b"5".to_vec()).unwrap();
    t.delete(T, &d).unwrap();
    t.commit().unwrap();
    assert_eq!(keys(&engine).1, vec![a, b]);
}

#[test]
fn delete_all_takes_every_visible_row_and_validates_like_reads() {
    let load = |engine: &Engine| {
        let mut t = engine.begin(0);
        for k in [b"a", b"b", b"c"] {
            t.insert(T, k.to_vec(), k.to_vec()).unwrap();
        }
        t.commit().unwrap();
    };
    let (engine, _) = setup();
    load(&engine);
    // Own writes first: an update, a delete and an insert of this transaction.
    let mut t = engine.begin(0);
    t.update(T, b"b", b"B".to_vec()).unwrap();
    t.delete(T, b"c").unwrap();
    t.insert(T, b"d".to_vec(), b"d".to_vec()).unwrap();
    let rows = t.delete_all(T).unwrap();
    let rows: Vec<Vec<u8>> = rows.iter().map(|r| r.to_vec()).collect();
    assert_eq!(rows, [b"a".to_vec(), b"B".to_vec(), b"d".to_vec()], "in key order");
    for k in [b"a", b"b", b"c", b"d"] {
        assert_eq!(t.get(T, k).unwrap(), None, "every row is gone for the transaction");
    }
    // Re-inserting a deleted key and a new one needs no committed read.
    t.insert(T, b"a".to_vec(), b"A".to_vec()).unwrap();
    t.insert(T, b"e".to_vec(), b"e".to_vec()).unwrap();
    t.commit().unwrap();
    assert_eq!(keys(&engine).1, vec![b"a".to_vec(), b"e".to_vec()]);
    let mut r = engine.begin(0);
    assert_eq!(r.get(T, b"a").unwrap().as_deref(), Some(&b"A"[..]));

    // What the scan saw must hold at commit: a concurrent update, a concurrent insert (a
    // phantom), or a concurrent insert of the very key we insert after it all fail the commit.
    type Concurrent = fn(&mut txn::Transaction);
    let cases: [(Concurrent, &[&[u8]]); 3] = [
        (|c| c.update(T, b"b", b"x".to_vec()).unwrap(), &[b"a", b"b", b"c"]),
        (|c| c.insert(T, b"bb".to_vec(), b"x".to_vec()).unwrap(), &[b"a", b"b", b"bb", b"c"]),
        (|c| c.insert(T, b"z".to_vec(), b"x".to_vec()).unwrap(), &[b"a", b"b", b"c", b"z"]),
    ];
    for (concurrent, after) in cases {
        let (engine, _) = setup();
        load(&engine);
        let mut t = engine.begin(0);
        assert_eq!(t.delete_all(T).unwrap().len(), 3);
        t.insert(T, b"z".to_vec(), b"z".to_vec()).unwrap();
        let mut c = engine.begin(1);
        concurrent(&mut c);
        c.commit().unwrap();
        assert!(t.commit().unwrap_err().is_conflict());
        // No trace: the rows loaded, and the concurrent write.
        assert_eq!(keys(&engine).1, after.iter().map(|k| k.to_vec()).collect::<Vec<_>>());
    }
}

/// `rollback_to` forgets the writes since the savepoint and keeps those before it; the reads
/// made after the savepoint still validate at commit (a change to a row read there is a
/// conflict).
#[test]
fn rollback_to_a_savepoint_forgets_later_writes_and_keeps_later_reads() {
    let (engine, _) = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"a".to_vec(), b"1".to_vec()).unwrap();
    t.insert(T, b"r".to_vec(), b"0".to_vec()).unwrap();
    t.commit().unwrap();

    let mut t = engine.begin(0);
    t.update(T, b"a", b"2".to_vec()).unwrap();
    let sp = t.savepoint();
    t.insert(T, b"b".to_vec(), b"3".to_vec()).unwrap();
    t.update(T, b"a", b"4".to_vec()).unwrap();
    t.delete(T, b"r").unwrap();
    t.rollback_to(&sp);
    assert_eq!(t.get(T, b"a").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(t.get(T, b"b").unwrap(), None);
    assert!(t.get(T, b"r").unwrap().is_some());
    // The savepoint stays usable: again, and after a write since.
    t.insert(T, b"c".to_vec(), b"5".to_vec()).unwrap();
    t.rollback_to(&sp);
    t.commit().unwrap();
    let mut t = engine.begin(0);
    assert_eq!(t.get(T, b"a").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(t.get(T, b"b").unwrap(), None);
    assert_eq!(t.get(T, b"c").unwrap(), None);
    assert!(t.get(T, b"r").unwrap().is_some());
    t.commit().unwrap();

    // A read made after the savepoint, then rolled back to, still validates.
    let mut t = engine.begin(0);
    let sp = t.savepoint();
    assert!(t.get(T, b"r").unwrap().is_some());
    t.rollback_to(&sp);
    t.insert(T, b"d".to_vec(), b"6".to_vec()).unwrap();
    let mut other = engine.begin(1);
    other.update(T, b"r", b"9".to_vec()).unwrap();
    other.commit().unwrap();
    assert!(t.commit().unwrap_err().is_conflict());
}
