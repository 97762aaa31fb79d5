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

use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{
    ClientInfo, ConnectionManager, ErrorHandler, PgWireServerHandlers, RandomPidSecretKeyGenerator,
};
use pgwire::error::PgWireError;
use pgwire::tokio::process_socket;
use sql::Database;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::handler::{Handler, Shared};

/// A bound server, ready to [`run`](Server::run).
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Binds `addr` (`HOST:PORT`; port 0 picks a free port, see [`Server::local_addr`]).
    pub async fn bind(addr: &str, db: Arc<Database>) -> io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        let shared = Arc::new(Shared {
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
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((socket, peer)) => {
                        let handlers = ConnHandlers::new(self.shared.clone());
                        connections.spawn(async move {
                            tracing::debug!(%peer, "connection opened");
                            if let Err(e) = process_socket(socket, None, handlers).await {
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
        Ok(())
    }
}

/// The handlers of one connection. pgwire asks for each handler once per connection.
struct ConnHandlers {
    handler: Arc<Handler>,
    cancel: Arc<DefaultCancelHandler>,
}

impl ConnHandlers {
    fn new(shared: Arc<Shared>) -> Self {
        let cancel = Arc::new(DefaultCancelHandler::new(shared.cancel.clone()));
        ConnHandlers { handler: Arc::new(Handler::new(shared)), cancel }
    }
}

impl PgWireServerHandlers for ConnHandlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.handler.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.handler.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.handler.clone()
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.cancel.clone()
    }

    fn error_handler(&self) -> Arc<impl ErrorHandler> {
        Arc::new(LogErrors)
    }
}

/// Logs errors that are not ordinary statement errors (protocol violations, I/O).
struct LogErrors;

impl ErrorHandler for LogErrors {
    fn on_error<C>(&self, client: &C, error: &mut PgWireError)
    where
        C: ClientInfo,
    {
        if !matches!(error, PgWireError::UserError(_)) {
            tracing::debug!(peer = %client.socket_addr(), %error, "protocol error");
        }
    }
}
