//! Ordered indexes: the [`OrderedIndex`] trait and its crossbeam-skiplist implementation.
//!
//! An index maps memcmp-ordered entry keys to records. None of the candidate structures exposes
//! leaf versions, so phantom protection re-runs scans at validation (DESIGN.md §2, §9); the
//! trait is all the engine needs, so the structure can be swapped.

use crate::record::Record;
use crossbeam_skiplist::SkipMap;
use std::ops::Bound;
use std::sync::Arc;

/// The result of [`OrderedIndex::insert_if_absent`].
pub(crate) enum Insert {
    /// The entry was added. `replaced_wssn` is the largest wssn of `UNLINKED` records that
    /// occupied the key and were removed on the way (0 if none).
    Inserted { replaced_wssn: u64 },
    /// The key already pointed at this very record.
    Present,
    /// Another record that is not `UNLINKED` occupies the key.
    Exists,
}

/// A concurrent ordered map from entry keys to records. All methods are linearizable per key.
pub(crate) trait OrderedIndex: Send + Sync {
    /// The record at `key`, if any (it may be `ABSENT` or `UNLINKED`).
    fn get(&self, key: &[u8]) -> Option<Arc<Record>>;
    /// Adds `key → record` unless a record that is not `UNLINKED` is there; `UNLINKED` records
    /// found at the key are removed first.
    fn insert_if_absent(&self, key: &[u8], record: &Arc<Record>) -> Insert;
    /// Removes the entry at `key` if it points at `record`.
    fn remove(&self, key: &[u8], record: &Arc<Record>);
    /// Calls `f(key, record)` in key order (descending if `reverse`) within the bounds until it
    /// returns false.
    fn range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        f: &mut dyn FnMut(&[u8], &Arc<Record>) -> bool,
    );
    /// The number of entries (including placeholders and records being removed).
    fn len(&self) -> usize;
}

/// A lock-free skip list index.
#[derive(Default)]
pub(crate) struct SkipListIndex {
    map: SkipMap<Vec<u8>, Arc<Record>>,
}

/// A fresh empty index of the default implementation.
pub(crate) fn new_index() -> Box<dyn OrderedIndex> {
    Box::<SkipListIndex>::default()
}

/// Whether `[lo, hi]` contains no key at all (crossbeam and BTreeMap want `lo <= hi`).
pub(crate) fn is_empty_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l), Bound::Excluded(h))
        | (Bound::Excluded(l), Bound::Included(h))
        | (Bound::Excluded(l), Bound::Excluded(h)) => l >= h,
        _ => false,
    }
}

impl OrderedIndex for SkipListIndex {
    fn get(&self, key: &[u8]) -> Option<Arc<Record>> {
        self.map.get(key).map(|e| e.value().clone())
    }

    fn insert_if_absent(&self, key: &[u8], record: &Arc<Record>) -> Insert {
        let mut replaced_wssn = 0;
        loop {
            if let Some(e) = self.map.get(key) {
                let existing = e.value();
                if Arc::ptr_eq(existing, record) {
                    return Insert::Present;
                }
                let tid = existing.tid.load();
                if !tid.is_unlinked() {
                    return Insert::Exists;
                }
                replaced_wssn = replaced_wssn.max(tid.wssn());
                e.remove();
                continue;
            }
            let e = self.map.get_or_insert(key.to_vec(), record.clone());
            if Arc::ptr_eq(e.value(), record) {
                return Insert::Inserted { replaced_wssn };
            }
            // Lost a race with another inserter: look again.
        }
    }

    fn remove(&self, key: &[u8], record: &Arc<Record>) {
        if let Some(e) = self.map.get(key) {
            if Arc::ptr_eq(e.value(), record) {
                e.remove();
            }
        }
    }

    fn range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        f: &mut dyn FnMut(&[u8], &Arc<Record>) -> bool,
    ) {
        if is_empty_range(lo, hi) {
            return;
        }
        let mut range = self.map.range::<[u8], _>((lo, hi));
        loop {
            let e = if reverse { range.next_back() } else { range.next() };
            let Some(e) = e else { return };
            if !f(e.key(), e.value()) {
                return;
            }
        }
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}
