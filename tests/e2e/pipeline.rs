//! Implicit transactions of the extended protocol: every statement between two Syncs that is
//! not inside a BEGIN block runs in one transaction, which commits at Sync, and an error rolls
//! all of it back (PostgreSQL's behaviour, which JDBC batches and BenchBase's loader rely on).
//! BEGIN inside the pipeline turns it into a block, COMMIT / ROLLBACK end it early (with a
//! warning), and DDL in it is rolled back with the rest.
//!
//! Each case sends one pipeline of unnamed Parse/Bind/Execute messages and a single Sync, then
//! checks the command tags, the first SQLSTATE, the ReadyForQuery status and what a second
//! connection sees afterwards. `TEST_AGAINST_PG=1` runs the same cases against PostgreSQL 15.

use tests::raw::{execute_unnamed, flush, query, raw_session, read_reply, read_until, sync};
use tests::{timed, Backend};
use tokio::io::AsyncWriteExt;

struct Case {
    name: &'static str,
    /// Statements of the pipeline, one Parse/Bind/Execute each, then one Sync.
    pipeline: &'static [&'static str],
    /// CommandComplete tags received before ReadyForQuery.
    tags: &'static [&'static str],
    /// SQLSTATE of the error, if one is expected.
    error: Option<&'static str>,
    /// SQLSTATEs of the notices and warnings.
    notices: &'static [&'static str],
    /// ReadyForQuery status after the Sync.
    status: char,
    /// Sent after the Sync (as a simple Query) when the pipeline leaves a block open.
    then: Option<&'static str>,
    /// The rows of `p`, in order, as another connection sees them afterwards.
    rows: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "statements before one Sync commit together",
        pipeline: &["INSERT INTO p VALUES (1)", "INSERT INTO p VALUES (2)"],
        tags: &["INSERT 0 1", "INSERT 0 1"],
        error: None,
        notices: &[],
        status: 'I',
        then: None,
        rows: "0,1,2",
    },
    Case {
        name: "an error rolls back the statements before it",
        pipeline: &[
            "INSERT INTO p VALUES (1)",
            "INSERT INTO p VALUES (0)",
            "INSERT INTO p VALUES (2)",
        ],
        tags: &["INSERT 0 1"],
        error: Some("23505"),
        notices: &[],
        status: 'I',
        then: None,
        rows: "0",
    },
    Case {
        name: "COMMIT inside commits what came before, with a warning",
        pipeline: &["INSERT INTO p VALUES (1)", "COMMIT", "INSERT INTO p VALUES (2)", "SELECT 1/0"],
        tags: &["INSERT 0 1", "COMMIT", "INSERT 0 1"],
        error: Some("22012"),
        notices: &["25P01"],
        status: 'I',
        then: None,
        rows: "0,1",
    },
    Case {
        name: "ROLLBACK inside rolls back what came before, with a warning",
        pipeline: &["INSERT INTO p VALUES (1)", "ROLLBACK", "INSERT INTO p VALUES (2)"],
        tags: &["INSERT 0 1", "ROLLBACK", "INSERT 0 1"],
        error: None,
        notices: &["25P01"],
        status: 'I',
        then: None,
        rows: "0,2",
    },
    Case {
        name: "BEGIN inside makes the pipeline a block, earlier statements included",
        pipeline: &["INSERT INTO p VALUES (1)", "BEGIN", "INSERT INTO p VALUES (2)"],
        tags: &["INSERT 0 1", "BEGIN", "INSERT 0 1"],
        error: None,
        notices: &[],
        status: 'T',
        then: Some("ROLLBACK"),
        rows: "0",
    },
    Case {
        name: "DDL is rolled back with the rest",
        pipeline: &[
            "CREATE TABLE q (a int PRIMARY KEY)",
            "INSERT INTO q VALUES (1)",
            "INSERT INTO p SELECT a + 10 FROM q",
            "DROP TABLE q",
            "SELECT 1/0",
        ],
        tags: &["CREATE TABLE", "INSERT 0 1", "INSERT 0 1", "DROP TABLE"],
        error: Some("22012"),
        notices: &[],
        status: 'I',
        then: None,
        rows: "0",
    },
    Case {
        name: "DDL commits with the rest",
        pipeline: &[
            "CREATE TABLE q (a int PRIMARY KEY)",
            "INSERT INTO q VALUES (5)",
            "INSERT INTO p SELECT a FROM q",
            "DROP TABLE q",
        ],
        tags: &["CREATE TABLE", "INSERT 0 1", "INSERT 0 1", "DROP TABLE"],
        error: None,
        notices: &[],
        status: 'I',
        then: None,
        rows: "0,5",
    },
];

async fn setup(backend: &Backend) {
    let client = backend.connect().await;
    timed(
        "setup",
        client.batch_execute(
            "DROP TABLE IF EXISTS p; DROP TABLE IF EXISTS q; CREATE TABLE p (a int PRIMARY KEY); INSERT INTO p VALUES (0)",
        ),
    )
    .await
    .expect("setup");
}

async fn contents(backend: &Backend) -> String {
    let client = backend.connect().await;
    let rows =
        timed("read p", client.query("SELECT a FROM p ORDER BY a", &[])).await.expect("read p");
    rows.iter().map(|r| r.get::<_, i32>(0).to_string()).collect::<Vec<_>>().join(",")
}

#[tokio::test]
async fn implicit_transactions_span_the_pipeline() {
    let Some(backend) = Backend::from_env() else { return };
    let mut failures = Vec::new();
    for case in CASES {
        setup(&backend).await;
        let mut s = raw_session(&backend).await;
        let mut bytes: Vec<u8> = case.pipeline.iter().flat_map(|q| execute_unnamed(q)).collect();
        bytes.extend(sync());
        s.write_all(&bytes).await.expect("send");
        let reply = read_reply(&mut s, 0).await;
        if let Some(then) = case.then {
            s.write_all(&query(then)).await.expect("send");
            read_reply(&mut s, 0).await;
        }
        let got = (reply.tags(), reply.error(), reply.notices(), reply.status());
        let want = (
            case.tags.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            case.error.map(str::to_string),
            case.notices.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            Some(case.status),
        );
        let rows = contents(&backend).await;
        if got != want || rows != case.rows {
            failures.push(format!(
                "{}: got {got:?} rows {rows:?}, want {want:?} rows {:?}",
                case.name, case.rows
            ));
        }
    }
    assert!(failures.is_empty(), "on {}:\n{}", backend.name(), failures.join("\n"));
}

/// Nobody sees the implicit transaction's writes before its Sync, even after a Flush has
/// delivered its CommandComplete.
#[tokio::test]
async fn writes_before_sync_are_invisible_to_others() {
    let Some(backend) = Backend::from_env() else { return };
    setup(&backend).await;
    let mut s = raw_session(&backend).await;
    let mut bytes = execute_unnamed("INSERT INTO p VALUES (7)");
    bytes.extend(flush());
    s.write_all(&bytes).await.expect("send");
    let reply = read_until(&mut s, b'C').await;
    assert_eq!(reply.tags(), ["INSERT 0 1"]);
    assert_eq!(contents(&backend).await, "0", "visible before Sync on {}", backend.name());
    s.write_all(&sync()).await.expect("send");
    let reply = read_reply(&mut s, 0).await;
    assert_eq!((reply.error(), reply.status()), (None, Some('I')));
    assert_eq!(contents(&backend).await, "0,7", "not committed by Sync on {}", backend.name());
}
