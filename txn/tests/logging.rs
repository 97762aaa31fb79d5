//! Value records written by commit, the acknowledge rule of `commit_durable`, and the core round
//! trip of recovery: read the devices back, `replay_install` into a fresh engine, compare.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use txn::{CommitInfo, Engine, IndexId, IndexSpec, TableId};
use wal::testing::{MemDevice, MemStore};
use wal::{
    DeviceId, LogDevice, LogOptions, ReadOptions, RecordKind, SegmentReader, SegmentStore, Ssn,
};

const T1: TableId = TableId(1);
const T2: TableId = TableId(2);
const BY_VALUE: IndexId = IndexId(1);

/// One decoded write: (ssn, table, key, row).
type Write = (Ssn, u32, Vec<u8>, Option<Vec<u8>>);

fn specs() -> Vec<IndexSpec> {
    // Unique on the row bytes: replay must never trip over transient clashes.
    vec![IndexSpec {
        id: BY_VALUE,
        unique: true,
        key_of: Arc::new(|row: &[u8]| (row.to_vec(), false)),
    }]
}

fn engine_over(log: Arc<wal::Log>) -> Engine {
    let engine = Engine::new(log);
    engine.create_table(T1, specs());
    engine.create_table(T2, vec![]);
    engine
}

fn log_with(stores: &[Arc<MemStore>], delay: Duration) -> Arc<wal::Log> {
    let options = LogOptions { group_commit_delay: delay, ..LogOptions::default() };
    let stores = stores.iter().map(|s| Box::new(s.clone()) as Box<dyn SegmentStore>).collect();
    Arc::new(wal::Log::with_stores(stores, &options).unwrap())
}

fn stores() -> Vec<Arc<MemStore>> {
    vec![MemStore::new(1 << 20), MemStore::new(1 << 20)]
}

/// Every record on the devices, from their synced bytes only: (ssn, kind, blind, entries).
fn read_back(stores: &[Arc<MemStore>]) -> Vec<(Ssn, RecordKind, bool, Vec<Write>)> {
    let mut out = Vec::new();
    for (d, store) in stores.iter().enumerate() {
        let durable: Vec<(wal::SegmentNo, MemDevice)> = store
            .segments()
            .into_iter()
            .map(|(no, dev)| (no, MemDevice::with_bytes(dev.durable_bytes())))
            .collect();
        let segments = durable.iter().map(|(no, dev)| (*no, dev as &dyn LogDevice)).collect();
        let mut reader = SegmentReader::new(DeviceId(d as u16), segments, ReadOptions::default());
        while let Some(r) = reader.next_record().unwrap() {
            let rec = r.record;
            let writes = if rec.kind == RecordKind::Value {
                rec.values()
                    .unwrap()
                    .into_iter()
                    .map(|e| (rec.ssn, e.table, e.key.to_vec(), e.row.map(<[u8]>::to_vec)))
                    .collect()
            } else {
                Vec::new()
            };
            out.push((rec.ssn, rec.kind, rec.blind, writes));
        }
    }
    out
}

fn value_writes(stores: &[Arc<MemStore>]) -> Vec<Write> {
    read_back(stores).into_iter().filter(|r| r.1 == RecordKind::Value).flat_map(|r| r.3).collect()
}

/// A scanned row: (table, index scanned, primary key, row).
type Scanned = (u32, Option<IndexId>, Vec<u8>, Vec<u8>);

/// Full contents: every table's primary scan, and T1's secondary scan (index order).
fn contents(engine: &Engine) -> Vec<Scanned> {
    let mut out = Vec::new();
    let mut t = engine.begin(0);
    for (table, index) in [(T1, None), (T1, Some(BY_VALUE)), (T2, None)] {
        t.scan(table, index, Bound::Unbounded, Bound::Unbounded, false, &mut |k, row| {
            out.push((table.0, index, k.to_vec(), row.to_vec()));
            true
        })
        .unwrap();
    }
    out
}

fn kv(k: &str) -> Vec<u8> {
    k.as_bytes().to_vec()
}

/// Runs a fixed workload on both buffers; returns each commit with the writes it made.
fn workload(engine: &Engine) -> Vec<(CommitInfo, Vec<Write>)> {
    let mut done = Vec::new();
    let mut commit = |t: txn::Transaction, writes: Vec<(TableId, &str, Option<&str>)>| {
        let info = t.commit_durable().unwrap();
        let mut w: Vec<Write> =
            writes.into_iter().map(|(tb, k, r)| (info.ssn, tb.0, kv(k), r.map(kv))).collect();
        w.sort();
        done.push((info, w));
    };
    // 1: inserts on buffer 0, both tables.
    let mut t = engine.begin(0);
    for k in ["a", "b", "c", "d"] {
        t.insert(T1, kv(k), kv(&format!("v{k}"))).unwrap();
    }
    t.insert(T2, kv("x"), kv("x1")).unwrap();
    commit(
        t,
        vec![
            (T1, "a", Some("va")),
            (T1, "b", Some("vb")),
            (T1, "c", Some("vc")),
            (T1, "d", Some("vd")),
            (T2, "x", Some("x1")),
        ],
    );
    // 2: update + delete + lock-only (not logged) on buffer 1.
    let mut t = engine.begin(1);
    t.get(T1, b"a").unwrap();
    t.update(T1, b"a", kv("va2")).unwrap();
    t.delete(T1, b"b").unwrap();
    t.get_for_update(T2, b"x").unwrap();
    commit(t, vec![(T1, "a", Some("va2")), (T1, "b", None)]);
    // 3: a unique value moves between rows (c gives "vc" to e), buffer 0.
    let mut t = engine.begin(0);
    t.update(T1, b"c", kv("vc2")).unwrap();
    t.insert(T1, kv("e"), kv("vc")).unwrap();
    commit(t, vec![(T1, "c", Some("vc2")), (T1, "e", Some("vc"))]);
    // 4: re-insert the deleted key, delete another, buffer 1.
    let mut t = engine.begin(1);
    t.insert(T1, kv("b"), kv("vb2")).unwrap();
    t.delete(T1, b"d").unwrap();
    t.update(T2, b"x", kv("x2")).unwrap();
    commit(t, vec![(T1, "b", Some("vb2")), (T1, "d", None), (T2, "x", Some("x2"))]);
    // 5: delete then re-insert within one transaction (an update), buffer 0.
    let mut t = engine.begin(0);
    t.delete(T2, b"x").unwrap();
    t.insert(T2, kv("x"), kv("x3")).unwrap();
    t.insert(T2, kv("y"), kv("y1")).unwrap();
    commit(t, vec![(T2, "x", Some("x3")), (T2, "y", Some("y1"))]);
    done
}

#[test]
fn commit_writes_value_records_that_replay_to_the_same_contents() {
    let stores = stores();
    let engine = engine_over(log_with(&stores, Duration::ZERO));
    let done = workload(&engine);
    // Both buffers were used.
    let devices: std::collections::BTreeSet<_> =
        done.iter().map(|(i, _)| i.ticket.unwrap().device).collect();
    assert_eq!(devices.len(), 2);
    for (info, _) in &done {
        assert!(!info.read_only);
        assert!(!info.ticket.unwrap().blind, "every SQL-like write here read first");
    }

    let records = read_back(&stores);
    let mut by_ssn: BTreeMap<Ssn, Vec<Write>> = BTreeMap::new();
    for (ssn, kind, blind, mut writes) in records.iter().cloned() {
        if kind == RecordKind::Value {
            assert!(!blind);
            writes.sort();
            assert!(by_ssn.insert(ssn, writes).is_none(), "one value record per commit");
        }
    }
    let expected: BTreeMap<Ssn, Vec<Write>> =
        done.iter().map(|(i, w)| (i.ssn, w.clone())).collect();
    assert_eq!(by_ssn, expected);

    // Replay in log order, in reverse, and partitioned by key over threads.
    let want = contents(&engine);
    let writes = value_writes(&stores);
    let max_ssn = writes.iter().map(|w| w.0).max().unwrap();
    let replay = |order: &[Write]| {
        let fresh = engine_over(Arc::new(wal::Log::new(2)));
        for (ssn, table, key, row) in order {
            fresh.replay_install(TableId(*table), key, row.as_deref(), *ssn).unwrap();
        }
        fresh.finish_replay(max_ssn).unwrap();
        fresh
    };
    let forward = replay(&writes);
    assert_eq!(contents(&forward), want);
    let mut reversed = writes.clone();
    reversed.reverse();
    let backward = replay(&reversed);
    assert_eq!(contents(&backward), want);

    let fresh = engine_over(Arc::new(wal::Log::new(2)));
    std::thread::scope(|s| {
        for part in 0..3usize {
            let (fresh, writes) = (&fresh, &writes);
            s.spawn(move || {
                for (ssn, table, key, row) in writes.iter().rev() {
                    if key.iter().map(|&b| b as usize).sum::<usize>() % 3 == part {
                        fresh.replay_install(TableId(*table), key, row.as_deref(), *ssn).unwrap();
                    }
                }
            });
        }
    });
    fresh.finish_replay(max_ssn).unwrap();
    assert_eq!(contents(&fresh), want);

    // New SSNs start above everything replayed, and the replayed engine keeps working.
    let mut t = forward.begin(1);
    t.insert(T1, kv("z"), kv("vz")).unwrap();
    assert!(t.commit().unwrap().ssn > max_ssn);
    let mut t = forward.begin(0);
    assert!(t.insert(T1, kv("q"), kv("vc")).is_err(), "unique index rebuilt");
}

#[test]
fn commit_durable_returns_only_once_the_record_is_synced() {
    let stores = stores();
    // A long group-commit delay: a non-waiting commit surely returns before the sync.
    let log = log_with(&stores, Duration::from_millis(300));
    let engine = engine_over(log.clone());
    let mut t = engine.begin(0);
    t.insert(T1, kv("a"), kv("1")).unwrap();
    let quick = t.commit().unwrap();
    let ticket = quick.ticket.unwrap();
    assert_eq!(ticket.ssn, quick.ssn);
    assert!(!log.is_durable(ticket), "commit() must not wait");
    assert!(value_writes(&stores).iter().all(|w| w.0 != quick.ssn));

    let mut t = engine.begin(1);
    assert!(t.get(T1, b"a").unwrap().is_some());
    t.insert(T1, kv("b"), kv("2")).unwrap();
    let info = t.commit_durable().unwrap();
    let synced = value_writes(&stores);
    assert!(synced.contains(&(info.ssn, T1.0, kv("b"), Some(kv("2")))), "{synced:?}");
    // Non-blind: everything it depends on (a, on the other device) is synced too.
    assert!(synced.contains(&(quick.ssn, T1.0, kv("a"), Some(kv("1")))), "{synced:?}");
    assert!(log.csn() >= info.ssn);

    // A read-only transaction is released only once what it read is below CSN.
    let mut t = engine.begin(0);
    t.insert(T2, kv("c"), kv("3")).unwrap();
    let c = t.commit().unwrap();
    let mut t = engine.begin(1);
    assert!(t.get(T2, b"c").unwrap().is_some());
    let r = t.commit_durable().unwrap();
    assert!(r.read_only && r.ticket.is_none());
    assert_eq!(r.ssn, c.ssn);
    assert!(log.csn() >= c.ssn, "read-only results released before ssn <= CSN");
}

#[test]
fn replay_is_last_writer_wins_and_deletes_remove_rows() {
    let engine = engine_over(Arc::new(wal::Log::new(1)));
    let get = |k: &[u8]| engine.begin(0).get(T2, k).unwrap().map(|r| r.to_vec());
    // Newer first: the older insert loses.
    engine.replay_install(T2, b"k", Some(b"new"), Ssn(9)).unwrap();
    engine.replay_install(T2, b"k", Some(b"old"), Ssn(4)).unwrap();
    assert_eq!(get(b"k"), Some(kv("new")));
    // A delete removes the row; an older insert replayed after it stays deleted.
    engine.replay_install(T2, b"k", None, Ssn(12)).unwrap();
    assert_eq!(get(b"k"), None);
    engine.replay_install(T2, b"k", Some(b"older"), Ssn(10)).unwrap();
    assert_eq!(get(b"k"), None);
    // A delete of a key never seen, then its older insert.
    engine.replay_install(T2, b"m", None, Ssn(7)).unwrap();
    engine.replay_install(T2, b"m", Some(b"gone"), Ssn(6)).unwrap();
    assert_eq!(get(b"m"), None);
    // A newer insert after the delete wins.
    engine.replay_install(T2, b"k", Some(b"again"), Ssn(15)).unwrap();
    assert_eq!(get(b"k"), Some(kv("again")));
    engine.finish_replay(Ssn(15)).unwrap();
    assert_eq!(engine.row_count(T2), 1, "tombstones are swept");
    assert_eq!(get(b"m"), None);
    // The key can be inserted again by a transaction, above the replayed SSNs.
    let mut t = engine.begin(0);
    t.insert(T2, kv("m"), kv("fresh")).unwrap();
    assert!(t.commit().unwrap().ssn > Ssn(15));
    assert_eq!(
        engine.replay_install(TableId(99), b"k", None, Ssn(1)),
        Err(txn::Error::TableDropped(TableId(99)))
    );
}

#[test]
fn row_ids_are_not_reused_after_replay() {
    let engine = engine_over(Arc::new(wal::Log::new(1)));
    assert_eq!(engine.next_row_id(T2), 1);
    engine.set_next_row_id_at_least(T2, 50);
    assert_eq!(engine.next_row_id(T2), 50);
    engine.set_next_row_id_at_least(T2, 10);
    assert_eq!(engine.next_row_id(T2), 51);
}

#[test]
fn a_failed_log_aborts_the_commit_without_a_trace() {
    // A value payload too large for one record goes to a spill file and commits durably; its
    // record (on the device) only names the file.
    let stores = vec![MemStore::new(4096)];
    let log = log_with(&stores, Duration::ZERO);
    let engine = engine_over(log);
    let mut t = engine.begin(0);
    t.insert(T2, kv("big"), vec![7; 8192]).unwrap();
    t.commit_durable().unwrap();
    assert_eq!(engine.begin(0).get(T2, b"big").unwrap(), Some(txn::Row::from(vec![7; 8192])));
    let spills = stores[0].spills();
    assert_eq!(spills.len(), 1);
    assert!(spills.values().next().unwrap().len() > 8192, "the whole value payload");
    let durable = read_back(&stores);
    assert_eq!(durable.last().map(|r| r.1), Some(RecordKind::Spilled));

    // A log whose first write fails: that commit is never acknowledged, and the next commit
    // is refused (not a panic) and leaves no trace.
    let failing = vec![MemStore::with_wrapper(1 << 20, |_, device| {
        Box::new(wal::testing::FaultyDevice::new(device).fail_write(1))
    })];
    let engine = engine_over(log_with(&failing, Duration::ZERO));
    let mut t = engine.begin(0);
    t.insert(T2, kv("a"), kv("1")).unwrap();
    assert!(matches!(t.commit_durable(), Err(txn::Error::Log(_))));
    let mut t = engine.begin(0);
    t.insert(T2, kv("b"), kv("2")).unwrap();
    let e = t.commit().unwrap_err();
    assert!(matches!(e, txn::Error::Log(_)), "{e:?}");
    assert_eq!(engine.begin(0).get(T2, b"b").unwrap(), None);
}
