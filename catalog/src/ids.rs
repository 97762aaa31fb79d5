//! Identity newtypes for schema objects.

use serde::{Deserialize, Serialize};

/// Identifies a table for its whole life; never reused after DROP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TableId(pub u32);

/// Identifies an index (primary or secondary); never reused after DROP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct IndexId(pub u32);

/// PostgreSQL's first OID for user objects (`FirstNormalObjectId`). Tables and indexes share
/// one OID space, as in `pg_class`: a table's OID is even, an index's odd.
const FIRST_OID: u32 = 16384;

impl TableId {
    /// The table's OID as clients see it (`pg_class.oid`, RowDescription's table OID).
    pub fn oid(self) -> u32 {
        FIRST_OID.wrapping_add(self.0.wrapping_mul(2))
    }
}

impl IndexId {
    /// The index's OID as clients see it (`pg_class.oid` of the index).
    pub fn oid(self) -> u32 {
        FIRST_OID.wrapping_add(self.0.wrapping_mul(2)).wrapping_add(1)
    }
}

/// The OID of the sequence owned by column `position` of table `table` (a `serial` or
/// identity column): in a range of its own, above tables' and indexes'.
pub fn sequence_oid(table: TableId, position: u16) -> u32 {
    (FIRST_OID | 1 << 30).wrapping_add(table.0.wrapping_mul(2048)).wrapping_add(position.into())
}

/// The OID of constraint number `ordinal` of table `table` (`pg_constraint.oid`; the
/// constraints in the order `pg_constraint` lists them): in a range of its own, above
/// sequences'.
pub fn constraint_oid(table: TableId, ordinal: u16) -> u32 {
    (FIRST_OID | 1 << 31).wrapping_add(table.0.wrapping_mul(2048)).wrapping_add(ordinal.into())
}

/// Version of the whole catalog; every DDL statement produces a new, larger one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CatalogVersion(pub u64);

impl std::fmt::Display for TableId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t{}", self.0)
    }
}
