//! Checkpoints end to end, over real log and checkpoint directories: a bank workload commits
//! through `txn` onto `wal::Log::open` while `write_checkpoint` writes a cut; then a fresh
//! engine recovers with `newest_checkpoint` → `load_checkpoint` → `RecoveryPlan::scan` (with
//! `S`) → `replay(plan, S, ..)` → `finish_replay`, and its tables equal the original's. Also:
//! log segments below `S` deleted (including segments from before a restart, adopted through
//! `LogOptions::existing_segments`), a checkpoint whose metadata never got written (ignored,
//! the previous one used), and damaged checkpoint files (a clear error naming the file).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use recovery::{
    delete_older_checkpoints, load_checkpoint, newest_checkpoint, write_checkpoint, DeviceLog,
    EngineTarget, Error, RecoveryPlan, ScanOptions,
};
use txn::{Engine, TableId};
use wal::{DeviceId, DeviceOptions, Log, LogOptions, Ssn};

const ACCOUNTS: TableId = TableId(1);
const HISTORY: TableId = TableId(2);
const N: u32 = 50;
const INITIAL: i64 = 1_000;

type Contents = BTreeMap<(u32, Vec<u8>), Vec<u8>>;

struct Dirs {
    _tmp: tempfile::TempDir,
    wal: Vec<PathBuf>,
    ckpt: Vec<PathBuf>,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().expect("tempdir");
    let wal = (0..2).map(|d| tmp.path().join("wal").join(d.to_string())).collect();
    let ckpt = (0..2).map(|d| tmp.path().join(format!("checkpoints{d}"))).collect();
    Dirs { _tmp: tmp, wal, ckpt }
}

/// Small segments, so that the workload fills several and deletion has something to do.
fn log_options() -> LogOptions {
    LogOptions {
        device: DeviceOptions { segment_size: 32 << 10, ..DeviceOptions::default() },
        ..LogOptions::default()
    }
}

fn create_tables(engine: &Engine) {
    engine.create_table(ACCOUNTS, vec![]);
    engine.create_table(HISTORY, vec![]);
}

fn key(i: u32) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

fn balance(row: &[u8]) -> i64 {
    i64::from_le_bytes(row[..8].try_into().expect("8-byte balance"))
}

/// Waits until everything committed is durable by the acknowledge rule (`CSN >= max SSN`;
/// idle devices write markers), so that a clean stop loses nothing: the workload commits
/// without waiting (`synchronous_commit = off`), and only acknowledged work must survive.
fn quiesce(engine: &Engine) {
    engine.log().wait_csn(engine.log().max_ssn()).expect("wait for CSN");
}

fn contents(engine: &Engine) -> Contents {
    let mut t = engine.begin(0);
    let mut rows = Contents::new();
    for table in [ACCOUNTS, HISTORY] {
        t.scan(table, None, Bound::Unbounded, Bound::Unbounded, false, &mut |k, r| {
            rows.insert((table.0, k.to_vec()), r.to_vec());
            true
        })
        .expect("scan");
    }
    rows
}

fn total(rows: &Contents) -> i64 {
    rows.iter().filter(|((t, _), _)| *t == ACCOUNTS.0).map(|(_, r)| balance(r)).sum()
}

/// A plain map target: last writer (largest SSN) wins per key.
#[derive(Default)]
struct MapTarget(std::sync::Mutex<Versions>);

/// `(table, key)` → `(ssn, row)`.
type Versions = BTreeMap<(u32, Vec<u8>), (Ssn, Vec<u8>)>;

impl recovery::Target for MapTarget {
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String> {
        let row = row.ok_or("checkpoints hold no deletes")?;
        let mut map = self.0.lock().expect("poisoned");
        let slot = map.entry((table, key.to_vec())).or_insert((Ssn::ZERO, Vec::new()));
        if ssn > slot.0 {
            *slot = (ssn, row.to_vec());
        }
        Ok(())
    }
}

impl MapTarget {
    fn rows(&self) -> Contents {
        self.0.lock().expect("poisoned").iter().map(|(k, (_, r))| (k.clone(), r.clone())).collect()
    }
}

fn load_accounts(engine: &Engine) {
    let mut t = engine.begin(0);
    for i in 0..N {
        t.insert(ACCOUNTS, key(i), INITIAL.to_le_bytes().to_vec()).expect("insert");
    }
    t.commit_durable().expect("commit");
}

/// Transfers plus history inserts and deletes on `threads` threads until `stop` is set and each
/// thread did at least `min` transactions. `salt` keeps history keys of separate runs apart.
fn workload(engine: &Engine, threads: u64, min: u64, salt: u64, stop: &AtomicBool) {
    std::thread::scope(|s| {
        for thread in 0..threads {
            s.spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (thread + 1) ^ (salt << 32);
                let mut rand = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut live: Vec<Vec<u8>> = Vec::new();
                let mut i = 0u64;
                while i < min || !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let (from, to) =
                        ((rand() % u64::from(N)) as u32, (rand() % u64::from(N)) as u32);
                    if from == to {
                        continue;
                    }
                    let amount = (rand() % 100) as i64;
                    let mut hk = salt.to_be_bytes().to_vec();
                    hk.extend_from_slice(&thread.to_be_bytes());
                    hk.extend_from_slice(&i.to_be_bytes());
                    let deleted = (rand() % 3 == 0 && !live.is_empty())
                        .then(|| live.swap_remove((rand() % live.len() as u64) as usize));
                    let mut t = engine.begin(thread as usize);
                    let result = (|| {
                        let a = balance(&t.get(ACCOUNTS, &key(from))?.expect("account"));
                        t.update(ACCOUNTS, &key(from), (a - amount).to_le_bytes().to_vec())?;
                        let b = balance(&t.get(ACCOUNTS, &key(to))?.expect("account"));
                        t.update(ACCOUNTS, &key(to), (b + amount).to_le_bytes().to_vec())?;
                        t.insert(HISTORY, hk.clone(), vec![(i % 251) as u8; 100])?;
                        if let Some(d) = &deleted {
                            t.delete(HISTORY, d)?;
                        }
                        t.commit()
                    })();
                    match result {
                        Ok(_) => live.push(hk),
                        Err(e) => {
                            assert!(e.is_conflict(), "{e}");
                            live.extend(deleted);
                        }
                    }
                }
            });
        }
    });
}

/// Runs the workload on 2 threads while `during` runs on this thread; returns `during`'s
/// result once both are done (at least `min` transactions per thread).
fn under_load<R>(engine: &Engine, min: u64, salt: u64, during: impl FnOnce() -> R) -> R {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| workload(engine, 2, min, salt, &stop));
        // Let the workload get going, so the cut lands in the middle of it.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let r = during();
        stop.store(true, Ordering::Relaxed);
        r
    })
}

/// Takes a checkpoint of `engine` into `ckpt` while the workload runs.
fn checkpoint(engine: &Engine, ckpt: &[PathBuf], salt: u64) -> recovery::CheckpointMeta {
    under_load(engine, 300, salt, || {
        let cut = engine.begin_checkpoint().expect("begin");
        let meta = write_checkpoint(&cut, engine.log(), ckpt, 7, &|_| {}).expect("write");
        assert_eq!(meta.ssn, cut.ssn());
        assert!(engine.log().csn() >= meta.ssn, "valid only once CSN >= S");
        eprintln!("{meta}; {} rows preserved by copy-on-write", cut.preserved_rows());
        meta
    })
}

/// What recovery found.
struct Recovered {
    engine: Engine,
    plan: RecoveryPlan,
    checkpoint: Option<recovery::CheckpointMeta>,
    /// Value records replayed from the log above the checkpoint.
    replayed: u64,
}

/// The recovery sequence into a fresh engine over `log`.
fn recover_into(log: Arc<Log>, d: &Dirs) -> Result<Recovered, Error> {
    let engine = Engine::new(log);
    create_tables(&engine);
    let checkpoint = newest_checkpoint(&d.ckpt)?;
    let cut = checkpoint.as_ref().map_or(Ssn::ZERO, |m| m.ssn);
    if let Some(meta) = &checkpoint {
        let summary = load_checkpoint(
            meta,
            &EngineTarget::new(&engine),
            &|t| t == ACCOUNTS.0 || t == HISTORY.0,
            &|_| {},
        )?;
        assert_eq!(summary.records, meta.rows);
        assert_eq!(summary.entries, meta.rows, "every row's table is kept");
    }
    let devices = d
        .wal
        .iter()
        .enumerate()
        .map(|(i, dir)| DeviceLog::from_dir(DeviceId(i as u16), dir))
        .collect::<Result<Vec<_>, _>>()?;
    let options = ScanOptions::for_log(&log_options()).with_checkpoint(cut);
    let plan = RecoveryPlan::scan(devices, options)?;
    assert!(plan.rsne() >= cut);
    let replayed = recovery::replay(&plan, cut, &EngineTarget::new(&engine), 2, &|_| {})?.replayed;
    engine.finish_replay(plan.max_ssn()).expect("finish");
    Ok(Recovered { engine, plan, checkpoint, replayed })
}

fn recover(d: &Dirs) -> Recovered {
    recover_into(Arc::new(Log::new(2)), d).expect("recovery")
}

fn segments_on_disk(dir: &Path) -> Vec<wal::SegmentNo> {
    wal::list_segments(dir).expect("list").into_iter().map(|(no, _)| no).collect()
}

/// Checkpoint under load, log below `S` deleted, more work, clean stop: recovery from the
/// checkpoint plus the log above `S` gives the original tables. Then a restart over the same
/// directories adopts the old segments, and the next checkpoint deletes them.
#[test]
fn recovery_from_a_checkpoint_taken_under_load_equals_the_original() {
    let d = dirs();
    let (before, meta, deleted) = {
        let log = Arc::new(Log::open(&d.wal, &log_options()).expect("open"));
        let engine = Engine::new(log.clone());
        create_tables(&engine);
        load_accounts(&engine);
        // Some log before the checkpoint, so that segments fill up below S.
        under_load(&engine, 400, 1, || ());
        let meta = checkpoint(&engine, &d.ckpt, 2);
        let deleted = log.delete_segments_below(meta.ssn.next()).expect("delete segments");
        assert!(!deleted.is_empty(), "the workload filled segments below S");
        under_load(&engine, 200, 3, || ());
        quiesce(&engine);
        let before = contents(&engine);
        assert_eq!(total(&before), INITIAL * i64::from(N));
        (before, meta, deleted)
        // Dropping the engine and the log flushes and stops the loggers (a clean stop).
    };
    for (device, no) in &deleted {
        assert!(!segments_on_disk(&d.wal[usize::from(device.0)]).contains(no));
    }
    let r = recover(&d);
    assert_eq!(r.checkpoint.as_ref(), Some(&meta));
    assert!(r.replayed > 0, "the log above S was needed");
    eprintln!("deleted {} segments; replayed {} records above S", deleted.len(), r.replayed);
    assert_eq!(contents(&r.engine), before, "recovered tables differ from the original");

    // The checkpoint alone is consistent: its accounts sum to the total.
    let only = MapTarget::default();
    load_checkpoint(&meta, &only, &|_| true, &|_| {}).expect("load");
    let rows = only.rows();
    assert_eq!(rows.keys().filter(|(t, _)| *t == ACCOUNTS.0).count(), N as usize);
    assert_eq!(
        rows.iter().filter(|((t, _), _)| *t == ACCOUNTS.0).map(|(_, r)| balance(r)).sum::<i64>(),
        INITIAL * i64::from(N)
    );

    // Restart: seal, reopen the log adopting the old segments, recover into the live engine.
    let plan = r.plan;
    plan.seal().expect("seal");
    let old: Vec<Vec<wal::SegmentNo>> =
        plan.existing_segments().iter().map(|s| s.iter().map(|(no, _)| *no).collect()).collect();
    let options = LogOptions {
        start_ssn: plan.max_ssn(),
        existing_segments: plan.existing_segments(),
        ..log_options()
    };
    let log = Arc::new(Log::open(&d.wal, &options).expect("reopen"));
    let live = recover_into(log.clone(), &d).expect("recovery at restart").engine;
    // (recover_into scanned the log again: it now also holds the new, empty segments.)
    assert_eq!(contents(&live), before);
    let meta2 = checkpoint(&live, &d.ckpt, 4);
    assert!(meta2.ssn > meta.ssn && meta2.seq > meta.seq);
    delete_older_checkpoints(&d.ckpt, &meta2).expect("delete older checkpoints");
    assert_eq!(newest_checkpoint(&d.ckpt).unwrap(), Some(meta2.clone()));
    assert!(meta.files.iter().all(|f| !f.path.exists()) && !meta.path.exists());
    let deleted = log.delete_segments_below(meta2.ssn.next()).expect("delete segments");
    for (dev, segments) in old.iter().enumerate() {
        let on_disk = segments_on_disk(&d.wal[dev]);
        assert!(
            segments.iter().all(|no| !on_disk.contains(no)),
            "device {dev}: segments from before the restart remain: {on_disk:?} (deleted \
             {deleted:?})"
        );
    }
    under_load(&live, 100, 5, || ());
    quiesce(&live);
    let after = contents(&live);
    drop(live);
    drop(log);
    assert_eq!(contents(&recover(&d).engine), after, "recovery after the second checkpoint");
}

/// A checkpoint whose metadata was never written (a crash before the last step) is ignored:
/// recovery uses the previous one and the log above it. Its files do not block later
/// checkpoints, which take a larger sequence number.
#[test]
fn a_checkpoint_without_metadata_is_ignored() {
    let d = dirs();
    let (before, first, second) = {
        let log = Arc::new(Log::open(&d.wal, &log_options()).expect("open"));
        let engine = Engine::new(log.clone());
        create_tables(&engine);
        load_accounts(&engine);
        let first = checkpoint(&engine, &d.ckpt, 1);
        log.delete_segments_below(first.ssn.next()).expect("delete");
        let second = checkpoint(&engine, &d.ckpt, 2);
        under_load(&engine, 100, 3, || ());
        quiesce(&engine);
        (contents(&engine), first, second)
    };
    // "Crash" before the second checkpoint's metadata: remove it, leave a torn temp file.
    std::fs::remove_file(&second.path).expect("remove metadata");
    let tmp = second.path.with_extension("meta.tmp");
    std::fs::write(&tmp, b"torn").expect("write");
    assert_eq!(newest_checkpoint(&d.ckpt).expect("newest"), Some(first.clone()));
    let r = recover(&d);
    assert_eq!(r.checkpoint, Some(first.clone()));
    assert_eq!(contents(&r.engine), before);
    // Deleting checkpoints older than the first touches nothing of the orphan.
    delete_older_checkpoints(&d.ckpt, &first).expect("delete older");
    assert!(second.files.iter().all(|f| f.path.exists()) && tmp.exists());
    // The next checkpoint takes a sequence number above the orphan's, then removes it.
    let third = checkpoint(&r.engine, &d.ckpt, 4);
    assert!(third.seq > second.seq);
    delete_older_checkpoints(&d.ckpt, &third).expect("delete older");
    assert!(second.files.iter().all(|f| !f.path.exists()) && !tmp.exists());
    assert!(!first.path.exists());
}

/// Damage to a checkpoint is a hard error naming the file: a flipped byte anywhere in a data
/// file, a truncated or missing data file, or damaged metadata.
#[test]
fn a_damaged_checkpoint_is_a_clear_error() {
    let d = dirs();
    let engine = Engine::new(Arc::new(Log::new(2)));
    create_tables(&engine);
    load_accounts(&engine);
    let stop = AtomicBool::new(true);
    workload(&engine, 2, 300, 1, &stop);
    let cut = engine.begin_checkpoint().expect("begin");
    let reports = std::sync::Mutex::new(Vec::new());
    let meta =
        write_checkpoint(&cut, engine.log(), &d.ckpt, 1, &|p| reports.lock().unwrap().push(*p))
            .expect("write");
    drop(cut);
    let last = *reports.lock().unwrap().last().expect("a final report");
    assert_eq!((last.phase, last.records_done), (recovery::Phase::Checkpoint, meta.rows));
    reports.lock().unwrap().clear();
    let target = MapTarget::default();
    load_checkpoint(&meta, &target, &|_| true, &|p| reports.lock().unwrap().push(*p))
        .expect("load");
    let last = *reports.lock().unwrap().last().expect("a final report");
    assert_eq!(last.phase, recovery::Phase::Load);
    assert_eq!((last.bytes_done, last.records_done), (meta.bytes, meta.rows));
    assert_eq!(last.eta(), Some(std::time::Duration::ZERO));
    assert!(last.to_string().starts_with("recovery load:"), "{last}");
    assert!(meta.rows > u64::from(N));
    let file = meta.files.iter().max_by_key(|f| f.size).expect("a data file").clone();
    let good = std::fs::read(&file.path).expect("read");
    let load = |meta: &recovery::CheckpointMeta| {
        let target = MapTarget::default();
        load_checkpoint(meta, &target, &|_| true, &|_| {})
    };
    load(&meta).expect("an intact checkpoint loads");
    // Rows of tables that no longer exist are skipped.
    let target = MapTarget::default();
    let s = load_checkpoint(&meta, &target, &|t| t == ACCOUNTS.0, &|_| {}).expect("load");
    assert_eq!(s.entries, u64::from(N));
    assert_eq!(target.rows().len(), N as usize);

    let step = (good.len() / 97).max(1);
    for at in (0..good.len()).step_by(step).chain([good.len() - 1, 20, 33, 40]) {
        let mut bad = good.clone();
        bad[at] ^= 0x04;
        std::fs::write(&file.path, &bad).expect("write");
        match load(&meta) {
            Err(Error::CheckpointCorrupt { path, .. }) => assert_eq!(path, file.path, "byte {at}"),
            other => panic!("flipped byte {at}: {other:?}"),
        }
    }
    let shown = {
        let mut bad = good.clone();
        bad[good.len() / 2] ^= 1;
        std::fs::write(&file.path, &bad).expect("write");
        load(&meta).unwrap_err().to_string()
    };
    assert!(
        shown.contains(&file.path.display().to_string()) && shown.contains("corrupt"),
        "{shown}"
    );
    std::fs::write(&file.path, &good[..good.len() - 12]).expect("truncate");
    assert!(matches!(load(&meta), Err(Error::CheckpointCorrupt { .. })));
    std::fs::write(&file.path, &good).expect("restore");
    load(&meta).expect("restored");

    // Metadata: a flipped byte, or a data file that is gone, stops recovery.
    let m = std::fs::read(&meta.path).expect("read");
    let mut bad = m.clone();
    bad[m.len() / 2] ^= 1;
    std::fs::write(&meta.path, &bad).expect("write");
    assert!(
        matches!(newest_checkpoint(&d.ckpt), Err(Error::CheckpointCorrupt { path, .. }) if path == meta.path)
    );
    std::fs::write(&meta.path, &m).expect("restore");
    assert_eq!(newest_checkpoint(&d.ckpt).expect("newest"), Some(meta.clone()));
    std::fs::remove_file(&file.path).expect("remove");
    assert!(matches!(newest_checkpoint(&d.ckpt), Err(Error::CheckpointCorrupt { .. })));
}
