//! Errors of the transaction engine. No SQLSTATE here: `sql` maps them (Conflict → 40001,
//! UniqueViolation → 23505).

use crate::{IndexId, TableId};
use std::sync::Arc;

/// An error from a [`crate::Transaction`] or the [`crate::Engine`].
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// The transaction cannot be serialized (validation failed, a record stayed locked, a key it
    /// relied on changed). The transaction is finished or must be aborted; retrying it from the
    /// start may succeed.
    #[error("serialization conflict on {table}: {reason}")]
    Conflict {
        /// The table where the conflict was detected.
        table: TableId,
        /// What was detected (for logs; not for matching).
        reason: &'static str,
    },
    /// A visible row already has this primary key (`index: None`) or this key of a unique
    /// secondary index.
    #[error("unique violation on {table} index {index:?}")]
    UniqueViolation {
        /// The table.
        table: TableId,
        /// `None` for the primary key, else the unique secondary index.
        index: Option<IndexId>,
    },
    /// The table does not exist (never created, or dropped).
    #[error("{0} does not exist")]
    TableDropped(TableId),
    /// The secondary index does not exist on the table.
    #[error("index {index} does not exist on {table}")]
    NoSuchIndex {
        /// The table.
        table: TableId,
        /// The missing index.
        index: IndexId,
    },
    /// `update` or `delete` of a key this transaction itself deleted.
    #[error("key not found in {table}")]
    NotFound {
        /// The table.
        table: TableId,
    },
    /// The log refused or lost the transaction's record (a failed device, `ENOSPC`, a record
    /// larger than the log accepts). From [`crate::Transaction::commit`] the transaction is
    /// aborted and left no trace; from [`crate::Transaction::commit_durable`]'s wait it is
    /// installed in memory but must never be acknowledged (the server shuts down and recovers;
    /// DESIGN.md §3). Shared (`Arc`) so that the error stays `Clone`.
    #[error("log: {0}")]
    Log(#[source] Arc<wal::Error>),
    /// [`crate::Engine::begin_checkpoint`] while another checkpoint's cut is still alive.
    #[error("a checkpoint is already in progress")]
    CheckpointActive,
}

impl From<wal::Error> for Error {
    fn from(e: wal::Error) -> Error {
        Error::Log(Arc::new(e))
    }
}

/// Structural equality; two [`Error::Log`] are equal if they describe the same failure (same
/// message), as `wal::Error` holds an `io::Error` that has no equality of its own.
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        use Error::*;
        match (self, other) {
            (Conflict { table: a, reason: r }, Conflict { table: b, reason: s }) => {
                a == b && r == s
            }
            (UniqueViolation { table: a, index: i }, UniqueViolation { table: b, index: j }) => {
                a == b && i == j
            }
            (TableDropped(a), TableDropped(b)) => a == b,
            (NoSuchIndex { table: a, index: i }, NoSuchIndex { table: b, index: j }) => {
                a == b && i == j
            }
            (NotFound { table: a }, NotFound { table: b }) => a == b,
            (Log(a), Log(b)) => Arc::ptr_eq(a, b) || a.to_string() == b.to_string(),
            (CheckpointActive, CheckpointActive) => true,
            _ => false,
        }
    }
}

impl Eq for Error {}

impl Error {
    pub(crate) fn conflict(table: TableId, reason: &'static str) -> Error {
        Error::Conflict { table, reason }
    }

    /// Whether this is a serialization failure ([`Error::Conflict`]).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }
}
