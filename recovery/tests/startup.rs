//! `startup::open_database` refuses a data directory started with other log devices than it
//! was created with (a missing or swapped device would lose records silently), and recovers
//! what was committed when started with the right ones.

use recovery::startup::{open_database, StartupConfig};

fn config(data_dir: &std::path::Path, wal_dirs: Vec<std::path::PathBuf>) -> StartupConfig {
    StartupConfig {
        data_dir: data_dir.to_path_buf(),
        wal_dirs,
        log: wal::LogOptions::default(),
        synchronous_commit: true,
        replay_threads: 2,
        wrap_store: None,
        checkpoint_dirs: Vec::new(),
        checkpoint_interval: None,
    }
}

fn run(db: &std::sync::Arc<sql::Database>, sql: &str) -> Vec<Vec<sql::Value>> {
    let mut s = sql::Session::new(db.clone(), &[]);
    let mut out = s.execute_simple(sql);
    out.pop().expect("one result").expect("statement ok").rows
}

#[test]
fn other_log_devices_are_refused_and_the_right_ones_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let data = tmp.path().join("data");
    let started = open_database(&config(&data, vec![a.clone(), b.clone()]), &|_| {}).unwrap();
    run(&started.db, "CREATE TABLE t (k int PRIMARY KEY)");
    run(&started.db, "INSERT INTO t VALUES (1), (2)");
    drop(started);

    let err = |dirs| match open_database(&config(&data, dirs), &|_| {}) {
        Ok(_) => panic!("opened with the wrong log devices"),
        Err(e) => e.to_string(),
    };
    let missing = err(vec![a.clone()]);
    assert!(missing.contains("has 2 log devices but 1 were given"), "{missing}");
    let swapped = err(vec![b.clone(), a.clone()]);
    assert!(swapped.contains("is not log device 0"), "{swapped}");
    let default = err(Vec::new());
    assert!(default.contains("is not log device 0"), "{default}");

    let started = open_database(&config(&data, vec![a, b]), &|_| {}).unwrap();
    let rows = run(&started.db, "SELECT count(*) FROM t");
    assert_eq!(rows, vec![vec![sql::Value::Int64(2)]]);
}
