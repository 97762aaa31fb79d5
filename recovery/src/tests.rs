//! Tests of the scan, RSNe and both replayers over hand-built logs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wal::record::encode_values;
use wal::testing::MemDevice;
use wal::{Corrupt, DeviceId, LogDevice, Record, RecordKind, SegmentNo, Ssn, ValueEntry};

use crate::replay::value::Tuning;
use crate::testing::MapTarget;
use crate::{replay, DeviceLog, Error, Progress, RecoveryPlan, ScanOptions, SerialReplayer};

/// A write of a test record: `row = None` deletes.
type Write = (u32, Vec<u8>, Option<Vec<u8>>);

/// One record of a hand-built log.
#[derive(Clone, Debug)]
struct Rec {
    ssn: u64,
    kind: RecordKind,
    blind: bool,
    writes: Vec<Write>,
}

fn value(ssn: u64, blind: bool, writes: Vec<Write>) -> Rec {
    Rec { ssn, kind: RecordKind::Value, blind, writes }
}

fn put(table: u32, key: &str, row: &str) -> Write {
    (table, key.as_bytes().to_vec(), Some(row.as_bytes().to_vec()))
}

fn del(table: u32, key: &str) -> Write {
    (table, key.as_bytes().to_vec(), None)
}

fn marker(ssn: u64) -> Rec {
    Rec { ssn, kind: RecordKind::Marker, blind: false, writes: vec![] }
}

/// Encodes `recs` back to back; returns the bytes and each record's offset.
fn encode(recs: &[Rec]) -> (Vec<u8>, Vec<u64>) {
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    for r in recs {
        let mut payload = Vec::new();
        match r.kind {
            RecordKind::Value => {
                let entries: Vec<_> = r
                    .writes
                    .iter()
                    .map(|(t, k, row)| ValueEntry { table: *t, key: k, row: row.as_deref() })
                    .collect();
                encode_values(&entries, &mut payload);
            }
            RecordKind::Command => payload.extend_from_slice(b"call p(1)"),
            // Hand-built logs have no spill files: see `spilled_records_replay_like_value_records`.
            RecordKind::Spilled => unreachable!("no spilled records in hand-built logs"),
            RecordKind::Marker | RecordKind::Abort => {}
        }
        offsets.push(out.len() as u64);
        Record { ssn: Ssn(r.ssn), kind: r.kind, blind: r.blind, payload: &payload }
            .encode_into(&mut out);
    }
    (out, offsets)
}

/// A device of one segment holding `bytes` (plus `pad` zero bytes, as preallocation leaves).
fn device(id: u16, bytes: Vec<u8>, pad: usize) -> DeviceLog {
    devices_segments(id, vec![bytes], pad)
}

fn devices_segments(id: u16, segments: Vec<Vec<u8>>, pad: usize) -> DeviceLog {
    let segments = segments
        .into_iter()
        .enumerate()
        .map(|(i, mut bytes)| {
            bytes.resize(bytes.len() + pad, 0);
            (SegmentNo(i as u64), Arc::new(MemDevice::with_bytes(bytes)) as Arc<dyn LogDevice>)
        })
        .collect();
    DeviceLog::new(DeviceId(id), segments)
}

fn scan(devices: Vec<DeviceLog>) -> Result<RecoveryPlan, Error> {
    RecoveryPlan::scan(devices, ScanOptions::default())
}

/// Runs both replayers; checks they agree on every version; returns the live rows.
fn replay_both(plan: &RecoveryPlan, cut: u64, threads: usize) -> BTreeMap<(u32, Vec<u8>), Vec<u8>> {
    let parallel = MapTarget::new();
    let reports = Mutex::new(Vec::<Progress>::new());
    let summary = replay(plan, Ssn(cut), &parallel, threads, &|p| reports.lock().unwrap().push(*p))
        .expect("parallel replay");
    let serial = MapTarget::new();
    let oracle = SerialReplayer::new(plan).replay(Ssn(cut), &serial).expect("serial replay");
    assert_eq!(parallel.versions(), serial.versions(), "parallel == serial");
    assert_eq!(
        (summary.bytes, summary.spill_bytes, summary.records, summary.replayed, summary.entries),
        (oracle.bytes, oracle.spill_bytes, oracle.records, oracle.replayed, oracle.entries)
    );
    assert_eq!((summary.bytes, summary.records), (plan.bytes(), plan.records()));
    let last = *reports.lock().unwrap().last().expect("a final progress report");
    assert_eq!((last.bytes_done, last.records_done), (last.bytes_total, last.records_total));
    assert_eq!(last.eta(), Some(std::time::Duration::ZERO));
    let shown = summary.to_string();
    assert!(
        shown.contains("GB/s") && shown.contains(&format!("RSNe = {}", plan.rsne())),
        "{shown}"
    );
    // The single pass (scan and staging together), with plenty of room for undecided
    // records and with none (its readers then wait for each other at every record).
    for tuning in [
        Tuning { held_cap: usize::MAX, publish_every: 32 },
        Tuning { held_cap: 1, publish_every: 1 },
        Tuning { held_cap: 200, publish_every: 3 },
    ] {
        let (summary, versions) = stage_one_pass(plan, cut, threads, tuning);
        assert_eq!(versions, serial.versions(), "one pass == serial ({tuning:?})");
        assert_eq!(
            (summary.bytes, summary.spill_bytes, summary.records, summary.replayed),
            (oracle.bytes, oracle.spill_bytes, oracle.records, oracle.replayed)
        );
        assert_eq!(summary.entries, oracle.entries);
    }
    parallel.rows()
}

/// The single pass over `plan`'s devices with checkpoint cut `cut`: checks that its plan is
/// the scan's, installs into a `MapTarget`, returns the summary and the versions.
fn stage_one_pass(
    plan: &RecoveryPlan,
    cut: u64,
    threads: usize,
    tuning: Tuning,
) -> (crate::Summary, crate::testing::Versions) {
    let options = ScanOptions {
        unsynced_window: plan.read_options().unsynced_window,
        checkpoint_ssn: Ssn(cut),
    };
    let reports = Mutex::new(Vec::<Progress>::new());
    let (staged_plan, staged) =
        crate::replay::value::stage_with(plan.devices.clone(), options, threads, tuning, &|p| {
            reports.lock().unwrap().push(*p)
        })
        .expect("single pass");
    let scanned = RecoveryPlan::scan(plan.devices.clone(), options).expect("scan");
    assert_eq!(staged_plan.rsne(), scanned.rsne());
    assert_eq!(staged_plan.devices(), scanned.devices());
    assert_eq!(staged_plan.existing_segments(), scanned.existing_segments());
    assert_eq!(staged_plan.max_ssn(), scanned.max_ssn());
    let last = *reports.lock().unwrap().last().expect("a final progress report");
    assert_eq!((last.bytes_done, last.records_done), (staged_plan.bytes(), staged_plan.records()));
    assert_eq!((last.bytes_total, last.records_total), (last.bytes_done, last.records_done));
    assert_eq!(last.eta(), Some(Duration::ZERO));
    let target = MapTarget::new();
    let writes = staged.writes();
    let summary = staged.install(&target).expect("install");
    assert_eq!(target.versions().len(), writes, "each staged key installed once");
    assert_eq!(
        (summary.rsne, summary.cut, summary.scan),
        (scanned.rsne(), Ssn(cut), Duration::ZERO)
    );
    (summary, target.versions())
}

fn rows(list: &[(u32, &str, &str)]) -> BTreeMap<(u32, Vec<u8>), Vec<u8>> {
    list.iter().map(|(t, k, r)| ((*t, k.as_bytes().to_vec()), r.as_bytes().to_vec())).collect()
}

/// The three devices of the diagram in plan.rs: last durable SSNs 9, 8, 12 → RSNe 8.
fn three_devices() -> Vec<Vec<Rec>> {
    vec![
        vec![
            value(1, false, vec![put(1, "a", "a1")]),
            value(4, false, vec![put(1, "b", "b4")]),
            value(7, false, vec![put(1, "a", "a7")]),
            marker(9),
        ],
        vec![
            value(2, false, vec![put(1, "c", "c2")]),
            value(3, false, vec![put(2, "a", "x3")]),
            value(8, false, vec![del(1, "b")]),
        ],
        vec![
            value(5, false, vec![put(1, "d", "d5")]),
            value(6, true, vec![put(1, "e", "e6")]),
            value(11, false, vec![put(1, "f", "f11"), put(1, "a", "a11")]),
            value(12, true, vec![put(1, "g", "g12"), put(1, "c", "c12")]),
        ],
    ]
}

#[test]
fn rsne_is_min_over_devices_of_last_durable_ssn() {
    let devices = three_devices()
        .iter()
        .enumerate()
        .map(|(i, r)| device(i as u16, encode(r).0, 64))
        .collect();
    let plan = scan(devices).unwrap();
    let last: Vec<_> = plan.devices().iter().map(|d| d.last_ssn).collect();
    assert_eq!(last, [Some(Ssn(9)), Some(Ssn(8)), Some(Ssn(12))], "a marker counts");
    assert_eq!(plan.rsne(), Ssn(8));
    assert_eq!(plan.records(), 11);
    // A device with no segment at all holds RSNe at 0: nothing non-blind was acknowledged.
    let mut devices: Vec<_> =
        three_devices().iter().enumerate().map(|(i, r)| device(i as u16, encode(r).0, 0)).collect();
    devices.push(DeviceLog::new(DeviceId(7), vec![]));
    assert_eq!(scan(devices).unwrap().rsne(), Ssn::ZERO);
    // Bad device lists.
    assert!(matches!(scan(vec![]), Err(Error::NoDevices)));
    let dup = vec![device(1, vec![], 0), device(1, vec![], 0)];
    assert!(matches!(scan(dup), Err(Error::DuplicateDevice(DeviceId(1)))));
}

#[test]
fn records_above_rsne_are_replayed_only_if_blind() {
    let devices = three_devices()
        .iter()
        .enumerate()
        .map(|(i, r)| device(i as u16, encode(r).0, 64))
        .collect();
    let plan = scan(devices).unwrap();
    // Non-blind 11 (f, a) is beyond RSNe 8: excluded. Blind 12 (g, c) is replayed. b deleted at 8.
    let got = replay_both(&plan, 0, 4);
    let want = rows(&[
        (1, "a", "a7"),
        (1, "c", "c12"),
        (1, "d", "d5"),
        (1, "e", "e6"),
        (1, "g", "g12"),
        (2, "a", "x3"),
    ]);
    assert_eq!(got, want);
    // A cut S = 6 excludes everything <= 6, blind or not.
    let got = replay_both(&plan, 6, 3);
    assert_eq!(got, rows(&[(1, "a", "a7"), (1, "c", "c12"), (1, "g", "g12")]));
}

#[test]
fn deletes_remove_keys_whatever_the_arrival_order() {
    // Insert on device 0 at 1, delete on device 1 at 2, re-insert on device 0 at 3, delete of
    // another key on device 1 at 4. Device 0's later records are read independently of
    // device 1's, so the tombstone must hold.
    let d0 = vec![
        value(1, false, vec![put(1, "k", "v1"), put(1, "j", "j1")]),
        value(3, false, vec![put(1, "m", "m3")]),
        marker(5),
    ];
    let d1 = vec![value(2, false, vec![del(1, "k")]), value(4, false, vec![del(1, "m")])];
    for threads in [1, 2, 4] {
        let plan = scan(vec![device(0, encode(&d0).0, 0), device(1, encode(&d1).0, 0)]).unwrap();
        assert_eq!(plan.rsne(), Ssn(4));
        assert_eq!(replay_both(&plan, 0, threads), rows(&[(1, "j", "j1")]));
    }
}

#[test]
fn torn_tail_lowers_rsne_to_the_last_good_record() {
    let recs = three_devices();
    let (d1, offsets) = encode(&recs[1]);
    let last = offsets[2] as usize;
    for cut in [last + 1, last + 17, d1.len() - 1] {
        let devices = vec![
            device(0, encode(&recs[0]).0, 64),
            device(1, d1[..cut].to_vec(), 64),
            device(2, encode(&recs[2]).0, 64),
        ];
        let plan = scan(devices).unwrap();
        let end = plan.devices()[1].end.unwrap();
        assert_eq!((end.offset, end.discarded > 0), (last as u64, true), "cut {cut}");
        assert_eq!(plan.devices()[1].last_ssn, Some(Ssn(3)));
        assert_eq!(plan.rsne(), Ssn(3), "cut {cut}");
        // Only <= 3 plus blind records (6, 12): a1, c2, x3, e6, then c12 and g12.
        let got = replay_both(&plan, 0, 4);
        assert_eq!(
            got,
            rows(&[
                (1, "a", "a1"),
                (1, "c", "c12"),
                (1, "e", "e6"),
                (1, "g", "g12"),
                (2, "a", "x3")
            ])
        );
    }
}

#[test]
fn corrupt_record_in_the_middle_is_a_hard_error() {
    let recs = three_devices();
    let (mut d1, offsets) = encode(&recs[1]);
    d1[offsets[1] as usize + 20] ^= 0x40; // inside record 3's payload: CRC mismatch
    let devices = vec![
        device(0, encode(&recs[0]).0, 0),
        devices_segments(1, vec![encode(&recs[1][..0]).0, d1], 0),
        device(2, encode(&recs[2]).0, 0),
    ];
    let check = |r: Result<RecoveryPlan, Error>| match r {
        Err(Error::Corrupt { device, segment, offset, reason: Corrupt::Checksum { .. } }) => {
            assert_eq!((device, segment, offset), (DeviceId(1), SegmentNo(1), offsets[1]));
        }
        other => panic!("{other:?}"),
    };
    check(scan(devices.clone()));
    // The single pass fails the same way, and before the target sees anything.
    check(crate::stage(devices, ScanOptions::default(), 2, &|_| {}).map(|(plan, _)| plan));
    // The same damage in the *last* record is a torn tail, not an error.
    let (mut d1, offsets) = encode(&recs[1]);
    d1[offsets[2] as usize + 20] ^= 0x40;
    let plan = scan(vec![device(1, d1, 0)]).unwrap();
    assert_eq!(plan.rsne(), Ssn(3));
}

#[test]
fn malformed_value_payload_with_good_crc_stops_both_replayers() {
    let mut log = Vec::new();
    Record { ssn: Ssn(1), kind: RecordKind::Value, blind: false, payload: &[1, 0] }
        .encode_into(&mut log);
    let plan = scan(vec![device(0, log, 0)]).unwrap();
    let check = |r: Result<crate::Summary, Error>| match r {
        Err(Error::Corrupt { device, offset: 0, reason: Corrupt::Payload { .. }, .. }) => {
            assert_eq!(device, DeviceId(0));
        }
        other => panic!("{other:?}"),
    };
    check(replay(&plan, Ssn(0), &MapTarget::new(), 2, &|_| {}));
    check(SerialReplayer::new(&plan).replay(Ssn(0), &MapTarget::new()));
    check(one_pass(&plan, Ssn(0), &MapTarget::new()));
}

/// The single pass over `plan`'s devices with cut `cut`, installed into `target`.
fn one_pass(
    plan: &RecoveryPlan,
    cut: Ssn,
    target: &dyn crate::Target,
) -> Result<crate::Summary, Error> {
    let options = ScanOptions::default().with_checkpoint(cut);
    let (_, staged) = crate::stage(plan.devices.clone(), options, 2, &|_| {})?;
    staged.install(target)
}

#[test]
fn command_records_to_replay_are_unsupported_not_skipped() {
    let cmd = |ssn, blind| Rec { ssn, kind: RecordKind::Command, blind, writes: vec![] };
    let recs = vec![value(1, false, vec![put(1, "a", "1")]), cmd(2, false), marker(3)];
    let (bytes, offsets) = encode(&recs);
    let plan = scan(vec![device(0, bytes, 0)]).unwrap();
    assert_eq!(plan.devices()[0].commands, 1);
    let check = |r: Result<crate::Summary, Error>| match r {
        Err(Error::Unsupported { device, segment, offset, ssn }) => {
            assert_eq!(
                (device, segment, offset, ssn),
                (DeviceId(0), SegmentNo(0), offsets[1], Ssn(2))
            );
        }
        other => panic!("{other:?}"),
    };
    check(replay(&plan, Ssn(0), &MapTarget::new(), 2, &|_| {}));
    check(SerialReplayer::new(&plan).replay(Ssn(0), &MapTarget::new()));
    check(one_pass(&plan, Ssn(0), &MapTarget::new()));
    // Covered by the checkpoint cut: nothing to replay, no error.
    assert_eq!(replay_both(&plan, 2, 2), rows(&[]));
}

#[test]
fn install_errors_stop_replay() {
    struct Refuse;
    impl crate::Target for Refuse {
        fn install(&self, table: u32, _: &[u8], _: Option<&[u8]>, _: Ssn) -> Result<(), String> {
            if table == 2 {
                Err("no such table".into())
            } else {
                Ok(())
            }
        }
    }
    let devices =
        three_devices().iter().enumerate().map(|(i, r)| device(i as u16, encode(r).0, 0)).collect();
    let plan = scan(devices).unwrap();
    for r in [
        replay(&plan, Ssn(0), &Refuse, 3, &|_| {}),
        SerialReplayer::new(&plan).replay(Ssn(0), &Refuse),
        one_pass(&plan, Ssn(0), &Refuse),
    ] {
        match r {
            Err(Error::Install { table: 2, ssn: Ssn(3), message, .. }) => {
                assert_eq!(message, "no such table");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The single pass reads every device to its end even after a replay error, so a damaged
/// record anywhere wins over a command record or a malformed payload elsewhere, as it does when
/// the scan runs first; and a replay error stops it only once every device has checked.
#[test]
fn one_pass_reports_scan_errors_before_replay_errors() {
    let cmd = Rec { ssn: 1, kind: RecordKind::Command, blind: false, writes: vec![] };
    let d0 = encode(&[cmd.clone(), marker(4)]).0;
    let (mut d1, offsets) = encode(&[
        value(2, false, vec![put(1, "a", "1")]),
        value(3, false, vec![put(1, "b", "2")]),
        marker(5),
    ]);
    let clean = |d1: Vec<u8>| vec![device(0, d0.clone(), 0), device(1, d1, 0)];
    match crate::stage(clean(d1.clone()), ScanOptions::default(), 2, &|_| {}) {
        Err(Error::Unsupported { device: DeviceId(0), ssn: Ssn(1), .. }) => {}
        other => panic!("{other:?}"),
    }
    d1[offsets[1] as usize + 20] ^= 0x40;
    for threads in [1, 3] {
        match crate::stage(clean(d1.clone()), ScanOptions::default(), threads, &|_| {}) {
            Err(Error::Corrupt {
                device: DeviceId(1),
                offset,
                reason: Corrupt::Checksum { .. },
                ..
            }) => {
                assert_eq!(offset, offsets[1]);
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The single pass over devices of which one holds no record at all: RSNe is the cut, so only
/// blind records above it are replayed, however far the other devices go.
#[test]
fn one_pass_with_an_empty_device_replays_only_blind_records() {
    let d0 = vec![
        value(1, false, vec![put(1, "a", "a1")]),
        value(2, true, vec![put(1, "b", "b2")]),
        value(3, false, vec![put(1, "a", "a3")]),
        value(5, true, vec![del(1, "a")]),
    ];
    for (cut, want) in [(0, rows(&[(1, "b", "b2")])), (1, rows(&[(1, "b", "b2")])), (2, rows(&[]))]
    {
        for held_cap in [usize::MAX, 1] {
            let devices = vec![device(0, encode(&d0).0, 8), device(1, vec![], 8)];
            let options = ScanOptions::default().with_checkpoint(Ssn(cut));
            let tuning = Tuning { held_cap, publish_every: 1 };
            let (plan, staged) =
                crate::replay::value::stage_with(devices, options, 2, tuning, &|_| {}).unwrap();
            assert_eq!(plan.rsne(), Ssn(cut));
            let target = MapTarget::new();
            staged.install(&target).unwrap();
            assert_eq!(target.rows(), want, "cut {cut}, held cap {held_cap}");
        }
    }
}

/// A bulk load on device 0 (SSNs 1..=300) before both devices take turns: device 1's first
/// records are far ahead of device 0's reader, so with a small cap its reader waits until
/// device 0's has caught up.
#[test]
fn one_pass_with_a_bulk_load_on_one_device() {
    let mut d0: Vec<Rec> = (1..=300)
        .map(|ssn| value(ssn, false, vec![put(1, &format!("k{}", ssn % 97), &format!("v{ssn}"))]))
        .collect();
    let mut d1 = Vec::new();
    for ssn in 301..=700 {
        let key = format!("k{}", ssn % 89);
        let rec = if ssn % 7 == 0 {
            value(ssn, false, vec![del(1, &key)])
        } else {
            value(ssn, ssn % 11 == 0, vec![put(1, &key, &format!("v{ssn}"))])
        };
        if ssn % 2 == 0 { &mut d0 } else { &mut d1 }.push(rec);
    }
    // Device 1 ends before device 0: device 0's last records are above RSNe.
    d0.push(value(701, false, vec![put(1, "k1", "beyond RSNe")]));
    let plan = scan(vec![device(0, encode(&d0).0, 0), device(1, encode(&d1).0, 0)]).unwrap();
    assert_eq!(plan.rsne(), Ssn(699));
    // (held cap, publish every, threads)
    let cases = [(usize::MAX, 32, 2), (1, 1, 2), (64, 1, 1), (500, 2, 3), (2000, 5, 2)];
    let serial = MapTarget::new();
    SerialReplayer::new(&plan).replay(Ssn(0), &serial).unwrap();
    for (held_cap, publish_every, threads) in cases {
        for _ in 0..5 {
            let (_, versions) =
                stage_one_pass(&plan, 0, threads, Tuning { held_cap, publish_every });
            assert_eq!(versions, serial.versions(), "cap {held_cap}, every {publish_every}");
        }
    }
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

/// Randomized: transactions of inserts, updates and deletes over 3 tables, spread over 3
/// devices (each in 1-3 segments), with markers, aborts, blind writes, a torn tail on one device
/// and a checkpoint cut. Parallel (4 threads) == serial == a model that applies the selection
/// rule in SSN order to a plain map.
#[test]
fn parallel_replay_equals_serial_and_the_model() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut per_device: Vec<Vec<Rec>> = vec![vec![]; 3];
        let mut ssn = 0;
        for _ in 0..300 + rng.below(300) {
            ssn += 1 + rng.below(2);
            let d = rng.below(3) as usize;
            let rec = match rng.below(20) {
                0 => marker(ssn),
                1 => Rec { ssn, kind: RecordKind::Abort, blind: false, writes: vec![] },
                _ => {
                    // A transaction's write set holds each key once.
                    let mut writes: Vec<Write> = Vec::new();
                    for _ in 0..1 + rng.below(4) {
                        let table = rng.below(3) as u32;
                        let key = format!("k{}", rng.below(60)).into_bytes();
                        let row = (rng.below(4) != 0)
                            .then(|| format!("v{ssn}-{}", rng.below(1000)).into_bytes());
                        if !writes.iter().any(|(t, k, _)| (*t, k) == (table, &key)) {
                            writes.push((table, key, row));
                        }
                    }
                    value(ssn, rng.below(5) == 0, writes)
                }
            };
            per_device[d].push(rec);
        }
        // Tear one device's tail somewhere inside its last few records.
        let torn = rng.below(3) as usize;
        let mut last_ssn = Vec::new();
        let mut devices = Vec::new();
        let mut kept_per_device = Vec::new();
        for (d, recs) in per_device.iter().enumerate() {
            let (bytes, offsets) = encode(recs);
            let (bytes, kept) = if d == torn && recs.len() > 3 {
                let k = recs.len() - 1 - rng.below(3) as usize; // first record lost
                let cut = offsets[k] as usize + 1 + rng.below(16) as usize;
                (bytes[..cut].to_vec(), k)
            } else {
                (bytes, recs.len())
            };
            last_ssn.push(recs[..kept].last().map_or(0, |r| r.ssn));
            // Split at record boundaries into up to 3 segments (closed ones end in zeros).
            let mut segments = Vec::new();
            let mut from = 0usize;
            for _ in 0..rng.below(3) {
                let Some(&at) = offsets.get(rng.below(offsets.len() as u64 + 1) as usize) else {
                    continue;
                };
                let at = at as usize;
                if at > from && at < bytes.len() {
                    segments.push(bytes[from..at].to_vec());
                    from = at;
                }
            }
            segments.push(bytes[from..].to_vec());
            devices.push(devices_segments(d as u16, segments, rng.below(40) as usize));
            kept_per_device.push(kept);
        }
        for (recs, kept) in per_device.iter_mut().zip(kept_per_device) {
            recs.truncate(kept);
        }
        let rsne = *last_ssn.iter().min().unwrap();
        let cut = if rng.below(2) == 0 { 0 } else { rng.below(ssn / 2) };
        let plan = scan(devices).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(plan.rsne(), Ssn(rsne), "seed {seed}");

        let mut all: Vec<&Rec> = per_device.iter().flatten().collect();
        all.sort_by_key(|r| r.ssn);
        let mut model = BTreeMap::new();
        for r in all {
            let selected = r.kind == RecordKind::Value && r.ssn > cut && (r.ssn <= rsne || r.blind);
            if selected {
                for (t, k, row) in &r.writes {
                    match row {
                        Some(row) => model.insert((*t, k.clone()), row.clone()),
                        None => model.remove(&(*t, k.clone())),
                    };
                }
            }
        }
        assert!(!model.is_empty(), "seed {seed}: the workload replays something");
        assert_eq!(replay_both(&plan, cut, 4), model, "seed {seed} (cut {cut}, RSNe {rsne})");

        // The same log into engines, on top of a checkpoint at `cut` (the state of the value
        // records `<= cut`, each row with its last writer's SSN): serial per-entry installs
        // (`replay_install`) against the bulk path (`install_staged` for the load, then the
        // staged parallel replay), both compared with the model over everything.
        let mut checkpoint: BTreeMap<(u32, Vec<u8>), (u64, Vec<u8>)> = BTreeMap::new();
        let mut all: Vec<&Rec> = per_device.iter().flatten().collect();
        all.sort_by_key(|r| r.ssn);
        for r in all.iter().filter(|r| r.kind == RecordKind::Value && r.ssn <= cut) {
            for (t, k, row) in &r.writes {
                match row {
                    Some(row) => checkpoint.insert((*t, k.clone()), (r.ssn, row.clone())),
                    None => checkpoint.remove(&(*t, k.clone())),
                };
            }
        }
        let mut full: BTreeMap<(u32, Vec<u8>), Vec<u8>> =
            checkpoint.iter().map(|(k, (_, row))| (k.clone(), row.clone())).collect();
        for r in &all {
            if r.kind == RecordKind::Value && r.ssn > cut && (r.ssn <= rsne || r.blind) {
                for (t, k, row) in &r.writes {
                    match row {
                        Some(row) => full.insert((*t, k.clone()), row.clone()),
                        None => full.remove(&(*t, k.clone())),
                    };
                }
            }
        }
        let serial = fresh_engine();
        let target = crate::EngineTarget::new(&serial);
        for ((t, k), (ssn, row)) in &checkpoint {
            crate::Target::install(&target, *t, k, Some(row), Ssn(*ssn)).unwrap();
        }
        SerialReplayer::new(&plan).replay(Ssn(cut), &target).expect("serial replay");
        serial.finish_replay(plan.max_ssn()).expect("finish");
        assert_eq!(engine_rows(&serial), full, "seed {seed}: serial into an engine");

        let bulk = fresh_engine();
        let target = crate::EngineTarget::new(&bulk);
        // Two "files" of checkpoint rows, loaded concurrently (no key in both).
        let (a, b): (Vec<_>, Vec<_>) = checkpoint
            .iter()
            .map(|((t, k), (ssn, row))| crate::Staged::new(*t, k, Some(row), Ssn(*ssn)))
            .partition(|w| w.key().len() % 2 == 0);
        std::thread::scope(|s| {
            s.spawn(|| crate::Target::install_staged(&target, a.into()).unwrap());
            s.spawn(|| crate::Target::install_staged(&target, b.into()).unwrap());
        });
        crate::Target::finish_staged(&target).unwrap();
        let threads = 1 + rng.below(4) as usize;
        replay(&plan, Ssn(cut), &target, threads, &|_| {}).expect("bulk replay");
        bulk.finish_replay(plan.max_ssn()).expect("finish");
        assert_eq!(
            engine_rows(&bulk),
            full,
            "seed {seed}: bulk into an engine ({threads} threads)"
        );
        // The single pass into an engine on top of the same checkpoint rows.
        let once = fresh_engine();
        let target = crate::EngineTarget::new(&once);
        let load: Vec<_> = checkpoint
            .iter()
            .map(|((t, k), (ssn, row))| crate::Staged::new(*t, k, Some(row), Ssn(*ssn)))
            .collect();
        crate::Target::install_staged(&target, load.into()).unwrap();
        crate::Target::finish_staged(&target).unwrap();
        let tuning = Tuning {
            held_cap: if seed % 2 == 0 { usize::MAX } else { 1 + rng.below(200) as usize },
            publish_every: 1 + rng.below(32),
        };
        let options = ScanOptions::default().with_checkpoint(Ssn(cut));
        let (once_plan, staged) = crate::replay::value::stage_with(
            plan.devices.clone(),
            options,
            threads,
            tuning,
            &|_| {},
        )
        .expect("single pass");
        staged.install(&target).expect("install");
        once.finish_replay(once_plan.max_ssn()).expect("finish");
        assert_eq!(engine_rows(&once), full, "seed {seed}: single pass into an engine");
        // Replaying the same log again on top changes nothing (every write is as old as what
        // the keys hold, or older); rows that were deleted stay deleted.
        let target = crate::EngineTarget::new(&bulk);
        replay(&plan, Ssn(cut), &target, threads, &|_| {}).expect("second replay");
        bulk.finish_replay(plan.max_ssn()).expect("finish");
        assert_eq!(engine_rows(&bulk), full, "seed {seed}: replayed twice");
    }
}

/// An engine over an in-memory log with the tables of the random workloads (0, 1, 2).
fn fresh_engine() -> txn::Engine {
    let engine = txn::Engine::new(Arc::new(wal::Log::new(2)));
    for t in 0..3 {
        engine.create_table(txn::TableId(t), vec![]);
    }
    engine
}

/// The visible rows of tables 0, 1, 2, read through a transaction.
fn engine_rows(engine: &txn::Engine) -> BTreeMap<(u32, Vec<u8>), Vec<u8>> {
    use std::ops::Bound;
    let mut out = BTreeMap::new();
    let mut t = engine.begin(0);
    for table in 0..3 {
        t.scan(
            txn::TableId(table),
            None,
            Bound::Unbounded,
            Bound::Unbounded,
            false,
            &mut |k, r| {
                out.insert((table, k.to_vec()), r.to_vec());
                true
            },
        )
        .expect("scan");
        let mut ks: Vec<_> = out.keys().filter(|(t, _)| *t == table).cloned().collect();
        ks.truncate(5);
        for (_, k) in ks {
            assert!(t.get(txn::TableId(table), &k).expect("get").is_some(), "hash agrees");
        }
    }
    out
}

/// Two device directories under `root` and log options with 4 KiB segments (rotation) and a
/// 64 KiB ring.
fn two_small_devices(root: &std::path::Path) -> (Vec<std::path::PathBuf>, wal::LogOptions) {
    let dirs = (0..2).map(|d| root.join(format!("wal/{d}"))).collect();
    let options = wal::LogOptions {
        ring_bytes: 1 << 16,
        device: wal::DeviceOptions { segment_size: 4096, ..Default::default() },
        ..Default::default()
    };
    (dirs, options)
}

/// The real layout: `wal::Log::open` over two directories with small segments (rotation),
/// crash-free shutdown, then `DeviceLog::from_dir` → scan → replay.
#[test]
fn reads_what_wal_log_open_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let (dirs, options) = two_small_devices(dir.path());
    let mut model = BTreeMap::new();
    {
        let log = wal::Log::open(&dirs, &options).unwrap();
        let mut base = Ssn::ZERO;
        for i in 0..400u32 {
            let key = format!("key{}", i % 50).into_bytes();
            let row = format!("row{i}").into_bytes();
            let delete = i % 7 == 3;
            let entry = ValueEntry { table: 1, key: &key, row: (!delete).then_some(&row[..]) };
            let mut payload = Vec::new();
            encode_values(&[entry], &mut payload);
            let r = log.reserve((i % 2) as usize, base, Record::encoded_len_for(payload.len()));
            base = r.ssn; // a chain of read-modify-writes: SSNs increase across devices
            let ticket = r.ticket(false);
            r.fill_record(RecordKind::Value, false, &payload);
            log.wait_durable(ticket).unwrap();
            if delete {
                model.remove(&(1, key));
            } else {
                model.insert((1, key), row);
            }
        }
    }
    let devices = dirs
        .iter()
        .enumerate()
        .map(|(d, path)| DeviceLog::from_dir(DeviceId(d as u16), path).unwrap())
        .collect::<Vec<_>>();
    assert!(devices.iter().all(|d| d.segments.len() > 1), "segments rotated");
    let plan = RecoveryPlan::scan(devices, ScanOptions::for_log(&options)).unwrap();
    assert!(plan.records() >= 400);
    assert_eq!(replay_both(&plan, 0, 2), model);
}

/// After a recovery, records that were never acknowledged (non-blind, above RSNe) must not be
/// replayed by a *later* recovery once new records push RSNe past them: `seal` turns them into
/// aborts (keeping blind ones), and zero-fills a torn tail.
#[test]
fn seal_keeps_unacknowledged_records_from_coming_back() {
    // Device 0 reaches SSN 9; device 1 only 4 (then a torn tail): RSNe = 4.
    let d0 = vec![
        value(1, false, vec![put(1, "a", "a1")]),
        value(5, false, vec![put(1, "b", "b5")]),
        value(7, true, vec![put(1, "c", "c7")]),
        value(9, false, vec![put(1, "a", "a9")]),
    ];
    let d1 =
        vec![value(2, false, vec![put(1, "d", "d2")]), value(4, false, vec![put(1, "e", "e4")])];
    let (b0, _) = encode(&d0);
    let (mut b1, _) = encode(&d1);
    let clean_len = b1.len();
    b1.extend_from_slice(&[0xAB; 10]); // torn tail
    let devices = vec![device(0, b0, 256), device(1, b1, 256)];
    let plan = scan(devices.clone()).unwrap();
    assert_eq!(plan.rsne(), Ssn(4));
    let first = replay_both(&plan, 0, 2);
    assert_eq!(first, rows(&[(1, "a", "a1"), (1, "c", "c7"), (1, "d", "d2"), (1, "e", "e4")]));
    let sealed = plan.seal().unwrap();
    assert_eq!(sealed, crate::Sealed { aborted: 2, zeroed_bytes: 10 });

    // The log moves on: new records on both devices raise RSNe above 9.
    let mut more1 = Vec::new();
    Record { ssn: Ssn(12), kind: RecordKind::Marker, blind: false, payload: &[] }
        .encode_into(&mut more1);
    devices[1].segments[0].1.write_at(clean_len as u64, &more1).unwrap();
    let plan = scan(devices.clone()).unwrap();
    assert_eq!(plan.rsne(), Ssn(9), "device 0 still ends at its (now aborted) record 9");
    // Without the seal, b5 and a9 would be replayed now.
    let second = replay_both(&plan, 0, 2);
    assert_eq!(second, first, "sealed records must stay dead");
    // Sealing again changes nothing.
    assert_eq!(plan.seal().unwrap(), crate::Sealed { aborted: 0, zeroed_bytes: 0 });
}

/// With a checkpoint at `S`, a device's last durable SSN is `max(last record, S)`: a device
/// whose segments below `S` were all deleted counts as durable up to `S`, and replay starts
/// above `S`.
#[test]
fn checkpoint_cut_raises_every_device_to_s() {
    let d0 = vec![
        value(11, false, vec![put(1, "a", "a11")]),
        value(14, false, vec![put(1, "b", "b14")]),
    ];
    let d2 =
        vec![value(12, false, vec![put(1, "c", "c12")]), value(20, false, vec![put(1, "d", "x")])];
    let make = |d1: &[Rec]| {
        vec![
            device(0, encode(&d0).0, 64),
            device(1, encode(d1).0, 64),
            device(2, encode(&d2).0, 64),
        ]
    };
    // Device 1's records <= S were deleted; it has one record above S.
    let d1 = vec![marker(15)];
    let options = ScanOptions::default().with_checkpoint(Ssn(10));
    let plan = RecoveryPlan::scan(make(&d1), options).unwrap();
    assert_eq!(plan.checkpoint_ssn(), Ssn(10));
    assert_eq!(plan.rsne(), Ssn(14), "min(max(14, 10), max(15, 10), max(20, 10))");
    assert_eq!(plan.max_ssn(), Ssn(20));
    let got = replay_both(&plan, 10, 2);
    assert_eq!(got, rows(&[(1, "a", "a11"), (1, "b", "b14"), (1, "c", "c12")]));

    // Device 1 has nothing left at all. Without the cut it would hold RSNe at 0; with it, at
    // S: nothing non-blind above S was acknowledged (CSN never passed device 1's DSN <= S).
    assert_eq!(scan(make(&[])).unwrap().rsne(), Ssn::ZERO);
    let plan = RecoveryPlan::scan(make(&[]), options).unwrap();
    assert_eq!(plan.rsne(), Ssn(10));
    assert!(replay_both(&plan, 10, 2).is_empty());
    // A cut above every record: every device counts as S.
    let plan = RecoveryPlan::scan(make(&d1), ScanOptions::default().with_checkpoint(Ssn(30)));
    let plan = plan.unwrap();
    assert_eq!((plan.rsne(), plan.max_ssn()), (Ssn(30), Ssn(30)));
    assert!(replay_both(&plan, 30, 1).is_empty());
}

/// The scan reports each segment's last SSN (what `wal::LogOptions::existing_segments` wants).
#[test]
fn scan_reports_each_segments_last_ssn() {
    let seg = |recs: &[Rec]| encode(recs).0;
    let d0 = devices_segments(
        0,
        vec![
            seg(&[
                value(1, false, vec![put(1, "a", "1")]),
                value(3, false, vec![put(1, "a", "3")]),
            ]),
            seg(&[]),
            seg(&[marker(5)]),
        ],
        32,
    );
    let d1 = devices_segments(1, vec![seg(&[value(2, false, vec![put(1, "b", "2")])])], 32);
    let plan = scan(vec![d1, d0]).unwrap();
    assert_eq!(
        plan.existing_segments(),
        vec![
            vec![(SegmentNo(0), Some(Ssn(3))), (SegmentNo(1), None), (SegmentNo(2), Some(Ssn(5)))],
            vec![(SegmentNo(0), Some(Ssn(2)))],
        ]
    );
}

/// Large transactions spill (`wal::Log::spill` + a `Spilled` record, as `txn` commits them):
/// both replayers install a spilled record's entries like a value record's; the scan lists the
/// spill files records refer to and deletes the ones none does; a missing or altered spill
/// file is corruption, never skipped.
#[test]
fn spilled_records_replay_like_value_records() {
    let dir = tempfile::tempdir().unwrap();
    let (dirs, options) = two_small_devices(dir.path());
    let mut model = BTreeMap::new();
    let mut spilled = Vec::new();
    {
        let log = wal::Log::open(&dirs, &options).unwrap();
        assert_eq!(log.spill_threshold(), 1024, "a quarter of the 4 KiB segment");
        let mut base = Ssn::ZERO;
        for i in 0..40u32 {
            // Every fourth transaction writes 20 rows of 100 B: about 2.3 KB, spilled.
            let n = if i % 4 == 0 { 20 } else { 1 };
            let keys: Vec<Vec<u8>> =
                (0..n).map(|j| format!("k{}", (i + j) % 30).into_bytes()).collect();
            let row = vec![b'a' + (i % 26) as u8; 100];
            let entries: Vec<ValueEntry<'_>> =
                keys.iter().map(|k| ValueEntry { table: 1, key: k, row: Some(&row) }).collect();
            let mut payload = Vec::new();
            encode_values(&entries, &mut payload);
            let buffer = (i % 2) as usize;
            let (kind, body) = if payload.len() > log.spill_threshold() {
                let spill = log.spill(buffer, &payload).unwrap();
                spilled.push((buffer, spill.id));
                (RecordKind::Spilled, spill.encode().to_vec())
            } else {
                (RecordKind::Value, payload)
            };
            let r = log.reserve(buffer, base, Record::encoded_len_for(body.len()));
            base = r.ssn;
            let ticket = r.ticket(false);
            r.fill_record(kind, false, &body);
            log.wait_durable(ticket).unwrap();
            for k in keys {
                model.insert((1, k), row.clone());
            }
        }
        assert_eq!(log.spills(DeviceId(0)).len(), 10, "fills registered the spill files");
    }
    assert_eq!(spilled.len(), 10);
    let open = |dirs: &[std::path::PathBuf]| -> Vec<DeviceLog> {
        dirs.iter()
            .enumerate()
            .map(|(d, path)| DeviceLog::from_dir(DeviceId(d as u16), path).unwrap())
            .collect()
    };
    // An orphan: a spill file no record refers to.
    std::fs::write(dirs[1].join(wal::store::spill_file_name(777)), b"orphan").unwrap();
    let plan = RecoveryPlan::scan(open(&dirs), ScanOptions::for_log(&options)).unwrap();
    // One, two and three workers.
    for threads in 1..=3 {
        assert_eq!(replay_both(&plan, 0, threads), model, "{threads} threads");
    }
    // The summary counts the spill files' bytes besides the log's (`replay_both` checks that
    // every replayer counts the same).
    let spill_files: u64 = spilled
        .iter()
        .map(|&(buffer, id)| {
            std::fs::metadata(dirs[buffer].join(wal::store::spill_file_name(id))).unwrap().len()
        })
        .sum();
    let summary = replay(&plan, Ssn::ZERO, &MapTarget::new(), 2, &|_| {}).unwrap();
    assert_eq!(summary.spill_bytes, spill_files);
    assert!(summary.to_string().contains(&format!("and {spill_files} bytes of spill files")));
    let listed: usize = plan.existing_spills().iter().map(Vec::len).sum();
    assert_eq!(listed, 10);
    assert_eq!(plan.delete_orphan_spills().unwrap(), 1);
    assert!(!dirs[1].join(wal::store::spill_file_name(777)).exists());
    assert_eq!(plan.delete_orphan_spills().unwrap(), 0, "idempotent");

    // An altered spill file, an empty one, then a missing one: corruption in both replayers.
    let (buffer, id) = spilled[3];
    let path = dirs[buffer].join(wal::store::spill_file_name(id));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    for damage in ["altered", "empty", "gone"] {
        match damage {
            "empty" => std::fs::write(&path, b"").unwrap(),
            "gone" => std::fs::remove_file(&path).unwrap(),
            _ => {}
        }
        let plan = RecoveryPlan::scan(open(&dirs), ScanOptions::for_log(&options)).unwrap();
        let err = replay(&plan, Ssn::ZERO, &MapTarget::new(), 2, &|_| {}).unwrap_err();
        assert!(matches!(err, Error::Corrupt { reason: Corrupt::Payload { .. }, .. }), "{err}");
        let err = SerialReplayer::new(&plan).replay(Ssn::ZERO, &MapTarget::new()).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
        // A checkpoint covering the record: its spill file is not needed, nothing fails.
        let cut = Ssn(u64::MAX / 2);
        let options = ScanOptions::for_log(&options).with_checkpoint(cut);
        let plan = RecoveryPlan::scan(open(&dirs), options).unwrap();
        assert!(plan.existing_spills().iter().all(Vec::is_empty));
        replay(&plan, cut, &MapTarget::new(), 2, &|_| {}).unwrap();
    }
}

/// A spill file that matches its record but whose payload does not parse: corruption naming
/// the record's device, from every replayer and every number of workers.
#[test]
fn a_spilled_payload_that_does_not_parse_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (dirs, options) = two_small_devices(dir.path());
    let at;
    {
        let log = wal::Log::open(&dirs, &options).unwrap();
        // Claims 3 entries, holds one and a half.
        let entries = [ValueEntry { table: 1, key: b"k", row: Some(&[7; 40]) }];
        let mut payload = Vec::new();
        encode_values(&entries, &mut payload);
        payload[..4].copy_from_slice(&3u32.to_le_bytes());
        payload.extend_from_slice(&[1, 0, 0, 0, 9, 0]);
        payload.resize(payload.len() + 2000, 0);
        let spill = log.spill(0, &payload).unwrap();
        let body = spill.encode().to_vec();
        let r = log.reserve(0, Ssn::ZERO, Record::encoded_len_for(body.len()));
        at = r.ssn;
        let ticket = r.ticket(false);
        r.fill_record(RecordKind::Spilled, false, &body);
        log.wait_durable(ticket).unwrap();
    }
    let open = || -> Vec<DeviceLog> {
        dirs.iter()
            .enumerate()
            .map(|(d, path)| DeviceLog::from_dir(DeviceId(d as u16), path).unwrap())
            .collect()
    };
    let options = ScanOptions::for_log(&options);
    let plan = RecoveryPlan::scan(open(), options).unwrap();
    assert!(plan.rsne() >= at, "the record is replayed");
    for threads in 1..=3 {
        let err = replay(&plan, Ssn::ZERO, &MapTarget::new(), threads, &|_| {}).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Corrupt { device: DeviceId(0), reason: Corrupt::Payload { .. }, .. }
            ),
            "{threads} threads: {err}"
        );
        let err = crate::stage(open(), options, threads, &|_| {}).unwrap_err();
        assert!(matches!(err, Error::Corrupt { reason: Corrupt::Payload { .. }, .. }), "{err}");
    }
    let err = SerialReplayer::new(&plan).replay(Ssn::ZERO, &MapTarget::new()).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
}

/// A spilled record whose payload is not a spill reference (its CRC checks) is corruption at
/// the scan, not skipped.
#[test]
fn malformed_spill_reference_is_corrupt() {
    let mut bytes = Vec::new();
    Record { ssn: Ssn(1), kind: RecordKind::Spilled, blind: false, payload: &[1, 2, 3] }
        .encode_into(&mut bytes);
    let err = scan(vec![device(0, bytes, 64)]).unwrap_err();
    assert!(matches!(err, Error::Corrupt { reason: Corrupt::Payload { .. }, .. }), "{err}");
}
