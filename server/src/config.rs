//! The command line and the server configuration it produces.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// `aspen --help`, the long form.
const ABOUT: &str = "\
Aspen is an in-memory OLTP database server that speaks the PostgreSQL 15 wire protocol. Tables \
live in memory; every committed transaction is made durable in the write-ahead log (one log \
buffer per --wal-dir) before it is acknowledged, and the database is recovered from its \
checkpoints and logs at startup. All transactions are SERIALIZABLE; a conflict fails with \
SQLSTATE 40001 and the client retries.

Start a server and connect with any PostgreSQL client (trust authentication on the Unix \
socket and loopback addresses, SCRAM-SHA-256 passwords from anywhere else; TLS with \
--tls-cert and --tls-key):

    aspen serve --listen 127.0.0.1:5432 --data-dir ./aspen-data
    psql -h 127.0.0.1 -p 5432 -U postgres

Set RUST_LOG (e.g. RUST_LOG=debug or RUST_LOG=server=debug) to change the log level; logs go to \
stderr.";

/// The `aspen` command line.
#[derive(Debug, Parser)]
#[command(name = "aspen", version, about = "Aspen: an in-memory OLTP database server speaking the PostgreSQL protocol", long_about = ABOUT)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server until SIGINT or SIGTERM (then close all sessions and exit 0).
    Serve(Box<ServeArgs>),
    /// Run the benchmarks (engine, memory, wire against PostgreSQL 15) and print a markdown
    /// report for BENCHMARKS.md.
    Bench(Box<crate::bench::BenchArgs>),
}

/// Options of `aspen serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:5432")]
    pub listen: String,
    /// Also listen on the Unix-domain socket `DIR/.s.PGSQL.<port>`, as PostgreSQL does in its
    /// `unix_socket_directories` (`psql -h DIR -p <port>`).
    #[arg(long, value_name = "DIR")]
    pub unix_socket_dir: Option<PathBuf>,
    /// Data directory (catalog, checkpoints, and by default the log); created if missing.
    #[arg(long, value_name = "DIR", default_value = "./aspen-data")]
    pub data_dir: PathBuf,
    /// Write-ahead log device directory, one log buffer and one logger thread each; repeat it
    /// to spread the log over devices (default: DATA_DIR/wal/0 and DATA_DIR/wal/1). A data
    /// directory must always be started with the same list, in the same order.
    #[arg(long = "wal-dir", value_name = "DIR")]
    pub wal_dirs: Vec<PathBuf>,
    /// Server default of synchronous_commit: `on` acknowledges a commit only once it is
    /// durable; `off` acknowledges at once (a crash may lose the last commits, never
    /// consistency). Sessions may `SET synchronous_commit`.
    #[arg(
        long,
        value_name = "on|off",
        default_value = "on",
        value_parser = parse_on_off,
        action = clap::ArgAction::Set
    )]
    pub synchronous_commit: bool,
    /// Group commit: how long a log writer waits, after the previous sync returned, to batch
    /// more commits (0 = write at once, never delay a lone commit).
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 0)]
    pub group_commit_delay_us: u64,
    /// The longest a commit made with synchronous_commit off waits before its log writer
    /// writes and syncs it (sooner when another commit waits on that device); like
    /// PostgreSQL's wal_writer_delay. 0 = write every commit at once.
    #[arg(long, value_name = "MILLISECONDS", default_value_t = 10)]
    pub wal_writer_delay_ms: u64,
    /// On a log device whose write+sync takes less than this on average (tmpfs, a disk with a
    /// power-safe cache), a connection thread that needs a commit durable while the device's
    /// log writer is idle writes and syncs it itself instead of waking the writer (cheaper
    /// than the wake-up at that speed). 0 = always the log writer.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 50)]
    pub wal_assist_us: u64,
    /// The most write+sync pairs each log writer keeps in flight through io_uring (within it,
    /// the writer keeps as many as its measurements say pay on the device).
    #[arg(long, value_name = "N", default_value_t = wal::LogOptions::default().max_in_flight as u8, value_parser = clap::value_parser!(u8).range(1..=64))]
    pub wal_pairs_in_flight: u8,
    /// How log writes reach the files: `auto` is io_uring, except on a memory file system such
    /// as tmpfs (writes through a memory mapping, where a sync is free) and where io_uring is
    /// unavailable (pwrite); `mmap` maps the segments anywhere.
    #[arg(long, value_name = "auto|uring|pwrite|mmap", default_value = "auto", value_parser = parse_backend)]
    pub wal_io: wal::device::Backend,
    /// Size of each log segment file, preallocated with zeros when it is created (a new one per
    /// device at every start and whenever the current one fills).
    #[arg(long, value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub wal_segment_mb: u64,
    /// Checkpoint directory, one writer thread each; repeat it to write checkpoints in
    /// parallel (default: DATA_DIR/checkpoint). Keep the same list across restarts.
    #[arg(long = "checkpoint-dir", value_name = "DIR")]
    pub checkpoint_dirs: Vec<PathBuf>,
    /// Seconds between automatic checkpoints (taken only if something was committed since the
    /// last); 0 = only on CHECKPOINT and at clean shutdown. Like PostgreSQL's
    /// checkpoint_timeout (default 5 min).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub checkpoint_interval_secs: u64,
    /// Replay threads at recovery (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    pub recovery_threads: Option<usize>,
    /// Threads that serve client connections, each with its own event loop; connections are
    /// dealt to them in turn (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    pub connection_threads: Option<usize>,
    /// Before a connection thread serving one or two connections sleeps, it polls their
    /// sockets for up to this long, while the machine has an idle core (a client waiting on
    /// round trips one at a time gets its answers without the wake-up of a sleeping CPU).
    /// 0 = never.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 50)]
    pub busy_poll_us: u64,
    /// How clients on the Unix-domain socket or a loopback address authenticate: `trust` (any
    /// role name, no password), `scram-sha-256` (the role's password, set with ALTER ROLE …
    /// PASSWORD) or `reject`.
    #[arg(long, value_name = "METHOD", default_value = "trust")]
    pub auth_local: crate::auth::Method,
    /// How clients from any other address authenticate (`scram-sha-256`, `trust`, `reject`).
    #[arg(long, value_name = "METHOD", default_value = "scram-sha-256")]
    pub auth_remote: crate::auth::Method,
    /// Sets the password of the bootstrap role `postgres` at start (only its SCRAM verifier is
    /// stored). Prefer the environment variable: a command line is visible to other users.
    #[arg(long, value_name = "PASSWORD", env = "ASPEN_POSTGRES_PASSWORD", hide_env_values = true)]
    pub postgres_password: Option<String>,
    /// Answer SSLRequest with TLS using this PEM certificate chain (with --tls-key), as
    /// PostgreSQL's `ssl_cert_file`; without it SSLRequest is refused and clients go on in the
    /// clear.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (PostgreSQL's `ssl_key_file`).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Testing only: make a log device fail (`device=D,write|sync|nospace=N`, see
    /// `server::fault`).
    #[arg(long, value_name = "SPEC", hide = true, value_parser = crate::fault::parse)]
    pub inject_wal_fault: Option<crate::fault::FaultSpec>,
    /// Testing only: each log segment file in KiB, overriding --wal-segment-mb, so that a
    /// test's few megabytes of log fill, rotate, remove and (on tmpfs) recycle segments.
    #[arg(long, value_name = "KIB", hide = true, value_parser = clap::value_parser!(u64).range(64..=4_194_304))]
    pub wal_segment_kb: Option<u64>,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("expected on or off, got \"{s}\"")),
    }
}

pub(crate) fn parse_backend(s: &str) -> Result<wal::device::Backend, String> {
    match s {
        "auto" => Ok(wal::device::Backend::Auto),
        "uring" | "io_uring" => Ok(wal::device::Backend::Uring),
        "pwrite" | "file" => Ok(wal::device::Backend::File),
        "mmap" | "mapped" => Ok(wal::device::Backend::Mapped),
        _ => Err(format!("expected auto, uring, pwrite or mmap, got \"{s}\"")),
    }
}

impl ServeArgs {
    /// The number of connection threads: `--connection-threads`, else the number of CPUs.
    pub fn connection_threads(&self) -> usize {
        self.connection_threads
            .unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
            })
            .max(1)
    }

    /// The startup configuration these options describe.
    pub fn startup_config(&self) -> recovery::startup::StartupConfig {
        let mut log = wal::LogOptions {
            group_commit_delay: std::time::Duration::from_micros(self.group_commit_delay_us),
            lazy_flush_delay: std::time::Duration::from_millis(self.wal_writer_delay_ms),
            assist_below: std::time::Duration::from_micros(self.wal_assist_us),
            max_in_flight: usize::from(self.wal_pairs_in_flight),
            ..wal::LogOptions::default()
        };
        log.device.backend = self.wal_io;
        log.device.segment_size =
            self.wal_segment_kb.map_or(self.wal_segment_mb << 20, |k| k << 10);
        recovery::startup::StartupConfig {
            data_dir: self.data_dir.clone(),
            wal_dirs: self.wal_dirs.clone(),
            log,
            synchronous_commit: self.synchronous_commit,
            replay_threads: self.recovery_threads.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
            }),
            wrap_store: self.inject_wal_fault.map(crate::fault::wrapper),
            checkpoint_dirs: self.checkpoint_dirs.clone(),
            checkpoint_interval: (self.checkpoint_interval_secs > 0)
                .then(|| std::time::Duration::from_secs(self.checkpoint_interval_secs)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_defaults_and_repeated_wal_dirs() {
        let cli = Cli::parse_from(["aspen", "serve"]);
        let Command::Serve(args) = cli.command else { panic!("expected serve") };
        assert_eq!(args.listen, "127.0.0.1:5432");
        assert!(args.synchronous_commit);
        let cli = Cli::parse_from(["aspen", "serve", "--synchronous-commit", "off"]);
        let Command::Serve(args) = cli.command else { panic!("expected serve") };
        assert!(!args.synchronous_commit, "`--synchronous-commit off` takes its value");
        let config = args.startup_config();
        assert_eq!(config.wal_dirs().len(), 2);
        assert!(config.wal_dirs()[1].ends_with("wal/1"));
        let cli = Cli::parse_from([
            "aspen",
            "serve",
            "--wal-dir",
            "/a",
            "--wal-dir",
            "/b",
            "--wal-dir",
            "/c",
        ]);
        let Command::Serve(args) = cli.command else { panic!("expected serve") };
        assert_eq!(args.wal_dirs.len(), 3);
        assert_eq!(args.startup_config().wal_dirs().len(), 3);
    }
}
