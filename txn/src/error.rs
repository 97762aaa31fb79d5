//! Errors of the transaction engine. No SQLSTATE here: `sql` maps them (Conflict → 40001,
//! UniqueViolation → 23505).

use crate::{IndexId, TableId};

/// An error from a [`crate::Transaction`] or the [`crate::Engine`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
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
}

impl Error {
    pub(crate) fn conflict(table: TableId, reason: &'static str) -> Error {
        Error::Conflict { table, reason }
    }

    /// Whether this is a serialization failure ([`Error::Conflict`]).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }
}
