//! Writing a small file so that a crash leaves either the old state or the whole new file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `dir/name` atomically and durably: `dir/tmp_name` is written and synced,
/// renamed over `dir/name`, then `dir` is synced. On failure, returns the path whose operation
/// failed and the OS error (callers choose the error variant that names it).
pub(crate) fn write_atomically(
    dir: &Path,
    tmp_name: &str,
    name: &str,
    bytes: &[u8],
) -> Result<PathBuf, (PathBuf, io::Error)> {
    let tmp = dir.join(tmp_name);
    let path = dir.join(name);
    (|| {
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })()
    .map_err(|e| (tmp.clone(), e))?;
    fs::rename(&tmp, &path).map_err(|e| (path.clone(), e))?;
    File::open(dir).and_then(|f| f.sync_all()).map_err(|e| (dir.to_path_buf(), e))?;
    Ok(path)
}
