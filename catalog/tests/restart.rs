//! The catalog survives a restart: after reopening its RocksDB directory, the snapshot (tables,
//! columns with defaults, composite primary keys, unique indexes, ON DELETE CASCADE foreign
//! keys, CHECK constraints), the version and the id counters are exactly as they were before; and a column's
//! sequence never gives a value twice across restarts.

use catalog::{
    Catalog, CatalogStore, CatalogVersion, Check, Column, ColumnDefault, DataType, Deferral,
    FkAction, ForeignKey, Generated, IndexDef, IndexId, RocksStore, Sequence, TableDef, TableId,
};

fn column(name: &str, data_type: DataType, not_null: bool, default: Option<&str>) -> Column {
    Column {
        name: name.into(),
        position: 0,
        data_type,
        not_null,
        default: default.map(|sql| ColumnDefault { sql: sql.into() }),
        sequence: None,
        dropped: false,
    }
}

fn index(name: &str, columns: &[u16], unique: bool, primary: bool) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns: columns.to_vec(),
        unique,
        primary,
        constraint: primary,
        predicate: None,
    }
}

#[test]
fn catalog_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let catalog = Catalog::open(dir.path()).unwrap();
        // warehouse(w_id int primary key, w_name varchar(10), w_tax numeric(4,4) default 0)
        let warehouse = catalog
            .create_table(TableDef {
                name: "warehouse".into(),
                columns: vec![
                    column("w_id", DataType::Int32, false, None),
                    column("w_name", DataType::Varchar(Some(10)), false, None),
                    column("w_tax", DataType::Numeric(Some((4, 4))), false, Some("0")),
                ],
                indexes: vec![
                    index("warehouse_pkey", &[0], true, true),
                    index("warehouse_w_name_key", &[1], true, false),
                ],
                foreign_keys: Vec::new(),
                hidden_pk: false,
                view: None,
                checks: vec![Check {
                    name: "warehouse_w_tax_check".into(),
                    sql: "w_tax >= 0".into(),
                    columns: vec![2],
                }],
            })
            .unwrap();
        // district(d_w_id, d_id, d_ts default CURRENT_TIMESTAMP), primary key (d_w_id, d_id),
        // foreign key (d_w_id) references warehouse on delete cascade.
        let district = catalog
            .create_table(TableDef {
                name: "district".into(),
                columns: vec![
                    column("d_w_id", DataType::Int32, false, None),
                    column("d_id", DataType::Int16, false, None),
                    column("d_ts", DataType::Timestamp, true, Some("CURRENT_TIMESTAMP")),
                ],
                indexes: vec![index("district_pkey", &[0, 1], true, true)],
                foreign_keys: vec![ForeignKey {
                    name: "district_d_w_id_fkey".into(),
                    columns: vec![0],
                    ref_table: warehouse.id,
                    ref_columns: vec![0],
                    on_delete: FkAction::Cascade,
                    on_update: FkAction::Cascade,
                    deferral: Deferral::Deferred,
                }],
                hidden_pk: false,
                view: None,
                checks: Vec::new(),
            })
            .unwrap();
        // A table without a primary key, then dropped.
        let scratch = catalog
            .create_table(TableDef {
                name: "scratch".into(),
                columns: vec![column("x", DataType::Text, false, Some("'none'"))],
                indexes: vec![index("scratch_x_idx", &[0], false, false)],
                foreign_keys: Vec::new(),
                hidden_pk: true,
                view: None,
                checks: Vec::new(),
            })
            .unwrap();
        assert!(catalog.drop_tables(vec![scratch.id], false).unwrap().is_empty());
        assert_eq!(district.indexes[0].columns, [0, 1]);
        catalog.snapshot()
    };

    let catalog = Catalog::open(dir.path()).unwrap();
    let after = catalog.snapshot();
    assert_eq!(after.version(), before.version());
    assert_eq!(after.version(), CatalogVersion(4));
    assert_eq!(after.tables().collect::<Vec<_>>(), before.tables().collect::<Vec<_>>());
    assert!(after.table("scratch").is_none() && after.index_by_name("scratch_x_idx").is_none());

    let district = after.table("district").unwrap();
    assert!(district.columns[0].not_null && district.columns[1].not_null);
    assert_eq!(district.columns[2].default.as_ref().unwrap().sql, "CURRENT_TIMESTAMP");
    let warehouse = after.table("warehouse").unwrap();
    let refs = after.referencing_fks(warehouse.id);
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].0.id, district.id);
    assert_eq!(refs[0].1.on_delete, FkAction::Cascade);
    assert_eq!(refs[0].1.on_update, FkAction::Cascade);
    assert_eq!(warehouse.checks[0].sql, "w_tax >= 0");
    let (table, unique) = after.index_by_name("warehouse_w_name_key").unwrap();
    assert_eq!((table.id, unique.unique, unique.primary), (warehouse.id, true, false));

    // Ids of the dropped table and its index are not reused.
    let next = catalog
        .create_table(TableDef {
            name: "scratch".into(),
            columns: vec![column("x", DataType::Text, false, None)],
            indexes: vec![index("scratch_pkey", &[0], true, true)],
            foreign_keys: Vec::new(),
            hidden_pk: false,
            view: None,
            checks: Vec::new(),
        })
        .unwrap();
    assert_eq!((next.id, next.indexes[0].id), (TableId(4), IndexId(5)));
    assert_eq!(catalog.snapshot().version(), CatalogVersion(5));
}

/// A table `name` whose column `id` is a `serial` (its sequence `<name>_id_seq`).
fn serial_table(catalog: &Catalog, name: &str) -> (TableId, Sequence) {
    let seq = Sequence::counting(format!("{name}_id_seq"), Generated::Serial, DataType::Int32);
    let mut id = column("id", DataType::Int32, true, None);
    id.sequence = Some(seq.clone());
    let def = TableDef {
        name: name.into(),
        columns: vec![id],
        indexes: vec![],
        foreign_keys: vec![],
        hidden_pk: true,
        view: None,
        checks: Vec::new(),
    };
    (catalog.create_table(def).unwrap().id, seq)
}

fn sequence_keys(dir: &std::path::Path) -> Vec<(String, String)> {
    let store = RocksStore::open(dir).unwrap();
    let all = store.load_all().unwrap();
    all.into_iter()
        .filter(|(k, _)| k.starts_with("sequence/"))
        .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
        .collect()
}

#[test]
fn sequences_never_repeat_a_value_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (t, seq) = {
        let catalog = Catalog::open(dir.path()).unwrap();
        let (t, seq) = serial_table(&catalog, "s");
        let values: Vec<i64> = (0..3).map(|_| catalog.nextval(t, 0, &seq).unwrap()).collect();
        assert_eq!(values, [1, 2, 3]);
        (t, seq)
    };
    // The first reservation covered 32 values: a crash (no settle) continues after them.
    assert_eq!(sequence_keys(dir.path()), [(format!("sequence/{:010}/00000", t.0), "32".into())]);
    {
        let catalog = Catalog::open(dir.path()).unwrap();
        assert_eq!(catalog.nextval(t, 0, &seq).unwrap(), 33);
        assert_eq!(catalog.nextval(t, 0, &seq).unwrap(), 34);
        // A clean shutdown writes where it stands.
        catalog.settle_sequences().unwrap();
    }
    {
        let catalog = Catalog::open(dir.path()).unwrap();
        assert_eq!(catalog.nextval(t, 0, &seq).unwrap(), 35);
        // setval is written before it returns: a crash right after it keeps it.
        catalog.setval(t, 0, &seq, 1000, true).unwrap();
    }
    {
        let catalog = Catalog::open(dir.path()).unwrap();
        assert_eq!(catalog.nextval(t, 0, &seq).unwrap(), 1001);
        let err = catalog.setval(t, 0, &seq, 0, true).unwrap_err();
        assert!(err.to_string().contains("out of bounds"), "{err}");
        catalog.setval(t, 0, &seq, i32::MAX as i64, true).unwrap();
        let err = catalog.nextval(t, 0, &seq).unwrap_err();
        assert!(err.to_string().contains("reached maximum value"), "{err}");
        catalog.drop_tables(vec![t], false).unwrap();
    }
    // The sequence went with its table.
    assert_eq!(sequence_keys(dir.path()), []);
    let catalog = Catalog::open(dir.path()).unwrap();
    let (t2, seq2) = serial_table(&catalog, "s");
    assert_ne!(t2, t);
    assert_eq!(catalog.nextval(t2, 0, &seq2).unwrap(), 1, "a new table's sequence starts over");
}

#[test]
fn renames_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let catalog = Catalog::open(dir.path()).unwrap();
        let (id, _) = serial_table(&catalog, "before");
        catalog.rename_table(id, "after".into()).unwrap();
        catalog.alter_column(id, 0, catalog::ColumnChange::Rename("key".into())).unwrap();
        let err = catalog.rename_table(id, "before_id_seq".into()).unwrap_err();
        assert_eq!(err, catalog::Error::DuplicateTable("before_id_seq".into()), "taken");
        id
    };
    let catalog = Catalog::open(dir.path()).unwrap();
    let snapshot = catalog.snapshot();
    let table = snapshot.table("after").expect("renamed table after restart");
    assert_eq!(table.id, id);
    assert_eq!(table.columns[0].name, "key");
    assert!(snapshot.table("before").is_none());
    // The column's sequence keeps its name, as in PostgreSQL.
    assert!(snapshot.sequence("before_id_seq").is_some());
}
