//! Replay of the log after the scan: which records, and the two replayers.
//!
//! [`value::replay`] is the parallel one; [`serial::SerialReplayer`] is the oracle (one
//! thread, SSN order) that tests compare it with. Both apply the same rule, [`select`].

pub mod serial;
pub mod value;

use wal::{Record, RecordKind, Ssn};

/// What replay does with one record.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Action {
    /// Not replayed: covered by the checkpoint (`ssn <= S`), beyond RSNe and not blind, or a
    /// marker or abort record (they carry no writes).
    Skip,
    /// A value record to install (or a spilled one: its payload is in its spill file).
    Values,
    /// A command record that must be replayed: PACMAN is not built yet.
    Unsupported,
}

/// DESIGN.md §5: replay every record with `S < ssn <= RSNe`, plus every blind record `> S`.
pub(crate) fn select(record: &Record<'_>, cut: Ssn, rsne: Ssn) -> Action {
    let wanted = record.ssn > cut && (record.ssn <= rsne || record.blind);
    match record.kind {
        RecordKind::Value | RecordKind::Spilled if wanted => Action::Values,
        RecordKind::Command if wanted => Action::Unsupported,
        RecordKind::Value
        | RecordKind::Spilled
        | RecordKind::Command
        | RecordKind::Marker
        | RecordKind::Abort => Action::Skip,
    }
}

/// Calls `f(table, key, row)` for every entry of a value payload, in order, without allocating
/// (`wal::Record::values` collects them into a vector, one allocation per record). Layout:
/// `wal::record`'s value payload table; a test checks that both decoders agree. Entries before
/// a malformed one have been passed to `f` when it fails.
pub(crate) fn for_each_value<'p>(
    payload: &'p [u8],
    mut f: impl FnMut(u32, &'p [u8], Option<&'p [u8]>),
) -> Result<(), wal::Corrupt> {
    const BAD: wal::Corrupt = wal::Corrupt::Payload { what: "value" };
    fn take<'p>(rest: &mut &'p [u8], n: usize) -> Result<&'p [u8], wal::Corrupt> {
        if rest.len() < n {
            return Err(BAD);
        }
        let (head, tail) = rest.split_at(n);
        *rest = tail;
        Ok(head)
    }
    fn take_u32(rest: &mut &[u8]) -> Result<u32, wal::Corrupt> {
        Ok(u32::from_le_bytes(take(rest, 4)?.try_into().expect("4 bytes")))
    }
    let mut rest = payload;
    let count = take_u32(&mut rest)?;
    for _ in 0..count {
        let table = take_u32(&mut rest)?;
        let key_len = take_u32(&mut rest)? as usize;
        let key = take(&mut rest, key_len)?;
        let row = match take_u32(&mut rest)? {
            wal::record::DELETE_ROW_LEN => None,
            row_len => Some(take(&mut rest, row_len as usize)?),
        };
        f(table, key, row);
    }
    if !rest.is_empty() {
        return Err(BAD);
    }
    Ok(())
}

/// The error for a value record whose CRC checks but whose payload does not parse.
pub(crate) fn bad_payload(
    device: wal::DeviceId,
    r: &wal::ReadRecord<'_>,
    reason: wal::Corrupt,
) -> crate::Error {
    crate::Error::Corrupt { device, segment: r.segment, offset: r.offset, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `for_each_value` decodes what `wal` encodes, and rejects what `wal` rejects.
    #[test]
    fn value_walker_agrees_with_wal() {
        use wal::record::{decode_values, encode_values};
        use wal::ValueEntry;
        let long = vec![7u8; 300];
        let entries = [
            ValueEntry { table: 1, key: b"k1", row: Some(b"row one") },
            ValueEntry { table: 2, key: b"", row: None },
            ValueEntry { table: 3, key: &long, row: Some(b"") },
            ValueEntry { table: u32::MAX, key: b"k4", row: Some(&long) },
        ];
        for n in 0..=entries.len() {
            let mut payload = Vec::new();
            encode_values(&entries[..n], &mut payload);
            let mut got = Vec::new();
            for_each_value(&payload, |table, key, row| got.push(ValueEntry { table, key, row }))
                .expect("valid payload");
            assert_eq!(got, decode_values(&payload).expect("valid"));
            // Every truncation and one trailing byte: both decoders fail.
            for cut in 0..payload.len() {
                assert!(decode_values(&payload[..cut]).is_err());
                assert!(for_each_value(&payload[..cut], |_, _, _| {}).is_err(), "cut {cut}");
            }
            payload.push(0);
            assert!(decode_values(&payload).is_err());
            assert!(for_each_value(&payload, |_, _, _| {}).is_err());
        }
    }

    #[test]
    fn selection_rule() {
        let rec = |ssn, kind, blind| Record { ssn: Ssn(ssn), kind, blind, payload: &[] };
        let (cut, rsne) = (Ssn(10), Ssn(20));
        use RecordKind::*;
        let cases = [
            (10, Value, false, Action::Skip),
            (10, Value, true, Action::Skip),
            (11, Value, false, Action::Values),
            (20, Value, false, Action::Values),
            (21, Value, false, Action::Skip),
            (21, Value, true, Action::Values),
            (99, Value, true, Action::Values),
            (15, Command, false, Action::Unsupported),
            (25, Command, false, Action::Skip),
            (25, Command, true, Action::Unsupported),
            (5, Command, true, Action::Skip),
            (15, Marker, false, Action::Skip),
            (15, Abort, false, Action::Skip),
        ];
        for (ssn, kind, blind, want) in cases {
            assert_eq!(select(&rec(ssn, kind, blind), cut, rsne), want, "{ssn} {kind} {blind}");
        }
    }
}
