//! The whole value-log path without the server: transactions commit through `txn` onto two
//! real log directories (`wal::Log::open`), the log is scanned and replayed in parallel into a
//! fresh engine through `EngineTarget`, and the recovered tables equal the committed ones.

use std::ops::Bound;
use std::sync::Arc;

use recovery::{DeviceLog, EngineTarget, RecoveryPlan, ScanOptions};
use txn::{Engine, TableId};
use wal::{DeviceId, Log, LogOptions, Ssn};

const T: TableId = TableId(7);

fn contents(engine: &Engine) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut t = engine.begin(0);
    let mut rows = Vec::new();
    t.scan(T, None, Bound::Unbounded, Bound::Unbounded, false, &mut |k, r| {
        rows.push((k.to_vec(), r.to_vec()));
        true
    })
    .expect("scan");
    rows
}

#[test]
fn committed_transactions_survive_a_replay_into_a_fresh_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dirs = vec![dir.path().join("wal0"), dir.path().join("wal1")];
    let options = LogOptions::default();
    let before = {
        let log = Arc::new(Log::open(&dirs, &options).expect("open log"));
        let engine = Engine::new(log);
        engine.create_table(T, vec![]);
        let mut x: u64 = 0x853c_49e6_748f_ea9b;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for i in 0..400u64 {
            let mut t = engine.begin(i as usize);
            let key = rnd(60).to_be_bytes().to_vec();
            let present = t.get(T, &key).expect("get").is_some();
            match (present, rnd(3)) {
                (false, _) => t.insert(T, key, i.to_le_bytes().to_vec()).expect("insert"),
                (true, 0) => t.delete(T, &key).expect("delete"),
                (true, _) => t.update(T, &key, i.to_le_bytes().to_vec()).expect("update"),
            }
            t.commit_durable().expect("commit");
        }
        contents(&engine)
        // Dropping the engine and log here flushes and stops the loggers, as a clean stop.
    };
    assert!(!before.is_empty());

    let devices = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| DeviceLog::from_dir(DeviceId(i as u16), d).expect("device"))
        .collect();
    let plan = RecoveryPlan::scan(devices, ScanOptions::for_log(&options)).expect("scan");
    assert!(plan.rsne() > Ssn::ZERO);
    let fresh = Engine::new(Arc::new(Log::new(2)));
    fresh.create_table(T, vec![]);
    let summary =
        recovery::replay(&plan, Ssn::ZERO, &EngineTarget::new(&fresh), 3, &|_| {}).expect("replay");
    fresh.finish_replay(summary.rsne).expect("finish");
    assert_eq!(contents(&fresh), before, "recovered rows differ from the committed ones");
}
