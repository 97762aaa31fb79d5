//! Secondary indexes: uniqueness, ordered non-unique scans, key changes, delete and re-insert.

use std::ops::Bound;
use std::sync::Arc;
use txn::{Engine, Error, IndexId, IndexSpec, TableId, Transaction};

const T: TableId = TableId(7);
/// Unique index on the first byte of the row; a row starting with `-` has a NULL key (so rows
/// starting with `-` may repeat).
const UNIQ: IndexId = IndexId(1);
/// Non-unique index on the whole row.
const BY_ROW: IndexId = IndexId(2);

fn setup() -> Engine {
    let engine = Engine::new(Arc::new(wal::Log::new(1)));
    let uniq = IndexSpec {
        id: UNIQ,
        unique: true,
        key_of: Arc::new(|row| (row[..1].to_vec(), row[0] == b'-')),
    };
    let by_row =
        IndexSpec { id: BY_ROW, unique: false, key_of: Arc::new(|row| (row.to_vec(), false)) };
    engine.create_table(T, vec![uniq, by_row]);
    engine
}

fn scan(
    t: &mut Transaction,
    index: Option<IndexId>,
    lo: &[u8],
    hi: &[u8],
    reverse: bool,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    t.scan(T, index, Bound::Included(lo), Bound::Included(hi), reverse, &mut |k, r| {
        out.push((String::from_utf8(k.to_vec()).unwrap(), String::from_utf8(r.to_vec()).unwrap()));
        true
    })
    .unwrap();
    out
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn unique_violation_at_statement_and_conflict_at_commit() {
    let engine = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"k1".to_vec(), b"a1".to_vec()).unwrap();
    assert_eq!(
        t.insert(T, b"k2".to_vec(), b"a2".to_vec()),
        Err(Error::UniqueViolation { table: T, index: Some(UNIQ) }),
        "own uncommitted row holds the key"
    );
    assert_eq!(
        t.insert(T, b"k1".to_vec(), b"b".to_vec()),
        Err(Error::UniqueViolation { table: T, index: None })
    );
    t.commit().unwrap();

    let mut t = engine.begin(0);
    assert_eq!(
        t.insert(T, b"k3".to_vec(), b"a3".to_vec()),
        Err(Error::UniqueViolation { table: T, index: Some(UNIQ) })
    );
    // NULL keys never conflict.
    t.insert(T, b"k4".to_vec(), b"-x".to_vec()).unwrap();
    t.insert(T, b"k5".to_vec(), b"-y".to_vec()).unwrap();
    t.commit().unwrap();

    // Two concurrent inserts of the same unique key: the second fails at commit.
    let mut t1 = engine.begin(0);
    let mut t2 = engine.begin(0);
    t1.insert(T, b"k6".to_vec(), b"c1".to_vec()).unwrap();
    t2.insert(T, b"k7".to_vec(), b"c2".to_vec()).unwrap();
    t1.commit().unwrap();
    assert!(t2.commit().unwrap_err().is_conflict());
    let mut t = engine.begin(0);
    assert_eq!(t.get(T, b"k7").unwrap(), None, "the loser left no trace");
    assert_eq!(scan(&mut t, Some(UNIQ), b"c", b"c", false), pairs(&[("k6", "c1")]));
    // Moving a unique key away frees it within the transaction.
    t.update(T, b"k6", b"d1".to_vec()).unwrap();
    t.insert(T, b"k8".to_vec(), b"c8".to_vec()).unwrap();
    t.commit().unwrap();
}

#[test]
fn non_unique_scan_in_index_order() {
    let engine = setup();
    let mut t = engine.begin(0);
    for (k, v) in [("k3", "-m"), ("k1", "-n"), ("k2", "-m"), ("k4", "-o")] {
        t.insert(T, k.as_bytes().to_vec(), v.as_bytes().to_vec()).unwrap();
    }
    // Own uncommitted rows are visible in index order.
    assert_eq!(
        scan(&mut t, Some(BY_ROW), b"-m", b"-m", false),
        pairs(&[("k2", "-m"), ("k3", "-m")])
    );
    t.commit().unwrap();
    let mut t = engine.begin(0);
    assert_eq!(
        scan(&mut t, Some(BY_ROW), b"-m", b"-n", false),
        pairs(&[("k2", "-m"), ("k3", "-m"), ("k1", "-n")])
    );
    assert_eq!(
        scan(&mut t, Some(BY_ROW), b"-m", b"-n", true),
        pairs(&[("k1", "-n"), ("k3", "-m"), ("k2", "-m")])
    );
    assert_eq!(scan(&mut t, None, b"k2", b"k3", false), pairs(&[("k2", "-m"), ("k3", "-m")]));
    // Early stop.
    let mut n = 0;
    t.scan(T, Some(BY_ROW), Bound::Unbounded, Bound::Unbounded, false, &mut |_, _| {
        n += 1;
        n < 2
    })
    .unwrap();
    assert_eq!(n, 2);
    t.commit().unwrap();
}

#[test]
fn early_stop_limits_phantom_protection() {
    let engine = setup();
    let mut t = engine.begin(0);
    for (k, v) in [("k1", "a"), ("k2", "b"), ("k3", "c")] {
        t.insert(T, k.as_bytes().to_vec(), v.as_bytes().to_vec()).unwrap();
    }
    t.commit().unwrap();
    let mut t1 = engine.begin(0);
    let mut first = None;
    t1.scan(T, None, Bound::Unbounded, Bound::Unbounded, false, &mut |k, _| {
        first = Some(k.to_vec());
        false
    })
    .unwrap();
    assert_eq!(first.as_deref(), Some(&b"k1"[..]));
    let mut t2 = engine.begin(0);
    t2.insert(T, b"k9".to_vec(), b"z".to_vec()).unwrap();
    t2.commit().unwrap();
    t1.commit().expect("an insert beyond where the scan stopped is no phantom");
}

#[test]
fn update_changing_indexed_key() {
    let engine = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"k1".to_vec(), b"m".to_vec()).unwrap();
    t.commit().unwrap();
    let mut t = engine.begin(0);
    t.update(T, b"k1", b"p".to_vec()).unwrap();
    assert_eq!(
        scan(&mut t, Some(BY_ROW), b"m", b"m", false),
        pairs(&[]),
        "own update hides the old key"
    );
    assert_eq!(scan(&mut t, Some(BY_ROW), b"p", b"p", false), pairs(&[("k1", "p")]));
    t.commit().unwrap();
    let mut t = engine.begin(0);
    assert_eq!(scan(&mut t, Some(BY_ROW), b"m", b"m", false), pairs(&[]));
    assert_eq!(scan(&mut t, Some(BY_ROW), b"p", b"p", false), pairs(&[("k1", "p")]));
    assert_eq!(scan(&mut t, Some(UNIQ), b"m", b"m", false), pairs(&[]));
    assert_eq!(scan(&mut t, Some(UNIQ), b"p", b"p", false), pairs(&[("k1", "p")]));
    t.commit().unwrap();
    // The old unique key is free again.
    let mut t = engine.begin(0);
    t.insert(T, b"k2".to_vec(), b"m".to_vec()).unwrap();
    t.commit().unwrap();
}

#[test]
fn delete_then_reinsert_same_key() {
    let engine = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"k1".to_vec(), b"a".to_vec()).unwrap();
    let first = t.commit().unwrap();
    // Across transactions: a new record with a larger SSN than the delete.
    let mut t = engine.begin(0);
    t.delete(T, b"k1").unwrap();
    assert_eq!(t.get(T, b"k1").unwrap(), None);
    assert_eq!(t.delete(T, b"k1"), Err(Error::NotFound { table: T }));
    let deleted = t.commit().unwrap();
    assert!(deleted.ssn > first.ssn);
    let mut reader = engine.begin(0);
    assert_eq!(reader.get(T, b"k1").unwrap(), None);
    let mut t = engine.begin(0);
    t.insert(T, b"k1".to_vec(), b"a".to_vec()).unwrap();
    let reinserted = t.commit().unwrap();
    assert!(reinserted.ssn > deleted.ssn);
    // The reader's miss is now a phantom.
    assert!(reader.commit().unwrap_err().is_conflict());
    // Within one transaction: delete + insert is an update.
    let mut t = engine.begin(0);
    t.delete(T, b"k1").unwrap();
    t.insert(T, b"k1".to_vec(), b"b".to_vec()).unwrap();
    assert_eq!(scan(&mut t, Some(BY_ROW), b"a", b"b", false), pairs(&[("k1", "b")]));
    t.commit().unwrap();
    let mut t = engine.begin(0);
    assert_eq!(scan(&mut t, Some(UNIQ), b"a", b"b", false), pairs(&[("k1", "b")]));
    assert_eq!(engine.row_count(T), 1);
}

#[test]
fn create_index_over_existing_rows() {
    let engine = setup();
    let mut t = engine.begin(0);
    t.insert(T, b"k1".to_vec(), b"ab".to_vec()).unwrap();
    t.insert(T, b"k2".to_vec(), b"bb".to_vec()).unwrap();
    t.commit().unwrap();
    let second = |id, unique| IndexSpec {
        id,
        unique,
        key_of: Arc::new(|row: &[u8]| (row[1..].to_vec(), false)),
    };
    assert_eq!(
        engine.create_index(T, second(IndexId(3), true)),
        Err(Error::UniqueViolation { table: T, index: Some(IndexId(3)) })
    );
    engine.create_index(T, second(IndexId(3), false)).unwrap();
    let mut t = engine.begin(0);
    assert_eq!(
        scan(&mut t, Some(IndexId(3)), b"b", b"b", false),
        pairs(&[("k1", "ab"), ("k2", "bb")])
    );
    engine.drop_index(T, IndexId(3));
    assert_eq!(
        t.scan(T, Some(IndexId(3)), Bound::Unbounded, Bound::Unbounded, false, &mut |_, _| true),
        Err(Error::NoSuchIndex { table: T, index: IndexId(3) })
    );
}
