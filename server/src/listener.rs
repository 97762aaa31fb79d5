//! The accept loop: one tokio task per connection, each with its own handlers and session;
//! graceful shutdown.
//!
//! Shutdown (the `shutdown` future of [`Server::run`] completes): the listener closes, so new
//! connections are refused; every connection task is then aborted at its next `.await`. A
//! statement never spans an `.await`, so each session is dropped between messages, and dropping
//! it closes the session (an open transaction is aborted, never half-applied).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pgwire::api::{ConnectionManager, RandomPidSecretKeyGenerator};
use sql::Database;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::handler::Shared;

/// A bound server, ready to [`run`](Server::run).
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

/// How long a failed log lets sessions report the failure before connections close.
const FAILURE_GRACE: Duration = Duration::from_millis(500);

impl Server {
    /// Binds `addr` (`HOST:PORT`; port 0 picks a free port, see [`Server::local_addr`]).
    pub async fn bind(addr: &str, db: Arc<Database>) -> io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        let acker = crate::ack::Acker::new(db.engine().log().clone())?;
        let shared = Arc::new(Shared {
            acker,
            db,
            cancel: Arc::new(ConnectionManager::new()),
            keys: RandomPidSecretKeyGenerator::default(),
        });
        Ok(Server { listener, shared })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` completes, then closes every session and returns.
    /// If the log fails (a device write or sync failed, a disk is full) it stops the same way
    /// and returns an error: the process must exit so that recovery restarts from what is
    /// durable (DESIGN.md §3).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        let shared = self.shared.clone();
        let log_failed = shared.acker.failed();
        tokio::pin!(log_failed);
        let mut failure = None;
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
                        let shared = self.shared.clone();
                        connections.spawn(async move {
                            tracing::debug!(%peer, "connection opened");
                            if let Err(e) = crate::connection::serve(socket, shared).await {
                                tracing::debug!(%peer, error = %e, "connection ended with an error");
                            }
                            tracing::debug!(%peer, "connection closed");
                        });
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
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
        let open = connections.len();
        if open > 0 {
            tracing::info!(open, "closing client connections");
        }
        connections.shutdown().await;
        failure.map_or(Ok(()), Err)
    }
}
