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
    /// A value record to install.
    Values,
    /// A command record that must be replayed: PACMAN is not built yet.
    Unsupported,
}

/// DESIGN.md §5: replay every record with `S < ssn <= RSNe`, plus every blind record `> S`.
pub(crate) fn select(record: &Record<'_>, cut: Ssn, rsne: Ssn) -> Action {
    let wanted = record.ssn > cut && (record.ssn <= rsne || record.blind);
    match record.kind {
        RecordKind::Value if wanted => Action::Values,
        RecordKind::Command if wanted => Action::Unsupported,
        RecordKind::Value | RecordKind::Command | RecordKind::Marker | RecordKind::Abort => {
            Action::Skip
        }
    }
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
