//! Finding, loading and retiring checkpoints: [`newest_checkpoint`], [`load_checkpoint`],
//! [`delete_older_checkpoints`].

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use wal::Ssn;

use super::format::{
    block_lengths, check_block, check_file_header, decode_meta, decode_rows, file_name,
    CheckpointFile, CheckpointMeta, FileKind, BLOCK_HEADER_LEN, FILE_HEADER_LEN,
};
use super::write::sync_dir;
use super::{io_error, list_dir};
use crate::error::Error;
use crate::first_error::FirstError;
use crate::progress::{Phase, Progress, Summary};
use crate::target::{Staged, Target};
use crate::PROGRESS_INTERVAL;

/// The newest checkpoint in `dirs`: the one with the largest sequence number whose metadata
/// file exists. `None` if there is none. A checkpoint without metadata (a crash before its
/// last step) is ignored; the data files it lists are found in any of `dirs` (a checkpoint
/// directory may move, or the list be reordered).
///
/// A metadata file that exists but does not decode, or lists a data file that is in none of
/// `dirs`, is [`Error::CheckpointCorrupt`]: metadata is written atomically, so this is damage,
/// and falling back to an older checkpoint could silently lose what only the newer one and
/// the log above it held (older log segments may be gone). The operator decides.
pub fn newest_checkpoint(dirs: &[PathBuf]) -> Result<Option<CheckpointMeta>, Error> {
    let mut newest: Option<(u64, PathBuf)> = None;
    for dir in dirs {
        for (path, kind) in list_dir(dir)? {
            if let FileKind::Meta { seq } = kind {
                if newest.as_ref().is_none_or(|(s, _)| seq > *s) {
                    newest = Some((seq, path));
                }
            }
        }
    }
    let Some((_, path)) = newest else { return Ok(None) };
    let bytes = fs::read(&path).map_err(|e| io_error(&path, e))?;
    let corrupt =
        |reason: String| Error::CheckpointCorrupt { path: path.clone(), offset: 0, reason };
    let mut meta = decode_meta(&bytes, &path).map_err(corrupt)?;
    for f in &mut meta.files {
        let name = file_name(&f.path);
        let found = dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file());
        f.path = found.ok_or_else(|| {
            corrupt(format!("its data file {name} is in none of the checkpoint directories"))
        })?;
    }
    Ok(Some(meta))
}

/// Counters the loaders share with the progress reporter.
#[derive(Default)]
struct Counters {
    bytes: AtomicU64,
    rows: AtomicU64,
    installed: AtomicU64,
}

struct Shared<'a> {
    counters: Counters,
    errors: FirstError,
    target: &'a dyn Target,
    keep_table: &'a (dyn Fn(u32) -> bool + Sync),
    cut: Ssn,
}

impl Shared<'_> {
    fn fail(&self, e: Error) {
        self.errors.fail(e);
    }
}

/// Loads checkpoint `meta` into `target`: every row as a [`Staged`] write, in parallel, one
/// reader thread per data file (at most the machine's parallelism at once), each file's rows
/// through one `Target::install_staged` once the file has checked, then
/// `Target::finish_staged`. Rows of tables for which `keep_table`
/// says `false` (dropped since) are read and checked but not installed. Every version of a key
/// is in one file, so the target never sees one key from two threads.
///
/// Every byte is checked: the file header, each block's CRC-32C as it is read (before any of
/// its rows is installed), and at the end the file's size, row count and whole-file CRC-32C
/// against the metadata. Any mismatch is [`Error::CheckpointCorrupt`] naming the file and the
/// offset; never skipped (rows of other files installed before the damage stay, and recovery
/// must stop).
/// [`Error::Install`] if the target refuses a row.
///
/// `progress` gets [`Phase::Load`] reports every [`PROGRESS_INTERVAL`]. The [`Summary`] says:
/// `devices` = data files, `threads` = readers, `cut` = `rsne` = `S`, `replay` = load time,
/// `bytes` and `records` = what was read, `replayed` = `entries` = rows installed.
pub fn load_checkpoint(
    meta: &CheckpointMeta,
    target: &dyn Target,
    keep_table: &(dyn Fn(u32) -> bool + Sync),
    progress: &dyn Fn(&Progress),
) -> Result<Summary, Error> {
    let start = Instant::now();
    let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = meta.files.len().min(parallelism).max(1);
    let shared = Shared {
        counters: Counters::default(),
        errors: FirstError::default(),
        target,
        keep_table,
        cut: meta.ssn,
    };
    let report = |shared: &Shared<'_>| {
        progress(&Progress {
            phase: Phase::Load,
            bytes_done: shared.counters.bytes.load(Ordering::Relaxed),
            bytes_total: meta.bytes,
            records_done: shared.counters.rows.load(Ordering::Relaxed),
            records_total: meta.rows,
            elapsed: start.elapsed(),
        })
    };
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        for _ in 0..threads {
            let (shared, next, done) = (&shared, &next, done_tx.clone());
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = meta.files.get(i) else { break };
                    if shared.errors.failed() {
                        break;
                    }
                    if let Err(e) = load_file(file, shared) {
                        shared.fail(e);
                        break;
                    }
                }
                drop(done);
            });
        }
        drop(done_tx);
        while let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(PROGRESS_INTERVAL) {
            report(&shared);
        }
    });
    if !shared.errors.failed() {
        if let Err(e) = target.finish_staged() {
            shared.fail(e);
        }
    }
    report(&shared);
    shared.errors.into_result()?;
    let c = &shared.counters;
    let installed = c.installed.load(Ordering::Relaxed);
    let summary = Summary {
        devices: meta.files.len(),
        threads,
        cut: meta.ssn,
        rsne: meta.ssn,
        scan: std::time::Duration::ZERO,
        replay: start.elapsed(),
        bytes: c.bytes.load(Ordering::Relaxed),
        spill_bytes: 0,
        records: c.rows.load(Ordering::Relaxed),
        replayed: installed,
        entries: installed,
    };
    tracing::info!(
        seq = meta.seq,
        ssn = meta.ssn.0,
        rows = summary.records,
        installed,
        "checkpoint loaded in {:.3} s",
        summary.replay.as_secs_f64()
    );
    Ok(summary)
}

/// A reader that tracks its offset and the CRC-32C of everything read.
struct Checked<R> {
    inner: R,
    offset: u64,
    crc: u32,
}

impl<R: Read> Checked<R> {
    fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact(buf)?;
        self.offset += buf.len() as u64;
        self.crc = crc32c::crc32c_append(self.crc, buf);
        Ok(())
    }
}

/// Loads one data file (see [`load_checkpoint`] for the checks).
fn load_file(file: &CheckpointFile, shared: &Shared<'_>) -> Result<(), Error> {
    let path = &file.path;
    let corrupt = |offset: u64, reason: String| Error::CheckpointCorrupt {
        path: path.clone(),
        offset,
        reason,
    };
    let f = File::open(path).map_err(|e| io_error(path, e))?;
    let size = f.metadata().map_err(|e| io_error(path, e))?.len();
    if size != file.size {
        return Err(corrupt(0, format!("size {size}, the metadata says {}", file.size)));
    }
    let mut r = Checked { inner: BufReader::with_capacity(1 << 20, f), offset: 0, crc: 0 };
    let truncated = |offset: u64| corrupt(offset, "ends before its end block".into());
    let mut header = [0u8; FILE_HEADER_LEN];
    r.read_exact(&mut header).map_err(|_| truncated(0))?;
    let (_, cut) = check_file_header(&header).map_err(|e| corrupt(0, e))?;
    if cut != shared.cut {
        return Err(corrupt(0, format!("cut {cut}, the metadata says {}", shared.cut)));
    }
    let c = &shared.counters;
    let mut payload = Vec::new();
    let mut rows = 0u64;
    // The file's rows, installed in one `install_staged` once the whole file has checked.
    let mut staged = crate::StagedWrites::new();
    loop {
        if shared.errors.failed() {
            return Ok(()); // another file failed and recorded why
        }
        let at = r.offset;
        let mut h = [0u8; BLOCK_HEADER_LEN];
        r.read_exact(&mut h).map_err(|_| truncated(at))?;
        let (len, n) = block_lengths(&h);
        if len == 0 && n == 0 {
            check_block(&h, &[]).map_err(|e| corrupt(at, format!("end block: {e}")))?;
            break;
        }
        if u64::from(len) > size - r.offset {
            return Err(corrupt(at, format!("block of {len} bytes overruns the file")));
        }
        payload.resize(len as usize, 0);
        r.read_exact(&mut payload).map_err(|_| truncated(at))?;
        check_block(&h, &payload).map_err(|e| corrupt(at, e))?;
        let mut installed = 0u64;
        let result = decode_rows(&payload, n, |row| {
            if row.ssn > shared.cut || row.ssn == Ssn::ZERO {
                return Err(corrupt(at, format!("a row version {} outside (0, S]", row.ssn)));
            }
            if (shared.keep_table)(row.table) {
                staged.push(Staged::new(row.table, row.key, Some(row.row), row.ssn));
                installed += 1;
            }
            Ok(())
        })
        .map_err(|e| corrupt(at, e))?;
        result?;
        rows += u64::from(n);
        c.rows.fetch_add(u64::from(n), Ordering::Relaxed);
        c.installed.fetch_add(installed, Ordering::Relaxed);
        c.bytes.fetch_add(r.offset - at, Ordering::Relaxed);
    }
    c.bytes.fetch_add(FILE_HEADER_LEN as u64 + BLOCK_HEADER_LEN as u64, Ordering::Relaxed);
    if r.offset != size {
        return Err(corrupt(r.offset, format!("{} bytes after the end block", size - r.offset)));
    }
    if rows != file.rows {
        return Err(corrupt(r.offset, format!("{rows} rows, the metadata says {}", file.rows)));
    }
    if r.crc != file.crc32c {
        return Err(corrupt(0, "whole-file checksum mismatch".into()));
    }
    shared.target.install_staged(staged)
}

/// Deletes every checkpoint older than `meta` (a smaller sequence number) from `dirs`,
/// complete or not: first their metadata files (so that a crash in the middle never leaves
/// metadata whose data files are gone), then their data files, syncing each directory after
/// each step. `meta` must be valid (its metadata file must exist), as returned by
/// [`crate::write_checkpoint`] or [`newest_checkpoint`]; otherwise [`Error::CheckpointIo`]
/// and nothing is deleted.
pub fn delete_older_checkpoints(dirs: &[PathBuf], meta: &CheckpointMeta) -> Result<(), Error> {
    if !meta.path.is_file() {
        return Err(io_error(
            &meta.path,
            io::Error::new(io::ErrorKind::NotFound, "the newer checkpoint's metadata is missing"),
        ));
    }
    for metadata_first in [true, false] {
        for dir in dirs {
            let mut removed = false;
            for (path, kind) in list_dir(dir)? {
                let is_meta = matches!(kind, FileKind::Meta { .. } | FileKind::MetaTmp { .. });
                if kind.seq() < meta.seq && is_meta == metadata_first {
                    remove(&path)?;
                    removed = true;
                }
            }
            if removed {
                sync_dir(dir)?;
            }
        }
    }
    Ok(())
}

fn remove(path: &Path) -> Result<(), Error> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error(path, e)),
        _ => Ok(()),
    }
}
