//! Opening a durable database: the server's startup sequence (DESIGN.md §5).
//!
//! ```text
//! 1 devices    the --wal-dir list must be the one the data directory was created with
//!              (<data-dir>/wal_devices): a device left out would lose its records silently
//! 2 catalog    RocksDB (<data-dir>/catalog): tables, indexes, ids never reused
//! 3 checkpoint the newest valid one (metadata present) in the checkpoint directories: cut S
//! 4 scan+stage crate::stage, one read of every device: where each valid log ends, RSNe
//!              (a device's last durable SSN is at least S: its older segments may be gone),
//!              and the newest write per (table, key) of every value record to replay
//!              (S < ssn <= RSNe, plus blind ones beyond), staged in memory
//! 5 seal       unacknowledged records above RSNe → Abort records, torn tails zero-filled,
//!              so that no later recovery can resurrect them once the log grows past them
//! 6 open log   wal::Log::open(dirs, start_ssn = max(S, largest SSN on any device)): new
//!              segments, every new SSN above every old one (I2 across restarts); the old
//!              segments are adopted so a later checkpoint can delete them
//! 7 engine     sql::Database::new creates an empty engine table per catalog table
//! 8 load       the checkpoint's rows, in parallel (one reader per file)
//! 9 replay     StagedLog::install: the staged writes into the engine, in parallel by
//!              (table, key), last writer wins; rows of dropped tables are skipped
//! 10 finish    Engine::finish_replay (tombstones, secondary indexes, L.ssn raised),
//!              Database::restore_row_ids (hidden row ids continue above the largest)
//! ```
//!
//! Only then does the server accept connections. Progress is reported through the caller's
//! callback while it runs; [`Started`] carries the summary.
//!
//! The returned database has a [`sql::Checkpointer`] installed ([`DbCheckpointer`]): the
//! `CHECKPOINT` statement, the periodic checkpoint thread (`checkpoint_interval`) and the
//! server's clean shutdown all go through it. A checkpoint takes the engine's cut
//! (`txn::Engine::begin_checkpoint`), writes it ([`crate::write_checkpoint`]: valid once synced
//! and `CSN >= S`, metadata last), then deletes older checkpoints and the log segments whose
//! records are all `<= S`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use wal::{DeviceId, Ssn};

use crate::{DeviceLog, Error, Progress, ScanOptions, Sealed, Summary, Target};

/// How to open a durable database.
#[derive(Debug, Clone)]
pub struct StartupConfig {
    /// The data directory (catalog, device list; default place of logs and checkpoints).
    pub data_dir: PathBuf,
    /// One directory per log device; empty = [`DEFAULT_LOG_DEVICES`] under `data_dir/wal/`.
    pub wal_dirs: Vec<PathBuf>,
    /// Log options (ring size, group-commit delay, device backend). `start_ssn` is ignored:
    /// startup sets it from the log.
    pub log: wal::LogOptions,
    /// Server default of `synchronous_commit`.
    pub synchronous_commit: bool,
    /// Replay threads (at least 1).
    pub replay_threads: usize,
    /// Checkpoint directories, one writer each; empty = `data_dir/checkpoint`. Like the log
    /// devices, the list must stay the same across restarts (the newest checkpoint's metadata
    /// is in the first).
    pub checkpoint_dirs: Vec<PathBuf>,
    /// Take a checkpoint this often when anything was committed since the last (`None` =
    /// only on `CHECKPOINT` and at clean shutdown).
    pub checkpoint_interval: Option<Duration>,
    /// Wraps each device's segment store before the log opens it (fault injection in tests:
    /// `aspen serve --inject-wal-fault`). `None` in production.
    pub wrap_store: Option<StoreWrapper>,
}

/// See [`StartupConfig::wrap_store`]: `(device index, store) -> store`.
#[derive(Clone)]
pub struct StoreWrapper(
    #[allow(clippy::type_complexity)]
    pub  Arc<dyn Fn(usize, Box<dyn wal::SegmentStore>) -> Box<dyn wal::SegmentStore> + Send + Sync>,
);

impl std::fmt::Debug for StoreWrapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreWrapper")
    }
}

/// Log devices when no `--wal-dir` is given.
pub const DEFAULT_LOG_DEVICES: usize = 2;

impl StartupConfig {
    /// The checkpoint directories: the configured ones, or `data_dir/checkpoint`.
    pub fn checkpoint_dirs(&self) -> Vec<PathBuf> {
        if self.checkpoint_dirs.is_empty() {
            vec![self.data_dir.join("checkpoint")]
        } else {
            self.checkpoint_dirs.clone()
        }
    }

    /// The log directories: the configured ones, or `data_dir/wal/0 …` by default.
    pub fn wal_dirs(&self) -> Vec<PathBuf> {
        if self.wal_dirs.is_empty() {
            (0..DEFAULT_LOG_DEVICES)
                .map(|d| self.data_dir.join("wal").join(d.to_string()))
                .collect()
        } else {
            self.wal_dirs.clone()
        }
    }
}

/// An open database and what recovery did.
pub struct Started {
    /// The database, ready for sessions.
    pub db: Arc<sql::Database>,
    /// The log it writes (also reachable as `db.engine().log()`).
    pub log: Arc<wal::Log>,
    /// RSNe of the log that was recovered.
    pub rsne: Ssn,
    /// The largest SSN found on any device (every new SSN is above it).
    pub max_ssn: Ssn,
    /// What sealing changed.
    pub sealed: Sealed,
    /// The checkpoint loaded (`None` if there was none) and its load summary.
    pub checkpoint: Option<(crate::CheckpointMeta, Summary)>,
    /// The replay summary (bytes, records; the scan is part of the replay time, one pass).
    pub replay: Summary,
    /// Wall time of the whole startup.
    pub elapsed: Duration,
}

/// Runs the startup sequence of the module doc and returns the open database.
pub fn open_database(
    config: &StartupConfig,
    progress: &dyn Fn(&Progress),
) -> Result<Started, Error> {
    let start = Instant::now();
    let dirs = config.wal_dirs();
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|source| Error::Dir { path: config.data_dir.clone(), source })?;
    for dir in &dirs {
        std::fs::create_dir_all(dir).map_err(|source| Error::Dir { path: dir.clone(), source })?;
    }
    check_devices(&config.data_dir, &dirs)?;

    let catalog = catalog::Catalog::open(&config.data_dir.join("catalog"))
        .map_err(|e| Error::Startup(format!("cannot open the catalog: {e}")))?;

    let checkpoint_dirs = config.checkpoint_dirs();
    for dir in &checkpoint_dirs {
        std::fs::create_dir_all(dir).map_err(|source| Error::Dir { path: dir.clone(), source })?;
    }
    let checkpoint = crate::newest_checkpoint(&checkpoint_dirs)?;
    let cut = checkpoint.as_ref().map_or(Ssn::ZERO, |m| m.ssn);

    let devices = dirs
        .iter()
        .enumerate()
        .map(|(d, dir)| DeviceLog::from_dir(DeviceId(d as u16), dir))
        .collect::<Result<Vec<_>, _>>()?;
    let options = ScanOptions::for_log(&config.log).with_checkpoint(cut);
    let (plan, staged) = crate::stage(devices, options, config.replay_threads, progress)?;
    let sealed = plan.seal()?;
    let orphans = plan.delete_orphan_spills()?;
    if orphans > 0 {
        tracing::info!(orphans, "deleted spill files that no durable record refers to");
    }
    let rsne = plan.rsne();
    // The largest SSN on any device, and at least S: every new SSN must be above both.
    let max_ssn = plan.max_ssn();

    let options = wal::LogOptions {
        start_ssn: max_ssn,
        existing_segments: plan.existing_segments(),
        existing_spills: plan.existing_spills(),
        ..config.log.clone()
    };
    let log = Arc::new(match &config.wrap_store {
        None => wal::Log::open(&dirs, &options)?,
        Some(wrap) => {
            let mut stores = Vec::with_capacity(dirs.len());
            for (d, dir) in dirs.iter().enumerate() {
                let store = wal::DirStore::open(dir, options.device)
                    .map_err(|source| Error::Dir { path: dir.clone(), source })?;
                stores.push((wrap.0)(d, Box::new(store)));
            }
            wal::Log::with_stores(stores, &options)?
        }
    });
    let db_options = sql::DatabaseOptions {
        synchronous_commit: config.synchronous_commit,
        settings: vec![
            ("data_directory", config.data_dir.display().to_string()),
            ("aspen.wal_dirs", join_paths(&dirs)),
            (
                "aspen.group_commit_delay",
                format!("{}us", config.log.group_commit_delay.as_micros()),
            ),
            ("aspen.checkpoint_dirs", join_paths(&checkpoint_dirs)),
            ("aspen.wal_assist_below", format!("{}us", config.log.assist_below.as_micros())),
            ("aspen.wal_pairs_in_flight", config.log.max_in_flight.to_string()),
            ("wal_writer_delay", format!("{}ms", config.log.lazy_flush_delay.as_millis())),
            (
                "checkpoint_timeout",
                config.checkpoint_interval.map_or("0".into(), |i| format!("{}s", i.as_secs())),
            ),
        ],
    };
    let db = sql::Database::new(catalog, txn::Engine::new(log.clone()), db_options);

    let snapshot = db.snapshot();
    let live = |table: u32| snapshot.table_by_id(catalog::TableId(table)).is_some();
    let target = LiveTables { engine: crate::EngineTarget::new(db.engine()), live: &live };
    let checkpoint = match checkpoint {
        Some(meta) => {
            let summary = crate::load_checkpoint(&meta, &target, &live, progress)?;
            Some((meta, summary))
        }
        None => None,
    };
    let replay = staged.install(&target)?;
    db.engine()
        .finish_replay(max_ssn)
        .map_err(|e| Error::Startup(format!("cannot finish replay: {e}")))?;
    db.restore_row_ids().map_err(|e| Error::Startup(format!("cannot restore row ids: {e}")))?;

    let checkpointer = Arc::new(DbCheckpointer {
        db: Arc::downgrade(&db),
        log: log.clone(),
        dirs: checkpoint_dirs,
        running: Mutex::new(cut),
    });
    db.set_checkpointer(checkpointer.clone());
    if let Some(interval) = config.checkpoint_interval {
        spawn_periodic(checkpointer, interval)
            .map_err(|source| Error::Dir { path: config.data_dir.clone(), source })?;
    }
    Ok(Started { db, log, rsne, max_ssn, sealed, checkpoint, replay, elapsed: start.elapsed() })
}

/// Takes checkpoints of one database (see the module doc). One at a time.
pub struct DbCheckpointer {
    db: Weak<sql::Database>,
    log: Arc<wal::Log>,
    dirs: Vec<PathBuf>,
    /// Held while a checkpoint runs; the cut of the newest valid checkpoint.
    running: Mutex<Ssn>,
}

impl DbCheckpointer {
    /// Takes a checkpoint unless nothing was committed since the last one (`force` = always).
    /// Returns its metadata, or `None` if skipped.
    pub fn run(&self, force: bool) -> Result<Option<crate::CheckpointMeta>, Error> {
        let mut last = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if !force && self.log.max_ssn() <= *last {
            return Ok(None);
        }
        let db =
            self.db.upgrade().ok_or_else(|| Error::Startup("the database is closed".into()))?;
        let version = db.snapshot().version().0;
        let cut = db
            .engine()
            .begin_checkpoint()
            .map_err(|e| Error::Startup(format!("cannot start a checkpoint: {e}")))?;
        let meta = crate::write_checkpoint(&cut, &self.log, &self.dirs, version, &|_| {})?;
        drop(cut);
        *last = meta.ssn;
        crate::delete_older_checkpoints(&self.dirs, &meta)?;
        let deleted = self.log.delete_segments_below(Ssn(meta.ssn.0 + 1))?;
        tracing::info!(
            ssn = meta.ssn.0,
            rows = meta.rows,
            bytes = meta.bytes,
            deleted_log_segments = deleted.len(),
            "checkpoint valid"
        );
        Ok(Some(meta))
    }
}

impl sql::Checkpointer for DbCheckpointer {
    fn checkpoint(&self) -> Result<(), String> {
        self.run(true).map(drop).map_err(|e| e.to_string())
    }
}

/// The periodic checkpoint thread: every `interval`, a checkpoint if anything was committed
/// since the last one. It ends when the database is dropped.
fn spawn_periodic(checkpointer: Arc<DbCheckpointer>, interval: Duration) -> std::io::Result<()> {
    std::thread::Builder::new().name("checkpointer".into()).spawn(move || loop {
        std::thread::sleep(interval);
        if checkpointer.db.strong_count() == 0 {
            return;
        }
        if let Err(e) = checkpointer.run(false) {
            tracing::error!(error = %e, "periodic checkpoint failed");
        }
    })?;
    Ok(())
}

/// Skips rows of tables the catalog no longer has (dropped after their rows were logged).
struct LiveTables<'a> {
    engine: crate::EngineTarget<'a>,
    live: &'a (dyn Fn(u32) -> bool + Sync),
}

impl Target for LiveTables<'_> {
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String> {
        if !(self.live)(table) {
            return Ok(());
        }
        self.engine.install(table, key, row, ssn)
    }

    fn install_staged(&self, mut writes: crate::StagedWrites) -> Result<(), Error> {
        writes.retain(|w| (self.live)(w.table));
        self.engine.install_staged(writes)
    }

    fn finish_staged(&self) -> Result<(), Error> {
        self.engine.finish_staged()
    }
}

/// In the data directory: `<database id> <number of devices>`.
const DEVICES_FILE: &str = "wal_devices";
/// In each log directory: `<database id> <device index>`.
const DEVICE_FILE: &str = "aspen_device";

/// The first start records the device list (a database id and the device count in the data
/// directory, the id and the device's position in each log directory); later starts must
/// name the same devices in the same order: device ids are positions, and RSNe needs every
/// device, so a device left out or swapped would lose records silently. Directories may move.
fn check_devices(data_dir: &Path, dirs: &[PathBuf]) -> Result<(), Error> {
    let path = data_dir.join(DEVICES_FILE);
    let mismatch = |what: String| {
        Error::Startup(format!(
            "{what}; start the server with the --wal-dir list the data directory {} was created \
             with, in the same order",
            data_dir.display()
        ))
    };
    match std::fs::read_to_string(&path) {
        Ok(recorded) => {
            let mut it = recorded.split_whitespace();
            let (id, n) =
                (it.next().unwrap_or(""), it.next().and_then(|n| n.parse::<usize>().ok()));
            if n != Some(dirs.len()) {
                return Err(mismatch(format!(
                    "the data directory has {} log devices but {} were given",
                    n.map_or("?".to_string(), |n| n.to_string()),
                    dirs.len()
                )));
            }
            for (d, dir) in dirs.iter().enumerate() {
                let found = std::fs::read_to_string(dir.join(DEVICE_FILE)).unwrap_or_default();
                if found.trim_end() != format!("{id} {d}") {
                    return Err(mismatch(format!(
                        "{} is not log device {d} of this database (its {DEVICE_FILE} reads \"{}\")",
                        dir.display(),
                        found.trim_end()
                    )));
                }
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            for dir in dirs {
                let used = wal::list_segments(dir)
                    .map_err(|source| Error::Dir { path: dir.clone(), source })?;
                if !used.is_empty() {
                    return Err(mismatch(format!(
                        "{} already holds a log but the data directory has no {DEVICES_FILE}",
                        dir.display()
                    )));
                }
            }
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let id = format!("{:016x}", (nanos as u64) ^ (u64::from(std::process::id()) << 40));
            for (d, dir) in dirs.iter().enumerate() {
                write_durably(dir, DEVICE_FILE, &format!("{id} {d}\n"))?;
            }
            // Last: a crash before this leaves device files that the next start rewrites.
            write_durably(data_dir, DEVICES_FILE, &format!("{id} {}\n", dirs.len()))
        }
        Err(source) => Err(Error::Dir { path, source }),
    }
}

fn write_durably(dir: &Path, name: &str, contents: &str) -> Result<(), Error> {
    crate::durable_file::write_atomically(dir, &format!("{name}.tmp"), name, contents.as_bytes())
        .map(drop)
        .map_err(|(path, source)| Error::Dir { path, source })
}

fn join_paths(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}
