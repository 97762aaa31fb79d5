//! Acknowledged commits survive `kill -9`, and nothing else appears: a real `aspen serve`
//! process runs a concurrent workload with known invariants, is killed with SIGKILL at a random
//! moment (sometimes just after a `CHECKPOINT` was sent, sometimes again while it recovers),
//! restarts on the same data directory, and the recovered state is checked against what the
//! clients were told (DESIGN §3 "acknowledge rule", §5, §7 "Crash").
//!
//! ```text
//!   setup (acknowledged) ─▶ ┌─ workload ── SIGKILL ── [spawn ─ SIGKILL]* ── spawn ── verify ─┐
//!                           └────────────────── next crash point, from the recovered state ◀─┘
//! ```
//!
//! The workload, each task on its own tokio-postgres connection:
//! - transfer clients: `BEGIN; UPDATE accounts (src); UPDATE accounts (dst); INSERT INTO
//!   transfers (fresh id); COMMIT`, retried with a new id on `40001`;
//! - scratch clients: inserts, updates and deletes of rows they alone own, in autocommit and
//!   in `BEGIN … COMMIT` blocks, plus reads of their own rows (read-your-writes);
//! - a reader: `sum(balance)` must always be the initial total, and `count(*)` of transfers
//!   never below the number acknowledged before the query was sent;
//! - a checkpointer: `CHECKPOINT` every 30–300 ms (see [`CHECKPOINT_MUST_SUCCEED`]);
//! - a DDL client: `CREATE TABLE ddl_<k>` with three rows in one transaction (a `BEGIN … COMMIT`
//!   block or a multi-statement implicit transaction), and `DROP TABLE` of tables it created;
//!   every fifth table gets [`BIG_DDL_ROWS`] rows instead, a transaction larger than a log
//!   record may be, so it spills to a file of its log device.
//!
//! A commit whose `COMMIT` (or autocommit statement) returned OK is *acknowledged*; one whose
//! answer was lost to the kill is *in doubt*. After every restart ([`check`]):
//! - every acknowledged transfer is present, every present transfer was acknowledged or in
//!   doubt, with the same accounts and amount;
//! - every account's balance is `1000 + Σ incoming − Σ outgoing` over the transfers present
//!   (so no transaction is partially applied), and the total is unchanged;
//! - every scratch row holds the value of its last acknowledged write (absent after an
//!   acknowledged delete) or of an in-doubt write, and an in-doubt transaction is applied to
//!   all of its rows or to none;
//! - every acknowledged `ddl_<k>` exists with exactly its rows, every acknowledged drop
//!   or rolled-back create left no table, and an in-doubt create or drop is all-or-nothing.
//!
//! In-doubt commits then resolve to what was found, and the workload goes on. Correctness never
//! depends on timing: timing only picks the kill moments.
//!
//! A second run of the same test ([`small_segments_rotate_and_recycle_under_kill_9`]) uses
//! 64 KiB log segments (the server's testing option `--wal-segment-kb`) and longer scratch
//! values, with its data directory on `/dev/shm`: there the log switches segments, checkpoints
//! remove them, and the store recycles them many times per crash point (80 points on
//! 2026-11-28: every one of those steps ran dozens of times per device), so kills also land in
//! the middle of those.
//!
//! Running (build the server first, in the same target dir):
//!
//! ```text
//! cargo build -p server && cargo test -p tests --test crash -- --nocapture    # CI: 6 crash points each
//! ASPEN_CRASH_POINTS=300 cargo test -p tests --test crash -- --nocapture      # long mode
//! ASPEN_CRASH_SEED=0x5eed cargo test -p tests --test crash -- --nocapture     # replay a seed
//! ```
//!
//! Environment: `ASPEN_CRASH_POINTS` (number of kills, default [`CI_CRASH_POINTS`]),
//! `ASPEN_CRASH_SEED` (decimal or `0x` hex; the seed is printed at the start and in every failure;
//! it fixes every random choice — kill moments, operations, amounts — but not the thread
//! interleaving), `ASPEN_CRASH_WAL_DIRS=N` (pass N `--wal-dir` directories inside the data
//! directory), `ASPEN_CRASH_ARGS` (more `aspen serve` arguments, split on whitespace),
//! `ASPEN_CRASH_PAD=N` (N characters more in every scratch value: more log per commit),
//! `ASPEN_CRASH_KEEP=1` (keep the data directory of a failed run), `ASPEN_TEST_LOG=1` (show the
//! server's output). Aspen only: it is skipped under `TEST_AGAINST_PG=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tests::{connect, AspenServer, STATEMENT_TIMEOUT};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};

/// Whether `CHECKPOINT` must succeed. While the statement is being wired into the server it
/// may answer `0A000` (unsupported) or `42601` (syntax); with `false` such answers are noted and
/// ignored. **Flip to `true` once `CHECKPOINT` exists**: then any error other than the lost
/// connection of the kill fails the test.
const CHECKPOINT_MUST_SUCCEED: bool = true;

/// Crash points when `ASPEN_CRASH_POINTS` is not set (keeps the test under a minute in a debug
/// build).
const CI_CRASH_POINTS: usize = 6;
/// Accounts in the bank.
const ACCOUNTS: i32 = 50;
/// Every account's balance after setup.
const INITIAL_BALANCE: i64 = 1000;
/// The sum of all balances, forever.
const TOTAL: i64 = ACCOUNTS as i64 * INITIAL_BALANCE;
/// Concurrent transfer clients.
const TRANSFER_CLIENTS: usize = 3;
/// Concurrent scratch clients; client `c` alone writes ids `c * SCRATCH_STRIDE + 0..SCRATCH_KEYS`.
const SCRATCH_CLIENTS: i64 = 2;
/// Rows each scratch client cycles through (insert, update, delete).
const SCRATCH_KEYS: i64 = 64;
/// Distance between two scratch clients' id ranges.
const SCRATCH_STRIDE: i64 = 1_000_000;
/// How long the server may take to recover and print its listening line after a crash.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(120);
/// Rows of every fifth `ddl_<k>` table: about 3 MB of log, above the 2 MiB spill threshold
/// of the default 8 MiB log buffer.
const BIG_DDL_ROWS: i64 = 100_000;

/// The rows the DDL client's transaction writes into `ddl_<k>` (values `1..=n`, all `k`).
fn ddl_rows(k: i64) -> i64 {
    if k % 5 == 0 {
        BIG_DDL_ROWS
    } else {
        3
    }
}

/// How long a kill planned "after the next CHECKPOINT" waits for one before killing anyway.
const CHECKPOINT_WAIT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// The ledger: what the clients were told.

/// One transfer the ledger knows of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Transfer {
    src: i32,
    dst: i32,
    amount: i64,
}

/// One row write inside a scratch transaction: the row's content before and after
/// (`None` = absent). Each write changes the row, so `before != after`.
#[derive(Clone, Debug)]
struct ScratchWrite {
    id: i64,
    before: Option<String>,
    after: Option<String>,
}

/// Everything the clients have been told, shared by the tasks of one run.
#[derive(Default)]
struct Ledger {
    /// Transfers whose COMMIT was acknowledged.
    acked: BTreeMap<i64, Transfer>,
    /// Transfers whose COMMIT was sent but whose answer was lost to the kill.
    in_doubt: BTreeMap<i64, Transfer>,
    /// The next transfer id to hand out (ids are never reused, not even after an abort).
    next_transfer_id: i64,
    /// Every scratch id ever written: its content after the last acknowledged (or resolved)
    /// write, `None` after a delete.
    scratch: BTreeMap<i64, Option<String>>,
    /// Scratch transactions whose commit was lost to the kill.
    scratch_in_doubt: Vec<Vec<ScratchWrite>>,
    /// Every `ddl_<k>` table ever attempted: whether it exists after its last acknowledged
    /// (or resolved) create or drop; `false` for creates that rolled back.
    ddl: BTreeMap<i64, bool>,
    /// The create or drop whose answer was lost to the kill: (k, exists if it applied).
    ddl_in_doubt: Option<(i64, bool)>,
    /// The next `k` for `ddl_<k>`.
    next_ddl: i64,
}

impl Ledger {
    fn new() -> Ledger {
        Ledger { next_transfer_id: 1, ..Ledger::default() }
    }
}

/// What the server holds after a restart.
#[derive(Default, Debug)]
struct Observed {
    accounts: BTreeMap<i32, i64>,
    transfers: BTreeMap<i64, Transfer>,
    scratch: BTreeMap<i64, String>,
    /// For each `ddl_<k>` the ledger knows: `(count(*), sum(v))` if the table exists.
    ddl: BTreeMap<i64, Option<(i64, i64)>>,
}

/// `[1, 2, 3, … (N in all)]`, at most 20 items.
fn list<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    let shown = items.iter().take(20).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > 20 {
        format!("[{shown}, … ({} in all)]", items.len())
    } else {
        format!("[{shown}]")
    }
}

fn show(v: &Option<String>) -> String {
    match v {
        Some(v) => format!("{v:?}"),
        None => "absent".to_string(),
    }
}

/// Compares the recovered state with the ledger; returns one line per kind of problem (empty
/// when everything matches).
fn check(ledger: &Ledger, seen: &Observed) -> Vec<String> {
    let mut problems = Vec::new();

    // Transfers: acknowledged ⊆ present ⊆ acknowledged ∪ in doubt, with the same content.
    let lost: Vec<i64> =
        ledger.acked.keys().filter(|id| !seen.transfers.contains_key(id)).copied().collect();
    if !lost.is_empty() {
        problems.push(format!(
            "lost {} of {} acknowledged transfers: ids {}",
            lost.len(),
            ledger.acked.len(),
            list(&lost)
        ));
    }
    let mut extra = Vec::new();
    let mut changed = Vec::new();
    for (id, t) in &seen.transfers {
        match ledger.acked.get(id).or_else(|| ledger.in_doubt.get(id)) {
            None => extra.push(*id),
            Some(known) if known != t => changed.push(format!("{id}: {t:?}, committed {known:?}")),
            Some(_) => {}
        }
    }
    if !extra.is_empty() {
        problems.push(format!(
            "{} transfers present that were neither acknowledged nor in doubt: ids {}",
            extra.len(),
            list(&extra)
        ));
    }
    if !changed.is_empty() {
        problems.push(format!("transfers with other contents than committed: {}", list(&changed)));
    }

    // Accounts: every balance follows from the transfers present.
    let mut expected: BTreeMap<i32, (i64, i64)> =
        (1..=ACCOUNTS).map(|id| (id, (0i64, 0i64))).collect();
    for t in seen.transfers.values() {
        if let Some(e) = expected.get_mut(&t.dst) {
            e.0 += t.amount;
        }
        if let Some(e) = expected.get_mut(&t.src) {
            e.1 += t.amount;
        }
    }
    let missing: Vec<i32> =
        expected.keys().filter(|id| !seen.accounts.contains_key(id)).copied().collect();
    if !missing.is_empty() {
        problems.push(format!(
            "{} of {ACCOUNTS} acknowledged accounts missing: ids {}",
            missing.len(),
            list(&missing)
        ));
    }
    let unknown: Vec<i32> =
        seen.accounts.keys().filter(|id| !expected.contains_key(id)).copied().collect();
    if !unknown.is_empty() {
        problems.push(format!("accounts that were never created: ids {}", list(&unknown)));
    }
    let wrong: Vec<String> = expected
        .iter()
        .filter_map(|(id, (incoming, outgoing))| {
            let want = INITIAL_BALANCE + incoming - outgoing;
            let got = *seen.accounts.get(id)?;
            (got != want).then(|| {
                format!(
                    "account {id} holds {got}, expected {INITIAL_BALANCE} + {incoming} in − {outgoing} out = {want}"
                )
            })
        })
        .collect();
    if !wrong.is_empty() {
        problems.push(format!(
            "{} balances disagree with the transfers present (a partial transaction?): {}",
            wrong.len(),
            list(&wrong)
        ));
    }
    let total: i64 = seen.accounts.values().sum();
    if total != TOTAL {
        problems.push(format!(
            "total balance {total} over {} accounts, expected {TOTAL}",
            seen.accounts.len()
        ));
    }

    // Scratch: acknowledged writes hold, in-doubt transactions are all-or-nothing, nothing else.
    let mut doubtful = BTreeSet::new();
    for txn in &ledger.scratch_in_doubt {
        let mut applied = Vec::new();
        let mut not_applied = Vec::new();
        for w in txn {
            doubtful.insert(w.id);
            let got = seen.scratch.get(&w.id).cloned();
            if got == w.after {
                applied.push(w.id);
            } else if got == w.before {
                not_applied.push(w.id);
            } else {
                problems.push(format!(
                    "scratch id {}: {} is neither its last acknowledged content {} nor the in-doubt {}",
                    w.id,
                    show(&got),
                    show(&w.before),
                    show(&w.after)
                ));
            }
        }
        if !applied.is_empty() && !not_applied.is_empty() {
            problems.push(format!(
                "an in-doubt scratch transaction was applied partially: applied to ids {}, not to ids {}",
                list(&applied),
                list(&not_applied)
            ));
        }
    }
    let (mut lost_rows, mut undeleted, mut wrong_value, mut never_written) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (id, want) in ledger.scratch.iter().filter(|(id, _)| !doubtful.contains(id)) {
        match (want, seen.scratch.get(id)) {
            (Some(_), None) => lost_rows.push(*id),
            (None, Some(_)) => undeleted.push(*id),
            (Some(w), Some(g)) if w != g => wrong_value.push(format!("{id}: {g:?}, acked {w:?}")),
            _ => {}
        }
    }
    for id in seen.scratch.keys() {
        if !ledger.scratch.contains_key(id) && !doubtful.contains(id) {
            never_written.push(*id);
        }
    }
    for (what, ids) in [
        ("acknowledged scratch rows lost", lost_rows),
        ("acknowledged scratch deletes undone (row back)", undeleted),
        ("scratch rows present that no commit wrote", never_written),
    ] {
        if !ids.is_empty() {
            problems.push(format!("{} {what}: ids {}", ids.len(), list(&ids)));
        }
    }
    if !wrong_value.is_empty() {
        problems.push(format!(
            "{} scratch rows hold another value than their last acknowledged write: {}",
            wrong_value.len(),
            list(&wrong_value)
        ));
    }

    // DDL: a table exists exactly as its last acknowledged create or drop says, always with
    // all of its rows; an in-doubt create or drop is all-or-nothing.
    for (k, exists) in &ledger.ddl {
        let got = seen.ddl.get(k).copied().flatten();
        let in_doubt = ledger.ddl_in_doubt.filter(|(d, _)| d == k).map(|(_, e)| e);
        let allowed = |e: bool| Some(e) == in_doubt || e == *exists;
        match got {
            None if !allowed(false) => {
                problems.push(format!("table ddl_{k} is missing after an acknowledged create"))
            }
            Some(_) if !allowed(true) => problems.push(format!(
                "table ddl_{k} exists, but its create rolled back or its drop was acknowledged"
            )),
            Some(rows) if rows != (ddl_rows(*k), ddl_rows(*k) * k) => problems.push(format!(
                "table ddl_{k} holds (count, sum) {rows:?}, its transaction wrote ({}, {})",
                ddl_rows(*k),
                ddl_rows(*k) * k
            )),
            _ => {}
        }
    }
    problems
}

/// How the in-doubt commits of one crash turned out.
#[derive(Default, Debug)]
struct Resolved {
    transfers_present: usize,
    transfers_absent: usize,
    scratch_applied: usize,
    scratch_absent: usize,
}

/// After a successful [`check`]: the in-doubt commits become what was found (acknowledged if
/// present, forgotten if absent). What a client has seen must never be taken back, so from now
/// on it counts as acknowledged.
fn resolve(ledger: &mut Ledger, seen: &Observed) -> Resolved {
    let mut r = Resolved::default();
    for (id, t) in std::mem::take(&mut ledger.in_doubt) {
        if seen.transfers.contains_key(&id) {
            ledger.acked.insert(id, t);
            r.transfers_present += 1;
        } else {
            r.transfers_absent += 1;
        }
    }
    if let Some((k, _)) = ledger.ddl_in_doubt.take() {
        ledger.ddl.insert(k, seen.ddl.get(&k).is_some_and(Option::is_some));
    }
    // Tables found absent as they should be are not checked again (their names are never
    // reused), so the check stays proportional to the tables that exist.
    ledger.ddl.retain(|_, exists| *exists);
    for txn in std::mem::take(&mut ledger.scratch_in_doubt) {
        let applied = txn.iter().all(|w| seen.scratch.get(&w.id).cloned() == w.after);
        if applied {
            r.scratch_applied += 1;
        } else {
            r.scratch_absent += 1;
        }
        for w in txn {
            ledger.scratch.insert(w.id, if applied { w.after } else { w.before });
        }
    }
    r
}

// ---------------------------------------------------------------------------------------------
// Connections: every statement either succeeds, must be retried, or lost its answer to the kill.

/// How a statement ended, as far as the client can tell.
enum Outcome<T> {
    Done(T),
    /// `40001`: the transaction was aborted and may be retried.
    Retry,
    /// The connection broke after the kill: the answer is lost.
    Lost,
}

/// A client connection of one task, which knows whether the server has been killed (a broken
/// connection before the kill is a failure: the server crashed on its own).
struct Conn {
    client: Client,
    name: String,
    killed: Arc<AtomicBool>,
}

impl Conn {
    /// Connects, or `Ok(None)` when the server is already gone because of the kill.
    async fn open(
        port: u16,
        name: String,
        killed: Arc<AtomicBool>,
    ) -> Result<Option<Conn>, String> {
        match tokio::time::timeout(STATEMENT_TIMEOUT, connect(port)).await {
            Ok(Ok(client)) => Ok(Some(Conn { client, name, killed })),
            Ok(Err(_)) if killed.load(Ordering::SeqCst) => Ok(None),
            Ok(Err(e)) => Err(format!("{name}: cannot connect: {e:?}")),
            Err(_) => Err(format!("{name}: connecting timed out after {STATEMENT_TIMEOUT:?}")),
        }
    }

    fn killed(&self) -> bool {
        // SeqCst pairs with the store before the SIGKILL: a connection that broke because of
        // the kill always sees the flag.
        self.killed.load(Ordering::SeqCst)
    }

    fn classify<T>(&self, what: &str, e: tokio_postgres::Error) -> Result<Outcome<T>, String> {
        match e.code().map(|c| c.code()) {
            Some("40001") => Ok(Outcome::Retry),
            Some(code) => Err(format!(
                "{}: {what}: unexpected error {code}: {}",
                self.name,
                e.as_db_error().map(|d| d.message().to_string()).unwrap_or_else(|| e.to_string())
            )),
            None if self.killed() => Ok(Outcome::Lost),
            None => Err(format!(
                "{}: {what}: the connection broke before the kill (did the server crash?): {e:?}",
                self.name
            )),
        }
    }

    async fn timed<T>(
        &self,
        what: &str,
        fut: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<Outcome<T>, String> {
        match tokio::time::timeout(STATEMENT_TIMEOUT, fut).await {
            Ok(Ok(v)) => Ok(Outcome::Done(v)),
            Ok(Err(e)) => self.classify(what, e),
            Err(_) => Err(format!("{}: timed out after {STATEMENT_TIMEOUT:?}: {what}", self.name)),
        }
    }

    async fn batch(&self, sql: &str) -> Result<Outcome<()>, String> {
        self.timed(sql, self.client.batch_execute(sql)).await
    }

    /// Executes a statement that must affect exactly one row.
    async fn one_row(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Outcome<()>, String> {
        match self.timed(sql, self.client.execute(sql, params)).await? {
            Outcome::Done(1) => Ok(Outcome::Done(())),
            Outcome::Done(n) => {
                Err(format!("{}: `{sql}` {params:?} affected {n} rows, not 1", self.name))
            }
            Outcome::Retry => Ok(Outcome::Retry),
            Outcome::Lost => Ok(Outcome::Lost),
        }
    }

    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Outcome<Vec<Row>>, String> {
        self.timed(sql, self.client.query(sql, params)).await
    }

    /// Rolls back after a `40001`; `false` when the connection is gone.
    async fn rollback(&self) -> Result<bool, String> {
        Ok(matches!(self.batch("ROLLBACK").await?, Outcome::Done(())))
    }
}

/// What the tasks of one crash point did.
#[derive(Default, Debug)]
struct Tally {
    transfers: usize,
    scratch_commits: usize,
    reads: usize,
    retries: usize,
    checkpoints: usize,
    checkpoints_refused: usize,
    ddl: usize,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.transfers += o.transfers;
        self.scratch_commits += o.scratch_commits;
        self.reads += o.reads;
        self.retries += o.retries;
        self.checkpoints += o.checkpoints;
        self.checkpoints_refused += o.checkpoints_refused;
        self.ddl += o.ddl;
    }
}

/// What every task of one crash point shares.
#[derive(Clone)]
struct Ctx {
    port: u16,
    ledger: Arc<Mutex<Ledger>>,
    killed: Arc<AtomicBool>,
    /// Characters appended to every scratch value ([`Config::pad`]).
    pad: Arc<str>,
}

impl Ctx {
    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().expect("no task panics while holding the ledger")
    }

    async fn open(&self, name: String) -> Result<Option<Conn>, String> {
        Conn::open(self.port, name, self.killed.clone()).await
    }
}

/// Unwraps `Outcome::Done`, or leaves the enclosing loop iteration: `Retry` rolls back (when
/// `$rollback`) and retries, `Lost` returns the tally.
macro_rules! step {
    ($conn:expr, $tally:expr, $outcome:expr, rollback = $rollback:expr) => {
        match $outcome? {
            Outcome::Done(v) => v,
            Outcome::Retry => {
                $tally.retries += 1;
                if $rollback && !$conn.rollback().await? {
                    return Ok($tally);
                }
                continue;
            }
            Outcome::Lost => return Ok($tally),
        }
    };
}

/// Transfers money between random accounts until the kill.
async fn transfer_client(ctx: Ctx, n: usize, seed: u64) -> Result<Tally, String> {
    let mut tally = Tally::default();
    let Some(c) = ctx.open(format!("transfer client {n}")).await? else { return Ok(tally) };
    let mut rng = StdRng::seed_from_u64(seed);
    while !c.killed() {
        let src = rng.gen_range(1..=ACCOUNTS);
        let dst = (src + rng.gen_range(1..ACCOUNTS) - 1) % ACCOUNTS + 1;
        let t = Transfer { src, dst, amount: rng.gen_range(1..=100) };
        let id = {
            let mut l = ctx.ledger();
            l.next_transfer_id += 1;
            l.next_transfer_id - 1
        };
        step!(c, tally, c.batch("BEGIN").await, rollback = false);
        let debit = "UPDATE accounts SET balance = balance - $2 WHERE id = $1";
        step!(c, tally, c.one_row(debit, &[&t.src, &t.amount]).await, rollback = true);
        let credit = "UPDATE accounts SET balance = balance + $2 WHERE id = $1";
        step!(c, tally, c.one_row(credit, &[&t.dst, &t.amount]).await, rollback = true);
        let record = "INSERT INTO transfers (id, src, dst, amount) VALUES ($1, $2, $3, $4)";
        step!(
            c,
            tally,
            c.one_row(record, &[&id, &t.src, &t.dst, &t.amount]).await,
            rollback = true
        );
        match c.batch("COMMIT").await? {
            Outcome::Done(()) => {
                ctx.ledger().acked.insert(id, t);
                tally.transfers += 1;
            }
            Outcome::Retry => tally.retries += 1,
            Outcome::Lost => {
                ctx.ledger().in_doubt.insert(id, t);
                return Ok(tally);
            }
        }
    }
    Ok(tally)
}

/// Inserts, updates and deletes its own scratch rows (alone or several per transaction), and
/// reads them back, until the kill.
async fn scratch_client(ctx: Ctx, n: i64, point: usize, seed: u64) -> Result<Tally, String> {
    let mut tally = Tally::default();
    let Some(c) = ctx.open(format!("scratch client {n}")).await? else { return Ok(tally) };
    let mut rng = StdRng::seed_from_u64(seed);
    let keys: Vec<i64> = (0..SCRATCH_KEYS).map(|k| n * SCRATCH_STRIDE + k).collect();
    // This client is the only writer of its ids, so its view is exact between crashes.
    let mut mine: BTreeMap<i64, Option<String>> = {
        let l = ctx.ledger();
        keys.iter().map(|id| (*id, l.scratch.get(id).cloned().flatten())).collect()
    };
    let mut seq = 0u64;
    while !c.killed() {
        if rng.gen_bool(0.1) {
            let id = *keys.choose(&mut rng).expect("keys");
            let sql = "SELECT v FROM scratch WHERE id = $1";
            let rows = step!(c, tally, c.query(sql, &[&id]).await, rollback = false);
            let got: Option<String> = rows.first().map(|r| r.get(0));
            if got != mine[&id] {
                return Err(format!(
                    "{}: read-your-writes: scratch id {id} reads {}, its last acknowledged write left {}",
                    c.name,
                    show(&got),
                    show(&mine[&id])
                ));
            }
            tally.reads += 1;
            continue;
        }
        let block = rng.gen_bool(0.4);
        let count = if block { rng.gen_range(2..=4) } else { 1 };
        let writes: Vec<ScratchWrite> = keys
            .choose_multiple(&mut rng, count)
            .map(|id| {
                seq += 1;
                let before = mine[id].clone();
                let value = format!("p{point}-c{n}-{seq}{}", ctx.pad);
                let after = match before {
                    None => Some(value),
                    Some(_) if rng.gen_bool(0.5) => None,
                    Some(_) => Some(value),
                };
                ScratchWrite { id: *id, before, after }
            })
            .collect();
        if block {
            step!(c, tally, c.batch("BEGIN").await, rollback = false);
        }
        let mut retry = false;
        let mut lost = false;
        for w in &writes {
            let outcome = match (&w.before, &w.after) {
                (None, Some(v)) => {
                    c.one_row("INSERT INTO scratch (id, v) VALUES ($1, $2)", &[&w.id, v]).await?
                }
                (Some(_), Some(v)) => {
                    c.one_row("UPDATE scratch SET v = $2 WHERE id = $1", &[&w.id, v]).await?
                }
                (Some(_), None) => c.one_row("DELETE FROM scratch WHERE id = $1", &[&w.id]).await?,
                (None, None) => unreachable!("every write changes its row"),
            };
            match outcome {
                Outcome::Done(()) => {}
                Outcome::Retry => {
                    retry = true;
                    break;
                }
                Outcome::Lost => {
                    lost = true;
                    break;
                }
            }
        }
        if lost {
            // An autocommit statement whose answer is lost is in doubt; a block whose COMMIT
            // was never sent is not.
            if !block {
                ctx.ledger().scratch_in_doubt.push(writes);
            }
            return Ok(tally);
        }
        if retry {
            tally.retries += 1;
            if block && !c.rollback().await? {
                return Ok(tally);
            }
            continue;
        }
        if block {
            match c.batch("COMMIT").await? {
                Outcome::Done(()) => {}
                Outcome::Retry => {
                    tally.retries += 1;
                    continue;
                }
                Outcome::Lost => {
                    ctx.ledger().scratch_in_doubt.push(writes);
                    return Ok(tally);
                }
            }
        }
        let mut l = ctx.ledger();
        for w in writes {
            mine.insert(w.id, w.after.clone());
            l.scratch.insert(w.id, w.after);
        }
        tally.scratch_commits += 1;
    }
    Ok(tally)
}

/// Creates tables with three rows in one transaction, and drops them, until the kill.
async fn ddl_client(ctx: Ctx, seed: u64) -> Result<Tally, String> {
    let mut tally = Tally::default();
    let Some(c) = ctx.open("ddl client".to_string()).await? else { return Ok(tally) };
    let mut rng = StdRng::seed_from_u64(seed);
    while !c.killed() {
        let existing: Vec<i64> =
            ctx.ledger().ddl.iter().filter(|(_, e)| **e).map(|(k, _)| *k).collect();
        let (k, exists_after, sql) = match existing.choose(&mut rng) {
            Some(&k) if existing.len() > 20 || rng.gen_bool(0.3) => {
                (k, false, format!("DROP TABLE ddl_{k}"))
            }
            _ => {
                let k = {
                    let mut l = ctx.ledger();
                    l.next_ddl += 1;
                    l.next_ddl
                };
                let body = format!(
                    "CREATE TABLE ddl_{k} (id int PRIMARY KEY, v bigint); \
                     INSERT INTO ddl_{k} SELECT g, {k} FROM generate_series(1, {}) g",
                    ddl_rows(k)
                );
                let sql = if rng.gen_bool(0.5) { format!("BEGIN; {body}; COMMIT") } else { body };
                (k, true, sql)
            }
        };
        match c.batch(&sql).await? {
            Outcome::Done(()) => {
                ctx.ledger().ddl.insert(k, exists_after);
                tally.ddl += 1;
            }
            Outcome::Retry => {
                tally.retries += 1;
                if exists_after {
                    ctx.ledger().ddl.insert(k, false);
                }
                if !c.rollback().await? {
                    return Ok(tally);
                }
            }
            Outcome::Lost => {
                let mut l = ctx.ledger();
                l.ddl.entry(k).or_insert(false);
                l.ddl_in_doubt = Some((k, exists_after));
                return Ok(tally);
            }
        }
    }
    Ok(tally)
}

/// Reads the total (autocommit and inside transactions) until the kill: it is always exact, and
/// no acknowledged transfer is ever missing from a later read.
async fn reader(ctx: Ctx, seed: u64) -> Result<Tally, String> {
    let mut tally = Tally::default();
    let Some(c) = ctx.open("reader".to_string()).await? else { return Ok(tally) };
    let mut rng = StdRng::seed_from_u64(seed);
    let total = "SELECT sum(balance)::bigint, count(*) FROM accounts";
    let transfers = "SELECT count(*) FROM transfers";
    while !c.killed() {
        let acked_before = ctx.ledger().acked.len() as i64;
        let in_txn = rng.gen_bool(0.5);
        if in_txn {
            step!(c, tally, c.batch("BEGIN").await, rollback = false);
        }
        let sum = step!(c, tally, c.query(total, &[]).await, rollback = in_txn);
        let count = step!(c, tally, c.query(transfers, &[]).await, rollback = in_txn);
        if in_txn {
            step!(c, tally, c.batch("COMMIT").await, rollback = false);
        }
        let (sum, accounts): (Option<i64>, i64) = (sum[0].get(0), sum[0].get(1));
        if (sum, accounts) != (Some(TOTAL), ACCOUNTS as i64) {
            return Err(format!(
                "reader: a committed read saw total {sum:?} over {accounts} accounts, expected {TOTAL} over {ACCOUNTS}"
            ));
        }
        let count: i64 = count[0].get(0);
        if count < acked_before {
            return Err(format!(
                "reader: {count} transfers visible, but {acked_before} were acknowledged before the query"
            ));
        }
        tally.reads += 1;
    }
    Ok(tally)
}

/// Sends `CHECKPOINT` every 30–300 ms until the kill, announcing each one on `sent` just before.
async fn checkpointer(ctx: Ctx, seed: u64, sent: watch::Sender<u64>) -> Result<Tally, String> {
    let mut tally = Tally::default();
    let Some(c) = ctx.open("checkpointer".to_string()).await? else { return Ok(tally) };
    let mut rng = StdRng::seed_from_u64(seed);
    loop {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(30..=300))).await;
        if c.killed() {
            return Ok(tally);
        }
        sent.send_modify(|n| *n += 1);
        let result = tokio::time::timeout(STATEMENT_TIMEOUT, c.client.batch_execute("CHECKPOINT"))
            .await
            .map_err(|_| {
                format!("checkpointer: CHECKPOINT timed out after {STATEMENT_TIMEOUT:?}")
            })?;
        match result {
            Ok(()) => tally.checkpoints += 1,
            Err(e)
                if !CHECKPOINT_MUST_SUCCEED
                    && matches!(e.code().map(|c| c.code()), Some("0A000" | "42601")) =>
            {
                tally.checkpoints_refused += 1;
            }
            Err(e) => match c.classify::<()>("CHECKPOINT", e)? {
                Outcome::Lost => return Ok(tally),
                Outcome::Retry | Outcome::Done(()) => tally.retries += 1,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Crash points.

/// A kill while the server recovers.
#[derive(Debug, Clone, Copy)]
enum RecoveryKill {
    /// After this many thousandths of the previous recovery's duration (spawn to listening
    /// line) since the process was spawned: anywhere from the first instruction to just after
    /// the listening line, so the kill lands in catalog load, checkpoint load, log scan or
    /// replay, whatever recovery currently spends its time on.
    AfterSpawn { per_mille: u32 },
    /// This long after it printed its listening line.
    AfterListening(Duration),
}

/// When and how one crash point kills the server.
#[derive(Debug)]
struct Plan {
    /// The workload runs this long before the kill (or before waiting for a CHECKPOINT).
    run_for: Duration,
    /// Kill this long after the next CHECKPOINT is sent, rather than at `run_for`.
    after_checkpoint: Option<Duration>,
    /// Kills during recovery, in order, before the restart that is verified.
    recovery_kills: Vec<RecoveryKill>,
}

impl Plan {
    fn draw(rng: &mut StdRng) -> Plan {
        let run_for = Duration::from_millis(rng.gen_range(50..=1200));
        let after_checkpoint =
            rng.gen_bool(0.3).then(|| Duration::from_millis(rng.gen_range(0..=20)));
        let kills = match rng.gen_range(0..10) {
            0..=5 => 0,
            6..=8 => 1,
            _ => 2,
        };
        let recovery_kills = (0..kills)
            .map(|_| {
                if rng.gen_bool(0.5) {
                    RecoveryKill::AfterSpawn { per_mille: rng.gen_range(0..=1100) }
                } else {
                    RecoveryKill::AfterListening(Duration::from_millis(rng.gen_range(0..=5)))
                }
            })
            .collect();
        Plan { run_for, after_checkpoint, recovery_kills }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kill after {:?} of workload", self.run_for)?;
        if let Some(d) = self.after_checkpoint {
            write!(f, " + {d:?} after the next CHECKPOINT was sent")?;
        }
        for k in &self.recovery_kills {
            match k {
                RecoveryKill::AfterSpawn { per_mille } => write!(
                    f,
                    ", kill during recovery at {:.1}% of the last recovery's time",
                    f64::from(*per_mille) / 10.0
                )?,
                RecoveryKill::AfterListening(d) => {
                    write!(f, ", kill during recovery {d:?} after listening")?
                }
            }
        }
        Ok(())
    }
}

/// The run's configuration, from the environment.
struct Config {
    seed: u64,
    points: usize,
    extra_args: Vec<OsString>,
    wal_dirs: usize,
    keep: bool,
    /// Characters appended to every scratch value (`ASPEN_CRASH_PAD`, default 0): more log per
    /// commit, so that small segments fill and rotate between kills.
    pad: usize,
    /// Where the data directory goes (default: the system's temporary directory).
    data_parent: Option<std::path::PathBuf>,
}

impl Config {
    fn from_env() -> Config {
        let seed = match std::env::var("ASPEN_CRASH_SEED") {
            Ok(s) => {
                let s = s.trim();
                let parsed = match s.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => s.parse(),
                };
                parsed.unwrap_or_else(|e| panic!("ASPEN_CRASH_SEED={s:?}: {e}"))
            }
            Err(_) => rand::random(),
        };
        let number = |name: &str, default: usize| match std::env::var(name) {
            Ok(s) => s.trim().parse().unwrap_or_else(|e| panic!("{name}={s:?}: {e}")),
            Err(_) => default,
        };
        let extra_args = std::env::var("ASPEN_CRASH_ARGS")
            .map(|s| s.split_whitespace().map(OsString::from).collect())
            .unwrap_or_default();
        Config {
            seed,
            points: number("ASPEN_CRASH_POINTS", CI_CRASH_POINTS),
            extra_args,
            wal_dirs: number("ASPEN_CRASH_WAL_DIRS", 0),
            keep: std::env::var_os("ASPEN_CRASH_KEEP").is_some(),
            pad: number("ASPEN_CRASH_PAD", 0),
            data_parent: None,
        }
    }
}

/// Starts the server on a fresh data directory with the configured arguments.
fn start_server(config: &Config) -> AspenServer {
    let data_dir = match &config.data_parent {
        Some(parent) => tempfile::Builder::new().prefix("aspen-test-").tempdir_in(parent),
        None => tests::fresh_data_dir().map_err(std::io::Error::other),
    }
    .unwrap_or_else(|e| panic!("cannot create a data dir: {e}"));
    let mut args = Vec::new();
    for i in 0..config.wal_dirs {
        args.push(OsString::from("--wal-dir"));
        args.push(data_dir.path().join(format!("wal-device-{i}")).into_os_string());
    }
    args.extend(config.extra_args.iter().cloned());
    AspenServer::try_start_in(data_dir, args).unwrap_or_else(|e| panic!("{e}"))
}

/// Creates the tables and the accounts; everything is acknowledged before the first kill.
async fn setup(port: u16) -> Result<(), String> {
    let c = tokio::time::timeout(STATEMENT_TIMEOUT, connect(port))
        .await
        .map_err(|_| "setup: connect timed out".to_string())?
        .map_err(|e| format!("setup: connect: {e:?}"))?;
    let values: Vec<String> =
        (1..=ACCOUNTS).map(|id| format!("({id}, {INITIAL_BALANCE})")).collect();
    let sql = format!(
        "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
         CREATE TABLE transfers (id bigint PRIMARY KEY, src int, dst int, amount bigint);
         CREATE TABLE scratch (id bigint PRIMARY KEY, v text);
         INSERT INTO accounts (id, balance) VALUES {};",
        values.join(", ")
    );
    tokio::time::timeout(STATEMENT_TIMEOUT, c.batch_execute(&sql))
        .await
        .map_err(|_| "setup: timed out".to_string())?
        .map_err(|e| format!("setup: {e:?}"))
}

/// Runs the workload, kills the server as planned, and waits for every task.
async fn run_and_kill(
    server: &mut AspenServer,
    ledger: &Arc<Mutex<Ledger>>,
    plan: &Plan,
    point: usize,
    rng: &mut StdRng,
    pad: usize,
) -> Result<Tally, String> {
    let ctx = Ctx {
        port: server.port(),
        ledger: ledger.clone(),
        killed: Arc::new(AtomicBool::new(false)),
        pad: "x".repeat(pad).into(),
    };
    let (sent_tx, mut sent_rx) = watch::channel(0u64);
    let mut tasks: Vec<JoinHandle<Result<Tally, String>>> = Vec::new();
    for n in 0..TRANSFER_CLIENTS {
        tasks.push(tokio::spawn(transfer_client(ctx.clone(), n, rng.gen())));
    }
    for n in 0..SCRATCH_CLIENTS {
        tasks.push(tokio::spawn(scratch_client(ctx.clone(), n, point, rng.gen())));
    }
    tasks.push(tokio::spawn(reader(ctx.clone(), rng.gen())));
    tasks.push(tokio::spawn(ddl_client(ctx.clone(), rng.gen())));
    tasks.push(tokio::spawn(checkpointer(ctx.clone(), rng.gen(), sent_tx)));

    tokio::time::sleep(plan.run_for).await;
    if let Some(delay) = plan.after_checkpoint {
        sent_rx.borrow_and_update();
        // No CHECKPOINT within the wait (the checkpointer failed): kill anyway.
        let _ = tokio::time::timeout(CHECKPOINT_WAIT, sent_rx.changed()).await;
        tokio::time::sleep(delay).await;
    }
    // SeqCst pairs with `Conn::killed`: set before the signal, so every connection that breaks
    // because of it sees the flag.
    ctx.killed.store(true, Ordering::SeqCst);
    server.kill();

    let mut tally = Tally::default();
    let mut errors = Vec::new();
    for task in tasks {
        match task.await {
            Ok(Ok(t)) => tally.add(&t),
            Ok(Err(e)) => errors.push(e),
            Err(e) => errors.push(format!("a workload task panicked: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(tally)
    } else {
        Err(format!("the workload failed before or at the kill:\n  {}", errors.join("\n  ")))
    }
}

/// Restarts the server, killing it during recovery as planned (`last` is how long the previous
/// recovery took); returns how long the final recovery took and what happened to the earlier
/// ones.
async fn recover(
    server: &mut AspenServer,
    plan: &Plan,
    mut last: Duration,
) -> Result<(Duration, Vec<String>), String> {
    let mut notes = Vec::new();
    for kill in &plan.recovery_kills {
        server.spawn()?;
        match *kill {
            RecoveryKill::AfterSpawn { per_mille } => {
                let d = last * per_mille / 1000;
                tokio::time::sleep(d).await;
                let listening = server.is_listening();
                server.kill();
                notes.push(format!(
                    "killed {d:?} after spawn ({} its listening line)",
                    if listening { "after" } else { "before" }
                ));
            }
            RecoveryKill::AfterListening(d) => {
                let started = Instant::now();
                tokio::task::block_in_place(|| server.wait_listening(RECOVERY_TIMEOUT))?;
                let took = started.elapsed();
                last = took;
                tokio::time::sleep(d).await;
                server.kill();
                notes.push(format!("recovered in {took:.2?}, killed {d:?} after listening"));
            }
        }
    }
    let started = Instant::now();
    server.spawn()?;
    tokio::task::block_in_place(|| server.wait_listening(RECOVERY_TIMEOUT))?;
    Ok((started.elapsed(), notes))
}

/// Reads the whole database after a restart (nothing else runs).
async fn observe(port: u16, ddl_tables: &[i64]) -> Result<Observed, String> {
    let killed = Arc::new(AtomicBool::new(false));
    let c = Conn::open(port, "verifier".to_string(), killed)
        .await?
        .ok_or("verifier: the server is gone")?;
    let mut rows = Vec::new();
    for sql in [
        "SELECT id, balance FROM accounts ORDER BY id",
        "SELECT id, src, dst, amount FROM transfers ORDER BY id",
        "SELECT id, v FROM scratch ORDER BY id",
    ] {
        match c.query(sql, &[]).await? {
            Outcome::Done(r) => rows.push(r),
            Outcome::Retry | Outcome::Lost => {
                return Err(format!("verifier: `{sql}` failed with nothing running beside it"))
            }
        }
    }
    let mut seen = Observed::default();
    for r in &rows[0] {
        seen.accounts.insert(r.get(0), r.get(1));
    }
    for r in &rows[1] {
        seen.transfers
            .insert(r.get(0), Transfer { src: r.get(1), dst: r.get(2), amount: r.get(3) });
    }
    for r in &rows[2] {
        let v: Option<String> = r.get(1);
        seen.scratch.insert(r.get(0), v.unwrap_or_default());
    }
    for k in ddl_tables {
        let sql = format!("SELECT count(*), sum(v)::bigint FROM ddl_{k}");
        let got = match tokio::time::timeout(STATEMENT_TIMEOUT, c.client.query_one(&sql, &[])).await
        {
            Ok(Ok(row)) => Some((row.get(0), row.get::<_, Option<i64>>(1).unwrap_or(0))),
            Ok(Err(e)) if e.code().map(|c| c.code()) == Some("42P01") => None,
            Ok(Err(e)) => return Err(format!("verifier: `{sql}`: {e:?}")),
            Err(_) => return Err(format!("verifier: `{sql}` timed out")),
        };
        seen.ddl.insert(*k, got);
    }
    Ok(seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_commits_survive_kill_9() {
    if tests::against_pg() {
        println!("the crash test is Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    crash_run("crash test", Config::from_env()).await;
}

/// The same with 64 KiB log segments and 2,000 characters more in every scratch value, so the
/// log rotates segments and checkpoints remove them between kills: kills land while a segment
/// is switched, a spare is prepared or a removed one is recycled. The data directory is on
/// `/dev/shm` where it has 1 GiB free: on a memory file system the store recycles removed segments
/// (zeroed, then renamed to the next segment), which a kill may interrupt at any step.
/// `ASPEN_CRASH_*` apply as to the main test; the segment size and padding are fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_segments_rotate_and_recycle_under_kill_9() {
    if tests::against_pg() {
        println!("the crash test is Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut config = Config::from_env();
    config.extra_args.extend(["--wal-segment-kb", "64"].map(OsString::from));
    config.pad = 2_000;
    let shm = std::path::Path::new("/dev/shm");
    config.data_parent = (free_bytes(shm) >= 1 << 30).then(|| shm.to_path_buf());
    crash_run("crash test, 64 KiB segments", config).await;
}

/// Bytes free for an unprivileged writer on the file system of `dir` (0 if it cannot be
/// read): a small `/dev/shm` (a container's 64 MB) is not used for a data directory.
fn free_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return 0 };
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `path` is a NUL-terminated string and `st` a writable `statvfs`, both alive for
    // the call.
    if unsafe { libc::statvfs(path.as_ptr(), st.as_mut_ptr()) } != 0 {
        return 0;
    }
    // SAFETY: statvfs returned 0, so it filled the struct.
    let st = unsafe { st.assume_init() };
    st.f_bavail.saturating_mul(st.f_frsize)
}

/// Runs `config.points` crash points (module doc) and panics on the first disagreement.
async fn crash_run(name: &str, config: Config) {
    let seed = config.seed;
    println!(
        "{name}: seed {seed:#x} (ASPEN_CRASH_SEED={seed:#x} replays it), {} crash points, CHECKPOINT_MUST_SUCCEED={CHECKPOINT_MUST_SUCCEED}",
        config.points
    );
    let test_started = Instant::now();
    let mut server = start_server(&config);
    // How long the latest start took, to place kills during the next recovery.
    let mut last_recovery = test_started.elapsed();
    let fail = |server: &mut AspenServer, context: &str, message: &str| -> ! {
        server.kill();
        let kept = if config.keep {
            format!("data directory kept at {}", server.keep_data_dir().display())
        } else {
            "set ASPEN_CRASH_KEEP=1 to keep the data directory".to_string()
        };
        panic!(
            "seed {seed:#x}, {context}:\n{message}\n(rerun with ASPEN_CRASH_SEED={seed:#x} to replay the same choices; {kept})"
        )
    };
    if let Err(e) = setup(server.port()).await {
        fail(&mut server, "setup", &e);
    }
    let ledger = Arc::new(Mutex::new(Ledger::new()));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut refused_noted = false;
    for point in 1..=config.points {
        let plan = Plan::draw(&mut rng);
        let mut context = format!("crash point {point}/{} ({plan})", config.points);
        let tally =
            match run_and_kill(&mut server, &ledger, &plan, point, &mut rng, config.pad).await {
                Ok(t) => t,
                Err(e) => fail(&mut server, &context, &e),
            };
        if tally.checkpoints_refused > 0 && !refused_noted {
            refused_noted = true;
            println!(
                "note: CHECKPOINT was refused with 0A000/42601 ({} times at this point); ignored while CHECKPOINT_MUST_SUCCEED is false",
                tally.checkpoints_refused
            );
        }
        let (took, notes) = match recover(&mut server, &plan, last_recovery).await {
            Ok(r) => r,
            Err(e) => fail(&mut server, &context, &format!("recovery failed: {e}")),
        };
        last_recovery = took;
        if !notes.is_empty() {
            context = format!("{context}; recovery: {}", notes.join(", "));
        }
        let ddl_tables: Vec<i64> = {
            let l = ledger.lock().expect("no task holds the ledger now");
            l.ddl.keys().copied().collect()
        };
        let seen = match observe(server.port(), &ddl_tables).await {
            Ok(seen) => seen,
            Err(e) => fail(&mut server, &context, &e),
        };
        let (problems, in_doubt) = {
            let l = ledger.lock().expect("no task holds the ledger now");
            (check(&l, &seen), (l.in_doubt.len(), l.scratch_in_doubt.len()))
        };
        if !problems.is_empty() {
            let message = format!(
                "after the restart, the recovered state disagrees with what clients were told \
                 ({} transfers and {} scratch transactions in doubt):\n  - {}",
                in_doubt.0,
                in_doubt.1,
                problems.join("\n  - ")
            );
            fail(&mut server, &context, &message);
        }
        let resolved = resolve(&mut ledger.lock().expect("no task holds the ledger now"), &seen);
        println!(
            "{context}: ok; acknowledged {} transfers, {} scratch commits, {} reads, {} retries, \
             {} checkpoints, {} DDL transactions; in doubt: transfers {} present / {} absent, scratch {} applied / {} \
             absent; recovered in {took:.2?}; {} transfers in all",
            tally.transfers,
            tally.scratch_commits,
            tally.reads,
            tally.retries,
            tally.checkpoints,
            tally.ddl,
            resolved.transfers_present,
            resolved.transfers_absent,
            resolved.scratch_applied,
            resolved.scratch_absent,
            seen.transfers.len(),
        );
    }
    println!("{name}: {} crash points passed in {:.1?}", config.points, test_started.elapsed());
}

/// The oracle itself can fail: lost, invented, changed and partial commits are all reported.
#[test]
fn check_reports_lost_extra_and_partial_commits() {
    let mut ledger = Ledger::new();
    let t = |src, dst, amount| Transfer { src, dst, amount };
    ledger.acked.insert(1, t(1, 2, 10));
    ledger.acked.insert(2, t(2, 3, 5));
    ledger.in_doubt.insert(3, t(3, 1, 7));
    ledger.scratch.insert(100, Some("a".into()));
    ledger.scratch.insert(101, None);
    ledger.scratch_in_doubt.push(vec![
        ScratchWrite { id: 200, before: None, after: Some("x".into()) },
        ScratchWrite { id: 201, before: Some("y".into()), after: None },
    ]);
    let mut seen = Observed::default();
    for id in 1..=ACCOUNTS {
        seen.accounts.insert(id, INITIAL_BALANCE);
    }
    // Consistent: both acknowledged transfers present, the in-doubt one absent, the in-doubt
    // scratch transaction applied to both rows.
    for (id, tr) in [(1, t(1, 2, 10)), (2, t(2, 3, 5))] {
        seen.transfers.insert(id, tr);
        *seen.accounts.get_mut(&tr.src).expect("account") -= tr.amount;
        *seen.accounts.get_mut(&tr.dst).expect("account") += tr.amount;
    }
    seen.scratch.insert(100, "a".into());
    seen.scratch.insert(200, "x".into());
    ledger.ddl.insert(1, true);
    ledger.ddl.insert(2, false);
    ledger.ddl.insert(3, true);
    ledger.ddl.insert(4, false);
    ledger.ddl_in_doubt = Some((4, true));
    seen.ddl.insert(1, Some((3, 3)));
    seen.ddl.insert(2, None);
    seen.ddl.insert(3, Some((3, 9)));
    seen.ddl.insert(4, Some((3, 12)));
    assert_eq!(check(&ledger, &seen), Vec::<String>::new());

    let mut bad = Observed { accounts: seen.accounts.clone(), ..Observed::default() };
    bad.transfers.insert(2, t(2, 3, 5));
    bad.transfers.insert(9, t(1, 2, 1));
    bad.scratch.insert(101, "back".into());
    bad.scratch.insert(201, "y".into());
    bad.scratch.insert(200, "x".into());
    bad.ddl.insert(1, None);
    bad.ddl.insert(2, Some((3, 6)));
    bad.ddl.insert(3, Some((2, 6)));
    bad.ddl.insert(4, Some((1, 4)));
    let problems = check(&ledger, &bad).join("\n");
    for expected in [
        "lost 1 of 2 acknowledged transfers: ids [1]",
        "neither acknowledged nor in doubt: ids [9]",
        "balances disagree",
        "applied partially: applied to ids [200], not to ids [201]",
        "acknowledged scratch rows lost: ids [100]",
        "acknowledged scratch deletes undone (row back): ids [101]",
        "table ddl_1 is missing after an acknowledged create",
        "table ddl_2 exists, but its create rolled back or its drop was acknowledged",
        "table ddl_3 holds (count, sum) (2, 6), its transaction wrote (3, 9)",
        "table ddl_4 holds (count, sum) (1, 4), its transaction wrote (3, 12)",
    ] {
        assert!(problems.contains(expected), "missing {expected:?} in:\n{problems}");
    }
}
