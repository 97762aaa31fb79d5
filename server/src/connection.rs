//! One client connection: the message loop.
//!
//! This mirrors pgwire 0.42's `process_socket` for plain TCP (its `negotiate_tls`,
//! `peek_for_sslrequest` and `process_socket_messages!`), with these differences:
//!
//! - The socket is a [`CheckedStream`], which checks message framing and the UTF-8 of Query and
//!   Parse text before pgwire decodes them (see [`crate::framing`]).
//! - A framing violation or an undecodable message ends the connection with a FATAL
//!   ErrorResponse (08P01 for framing, pgwire's SQLSTATE otherwise), as PostgreSQL does; pgwire
//!   closes silently.
//! - A Query or Parse whose text is not valid UTF-8 is answered with ERROR 22021 instead of
//!   running its lossily decoded text; the session continues.
//! - Before an Execute runs, the loop looks at the bytes already received: if a Sync comes
//!   next, the statement is the whole implicit transaction and may commit at once (and be
//!   retried on a serialization failure); otherwise it joins an implicit transaction that
//!   the Sync commits (see `Session::set_pipelined`).
//! - A panic in pgwire's decoder (some malformed messages make it read past its buffer) is
//!   caught and treated as a malformed message: FATAL 08P01, only that connection closes.
//!
//! There is no TLS: SSLRequest and GSSENCRequest are answered `N`.

use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::{ClientInfo, DefaultClient, ErrorHandler, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::response::{GssEncResponse, SslResponse};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, SslNegotiationMetaMessage};
use pgwire::tokio::server::{process_error, process_message, PgWireMessageServerCodec};
use tokio_util::codec::Framed;

use crate::error::{error_info, protocol_error, ProtocolError, WireError};
use crate::framing::{CheckedStream, Violation};
use crate::handler::{Handler, Shared, Statement};
use crate::stream::Stream;

/// A client must complete startup within this time (pgwire's limit).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The framed connection the handlers see.
type Socket = Framed<CheckedStream<Stream>, PgWireMessageServerCodec<Statement>>;

/// Serves one accepted connection until it ends.
pub(crate) async fn serve(stream: Stream, shared: Arc<Shared>) -> io::Result<()> {
    let peer = match &stream {
        Stream::Tcp(tcp) => {
            tcp.set_nodelay(true)?;
            Some(tcp.peer_addr()?)
        }
        // A Unix-domain socket has no peer address (PostgreSQL shows `[local]`).
        Stream::Unix(_) => None,
        Stream::Tls(_) => unreachable!("TLS starts inside the connection, after SSLRequest"),
    };
    let addr = peer.unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
    let _spin = crate::busy_poll::register(std::os::fd::AsRawFd::as_raw_fd(&stream));
    let cancel = Arc::new(crate::cancel::Handler(shared.cancels.clone()));
    let tls = shared.tls.clone();
    let handler = Arc::new(Handler::new(shared, peer));

    let mut socket: Socket = Framed::new(
        CheckedStream::new(stream),
        PgWireMessageServerCodec::new(DefaultClient::new(addr, false)),
    );
    socket.set_state(PgWireConnectionState::AwaitingSslRequest);

    let startup_deadline = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_deadline);
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingSslRequest
                | PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        // pgwire's decoders index past the end of some malformed messages (a Bind whose counts
        // exceed its length, an Execute without its row limit): a panic while decoding is
        // a malformed message, not a crashed task. Catching costs nothing when nothing panics.
        let decode = AssertUnwindSafe(socket.next()).catch_unwind();
        let next = if starting {
            tokio::select! {
                () = &mut startup_deadline => return Ok(()),
                msg = decode => msg,
            }
        } else {
            decode.await
        };
        let msg = match next {
            Ok(Some(Ok(msg))) => msg,
            Ok(Some(Err(error))) => return undecodable(&mut socket, error).await,
            Ok(None) => return Ok(()),
            Err(_) => {
                tracing::debug!(peer = %addr, "a message could not be decoded (decoder panic)");
                return fatal(&mut socket, "08P01", Violation::FORMAT.0).await;
            }
        };

        // pgwire peeks at the first packet without consuming it when it is not an SSL or
        // GSSAPI request: it is decoded again as StartupMessage or CancelRequest.
        if let PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::None) = msg {
            socket.set_state(PgWireConnectionState::AwaitingStartup);
            continue;
        }
        // Every other message consumed exactly one frame, or the stream is out of step.
        let consumed = socket.get_ref().delivered() - socket.read_buffer().len() as u64;
        let invalid_utf8 = match socket.get_mut().message_decoded(consumed) {
            Ok(invalid_utf8) => invalid_utf8,
            Err(violation) => return fatal(&mut socket, "08P01", violation.0).await,
        };

        match &msg {
            PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::PostgresSsl(_)) => {
                let tls = match (&tls, socket.get_ref().get_ref()) {
                    (Some(tls), Stream::Tcp(_)) => tls.acceptor.clone(),
                    _ => {
                        socket.send(PgWireBackendMessage::SslResponse(SslResponse::Refuse)).await?;
                        continue;
                    }
                };
                if !socket.read_buffer().is_empty() {
                    let message = "received unencrypted data after SSL request";
                    return fatal(&mut socket, "08P01", message).await;
                }
                socket.send(PgWireBackendMessage::SslResponse(SslResponse::Accept)).await?;
                let Stream::Tcp(tcp) = socket.into_inner().into_inner() else {
                    unreachable!("checked above")
                };
                let encrypted = tokio::select! {
                    () = &mut startup_deadline => return Ok(()),
                    handshake = tls.accept(tcp) => match handshake {
                        Ok(stream) => stream,
                        Err(e) => {
                            tracing::debug!(peer = %addr, error = %e, "TLS handshake failed");
                            return Ok(());
                        }
                    },
                };
                // The startup packet comes next, through TLS.
                socket = Framed::new(
                    CheckedStream::new(Stream::Tls(Box::new(encrypted))),
                    PgWireMessageServerCodec::new(DefaultClient::new(addr, true)),
                );
                socket.set_state(PgWireConnectionState::AwaitingStartup);
                continue;
            }
            PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::PostgresGss(_)) => {
                socket.send(PgWireBackendMessage::GssEncResponse(GssEncResponse::Refuse)).await?;
                continue;
            }
            // The client is leaving: close (asyncpg waits for the server to hang up).
            PgWireFrontendMessage::Terminate(_) => return Ok(()),
            _ => {}
        }

        if let Some(message) = invalid_utf8 {
            if reject_invalid_utf8(&mut socket, &handler, &msg, message.into()).await? {
                continue;
            }
        }

        if let PgWireFrontendMessage::Execute(_) = &msg {
            // A Sync is 'S' and a length of 4; it is often in the same packet as the Execute.
            handler.set_sync_follows(socket.read_buffer().starts_with(b"S\0\0\0\x04"));
        }
        let is_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(is_extended_query) => is_extended_query,
            _ => msg.is_extended_query(),
        };
        // `process_message` closes a CancelRequest's dedicated connection.
        let is_cancel_request = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        let result = process_message(
            msg,
            &mut socket,
            handler.clone(),
            handler.clone(),
            handler.clone(),
            handler.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(mut error) = result {
            LogErrors.on_error(&socket, &mut error);
            // A FATAL error ends the session, as in PostgreSQL.
            let is_fatal = error.is_fatal();
            process_error(&mut socket, error, is_extended_query).await?;
            if is_fatal {
                return Ok(());
            }
        }
        if is_cancel_request {
            return Ok(());
        }
    }
}

/// Answers a Query or Parse whose text is not valid UTF-8 with ERROR 22021, as PostgreSQL does,
/// instead of running it. Returns false when the message is left to pgwire: where it would be
/// discarded (while skipping to Sync) or rejected anyway (not ready for a Query).
///
/// Inside a transaction block the error fails the block, as any statement error does.
async fn reject_invalid_utf8(
    socket: &mut Socket,
    handler: &Handler,
    msg: &PgWireFrontendMessage,
    message: String,
) -> io::Result<bool> {
    let error = ProtocolError::InvalidEncoding(message);
    // Like any statement error, this fails an open transaction block (PostgreSQL: `E`).
    handler.fail_transaction();
    match (msg, socket.state()) {
        (PgWireFrontendMessage::Query(_), PgWireConnectionState::ReadyForQuery) => {
            let info = error_info(&WireError::Protocol(error));
            socket.feed(PgWireBackendMessage::ErrorResponse(info.into())).await?;
            handler.ready_for_query(socket).await.map_err(io::Error::other)?;
            Ok(true)
        }
        (PgWireFrontendMessage::Parse(_), state)
            if !matches!(
                state,
                PgWireConnectionState::AwaitingSync
                    | PgWireConnectionState::CopyInProgress(_)
                    | PgWireConnectionState::AwaitingSslRequest
                    | PgWireConnectionState::AwaitingStartup
                    | PgWireConnectionState::AuthenticationInProgress
            ) =>
        {
            process_error(socket, protocol_error(error), true).await?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// The decoder failed: a framing violation found by the [`CheckedStream`], a message pgwire
/// cannot decode, or an I/O error. Sends FATAL (except for I/O errors) and ends the connection.
async fn undecodable(socket: &mut Socket, error: PgWireError) -> io::Result<()> {
    if let Some(violation) = socket.get_ref().violation() {
        return fatal(socket, "08P01", violation.0).await;
    }
    match error {
        PgWireError::IoError(e) => Err(e),
        error => {
            tracing::debug!(peer = %socket.socket_addr(), %error, "undecodable message");
            let code = error.code().to_owned();
            fatal(socket, &code, &error.to_string()).await
        }
    }
}

/// Sends a FATAL ErrorResponse and closes the connection.
async fn fatal(socket: &mut Socket, code: &str, message: &str) -> io::Result<()> {
    let mut info = ErrorInfo::new("FATAL".to_owned(), code.to_owned(), message.to_owned());
    info.severity_nonlocalized = Some("FATAL".to_owned());
    socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await?;
    socket.close().await
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
