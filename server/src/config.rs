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

Start a server and connect with any PostgreSQL client (trust authentication, no TLS):

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
    Serve(ServeArgs),
    /// Run the benchmarks (engine, memory, wire against PostgreSQL 15) and print a markdown
    /// report for BENCHMARKS.md.
    Bench(crate::bench::BenchArgs),
}

/// Options of `aspen serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:5432")]
    pub listen: String,
    /// Data directory (catalog and checkpoints); created if missing.
    #[arg(long, value_name = "DIR", default_value = "./aspen-data")]
    pub data_dir: PathBuf,
    /// Write-ahead log directory, one per log buffer; repeat it to spread the log over devices
    /// (default: 2 log buffers).
    #[arg(long = "wal-dir", value_name = "DIR")]
    pub wal_dirs: Vec<PathBuf>,
}

/// Log buffers when no `--wal-dir` is given.
pub const DEFAULT_LOG_BUFFERS: usize = 2;

impl ServeArgs {
    /// The database configuration these options describe.
    pub fn database_config(&self) -> sql::DatabaseConfig {
        sql::DatabaseConfig {
            data_dir: Some(self.data_dir.clone()),
            log_buffers: if self.wal_dirs.is_empty() {
                DEFAULT_LOG_BUFFERS
            } else {
                self.wal_dirs.len()
            },
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
        assert_eq!(args.database_config().log_buffers, 2);
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
        assert_eq!(args.database_config().log_buffers, 3);
    }
}
