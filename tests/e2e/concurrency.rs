//! Many connections, one invariant: 8 sessions run a bounded, seeded mix of money transfers
//! between accounts (read both balances, write both back computed by the client, insert an
//! audit row), plain inserts, and range and total
//! reads, retrying transactions that fail with `40001` (or PostgreSQL's `40P01`). Every
//! statement has a timeout, so a hang fails the test instead of stalling it.
//!
//! Checked: every committed read of the whole table sees the same total; after the run the
//! total is unchanged; the audit table holds exactly one row per committed transfer and insert.
//! `TEST_AGAINST_PG=1` runs it against PostgreSQL 15 (SERIALIZABLE); adding
//! `TEST_PG_ISOLATION='read committed'` shows the test failing when updates can be lost.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tests::{sqlstate, timed, Backend};
use tokio_postgres::Client;

const WORKERS: i64 = 8;
const OPS_PER_WORKER: usize = 120;
const ACCOUNTS: i32 = 64;
const INITIAL_BALANCE: i64 = 1000;
const TOTAL: i64 = ACCOUNTS as i64 * INITIAL_BALANCE;
/// A transaction that keeps failing with a serialization error this often is a livelock.
const MAX_RETRIES: usize = 200;

/// What one worker committed.
#[derive(Default, Debug)]
struct Tally {
    transfers: i64,
    inserts: i64,
    reads: i64,
    retries: usize,
}

/// Whether the error is a serialization failure or deadlock, which the client must retry.
fn retryable(e: &tokio_postgres::Error) -> bool {
    matches!(sqlstate(e), Some("40001") | Some("40P01"))
}

/// The outcome of one transaction attempt.
enum Attempt {
    Committed,
    Retry,
}

/// Runs `sql` with the statement timeout; `Err` for a server error.
async fn exec(
    c: &Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
    timed(sql, c.query(sql, params)).await
}

/// Unwraps a statement result into rows, mapping retryable errors to `None` (after rolling
/// back) and panicking on anything else.
async fn check(
    c: &Client,
    what: &str,
    r: Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>,
) -> Option<Vec<tokio_postgres::Row>> {
    match r {
        Ok(rows) => Some(rows),
        Err(e) if retryable(&e) => {
            let _ = timed("ROLLBACK", c.batch_execute("ROLLBACK")).await;
            None
        }
        Err(e) => panic!("{what}: unexpected error {e:?}"),
    }
}

async fn transfer(c: &Client, rng: &mut StdRng, event_id: i64, worker: i64) -> Attempt {
    let from = rng.gen_range(1..=ACCOUNTS);
    let mut to = rng.gen_range(1..=ACCOUNTS);
    if to == from {
        to = from % ACCOUNTS + 1;
    }
    let amount: i64 = rng.gen_range(1..=50);
    timed("BEGIN", c.batch_execute("BEGIN")).await.expect("BEGIN");
    // Read-modify-write with the new balances computed by the client: without serializable
    // isolation, concurrent transfers lose updates and the total drifts.
    let read = "SELECT id, balance FROM accounts WHERE id = $1 OR id = $2";
    let Some(rows) = check(c, read, exec(c, read, &[&from, &to]).await).await else {
        return Attempt::Retry;
    };
    assert_eq!(rows.len(), 2, "both accounts exist");
    let balance = |id: i32| -> i64 {
        rows.iter().find(|r| r.get::<_, i32>(0) == id).map(|r| r.get(1)).expect("account row")
    };
    let (new_from, new_to) = (balance(from) - amount, balance(to) + amount);
    let write = "UPDATE accounts SET balance = $2 WHERE id = $1";
    let audit = "INSERT INTO audit (id, worker, amount) VALUES ($1, $2, $3)";
    let steps: [(&str, Vec<&(dyn tokio_postgres::types::ToSql + Sync)>); 3] = [
        (write, vec![&from, &new_from]),
        (write, vec![&to, &new_to]),
        (audit, vec![&event_id, &worker, &amount]),
    ];
    for (sql, params) in steps.iter() {
        if check(c, sql, exec(c, sql, params).await).await.is_none() {
            return Attempt::Retry;
        }
    }
    commit(c).await
}

async fn commit(c: &Client) -> Attempt {
    match timed("COMMIT", c.batch_execute("COMMIT")).await {
        Ok(()) => Attempt::Committed,
        Err(e) if retryable(&e) => Attempt::Retry,
        Err(e) => panic!("COMMIT: unexpected error {e:?}"),
    }
}

async fn insert(c: &Client, event_id: i64, worker: i64) -> Attempt {
    let sql = "INSERT INTO audit (id, worker, amount) VALUES ($1, $2, 0)";
    match exec(c, sql, &[&event_id, &worker]).await {
        Ok(_) => Attempt::Committed,
        Err(e) if retryable(&e) => Attempt::Retry,
        Err(e) => panic!("{sql}: unexpected error {e:?}"),
    }
}

/// A range read and a full-table total in one transaction; the total must be exact.
async fn read(c: &Client, rng: &mut StdRng) -> Attempt {
    let lo = rng.gen_range(1..=ACCOUNTS);
    let hi = lo + rng.gen_range(0..16);
    timed("BEGIN", c.batch_execute("BEGIN")).await.expect("BEGIN");
    let range = "SELECT id, balance FROM accounts WHERE id BETWEEN $1 AND $2 ORDER BY id";
    let Some(rows) = check(c, range, exec(c, range, &[&lo, &hi]).await).await else {
        return Attempt::Retry;
    };
    let expected = (hi.min(ACCOUNTS) - lo + 1) as usize;
    let total = "SELECT sum(balance)::bigint, count(*) FROM accounts";
    let Some(sum) = check(c, total, exec(c, total, &[]).await).await else {
        return Attempt::Retry;
    };
    let audit = "SELECT count(*) FROM audit WHERE worker = $1";
    let Some(_) = check(c, audit, exec(c, audit, &[&(lo as i64 % WORKERS)]).await).await else {
        return Attempt::Retry;
    };
    let attempt = commit(c).await;
    if let Attempt::Committed = attempt {
        assert_eq!(rows.len(), expected, "range read of {lo}..={hi} returned the wrong row count");
        let got: i64 = sum[0].get(0);
        let count: i64 = sum[0].get(1);
        assert_eq!((got, count), (TOTAL, ACCOUNTS as i64), "a committed read saw a wrong total");
    }
    attempt
}

async fn worker(c: Client, worker: i64) -> Tally {
    let mut rng = StdRng::seed_from_u64(0xA5_9E_u64 + worker as u64);
    let mut tally = Tally::default();
    let mut next_event = worker * 1_000_000;
    for _ in 0..OPS_PER_WORKER {
        let kind = rng.gen_range(0..100);
        let mut tries = 0;
        loop {
            next_event += 1;
            let attempt = match kind {
                0..60 => transfer(&c, &mut rng, next_event, worker).await,
                60..75 => insert(&c, next_event, worker).await,
                _ => read(&c, &mut rng).await,
            };
            match attempt {
                Attempt::Committed => break,
                Attempt::Retry => {
                    tries += 1;
                    tally.retries += 1;
                    assert!(
                        tries < MAX_RETRIES,
                        "worker {worker}: no progress after {tries} tries"
                    );
                }
            }
        }
        match kind {
            0..60 => tally.transfers += 1,
            60..75 => tally.inserts += 1,
            _ => tally.reads += 1,
        }
    }
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_keep_the_total() {
    let Some(backend) = Backend::from_env() else { return };
    let setup = backend.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
             CREATE TABLE audit (id bigint PRIMARY KEY, worker bigint NOT NULL, amount bigint);",
        )
        .await
        .expect("setup");
    let values: Vec<String> =
        (1..=ACCOUNTS).map(|id| format!("({id}, {INITIAL_BALANCE})")).collect();
    setup
        .batch_execute(&format!("INSERT INTO accounts VALUES {}", values.join(", ")))
        .await
        .expect("seed accounts");

    let mut handles = Vec::new();
    for w in 0..WORKERS {
        let client = backend.connect_serializable().await;
        handles.push(tokio::spawn(worker(client, w)));
    }
    let mut transfers = 0;
    let mut inserts = 0;
    for (w, handle) in handles.into_iter().enumerate() {
        let tally = handle.await.unwrap_or_else(|e| panic!("worker {w} failed: {e}"));
        println!("worker {w}: {tally:?}");
        transfers += tally.transfers;
        inserts += tally.inserts;
    }

    let row = setup
        .query_one("SELECT sum(balance)::bigint, count(*) FROM accounts", &[])
        .await
        .expect("final total");
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (TOTAL, ACCOUNTS as i64));
    let row = setup
        .query_one(
            "SELECT count(*), coalesce(sum(CASE WHEN amount > 0 THEN 1 ELSE 0 END), 0)::bigint FROM audit",
            &[],
        )
        .await
        .expect("audit count");
    assert_eq!(row.get::<_, i64>(0), transfers + inserts, "one audit row per committed write");
    assert_eq!(row.get::<_, i64>(1), transfers, "one audit row per committed transfer");
}

/// A long statement does not hold up the other connections of its connection thread: with a
/// single connection thread, one session counts a join of 100 million generated rows (tens of
/// seconds) while a second session runs short statements, prepared and simple, which must
/// all answer while the long one is still running. Aspen only (it is about Aspen's threads).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_statement_does_not_block_its_thread() {
    if tests::against_pg() {
        return;
    }
    let data = tests::fresh_data_dir().expect("data dir");
    let server =
        tests::AspenServer::try_start_in(data, vec!["--connection-threads".into(), "1".into()])
            .expect("start aspen");
    let long = tests::connect(server.port()).await.expect("connect");
    let short = tests::connect(server.port()).await.expect("connect");
    let running = tokio::spawn(async move {
        let sql = "SELECT count(*) FROM generate_series(1, 1000) a, generate_series(1, 1000) b, \
                   generate_series(1, 100) c";
        long.query_one(sql, &[]).await
    });
    // Let the long statement start (its connection is served first by the only thread).
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for i in 0..20 {
        let row = timed("short prepared", short.query_one("SELECT $1::int + 1", &[&i])).await;
        assert_eq!(row.expect("short statement").get::<_, i32>(0), i + 1);
        timed("short simple", short.simple_query("SELECT 1")).await.expect("simple");
    }
    assert!(!running.is_finished(), "the long statement ended before the short ones: too short");
    running.abort();
}
