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
//! - `logging`, `scaling`, `latency`, `replay` (issue 3, "Durability"; shared parts in
//!   [`durable`]): logging overhead against no logging ([`logging`]); throughput against the
//!   number of emulated log devices, Poplar against a centralized log ([`scaling`]);
//!   `commit_durable` latency against the disk's `fdatasync` floor ([`latency`]); recovery
//!   checkpoint-load, scan and replay speed of a value log ([`replay`], `--replay-workload`
//!   `default` or `ycsb`). `durability` runs the four, each in a process of its own (see
//!   [`run_each_in_child`]), as `all` runs all its suites.
//!
//! Numbers are only meaningful from a release build; a debug build says so in its output.
//! Random keys come from [`Rng`] (SplitMix64): the same seed gives the same key sequence, and it
//! costs a few nanoseconds, so it does not dilute the engine numbers.

mod durable;
mod engine;
mod latency;
mod logging;
mod memory;
mod replay;
mod scaling;
mod tpcb;
mod wire;

use std::path::PathBuf;
use std::time::Duration;

pub use durable::DeviceModel;

/// Which suite(s) to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// In-process txn engine: point reads and read-modify-write transactions.
    Engine,
    /// Over the wire, Aspen against PostgreSQL 15.
    Wire,
    /// Bytes per row of a TPC-C `customer` table.
    Memory,
    /// Logging overhead: no log against value logging with 1, 2, 4 devices (tmpfs and disk).
    Logging,
    /// Throughput against emulated log devices: Poplar against one centralized log.
    Scaling,
    /// `commit_durable` latency against the disk's `fdatasync` floor.
    Latency,
    /// Recovery: scan and replay a value log into a fresh engine, serial and parallel.
    Replay,
    /// TPC-B with pgbench over the wire, Aspen against PostgreSQL 15, both durable.
    Tpcb,
    /// replay, logging, latency, then scaling, each in a process of its own.
    Durability,
    /// engine, memory, wire, then the durability suites, each in a process of its own.
    All,
}

/// The client of the wire suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WireClient {
    /// tokio-postgres connections in the bench process.
    TokioPostgres,
    /// PostgreSQL's `pgbench` with a one-statement script per workload.
    Pgbench,
}

/// How the wire and TPC-B suites' clients reach both servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// TCP over loopback (`127.0.0.1`).
    Tcp,
    /// Unix-domain sockets (PostgreSQL's `-k DIR`, Aspen's `--unix-socket-dir DIR`): what
    /// `psql` and libpq use by default on the same machine.
    Unix,
}

impl Transport {
    /// How reports name it.
    pub(super) fn label(self) -> &'static str {
        match self {
            Transport::Tcp => "TCP over loopback",
            Transport::Unix => "Unix-domain sockets",
        }
    }
}

/// The PostgreSQL baselines of the wire suite (both acknowledge before durability).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PgBaseline {
    /// `synchronous_commit = off`, `fsync` on: it writes and flushes its WAL in the background,
    /// as Aspen with `--synchronous-commit off` does with its log.
    SyncCommitOff,
    /// `fsync`, `synchronous_commit` and `full_page_writes` off: it flushes nothing.
    FsyncOff,
    /// Both, in the same run.
    Both,
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
    /// Length of each measurement window, in seconds (default: 10 for engine and wire; 0.5 for
    /// logging; 1.5 for scaling; 2 for latency).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Durability suites: how often each measurement is repeated (rounds interleave the
    /// configurations; the report gives the median and the range).
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Durability suites: committer thread counts, comma separated (default: 2,16 for logging;
    /// 256 for scaling; 1,16,64,256 for latency).
    #[arg(long, value_delimiter = ',')]
    pub committers: Option<Vec<usize>>,
    /// Durability suites: log device counts, comma separated (default: 1,2,4 for logging;
    /// 1,2,4,8 for scaling; 1,2 for latency; 2 for replay, which uses the largest).
    #[arg(long, value_delimiter = ',')]
    pub devices: Option<Vec<usize>>,
    /// Durability suites: sessions per committer thread with deferred acknowledgement (the
    /// committer keeps going while earlier commits become durable, as `server::ack` does;
    /// default: 64 for logging and latency, 2048 for scaling).
    #[arg(long)]
    pub sessions: Option<usize>,
    /// Logging suite: a tmpfs directory for logs whose devices are not the bottleneck.
    #[arg(long, value_name = "DIR", default_value = "/dev/shm")]
    pub tmpfs_dir: PathBuf,
    /// Logging, latency and replay suites: a directory on the disk under test.
    #[arg(long, value_name = "DIR", default_value = "/tmp")]
    pub disk_dir: PathBuf,
    /// Durability suites: the logs' group-commit timer (`LogOptions::group_commit_delay`), in
    /// microseconds; 0 (the default) writes as soon as the previous write+sync was submitted.
    #[arg(long, default_value_t = 0)]
    pub group_commit_us: u64,
    /// Durability suites: requesters write and sync for an idle logger while the device's
    /// pairs take less than this many microseconds (`LogOptions::assist_below`; default: the
    /// log's default; 0: never).
    #[arg(long)]
    pub assist_us: Option<u64>,
    /// Latency suite: the sessions per core of its deferred-acknowledgement rows, comma
    /// separated (more sessions: more throughput, and more commits queued per sync).
    #[arg(long, value_delimiter = ',', default_value = "4,16,64")]
    pub latency_sessions: Vec<usize>,
    /// Latency suite: the offered rates (transactions per second, all threads together) of
    /// its open-loop rows, comma separated; 0 for none.
    #[arg(long, value_delimiter = ',', default_value = "50000,100000,150000,200000,300000")]
    pub latency_rates: Vec<u64>,
    /// Durability suites: each log buffer's ring, KiB (`LogOptions::ring_bytes`; default: the
    /// log's default).
    #[arg(long)]
    pub ring_kib: Option<usize>,
    /// Durability suites: the most write+sync pairs each logger keeps in flight
    /// (`LogOptions::max_in_flight`; default: the log's default).
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// Durability suites: each log segment file, MiB (`DeviceOptions::segment_size`; default:
    /// the log's default).
    #[arg(long)]
    pub segment_mib: Option<u64>,
    /// Durability suites: how log files on disk are written (`auto`: io_uring where available,
    /// else pwrite; as `aspen serve --wal-io`).
    #[arg(long, value_name = "auto|uring|pwrite|mmap", default_value = "auto", value_parser = crate::config::parse_backend)]
    pub wal_io: wal::device::Backend,
    /// Scaling suite: emulated bandwidth of each log device, MB/s (10^6 B/s).
    #[arg(long, default_value_t = 10.0)]
    pub device_mbps: f64,
    /// Scaling suite: emulated `fdatasync` latency of each log device, microseconds.
    #[arg(long, default_value_t = 500)]
    pub sync_us: u64,
    /// Scaling suite: how an emulated device treats a write+sync pair: `pipelined` (the next
    /// pair's transfer overlaps the sync latency, as with several pairs in flight on a disk) or
    /// `serial` (one pair on the device at a time; the device idles through every sync).
    #[arg(long, value_enum, default_value_t = DeviceModel::Pipelined)]
    pub device_model: DeviceModel,
    /// Scaling suite: stripe unit of the centralized log's striped device, KiB.
    #[arg(long, default_value_t = 4)]
    pub stripe_kib: u64,
    /// Replay suite: megabytes (10^6 B) of value log to generate and replay (the issue asks for
    /// a multi-GB log).
    #[arg(long, default_value_t = 2048)]
    pub log_mb: u64,
    /// Replay suite: install thread counts of the parallel replay, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub replay_threads: Vec<usize>,
    /// Replay suite: approximate bytes of each row of the `default` workload (the log record
    /// is ~86 B more).
    #[arg(long, default_value_t = 100)]
    pub row_bytes: usize,
    /// Replay suite: the rows of the generated log (`ycsb`: 10 text fields of 100 bytes).
    #[arg(long, value_enum, default_value = "default")]
    pub replay_workload: ReplayWorkload,
    /// Replay suite: which recoveries to run, comma separated (default: all of them; fewer
    /// for a quicker look at one, e.g. `one-pass` to compare two builds)
    #[arg(long, value_enum, value_delimiter = ',')]
    pub replay_variants: Vec<ReplayVariant>,
    /// Logging suite: which rows to measure besides `off`, comma separated (default: all of
    /// them; fewer for a quicker look or a profile of one configuration).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub logging_rows: Vec<LoggingRow>,
    /// Engine suite: the thread counts to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<usize>,
    /// TPC-B suite: pgbench scale (100 000 accounts per unit).
    #[arg(long, default_value_t = 4)]
    pub scale: i64,
    /// Wire suite: concurrent client connections per system.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Wire suite: the client that drives both systems: `tokio-postgres` (in this process) or
    /// PostgreSQL's `pgbench` (`-M prepared`, from `--pg-bin-dir`; a lighter client, so more of
    /// the machine goes to the servers).
    #[arg(long, value_enum, default_value = "tokio-postgres")]
    pub wire_client: WireClient,
    /// Wire and TPC-B suites: how the client reaches both servers.
    #[arg(long, value_enum, default_value = "tcp")]
    pub transport: Transport,
    /// Wire suite: the PostgreSQL configuration(s) Aspen (`--synchronous-commit off`) is
    /// compared with.
    #[arg(long, value_enum, default_value = "both")]
    pub pg_baseline: PgBaseline,
    /// Wire suite: the `aspen` binary to start (default: `aspen` next to this executable).
    #[arg(long, value_name = "PATH")]
    pub aspen_bin: Option<PathBuf>,
    /// Wire and TPC-B suites: one more argument for `aspen serve` (repeat it, e.g.
    /// `--aspen-arg=--busy-poll-us --aspen-arg=0`).
    #[arg(long = "aspen-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub aspen_args: Vec<String>,
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
    /// The measurement window: `--seconds`, or `default` seconds.
    fn window_or(&self, default: f64) -> Duration {
        Duration::from_secs_f64(self.seconds.unwrap_or(default).max(0.1))
    }

    fn window(&self) -> Duration {
        self.window_or(10.0)
    }

    /// `--committers`, or `default`.
    fn committers_or(&self, default: &[usize]) -> Vec<usize> {
        self.committers.clone().unwrap_or_else(|| default.to_vec())
    }

    /// The `wal::LogOptions` of every log the durability suites open: the defaults, with
    /// `--group-commit-us`, `--max-in-flight`, `--assist-us`, `--ring-kib`, `--segment-mib`
    /// and `--wal-io`.
    fn log_options(&self) -> wal::LogOptions {
        let defaults = wal::LogOptions::default();
        wal::LogOptions {
            group_commit_delay: Duration::from_micros(self.group_commit_us),
            max_in_flight: self.max_in_flight.unwrap_or(defaults.max_in_flight).max(1),
            assist_below: self.assist_us.map_or(defaults.assist_below, Duration::from_micros),
            ring_bytes: self.ring_kib.map_or(defaults.ring_bytes, |k| k << 10),
            device: wal::DeviceOptions {
                backend: self.wal_io,
                segment_size: self.segment_mib.map_or(defaults.device.segment_size, |m| m << 20),
                ..defaults.device
            },
            ..defaults
        }
    }

    /// `--sessions`, or `default`.
    fn sessions_or(&self, default: usize) -> usize {
        self.sessions.unwrap_or(default)
    }

    /// `--devices`, or `default`.
    fn devices_or(&self, default: &[usize]) -> Vec<usize> {
        self.devices.clone().unwrap_or_else(|| default.to_vec())
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
    let positive =
        |v: &Option<Vec<usize>>| v.as_ref().is_none_or(|v| !v.is_empty() && !v.contains(&0));
    if !positive(&args.committers)
        || !positive(&args.devices)
        || args.rounds == 0
        || args.sessions == Some(0)
    {
        return Err("--committers, --devices, --rounds and --sessions need positive values".into());
    }
    if args.replay_threads.is_empty() || args.replay_threads.contains(&0) {
        return Err("--replay-threads needs one or more positive counts".into());
    }
    const DURABILITY: [Suite; 4] = [Suite::Replay, Suite::Logging, Suite::Latency, Suite::Scaling];
    let suites: Vec<Suite> = match args.suite {
        Suite::All => {
            [Suite::Engine, Suite::Memory, Suite::Wire].into_iter().chain(DURABILITY).collect()
        }
        Suite::Durability => DURABILITY.to_vec(),
        one => vec![one],
    };
    if suites.len() > 1 {
        return run_each_in_child(&suites);
    }
    println!("{}", header());
    for suite in suites {
        let section = match suite {
            Suite::Engine => engine::run(&args)?,
            Suite::Memory => memory::run(&args)?,
            Suite::Wire => wire::run(&args)?,
            Suite::Logging => logging::run(&args)?,
            Suite::Scaling => scaling::run(&args)?,
            Suite::Latency => latency::run(&args)?,
            Suite::Replay => replay::run(&args)?,
            Suite::Tpcb => tpcb::run(&args)?,
            Suite::All | Suite::Durability => unreachable!("expanded above"),
        };
        // Print each section as soon as it is done, so a failure later keeps earlier numbers.
        println!("{section}");
    }
    Ok(())
}

/// Runs each suite in a process of its own (this executable with the same arguments and
/// `--suite <name>`), one after the other; each prints its own header. A process keeps costs
/// from what it ran before: `txn` rows live in `arc_swap` cells, and every row store walks one
/// debt node per thread the process has ever had at once, so a suite that ran 256 committer
/// threads would slow every later suite's updates (BENCHMARKS.md, "Durability").
fn run_each_in_child(suites: &[Suite]) -> Result<(), Box<dyn std::error::Error>> {
    use clap::ValueEnum;
    let exe = std::env::current_exe()?;
    let mut rest = Vec::new();
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        if arg == "--suite" {
            given.next();
        } else if !arg.starts_with("--suite=") {
            rest.push(arg);
        }
    }
    for suite in suites {
        let name = suite.to_possible_value().expect("every suite has a name").get_name().to_owned();
        let status =
            std::process::Command::new(&exe).args(&rest).args(["--suite", &name]).status()?;
        if !status.success() {
            return Err(format!("suite {name} failed ({status})").into());
        }
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

/// The rows of the generated log (`--replay-workload`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum ReplayWorkload {
    /// `(int8, int8, text)` rows of ~`--row-bytes` bytes; updates write a new counter.
    Default,
    /// YCSB-like: an int8 key and 10 text fields of 100 bytes; updates write new fields.
    Ycsb,
}

/// A row kind of the logging suite (`--logging-rows`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum LoggingRow {
    /// Logs in tmpfs, `commit` without waiting.
    TmpfsNoWait,
    /// Logs in tmpfs, deferred acknowledgement.
    TmpfsDeferred,
    /// Logs in tmpfs, `commit_durable`.
    TmpfsDurable,
    /// Logs on `--disk-dir`, deferred acknowledgement.
    DiskDeferred,
    /// Logs on `--disk-dir`, `commit_durable`.
    DiskDurable,
    /// Logs in this process's memory (no kernel I/O), deferred acknowledgement.
    MemoryDeferred,
}

/// A kind of recovery the replay suite runs (`--replay-variants`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum ReplayVariant {
    /// The whole log through `recovery::SerialReplayer` (the oracle).
    Serial,
    /// The whole log through `recovery::replay`, each surviving key through `replay_install`.
    PerEntry,
    /// The whole log: `RecoveryPlan::scan`, then `recovery::replay` with bulk install.
    Bulk,
    /// The whole log: `recovery::stage` (scan and staging in one pass) + install.
    OnePass,
    /// Checkpoint at half + tail: `load_checkpoint`, then scan and `replay` of the tail.
    Checkpoint,
    /// Checkpoint at half + tail in one pass: `stage`, `load_checkpoint`, install.
    CheckpointOnePass,
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
