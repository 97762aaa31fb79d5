//! `aspen bench`: the benchmark harness behind BENCHMARKS.md (issue 2, "Benchmark").
//!
//! Three suites, each printing a markdown section ready to paste:
//!
//! - `engine` ([`engine`]): in-process, through the `txn` API only (no SQL). A table of
//!   `--rows` rows (default 1 M, int8 key, ~100-byte row); per thread count: raw `get`s,
//!   single-read transactions (`begin; get; commit`) and read-modify-write transactions
//!   (`begin; get; update; commit`) per second.
//! - `memory` ([`memory`]): bytes per row of a TPC-C `customer` table (default 1 M rows, with
//!   its secondary index) loaded through `sql::Session`, as the growth of this process's RSS,
//!   against the raw size of the values.
//! - `wire` ([`wire`]): the same tokio-postgres client against `aspen serve` and a throwaway
//!   PostgreSQL 15 in one run: prepared point selects and single-row updates per second and the
//!   Aspen/PostgreSQL ratio.
//!
//! Numbers are only meaningful from a release build; a debug build says so in its output.
//! Random keys come from [`Rng`] (SplitMix64): the same seed gives the same key sequence, and it
//! costs a few nanoseconds, so it does not dilute the engine numbers.

mod engine;
mod memory;
mod wire;

use std::path::PathBuf;
use std::time::Duration;

/// Which suite(s) to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// In-process txn engine: point reads and read-modify-write transactions.
    Engine,
    /// Over the wire, Aspen against PostgreSQL 15.
    Wire,
    /// Bytes per row of a TPC-C `customer` table.
    Memory,
    /// engine, memory, then wire.
    All,
}

/// Options of `aspen bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Which suite to run.
    #[arg(long, value_enum, default_value = "all")]
    pub suite: Suite,
    /// Table size (default: 1000000 for engine and memory, 100000 for wire).
    #[arg(long)]
    pub rows: Option<u64>,
    /// Length of each measurement window, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Engine suite: the thread counts to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<usize>,
    /// Wire suite: concurrent client connections per system.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Wire suite: the `aspen` binary to start (default: `aspen` next to this executable).
    #[arg(long, value_name = "PATH")]
    pub aspen_bin: Option<PathBuf>,
    /// Wire suite: directory of PostgreSQL 15's `initdb`, `postgres` and `pg_ctl`.
    #[arg(long, value_name = "DIR", default_value = "/usr/lib/postgresql/15/bin")]
    pub pg_bin_dir: PathBuf,
    /// Wire suite: measure Aspen only (when no PostgreSQL is installed).
    #[arg(long)]
    pub no_postgres: bool,
    /// Wire suite: measure PostgreSQL only (when `aspen serve` is not available).
    #[arg(long, conflicts_with = "no_postgres")]
    pub no_aspen: bool,
}

impl BenchArgs {
    fn window(&self) -> Duration {
        Duration::from_secs_f64(self.seconds.max(0.1))
    }
}

/// Runs the chosen suites and prints the results as markdown on stdout (progress goes to
/// stderr).
pub fn run(args: BenchArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.threads.is_empty() || args.threads.contains(&0) {
        return Err("--threads needs one or more positive counts".into());
    }
    if args.clients == 0 {
        return Err("--clients must be positive".into());
    }
    println!("{}", header());
    let suites: &[Suite] = match args.suite {
        Suite::All => &[Suite::Engine, Suite::Memory, Suite::Wire],
        Suite::Engine => &[Suite::Engine],
        Suite::Memory => &[Suite::Memory],
        Suite::Wire => &[Suite::Wire],
    };
    for suite in suites {
        let section = match suite {
            Suite::Engine => engine::run(&args)?,
            Suite::Memory => memory::run(&args)?,
            Suite::Wire => wire::run(&args)?,
            Suite::All => unreachable!("expanded above"),
        };
        // Print each section as soon as it is done, so a failure later keeps earlier numbers.
        println!("{section}");
    }
    Ok(())
}

/// The command, machine and date lines that head every report.
fn header() -> String {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "bench") {
        args.drain(..=i);
    }
    let command = format!("aspen bench {}", args.join(" "));
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gib = meminfo_kib("MemTotal:").map_or(0.0, |k| k as f64 / (1024.0 * 1024.0));
    let build = if cfg!(debug_assertions) {
        "**debug build: these numbers are not meaningful**"
    } else {
        "release"
    };
    format!(
        "## `{}`\n\n- date: {}\n- machine: {cores} × {cpu} (`nproc` = {cores}), {mem_gib:.0} GiB RAM\n- load average at start: {} (other work shares these cores)\n- build: {build}\n",
        command.trim_end(),
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        load_average(),
    )
}

/// The 1-, 5- and 15-minute load averages (`/proc/loadavg`), to show how busy the machine was.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

fn meminfo_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines().find(|l| l.starts_with(field))?.split_whitespace().nth(1)?.parse().ok()
}

/// SplitMix64: a small, fast, seedable generator for keys and TPC-C strings.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (the modulo bias is negligible for our ranges).
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// Formats an operations-per-second figure with thousands separators.
pub(crate) fn fmt_rate(ops_per_sec: f64) -> String {
    let n = ops_per_sec.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
