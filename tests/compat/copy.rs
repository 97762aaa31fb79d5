//! `COPY … FROM STDIN` and `COPY … TO STDOUT` through real clients: psql scripts with inline
//! data (text and CSV, NULLs, escapes, a header) copied in and back out, tokio-postgres's
//! `copy_in` / `copy_out` (the extended protocol), failures that leave
//! nothing behind, COPY inside a transaction block, `pgbench -i` (its COPY, VACUUM and primary
//! keys) followed by a pgbench run whose balances must add up, and (Aspen only) an
//! acknowledged COPY surviving a SIGKILL. `TEST_AGAINST_PG=1` runs the other checks against
//! PostgreSQL 15.

use std::time::Duration;

use tests::Backend;
use tokio::process::Command;

use tests::ClientOutput as Output;

fn have(program: &std::path::Path) -> bool {
    let found = std::process::Command::new(program).arg("--version").output().is_ok();
    if !found {
        println!("{} not installed, skipping", program.display());
    }
    found
}

fn client(program: &std::path::Path, backend: &Backend) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(["-h", "127.0.0.1", "-p", &backend.port().to_string(), "-U", "postgres"])
        .env("PGCONNECT_TIMEOUT", "10")
        .env_remove("PGOPTIONS")
        .kill_on_drop(true);
    cmd
}

/// psql with no ~/.psqlrc, unaligned `|`-separated output, reading `script` from stdin.
async fn psql(backend: &Backend, script: &str, extra: &[&str]) -> Output {
    let mut cmd = client("psql".as_ref(), backend);
    cmd.args(["-X", "-d", "postgres", "--no-password", "-A", "-F", "|", "-f", "-"]).args(extra);
    run(cmd, Some(script)).await
}

async fn run(cmd: Command, stdin: Option<&str>) -> Output {
    tests::run_client(cmd, stdin, Duration::from_secs(120)).await
}

#[tokio::test]
async fn copy_text_and_csv_in_and_out_with_psql() {
    if !have("psql".as_ref()) {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let script = "DROP TABLE IF EXISTS c;\n\
        CREATE TABLE c (id int PRIMARY KEY, name text, price numeric(6,2), d date);\n\
        COPY c FROM STDIN;\n\
        1\tone\t1.50\t2024-01-02\n\
        2\t\\N\t20\t\\N\n\
        3\ttab\\there \\\\ \\101\t0\t2024-02-29\n\
        \\.\n\
        COPY c (id, name) FROM STDIN WITH (FORMAT csv, HEADER);\n\
        id,name\n\
        4,\"quoted, \"\"name\"\"\"\n\
        5,\n\
        6,\"\"\n\
        \\.\n\
        copy c from stdin with (delimiter ';', null 'nil');\n\
        7;nil;7;nil\n\
        \\.\n\
        SELECT id, name, name IS NULL AS null, price, d FROM c ORDER BY id;\n\
        COPY c TO STDOUT;\n\
        COPY (SELECT id, name FROM c WHERE id BETWEEN 4 AND 6 ORDER BY id) TO STDOUT \
        WITH (FORMAT csv, HEADER);\n";
    let out = psql(&b, script, &["-q", "-v", "ON_ERROR_STOP=1"]).await;
    assert!(out.success, "psql failed on {}: {}", b.name(), out.stderr);
    let expected = "id|name|null|price|d\n\
        1|one|f|1.50|2024-01-02\n\
        2||t|20.00|\n\
        3|tab\there \\ A|f|0.00|2024-02-29\n\
        4|quoted, \"name\"|f||\n\
        5||t||\n\
        6||f||\n\
        7||t|7.00|\n\
        (7 rows)\n\
        1\tone\t1.50\t2024-01-02\n\
        2\t\\N\t20.00\t\\N\n\
        3\ttab\\there \\\\ A\t0.00\t2024-02-29\n\
        4\tquoted, \"name\"\t\\N\t\\N\n\
        5\t\\N\t\\N\t\\N\n\
        6\t\t\\N\t\\N\n\
        7\t\\N\t7.00\t\\N\n\
        id,name\n\
        4,\"quoted, \"\"name\"\"\"\n\
        5,\n\
        6,\"\"\n";
    assert_eq!(out.stdout, expected, "on {}; stderr: {}", b.name(), out.stderr);
}

#[tokio::test]
async fn a_failed_copy_leaves_nothing_and_the_session_goes_on() {
    if !have("psql".as_ref()) {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    // No ON_ERROR_STOP: every statement runs; errors go to stderr. A COPY FROM STDIN that
    // fails before its data is still followed by `\.`: psql 15.20 skips the lines up to it
    // (older versions run them, and `\.` alone is then an invalid command on stderr), so such
    // a COPY has no data lines: the same output with either.
    let script = "DROP TABLE IF EXISTS f;\n\
        CREATE TABLE f (id int PRIMARY KEY, v int);\n\
        COPY f FROM STDIN;\n1\t1\n2\tx\n\\.\n\
        SELECT count(*) FROM f;\n\
        COPY f FROM STDIN;\n1\t1\n1\t2\n\\.\n\
        COPY f FROM STDIN;\n1\n\\.\n\
        COPY f FROM STDIN;\n1\t1\t1\n\\.\n\
        COPY f FROM STDIN;\n\\N\t3\n\\.\n\
        SELECT count(*) FROM f;\n\
        BEGIN;\n\
        COPY f FROM STDIN;\n7\t7\n\\.\n\
        SELECT count(*) FROM f;\n\
        ROLLBACK;\n\
        SELECT count(*) FROM f;\n\
        BEGIN;\n\
        COPY f FROM STDIN;\n8\t8\n\\.\n\
        COMMIT;\n\
        BEGIN;\n\
        VACUUM f;\n\
        ROLLBACK;\n\
        VACUUM f;\n\
        ANALYZE;\n\
        VACUUM nosuch;\n\
        COPY f (id, nosuch) FROM STDIN;\n\\.\n\
        COPY nosuch TO STDOUT;\n\
        COPY f FROM STDIN (FREEZE);\n9\t9\n\\.\n\
        BEGIN;\n\
        TRUNCATE f;\n\
        COPY f FROM STDIN (FREEZE);\n9\t9\n\\.\n\
        ROLLBACK;\n\
        ANALYZE f (v, nosuch2);\n\
        ANALYZE f (v, v);\n\
        VACUUM f (v);\n\
        VACUUM ANALYZE f (v);\n\
        CREATE VIEW fv AS SELECT id FROM f;\n\
        COPY fv TO STDOUT;\n\
        COPY fv FROM STDIN;\n\\.\n\
        COPY (SELECT id FROM fv) TO STDOUT;\n\
        DROP VIEW fv;\n\
        SELECT id, v FROM f;\n";
    let out = psql(&b, script, &["-t"]).await;
    let expected = "DROP TABLE\nCREATE TABLE\n0\n0\nBEGIN\nCOPY 1\n1\nROLLBACK\n0\n\
        BEGIN\nCOPY 1\nCOMMIT\nBEGIN\nROLLBACK\nVACUUM\nANALYZE\n\
        BEGIN\nTRUNCATE TABLE\nCOPY 1\nROLLBACK\nVACUUM\nCREATE VIEW\n8\nDROP VIEW\n8|8\n";
    assert_eq!(out.stdout, expected, "on {}; stderr: {}", b.name(), out.stderr);
    for message in [
        "invalid input syntax for type integer: \"x\"",
        "duplicate key value violates unique constraint",
        "missing data for column \"v\"",
        "extra data after last expected column",
        "null value in column \"id\" of relation \"f\" violates not-null constraint",
        // Where each error happened, as PostgreSQL says it (CONTEXT), and the failing row.
        "CONTEXT:  COPY f, line 2, column v: \"x\"\n",
        "CONTEXT:  COPY f, line 2\n",
        "CONTEXT:  COPY f, line 1: \"1\"\n",
        "CONTEXT:  COPY f, line 1: \"1\t1\t1\"\n",
        "DETAIL:  Failing row contains (null, 3).\nCONTEXT:  COPY f, line 1: \"\\N\t3\"\n",
        "VACUUM cannot run inside a transaction block",
        "column \"nosuch\" of relation \"f\" does not exist",
        "relation \"nosuch\" does not exist",
        // FREEZE only for a table this transaction created or truncated.
        "ERROR:  cannot perform COPY FREEZE because the table was not created or truncated in \
         the current subtransaction\n",
        // VACUUM and ANALYZE check their column lists.
        "ERROR:  column \"nosuch2\" of relation \"f\" does not exist\n",
        "ERROR:  column \"v\" of relation \"f\" appears more than once\n",
        "ERROR:  ANALYZE option must be specified when a column list is provided\n",
        // A view's rows only through COPY (query) TO.
        "ERROR:  cannot copy from view \"fv\"\nHINT:  Try the COPY (SELECT ...) TO variant.\n",
        "ERROR:  cannot copy to view \"fv\"\n",
    ] {
        assert!(
            out.stderr.contains(message),
            "{message:?} missing on {}: {}",
            b.name(),
            out.stderr
        );
    }
    // No error position: the statements COPY runs are not the client's text.
    assert!(!out.stderr.contains("LINE 1: COPY"), "on {}: {}", b.name(), out.stderr);
}

#[tokio::test]
async fn pgbench_initializes_and_its_balances_add_up() {
    let Some(bin) = tests::pg_bindir() else {
        println!("PostgreSQL 15's binaries not found, skipping");
        return;
    };
    let pgbench = bin.join("pgbench");
    if !have(&pgbench) || !have("psql".as_ref()) {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    // With foreign keys first: initializing again drops the four tables together.
    for args in
        [&["-i", "--foreign-keys", "-s", "1", "postgres"][..], &["-i", "-s", "1", "postgres"]]
    {
        let mut init = client(&pgbench, &b);
        init.args(args);
        let out = run(init, None).await;
        assert!(out.success, "pgbench {args:?} failed on {}: {}", b.name(), out.stderr);
    }
    let mut bench = client(&pgbench, &b);
    bench.args(["-n", "-c", "2", "-t", "100", "-M", "prepared", "--max-tries", "10", "postgres"]);
    let out = run(bench, None).await;
    assert!(out.success, "pgbench failed on {}: {}", b.name(), out.stderr);
    assert!(
        out.stdout.contains("number of transactions actually processed: 200/200"),
        "{}",
        out.stdout
    );
    let check = "SELECT count(*) FROM pgbench_accounts;\n\
        SELECT count(*) FROM pgbench_history;\n\
        SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(delta) FROM pgbench_history),\n\
               (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT sum(delta) FROM pgbench_history),\n\
               (SELECT sum(bbalance) FROM pgbench_branches) = (SELECT sum(delta) FROM pgbench_history);\n";
    let out = psql(&b, check, &["-t", "-v", "ON_ERROR_STOP=1"]).await;
    assert!(out.success, "psql failed on {}: {}", b.name(), out.stderr);
    assert_eq!(out.stdout, "100000\n200\nt|t|t\n", "on {}", b.name());
}

/// An acknowledged COPY survives a SIGKILL: 100 000 rows copied in through psql (one
/// transaction of a few MB of log), `COPY 100000` seen, the server killed and restarted on the
/// same data directory, every row back. Aspen only.
#[tokio::test]
async fn an_acknowledged_copy_survives_a_crash() {
    if tests::against_pg() || !have("psql".as_ref()) {
        return;
    }
    let mut server = tests::AspenServer::start();
    let backend_port = server.port();
    let mut data =
        String::from("CREATE TABLE big (id int PRIMARY KEY, v text);\nCOPY big FROM STDIN;\n");
    for i in 0..100_000 {
        data.push_str(&format!("{i}\trow {i}\n"));
    }
    data.push_str("\\.\n");
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-h", "127.0.0.1", "-p", &backend_port.to_string(), "-U", "postgres"])
        .args(["-d", "postgres", "-v", "ON_ERROR_STOP=1", "-f", "-"])
        .kill_on_drop(true);
    let out = run(cmd, Some(&data)).await;
    assert!(out.success, "psql failed: {}", out.stderr);
    assert_eq!(out.stdout, "CREATE TABLE\nCOPY 100000\n");
    server.restart(); // SIGKILL, then recovery
    let c = tests::connect(server.port()).await.expect("connect after the crash");
    let row = c
        .query_one("SELECT count(*), sum(id), min(v), max(length(v)) FROM big", &[])
        .await
        .expect("count");
    assert_eq!(row.get::<_, i64>(0), 100_000);
    assert_eq!(row.get::<_, i64>(1), 4_999_950_000);
    assert_eq!(row.get::<_, String>(2), "row 0");
    assert_eq!(row.get::<_, i32>(3), 9);
}

/// COPY through the extended protocol (tokio-postgres's `copy_in` and `copy_out`): rows in, a
/// failed and an abandoned copy that leave nothing, rows out; the connection goes on.
#[tokio::test]
async fn copy_in_and_out_through_the_extended_protocol() {
    use futures::{SinkExt, TryStreamExt};
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    c.batch_execute("DROP TABLE IF EXISTS x; CREATE TABLE x (id int PRIMARY KEY, v text)")
        .await
        .expect("create");
    let sink = c.copy_in("COPY x FROM STDIN").await.expect("copy_in");
    futures::pin_mut!(sink);
    for chunk in ["1\tone\n2\t", "two\n3\t\\N\n"] {
        sink.send(chunk.as_bytes()).await.expect("send");
    }
    assert_eq!(sink.finish().await.expect("finish"), 3);

    let sink = c.copy_in("COPY x FROM STDIN").await.expect("copy_in");
    futures::pin_mut!(sink);
    sink.send("4\tfour\n1\tdup\n".as_bytes()).await.expect("send");
    let err = sink.finish().await.expect_err("a duplicate key");
    assert_eq!(tests::sqlstate(&err), Some("23505"), "{err}");

    // A copy the client abandons (tokio-postgres sends CopyFail when the sink is dropped
    // unfinished) inserts nothing either.
    let sink = c.copy_in("COPY x FROM STDIN").await.expect("copy_in");
    {
        futures::pin_mut!(sink);
        sink.send("5\tfive\n".as_bytes()).await.expect("send");
    }
    let row = c.query_one("SELECT count(*) FROM x", &[]).await.expect("after CopyFail");
    assert_eq!(row.get::<_, i64>(0), 3, "on {}", b.name());

    let stream = c
        .copy_out("COPY (SELECT id, v FROM x ORDER BY id) TO STDOUT WITH (FORMAT csv)")
        .await
        .expect("copy_out");
    let chunks: Vec<_> = stream.try_collect().await.expect("rows out");
    let text: String = chunks.iter().map(|b| String::from_utf8_lossy(b.as_ref())).collect();
    assert_eq!(text, "1,one\n2,two\n3,\n", "on {}", b.name());
    let row = c.query_one("SELECT count(*) FROM x", &[]).await.expect("the connection goes on");
    assert_eq!(row.get::<_, i64>(0), 3);
}
