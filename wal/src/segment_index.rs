//! The segment index (Poplar Algorithm 2): which reserved bytes of a log buffer are filled.
//!
//! Bytes of a buffer are numbered by a logical offset that only grows (the ring position is the
//! offset modulo the ring size). The index splits the reserved bytes into *segments*, numbered
//! by a sequence number `seq`:
//!
//! ```text
//!   released          closed segments (logger's)           open segment (reservers')
//!   |<-- seq k: [s_k, e_k) -->|<-- seq k+1 -->| ... |<-- seq m: [s_m, reserved) -->|
//!   buffered[k % SLOTS] counts the filled bytes of segment k
//! ```
//!
//! - A reservation takes its byte range in the *open* segment, under the buffer latch
//!   ([`OpenSegment::reserve`]), and remembers the segment's `seq`.
//! - [`Reservation::fill`](crate::Reservation::fill) copies its bytes, then adds its length to
//!   `buffered[seq % SLOTS]` ([`SegmentIndex::add_filled`]).
//! - The logger *closes* the open segment under the latch ([`OpenSegment::close`]): the segment
//!   gets its final end and the SSN of its last record, and a new open segment starts there.
//! - **The filled-prefix rule.** A closed segment may be written only once
//!   `buffered == end - start` ([`SegmentIndex::is_filled`]); the logger handles closed
//!   segments in `seq` order, so what it writes is always a fully filled prefix of the buffer.
//!   Since every byte of a closed segment belongs to exactly one reservation of that segment,
//!   the sum reaching the size means every reservation has finished copying, and the
//!   acquire-load of the sum makes those copies visible to the logger.
//!
//! Slot reuse: segment `k + SLOTS` uses the slot of segment `k`. Only the logger closes
//! segments, and it recycles slot `k` ([`SegmentIndex::recycle`]) after consuming segment `k`
//! and before it closes the segment that opens `k + SLOTS`, so a slot is never shared by two
//! live segments. The logger keeps at most `SLOTS - 1` closed, unconsumed segments.
//!
//! Poplar also lets workers close a segment once it reaches the I/O unit; here only the logger
//! closes, as soon as the previous write has been submitted (group commit without a timer: see
//! the crate doc).

use crate::ssn::Ssn;
use crate::sync::{AtomicU64, Condvar, Mutex, Ordering};

/// The latch-protected part of the index: the open segment. Lives inside the buffer's latch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpenSegment {
    /// The open segment's sequence number.
    pub(crate) seq: u64,
    /// The logical offset where it starts.
    pub(crate) start: u64,
    /// The logical offset where the next reservation starts (`L.reserved`).
    pub(crate) end: u64,
    /// The SSN of its last reservation (the largest, by I2), if any.
    pub(crate) last_ssn: Option<Ssn>,
}

/// A segment the logger closed: `[start, end)`, whose records' largest SSN is `last_ssn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClosedSegment {
    pub(crate) seq: u64,
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// `None` only if every reservation in it was detached (never the case with a ring).
    pub(crate) last_ssn: Option<Ssn>,
}

impl ClosedSegment {
    pub(crate) fn len(&self) -> u64 {
        self.end - self.start
    }
}

impl OpenSegment {
    /// The open segment at `offset`, numbered `seq`.
    pub(crate) fn new(seq: u64, offset: u64) -> OpenSegment {
        OpenSegment { seq, start: offset, end: offset, last_ssn: None }
    }

    /// Reserves `len` bytes for a record of SSN `ssn` (under the latch). Returns the offset and
    /// the segment's `seq`. The caller guarantees I2 (`ssn` above every earlier one).
    pub(crate) fn reserve(&mut self, len: u64, ssn: Ssn) -> (u64, u64) {
        debug_assert!(
            self.last_ssn.is_none_or(|last| last < ssn),
            "I2: {ssn} after {:?}",
            self.last_ssn
        );
        let offset = self.end;
        self.end += len;
        self.last_ssn = Some(ssn);
        (offset, self.seq)
    }

    /// Whether any byte is reserved in the open segment.
    pub(crate) fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Closes the open segment (under the latch) and opens the next one where it ended.
    /// `None` if it is empty (nothing to close).
    pub(crate) fn close(&mut self) -> Option<ClosedSegment> {
        if self.is_empty() {
            return None;
        }
        let closed = ClosedSegment {
            seq: self.seq,
            start: self.start,
            end: self.end,
            last_ssn: self.last_ssn,
        };
        *self = OpenSegment::new(self.seq + 1, self.end);
        Some(closed)
    }
}

/// The lock-free part of the index: filled-byte counters, one per slot, and where the logger
/// waits for a closed segment to be filled.
///
/// A slot's top bit ([`WAITING`]) says that the logger is (about to be) waiting for that
/// segment: the filler's one `fetch_add` both publishes its bytes and tells it whether to wake
/// the logger, so a fill costs one read-modify-write on one cache line (the protocol of
/// [`crate::sync::Parker`], with the slot as its state word: both sides change the word only
/// by RMWs, which are totally ordered on it).
#[derive(Debug)]
pub(crate) struct SegmentIndex {
    /// A cache line each: the open segment's slot takes every fill while the logger reads and
    /// recycles the closed one's.
    buffered: Box<[Slot]>,
    /// Held by the logger from before it sets [`WAITING`] until it waits, and by a filler that
    /// saw [`WAITING`] while it notifies: no wake-up falls between the logger's check and its
    /// wait.
    lock: Mutex<()>,
    filled: Condvar,
}

/// One filled-byte counter on its own cache line(s).
#[derive(Debug)]
#[repr(align(128))]
struct Slot(AtomicU64);

/// Slot bit: the logger waits (or is about to) for this segment. Set and cleared by the logger
/// only; a segment's bytes never reach it.
const WAITING: u64 = 1 << 63;

impl SegmentIndex {
    /// An index with `slots` counters (at least 2).
    pub(crate) fn new(slots: usize) -> SegmentIndex {
        assert!(slots >= 2, "a segment index needs an open and a closed slot");
        SegmentIndex {
            buffered: (0..slots).map(|_| Slot(AtomicU64::new(0))).collect(),
            lock: Mutex::new(()),
            filled: Condvar::new(),
        }
    }

    fn slot(&self, seq: u64) -> &AtomicU64 {
        &self.buffered[(seq % self.buffered.len() as u64) as usize].0
    }

    /// A reservation of segment `seq` has copied its `len` bytes. Wakes the logger if it waits
    /// for this segment.
    pub(crate) fn add_filled(&self, seq: u64, len: u64) {
        // Release: pairs with the Acquire loads and RMWs of `is_filled` and `wait_filled` (the
        // copied bytes are visible). Acquire: as `Parker::notify`, pairs with the logger's RMW
        // that set `WAITING`.
        if self.slot(seq).fetch_add(len, Ordering::AcqRel) & WAITING != 0 {
            let _guard = self.lock.lock();
            self.filled.notify_all();
        }
    }

    /// Whether every reserved byte of `segment` is filled: the filled-prefix rule.
    pub(crate) fn is_filled(&self, segment: &ClosedSegment) -> bool {
        // Acquire: pairs with the Release fetch_add in `add_filled` (the copies are visible).
        let buffered = self.slot(segment.seq).load(Ordering::Acquire) & !WAITING;
        debug_assert!(buffered <= segment.len(), "overfilled segment {segment:?}: {buffered}");
        buffered == segment.len()
    }

    /// Sleeps until [`SegmentIndex::is_filled`] holds for `segment` (the logger only: one
    /// waiter per index).
    pub(crate) fn wait_filled(&self, segment: &ClosedSegment) {
        let slot = self.slot(segment.seq);
        let mut guard = self.lock.lock();
        loop {
            // AcqRel: the Acquire half pairs with the fillers' Release RMWs (their copies are
            // visible); either a filler's RMW comes first and is counted here, or it comes
            // after and sees `WAITING`, then takes `lock`, which this thread holds until it
            // waits.
            let buffered = slot.fetch_or(WAITING, Ordering::AcqRel) & !WAITING;
            debug_assert!(buffered <= segment.len(), "overfilled segment {segment:?}");
            if buffered == segment.len() {
                slot.fetch_and(!WAITING, Ordering::Relaxed);
                return;
            }
            guard = self.filled.wait(guard);
        }
    }

    /// Makes the slot of a consumed segment available to segment `seq + slots()`.
    ///
    /// Call only after [`SegmentIndex::is_filled`] returned true for it (no filler of it is
    /// left) and before closing the segment that opens `seq + slots()`.
    pub(crate) fn recycle(&self, segment: &ClosedSegment) {
        // Relaxed: the next filler of this slot reserves in segment `seq + slots()`, which the
        // logger opens (under the latch) after this store; the latch orders the two.
        self.slot(segment.seq).store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_fully_filled_segments_are_ready() {
        let index = SegmentIndex::new(3);
        let mut open = OpenSegment::new(0, 0);
        assert_eq!(open.close(), None, "an empty segment is not closed");
        let (a, sa) = open.reserve(10, Ssn(1));
        let (b, sb) = open.reserve(5, Ssn(2));
        assert_eq!((a, b, sa, sb), (0, 10, 0, 0));
        let closed = open.close().unwrap();
        assert_eq!(closed, ClosedSegment { seq: 0, start: 0, end: 15, last_ssn: Some(Ssn(2)) });
        let (c, sc) = open.reserve(7, Ssn(3));
        assert_eq!((c, sc), (15, 1));
        index.add_filled(sc, 7);
        index.add_filled(sb, 5);
        assert!(!index.is_filled(&closed), "the first record is still being copied");
        index.add_filled(sa, 10);
        assert!(index.is_filled(&closed));
        index.recycle(&closed);
        let next = open.close().unwrap();
        assert!(index.is_filled(&next), "segment 1 was filled before it closed");
        assert_eq!(next.last_ssn, Some(Ssn(3)));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Two reservers reserve and fill (copy a byte each into a shared "ring", loom-checked for
    /// data races) while the logger closes the open segment and reads it once `is_filled` says
    /// so. In every interleaving, what the logger reads is exactly what was written: the
    /// filled-prefix rule makes the copies visible and race-free.
    #[test]
    fn filled_prefix_rule() {
        loom::model(|| {
            let latch = Arc::new(Mutex::new((OpenSegment::new(0, 0), Ssn::ZERO)));
            let index = Arc::new(SegmentIndex::new(2));
            let ring: Arc<[UnsafeCell<u8>; 2]> = Arc::new([UnsafeCell::new(0), UnsafeCell::new(0)]);
            let fillers: Vec<_> = (0..2u8)
                .map(|t| {
                    let (latch, index, ring) = (latch.clone(), index.clone(), ring.clone());
                    loom::thread::spawn(move || {
                        let (offset, seq) = {
                            let mut l = latch.lock();
                            let ssn = l.1.next();
                            l.1 = ssn;
                            l.0.reserve(1, ssn)
                        };
                        // SAFETY: each filler writes only its own reserved byte; loom checks the claim.
                        ring[offset as usize].with_mut(|p| unsafe { *p = 10 + t });
                        index.add_filled(seq, 1);
                    })
                })
                .collect();
            let mut seen = Vec::new();
            let mut read_to = 0;
            while read_to < 2 {
                let closed = latch.lock().0.close();
                let Some(closed) = closed else {
                    loom::thread::yield_now();
                    continue;
                };
                while !index.is_filled(&closed) {
                    loom::thread::yield_now();
                }
                for offset in closed.start..closed.end {
                    // SAFETY: the segment is filled, so no filler writes it any more.
                    seen.push(ring[offset as usize].with(|p| unsafe { *p }));
                }
                index.recycle(&closed);
                read_to = closed.end;
            }
            for f in fillers {
                f.join().unwrap();
            }
            seen.sort();
            assert_eq!(seen, vec![10, 11]);
        });
    }

    /// The logger sleeps in `wait_filled` for a closed segment that two fillers are still
    /// copying into: in every interleaving it is woken (loom reports a deadlock for a lost
    /// wake-up) and then sees both copies (loom checks the accesses for data races).
    #[test]
    fn wait_filled_never_loses_a_wakeup() {
        loom::model(|| {
            let index = Arc::new(SegmentIndex::new(2));
            let ring: Arc<[UnsafeCell<u8>; 2]> = Arc::new([UnsafeCell::new(0), UnsafeCell::new(0)]);
            let closed = ClosedSegment { seq: 0, start: 0, end: 2, last_ssn: Some(Ssn(2)) };
            let fillers: Vec<_> = (0..2u8)
                .map(|t| {
                    let (index, ring) = (index.clone(), ring.clone());
                    loom::thread::spawn(move || {
                        // SAFETY: each filler writes only its own byte; loom checks the claim.
                        ring[t as usize].with_mut(|p| unsafe { *p = 10 + t });
                        index.add_filled(0, 1);
                    })
                })
                .collect();
            index.wait_filled(&closed);
            // SAFETY: the segment is filled, so no filler writes it any more.
            let seen: Vec<u8> = ring.iter().map(|b| b.with(|p| unsafe { *p })).collect();
            assert_eq!(seen, vec![10, 11]);
            for f in fillers {
                f.join().unwrap();
            }
        });
    }
}
