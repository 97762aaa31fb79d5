//! The accept loop: one tokio task per connection, each with its own handlers and session;
//! graceful shutdown.
//!
//! Connections are served by *connection threads*, each running its own single-threaded tokio
//! runtime (its own epoll and timers), like PostgreSQL's backends each wait on their own
//! socket. The accept loop deals new connections to them in turn. A statement runs on its
//! connection's thread only when it is short (`Session::runs_briefly`: point reads and writes,
//! transaction control); anything that may take long (DDL, CHECKPOINT, unbounded scans,
//! multi-statement queries) goes to that runtime's blocking pool, so it does not hold up the
//! other connections of the thread. Measured against tokio's multi-threaded runtime, whose one
//! shared event loop and cross-thread wake-ups made the server latency-bound, this doubled
//! prepared point-select throughput on 2 cores (BENCHMARKS.md).
//!
//! A connection thread serving one or two connections may spin briefly before it sleeps, while
//! the machine has an idle core (`--busy-poll-us`, module `busy_poll`).
//!
//! Besides TCP, the server may listen on a Unix-domain socket `DIR/.s.PGSQL.<port>`
//! ([`Server::listen_unix`], `--unix-socket-dir`), PostgreSQL's name for it, so that
//! `psql -h DIR -p <port>` and libpq's other clients connect to it as they would to
//! PostgreSQL's. A socket file left by a server that is gone (nothing accepts on it) is
//! replaced; one that a live server answers on is an error, and so is a file there that is
//! not a socket (it is left alone). The file is removed when the server stops.
//!
//! Shutdown (the `shutdown` future of [`Server::run`] completes): the listener closes, so new
//! connections are refused; every connection task is then aborted at its next `.await`. A
//! statement never spans an `.await`, so each session is dropped between messages, and dropping
//! it closes the session (an open transaction is aborted, never half-applied).

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pgwire::api::RandomPidSecretKeyGenerator;
use sql::Database;
use tokio::net::{TcpListener, UnixListener};
use tokio::task::JoinSet;

use crate::handler::Shared;
use crate::stream::Stream;

/// A bound server, ready to [`run`](Server::run).
pub struct Server {
    listener: TcpListener,
    /// The Unix-domain socket, if any, and its path.
    unix: Option<(UnixListener, PathBuf)>,
    shared: Arc<Shared>,
    threads: Vec<ConnectionThread>,
}

/// One connection thread: a current-thread runtime driven until `stop` fires.
struct ConnectionThread {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Stack size of the connection threads (and their blocking pools), where statements run:
/// binding and evaluation recurse once per operator.
const STACK_SIZE: usize = 64 << 20;

thread_local! {
    /// On a connection thread: its index, the number of connection threads, and how many
    /// sessions started on it so far (see [`session_log_buffer`]).
    static PLACE: Cell<Option<(usize, usize, usize)>> = const { Cell::new(None) };
}

/// The log buffer number for a new session on this thread (`None` off the connection threads):
/// session `k` of connection thread `i` of `t` takes `i + k·t` (the buffer is that modulo the
/// log's buffers). With as many buffers as threads, each thread's sessions share one buffer
/// and no two threads share one; with more, a thread's sessions cover its share of them in
/// turn (every buffer gets sessions, so no device idles while another works).
pub(crate) fn session_log_buffer() -> Option<usize> {
    PLACE.with(|p| {
        let (i, threads, k) = p.get()?;
        p.set(Some((i, threads, k + 1)));
        Some(i + k * threads)
    })
}

impl ConnectionThread {
    fn start(i: usize, threads: usize, busy_poll: Duration) -> io::Result<ConnectionThread> {
        // Sockets and timers only: the process driver (`enable_all`) would look for orphaned
        // child processes at every park (0.7% of a connection thread's time under updates).
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .thread_stack_size(STACK_SIZE)
            .thread_name(format!("conn-{i}-blocking"))
            // Demand-driven group commit: the commits that wait on this thread are requested
            // when it has nothing else to run (see `crate::ack`).
            .on_thread_park(|| {
                crate::ack::request_deferred();
                let _ = crate::busy_poll::spin();
            })
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("conn-{i}"))
            .stack_size(STACK_SIZE)
            .spawn(move || {
            crate::ack::requests_at_park();
            crate::busy_poll::set_budget(busy_poll);
            PLACE.with(|p| p.set(Some((i, threads, 0))));
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })?;
        Ok(ConnectionThread { handle, stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for ConnectionThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How long a failed log lets sessions report the failure before connections close.
const FAILURE_GRACE: Duration = Duration::from_millis(500);

impl Server {
    /// Binds `addr` (`HOST:PORT`; port 0 picks a free port, see [`Server::local_addr`]) and
    /// starts `threads` connection threads, which do not spin before they sleep.
    pub async fn bind(addr: &str, db: Arc<Database>, threads: usize) -> io::Result<Server> {
        Server::bind_with(addr, db, threads, Duration::ZERO).await
    }

    /// [`Server::bind`], with connection threads that poll their sockets for up to `busy_poll`
    /// before they sleep while the machine has an idle core (`crate::busy_poll`).
    pub async fn bind_with(
        addr: &str,
        db: Arc<Database>,
        threads: usize,
        busy_poll: Duration,
    ) -> io::Result<Server> {
        if !busy_poll.is_zero() {
            crate::busy_poll::start_sampler();
        }
        let listener = TcpListener::bind(addr).await?;
        let acker = crate::ack::Acker::new(db.engine().log().clone())?;
        let shared = Arc::new(Shared {
            acker,
            scram: crate::auth::Scram::new(db.clone()),
            tls: None,
            db,
            cancels: Default::default(),
            keys: RandomPidSecretKeyGenerator::default(),
            auth: crate::auth::Methods::default(),
        });
        let n = threads.max(1);
        let threads =
            (0..n).map(|i| ConnectionThread::start(i, n, busy_poll)).collect::<io::Result<_>>()?;
        Ok(Server { listener, unix: None, shared, threads })
    }

    /// Sets how connections authenticate (`crate::auth`; default: trust on the Unix socket
    /// and loopback, SCRAM-SHA-256 from elsewhere). Call it before [`Server::run`].
    pub fn set_auth(&mut self, auth: crate::auth::Methods) {
        let shared = Arc::get_mut(&mut self.shared).expect("no connection has started yet");
        shared.auth = auth;
    }

    /// Answers SSLRequest with TLS (`crate::tls`) and offers SCRAM channel binding over it.
    /// Call it before [`Server::run`].
    pub fn set_tls(&mut self, tls: crate::tls::Tls) -> Result<(), String> {
        let shared = Arc::get_mut(&mut self.shared).expect("no connection has started yet");
        shared.scram.bind_to_certificate(&tls.cert_pem)?;
        shared.tls = Some(tls);
        Ok(())
    }

    /// Also listens on the Unix-domain socket `dir/.s.PGSQL.<port>` (the TCP port bound),
    /// as PostgreSQL does in each of its `unix_socket_directories`. Returns the socket's path.
    pub fn listen_unix(&mut self, dir: &Path) -> io::Result<PathBuf> {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let path = dir.join(format!(".s.PGSQL.{}", self.local_addr()?.port()));
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if !meta.file_type().is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            match std::os::unix::net::UnixStream::connect(&path) {
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("another server is listening on {}", path.display()),
                    ))
                }
                // Left by a server that is gone: nothing accepts on it.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    std::fs::remove_file(&path)?;
                }
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{} exists and is not a usable socket: {e}", path.display()),
                    ))
                }
            }
        }
        let listener = UnixListener::bind(&path)?;
        // Anyone who can reach the directory may connect, as with PostgreSQL's default
        // `unix_socket_permissions` (0777); authentication is the server's business.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
        self.unix = Some((listener, path.clone()));
        Ok(path)
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` completes, then closes every session and returns.
    /// If the log fails (a device write or sync failed, a disk is full) it stops the same way
    /// and returns an error: the process must exit so that recovery restarts from what is
    /// durable (DESIGN.md §3).
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        let shared = self.shared.clone();
        let log_failed = shared.acker.failed();
        tokio::pin!(log_failed);
        let mut failure = None;
        let mut next = 0;
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                () = &mut log_failed => {
                    let e = self.shared.db.engine().log().failure();
                    let message = e.map_or_else(|| "unknown".to_string(), |e| e.to_string());
                    tracing::error!(error = %message, "the write-ahead log failed; shutting down");
                    failure = Some(io::Error::other(format!("write-ahead log failed: {message}")));
                    // Sessions waiting for an acknowledgement are failing with FATAL 58030
                    // right now: let them send it before the connections are closed.
                    tokio::time::sleep(FAILURE_GRACE).await;
                    break;
                }
                accepted = self.listener.accept() => match accepted {
                    Ok((socket, peer)) => {
                        let socket = socket.into_std().map(Accepted::Tcp);
                        self.hand_over(&mut connections, &mut next, socket, peer.to_string());
                    }
                    Err(e) => accept_failed(e).await,
                },
                accepted = accept_unix(&self.unix) => match accepted {
                    Ok(socket) => {
                        let socket = socket.into_std().map(Accepted::Unix);
                        self.hand_over(&mut connections, &mut next, socket, "[local]".into());
                    }
                    Err(e) => accept_failed(e).await,
                },
                Some(joined) = connections.join_next(), if !connections.is_empty() => {
                    if let Err(e) = joined {
                        if e.is_panic() {
                            tracing::error!("a connection task panicked; only that connection was closed");
                        }
                    }
                }
            }
        }
        drop(self.listener);
        if let Some((unix, path)) = self.unix.take() {
            drop(unix);
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove the socket file");
            }
        }
        let open = connections.len();
        if open > 0 {
            tracing::info!(open, "closing client connections");
        }
        // Statements still running on the blocking pools stop at their next check.
        self.shared.cancels.cancel_all();
        connections.shutdown().await;
        drop(self.threads);
        failure.map_or(Ok(()), Err)
    }
}

/// An accepted socket on its way to a connection thread.
enum Accepted {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Server {
    /// Moves an accepted socket to the next connection thread's event loop and serves it there.
    fn hand_over(
        &self,
        connections: &mut JoinSet<()>,
        next: &mut usize,
        socket: io::Result<Accepted>,
        peer: String,
    ) {
        let socket = match socket {
            Ok(socket) => socket,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "cannot hand over a connection");
                return;
            }
        };
        let shared = self.shared.clone();
        let thread = &self.threads[*next % self.threads.len()];
        *next += 1;
        connections.spawn_on(
            async move {
                tracing::debug!(%peer, "connection opened");
                let stream = match socket {
                    Accepted::Tcp(s) => tokio::net::TcpStream::from_std(s).map(Stream::Tcp),
                    Accepted::Unix(s) => tokio::net::UnixStream::from_std(s).map(Stream::Unix),
                };
                let served = match stream {
                    Ok(stream) => crate::connection::serve(stream, shared).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = served {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                tracing::debug!(%peer, "connection closed");
            },
            &thread.handle,
        );
    }
}

/// The next connection on the Unix-domain socket; never completes without one.
async fn accept_unix(unix: &Option<(UnixListener, PathBuf)>) -> io::Result<tokio::net::UnixStream> {
    match unix {
        Some((listener, _)) => listener.accept().await.map(|(socket, _)| socket),
        None => std::future::pending().await,
    }
}

/// Out of file descriptors and the like: back off instead of spinning.
async fn accept_failed(e: io::Error) {
    tracing::warn!(error = %e, "accept failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_of_a_connection_thread_take_its_share_of_the_log_buffers() {
        assert_eq!(session_log_buffer(), None, "not a connection thread");
        // Thread 1 of 2: its sessions take 1, 3, 5, … (buffer 1 of 2; 1 and 3 of 4).
        PLACE.with(|p| p.set(Some((1, 2, 0))));
        let got: Vec<_> = (0..4).map(|_| session_log_buffer().unwrap()).collect();
        assert_eq!(got, [1, 3, 5, 7]);
    }
}
