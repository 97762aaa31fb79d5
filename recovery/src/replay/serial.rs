//! [`SerialReplayer`]: the oracle. One thread, every device merged into one stream in SSN
//! order, each selected entry installed in that order. Slow and obviously right: the parallel
//! replayer must leave the same state (tests compare the two).

use std::time::Instant;

use wal::{RecordKind, SegmentNo, Ssn};

use crate::error::Error;
use crate::plan::{DeviceLog, RecoveryPlan};
use crate::progress::Summary;
use crate::replay::{bad_payload, select, Action};
use crate::target::Target;

/// The reference replayer (see the module doc).
#[derive(Debug)]
pub struct SerialReplayer<'p> {
    plan: &'p RecoveryPlan,
}

/// A record copied out of its reader, so that one head per device can be held at once.
struct Head<'l> {
    log: &'l DeviceLog,
    segment: SegmentNo,
    offset: u64,
    ssn: Ssn,
    kind: RecordKind,
    blind: bool,
    payload: Vec<u8>,
    len: usize,
}

impl<'p> SerialReplayer<'p> {
    /// A replayer over the devices of `plan`.
    pub fn new(plan: &'p RecoveryPlan) -> SerialReplayer<'p> {
        SerialReplayer { plan }
    }

    /// Replays `(cut, RSNe]` plus blind value records `> cut` into `target`, in SSN order
    /// (ties between devices: lower device id first; one key never has two writers with one
    /// SSN, by I1). Errors as [`crate::replay()`].
    pub fn replay(&self, cut: Ssn, target: &dyn Target) -> Result<Summary, Error> {
        let start = Instant::now();
        let rsne = self.plan.rsne();
        let options = self.plan.read_options();
        let mut readers: Vec<_> =
            self.plan.devices.iter().filter_map(|d| d.reader(options).map(|r| (d, r))).collect();
        let mut heads: Vec<Option<Head>> = Vec::with_capacity(readers.len());
        for (log, reader) in &mut readers {
            heads.push(next_head(log, reader)?);
        }
        let mut summary = Summary {
            devices: self.plan.devices().len(),
            threads: 1,
            cut,
            rsne,
            scan: self.plan.scan_time(),
            replay: Default::default(),
            bytes: 0,
            spill_bytes: 0,
            records: 0,
            replayed: 0,
            entries: 0,
        };
        // The device whose head has the smallest SSN (ties: the lower device id).
        while let Some(i) = (0..heads.len())
            .filter(|&i| heads[i].is_some())
            .min_by_key(|&i| heads[i].as_ref().map(|h| h.ssn))
        {
            let head = heads[i].take().expect("picked a present head");
            summary.records += 1;
            summary.bytes += head.len as u64;
            let record = wal::Record {
                ssn: head.ssn,
                kind: head.kind,
                blind: head.blind,
                payload: &head.payload,
            };
            match select(&record, cut, rsne) {
                Action::Skip => {}
                Action::Unsupported => {
                    return Err(Error::Unsupported {
                        device: head.log.device,
                        segment: head.segment,
                        offset: head.offset,
                        ssn: head.ssn,
                    })
                }
                Action::Values => {
                    // A spilled record stands for the value record in its spill file.
                    let spilled = match head.kind {
                        RecordKind::Spilled => {
                            let p =
                                head.log.read_spill(head.segment, head.offset, &head.payload)?;
                            summary.spill_bytes += p.len() as u64;
                            Some(p)
                        }
                        _ => None,
                    };
                    let record = match &spilled {
                        Some(payload) => wal::Record { kind: RecordKind::Value, payload, ..record },
                        None => record,
                    };
                    let entries = record.values().map_err(|reason| {
                        let at =
                            wal::ReadRecord { segment: head.segment, offset: head.offset, record };
                        bad_payload(head.log.device, &at, reason)
                    })?;
                    summary.replayed += 1;
                    for e in entries {
                        target.install(e.table, e.key, e.row, head.ssn).map_err(|message| {
                            Error::Install {
                                table: e.table,
                                key: e.key.to_vec(),
                                ssn: head.ssn,
                                message,
                            }
                        })?;
                        summary.entries += 1;
                    }
                }
            }
            let (log, reader) = &mut readers[i];
            heads[i] = next_head(log, reader)?;
        }
        summary.replay = start.elapsed();
        Ok(summary)
    }
}

/// The next record of `log`.
fn next_head<'l>(
    log: &'l DeviceLog,
    reader: &mut wal::SegmentReader<'_>,
) -> Result<Option<Head<'l>>, Error> {
    let Some(r) = reader.next_record()? else { return Ok(None) };
    Ok(Some(Head {
        log,
        segment: r.segment,
        offset: r.offset,
        ssn: r.record.ssn,
        kind: r.record.kind,
        blind: r.record.blind,
        payload: r.record.payload.to_vec(),
        len: r.record.encoded_len(),
    }))
}
