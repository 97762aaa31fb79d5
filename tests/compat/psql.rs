//! psql as a real client: `psql -c` (several commands), `psql -f FILE` (a script with comments,
//! multi-line statements, an error), and an interactive session driven over stdin. Outputs
//! are compared exactly, with `-X` (no ~/.psqlrc) and unaligned output so they are stable.
//!
//! Skipped (with a message) when `psql` is not installed. `TEST_AGAINST_PG=1` runs the same
//! checks against PostgreSQL 15.

use std::process::Stdio;
use std::time::Duration;

use tests::Backend;
use tokio::process::Command;

use tests::ClientOutput as Output;

fn psql_available() -> bool {
    let found = std::process::Command::new("psql").arg("--version").output().is_ok();
    if !found {
        println!("psql not installed, skipping");
    }
    found
}

fn psql(backend: &Backend) -> Command {
    let mut cmd = Command::new("psql");
    cmd.args(connection_args(backend));
    client_env(&mut cmd);
    cmd
}

/// psql without ~/.psqlrc, as user `postgres` to database `postgres` on `backend`.
fn connection_args(backend: &Backend) -> Vec<String> {
    let port = backend.port().to_string();
    ["-X", "-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-d", "postgres", "--no-password"]
        .map(String::from)
        .to_vec()
}

fn client_env(cmd: &mut Command) {
    cmd.env("PGCONNECT_TIMEOUT", "10").env_remove("PGOPTIONS").kill_on_drop(true);
}

async fn run(cmd: Command, stdin: Option<&str>) -> Output {
    tests::run_client(cmd, stdin, Duration::from_secs(30)).await
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

/// psql's describe commands (`\d`, `\dt`, `\di`, `\d NAME`, `\dn`) as a regression script:
/// `compat/psql/describe.sql` run with `psql -a`, its output (errors included, in order)
/// compared with `describe.out`, which is what PostgreSQL 15 prints (`TEST_AGAINST_PG=1`
/// checks that). `UPDATE_EXPECTED=1` rewrites the expected file from the backend's output.
#[tokio::test]
async fn describe_commands_print_as_postgresql() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let dir = tests::tests_dir().join("compat/psql");
    let script = std::fs::read_to_string(dir.join("describe.sql")).expect("read describe.sql");
    // One stream, so that each error stays next to the command that caused it.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exec psql \"$@\" 2>&1", "psql", "-a", "-f", "-"]);
    cmd.args(connection_args(&b));
    client_env(&mut cmd);
    let out = run(cmd, Some(&script)).await;
    assert!(out.success, "psql failed: {}{}", out.stdout, out.stderr);
    let expected_path = dir.join("describe.out");
    if std::env::var("UPDATE_EXPECTED").is_ok_and(|v| v == "1") {
        std::fs::write(&expected_path, &out.stdout).expect("write describe.out");
    }
    let expected = std::fs::read_to_string(&expected_path).expect("read describe.out");
    if out.stdout != expected {
        let diff: Vec<String> = expected
            .lines()
            .zip(out.stdout.lines())
            .enumerate()
            .filter(|(_, (e, a))| e != a)
            .take(10)
            .map(|(i, (e, a))| format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1))
            .collect();
        panic!(
            "{} printed something else than describe.out ({} lines against {}):\n{}\n\nwhole \
             output:\n{}",
            b.name(),
            out.stdout.lines().count(),
            expected.lines().count(),
            diff.join("\n"),
            out.stdout
        );
    }
}

/// Runs `script` with `psql -q -f -` and checks that psql printed each of `expected` (an
/// error with its DETAIL lines) on stderr.
async fn assert_script_errors(b: &Backend, script: &str, expected: &[String]) {
    let mut cmd = psql(b);
    cmd.args(["-q", "-f", "-"]);
    let out = run(cmd, Some(script)).await;
    for e in expected {
        assert!(out.stderr.contains(e.as_str()), "{e:?} missing on {}: {}", b.name(), out.stderr);
    }
}

/// Errors as psql shows them with their DETAIL and HINT lines (PostgreSQL 15's text): a DROP
/// that other objects depend on, a value for a GENERATED ALWAYS column, an unknown function,
/// a DROP INDEX of a primary key's index.
#[tokio::test]
async fn errors_carry_detail_and_hint() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let mut cmd = psql(&b);
    cmd.arg("-q")
        .args(["-c", "CREATE TABLE hp (id int PRIMARY KEY)"])
        .args(["-c", "CREATE TABLE hc (p int REFERENCES hp (id))"])
        .args(["-c", "DROP TABLE hp"])
        .args(["-c", "CREATE TABLE hg (id int GENERATED ALWAYS AS IDENTITY)"])
        .args(["-c", "INSERT INTO hg VALUES (1)"])
        .args(["-c", "SELECT nosuchfn(1)"])
        .args(["-c", "DROP INDEX hp_pkey"]);
    let out = run(cmd, None).await;
    let expected = "\
ERROR:  cannot drop table hp because other objects depend on it
DETAIL:  constraint hc_p_fkey on table hc depends on table hp
HINT:  Use DROP ... CASCADE to drop the dependent objects too.
ERROR:  cannot insert a non-DEFAULT value into column \"id\"
DETAIL:  Column \"id\" is an identity column defined as GENERATED ALWAYS.
HINT:  Use OVERRIDING SYSTEM VALUE to override.
ERROR:  function nosuchfn(integer) does not exist
LINE 1: SELECT nosuchfn(1)
               ^
HINT:  No function matches the given name and argument types. You might need to add explicit type casts.
ERROR:  cannot drop index hp_pkey because constraint hp_pkey on table hp requires it
HINT:  You can drop constraint hp_pkey on table hp instead.
";
    assert_eq!(out.stderr, expected, "on {}", b.name());
}

/// A literal that does not read as the type it meets is an error at the literal (psql's LINE
/// and caret), wherever it stands: in a cast, a comparison, arithmetic, VALUES, SET; a cast
/// that does not exist points at the cast; a value too long or too precise for its column has
/// no position, as in PostgreSQL.
#[tokio::test]
async fn literal_errors_point_at_the_literal() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let mut cmd = psql(&b);
    cmd.arg("-q").args(["-c", "CREATE TABLE lp (id int PRIMARY KEY, u uuid, n numeric(5,2))"]);
    for sql in [
        "SELECT CAST('abc' AS int)",
        "SELECT * FROM lp WHERE u = 'zz'",
        "SELECT 1 + 'x'",
        "INSERT INTO lp (id, n) VALUES (1, '12345.6')",
        "UPDATE lp SET id = 'one'",
        "SELECT 1::uuid",
    ] {
        cmd.args(["-c", sql]);
    }
    let out = run(cmd, None).await;
    let expected = "\
ERROR:  invalid input syntax for type integer: \"abc\"
LINE 1: SELECT CAST('abc' AS int)
                    ^
ERROR:  invalid input syntax for type uuid: \"zz\"
LINE 1: SELECT * FROM lp WHERE u = 'zz'
                                   ^
ERROR:  invalid input syntax for type integer: \"x\"
LINE 1: SELECT 1 + 'x'
                   ^
ERROR:  numeric field overflow
DETAIL:  A field with precision 5, scale 2 must round to an absolute value less than 10^3.
ERROR:  invalid input syntax for type integer: \"one\"
LINE 1: UPDATE lp SET id = 'one'
                           ^
ERROR:  cannot cast type integer to uuid
LINE 1: SELECT 1::uuid
                ^
";
    assert_eq!(out.stderr, expected, "on {}", b.name());
}

/// Constraint errors as psql shows them, DETAIL lines included: the row that failed NOT
/// NULL (coerced to the columns' types, long values cut at 64 bytes), and the message for a
/// NOT NULL column or primary key added over NULLs.
#[tokio::test]
async fn not_null_errors_say_which_row_and_column() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let script = "DROP TABLE IF EXISTS nn;\n\
        CREATE TABLE nn (a int NOT NULL, b text, c numeric(6,2), d varchar(3));\n\
        INSERT INTO nn VALUES (NULL, repeat('é', 40), 1.005, 'ab');\n\
        INSERT INTO nn (b) VALUES ('x');\n\
        INSERT INTO nn VALUES (NULL, 'x', 1, 'abcd');\n\
        INSERT INTO nn VALUES (1, 'ok');\n\
        UPDATE nn SET a = NULL;\n\
        CREATE TABLE nulls (a int, b int);\n\
        INSERT INTO nulls VALUES (NULL, 1);\n\
        ALTER TABLE nulls ADD COLUMN c int NOT NULL;\n\
        ALTER TABLE nulls ADD PRIMARY KEY (a);\n\
        DROP TABLE nn, nulls;\n";
    let violates =
        "ERROR:  null value in column \"a\" of relation \"nn\" violates not-null constraint";
    let expected: [String; 6] = [
        format!(
            "{violates}\nDETAIL:  Failing row contains (null, {}..., 1.01, ab).\n",
            "é".repeat(32)
        ),
        format!("{violates}\nDETAIL:  Failing row contains (null, x, null, null).\n"),
        // The value too long for d is found before the NULL in a.
        "ERROR:  value too long for type character varying(3)\n".into(),
        format!("{violates}\nDETAIL:  Failing row contains (null, ok, null, null).\n"),
        "ERROR:  column \"c\" of relation \"nulls\" contains null values\n".into(),
        "ERROR:  column \"a\" of relation \"nulls\" contains null values\n".into(),
    ];
    assert_script_errors(&b, script, &expected).await;
}

/// CHECK violations as psql shows them: the constraint PostgreSQL names (`<table>_<column>_check`
/// for one column, `<table>_check` otherwise, numbered while taken; checked in name order)
/// and the failing row; adding a check that a row violates.
#[tokio::test]
async fn check_errors_name_the_constraint_and_the_row() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let script = "DROP TABLE IF EXISTS ck;\n\
        CREATE TABLE ck (a int CHECK (a > 0) CHECK (a < 10), b text, CHECK (a < length(b)), CHECK (b <> ''));\n\
        INSERT INTO ck VALUES (0, 'x');\n\
        INSERT INTO ck VALUES (10, 'x');\n\
        INSERT INTO ck VALUES (5, 'x');\n\
        INSERT INTO ck VALUES (1, '');\n\
        INSERT INTO ck VALUES (1, 'ab'), (2, NULL);\n\
        UPDATE ck SET a = a + 7;\n\
        ALTER TABLE ck ADD CHECK (a > 1);\n\
        ALTER TABLE ck ADD COLUMN c int DEFAULT 0 CHECK (c > 0);\n\
        DROP TABLE ck;\n";
    let violates = |name: &str| {
        format!("ERROR:  new row for relation \"ck\" violates check constraint \"{name}\"\n")
    };
    let expected: [String; 7] = [
        format!("{}DETAIL:  Failing row contains (0, x).\n", violates("ck_a_check")),
        format!("{}DETAIL:  Failing row contains (10, x).\n", violates("ck_a_check1")),
        format!("{}DETAIL:  Failing row contains (5, x).\n", violates("ck_check")),
        format!("{}DETAIL:  Failing row contains (1, ).\n", violates("ck_b_check")),
        format!("{}DETAIL:  Failing row contains (8, ab).\n", violates("ck_check")),
        "ERROR:  check constraint \"ck_a_check2\" of relation \"ck\" is violated by some row\n"
            .into(),
        "ERROR:  check constraint \"ck_c_check\" of relation \"ck\" is violated by some row\n"
            .into(),
    ];
    assert_script_errors(&b, script, &expected).await;
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

/// psql against a Unix-domain socket, as `psql -h DIR -p PORT` connects to PostgreSQL's
/// `DIR/.s.PGSQL.PORT` (`aspen serve --unix-socket-dir DIR`); tokio-postgres with binary
/// parameters over the same socket; and a socket file left behind by a killed server is
/// replaced when the next server starts on that port.
#[tokio::test]
async fn psql_over_a_unix_socket() {
    if !psql_available() {
        return;
    }
    let sockets = tempfile::tempdir().expect("socket dir");
    let dir = sockets.path().to_str().expect("utf-8 path").to_owned();
    let data = tests::fresh_data_dir().expect("data dir");
    let mut server = tests::AspenServer::try_start_in(
        data,
        vec!["--unix-socket-dir".into(), dir.clone().into()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let port = server.port().to_string();
    let socket_file = sockets.path().join(format!(".s.PGSQL.{port}"));
    assert!(socket_file.exists(), "no socket at {}", socket_file.display());

    let psql_unix = || {
        let mut cmd = Command::new("psql");
        cmd.args(["-X", "-h", &dir, "-p", &port, "-U", "postgres", "-d", "postgres"])
            .args(["--no-password", "-v", "ON_ERROR_STOP=1", "-A", "-F", "|"])
            .env("PGCONNECT_TIMEOUT", "10")
            .env_remove("PGOPTIONS")
            .kill_on_drop(true);
        cmd
    };
    let mut cmd = psql_unix();
    cmd.args(["-c", "CREATE TABLE u (id int PRIMARY KEY, v text)"])
        .args(["-c", "INSERT INTO u VALUES (1, 'one'), (2, 'two')"])
        .args(["-c", "SELECT id, v FROM u ORDER BY id"]);
    let out = run(cmd, None).await;
    assert!(out.success, "psql failed: {}", out.stderr);
    assert_eq!(out.stdout, "CREATE TABLE\nINSERT 0 2\nid|v\n1|one\n2|two\n(2 rows)\n");

    let (client, connection) = tokio_postgres::Config::new()
        .host_path(sockets.path())
        .port(server.port())
        .user("postgres")
        .dbname("postgres")
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect over the Unix-domain socket");
    tokio::spawn(connection);
    let row = client.query_one("SELECT v FROM u WHERE id = $1", &[&2i32]).await.expect("select");
    assert_eq!(row.get::<_, String>(0), "two");
    drop(client);

    // SIGKILL leaves the socket file behind; a server on the same port replaces it.
    server.kill();
    assert!(socket_file.exists(), "the killed server's socket file is gone");
    let mut next = std::process::Command::new(tests::aspen_bin())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(server.data_dir())
        .args(["--unix-socket-dir", &dir])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start aspen again");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let out = loop {
        let mut cmd = psql_unix();
        cmd.args(["-At", "-c", "SELECT count(*) FROM u"]);
        let out = run(cmd, None).await;
        if out.success || std::time::Instant::now() > deadline {
            break out;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = next.kill();
    let _ = next.wait();
    assert!(out.success, "psql over the replaced socket failed: {}", out.stderr);
    assert_eq!(out.stdout, "2\n", "the committed rows came back over the new socket");
}

/// `--unix-socket-dir` never takes a socket path from someone else: a live socket there (a
/// listener that accepts) or a file that is not a socket makes `aspen serve` exit with an
/// error, and the path is left as it was.
#[test]
fn a_unix_socket_path_in_use_is_refused() {
    let sockets = tempfile::tempdir().expect("socket dir");
    // Runs `aspen serve` until it exits (killed after 60 s: a server that started serving).
    let serve = |port: u16| {
        let mut child = std::process::Command::new(tests::aspen_bin())
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(sockets.path().join(format!("data-{port}")))
            .arg("--unix-socket-dir")
            .arg(sockets.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aspen serve");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while child.try_wait().expect("wait").is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        child.wait_with_output().expect("aspen serve's output")
    };

    // A live socket: another server's (here a bare listener, which accepts into its backlog).
    let port = tests::free_port();
    let path = sockets.path().join(format!(".s.PGSQL.{port}"));
    let other = std::os::unix::net::UnixListener::bind(&path).expect("bind the other socket");
    let out = serve(port);
    assert!(!out.status.success(), "aspen serve took a live socket's path");
    assert!(out.stdout.is_empty(), "it printed its listening line: {:?}", out.stdout);
    std::os::unix::net::UnixStream::connect(&path).expect("the other socket still answers");
    drop(other);

    // A regular file.
    let port = tests::free_port();
    let path = sockets.path().join(format!(".s.PGSQL.{port}"));
    std::fs::write(&path, b"not a socket").expect("write the file");
    let out = serve(port);
    assert!(!out.status.success(), "aspen serve replaced a file that is not a socket");
    assert_eq!(std::fs::read(&path).expect("the file is still there"), b"not a socket");
}

/// psql sends `PGTZ` as the startup parameter `timezone`: the session reads and prints
/// timestamptz values in that zone and `SHOW TimeZone` spells it canonically; a zone the
/// server cannot read refuses the connection (FATAL 22023), as PostgreSQL does, and the server
/// goes on serving others.
#[tokio::test]
async fn pgtz_sets_the_session_time_zone() {
    if !psql_available() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let mut cmd = psql(&b);
    cmd.env("PGTZ", "europe/berlin").args([
        "-At",
        "-c",
        "SHOW TimeZone",
        "-c",
        "SELECT '2024-07-01 12:00'::timestamptz",
    ]);
    let out = run(cmd, None).await;
    assert!(out.success, "psql failed: {}", out.stderr);
    assert_eq!(out.stdout, "Europe/Berlin\n2024-07-01 12:00:00+02\n");

    let mut cmd = psql(&b);
    cmd.env("PGTZ", "Nowhere/Zone").args(["-c", "SELECT 1"]);
    let out = run(cmd, None).await;
    assert!(!out.success, "connected with an unknown zone: {}", out.stdout);
    assert!(
        out.stderr.contains("FATAL:  invalid value for parameter \"TimeZone\": \"Nowhere/Zone\""),
        "stderr: {}",
        out.stderr
    );

    let mut cmd = psql(&b);
    cmd.args(["-At", "-c", "SELECT 1"]);
    let out = run(cmd, None).await;
    assert_eq!((out.success, out.stdout.as_str()), (true, "1\n"), "stderr: {}", out.stderr);
}

/// `\dn+` and `\l+` (Aspen only: PostgreSQL's show its own privileges and sizes): the columns
/// PostgreSQL 15's have, with what Aspen can say — no access privileges (it keeps none), no
/// size for a database in memory, the `pg_default` tablespace, the public schema's description.
#[tokio::test]
async fn verbose_schema_and_database_lists() {
    if !psql_available() || tests::against_pg() {
        return;
    }
    let Some(b) = Backend::from_env() else { return };
    let mut cmd = psql(&b);
    cmd.args(["-v", "ON_ERROR_STOP=1", "-A", "-F", "|", "-c", "\\dn+", "-c", "\\l+"]);
    let out = run(cmd, None).await;
    assert!(out.success, "psql failed: {}{}", out.stdout, out.stderr);
    let want = "List of schemas\n\
                Name|Owner|Access privileges|Description\n\
                public|pg_database_owner||standard public schema\n\
                (1 row)\n\
                List of databases\n\
                Name|Owner|Encoding|Collate|Ctype|ICU Locale|Locale Provider|Access privileges|Size|Tablespace|Description\n\
                postgres|postgres|UTF8|C|C||libc|||pg_default|\n\
                (1 row)\n";
    assert_eq!(out.stdout, want);
}
