//! The log record format (DESIGN.md §3).
//!
//! Every record is self-delimiting and self-checking. All integers are little-endian.
//!
//! | offset | size | field   | meaning                                                          |
//! |-------:|-----:|---------|------------------------------------------------------------------|
//! |      0 |    4 | `len`   | length of the **whole record** in bytes, header included (≥ 17)  |
//! |      4 |    4 | `crc`   | CRC-32C (Castagnoli) of bytes `0..4` followed by bytes `8..len`  |
//! |      8 |    8 | `ssn`   | the transaction's SSN; never 0                                   |
//! |     16 |    1 | `flags` | bits 0–3 kind (1 value, 2 command, 3 marker, 4 abort, 5 spilled); bit 4 BLIND; bits 5–7 zero |
//! |     17 |  len − 17 | `payload` | kind-specific (value payload below; opaque otherwise)  |
//!
//! The CRC covers `len`, `ssn`, `flags` and the payload: every field but itself. `len` counts
//! the whole record so that a reader can step from record to record without knowing the header
//! size, and so that an all-zero header (`len = 0`, what a preallocated, zero-filled segment
//! holds past the end of the log) can never be a record. Neither can any record whose kind is 0,
//! whose SSN is 0, or whose CRC does not check.
//!
//! ## Contract of [`Record::decode`]
//!
//! Given the bytes from a record boundary to the end of what is available:
//! - `Ok(Some((record, len)))`: a complete record whose CRC checks; the next one starts `len`
//!   bytes later;
//! - `Ok(None)`: *incomplete*: fewer than [`HEADER_LEN`] bytes, or fewer than `len` bytes where
//!   `len` itself is plausible (`HEADER_LEN ..= MAX_RECORD_LEN`). A torn write looks like this;
//! - `Err(Corrupt)`: the bytes cannot be a record: implausible `len`, CRC mismatch, unknown
//!   flags, SSN 0. A torn write can look like this too (a zero-filled tail gives `len = 0`).
//!
//! Whether a bad record is a torn tail or corruption is not decided here: it depends on what
//! follows it, and [`crate::reader`] decides.
//!
//! ## Value payload
//!
//! A [`RecordKind::Value`] record carries the writes of one transaction:
//!
//! | size    | field                                                          |
//! |--------:|----------------------------------------------------------------|
//! |       4 | `count`: number of entries                                     |
//! | then, `count` times:                                            ||
//! |       4 | `table` (the catalog's table id)                               |
//! |       4 | `key_len`                                                      |
//! | key_len | key bytes                                                      |
//! |       4 | `row_len`, or `0xFFFF_FFFF` for a delete (no row bytes follow) |
//! | row_len | row bytes                                                      |
//!
//! Keys and rows are opaque here: `wal` never interprets SQL values (STYLE §2).
//!
//! ## Spilled payload
//!
//! A transaction whose value payload is too large for one record (a log buffer's ring bounds
//! a record) writes the payload to a *spill file* of its device first ([`crate::Log::spill`]:
//! written and synced before the record is reserved), then a [`RecordKind::Spilled`] record
//! whose payload is a [`SpillRef`]: `id` (8), `len` (8), `crc` (4, CRC-32C of the spilled
//! value payload). Recovery replays it as the value record it stands for; a missing or
//! mismatching spill file is corruption.

use std::fmt;

use crate::ssn::Ssn;

/// Bytes before the payload: `len` (4) + `crc` (4) + `ssn` (8) + `flags` (1).
pub const HEADER_LEN: usize = 17;

/// The largest record the format allows (1 GiB). A larger `len` is corruption, not a torn tail.
pub const MAX_RECORD_LEN: usize = 1 << 30;

/// Offset of the `len` field.
pub const LEN_OFFSET: usize = 0;
/// Offset of the `crc` field.
pub const CRC_OFFSET: usize = 4;
/// Offset of the `ssn` field.
pub const SSN_OFFSET: usize = 8;
/// Offset of the `flags` byte.
pub const FLAGS_OFFSET: usize = 16;
/// Offset of the payload.
pub const PAYLOAD_OFFSET: usize = HEADER_LEN;

/// Flags bits 0–3: the [`RecordKind`].
pub const FLAG_KIND_MASK: u8 = 0x0F;
/// Flags bit 4: the transaction wrote without reading (DESIGN.md §3: acknowledged at its own
/// device's DSN). Only valid on value and command records.
pub const FLAG_BLIND: u8 = 0x10;
/// Flags bits 5–7: reserved, always zero; a record with any of them set is corrupt.
pub const FLAG_RESERVED: u8 = 0xE0;

/// `row_len` of a value entry that deletes its key.
pub const DELETE_ROW_LEN: u32 = u32::MAX;

/// What a record carries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum RecordKind {
    /// The writes of a transaction (the value payload).
    Value = 1,
    /// A command-logged stored procedure call (DESIGN.md §4); the payload is opaque here.
    Command = 2,
    /// An idle-device progress marker (DESIGN.md §3): the SSN is the progress; empty payload.
    Marker = 3,
    /// Fills the reservation of a transaction that failed after taking its SSN (DESIGN.md §4);
    /// empty payload.
    Abort = 4,
    /// The writes of a transaction whose value payload is in a spill file of the same device;
    /// the payload is a [`SpillRef`].
    Spilled = 5,
}

impl RecordKind {
    /// Whether records of this kind carry a transaction's writes (and may be BLIND).
    pub fn is_transaction(self) -> bool {
        matches!(self, RecordKind::Value | RecordKind::Command | RecordKind::Spilled)
    }
}

/// Names the spill file that holds a [`RecordKind::Spilled`] record's value payload, and
/// checks it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SpillRef {
    /// The spill file's id on its device.
    pub id: u64,
    /// The value payload's length.
    pub len: u64,
    /// CRC-32C of the value payload.
    pub crc: u32,
}

impl SpillRef {
    /// Encoded length of a spill reference (the payload of a spilled record).
    pub const LEN: usize = 20;

    /// The reference to spill file `id` holding `payload`.
    pub fn of(id: u64, payload: &[u8]) -> SpillRef {
        SpillRef { id, len: payload.len() as u64, crc: crc32c::crc32c(payload) }
    }

    /// The payload of the spilled record.
    pub fn encode(&self) -> [u8; SpillRef::LEN] {
        let mut out = [0u8; SpillRef::LEN];
        out[..8].copy_from_slice(&self.id.to_le_bytes());
        out[8..16].copy_from_slice(&self.len.to_le_bytes());
        out[16..].copy_from_slice(&self.crc.to_le_bytes());
        out
    }

    /// Reads a spilled record's payload.
    pub fn decode(payload: &[u8]) -> Result<SpillRef, Corrupt> {
        if payload.len() != SpillRef::LEN {
            return Err(Corrupt::Payload { what: "spill reference" });
        }
        Ok(SpillRef {
            id: u64::from_le_bytes(payload[..8].try_into().expect("8 bytes")),
            len: u64::from_le_bytes(payload[8..16].try_into().expect("8 bytes")),
            crc: u32::from_le_bytes(payload[16..].try_into().expect("4 bytes")),
        })
    }

    /// Whether `bytes` (a spill file's contents) are the payload this reference names.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        bytes.len() as u64 == self.len && crc32c::crc32c(bytes) == self.crc
    }
}

impl RecordKind {
    fn from_bits(bits: u8) -> Option<RecordKind> {
        match bits {
            1 => Some(RecordKind::Value),
            2 => Some(RecordKind::Command),
            3 => Some(RecordKind::Marker),
            4 => Some(RecordKind::Abort),
            5 => Some(RecordKind::Spilled),
            _ => None,
        }
    }
}

/// Why bytes are not a valid record, or why a log is damaged. Used as the `reason` of
/// [`crate::Error::Corrupt`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum Corrupt {
    /// `len` is below [`HEADER_LEN`] or above [`MAX_RECORD_LEN`].
    #[error("implausible record length {len}")]
    Length {
        /// The stored `len`.
        len: u32,
    },
    /// The CRC-32C does not match.
    #[error("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// The stored CRC.
        stored: u32,
        /// The CRC of the bytes as read.
        computed: u32,
    },
    /// The CRC checks but the flags byte is not one this version writes.
    #[error("invalid flags {flags:#04x}")]
    Flags {
        /// The flags byte.
        flags: u8,
    },
    /// The CRC checks but the SSN is 0, which no transaction takes.
    #[error("record with SSN 0")]
    ZeroSsn,
    /// A record claims more bytes than the segment holds, yet valid records follow it.
    #[error("record of {len} bytes with only {available} bytes left, followed by valid records")]
    Incomplete {
        /// The stored `len`.
        len: u32,
        /// Bytes from the record's start to the end of the segment.
        available: u64,
    },
    /// I2 violated: an SSN that does not exceed the previous record's on the same device.
    #[error("SSN {ssn} after SSN {prev} (I2: SSNs strictly increase within a device)")]
    SsnOrder {
        /// The previous record's SSN.
        prev: Ssn,
        /// This record's SSN.
        ssn: Ssn,
    },
    /// A segment that is not the last of its device has nonzero bytes after its last record
    /// (closed segments end in zeros; see [`crate::reader`]).
    #[error("nonzero bytes after the end of a closed segment (its last record ends at {end})")]
    AfterEnd {
        /// Where the segment's last valid record ends.
        end: u64,
    },
    /// The payload of a record whose CRC checks does not parse.
    #[error("malformed {what} payload")]
    Payload {
        /// Which payload.
        what: &'static str,
    },
}

/// One log record, borrowing its payload. See the module doc for the byte layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Record<'a> {
    /// The transaction's SSN (for a marker: the progress it records). Never [`Ssn::ZERO`].
    pub ssn: Ssn,
    /// What the payload is.
    pub kind: RecordKind,
    /// The transaction was blind (wrote without reading). Only on value and command records.
    pub blind: bool,
    /// The kind-specific payload.
    pub payload: &'a [u8],
}

impl<'a> Record<'a> {
    /// The encoded size of a record with a payload of `payload_len` bytes.
    pub fn encoded_len_for(payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// The encoded size of this record.
    pub fn encoded_len(&self) -> usize {
        Self::encoded_len_for(self.payload.len())
    }

    /// The flags byte.
    pub fn flags(&self) -> u8 {
        self.kind as u8 | if self.blind { FLAG_BLIND } else { 0 }
    }

    /// Appends the encoded record to `out`.
    ///
    /// # Panics
    /// If the record breaks the format's rules: SSN 0, BLIND on a marker or abort record, or an
    /// encoded length above [`MAX_RECORD_LEN`].
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + self.encoded_len(), 0);
        self.write_to(&mut out[start..]);
    }

    /// Writes the encoded record at the start of `out` (for example a reserved range of a log
    /// buffer) and returns its length.
    ///
    /// # Panics
    /// As [`Record::encode_into`], and if `out` is shorter than [`Record::encoded_len`].
    pub fn write_to(&self, out: &mut [u8]) -> usize {
        let len = self.encoded_len();
        assert!(len <= MAX_RECORD_LEN, "record of {len} bytes exceeds MAX_RECORD_LEN");
        assert!(self.ssn != Ssn::ZERO, "a record needs an SSN above 0");
        assert!(!self.blind || self.kind.is_transaction(), "BLIND on a {:?} record", self.kind);
        assert!(out.len() >= len, "{} bytes of room for a record of {len}", out.len());
        let mut head = [0u8; HEADER_LEN];
        head[LEN_OFFSET..CRC_OFFSET].copy_from_slice(&(len as u32).to_le_bytes());
        head[SSN_OFFSET..FLAGS_OFFSET].copy_from_slice(&self.ssn.0.to_le_bytes());
        head[FLAGS_OFFSET] = self.flags();
        // The CRC from the header and the payload where they are, not from `out`: reading
        // back bytes just stored there (a log buffer's cold lines) would wait for the stores.
        let crc = crate::crc::record_split(&head, self.payload);
        head[CRC_OFFSET..SSN_OFFSET].copy_from_slice(&crc.to_le_bytes());
        out[..PAYLOAD_OFFSET].copy_from_slice(&head);
        out[PAYLOAD_OFFSET..len].copy_from_slice(self.payload);
        len
    }

    /// Decodes the record at the start of `buf`. See the module doc for the three outcomes.
    pub fn decode(buf: &'a [u8]) -> Result<Option<(Record<'a>, usize)>, Corrupt> {
        Record::decode_inner(buf, false)
    }

    /// [`Record::decode`] of a whole record whose CRC [`check_three`] has already checked in
    /// these very bytes: the same result without computing the CRC again.
    pub(crate) fn decode_crc_checked(
        buf: &'a [u8],
    ) -> Result<Option<(Record<'a>, usize)>, Corrupt> {
        Record::decode_inner(buf, true)
    }

    fn decode_inner(
        buf: &'a [u8],
        crc_checked: bool,
    ) -> Result<Option<(Record<'a>, usize)>, Corrupt> {
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let len32 = u32::from_le_bytes(buf[LEN_OFFSET..CRC_OFFSET].try_into().expect("4 bytes"));
        let len = len32 as usize;
        if !(HEADER_LEN..=MAX_RECORD_LEN).contains(&len) {
            return Err(Corrupt::Length { len: len32 });
        }
        if buf.len() < len {
            return Ok(None);
        }
        let bytes = &buf[..len];
        if !crc_checked {
            let (stored, computed) = (stored_crc(bytes), checksum(bytes));
            if stored != computed {
                return Err(Corrupt::Checksum { stored, computed });
            }
        }
        let ssn = Ssn(u64::from_le_bytes(bytes[SSN_OFFSET..FLAGS_OFFSET].try_into().expect("8")));
        let flags = bytes[FLAGS_OFFSET];
        let kind = RecordKind::from_bits(flags & FLAG_KIND_MASK);
        let blind = flags & FLAG_BLIND != 0;
        let kind = match kind {
            Some(kind) if flags & FLAG_RESERVED == 0 && (!blind || kind.is_transaction()) => kind,
            _ => return Err(Corrupt::Flags { flags }),
        };
        if ssn == Ssn::ZERO {
            return Err(Corrupt::ZeroSsn);
        }
        Ok(Some((Record { ssn, kind, blind, payload: &bytes[PAYLOAD_OFFSET..] }, len)))
    }

    /// The entries of a [`RecordKind::Value`] record.
    pub fn values(&self) -> Result<Vec<ValueEntry<'a>>, Corrupt> {
        if self.kind != RecordKind::Value {
            return Err(Corrupt::Payload { what: "value (record is not a value record)" });
        }
        decode_values(self.payload)
    }
}

/// CRC-32C of `len` and everything after `crc` (`bytes` is one whole record).
fn checksum(bytes: &[u8]) -> u32 {
    crate::crc::record(bytes)
}

/// The CRC stored in a record's bytes.
fn stored_crc(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[CRC_OFFSET..SSN_OFFSET].try_into().expect("4 bytes"))
}

/// The length a record at the start of `buf` claims, if it is plausible and the whole record
/// is in `buf`.
fn whole_len(buf: &[u8]) -> Option<usize> {
    let len = u32::from_le_bytes(buf.get(LEN_OFFSET..CRC_OFFSET)?.try_into().ok()?) as usize;
    ((HEADER_LEN..=MAX_RECORD_LEN).contains(&len) && len <= buf.len()).then_some(len)
}

/// Checks the CRCs of the three records that start at `pos` of `buf` and follow each other,
/// interleaved ([`crate::crc::records3`]). Returns how many of them, from the first, are whole
/// records (plausible length, all bytes in `buf`) whose CRC checks, and their offsets: `0`
/// whenever fewer than three whole records follow `pos`, or the first one's CRC fails. The
/// reader then decodes those with [`Record::decode_crc_checked`]; everything else about a
/// record (flags, SSN) is still checked there.
pub(crate) fn check_three(buf: &[u8], pos: usize) -> (usize, [usize; 3]) {
    let mut at = [pos; 3];
    let mut recs: [&[u8]; 3] = [&[]; 3];
    let mut next = pos;
    for i in 0..3 {
        let Some(len) = buf.get(next..).and_then(whole_len) else { return (0, at) };
        at[i] = next;
        recs[i] = &buf[next..next + len];
        next += len;
    }
    let crcs = crate::crc::records3(recs);
    let ok = (0..3).take_while(|&i| crcs[i] == stored_crc(recs[i])).count();
    (ok, at)
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One write of a value record: `row = None` deletes `key`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ValueEntry<'a> {
    /// The catalog's table id.
    pub table: u32,
    /// The encoded key (opaque here).
    pub key: &'a [u8],
    /// The encoded row, or `None` for a delete.
    pub row: Option<&'a [u8]>,
}

/// The encoded size of a value payload holding `entries`.
pub fn value_payload_len(entries: &[ValueEntry<'_>]) -> usize {
    4 + entries.iter().map(ValueEntry::encoded_len).sum::<usize>()
}

impl ValueEntry<'_> {
    /// Its bytes in a value payload: table, key length, key, row length, row.
    fn encoded_len(&self) -> usize {
        12 + self.key.len() + self.row.map_or(0, <[u8]>::len)
    }
}

/// Appends the value payload of `entries` to `out` (layout in the module doc).
///
/// # Panics
/// If a key or row is 4 GiB or longer (the record limit is far smaller anyway).
pub fn encode_values(entries: &[ValueEntry<'_>], out: &mut Vec<u8>) {
    encode_value_entries(entries.iter().copied(), out);
}

/// [`encode_values`] of the entries an iterator yields (walked twice: sizes, then bytes), for
/// a committer that would otherwise collect them into a vector first.
///
/// # Panics
/// As [`encode_values`].
pub fn encode_value_entries<'a, I>(entries: I, out: &mut Vec<u8>)
where
    I: Iterator<Item = ValueEntry<'a>> + Clone,
{
    fn put_len(out: &mut Vec<u8>, len: usize) {
        let len = u32::try_from(len).ok().filter(|&l| l != DELETE_ROW_LEN);
        out.extend_from_slice(&len.expect("key or row below 4 GiB").to_le_bytes());
    }
    let (count, len) = entries.clone().fold((0, 4), |(n, len), e| (n + 1, len + e.encoded_len()));
    out.reserve(len);
    put_len(out, count);
    for e in entries {
        out.extend_from_slice(&e.table.to_le_bytes());
        put_len(out, e.key.len());
        out.extend_from_slice(e.key);
        match e.row {
            Some(row) => {
                put_len(out, row.len());
                out.extend_from_slice(row);
            }
            None => out.extend_from_slice(&DELETE_ROW_LEN.to_le_bytes()),
        }
    }
}

const BAD_VALUES: Corrupt = Corrupt::Payload { what: "value" };

fn take<'p>(rest: &mut &'p [u8], n: usize) -> Result<&'p [u8], Corrupt> {
    if rest.len() < n {
        return Err(BAD_VALUES);
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

fn take_u32(rest: &mut &[u8]) -> Result<u32, Corrupt> {
    Ok(u32::from_le_bytes(take(rest, 4)?.try_into().expect("4 bytes")))
}

/// Decodes a value payload. Every byte must be accounted for: trailing bytes are an error.
pub fn decode_values(payload: &[u8]) -> Result<Vec<ValueEntry<'_>>, Corrupt> {
    let mut rest = payload;
    let count = take_u32(&mut rest)? as usize;
    // Each entry takes at least 12 bytes: bound the allocation by what the payload can hold.
    let mut entries = Vec::with_capacity(count.min(payload.len() / 12));
    for _ in 0..count {
        let table = take_u32(&mut rest)?;
        let key_len = take_u32(&mut rest)? as usize;
        let key = take(&mut rest, key_len)?;
        let row = match take_u32(&mut rest)? {
            DELETE_ROW_LEN => None,
            row_len => Some(take(&mut rest, row_len as usize)?),
        };
        entries.push(ValueEntry { table, key, row });
    }
    if !rest.is_empty() {
        return Err(BAD_VALUES);
    }
    Ok(entries)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The documented byte layout, checked field by field on a hand-made record.
    #[test]
    fn layout_matches_doc_table() {
        let payload = [0xAA, 0xBB, 0xCC];
        let r = Record {
            ssn: Ssn(0x0102_0304_0506_0708),
            kind: RecordKind::Command,
            blind: true,
            payload: &payload,
        };
        let mut out = vec![0xEE]; // encode_into appends
        r.encode_into(&mut out);
        let b = &out[1..];
        assert_eq!(HEADER_LEN, 17);
        assert_eq!(b.len(), 20);
        assert_eq!(&b[0..4], &20u32.to_le_bytes(), "len at 0, counts the whole record");
        assert_eq!(&b[8..16], &[8, 7, 6, 5, 4, 3, 2, 1], "ssn at 8, little-endian");
        assert_eq!(b[16], 0x12, "flags at 16: kind 2 | BLIND 0x10");
        assert_eq!(&b[17..], &payload, "payload at 17");
        let mut crc_input = b[0..4].to_vec();
        crc_input.extend_from_slice(&b[8..]);
        assert_eq!(&b[4..8], &crc32c::crc32c(&crc_input).to_le_bytes(), "crc at 4 covers len+rest");
        // CRC-32C (Castagnoli), not CRC-32 (IEEE): the standard check value of "123456789".
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(
            (LEN_OFFSET, CRC_OFFSET, SSN_OFFSET, FLAGS_OFFSET, PAYLOAD_OFFSET),
            (0, 4, 8, 16, 17)
        );
        assert_eq!(
            (RecordKind::Value as u8, RecordKind::Marker as u8, RecordKind::Abort as u8),
            (1, 3, 4)
        );
    }

    #[test]
    fn value_payload_layout_matches_doc_table() {
        let mut out = Vec::new();
        let entries = [
            ValueEntry { table: 7, key: b"k", row: Some(b"rw") },
            ValueEntry { table: 9, key: b"", row: None },
        ];
        encode_values(&entries, &mut out);
        #[rustfmt::skip]
        let expected: &[u8] = &[
            2, 0, 0, 0,
            7, 0, 0, 0,  1, 0, 0, 0,  b'k',  2, 0, 0, 0,  b'r', b'w',
            9, 0, 0, 0,  0, 0, 0, 0,  0xFF, 0xFF, 0xFF, 0xFF,
        ];
        assert_eq!(out, expected);
        assert_eq!(value_payload_len(&entries), expected.len());
        assert_eq!(decode_values(&out).unwrap(), entries);
    }

    #[test]
    fn round_trip_every_kind() {
        let mut log = Vec::new();
        let mut values = Vec::new();
        encode_values(&[ValueEntry { table: 1, key: b"a", row: Some(b"xyz") }], &mut values);
        let records = [
            Record { ssn: Ssn(1), kind: RecordKind::Value, blind: false, payload: &values },
            Record { ssn: Ssn(2), kind: RecordKind::Value, blind: true, payload: &values },
            Record { ssn: Ssn(3), kind: RecordKind::Command, blind: false, payload: b"call p(1)" },
            Record { ssn: Ssn(u64::MAX), kind: RecordKind::Marker, blind: false, payload: &[] },
            Record { ssn: Ssn(5), kind: RecordKind::Abort, blind: false, payload: &[] },
        ];
        for r in &records {
            r.encode_into(&mut log);
        }
        let mut rest = &log[..];
        for r in &records {
            let (got, len) = Record::decode(rest).unwrap().unwrap();
            assert_eq!(&got, r);
            assert_eq!(len, r.encoded_len());
            rest = &rest[len..];
        }
        assert_eq!(Record::decode(rest), Ok(None));
        let (first, _) = Record::decode(&log).unwrap().unwrap();
        assert_eq!(
            first.values().unwrap(),
            [ValueEntry { table: 1, key: b"a", row: Some(b"xyz") }]
        );
    }

    #[test]
    fn incomplete_versus_corrupt() {
        let mut log = Vec::new();
        Record { ssn: Ssn(9), kind: RecordKind::Value, blind: false, payload: &[1; 40] }
            .encode_into(&mut log);
        for cut in 0..log.len() {
            assert_eq!(
                Record::decode(&log[..cut]),
                Ok(None),
                "a prefix of {cut} bytes is incomplete"
            );
        }
        assert_eq!(
            Record::decode(&[0; 64]),
            Err(Corrupt::Length { len: 0 }),
            "zero fill is never a record"
        );
        let mut bad = log.clone();
        bad[30] ^= 1;
        assert!(matches!(Record::decode(&bad), Err(Corrupt::Checksum { .. })));
        let mut huge = log.clone();
        huge[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Record::decode(&huge), Err(Corrupt::Length { len: u32::MAX }));
    }

    /// Flags and SSN rules are checked after the CRC, so re-sign a hand-made header.
    #[test]
    fn reserved_flags_and_zero_ssn_are_corrupt() {
        let sign = |ssn: u64, flags: u8| {
            let mut b = vec![0u8; HEADER_LEN];
            b[0..4].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
            b[8..16].copy_from_slice(&ssn.to_le_bytes());
            b[16] = flags;
            let crc = checksum(&b);
            b[4..8].copy_from_slice(&crc.to_le_bytes());
            b
        };
        assert!(Record::decode(&sign(1, 1)).unwrap().is_some());
        assert_eq!(Record::decode(&sign(1, 0)), Err(Corrupt::Flags { flags: 0 }));
        assert!(Record::decode(&sign(1, 5)).unwrap().is_some(), "kind 5: spilled");
        assert!(Record::decode(&sign(1, 0x15)).unwrap().is_some(), "a blind spilled record");
        assert_eq!(Record::decode(&sign(1, 6)), Err(Corrupt::Flags { flags: 6 }));
        assert_eq!(Record::decode(&sign(1, 0x21)), Err(Corrupt::Flags { flags: 0x21 }));
        assert_eq!(
            Record::decode(&sign(1, 0x13)),
            Err(Corrupt::Flags { flags: 0x13 }),
            "blind marker"
        );
        assert_eq!(Record::decode(&sign(0, 1)), Err(Corrupt::ZeroSsn));
    }

    #[test]
    fn malformed_value_payloads_are_rejected() {
        let mut ok = Vec::new();
        encode_values(&[ValueEntry { table: 1, key: b"abc", row: Some(b"r") }], &mut ok);
        for cut in 0..ok.len() {
            assert!(decode_values(&ok[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = ok.clone();
        trailing.push(0);
        assert!(decode_values(&trailing).is_err());
        // A huge count must not allocate a huge vector before failing.
        assert!(decode_values(&[0xFF, 0xFF, 0xFF, 0x7F]).is_err());
    }

    #[test]
    #[should_panic(expected = "SSN above 0")]
    fn encoding_ssn_zero_panics() {
        Record { ssn: Ssn::ZERO, kind: RecordKind::Abort, blind: false, payload: &[] }
            .encode_into(&mut Vec::new());
    }
}
