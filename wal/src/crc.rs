//! CRC-32C of log records, fast at the sizes a log holds (tens to hundreds of bytes).
//!
//! A record's CRC covers its bytes `0..4` (`len`) and `8..len` ([`crate::record`]). The
//! `crc32c` crate is fast on long buffers (three interleaved streams over blocks of 768 bytes
//! and more), but a record of ~150 bytes takes its serial path: byte-wise steps up to 8-byte
//! alignment and after the last whole word, and two calls (one for `len`, one for the rest).
//! Recovery's readers spent a quarter of their time there.
//!
//! Here, on x86-64 with SSE 4.2 (checked at run time; elsewhere the `crc32c` crate):
//! - [`record`]: one pass, the `crc32` instruction on unaligned 8-byte loads, one 4-byte and
//!   at most one byte-wise tail;
//! - [`records3`]: three records at once. Each `crc32` step waits 3 cycles for the previous
//!   one but the core starts one per cycle, so three independent records interleaved take
//!   about as long as one: the reader checks the next three records in one go;
//! - [`record_split`]: one record given as a header and a payload in separate places (the
//!   writer's form; [`record`] is it with an empty payload part).
//!
//! All compute exactly `crc32c_append(crc32c(&bytes[0..4]), &bytes[8..])`; the tests compare
//! them with the `crc32c` crate for every length up to 300 and random contents.

/// The CRC-32C of a record's bytes `0..4` followed by `8..`. `bytes.len() >= 8`.
pub(crate) fn record(bytes: &[u8]) -> u32 {
    record_split(bytes, &[])
}

/// [`record`] of the record whose bytes are `head` followed by `tail` (`head.len() >= 8`):
/// the writer's form, which reads the payload where it was encoded rather than the copy it
/// just stored into the log buffer (those stores may still be waiting for their cache lines,
/// and loads of them would wait too).
pub(crate) fn record_split(head: &[u8], tail: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2 (checked just above).
        return unsafe { hw::record_split(head, tail) };
    }
    crc32c::crc32c_append(crc32c::crc32c_append(crc32c::crc32c(&head[0..4]), &head[8..]), tail)
}

/// [`record`] of three records (each at least 8 bytes), computed interleaved.
pub(crate) fn records3(records: [&[u8]; 3]) -> [u32; 3] {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2 (checked just above).
        return unsafe { hw::records3(records) };
    }
    records.map(portable)
}

fn portable(bytes: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&bytes[0..4]), &bytes[8..])
}

#[cfg(target_arch = "x86_64")]
mod hw {
    use std::arch::x86_64::{_mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};

    fn word(chunk: &[u8]) -> u64 {
        u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"))
    }

    /// The little-endian word in `bytes[0..4]` (a record's `len`, or a 4-byte tail).
    fn le32(bytes: &[u8]) -> u32 {
        u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes"))
    }

    /// Continues the raw (uninverted) CRC state `s` over `data`.
    #[target_feature(enable = "sse4.2")]
    fn update(mut s: u64, data: &[u8]) -> u64 {
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            s = _mm_crc32_u64(s, word(w));
        }
        let mut rest = words.remainder();
        if rest.len() >= 4 {
            s = u64::from(_mm_crc32_u32(s as u32, le32(rest)));
            rest = &rest[4..];
        }
        for &b in rest {
            s = u64::from(_mm_crc32_u8(s as u32, b));
        }
        s
    }

    #[target_feature(enable = "sse4.2")]
    pub(super) fn record_split(head: &[u8], tail: &[u8]) -> u32 {
        let s = u64::from(_mm_crc32_u32(!0, le32(head)));
        !(update(update(s, &head[8..]), tail) as u32)
    }

    #[target_feature(enable = "sse4.2")]
    pub(super) fn records3(records: [&[u8]; 3]) -> [u32; 3] {
        let [a, b, c] = records.map(|r| &r[8..]);
        let [mut sa, mut sb, mut sc] = records.map(|r| u64::from(_mm_crc32_u32(!0, le32(r))));
        let common = a.len().min(b.len()).min(c.len()) & !7;
        let words = a[..common].chunks_exact(8).zip(b[..common].chunks_exact(8));
        for ((x, y), z) in words.zip(c[..common].chunks_exact(8)) {
            sa = _mm_crc32_u64(sa, word(x));
            sb = _mm_crc32_u64(sb, word(y));
            sc = _mm_crc32_u64(sc, word(z));
        }
        [
            !(update(sa, &a[common..]) as u32),
            !(update(sb, &b[common..]) as u32),
            !(update(sc, &c[common..]) as u32),
        ]
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn record_crc_is_the_crates_over_len_and_the_rest() {
        for len in 8..300 {
            for seed in 1..4 {
                let b = bytes(seed * 1000 + len as u64, len);
                assert_eq!(record(&b), portable(&b), "len {len}");
            }
        }
        // Split anywhere past the skipped bytes, the same CRC.
        for len in 8..200 {
            let b = bytes(len as u64 + 5, len);
            for at in 8..=len {
                assert_eq!(record_split(&b[..at], &b[at..]), record(&b), "len {len} at {at}");
            }
        }
        // The standard check value, for "123456789" laid out as a record (bytes 4..8 skipped).
        assert_eq!(record(b"1234\xAA\xAA\xAA\xAA56789"), 0xE306_9283);
    }

    #[test]
    fn three_interleaved_equal_three_alone() {
        let lens = [8, 9, 15, 16, 17, 23, 24, 31, 100, 157, 158, 163, 300, 1000];
        for (i, &la) in lens.iter().enumerate() {
            for &lb in &lens {
                for &lc in &lens[i..] {
                    let rs =
                        [bytes(la as u64, la), bytes(lb as u64 + 7, lb), bytes(lc as u64 + 9, lc)];
                    let got = records3([&rs[0], &rs[1], &rs[2]]);
                    assert_eq!(got, [portable(&rs[0]), portable(&rs[1]), portable(&rs[2])]);
                }
            }
        }
    }
}
