//! What survives a restart (every restart here is a SIGKILL). The schema: tables, columns,
//! defaults, constraints and indexes created before `aspen` stops are there, and enforced,
//! after it starts again on the same data directory. Commits made with `synchronous_commit =
//! off`: their log records are written lazily (after `--wal-writer-delay-ms`, or with the next
//! record somebody waits for), so once a synchronous reader has seen them they survive a
//! crash. A transaction too large for one log record spills its writes to a file of its log
//! device and survives a crash like any other; so do timestamptz, interval and uuid values and
//! their indexes. A dropped column stays dropped, and rows written before the drop (in the log and
//! in a checkpoint) still read right. Aspen only (there is nothing to compare with
//! PostgreSQL).

use std::ffi::OsString;

use tests::{connect, fresh_data_dir, sqlstate, timed, AspenServer};

#[tokio::test]
async fn schema_survives_restart() {
    if tests::against_pg() {
        println!("schema_survives_restart is Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    timed(
        "ddl",
        c.batch_execute(
            "CREATE TABLE parent (id int PRIMARY KEY, name varchar(10) NOT NULL DEFAULT 'x');
             CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent (id) ON DELETE CASCADE, code text UNIQUE);
             CREATE UNIQUE INDEX parent_name ON parent (name);
             CREATE TABLE dropped (a int);
             DROP TABLE dropped;",
        ),
    )
    .await
    .expect("create the schema");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    timed("insert", c.batch_execute("INSERT INTO parent (id) VALUES (1)")).await.expect("insert");
    let row = timed("select", c.query_one("SELECT name FROM parent WHERE id = 1", &[]))
        .await
        .expect("select");
    assert_eq!(row.get::<_, String>(0), "x", "the DEFAULT survived");
    let err = timed("dup", c.batch_execute("INSERT INTO parent (id) VALUES (2)"))
        .await
        .expect_err("the unique index survived");
    assert_eq!(sqlstate(&err), Some("23505"));
    let err = timed("null", c.batch_execute("INSERT INTO parent (id, name) VALUES (3, NULL)"))
        .await
        .expect_err("NOT NULL survived");
    assert_eq!(sqlstate(&err), Some("23502"));
    timed("child", c.batch_execute("INSERT INTO child VALUES (10, 1, 'c')")).await.expect("child");
    timed("cascade", c.batch_execute("DELETE FROM parent WHERE id = 1")).await.expect("delete");
    let row = timed("count", c.query_one("SELECT count(*) FROM child", &[])).await.expect("count");
    assert_eq!(row.get::<_, i64>(0), 0, "ON DELETE CASCADE survived");
    let err = timed("dropped", c.batch_execute("SELECT * FROM dropped"))
        .await
        .expect_err("the dropped table stays dropped");
    assert_eq!(sqlstate(&err), Some("42P01"));
}

/// Aspen with `--wal-writer-delay-ms` at an hour, so that lazily filled records are written
/// only when somebody asks for them; `None` (skip) under `TEST_AGAINST_PG=1`.
fn aspen_with_an_hour_lazy_timer() -> Option<AspenServer> {
    aspen_with_an_hour_lazy_timer_and(&[])
}

/// [`aspen_with_an_hour_lazy_timer`] with more arguments.
fn aspen_with_an_hour_lazy_timer_and(more: &[&str]) -> Option<AspenServer> {
    if tests::against_pg() {
        println!("this test is Aspen-only, skipping under TEST_AGAINST_PG=1");
        return None;
    }
    let mut args = vec![OsString::from("--wal-writer-delay-ms"), OsString::from("3600000")];
    args.extend(more.iter().map(OsString::from));
    let server = AspenServer::try_start_in(fresh_data_dir().expect("data dir"), args);
    Some(server.unwrap_or_else(|e| panic!("{e}")))
}

/// Lazily written commits become durable when a synchronous transaction needs them: with a
/// lazy flush delay of an hour (so only that can write them), 200 `synchronous_commit = off`
/// inserts, then a synchronous read of all of them, whose result is held until everything it
/// saw is durable (CSN); a SIGKILL right after must keep all 200.
#[tokio::test]
async fn async_commits_seen_by_a_synchronous_reader_survive_a_crash() {
    let Some(mut server) = aspen_with_an_hour_lazy_timer() else { return };
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let row = timed("show", c.query_one("SHOW wal_writer_delay", &[])).await.expect("show");
    assert_eq!(row.get::<_, String>(0), "3600000ms");
    timed("ddl", c.batch_execute("CREATE TABLE t (id int PRIMARY KEY, v text)")).await.unwrap();
    timed("async", c.batch_execute("SET synchronous_commit = off")).await.unwrap();
    let insert = c.prepare("INSERT INTO t VALUES ($1, 'lazy')").await.expect("prepare");
    for id in 0..200i32 {
        timed("insert", c.execute(&insert, &[&id])).await.expect("insert");
    }
    // Another session, synchronous: its count is released only once CSN covers what it read.
    let reader = timed("connect", connect(server.port())).await.expect("connect");
    let row = timed("count", reader.query_one("SELECT count(*) FROM t", &[])).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 200);
    drop((c, reader));
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let row = timed("count", c.query_one("SELECT count(*) FROM t", &[])).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 200, "a synchronous reader saw them: they must survive");
}

/// Demand-driven group commit (`server::ack`): a synchronous commit's record is filled lazily
/// and requested when its connection thread goes idle. With the lazy timer at an hour, every
/// commit is still acknowledged at once (a request that never came would leave it waiting for
/// the hour: the statement timeout fails the test), from one connection and from many at
/// once, and everything acknowledged survives a SIGKILL.
///
/// With `--wal-assist-us 0` the log writer threads write every record; with ten seconds every
/// device counts as fast, so a connection thread that requests durability while the device's
/// writer is idle writes and syncs itself (`wal::LogOptions::assist_below`).
#[tokio::test]
async fn synchronous_commits_are_requested_without_the_lazy_timer_and_survive_a_crash() {
    synchronous_commits_survive(&["--wal-assist-us", "0"], "0us").await;
}

#[tokio::test]
async fn synchronous_commits_flushed_by_their_connection_threads_survive_a_crash() {
    synchronous_commits_survive(&["--wal-assist-us", "10000000"], "10000000us").await;
}

/// With up to 16 write+sync pairs in flight per log writer (it keeps as many as pay on the
/// device: `wal::depth`), through io_uring where available.
#[tokio::test]
async fn synchronous_commits_with_many_pairs_in_flight_survive_a_crash() {
    synchronous_commits_survive(&["--wal-assist-us", "0", "--wal-pairs-in-flight", "16"], "0us")
        .await;
}

async fn synchronous_commits_survive(args: &[&str], assist_below: &str) {
    let Some(mut server) = aspen_with_an_hour_lazy_timer_and(args) else { return };
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let row = timed("show", c.query_one("SHOW aspen.wal_assist_below", &[])).await.unwrap();
    assert_eq!(row.get::<_, String>(0), assist_below);
    let pairs =
        args.iter().position(|a| *a == "--wal-pairs-in-flight").map_or("4", |i| args[i + 1]);
    let row = timed("show", c.query_one("SHOW aspen.wal_pairs_in_flight", &[])).await.unwrap();
    assert_eq!(row.get::<_, String>(0), pairs);
    timed("ddl", c.batch_execute("CREATE TABLE t (id int PRIMARY KEY, v int)")).await.unwrap();
    let insert = c.prepare("INSERT INTO t VALUES ($1, 0)").await.expect("prepare");
    for id in 0..50i32 {
        timed("lone insert", c.execute(&insert, &[&id])).await.expect("insert");
    }
    let tasks: Vec<_> = (1..=8i32)
        .map(|k| {
            let port = server.port();
            tokio::spawn(async move {
                let c = timed("connect", connect(port)).await.expect("connect");
                let insert = c.prepare("INSERT INTO t VALUES ($1, $2)").await.expect("prepare");
                let update = c.prepare("UPDATE t SET v = v + 1 WHERE id = $1").await.unwrap();
                for i in 0..50i32 {
                    timed("insert", c.execute(&insert, &[&(k * 1000 + i), &k])).await.unwrap();
                    // Updates of the first rows conflict now and then: retried, as clients do.
                    while let Err(e) = timed("update", c.execute(&update, &[&(i % 5)])).await {
                        assert_eq!(sqlstate(&e), Some("40001"), "{e}");
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a client task");
    }
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let row = timed("count", c.query_one("SELECT count(*), sum(v) FROM t", &[])).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 50 + 8 * 50, "every acknowledged insert survives");
    let sum: i64 = row.get(1);
    // Inserted values 1..=8 fifty times each, plus 400 acknowledged increments.
    assert_eq!(sum, 50 * (1..=8).sum::<i64>() + 400, "every acknowledged update survives");
}

/// The spill files (`spill-<id>.dat`) in every log device directory of `data_dir`.
fn spill_files(data_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for device in std::fs::read_dir(data_dir.join("wal")).expect("wal dir") {
        for f in std::fs::read_dir(device.expect("device").path()).expect("device dir") {
            let path = f.expect("entry").path();
            if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("spill-")) {
                out.push(path);
            }
        }
    }
    out
}

/// A transaction far larger than a log buffer (100 000 rows, ~11 MB of log, against an 8 MiB
/// ring) commits: its writes go to a spill file of its device, synced before its (small)
/// record. It survives a SIGKILL; a spill file that no record refers to is deleted at startup;
/// and once a checkpoint covers the transaction, its spill file is deleted too.
#[tokio::test]
async fn a_transaction_larger_than_the_log_buffer_spills_and_survives_a_crash() {
    if tests::against_pg() {
        println!("this test is Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    timed("ddl", c.batch_execute("CREATE TABLE big (a int PRIMARY KEY, f char(84))"))
        .await
        .expect("ddl");
    timed(
        "insert",
        c.batch_execute("INSERT INTO big SELECT g, 'x' FROM generate_series(1, 100000) g"),
    )
    .await
    .expect("a transaction larger than the log buffer commits");
    assert_eq!(spill_files(server.data_dir()).len(), 1, "its writes went to one spill file");
    // An orphan: a spill file whose transaction never got its record written.
    let orphan = server.data_dir().join("wal").join("0").join("spill-00000000000099999999.dat");
    std::fs::write(&orphan, b"no record refers to this").expect("plant an orphan");
    drop(c);
    server.restart();
    assert!(!orphan.exists(), "an orphan spill file is deleted at startup");
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let row =
        timed("count", c.query_one("SELECT count(*), sum(a) FROM big", &[])).await.expect("count");
    assert_eq!(row.get::<_, i64>(0), 100_000, "every row of the spilled transaction is back");
    assert_eq!(row.get::<_, i64>(1), 5_000_050_000);
    timed("checkpoint", c.batch_execute("CHECKPOINT")).await.expect("checkpoint");
    assert!(spill_files(server.data_dir()).is_empty(), "a checkpoint covering it deletes it");
    let row = timed("count", c.query_one("SELECT count(*) FROM big WHERE f = 'x'", &[]))
        .await
        .expect("count");
    assert_eq!(row.get::<_, i64>(0), 100_000);
}

/// A `serial` column never gives a value twice, across crashes: clients insert rows numbered
/// by the sequence (and take values of a `CREATE SEQUENCE` one) while the server is killed
/// (SIGKILL) in the middle of their work, five times. After each restart every acknowledged row
/// is there with the id it was given, new rows get ids above every existing one (a repeated id
/// would also fail the primary key), and the standalone sequence continues above every value it
/// gave.
#[tokio::test]
async fn serial_values_survive_crashes_and_are_never_given_twice() {
    if tests::against_pg() {
        println!("this crash test is Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    timed(
        "ddl",
        c.batch_execute(
            "CREATE TABLE numbered (id serial PRIMARY KEY, v text);
             CREATE SEQUENCE ids START WITH 1 INCREMENT BY 50",
        ),
    )
    .await
    .expect("create");
    drop(c);
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(i32, String)>::new()));
    let taken = std::sync::Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    for round in 0..5 {
        let mut clients = Vec::new();
        for client in 0..4 {
            let port = server.port();
            let acknowledged = acknowledged.clone();
            let taken = taken.clone();
            clients.push(tokio::spawn(async move {
                let Ok(c) = connect(port).await else { return };
                let insert = c.prepare("INSERT INTO numbered (v) VALUES ($1) RETURNING id").await;
                let Ok(insert) = insert else { return };
                for n in 0.. {
                    let v = format!("{round}/{client}/{n}");
                    match c.query_one(&insert, &[&v]).await {
                        Ok(row) => acknowledged.lock().unwrap().push((row.get(0), v)),
                        Err(_) => return, // the server was killed
                    }
                    match c.query_one("SELECT nextval('ids')", &[]).await {
                        Ok(row) => taken.lock().unwrap().push(row.get(0)),
                        Err(_) => return,
                    }
                }
            }));
        }
        tokio::time::sleep(std::time::Duration::from_millis(150 + 70 * round)).await;
        server.kill();
        for client in clients {
            timed("client ends", client).await.expect("client task");
        }
        server.restart();
        let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
        let rows = timed("read", c.query("SELECT id, v FROM numbered", &[])).await.expect("read");
        let present: std::collections::HashMap<i32, String> =
            rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let acknowledged = acknowledged.lock().unwrap().clone();
        assert!(!acknowledged.is_empty(), "round {round}: no insert was acknowledged");
        for (id, v) in &acknowledged {
            assert_eq!(present.get(id), Some(v), "round {round}: acknowledged row {id} lost");
        }
        let highest = present.keys().max().copied().unwrap_or(0);
        let row = timed(
            "insert after restart",
            c.query_one("INSERT INTO numbered (v) VALUES ('after') RETURNING id", &[]),
        )
        .await
        .expect("a new id, not one given before the crash");
        let id: i32 = row.get(0);
        assert!(id > highest, "round {round}: new id {id} not above {highest}");
        let most = taken.lock().unwrap().iter().max().copied().expect("some nextval returned");
        let row = timed("nextval", c.query_one("SELECT nextval('ids')", &[])).await.expect("next");
        let next: i64 = row.get(0);
        assert!(next > most, "round {round}: nextval gave {next} after {most} before the crash");
        taken.lock().unwrap().push(next);
        timed("tidy", c.batch_execute("DELETE FROM numbered WHERE v = 'after'"))
            .await
            .expect("delete");
    }
}

/// timestamptz and interval values come back from a checkpoint and from the log after a
/// SIGKILL, with their indexes: the rows written before the CHECKPOINT are loaded from it, the
/// later ones replayed.
#[tokio::test]
async fn timestamptz_and_interval_values_survive_a_crash() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let setup = "SET TIME ZONE 'Asia/Kolkata';
         CREATE TABLE times (id int PRIMARY KEY, at timestamptz NOT NULL, took interval);
         CREATE UNIQUE INDEX times_took ON times (took);
         CREATE INDEX times_at ON times (at);
         INSERT INTO times VALUES (1, '2024-07-01 12:00:00.25', '1 mon'),
                                  (2, '2024-03-10 02:30 America/New_York', '-1 day +02:00:00');
         CHECKPOINT;
         INSERT INTO times VALUES (3, '1850-01-01 00:00+00', '1 year 2 mons 3 days 04:05:06.5');
         UPDATE times SET took = '12:00:00' WHERE id = 2;";
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    timed("zone", c.batch_execute("SET TIME ZONE 'UTC'")).await.expect("set");
    let rows = timed("select", c.simple_query("SELECT id, at, took FROM times ORDER BY at"))
        .await
        .expect("select");
    let rows: Vec<String> = rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..3).map(|i| r.get(i).unwrap_or("NULL")).collect::<Vec<_>>().join(" | "))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        rows,
        [
            "3 | 1850-01-01 00:00:00+00 | 1 year 2 mons 3 days 04:05:06.5",
            "2 | 2024-03-10 07:30:00+00 | 12:00:00",
            "1 | 2024-07-01 06:30:00.25+00 | 1 mon",
        ]
    );
    // The interval index survived, keyed by span: '30 days' is '1 mon'.
    let row = timed("by span", c.query_one("SELECT id FROM times WHERE took = '30 days'", &[]))
        .await
        .expect("lookup");
    assert_eq!(row.get::<_, i32>(0), 1);
    let err = timed("dup", c.batch_execute("INSERT INTO times VALUES (4, now(), '720 hours')"))
        .await
        .expect_err("the unique index survived");
    assert_eq!(sqlstate(&err), Some("23505"));
}

#[tokio::test]
async fn dropped_columns_stay_dropped_across_crashes() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    // Rows written before each drop keep the dropped value in their place (in the checkpoint
    // and in the log); after a crash they must decode with the catalog's dropped columns.
    let setup = "CREATE TABLE dc (id int PRIMARY KEY, a text, b int UNIQUE, c serial);
         INSERT INTO dc (id, a, b) VALUES (1, 'one', 10), (2, 'two', 20);
         CHECKPOINT;
         INSERT INTO dc (id, a, b) VALUES (3, 'three', 30);
         ALTER TABLE dc DROP COLUMN a;
         INSERT INTO dc VALUES (4, 40);
         ALTER TABLE dc DROP COLUMN b;
         INSERT INTO dc (id) VALUES (5);
         ALTER TABLE dc ADD COLUMN a int DEFAULT 7;";
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    let expected = ["1 1 7", "2 2 7", "3 3 7", "4 4 7", "5 5 7"];
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    for round in 0..2 {
        server.restart();
        let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
        let rows =
            timed("select", c.query("SELECT * FROM dc ORDER BY id", &[])).await.expect("select");
        let names: Vec<&str> = rows[0].columns().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["id", "c", "a"], "round {round}: the columns left, in order");
        let got: Vec<String> = rows
            .iter()
            .map(|r| {
                format!("{} {} {}", r.get::<_, i32>(0), r.get::<_, i32>(1), r.get::<_, i32>(2))
            })
            .collect();
        assert_eq!(got, expected, "round {round}");
        // b's unique index went with it: nothing stops a second row like the first.
        timed("insert", c.batch_execute(&format!("INSERT INTO dc VALUES ({}, 9, 8)", 10 + round)))
            .await
            .expect("insert after the crash");
        timed("delete", c.batch_execute(&format!("DELETE FROM dc WHERE id = {}", 10 + round)))
            .await
            .expect("delete");
        let err = timed("gone", c.batch_execute("SELECT b FROM dc")).await.expect_err("b is gone");
        assert_eq!(sqlstate(&err), Some("42703"));
        // The second round recovers from a checkpoint taken after the drops.
        timed("checkpoint", c.batch_execute("CHECKPOINT")).await.expect("checkpoint");
    }
}

#[tokio::test]
async fn uuid_values_and_keys_survive_a_crash() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let setup = "CREATE TABLE ids (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), other uuid UNIQUE, n int);
         INSERT INTO ids VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '00000000-0000-0000-0000-000000000001', 1);
         CHECKPOINT;
         INSERT INTO ids (other, n) VALUES ('ffffffff-ffff-ffff-ffff-ffffffffffff', 2);";
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    let generated: String =
        timed("generated", c.query_one("SELECT id::text FROM ids WHERE n = 2", &[]))
            .await
            .expect("generated id")
            .get(0);
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let lookup = "SELECT n FROM ids WHERE id = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'";
    let row = timed("by key", c.query_one(lookup, &[])).await.expect("lookup");
    assert_eq!(row.get::<_, i32>(0), 1);
    let by_generated = format!("SELECT n FROM ids WHERE id = '{generated}'");
    let row = timed("generated", c.query_one(&by_generated, &[])).await.expect("generated");
    assert_eq!(row.get::<_, i32>(0), 2);
    let err = timed(
        "unique",
        c.batch_execute("INSERT INTO ids (other) VALUES ('ffffffff-ffff-ffff-ffff-ffffffffffff')"),
    )
    .await
    .expect_err("the unique uuid index survived");
    assert_eq!(sqlstate(&err), Some("23505"));
}

#[tokio::test]
async fn retyped_columns_read_their_rows_across_crashes() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    // ALTER COLUMN … TYPE rewrites no row: rows in the checkpoint and in the log, written
    // under the old types, must read under the new ones after a crash.
    let setup = "CREATE TABLE rt (id smallint PRIMARY KEY, n int, v varchar(4), m numeric(5,2));
         INSERT INTO rt VALUES (1, 2147483647, 'abcd', 123.45);
         CHECKPOINT;
         INSERT INTO rt VALUES (2, -5, 'x', -1.5);
         ALTER TABLE rt ALTER COLUMN id TYPE bigint, ALTER COLUMN n TYPE bigint,
             ALTER COLUMN v TYPE text, ALTER COLUMN m TYPE numeric(12,2);
         INSERT INTO rt VALUES (5000000000, 9000000000, 'longer than four', 1234567890.12);";
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    let expected = [
        "1 2147483647 abcd 123.45",
        "2 -5 x -1.50",
        "5000000000 9000000000 longer than four 1234567890.12",
    ];
    for round in 0..2 {
        server.restart();
        let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
        let rows = timed("select", c.query("SELECT id, n, v, m::text FROM rt ORDER BY id", &[]))
            .await
            .expect("select");
        let got: Vec<String> = rows
            .iter()
            .map(|r| {
                let (id, n): (i64, i64) = (r.get(0), r.get(1));
                format!("{id} {n} {} {}", r.get::<_, String>(2), r.get::<_, String>(3))
            })
            .collect();
        assert_eq!(got, expected, "round {round}");
        let by_key = "SELECT n FROM rt WHERE id = 5000000000";
        let row = timed("by key", c.query_one(by_key, &[])).await.expect("lookup by the wide key");
        assert_eq!(row.get::<_, i64>(0), 9_000_000_000);
        // The second round recovers from a checkpoint taken after the change.
        timed("checkpoint", c.batch_execute("CHECKPOINT")).await.expect("checkpoint");
    }
}

#[tokio::test]
async fn time_values_and_keys_survive_a_crash() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let setup = "CREATE TABLE slots (t time PRIMARY KEY, ends time UNIQUE, n int);
         INSERT INTO slots VALUES ('00:00', '24:00', 1), ('12:30:00.25', NULL, 2);
         CHECKPOINT;
         INSERT INTO slots VALUES ('23:59:59.999999', '08:00', 3);";
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let rows = timed("select", c.query("SELECT t::text, ends::text, n FROM slots ORDER BY t", &[]))
        .await
        .expect("select");
    let got: Vec<(String, Option<String>, i32)> =
        rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
    let want = [
        ("00:00:00", Some("24:00:00"), 1),
        ("12:30:00.25", None, 2),
        ("23:59:59.999999", Some("08:00:00"), 3),
    ];
    let want: Vec<(String, Option<String>, i32)> =
        want.iter().map(|(t, e, n)| (t.to_string(), e.map(str::to_string), *n)).collect();
    assert_eq!(got, want);
    let row = timed("by key", c.query_one("SELECT n FROM slots WHERE t = '12:30:00.25'", &[]))
        .await
        .expect("lookup by key");
    assert_eq!(row.get::<_, i32>(0), 2);
    let err = timed("unique", c.batch_execute("INSERT INTO slots VALUES ('01:00', '24:00', 4)"))
        .await
        .expect_err("the unique time index survived");
    assert_eq!(sqlstate(&err), Some("23505"));
}

/// jsonb values and keys are logged and checkpointed as their text: after a SIGKILL the
/// documents read back the same, in PostgreSQL's jsonb order, and the unique jsonb index
/// still refuses an equal document; json values come back exactly as written.
#[tokio::test]
async fn jsonb_values_and_keys_survive_a_crash() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let setup = r#"CREATE TABLE jd (id int PRIMARY KEY, doc jsonb UNIQUE, raw json);
         INSERT INTO jd VALUES (9, '[9]', ' {"b":1,  "b":2} ');
         INSERT INTO jd VALUES (1, '{"a": [1, 2.50], "s": "\u00e9\"\n"}'), (2, '[]');
         CHECKPOINT;
         INSERT INTO jd VALUES (3, 'null'), (4, '{"a": {"b": null}}');
         UPDATE jd SET doc = doc || '{"z": true}' WHERE id = 1;"#;
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let rows = timed("select", c.query("SELECT id, doc::text AS body FROM jd ORDER BY doc", &[]))
        .await
        .expect("select");
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let want = [
        (2, "[]"),
        (3, "null"),
        (9, "[9]"),
        (4, r#"{"a": {"b": null}}"#),
        (1, r#"{"a": [1, 2.50], "s": "é\"\n", "z": true}"#),
    ];
    let want: Vec<(i32, String)> = want.iter().map(|(i, d)| (*i, d.to_string())).collect();
    assert_eq!(got, want);
    let raw = timed("json", c.query_one("SELECT raw::text, raw ->> 'b' FROM jd WHERE id = 9", &[]))
        .await
        .expect("json");
    assert_eq!(
        (raw.get::<_, String>(0), raw.get::<_, String>(1)),
        (r#" {"b":1,  "b":2} "#.into(), "2".into())
    );
    let err = timed("unique", c.batch_execute(r#"INSERT INTO jd VALUES (5, '{"a":{"b":null}}')"#))
        .await
        .expect_err("the unique jsonb index survived");
    assert_eq!(sqlstate(&err), Some("23505"));
}

/// Arrays are logged and checkpointed in the row format (their elements as a nested row):
/// after a SIGKILL the values read back the same — NULL elements, empty arrays, quoted text,
/// numerics and timestamps — and a unique index on an array column still finds them in
/// PostgreSQL's array order.
#[tokio::test]
async fn arrays_survive_a_crash() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let setup = r#"CREATE TABLE ar (id int PRIMARY KEY, tags text[] UNIQUE, nums numeric[], ts timestamp[]);
         INSERT INTO ar VALUES (1, '{a,"b c",NULL}', '{1.50,-2}', ARRAY['2024-01-02 03:04:05'::timestamp]);
         INSERT INTO ar VALUES (2, '{}', NULL, '{}');
         CHECKPOINT;
         INSERT INTO ar VALUES (3, ARRAY['a'], ARRAY[NULL, 7]::numeric[], NULL);
         UPDATE ar SET tags = tags || 'z"q'::text, nums = array_append(nums, 0.001) WHERE id = 1;"#;
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let rows = timed(
        "select",
        c.query(
            "SELECT id, tags::text, coalesce(nums::text, '-'), coalesce(ts::text, '-') FROM ar ORDER BY ar.tags",
            &[],
        ),
    )
    .await
    .expect("select");
    let got: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.get::<_, i32>(0),
                r.get::<_, String>(1),
                r.get::<_, String>(2),
                r.get::<_, String>(3)
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            "2 {} - {}",
            "3 {a} {NULL,7} -",
            r#"1 {a,"b c",NULL,"z\"q"} {1.50,-2,0.001} {"2024-01-02 03:04:05"}"#,
        ]
    );
    let err = timed("unique", c.batch_execute("INSERT INTO ar (id, tags) VALUES (5, ARRAY['a'])"))
        .await
        .expect_err("the unique array index survived");
    assert_eq!(sqlstate(&err), Some("23505"));
}

/// A partial unique index keeps its condition across a SIGKILL: after recovery rebuilds it
/// from the rows, a key is still unique among the rows that meet the condition only.
#[tokio::test]
async fn partial_unique_index_survives_a_crash() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let setup =
        "CREATE TABLE soft (id int PRIMARY KEY, email text, gone boolean NOT NULL DEFAULT false);
         CREATE UNIQUE INDEX soft_live ON soft (email) WHERE NOT gone;
         INSERT INTO soft VALUES (1, 'a', true), (2, 'a', false);
         CHECKPOINT;
         INSERT INTO soft VALUES (3, 'a', true), (4, 'b', false);";
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let err = timed("clash", c.batch_execute("INSERT INTO soft VALUES (5, 'a', false)"))
        .await
        .expect_err("a live duplicate");
    assert_eq!(sqlstate(&err), Some("23505"));
    timed("gone duplicate", c.batch_execute("INSERT INTO soft VALUES (5, 'a', true)"))
        .await
        .expect("a duplicate outside the condition");
    let err = timed("revive", c.batch_execute("UPDATE soft SET gone = false WHERE id = 1"))
        .await
        .expect_err("reviving a duplicate");
    assert_eq!(sqlstate(&err), Some("23505"));
    let row = timed("count", c.query_one("SELECT count(*) FROM soft WHERE email = 'a'", &[]))
        .await
        .expect("count");
    assert_eq!(row.get::<_, i64>(0), 4);
}

/// `ALTER SEQUENCE … OWNED BY` and `ALTER COLUMN … ADD GENERATED … AS IDENTITY` are catalog
/// changes: after a SIGKILL the identity column keeps counting past what it gave, and the
/// owned sequence still goes with its table.
#[tokio::test]
async fn sequence_owners_and_added_identities_survive_a_crash() {
    if tests::against_pg() {
        println!("Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    let setup = "CREATE TABLE owner_t (id bigint NOT NULL PRIMARY KEY, v int);
         CREATE SEQUENCE owned_s;
         ALTER SEQUENCE owned_s OWNED BY owner_t.v;
         ALTER TABLE owner_t ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (START WITH 5);
         INSERT INTO owner_t (v) VALUES (nextval('owned_s')), (nextval('owned_s'));";
    timed("setup", c.batch_execute(setup)).await.expect("setup");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    let insert = "INSERT INTO owner_t (v) VALUES (nextval('owned_s')) RETURNING id, v";
    let row = timed("insert", c.query_one(insert, &[])).await.expect("insert after restart");
    let (id, v): (i64, i64) = (row.get(0), row.get::<_, i32>(1).into());
    assert!(id > 6, "the identity gave {id} again");
    assert!(v > 2, "the sequence gave {v} again");
    timed("drop", c.batch_execute("DROP TABLE owner_t")).await.expect("drop");
    let err = timed("nextval", c.query_one("SELECT nextval('owned_s')", &[]))
        .await
        .expect_err("the owned sequence went with its table");
    assert_eq!(sqlstate(&err), Some("42P01"));
}
