//! The pgwire handlers of one connection: startup (with authentication, `crate::auth`), simple
//! query, extended query.
//!
//! Each connection owns a [`Connection`] holding its [`sql::Session`]. Every handler runs the
//! session synchronously on the connection's tokio task and never holds the session lock across
//! an `.await`. The handlers override pgwire's defaults wherever PostgreSQL's behaviour matters
//! to drivers:
//!
//! - ReadyForQuery always carries `session.status()`, so a failed COMMIT reports `I` (pgwire's
//!   own tracking would say `E`).
//! - A multi-statement Query sends every result before the first error, then the error, then
//!   ReadyForQuery (returning `Err` from `do_query` would drop the earlier results).
//! - Notices go out before their statement's result; ParameterStatus for each reported
//!   parameter that changed during the cycle goes out right before ReadyForQuery, as in
//!   PostgreSQL 14 and later (a SET LOCAL's end and a rollback's undoing included).
//! - Execute never lets `max_rows` truncate a command's row count; for row-returning portals it
//!   suspends with PortalSuspended exactly as PostgreSQL does.
//! - Describe sends NoData for statements without a result, even when they have parameters.
//! - Bind decodes and checks parameters (count, format codes) and reports PostgreSQL's errors.
//!
//! Responses are `feed`ed and flushed at Sync, Flush or the end of a simple Query, so a
//! pipelined batch goes out in few writes.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt, StreamExt};
use parking_lot::Mutex;
use pgwire::api::auth::mechanism::{AuthMechanism, AuthMechanismFactory, AuthState};
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, StartupHandler,
};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse, Response};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator, Type, DEFAULT_NAME,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended, Sync as PgSync, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::{
    Authentication, BackendKeyData, ParameterStatus, PasswordMessageFamily,
};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use sql::{CopyStart, Database, Output, Prepared, Session, TxnStatus, Value};

use crate::encode::{self, RowEncoder};
use crate::error::{protocol_error, sql_error, ProtocolError};

/// `server_version` reported at startup: parses as 15 for drivers' feature checks.
pub const SERVER_VERSION: &str = concat!("15.0 (Aspen ", env!("CARGO_PKG_VERSION"), ")");

/// State shared by every connection of one server.
pub struct Shared {
    /// Awaits the durability of commits before their results go out.
    pub acker: crate::ack::Acker,
    /// The database.
    pub db: Arc<Database>,
    /// Cancel registry: BackendKeyData → the session's cancel flag.
    pub cancels: Arc<crate::cancel::Cancels>,
    /// Process ids and secret keys for BackendKeyData.
    pub keys: RandomPidSecretKeyGenerator,
    /// How connections authenticate, by where they come from (`crate::auth`).
    pub auth: crate::auth::Methods,
    /// SCRAM-SHA-256 against the catalog's roles.
    pub(crate) scram: crate::auth::Scram,
    /// TLS, when the server has a certificate.
    pub tls: Option<crate::tls::Tls>,
}

/// One connection's state: the SQL session, created at startup from the startup parameters.
/// Dropping it (when the connection ends) closes the session, aborting any open transaction.
#[derive(Default)]
pub struct Connection {
    session: Mutex<Option<Session>>,
    /// A `COPY … FROM STDIN` between its CopyInResponse and the client's CopyDone or CopyFail.
    copy: Mutex<Option<CopyState>>,
    /// Set by the message loop before an Execute: whether the next message (already received)
    /// is Sync, so the statement is its implicit transaction's only one (see
    /// [`Session::set_pipelined`]).
    sync_follows: std::sync::atomic::AtomicBool,
    /// A password exchange under way: the mechanism and the startup parameters.
    authenticating: Mutex<Option<Authenticating>>,
}

/// A startup waiting for the client's next password message.
struct Authenticating {
    mechanism: Box<dyn AuthMechanism>,
    parameters: std::collections::BTreeMap<String, String>,
}

/// A COPY FROM STDIN in progress, or one that failed and waits for the client to end it.
enum CopyState {
    Running {
        copy: sql::CopyIn,
        sql: String,
    },
    /// The error to report when the client sends CopyDone (PostgreSQL keeps reading the
    /// data until then).
    Failed(PgWireError),
}

impl Connection {
    /// Runs `f` on the session. Before startup completes there is none (pgwire routes no
    /// queries then), which is reported as a protocol violation rather than a panic.
    ///
    /// A panic in `f` is a bug in one statement: it fails the session's transaction (a block
    /// enters the failed state) and answers `XX000`, and the connection — and the others its
    /// thread serves — go on.
    fn with_session<R>(&self, f: impl FnOnce(&mut Session) -> R) -> PgWireResult<R> {
        let mut guard = self.session.lock();
        match guard.as_mut() {
            Some(session) => {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(session))) {
                    Ok(r) => Ok(r),
                    Err(panic) => {
                        let what = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        tracing::error!(what, "a statement panicked");
                        session.fail_transaction();
                        let error = sql::Error::internal(format!("the statement panicked: {what}"));
                        Err(sql_error(error, ""))
                    }
                }
            }
            None => Err(protocol_error(ProtocolError::Violation(
                "query before startup completed".into(),
            ))),
        }
    }

    /// Runs `f` on the session on tokio's blocking pool, so a long statement does not hold up
    /// the other connections served by the same thread (see `listener`).
    async fn with_session_blocking<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Session) -> R + Send + 'static,
    ) -> PgWireResult<R> {
        let conn = self.clone();
        tokio::task::spawn_blocking(move || conn.with_session(f)).await.map_err(|e| {
            protocol_error(ProtocolError::Violation(format!("statement task failed: {e}")))
        })?
    }

    /// Fails the session's transaction block (after an error the SQL layer never saw).
    pub(crate) fn fail_transaction(&self) {
        if let Some(session) = self.session.lock().as_mut() {
            session.fail_transaction();
        }
    }

    /// The transaction status for ReadyForQuery.
    fn status(&self) -> TransactionStatus {
        let status = self.session.lock().as_ref().map_or(TxnStatus::Idle, Session::status);
        match status {
            TxnStatus::Idle => TransactionStatus::Idle,
            TxnStatus::InBlock => TransactionStatus::Transaction,
            TxnStatus::Failed => TransactionStatus::Error,
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(session) = self.session.get_mut().as_mut() {
            session.close();
        }
    }
}

/// What pgwire's statement and portal store holds. For a statement, `params` is `None`; a
/// portal (created by Bind) holds its decoded parameters until its one execution takes them.
#[derive(Debug, Clone)]
pub struct Statement {
    /// The prepared statement.
    pub prepared: Arc<Prepared>,
    params: Option<Arc<Mutex<Option<Vec<Value>>>>>,
}

impl Statement {
    fn new(prepared: Arc<Prepared>) -> Self {
        Statement { prepared, params: None }
    }

    fn bound(prepared: Arc<Prepared>, params: Vec<Value>) -> Self {
        Statement { prepared, params: Some(Arc::new(Mutex::new(Some(params)))) }
    }

    fn take_params(&self) -> Vec<Value> {
        self.params.as_ref().and_then(|p| p.lock().take()).unwrap_or_default()
    }
}

/// The handler of one connection: startup, simple and extended query.
pub struct Handler {
    shared: Arc<Shared>,
    conn: Arc<Connection>,
    parser: Arc<Parser>,
    /// Where the client connects from (`None`: the Unix-domain socket).
    peer: Option<std::net::SocketAddr>,
    /// How this connection authenticates.
    auth: crate::auth::Method,
}

impl Handler {
    /// A handler for a new connection from `peer` (`None`: a Unix-domain socket).
    pub fn new(shared: Arc<Shared>, peer: Option<std::net::SocketAddr>) -> Self {
        let conn = Arc::new(Connection::default());
        let auth = shared.auth.for_peer(peer);
        Handler { shared, parser: Arc::new(Parser { conn: conn.clone() }), conn, peer, auth }
    }

    /// Fails the session's transaction block (after an error the SQL layer never saw).
    pub(crate) fn fail_transaction(&self) {
        self.conn.fail_transaction();
    }

    /// Tells the next Execute whether a Sync directly follows it (the message loop peeks at
    /// the bytes already received). When unsure, say false: the statement then runs in an
    /// implicit transaction that Sync commits, which is always correct; true lets it commit
    /// at once and be retried after a serialization failure.
    pub(crate) fn set_sync_follows(&self, follows: bool) {
        self.conn.sync_follows.store(follows, std::sync::atomic::Ordering::Relaxed);
    }

    /// The acknowledge rule: waits until everything the session's latest results depend on is
    /// durable. If the log failed, nothing may be acknowledged: the client gets FATAL 58030
    /// and the connection closes (the server shuts down, see `listener`).
    async fn acknowledge(&self) -> PgWireResult<()> {
        let tickets = self.conn.with_session(Session::take_acks)?;
        if tickets.is_empty() {
            return Ok(());
        }
        match self.shared.acker.wait(tickets).await {
            Ok(()) => Ok(()),
            Err(e) => {
                let mut info = ErrorInfo::new(
                    "FATAL".to_owned(),
                    "58030".to_owned(),
                    format!(
                        "could not make the transaction durable: {e}; the server is shutting down"
                    ),
                );
                info.severity_nonlocalized = Some("FATAL".to_owned());
                Err(PgWireError::UserError(Box::new(info)))
            }
        }
    }

    /// Sends `ReadyForQuery` with the session's status and flushes.
    pub(crate) async fn ready_for_query<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Parameters whose value changed during the cycle (SET, the end of a SET LOCAL, a
        // rollback), as PostgreSQL reports them: once, right before ReadyForQuery.
        let changed = self.conn.session.lock().as_mut().map(Session::changed_reports);
        for (name, value) in changed.unwrap_or_default() {
            client
                .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(name, value)))
                .await?;
        }
        let status = self.conn.status();
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        client.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status))).await?;
        Ok(())
    }
}

/// Is this query text empty for the protocol (only whitespace and semicolons)? PostgreSQL
/// answers such a Query, or the Execute of such a Parse, with EmptyQueryResponse.
fn is_empty_query(sql: &str) -> bool {
    sql.chars().all(|c| c == ';' || c.is_whitespace())
}

/// Statement-level messages sent before a result.
async fn send_notices<C>(client: &mut C, out: &Output) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for notice in &out.notices {
        let mut info = ErrorInfo::new(
            notice.severity.to_owned(),
            notice.code.to_owned(),
            notice.message.clone(),
        );
        info.severity_nonlocalized = Some(notice.severity.to_owned());
        client.feed(PgWireBackendMessage::NoticeResponse(info.into())).await?;
    }
    Ok(())
}

async fn send_command_complete<C>(client: &mut C, tag: String) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    client.feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag))).await?;
    Ok(())
}

/// The `TimeZone` startup parameter, by any spelling (libpq sends `PGTZ` as `timezone`).
fn time_zone_parameter(params: &std::collections::BTreeMap<String, String>) -> Option<&str> {
    params.iter().find(|(k, _)| k.eq_ignore_ascii_case("TimeZone")).map(|(_, v)| v.as_str())
}

/// The startup parameters reported to every client, in PostgreSQL's order.
pub fn startup_parameters(
    client: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let user = client.get("user").cloned().unwrap_or_default();
    // The session's zone as `SHOW` spells it (startup refuses one it cannot read).
    let time_zone = time_zone_parameter(client)
        .and_then(sql::session::time_zone_setting)
        .unwrap_or_else(|| "UTC".to_owned());
    let application_name = client.get("application_name").cloned().unwrap_or_default();
    [
        ("application_name", application_name),
        ("client_encoding", "UTF8".to_owned()),
        ("DateStyle", "ISO, MDY".to_owned()),
        ("default_transaction_read_only", "off".to_owned()),
        ("in_hot_standby", "off".to_owned()),
        ("integer_datetimes", "on".to_owned()),
        ("IntervalStyle", "postgres".to_owned()),
        ("is_superuser", "on".to_owned()),
        ("server_encoding", "UTF8".to_owned()),
        ("server_version", SERVER_VERSION.to_owned()),
        ("session_authorization", user),
        ("standard_conforming_strings", "on".to_owned()),
        ("TimeZone", time_zone),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

#[async_trait]
impl StartupHandler for Handler {
    /// Startup: the method `crate::auth` chooses for this connection (trust, SCRAM-SHA-256 or
    /// reject), then the session from the startup parameters, registered for CancelRequest.
    /// With SCRAM this is called again for each of the client's password messages.
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let startup = match message {
            PgWireFrontendMessage::Startup(startup) => startup,
            PgWireFrontendMessage::PasswordMessageFamily(password) => {
                return self.on_password(client, password).await;
            }
            _ => return Err(PgWireError::InvalidStartupMessage),
        };
        protocol_negotiation(client, &startup).await?;
        save_startup_parameters_to_metadata(client, &startup);
        let Some(user) = startup.parameters.get("user").filter(|u| !u.is_empty()) else {
            return Err(PgWireError::UserNameRequired);
        };
        // As PostgreSQL: a time zone the server cannot read refuses the connection (the
        // session would otherwise read and print timestamps in another zone than the client's).
        if let Some(tz) = time_zone_parameter(&startup.parameters) {
            if sql::session::time_zone_setting(tz).is_none() {
                let message = format!("invalid value for parameter \"TimeZone\": \"{tz}\"");
                return Err(crate::auth::fatal("22023", message));
            }
        }
        match self.auth {
            crate::auth::Method::Trust => self.start_session(client, &startup.parameters).await,
            crate::auth::Method::Reject => {
                let host = match self.peer {
                    Some(addr) => addr.ip().to_canonical().to_string(),
                    None => "[local]".to_owned(),
                };
                let message =
                    format!("no authentication method admits host \"{host}\", user \"{user}\"");
                Err(crate::auth::fatal("28000", message))
            }
            crate::auth::Method::ScramSha256 => {
                let mut mechanism = self.shared.scram.for_connection(client.is_secure()).create();
                let request = match mechanism.begin(&*client).await? {
                    AuthState::InProgress(request) => request,
                    _ => return Err(PgWireError::InvalidSASLState),
                };
                let parameters = startup.parameters.clone();
                *self.conn.authenticating.lock() = Some(Authenticating { mechanism, parameters });
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                client.send(PgWireBackendMessage::Authentication(request)).await?;
                Ok(())
            }
        }
    }
}

impl Handler {
    /// One password message of a SCRAM exchange: the next challenge, or on success the
    /// server's final message and the session.
    async fn on_password<C>(
        &self,
        client: &mut C,
        password: PasswordMessageFamily,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let taken = self.conn.authenticating.lock().take();
        let Some(mut auth) = taken else {
            return Err(crate::auth::fatal("08P01", "unexpected password message".to_owned()));
        };
        let user = auth.parameters.get("user").cloned().unwrap_or_default();
        match auth.mechanism.next(&*client, password).await {
            Ok(AuthState::InProgress(next)) => {
                *self.conn.authenticating.lock() = Some(auth);
                client.send(PgWireBackendMessage::Authentication(next)).await?;
                Ok(())
            }
            Ok(AuthState::Ok { final_message, .. }) => {
                if let Some(message) = final_message {
                    client.feed(PgWireBackendMessage::Authentication(message)).await?;
                }
                self.start_session(client, &auth.parameters).await
            }
            Ok(AuthState::Failed(error)) | Err(error) => {
                tracing::debug!(%user, %error, "password authentication failed");
                Err(crate::auth::failed(&user, error))
            }
        }
    }

    /// The client is authenticated as `parameters["user"]`: refuses a role without LOGIN,
    /// else creates the session, registers it for CancelRequest and sends AuthenticationOk,
    /// the parameters, BackendKeyData and ReadyForQuery.
    async fn start_session<C>(
        &self,
        client: &mut C,
        parameters: &std::collections::BTreeMap<String, String>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let user = parameters.get("user").map(String::as_str).unwrap_or_default();
        if self.shared.db.catalog().role(user).is_some_and(|r| !r.login) {
            let message = format!("role \"{user}\" is not permitted to log in");
            return Err(crate::auth::fatal("28000", message));
        }
        let (pid, secret_key) = self.shared.keys.generate(&*client);
        client.set_pid_and_secret_key(pid, secret_key.clone());

        let params: Vec<(String, String)> =
            parameters.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let db = self.shared.db.clone();
        let mut session = match crate::listener::session_log_buffer() {
            Some(n) => Session::on_log_buffer(db, &params, n),
            None => Session::new(db, &params),
        };
        session.set_deferred_acks(true);
        session.set_backend_pid(pid);
        let startup = startup_parameters(parameters);
        session.mark_reported(&startup);
        let guard = self.shared.cancels.register(
            pid,
            secret_key.to_bytes().to_vec(),
            session.cancel_flag(),
        );
        client.session_extensions().insert(guard);
        *self.conn.session.lock() = Some(session);

        client.feed(PgWireBackendMessage::Authentication(Authentication::Ok)).await?;
        for (name, value) in startup {
            client
                .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(name, value)))
                .await?;
        }
        client
            .feed(PgWireBackendMessage::BackendKeyData(BackendKeyData::new(pid, secret_key)))
            .await?;
        tracing::debug!(pid, %user, "session started");
        self.ready_for_query(client).await
    }
}

/// How a simple Query runs (`on_query`).
enum Simple {
    /// It is one COPY, started.
    Copy(sql::Result<CopyStart>),
    /// One short statement, prepared: it runs on the connection thread.
    Short(Arc<Prepared>),
    /// Anything else: parsed again and run on the blocking pool.
    Other,
}

impl Handler {
    /// A COPY started by a simple Query: CopyInResponse (the rows come next), or the rows of a
    /// COPY TO then ReadyForQuery, or the error then ReadyForQuery.
    async fn simple_copy<C>(
        &self,
        client: &mut C,
        started: sql::Result<CopyStart>,
        sql: String,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match started {
            Ok(CopyStart::In(copy)) => self.copy_in(client, copy, sql, false).await,
            Ok(CopyStart::Out(out)) => {
                self.copy_out(client, out).await?;
                self.ready_for_query(client).await
            }
            Err(error) => {
                let info = crate::error::error_info(&crate::error::WireError::Sql { error, sql });
                client.feed(PgWireBackendMessage::ErrorResponse(info.into())).await?;
                self.ready_for_query(client).await
            }
        }
    }

    /// Answers a started `COPY … FROM STDIN` with CopyInResponse; the rows come next
    /// (`CopyHandler` below). `extended`: started by an Execute (pgwire then waits for Sync
    /// after CopyDone).
    async fn copy_in<C>(
        &self,
        client: &mut C,
        copy: sql::CopyIn,
        sql: String,
        extended: bool,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let columns = copy.columns();
        *self.conn.copy.lock() = Some(CopyState::Running { copy, sql });
        let response = CopyInResponse::new(0, columns as i16, vec![0; columns]);
        client.send(PgWireBackendMessage::CopyInResponse(response)).await?;
        client.set_state(PgWireConnectionState::CopyInProgress(extended));
        Ok(())
    }

    /// Sends the rows of a `COPY … TO STDOUT`, then its CommandComplete.
    async fn copy_out<C>(&self, client: &mut C, mut out: sql::CopyOut) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Rows read are released only once what they saw is durable.
        self.acknowledge().await?;
        let formats = vec![0; out.columns];
        let response = CopyOutResponse::new(0, out.columns as i16, formats);
        client.feed(PgWireBackendMessage::CopyOutResponse(response)).await?;
        while let Some(chunk) = out.next_chunk() {
            client.feed(PgWireBackendMessage::CopyData(CopyData::new(chunk.into()))).await?;
        }
        client.feed(PgWireBackendMessage::CopyDone(CopyDone::new())).await?;
        send_command_complete(client, format!("COPY {}", out.rows)).await
    }
}

/// `COPY … FROM STDIN`: each CopyData's complete rows are inserted as they arrive; CopyDone
/// commits and reports `COPY n`, after which pgwire sends ReadyForQuery (simple protocol) or
/// waits for Sync (extended).
#[async_trait]
impl CopyHandler for Handler {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut state = self.conn.copy.lock();
        if let Some(CopyState::Running { copy, sql }) = state.as_mut() {
            if let Err(error) = self.conn.with_session(|s| s.copy_data(copy, &data.data))? {
                *state = Some(CopyState::Failed(sql_error(error, sql)));
            }
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let state = self.conn.copy.lock().take();
        let result = match state {
            Some(CopyState::Running { copy, sql }) => {
                self.conn.with_session(|s| s.finish_copy(copy))?.map_err(|e| sql_error(e, &sql))
            }
            Some(CopyState::Failed(error)) => Err(error),
            None => Err(protocol_error(ProtocolError::Violation("CopyDone without COPY".into()))),
        };
        let result = match result {
            Ok(out) => self.acknowledge().await.map(|()| out),
            Err(e) => Err(e),
        };
        // pgwire sends ReadyForQuery with the client's status (after an error, the status's
        // error state: still idle for an autocommit COPY).
        client.set_transaction_status(self.conn.status());
        send_command_complete(client, result?.tag.to_string()).await
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(CopyState::Running { copy, .. }) = self.conn.copy.lock().take() {
            let _ = self.conn.with_session(|s| s.abort_copy(copy));
        }
        client.set_transaction_status(self.conn.status());
        PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".into(),
            "57014".into(),
            format!("COPY from stdin failed: {}", fail.message),
        )))
    }
}

#[async_trait]
impl SimpleQueryHandler for Handler {
    /// Runs every statement of the Query message and sends each result in order, stopping at
    /// the first error; ReadyForQuery carries the session's status.
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let sql = query.query;
        // A COPY starts here; one short statement runs right here; anything else (several
        // statements, DDL, long scans, or text that does not prepare) on the blocking pool.
        let plan = self.conn.with_session(|s| match s.prepare_simple(&sql) {
            Ok(p) => match p.copy() {
                Some(copy) => Simple::Copy(s.start_copy(copy)),
                None if p.param_types.is_empty() && s.runs_briefly(&p) => Simple::Short(p),
                None => Simple::Other,
            },
            Err(_) => Simple::Other,
        })?;
        let short = match plan {
            Simple::Copy(started) => return self.simple_copy(client, started, sql).await,
            Simple::Short(p) => Some(p),
            Simple::Other => None,
        };
        let results = match short {
            Some(p) => self.conn.with_session(|s| s.execute_simple_prepared(&p))?,
            None => {
                let text = sql.clone();
                self.conn.with_session_blocking(move |s| s.execute_simple(&text)).await?
            }
        };
        self.acknowledge().await?;
        if results.is_empty() {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                .await?;
        }
        for result in results {
            match result {
                Ok(out) if out.tag.command.is_empty() => {
                    client
                        .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                        .await?;
                }
                Ok(out) => {
                    send_notices(client, &out).await?;
                    if let Some(columns) = &out.columns {
                        let formats = vec![FieldFormat::Text; columns.len()];
                        client
                            .feed(PgWireBackendMessage::RowDescription(encode::row_description(
                                columns, &formats,
                            )))
                            .await?;
                        let mut encoder = RowEncoder::new(columns, &formats, out.zone);
                        for row in &out.rows {
                            client.feed(PgWireBackendMessage::DataRow(encoder.encode(row))).await?;
                        }
                    }
                    send_command_complete(client, out.tag.to_string()).await?;
                }
                Err(error) => {
                    let info = crate::error::error_info(&crate::error::WireError::Sql {
                        error,
                        sql: sql.clone(),
                    });
                    client.feed(PgWireBackendMessage::ErrorResponse(info.into())).await?;
                    break;
                }
            }
        }
        self.ready_for_query(client).await
    }

    /// Not used: `on_query` above does the whole exchange.
    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Err(sql_error(sql::Error::internal("SimpleQueryHandler::do_query is not used"), ""))
    }
}

/// Checks a Bind message against its statement (`required` parameters, `result_columns`
/// columns if it returns rows), as PostgreSQL's `exec_bind_message` does: format code values
/// and counts, and the parameter count.
pub fn check_bind(
    bind: &Bind,
    required: usize,
    result_columns: Option<usize>,
    statement_name: &str,
) -> Result<(), ProtocolError> {
    for &code in bind.parameter_format_codes.iter().chain(&bind.result_column_format_codes) {
        if code != 0 && code != 1 {
            return Err(ProtocolError::UnsupportedFormatCode(code));
        }
    }
    let n_params = bind.parameters.len();
    let n_formats = bind.parameter_format_codes.len();
    if n_formats > 1 && n_formats != n_params {
        return Err(ProtocolError::Violation(format!(
            "bind message has {n_formats} parameter formats but {n_params} parameters"
        )));
    }
    if n_params != required {
        return Err(ProtocolError::Violation(format!(
            "bind message supplies {n_params} parameters, but prepared statement \"{statement_name}\" requires {required}"
        )));
    }
    if let Some(columns) = result_columns {
        let n_results = bind.result_column_format_codes.len();
        if n_results > 1 && n_results != columns {
            return Err(ProtocolError::Violation(format!(
                "bind message has {n_results} result formats but query has {columns} columns"
            )));
        }
    }
    Ok(())
}

/// The name PostgreSQL shows for a statement or portal (`""` for the unnamed one).
fn shown_name(name: Option<&str>) -> &str {
    name.unwrap_or("")
}

/// The tag kept in a suspended portal: `SELECT` alone when the tag counts the rows of each
/// Execute, otherwise the statement's full tag (INSERT … RETURNING reports its whole count, SHOW
/// none), as PostgreSQL does.
fn suspended_tag(tag: &sql::Tag) -> String {
    match (tag.command.as_str(), tag.rows) {
        ("SELECT", Some(_)) => "SELECT".to_owned(),
        _ => tag.to_string(),
    }
}

/// The CommandComplete tag of the Execute that finishes a suspended portal after sending
/// `rows_this_execute` rows.
fn resumed_tag(suspended: &str, rows_this_execute: usize) -> String {
    match suspended {
        "SELECT" => format!("SELECT {rows_this_execute}"),
        other => other.to_owned(),
    }
}

#[async_trait]
impl ExtendedQueryHandler for Handler {
    type Statement = Statement;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    /// Parse: prepares through the session with the client's parameter OIDs.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_else(|| DEFAULT_NAME.to_owned());
        if let Some(named) = &message.name {
            if client.portal_store().get_statement(named).is_some() {
                return Err(protocol_error(ProtocolError::DuplicateStatement(named.clone())));
            }
        }
        if is_empty_query(&message.query) {
            client.portal_store().put_empty_statement(&name);
        } else {
            let prepared = self
                .conn
                .with_session(|s| s.prepare(&message.query, &message.type_oids))?
                .map_err(|e| sql_error(e, &message.query))?;
            let declared = message.type_oids.iter().map(|oid| Type::from_oid(*oid)).collect();
            client.portal_store().put_statement(Arc::new(StoredStatement::new(
                name,
                Statement::new(prepared),
                declared,
            )));
        }
        client.feed(PgWireBackendMessage::ParseComplete(ParseComplete::new())).await?;
        Ok(())
    }

    /// Bind: checks counts and formats, decodes every parameter to the statement's parameter
    /// type, and stores the portal with its values.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        if let Some(named) = &message.portal_name {
            if client.portal_store().get_portal(named).is_some() {
                return Err(protocol_error(ProtocolError::DuplicatePortal(named.clone())));
            }
        }
        let shown = shown_name(message.statement_name.as_deref());
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(stored)) => {
                let prepared = &stored.statement.prepared;
                check_bind(
                    &message,
                    prepared.param_types.len(),
                    prepared.columns.as_ref().map(|c| c.len()),
                    shown,
                )
                .map_err(protocol_error)?;
                let param_format = match message.parameter_format_codes.as_slice() {
                    [] => Format::UnifiedText,
                    [one] => Format::from(*one),
                    codes => Format::Individual(codes.to_vec()),
                };
                let mut params = Vec::with_capacity(message.parameters.len());
                // The session's zone reads a timestamptz parameter (or converts one).
                let tz = catalog::DataType::TimestampTz;
                let zoned = prepared.param_types.contains(&tz)
                    || stored.parameter_types.iter().flatten().any(|t| t.oid() == tz.oid());
                let zone = if zoned {
                    self.conn.with_session(|s| s.zone())?
                } else {
                    sql::types::Zone::UTC
                };
                for (i, (bytes, target)) in
                    message.parameters.iter().zip(&prepared.param_types).enumerate()
                {
                    let binary = encode::column_format(&param_format, i) == FieldFormat::Binary;
                    let sent = stored
                        .parameter_types
                        .get(i)
                        .and_then(Option::as_ref)
                        .and_then(|t| catalog::DataType::from_oid(t.oid()));
                    let value =
                        encode::decode_param(bytes.as_deref(), binary, sent.as_ref(), target, zone)
                            .map_err(|e| sql_error(e, &prepared.sql))?;
                    params.push(value);
                }
                let bound = StoredStatement::new(
                    stored.id.clone(),
                    Statement::bound(prepared.clone(), params),
                    stored.parameter_types.clone(),
                );
                let portal = Portal::try_new(&message, Arc::new(bound))?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(protocol_error(ProtocolError::Violation(format!(
                        "bind message supplies {} parameters, but prepared statement \"{shown}\" requires 0",
                        message.parameters.len()
                    ))));
                }
                client.portal_store().put_empty_portal(portal_name);
            }
            None => {
                return Err(protocol_error(ProtocolError::UndefinedStatement(shown.to_owned())))
            }
        }
        client.feed(PgWireBackendMessage::BindComplete(BindComplete::new())).await?;
        Ok(())
    }

    /// Describe: ParameterDescription (statements only) and RowDescription or NoData.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let shown = shown_name(message.name.as_deref()).to_owned();
        let (columns, formats) = match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => match client.portal_store().get_statement(name) {
                Some(Entry::Value(stored)) => {
                    let prepared = &stored.statement.prepared;
                    let oids = prepared.param_types.iter().map(|t| t.oid()).collect();
                    client
                        .feed(PgWireBackendMessage::ParameterDescription(
                            ParameterDescription::new(oids),
                        ))
                        .await?;
                    (prepared.columns.clone(), Format::UnifiedText)
                }
                Some(Entry::Empty) => {
                    client
                        .feed(PgWireBackendMessage::ParameterDescription(
                            ParameterDescription::new(vec![]),
                        ))
                        .await?;
                    (None, Format::UnifiedText)
                }
                None => return Err(protocol_error(ProtocolError::UndefinedStatement(shown))),
            },
            TARGET_TYPE_BYTE_PORTAL => match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) => (
                    portal.statement.statement.prepared.columns.clone(),
                    portal.result_column_format.clone(),
                ),
                Some(Entry::Empty) => (None, Format::UnifiedText),
                None => return Err(protocol_error(ProtocolError::UndefinedPortal(shown))),
            },
            other => return Err(PgWireError::InvalidTargetType(other)),
        };
        match columns {
            Some(columns) => {
                let formats = encode::column_formats(&formats, columns.len());
                client
                    .feed(PgWireBackendMessage::RowDescription(encode::row_description(
                        &columns, &formats,
                    )))
                    .await?;
            }
            None => client.feed(PgWireBackendMessage::NoData(NoData::new())).await?,
        }
        Ok(())
    }

    /// Execute: runs the portal once (the whole result), then sends up to `max_rows` rows per
    /// Execute for row-returning statements. Commands without rows always report their full
    /// count, whatever `max_rows` says.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let shown = shown_name(message.name.as_deref()).to_owned();
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(portal)) => portal,
            Some(Entry::Empty) => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                    .await?;
                return Ok(());
            }
            None => return Err(protocol_error(ProtocolError::UndefinedPortal(shown))),
        };
        let state = portal.state();
        let mut state = state.lock().await;
        let prepared = &portal.statement.statement.prepared;
        if let (PortalExecutionState::Initial, Some(copy)) = (&*state, prepared.copy()) {
            *state = PortalExecutionState::Finished;
            let started = self.conn.with_session(|s| s.start_copy(copy))?;
            client.set_transaction_status(self.conn.status());
            return match started {
                Ok(CopyStart::In(copy)) => {
                    self.copy_in(client, copy, prepared.sql.clone(), true).await
                }
                Ok(CopyStart::Out(out)) => self.copy_out(client, out).await,
                Err(e) => Err(sql_error(e, &prepared.sql)),
            };
        }
        match &mut *state {
            PortalExecutionState::Initial => {
                let stmt = &portal.statement.statement;
                let params = stmt.take_params();
                let pipelined = !self.conn.sync_follows.load(std::sync::atomic::Ordering::Relaxed);
                let prepared = stmt.prepared.clone();
                let run = move |s: &mut Session| {
                    s.set_pipelined(pipelined);
                    s.execute_prepared(&prepared, params)
                };
                let short = self.conn.with_session(|s| s.runs_briefly(&stmt.prepared))?;
                let result = if short {
                    self.conn.with_session(run)?
                } else {
                    self.conn.with_session_blocking(run).await?
                };
                self.acknowledge().await?;
                // Keep pgwire's view in step (it turns an error into `E` only inside a block).
                client.set_transaction_status(self.conn.status());
                let out = match result {
                    Ok(out) => out,
                    Err(e) => {
                        *state = PortalExecutionState::Finished;
                        return Err(sql_error(e, &stmt.prepared.sql));
                    }
                };
                send_notices(client, &out).await?;
                match &out.columns {
                    // A statement text without a statement (only comments).
                    None if out.tag.command.is_empty() => {
                        client
                            .feed(PgWireBackendMessage::EmptyQueryResponse(
                                EmptyQueryResponse::new(),
                            ))
                            .await?;
                        *state = PortalExecutionState::Finished;
                    }
                    None => {
                        send_command_complete(client, out.tag.to_string()).await?;
                        *state = PortalExecutionState::Finished;
                    }
                    Some(columns) => {
                        let formats =
                            encode::column_formats(&portal.result_column_format, columns.len());
                        let mut encoder = RowEncoder::new(columns, &formats, out.zone);
                        let mut rows = out.rows.iter();
                        let first = if max_rows == 0 { out.rows.len() } else { max_rows };
                        for row in rows.by_ref().take(first) {
                            client.feed(PgWireBackendMessage::DataRow(encoder.encode(row))).await?;
                        }
                        if max_rows == 0 || out.rows.len() < max_rows {
                            send_command_complete(client, out.tag.to_string()).await?;
                            *state = PortalExecutionState::Finished;
                        } else {
                            // PostgreSQL suspends after exactly `max_rows` rows, even when none
                            // remain; the next Execute then completes with `SELECT 0`.
                            let rest: Vec<PgWireResult<_>> =
                                rows.map(|row| Ok(encoder.encode(row))).collect();
                            let fields: Vec<FieldInfo> = columns
                                .iter()
                                .zip(&formats)
                                .map(|(c, f)| encode::field_info(c, *f))
                                .collect();
                            let mut suspended =
                                QueryResponse::new(Arc::new(fields), futures::stream::iter(rest));
                            suspended.set_command_tag(&suspended_tag(&out.tag));
                            *state = PortalExecutionState::Suspended(suspended);
                            client
                                .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                                .await?;
                        }
                    }
                }
            }
            PortalExecutionState::Suspended(response) => {
                let mut sent = 0usize;
                while max_rows == 0 || sent < max_rows {
                    match response.data_rows().next().await {
                        Some(row) => {
                            client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                            sent += 1;
                        }
                        None => break,
                    }
                }
                if max_rows != 0 && sent == max_rows {
                    client
                        .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                        .await?;
                } else {
                    let tag = resumed_tag(response.command_tag(), sent);
                    send_command_complete(client, tag).await?;
                    *state = PortalExecutionState::Finished;
                }
            }
            PortalExecutionState::Finished => {
                if portal.statement.statement.prepared.columns.is_some() {
                    send_command_complete(client, "SELECT 0".to_owned()).await?;
                } else {
                    return Err(protocol_error(ProtocolError::PortalCannotRun(shown)));
                }
            }
        }
        Ok(())
    }

    /// Sync: ends the implicit transaction (reporting a failure to commit it), drops the
    /// unnamed portal, and sends ReadyForQuery with the session's status.
    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let result = self.conn.with_session(Session::sync)?;
        // The implicit transaction's commit: nothing more goes out before it is durable.
        self.acknowledge().await?;
        if let Err(error) = result {
            let info = crate::error::error_info(&crate::error::WireError::Sql {
                error,
                sql: String::new(),
            });
            client.feed(PgWireBackendMessage::ErrorResponse(info.into())).await?;
        }
        client.portal_store().rm_portal(DEFAULT_NAME);
        self.ready_for_query(client).await
    }

    /// Close: forgets a statement or portal (closing one that does not exist is not an error).
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => client.portal_store().rm_statement(name),
            TARGET_TYPE_BYTE_PORTAL => client.portal_store().rm_portal(name),
            other => return Err(PgWireError::InvalidTargetType(other)),
        }
        client.feed(PgWireBackendMessage::CloseComplete(CloseComplete::new())).await?;
        Ok(())
    }

    /// Not used: `on_execute` above runs portals itself.
    async fn do_query<C>(
        &self,
        _client: &mut C,
        _portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Err(sql_error(sql::Error::internal("ExtendedQueryHandler::do_query is not used"), ""))
    }
}

/// pgwire's statement parser, backed by the session. `Handler::on_parse` calls the session
/// directly (it needs the raw parameter OIDs); this is the same thing for pgwire's own paths.
pub struct Parser {
    conn: Arc<Connection>,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Statement;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let oids: Vec<u32> = types.iter().map(|t| t.as_ref().map_or(0, Type::oid)).collect();
        let prepared =
            self.conn.with_session(|s| s.prepare(sql, &oids))?.map_err(|e| sql_error(e, sql))?;
        Ok(Some(Statement::new(prepared)))
    }

    fn get_parameter_types(&self, stmt: &Statement) -> PgWireResult<Vec<Type>> {
        Ok(stmt.prepared.param_types.iter().map(encode::pg_type).collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let format = column_format.cloned().unwrap_or_default();
        Ok(stmt
            .prepared
            .columns
            .iter()
            .flat_map(|cols| cols.iter())
            .enumerate()
            .map(|(i, c)| encode::field_info(c, encode::column_format(&format, i)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(params: usize, param_formats: Vec<i16>, result_formats: Vec<i16>) -> Bind {
        Bind::new(None, None, param_formats, vec![None; params], result_formats)
    }

    #[test]
    fn bind_parameter_count_uses_postgres_message() {
        let err = check_bind(&bind(1, vec![], vec![]), 2, None, "").unwrap_err();
        assert_eq!(err.sqlstate(), "08P01");
        assert_eq!(
            err.to_string(),
            "bind message supplies 1 parameters, but prepared statement \"\" requires 2"
        );
    }

    #[test]
    fn bind_format_counts_and_codes_are_checked() {
        assert!(check_bind(&bind(2, vec![1], vec![1]), 2, Some(3), "s").is_ok());
        assert!(check_bind(&bind(2, vec![0, 1], vec![0, 1, 1]), 2, Some(3), "s").is_ok());
        let err = check_bind(&bind(2, vec![0, 1, 1], vec![]), 2, Some(3), "s").unwrap_err();
        assert_eq!(err.to_string(), "bind message has 3 parameter formats but 2 parameters");
        let err = check_bind(&bind(2, vec![], vec![0, 1]), 2, Some(3), "s").unwrap_err();
        assert_eq!(err.to_string(), "bind message has 2 result formats but query has 3 columns");
        let err = check_bind(&bind(2, vec![2], vec![]), 2, Some(3), "s").unwrap_err();
        assert_eq!(
            (err.sqlstate(), err.to_string().as_str()),
            ("22023", "unsupported format code: 2")
        );
    }

    #[test]
    fn suspended_select_counts_rows_of_the_last_execute() {
        let select = sql::Tag { command: "SELECT".into(), rows: Some(10) };
        assert_eq!(resumed_tag(&suspended_tag(&select), 3), "SELECT 3");
        let insert = sql::Tag { command: "INSERT".into(), rows: Some(3) };
        assert_eq!(resumed_tag(&suspended_tag(&insert), 1), "INSERT 0 3");
        let show = sql::Tag { command: "SHOW".into(), rows: None };
        assert_eq!(resumed_tag(&suspended_tag(&show), 1), "SHOW");
    }

    #[test]
    fn startup_parameters_echo_the_client() {
        let mut client = std::collections::BTreeMap::new();
        client.insert("user".to_owned(), "admin".to_owned());
        client.insert("application_name".to_owned(), "tpcc".to_owned());
        client.insert("TimeZone".to_owned(), "Etc/UTC".to_owned());
        let params: std::collections::HashMap<_, _> =
            startup_parameters(&client).into_iter().collect();
        assert!(params["server_version"].starts_with("15."));
        assert_eq!(params["application_name"], "tpcc");
        assert_eq!(params["TimeZone"], "Etc/UTC");
        assert_eq!(params["session_authorization"], "admin");
        assert!(params["DateStyle"].starts_with("ISO"));
        assert_eq!(params["client_encoding"], "UTF8");
    }
}
