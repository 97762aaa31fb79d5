//! End-to-end test harness: real servers, real clients, real wire protocol.
//!
//! Everything in this crate talks to a server process over TCP, exactly as a user's client would.
//! There are two kinds of server, and most tests can be pointed at either:
//!
//! ```text
//!   test body ──tokio-postgres / psql / raw TCP──▶ Backend ──┬─▶ AspenServer (target/debug/aspen)
//!                                                           └─▶ PgServer    (throwaway PostgreSQL 15)
//! ```
//!
//! - [`AspenServer`] runs the already-built `aspen` binary on `--listen 127.0.0.1:0` with a fresh
//!   data directory, learns the port from the `aspen listening on 127.0.0.1:PORT` line it prints,
//!   and kills it on `Drop`. [`AspenServer::restart`] keeps the data directory (restart tests).
//!   Crash tests start it with extra arguments on a prepared data directory
//!   ([`AspenServer::try_start_in`]), spawn it without waiting ([`AspenServer::spawn`]), wait for
//!   recovery with a longer timeout ([`AspenServer::wait_listening`]) and SIGKILL it at any
//!   instant in between ([`AspenServer::kill`]).
//!   **This crate never builds the server.** Run `cargo build -p server` first (`.ci/run` does);
//!   the binary is found through [`aspen_bin`].
//! - [`PgServer`] is a throwaway PostgreSQL 15 cluster (`initdb` + `postgres` with `fsync=off`
//!   in a temporary directory, on a free loopback port, run as the `postgres` OS user when we
//!   are root). It is the oracle: expected results are PostgreSQL's, not ours. When the
//!   binaries are missing, [`PgServer::start`] returns `None` and callers skip the comparison,
//!   printing [`PG_UNAVAILABLE`].
//! - [`Backend`] is either of them, chosen by the environment ([`Backend::from_env`]:
//!   `TEST_AGAINST_PG=1` selects PostgreSQL), so a wire-level test body written once can be
//!   sanity-checked against PostgreSQL.
//!
//! Test targets (see `tests/Cargo.toml`):
//!
//! | target | what it proves |
//! |---|---|
//! | `slt` (`slt.rs`, `harness = false`) | the sqllogictest corpus `slt/*.slt`, one fresh Aspen per file; `# comparable` files also against PostgreSQL 15 |
//! | `isolation` (`e2e/isolation.rs`) | the ten classic anomalies (G0 … G2) are prevented |
//! | `concurrency` (`e2e/concurrency.rs`) | concurrent transfers + inserts + range reads keep the total |
//! | `bad_input` (`e2e/bad_input.rs`) | malformed protocol, bad UTF-8, huge and deep queries, a statement that panics: an error, and the server keeps serving |
//! | `cancel` (`e2e/cancel.rs`) | CancelRequest stops a running statement (57014) and the session goes on; one while idle cancels nothing; `pg_sleep` holds up no other session; SIGTERM stops a server that is running a statement |
//! | `psql` (`compat/psql.rs`) | `psql -c`, `psql -f`, and an interactive session over stdin |
//! | `client_binary` (`compat/client_binary.rs`) | tokio-postgres binary parameters and results for every supported type, inferred parameter types, result column names, a 2000-parameter INSERT |
//! | `jdbc` (`compat/jdbc.rs`) | pgjdbc: rewritten batches, binary numeric, OID-0 timestamps, SERIALIZABLE transactions; `DatabaseMetaData` as BenchBase reads a schema, with PostgreSQL's answers |
//! | `restart` (`e2e/restart.rs`) | the schema survives a restart (Aspen only) |
//! | `crash` (`e2e/crash.rs`) | kill -9 during a concurrent workload (and during recovery): every acknowledged commit survives, nothing unacknowledged appears, balances agree (Aspen only; `ASPEN_CRASH_POINTS=300` for the long mode) |
//!
//! Running:
//!
//! ```text
//! cargo build -p server && cargo test -p tests        # everything against Aspen (+ PG oracle for slt)
//! cargo test -p tests --test slt -- insert --pg-only  # validate slt expectations on PostgreSQL
//! TEST_AGAINST_PG=1 cargo test -p tests               # sanity-check every test body on PostgreSQL
//! ```
//!
//! Environment: `ASPEN_BIN` (the binary to test), `ASPEN_TEST_LOG=1` (show the server's output),
//! `TEST_AGAINST_PG=1` (see [`Backend::from_env`]), `PG_BINDIR` (where `initdb` lives), and
//! `TEST_PG_ISOLATION` (weaken PostgreSQL's isolation to watch the anomaly tests fail, see
//! [`Backend::connect_serializable`]).
//!
//! Determinism: no test sleeps for correctness. Waiting for a server to come up polls with a
//! deadline, every network wait has a timeout ([`STATEMENT_TIMEOUT`]), and loops are bounded.

#![warn(missing_docs)]

pub mod raw;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

/// Printed by every test that wanted PostgreSQL 15 and could not start it.
pub const PG_UNAVAILABLE: &str = "PostgreSQL 15 not available, skipping comparison";

/// How long a server may take to print its listening line or accept connections.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Upper bound for any single statement or protocol exchange in these tests. A statement that
/// takes longer counts as a hang and fails the test.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(20);

/// The line prefix `aspen serve` prints once its socket is bound.
const LISTENING_PREFIX: &str = "aspen listening on ";

/// Locates the `aspen` binary.
///
/// Cargo only sets `CARGO_BIN_EXE_aspen` for tests of the crate that owns the binary, so this
/// crate looks, in order, at:
/// 1. `$ASPEN_BIN`, if set (used as is, even if missing, so a typo is reported);
/// 2. the `debug/aspen` next to this test executable's `deps/` directory (same target dir);
/// 3. `$CARGO_TARGET_DIR/debug/aspen`;
/// 4. `<workspace>/target/debug/aspen`.
///
/// Returns the first that exists (or the first candidate, so the error names a path).
pub fn aspen_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("ASPEN_BIN") {
        return PathBuf::from(p);
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        // <target>/debug/deps/<test>-<hash>  →  <target>/debug/aspen
        if let Some(profile_dir) = exe.parent().and_then(Path::parent) {
            candidates.push(profile_dir.join("aspen"));
        }
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(PathBuf::from(dir).join("debug").join("aspen"));
    }
    candidates.push(workspace_dir().join("target").join("debug").join("aspen"));
    candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| candidates.swap_remove(0))
}

/// The workspace root (the parent of this crate's manifest directory).
pub fn workspace_dir() -> PathBuf {
    tests_dir().parent().expect("tests/ has a parent").to_path_buf()
}

/// This crate's directory (`<workspace>/tests`), where `slt/` lives: `$CARGO_MANIFEST_DIR` as
/// cargo sets it when it runs the test, else the directory this crate was compiled in. (A test
/// binary reused from a shared target directory may have been compiled in another clone.)
pub fn tests_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// A running `aspen serve` process with its own temporary data directory.
///
/// Dropping it kills the process (SIGKILL) and deletes the data directory (unless
/// [`AspenServer::keep_data_dir`] was called).
///
/// Crash tests drive the process in two steps: [`AspenServer::spawn`] starts it on the same data
/// directory and returns at once (recovery is still running), [`AspenServer::wait_listening`]
/// waits for its listening line, and [`AspenServer::kill`] can come at any moment in between.
pub struct AspenServer {
    child: Child,
    port: u16,
    /// Delivers the port once the current process prints its listening line (disconnects if
    /// it exits first); `None` once the port was received.
    listening: Option<mpsc::Receiver<u16>>,
    extra_args: Vec<OsString>,
    data_dir: tempfile::TempDir,
}

impl AspenServer {
    /// Starts `aspen serve --listen 127.0.0.1:0 --data-dir <fresh tempdir>`.
    ///
    /// # Panics
    /// If the binary is missing (build it with `cargo build -p server`) or the server does not
    /// print its listening line within [`STARTUP_TIMEOUT`].
    pub fn start() -> AspenServer {
        Self::try_start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`AspenServer::start`], but returns the reason instead of panicking.
    pub fn try_start() -> Result<AspenServer, String> {
        Self::try_start_in(fresh_data_dir()?, Vec::new())
    }

    /// Starts `aspen serve --listen 127.0.0.1:0 --data-dir <data_dir> <extra_args...>` and waits
    /// [`STARTUP_TIMEOUT`] for its listening line. The same `extra_args` are passed again by
    /// every restart; they may name paths inside `data_dir` (e.g. `--wal-dir`).
    pub fn try_start_in(
        data_dir: tempfile::TempDir,
        extra_args: Vec<OsString>,
    ) -> Result<AspenServer, String> {
        let (child, listening) = launch_aspen(data_dir.path(), &extra_args)?;
        let mut server =
            AspenServer { child, port: 0, listening: Some(listening), extra_args, data_dir };
        server.wait_listening(STARTUP_TIMEOUT)?;
        Ok(server)
    }

    /// Stops the server and starts it again on the same data directory (and a new port).
    pub fn restart(&mut self) {
        self.try_restart(STARTUP_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Like [`AspenServer::restart`], allowing `timeout` for recovery to finish and the
    /// listening line to appear; returns the reason instead of panicking.
    pub fn try_restart(&mut self, timeout: Duration) -> Result<(), String> {
        self.spawn()?;
        self.wait_listening(timeout)
    }

    /// Kills the current process (SIGKILL) if it runs, then starts a new one on the same data
    /// directory and returns immediately, before it has recovered or bound its socket. Follow
    /// with [`AspenServer::wait_listening`] (or [`AspenServer::kill`] to crash it during
    /// recovery).
    pub fn spawn(&mut self) -> Result<(), String> {
        self.kill();
        let (child, listening) = launch_aspen(self.data_dir.path(), &self.extra_args)?;
        self.child = child;
        self.listening = Some(listening);
        Ok(())
    }

    /// Waits up to `timeout` for the current process to print its listening line, and records
    /// the port. Returns at once if it was already seen. On failure (timeout or exit) the
    /// process is killed and the error says how it ended.
    pub fn wait_listening(&mut self, timeout: Duration) -> Result<(), String> {
        let Some(rx) = self.listening.take() else { return Ok(()) };
        match rx.recv_timeout(timeout) {
            Ok(port) => {
                self.port = port;
                Ok(())
            }
            Err(e) => {
                let _ = self.child.kill();
                let status = self.child.wait().ok();
                Err(format!(
                    "aspen did not print `{LISTENING_PREFIX}127.0.0.1:PORT` within {timeout:?} ({e}); \
                     exit status {status:?}; rerun with ASPEN_TEST_LOG=1 to see its output"
                ))
            }
        }
    }

    /// Whether the current process has printed its listening line yet, without waiting
    /// (records the port when it has).
    pub fn is_listening(&mut self) -> bool {
        if let Some(rx) = &self.listening {
            match rx.try_recv() {
                Ok(port) => {
                    self.port = port;
                    self.listening = None;
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// Kills the process immediately (SIGKILL), as a crash would, and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process id of the current server process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Replaces the extra arguments that later restarts pass (e.g. to restart without a fault
    /// that the first start injected).
    pub fn set_extra_args(&mut self, extra_args: Vec<OsString>) {
        self.extra_args = extra_args;
    }

    /// The TCP port the server listens on (valid once its listening line was seen).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data directory the server was started with.
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// Keeps the data directory after this value is dropped (for post-mortems of a failed
    /// test) and returns its path.
    pub fn keep_data_dir(&mut self) -> PathBuf {
        self.data_dir.disable_cleanup(true);
        self.data_dir.path().to_path_buf()
    }

    /// Whether the process is still running (it has not crashed).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for AspenServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A new, empty temporary directory for a server's data (deleted when dropped).
pub fn fresh_data_dir() -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix("aspen-test-")
        .tempdir()
        .map_err(|e| format!("cannot create a data dir: {e}"))
}

/// Spawns `aspen serve` on a fresh port; the receiver delivers the port once the server prints
/// its listening line (and disconnects if the process exits without printing it).
fn launch_aspen(
    data_dir: &Path,
    extra_args: &[OsString],
) -> Result<(Child, mpsc::Receiver<u16>), String> {
    let bin = aspen_bin();
    if !bin.is_file() {
        return Err(format!(
            "aspen binary not found at {} (run `cargo build -p server` first, or set ASPEN_BIN)",
            bin.display()
        ));
    }
    let log = std::env::var_os("ASPEN_TEST_LOG").is_some();
    let mut child = Command::new(&bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if log { Stdio::inherit() } else { Stdio::null() })
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    // The reader thread reports the port once, then keeps draining stdout so the server never
    // blocks on a full pipe. It ends when the process exits.
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let mut reported = false;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if log {
                print!("[aspen] {line}");
            }
            if !reported {
                if let Some(rest) = line.trim().strip_prefix(LISTENING_PREFIX) {
                    let port = rest.rsplit(':').next().and_then(|p| p.trim().parse::<u16>().ok());
                    if let Some(port) = port {
                        reported = true;
                        let _ = tx.send(port);
                    }
                }
            }
        }
        if !reported {
            // Drain the rest quietly: the sender drops and the receiver sees a disconnect.
            let _ = reader.read_to_end(&mut Vec::new());
        }
    });
    Ok((child, rx))
}

/// A throwaway PostgreSQL 15 cluster in a temporary directory.
///
/// Started with `fsync=off` and `synchronous_commit=off` (it is an oracle for results, not for
/// durability), trust authentication, superuser `postgres`, listening on 127.0.0.1 only.
/// Dropping it shuts the postmaster down (SIGQUIT, then SIGKILL) and deletes the directory.
pub struct PgServer {
    child: Child,
    port: u16,
    // Held for its Drop (deletes the cluster).
    _dir: tempfile::TempDir,
}

impl PgServer {
    /// Starts a fresh cluster, or returns `None` when PostgreSQL 15 binaries are not installed
    /// (the caller prints [`PG_UNAVAILABLE`] and skips). A cluster that is installed but fails to
    /// start is a broken test machine, so that panics with the reason.
    pub fn start() -> Option<PgServer> {
        let bindir = pg_bindir()?;
        Some(Self::start_in(&bindir).unwrap_or_else(|e| panic!("PostgreSQL 15: {e}")))
    }

    fn start_in(bindir: &Path) -> Result<PgServer, String> {
        let dir = tempfile::Builder::new()
            .prefix("aspen-pg-")
            .tempdir()
            .map_err(|e| format!("cannot create a tempdir: {e}"))?;
        let owner = postgres_user_if_root()?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", dir.path().display()))?;
        }
        let data = dir.path().join("data");
        let out = as_user(Command::new(bindir.join("initdb")), owner)
            .arg("-D")
            .arg(&data)
            // C.UTF-8: code point order like C, and the Unicode case maps of a UTF-8 system
            // locale (upper('é') = 'É'), which Aspen follows.
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let log = std::fs::File::create(dir.path().join("postgres.log"))
            .map_err(|e| format!("cannot create the log file: {e}"))?;
        if let Some((uid, gid)) = owner {
            let _ = std::os::unix::fs::chown(dir.path().join("postgres.log"), Some(uid), Some(gid));
        }
        let mut last_err = String::new();
        // The free port is found by binding port 0 and releasing it; another process may take
        // it in between, so try a few times.
        for _ in 0..5 {
            let port = free_port();
            let mut child = as_user(Command::new(bindir.join("postgres")), owner)
                .arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-k"])
                .arg(dir.path())
                .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
                .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
                .args(["-c", "TimeZone=UTC", "-c", "shared_buffers=32MB"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log.try_clone().map_err(|e| e.to_string())?)
                .spawn()
                .map_err(|e| format!("cannot run postgres: {e}"))?;
            match wait_pg_ready(bindir, port, &mut child) {
                Ok(()) => return Ok(PgServer { child, port, _dir: dir }),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log = std::fs::read_to_string(dir.path().join("postgres.log"))
                        .unwrap_or_default();
                    last_err = format!("{e}; log:\n{log}");
                }
            }
        }
        Err(last_err)
    }

    /// The TCP port the cluster listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // SIGQUIT is PostgreSQL's immediate shutdown: it also stops the backends.
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits in pid_t");
        // SAFETY: kill(2) with a pid we spawned and have not yet reaped; it has no memory effects.
        unsafe { libc::kill(pid, libc::SIGQUIT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The directory holding PostgreSQL 15's `initdb` and `postgres`, if installed.
pub fn pg_bindir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("PG_BINDIR") {
        candidates.push(PathBuf::from(dir));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
    }
    candidates.push(PathBuf::from("/usr/lib/postgresql/15/bin"));
    candidates.into_iter().find(|dir| {
        dir.join("initdb").is_file()
            && Command::new(dir.join("postgres"))
                .arg("--version")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains(") 15."))
                .unwrap_or(false)
    })
}

/// When we run as root, the uid and gid of the `postgres` user (PostgreSQL refuses to run as
/// root); otherwise `None` (run as ourselves).
fn postgres_user_if_root() -> Result<Option<(u32, u32)>, String> {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| e.to_string())?;
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() > 3 && fields[0] == "postgres" {
            let uid = fields[2].parse().map_err(|_| "bad uid in /etc/passwd".to_string())?;
            let gid = fields[3].parse().map_err(|_| "bad gid in /etc/passwd".to_string())?;
            return Ok(Some((uid, gid)));
        }
    }
    Err("running as root and there is no `postgres` user to run PostgreSQL as".into())
}

/// Makes `cmd` run as `owner` (the equivalent of `runuser -u postgres --`, without a wrapper
/// process between us and the postmaster, so signals reach it directly).
fn as_user(mut cmd: Command, owner: Option<(u32, u32)>) -> Command {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid).env("HOME", "/tmp").current_dir("/tmp");
    }
    cmd
}

/// Polls with `pg_isready` until the server accepts connections.
fn wait_pg_ready(bindir: &Path, port: u16, child: &mut Child) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let isready = bindir.join("pg_isready");
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("postgres exited early: {status}"));
        }
        let ready = if isready.is_file() {
            Command::new(&isready)
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        } else {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        };
        if ready {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("postgres did not become ready in time".into())
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// The libpq-style connection string for user `postgres`, database `postgres` on `port`.
pub fn conn_string(port: u16) -> String {
    format!("host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=10")
}

/// Connects with tokio-postgres (`NoTls`, user `postgres`, dbname `postgres`) and spawns the
/// connection task. The connection ends when the returned client is dropped.
pub async fn connect(port: u16) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(&conn_string(port), NoTls).await?;
    tokio::spawn(async move {
        // The error (if any) is also reported to the client's next call.
        let _ = connection.await;
    });
    Ok(client)
}

/// The SQLSTATE of a tokio-postgres error, if the server sent one.
pub fn sqlstate(err: &tokio_postgres::Error) -> Option<&str> {
    err.code().map(|c| c.code())
}

/// Which server a wire-level test talks to.
pub enum Backend {
    /// The `aspen` binary under test.
    Aspen(AspenServer),
    /// A throwaway PostgreSQL 15, for sanity-checking the test itself.
    Postgres(PgServer),
}

impl Backend {
    /// `TEST_AGAINST_PG=1` selects PostgreSQL 15 (returns `None`, after printing
    /// [`PG_UNAVAILABLE`], if it is not installed); anything else starts Aspen.
    pub fn from_env() -> Option<Backend> {
        if against_pg() {
            match PgServer::start() {
                Some(pg) => Some(Backend::Postgres(pg)),
                None => {
                    println!("{PG_UNAVAILABLE}");
                    None
                }
            }
        } else {
            Some(Backend::Aspen(AspenServer::start()))
        }
    }

    /// The TCP port of the server.
    pub fn port(&self) -> u16 {
        match self {
            Backend::Aspen(s) => s.port(),
            Backend::Postgres(s) => s.port(),
        }
    }

    /// Whether this is PostgreSQL (whose lock-based serializability sometimes blocks where
    /// Aspen's OCC aborts; tests allow for both where it matters).
    pub fn is_postgres(&self) -> bool {
        matches!(self, Backend::Postgres(_))
    }

    /// `"aspen"` or `"postgres"`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Aspen(_) => "aspen",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// A new tokio-postgres connection (see [`connect`]), panicking on failure.
    pub async fn connect(&self) -> Client {
        match tokio::time::timeout(STATEMENT_TIMEOUT, connect(self.port())).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => panic!("cannot connect to {}: {e:?}", self.name()),
            Err(_) => panic!("connecting to {} timed out", self.name()),
        }
    }

    /// A new connection whose sessions are SERIALIZABLE: a no-op on Aspen (always
    /// serializable), `SET default_transaction_isolation` on PostgreSQL.
    ///
    /// To check that the isolation tests can fail at all, `TEST_PG_ISOLATION='read committed'`
    /// (or `'repeatable read'`) weakens PostgreSQL's level: the anomaly tests that level
    /// allows must then fail.
    pub async fn connect_serializable(&self) -> Client {
        let client = self.connect().await;
        if self.is_postgres() {
            let level =
                std::env::var("TEST_PG_ISOLATION").unwrap_or_else(|_| "serializable".to_string());
            client
                .batch_execute(&format!("SET default_transaction_isolation = '{level}'"))
                .await
                .expect("set isolation on PostgreSQL");
        }
        client
    }
}

/// A client test's tool or package is missing (`what` says which, and how to get it): under
/// CI (`CI=true`) the test fails, so a missing install step cannot hide; elsewhere it says so
/// and the caller skips.
pub fn missing(what: &str) {
    assert!(std::env::var("CI").is_err(), "{what}");
    println!("{what}; skipping");
}

/// Runs a client program, `what` naming it and the backend in a failure, and returns the lines
/// it printed; a client that fails fails the test with both of its outputs.
pub fn client_lines(cmd: &mut std::process::Command, what: &str) -> Vec<String> {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed:\n{stdout}\n{stderr}");
    stdout.lines().map(str::to_string).collect()
}

/// Whether `TEST_AGAINST_PG=1` is set.
pub fn against_pg() -> bool {
    std::env::var("TEST_AGAINST_PG").map(|v| v == "1" || v == "true").unwrap_or(false)
}

/// Runs `fut` with [`STATEMENT_TIMEOUT`], panicking with `what` when it expires.
pub async fn timed<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(STATEMENT_TIMEOUT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {STATEMENT_TIMEOUT:?}: {what}"),
    }
}

/// What a client program (psql, pgbench) printed, and whether it exited successfully.
pub struct ClientOutput {
    /// Standard output, decoded lossily as UTF-8.
    pub stdout: String,
    /// Standard error, likewise.
    pub stderr: String,
    /// Whether the exit status was 0.
    pub success: bool,
}

/// Runs a client program with `stdin` as its input (none: an empty one) and waits up to
/// `timeout` for it to finish.
///
/// # Panics
/// If it cannot be started or does not finish in time.
pub async fn run_client(
    mut cmd: tokio::process::Command,
    stdin: Option<&str>,
    timeout: Duration,
) -> ClientOutput {
    use tokio::io::AsyncWriteExt;
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn the client");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).await.expect("write to the client");
    }
    drop(input);
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("the client did not finish within {timeout:?}"))
        .expect("client output");
    ClientOutput {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        success: out.status.success(),
    }
}
