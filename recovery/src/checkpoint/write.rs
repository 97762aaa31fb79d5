//! [`write_checkpoint`]: the cut's rows into data files, one writer thread per directory, then
//! the metadata, last. The typestate `Checkpoint<Writing> → <Synced> → <Valid>` (STYLE rule
//! 11) makes the order of the steps that make a checkpoint count impossible to get wrong.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use txn::TableId;
use wal::Ssn;

use super::format::{
    block_header, data_file_name, file_header, meta_file_name, meta_tmp_name, push_row,
    CheckpointFile, CheckpointMeta, BLOCK_TARGET,
};
use super::{io_error, list_dir};
use crate::error::Error;
use crate::progress::{Phase, Progress};
use crate::PROGRESS_INTERVAL;

/// Bytes a data file buffers before it writes them out.
const WRITE_BUFFER: usize = 1 << 20;

/// The most data files one directory gets (rows are spread over them by key, so that loading
/// can run one reader per file).
const MAX_FILES_PER_DIR: usize = 16;

/// Typestate: data files being written.
pub(crate) enum Writing {}
/// Typestate: every data file and directory synced, metadata not written.
pub(crate) enum Synced {}
/// Typestate: metadata written after `CSN >= S`; the checkpoint counts.
pub(crate) enum Valid {}

/// A checkpoint on its way to being valid.
pub(crate) struct Checkpoint<State> {
    seq: u64,
    ssn: Ssn,
    catalog_version: u64,
    dirs: Vec<PathBuf>,
    files: Vec<CheckpointFile>,
    meta_path: Option<PathBuf>,
    state: PhantomData<State>,
}

/// Counters the writers share with the progress reporter.
#[derive(Default)]
struct Counters {
    bytes: AtomicU64,
    rows: AtomicU64,
}

/// One data file being written: header, blocks, end block (see the module doc).
struct DataFile {
    path: PathBuf,
    file: File,
    /// Bytes not yet written to `file`.
    out: Vec<u8>,
    /// The open block's payload and rows.
    block: Vec<u8>,
    block_rows: u32,
    /// CRC-32C and size of everything so far, rows so far.
    crc: u32,
    size: u64,
    rows: u64,
}

impl DataFile {
    fn create(path: PathBuf, part: u32, cut: Ssn) -> io::Result<DataFile> {
        let file = OpenOptions::new().write(true).create_new(true).open(&path)?;
        let mut f = DataFile {
            path,
            file,
            out: Vec::with_capacity(WRITE_BUFFER + BLOCK_TARGET),
            block: Vec::with_capacity(BLOCK_TARGET + 1024),
            block_rows: 0,
            crc: 0,
            size: 0,
            rows: 0,
        };
        f.emit(&file_header(part, cut));
        Ok(f)
    }

    fn emit(&mut self, bytes: &[u8]) {
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.size += bytes.len() as u64;
        self.out.extend_from_slice(bytes);
    }

    fn push(&mut self, table: u32, key: &[u8], row: &[u8], ssn: Ssn) -> io::Result<()> {
        push_row(&mut self.block, table, key, row, ssn);
        self.block_rows += 1;
        self.rows += 1;
        if self.block.len() >= BLOCK_TARGET {
            self.close_block()?;
        }
        Ok(())
    }

    /// Closes the open block (if it has rows) and writes out the buffer when it is full.
    fn close_block(&mut self) -> io::Result<()> {
        if self.block_rows > 0 {
            let block = std::mem::take(&mut self.block);
            self.emit(&block_header(self.block_rows, &block));
            self.emit(&block);
            self.block = block;
            self.block.clear();
            self.block_rows = 0;
        }
        if self.out.len() >= WRITE_BUFFER {
            self.file.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    /// Writes the last block and the end block, syncs the file.
    fn finish(mut self) -> io::Result<CheckpointFile> {
        self.close_block()?;
        self.emit(&block_header(0, &[]));
        self.file.write_all(&self.out)?;
        self.file.sync_all()?;
        Ok(CheckpointFile { path: self.path, size: self.size, rows: self.rows, crc32c: self.crc })
    }
}

/// FNV-1a of `(table, key)`: which of a directory's files a row goes to. Every version of a
/// key lands in the same file, so loaders (one per file) never install one key concurrently.
fn file_of(table: u32, key: &[u8], files: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in table.to_le_bytes().iter().chain(key) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % files as u64) as usize
}

/// The next free checkpoint sequence number: above every checkpoint file in `dirs` (complete
/// or not, so a crashed attempt's files are never overwritten).
fn next_seq(dirs: &[PathBuf]) -> Result<u64, Error> {
    let mut max = 0;
    for dir in dirs {
        for (_, kind) in list_dir(dir)? {
            max = max.max(kind.seq());
        }
    }
    Ok(max + 1)
}

/// Creates `dir` if missing, durably (its parent is synced).
fn ensure_dir(dir: &Path) -> Result<(), Error> {
    let io = |e| io_error(dir, e);
    if !dir.try_exists().map_err(io)? {
        fs::create_dir_all(dir).map_err(io)?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            File::open(parent).and_then(|f| f.sync_all()).map_err(io)?;
        }
    }
    Ok(())
}

/// Syncs a directory (new or renamed entries in it become durable).
pub(crate) fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(|e| io_error(dir, e))
}

/// Tables over directories: largest first to the directory with the fewest rows so far.
fn partition(cut: &txn::CheckpointCut, dirs: usize) -> Vec<Vec<TableId>> {
    let mut tables: Vec<(usize, TableId)> =
        cut.tables().into_iter().map(|t| (cut.approx_rows(t), t)).collect();
    tables.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut parts: Vec<(usize, Vec<TableId>)> = vec![(0, Vec::new()); dirs];
    for (rows, table) in tables {
        let least = parts.iter_mut().min_by_key(|p| p.0).expect("at least one directory");
        least.0 += rows;
        least.1.push(table);
    }
    parts.into_iter().map(|(_, t)| t).collect()
}

impl Checkpoint<Writing> {
    /// Writes every row of `cut` into data files in `dirs` (one thread per directory), each
    /// file synced, then every directory synced.
    fn write(
        cut: &txn::CheckpointCut,
        dirs: &[PathBuf],
        catalog_version: u64,
        progress: &dyn Fn(&Progress),
    ) -> Result<Checkpoint<Synced>, Error> {
        if dirs.is_empty() {
            return Err(Error::NoCheckpointDirs);
        }
        for dir in dirs {
            ensure_dir(dir)?;
        }
        let seq = next_seq(dirs)?;
        let parts = partition(cut, dirs.len());
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        let files_per_dir = parallelism.div_ceil(dirs.len()).clamp(1, MAX_FILES_PER_DIR);
        let rows_total: u64 = cut.tables().iter().map(|t| cut.approx_rows(*t) as u64).sum();
        let counters = Counters::default();
        let failed = AtomicBool::new(false);
        let start = Instant::now();
        let report = |c: &Counters| {
            progress(&Progress {
                phase: Phase::Checkpoint,
                bytes_done: c.bytes.load(Ordering::Relaxed),
                bytes_total: 0,
                records_done: c.rows.load(Ordering::Relaxed),
                records_total: rows_total.max(c.rows.load(Ordering::Relaxed)),
                elapsed: start.elapsed(),
            })
        };
        let results: Vec<Result<Vec<CheckpointFile>, Error>> = std::thread::scope(|s| {
            let (done_tx, done_rx) = mpsc::channel::<()>();
            let handles: Vec<_> = dirs
                .iter()
                .zip(&parts)
                .enumerate()
                .map(|(d, (dir, tables))| {
                    let (counters, failed, done) = (&counters, &failed, done_tx.clone());
                    s.spawn(move || {
                        let first_part = (d * files_per_dir) as u32;
                        let r = write_dir(
                            cut,
                            dir,
                            seq,
                            first_part,
                            files_per_dir,
                            tables,
                            counters,
                            failed,
                        );
                        if r.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        drop(done);
                        r
                    })
                })
                .collect();
            drop(done_tx);
            while let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(PROGRESS_INTERVAL)
            {
                report(&counters);
            }
            handles.into_iter().map(|h| h.join().expect("checkpoint writer panicked")).collect()
        });
        report(&counters);
        let mut files = Vec::new();
        let mut first_error = None;
        for r in results {
            match r {
                Ok(f) => files.extend(f),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            // Best effort: a crashed or failed attempt's files are also removed by the next
            // `delete_older_checkpoints`.
            for dir in dirs {
                for (path, kind) in list_dir(dir).unwrap_or_default() {
                    if kind.seq() == seq {
                        let _ = fs::remove_file(path);
                    }
                }
            }
            return Err(e);
        }
        for dir in dirs {
            sync_dir(dir)?;
        }
        Ok(Checkpoint {
            seq,
            ssn: cut.ssn(),
            catalog_version,
            dirs: dirs.to_vec(),
            files,
            meta_path: None,
            state: PhantomData,
        })
    }
}

/// One directory's writer: scans `tables`, spreading rows over `files` data files by key.
#[allow(clippy::too_many_arguments)]
fn write_dir(
    cut: &txn::CheckpointCut,
    dir: &Path,
    seq: u64,
    first_part: u32,
    files: usize,
    tables: &[TableId],
    counters: &Counters,
    failed: &AtomicBool,
) -> Result<Vec<CheckpointFile>, Error> {
    let mut out = Vec::with_capacity(files);
    for i in 0..files {
        let part = first_part + i as u32;
        let path = dir.join(data_file_name(seq, part));
        let f = DataFile::create(path.clone(), part, cut.ssn()).map_err(|e| io_error(&path, e))?;
        out.push(f);
    }
    let mut error: Option<(PathBuf, io::Error)> = None;
    for &table in tables {
        if failed.load(Ordering::Relaxed) {
            break;
        }
        let (mut rows, mut bytes) = (0u64, 0u64);
        cut.scan(table, &mut |key, row, ssn| {
            if error.is_some() {
                return;
            }
            let f = &mut out[file_of(table.0, key, files)];
            let before = f.size;
            if let Err(e) = f.push(table.0, key, row, ssn) {
                error = Some((f.path.clone(), e));
            }
            rows += 1;
            bytes += f.size - before;
            if rows.is_multiple_of(4096) {
                counters.rows.fetch_add(std::mem::take(&mut rows), Ordering::Relaxed);
                counters.bytes.fetch_add(std::mem::take(&mut bytes), Ordering::Relaxed);
            }
        })
        .map_err(Error::CheckpointScan)?;
        counters.rows.fetch_add(rows, Ordering::Relaxed);
        counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Some((path, e)) = error.take() {
            return Err(io_error(&path, e));
        }
    }
    let mut written = Vec::with_capacity(files);
    for f in out {
        let path = f.path.clone();
        written.push(f.finish().map_err(|e| io_error(&path, e))?);
    }
    Ok(written)
}

impl Checkpoint<Synced> {
    /// Waits until `CSN >= S` (every transaction the checkpoint holds is durable in the log),
    /// then writes the metadata atomically (temp file, fsync, rename, fsync the directory)
    /// into the first directory. From then on the checkpoint counts.
    fn validate(self, log: &wal::Log) -> Result<Checkpoint<Valid>, Error> {
        log.wait_csn(self.ssn).map_err(Error::Log)?;
        let dir = &self.dirs[0];
        let meta = self.meta(dir.join(meta_file_name(self.seq)));
        let bytes = super::format::encode_meta(&meta);
        crate::durable_file::write_atomically(
            dir,
            &meta_tmp_name(self.seq),
            &meta_file_name(self.seq),
            &bytes,
        )
        .map_err(|(path, e)| io_error(&path, e))?;
        let Checkpoint { seq, ssn, catalog_version, dirs, files, .. } = self;
        let meta_path = Some(meta.path);
        Ok(Checkpoint { seq, ssn, catalog_version, dirs, files, meta_path, state: PhantomData })
    }
}

impl Checkpoint<Valid> {
    fn into_meta(self) -> CheckpointMeta {
        let path = self.meta_path.clone().expect("a valid checkpoint has its metadata");
        self.meta(path)
    }
}

impl<State> Checkpoint<State> {
    /// The metadata describing this checkpoint, with its file at `path`.
    fn meta(&self, path: PathBuf) -> CheckpointMeta {
        CheckpointMeta {
            seq: self.seq,
            ssn: self.ssn,
            catalog_version: self.catalog_version,
            files: self.files.clone(),
            rows: self.files.iter().map(|f| f.rows).sum(),
            bytes: self.files.iter().map(|f| f.size).sum(),
            path,
        }
    }
}

/// Writes the checkpoint of `cut` into `dirs` and returns its metadata once it counts:
///
/// 1. the rows, one writer thread per directory (tables partitioned over the directories by
///    size, rows of a directory spread over up to 16 files by key), every row with its SSN;
///    each file synced, then each directory;
/// 2. waits until `log.csn() >= S` ([`wal::Log::wait_csn`]);
/// 3. writes the metadata last and atomically into `dirs[0]`.
///
/// A crash before 3 leaves files without metadata, which [`crate::newest_checkpoint`] ignores
/// and [`crate::delete_older_checkpoints`] removes later. Directories are created if missing.
/// `progress` is called every [`PROGRESS_INTERVAL`] with [`Phase::Checkpoint`]
/// (`bytes_total` is unknown, 0; `records_total` is an estimate). Keep `cut` alive until this
/// returns (dropping it ends copy-on-write).
///
/// Errors: [`Error::CheckpointIo`] (naming the file), [`Error::Log`] if the log failed before
/// `CSN >= S`, [`Error::NoCheckpointDirs`].
pub fn write_checkpoint(
    cut: &txn::CheckpointCut,
    log: &wal::Log,
    dirs: &[PathBuf],
    catalog_version: u64,
    progress: &dyn Fn(&Progress),
) -> Result<CheckpointMeta, Error> {
    let started = Instant::now();
    let meta = Checkpoint::<Writing>::write(cut, dirs, catalog_version, progress)?
        .validate(log)?
        .into_meta();
    tracing::info!(
        seq = meta.seq,
        ssn = meta.ssn.0,
        rows = meta.rows,
        bytes = meta.bytes,
        files = meta.files.len(),
        "checkpoint written in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    Ok(meta)
}
