//! sql: the life of a statement (parse → bind → plan → execute). See `session`.
//!
//! - [`parse`] turns text into sqlparser statements, after the few rewrites sqlparser needs
//!   (`TABLE t`, sequence options in any order) and recognising what it cannot parse
//!   (COPY, VACUUM, CHECKPOINT) or what is answered without parsing: the catalog queries of
//!   pgjdbc ([`metadata`]) and psql's `\d` family ([`describe`]).
//! - [`bind`] resolves names against one catalog snapshot and types every expression
//!   (PostgreSQL's rules), producing a [`plan`]: a tree of enums that prints as EXPLAIN shows.
//!   It also plans: each scan's access path (a key, an index range, or everything), and each
//!   join — a nested loop of key lookups, else a hash join on an equality — in the written
//!   order unless that order would make a cross product. There are no statistics.
//! - [`exec`] runs a plan in one `txn::Transaction` and enforces the constraints of the rows
//!   it writes (`exec::constraints`, foreign key actions included); sequences and advisory
//!   locks ([`advisory`]), which are not transactional, are called through the session
//!   ([`exec::SessionFunctions`]), and what expressions read from the session (clock, names,
//!   `TimeZone`) comes in an [`exec::Env`].
//! - [`session`] owns the transaction state machine (blocks, implicit transactions, 25P02),
//!   the plan cache, transactional DDL through the catalog, and the commit, which orders
//!   schema changes against writers.
//! - [`types`] holds values and PostgreSQL's input, output, cast and comparison rules; a
//!   conversion that depends on the session's time zone is never folded into a plan, which
//!   sessions in different zones share ([`types::zone_dependent`]); [`error`] decides every
//!   SQLSTATE in one place.

pub mod advisory;
pub mod bind;
pub mod copy;
pub mod describe;
pub mod error;
pub mod exec;
pub mod metadata;
pub mod parse;
pub mod plan;
pub mod session;
pub mod types;

pub use error::{Error, Result};
pub use session::{
    Checkpointer, ColumnInfo, CopyIn, CopyOut, CopyStart, Database, DatabaseOptions, Notice,
    Output, Prepared, Session, Tag, TxnStatus,
};
pub use types::Value;
