//! Deferred updates (`Transaction::update_deferred`): the new row is computed at commit from the
//! row current then, so concurrent increments of a hot row commute instead of conflicting, and
//! the result is still serializable: no lost update, reads in the same transaction see the
//! update, a row deleted or changed so that the update no longer applies fails the commit.

use std::ops::Bound;
use std::sync::Arc;
use txn::{Engine, Error, RowFn, TableId, Transaction};

const T: TableId = TableId(1);

/// A table `T` of (key → decimal text) holding x=10, y=20.
fn setup() -> Engine {
    let engine = Engine::new(Arc::new(wal::Log::new(2)));
    engine.create_table(T, vec![]);
    let mut t = engine.begin(0);
    t.insert(T, b"x".to_vec(), b"10".to_vec()).unwrap();
    t.insert(T, b"y".to_vec(), b"20".to_vec()).unwrap();
    t.commit().unwrap();
    engine
}

fn value(row: &[u8]) -> i64 {
    std::str::from_utf8(row).unwrap().parse().unwrap()
}

type Update = RowFn<String>;

/// `SET v = v + n`.
fn add(n: i64) -> Update {
    Arc::new(move |row: &[u8]| Ok((value(row) + n).to_string().into_bytes()))
}

/// `SET v = v + n`, failing (like a CHECK) when the result would exceed `max`.
fn add_at_most(n: i64, max: i64) -> Update {
    Arc::new(move |row: &[u8]| {
        let v = value(row) + n;
        if v > max {
            Err(format!("{v} exceeds {max}"))
        } else {
            Ok(v.to_string().into_bytes())
        }
    })
}

fn defer(t: &mut Transaction, key: &str, f: Update) -> bool {
    t.update_deferred(T, key.as_bytes(), f).unwrap().unwrap()
}

fn get(t: &mut Transaction, key: &str) -> Option<i64> {
    t.get(T, key.as_bytes()).unwrap().map(|r| value(&r))
}

fn committed(engine: &Engine, key: &str) -> Option<i64> {
    let mut t = engine.begin(0);
    let v = get(&mut t, key);
    t.commit().unwrap();
    v
}

fn assert_conflict(r: Result<txn::CommitInfo, Error>) {
    match r {
        Err(Error::Conflict { .. }) => {}
        other => panic!("expected a serialization conflict, got {other:?}"),
    }
}

#[test]
fn concurrent_increments_commute() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert!(defer(&mut t1, "x", add(1)));
    assert!(defer(&mut t2, "x", add(5)));
    let info = t2.commit().unwrap();
    assert!(!info.ticket.unwrap().blind, "a deferred update reads the row it replaces");
    let info1 = t1.commit().unwrap();
    assert!(info1.ssn > info.ssn, "the later committer's SSN exceeds the version it read");
    assert_eq!(committed(&engine, "x"), Some(16), "no update lost");
}

#[test]
fn an_ordinary_update_committed_in_between_is_built_upon() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    assert!(defer(&mut t1, "x", add(1)));
    let mut t2 = engine.begin(1);
    assert_eq!(get(&mut t2, "x"), Some(10));
    t2.update(T, b"x", b"100".to_vec()).unwrap();
    t2.commit().unwrap();
    t1.commit().unwrap();
    assert_eq!(committed(&engine, "x"), Some(101));
}

#[test]
fn a_later_read_materializes_and_then_validates_like_any_read() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    assert!(defer(&mut t1, "x", add(1)));
    assert_eq!(get(&mut t1, "x"), Some(11), "reads see their own deferred update");
    let mut t2 = engine.begin(1);
    assert!(defer(&mut t2, "x", add(5)));
    t2.commit().unwrap();
    assert_conflict(t1.commit());
    assert_eq!(committed(&engine, "x"), Some(15));
}

#[test]
fn scans_see_deferred_updates() {
    let engine = setup();
    let mut t = engine.begin(0);
    assert!(defer(&mut t, "y", add(2)));
    let mut rows = Vec::new();
    t.scan(T, None, Bound::Unbounded, Bound::Unbounded, false, &mut |k, r| {
        rows.push((String::from_utf8(k.to_vec()).unwrap(), value(r)));
        true
    })
    .unwrap();
    assert_eq!(rows, [("x".to_string(), 10), ("y".to_string(), 22)]);
    t.commit().unwrap();
    assert_eq!(committed(&engine, "y"), Some(22));
}

#[test]
fn deferred_updates_of_one_key_compose_and_a_later_update_or_delete_builds_on_them() {
    let engine = setup();
    let mut t = engine.begin(0);
    assert!(defer(&mut t, "x", add(1)));
    assert!(defer(&mut t, "x", add(2)));
    t.commit().unwrap();
    assert_eq!(committed(&engine, "x"), Some(13));

    let mut t = engine.begin(0);
    assert!(defer(&mut t, "x", add(1)));
    t.update(T, b"x", b"7".to_vec()).unwrap();
    assert!(!defer(&mut t, "x", add(1)), "the row was read and written: the ordinary path");
    t.commit().unwrap();
    assert_eq!(committed(&engine, "x"), Some(7));

    let mut t = engine.begin(0);
    assert!(defer(&mut t, "y", add(1)));
    t.delete(T, b"y").unwrap();
    t.commit().unwrap();
    assert_eq!(committed(&engine, "y"), None);
}

#[test]
fn a_missing_row_is_not_deferred_and_nothing_is_recorded() {
    let engine = setup();
    let mut t = engine.begin(0);
    assert!(!defer(&mut t, "z", add(1)));
    assert!(!t.has_writes());
    t.commit().unwrap();
}

#[test]
fn a_row_deleted_before_commit_fails_the_commit() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    assert!(defer(&mut t1, "x", add(1)));
    let mut t2 = engine.begin(1);
    get(&mut t2, "x");
    t2.delete(T, b"x").unwrap();
    t2.commit().unwrap();
    assert_conflict(t1.commit());
    assert_eq!(committed(&engine, "x"), None);
}

#[test]
fn an_update_that_no_longer_applies_fails_now_or_at_commit() {
    let engine = setup();
    let mut t = engine.begin(0);
    let refused = t.update_deferred(T, b"x", add_at_most(5, 12)).unwrap();
    assert_eq!(refused, Err("15 exceeds 12".to_string()), "the statement's own error, now");
    assert!(!t.has_writes(), "nothing recorded");

    let mut t1 = engine.begin(0);
    assert!(defer(&mut t1, "x", add_at_most(1, 12)));
    let mut t2 = engine.begin(1);
    assert!(defer(&mut t2, "x", add(2)));
    t2.commit().unwrap();
    assert_conflict(t1.commit());
    assert_eq!(committed(&engine, "x"), Some(12));
}

/// Threads incrementing one row: every commit counts exactly once. (The statement or the
/// commit can still fail with a conflict when the row stays locked longer than they wait for
/// it, e.g. behind a preempted holder; the transaction is then retried.)
#[test]
fn many_threads_increment_one_row_and_lose_nothing() {
    let engine = setup();
    let (threads, each) = (4, 2000);
    std::thread::scope(|s| {
        for id in 0..threads {
            let engine = &engine;
            s.spawn(move || {
                for _ in 0..each {
                    loop {
                        let mut t = engine.begin(id);
                        match t.update_deferred(T, b"x", add(1)) {
                            Ok(applies) => assert!(applies.unwrap(), "x exists and adds"),
                            Err(Error::Conflict { .. }) => continue,
                            Err(e) => panic!("{e}"),
                        }
                        match t.commit() {
                            Ok(_) => break,
                            Err(Error::Conflict { .. }) => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    assert_eq!(committed(&engine, "x"), Some(10 + threads as i64 * each));
}

/// The statement reports that the row exists, so results shown before commit must wait for the
/// version it found to be durable: `read_ssn` covers it (it is not a read to validate).
#[test]
fn the_version_found_counts_for_read_ssn() {
    let engine = setup();
    let mut t = engine.begin(0);
    assert!(defer(&mut t, "x", add(1)));
    let written = t.commit().unwrap().ssn;
    let mut t = engine.begin(1);
    assert!(t.read_ssn() < written);
    assert!(defer(&mut t, "x", add(1)));
    assert_eq!(t.read_ssn(), written);
    t.commit().unwrap();
}

// Projected reads (`get_projected`): rows "a,b" of two numbers; the reader uses only `a`.

fn fields(row: &[u8]) -> (i64, i64) {
    let s = std::str::from_utf8(row).unwrap();
    let (a, b) = s.split_once(',').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

fn pair(a: i64, b: i64) -> Vec<u8> {
    format!("{a},{b}").into_bytes()
}

/// `SET a = a + da, b = b + db`.
fn add2(da: i64, db: i64) -> Update {
    Arc::new(move |row: &[u8]| {
        let (a, b) = fields(row);
        Ok(pair(a + da, b + db))
    })
}

/// Projects field `a`.
fn only_a() -> txn::Projection {
    Arc::new(|row: &[u8]| fields(row).0.to_string().into_bytes())
}

fn setup_pairs() -> Engine {
    let engine = Engine::new(Arc::new(wal::Log::new(2)));
    engine.create_table(T, vec![]);
    let mut t = engine.begin(0);
    t.insert(T, b"w".to_vec(), pair(1, 100)).unwrap();
    t.insert(T, b"v".to_vec(), pair(2, 200)).unwrap();
    t.commit().unwrap();
    engine
}

fn committed_pair(engine: &Engine, key: &str) -> (i64, i64) {
    let mut t = engine.begin(0);
    let row = t.get(T, key.as_bytes()).unwrap().unwrap();
    t.commit().unwrap();
    fields(&row)
}

fn read_a(t: &mut Transaction, key: &str, for_update: bool) -> (i64, i64) {
    fields(&t.get_projected(T, key.as_bytes(), for_update, only_a()).unwrap().unwrap())
}

/// TPC-C Payment: increment `b` (w_ytd), then read `a` (the address) of the same row. Another
/// payment increments `b` meanwhile: both commit, nothing lost.
#[test]
fn a_projected_read_after_a_deferred_update_ignores_other_columns() {
    let engine = setup_pairs();
    let mut t1 = engine.begin(0);
    assert!(defer(&mut t1, "w", add2(0, 1)));
    assert_eq!(read_a(&mut t1, "w", false), (1, 101), "the row with the update applied");
    let mut t2 = engine.begin(1);
    assert!(defer(&mut t2, "w", add2(0, 5)));
    t2.commit().unwrap();
    t1.commit().unwrap();
    assert_eq!(committed_pair(&engine, "w"), (1, 106));
}

/// TPC-C NewOrder against Payment: read `a` (d_next_o_id) FOR UPDATE and increment it, while
/// another transaction increments `b` (d_ytd): both commit.
#[test]
fn a_projected_read_for_update_ignores_other_columns() {
    let engine = setup_pairs();
    let mut t1 = engine.begin(0);
    assert_eq!(read_a(&mut t1, "w", true), (1, 100));
    assert!(defer(&mut t1, "w", add2(1, 0)), "the update takes over the FOR UPDATE lock");
    let mut t2 = engine.begin(1);
    assert!(defer(&mut t2, "w", add2(0, 5)));
    t2.commit().unwrap();
    t1.commit().unwrap();
    assert_eq!(committed_pair(&engine, "w"), (2, 105));
}

/// Two NewOrders: both read `a` and increment it. The second to commit read a value that
/// changed: it fails (no duplicate order id).
#[test]
fn a_projected_read_still_conflicts_on_the_columns_it_used() {
    let engine = setup_pairs();
    let mut t1 = engine.begin(0);
    assert_eq!(read_a(&mut t1, "w", true).0, 1);
    let mut t2 = engine.begin(1);
    assert_eq!(read_a(&mut t2, "w", true).0, 1);
    assert!(defer(&mut t2, "w", add2(1, 0)));
    t2.commit().unwrap();
    assert!(defer(&mut t1, "w", add2(1, 0)));
    assert_conflict(t1.commit());
    assert_eq!(committed_pair(&engine, "w"), (2, 100));
}

/// TPC-C NewOrder reading `w_tax` while Payments increment `w_ytd` of the same warehouse: a
/// projected read of a row the transaction does not write, whose TID changed, is locked at
/// commit and validated by value under that lock; it fails only if what it used changed.
#[test]
fn a_changed_projected_read_of_a_row_not_written_is_locked_and_compared_at_commit() {
    for (other_changes_a, commits) in [(false, true), (true, false)] {
        let engine = setup_pairs();
        let mut t1 = engine.begin(0);
        assert_eq!(read_a(&mut t1, "w", false), (1, 100));
        assert!(defer(&mut t1, "v", add2(0, 1)));
        let mut t2 = engine.begin(1);
        let change = if other_changes_a { add2(1, 0) } else { add2(0, 5) };
        assert!(defer(&mut t2, "w", change));
        t2.commit().unwrap();
        match t1.commit() {
            Ok(info) => {
                assert!(commits, "t1 read a, which t2 changed");
                assert!(info.ssn > engine_ssn_of(&engine, "w"), "t1 follows the version it read");
            }
            Err(e) => {
                assert!(!commits, "t2 changed only b: {e}");
                assert!(e.is_conflict());
            }
        }
        let expected_w = if other_changes_a { (2, 100) } else { (1, 105) };
        assert_eq!(committed_pair(&engine, "w"), expected_w, "the late lock changed nothing");
        assert_eq!(committed_pair(&engine, "v"), (2, if commits { 201 } else { 200 }));
    }
}

/// The SSN of the committed version of `key` (a read-only transaction's SSN is its base).
fn engine_ssn_of(engine: &Engine, key: &str) -> wal::Ssn {
    let mut t = engine.begin(0);
    t.get(T, key.as_bytes()).unwrap();
    t.commit().unwrap().ssn
}

/// After a projected read, a whole-row read of the same key is recorded as a whole-row read
/// (the projected entry is not reused for it).
#[test]
fn a_whole_row_read_after_a_projected_one_validates_the_whole_row() {
    let engine = setup_pairs();
    let mut t1 = engine.begin(0);
    assert_eq!(read_a(&mut t1, "w", true), (1, 100));
    assert_eq!(t1.get(T, b"w").unwrap().map(|r| fields(&r)), Some((1, 100)));
    let mut t2 = engine.begin(1);
    assert!(defer(&mut t2, "w", add2(0, 5)));
    t2.commit().unwrap();
    assert_conflict(t1.commit());
}

/// The function runs once at the statement; the commit reuses that result while the row is
/// unchanged, and runs it again on the row current at commit otherwise.
#[test]
fn the_statement_result_is_reused_when_the_row_did_not_change() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let engine = setup();
    let calls = Arc::new(AtomicUsize::new(0));
    let counting = |calls: &Arc<AtomicUsize>| -> Update {
        let calls = calls.clone();
        Arc::new(move |row: &[u8]| {
            calls.fetch_add(1, Ordering::Relaxed);
            Ok((value(row) + 1).to_string().into_bytes())
        })
    };
    let mut t = engine.begin(0);
    assert!(defer(&mut t, "x", counting(&calls)));
    t.commit().unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 1, "uncontended: evaluated once");
    assert_eq!(committed(&engine, "x"), Some(11));

    let mut t1 = engine.begin(0);
    assert!(defer(&mut t1, "x", counting(&calls)));
    let mut t2 = engine.begin(1);
    assert!(defer(&mut t2, "x", add(5)));
    t2.commit().unwrap();
    t1.commit().unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 3, "the row changed: evaluated again at commit");
    assert_eq!(committed(&engine, "x"), Some(17));
}

/// A row deleted by another transaction after this one deferred an update of it: a later read
/// of it in this transaction (which materializes the update, or applies it to a projected
/// read) fails with a serialization conflict instead of returning a row that is gone.
#[test]
fn reading_a_deferred_row_that_was_deleted_meanwhile_is_a_conflict() {
    for projected in [false, true] {
        let engine = setup_pairs();
        let mut t1 = engine.begin(0);
        assert!(defer(&mut t1, "w", add2(0, 1)));
        let mut t2 = engine.begin(1);
        assert!(t2.get(T, b"w").unwrap().is_some());
        t2.delete(T, b"w").unwrap();
        t2.commit().unwrap();
        let read = if projected {
            t1.get_projected(T, b"w", false, only_a()).map(|_| ())
        } else {
            t1.get(T, b"w").map(|_| ())
        };
        assert!(read.is_err_and(|e| e.is_conflict()), "projected read: {projected}");
    }
}

/// A projected read of a row this transaction does not write, deleted before the commit: the
/// late lock finds the record unlinked and the commit fails; nothing it wrote is installed.
#[test]
fn a_projected_read_of_a_row_deleted_before_commit_fails_the_commit() {
    let engine = setup_pairs();
    let mut t1 = engine.begin(0);
    assert_eq!(read_a(&mut t1, "w", false), (1, 100));
    assert!(defer(&mut t1, "v", add2(0, 1)));
    let mut t2 = engine.begin(1);
    assert!(t2.get(T, b"w").unwrap().is_some());
    t2.delete(T, b"w").unwrap();
    t2.commit().unwrap();
    assert_conflict(t1.commit());
    assert_eq!(committed_pair(&engine, "v"), (2, 200));
}
