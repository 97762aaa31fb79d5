//! Log buffers and SSN allocation (Poplar Algorithm 1; see the crate doc).

use crate::ssn::Ssn;
use crate::sync::{AtomicU64, Mutex, Ordering};

/// The state that the buffer latch protects.
#[derive(Debug)]
struct Latched {
    /// `L.ssn`: the largest SSN handed out by (or raised into) this buffer. Only grows.
    ssn: Ssn,
    /// Bytes reserved so far: the next reservation starts here. Only grows.
    reserved: u64,
}

/// One log buffer. Aligned so that two buffers' latches never share a cache line.
#[derive(Debug)]
#[repr(align(128))]
struct Buffer {
    latch: Mutex<Latched>,
    /// Bytes accounted by [`Reservation::fill`] or by dropping a reservation (abort marker).
    /// Relaxed: a statistic until the segment index (Algorithm 2) replaces it.
    filled: AtomicU64,
    /// Reservations dropped without `fill` (each becomes an abort marker). Relaxed statistic.
    aborted: AtomicU64,
}

/// The set of log buffers, one per log device. `Send + Sync`; shared by all sessions.
///
/// Nothing is durable in this issue: there are no devices yet (see the crate doc).
#[derive(Debug)]
pub struct Log {
    buffers: Box<[Buffer]>,
}

/// A byte range reserved in one log buffer, stamped with the transaction's SSN.
///
/// Fill it with [`Reservation::fill`]. Dropping it unfilled accounts the range as an abort
/// marker (DESIGN.md §4: a transaction that fails after allocating its SSN leaves a marker).
#[must_use = "a reservation must be filled; dropping it writes an abort marker"]
#[derive(Debug)]
pub struct Reservation<'a> {
    /// The SSN allocated to the transaction (I1: larger than its `base`).
    pub ssn: Ssn,
    log: &'a Log,
    buffer: usize,
    offset: u64,
    len: usize,
    filled: bool,
}

impl Log {
    /// A log with `n_buffers` buffers, all at `L.ssn = Ssn::ZERO`.
    ///
    /// # Panics
    /// If `n_buffers` is zero.
    pub fn new(n_buffers: usize) -> Log {
        assert!(n_buffers > 0, "a log needs at least one buffer");
        let buffers = (0..n_buffers)
            .map(|_| Buffer {
                latch: Mutex::new(Latched { ssn: Ssn::ZERO, reserved: 0 }),
                filled: AtomicU64::new(0),
                aborted: AtomicU64::new(0),
            })
            .collect();
        Log { buffers }
    }

    /// The number of buffers.
    pub fn n_buffers(&self) -> usize {
        self.buffers.len()
    }

    /// Algorithm 1: allocates `ssn = max(base, L.ssn) + 1` in `buffer` and reserves `len` bytes
    /// after every earlier reservation of that buffer, both under the buffer latch.
    ///
    /// Guarantees I1 (`ssn > base`) and I2 (within a buffer, SSNs strictly increase in byte
    /// order).
    ///
    /// # Panics
    /// If `buffer >= self.n_buffers()`.
    pub fn reserve(&self, buffer: usize, base: Ssn, len: usize) -> Reservation<'_> {
        let b = &self.buffers[buffer];
        let (ssn, offset) = {
            let mut l = b.latch.lock();
            let ssn = base.max(l.ssn).next();
            l.ssn = ssn;
            let offset = l.reserved;
            l.reserved += len as u64;
            (ssn, offset)
        };
        Reservation { ssn, log: self, buffer, offset, len, filled: false }
    }

    /// `max L.ssn` over all buffers: every SSN handed out so far is `<=` this.
    pub fn max_ssn(&self) -> Ssn {
        self.buffers.iter().map(|b| b.latch.lock().ssn).max().unwrap_or(Ssn::ZERO)
    }

    /// Raises `L.ssn` of every buffer to at least `target`, each under its latch. After it
    /// returns, every SSN allocated on any buffer is larger than `target` (checkpoint cut,
    /// idle-device progress; DESIGN.md §3 and §5).
    pub fn raise_all(&self, target: Ssn) {
        for b in self.buffers.iter() {
            let mut l = b.latch.lock();
            l.ssn = l.ssn.max(target);
        }
    }

    /// `L.ssn` of one buffer.
    pub fn buffer_ssn(&self, buffer: usize) -> Ssn {
        self.buffers[buffer].latch.lock().ssn
    }

    /// Bytes reserved so far in one buffer.
    pub fn reserved_bytes(&self, buffer: usize) -> u64 {
        self.buffers[buffer].latch.lock().reserved
    }

    /// Bytes accounted as filled (including abort markers) in one buffer.
    pub fn filled_bytes(&self, buffer: usize) -> u64 {
        self.buffers[buffer].filled.load(Ordering::Relaxed)
    }

    /// Reservations of one buffer that were dropped unfilled (abort markers).
    pub fn aborted_reservations(&self, buffer: usize) -> u64 {
        self.buffers[buffer].aborted.load(Ordering::Relaxed)
    }
}

impl Reservation<'_> {
    /// The buffer this range belongs to.
    pub fn buffer(&self) -> usize {
        self.buffer
    }

    /// The first byte of the range within its buffer.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The length of the range.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the record into the reserved range. In this issue there is no byte buffer: the
    /// range is only accounted as filled.
    ///
    /// # Panics
    /// If `bytes` is longer than the reservation.
    pub fn fill(mut self, bytes: &[u8]) {
        assert!(
            bytes.len() <= self.len,
            "record of {} bytes overflows a reservation of {} bytes (ssn {})",
            bytes.len(),
            self.len,
            self.ssn
        );
        self.account();
    }

    fn account(&mut self) {
        if !self.filled {
            self.filled = true;
            self.log.buffers[self.buffer].filled.fetch_add(self.len as u64, Ordering::Relaxed);
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.log.buffers[self.buffer].aborted.fetch_add(1, Ordering::Relaxed);
            self.account();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn ssn_is_max_of_base_and_buffer_plus_one() {
        let log = Log::new(2);
        let r = log.reserve(0, Ssn::ZERO, 10);
        assert_eq!(r.ssn, Ssn(1));
        assert_eq!(r.offset(), 0);
        r.fill(&[0; 10]);
        let r = log.reserve(0, Ssn(7), 5);
        assert_eq!(r.ssn, Ssn(8));
        assert_eq!(r.offset(), 10);
        r.fill(&[]);
        // A smaller base still gets a larger SSN than L.ssn (I2).
        let r = log.reserve(0, Ssn(2), 1);
        assert_eq!(r.ssn, Ssn(9));
        r.fill(&[1]);
        // Buffers are independent.
        let r = log.reserve(1, Ssn(3), 1);
        assert_eq!(r.ssn, Ssn(4));
        r.fill(&[1]);
        assert_eq!(log.max_ssn(), Ssn(9));
        assert_eq!(log.reserved_bytes(0), 16);
        assert_eq!(log.filled_bytes(0), 16);
    }

    #[test]
    fn raise_all_bounds_every_later_ssn() {
        let log = Log::new(3);
        log.reserve(1, Ssn(41), 0).fill(&[]);
        log.raise_all(log.max_ssn());
        assert_eq!(log.buffer_ssn(0), Ssn(42));
        assert_eq!(log.buffer_ssn(2), Ssn(42));
        for b in 0..3 {
            let r = log.reserve(b, Ssn::ZERO, 1);
            assert!(r.ssn > Ssn(42));
            r.fill(&[]);
        }
        // Raising never lowers.
        log.raise_all(Ssn(5));
        assert_eq!(log.buffer_ssn(0), Ssn(43));
    }

    #[test]
    fn dropped_reservation_is_an_abort_marker() {
        let log = Log::new(1);
        drop(log.reserve(0, Ssn::ZERO, 8));
        assert_eq!(log.aborted_reservations(0), 1);
        assert_eq!(log.filled_bytes(0), 8);
    }

    #[test]
    #[should_panic(expected = "overflows")]
    fn overfill_panics() {
        let log = Log::new(1);
        log.reserve(0, Ssn::ZERO, 1).fill(&[0, 0]);
    }

    /// I1 and I2 under contention: 4 threads reserve on 2 buffers with random bases; per buffer,
    /// sorting reservations by offset must give strictly increasing SSNs, ranges must tile the
    /// buffer, and every SSN must exceed its base.
    #[test]
    fn i1_i2_hold_under_contention() {
        let log = Arc::new(Log::new(2));
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                    for i in 0..20_000u64 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let buffer = (x % 2) as usize;
                        let base = Ssn(if i % 3 == 0 { log.max_ssn().0 } else { x % 1000 });
                        let len = (x % 64) as usize + 1;
                        let r = log.reserve(buffer, base, len);
                        assert!(r.ssn > base, "I1: ssn {} <= base {}", r.ssn, base);
                        seen.push((buffer, r.offset(), r.len(), r.ssn));
                        r.fill(&[]);
                    }
                    seen
                })
            })
            .collect();
        let mut all: Vec<_> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort();
        for buffer in 0..2 {
            let mut next_offset = 0;
            let mut last = Ssn::ZERO;
            for &(_, offset, len, ssn) in all.iter().filter(|r| r.0 == buffer) {
                assert_eq!(offset, next_offset, "ranges tile the buffer");
                assert!(ssn > last, "I2: ssn {ssn} after {last} in byte order");
                next_offset += len as u64;
                last = ssn;
            }
            assert_eq!(log.reserved_bytes(buffer), next_offset);
            assert_eq!(log.filled_bytes(buffer), next_offset);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Every interleaving of two reservations on one buffer and a `raise_all`: I1, I2, and SSNs
    /// above the raised target once `raise_all` has returned.
    #[test]
    fn alloc_i1_i2() {
        loom::model(|| {
            let log = Arc::new(Log::new(1));
            let threads: Vec<_> = [3u64, 1]
                .into_iter()
                .map(|base| {
                    let log = log.clone();
                    loom::thread::spawn(move || {
                        let r = log.reserve(0, Ssn(base), base as usize);
                        assert!(r.ssn > Ssn(base));
                        let out = (r.offset(), r.ssn);
                        r.fill(&[]);
                        out
                    })
                })
                .collect();
            log.raise_all(Ssn(10));
            let after = log.reserve(0, Ssn::ZERO, 1);
            assert!(after.ssn > Ssn(10));
            let mut got: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            got.push((after.offset(), after.ssn));
            after.fill(&[]);
            got.sort();
            assert!(got.windows(2).all(|w| w[0].1 < w[1].1), "I2: {got:?}");
        });
    }
}
