//! The sqllogictest runner: every `slt/*.slt` over the wire against a fresh `aspen` per file,
//! and the files marked `# comparable` also against a throwaway PostgreSQL 15.
//!
//! ```text
//! cargo build -p server
//! cargo test -p tests --test slt -- [FILTER] [--pg-only | --aspen-only]
//! ```
//!
//! - `FILTER` keeps the files whose name contains it.
//! - `--pg-only` (or `SLT_PG_ONLY=1`, or `TEST_AGAINST_PG=1` as for the other targets) runs only
//!   the comparable files, only on PostgreSQL: use it to validate expected results, which must
//!   be PostgreSQL's.
//! - `--aspen-only` (or `SLT_ASPEN_ONLY=1`) skips PostgreSQL.
//!
//! Each (server, file) pair is one trial named `aspen::insert.slt` or `postgres::insert.slt`;
//! the run prints one line per file and ends with `N passed, N failed`, exiting non-zero on any
//! failure. Values are compared as text (simple query protocol): NULL prints as `NULL` and the
//! empty string as `(empty)`. Errors are matched by SQLSTATE: `statement error (23505)`.
//!
//! A lint runs first and fails a file that has a bare `statement error` / `query error` (or any
//! error expectation that is not a SQLSTATE, since messages differ between servers), a `halt`,
//! or no opening `#` comment saying what it proves. On PostgreSQL each file starts from an
//! empty `public` schema in the `postgres` database, and the runner labels are `postgres` or
//! `aspen` (for `onlyif`/`skipif`, which comparable files should not need).

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqllogictest::{
    AsyncDB, DBOutput, DefaultColumnType, ExpectedError, QueryExpect, Record, Runner,
    StatementExpect,
};
use tests::{AspenServer, PgServer, PG_UNAVAILABLE};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// A whole file must finish within this time on either server.
const FILE_TIMEOUT: Duration = Duration::from_secs(120);

/// Files that are known not to run yet, with the reason. Counted and printed as skipped.
const SKIP_LIST: &[(&str, &str)] = &[];

/// One connection of the runner: a tokio-postgres client using the simple query protocol.
struct WireDb {
    client: Client,
    engine: &'static str,
}

/// An error from the server (with its SQLSTATE) or from the connection.
#[derive(Debug)]
struct WireError {
    sqlstate: Option<String>,
    message: String,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.sqlstate {
            Some(code) => write!(f, "[{code}] {}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for WireError {}

impl From<tokio_postgres::Error> for WireError {
    fn from(e: tokio_postgres::Error) -> Self {
        let message = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.severity(), db.message()),
            None => format!("{e:?}"),
        };
        WireError { sqlstate: e.code().map(|c| c.code().to_string()), message }
    }
}

impl WireDb {
    async fn connect(port: u16, engine: &'static str) -> Result<WireDb, WireError> {
        let connected = tokio::time::timeout(
            Duration::from_secs(10),
            tokio_postgres::connect(&tests::conn_string(port), NoTls),
        )
        .await
        .map_err(|_| WireError { sqlstate: None, message: "connect timed out".into() })?;
        let (client, connection) = connected?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(WireDb { client, engine })
    }
}

#[async_trait::async_trait]
impl AsyncDB for WireDb {
    type Error = WireError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, WireError> {
        let messages = self.client.simple_query(sql).await?;
        let mut rows = Vec::new();
        let mut columns = None;
        let mut count = 0;
        for message in messages {
            match message {
                SimpleQueryMessage::RowDescription(desc) => columns = Some(desc.len()),
                SimpleQueryMessage::Row(row) => {
                    columns.get_or_insert(row.len());
                    let values = (0..row.len())
                        .map(|i| match row.get(i) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(v) => v.to_string(),
                        })
                        .collect();
                    rows.push(values);
                }
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        match columns {
            Some(n) => Ok(DBOutput::Rows { types: vec![DefaultColumnType::Any; n], rows }),
            None => Ok(DBOutput::StatementComplete(count)),
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.engine
    }

    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await
    }

    fn error_sql_state(err: &WireError) -> Option<String> {
        err.sqlstate.clone()
    }
}

/// Command-line options.
struct Options {
    filter: Option<String>,
    pg_only: bool,
    aspen_only: bool,
}

fn options() -> Options {
    let env = |k: &str| std::env::var(k).map(|v| v == "1" || v == "true").unwrap_or(false);
    let mut opts = Options {
        filter: None,
        pg_only: env("SLT_PG_ONLY") || tests::against_pg(),
        aspen_only: env("SLT_ASPEN_ONLY"),
    };
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--pg-only" => opts.pg_only = true,
            "--aspen-only" => opts.aspen_only = true,
            // Flags cargo or libtest conventions may pass (--nocapture, --quiet, ...).
            a if a.starts_with('-') => {}
            a => opts.filter = Some(a.to_string()),
        }
    }
    opts
}

/// The corpus files, sorted, filtered by name.
fn corpus(filter: Option<&str>) -> Vec<PathBuf> {
    let dir = tests::tests_dir().join("slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .filter(|p| filter.is_none_or(|f| file_name(p).contains(f)))
        .collect();
    files.sort();
    files
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Whether the file's leading comment block contains a `# comparable` line.
fn is_comparable(text: &str) -> bool {
    text.lines().take_while(|l| l.starts_with('#')).any(|l| l.trim() == "# comparable")
}

/// The corpus rules that sqllogictest itself does not enforce. Returns the violations.
fn lint(path: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if !text.starts_with('#') {
        problems.push("must open with a `#` comment saying what it proves".to_string());
    }
    let records = match sqllogictest::parse_file::<DefaultColumnType>(path) {
        Ok(records) => records,
        Err(e) => return vec![format!("does not parse: {e}")],
    };
    for record in &records {
        let (loc, expected) = match record {
            Record::Halt { loc } => {
                problems.push(format!("{loc}: `halt` is not allowed (use the skip list)"));
                continue;
            }
            Record::Statement { loc, expected: StatementExpect::Error(e), .. } => (loc, e),
            Record::Query { loc, expected: QueryExpect::Error(e), .. } => (loc, e),
            _ => continue,
        };
        if !matches!(expected, ExpectedError::SqlState(_)) {
            problems.push(format!(
                "{loc}: an error expectation must be a SQLSTATE, like `statement error (42P01)`"
            ));
        }
    }
    problems
}

/// Runs one file against the server on `port`; `Err` carries the report.
async fn run_file(path: &Path, port: u16, engine: &'static str) -> Result<(), String> {
    let mut runner = Runner::new(move || WireDb::connect(port, engine));
    runner.add_label(engine);
    match tokio::time::timeout(FILE_TIMEOUT, runner.run_file_async(path)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.display(false).to_string()),
        Err(_) => Err(format!("timed out after {FILE_TIMEOUT:?}")),
    }
}

/// Gives the PostgreSQL cluster an empty `public` schema, as a fresh Aspen has.
async fn reset_pg(port: u16) -> Result<(), String> {
    let db = WireDb::connect(port, "postgres").await.map_err(|e| e.to_string())?;
    db.client
        .batch_execute(
            "DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public; \
             GRANT ALL ON SCHEMA public TO PUBLIC;",
        )
        .await
        .map_err(|e| WireError::from(e).to_string())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let opts = options();
    let files = corpus(opts.filter.as_deref());
    let pg = if opts.aspen_only {
        None
    } else {
        let pg = tokio::task::spawn_blocking(PgServer::start).await.expect("start PostgreSQL");
        if pg.is_none() {
            println!("{PG_UNAVAILABLE}");
        }
        pg
    };

    let (mut passed, mut failed, mut skipped) = (0usize, 0usize, 0usize);
    let mut reports = Vec::new();
    for path in &files {
        let name = file_name(path);
        let text = std::fs::read_to_string(path).expect("read slt file");
        let mut line = format!("{name:<28}");

        let problems = lint(path, &text);
        if !problems.is_empty() {
            failed += 1;
            line += " lint FAILED";
            reports.push(format!("lint::{name}:\n  {}", problems.join("\n  ")));
            println!("{line}");
            continue;
        }
        if let Some((_, why)) = SKIP_LIST.iter().find(|(f, _)| *f == name) {
            skipped += 1;
            println!("{line} skipped ({why})");
            continue;
        }

        if !opts.pg_only {
            let result = match tokio::task::spawn_blocking(AspenServer::try_start).await {
                Ok(Ok(server)) => run_file(path, server.port(), "aspen").await,
                Ok(Err(e)) => Err(e),
                Err(e) => Err(format!("starting aspen panicked: {e}")),
            };
            match result {
                Ok(()) => {
                    passed += 1;
                    line += " aspen ok    ";
                }
                Err(report) => {
                    failed += 1;
                    line += " aspen FAILED";
                    reports.push(format!("aspen::{name}:\n{report}"));
                }
            }
        }

        if let (Some(pg), true) = (&pg, is_comparable(&text)) {
            let result = match reset_pg(pg.port()).await {
                Ok(()) => run_file(path, pg.port(), "postgres").await,
                Err(e) => Err(format!("cannot reset the PostgreSQL schema: {e}")),
            };
            match result {
                Ok(()) => {
                    passed += 1;
                    line += " postgres ok";
                }
                Err(report) => {
                    failed += 1;
                    line += " postgres FAILED";
                    reports.push(format!("postgres::{name}:\n{report}"));
                }
            }
        } else if !is_comparable(&text) {
            line += " (aspen-only)";
        }
        println!("{line}");
    }

    for report in &reports {
        println!("\n---- {report}");
    }
    if skipped > 0 {
        println!("{passed} passed, {failed} failed, {skipped} skipped");
    } else {
        println!("{passed} passed, {failed} failed");
    }
    // `exit` skips destructors: stop PostgreSQL first.
    drop(pg);
    if failed > 0 || files.is_empty() {
        std::process::exit(1);
    }
}
