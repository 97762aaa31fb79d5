//! Test doubles: [`MapTarget`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use wal::Ssn;

use crate::target::Target;

/// Versions by `(table, key)`: the SSN and the row (`None` = a delete's tombstone).
pub type Versions = BTreeMap<(u32, Vec<u8>), (Ssn, Option<Vec<u8>>)>;

/// An in-memory [`Target`]: a map of `(table, key)` to `(ssn, row)`, last writer wins,
/// deletes kept as tombstones.
#[derive(Debug, Default)]
pub struct MapTarget {
    /// Every version installed so far (tombstones included).
    pub map: Mutex<Versions>,
}

impl MapTarget {
    /// An empty target.
    pub fn new() -> MapTarget {
        MapTarget::default()
    }

    /// Every version, tombstones included.
    pub fn versions(&self) -> Versions {
        self.map.lock().expect("MapTarget poisoned").clone()
    }

    /// The live rows: versions that are not tombstones.
    pub fn rows(&self) -> BTreeMap<(u32, Vec<u8>), Vec<u8>> {
        self.versions().into_iter().filter_map(|(k, (_, row))| row.map(|r| (k, r))).collect()
    }
}

impl Target for MapTarget {
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String> {
        let mut map = self.map.lock().map_err(|_| "MapTarget poisoned".to_string())?;
        let slot = map.entry((table, key.to_vec())).or_insert((Ssn::ZERO, None));
        if ssn > slot.0 {
            *slot = (ssn, row.map(<[u8]>::to_vec));
        }
        Ok(())
    }
}
