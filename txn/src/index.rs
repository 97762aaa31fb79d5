//! Ordered indexes: the [`OrderedIndex`] trait and its implementation, [`TreeIndex`].
//!
//! An index maps memcmp-ordered entry keys to records. None of the candidate structures exposes
//! leaf versions, so phantom protection re-runs scans at validation (DESIGN.md §2, §9); the
//! trait is all the engine needs, so the structure can be swapped.
//!
//! ## [`TreeIndex`]
//!
//! A `BTreeMap` from inline keys ([`IKey`]: short keys are compared without chasing a pointer)
//! to records, behind a reader-writer lock, plus (primary indexes only) a sharded hash table of
//! the same records for exact-key [`OrderedIndex::get`]. Mutations (`insert_if_absent`,
//! `remove`) take the tree's write lock and then the key's hash shard's write lock, and update
//! both structures before releasing either, so every method is linearizable per key: a `get`
//! (shard read lock only) or a `range` (tree read lock only) sees a mutation entirely or not at
//! all. Lock order is always tree → shard; readers take one lock.
//!
//! A shard that grows rehashes all its entries while holding its lock (and the inserter holds
//! the tree's): entries keep their key's hash so that this reads no record, and the shards
//! take unequal shares of the keys so that they do not all grow at the same row count (see
//! `shard_of`).
//!
//! `range` never calls its callback while holding a lock: it copies a batch of entries under
//! the read lock (batches grow geometrically, so a scan that stops after one row copies
//! almost nothing), releases the lock, calls back, and resumes after the last key. Each entry is
//! still reported as it was at some point during the call, in key order, which is all scans and
//! their validation need (a callback may thus block on record locks, or commit other
//! transactions, without deadlocking against the index).
//!
//! The previous implementation was a crossbeam skip list with `Vec<u8>` keys: every comparison
//! chased a heap pointer, and a point read on a 1 M-row table cost ~20 cache misses. The tree
//! plus hash costs about four (hash control bytes, bucket, record, row).

use crate::record::Record;
use hashbrown::HashTable;
use parking_lot::RwLock;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{btree_map, BTreeMap};
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::ops::{Bound, Deref};
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
    /// returns false. No lock of the index is held while `f` runs.
    fn range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        f: &mut dyn FnMut(&[u8], &Arc<Record>) -> bool,
    );
    /// Like `range` (ascending), but `f` may run under the index's read lock: it must not
    /// block, nor touch this index. For validation, whose callback only loads TIDs.
    fn range_quick(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8], &Arc<Record>) -> bool,
    ) {
        self.range(lo, hi, false, f)
    }
    /// The number of entries (including placeholders and records being removed).
    fn len(&self) -> usize;
    /// Recovery's bulk path ([`crate::Engine::replay_bulk`]): adds every entry of `entries`
    /// (sorted by key, keys distinct) whose key is not in the index, taking each lock once
    /// instead of once per entry, and returns the entries whose key was present, untouched
    /// (the caller resolves them). Linearizable as a whole, not per entry: meant for an index
    /// that nothing else uses meanwhile.
    fn bulk_insert(&self, entries: Vec<(IKey, Arc<Record>)>) -> Vec<(IKey, Arc<Record>)>;
}

/// Bytes of a key stored inline in an [`IKey`].
const INLINE: usize = 22;

/// An immutable byte string that keeps keys of up to [`INLINE`] bytes inline (24 bytes in all),
/// so that comparing index keys does not chase a pointer. Ordered, compared and hashed as the
/// byte slice it holds (so `BTreeMap<IKey, _>` can be queried with `&[u8]`).
#[derive(Clone)]
pub enum IKey {
    /// `len`, bytes (only the first `len` meaningful).
    Inline(u8, [u8; INLINE]),
    /// A longer key.
    Heap(Box<[u8]>),
}

impl IKey {
    /// `bytes`, inline if short.
    pub fn new(bytes: &[u8]) -> IKey {
        if bytes.len() <= INLINE {
            let mut buf = [0; INLINE];
            buf[..bytes.len()].copy_from_slice(bytes);
            IKey::Inline(bytes.len() as u8, buf)
        } else {
            IKey::Heap(bytes.into())
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            IKey::Inline(len, buf) => &buf[..*len as usize],
            IKey::Heap(b) => b,
        }
    }
}

impl Deref for IKey {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for IKey {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for IKey {
    #[inline]
    fn eq(&self, other: &IKey) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for IKey {}

impl PartialEq<[u8]> for IKey {
    #[inline]
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl PartialOrd for IKey {
    #[inline]
    fn partial_cmp(&self, other: &IKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IKey {
    #[inline]
    fn cmp(&self, other: &IKey) -> Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl std::hash::Hash for IKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl fmt::Debug for IKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

/// Hash shards of a primary [`TreeIndex`].
const SHARDS: usize = 64;
/// Hash values map to shards through this many slots ([`shard_of`]).
const SLOTS: usize = 4096;

/// An entry of a shard: the key's hash, kept so that growing the table rehashes without
/// reading a single record (a record and its key are a cache miss each: 140 ns per entry,
/// against 25 with the hash at hand), and the record.
type Entry = (u64, Arc<Record>);

/// One hash shard, on its own cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Shard(RwLock<HashTable<Entry>>);

/// The shard of hash `h`. Shards are weighted unevenly, shard `i` by `2^(i / SHARDS)` (the
/// largest takes twice the smallest's share of the slots): with even shares, every shard of a
/// growing table reached its load limit at the same row count, and their rehashes followed
/// one another while the inserts waited (at 7.3 M rows, 64 rehashes of 16 ms each in a row,
/// a one-second stall; BENCHMARKS.md). Spread over an octave, the shards grow one at a time,
/// evenly over the table's growth.
#[inline]
fn shard_of(h: u64) -> usize {
    // hashbrown takes the bucket from the low bits and the tag from the top 7: take the slot
    // from bits in between so that neither loses entropy within a shard.
    usize::from(SHARD_MAP[(h >> 40) as usize & (SLOTS - 1)])
}

/// Slot → shard for [`shard_of`]. Shard `i` takes the slots `s` with
/// `2^(i/SHARDS) - 1 <= s / SLOTS < 2^((i+1)/SHARDS) - 1`: its share of the slots is
/// `2^((i+1)/SHARDS) - 2^(i/SHARDS)`, proportional to `2^(i/SHARDS)`.
static SHARD_MAP: [u8; SLOTS] = shard_map();

const fn shard_map() -> [u8; SLOTS] {
    /// 2^(1/64).
    const STEP: f64 = 1.010_889_286_051_700_5;
    const { assert!(SHARDS == 64, "STEP is 2^(1/SHARDS), and shard numbers fit a u8") };
    let mut map = [0u8; SLOTS];
    let (mut shard, mut start, mut power) = (0, 0, 1.0);
    while shard < SHARDS {
        power *= STEP;
        let end =
            if shard == SHARDS - 1 { SLOTS } else { ((power - 1.0) * SLOTS as f64 + 0.5) as usize };
        while start < end {
            map[start] = shard as u8;
            start += 1;
        }
        shard += 1;
    }
    map
}

/// The exact-key hash of a primary index. Only valid where every entry key is its record's
/// primary key, which is what makes storing just the record enough.
struct Hashed {
    /// Per-index random seed of [`hash_key`].
    seed: u64,
    shards: Box<[Shard]>,
}

/// `a * b` as 128 bits, folded to 64 (foldhash's and wyhash's mixing step).
#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// A fast seeded hash of a key, 8 bytes at a time (the multiply-fold of foldhash and wyhash;
/// SipHash, std's default, cost a fifth of a point read). Not collision-resistant against
/// someone who knows the seed, like hashbrown's default hasher; callers pick random seeds (one
/// per index here, one per replay in recovery).
#[inline]
pub fn hash_key(seed: u64, key: &[u8]) -> u64 {
    const K0: u64 = 0x243f_6a88_85a3_08d3;
    const K1: u64 = 0x1319_8a2e_0370_7344;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(K0);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        h = fold_mul(h ^ u64::from_le_bytes(c.try_into().expect("8 bytes")), K1);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        h = fold_mul(h ^ tail(rest), K1);
    }
    fold_mul(h, K0)
}

/// The 1–7 bytes at the end of a key as one word, read with two overlapping loads (or three
/// byte loads) instead of a copy into a zeroed buffer: that copy was a call to `memcpy` whose
/// byte stores the next 8-byte load could not forward, the hottest spot of replay's readers.
/// For a given length the word determines the bytes (the loads cover them all), and the length
/// is in the hash's seed: the tail loses nothing of the key.
#[inline(always)]
fn tail(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    if n >= 4 {
        let lo = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
        let hi = u32::from_le_bytes(rest[n - 4..].try_into().expect("4 bytes"));
        u64::from(lo) | (u64::from(hi) << 32)
    } else {
        u64::from(rest[0]) | (u64::from(rest[n / 2]) << 8) | (u64::from(rest[n - 1]) << 16)
    }
}

impl Hashed {
    fn new() -> Hashed {
        Hashed {
            seed: RandomState::new().hash_one(0x5eed_u64),
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }

    #[inline]
    fn locate(&self, key: &[u8]) -> (u64, &RwLock<HashTable<Entry>>) {
        let h = hash_key(self.seed, key);
        (h, &self.shards[shard_of(h)].0)
    }

    /// Adds `records` (keys absent from the hash) shard by shard, each shard locked once.
    fn fill(&self, records: Vec<Arc<Record>>) {
        let mut by_shard: Vec<Vec<Entry>> = (0..SHARDS).map(|_| Vec::new()).collect();
        for r in records {
            let h = hash_key(self.seed, r.key.as_slice());
            by_shard[shard_of(h)].push((h, r));
        }
        for (shard, list) in self.shards.iter().zip(by_shard) {
            let mut table = shard.0.write();
            table.reserve(list.len(), stored_hash);
            for entry in list {
                table.insert_unique(entry.0, entry, stored_hash);
            }
        }
    }
}

/// The hash an [`Entry`] keeps (hashbrown's rehash calls this for every entry as it grows).
fn stored_hash(entry: &Entry) -> u64 {
    entry.0
}

/// The ordered index: a locked `BTreeMap` plus, for primary indexes, a sharded hash (see the
/// module doc).
pub(crate) struct TreeIndex {
    tree: RwLock<BTreeMap<IKey, Arc<Record>>>,
    hashed: Option<Hashed>,
}

/// A fresh empty primary index: entry keys are the records' primary keys, so exact-key gets go
/// through a hash table.
pub(crate) fn new_primary_index() -> Box<dyn OrderedIndex> {
    Box::new(TreeIndex { tree: RwLock::new(BTreeMap::new()), hashed: Some(Hashed::new()) })
}

/// A fresh empty secondary index (entry keys differ from the records' keys; no hash).
pub(crate) fn new_secondary_index() -> Box<dyn OrderedIndex> {
    Box::new(TreeIndex { tree: RwLock::new(BTreeMap::new()), hashed: None })
}

/// Whether `[lo, hi]` contains no key at all (BTreeMap wants `lo <= hi`).
pub(crate) fn is_empty_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l), Bound::Excluded(h))
        | (Bound::Excluded(l), Bound::Included(h))
        | (Bound::Excluded(l), Bound::Excluded(h)) => l >= h,
        _ => false,
    }
}

/// First and largest batch sizes of [`TreeIndex::range`].
const FIRST_BATCH: usize = 2;
const MAX_BATCH: usize = 256;

impl TreeIndex {
    /// Removes `key` from the hash (the caller holds the tree's write lock).
    fn unhash(&self, key: &[u8], record: &Arc<Record>) {
        if let Some(h) = &self.hashed {
            let (hash, shard) = h.locate(key);
            if let Ok(e) = shard.write().find_entry(hash, |e| Arc::ptr_eq(&e.1, record)) {
                e.remove();
            }
        }
    }
}

impl OrderedIndex for TreeIndex {
    #[inline]
    fn get(&self, key: &[u8]) -> Option<Arc<Record>> {
        match &self.hashed {
            Some(h) => {
                let (hash, shard) = h.locate(key);
                shard
                    .read()
                    .find(hash, |e| e.0 == hash && e.1.key.as_slice() == key)
                    .map(|e| e.1.clone())
            }
            None => self.tree.read().get(key).cloned(),
        }
    }

    fn insert_if_absent(&self, key: &[u8], record: &Arc<Record>) -> Insert {
        debug_assert!(self.hashed.is_none() || record.key.as_slice() == key);
        let mut tree = self.tree.write();
        let mut replaced_wssn = 0;
        match tree.entry(IKey::new(key)) {
            btree_map::Entry::Vacant(e) => {
                e.insert(record.clone());
            }
            btree_map::Entry::Occupied(mut e) => {
                let existing = e.get();
                if Arc::ptr_eq(existing, record) {
                    return Insert::Present;
                }
                let tid = existing.tid.load();
                if !tid.is_unlinked() {
                    return Insert::Exists;
                }
                replaced_wssn = tid.wssn();
                let old = e.insert(record.clone());
                self.unhash(key, &old);
            }
        }
        if let Some(h) = &self.hashed {
            let (hash, shard) = h.locate(key);
            shard.write().insert_unique(hash, (hash, record.clone()), stored_hash);
        }
        Insert::Inserted { replaced_wssn }
    }

    fn remove(&self, key: &[u8], record: &Arc<Record>) {
        let mut tree = self.tree.write();
        if tree.get(key).is_some_and(|r| Arc::ptr_eq(r, record)) {
            tree.remove(key);
            self.unhash(key, record);
        }
    }

    fn range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        f: &mut dyn FnMut(&[u8], &Arc<Record>) -> bool,
    ) {
        let mut batch: Vec<(IKey, Arc<Record>)> = Vec::new();
        let mut want = FIRST_BATCH;
        // The last key reported: the next batch starts after it.
        let mut resume: Option<IKey> = None;
        loop {
            let (l, h) = match (&resume, reverse) {
                (None, _) => (lo, hi),
                (Some(k), false) => (Bound::Excluded(k.as_slice()), hi),
                (Some(k), true) => (lo, Bound::Excluded(k.as_slice())),
            };
            if is_empty_range(l, h) {
                return;
            }
            {
                let tree = self.tree.read();
                let entries = tree.range::<[u8], _>((l, h));
                let copy = |(k, r): (&IKey, &Arc<Record>)| (k.clone(), r.clone());
                if reverse {
                    batch.extend(entries.rev().take(want).map(copy));
                } else {
                    batch.extend(entries.take(want).map(copy));
                }
            }
            let full = batch.len() == want;
            for (k, r) in &batch {
                if !f(k, r) {
                    return;
                }
            }
            if !full {
                return;
            }
            resume = batch.pop().map(|(k, _)| k);
            batch.clear();
            want = (want * 4).min(MAX_BATCH);
        }
    }

    fn range_quick(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8], &Arc<Record>) -> bool,
    ) {
        if is_empty_range(lo, hi) {
            return;
        }
        for (k, r) in self.tree.read().range::<[u8], _>((lo, hi)) {
            if !f(k, r) {
                return;
            }
        }
    }

    fn len(&self) -> usize {
        self.tree.read().len()
    }

    fn bulk_insert(&self, entries: Vec<(IKey, Arc<Record>)>) -> Vec<(IKey, Arc<Record>)> {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "sorted, distinct keys");
        let mut tree = self.tree.write();
        if tree.is_empty() {
            // A replay without checkpoint: one bulk build (`BTreeMap::from_iter` of sorted
            // input appends leaf by leaf), the hash filled meanwhile on a second thread.
            let records: Option<Vec<_>> =
                self.hashed.as_ref().map(|_| entries.iter().map(|(_, r)| r.clone()).collect());
            std::thread::scope(|s| {
                if let (Some(h), Some(records)) = (&self.hashed, records) {
                    s.spawn(move || h.fill(records));
                }
                *tree = entries.into_iter().collect();
            });
            return Vec::new();
        }
        let mut present = Vec::new();
        let mut added = Vec::with_capacity(entries.len());
        for (key, record) in entries {
            match tree.entry(key) {
                btree_map::Entry::Vacant(e) => {
                    added.push(record.clone());
                    e.insert(record);
                }
                btree_map::Entry::Occupied(e) => present.push((e.key().clone(), record)),
            }
        }
        if let Some(h) = &self.hashed {
            h.fill(added);
        }
        present
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tid::Tid;
    use wal::Ssn;

    fn rec(key: &[u8]) -> Arc<Record> {
        let r = Record::placeholder(key, Some(crate::Row::from(vec![1])));
        r.tid.store_unlocked(Tid::live(Ssn(1)));
        r
    }

    fn keys(idx: &dyn OrderedIndex, lo: Bound<&[u8]>, hi: Bound<&[u8]>, rev: bool) -> Vec<Vec<u8>> {
        if !rev {
            let mut quick = Vec::new();
            idx.range_quick(lo, hi, &mut |k, _| {
                quick.push(k.to_vec());
                true
            });
            let mut out = keys(idx, lo, hi, true);
            out.reverse();
            assert_eq!(quick, out, "range_quick and range agree");
        }
        let mut out = Vec::new();
        idx.range(lo, hi, rev, &mut |k, r| {
            assert_eq!(idx.get(k).as_ref().map(Arc::as_ptr), Some(Arc::as_ptr(r)));
            out.push(k.to_vec());
            true
        });
        out
    }

    #[test]
    fn ikey_orders_like_bytes() {
        let long = vec![7u8; 40];
        let samples: Vec<&[u8]> =
            vec![b"", b"a", b"ab", &[0xFF; 22], &[0xFF; 23], &long, &[7; 22], &[7; 23]];
        for a in &samples {
            let ka = IKey::new(a);
            assert_eq!(ka.as_slice(), *a);
            for b in &samples {
                assert_eq!(ka.cmp(&IKey::new(b)), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
        assert_eq!(std::mem::size_of::<IKey>(), 24);
    }

    #[test]
    fn batched_ranges_cover_everything_in_order() {
        for idx in [new_primary_index(), new_secondary_index()] {
            // Keys of mixed lengths (inline and heap), 0..1000 big-endian with a long suffix on
            // every third one.
            let mut all: Vec<Vec<u8>> = (0u32..1000)
                .map(|i| {
                    let mut k = i.to_be_bytes().to_vec();
                    if i % 3 == 0 {
                        k.extend_from_slice(&[9; 30]);
                    }
                    k
                })
                .collect();
            for k in &all {
                assert!(matches!(idx.insert_if_absent(k, &rec(k)), Insert::Inserted { .. }));
            }
            all.sort();
            assert_eq!(idx.len(), 1000);
            assert_eq!(keys(&*idx, Bound::Unbounded, Bound::Unbounded, false), all);
            let mut rev = all.clone();
            rev.reverse();
            assert_eq!(keys(&*idx, Bound::Unbounded, Bound::Unbounded, true), rev);
            let (lo, hi) = (&all[100], &all[700]);
            let inner: Vec<_> = all[101..700].to_vec();
            let got = keys(&*idx, Bound::Excluded(lo), Bound::Excluded(hi), false);
            assert_eq!(got, inner);
            let mut got = keys(&*idx, Bound::Excluded(lo), Bound::Excluded(hi), true);
            got.reverse();
            assert_eq!(got, inner);
            assert!(keys(&*idx, Bound::Included(hi), Bound::Included(lo), false).is_empty());
            assert!(keys(&*idx, Bound::Excluded(lo), Bound::Excluded(lo), true).is_empty());
            // Stopping early reports exactly the entries accepted.
            let mut n = 0;
            idx.range(Bound::Unbounded, Bound::Unbounded, false, &mut |_, _| {
                n += 1;
                n < 37
            });
            assert_eq!(n, 37);
        }
    }

    #[test]
    fn insert_remove_and_unlinked_replacement() {
        for idx in [new_primary_index(), new_secondary_index()] {
            let a = rec(b"k");
            assert!(matches!(
                idx.insert_if_absent(b"k", &a),
                Insert::Inserted { replaced_wssn: 0 }
            ));
            assert!(matches!(idx.insert_if_absent(b"k", &a), Insert::Present));
            let b = rec(b"k");
            assert!(matches!(idx.insert_if_absent(b"k", &b), Insert::Exists));
            idx.remove(b"k", &b); // not the record at the key: no-op
            assert!(Arc::ptr_eq(&idx.get(b"k").unwrap(), &a));
            // Unlink `a`: a new record replaces it and learns its wssn.
            a.tid.lock().unwrap();
            a.tid.store_unlocked(Tid::deleted(Ssn(5)));
            assert!(matches!(
                idx.insert_if_absent(b"k", &b),
                Insert::Inserted { replaced_wssn: 5 }
            ));
            assert!(Arc::ptr_eq(&idx.get(b"k").unwrap(), &b));
            assert_eq!(idx.len(), 1);
            idx.remove(b"k", &b);
            assert!(idx.get(b"k").is_none());
            assert_eq!(idx.len(), 0);
        }
    }

    /// A callback may mutate the index it is scanning (no lock is held while it runs).
    #[test]
    fn callback_may_mutate_the_index() {
        let idx = new_primary_index();
        for i in 0u8..50 {
            idx.insert_if_absent(&[i], &rec(&[i]));
        }
        let mut seen = 0;
        idx.range(Bound::Unbounded, Bound::Unbounded, false, &mut |k, r| {
            seen += 1;
            idx.remove(k, r);
            idx.insert_if_absent(&[k[0], 1], &rec(&[k[0], 1]));
            true
        });
        // Every original key once; some of the new keys, depending on the batch boundaries.
        assert!((50..=100).contains(&seen), "{seen}");
        assert_eq!(idx.len(), 50);
    }

    /// Writers churn keys (insert, unlink, replace, remove) while readers check that the hash
    /// and the tree agree: every record a get returns holds that key, ranges are strictly
    /// ordered, and at the end both structures hold exactly the surviving keys.
    #[test]
    fn concurrent_churn_keeps_hash_and_tree_in_step() {
        use std::sync::atomic::{AtomicBool, Ordering as O};
        let idx: Arc<dyn OrderedIndex> = Arc::from(new_primary_index());
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0u8..2)
            .map(|w| {
                let idx = idx.clone();
                std::thread::spawn(move || {
                    for round in 0..2_000u32 {
                        let k = [w, (round % 97) as u8];
                        let r = rec(&k);
                        match idx.insert_if_absent(&k, &r) {
                            Insert::Inserted { .. } => {}
                            _ => {
                                let old = idx.get(&k).expect("present");
                                if round % 2 == 0 {
                                    idx.remove(&k, &old);
                                } else {
                                    old.tid.lock().unwrap();
                                    old.tid.store_unlocked(Tid::deleted(Ssn(2)));
                                    let got = idx.insert_if_absent(&k, &r);
                                    assert!(matches!(got, Insert::Inserted { replaced_wssn: 2 }));
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (idx, stop) = (idx.clone(), stop.clone());
                std::thread::spawn(move || {
                    // Bounded, so that a spinning reader never hogs a core that another test
                    // (say, one waiting out a TID lock with yields) needs.
                    for _ in 0..2_000 {
                        if stop.load(O::Relaxed) {
                            break;
                        }
                        for w in 0u8..2 {
                            for b in 0u8..97 {
                                if let Some(r) = idx.get(&[w, b]) {
                                    assert_eq!(r.key.as_slice(), &[w, b]);
                                }
                            }
                        }
                        let mut last: Option<Vec<u8>> = None;
                        idx.range(Bound::Unbounded, Bound::Unbounded, false, &mut |k, r| {
                            assert_eq!(r.key.as_slice(), k);
                            assert!(last.as_deref().is_none_or(|l| l < k), "ordered");
                            last = Some(k.to_vec());
                            true
                        });
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, O::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        let mut in_tree = Vec::new();
        idx.range(Bound::Unbounded, Bound::Unbounded, false, &mut |k, r| {
            assert!(Arc::ptr_eq(&idx.get(k).unwrap(), r), "hash and tree agree");
            in_tree.push(k.to_vec());
            true
        });
        assert_eq!(in_tree.len(), idx.len());
        for w in 0u8..2 {
            for b in 0u8..97 {
                assert_eq!(idx.get(&[w, b]).is_some(), in_tree.contains(&vec![w, b]));
            }
        }
    }

    #[test]
    fn hash_spreads_short_big_endian_keys() {
        let seed = 12345;
        let mut shards = [0u32; SHARDS];
        let mut low = std::collections::HashSet::new();
        for i in 0u64..640_000 {
            let h = hash_key(seed, &i.to_be_bytes());
            shards[shard_of(h)] += 1;
            if i < 64_000 {
                low.insert(h & 0xFFFF);
            }
        }
        // Shard i's share grows as 2^(i/64): from 1/91.8 of the keys to twice that.
        let expected = |i: usize| 640_000.0 * (i as f64 / 64.0).exp2() / 91.83;
        for (i, &n) in shards.iter().enumerate() {
            let ratio = f64::from(n) / expected(i);
            assert!((0.9..1.1).contains(&ratio), "shard {i}: {n} keys, {ratio:.2} of its share");
        }
        assert!(shards[63] > shards[0] * 19 / 10, "{shards:?}");
        assert!(low.len() > 39_000, "low bits collide: {}", low.len());
        assert_ne!(hash_key(seed, b"ab"), hash_key(seed, b"ab\0"));
        assert_ne!(hash_key(seed, b""), hash_key(seed, b"\0"));
    }

    /// Keys that differ in any one byte, or in length, hash differently: the short tail's
    /// overlapping loads lose no byte. All keys of up to 7 bytes over a 3-letter alphabet, and
    /// every single-byte change of keys up to 16 bytes long.
    #[test]
    fn hash_tells_short_keys_apart() {
        let mut keys = std::collections::BTreeSet::new();
        for len in 0..=7u32 {
            for n in 0..3usize.pow(len) {
                keys.insert((0..len).map(|i| (n / 3usize.pow(i) % 3) as u8).collect::<Vec<u8>>());
            }
        }
        for len in 1..=16 {
            for i in 0..len {
                for v in [0u8, 1, 0xFF] {
                    let mut key = vec![0x55; len];
                    key[i] = v;
                    keys.insert(key);
                }
            }
        }
        let hashes: std::collections::HashSet<u64> = keys.iter().map(|k| hash_key(99, k)).collect();
        assert_eq!(hashes.len(), keys.len(), "two keys share a hash");
    }
}
