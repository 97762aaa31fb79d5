//! `Snapshot`: one immutable, versioned view of the whole schema.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::ids::{CatalogVersion, IndexId, TableId};
use crate::roles::Role;
use crate::schema::{ForeignKey, Index, Table};
use crate::Error;

/// What a relation name denotes. Tables and indexes share one namespace, as in PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Table(TableId),
    /// The table the index belongs to, and the index's position in `Table::indexes`.
    Index(TableId, usize),
    /// The table whose column (by position) owns the sequence.
    Sequence(TableId, u16),
}

/// An immutable view of the catalog at one [`CatalogVersion`].
///
/// A snapshot never changes after it is built: DDL publishes a new snapshot with a larger
/// version (see `Catalog`). It is shared as `Arc<Snapshot>` and is `Send + Sync`; holding one
/// keeps its tables alive but blocks nothing. A statement binds and plans against one snapshot
/// and can compare versions to detect that a cached plan is stale.
///
/// Every name passed in is expected to be case-folded already (the binder folds).
#[derive(Debug)]
pub struct Snapshot {
    version: CatalogVersion,
    tables: BTreeMap<TableId, Arc<Table>>,
    relations: HashMap<String, Relation>,
    indexes: HashMap<IndexId, (TableId, usize)>,
    /// Referenced table → (referencing table, position in its `foreign_keys`).
    referenced_by: HashMap<TableId, Vec<(TableId, usize)>>,
    /// The roles when this snapshot was published, by name (`pg_roles`). The catalog's own
    /// role map, not this, is what logins are checked against.
    roles: Arc<[Role]>,
}

impl Snapshot {
    /// Builds a snapshot over `tables` and its name lookups. The caller (the catalog) has
    /// already validated that names are unique across tables and indexes.
    pub(crate) fn new(version: CatalogVersion, tables: BTreeMap<TableId, Arc<Table>>) -> Snapshot {
        let mut relations = HashMap::new();
        let mut indexes = HashMap::new();
        let mut referenced_by: HashMap<TableId, Vec<(TableId, usize)>> = HashMap::new();
        for (id, table) in &tables {
            if table.is_sequence() {
                let previous = relations.insert(table.name.clone(), Relation::Sequence(*id, 0));
                debug_assert!(previous.is_none(), "relation name {} used twice", table.name);
                continue;
            }
            let previous = relations.insert(table.name.clone(), Relation::Table(*id));
            debug_assert!(previous.is_none(), "relation name {} used twice", table.name);
            for (pos, index) in table.indexes.iter().enumerate() {
                let previous = relations.insert(index.name.clone(), Relation::Index(*id, pos));
                debug_assert!(previous.is_none(), "relation name {} used twice", index.name);
                indexes.insert(index.id, (*id, pos));
            }
            for column in &table.columns {
                if let Some(seq) = &column.sequence {
                    let owner = Relation::Sequence(*id, column.position);
                    let previous = relations.insert(seq.name.clone(), owner);
                    debug_assert!(previous.is_none(), "relation name {} used twice", seq.name);
                }
            }
            for (pos, fk) in table.foreign_keys.iter().enumerate() {
                referenced_by.entry(fk.ref_table).or_default().push((*id, pos));
            }
        }
        Snapshot { version, tables, relations, indexes, referenced_by, roles: Arc::new([]) }
    }

    /// This snapshot with `roles` as its roles.
    pub(crate) fn with_roles(mut self, roles: Arc<[Role]>) -> Snapshot {
        self.roles = roles;
        self
    }

    /// The roles, by name, as they were when this snapshot was published.
    pub fn roles(&self) -> &[Role] {
        &self.roles
    }

    pub(crate) fn roles_arc(&self) -> Arc<[Role]> {
        self.roles.clone()
    }

    /// The empty catalog at `version`.
    pub(crate) fn empty(version: CatalogVersion) -> Snapshot {
        Snapshot::new(version, BTreeMap::new())
    }

    /// The version of this snapshot; larger means newer.
    pub fn version(&self) -> CatalogVersion {
        self.version
    }

    /// The tables by id, for building the next snapshot.
    pub(crate) fn table_map(&self) -> &BTreeMap<TableId, Arc<Table>> {
        &self.tables
    }

    /// The table named `name`, if there is one (an index of that name is not a table).
    pub fn table(&self, name: &str) -> Option<&Arc<Table>> {
        match self.relations.get(name)? {
            Relation::Table(id) => self.tables.get(id),
            Relation::Index(..) | Relation::Sequence(..) => None,
        }
    }

    /// The sequence of column `position` of table `table`, if it has one.
    pub fn column_sequence(&self, table: TableId, position: u16) -> Option<&crate::Sequence> {
        self.tables.get(&table)?.columns.get(usize::from(position))?.sequence.as_ref()
    }

    /// The sequence named `name`: the table and the column that own it.
    pub fn sequence(&self, name: &str) -> Option<(&Arc<Table>, &crate::Column)> {
        match self.relations.get(name)? {
            Relation::Sequence(table, position) => {
                let table = self.tables.get(table)?;
                Some((table, table.columns.get(usize::from(*position))?))
            }
            Relation::Table(_) | Relation::Index(..) => None,
        }
    }

    /// The table named `name`, or [`Error::UndefinedTable`].
    pub fn must_get_table(&self, name: &str) -> Result<&Arc<Table>, Error> {
        self.table(name).ok_or_else(|| Error::UndefinedTable(name.to_string()))
    }

    /// The table with identity `id`, if it exists in this snapshot.
    pub fn table_by_id(&self, id: TableId) -> Option<&Arc<Table>> {
        self.tables.get(&id)
    }

    /// All tables, in ascending id order (which is creation order).
    pub fn tables(&self) -> impl Iterator<Item = &Arc<Table>> + '_ {
        self.tables.values()
    }

    /// True if a table or an index is named `name`. The binder uses this to pick unused
    /// generated names such as `t_a_key1`, as PostgreSQL does.
    pub fn relation_exists(&self, name: &str) -> bool {
        self.relations.contains_key(name)
    }

    /// The index named `name` and the table it belongs to.
    pub fn index_by_name(&self, name: &str) -> Option<(&Arc<Table>, &Index)> {
        match self.relations.get(name)? {
            Relation::Index(table, pos) => self.index_at(*table, *pos),
            Relation::Table(_) | Relation::Sequence(..) => None,
        }
    }

    /// The index with identity `id` and the table it belongs to.
    pub fn index_by_id(&self, id: IndexId) -> Option<(&Arc<Table>, &Index)> {
        let (table, pos) = self.indexes.get(&id)?;
        self.index_at(*table, *pos)
    }

    fn index_at(&self, table: TableId, pos: usize) -> Option<(&Arc<Table>, &Index)> {
        let table = self.tables.get(&table)?;
        Some((table, &table.indexes[pos]))
    }

    /// The foreign keys that reference table `id`, with the table each is declared on, in
    /// ascending order of that table's id. This is what `DELETE` on `id` must enforce. A
    /// self-referencing foreign key of `id` is included (`create_table` cannot create one, as
    /// the new table's id is not known to the definition, but the result stays correct if a
    /// later DDL adds one).
    pub fn referencing_fks(&self, id: TableId) -> Vec<(&Arc<Table>, &ForeignKey)> {
        let Some(refs) = self.referenced_by.get(&id) else { return Vec::new() };
        refs.iter()
            .map(|(table, pos)| {
                let table = &self.tables[table];
                (table, &table.foreign_keys[*pos])
            })
            .collect()
    }
}
