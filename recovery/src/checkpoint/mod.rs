//! Checkpoints on disk (DESIGN.md §5): [`write_checkpoint`] writes a `txn::CheckpointCut`,
//! [`newest_checkpoint`] finds the newest valid one, [`load_checkpoint`] loads it in parallel,
//! [`delete_older_checkpoints`] retires the ones before it.
//!
//! ## When a checkpoint counts
//!
//! ```text
//! Checkpoint<Writing> ── rows into data files, one thread per directory; each file fsynced,
//!        │               then each directory
//!        ▼
//! Checkpoint<Synced>  ── wait until CSN >= S (every transaction in the cut is durable)
//!        │
//!        ▼
//! Checkpoint<Valid>   ── metadata written last and atomically: temp file, fsync, rename,
//!                        fsync the directory
//! ```
//!
//! Only a checkpoint whose metadata file exists is ever loaded. Once one is valid, older
//! checkpoints can go ([`delete_older_checkpoints`]) and so can log segments whose records are
//! all `<= S` (`wal::Log::delete_segments_below(S + 1)`); recovery then scans the log with
//! `ScanOptions::checkpoint_ssn = S`, so that a device whose old segments are gone still
//! counts as durable up to `S`.
//!
//! ## Files
//!
//! In each checkpoint directory (`dirs`, e.g. one per checkpoint device), for checkpoint
//! sequence number `seq` (one more than any checkpoint file already there, so a crashed
//! attempt's files are never overwritten; two checkpoints may share a cut `S`):
//!
//! - `checkpoint-<seq:020>-<part:04>.data`: rows. The tables are partitioned over the
//!   directories (largest first, to the least loaded), and a directory's rows are spread over
//!   up to 16 files by a hash of `(table, key)`, so that every version of a key is in one
//!   file and loading runs one reader per file without two installing the same key.
//! - `checkpoint-<seq:020>.meta` (in `dirs[0]`): the metadata ([`CheckpointMeta`]);
//!   `checkpoint-<seq:020>.meta.tmp` while it is written.
//!
//! Data file, little-endian:
//!
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 8 | magic `ASPNCKPT` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | part number |
//! | 16 | 8 | the cut `S` |
//! | 24 | 4 | CRC-32C of bytes 0..24 |
//! | 28 | 4 | zero |
//! | 32 | | blocks, then an end block (a block header with length 0 and 0 rows) |
//!
//! Block (at most one 64 KiB payload plus one row past it):
//!
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 4 | payload length `n` |
//! | 4 | 4 | rows in the payload |
//! | 8 | 4 | CRC-32C of bytes 0..8 and the payload |
//! | 12 | `n` | rows |
//!
//! Row:
//!
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 4 | table id |
//! | 4 | 4 | key length `k` |
//! | 8 | 8 | SSN of the version (`0 < ssn <= S`) |
//! | 16 | 4 | row length `r` |
//! | 20 | 4 | zero |
//! | 24 | `k` | key |
//! | 24 + `k` | `r` | row |
//!
//! A `(key, ssn)` may appear twice in a checkpoint (see `txn::CheckpointCut::scan`), always
//! in the same file; loading keeps the largest SSN per key, so the duplicate is harmless.
//!
//! Metadata file:
//!
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 8 | magic `ASPNMETA` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | body length `b` |
//! | 16 | `b` | body: `seq` u64, `S` u64, catalog version u64, rows u64, bytes u64, file count u32, then per file: name length u16, name, size u64, rows u64, CRC-32C of the whole file u32 |
//! | 16 + `b` | 4 | CRC-32C of bytes 0..16 + `b` |
//!
//! Loading checks every block's CRC before installing its rows, then each file's size, row
//! count and whole-file CRC against the metadata. A mismatch is
//! [`crate::Error::CheckpointCorrupt`] naming the file: recovery stops, nothing is skipped.
//! `format.rs` has a test of every offset above.
//!
//! ## Not here
//!
//! File operations call `std::fs` directly: there is no fault-injecting shim for checkpoint
//! files yet (STYLE rule 7). Secondary indexes are not stored (rebuilt after loading), nor
//! are the tables' hidden row-id counters (recovered from the keys by the SQL layer).

mod format;
mod load;
mod write;

pub use format::{CheckpointFile, CheckpointMeta};
pub use load::{delete_older_checkpoints, load_checkpoint, newest_checkpoint};
pub use write::write_checkpoint;

use std::io;
use std::path::{Path, PathBuf};

use crate::error::Error;
use format::FileKind;

/// The error for a failed operation on a checkpoint file or directory.
pub(crate) fn io_error(path: &Path, source: io::Error) -> Error {
    Error::CheckpointIo { path: path.to_path_buf(), source }
}

/// The checkpoint files in `dir` (none if it does not exist), with their kinds.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<(PathBuf, FileKind)>, Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        let name = entry.file_name();
        if let Some(kind) = name.to_str().and_then(format::parse_file_name) {
            out.push((entry.path(), kind));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}
