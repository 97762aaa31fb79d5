//! Advisory locks between sessions where one has to wait (the rest, where nothing waits, is
//! `tests/slt/advisory_locks.slt`):
//!
//! - a session waiting in `pg_advisory_lock` gets the lock when the holder unlocks it, or when
//!   the holder's connection ends, and holds up no other session while it waits;
//! - a transaction-level lock is held until COMMIT, through the extended protocol, and one
//!   taken after a savepoint goes at ROLLBACK TO it;
//! - two sessions each waiting for the other's lock are a deadlock: one of them (the first to
//!   look, after `deadlock_timeout`) fails with 40P01 and keeps what it held; the other goes
//!   on once the victim lets go;
//! - a CancelRequest stops a wait (57014) and leaves the holder's lock in place.
//!
//! A check that a waiter is still waiting cannot pass by luck: a lock granted while held is
//! granted at once. `TEST_AGAINST_PG=1` runs them against PostgreSQL 15.

use std::time::Duration;

use tests::{sqlstate, timed, Backend};
use tokio_postgres::{Client, NoTls};

/// How long a waiter is given to (wrongly) get a lock that is held.
const GRACE: Duration = Duration::from_millis(300);

/// Runs `sql` on `client` in the background; the task hands the client back with the result.
fn spawn_statement(
    client: Client,
    sql: &'static str,
) -> tokio::task::JoinHandle<(Client, Result<(), tokio_postgres::Error>)> {
    tokio::spawn(async move {
        let r = client.batch_execute(sql).await;
        (client, r)
    })
}

async fn try_lock(client: &Client, key: i64) -> bool {
    let sql = "SELECT pg_try_advisory_lock($1)";
    timed(sql, client.query_one(sql, &[&key])).await.expect("try lock").get(0)
}

#[tokio::test]
async fn a_waiter_gets_the_lock_when_the_holder_unlocks_it_or_goes_away() {
    let Some(backend) = Backend::from_env() else { return };
    let (a, b) = (backend.connect().await, backend.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(1)").await.expect("lock");
    let waiter = spawn_statement(b, "SELECT pg_advisory_lock(1)");
    tokio::time::sleep(GRACE).await;
    assert!(!waiter.is_finished(), "the lock was granted while another session held it");

    // The wait holds up no other session.
    let c = backend.connect().await;
    let n: i64 = timed(
        "a query beside the wait",
        c.query_one("SELECT count(*) FROM generate_series(1, 10)", &[]),
    )
    .await
    .expect("count")
    .get(0);
    assert_eq!(n, 10);

    a.batch_execute("SELECT pg_advisory_unlock(1)").await.expect("unlock");
    let (b, r) = timed("the waiter", waiter).await.expect("task");
    r.expect("the waiter got the lock");
    assert!(!try_lock(&a, 1).await, "the waiter holds it now");

    // Its connection ending releases it: a waits for it and gets it.
    let waiter = spawn_statement(a, "SELECT pg_advisory_lock(1)");
    tokio::time::sleep(GRACE).await;
    assert!(!waiter.is_finished(), "granted while the other session still held it");
    drop(b);
    let (a, r) = timed("the lock after the holder disconnected", waiter).await.expect("task");
    r.expect("lock");
    assert!(!try_lock(&c, 1).await);
    drop(a);
}

#[tokio::test]
async fn a_transaction_level_lock_is_held_until_commit() {
    let Some(backend) = Backend::from_env() else { return };
    let (mut a, b) = (backend.connect().await, backend.connect().await);
    let t = a.transaction().await.expect("BEGIN");
    let got: bool = t
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&5i64])
        .await
        .expect("xact lock")
        .get(0);
    assert!(got);
    assert!(!try_lock(&b, 5).await, "held by the open transaction");
    t.commit().await.expect("COMMIT");
    assert!(try_lock(&b, 5).await, "released by COMMIT");
}

#[tokio::test]
async fn sessions_waiting_for_each_other_are_a_deadlock() {
    let Some(backend) = Backend::from_env() else { return };
    let (a, b, c) = (backend.connect().await, backend.connect().await, backend.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(1)").await.expect("a takes 1");
    b.batch_execute("SELECT pg_advisory_lock(2)").await.expect("b takes 2");
    let mut wait_a = spawn_statement(a, "SELECT pg_advisory_lock(2)");
    tokio::time::sleep(GRACE).await;
    let mut wait_b = spawn_statement(b, "SELECT pg_advisory_lock(1)");
    // One of them is chosen as the victim once it has waited deadlock_timeout (1 s).
    let ((victim, r), other) = timed("a deadlock to be found", async {
        tokio::select! {
            done = &mut wait_a => (done.expect("task"), wait_b),
            done = &mut wait_b => (done.expect("task"), wait_a),
        }
    })
    .await;
    let e = r.expect_err("a deadlock fails one of the waits");
    assert_eq!(sqlstate(&e), Some("40P01"), "{e:?}");
    tokio::time::sleep(GRACE).await;
    assert!(!other.is_finished(), "the victim still holds its lock");
    // The victim keeps the lock it held (its session's), as the other does.
    assert!(!try_lock(&c, 1).await && !try_lock(&c, 2).await);
    victim.batch_execute("SELECT pg_advisory_unlock_all()").await.expect("let go");
    let (_, r) = timed("the other waiter", other).await.expect("task");
    r.expect("the other waiter gets the lock");
}

#[tokio::test]
async fn a_cancel_request_stops_a_wait() {
    let Some(backend) = Backend::from_env() else { return };
    let (a, b) = (backend.connect().await, backend.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(3)").await.expect("lock");
    let token = b.cancel_token();
    let waiter = spawn_statement(b, "SELECT pg_advisory_lock(3)");
    tokio::time::sleep(GRACE).await;
    assert!(!waiter.is_finished());
    // A cancel that arrives before the wait starts cancels nothing: repeat until it ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !waiter.is_finished() {
        assert!(std::time::Instant::now() < deadline, "the wait went on through 20 s of cancels");
        token.cancel_query(NoTls).await.expect("send CancelRequest");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (b, r) = waiter.await.expect("task");
    let e = r.expect_err("canceled");
    assert_eq!(sqlstate(&e), Some("57014"), "{e:?}");
    assert!(!try_lock(&b, 3).await, "a still holds it");
    assert!(try_lock(&a, 3).await);
}

/// ROLLBACK TO SAVEPOINT releases the transaction-level locks taken since the savepoint (as
/// PostgreSQL releases a subtransaction's locks), keeps those taken before it, and keeps
/// session-level locks whenever they were taken.
#[tokio::test]
async fn rollback_to_savepoint_releases_the_transaction_locks_taken_since() {
    let Some(backend) = Backend::from_env() else { return };
    let (a, b) = (backend.connect().await, backend.connect().await);
    let steps = "BEGIN;
         SELECT pg_advisory_xact_lock(41);
         SAVEPOINT s;
         SELECT pg_advisory_xact_lock(42);
         SELECT pg_try_advisory_xact_lock(44);
         SELECT pg_advisory_lock(43);
         ROLLBACK TO SAVEPOINT s;";
    timed("steps", a.batch_execute(steps)).await.expect("steps");
    assert!(!try_lock(&b, 41).await, "the lock taken before the savepoint went");
    assert!(try_lock(&b, 42).await, "the lock taken after the savepoint stayed");
    assert!(try_lock(&b, 44).await, "the lock a try took after the savepoint stayed");
    assert!(!try_lock(&b, 43).await, "a session-level lock went with the savepoint");
    timed("commit", a.batch_execute("COMMIT")).await.expect("commit");
    assert!(try_lock(&b, 41).await, "COMMIT kept a transaction-level lock");
}
