//! The wire suite: one client, Aspen and PostgreSQL 15 in one run.
//!
//! 1. Start `aspen serve --listen 127.0.0.1:0 --synchronous-commit off` on a fresh data
//!    directory and read the port from its `aspen listening on HOST:PORT` line; start one or two
//!    throwaway PostgreSQL 15 clusters (`--pg-baseline`; `initdb`, then `postgres` as the
//!    `postgres` OS user when we are root): with `synchronous_commit=off` (WAL flushed in the
//!    background, as Aspen's log is) and with `fsync=off`, `synchronous_commit=off` and
//!    `full_page_writes=off` (nothing flushed). Everything lives in one temporary directory,
//!    removed at the end; every server is stopped on every exit path.
//! 2. On each system, create `kv(k int8 primary key, v int8, pad text)` and load `--rows` rows
//!    with a prepared multi-row INSERT (PostgreSQL then gets `VACUUM ANALYZE`).
//! 3. For each workload — prepared point select `SELECT v, pad FROM kv WHERE k = $1`, prepared
//!    autocommit update `UPDATE kv SET v = v + 1 WHERE k = $1`, and a batch fetch of
//!    [`IN_KEYS`] distinct keys `SELECT v, pad FROM kv WHERE k IN ($1, …)` (what an ORM sends
//!    to load a page of rows by id) — run [`ROUNDS`] rounds, and in
//!    each round measure Aspen then each PostgreSQL for one `--seconds` window with `--clients`
//!    connections over uniformly random keys. Alternating the systems spreads any drift of the
//!    machine (other processes, thermal) over both.
//!
//! A `40001` is retried by the client and counted; any other error stops the run. The client
//! and both servers share the machine's cores, the same way for both systems.
//!
//! The client is tokio-postgres in this process (default), or with `--wire-client pgbench`
//! PostgreSQL's `pgbench -M prepared` running the same statement as a one-line script
//! (`\set k random(1, rows)`), with every transaction's latency read from its `-l` log. A
//! lighter client leaves more of the two cores to the servers, so the ratio says more about
//! them; the report names the client.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls};

use super::tpcb::Script;
use super::{fmt_rate, BenchArgs, PgBaseline, Rng, Transport, WireClient};

/// Measurement rounds per workload; each round measures every system once.
const ROUNDS: usize = 2;
/// Rows per INSERT statement while loading (3 parameters each).
const LOAD_BATCH: u64 = 1000;
/// Length of the `pad` column.
const PAD_LEN: usize = 80;
/// How long a server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

type BoxError = Box<dyn std::error::Error>;
/// The error of a spawned client task.
type SendError = Box<dyn std::error::Error + Send + Sync>;

/// Keys per statement of the IN-list workload.
const IN_KEYS: usize = 10;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Workload {
    PointSelect,
    Update,
    InList,
}

impl Workload {
    const ALL: [Workload; 3] = [Workload::PointSelect, Workload::Update, Workload::InList];

    fn sql(self) -> &'static str {
        match self {
            Workload::PointSelect => "SELECT v, pad FROM kv WHERE k = $1",
            Workload::Update => "UPDATE kv SET v = v + 1 WHERE k = $1",
            Workload::InList => {
                "SELECT v, pad FROM kv WHERE k IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            }
        }
    }

    /// Keys per statement.
    fn keys(self) -> usize {
        match self {
            Workload::InList => IN_KEYS,
            _ => 1,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Workload::PointSelect => "point select",
            Workload::Update => "single-row update (autocommit)",
            Workload::InList => "10-key IN-list select",
        }
    }

    /// The target for the ratio, if it sets one.
    fn target(self) -> &'static str {
        match self {
            Workload::PointSelect => "≥ 1.5×",
            Workload::Update => "≥ 2×",
            Workload::InList => "—",
        }
    }

    /// The same statement as a pgbench script over keys `1..=rows` (pgbench draws the keys
    /// of an IN list independently, so they may repeat).
    fn pgbench_script(self, rows: u64) -> String {
        let mut sql = self.sql().to_string();
        let mut script = String::new();
        for i in (1..=self.keys()).rev() {
            let name = if self.keys() == 1 { "k".to_string() } else { format!("k{i}") };
            script.insert_str(0, &format!("\\set {name} random(1, {rows})\n"));
            sql = sql.replace(&format!("${i}"), &format!(":{name}"));
        }
        format!("{script}{sql};\n")
    }

    fn file_stem(self) -> &'static str {
        match self {
            Workload::PointSelect => "point-select",
            Workload::Update => "update",
            Workload::InList => "in-list-select",
        }
    }
}

/// One measurement window on one system.
#[derive(Default)]
struct Window {
    ops: u64,
    retries: u64,
    elapsed: Duration,
    /// Latency of every operation, in microseconds (retries included in the operation).
    latencies_us: Vec<u32>,
}

impl Window {
    fn rate(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn add(&mut self, other: Window) {
        self.ops += other.ops;
        self.retries += other.retries;
        self.elapsed += other.elapsed;
        self.latencies_us.extend(other.latencies_us);
    }

    /// p50 / p99 latency in microseconds.
    fn percentiles(&mut self) -> (u32, u32) {
        if self.latencies_us.is_empty() {
            return (0, 0);
        }
        self.latencies_us.sort_unstable();
        let at = |q: f64| {
            let i = ((self.latencies_us.len() - 1) as f64 * q).round() as usize;
            self.latencies_us[i]
        };
        (at(0.50), at(0.99))
    }
}

/// A running server: how to reach it and how to stop it.
pub(super) struct Server {
    pub(super) name: &'static str,
    pub(super) port: u16,
    /// `127.0.0.1`, or the directory of its Unix-domain socket (`--transport unix`).
    pub(super) host: String,
    child: Child,
    /// PostgreSQL's data directory (stopped with `pg_ctl`); `None` for Aspen (SIGTERM).
    pg: Option<(PathBuf, PathBuf)>,
    log: PathBuf,
}

impl Server {
    fn config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        if self.host.starts_with('/') {
            config.host_path(&self.host);
        } else {
            config.host(&self.host);
        }
        config.port(self.port).user("postgres").dbname("postgres");
        config
    }

    pub(super) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    pub(super) fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        match &self.pg {
            Some((pg_ctl, data)) => {
                let mut cmd = as_postgres(pg_ctl);
                cmd.arg("stop").arg("-D").arg(data).args(["-m", "fast", "-w"]);
                let _ = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status();
            }
            None => {
                let _ = Command::new("kill")
                    .arg("-TERM")
                    .arg(self.child.id().to_string())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A temporary directory removed on drop.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new() -> std::io::Result<TempDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("aspen-bench-{}-{nanos:08x}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// `program` run as the `postgres` OS user when we are root (PostgreSQL refuses to run as root).
fn as_postgres(program: &Path) -> Command {
    if running_as_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts `aspen serve` on a fresh data directory under `tmp`. `durable`: the default
/// (`synchronous_commit = on`); otherwise `--synchronous-commit off`, the counterpart of
/// [`PgMode::SyncCommitOff`].
pub(super) fn start_aspen(args: &BenchArgs, tmp: &Path, durable: bool) -> Result<Server, BoxError> {
    let bin = match &args.aspen_bin {
        Some(bin) => bin.clone(),
        None => std::env::current_exe()?.with_file_name("aspen"),
    };
    if !bin.exists() {
        return Err(format!(
            "no aspen binary at {} (build it, or pass --aspen-bin, or --no-aspen)",
            bin.display()
        )
        .into());
    }
    let log = tmp.join("aspen.log");
    let sockets = tmp.join("aspen-sockets");
    let host = match args.transport {
        Transport::Tcp => "127.0.0.1".to_string(),
        Transport::Unix => {
            std::fs::create_dir_all(&sockets)?;
            sockets.to_str().ok_or("the temporary directory is not UTF-8")?.to_string()
        }
    };
    let mut child = Command::new(&bin)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(tmp.join("aspen-data"))
        .args(match args.transport {
            Transport::Tcp => Vec::new(),
            Transport::Unix => vec!["--unix-socket-dir".to_string(), host.clone()],
        })
        .args(if durable { &[][..] } else { &["--synchronous-commit", "off"][..] })
        .args(&args.aspen_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout);
    let mut port = None;
    let mut line = String::new();
    while lines.read_line(&mut line)? > 0 {
        if let Some(addr) = line.trim().strip_prefix("aspen listening on ") {
            port = addr.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
            break;
        }
        line.clear();
    }
    // Keep draining stdout so a later print never blocks or fails on a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut lines.into_inner(), &mut std::io::sink()));
    let mut server = Server { name: "Aspen", port: 0, host, child, pg: None, log };
    match port {
        Some(port) => {
            server.port = port;
            Ok(server)
        }
        None => Err(format!(
            "`{} serve` exited without printing its address; log:\n{}",
            bin.display(),
            server.log_tail()
        )
        .into()),
    }
}

/// How a throwaway PostgreSQL is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PgMode {
    /// Its defaults: `fsync`, `synchronous_commit` and `full_page_writes` on.
    Durable,
    /// `synchronous_commit = off` only: commits are acknowledged before their WAL is flushed,
    /// the WAL writer writes and flushes it in the background, as Aspen's
    /// `--synchronous-commit off` does with its log.
    SyncCommitOff,
    /// `fsync`, `synchronous_commit` and `full_page_writes` all off: nothing is ever flushed
    /// (the match for an engine without a log).
    FsyncOff,
}

impl PgMode {
    /// The server's name in reports.
    pub(super) fn name(self) -> &'static str {
        match self {
            PgMode::Durable | PgMode::SyncCommitOff => "PostgreSQL",
            PgMode::FsyncOff => "PostgreSQL (fsync=off)",
        }
    }

    fn settings(self) -> &'static [&'static str] {
        match self {
            PgMode::Durable => &[],
            PgMode::SyncCommitOff => &["-c", "synchronous_commit=off"],
            PgMode::FsyncOff => {
                &["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
            }
        }
    }

    fn dir_name(self) -> &'static str {
        match self {
            PgMode::Durable => "pg",
            PgMode::SyncCommitOff => "pg-async",
            PgMode::FsyncOff => "pg-nofsync",
        }
    }
}

/// Starts a throwaway PostgreSQL 15 under `tmp`, configured as `mode` says.
pub(super) fn start_postgres(
    args: &BenchArgs,
    tmp: &Path,
    mode: PgMode,
) -> Result<Server, BoxError> {
    let bin = &args.pg_bin_dir;
    let dir = tmp.join(mode.dir_name());
    let data = dir.join("data");
    std::fs::create_dir_all(&dir)?;
    if running_as_root() {
        let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(&dir).status()?;
        if !status.success() {
            return Err(format!("chown postgres {} failed", dir.display()).into());
        }
    }
    let initdb = as_postgres(&bin.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.join("initdb").display()))?;
    if !initdb.status.success() {
        return Err(format!("initdb failed:\n{}", String::from_utf8_lossy(&initdb.stderr)).into());
    }
    let port = free_port()?;
    let log = dir.join("postgres.log");
    let child = as_postgres(&bin.join("postgres"))
        .arg("-D")
        .arg(&data)
        .arg("-p")
        .arg(port.to_string())
        .arg("-k")
        .arg(&dir)
        .args(["-c", "listen_addresses=127.0.0.1"])
        .args(mode.settings())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::create(dir.join("postgres.stderr"))?)
        .spawn()?;
    let host = match args.transport {
        Transport::Tcp => "127.0.0.1".to_string(),
        Transport::Unix => dir.to_str().ok_or("the temporary directory is not UTF-8")?.to_string(),
    };
    Ok(Server { name: mode.name(), port, host, child, pg: Some((bin.join("pg_ctl"), data)), log })
}

async fn connect(server: &Server) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = server.config().connect(NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Connects, retrying until the server accepts connections.
pub(super) async fn wait_ready(server: &mut Server) -> Result<Client, BoxError> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match connect(server).await {
            Ok(client) => return Ok(client),
            Err(e) => {
                if Instant::now() > deadline || matches!(server.child.try_wait(), Ok(Some(_))) {
                    return Err(format!(
                        "{} does not accept connections: {e}; log:\n{}",
                        server.name,
                        server.log_tail()
                    )
                    .into());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Creates and fills `kv`; returns the server's version string.
async fn load(server: &mut Server, rows: u64) -> Result<String, BoxError> {
    let client = wait_ready(server).await?;
    client.batch_execute("DROP TABLE IF EXISTS kv").await?;
    client.batch_execute("CREATE TABLE kv (k int8 PRIMARY KEY, v int8, pad text)").await?;
    let pad = "x".repeat(PAD_LEN);
    let mut next = 1;
    while next <= rows {
        let end = (next + LOAD_BATCH).min(rows + 1);
        let keys: Vec<i64> = (next as i64..end as i64).collect();
        let values = (0..keys.len())
            .map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3))
            .collect::<Vec<_>>()
            .join(", ");
        let stmt = client.prepare(&format!("INSERT INTO kv VALUES {values}")).await?;
        let zero = 0i64;
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(keys.len() * 3);
        for k in &keys {
            params.extend([k as &(dyn ToSql + Sync), &zero, &pad]);
        }
        client.execute(&stmt, &params).await?;
        next = end;
    }
    if server.pg.is_some() {
        client.batch_execute("VACUUM ANALYZE kv").await?;
    }
    let count: i64 = client.query_one("SELECT count(*) FROM kv", &[]).await?.get(0);
    if count as u64 != rows {
        return Err(format!("{}: loaded {count} rows, expected {rows}", server.name).into());
    }
    let version = client.query_one("SHOW server_version", &[]).await?;
    Ok(version.get::<_, String>(0))
}

/// One client connection running `workload` until `deadline` (after all clients are ready).
async fn client_loop(
    server_config: tokio_postgres::Config,
    workload: Workload,
    rows: u64,
    seed: u64,
    ready: Arc<tokio::sync::Barrier>,
    window: Duration,
) -> Result<Window, SendError> {
    let (client, connection) = server_config.connect(NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let stmt = client.prepare(workload.sql()).await?;
    let mut rng = Rng::new(seed);
    let mut w = Window::default();
    ready.wait().await;
    let started = Instant::now();
    let deadline = started + window;
    loop {
        let op_started = Instant::now();
        if op_started >= deadline {
            break;
        }
        let mut keys: Vec<i64> = Vec::with_capacity(workload.keys());
        while keys.len() < workload.keys().min(rows as usize) {
            let k = rng.range(1, rows) as i64;
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let params: Vec<&(dyn ToSql + Sync)> =
            keys.iter().map(|k| k as &(dyn ToSql + Sync)).collect();
        loop {
            let result = match workload {
                Workload::PointSelect => client.query_one(&stmt, &params).await.map(|_| 1u64),
                Workload::Update => client.execute(&stmt, &params).await,
                Workload::InList => client.query(&stmt, &params).await.map(|r| r.len() as u64),
            };
            match result {
                Ok(n) if n == keys.len() as u64 => break,
                Ok(n) => {
                    let k = keys[0];
                    return Err(format!("{} touched {n} rows for key {k}", workload.label()).into());
                }
                Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => {
                    w.retries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
        w.ops += 1;
        w.latencies_us.push(op_started.elapsed().as_micros().min(u32::MAX as u128) as u32);
    }
    w.elapsed = started.elapsed();
    Ok(w)
}

/// Runs `clients` connections against `server` for one window and sums them.
async fn measure(
    server: &Server,
    workload: Workload,
    rows: u64,
    clients: usize,
    window: Duration,
    round: usize,
) -> Result<Window, BoxError> {
    let ready = Arc::new(tokio::sync::Barrier::new(clients));
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            tokio::spawn(client_loop(
                server.config(),
                workload,
                rows,
                (round * 1000 + c) as u64 + 1,
                ready.clone(),
                window,
            ))
        })
        .collect();
    let mut total = Window::default();
    let mut longest = Duration::ZERO;
    for task in tasks {
        let w = task.await?.map_err(|e| e.to_string())?;
        longest = longest.max(w.elapsed);
        total.ops += w.ops;
        total.retries += w.retries;
        total.latencies_us.extend(w.latencies_us);
    }
    total.elapsed = longest;
    Ok(total)
}

/// One window driven by `pgbench` (`--wire-client pgbench`): `workload` as a one-statement
/// script, every transaction's latency from pgbench's per-transaction log (its third column,
/// microseconds; lines of failed transactions carry no number there and are skipped).
fn measure_pgbench(
    args: &BenchArgs,
    server: &Server,
    workload: Workload,
    rows: u64,
    round: usize,
    tmp: &Path,
) -> Result<Window, BoxError> {
    let script = tmp.join(format!("{}.sql", workload.file_stem()));
    std::fs::write(&script, workload.pgbench_script(rows))?;
    let stem = format!("pgbench-{}-{}-{round}", server.port, workload.file_stem());
    let seconds = args.window().as_secs().max(1);
    let run =
        super::tpcb::pgbench(args, server, Script::File(&script), seconds, Some(&tmp.join(&stem)))?;
    let mut latencies_us = Vec::new();
    for entry in std::fs::read_dir(tmp)? {
        let path = entry?.path();
        if !path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&stem)) {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        latencies_us
            .extend(text.lines().filter_map(|l| l.split_whitespace().nth(2)?.parse::<u32>().ok()));
        std::fs::remove_file(&path)?;
    }
    Ok(Window {
        ops: run.transactions,
        retries: run.retried,
        elapsed: Duration::from_secs_f64(run.transactions as f64 / run.tps.max(1e-9)),
        latencies_us,
    })
}

/// Runs the suite and returns its markdown section.
pub(super) fn run(args: &BenchArgs) -> Result<String, BoxError> {
    let rows = args.rows.unwrap_or(100_000).max(1);
    let tmp = TempDir::new()?;
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    if args.no_aspen {
        skipped.push("Aspen (--no-aspen)".to_string());
    } else {
        servers.push(start_aspen(args, &tmp.0, false)?);
    }
    let baselines: &[PgMode] = match args.pg_baseline {
        PgBaseline::SyncCommitOff => &[PgMode::SyncCommitOff],
        PgBaseline::FsyncOff => &[PgMode::FsyncOff],
        PgBaseline::Both => &[PgMode::SyncCommitOff, PgMode::FsyncOff],
    };
    if args.no_postgres {
        skipped.push("PostgreSQL (--no-postgres)".to_string());
    } else {
        for &mode in baselines {
            servers.push(start_postgres(args, &tmp.0, mode)?);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(drive(args, rows, &mut servers, &tmp.0));
    for server in &mut servers {
        server.stop();
    }
    drop(servers);
    drop(tmp);
    let (versions, mut results) = result?;

    let aspen_idx = servers_index(&versions, "Aspen");
    let pg_version = versions
        .iter()
        .find(|(name, _)| *name != "Aspen")
        .map_or_else(|| "not run".to_string(), |(_, v)| v.clone());
    let client = match args.wire_client {
        WireClient::TokioPostgres => "tokio-postgres",
        WireClient::Pgbench => "pgbench -M prepared",
    };
    let transport = args.transport.label();
    let order: Vec<&str> = versions.iter().map(|(name, _)| *name).collect();
    let mut out = format!(
        "### Over the wire ({client}, prepared statements, {transport})\n\n\
         `kv(k int8 primary key, v int8, pad text)`, {rows} rows, pad {PAD_LEN} chars; \
         {} client connections; uniformly random keys; {ROUNDS} rounds of {:.0} s per system and \
         workload, alternating {}. Client and servers share this machine. **Both acknowledge \
         before durability.** Aspen runs with `--synchronous-commit off` (its log is still \
         written and synced, in the background). PostgreSQL {pg_version}: `PostgreSQL` runs \
         with `synchronous_commit=off` (its WAL writer writes and flushes in the background: \
         the match for Aspen now that Aspen has a log), `PostgreSQL (fsync=off)` with \
         `fsync=off`, `synchronous_commit=off` and `full_page_writes=off` (it flushes nothing: \
         the match for an engine without a log, used before Aspen had one). The durable \
         comparison is the TPC-B suite. 40001 errors are retried by the client and \
         counted.\n\n\
         | workload | baseline | Aspen ops/s | baseline ops/s | Aspen / baseline | target | Aspen p50 / p99 µs | baseline p50 / p99 µs | 40001 retries (Aspen / baseline) |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        args.clients,
        args.window().as_secs_f64(),
        order.join(", "),
    );
    let mut rounds = String::new();
    for workload in Workload::ALL {
        let target = workload.target();
        let mut cell = |idx: Option<usize>| -> (Option<f64>, String, String) {
            match idx {
                Some(i) => {
                    let w =
                        results.total.get_mut(&(workload, i)).expect("every server was measured");
                    let (p50, p99) = w.percentiles();
                    (Some(w.rate()), format!("{p50} / {p99}"), w.retries.to_string())
                }
                None => (None, "—".into(), "—".into()),
            }
        };
        let (a_rate, a_lat, a_retries) = cell(aspen_idx);
        let show = |r: Option<f64>| r.map_or("not run".into(), fmt_rate);
        for (i, (name, _)) in versions.iter().enumerate() {
            if Some(i) == aspen_idx {
                continue;
            }
            let (p_rate, p_lat, p_retries) = cell(Some(i));
            let ratio = match (a_rate, p_rate) {
                (Some(a), Some(p)) if p > 0.0 => format!("**{:.2}×**", a / p),
                _ => "n/a".into(),
            };
            out.push_str(&format!(
                "| {} | {name} | {} | {} | {ratio} | {target} | {a_lat} | {p_lat} | {a_retries} / {p_retries} |\n",
                workload.label(),
                show(a_rate),
                show(p_rate),
            ));
        }
        for (i, (name, _)) in versions.iter().enumerate() {
            let per_round: Vec<String> = results
                .rounds
                .get(&(workload, i))
                .into_iter()
                .flatten()
                .map(|r| fmt_rate(*r))
                .collect();
            rounds.push_str(&format!(
                "| {} | {name} | {} |\n",
                workload.label(),
                per_round.join(" · ")
            ));
        }
    }
    out.push_str(&format!(
        "\nPer round (ops/s, in run order):\n\n| workload | system | rounds |\n|---|---|---|\n{rounds}"
    ));
    out.push_str(&format!(
        "\nLoad average after the suite: {} (the systems alternate, so other work on the \
         machine affects all of them).\n",
        super::load_average()
    ));
    if !skipped.is_empty() {
        out.push_str(&format!("\nNot run: {}.\n", skipped.join(", ")));
    }
    Ok(out)
}

fn servers_index(versions: &[(&'static str, String)], name: &str) -> Option<usize> {
    versions.iter().position(|(n, _)| *n == name)
}

/// What [`drive`] measured, by (workload, index of the server).
#[derive(Default)]
struct Results {
    /// All rounds together.
    total: HashMap<(Workload, usize), Window>,
    /// The ops/s of each round, in run order.
    rounds: HashMap<(Workload, usize), Vec<f64>>,
}

/// Loads every server, then measures; returns `(name, version)` per server and the windows.
async fn drive(
    args: &BenchArgs,
    rows: u64,
    servers: &mut [Server],
    tmp: &Path,
) -> Result<(Vec<(&'static str, String)>, Results), BoxError> {
    let mut versions = Vec::new();
    for server in servers.iter_mut() {
        eprintln!("wire: loading {rows} rows into {}", server.name);
        let started = Instant::now();
        let version = load(server, rows).await?;
        eprintln!("wire: {} ({version}) loaded in {:.1?}", server.name, started.elapsed());
        versions.push((server.name, version));
    }
    let mut results = Results::default();
    for workload in Workload::ALL {
        for round in 0..ROUNDS {
            for (i, server) in servers.iter().enumerate() {
                eprintln!("wire: {} on {}, round {}", workload.label(), server.name, round + 1);
                let w = match args.wire_client {
                    WireClient::TokioPostgres => {
                        measure(server, workload, rows, args.clients, args.window(), round).await
                    }
                    WireClient::Pgbench => {
                        measure_pgbench(args, server, workload, rows, round, tmp)
                    }
                }
                .map_err(|e| format!("{} {}: {e}", server.name, workload.label()))?;
                eprintln!("wire:   {} ops/s, {} retries", fmt_rate(w.rate()), w.retries);
                results.rounds.entry((workload, i)).or_default().push(w.rate());
                results.total.entry((workload, i)).or_default().add(w);
            }
        }
    }
    Ok((versions, results))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_scripts_run_the_same_statements() {
        assert_eq!(
            Workload::PointSelect.pgbench_script(100),
            "\\set k random(1, 100)\nSELECT v, pad FROM kv WHERE k = :k;\n"
        );
        assert_eq!(
            Workload::Update.pgbench_script(7),
            "\\set k random(1, 7)\nUPDATE kv SET v = v + 1 WHERE k = :k;\n"
        );
        let script = Workload::InList.pgbench_script(9);
        assert!(script.starts_with("\\set k1 random(1, 9)\n\\set k2 random(1, 9)\n"), "{script}");
        assert!(
            script.ends_with("WHERE k IN (:k1, :k2, :k3, :k4, :k5, :k6, :k7, :k8, :k9, :k10);\n"),
            "{script}"
        );
    }
}
