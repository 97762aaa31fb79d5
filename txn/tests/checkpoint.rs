//! Checkpoint cuts (`Engine::begin_checkpoint`): what a cut's scan reports while writers keep
//! committing. Single-threaded cases pin the copy-on-write rules (pre-images of updates and
//! deletes after the cut show, later inserts do not); a concurrent bank workload checks every
//! cut against a model built from the commit SSNs: balances at `S` are the initial ones plus
//! every transfer with `ssn <= S`, and the history rows at `S` are exactly those inserted at or
//! before `S` and not deleted by then.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use txn::{CheckpointCut, Engine, Error, TableId};
use wal::Ssn;

const ACCOUNTS: TableId = TableId(1);
const HISTORY: TableId = TableId(2);

/// Everything a cut reports for `table`: key → (ssn, row), checking that repeated reports of a
/// key are the same version and that nothing is above the cut.
fn collect(cut: &CheckpointCut, table: TableId) -> BTreeMap<Vec<u8>, (Ssn, Vec<u8>)> {
    let mut out: BTreeMap<Vec<u8>, (Ssn, Vec<u8>)> = BTreeMap::new();
    let mut n = 0u64;
    cut.scan(table, &mut |key, row, ssn| {
        assert!(ssn <= cut.ssn(), "version {ssn} above the cut {}", cut.ssn());
        assert!(ssn > Ssn::ZERO);
        if let Some((s, r)) = out.get(key) {
            assert_eq!((*s, r.as_slice()), (ssn, row), "a key reported twice with two versions");
        }
        out.insert(key.to_vec(), (ssn, row.to_vec()));
        n += 1;
        // Give writers a chance to overwrite rows the scan has not reached yet.
        if n.is_multiple_of(512) {
            std::thread::yield_now();
        }
    })
    .expect("scan");
    out
}

fn rows(map: &BTreeMap<Vec<u8>, (Ssn, Vec<u8>)>) -> Vec<(&[u8], &[u8])> {
    map.iter().map(|(k, (_, r))| (k.as_slice(), r.as_slice())).collect()
}

#[test]
fn second_checkpoint_while_one_is_active_errors() {
    let engine = Engine::new(Arc::new(wal::Log::new(2)));
    let cut = engine.begin_checkpoint().expect("first");
    assert_eq!(engine.begin_checkpoint().unwrap_err(), Error::CheckpointActive);
    drop(cut);
    let again = engine.begin_checkpoint().expect("after the first ended");
    assert_eq!(again.ssn(), Ssn::ZERO, "nothing committed yet");
}

/// Updates, deletes and inserts after the cut: the scan shows the versions at the cut (pre-images
/// from copy-on-write for the updated and deleted rows), not the later rows, nor rows deleted
/// before the cut, nor tables created after it.
#[test]
fn the_cut_hides_later_writes_and_shows_pre_images() {
    let log = Arc::new(wal::Log::new(2));
    let engine = Engine::new(log.clone());
    engine.create_table(ACCOUNTS, vec![]);
    engine.create_table(HISTORY, vec![]);
    let put = |buffer: usize, ops: &[(&[u8], Option<&[u8]>)]| {
        let mut t = engine.begin(buffer);
        for (k, v) in ops {
            let present = t.get(ACCOUNTS, k).unwrap().is_some();
            match (present, v) {
                (false, Some(v)) => t.insert(ACCOUNTS, k.to_vec(), v.to_vec()).unwrap(),
                (true, Some(v)) => t.update(ACCOUNTS, k, v.to_vec()).unwrap(),
                (true, None) => t.delete(ACCOUNTS, k).unwrap(),
                (false, None) => panic!("nothing to delete"),
            }
        }
        t.commit().unwrap().ssn
    };
    let a1 = put(0, &[(b"a", Some(b"a1"))]);
    let b1 = put(1, &[(b"b", Some(b"b1"))]);
    let c1 = put(0, &[(b"c", Some(b"c1")), (b"gone", Some(b"x"))]);
    put(1, &[(b"gone", None)]);
    let a2 = put(0, &[(b"a", Some(b"a2"))]);

    let cut = engine.begin_checkpoint().unwrap();
    let s = cut.ssn();
    assert_eq!(s, log.max_ssn());
    assert!(a2 <= s);
    assert_eq!(log.buffer_ssn(0), s, "every buffer raised to S");
    assert_eq!(log.buffer_ssn(1), s, "every buffer raised to S");
    assert_eq!(cut.tables(), vec![ACCOUNTS, HISTORY]);

    // After the cut: update a, delete b, delete and re-insert c, insert d, a new table.
    let later = put(1, &[(b"a", Some(b"a3")), (b"b", None), (b"d", Some(b"d1"))]);
    assert!(later > s, "every SSN after the cut is above it");
    put(0, &[(b"c", None)]);
    put(1, &[(b"c", Some(b"c2"))]);
    put(0, &[(b"a", Some(b"a4"))]);
    engine.create_table(TableId(3), vec![]);
    assert_eq!(cut.preserved_rows(), 3, "a, b and c preserved once each");

    let got = collect(&cut, ACCOUNTS);
    let want: Vec<(&[u8], &[u8])> = vec![(b"a", b"a2"), (b"b", b"b1"), (b"c", b"c1")];
    assert_eq!(rows(&got), want);
    assert_eq!(got[&b"a"[..]].0, a2);
    assert_eq!(got[&b"b"[..]].0, b1);
    assert_eq!(got[&b"c"[..]].0, c1);
    assert!(a1 < a2);
    assert!(collect(&cut, HISTORY).is_empty());
    assert_eq!(cut.scan(TableId(3), &mut |_, _, _| {}), Err(Error::TableDropped(TableId(3))));
    // Scanning again gives the same answer; a table dropped after the cut stays scannable.
    engine.drop_table(ACCOUNTS);
    assert_eq!(collect(&cut, ACCOUNTS), got);
    drop(cut);

    // A new cut sees the new state, with nothing preserved yet.
    engine.create_table(ACCOUNTS, vec![]);
    put(0, &[(b"z", Some(b"z1"))]);
    let cut = engine.begin_checkpoint().unwrap();
    assert!(cut.ssn() > s);
    assert_eq!(cut.preserved_rows(), 0);
    let want: Vec<(&[u8], &[u8])> = vec![(b"z", b"z1")];
    assert_eq!(rows(&collect(&cut, ACCOUNTS)), want);
}

const N: u32 = 64;
const INITIAL: i64 = 1_000;
const THREADS: u64 = 4;
const TRANSFERS: u64 = 10_000;

fn key(i: u32) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

fn history_key(thread: u64, i: u64) -> Vec<u8> {
    let mut k = thread.to_be_bytes().to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

fn balance(row: &[u8]) -> i64 {
    i64::from_le_bytes(row.try_into().expect("8-byte balance"))
}

/// A committed transfer as the model needs it.
struct Transfer {
    ssn: Ssn,
    from: u32,
    to: u32,
    amount: i64,
    /// The history row inserted.
    inserted: Vec<u8>,
    /// The history row deleted, if any.
    deleted: Option<Vec<u8>>,
}

/// Four threads transfer money between accounts and insert and delete history rows while the
/// main thread takes one checkpoint after another. Every cut's accounts sum to the constant
/// total and equal the model at its `S`; its history rows are exactly the model's.
#[test]
fn concurrent_transfers_every_cut_matches_the_model_at_s() {
    let engine = Engine::new(Arc::new(wal::Log::new(2)));
    engine.create_table(ACCOUNTS, vec![]);
    engine.create_table(HISTORY, vec![]);
    let mut t = engine.begin(0);
    for i in 0..N {
        t.insert(ACCOUNTS, key(i), INITIAL.to_le_bytes().to_vec()).unwrap();
    }
    let loaded = t.commit().unwrap().ssn;
    let done = Arc::new(AtomicBool::new(false));
    // Cuts taken so far: workers keep going until at least 3 were taken under their load.
    let taken = Arc::new(AtomicUsize::new(0));

    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (engine, taken) = (engine.clone(), taken.clone());
            std::thread::spawn(move || {
                let mut x = 0x2545_F491_4F6C_DD1Du64 ^ (thread + 1);
                let mut rand = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut log = Vec::new();
                let mut live: Vec<Vec<u8>> = Vec::new();
                let mut i = 0;
                while i < TRANSFERS || taken.load(Ordering::Relaxed) < 3 {
                    i += 1;
                    let from = (rand() % u64::from(N)) as u32;
                    let to = (rand() % u64::from(N)) as u32;
                    if from == to {
                        continue;
                    }
                    let amount = (rand() % 50) as i64;
                    let inserted = history_key(thread, i);
                    let deleted = (rand() % 3 == 0 && !live.is_empty())
                        .then(|| live.swap_remove((rand() % live.len() as u64) as usize));
                    let mut t = engine.begin(thread as usize);
                    let result = (|| {
                        let a = balance(&t.get(ACCOUNTS, &key(from))?.expect("account"));
                        t.update(ACCOUNTS, &key(from), (a - amount).to_le_bytes().to_vec())?;
                        let b = balance(&t.get(ACCOUNTS, &key(to))?.expect("account"));
                        t.update(ACCOUNTS, &key(to), (b + amount).to_le_bytes().to_vec())?;
                        t.insert(HISTORY, inserted.clone(), amount.to_le_bytes().to_vec())?;
                        if let Some(d) = &deleted {
                            t.delete(HISTORY, d)?;
                        }
                        t.commit()
                    })();
                    match result {
                        Ok(info) => {
                            live.push(inserted.clone());
                            log.push(Transfer {
                                ssn: info.ssn,
                                from,
                                to,
                                amount,
                                inserted,
                                deleted,
                            });
                        }
                        Err(e) => {
                            assert!(e.is_conflict(), "{e}");
                            live.extend(deleted);
                        }
                    }
                }
                log
            })
        })
        .collect();

    // (S, accounts, history) of every cut.
    type Cut = (Ssn, BTreeMap<Vec<u8>, (Ssn, Vec<u8>)>, BTreeMap<Vec<u8>, (Ssn, Vec<u8>)>);
    let mut cuts: Vec<Cut> = Vec::new();
    let mut preserved = 0;
    let checkpointer = {
        let (done, taken) = (done.clone(), taken.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let cut = engine.begin_checkpoint().expect("one checkpoint at a time");
                let accounts = collect(&cut, ACCOUNTS);
                let history = collect(&cut, HISTORY);
                preserved += cut.preserved_rows();
                let total: i64 = accounts.values().map(|(_, r)| balance(r)).sum();
                assert_eq!(accounts.len(), N as usize, "every account at S = {}", cut.ssn());
                assert_eq!(total, INITIAL * i64::from(N), "total at S = {}", cut.ssn());
                cuts.push((cut.ssn(), accounts, history));
                taken.fetch_add(1, Ordering::Relaxed);
            }
            (cuts, preserved)
        })
    };
    let transfers: Vec<Transfer> =
        workers.into_iter().flat_map(|w| w.join().expect("worker")).collect();
    done.store(true, Ordering::Relaxed);
    let (cuts, preserved) = checkpointer.join().expect("checkpointer");
    assert!(transfers.len() > 100, "too few transfers committed: {}", transfers.len());
    let max = transfers.iter().map(|tr| tr.ssn).max().unwrap();
    let during = cuts.iter().filter(|(s, ..)| *s > loaded && *s < max).count();
    println!("{} cuts ({during} during the workload), {preserved} rows preserved", cuts.len());
    assert!(during >= 2, "cuts under load: {during}");

    for (s, accounts, history) in &cuts {
        let mut model: BTreeMap<Vec<u8>, i64> = (0..N).map(|i| (key(i), INITIAL)).collect();
        // History key → (insert ssn, delete ssn).
        let mut hist: BTreeMap<Vec<u8>, (Ssn, Option<Ssn>)> = BTreeMap::new();
        for tr in transfers.iter().filter(|tr| tr.ssn <= *s) {
            *model.get_mut(&key(tr.from)).unwrap() -= tr.amount;
            *model.get_mut(&key(tr.to)).unwrap() += tr.amount;
            hist.entry(tr.inserted.clone()).or_insert((tr.ssn, None)).0 = tr.ssn;
            if let Some(d) = &tr.deleted {
                hist.entry(d.clone()).or_insert((Ssn::ZERO, None)).1 = Some(tr.ssn);
            }
        }
        let got: BTreeMap<Vec<u8>, i64> =
            accounts.iter().map(|(k, (_, r))| (k.clone(), balance(r))).collect();
        assert_eq!(got, model, "balances at S = {s} differ from the transfers with ssn <= S");
        for (k, (ssn, _)) in accounts {
            // The version at S is the last transfer <= S touching the account (or the load).
            let last = transfers
                .iter()
                .filter(|tr| tr.ssn <= *s && (key(tr.from) == *k || key(tr.to) == *k))
                .map(|tr| tr.ssn)
                .max()
                .unwrap_or(loaded);
            assert_eq!(*ssn, last, "wssn of account {k:?} at S = {s}");
        }
        let want: BTreeMap<Vec<u8>, Ssn> = hist
            .into_iter()
            .filter(|(_, (ins, del))| *ins > Ssn::ZERO && del.is_none())
            .map(|(k, (ins, _))| (k, ins))
            .collect();
        let got: BTreeMap<Vec<u8>, Ssn> =
            history.iter().map(|(k, (ssn, _))| (k.clone(), *ssn)).collect();
        assert_eq!(got, want, "history rows at S = {s}");
    }
}
