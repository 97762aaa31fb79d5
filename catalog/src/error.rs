//! Catalog errors. No SQLSTATE is decided here: `sql::Error::sqlstate()` maps each variant
//! (STYLE rule 5). The messages follow PostgreSQL's wording so that the mapping can pass them
//! through unchanged.

/// An error from a catalog lookup or DDL operation. A failed DDL operation changes nothing:
/// neither the store, nor the published snapshot, nor the id counters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The table does not exist (PostgreSQL `42P01`). Holds the name, or the id as `t<n>` when
    /// only the id was given.
    #[error("relation \"{0}\" does not exist")]
    UndefinedTable(String),
    /// A table cannot be created because a relation (table or index) of that name exists
    /// (`42P07`).
    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),
    /// An index cannot be created because a relation (table or index) of that name exists
    /// (`42P07`): indexes share the relation namespace, as in PostgreSQL.
    #[error("relation \"{0}\" already exists")]
    DuplicateIndexName(String),
    /// A column name is used twice in one table (`42701`).
    #[error("column \"{0}\" specified more than once")]
    DuplicateColumn(String),
    /// The named object (for example an index) does not exist (`42704`).
    #[error("{0}")]
    UndefinedObject(String),
    /// The object cannot be dropped because others depend on it (`2BP01`).
    #[error("{message}")]
    DependentObjects {
        /// The primary message, e.g. `cannot drop table a because other objects depend on it`.
        message: String,
        /// One line per dependent object, e.g. `constraint b_a_fkey on table b depends on table
        /// a`; `None` when PostgreSQL gives no detail.
        detail: Option<String>,
    },
    /// The definition is invalid as a table definition, e.g. a second primary key or an index
    /// over a column that does not exist (`42P16`).
    #[error("{0}")]
    InvalidDefinition(String),
    /// A constraint of that name already exists on the table (`42710`).
    #[error("{0}")]
    DuplicateObject(String),
    /// The foreign key cannot be created, e.g. no unique index matches the referenced columns
    /// (`42830`).
    #[error("{0}")]
    InvalidForeignKey(String),
    /// A transaction's schema change cannot commit because another transaction changed the
    /// same table since it began (`40001`). Holds the table's name.
    #[error("could not serialize access due to a concurrent change of table \"{0}\"")]
    ConcurrentChange(String),
    /// A sequence has no value left (`nextval`), or `setval` was given one outside its range
    /// (`2200H` / `22003`: the message says which, as PostgreSQL's does).
    #[error("{message}")]
    SequenceLimit {
        /// PostgreSQL's message.
        message: String,
        /// `nextval` found the sequence used up (`2200H`), rather than `setval` being given a
        /// value out of range (`22003`).
        exhausted: bool,
    },
    /// The persistent store failed, or holds data this version cannot read (`58030` / `XX001`
    /// are both reasonable; the catalog cannot tell an IO error from corruption here).
    #[error("catalog store: {0}")]
    Store(String),
}
