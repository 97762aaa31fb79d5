//! Hot rows, TPC-C shaped: 8 sessions on one warehouse row and 4 district rows run
//!
//! - *new order*: read the warehouse's `tax`; read the district's `next_o_id` FOR UPDATE; increment
//!   it; insert the order with that id and the tax it read;
//! - *payment*: add to the warehouse's and the district's `ytd`, read the warehouse's `name`,
//!   insert a history row;
//! - *tax change* (rare): raise the warehouse's `tax` by one;
//!
//! retrying `40001`. On Aspen the increments are deferred updates and the reads projected ones
//! (validated by the columns they used), so payments and new orders rarely fail each other; this
//! test checks that the outcome is still serializable:
//!
//! - per district, the orders' ids are exactly `1 .. next_o_id` (no id lost or taken twice);
//! - the warehouse's `ytd` and the districts' `ytd` both equal the sum of the history rows (no
//!   increment lost);
//! - per district, the tax recorded by the orders never decreases with the order id (orders of
//!   a district are serialized by `next_o_id`, and the tax only rises: an order that missed a
//!   raise its predecessor saw would be a read-skew anomaly).
//!
//! `TEST_AGAINST_PG=1` runs it against PostgreSQL 15 (SERIALIZABLE).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tests::{sqlstate, timed, Backend};
use tokio_postgres::Client;

const WORKERS: i64 = 8;
const OPS_PER_WORKER: usize = 100;
const DISTRICTS: i64 = 4;
/// A transaction that keeps failing with a serialization error this often is a livelock.
const MAX_RETRIES: usize = 200;

/// Runs the statements of one transaction; `Ok(false)` if it must be retried.
async fn transaction(c: &Client, steps: &[(&str, Vec<i64>)]) -> Result<bool, String> {
    timed("BEGIN", c.batch_execute("BEGIN")).await.map_err(|e| format!("BEGIN: {e}"))?;
    let mut read = None;
    for (sql, params) in steps {
        // `$0` in a step's parameters stands for the first value the previous read returned.
        let params: Vec<i64> =
            params.iter().map(|&p| if p == i64::MIN { read.unwrap_or(p) } else { p }).collect();
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
        match timed(sql, c.query(*sql, &refs)).await {
            Ok(rows) => {
                if let Some(row) = rows.first() {
                    read = Some(row.get::<_, i64>(0));
                }
            }
            Err(e) if matches!(sqlstate(&e), Some("40001" | "40P01")) => {
                let _ = timed("ROLLBACK", c.batch_execute("ROLLBACK")).await;
                return Ok(false);
            }
            Err(e) => return Err(format!("{sql}: {e:?}")),
        }
    }
    match timed("COMMIT", c.batch_execute("COMMIT")).await {
        Ok(()) => Ok(true),
        Err(e) if matches!(sqlstate(&e), Some("40001" | "40P01")) => Ok(false),
        Err(e) => Err(format!("COMMIT: {e:?}")),
    }
}

/// The previous read's value, as a step parameter.
const READ: i64 = i64::MIN;

async fn worker(c: Client, worker: i64) -> Result<usize, String> {
    let mut rng = StdRng::seed_from_u64(0x7CC_u64 + worker as u64);
    let mut retries = 0;
    for op in 0..OPS_PER_WORKER {
        let d = rng.gen_range(1..=DISTRICTS);
        let kind = rng.gen_range(0..100);
        let amount = rng.gen_range(1..=500);
        let history_id = worker * 1_000_000 + op as i64;
        // The order's tax comes from the first read; its id from the second (READ is the
        // latest read, so the tax is carried in a temporary column instead).
        let steps: Vec<(&str, Vec<i64>)> = match kind {
            0..3 => vec![("UPDATE warehouse SET tax = tax + 1 WHERE w_id = 1", vec![])],
            3..50 => vec![
                ("SELECT tax FROM warehouse WHERE w_id = 1", vec![]),
                ("UPDATE pending SET tax = $2 WHERE worker = $1", vec![worker, READ]),
                ("SELECT next_o_id FROM district WHERE d_id = $1 FOR UPDATE", vec![d]),
                ("UPDATE district SET next_o_id = next_o_id + 1 WHERE d_id = $1", vec![d]),
                (
                    "INSERT INTO orders (d_id, o_id, tax) \
                     SELECT $1::bigint, $2::bigint, tax FROM pending WHERE worker = $3",
                    vec![d, READ, worker],
                ),
            ],
            _ => vec![
                ("UPDATE warehouse SET ytd = ytd + $1 WHERE w_id = 1", vec![amount]),
                ("SELECT length(name)::bigint FROM warehouse WHERE w_id = 1", vec![]),
                ("UPDATE district SET ytd = ytd + $2 WHERE d_id = $1", vec![d, amount]),
                (
                    "INSERT INTO history (id, d_id, amount) VALUES ($1, $2, $3)",
                    vec![history_id, d, amount],
                ),
            ],
        };
        let mut tries = 0;
        while !transaction(&c, &steps).await? {
            tries += 1;
            retries += 1;
            if tries >= MAX_RETRIES {
                return Err(format!("worker {worker}: no progress after {tries} tries"));
            }
        }
    }
    Ok(retries)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_rows_stay_serializable() {
    let Some(backend) = Backend::from_env() else { return };
    let setup = backend.connect().await;
    let districts: Vec<String> = (1..=DISTRICTS).map(|d| format!("({d}, 1, 0)")).collect();
    let pending: Vec<String> = (0..WORKERS).map(|w| format!("({w}, 0)")).collect();
    setup
        .batch_execute(&format!(
            "CREATE TABLE warehouse (w_id bigint PRIMARY KEY, tax bigint, ytd bigint, name text);
             CREATE TABLE district (d_id bigint PRIMARY KEY, next_o_id bigint, ytd bigint);
             CREATE TABLE orders (d_id bigint, o_id bigint, tax bigint, PRIMARY KEY (d_id, o_id));
             CREATE TABLE history (id bigint PRIMARY KEY, d_id bigint, amount bigint);
             CREATE TABLE pending (worker bigint PRIMARY KEY, tax bigint);
             INSERT INTO warehouse VALUES (1, 0, 0, 'the warehouse');
             INSERT INTO district VALUES {};
             INSERT INTO pending VALUES {};",
            districts.join(", "),
            pending.join(", ")
        ))
        .await
        .expect("setup");

    let mut handles = Vec::new();
    for w in 0..WORKERS {
        let client = backend.connect_serializable().await;
        handles.push(tokio::spawn(worker(client, w)));
    }
    for (w, handle) in handles.into_iter().enumerate() {
        let retries = handle.await.expect("worker task").unwrap_or_else(|e| panic!("{e}"));
        println!("worker {w}: {retries} retries");
    }

    for d in 1..=DISTRICTS {
        let next: i64 = setup
            .query_one("SELECT next_o_id FROM district WHERE d_id = $1", &[&d])
            .await
            .expect("district")
            .get(0);
        let orders = setup
            .query("SELECT o_id, tax FROM orders WHERE d_id = $1 ORDER BY o_id", &[&d])
            .await
            .expect("orders");
        let ids: Vec<i64> = orders.iter().map(|r| r.get(0)).collect();
        assert_eq!(ids, (1..next).collect::<Vec<_>>(), "district {d}: order ids 1..next_o_id");
        let taxes: Vec<i64> = orders.iter().map(|r| r.get(1)).collect();
        assert!(
            taxes.windows(2).all(|w| w[0] <= w[1]),
            "district {d}: an order saw an older tax than the order before it: {taxes:?}"
        );
    }
    let row = setup
        .query_one(
            "SELECT (SELECT ytd FROM warehouse WHERE w_id = 1),
                    (SELECT sum(ytd)::bigint FROM district),
                    (SELECT coalesce(sum(amount), 0)::bigint FROM history)",
            &[],
        )
        .await
        .expect("totals");
    let (w, d, h): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert_eq!((w, d), (h, h), "every payment counted once in the warehouse and the districts");
}

/// Autocommit increments of one row from many sessions all succeed (as on PostgreSQL, whose
/// default READ COMMITTED waits for the row lock): on Aspen an UPDATE alone in its transaction
/// runs as an ordinary one first and, after a conflict, is retried as a deferred update, which
/// no other writer of the row can invalidate, so the server's bounded retries never run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autocommit_increments_of_one_row_never_fail() {
    const SESSIONS: i64 = 16;
    const INCREMENTS: i64 = 300;
    let Some(backend) = Backend::from_env() else { return };
    let setup = backend.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE counter (id bigint PRIMARY KEY, n bigint NOT NULL);
             INSERT INTO counter VALUES (1, 0)",
        )
        .await
        .expect("setup");
    let mut handles = Vec::new();
    for _ in 0..SESSIONS {
        let c = backend.connect().await;
        handles.push(tokio::spawn(async move {
            let update = c
                // The `md5(repeat(…))` term (0) makes the statement slow enough that others
                // commit while it runs: conflicts are frequent.
                .prepare(
                    "UPDATE counter SET n = n + $1 + 0 * length(md5(repeat('x', 20000))) \
                     WHERE id = 1",
                )
                .await
                .map_err(|e| e.to_string())?;
            for _ in 0..INCREMENTS {
                let n = c.execute(&update, &[&1i64]).await.map_err(|e| {
                    format!("an autocommit increment failed ({:?}): {e}", sqlstate(&e))
                })?;
                if n != 1 {
                    return Err(format!("UPDATE {n}, expected UPDATE 1"));
                }
            }
            Ok::<(), String>(())
        }));
    }
    for handle in handles {
        handle.await.expect("session task").unwrap_or_else(|e| panic!("{e}"));
    }
    let n: i64 =
        setup.query_one("SELECT n FROM counter WHERE id = 1", &[]).await.expect("counter").get(0);
    assert_eq!(n, SESSIONS * INCREMENTS, "every acknowledged increment counted once");
}
