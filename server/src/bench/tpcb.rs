//! The TPC-B suite: `pgbench` against Aspen and PostgreSQL 15, both durable, in one run.
//!
//! 1. Start `aspen serve` (defaults: `synchronous_commit = on`, two log devices under its data
//!    directory) and a throwaway PostgreSQL 15 with its defaults (`fsync`, `synchronous_commit`
//!    and `full_page_writes` on), both with their data in the same temporary directory, so on
//!    the same disk.
//! 2. On each, create pgbench's four tables (`pgbench_branches`, `_tellers`, `_accounts`,
//!    `_history`, pgbench's column types) at `--scale` (100 000 accounts per branch) with
//!    server-side `INSERT … SELECT generate_series` in batches of [`LOAD_BATCH`] accounts
//!    (each batch one transaction on both systems); PostgreSQL then gets `VACUUM ANALYZE`.
//! 3. Run the same client, the system's `pgbench` (`-n -M prepared -b tpcb-like`,
//!    `-b simple-update` and `-b select-only` (prepared point selects), `--max-tries` so a `40001` is retried as PostgreSQL 15's pgbench
//!    does), `--clients` connections for `--seconds`, alternating Aspen and PostgreSQL for
//!    [`ROUNDS`] rounds; report tps, average latency, failures and retries, and the ratio.
//!
//! `tpcb-like` updates one of `--scale` branch rows in every transaction: under OCC those rows
//! are hot (conflicts are retried), under PostgreSQL's row locks they queue.

use std::path::Path;
use std::process::Command;

use super::wire::{start_aspen, start_postgres, wait_ready, PgMode, Server, TempDir};
use super::BenchArgs;

type BoxError = Box<dyn std::error::Error>;

/// Measurement rounds; each round measures every system once per script.
const ROUNDS: usize = 2;
/// Accounts per INSERT while loading.
const LOAD_BATCH: i64 = 20_000;
/// `pgbench --max-tries`: serialization failures retried before a transaction counts as failed.
const MAX_TRIES: u32 = 1000;

/// One pgbench run's summary.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Run {
    pub(super) tps: f64,
    pub(super) latency_ms: f64,
    pub(super) transactions: u64,
    pub(super) failed: u64,
    pub(super) retried: u64,
}

/// What pgbench runs.
#[derive(Clone, Copy)]
pub(super) enum Script<'a> {
    /// A built-in script (`-b`).
    Builtin(&'a str),
    /// A script file (`-f`).
    File(&'a Path),
}

async fn load(server: &mut Server, scale: i64) -> Result<String, BoxError> {
    let c = wait_ready(server).await?;
    c.batch_execute(
        "DROP TABLE IF EXISTS pgbench_history; DROP TABLE IF EXISTS pgbench_tellers;
         DROP TABLE IF EXISTS pgbench_accounts; DROP TABLE IF EXISTS pgbench_branches;
         CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
         CREATE TABLE pgbench_tellers (tid int PRIMARY KEY, bid int, tbalance int, filler char(84));
         CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
         CREATE TABLE pgbench_branches (bid int PRIMARY KEY, bbalance int, filler char(88));",
    )
    .await?;
    c.batch_execute(&format!(
        "INSERT INTO pgbench_branches (bid, bbalance) SELECT g, 0 FROM generate_series(1, {scale}) g;
         INSERT INTO pgbench_tellers (tid, bid, tbalance)
           SELECT g, (g - 1) / 10 + 1, 0 FROM generate_series(1, {}) g;",
        scale * 10
    ))
    .await?;
    let accounts = scale * 100_000;
    let mut lo = 1;
    while lo <= accounts {
        let hi = (lo + LOAD_BATCH - 1).min(accounts);
        c.batch_execute(&format!(
            "INSERT INTO pgbench_accounts (aid, bid, abalance, filler)
               SELECT g, (g - 1) / 100000 + 1, 0, '' FROM generate_series({lo}, {hi}) g"
        ))
        .await?;
        lo = hi + 1;
    }
    let version: String = c.query_one("SELECT version()", &[]).await?.get(0);
    if server.name == "PostgreSQL" {
        c.batch_execute("VACUUM ANALYZE").await?;
    }
    Ok(version)
}

/// Runs `pgbench -n -M prepared` with `--clients` connections for `seconds` against `server`.
/// With `log_prefix`, every transaction's latency is logged to files named after it (`-l`).
pub(super) fn pgbench(
    args: &BenchArgs,
    server: &Server,
    script: Script<'_>,
    seconds: u64,
    log_prefix: Option<&Path>,
) -> Result<Run, BoxError> {
    let bin = args.pg_bin_dir.join("pgbench");
    let mut cmd = Command::new(&bin);
    cmd.args(["-h", &server.host, "-U", "postgres", "-n", "-M", "prepared"])
        .args(["-p", &server.port.to_string()]);
    match script {
        Script::Builtin(name) => cmd.args(["-b", name]),
        Script::File(path) => cmd.arg("-f").arg(path),
    };
    if let Some(prefix) = log_prefix {
        cmd.arg("-l").arg(format!("--log-prefix={}", prefix.display()));
    }
    let out = cmd
        .args(["-c", &args.clients.to_string(), "-j", &args.clients.min(2).to_string()])
        .args(["-T", &seconds.to_string()])
        .arg(format!("--max-tries={MAX_TRIES}"))
        .arg("postgres")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(format!(
            "pgbench against {} failed:\n{text}\n{}\nserver log:\n{}",
            server.name,
            String::from_utf8_lossy(&out.stderr),
            server.log_tail()
        )
        .into());
    }
    parse(&text).ok_or_else(|| format!("cannot read pgbench's summary:\n{text}").into())
}

/// Reads pgbench 15's summary lines.
fn parse(text: &str) -> Option<Run> {
    let mut run = Run::default();
    let number = |line: &str, prefix: &str| -> Option<f64> {
        line.strip_prefix(prefix)?.split_whitespace().next()?.parse().ok()
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = number(line, "tps = ") {
            run.tps = v;
        } else if let Some(v) = number(line, "latency average = ") {
            run.latency_ms = v;
        } else if let Some(v) = number(line, "number of transactions actually processed: ") {
            run.transactions = v as u64;
        } else if let Some(v) = number(line, "number of failed transactions: ") {
            run.failed = v as u64;
        } else if let Some(v) = number(line, "number of transactions retried: ") {
            run.retried = v as u64;
        }
    }
    (run.tps > 0.0).then_some(run)
}

/// Runs the suite and returns its markdown section.
pub(super) fn run(args: &BenchArgs) -> Result<String, BoxError> {
    let scale = args.scale.max(1);
    let seconds = args.window().as_secs().max(1);
    let tmp = TempDir::new()?;
    let mut servers = Vec::new();
    if !args.no_aspen {
        servers.push(start_aspen(args, &tmp.0, true)?);
    }
    if !args.no_postgres {
        servers.push(start_postgres(args, &tmp.0, PgMode::Durable)?);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let mut versions = Vec::new();
    for server in &mut servers {
        eprintln!("tpcb: loading scale {scale} into {}", server.name);
        versions.push(runtime.block_on(load(server, scale))?);
    }
    let scripts = ["tpcb-like", "simple-update", "select-only"];
    // results[script][server] = runs
    let mut results = vec![vec![Vec::new(); servers.len()]; scripts.len()];
    for round in 0..ROUNDS {
        for (s, script) in scripts.iter().enumerate() {
            for (i, server) in servers.iter().enumerate() {
                eprintln!("tpcb: round {} {script} on {}", round + 1, server.name);
                results[s][i].push(pgbench(args, server, Script::Builtin(script), seconds, None)?);
            }
        }
    }
    for server in &mut servers {
        server.stop();
    }
    Ok(report(args, scale, seconds, &servers, &versions, &scripts, &results, &tmp.0))
}

#[allow(clippy::too_many_arguments)]
fn report(
    args: &BenchArgs,
    scale: i64,
    seconds: u64,
    servers: &[Server],
    versions: &[String],
    scripts: &[&str],
    results: &[Vec<Vec<Run>>],
    tmp: &Path,
) -> String {
    let transport = args.transport.label();
    let mut out = format!(
        "### TPC-B over the wire, both durable (pgbench, {transport})\n\n\
         `pgbench -n -M prepared -b <script> -c {} -j {} -T {seconds} --max-tries={MAX_TRIES}` \
         against each system, scale {scale} ({} accounts), {ROUNDS} rounds alternating the \
         systems; data directories of both under {} (same disk). Aspen: `aspen serve` defaults \
         (`synchronous_commit = on`, 2 log devices in the data directory). PostgreSQL: its \
         defaults (`fsync`, `synchronous_commit`, `full_page_writes` on). Servers: {}.\n\n\
         | script | round | system | tps | avg latency ms | transactions | retried (40001) | failed |\n\
         |---|---:|---|---:|---:|---:|---:|---:|\n",
        args.clients,
        args.clients.min(2),
        scale * 100_000,
        tmp.parent().unwrap_or(tmp).display(),
        versions.join("; "),
    );
    for (script, per_server) in scripts.iter().zip(results) {
        for round in 0..ROUNDS {
            for (server, runs) in servers.iter().zip(per_server) {
                let r = runs[round];
                out.push_str(&format!(
                    "| {script} | {} | {} | {:.0} | {:.2} | {} | {} | {} |\n",
                    round + 1,
                    server.name,
                    r.tps,
                    r.latency_ms,
                    r.transactions,
                    r.retried,
                    r.failed
                ));
            }
        }
    }
    if servers.len() == 2 {
        out.push_str("\n| script | Aspen tps (mean) | PostgreSQL tps (mean) | Aspen / PostgreSQL |\n|---|---:|---:|---:|\n");
        for (s, script) in scripts.iter().enumerate() {
            let mean = |i: usize| {
                results[s][i].iter().map(|r| r.tps).sum::<f64>() / results[s][i].len() as f64
            };
            let (a, p) = (mean(0), mean(1));
            out.push_str(&format!("| {script} | {a:.0} | {p:.0} | {:.2}× |\n", a / p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgbench_15_summary() {
        let text = "transaction type: <builtin: TPC-B (sort of)>\n\
                    number of transactions actually processed: 1234\n\
                    number of failed transactions: 2 (0.162%)\n\
                    number of transactions retried: 56 (4.5%)\n\
                    latency average = 6.482 ms\n\
                    initial connection time = 3.1 ms\n\
                    tps = 1234.567890 (without initial connection time)\n";
        let r = parse(text).expect("parsed");
        assert_eq!((r.transactions, r.failed, r.retried), (1234, 2, 56));
        assert!((r.tps - 1234.56789).abs() < 1e-6 && (r.latency_ms - 6.482).abs() < 1e-9);
        assert!(parse("no summary").is_none());
    }
}
