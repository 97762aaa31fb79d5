//! psql as a real client: `psql -c` (several commands), `psql -f FILE` (a script with comments,
//! multi-line statements, an error), and an interactive session driven over stdin. Outputs
//! are compared exactly, with `-X` (no ~/.psqlrc) and unaligned output so they are stable.
//!
//! Skipped (with a message) when `psql` is not installed. `TEST_AGAINST_PG=1` runs the same
//! checks against PostgreSQL 15.

use std::process::Stdio;
use std::time::Duration;

use tests::Backend;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// psql output (stdout, stderr) and whether it exited successfully.
struct Output {
    stdout: String,
    stderr: String,
    success: bool,
}

fn psql_available() -> bool {
    let found = std::process::Command::new("psql").arg("--version").output().is_ok();
    if !found {
        println!("psql not installed, skipping");
    }
    found
}

fn psql(backend: &Backend) -> Command {
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-h", "127.0.0.1", "-p", &backend.port().to_string()])
        .args(["-U", "postgres", "-d", "postgres", "--no-password"])
        .env("PGCONNECT_TIMEOUT", "10")
        .env_remove("PGOPTIONS")
        .kill_on_drop(true);
    cmd
}

async fn run(mut cmd: Command, stdin: Option<&str>) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn psql");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).await.expect("write to psql");
    }
    drop(input);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("psql did not finish within 30 s")
        .expect("psql output");
    Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        success: out.status.success(),
    }
}

#[tokio::test]
async fn psql_dash_c() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let mut cmd = psql(&b);
    cmd.args(["-v", "ON_ERROR_STOP=1", "-A", "-F", "|"])
        .args(["-c", "CREATE TABLE t (id int PRIMARY KEY, name text, price numeric(6,2))"])
        .args(["-c", "INSERT INTO t VALUES (1, 'one', 1.5), (2, NULL, 20)"])
        .args(["-c", "UPDATE t SET price = price * 2 WHERE id = 2"])
        .args(["-c", "SELECT id, name, price FROM t ORDER BY id"])
        .args(["-c", "SELECT 1 AS a; SELECT 'x' AS b"]);
    let out = run(cmd, None).await;
    assert!(out.success, "psql failed: {}", out.stderr);
    let expected =
        "CREATE TABLE\nINSERT 0 2\nUPDATE 1\nid|name|price\n1|one|1.50\n2||40.00\n(2 rows)\n\
                    a\n1\n(1 row)\nb\nx\n(1 row)\n";
    assert_eq!(out.stdout, expected, "stderr: {}", out.stderr);

    // An error: exit status 1 with ON_ERROR_STOP, the message on stderr.
    let mut cmd = psql(&b);
    cmd.args(["-v", "ON_ERROR_STOP=1", "-c", "SELECT * FROM no_such_table"]);
    let out = run(cmd, None).await;
    assert!(!out.success);
    assert!(out.stderr.contains("no_such_table"), "stderr: {}", out.stderr);

    // Tuples only, for scripts.
    let mut cmd = psql(&b);
    cmd.args(["-At", "-c", "SELECT count(*) FROM t"]);
    let out = run(cmd, None).await;
    assert_eq!((out.success, out.stdout.as_str()), (true, "2\n"), "stderr: {}", out.stderr);
}

#[tokio::test]
async fn psql_dash_f() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "-- a script as people write them\n\
         CREATE TABLE items (\n    id int PRIMARY KEY,\n    label varchar(10) NOT NULL\n);\n\
         \n\
         INSERT INTO items VALUES (1, 'a'),\n    (2, 'b');\n\
         /* a block comment */ SELECT count(*) AS n FROM items;\n\
         INSERT INTO items VALUES (1, 'dup');\n\
         \\echo after the error\n\
         SELECT label FROM items WHERE id = 2;\n",
    )
    .expect("write script");
    let mut cmd = psql(&b);
    cmd.args(["-A", "-q", "-f"]).arg(&script);
    let out = run(cmd, None).await;
    // Without ON_ERROR_STOP psql carries on after the error and exits 0.
    assert!(out.success, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "n\n2\n(1 row)\nafter the error\nlabel\nb\n(1 row)\n");
    assert!(
        out.stderr.contains("duplicate key") || out.stderr.contains("23505"),
        "stderr: {}",
        out.stderr
    );
    assert!(out.stderr.contains("script.sql:10"), "error location missing: {}", out.stderr);

    // With ON_ERROR_STOP the script stops at the error with exit status 3.
    let mut cmd = psql(&b);
    cmd.args(["-A", "-q", "-v", "ON_ERROR_STOP=1", "-c", "DROP TABLE items", "-f"]).arg(&script);
    let out = run(cmd, None).await;
    assert_eq!(out.stdout, "n\n2\n(1 row)\n", "stderr: {}", out.stderr);
    assert!(!out.success);
}

#[tokio::test]
async fn psql_interactive_session() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let mut cmd = psql(&b);
    cmd.args(["-q", "-A"]);
    let session = "\
CREATE TABLE kv (k text PRIMARY KEY, v int);
\\set val 42
INSERT INTO kv VALUES ('a', :val), ('b', 7);
BEGIN;
UPDATE kv SET v = v + 1
  WHERE k = 'b';
SELECT v FROM kv WHERE k = 'b';
SELECT * FROM missing;
SELECT 1;
ROLLBACK;
SELECT k, v FROM kv ORDER BY k;
\\echo :val
\\pset tuples_only on
SELECT sum(v) FROM kv;
SELECT 'multi' ||
  '-line'
  AS joined;
\\q
SELECT 'never reached';
";
    let out = run(cmd, Some(session)).await;
    assert!(out.success, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "v\n8\n(1 row)\nk|v\na|42\nb|7\n(2 rows)\n42\n49\nmulti-line\n");
    assert!(out.stderr.contains("missing"), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("current transaction is aborted"),
        "no 25P02 after the error: {}",
        out.stderr
    );
}
