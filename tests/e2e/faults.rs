//! Fault injection end to end (issue "Durability", item 6): a log device's write or fdatasync
//! fails, or its disk is full, in a real `aspen serve` process (the hidden
//! `--inject-wal-fault device=D,write|sync|nospace=N`, which wraps the device's segments in
//! `wal::testing::FaultyDevice`).
//!
//! What must happen (DESIGN.md §3): the failure is not retried; a client whose commit waited
//! gets FATAL `58030` with a message that says what failed (a full disk says so); the server
//! exits on its own; after a restart without the fault, every commit that was acknowledged is
//! there, and no row exists that no client tried to write. Aspen only.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tests::{connect, fresh_data_dir, sqlstate, AspenServer};

/// Concurrent clients; each inserts its own ids (client * 1_000_000 + n) until its connection
/// fails.
const CLIENTS: i64 = 4;

async fn run_fault(spec: &str, expected: &str) {
    let args = vec![OsString::from("--inject-wal-fault"), OsString::from(spec)];
    let mut server = AspenServer::try_start_in(fresh_data_dir().expect("data dir"), args)
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    let c = connect(server.port()).await.expect("connect");
    c.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, v text NOT NULL)").await.expect("ddl");
    drop(c);

    let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
    let attempted = Arc::new(Mutex::new(BTreeSet::new()));
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let (port, acked, tried) = (server.port(), acknowledged.clone(), attempted.clone());
        tasks.push(tokio::spawn(async move {
            let c = connect(port).await.expect("connect");
            for n in 0.. {
                let id = client * 1_000_000 + n;
                tried.lock().unwrap().insert(id);
                // Odd clients read before they write (not blind), even ones insert blindly.
                let result = if client % 2 == 1 {
                    c.batch_execute(&format!(
                        "BEGIN; SELECT count(*) FROM t WHERE id = {id}; \
                         INSERT INTO t VALUES ({id}, 'c{client}'); COMMIT"
                    ))
                    .await
                } else {
                    c.batch_execute(&format!("INSERT INTO t VALUES ({id}, 'c{client}')")).await
                };
                match result {
                    Ok(()) => {
                        acked.lock().unwrap().insert(id);
                    }
                    Err(e) => {
                        let message =
                            e.as_db_error().map_or(e.to_string(), |d| d.message().to_owned());
                        return (sqlstate(&e).map(str::to_owned), message);
                    }
                }
            }
            unreachable!()
        }));
    }
    let mut errors = Vec::new();
    for t in tasks {
        errors.push(
            tokio::time::timeout(Duration::from_secs(60), t)
                .await
                .expect("clients stop")
                .expect("task"),
        );
    }
    let fatal: Vec<&(Option<String>, String)> =
        errors.iter().filter(|(code, _)| code.as_deref() == Some("58030")).collect();
    assert!(!fatal.is_empty(), "{spec}: no client saw 58030; errors were {errors:?}");
    for (_, message) in &fatal {
        assert!(message.contains(expected), "{spec}: 58030 message {message:?} lacks {expected:?}");
    }
    // The server exits on its own.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.is_running() {
        assert!(Instant::now() < deadline, "{spec}: the server kept running after the log failed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    server.set_extra_args(Vec::new());
    server.restart();
    let c = connect(server.port()).await.expect("connect after restart");
    let present: BTreeSet<i64> =
        c.query("SELECT id FROM t", &[]).await.expect("select").iter().map(|r| r.get(0)).collect();
    let acked = acknowledged.lock().unwrap().clone();
    let tried = attempted.lock().unwrap().clone();
    let lost: Vec<_> = acked.difference(&present).collect();
    let invented: Vec<_> = present.difference(&tried).collect();
    assert!(lost.is_empty(), "{spec}: acknowledged ids lost after recovery: {lost:?}");
    assert!(invented.is_empty(), "{spec}: ids nobody wrote: {invented:?}");
    assert!(!acked.is_empty(), "{spec}: nothing was acknowledged before the fault");
    // The recovered server works.
    c.batch_execute("INSERT INTO t VALUES (-1, 'after')").await.expect("insert after recovery");
    println!(
        "{spec}: {} acknowledged, {} present after recovery, client errors: {:?}",
        acked.len(),
        present.len(),
        errors.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failed_fdatasync_is_never_acknowledged() {
    if tests::against_pg() {
        return;
    }
    run_fault("device=1,sync=40", "log device 1 failed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failed_write_is_never_acknowledged() {
    if tests::against_pg() {
        return;
    }
    run_fault("device=0,write=40", "log device 0 failed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_disk_says_so() {
    if tests::against_pg() {
        return;
    }
    run_fault("device=1,nospace=40", "out of space").await;
}
