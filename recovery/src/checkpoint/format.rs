//! The byte layouts of checkpoint files (tables in the module doc of `checkpoint`), their
//! names, and [`CheckpointMeta`]. Everything little-endian. Checked by the tests below against
//! the documented offsets.

use std::fmt;
use std::path::{Path, PathBuf};

use wal::Ssn;

/// First bytes of a data file.
pub(crate) const DATA_MAGIC: [u8; 8] = *b"ASPNCKPT";
/// First bytes of a metadata file.
pub(crate) const META_MAGIC: [u8; 8] = *b"ASPNMETA";
/// The format version written; the only one read.
pub(crate) const VERSION: u32 = 1;
/// Bytes of a data file's header.
pub(crate) const FILE_HEADER_LEN: usize = 32;
/// Bytes of a block header.
pub(crate) const BLOCK_HEADER_LEN: usize = 12;
/// Bytes of a row header (before the key and row bytes).
pub(crate) const ROW_HEADER_LEN: usize = 24;
/// A block is closed once its payload reaches this many bytes (a larger row makes a larger
/// block).
pub(crate) const BLOCK_TARGET: usize = 64 << 10;

/// One data file of a checkpoint, as its metadata lists it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CheckpointFile {
    /// Where it is: the file name joined to the checkpoint directory it was found in.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Rows it holds.
    pub rows: u64,
    /// CRC-32C of the whole file.
    pub crc32c: u32,
}

/// A checkpoint's metadata: what [`crate::newest_checkpoint`] finds and
/// [`crate::load_checkpoint`] loads. Written last and atomically by
/// [`crate::write_checkpoint`]: a checkpoint whose metadata file exists is complete, synced,
/// and was durable in the log's sense (`CSN >= ssn`) when the metadata was written.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CheckpointMeta {
    /// The checkpoint's sequence number: larger is newer (file names carry it).
    pub seq: u64,
    /// The cut `S`: the checkpoint holds every version with `wssn <= S` current at `S`;
    /// recovery replays the log records above it.
    pub ssn: Ssn,
    /// The catalog version the caller gave when writing it.
    pub catalog_version: u64,
    /// The data files.
    pub files: Vec<CheckpointFile>,
    /// Rows over all files (a `(key, ssn)` may be counted twice; see `txn::CheckpointCut::scan`).
    pub rows: u64,
    /// Bytes over all data files.
    pub bytes: u64,
    /// The metadata file.
    pub path: PathBuf,
}

/// What a file in a checkpoint directory is, by its name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FileKind {
    /// `checkpoint-<seq>-<part>.data`.
    Data { seq: u64, part: u32 },
    /// `checkpoint-<seq>.meta`.
    Meta { seq: u64 },
    /// `checkpoint-<seq>.meta.tmp`: metadata being written (never read).
    MetaTmp { seq: u64 },
}

impl FileKind {
    pub(crate) fn seq(self) -> u64 {
        match self {
            FileKind::Data { seq, .. } | FileKind::Meta { seq } | FileKind::MetaTmp { seq } => seq,
        }
    }
}

/// `checkpoint-<seq as 20 digits>-<part as 4 digits>.data`.
pub(crate) fn data_file_name(seq: u64, part: u32) -> String {
    format!("checkpoint-{seq:020}-{part:04}.data")
}

/// `checkpoint-<seq as 20 digits>.meta`.
pub(crate) fn meta_file_name(seq: u64) -> String {
    format!("checkpoint-{seq:020}.meta")
}

/// `checkpoint-<seq as 20 digits>.meta.tmp`.
pub(crate) fn meta_tmp_name(seq: u64) -> String {
    format!("{}.tmp", meta_file_name(seq))
}

/// The kind of a checkpoint file name; `None` for any other name.
pub(crate) fn parse_file_name(name: &str) -> Option<FileKind> {
    let rest = name.strip_prefix("checkpoint-")?;
    let digits = |s: &str, n: usize| {
        (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u64>().ok())?
    };
    if let Some(seq) = rest.strip_suffix(".meta.tmp") {
        return Some(FileKind::MetaTmp { seq: digits(seq, 20)? });
    }
    if let Some(seq) = rest.strip_suffix(".meta") {
        return Some(FileKind::Meta { seq: digits(seq, 20)? });
    }
    let stem = rest.strip_suffix(".data")?;
    let (seq, part) = stem.split_once('-')?;
    Some(FileKind::Data { seq: digits(seq, 20)?, part: u32::try_from(digits(part, 4)?).ok()? })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The header of data file `part` of a checkpoint at `cut`.
pub(crate) fn file_header(part: u32, cut: Ssn) -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[0..8].copy_from_slice(&DATA_MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&part.to_le_bytes());
    h[16..24].copy_from_slice(&cut.0.to_le_bytes());
    let crc = crc32c::crc32c(&h[0..24]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Checks a data file header; returns its part number and cut.
pub(crate) fn check_file_header(h: &[u8; FILE_HEADER_LEN]) -> Result<(u32, Ssn), String> {
    if h[0..8] != DATA_MAGIC {
        return Err("not a checkpoint data file (bad magic)".into());
    }
    if crc32c::crc32c(&h[0..24]) != u32_at(h, 24) {
        return Err("file header checksum mismatch".into());
    }
    let version = u32_at(h, 8);
    if version != VERSION {
        return Err(format!("unknown format version {version}"));
    }
    Ok((u32_at(h, 12), Ssn(u64_at(h, 16))))
}

/// Appends one row (layout in the module doc) to a block payload.
pub(crate) fn push_row(payload: &mut Vec<u8>, table: u32, key: &[u8], row: &[u8], ssn: Ssn) {
    payload.extend_from_slice(&table.to_le_bytes());
    payload.extend_from_slice(&(key.len() as u32).to_le_bytes());
    payload.extend_from_slice(&ssn.0.to_le_bytes());
    payload.extend_from_slice(&(row.len() as u32).to_le_bytes());
    payload.extend_from_slice(&[0; 4]);
    payload.extend_from_slice(key);
    payload.extend_from_slice(row);
}

/// The header of a block holding `rows` rows in `payload` (an end block: both empty).
pub(crate) fn block_header(rows: u32, payload: &[u8]) -> [u8; BLOCK_HEADER_LEN] {
    let mut h = [0u8; BLOCK_HEADER_LEN];
    h[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[4..8].copy_from_slice(&rows.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&h[0..8]), payload);
    h[8..12].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A block header's `(payload length, rows)`.
pub(crate) fn block_lengths(h: &[u8; BLOCK_HEADER_LEN]) -> (u32, u32) {
    (u32_at(h, 0), u32_at(h, 4))
}

/// Checks a block's CRC over its header fields and payload.
pub(crate) fn check_block(h: &[u8; BLOCK_HEADER_LEN], payload: &[u8]) -> Result<(), String> {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&h[0..8]), payload);
    if crc != u32_at(h, 8) {
        return Err("block checksum mismatch".into());
    }
    Ok(())
}

/// One decoded row of a block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RowRef<'a> {
    pub(crate) table: u32,
    pub(crate) ssn: Ssn,
    pub(crate) key: &'a [u8],
    pub(crate) row: &'a [u8],
}

/// Decodes the rows of a checked block payload, calling `f` for each. Exactly `rows` rows
/// must fill it.
pub(crate) fn decode_rows<'a, E>(
    payload: &'a [u8],
    rows: u32,
    mut f: impl FnMut(RowRef<'a>) -> Result<(), E>,
) -> Result<Result<(), E>, String> {
    let mut at = 0;
    for i in 0..rows {
        if payload.len() - at < ROW_HEADER_LEN {
            return Err(format!("row {i} of {rows} overruns its block"));
        }
        let h = &payload[at..at + ROW_HEADER_LEN];
        let (table, klen, ssn, rlen) =
            (u32_at(h, 0), u32_at(h, 4) as usize, Ssn(u64_at(h, 8)), u32_at(h, 16) as usize);
        let start = at + ROW_HEADER_LEN;
        if payload.len() - start < klen + rlen {
            return Err(format!("row {i} of {rows} overruns its block"));
        }
        let key = &payload[start..start + klen];
        let row = &payload[start + klen..start + klen + rlen];
        at = start + klen + rlen;
        if let Err(e) = f(RowRef { table, ssn, key, row }) {
            return Ok(Err(e));
        }
    }
    if at != payload.len() {
        return Err(format!("{} bytes after the last row of the block", payload.len() - at));
    }
    Ok(Ok(()))
}

/// Encodes the metadata file (layout in the module doc). File paths are stored as bare names.
pub(crate) fn encode_meta(meta: &CheckpointMeta) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&meta.seq.to_le_bytes());
    body.extend_from_slice(&meta.ssn.0.to_le_bytes());
    body.extend_from_slice(&meta.catalog_version.to_le_bytes());
    body.extend_from_slice(&meta.rows.to_le_bytes());
    body.extend_from_slice(&meta.bytes.to_le_bytes());
    body.extend_from_slice(&(meta.files.len() as u32).to_le_bytes());
    for f in &meta.files {
        let name = file_name(&f.path);
        body.extend_from_slice(&(name.len() as u16).to_le_bytes());
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(&f.size.to_le_bytes());
        body.extend_from_slice(&f.rows.to_le_bytes());
        body.extend_from_slice(&f.crc32c.to_le_bytes());
    }
    let mut out = Vec::with_capacity(16 + body.len() + 4);
    out.extend_from_slice(&META_MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The file name of a path, as a string (checkpoint names are ASCII).
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Decodes a metadata file. File paths come back as bare names (the caller resolves them).
pub(crate) fn decode_meta(bytes: &[u8], path: &Path) -> Result<CheckpointMeta, String> {
    if bytes.len() < 20 || bytes[0..8] != META_MAGIC {
        return Err("not a checkpoint metadata file (bad magic or too short)".into());
    }
    let body_len = u32_at(bytes, 12) as usize;
    if bytes.len() != 16 + body_len + 4 {
        return Err(format!("length {} does not match its body length {body_len}", bytes.len()));
    }
    if crc32c::crc32c(&bytes[..16 + body_len]) != u32_at(bytes, 16 + body_len) {
        return Err("metadata checksum mismatch".into());
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(format!("unknown format version {version}"));
    }
    let body = &bytes[16..16 + body_len];
    let short = || "metadata body too short".to_string();
    let mut at = 0;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let s = body.get(at..at + n).ok_or_else(short)?;
        at += n;
        Ok(s)
    };
    let u64_of = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
    let seq = u64_of(take(8)?);
    let ssn = Ssn(u64_of(take(8)?));
    let catalog_version = u64_of(take(8)?);
    let rows = u64_of(take(8)?);
    let total = u64_of(take(8)?);
    let n = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
    let mut files = Vec::new();
    for _ in 0..n {
        let len = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes"));
        let name = std::str::from_utf8(take(usize::from(len))?)
            .map_err(|_| "file name is not UTF-8".to_string())?
            .to_string();
        if !matches!(parse_file_name(&name), Some(FileKind::Data { seq: s, .. }) if s == seq) {
            return Err(format!("{name:?} is not a data file of checkpoint {seq}"));
        }
        let size = u64_of(take(8)?);
        let file_rows = u64_of(take(8)?);
        let crc = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
        files.push(CheckpointFile {
            path: PathBuf::from(name),
            size,
            rows: file_rows,
            crc32c: crc,
        });
    }
    if at != body.len() {
        return Err("trailing bytes in the metadata body".into());
    }
    if files.iter().map(|f| f.rows).sum::<u64>() != rows
        || files.iter().map(|f| f.size).sum::<u64>() != total
    {
        return Err("file rows or sizes do not add up to the totals".into());
    }
    Ok(CheckpointMeta {
        seq,
        ssn,
        catalog_version,
        files,
        rows,
        bytes: total,
        path: path.to_path_buf(),
    })
}

impl fmt::Display for CheckpointMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "checkpoint {} at S = {} (catalog version {}): {} rows, {} bytes in {} files",
            self.seq,
            self.ssn,
            self.catalog_version,
            self.rows,
            self.bytes,
            self.files.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offsets of the module doc's tables.
    #[test]
    fn layouts_match_the_documented_offsets() {
        let h = file_header(7, Ssn(0x0102_0304_0506_0708));
        assert_eq!(&h[0..8], b"ASPNCKPT");
        assert_eq!(u32_at(&h, 8), 1, "version at 8");
        assert_eq!(u32_at(&h, 12), 7, "part at 12");
        assert_eq!(u64_at(&h, 16), 0x0102_0304_0506_0708, "cut at 16");
        assert_eq!(u32_at(&h, 24), crc32c::crc32c(&h[0..24]), "crc at 24 covers 0..24");
        assert_eq!(&h[28..32], &[0; 4], "zero pad at 28");
        assert_eq!(check_file_header(&h), Ok((7, Ssn(0x0102_0304_0506_0708))));

        let mut payload = Vec::new();
        push_row(&mut payload, 9, b"key", b"value!", Ssn(42));
        assert_eq!(payload.len(), ROW_HEADER_LEN + 3 + 6);
        assert_eq!(u32_at(&payload, 0), 9, "table at 0");
        assert_eq!(u32_at(&payload, 4), 3, "key length at 4");
        assert_eq!(u64_at(&payload, 8), 42, "ssn at 8");
        assert_eq!(u32_at(&payload, 16), 6, "row length at 16");
        assert_eq!(&payload[20..24], &[0; 4], "zero pad at 20");
        assert_eq!(&payload[24..27], b"key", "key at 24");
        assert_eq!(&payload[27..], b"value!", "row after the key");

        let b = block_header(1, &payload);
        assert_eq!(u32_at(&b, 0) as usize, payload.len(), "payload length at 0");
        assert_eq!(u32_at(&b, 4), 1, "rows at 4");
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[0..8]), &payload);
        assert_eq!(u32_at(&b, 8), crc, "crc at 8 covers 0..8 and the payload");
        assert_eq!(check_block(&b, &payload), Ok(()));
        let mut got = Vec::new();
        decode_rows::<()>(&payload, 1, |r| {
            got.push((r.table, r.ssn, r.key.to_vec(), r.row.to_vec()));
            Ok(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(got, vec![(9, Ssn(42), b"key".to_vec(), b"value!".to_vec())]);
        assert!(decode_rows::<()>(&payload, 2, |_| Ok(())).is_err(), "too few bytes for 2 rows");

        let meta = CheckpointMeta {
            seq: 3,
            ssn: Ssn(99),
            catalog_version: 5,
            files: vec![CheckpointFile {
                path: PathBuf::from("/x").join(data_file_name(3, 1)),
                size: 100,
                rows: 4,
                crc32c: 0xDEAD_BEEF,
            }],
            rows: 4,
            bytes: 100,
            path: PathBuf::from("m"),
        };
        let m = encode_meta(&meta);
        assert_eq!(&m[0..8], b"ASPNMETA");
        assert_eq!(u32_at(&m, 8), 1, "version at 8");
        let body_len = u32_at(&m, 12) as usize;
        assert_eq!(m.len(), 16 + body_len + 4, "body at 16, crc after it");
        assert_eq!(u64_at(&m, 16), 3, "seq first in the body");
        assert_eq!(u64_at(&m, 24), 99, "then S");
        assert_eq!(u64_at(&m, 32), 5, "then the catalog version");
        assert_eq!(u32_at(&m, 16 + body_len), crc32c::crc32c(&m[..16 + body_len]));
        let back = decode_meta(&m, Path::new("m")).unwrap();
        assert_eq!(back.files[0].path, PathBuf::from(data_file_name(3, 1)), "bare names");
        assert_eq!(CheckpointMeta { files: meta.files.clone(), ..back }, meta);
        for i in 0..m.len() {
            let mut bad = m.clone();
            bad[i] ^= 0x10;
            assert!(decode_meta(&bad, Path::new("m")).is_err(), "flipped byte {i} accepted");
        }
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(data_file_name(12, 3), "checkpoint-00000000000000000012-0003.data");
        assert_eq!(
            parse_file_name(&data_file_name(12, 3)),
            Some(FileKind::Data { seq: 12, part: 3 })
        );
        assert_eq!(parse_file_name(&meta_file_name(12)), Some(FileKind::Meta { seq: 12 }));
        assert_eq!(parse_file_name(&meta_tmp_name(12)), Some(FileKind::MetaTmp { seq: 12 }));
        for other in ["checkpoint-12.meta", "x.data", "checkpoint-00000000000000000012-3.data"] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }
}
