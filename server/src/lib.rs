//! server: Aspen's PostgreSQL wire-protocol layer (protocol 3.0, via `pgwire` 0.42).
//!
//! It turns client messages into calls on one [`sql::Session`] per connection and the results
//! back into messages. It decides nothing about SQL: types, command tags, column names and
//! SQLSTATEs all come from the `sql` crate.
//!
//! # What is supported
//!
//! - **Startup**: authentication by where the client connects from ([`auth`]): trust on the
//!   Unix socket and loopback addresses, SCRAM-SHA-256 against the roles' passwords from
//!   anywhere else, by default. SSLRequest is answered with TLS when the server has a
//!   certificate ([`tls`]), else `N`; GSSENCRequest is answered `N`. The ParameterStatus set pgJDBC and libpq check is sent
//!   (`server_version` parses as 15, `client_encoding` UTF8, `DateStyle` `ISO, MDY`, …; see
//!   [`handler::startup_parameters`]), then BackendKeyData.
//! - **Simple query**: several statements per Query; every result up to and including the first
//!   error is sent, then ReadyForQuery. Results are always text.
//! - **Extended query**: Parse (unnamed and named), Bind (text and binary parameters, per-column
//!   result formats), Describe (statement and portal), Execute (with `max_rows` and
//!   PortalSuspended), Sync, Close, Flush. Any number of messages may be pipelined under one
//!   Sync; after an error everything up to Sync is skipped.
//! - **ReadyForQuery** reports the session's own transaction status (`I`, `T`, `E`).
//! - **Notices** before a statement's result, **ParameterStatus** after a `SET` of a reported
//!   parameter.
//! - **CancelRequest** is routed to the connection named by its BackendKeyData (see
//!   "Cancellation" below).
//!
//! # What is not
//!
//! Client certificates, MD5 and cleartext password authentication, replication, function calls (`F`), protocol
//! 3.2 features beyond what pgwire negotiates, and encodings other than UTF8.
//!
//! # Malformed input
//!
//! The connection loop (`connection.rs`, a copy of pgwire's `process_socket` loop for plain
//! TCP) reads through a [`framing::CheckedStream`], which follows the message framing before
//! pgwire decodes anything:
//!
//! - A message length below 4 (or above 1 GiB), a startup packet length outside 8..=10000, a
//!   Query or Parse whose strings and counts do not fill its length exactly, or any message
//!   pgwire decodes from more or fewer bytes than its length: FATAL 08P01 (`invalid message
//!   length`, `invalid message format`, …), then the connection closes. The messages before the
//!   bad one are processed first. PostgreSQL also ends the session for a bad length; for a
//!   malformed body it reports ERROR and continues, which pgwire's decoder cannot do safely.
//! - A message pgwire cannot decode (unknown type, too large for its type, bad startup
//!   packet): FATAL with pgwire's SQLSTATE, then close.
//! - Query or Parse text that is not valid UTF-8: ERROR 22021 `invalid byte sequence for
//!   encoding "UTF8": 0x..` as in PostgreSQL, and the session continues (a Parse error skips to
//!   Sync); inside a transaction block it fails the block (status `E`).
//!
//! # Message flow
//!
//! ```text
//!  client ── TCP ──► listener::Server::run ── one task per connection ──► connection::serve
//!                      (framing::CheckedStream under pgwire's codec, pgwire::process_message)
//!                                                                             │
//!          handler::Handler (per connection, owns the sql::Session) ◄─────────┘
//!            on_startup  → Session::new(startup parameters)
//!            on_query    → Session::execute_simple → RowDescription/DataRow/CommandComplete…
//!            on_parse    → Session::prepare(sql, parameter OIDs)      (stored by pgwire)
//!            on_bind     → encode::decode_param for each parameter    (stored in the portal)
//!            on_describe → ParameterDescription + RowDescription/NoData from the Prepared
//!            on_execute  → Session::execute_prepared → DataRows in the portal's formats
//!            on_sync     → Session::sync → ReadyForQuery(Session::status)
//!          error::error_info: the one place a sql::Error becomes an ErrorResponse
//! ```
//!
//! # Invariants
//!
//! - No client input may panic the server. A protocol violation ends only its connection
//!   (after a FATAL ErrorResponse, see "Malformed input").
//! - The session lock is never held across an `.await`.
//! - A command's row count is never truncated by `max_rows`.
//!
//! # Cancellation
//!
//! A CancelRequest sets the named session's cancel flag, which the running statement checks
//! where it checks `statement_timeout` (module `cancel`); shutdown sets every flag.
//!
//! # Testing
//!
//! Unit tests cover encoding, Bind checks and error conversion; `tests/protocol.rs` starts the
//! server in-process on `127.0.0.1:0` and talks to it with tokio-postgres and with a raw
//! message-level client (for pipelines and exact message sequences).

pub mod ack;
pub mod auth;
pub mod bench;
mod busy_poll;
pub mod cancel;
pub mod config;
mod connection;
pub mod encode;
pub mod error;
pub mod fault;
pub mod framing;
pub mod handler;
pub mod listener;
mod stream;
pub mod tls;

pub use listener::Server;
