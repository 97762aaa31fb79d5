//! The classic isolation anomalies (Hermitage / Adya), driven step by step on one thread with
//! interleaved transactions. Aspen is always SERIALIZABLE: each anomaly is prevented, by a
//! Conflict for one transaction, or (G1a, G1b) because uncommitted values are never visible.

use std::ops::Bound;
use std::sync::Arc;
use txn::{Engine, Error, IndexId, IndexSpec, TableId, Transaction};

const T: TableId = TableId(1);
const BY_VALUE: IndexId = IndexId(1);

/// A table `T` of (key → value) with a non-unique index on the value, holding x=10, y=20.
fn setup() -> Engine {
    let engine = Engine::new(Arc::new(wal::Log::new(2)));
    let spec =
        IndexSpec { id: BY_VALUE, unique: false, key_of: Arc::new(|row| (row.to_vec(), false)) };
    engine.create_table(T, vec![spec]);
    let mut t = engine.begin(0);
    t.insert(T, b"x".to_vec(), b"10".to_vec()).unwrap();
    t.insert(T, b"y".to_vec(), b"20".to_vec()).unwrap();
    t.commit().unwrap();
    engine
}

fn get(t: &mut Transaction, key: &str) -> Option<String> {
    t.get(T, key.as_bytes()).unwrap().map(|r| String::from_utf8(r.to_vec()).unwrap())
}

fn set(t: &mut Transaction, key: &str, value: &str) {
    t.update(T, key.as_bytes(), value.as_bytes().to_vec()).unwrap();
}

fn assert_conflict(r: Result<txn::CommitInfo, Error>) {
    match r {
        Err(Error::Conflict { .. }) => {}
        other => panic!("expected a serialization conflict, got {other:?}"),
    }
}

/// Committed state of x and y.
fn state(engine: &Engine) -> (Option<String>, Option<String>) {
    let mut t = engine.begin(0);
    let s = (get(&mut t, "x"), get(&mut t, "y"));
    t.commit().unwrap();
    s
}

/// Keys whose value is in `[lo, hi]`, via the value index.
fn keys_by_value(t: &mut Transaction, lo: &str, hi: &str) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    t.scan(
        T,
        Some(BY_VALUE),
        Bound::Included(lo.as_bytes()),
        Bound::Included(hi.as_bytes()),
        false,
        &mut |k, _| {
            out.push(String::from_utf8(k.to_vec()).unwrap());
            true
        },
    )?;
    Ok(out)
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[test]
fn anomaly_g0_write_cycles() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    set(&mut t1, "x", "11");
    set(&mut t2, "x", "12");
    set(&mut t1, "y", "21");
    set(&mut t2, "y", "22");
    t1.commit().unwrap();
    assert_conflict(t2.commit());
    assert_eq!(state(&engine), (s("11"), s("21")));
}

#[test]
fn anomaly_g1a_aborted_reads() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    set(&mut t1, "x", "101");
    assert_eq!(get(&mut t2, "x"), s("10"), "no dirty read");
    t1.abort();
    assert_eq!(get(&mut t2, "x"), s("10"));
    t2.commit().unwrap();
    assert_eq!(state(&engine), (s("10"), s("20")));
}

#[test]
fn anomaly_g1b_intermediate_reads() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    set(&mut t1, "x", "101");
    assert_eq!(get(&mut t2, "x"), s("10"), "no dirty read");
    set(&mut t1, "x", "11");
    t1.commit().unwrap();
    assert_eq!(get(&mut t2, "x"), s("11"), "only the final value is ever visible");
    // t2 saw x change under it: its first read no longer validates.
    assert_conflict(t2.commit());
}

#[test]
fn anomaly_g1c_circular_information_flow() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    set(&mut t1, "x", "11");
    set(&mut t2, "y", "22");
    assert_eq!(get(&mut t1, "y"), s("20"));
    assert_eq!(get(&mut t2, "x"), s("10"));
    t1.commit().unwrap();
    assert_conflict(t2.commit());
    assert_eq!(state(&engine), (s("11"), s("20")));
}

#[test]
fn anomaly_otv_observed_transaction_vanishes() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    let mut t3 = engine.begin(0);
    set(&mut t1, "x", "11");
    set(&mut t1, "y", "19");
    set(&mut t2, "x", "12");
    t1.commit().unwrap();
    assert_eq!(get(&mut t3, "x"), s("11"));
    set(&mut t2, "y", "18");
    assert_eq!(get(&mut t3, "y"), s("19"), "t1's writes do not vanish");
    assert_conflict(t2.commit());
    t3.commit().unwrap();
    assert_eq!(state(&engine), (s("11"), s("19")));
}

#[test]
fn anomaly_pmp_predicate_many_preceders() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert_eq!(keys_by_value(&mut t1, "30", "30").unwrap(), Vec::<String>::new());
    t2.insert(T, b"z".to_vec(), b"30".to_vec()).unwrap();
    t2.commit().unwrap();
    // t1, read-only, saw the predicate empty; the insert makes that read stale.
    assert_conflict(t1.commit());
}

#[test]
fn anomaly_pmp_write_predicate() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert_eq!(keys_by_value(&mut t1, "20", "20").unwrap(), vec!["y"]);
    t2.delete(T, b"y").unwrap();
    t2.commit().unwrap();
    assert_eq!(keys_by_value(&mut t1, "20", "20").unwrap(), Vec::<String>::new());
    set(&mut t1, "x", "99");
    assert_conflict(t1.commit());
    assert_eq!(state(&engine), (s("10"), None));
}

#[test]
fn anomaly_p4_lost_update() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert_eq!(get(&mut t1, "x"), s("10"));
    assert_eq!(get(&mut t2, "x"), s("10"));
    set(&mut t1, "x", "11");
    set(&mut t2, "x", "11");
    t1.commit().unwrap();
    assert_conflict(t2.commit());
}

#[test]
fn anomaly_g_single_read_skew() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert_eq!(get(&mut t1, "x"), s("10"));
    assert_eq!(get(&mut t2, "x"), s("10"));
    assert_eq!(get(&mut t2, "y"), s("20"));
    set(&mut t2, "x", "12");
    set(&mut t2, "y", "18");
    t2.commit().unwrap();
    assert_eq!(get(&mut t1, "y"), s("18"));
    assert_conflict(t1.commit());
}

#[test]
fn anomaly_g_single_read_skew_with_predicate() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert_eq!(keys_by_value(&mut t1, "5", "5").unwrap(), Vec::<String>::new());
    set(&mut t2, "x", "5");
    t2.commit().unwrap();
    assert_eq!(get(&mut t1, "x"), s("5"));
    assert_conflict(t1.commit());
}

#[test]
fn anomaly_g2_item_write_skew() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert_eq!((get(&mut t1, "x"), get(&mut t1, "y")), (s("10"), s("20")));
    assert_eq!((get(&mut t2, "x"), get(&mut t2, "y")), (s("10"), s("20")));
    set(&mut t1, "x", "11");
    set(&mut t2, "y", "21");
    t1.commit().unwrap();
    assert_conflict(t2.commit());
    assert_eq!(state(&engine), (s("11"), s("20")));
}

#[test]
fn anomaly_g2_anti_dependency_cycle_with_predicates() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    // Both see no value in [30, 39] and each inserts one (e.g. "at most one on call").
    assert!(keys_by_value(&mut t1, "3", "3").unwrap().is_empty());
    assert!(keys_by_value(&mut t2, "3", "3").unwrap().is_empty());
    t1.insert(T, b"a".to_vec(), b"31".to_vec()).unwrap();
    t2.insert(T, b"b".to_vec(), b"32".to_vec()).unwrap();
    t1.commit().unwrap();
    assert_conflict(t2.commit());
    let mut t3 = engine.begin(0);
    assert_eq!(keys_by_value(&mut t3, "3", "3").unwrap(), vec!["a"]);
}

/// A three-transaction anti-dependency cycle through predicate reads: T1 reads range A and
/// writes into B, T2 reads B and writes into C, T3 reads C and writes into A. Each commit alone
/// would be fine; all three cannot be serialized.
#[test]
fn anomaly_g2_three_transactions() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    let mut t3 = engine.begin(0);
    assert!(keys_by_value(&mut t1, "5", "5").unwrap().is_empty());
    assert!(keys_by_value(&mut t2, "6", "6").unwrap().is_empty());
    assert!(keys_by_value(&mut t3, "7", "7").unwrap().is_empty());
    t1.insert(T, b"b1".to_vec(), b"61".to_vec()).unwrap();
    t2.insert(T, b"c1".to_vec(), b"71".to_vec()).unwrap();
    t3.insert(T, b"a1".to_vec(), b"51".to_vec()).unwrap();
    t1.commit().unwrap();
    assert_conflict(t2.commit());
    // T2 aborted, so T3's range C is still empty: T1, T3 is a serial order.
    t3.commit().unwrap();
    let mut check = engine.begin(0);
    assert_eq!(keys_by_value(&mut check, "5", "7").unwrap(), vec!["a1", "b1"]);
}

/// A point-get miss is a predicate read too.
#[test]
fn anomaly_g2_point_miss() {
    let engine = setup();
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(1);
    assert_eq!(get(&mut t1, "q"), None);
    assert_eq!(get(&mut t2, "r"), None);
    t1.insert(T, b"r".to_vec(), b"1".to_vec()).unwrap();
    t2.insert(T, b"q".to_vec(), b"1".to_vec()).unwrap();
    t1.commit().unwrap();
    assert_conflict(t2.commit());
}
