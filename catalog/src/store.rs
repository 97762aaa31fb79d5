//! Persistence of the catalog behind one small trait: a durable, ordered key-value map that can
//! apply a batch of puts and deletes atomically. [`RocksStore`] is the real one; [`MemStore`]
//! is the in-memory one for tests. What the keys and values mean is decided by
//! `crate::catalog` (the layout table is in the crate doc); a store only moves bytes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::Error;

/// A durable key-value map holding the catalog.
///
/// Contract:
/// - `write_batch` is atomic: after a crash, either all of its puts and deletes are visible to
///   the next `load_all` or none are.
/// - `write_batch` is durable when it returns `Ok`: the batch survives a crash or power loss.
///   When it returns `Err`, the batch may or may not have been applied; the catalog treats
///   that as fatal for the DDL statement and publishes nothing.
/// - Implementations are `Send + Sync`, but the catalog calls `write_batch` from one thread at
///   a time (under its writer lock), so implementations need no ordering of their own.
pub trait CatalogStore: Send + Sync {
    /// Returns every key and value, in ascending key order.
    fn load_all(&self) -> Result<Vec<(String, Vec<u8>)>, Error>;

    /// Atomically and durably applies `puts` and `deletes`. A key must not appear in both.
    fn write_batch(&self, puts: Vec<(String, Vec<u8>)>, deletes: Vec<String>) -> Result<(), Error>;
}

/// The catalog store in a RocksDB database (one directory, the default column family).
///
/// Each `write_batch` is one RocksDB `WriteBatch` written with `sync = true`, so it is atomic
/// and durable when it returns. Dropping the store closes the database.
pub struct RocksStore {
    db: rocksdb::DB,
}

impl RocksStore {
    /// Opens (creating if missing) the RocksDB database in `dir`.
    pub fn open(dir: &Path) -> Result<RocksStore, Error> {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        let db = rocksdb::DB::open(&opts, dir)
            .map_err(|e| Error::Store(format!("open {}: {e}", dir.display())))?;
        Ok(RocksStore { db })
    }
}

impl CatalogStore for RocksStore {
    fn load_all(&self) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let mut out = Vec::new();
        for item in self.db.iterator(rocksdb::IteratorMode::Start) {
            let (key, value) = item.map_err(|e| Error::Store(format!("read: {e}")))?;
            let key = String::from_utf8(key.into_vec())
                .map_err(|e| Error::Store(format!("key is not UTF-8: {e}")))?;
            out.push((key, value.into_vec()));
        }
        Ok(out)
    }

    fn write_batch(&self, puts: Vec<(String, Vec<u8>)>, deletes: Vec<String>) -> Result<(), Error> {
        let mut batch = rocksdb::WriteBatch::default();
        for (key, value) in puts {
            batch.put(key, value);
        }
        for key in deletes {
            batch.delete(key);
        }
        let mut write_opts = rocksdb::WriteOptions::default();
        write_opts.set_sync(true);
        self.db.write_opt(batch, &write_opts).map_err(|e| Error::Store(format!("write: {e}")))
    }
}

/// An in-memory catalog store for tests. Clones share the same map, so a test can "restart"
/// by opening a second `Catalog` over a clone of the store. Nothing survives the process.
#[derive(Clone, Default)]
pub struct MemStore {
    map: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> MemStore {
        MemStore::default()
    }
}

impl CatalogStore for MemStore {
    fn load_all(&self) -> Result<Vec<(String, Vec<u8>)>, Error> {
        Ok(self.map.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn write_batch(&self, puts: Vec<(String, Vec<u8>)>, deletes: Vec<String>) -> Result<(), Error> {
        let mut map = self.map.lock();
        for (key, value) in puts {
            map.insert(key, value);
        }
        for key in deletes {
            map.remove(&key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both stores behave alike: batches apply puts and deletes, and `load_all` is ordered.
    fn check_store(store: &dyn CatalogStore) {
        assert!(store.load_all().unwrap().is_empty());
        store
            .write_batch(vec![("b".into(), b"2".to_vec()), ("a".into(), b"1".to_vec())], vec![])
            .unwrap();
        store.write_batch(vec![("c".into(), b"3".to_vec())], vec!["b".into()]).unwrap();
        assert_eq!(
            store.load_all().unwrap(),
            vec![("a".to_string(), b"1".to_vec()), ("c".to_string(), b"3".to_vec())]
        );
    }

    #[test]
    fn mem_store_batches() {
        check_store(&MemStore::new());
    }

    #[test]
    fn rocks_store_batches_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        check_store(&RocksStore::open(dir.path()).unwrap());
        let reopened = RocksStore::open(dir.path()).unwrap();
        assert_eq!(reopened.load_all().unwrap().len(), 2);
    }
}
