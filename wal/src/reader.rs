//! Reading a device's log back: records in order, and where the valid log ends.
//!
//! [`SegmentReader`] reads the segments of one device ([`DeviceId`]) in [`SegmentNo`] order and
//! yields every record with its position. It never skips a damaged record and continues past
//! it (STYLE rule 12): it either stops at a *torn tail*, which is the normal end of a log after a
//! crash, or fails with [`Error::Corrupt`].
//!
//! ## The rule
//!
//! Records are decoded back to back from offset 0 of each segment. Let `x` be the offset of the
//! first bytes that are not a valid record ([`Record::decode`] says incomplete or corrupt), or the
//! segment's end. Then:
//!
//! 1. **I2 first.** A valid record whose SSN is not larger than the previous record's on this
//!    device (across segments too) is `Corrupt { reason: SsnOrder }` at its offset.
//! 2. **The last segment** ends at `x` (a torn tail, not an error) unless a valid record starts at
//!    some offset `y ≥ x + max(1, unsynced_window)` in it; then the bytes at `x` are
//!    `Corrupt { offset: x }` with the decode failure as the reason. "Valid" means
//!    [`Record::decode`] accepts the bytes at `y`: plausible length, whole record present, CRC
//!    checks. All-zero bytes (preallocated space) and bytes fewer than a header are never valid.
//! 3. **A segment that is not the last** must hold only zero bytes in `[x, end)`: a closed
//!    segment was synced before the next one was written (the logger's rotation rule), so it has
//!    no torn tail. A nonzero byte at `x` is `Corrupt { offset: x }` (the decode failure), and a
//!    nonzero byte at `z > x` is `Corrupt { offset: z, reason: AfterEnd }`.
//!
//! With `unsynced_window = 0` (the default), any valid record after a bad one makes it
//! corruption. That is exact if writes reach the disk in order. They need not: of an unsynced
//! range, a crash may keep later pages and lose earlier ones, leaving valid but never-synced
//! records behind a hole. A logger that keeps at most `W` unsynced bytes in flight should read
//! with `unsynced_window = W`: a hole at `x` followed by a valid record at `y ≥ x + W` proves
//! that `x` was synced (if `x` had been unsynced, `y` would be past everything ever written), so
//! it is real corruption; valid records in `(x, x + W)` are unsynced leftovers and are ignored.
//!
//! ## What the end means for the writer
//!
//! [`LogEnd`] says where the valid log ends and how many nonzero bytes lie after it. A writer
//! that resumes a device must not append at `LogEnd::offset` while `discarded > 0` unless it
//! first zeroes `[offset, segment end)` and syncs ([`crate::zero_fill`]), or starts a new
//! segment: leftovers of the torn tail beyond its new records would otherwise read as garbage
//! or, worse, as old records with smaller SSNs.
//!
//! ## Cost
//!
//! A segment is read `READ_CHUNK` bytes at a time (a longer record whole), into one buffer
//! reused for the whole log. Past a bad record the rest of the segment is read on chunk by
//! chunk for rules 2 and 3: zero-filled space is skipped at memory speed (no record starts
//! where its length word is zero), and every other offset is tried as a record start.

use crate::device::{DeviceId, LogDevice, SegmentNo};
use crate::error::Error;
use crate::record::{Corrupt, Record, RecordKind, HEADER_LEN, MAX_RECORD_LEN, PAYLOAD_OFFSET};
use crate::ssn::Ssn;

/// Bytes a reader reads at a time: a record longer than that is read whole. Reading a 64 MiB
/// segment at once wrote it to memory and read it back from there; chunks of a few MiB stay
/// in the cache between the kernel's copy and the decoding.
const READ_CHUNK: usize = 2 << 20;

#[cfg(all(test, not(loom)))]
thread_local! {
    /// The tests read with several chunk sizes, down to 1 byte.
    static TEST_CHUNK: std::cell::Cell<usize> = const { std::cell::Cell::new(READ_CHUNK) };
}

fn read_chunk() -> usize {
    #[cfg(all(test, not(loom)))]
    return TEST_CHUNK.with(std::cell::Cell::get);
    #[cfg(not(all(test, not(loom))))]
    READ_CHUNK
}

/// Options of a [`SegmentReader`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct ReadOptions {
    /// The most bytes the writer ever had written but not yet synced (see the module doc).
    /// 0 (the default) treats every valid record after a bad one as proof of corruption.
    pub unsynced_window: u64,
}

/// A record and where it is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ReadRecord<'a> {
    /// The segment holding it.
    pub segment: SegmentNo,
    /// Its byte offset in the segment.
    pub offset: u64,
    /// The record.
    pub record: Record<'a>,
}

/// Where a device's valid log ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LogEnd {
    /// The last segment.
    pub segment: SegmentNo,
    /// The end of the last valid record in it (0 if it holds none).
    pub offset: u64,
    /// The SSN of the last valid record on the device, if any: its contribution to RSNe.
    pub last_ssn: Option<Ssn>,
    /// Records read from all segments.
    pub records: u64,
    /// Bytes from `offset` to the last nonzero byte of the segment: 0 for a clean end, more for
    /// a torn tail that was discarded.
    pub discarded: u64,
}

#[derive(Debug)]
enum State {
    /// `buf` holds segment `segment` (an index into `segments`); decoding continues at `pos`.
    Reading { segment: usize, pos: usize },
    /// Segment `segment` is to be loaded next.
    Load { segment: usize },
    /// The log ended cleanly.
    Done(LogEnd),
    /// An error was returned; nothing more is read.
    Failed,
}

/// Reads the segments of one device in order; see the module doc for the rule it applies.
#[derive(Debug)]
pub struct SegmentReader<'d> {
    device: DeviceId,
    segments: Vec<(SegmentNo, &'d dyn LogDevice)>,
    options: ReadOptions,
    /// `buf[..filled]` holds bytes `[base, base + filled)` of the current segment; the rest
    /// of `buf` is room for the next read.
    buf: Vec<u8>,
    filled: usize,
    base: usize,
    /// The current segment's length (where a short read ended it, if one did).
    segment_len: usize,
    state: State,
    last_ssn: Option<Ssn>,
    records: u64,
    ahead: Ahead,
}

/// Offsets in `buf` of the records just ahead of the reading position whose CRCs a look-ahead
/// ([`crate::record::check_three`]) has checked: `at[next..end]`, in order.
#[derive(Debug, Default)]
struct Ahead {
    at: [usize; 3],
    next: usize,
    end: usize,
}

/// A record decoded in `buf`, kept as positions so that no borrow crosses loop iterations.
struct Found {
    offset: usize,
    len: usize,
    ssn: Ssn,
    kind: RecordKind,
    blind: bool,
}

impl<'d> SegmentReader<'d> {
    /// A reader over `segments` of `device`, which must be in strictly increasing segment order.
    ///
    /// # Panics
    /// If `segments` is empty or out of order.
    pub fn new(
        device: DeviceId,
        segments: Vec<(SegmentNo, &'d dyn LogDevice)>,
        options: ReadOptions,
    ) -> SegmentReader<'d> {
        assert!(!segments.is_empty(), "a device's log has at least one segment");
        assert!(
            segments.windows(2).all(|w| w[0].0 < w[1].0),
            "segments must be in increasing order"
        );
        SegmentReader {
            device,
            segments,
            options,
            buf: Vec::new(),
            filled: 0,
            base: 0,
            segment_len: 0,
            state: State::Load { segment: 0 },
            last_ssn: None,
            records: 0,
            ahead: Ahead::default(),
        }
    }

    /// A reader over a single segment with default options.
    pub fn single(
        device: DeviceId,
        segment: SegmentNo,
        log: &'d dyn LogDevice,
    ) -> SegmentReader<'d> {
        SegmentReader::new(device, vec![(segment, log)], ReadOptions::default())
    }

    /// The next record, or `None` at the end of the log (then [`SegmentReader::end`] says where
    /// it is). After an `Err` the reader is finished: it returns `Ok(None)` and `end()` is `None`.
    pub fn next_record(&mut self) -> Result<Option<ReadRecord<'_>>, Error> {
        match self.advance() {
            Ok(Some((segment, found))) => {
                let payload = &self.buf[found.offset + PAYLOAD_OFFSET..found.offset + found.len];
                Ok(Some(ReadRecord {
                    segment,
                    offset: (self.base + found.offset) as u64,
                    record: Record {
                        ssn: found.ssn,
                        kind: found.kind,
                        blind: found.blind,
                        payload,
                    },
                }))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    /// Where the valid log ends, once [`SegmentReader::next_record`] has returned `Ok(None)`.
    pub fn end(&self) -> Option<LogEnd> {
        match self.state {
            State::Done(end) => Some(end),
            _ => None,
        }
    }

    /// Corruption at `pos` of `buf`.
    fn corrupt(&self, segment: usize, pos: usize, reason: Corrupt) -> Error {
        self.corrupt_at(segment, self.base + pos, reason)
    }

    /// Corruption at segment offset `offset`.
    fn corrupt_at(&self, segment: usize, offset: usize, reason: Corrupt) -> Error {
        Error::Corrupt {
            device: self.device,
            segment: self.segments[segment].0,
            offset: offset as u64,
            reason,
        }
    }

    fn advance(&mut self) -> Result<Option<(SegmentNo, Found)>, Error> {
        loop {
            let (segment, pos) = match self.state {
                State::Done(_) | State::Failed => return Ok(None),
                State::Load { segment } => {
                    self.load(segment)?;
                    self.state = State::Reading { segment, pos: 0 };
                    continue;
                }
                State::Reading { segment, pos } => (segment, pos),
            };
            let decoded = if self.crc_checked(pos) {
                Record::decode_crc_checked(&self.data()[pos..])
            } else {
                Record::decode(&self.data()[pos..])
            };
            if let Ok(None) = decoded {
                if self.base + self.filled < self.segment_len {
                    // The record goes on past the chunk: read on from it.
                    self.read_from(segment, pos, read_chunk())?;
                    self.state = State::Reading { segment, pos: 0 };
                    continue;
                }
            }
            let rest = &self.data()[pos..];
            let bad = match decoded {
                Ok(Some((r, len))) => {
                    if let Some(prev) = self.last_ssn.filter(|&prev| r.ssn <= prev) {
                        return Err(self.corrupt(
                            segment,
                            pos,
                            Corrupt::SsnOrder { prev, ssn: r.ssn },
                        ));
                    }
                    let found =
                        Found { offset: pos, len, ssn: r.ssn, kind: r.kind, blind: r.blind };
                    self.last_ssn = Some(r.ssn);
                    self.records += 1;
                    self.state = State::Reading { segment, pos: pos + len };
                    return Ok(Some((self.segments[segment].0, found)));
                }
                Ok(None) => {
                    let len = if rest.len() >= 4 {
                        u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"))
                    } else {
                        0
                    };
                    Corrupt::Incomplete { len, available: rest.len() as u64 }
                }
                Err(reason) => reason,
            };
            // The rules look at the rest of the segment, chunk by chunk.
            let end = self.base + pos;
            if segment + 1 < self.segments.len() {
                self.check_closed_segment(segment, end, bad)?;
                self.state = State::Load { segment: segment + 1 };
            } else {
                let discarded = self.check_tail(segment, end, bad)?;
                self.state = State::Done(LogEnd {
                    segment: self.segments[segment].0,
                    offset: end as u64,
                    last_ssn: self.last_ssn,
                    records: self.records,
                    discarded: discarded as u64,
                });
            }
        }
    }

    /// Whether the CRC of the record at `pos` has been checked already. If no look-ahead is
    /// pending, checks the next three records' CRCs at once (interleaved: about the time of
    /// one), so that two of every three records are decoded without computing it.
    fn crc_checked(&mut self, pos: usize) -> bool {
        let a = &mut self.ahead;
        if a.next < a.end && a.at[a.next] == pos {
            a.next += 1;
            return true;
        }
        let (ok, at) = crate::record::check_three(&self.buf[..self.filled], pos);
        self.ahead = Ahead { at, next: ok.min(1), end: ok };
        ok > 0
    }

    /// Starts segment `segment`: its first [`READ_CHUNK`] bytes into `buf`.
    fn load(&mut self, segment: usize) -> Result<(), Error> {
        let log = self.segments[segment].1;
        let len = log.len().map_err(|e| Error::io(self.device, e))?;
        self.segment_len = usize::try_from(len).expect("a segment fits in memory");
        (self.base, self.filled) = (0, 0);
        self.read_from(segment, 0, read_chunk())
    }

    /// The bytes read of the current segment, from `base`.
    fn data(&self) -> &[u8] {
        &self.buf[..self.filled]
    }

    /// Keeps `buf[pos..]` (moved to the front; `base` moves by `pos`) and reads on after it
    /// until `buf` holds `want` bytes or the segment ends — at least a header, one byte more
    /// than it holds, and the whole record at `pos` if its length is plausible. A short read
    /// ends the segment there.
    fn read_from(&mut self, segment: usize, pos: usize, want: usize) -> Result<(), Error> {
        self.ahead = Ahead::default();
        self.buf.copy_within(pos..self.filled, 0);
        self.filled -= pos;
        self.base += pos;
        let claimed = match self.data().get(..4) {
            Some(len) => u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize,
            None => 0,
        };
        let have = self.filled;
        // At least one byte more (the caller has found the bytes it holds incomplete).
        let want = want.max(claimed.min(MAX_RECORD_LEN)).max(HEADER_LEN).max(have + 1);
        let want = want.min(self.segment_len - self.base);
        if want <= have {
            return Ok(());
        }
        if self.buf.len() < want {
            // Zeroes only the growth: chunk after chunk goes into the same memory, which stays
            // in the cache and needs no fresh pages from the kernel.
            self.buf.resize(want, 0);
        }
        let log = self.segments[segment].1;
        let n = log
            .read_at((self.base + have) as u64, &mut self.buf[have..want])
            .map_err(|e| Error::io(self.device, e))?;
        self.filled = have + n;
        if self.filled < want {
            self.segment_len = self.base + self.filled;
        }
        Ok(())
    }

    /// Reads on: keeps `buf` from segment offset `keep` (or from its end, if `keep` is past
    /// it) and reads the next chunk after what it holds.
    fn read_on(&mut self, segment: usize, keep: usize) -> Result<(), Error> {
        let pos = keep.min(self.base + self.filled) - self.base;
        self.read_from(segment, pos, read_chunk())
    }

    /// Whether `buf` holds the segment to its end.
    fn at_segment_end(&self) -> bool {
        self.base + self.filled >= self.segment_len
    }

    /// Rule 3: after the last record of a closed segment (at segment offset `end`, inside
    /// `buf`), only zeros.
    fn check_closed_segment(
        &mut self,
        segment: usize,
        end: usize,
        bad: Corrupt,
    ) -> Result<(), Error> {
        let mut from = end;
        loop {
            if let Some(z) = self.data()[from - self.base..].iter().position(|&b| b != 0) {
                let reason =
                    if from + z == end { bad } else { Corrupt::AfterEnd { end: end as u64 } };
                return Err(self.corrupt_at(segment, from + z, reason));
            }
            if self.at_segment_end() {
                return Ok(());
            }
            from = self.base + self.filled;
            self.read_on(segment, from)?;
        }
    }

    /// Rule 2: the bad bytes at segment offset `end` (inside `buf`) of the last segment are a
    /// torn tail unless a valid record starts at `end + max(1, unsynced_window)` or later.
    /// Returns the bytes from `end` to the last nonzero byte of the segment.
    fn check_tail(&mut self, segment: usize, end: usize, bad: Corrupt) -> Result<usize, Error> {
        let window = usize::try_from(self.options.unsynced_window.max(1)).unwrap_or(usize::MAX);
        let last_start = self.segment_len.checked_sub(HEADER_LEN);
        // The next offset that may start a record; how far nonzero bytes were looked for.
        let mut y = end.saturating_add(window);
        let (mut scanned, mut nonzero_end) = (end, end);
        loop {
            let base = self.base;
            let data = self.data();
            let chunk_end = base + data.len();
            if let Some(z) = data[scanned - base..].iter().rposition(|&b| b != 0) {
                nonzero_end = scanned + z + 1;
            }
            scanned = chunk_end;
            while last_start.is_some_and(|last| y <= last) && y + HEADER_LEN <= chunk_end {
                let at = y - base;
                if data[at..at + 4] == [0; 4] {
                    // A zero length word is never a record: skip to 3 bytes before the next
                    // nonzero byte.
                    let next = data[at..].iter().position(|&b| b != 0).map_or(chunk_end, |z| y + z);
                    y = next.saturating_sub(3).max(y + 1);
                    continue;
                }
                match Record::decode(&data[at..]) {
                    Ok(Some(_)) => return Err(self.corrupt_at(segment, end, bad)),
                    // The record at `y` goes on past the chunk: read on from it.
                    Ok(None) if chunk_end < self.segment_len => break,
                    _ => y += 1,
                }
            }
            if self.at_segment_end() {
                return Ok(nonzero_end - end);
            }
            self.read_on(segment, y)?;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::device::FileDevice;
    use crate::record::{encode_values, ValueEntry};
    use crate::testing::{FaultyDevice, MemDevice};

    /// A record as the tests keep it: where it starts and what it holds.
    #[derive(Clone, PartialEq, Eq, Debug)]
    struct Owned {
        offset: u64,
        ssn: Ssn,
        kind: RecordKind,
        blind: bool,
        payload: Vec<u8>,
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// `n` records of random kinds and sizes with increasing SSNs; returns the log and the
    /// records with their offsets.
    fn make_log(seed: u64, n: usize, max_payload: u64) -> (Vec<u8>, Vec<Owned>) {
        let mut rng = Rng(seed | 1);
        let mut log = Vec::new();
        let mut records = Vec::new();
        let mut ssn = 0;
        for _ in 0..n {
            ssn += 1 + rng.below(3);
            let (kind, blind, payload) = match rng.below(4) {
                0 => (RecordKind::Marker, false, Vec::new()),
                1 => (
                    RecordKind::Command,
                    rng.below(2) == 0,
                    (0..rng.below(max_payload)).map(|_| rng.next() as u8).collect(),
                ),
                _ => {
                    let key: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.next() as u8).collect();
                    let row: Vec<u8> =
                        (0..rng.below(max_payload)).map(|_| rng.next() as u8).collect();
                    let mut payload = Vec::new();
                    let delete = rng.below(5) == 0;
                    encode_values(
                        &[ValueEntry {
                            table: rng.below(8) as u32,
                            key: &key,
                            row: (!delete).then_some(&row[..]),
                        }],
                        &mut payload,
                    );
                    (RecordKind::Value, rng.below(2) == 0, payload)
                }
            };
            let offset = log.len() as u64;
            Record { ssn: Ssn(ssn), kind, blind, payload: &payload }.encode_into(&mut log);
            records.push(Owned { offset, ssn: Ssn(ssn), kind, blind, payload });
        }
        (log, records)
    }

    fn read_all(reader: &mut SegmentReader<'_>) -> (Vec<Owned>, Result<LogEnd, Error>) {
        let mut out = Vec::new();
        loop {
            match reader.next_record() {
                Ok(Some(r)) => out.push(Owned {
                    offset: r.offset,
                    ssn: r.record.ssn,
                    kind: r.record.kind,
                    blind: r.record.blind,
                    payload: r.record.payload.to_vec(),
                }),
                Ok(None) => return (out, Ok(reader.end().expect("ended cleanly"))),
                Err(e) => {
                    assert!(reader.end().is_none());
                    assert!(matches!(reader.next_record(), Ok(None)), "finished after an error");
                    return (out, Err(e));
                }
            }
        }
    }

    fn read_device(
        device: &dyn LogDevice,
        options: ReadOptions,
    ) -> (Vec<Owned>, Result<LogEnd, Error>) {
        read_chunked(|| SegmentReader::new(DeviceId(0), vec![(SegmentNo(0), device)], options))
    }

    /// Reads the log with the default chunk (whole segments, at these sizes), then again with
    /// chunks down to 1 byte (records cross chunk boundaries everywhere), and checks that every
    /// read gives the same result.
    fn read_chunked<'d>(
        reader: impl Fn() -> SegmentReader<'d>,
    ) -> (Vec<Owned>, Result<LogEnd, Error>) {
        let with = |chunk| {
            TEST_CHUNK.with(|c| c.set(chunk));
            let got = read_all(&mut reader());
            TEST_CHUNK.with(|c| c.set(READ_CHUNK));
            got
        };
        let whole = with(READ_CHUNK);
        for chunk in [1, 16, 17, 40, 97] {
            let got = with(chunk);
            assert_eq!(got.0, whole.0, "records read in chunks of {chunk}");
            assert_eq!(format!("{:?}", got.1), format!("{:?}", whole.1), "end, chunks of {chunk}");
        }
        whole
    }

    fn corrupt_at(result: &Result<LogEnd, Error>) -> Option<(u64, SegmentNo, Corrupt)> {
        match result {
            Err(Error::Corrupt { offset, segment, reason, .. }) => {
                Some((*offset, *segment, *reason))
            }
            _ => None,
        }
    }

    #[test]
    fn reads_back_what_was_written() {
        let (log, records) = make_log(7, 300, 200);
        let device = MemDevice::new();
        device.write_at(0, &log).unwrap();
        let (got, end) = read_device(&device, ReadOptions::default());
        assert_eq!(got, records);
        let end = end.unwrap();
        assert_eq!(end.offset, log.len() as u64);
        assert_eq!((end.records, end.discarded, end.last_ssn), (300, 0, Some(records[299].ssn)));
        // A preallocated (zero-filled) segment ends the same way.
        device.allocate(log.len() as u64 + 10_000).unwrap();
        let (got, end) = read_device(&device, ReadOptions::default());
        assert_eq!((got.len(), end.unwrap().offset), (300, log.len() as u64));
        let empty = MemDevice::new();
        let (got, end) = read_device(&empty, ReadOptions::default());
        assert!(got.is_empty());
        assert_eq!(
            end.unwrap(),
            LogEnd { segment: SegmentNo(0), offset: 0, last_ssn: None, records: 0, discarded: 0 }
        );
    }

    /// Truncate the log at every byte of its last 4 KiB: the reader keeps exactly the records
    /// that fit whole, and never errors. Also with the cut followed by zero-filled space.
    #[test]
    fn torn_tail_truncated_at_every_byte() {
        let (log, records) = make_log(11, 400, 120);
        assert!(log.len() > 8192, "the log spans more than the cut range");
        for cut in log.len() - 4096..=log.len() {
            let whole = records
                .iter()
                .take_while(|r| r.offset as usize + Record::encoded_len_for(r.payload.len()) <= cut)
                .count();
            let boundary = records.get(whole).map_or(log.len(), |r| r.offset as usize);
            for padded in [false, true] {
                let device = MemDevice::with_bytes(log.clone());
                device.truncate(cut as u64).unwrap();
                if padded {
                    device.allocate(log.len() as u64 + 512).unwrap();
                }
                let (got, end) = read_device(&device, ReadOptions::default());
                let end = end.unwrap_or_else(|e| panic!("cut at {cut} (padded {padded}): {e}"));
                assert_eq!(got.len(), whole, "cut at {cut} (padded {padded})");
                assert_eq!(got, records[..whole], "cut at {cut}");
                assert_eq!(end.offset, boundary as u64, "cut at {cut}");
                assert_eq!(end.discarded > 0, cut > boundary, "cut at {cut}: torn bytes discarded");
            }
        }
    }

    /// The same through MemDevice::crash: synced records survive, the torn prefix of the
    /// unsynced writes yields exactly the whole records in it.
    #[test]
    fn crash_keeps_synced_records_and_whole_torn_ones() {
        let (log, records) = make_log(5, 60, 60);
        let split = records[40].offset as usize;
        for torn in (0..=log.len() - split).step_by(3) {
            let device = MemDevice::new();
            device.allocate(log.len() as u64 + 100).unwrap();
            device.write_at(0, &log[..split]).unwrap();
            device.sync().unwrap();
            for r in &records[40..] {
                let end = r.offset as usize + Record::encoded_len_for(r.payload.len());
                device.write_at(r.offset, &log[r.offset as usize..end]).unwrap();
            }
            device.crash(torn);
            let (got, end) = read_device(&device, ReadOptions::default());
            end.unwrap();
            let fit = records
                .iter()
                .filter(|r| {
                    (r.offset as usize + Record::encoded_len_for(r.payload.len())) <= split + torn
                })
                .count();
            assert_eq!(got, records[..fit], "torn prefix of {torn} bytes");
        }
    }

    /// Flip every bit of a small log, one at a time. The reader must report Corrupt at the
    /// damaged record or stop before it; it never yields a damaged record. A damaged record
    /// that is not the last one is always Corrupt, because valid records follow it.
    #[test]
    fn every_bit_flip_is_detected() {
        let (log, records) = make_log(3, 12, 40);
        let padding = 64;
        for bit in 0..(log.len() + padding) * 8 {
            let byte = bit / 8;
            let device = MemDevice::with_bytes(log.clone());
            device.allocate((log.len() + padding) as u64).unwrap();
            device.sync().unwrap();
            device.corrupt(byte, |b| *b ^= 1 << (bit % 8));
            let (got, result) = read_device(&device, ReadOptions::default());
            assert_eq!(got, records[..got.len()], "bit {bit}: only undamaged records are yielded");
            let damaged = records
                .iter()
                .rposition(|r| r.offset as usize <= byte)
                .filter(|_| byte < log.len());
            match damaged {
                None => {
                    let end = result.unwrap_or_else(|e| panic!("bit {bit} in the zero tail: {e}"));
                    assert_eq!(
                        (got.len(), end.offset, end.discarded > 0),
                        (records.len(), log.len() as u64, true)
                    );
                }
                Some(d) if d + 1 == records.len() => {
                    let end =
                        result.unwrap_or_else(|e| panic!("bit {bit} in the last record: {e}"));
                    assert_eq!(
                        (got.len(), end.offset),
                        (d, records[d].offset),
                        "bit {bit}: a torn tail"
                    );
                }
                Some(d) => {
                    let (offset, segment, _) =
                        corrupt_at(&result).unwrap_or_else(|| panic!("bit {bit}: {result:?}"));
                    assert_eq!(
                        (offset, segment, got.len()),
                        (records[d].offset, SegmentNo(0), d),
                        "bit {bit}"
                    );
                }
            }
        }
    }

    #[test]
    fn bad_record_followed_by_valid_ones_is_corrupt() {
        let (mut log, records) = make_log(9, 20, 50);
        log[records[10].offset as usize + 12] ^= 0xFF; // inside the SSN
        let device = MemDevice::with_bytes(log);
        let mut reader = SegmentReader::new(
            DeviceId(4),
            vec![(SegmentNo(7), &device as &dyn LogDevice)],
            ReadOptions::default(),
        );
        let (got, result) = read_all(&mut reader);
        assert_eq!(got.len(), 10);
        match result {
            Err(Error::Corrupt { device, segment, offset, reason: Corrupt::Checksum { .. } }) => {
                assert_eq!(
                    (device, segment, offset),
                    (DeviceId(4), SegmentNo(7), records[10].offset)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    /// A valid record after a long zero-filled hole in the last segment: the hole is
    /// corruption, unless the record lies within the unsynced window (then it is a torn tail
    /// and everything after the hole counts as discarded). Read in chunks, the hole spans many.
    #[test]
    fn valid_record_after_a_long_hole_is_corrupt_unless_unsynced() {
        let (log, records) = make_log(11, 8, 30);
        let (hole_at, next) = (records[5].offset as usize, records[6].offset as usize);
        let mut bytes = log[..hole_at].to_vec();
        bytes.extend(std::iter::repeat_n(0u8, 10_000));
        bytes.extend_from_slice(&log[hole_at..next]); // record 5, after the hole
        bytes.extend(std::iter::repeat_n(0u8, 100));
        let device = MemDevice::with_bytes(bytes);
        let (got, result) = read_device(&device, ReadOptions::default());
        assert_eq!(got, records[..5]);
        assert_eq!(
            corrupt_at(&result),
            Some((hole_at as u64, SegmentNo(0), Corrupt::Length { len: 0 }))
        );
        let (got, result) = read_device(&device, ReadOptions { unsynced_window: 20_000 });
        assert_eq!(got, records[..5]);
        let end = result.unwrap();
        assert_eq!((end.offset, end.discarded), (hole_at as u64, (10_000 + next - hole_at) as u64));
    }

    /// A bad length that points past the end is still corruption when valid records follow.
    #[test]
    fn overlong_record_followed_by_valid_ones_is_corrupt() {
        let (mut log, records) = make_log(13, 20, 50);
        let at = records[5].offset as usize;
        log[at..at + 4].copy_from_slice(&1_000_000u32.to_le_bytes());
        let device = MemDevice::with_bytes(log);
        let (got, result) = read_device(&device, ReadOptions::default());
        assert_eq!(got.len(), 5);
        assert!(
            matches!(corrupt_at(&result), Some((o, _, Corrupt::Incomplete { len: 1_000_000, .. })) if o == at as u64),
            "{result:?}"
        );
    }

    #[test]
    fn ssn_decrease_is_corrupt() {
        let mut log = Vec::new();
        for ssn in [1, 5, 5] {
            Record { ssn: Ssn(ssn), kind: RecordKind::Marker, blind: false, payload: &[] }
                .encode_into(&mut log);
        }
        let device = MemDevice::with_bytes(log);
        let (got, result) = read_device(&device, ReadOptions::default());
        assert_eq!(got.len(), 2);
        assert_eq!(
            corrupt_at(&result),
            Some((34, SegmentNo(0), Corrupt::SsnOrder { prev: Ssn(5), ssn: Ssn(5) }))
        );
    }

    #[test]
    fn unsynced_window_tolerates_out_of_order_pages() {
        let (mut log, records) = make_log(17, 40, 30);
        // A hole at record 30, as if its page was lost while later pages of the same unsynced
        // write reached the disk.
        let hole = records[30].offset as usize;
        log[hole..hole + 8].fill(0);
        let device = MemDevice::with_bytes(log.clone());
        let strict = read_device(&device, ReadOptions::default()).1;
        assert!(corrupt_at(&strict).is_some(), "strict: {strict:?}");
        let tolerant =
            read_device(&device, ReadOptions { unsynced_window: (log.len() - hole) as u64 });
        assert_eq!(tolerant.0.len(), 30);
        assert_eq!(tolerant.1.unwrap().offset, hole as u64);
        // A valid record beyond the window proves the hole was synced: corruption.
        let narrow = ReadOptions { unsynced_window: (records[35].offset as usize - hole) as u64 };
        assert!(corrupt_at(&read_device(&device, narrow).1).is_some());
    }

    fn segment_of(records: &[(u64, RecordKind)], pad: usize) -> MemDevice {
        let mut log = Vec::new();
        for &(ssn, kind) in records {
            Record { ssn: Ssn(ssn), kind, blind: false, payload: b"p" }.encode_into(&mut log);
        }
        log.resize(log.len() + pad, 0);
        MemDevice::with_bytes(log)
    }

    #[test]
    fn segments_are_read_in_order_with_i2_across_them() {
        let a = segment_of(&[(1, RecordKind::Value), (2, RecordKind::Abort)], 100);
        let b = segment_of(&[], 50);
        let c = segment_of(&[(3, RecordKind::Marker), (9, RecordKind::Command)], 0);
        let segments: Vec<(SegmentNo, &dyn LogDevice)> =
            vec![(SegmentNo(1), &a), (SegmentNo(2), &b), (SegmentNo(5), &c)];
        let (got, end) = read_chunked(|| {
            SegmentReader::new(DeviceId(1), segments.clone(), ReadOptions::default())
        });
        assert_eq!(got.iter().map(|r| r.ssn.0).collect::<Vec<_>>(), [1, 2, 3, 9]);
        let end = end.unwrap();
        assert_eq!(
            (end.segment, end.offset, end.last_ssn, end.records),
            (SegmentNo(5), 36, Some(Ssn(9)), 4)
        );

        let late = segment_of(&[(2, RecordKind::Value)], 0);
        let segments: Vec<(SegmentNo, &dyn LogDevice)> =
            vec![(SegmentNo(1), &a), (SegmentNo(2), &late)];
        let result = read_chunked(|| {
            SegmentReader::new(DeviceId(1), segments.clone(), ReadOptions::default())
        })
        .1;
        assert_eq!(
            corrupt_at(&result),
            Some((0, SegmentNo(2), Corrupt::SsnOrder { prev: Ssn(2), ssn: Ssn(2) }))
        );
    }

    #[test]
    fn closed_segment_must_end_in_zeros() {
        let a = segment_of(&[(1, RecordKind::Value), (2, RecordKind::Value)], 100);
        let c = segment_of(&[(3, RecordKind::Value)], 0);
        // Garbage well after the end of a closed segment: AfterEnd at the garbage.
        a.corrupt(36 + 50, |b| *b = 1);
        let segments: Vec<(SegmentNo, &dyn LogDevice)> =
            vec![(SegmentNo(1), &a), (SegmentNo(2), &c)];
        let result = read_chunked(|| {
            SegmentReader::new(DeviceId(1), segments.clone(), ReadOptions::default())
        })
        .1;
        assert_eq!(corrupt_at(&result), Some((86, SegmentNo(1), Corrupt::AfterEnd { end: 36 })));
        // A damaged last record of a closed segment: Corrupt at the record, never skipped.
        let a = segment_of(&[(1, RecordKind::Value), (2, RecordKind::Value)], 100);
        a.corrupt(30, |b| *b ^= 4); // inside the SSN of the record at 18
        let segments: Vec<(SegmentNo, &dyn LogDevice)> =
            vec![(SegmentNo(1), &a), (SegmentNo(2), &c)];
        let result = read_chunked(|| {
            SegmentReader::new(DeviceId(1), segments.clone(), ReadOptions::default())
        })
        .1;
        assert!(
            matches!(corrupt_at(&result), Some((18, SegmentNo(1), Corrupt::Checksum { .. }))),
            "{result:?}"
        );
    }

    #[test]
    fn read_errors_are_device_failures() {
        let (log, _) = make_log(1, 5, 10);
        // The first read, and (in chunks of 16 bytes) a read in the middle of the segment.
        for (chunk, nth) in [(READ_CHUNK, 1), (16, 3)] {
            let device = FaultyDevice::new(MemDevice::with_bytes(log.clone())).fail_read(nth);
            TEST_CHUNK.with(|c| c.set(chunk));
            let mut reader =
                SegmentReader::new(DeviceId(0), vec![(SegmentNo(0), &device)], <_>::default());
            let result = read_all(&mut reader).1;
            TEST_CHUNK.with(|c| c.set(READ_CHUNK));
            assert!(
                matches!(result, Err(Error::DeviceFailed { device: DeviceId(0), .. })),
                "chunks of {chunk}: {result:?}"
            );
        }
    }

    #[test]
    fn file_device_log_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let options = crate::DeviceOptions { segment_size: 1 << 16, ..Default::default() };
        let opened = crate::open_device(&dir.path().join("0000.log"), &options).unwrap();
        let (log, records) = make_log(21, 200, 100);
        assert!(log.len() < 1 << 16);
        let half = records[100].offset as usize;
        opened.device.write_and_sync(0, &log[..half]).unwrap();
        let p = opened.device.submit_write_sync(half as u64, log[half..].to_vec()).unwrap();
        opened.device.wait(p).unwrap();
        drop(opened);
        let device = FileDevice::open(&dir.path().join("0000.log")).unwrap();
        let (got, end) = read_device(&device, ReadOptions::default());
        assert_eq!(got, records);
        assert_eq!(end.unwrap().offset, log.len() as u64);
    }
}
