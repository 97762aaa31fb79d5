//! The schema catalog: tables, columns, indexes and foreign keys, persisted in RocksDB and read
//! through immutable, versioned snapshots. Every other crate depends on this one.
//!
//! # Schema model
//!
//! A [`Table`] has an identity ([`TableId`]), a case-folded name, columns addressed by
//! position, indexes ([`Index`], each with an [`IndexId`]) and foreign keys. Every table has a
//! primary index: either a declared primary key (`Index::primary`), whose columns are
//! `NOT NULL`, or a hidden one over an internal row id (`Table::hidden_pk`). Column defaults
//! are SQL text that the binder re-parses, so this crate knows no expression types.
//!
//! Invariants, kept by every DDL operation and checked again when the catalog is loaded:
//! - Ids are assigned from persisted counters, grow monotonically and are never reused, not
//!   even after a drop or a restart. Zero is never an id.
//! - Tables and indexes share one namespace of relation names, as in PostgreSQL.
//! - Column positions are `0..n` in order; a table has at most one primary index, and
//!   `hidden_pk` is true exactly when it has none.
//! - A foreign key references an existing table, and its referenced columns are, as a set,
//!   exactly the key of a unique index of that table. Dropping that index while the foreign
//!   key exists is refused.
//!
//! # Versions and snapshots
//!
//! ```text
//!   reader (binder, planner)          DDL (one writer at a time)
//!   catalog.snapshot() ──┐            1. validate against the current snapshot
//!     Arc<Snapshot> v7   │            2. store.write_batch(...)   sync, atomic
//!                        │            3. publish Snapshot v8      (arc-swap store)
//!   keeps seeing v7 ─────┘            readers that load after 3 see v8
//! ```
//!
//! [`Catalog`] is the only writer. [`Catalog::snapshot`] is lock-free and returns an
//! `Arc<Snapshot>` that never changes. Each successful DDL operation ([`Catalog::create_table`],
//! [`Catalog::drop_tables`], [`Catalog::create_index`], [`Catalog::drop_index`],
//! [`Catalog::add_column`], [`Catalog::alter_column`], [`Catalog::add_primary_key`],
//! [`Catalog::add_foreign_key`])
//! publishes a new snapshot whose [`CatalogVersion`] is one more than the previous one, so a
//! plan cache can tell that a plan is stale by comparing versions. A change is durable before
//! it is visible; a failed operation changes nothing, not even the id counters. `TRUNCATE`
//! changes no schema and needs no catalog operation.
//!
//! # Transactional DDL
//!
//! A transaction's schema changes go through a [`DdlBatch`] instead: [`Catalog::stage`]
//! validates each [`Ddl`] against the batch's private snapshot (which only that transaction
//! binds against), [`Catalog::prepare`] validates the whole batch again under the writer lock
//! (re-applying it over DDL that others published meanwhile, or failing with
//! [`Error::ConcurrentChange`] if they changed a table it changes), and
//! [`PreparedDdl::publish`] persists and publishes it as one new version. Dropping the batch
//! is the rollback. Ids assigned while staging are reserved durably at once (the counters are
//! written), so a rolled-back batch consumes ids, and no id that a log record may name is ever
//! handed out twice.
//!
//! # What is persisted, and how
//!
//! A [`CatalogStore`] is an ordered key-value map with atomic, synced batches: [`RocksStore`]
//! (RocksDB in the data directory's `catalog/`) or [`MemStore`] for tests. Each DDL operation
//! writes one batch holding every changed table, the deleted table keys and all `meta/` keys.
//! Keys and values are UTF-8:
//!
//! | key                    | value                                          |
//! |------------------------|------------------------------------------------|
//! | `meta/format`          | layout version, decimal (currently `1`)        |
//! | `meta/version`         | [`CatalogVersion`] of the last DDL, decimal    |
//! | `meta/next_table_id`   | next [`TableId`] to assign, decimal            |
//! | `meta/next_index_id`   | next [`IndexId`] to assign, decimal            |
//! | `table/<id:010>`       | the [`Table`] as JSON (serde), e.g. `table/0000000003` |
//! | `sequence/<id:010>/<column:05>` | the largest value the sequence may have given, decimal |
//! | `role/<name>`          | a [`Role`] as JSON (module [`roles`]: written alone, not versioned) |
//!
//! A sequence's key is not part of DDL batches: [`Catalog::nextval`] writes it on its own,
//! synced, before it hands out values beyond the last one written (in chunks, so that most
//! calls write nothing), and a restart continues after it. Values handed out but not used
//! are skipped, as in PostgreSQL. Keys of tables that no longer exist are ignored at load and
//! deleted with the table.
//! The zero-padded id makes key order id order. An empty store is initialized with the `meta/`
//! keys (version 0, counters 1). Loading rejects unknown keys, another layout version, and
//! content that breaks the invariants above, with [`Error::Store`].
//!
//! # Testing
//!
//! Unit tests in `catalog.rs` cover DDL validation, version bumps, and that a failed store
//! write publishes nothing (a failing store that wraps [`MemStore`]). `store.rs` tests both
//! stores against one contract, and the layout test checks the keys in the table above.
//! `tests/restart.rs` creates tables with a composite primary key, a unique index, an
//! `ON DELETE CASCADE` foreign key and defaults in a temporary RocksDB directory, drops one,
//! reopens, and checks that the snapshot and the id counters survive.

mod catalog;
mod error;
pub mod ids;
pub mod roles;
pub mod schema;
mod snapshot;
mod store;

pub use crate::catalog::{
    Applied, Catalog, ColumnChange, Ddl, DdlBatch, IndexDef, PreparedDdl, TableDef,
};
pub use crate::error::Error;
pub use crate::ids::{constraint_oid, sequence_oid, CatalogVersion, IndexId, TableId};
pub use crate::roles::{Role, Verifier};
pub use crate::schema::{
    ArrayElem, Check, Column, ColumnDefault, DataType, Deferral, FkAction, ForeignKey, Generated,
    Index, Sequence, Table, ViewDef,
};
pub use crate::snapshot::Snapshot;
pub use crate::store::{CatalogStore, MemStore, RocksStore};
