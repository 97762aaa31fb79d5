//! The commit protocol, one function per phase:
//!
//! 1. [`lock`]: lock the write set in (table id, key) order; publish insert placeholders and new
//!    secondary entries (uniqueness is decided here).
//! 2. [`validate`]: every read's TID is unchanged and not locked by another transaction; every
//!    scan, re-run over the range it covered, meets the same records with the same TIDs.
//! 3. allocate: `base` = max wssn of everything read or written (and the written tables'
//!    `delete_ssn` and `cmd_read_ssn`); `ssn = log.reserve(buffer, base, len).ssn`.
//! 4. [`install`]: publish rows with TID = ssn and unlock; remove replaced and deleted entries.
//!    While a checkpoint is active, first preserve each replaced version its cut covers.
//!
//! Steps 3 and 4 of a writer run inside the checkpoint's install gate (module `checkpoint`).
//!
//! On a failure in 1 or 2, [`Locked::rollback`] unlocks and unlinks what 1 published.

use crate::checkpoint::{thread_stripe, Cow};
use crate::engine::{Secondary, Table};
use crate::error::Error;
use crate::index::Insert;
use crate::record::Record;
use crate::sync::{fence, Ordering};
use crate::tid::{LockError, Tid};
use crate::transaction::{as_ref, ScanEntry, TableWrites, Transaction, WriteKind};
use crate::{CommitInfo, Key, Row};
use std::collections::BTreeMap;
use std::sync::Arc;
use wal::record::encode_value_entries;
use wal::{RecordKind, Ssn, ValueEntry};

/// One locked write.
struct Item {
    kind: WriteKind,
    key: Key,
    record: Arc<Record>,
    /// The TID before locking (restored on abort and for lock-only entries).
    prior: Tid,
    row: Option<Row>,
    /// A deferred update's function, applied (and the item made an `Update`) once locked.
    deferred: Option<crate::transaction::DeferredFn>,
    /// The function applied at the statement to the version with this TID.
    computed: Option<(Tid, Row)>,
    /// Secondary entries to remove at install (old keys of updates, all keys of deletes).
    stale: Vec<(Arc<Secondary>, Vec<u8>)>,
}

/// The state built by the lock phase.
#[derive(Default)]
struct Locked {
    groups: Vec<(Arc<Table>, Vec<Item>)>,
    /// Secondary entries added at lock time, removed again on abort.
    added: Vec<(Arc<Secondary>, Vec<u8>, Arc<Record>)>,
    /// Addresses of every record we hold `LOCK` on, sorted after the lock phase.
    locked: Vec<usize>,
    /// Addresses of our insert placeholders, sorted after the lock phase.
    placeholders: Vec<usize>,
    /// Placeholders published in the primary index so far (rollback unlinks exactly these).
    published: Vec<usize>,
    /// Secondary entries of our own locked records that we took over (restored on abort).
    taken: Vec<(Arc<Secondary>, Vec<u8>, Arc<Record>)>,
    base: u64,
    /// Entries of the value record (every write but lock-only ones), 0 if nothing is logged.
    logged: usize,
}

fn addr(record: &Arc<Record>) -> usize {
    Arc::as_ptr(record) as usize
}

impl Locked {
    fn holds(&self, record: &Arc<Record>) -> bool {
        self.locked.binary_search(&addr(record)).is_ok()
    }

    fn is_placeholder(&self, record: &Arc<Record>) -> bool {
        self.placeholders.binary_search(&addr(record)).is_ok()
    }

    /// Whether `key → record` in `index` is an entry this transaction added (a placeholder's, or
    /// an updated record's new secondary key).
    fn added_entry(
        &self,
        index: Option<&Arc<Secondary>>,
        key: &[u8],
        record: &Arc<Record>,
    ) -> bool {
        self.is_placeholder(record)
            || index.is_some_and(|s| {
                self.added
                    .iter()
                    .any(|(a, k, r)| Arc::ptr_eq(a, s) && k == key && Arc::ptr_eq(r, record))
            })
    }

    /// Whether `holder` is one of our locked records and drops `key` from `s` at install.
    fn gives_up(&self, s: &Arc<Secondary>, key: &[u8], holder: &Arc<Record>) -> bool {
        self.holds(holder)
            && self.groups.iter().flat_map(|(_, items)| items).any(|it| {
                Arc::ptr_eq(&it.record, holder)
                    && it.stale.iter().any(|(a, k)| Arc::ptr_eq(a, s) && k == key)
            })
    }

    /// Whether we took over an entry of `record` in secondary `index`.
    fn was_taken(&self, index: Option<&Arc<Secondary>>, record: &Arc<Record>) -> bool {
        index.is_some_and(|s| {
            self.taken.iter().any(|(a, _, r)| Arc::ptr_eq(a, s) && Arc::ptr_eq(r, record))
        })
    }

    /// Undoes the lock phase: removes added entries, restores taken-over ones, unlinks
    /// placeholders, unlocks the rest.
    fn rollback(mut self) {
        self.published.sort_unstable();
        self.locked.sort_unstable();
        for (s, key, record) in self.added.iter().rev() {
            s.index.remove(key, record);
        }
        for (s, key, record) in self.taken.iter().rev() {
            let _ = s.index.insert_if_absent(key, record);
        }
        for (table, items) in self.groups.iter().rev() {
            for it in items.iter().rev() {
                if it.kind == WriteKind::Insert {
                    if self.published.binary_search(&addr(&it.record)).is_ok() {
                        it.record.tid.store_unlocked(Tid::ABANDONED);
                        table.primary.remove(&it.key, &it.record);
                    }
                } else if self.locked.binary_search(&addr(&it.record)).is_ok() {
                    it.record.tid.store_unlocked(it.prior);
                }
            }
        }
    }
}

/// Publishes `key → record` in secondary `s`, recording it for rollback. If the key is held by
/// one of our own locked records that gives it up at install (a unique key moved to another row
/// in this transaction), the entry is taken over. Conflict if any other live record holds it.
fn add_secondary(
    st: &mut Locked,
    table: &Table,
    s: &Arc<Secondary>,
    key: Vec<u8>,
    record: &Arc<Record>,
) -> Result<(), Error> {
    loop {
        match s.index.insert_if_absent(&key, record) {
            Insert::Inserted { .. } => {
                st.added.push((s.clone(), key, record.clone()));
                return Ok(());
            }
            Insert::Present => return Ok(()),
            Insert::Exists => {
                let holder = s.index.get(&key);
                let ours = holder.as_ref().is_some_and(|h| st.gives_up(s, &key, h));
                match holder {
                    Some(h) if ours => {
                        s.index.remove(&key, &h);
                        st.taken.push((s.clone(), key.clone(), h));
                    }
                    _ => return Err(Error::conflict(table.id, "unique key taken at commit")),
                }
            }
        }
    }
}

/// Phase 1. Pushes each item into `st` as soon as it is locked, so that rollback covers it.
/// First pass: lock existing records in (table id, key) order (the only blocking step). Second
/// pass: publish insert placeholders and new secondary entries (never blocking: a clash is a
/// conflict at once).
fn lock(writes: BTreeMap<crate::TableId, TableWrites>, st: &mut Locked) -> Result<(), Error> {
    for (_, w) in writes {
        let table = w.table;
        table.check_live()?;
        let mut items = Vec::with_capacity(w.entries.len());
        for (key, e) in w.entries {
            if e.kind != WriteKind::LockOnly {
                st.logged += 1;
            }
            let record = match e.record {
                Some(r) => r,
                // The row rides in the placeholder: readers never look at the row of an
                // ABSENT record, and install then only stores the TID.
                None => Record::placeholder(&key, e.row.clone()),
            };
            items.push(Item {
                kind: e.kind,
                key,
                record,
                prior: Tid::PLACEHOLDER,
                row: e.row,
                deferred: e.deferred,
                computed: e.computed,
                stale: Vec::new(),
            });
        }
        st.groups.push((table, items));
    }
    // Pass 1: lock existing records.
    for gi in 0..st.groups.len() {
        let (table, items) = &mut st.groups[gi];
        let secondaries = table.secondaries.load();
        for it in items.iter_mut().filter(|it| it.kind != WriteKind::Insert) {
            it.prior = match it.record.tid.lock() {
                Ok(prior) => prior,
                Err(LockError::Busy) => {
                    return Err(Error::conflict(table.id, "record stayed locked"))
                }
                Err(LockError::Unlinked) => {
                    return Err(Error::conflict(table.id, "record deleted concurrently"))
                }
            };
            st.base = st.base.max(it.prior.wssn());
            st.locked.push(addr(&it.record));
            if it.kind == WriteKind::Deferred {
                // The deferred update reads the row current now, under our lock: the base
                // above covers it as it covers a read.
                let f = it.deferred.take().expect("a deferred entry has its function");
                let new = match it.computed.take() {
                    // Unchanged since the statement (TIDs never repeat): the same result.
                    Some((tid, row)) if tid == it.prior => row,
                    _ => {
                        let old = it.record.row_locked().expect("a locked live record has a row");
                        Row::from(crate::transaction::apply_deferred(&f, table.id, &old)?)
                    }
                };
                it.kind = WriteKind::Update;
                it.row = Some(new);
            }
            if it.kind == WriteKind::LockOnly || secondaries.is_empty() {
                continue;
            }
            let old = it.record.row_locked().expect("a locked live record has a row");
            for s in secondaries.iter() {
                let old_key = s.entry_key(&old, &it.key);
                if it.row.as_ref().is_none_or(|new| s.entry_key(new, &it.key) != old_key) {
                    it.stale.push((s.clone(), old_key));
                }
            }
        }
    }
    st.locked.sort_unstable();
    // Pass 2: placeholders and new secondary entries.
    for gi in 0..st.groups.len() {
        let table = st.groups[gi].0.clone();
        let secondaries = table.secondaries.load_full();
        for ii in 0..st.groups[gi].1.len() {
            let it = &st.groups[gi].1[ii];
            let Some(row) = &it.row else { continue };
            let (kind, record) = (it.kind, it.record.clone());
            // The secondary entries to publish: every index for an insert, the changed ones for
            // an update (computed while `it` is borrowed: no copy of the primary key).
            let entries: Vec<(Arc<Secondary>, Vec<u8>)> = if kind == WriteKind::Insert {
                secondaries.iter().map(|s| (s.clone(), s.entry_key(row, &it.key))).collect()
            } else {
                it.stale.iter().map(|(s, _)| (s.clone(), s.entry_key(row, &it.key))).collect()
            };
            if kind == WriteKind::Insert {
                match table.primary.insert_if_absent(&it.key, &record) {
                    Insert::Inserted { replaced_wssn } => st.base = st.base.max(replaced_wssn),
                    Insert::Present | Insert::Exists => {
                        return Err(Error::conflict(table.id, "key inserted concurrently"))
                    }
                }
                // From here on rollback must unlink it.
                st.groups[gi].1[ii].prior = Tid::PLACEHOLDER;
                st.published.push(addr(&record));
                st.placeholders.push(addr(&record));
            }
            for (s, key) in entries {
                add_secondary(st, &table, &s, key, &record)?;
            }
        }
    }
    st.placeholders.sort_unstable();
    st.locked.extend_from_slice(&st.placeholders);
    st.locked.sort_unstable();
    Ok(())
}

/// Phase 2, for projected reads of records we did not lock in phase 1 and whose TID changed
/// since: lock them now (as lock-only items: released unchanged at install, restored on
/// rollback), so that validation can compare their projections under our lock. Then the caller
/// validates everything again: the serialization point moves to after these locks, so every
/// read must hold there. Each round locks at least one more record, so the loop ends. The
/// bounded lock wait makes an out-of-order lock a conflict, never a deadlock.
fn lock_late(txn: &Transaction, late: &[usize], st: &mut Locked) -> Result<(), Error> {
    for &i in late {
        let r = &txn.reads[i];
        if st.holds(&r.record) {
            continue;
        }
        let prior = match r.record.tid.lock() {
            Ok(prior) => prior,
            Err(LockError::Busy) => return Err(Error::conflict(r.table, "record stayed locked")),
            Err(LockError::Unlinked) => {
                return Err(Error::conflict(r.table, "record deleted concurrently"))
            }
        };
        st.base = st.base.max(prior.wssn());
        st.locked.push(addr(&r.record));
        st.locked.sort_unstable();
        let table = txn
            .tables
            .iter()
            .find(|t| t.id == r.table)
            .expect("a read's table was touched")
            .clone();
        let item = Item {
            kind: WriteKind::LockOnly,
            key: r.record.key.as_slice().to_vec(),
            record: r.record.clone(),
            prior,
            row: None,
            deferred: None,
            computed: None,
            stale: Vec::new(),
        };
        st.groups.push((table, vec![item]));
    }
    Ok(())
}

/// Phase 2. `st` is `None` for a read-only transaction (no locks held).
fn validate(txn: &Transaction, st: Option<&Locked>) -> Result<(), Error> {
    match validate_or_lock(txn, st)? {
        late if late.is_empty() => Ok(()),
        late => Err(Error::conflict(txn.reads[late[0]].table, "read changed")),
    }
}

/// [`validate`], except that a projected read whose TID changed, of a record we do not hold, is
/// not a conflict yet: its index is returned, so that the committer locks the record and
/// validates again (by value, under its lock). Empty: everything validated.
fn validate_or_lock(txn: &Transaction, st: Option<&Locked>) -> Result<Vec<usize>, Error> {
    for t in &txn.tables {
        t.check_live()?;
    }
    let mut late = Vec::new();
    for (i, r) in txn.reads.iter().enumerate() {
        let now = r.record.tid.load();
        let held = || st.is_some_and(|st| st.holds(&r.record));
        let ours = || now == r.tid.with_lock() && held();
        // A projected read of a record we hold locked: what it used must be unchanged (the
        // row cannot change until we install, so this is its value at our serialization point).
        let same_projection = || {
            r.projected.as_ref().is_some_and(|(proj, read)| {
                held() && r.record.row_locked().is_some_and(|row| proj(&row) == proj(read))
            })
        };
        if now != r.tid && !ours() && !same_projection() {
            if r.projected.is_some() && st.is_some() && !held() {
                late.push(i);
                continue;
            }
            return Err(Error::conflict(r.table, "read changed"));
        }
    }
    for s in &txn.scans {
        match s {
            ScanEntry::Miss { table, key } => {
                let t = &txn.tables[*table];
                if let Some(record) = t.primary.get(key) {
                    let tid = record.tid.load();
                    if !tid.is_unlinked() && !st.is_some_and(|st| st.is_placeholder(&record)) {
                        return Err(Error::conflict(t.id, "phantom: missed key now present"));
                    }
                }
            }
            ScanEntry::Range { table, index, lo, hi, seen } => {
                let t = &txn.tables[*table];
                let idx = index.as_ref().map_or(&*t.primary, |s| &*s.index);
                let mut next = 0;
                let mut ok = true;
                // Entries of our own records that we took over have left the index; they were
                // there when we scanned, and our locks keep them valid.
                let skip_taken = |next: &mut usize| {
                    while let (Some(st), Some((r, _))) = (st, seen.get(*next)) {
                        if !st.was_taken(index.as_ref(), r) {
                            break;
                        }
                        *next += 1;
                    }
                };
                idx.range_quick(as_ref(lo), as_ref(hi), &mut |key, record| {
                    let mut tid = record.tid.load();
                    if tid.is_unlinked() {
                        return true;
                    }
                    if let Some(st) = st.filter(|st| st.holds(record)) {
                        if st.added_entry(index.as_ref(), key, record) {
                            return true;
                        }
                        tid = tid.without_lock();
                    }
                    skip_taken(&mut next);
                    ok = seen.get(next).is_some_and(|(r, t)| Arc::ptr_eq(r, record) && *t == tid);
                    next += 1;
                    ok
                });
                skip_taken(&mut next);
                if !ok || next != seen.len() {
                    return Err(Error::conflict(t.id, "phantom: scanned range changed"));
                }
            }
        }
    }
    Ok(late)
}

thread_local! {
    /// A committer thread's value-payload buffer, reused from commit to commit.
    static PAYLOAD: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest payload buffer a thread keeps for its next commit; a bigger one (a bulk
/// insert's) is freed.
const MAX_KEPT_PAYLOAD: usize = 64 << 10;

/// Phase 4: publish and unlock. Nothing can fail any more.
///
/// `cow` is the active checkpoint's copy-on-write context (module `checkpoint`): an update or
/// delete that replaces a version the cut covers preserves it first, while still locked.
/// `shard` picks the preserved map's shard (the transaction's log buffer).
fn install(st: &Locked, ssn: Ssn, cow: Option<&Cow>, shard: usize) {
    for (table, items) in &st.groups {
        for it in items {
            if let (Some(cow), WriteKind::Update | WriteKind::Delete) = (cow, it.kind) {
                cow.preserve(table, shard, &it.key, it.prior.wssn(), &it.record);
            }
            match it.kind {
                WriteKind::Insert | WriteKind::Update => {
                    if it.kind == WriteKind::Update {
                        // (A placeholder was created with its row.)
                        it.record.set_row_locked(it.row.clone());
                    }
                    for (s, key) in &it.stale {
                        s.index.remove(key, &it.record);
                    }
                    it.record.tid.store_unlocked(Tid::live(ssn));
                }
                WriteKind::Delete => {
                    // Raised before the record leaves the index; pairs with the Acquire load in
                    // `commit`, after an inserter's placeholder is published.
                    table.delete_ssn.fetch_max(ssn.0, Ordering::Release);
                    it.record.set_row_locked(None);
                    it.record.tid.store_unlocked(Tid::deleted(ssn));
                    table.primary.remove(&it.key, &it.record);
                    for (s, key) in &it.stale {
                        s.index.remove(key, &it.record);
                    }
                }
                WriteKind::LockOnly => it.record.tid.store_unlocked(it.prior),
                WriteKind::Deferred => unreachable!("the lock phase made it an update"),
            }
        }
    }
}

impl Transaction {
    /// Do this transaction's reads and scans still validate right now (no locks taken)? Used to
    /// decide whether an error a statement raised may have come from an inconsistent read
    /// (DESIGN.md §2: then the client gets `40001`, not that error). `false` is definitive;
    /// `true` is only a hint, as a later writer may still invalidate the reads before commit.
    pub fn reads_still_valid(&self) -> bool {
        validate(self, None).is_ok()
    }

    /// Commits: lock, validate, allocate the SSN and write the value record, install (see the
    /// crate doc). Returns the commit SSN and, for writers, the durability [`wal::Ticket`]; or
    /// [`Error::Conflict`] (the transaction is aborted and left no trace), or [`Error::Log`] if
    /// the log refused the record (failed device, record too large; also aborted, no trace).
    ///
    /// Does not wait for durability: the transaction is installed (visible to others) but may
    /// not be acknowledged yet. This is `synchronous_commit = off`; see
    /// [`Transaction::commit_durable`] for the acknowledge rule.
    pub fn commit(mut self) -> Result<CommitInfo, Error> {
        let writes = std::mem::take(&mut self.writes);
        // Blind: wrote without reading. A deferred update reads the row it replaces (at
        // commit), so it is not blind either (only looked for when nothing else was read), nor
        // is an insert under a fresh key (it skipped the read every other insert records).
        let blind = self.reads.is_empty()
            && self.scans.is_empty()
            && !self.inserted_fresh
            && !writes.values().any(|w| w.entries.values().any(|e| e.kind == WriteKind::Deferred));
        if writes.is_empty() {
            validate(&self, None)?;
            return Ok(CommitInfo { ssn: Ssn(self.base), read_only: true, ticket: None });
        }
        let mut st = Locked::default();
        let result = lock(writes, &mut st).and_then(|()| {
            // Dekker-style: our locks and placeholders must be visible to a concurrent committer
            // before we read its records' TIDs, and vice versa, or both could validate (write
            // skew). SeqCst is the only ordering that forbids that store-load reordering.
            fence(Ordering::SeqCst);
            loop {
                let late = validate_or_lock(&self, Some(&st))?;
                if late.is_empty() {
                    return Ok(());
                }
                lock_late(&self, &late, &mut st)?;
                // Our new locks must be visible before we read others' TIDs again.
                fence(Ordering::SeqCst);
            }
        });
        if let Err(e) = result {
            st.rollback();
            return Err(e);
        }
        let mut base = self.base.max(st.base);
        for (table, _) in &st.groups {
            // Acquire pairs with the Release fetch_max in install (delete) and the cmd_read_ssn
            // raise (DESIGN.md §4).
            base = base.max(table.delete_ssn.load(Ordering::Acquire));
            base = base.max(table.cmd_read_ssn.load(Ordering::Acquire));
        }
        if st.logged == 0 {
            install(&st, Ssn(base), None, 0);
            return Ok(CommitInfo { ssn: Ssn(base), read_only: true, ticket: None });
        }
        // The value record (DESIGN.md §3), encoded before the reservation so that the range is
        // filled right after it is taken. An in-memory log writes nothing: no record, and a
        // reservation that only allocates the SSN.
        let in_memory = self.inner.log.is_in_memory();
        // This thread's payload buffer from its previous commit, if any: no allocation per
        // commit (it goes back below).
        let mut payload = PAYLOAD.take();
        payload.clear();
        if !in_memory {
            let entries = st.groups.iter().flat_map(|(table, items)| {
                items.iter().filter(|it| it.kind != WriteKind::LockOnly).map(|it| {
                    let row = match it.kind {
                        WriteKind::Delete => None,
                        _ => Some(it.row.as_deref().expect("insert/update carries a row")),
                    };
                    ValueEntry { table: table.id.0, key: &it.key, row }
                })
            });
            encode_value_entries(entries, &mut payload);
        }
        // A large transaction's payload goes to a spill file (written and synced here, locks
        // held, before the SSN is taken); its record only names the file.
        let kind = if payload.len() > self.inner.log.spill_threshold() {
            match self.inner.log.spill(self.buffer, &payload) {
                Ok(spill) => {
                    payload = spill.encode().to_vec();
                    RecordKind::Spilled
                }
                Err(e) => {
                    st.rollback();
                    return Err(Error::from(e));
                }
            }
        } else {
            RecordKind::Value
        };
        let len = if in_memory { 0 } else { wal::Record::encoded_len_for(payload.len()) };
        // From before the SSN is reserved until the install is done, this committer is inside
        // the install gate: a checkpoint's cut waits for it, so every SSN <= S is installed
        // when the cut is taken (module `checkpoint`).
        let gate = self.inner.checkpoint.gate.enter(thread_stripe());
        let reservation = match self.inner.log.try_reserve(self.buffer, Ssn(base), len) {
            Ok(r) => r,
            Err(e) => {
                // Nothing was installed: abort cleanly (an SSN may have been consumed, which
                // leaves a harmless gap).
                drop(gate);
                st.rollback();
                return Err(Error::from(e));
            }
        };
        let reservation = if self.lazy_log { reservation.lazy() } else { reservation };
        let ssn = reservation.ssn;
        let ticket = reservation.ticket(blind);
        // Fill before install: no reservation is held while anything else happens.
        reservation.fill_record(kind, blind, &payload);
        let cow = self.inner.checkpoint.cow(ssn);
        install(&st, ssn, cow.as_ref(), self.buffer);
        drop(gate);
        if payload.capacity() <= MAX_KEPT_PAYLOAD {
            PAYLOAD.set(payload);
        }
        Ok(CommitInfo { ssn, read_only: false, ticket: Some(ticket) })
    }

    /// [`Transaction::commit`], then waits until the transaction may be acknowledged
    /// (DESIGN.md §3): a writer until its record is durable by the acknowledge rule
    /// ([`wal::Log::wait_durable`]: `ssn <= CSN`, or `ssn <= DSN` of its device if blind); a
    /// read-only transaction until `ssn <= CSN` ([`wal::Log::wait_csn`]), so that its results
    /// are never released before everything they saw is durable.
    ///
    /// [`Error::Log`] from the wait means the transaction must not be acknowledged, ever; it
    /// is nevertheless installed in memory (the server must shut down and recover).
    pub fn commit_durable(self) -> Result<CommitInfo, Error> {
        let log = self.inner.log.clone();
        let info = self.commit()?;
        match info.ticket {
            Some(ticket) => log.wait_durable(ticket)?,
            None => log.wait_csn(info.ssn)?,
        }
        Ok(info)
    }
}
