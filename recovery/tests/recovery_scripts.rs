//! Goldenscripts for recovery's rules (DESIGN.md §5): RSNe over devices, torn tails against
//! corruption, which records replay selects (`S < ssn <= RSNe`, plus blind records `> S`),
//! sealing unacknowledged records, and the checkpoint cut of `txn`. The scripts are in
//! `tests/scripts/`; regenerate their expected output with `UPDATE_GOLDENFILES=1` and review
//! the diff.
//!
//! Two runners, picked per script in the `scripts!` list below.
//!
//! **Log scripts** ([`LogRunner`]) build per-device logs by encoding `wal::Record`s into
//! `wal::testing::MemDevice` segments, crash them, and recover:
//!
//! - `devices n=N` — devices `0..N`, each with one empty segment.
//! - `record device=D ssn=S [kind=value|command|marker|abort] [blind=true] [key=K]
//!   [delete=true] [synced=false]` — appends a record to D's last segment, synced unless
//!   `synced=false`. A value record writes key K (default `k<ssn>`) of table 1 with row
//!   `v<ssn>`, or deletes it.
//! - `segment device=D` — D continues in a new segment (the previous one is closed).
//! - `crash [device=D torn=N]` — every device keeps only its synced bytes, except that D also
//!   keeps the first N bytes of its unsynced writes (a torn tail).
//! - `corrupt device=D ssn=S` — flips a bit of the (synced) record's CRC: bit rot.
//! - `scan [cut=S] [window=N]` — `RecoveryPlan::scan` with checkpoint cut S and unsynced window
//!   N; prints each device's records as read, its end and last SSN, and RSNe.
//! - `replay` — both replayers (parallel, and the serial oracle, which must agree) with the
//!   scan's cut; prints which value records were replayed and which not, and the rows.
//! - `seal` — `RecoveryPlan::seal` on the last scan.
//! - `restart` — every device continues in a new segment, as a reopened log does.
//!
//! **Engine scripts** ([`EngineRunner`]) drive `txn::Engine` over an in-memory log:
//!
//! - `T: begin [buffer=B]`, `T: put K V`, `T: delete K`, `T: get K`, `T: commit` — a
//!   transaction (prefix `T`) on table 1; `commit` prints its SSN.
//! - `checkpoint` — `Engine::begin_checkpoint`: prints the cut S.
//! - `scan` — what the cut's scan reports (key, row, version SSN), each key once.
//! - `end` — drops the cut (the checkpoint ends).
//! - `rows` — the current committed rows (a new transaction's scan).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use recovery::{replay, DeviceLog, RecoveryPlan, ScanOptions, SerialReplayer, Target};
use wal::record::{encode_values, CRC_OFFSET};
use wal::testing::MemDevice;
use wal::{
    DeviceId, LogDevice, ReadOptions, Record, RecordKind, SegmentNo, SegmentReader, Ssn, ValueEntry,
};

/// The table every log script writes.
const TABLE: u32 = 1;

macro_rules! scripts {
    ($($name:ident => $runner:ty),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let path = scripts_dir().join(concat!(stringify!($name), ".txt"));
                goldenscript::run(&mut <$runner>::default(), &path).expect("goldenscript failed");
            }
        )*

        /// Every script in `tests/scripts/` has a test above (none is silently skipped).
        #[test]
        fn every_script_runs() {
            check_listed(&[$(stringify!($name)),*]);
        }
    };
}

scripts!(
    rsne_over_devices => LogRunner,
    torn_tail => LogRunner,
    blind_beyond_rsne => LogRunner,
    checkpoint_cut => EngineRunner,
);

/// `tests/scripts` under `$CARGO_MANIFEST_DIR` as cargo sets it when it runs the test, else
/// under the directory this test was compiled in (a binary reused from a shared target
/// directory may have been compiled in another clone, since removed).
fn scripts_dir() -> std::path::PathBuf {
    let run = std::env::var_os("CARGO_MANIFEST_DIR").map(|d| Path::new(&d).join("tests/scripts"));
    run.filter(|d| d.is_dir())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts"))
}

fn check_listed(listed: &[&str]) {
    wal::testing::check_scripts_listed(&scripts_dir(), listed);
}

// ---------------------------------------------------------------------------------------------
// Log scripts
// ---------------------------------------------------------------------------------------------

#[derive(goldenscript::Command)]
enum LogCommand {
    Devices {
        #[arg(key)]
        n: u16,
    },
    Record {
        #[arg(key)]
        device: u16,
        #[arg(key)]
        ssn: u64,
        #[arg(key)]
        kind: Option<String>,
        #[arg(key, optional)]
        blind: bool,
        #[arg(key)]
        key: Option<String>,
        #[arg(key, optional)]
        delete: bool,
        #[arg(key)]
        synced: Option<bool>,
    },
    Segment {
        #[arg(key)]
        device: u16,
    },
    Crash {
        #[arg(key)]
        device: Option<u16>,
        #[arg(key)]
        torn: Option<usize>,
    },
    Corrupt {
        #[arg(key)]
        device: u16,
        #[arg(key)]
        ssn: u64,
    },
    Scan {
        #[arg(key)]
        cut: Option<u64>,
        #[arg(key)]
        window: Option<u64>,
    },
    Replay,
    Seal,
    Restart,
}

/// A record the script wrote, and where.
#[derive(Debug)]
struct Written {
    ssn: u64,
    segment: usize,
    offset: u64,
}

/// One device: its segments, where the next record goes, and what was written.
#[derive(Debug, Default)]
struct Device {
    segments: Vec<(SegmentNo, Arc<MemDevice>)>,
    /// The offset of the next record in the last segment.
    end: u64,
    written: Vec<Written>,
    /// Crashed and not restarted: appending now would write after a possibly torn tail.
    crashed: bool,
}

impl Device {
    fn new_segment(&mut self) {
        let no = self.segments.last().map_or(0, |(no, _)| no.0 + 1);
        self.segments.push((SegmentNo(no), Arc::new(MemDevice::new())));
        self.end = 0;
    }

    fn log(&self, id: u16) -> DeviceLog {
        let segments =
            self.segments.iter().map(|(no, d)| (*no, d.clone() as Arc<dyn LogDevice>)).collect();
        DeviceLog::new(DeviceId(id), segments)
    }
}

#[derive(Default)]
struct LogRunner {
    devices: BTreeMap<u16, Device>,
    plan: Option<RecoveryPlan>,
}

impl goldenscript::Runner for LogRunner {
    type Command = LogCommand;

    fn run(
        &mut self,
        command: &LogCommand,
        _: &goldenscript::Context,
    ) -> Result<String, Box<dyn Error>> {
        let mut out = String::new();
        match command {
            LogCommand::Devices { n } => {
                self.devices.clear();
                self.plan = None;
                for d in 0..*n {
                    let mut device = Device::default();
                    device.new_segment();
                    self.devices.insert(d, device);
                }
            }
            LogCommand::Record { device, ssn, kind, blind, key, delete, synced } => {
                let kind = parse_kind(kind.as_deref().unwrap_or("value"))?;
                let key = key.clone().unwrap_or_else(|| format!("k{ssn}"));
                self.record(*device, *ssn, kind, *blind, &key, *delete, synced.unwrap_or(true))?;
            }
            LogCommand::Segment { device } => self.device(*device)?.new_segment(),
            LogCommand::Crash { device, torn } => {
                if device.is_some() != torn.is_some() {
                    return Err("crash takes device=D and torn=N together".into());
                }
                for (id, dev) in &mut self.devices {
                    let last = dev.segments.len() - 1;
                    for (i, (_, mem)) in dev.segments.iter().enumerate() {
                        let keep =
                            if Some(*id) == *device && i == last { torn.unwrap_or(0) } else { 0 };
                        mem.crash(keep);
                    }
                    dev.crashed = true;
                }
            }
            LogCommand::Corrupt { device, ssn } => {
                let dev = self.device(*device)?;
                let w = dev
                    .written
                    .iter()
                    .find(|w| w.ssn == *ssn)
                    .ok_or_else(|| format!("device {device} has no record {ssn}"))?;
                let at = w.offset as usize + CRC_OFFSET;
                dev.segments[w.segment].1.corrupt(at, |b| *b ^= 0x01);
            }
            LogCommand::Scan { cut, window } => {
                self.plan = None;
                let options = ScanOptions {
                    unsynced_window: window.unwrap_or(0),
                    checkpoint_ssn: Ssn(cut.unwrap_or(0)),
                };
                let logs = self.devices.iter().map(|(id, d)| d.log(*id)).collect();
                let plan = RecoveryPlan::scan(logs, options)?;
                for scan in plan.devices() {
                    let dev = &self.devices[&scan.device.0];
                    let records = list_records(dev, scan.device, plan.read_options())?;
                    let last = scan.last_ssn.map_or("none".to_string(), |s| s.to_string());
                    let end = match scan.end {
                        Some(e) if e.discarded > 0 => format!(
                            "segment {} offset {}, torn tail of {} bytes discarded",
                            e.segment, e.offset, e.discarded
                        ),
                        Some(e) => format!("segment {} offset {}", e.segment, e.offset),
                        None => "no segment".to_string(),
                    };
                    writeln!(out, "device {}: {records}", scan.device)?;
                    writeln!(out, "  last={last} end: {end}")?;
                }
                writeln!(out, "RSNe={} (S={})", plan.rsne(), plan.checkpoint_ssn())?;
                self.plan = Some(plan);
            }
            LogCommand::Replay => {
                let plan = self.plan.as_ref().ok_or("scan first")?;
                // Every value record the scan found, to tell what replay left out and why.
                let mut values = Vec::new();
                for scan in plan.devices() {
                    let dev = &self.devices[&scan.device.0];
                    for (ssn, kind, blind) in read_records(dev, scan.device, plan.read_options())? {
                        if kind == RecordKind::Value {
                            values.push((ssn, blind));
                        }
                    }
                }
                values.sort();
                out.push_str(&replay_both(plan, &values)?);
            }
            LogCommand::Seal => {
                let plan = self.plan.as_ref().ok_or("scan first")?;
                let sealed = plan.seal()?;
                writeln!(
                    out,
                    "sealed: aborted={} zeroed_bytes={}",
                    sealed.aborted, sealed.zeroed_bytes
                )?;
            }
            LogCommand::Restart => {
                self.plan = None;
                for dev in self.devices.values_mut() {
                    dev.new_segment();
                    dev.crashed = false;
                }
            }
        }
        Ok(out)
    }
}

fn parse_kind(kind: &str) -> Result<RecordKind, Box<dyn Error>> {
    Ok(match kind {
        "value" => RecordKind::Value,
        "command" => RecordKind::Command,
        "marker" => RecordKind::Marker,
        "abort" => RecordKind::Abort,
        other => return Err(format!("unknown record kind {other}").into()),
    })
}

fn kind_name(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::Value => "value",
        RecordKind::Command => "command",
        RecordKind::Marker => "marker",
        RecordKind::Abort => "abort",
        RecordKind::Spilled => "spilled",
    }
}

/// A record as a reader sees it: `(ssn, kind, blind)`.
type ReadBack = (Ssn, RecordKind, bool);

/// A device's records as a reader sees them now.
fn read_records(
    dev: &Device,
    id: DeviceId,
    options: ReadOptions,
) -> Result<Vec<ReadBack>, Box<dyn Error>> {
    let segments = dev.segments.iter().map(|(no, d)| (*no, &**d as &dyn LogDevice)).collect();
    let mut reader = SegmentReader::new(id, segments, options);
    let mut recs = Vec::new();
    while let Some(r) = reader.next_record()? {
        recs.push((r.record.ssn, r.record.kind, r.record.blind));
    }
    Ok(recs)
}

/// [`read_records`] as `ssn kind [blind]`, comma-separated.
fn list_records(
    dev: &Device,
    id: DeviceId,
    options: ReadOptions,
) -> Result<String, Box<dyn Error>> {
    let recs: Vec<String> = read_records(dev, id, options)?
        .into_iter()
        .map(|(ssn, kind, blind)| {
            format!("{ssn} {}{}", kind_name(kind), if blind { " blind" } else { "" })
        })
        .collect();
    Ok(if recs.is_empty() { "(no records)".to_string() } else { recs.join(", ") })
}

impl LogRunner {
    fn device(&mut self, id: u16) -> Result<&mut Device, Box<dyn Error>> {
        self.devices.get_mut(&id).ok_or_else(|| format!("no device {id}: use `devices n=N`").into())
    }

    #[allow(clippy::too_many_arguments)] // one per script argument
    fn record(
        &mut self,
        device: u16,
        ssn: u64,
        kind: RecordKind,
        blind: bool,
        key: &str,
        delete: bool,
        synced: bool,
    ) -> Result<(), Box<dyn Error>> {
        let dev = self.device(device)?;
        if dev.crashed {
            return Err(format!("device {device} crashed: `restart` before writing").into());
        }
        let mut payload = Vec::new();
        match kind {
            RecordKind::Value => {
                let row = format!("v{ssn}");
                let row = (!delete).then_some(row.as_bytes());
                encode_values(
                    &[ValueEntry { table: TABLE, key: key.as_bytes(), row }],
                    &mut payload,
                );
            }
            RecordKind::Command => payload.extend_from_slice(b"call p(1)"),
            // The scripts' devices keep no spill files (unit tests cover spilled records).
            RecordKind::Spilled => return Err("scripts cannot write spilled records".into()),
            RecordKind::Marker | RecordKind::Abort => {}
        }
        let mut bytes = Vec::new();
        Record { ssn: Ssn(ssn), kind, blind, payload: &payload }.encode_into(&mut bytes);
        let segment = dev.segments.len() - 1;
        let mem = &dev.segments[segment].1;
        mem.write_at(dev.end, &bytes)?;
        if synced {
            mem.sync()?;
        }
        dev.written.push(Written { ssn, segment, offset: dev.end });
        dev.end += bytes.len() as u64;
        Ok(())
    }
}

/// A [`Target`] that keeps the last writer per key (tombstones too) and every SSN it was given.
/// Per key of table 1, the installed version: its SSN and row (`None`: deleted).
type Versions = BTreeMap<Vec<u8>, (Ssn, Option<Vec<u8>>)>;

#[derive(Default)]
struct Recorder {
    versions: Mutex<Versions>,
    installed: Mutex<BTreeSet<Ssn>>,
}

impl Target for Recorder {
    fn install(&self, table: u32, key: &[u8], row: Option<&[u8]>, ssn: Ssn) -> Result<(), String> {
        if table != TABLE {
            return Err(format!("unexpected table {table}"));
        }
        self.installed.lock().map_err(|e| e.to_string())?.insert(ssn);
        let mut versions = self.versions.lock().map_err(|e| e.to_string())?;
        let slot = versions.entry(key.to_vec()).or_insert((Ssn::ZERO, None));
        if ssn > slot.0 {
            *slot = (ssn, row.map(<[u8]>::to_vec));
        }
        Ok(())
    }
}

impl Recorder {
    fn snapshot(&self) -> (BTreeSet<Ssn>, Versions) {
        let installed = self.installed.lock().expect("recorder").clone();
        (installed, self.versions.lock().expect("recorder").clone())
    }
}

/// Replays `plan` in parallel and serially, checks they agree, and prints which of the value
/// records `values` (`(ssn, blind)`, in SSN order) were replayed, which not and why, and the
/// resulting rows.
fn replay_both(plan: &RecoveryPlan, values: &[(Ssn, bool)]) -> Result<String, Box<dyn Error>> {
    let (cut, rsne) = (plan.checkpoint_ssn(), plan.rsne());
    let parallel = Recorder::default();
    let serial = Recorder::default();
    let p = replay(plan, cut, &parallel, 3, &|_| {});
    let s = SerialReplayer::new(plan).replay(cut, &serial);
    let (p, s) = match (p, s) {
        (Ok(p), Ok(s)) => (p, s),
        (Err(p), Err(s)) if p.to_string() == s.to_string() => return Err(p.into()),
        (p, s) => return Err(format!("the replayers disagree: {p:?} / {s:?}").into()),
    };
    // The serial replayer installs every selected entry; the parallel one only the newest per
    // key (it stages), so the SSNs it was given are a subset and its versions must be equal.
    let (installed, versions) = serial.snapshot();
    let (parallel_installed, parallel_versions) = parallel.snapshot();
    if parallel_versions != versions || !parallel_installed.is_subset(&installed) {
        return Err("parallel replay != serial replay".into());
    }
    if (p.records, p.replayed) != (s.records, s.replayed) {
        return Err(format!("summaries differ: {p:?} / {s:?}").into());
    }
    let mut replayed = Vec::new();
    let mut skipped = Vec::new();
    for &(ssn, blind) in values {
        let why = if ssn <= cut {
            "<= S"
        } else if ssn > rsne && !blind {
            "> RSNe, not blind"
        } else if ssn > rsne {
            "> RSNe, blind"
        } else {
            "<= RSNe"
        };
        let item = format!("{ssn} ({why})");
        if installed.contains(&ssn) {
            replayed.push(item);
        } else {
            skipped.push(item);
        }
    }
    let none = |v: Vec<String>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    let mut out = String::new();
    writeln!(out, "replayed: {}", none(replayed))?;
    writeln!(out, "not replayed: {}", none(skipped))?;
    for (key, (ssn, row)) in &versions {
        let key = String::from_utf8_lossy(key);
        match row {
            Some(row) => writeln!(out, "  {key} = {} (ssn {ssn})", String::from_utf8_lossy(row))?,
            None => writeln!(out, "  {key} deleted (ssn {ssn})")?,
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Engine scripts
// ---------------------------------------------------------------------------------------------

#[derive(goldenscript::Command)]
enum EngineCommand {
    Begin {
        #[arg(key)]
        buffer: Option<usize>,
    },
    Put(String, String),
    Delete(String),
    Get(String),
    Commit,
    Checkpoint,
    Scan,
    End,
    Rows,
}

struct EngineRunner {
    engine: txn::Engine,
    txns: HashMap<String, txn::Transaction>,
    cut: Option<txn::CheckpointCut>,
}

impl Default for EngineRunner {
    fn default() -> Self {
        let engine = txn::Engine::new(Arc::new(wal::Log::new(2)));
        engine.create_table(txn::TableId(TABLE), vec![]);
        EngineRunner { engine, txns: HashMap::new(), cut: None }
    }
}

/// The transaction named by a command's prefix.
fn txn<'a>(
    txns: &'a mut HashMap<String, txn::Transaction>,
    name: &Option<String>,
) -> Result<&'a mut txn::Transaction, Box<dyn Error>> {
    let name = name.as_ref().ok_or("a transaction command needs a `T:` prefix")?;
    txns.get_mut(name).ok_or_else(|| format!("no transaction {name}").into())
}

impl goldenscript::Runner for EngineRunner {
    type Command = EngineCommand;

    fn run(
        &mut self,
        command: &EngineCommand,
        context: &goldenscript::Context,
    ) -> Result<String, Box<dyn Error>> {
        let table = txn::TableId(TABLE);
        let mut out = String::new();
        let name = context.prefix.clone();
        let txns = &mut self.txns;
        match command {
            EngineCommand::Begin { buffer } => {
                let name = name.clone().ok_or("begin needs a `T:` prefix")?;
                let t = self.engine.begin(buffer.unwrap_or(0));
                txns.insert(name, t);
            }
            EngineCommand::Put(key, row) => {
                let t = txn(txns, &name)?;
                let row = row.as_bytes().to_vec();
                if t.get(table, key.as_bytes())?.is_some() {
                    t.update(table, key.as_bytes(), row)?;
                } else {
                    t.insert(table, key.as_bytes().to_vec(), row)?;
                }
            }
            EngineCommand::Delete(key) => txn(txns, &name)?.delete(table, key.as_bytes())?,
            EngineCommand::Get(key) => {
                let row = txn(txns, &name)?.get(table, key.as_bytes())?;
                let row = row.map_or("none".to_string(), |r| String::from_utf8_lossy(&r).into());
                writeln!(out, "{key} = {row}")?;
            }
            EngineCommand::Commit => {
                let name = name.clone().ok_or("commit needs a `T:` prefix")?;
                let t = txns.remove(&name).ok_or_else(|| format!("no transaction {name}"))?;
                let info = t.commit()?;
                let kind = if info.read_only { " (read-only)" } else { "" };
                writeln!(out, "committed at ssn {}{kind}", info.ssn)?;
            }
            EngineCommand::Checkpoint => {
                let cut = self.engine.begin_checkpoint()?;
                writeln!(out, "cut S={}", cut.ssn())?;
                self.cut = Some(cut);
            }
            EngineCommand::Scan => {
                let cut = self.cut.as_ref().ok_or("no checkpoint: use `checkpoint`")?;
                let mut seen: BTreeMap<Vec<u8>, (Ssn, Vec<u8>)> = BTreeMap::new();
                let mut clash = None;
                cut.scan(table, &mut |key, row, ssn| {
                    if let Some((s, r)) = seen.get(key) {
                        if (*s, r.as_slice()) != (ssn, row) {
                            clash = Some(String::from_utf8_lossy(key).into_owned());
                        }
                    }
                    seen.insert(key.to_vec(), (ssn, row.to_vec()));
                })?;
                if let Some(key) = clash {
                    return Err(format!("the scan reported two versions of {key}").into());
                }
                for (key, (ssn, row)) in &seen {
                    let (key, row) = (String::from_utf8_lossy(key), String::from_utf8_lossy(row));
                    writeln!(out, "{key} = {row} (ssn {ssn})")?;
                }
                if seen.is_empty() {
                    writeln!(out, "(no rows)")?;
                }
            }
            EngineCommand::End => {
                self.cut.take().ok_or("no checkpoint")?;
            }
            EngineCommand::Rows => {
                let mut t = self.engine.begin(0);
                let mut rows = Vec::new();
                let all = std::ops::Bound::Unbounded;
                t.scan(table, None, all, all, false, &mut |k, r| {
                    rows.push((k.to_vec(), r.to_vec()));
                    true
                })?;
                t.abort();
                for (key, row) in rows {
                    let (key, row) = (String::from_utf8_lossy(&key), String::from_utf8_lossy(&row));
                    writeln!(out, "{key} = {row}")?;
                }
            }
        }
        Ok(out)
    }
}
