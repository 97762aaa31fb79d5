//! Tests of the logger over in-memory devices: the acknowledge rule, CSN over devices, idle
//! markers, faults, abort records, rotation and back-pressure. No assertion depends on timing:
//! each checks what is durable at the moment a wait returns, or what recovery reads back.

use std::sync::{Arc, Condvar as StdCondvar, Mutex as StdMutex};
use std::time::Duration;

use crate::testing::{FaultyDevice, MemDevice, MemStore, ThrottledDevice};
use crate::{
    DeviceId, Error, Log, LogDevice, LogOptions, ReadOptions, RecordKind, SegmentReader,
    SegmentStore, Ssn, Ticket,
};

/// A record as recovery sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rec {
    ssn: Ssn,
    kind: RecordKind,
    blind: bool,
    payload: Vec<u8>,
}

/// Reads device `d` of `store` as recovery would after a crash now (only synced bytes).
fn durable_records(store: &MemStore, d: u16) -> Vec<Rec> {
    let images: Vec<_> = store
        .segments()
        .into_iter()
        .map(|(no, dev)| (no, MemDevice::with_bytes(dev.durable_bytes())))
        .collect();
    let segments = images.iter().map(|(no, dev)| (*no, dev as &dyn LogDevice)).collect();
    let mut reader = SegmentReader::new(DeviceId(d), segments, ReadOptions::default());
    let mut out = Vec::new();
    while let Some(r) = reader.next_record().expect("a durable log reads back cleanly") {
        out.push(Rec {
            ssn: r.record.ssn,
            kind: r.record.kind,
            blind: r.record.blind,
            payload: r.record.payload.to_vec(),
        });
    }
    out
}

fn last_durable_ssn(store: &MemStore, d: u16) -> Ssn {
    durable_records(store, d).last().map_or(Ssn::ZERO, |r| r.ssn)
}

/// Waits (polling every millisecond) until `done()` holds; fails with `what` after 30 s. The
/// bound is generous, not a timing assertion.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn stores(n: usize, segment_size: u64) -> (Vec<Arc<MemStore>>, Vec<Box<dyn SegmentStore>>) {
    let stores: Vec<_> = (0..n).map(|_| MemStore::new(segment_size)).collect();
    let boxed = stores.iter().map(|s| Box::new(s.clone()) as Box<dyn SegmentStore>).collect();
    (stores, boxed)
}

/// Reserves and fills a value record with `payload` on `buffer`; returns its ticket.
fn commit(log: &Log, buffer: usize, base: Ssn, payload: &[u8], blind: bool) -> Ticket {
    fill_value(
        log.reserve(buffer, base, crate::Record::encoded_len_for(payload.len())),
        payload,
        blind,
    )
}

/// Fills `r` with a value record of `payload`; returns its ticket.
fn fill_value(r: crate::Reservation<'_>, payload: &[u8], blind: bool) -> Ticket {
    let ticket = r.ticket(blind);
    r.fill_record(RecordKind::Value, blind, payload);
    ticket
}

#[test]
fn lone_commit_is_durable_when_acknowledged() {
    let (stores, boxed) = stores(1, 1 << 20);
    let log = Log::with_stores(boxed, &LogOptions::default()).unwrap();
    for i in 0..20u64 {
        let payload = i.to_le_bytes();
        let ticket = commit(&log, 0, Ssn::ZERO, &payload, false);
        log.wait_durable(ticket).unwrap();
        // At wake-up, a crash keeps the record.
        let recs = durable_records(&stores[0], 0);
        let found = recs.iter().find(|r| r.ssn == ticket.ssn).expect("acknowledged => durable");
        assert_eq!(found.payload, payload);
        assert_eq!(found.kind, RecordKind::Value);
        assert!(log.dsn(DeviceId(0)) >= ticket.ssn);
        assert!(log.csn() >= ticket.ssn);
    }
}

/// Many threads on 2–4 devices: when a non-blind wait returns, every device's durable log
/// reaches the SSN (RSNe ≥ ssn, so recovery replays it), and the record itself is durable.
#[test]
fn acknowledged_commits_survive_on_every_device_count() {
    for n in 2..=4 {
        let (stores, boxed) = stores(n, 1 << 20);
        let options = LogOptions { ring_bytes: 4096, ..LogOptions::default() };
        let log = Arc::new(Log::with_stores(boxed, &options).unwrap());
        let threads: Vec<_> = (0..2 * n)
            .map(|t| {
                let (log, stores) = (log.clone(), stores.clone());
                std::thread::spawn(move || {
                    let buffer = t % n;
                    let mut base = Ssn::ZERO;
                    for i in 0..40u64 {
                        let payload = (t as u64 * 1000 + i).to_le_bytes();
                        let blind = i % 5 == 0;
                        let ticket = commit(&log, buffer, base, &payload, blind);
                        log.wait_durable(ticket).unwrap();
                        let own = durable_records(&stores[buffer], buffer as u16);
                        assert!(
                            own.iter().any(|r| r.ssn == ticket.ssn && r.payload == payload),
                            "record {} not durable at acknowledgement",
                            ticket.ssn
                        );
                        if !blind {
                            for (d, store) in stores.iter().enumerate() {
                                let last = last_durable_ssn(store, d as u16);
                                assert!(
                                    last >= ticket.ssn,
                                    "device {d} durable to {last} < {}",
                                    ticket.ssn
                                );
                            }
                        }
                        // The next transaction read this one's writes (RAW): I1.
                        base = ticket.ssn;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(log.failure().is_none());
    }
}

/// A device whose syncs block while its gate is closed.
#[derive(Debug)]
struct GatedDevice {
    inner: Arc<MemDevice>,
    gate: Arc<(StdMutex<bool>, StdCondvar)>,
}

impl LogDevice for GatedDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_at(offset, bytes)
    }
    fn sync(&self) -> std::io::Result<()> {
        let (lock, cv) = &*self.gate;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        drop(open);
        self.inner.sync()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read_at(offset, buf)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
    fn allocate(&self, len: u64) -> std::io::Result<()> {
        self.inner.allocate(len)
    }
}

/// A log on two devices whose device 0 (`slow`) syncs only once `open` is called, and its
/// stores (slow, fast).
fn gated_log() -> (Log, Arc<MemStore>, Arc<MemStore>, impl Fn()) {
    let gate = Arc::new((StdMutex::new(false), StdCondvar::new()));
    let g = gate.clone();
    let slow = MemStore::with_wrapper(1 << 20, move |_, inner| {
        Box::new(GatedDevice { inner, gate: g.clone() })
    });
    let fast = MemStore::new(1 << 20);
    let log = Log::with_stores(
        vec![Box::new(slow.clone()), Box::new(fast.clone())],
        &LogOptions::default(),
    )
    .unwrap();
    let open = move || {
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
    };
    (log, slow, fast, open)
}

/// A blind write waits only for its own device; a non-blind one for CSN, which a stalled
/// device holds back until it syncs; then the idle device's marker lets the waiter finish,
/// and recovery reads the marker.
#[test]
fn blind_waits_for_own_dsn_and_idle_marker_advances_csn() {
    let (log, slow, fast, open_gate) = gated_log();
    let stalled = commit(&log, 0, Ssn::ZERO, b"slow", false);
    assert_eq!(stalled.ssn, Ssn(1));
    let blind = commit(&log, 1, Ssn(10), b"blind", true);
    assert_eq!(blind.ssn, Ssn(11));
    log.wait_durable(blind).unwrap();
    assert!(last_durable_ssn(&fast, 1) >= Ssn(11));
    // The same SSN as a non-blind ticket is not durable: device 0 cannot sync.
    let nonblind = Ticket { blind: false, ..blind };
    assert!(!log.is_durable(nonblind));
    assert_eq!(log.dsn(DeviceId(0)), Ssn::ZERO);
    assert_eq!(log.csn(), Ssn::ZERO, "CSN = min DSN");
    assert!(durable_records(&slow, 0).is_empty(), "nothing synced on the stalled device");
    // Open the gate: device 0 syncs its record, then (idle) a marker at >= 11.
    open_gate();
    log.wait_durable(nonblind).unwrap();
    let recs = durable_records(&slow, 0);
    assert_eq!(recs[0].ssn, Ssn(1));
    let marker = recs.iter().find(|r| r.kind == RecordKind::Marker).expect("a durable marker");
    assert!(marker.ssn >= Ssn(11), "marker {} below the target", marker.ssn);
    assert!(log.dsn(DeviceId(0)) >= Ssn(11));
    // The marker raised L.ssn first: later SSNs on device 0 are above it (I2).
    let next = commit(&log, 0, Ssn::ZERO, b"next", false);
    assert!(next.ssn > marker.ssn);
    log.wait_csn(next.ssn).unwrap();
}

/// `when_durable` runs its callback once, when the last ticket becomes durable (on the logger
/// thread, after the gate opens), at once when the tickets already are, and with the error when
/// the log fails first.
#[test]
fn when_durable_calls_back_once_the_tickets_are_durable_or_the_log_failed() {
    let (log, _, _, open_gate) = gated_log();
    let (tx, rx) = std::sync::mpsc::channel();
    let on_slow = commit(&log, 0, Ssn::ZERO, b"slow", false);
    let blind = commit(&log, 1, Ssn::ZERO, b"blind", true);
    let t = tx.clone();
    log.when_durable(vec![on_slow, blind], Box::new(move |outcome| t.send(outcome).unwrap()));
    // The blind ticket alone becomes durable; the callback still waits for device 0.
    log.wait_durable(blind).unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "called before device 0 synced");
    open_gate();
    rx.recv_timeout(Duration::from_secs(30)).expect("called back").unwrap();
    assert!(log.is_durable(on_slow));
    let t = tx.clone();
    log.when_durable(vec![on_slow], Box::new(move |outcome| t.send(outcome).unwrap()));
    assert!(rx.try_recv().expect("durable already: called at once").is_ok());

    let store =
        MemStore::with_wrapper(1 << 20, |_, inner| Box::new(FaultyDevice::new(inner).fail_sync(1)));
    let log = Log::with_stores(vec![Box::new(store)], &LogOptions::default()).unwrap();
    let ticket = commit(&log, 0, Ssn::ZERO, b"x", false);
    log.when_durable(vec![ticket], Box::new(move |outcome| tx.send(outcome).unwrap()));
    let err = rx.recv_timeout(Duration::from_secs(30)).expect("called back").unwrap_err();
    assert!(matches!(err, Error::DeviceFailed { device: DeviceId(0), .. }), "{err:?}");
}

/// A read-only result waits for CSN; idle devices write markers so it never waits forever.
#[test]
fn wait_csn_on_idle_log_writes_markers_everywhere() {
    let (stores, boxed) = stores(3, 1 << 20);
    let log = Log::with_stores(boxed, &LogOptions::default()).unwrap();
    log.wait_csn(Ssn(42)).unwrap();
    for (d, store) in stores.iter().enumerate() {
        let recs = durable_records(store, d as u16);
        assert_eq!(recs.len(), 1, "one marker on device {d}");
        assert_eq!((recs[0].kind, recs[0].ssn), (RecordKind::Marker, Ssn(42)));
    }
    assert_eq!(log.csn(), Ssn(42));
    log.wait_csn(Ssn(42)).unwrap();
    log.wait_csn(Ssn::ZERO).unwrap();
}

/// CSN = min DSN with one throttled device: a non-blind commit on the fast device is
/// acknowledged only once the slow device's durable log reaches its SSN.
#[test]
fn throttled_device_holds_csn() {
    let slow = MemStore::with_wrapper(1 << 20, |_, inner| {
        Box::new(ThrottledDevice::new(inner, 1 << 20, Duration::from_millis(20)))
    });
    let fast = MemStore::new(1 << 20);
    let log = Log::with_stores(
        vec![Box::new(slow.clone()), Box::new(fast.clone())],
        &LogOptions::default(),
    )
    .unwrap();
    for i in 0..5u8 {
        let on_slow = commit(&log, 0, Ssn::ZERO, &[i; 3], false);
        let on_fast = commit(&log, 1, on_slow.ssn, &[i; 5], false);
        log.wait_durable(on_fast).unwrap();
        assert!(last_durable_ssn(&slow, 0) >= on_fast.ssn);
        assert!(log.csn() >= on_fast.ssn);
        assert!(log.dsn(DeviceId(0)).min(log.dsn(DeviceId(1))) >= on_fast.ssn);
    }
}

/// The device a [`store_failing_sync`] opened.
type OpenedFaulty = Arc<StdMutex<Option<Arc<FaultyDevice<Arc<MemDevice>>>>>>;

/// A store of 1 MiB segments whose device fails its `n`th sync, and where the device it opened
/// can be found.
fn store_failing_sync(n: u64) -> (Arc<MemStore>, OpenedFaulty) {
    let faulty: OpenedFaulty = Arc::default();
    let f = faulty.clone();
    let store = MemStore::with_wrapper(1 << 20, move |_, inner| {
        let device = Arc::new(FaultyDevice::new(inner).fail_sync(n));
        *f.lock().unwrap() = Some(device.clone());
        Box::new(device)
    });
    (store, faulty)
}

#[test]
fn failed_sync_fails_waiters_and_everything_after() {
    let (store, faulty) = store_failing_sync(2);
    let other = MemStore::new(1 << 20);
    let log =
        Log::with_stores(vec![Box::new(store.clone()), Box::new(other)], &LogOptions::default())
            .unwrap();
    let first = commit(&log, 0, Ssn::ZERO, b"one", true);
    log.wait_durable(first).unwrap();
    let second = commit(&log, 0, Ssn::ZERO, b"two", true);
    let err = log.wait_durable(second).unwrap_err();
    assert!(matches!(err, Error::DeviceFailed { device: DeviceId(0), .. }), "{err:?}");
    assert!(!durable_records(&store, 0).iter().any(|r| r.ssn == second.ssn));
    // A non-blind waiter on the healthy device cannot reach CSN any more.
    let on_other = commit(&log, 1, second.ssn, b"three", false);
    assert!(matches!(log.wait_durable(on_other), Err(Error::DeviceFailed { .. })));
    assert!(matches!(log.wait_csn(second.ssn), Err(Error::DeviceFailed { .. })));
    // New reservations fail, or are detached and never succeed.
    assert!(matches!(log.try_reserve(1, Ssn::ZERO, 20), Err(Error::DeviceFailed { .. })));
    let detached = log.reserve(1, Ssn::ZERO, 20);
    assert!(detached.is_detached());
    let ticket = detached.ticket(true);
    drop(detached);
    assert!(matches!(log.wait_durable(ticket), Err(Error::DeviceFailed { .. })));
    // What was acknowledged stays acknowledged; the failed device was never retried.
    log.wait_durable(first).unwrap();
    assert!(log.failure().is_some());
    let device = faulty.lock().unwrap().clone().unwrap();
    assert_eq!(device.attempts_after_failure(), 0, "no retry after a failed sync");
}

#[test]
fn no_space_is_reported_as_such() {
    let store = MemStore::with_wrapper(1 << 20, |_, inner| {
        Box::new(FaultyDevice::new(inner).no_space_on_write(1))
    });
    let log = Log::with_stores(vec![Box::new(store)], &LogOptions::default()).unwrap();
    let t = commit(&log, 0, Ssn::ZERO, b"x", false);
    assert!(matches!(log.wait_durable(t), Err(Error::NoSpace { device: DeviceId(0) })));
}

#[test]
fn dropped_reservation_becomes_an_abort_record() {
    let (stores, boxed) = stores(1, 1 << 20);
    let log = Log::with_stores(boxed, &LogOptions::default()).unwrap();
    let a = commit(&log, 0, Ssn::ZERO, b"a", false);
    let dropped = log.reserve(0, Ssn::ZERO, 40);
    let aborted_ssn = dropped.ssn;
    // A later record is reserved before the drop: it must still be written after it.
    let r = log.reserve(0, Ssn::ZERO, crate::Record::encoded_len_for(1));
    let c_ticket = r.ticket(false);
    r.fill_record(RecordKind::Value, false, b"c");
    drop(dropped);
    log.wait_durable(c_ticket).unwrap();
    let recs = durable_records(&stores[0], 0);
    let kinds: Vec<_> = recs.iter().map(|r| (r.ssn, r.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            (a.ssn, RecordKind::Value),
            (aborted_ssn, RecordKind::Abort),
            (c_ticket.ssn, RecordKind::Value)
        ]
    );
    assert_eq!(recs[1].payload.len(), 40 - crate::MIN_RESERVATION);
    assert_eq!(log.aborted_reservations(0), 1);
}

#[test]
fn bad_reservation_sizes_are_refused() {
    let (_, boxed) = stores(1, 256);
    let log =
        Log::with_stores(boxed, &LogOptions { ring_bytes: 1024, ..LogOptions::default() }).unwrap();
    assert_eq!(log.max_record_len(), 256);
    assert!(matches!(log.try_reserve(0, Ssn::ZERO, 16), Err(Error::RecordSize { len: 16, .. })));
    assert!(matches!(log.try_reserve(0, Ssn::ZERO, 257), Err(Error::RecordSize { max: 256, .. })));
    drop(log.try_reserve(0, Ssn::ZERO, 256).unwrap());
}

#[test]
fn segments_rotate_and_delete_below_an_ssn() {
    let (stores, boxed) = stores(1, 100);
    let log =
        Log::with_stores(boxed, &LogOptions { ring_bytes: 256, ..LogOptions::default() }).unwrap();
    let mut tickets = Vec::new();
    for i in 0..30u8 {
        // 17 + 13 = 30 bytes: three records per 100-byte segment.
        tickets.push(commit(&log, 0, Ssn::ZERO, &[i; 13], false));
        if i % 7 == 0 {
            log.wait_durable(*tickets.last().unwrap()).unwrap();
        }
    }
    log.wait_durable(*tickets.last().unwrap()).unwrap();
    let segments = log.segments(DeviceId(0));
    assert!(segments.len() >= 10, "{segments:?}");
    let recs = durable_records(&stores[0], 0);
    assert_eq!(recs.len(), 30);
    for (i, (r, t)) in recs.iter().zip(&tickets).enumerate() {
        assert_eq!((r.ssn, &r.payload), (t.ssn, &vec![i as u8; 13]));
    }
    for (_, dev) in stores[0].segments() {
        assert!(dev.durable_bytes().len() <= 100, "no record crosses a segment end");
    }
    // Every record of the deleted segments is below SSN 10; the rest still reads.
    let deleted = log.delete_segments_below(Ssn(10)).unwrap();
    assert_eq!(deleted.len(), 3, "{deleted:?}");
    let recs = durable_records(&stores[0], 0);
    assert_eq!(recs.first().map(|r| r.ssn), Some(Ssn(10)));
    assert_eq!(recs.len(), 21);
    assert_eq!(log.delete_segments_below(Ssn(1)).unwrap(), vec![]);
}

/// A tiny ring and many committers: back-pressure, never growth, and no deadlock; everything
/// reserved is durable at the end, intact.
#[test]
fn back_pressure_with_a_tiny_ring_does_not_deadlock() {
    let (stores, boxed) = stores(2, 1 << 16);
    let options = LogOptions { ring_bytes: 64, max_in_flight: 2, ..LogOptions::default() };
    let log = Arc::new(Log::with_stores(boxed, &options).unwrap());
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut last = None;
                for i in 0..150u64 {
                    let payload = vec![t as u8; (i % 20) as usize + 1];
                    let buffer = ((t + i) % 2) as usize;
                    let ticket = commit(&log, buffer, Ssn::ZERO, &payload, false);
                    if i % 10 == 0 {
                        log.wait_durable(ticket).unwrap();
                    }
                    last = Some(ticket);
                }
                log.wait_durable(last.unwrap()).unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Every payload came back whole, though most pairs were written straight from a ring that
    // wraps every record or two (`Logger::write_from_ring`): as a multiset, thread by length.
    let mut written = std::collections::BTreeMap::new();
    for t in 0..8u8 {
        for i in 0..150usize {
            *written.entry(vec![t; i % 20 + 1]).or_insert(0) += 1;
        }
    }
    let mut read = std::collections::BTreeMap::new();
    for (d, store) in stores.iter().enumerate() {
        for r in durable_records(store, d as u16) {
            if r.kind == RecordKind::Value {
                *read.entry(r.payload).or_insert(0) += 1;
            }
        }
    }
    assert_eq!(read, written);
}

/// Dropping the log flushes what was filled.
#[test]
fn drop_flushes_everything_reserved() {
    let (stores, boxed) = stores(2, 1 << 20);
    let log = Log::with_stores(boxed, &LogOptions::default()).unwrap();
    for i in 0..10u8 {
        let _ = commit(&log, usize::from(i % 2), Ssn::ZERO, &[i], false);
    }
    drop(log);
    let n: usize = (0..2).map(|d| durable_records(&stores[d], d as u16).len()).sum();
    assert_eq!(n, 10);
}

/// Real files: `wal/<n>/<segment>.log`, read back with the reader; reopening starts a new
/// segment after the old ones.
#[test]
fn open_writes_segment_files() {
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..2).map(|d| dir.path().join("wal").join(d.to_string())).collect();
    let options = LogOptions {
        device: crate::DeviceOptions { segment_size: 4096, ..crate::DeviceOptions::default() },
        ..LogOptions::default()
    };
    let mut last = Ssn::ZERO;
    {
        let log = Log::open(&dirs, &options).unwrap();
        for i in 0..200u64 {
            let t = commit(&log, (i % 2) as usize, Ssn::ZERO, &i.to_le_bytes(), false);
            log.wait_durable(t).unwrap();
            last = last.max(t.ssn);
        }
        assert!(log.segments(DeviceId(0)).len() > 1);
    }
    let mut values = 0;
    for (d, path) in dirs.iter().enumerate() {
        let files = crate::list_segments(path).unwrap();
        assert_eq!(files[0].1.file_name().unwrap(), "00000000000000000000.log");
        let devices: Vec<_> =
            files.iter().map(|(no, p)| (*no, crate::FileDevice::open(p).unwrap())).collect();
        let segments = devices.iter().map(|(no, dev)| (*no, dev as &dyn LogDevice)).collect();
        let mut reader = SegmentReader::new(DeviceId(d as u16), segments, ReadOptions::default());
        while let Some(r) = reader.next_record().unwrap() {
            values += usize::from(r.record.kind == RecordKind::Value);
        }
        assert!(reader.end().unwrap().last_ssn.is_some());
    }
    assert_eq!(values, 200);
    let before = crate::list_segments(&dirs[0]).unwrap().len();
    let log = Log::open(&dirs, &LogOptions { start_ssn: last, ..options }).unwrap();
    assert_eq!(log.segments(DeviceId(0)), vec![crate::SegmentNo(before as u64)]);
    let t = commit(&log, 0, Ssn::ZERO, b"after restart", false);
    assert!(t.ssn > last);
    log.wait_durable(t).unwrap();
}

/// A new directory on the tmpfs at `/dev/shm`, or `None` (saying what was `skipped`) where
/// there is none: for the tests of what the log does on a memory file system.
pub(crate) fn tmpfs_tempdir(skipped: &str) -> Option<tempfile::TempDir> {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() || !crate::in_memory_fs(shm) {
        eprintln!("no tmpfs at /dev/shm: {skipped}");
        return None;
    }
    Some(tempfile::tempdir_in(shm).unwrap())
}

/// On a memory file system, segments removed below a checkpoint's cut come back as new
/// segments (`DirStore` recycles them): after many rotations and cuts, each device reads back
/// exactly the records at or above the last cut, in order, and nothing of the recycled files'
/// old records (the reader would fail on an SSN out of order or bytes after a closed
/// segment's end).
#[test]
fn recycled_segments_read_back_as_new() {
    let Some(dir) = tmpfs_tempdir("nothing to test") else { return };
    let dirs: Vec<_> = (0..2).map(|d| dir.path().join(d.to_string())).collect();
    let options = LogOptions {
        device: crate::DeviceOptions { segment_size: 4096, ..crate::DeviceOptions::default() },
        ..LogOptions::default()
    };
    let mut written: Vec<Vec<(Ssn, Vec<u8>)>> = vec![Vec::new(); 2];
    let mut cut = Ssn::ZERO;
    let mut inodes = std::collections::HashSet::new();
    let mut reused = 0;
    {
        let log = Log::open(&dirs, &options).unwrap();
        for i in 0..3000u64 {
            let d = (i % 2) as usize;
            let payload = vec![(i % 251) as u8; 40 + (i % 90) as usize];
            let t = commit(&log, d, Ssn::ZERO, &payload, false);
            log.wait_durable(t).unwrap();
            written[d].push((t.ssn, payload));
            if i % 300 == 299 {
                cut = t.ssn;
                log.delete_segments_below(cut).unwrap();
            }
            for path in &dirs {
                for (_, file) in crate::list_segments(path).unwrap() {
                    use std::os::unix::fs::MetadataExt;
                    let Ok(meta) = std::fs::metadata(&file) else { continue };
                    if inodes.insert((meta.ino(), file.clone()))
                        && inodes.iter().filter(|(ino, _)| *ino == meta.ino()).count() > 1
                    {
                        reused += 1;
                    }
                }
            }
        }
    }
    assert!(reused > 0, "no segment file was reused");
    for (d, path) in dirs.iter().enumerate() {
        let files = crate::list_segments(path).unwrap();
        let devices: Vec<_> =
            files.iter().map(|(no, p)| (*no, crate::FileDevice::open(p).unwrap())).collect();
        let segments = devices.iter().map(|(no, dev)| (*no, dev as &dyn LogDevice)).collect();
        let mut reader = SegmentReader::new(DeviceId(d as u16), segments, ReadOptions::default());
        let mut got = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            if r.record.kind == RecordKind::Value {
                got.push((r.record.ssn, r.record.payload.to_vec()));
            }
        }
        let kept: Vec<_> = got.iter().filter(|(ssn, _)| *ssn >= cut).cloned().collect();
        let want: Vec<_> = written[d].iter().filter(|(ssn, _)| *ssn >= cut).cloned().collect();
        assert_eq!(kept, want, "device {d}: every record at or above the cut, in order");
        let first = got.first().expect("records above the cut").0;
        assert!(written[d].iter().any(|(ssn, _)| *ssn == first), "device {d}: only its records");
    }
}

/// An in-memory log (`Log::new`) never blocks and never writes.
#[test]
fn in_memory_log_acknowledges_at_once() {
    let log = Log::new(2);
    let r = log.reserve(1, Ssn(5), 3);
    let t = r.ticket(false);
    r.fill(&[]);
    log.wait_durable(t).unwrap();
    log.wait_csn(Ssn(1000)).unwrap();
    assert_eq!(log.csn(), Ssn(6));
}

/// Segments that existed before `Log::open` (listed in `LogOptions::existing_segments` with
/// their last SSNs, as recovery found them) are closed segments of the new log:
/// `delete_segments_below` deletes those a checkpoint covers, oldest first, and keeps the rest.
#[test]
fn existing_segments_are_adopted_and_deletable() {
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..2).map(|d| dir.path().join("wal").join(d.to_string())).collect();
    let options = LogOptions {
        device: crate::DeviceOptions { segment_size: 4096, ..crate::DeviceOptions::default() },
        ..LogOptions::default()
    };
    {
        let log = Log::open(&dirs, &options).unwrap();
        for i in 0..400u64 {
            let t = commit(&log, (i % 2) as usize, Ssn::ZERO, &[i as u8; 64], false);
            if i % 50 == 0 {
                log.wait_durable(t).unwrap();
            }
        }
    }
    // What recovery's scan learns: per device, per segment, the SSN of its last record.
    let mut existing = Vec::new();
    let mut max = Ssn::ZERO;
    for (d, path) in dirs.iter().enumerate() {
        let mut segments = Vec::new();
        for (no, p) in crate::list_segments(path).unwrap() {
            let dev = crate::FileDevice::open(&p).unwrap();
            let mut reader = SegmentReader::single(DeviceId(d as u16), no, &dev);
            let mut last = None;
            while let Some(r) = reader.next_record().unwrap() {
                last = Some(r.record.ssn);
            }
            max = max.max(last.unwrap_or(Ssn::ZERO));
            segments.push((no, last));
        }
        assert!(segments.len() > 2, "the test needs several segments per device");
        existing.push(segments);
    }
    // A segment that does not exist is refused.
    let mut bogus = existing.clone();
    bogus[1].push((crate::SegmentNo(9999), None));
    let refused = Log::open(&dirs, &LogOptions { existing_segments: bogus, ..options.clone() });
    assert!(refused.is_err());

    let log = Log::open(
        &dirs,
        &LogOptions { start_ssn: max, existing_segments: existing.clone(), ..options.clone() },
    )
    .unwrap();
    for (d, segments) in existing.iter().enumerate() {
        let known = log.segments(DeviceId(d as u16));
        assert_eq!(known.len(), segments.len() + 1, "adopted plus the new current one");
        assert_eq!(&known[..segments.len()], &segments.iter().map(|s| s.0).collect::<Vec<_>>()[..]);
    }
    // A cut in the middle of device 0's third segment: everything wholly below goes.
    let cut = existing[0][2].1.unwrap();
    let deleted = log.delete_segments_below(cut.next()).unwrap();
    for (d, segments) in existing.iter().enumerate() {
        let gone: Vec<_> =
            deleted.iter().filter(|(dev, _)| dev.0 as usize == d).map(|(_, no)| *no).collect();
        let want: Vec<_> = segments
            .iter()
            .take_while(|(_, last)| last.is_none_or(|l| l <= cut))
            .map(|(no, _)| *no)
            .collect();
        assert_eq!(gone, want, "device {d}");
        assert!(!gone.is_empty());
        let on_disk: Vec<_> =
            crate::list_segments(&dirs[d]).unwrap().into_iter().map(|(no, _)| no).collect();
        assert!(gone.iter().all(|no| !on_disk.contains(no)));
        assert_eq!(
            on_disk.len(),
            segments.len() + 1 - gone.len(),
            "{on_disk:?} {segments:?} {gone:?}"
        );
    }
    // Everything adopted goes once the cut passes the last old record; the current stays.
    log.delete_segments_below(max.next()).unwrap();
    for d in 0..2u16 {
        assert_eq!(log.segments(DeviceId(d)).len(), 1);
        assert_eq!(crate::list_segments(&dirs[usize::from(d)]).unwrap().len(), 1);
    }
    let t = commit(&log, 0, Ssn::ZERO, b"after", false);
    log.wait_durable(t).unwrap();
}

/// Lazy records (`Reservation::lazy`, `synchronous_commit = off`) with a lazy timer that never
/// runs out in a test (one hour): only a waiter, pressure or shutdown can make them go out.
fn lazy_options() -> LogOptions {
    LogOptions { lazy_flush_delay: Duration::from_secs(3600), ..LogOptions::default() }
}

/// Reserves and fills a lazy value record; returns its ticket.
fn commit_lazy(log: &Log, buffer: usize, base: Ssn, payload: &[u8], blind: bool) -> Ticket {
    let r = log.reserve(buffer, base, crate::Record::encoded_len_for(payload.len()));
    fill_value(r.lazy(), payload, blind)
}

#[test]
fn lazy_records_wait_for_somebody_to_want_them() {
    let (stores, boxed) = stores(2, 1 << 20);
    let log = Log::with_stores(boxed, &lazy_options()).unwrap();
    let lazy: Vec<Ticket> =
        (0..50u64).map(|i| commit_lazy(&log, 0, Ssn::ZERO, &i.to_le_bytes(), true)).collect();
    // An eager commit on the other device goes out at once and leaves device 0 alone.
    let eager = commit(&log, 1, Ssn::ZERO, b"eager", true);
    log.wait_durable(eager).unwrap();
    // Give a logger that wrongly flushed lazy records the time to do it (no timing in the
    // other direction: a correct logger never writes them here).
    std::thread::sleep(Duration::from_millis(20));
    assert!(durable_records(&stores[0], 0).is_empty(), "lazy records went out unasked");
    assert_eq!(log.dsn(DeviceId(0)), Ssn::ZERO);
    // A blind waiter on one of them asks device 0 for it: all 50 go out together.
    log.wait_durable(lazy[10]).unwrap();
    let durable = durable_records(&stores[0], 0);
    assert_eq!(durable.len(), 50, "the flush takes everything filled");
    assert_eq!(durable[49].payload, 49u64.to_le_bytes());

    // Non-blind: a CSN waiter asks every device behind it.
    let a = commit_lazy(&log, 0, Ssn::ZERO, b"a", false);
    let b = commit_lazy(&log, 1, a.ssn, b"b", false);
    log.wait_durable(b).unwrap();
    assert!(log.csn() >= b.ssn);
    // Device 0 wrote `a`, then a marker up to `b` (CSN needs DSN(0) >= b).
    assert!(durable_records(&stores[0], 0).iter().any(|r| r.ssn == a.ssn));
    assert!(last_durable_ssn(&stores[0], 0) >= b.ssn);
    assert_eq!(last_durable_ssn(&stores[1], 1), b.ssn);
    // `request` alone (no wait) does the same.
    let c = commit_lazy(&log, 1, Ssn::ZERO, b"c", true);
    log.request(c);
    until("request did not flush", || log.is_durable(c));
}

/// `watch` registers a callback like `when_durable` but asks for nothing: a lazy record it
/// watches stays in the buffer until somebody requests it (demand-driven group commit).
#[test]
fn watch_waits_for_a_request_and_then_calls_back() {
    let (stores, boxed) = stores(2, 1 << 20);
    let log = Log::with_stores(boxed, &lazy_options()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let a = commit_lazy(&log, 0, Ssn::ZERO, b"a", false);
    let b = commit_lazy(&log, 1, Ssn::ZERO, b"b", false);
    let t = tx.clone();
    log.watch(vec![a, b], Box::new(move |outcome| t.send(outcome).unwrap()));
    // No timing in the other direction: a correct logger never writes them unasked.
    assert!(rx.recv_timeout(Duration::from_millis(20)).is_err(), "called back unrequested");
    assert!(durable_records(&stores[0], 0).is_empty(), "a lazy record went out unasked");
    assert!(durable_records(&stores[1], 1).is_empty(), "a lazy record went out unasked");
    // One request for the larger SSN asks every device for everything up to it.
    log.request(if a.ssn > b.ssn { a } else { b });
    rx.recv_timeout(Duration::from_secs(30)).expect("called back").unwrap();
    assert!(log.is_durable(a) && log.is_durable(b));
    // Already durable: called at once.
    log.watch(vec![a], Box::new(move |outcome| tx.send(outcome).unwrap()));
    assert!(rx.try_recv().expect("durable already: called at once").is_ok());
}

#[test]
fn lazy_records_go_out_when_the_timer_runs_out() {
    let (stores, boxed) = stores(1, 1 << 20);
    let options =
        LogOptions { lazy_flush_delay: Duration::from_millis(2), ..LogOptions::default() };
    let log = Log::with_stores(boxed, &options).unwrap();
    let t = commit_lazy(&log, 0, Ssn::ZERO, b"nobody waits", true);
    // Nobody asks for it; the timer alone makes it durable.
    until("the lazy timer never flushed", || log.is_durable(t));
    assert_eq!(last_durable_ssn(&stores[0], 0), t.ssn);
}

#[test]
fn lazy_records_under_back_pressure_go_out_without_a_waiter() {
    // 64 KiB of ring, 4 MiB of lazy records from two threads: each reservation that finds the
    // ring full (or the open segment at a quarter of it) makes the logger write; a logger that
    // only obeyed waiters and its (one-hour) timer would deadlock here.
    let (stores, boxed) = stores(1, 8 << 20);
    let options = LogOptions { ring_bytes: 64 << 10, ..lazy_options() };
    let log = Arc::new(Log::with_stores(boxed, &options).unwrap());
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                let payload = [7u8; 1000];
                let mut last = Ssn::ZERO;
                for _ in 0..2048 {
                    last = commit_lazy(&log, 0, Ssn::ZERO, &payload, true).ssn;
                }
                last
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(log.dsn(DeviceId(0)) > Ssn::ZERO, "pressure wrote lazy records");
    drop(Arc::try_unwrap(log).expect("threads joined"));
    assert_eq!(durable_records(&stores[0], 0).len(), 4096, "shutdown wrote the rest");
}

#[test]
fn shutdown_writes_lazy_records() {
    let (stores, boxed) = stores(2, 1 << 20);
    let log = Log::with_stores(boxed, &lazy_options()).unwrap();
    for i in 0..10u64 {
        let _ = commit_lazy(&log, (i % 2) as usize, Ssn::ZERO, &i.to_le_bytes(), false);
    }
    drop(log);
    assert_eq!(durable_records(&stores[0], 0).len(), 5);
    assert_eq!(durable_records(&stores[1], 1).len(), 5);
}

/// `Log::spill` writes the payload to a spill file of the device before the record exists;
/// filling the `Spilled` record registers the file with the record's SSN, and
/// `delete_segments_below` deletes it once the record is below the cut (a file already gone
/// is no error). A new log continues the ids after the files on disk and adopts the listed
/// ones.
#[test]
fn spill_files_are_registered_and_deleted_with_their_records() {
    let (stores, boxed) = stores(2, 1 << 20);
    let log = Log::with_stores(boxed, &LogOptions::default()).unwrap();
    assert_eq!(log.spill_threshold(), log.max_record_len() / 4);
    let payload = vec![7u8; 5000];
    let spill = log.spill(1, &payload).unwrap();
    assert_eq!(spill, crate::SpillRef::of(0, &payload));
    assert_eq!(stores[1].spills().get(&0), Some(&payload), "written before any record");
    let r = log.reserve(1, Ssn::ZERO, crate::Record::encoded_len_for(crate::SpillRef::LEN));
    let ssn = r.ssn;
    let ticket = r.ticket(true);
    r.fill_record(RecordKind::Spilled, true, &spill.encode());
    log.wait_durable(ticket).unwrap();
    assert_eq!(log.spills(DeviceId(1)), vec![(0, ssn)]);
    let second = log.spill(1, b"more").unwrap();
    assert_eq!(second.id, 1, "ids increase per device");
    let recs = durable_records(&stores[1], 1);
    assert_eq!(recs[0].kind, RecordKind::Spilled);
    assert_eq!(crate::SpillRef::decode(&recs[0].payload).unwrap(), spill);
    assert!(spill.matches(&payload) && !spill.matches(b"other"));

    log.delete_segments_below(ssn).unwrap();
    assert!(stores[1].spills().contains_key(&0), "its record is not below the cut");
    log.delete_segments_below(ssn.next()).unwrap();
    assert!(!stores[1].spills().contains_key(&0), "deleted with its record");
    assert!(log.spills(DeviceId(1)).is_empty());
    drop(log);

    // Reopen: ids continue after what is on disk (the unregistered file 1); adopted files are
    // deleted below their SSN, and one already gone is no error.
    let options = LogOptions {
        existing_spills: vec![vec![], vec![(1, Ssn(3)), (9, Ssn(4))]],
        ..LogOptions::default()
    };
    let boxed = stores.iter().map(|s| Box::new(s.clone()) as Box<dyn SegmentStore>).collect();
    let log = Log::with_stores(boxed, &options).unwrap();
    assert_eq!(log.spill(1, b"x").unwrap().id, 10, "after the largest known id");
    log.delete_segments_below(Ssn(5)).unwrap();
    assert_eq!(stores[1].spills().keys().copied().collect::<Vec<_>>(), vec![10]);
}

/// A filler preempted between its reservation and its fill must not hold back the DSN of a
/// pair already written and syncing: the logger completes pairs in flight before it waits for
/// the fill. (Before, it waited for the fill first, and `a` stayed unacknowledged, durable,
/// for as long as the filler slept.)
#[test]
fn an_unfilled_reservation_does_not_hold_back_earlier_pairs() {
    let store = MemStore::with_wrapper(1 << 20, |_, device| {
        Box::new(ThrottledDevice::new(device, 0, Duration::from_millis(200)))
    });
    let boxed: Vec<Box<dyn SegmentStore>> = vec![Box::new(store.clone())];
    let log = Arc::new(Log::with_stores(boxed, &LogOptions::default()).unwrap());
    let a = commit(&log, 0, Ssn::ZERO, b"a", true);
    // Wait until `a`'s write reached the device: its pair is now syncing (200 ms).
    while store.segments().first().is_none_or(|(_, d)| d.bytes().is_empty()) {
        std::thread::yield_now();
    }
    let stalled = log.reserve(0, Ssn::ZERO, crate::Record::encoded_len_for(1));
    let b = commit(&log, 0, Ssn::ZERO, b"b", true);
    // `a` becomes acknowledged while `stalled` is still unfilled (checked from another thread
    // with a generous bound: this thread holds the reservation).
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = {
        let log = log.clone();
        std::thread::spawn(move || tx.send(log.wait_durable(a)).unwrap())
    };
    let acknowledged = rx.recv_timeout(Duration::from_secs(30));
    stalled.fill_record(RecordKind::Value, true, b"s");
    assert!(matches!(acknowledged, Ok(Ok(()))), "a's DSN waited for an unrelated fill");
    waiter.join().unwrap();
    log.wait_durable(b).unwrap();
}

/// A store without spill files (`Log::with_devices`' single segments) refuses a spill as too
/// large a record, and the log keeps working.
#[test]
fn a_store_without_spill_files_refuses_large_payloads_without_failing() {
    let log = Log::with_devices(vec![Box::new(MemDevice::new())], &LogOptions::default()).unwrap();
    let e = log.spill(0, &[1u8; 100]).unwrap_err();
    let max = log.spill_threshold();
    assert!(matches!(e, Error::RecordSize { len: 100, max: m, .. } if m == max), "{e}");
    assert!(log.failure().is_none());
    let t = commit(&log, 0, Ssn::ZERO, b"after", true);
    log.wait_durable(t).unwrap();
}

/// A spill file that cannot be written fails the log as a failed log write does: the error is
/// returned, the log's failure is set, and later commits are refused.
#[test]
fn a_failed_spill_write_fails_the_log() {
    #[derive(Debug)]
    struct NoSpillWrites(Arc<MemStore>);
    impl SegmentStore for NoSpillWrites {
        fn segment_size(&self) -> u64 {
            self.0.segment_size()
        }
        fn list(&self) -> std::io::Result<Vec<crate::SegmentNo>> {
            self.0.list()
        }
        fn create(&self, no: crate::SegmentNo) -> std::io::Result<Box<dyn LogDevice>> {
            self.0.create(no)
        }
        fn remove(&self, no: crate::SegmentNo) -> std::io::Result<()> {
            self.0.remove(no)
        }
        fn write_spill(&self, _id: u64, _bytes: &[u8]) -> std::io::Result<()> {
            Err(std::io::Error::from_raw_os_error(libc::EIO))
        }
    }
    let store: Box<dyn SegmentStore> = Box::new(NoSpillWrites(MemStore::new(1 << 20)));
    let log = Log::with_stores(vec![store], &LogOptions::default()).unwrap();
    let e = log.spill(0, &[1u8; 100]).unwrap_err();
    assert!(matches!(e, Error::DeviceFailed { .. }), "{e}");
    assert!(log.failure().is_some(), "the log failed");
    let r = log.try_reserve(0, Ssn::ZERO, crate::Record::encoded_len_for(1));
    assert!(r.is_err(), "later commits are refused");
}

/// Options under which every device counts as fast (any pair below a second): requesters
/// flush for an idle logger once its first pair has been timed. Lazy timer as `lazy_options`.
fn assisting_options() -> LogOptions {
    LogOptions { assist_below: Duration::from_secs(1), ..lazy_options() }
}

/// Makes device `d` of `log` time a pair (a blind lazy record, requested and waited for) until
/// requesters flush it themselves.
fn until_assisting(log: &Log, d: usize) {
    until(&format!("device {d} never assisted"), || {
        let t = commit_lazy(log, d, Ssn::ZERO, b"warm", true);
        log.wait_durable(t).unwrap();
        log.assisting(DeviceId(d as u16))
    });
}

/// Waits until device `d`'s logger has finished its last flush and sleeps (it releases its
/// state only then), so that the next request finds it idle.
fn until_logger_idle(log: &Log, d: usize) {
    until(&format!("logger {d} never went idle"), || {
        log.inner.devices[d].flush.try_lock().is_some()
    });
}

/// On a fast device with an idle logger, `request` itself writes and syncs: the record is
/// durable (and read back by recovery) when `request` returns, and a CSN request writes the
/// idle device's marker the same way. A requester that left it to the logger thread would
/// return before the sync.
#[test]
fn requesters_flush_for_an_idle_logger_on_a_fast_device() {
    let (stores, boxed) = stores(2, 1 << 20);
    let log = Log::with_stores(boxed, &assisting_options()).unwrap();
    until_assisting(&log, 0);
    until_assisting(&log, 1);
    until_logger_idle(&log, 0);
    until_logger_idle(&log, 1);
    for i in 0..20u64 {
        let t = commit_lazy(&log, 0, Ssn::ZERO, &i.to_le_bytes(), true);
        log.request(t);
        assert!(log.is_durable(t), "request {i} returned before its record was durable");
        assert_eq!(last_durable_ssn(&stores[0], 0), t.ssn);
    }
    // Non-blind on device 1: device 0 has nothing above its DSN, so it needs a marker.
    let t = commit_lazy(&log, 1, log.dsn(DeviceId(0)), b"csn", false);
    log.request(t);
    assert!(log.csn() >= t.ssn, "CSN {} below {} after the request", log.csn(), t.ssn);
    let marker = durable_records(&stores[0], 0).pop().expect("device 0 wrote a marker");
    assert_eq!(marker.kind, RecordKind::Marker);
    assert!(marker.ssn >= t.ssn);
    // Many requesters at once (each may find another flushing and wake the logger instead):
    // every one of their records ends up durable and in the log once.
    let log = Arc::new(log);
    let threads: Vec<_> = (0..4u64)
        .map(|k| {
            let log = log.clone();
            std::thread::spawn(move || {
                (0..200u64)
                    .map(|i| {
                        let t =
                            commit_lazy(&log, (i % 2) as usize, Ssn::ZERO, &[k as u8; 9], false);
                        log.wait_durable(t).unwrap();
                        t
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let tickets: Vec<Ticket> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    for d in 0..2u16 {
        let recs = durable_records(&stores[usize::from(d)], d);
        for t in tickets.iter().filter(|t| t.device == DeviceId(d)) {
            assert_eq!(recs.iter().filter(|r| r.ssn == t.ssn).count(), 1, "{t:?} on device {d}");
        }
    }
}

/// While requesters flush, a reservation into an empty segment does not wake the logger; an
/// unrequested lazy record still goes out, at the logger's next tick.
#[test]
fn an_assisted_device_still_writes_unrequested_lazy_records() {
    let (stores, boxed) = stores(1, 1 << 20);
    let options = LogOptions { lazy_flush_delay: Duration::from_millis(2), ..assisting_options() };
    let log = Log::with_stores(boxed, &options).unwrap();
    until_assisting(&log, 0);
    let t = commit_lazy(&log, 0, Ssn::ZERO, b"nobody asks", true);
    until("the ticking logger never flushed", || log.is_durable(t));
    assert_eq!(last_durable_ssn(&stores[0], 0), t.ssn);
}

/// A requester's failed sync fails the log as the logger's would: its waiter gets the error,
/// the record is not durable, and the device is never retried.
#[test]
fn a_requesters_failed_sync_fails_the_log() {
    let (store, faulty) = store_failing_sync(3);
    let log = Log::with_stores(vec![Box::new(store.clone())], &assisting_options()).unwrap();
    // Sync 1 (the logger's) makes the device fast; sync 2 is a requester's.
    until_assisting(&log, 0);
    until_logger_idle(&log, 0);
    let ok = commit_lazy(&log, 0, Ssn::ZERO, b"two", true);
    log.request(ok);
    assert!(log.is_durable(ok));
    let device = faulty.lock().unwrap().clone().unwrap();
    assert_eq!(device.syncs(), 2, "the logger's sync, then the requester's");
    let doomed = commit_lazy(&log, 0, Ssn::ZERO, b"three", true);
    log.request(doomed);
    assert!(log.failure().is_some(), "the requester's failed sync failed the log");
    let err = log.wait_durable(doomed).unwrap_err();
    assert!(matches!(err, Error::DeviceFailed { device: DeviceId(0), .. }), "{err:?}");
    assert!(!durable_records(&store, 0).iter().any(|r| r.ssn == doomed.ssn));
    log.wait_durable(ok).unwrap();
    assert_eq!(device.attempts_after_failure(), 0, "no retry after a failed sync");
}

/// Slow devices (and `assist_below` zero) keep the logger thread doing every write.
#[test]
fn slow_devices_are_not_assisted() {
    let slow = MemStore::with_wrapper(1 << 20, |_, inner| {
        Box::new(ThrottledDevice::new(inner, 1 << 30, Duration::from_millis(2)))
    });
    let options = LogOptions { assist_below: Duration::from_micros(500), ..lazy_options() };
    let log = Log::with_stores(vec![Box::new(slow)], &options).unwrap();
    let never = LogOptions { assist_below: Duration::ZERO, ..lazy_options() };
    let (_, boxed) = stores(1, 1 << 20);
    let fast_but_off = Log::with_stores(boxed, &never).unwrap();
    for i in 0..10u64 {
        for log in [&log, &fast_but_off] {
            let t = commit_lazy(log, 0, Ssn::ZERO, &i.to_le_bytes(), true);
            log.wait_durable(t).unwrap();
            assert!(!log.assisting(DeviceId(0)));
        }
    }
}

/// The logger measures how many pairs in flight pay (`crate::depth`): on a device that
/// overlaps a pair's sync with the next pairs it keeps more than one in flight once enough
/// commits wait; on one whose pairs run at submit it keeps one. Everything committed is
/// durable either way.
#[test]
fn pairs_in_flight_follow_the_device() {
    for pipelined in [true, false] {
        let sync = Duration::from_millis(2);
        let device = if pipelined {
            ThrottledDevice::pipelined(MemDevice::new(), 0, sync)
        } else {
            ThrottledDevice::new(MemDevice::new(), 0, sync)
        };
        let log =
            Arc::new(Log::with_devices(vec![Box::new(device)], &LogOptions::default()).unwrap());
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Sixteen committers that wait for their commits, and one that never waits. A probe
        // deeper is taken only if records are filled while the pair before it is in flight:
        // on a loaded machine the waiting committers, all woken by one pair, may all land in
        // the next one, and the probe then finds nothing to send (CI, 2026-11-28: no deeper
        // limit within 60 s). The committer that does not wait keeps records coming.
        let committers: Vec<_> = (0..17)
            .map(|i| {
                let (log, stop) = (log.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let t = commit(&log, 0, Ssn::ZERO, b"x", false);
                        if i < 16 {
                            log.wait_durable(t).unwrap();
                        }
                    }
                })
            })
            .collect();
        // A pipelined device: wait until the logger went deeper (it starts at one pair). A
        // serial one: run a few hundred pairs' worth.
        let mut deepest = 0;
        while std::time::Instant::now() < deadline {
            deepest = deepest.max(log.in_flight_limit(DeviceId(0)));
            if pipelined && deepest > 1 {
                break;
            }
            if !pipelined && deadline - std::time::Instant::now() < Duration::from_secs(59) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for c in committers {
            c.join().unwrap();
        }
        if pipelined {
            assert!(deepest > 1, "a device that overlaps pairs got only one in flight");
        } else {
            assert_eq!(deepest, 1, "pairs that run at submit cannot overlap");
        }
        assert!(log.failure().is_none());
    }
}

/// Logger threads ask for a short scheduler slice (`logger::request_short_slice`), which Linux
/// honours from 6.12 on: read back from `/proc` where the kernel shows it.
#[test]
fn logger_threads_run_with_a_short_scheduler_slice() {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut version = release.trim().split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>());
    let (Some(Ok(major)), Some(Ok(minor))) = (version.next(), version.next()) else { return };
    if (major, minor) < (6, 12) {
        return;
    }
    let (_stores, boxed) = stores(1, 1 << 20);
    let _log = Log::with_stores(boxed, &LogOptions::default()).unwrap();
    // Every logger thread in this process (other tests' too): the slice is 100 µs once set.
    let logger_slices = || {
        let mut slices = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if !comm.starts_with("wal-logger") {
                continue;
            }
            let sched = std::fs::read_to_string(task.path().join("sched")).unwrap_or_default();
            let slice = sched
                .lines()
                .find(|l| l.starts_with("se.slice"))
                .and_then(|l| l.rsplit(':').next())
                .and_then(|v| v.trim().parse::<u64>().ok());
            slices.push(slice);
        }
        slices
    };
    until("a logger thread with its slice", || {
        let slices = logger_slices();
        // Without scheduler debugging `/proc` shows no slice: nothing to check.
        (!slices.is_empty() && slices.iter().all(Option::is_none))
            || slices.contains(&Some(100_000))
    });
}
