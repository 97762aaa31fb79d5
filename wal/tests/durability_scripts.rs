//! Goldenscripts for Poplar's durability rules (DESIGN.md §3): SSN allocation (I1, I2), the
//! acknowledge rule, CSN over devices, and idle-device markers. The scripts are in
//! `tests/scripts/`; regenerate their expected output with `UPDATE_GOLDENFILES=1` and review
//! the diff.
//!
//! Every device is a `wal::testing::MemDevice` behind a *gate*: the logger's `fdatasync` blocks
//! while the gate is held, so a script decides exactly when each device makes its writes
//! durable. Logger threads still run for real. After every command the runner waits until the
//! log has **settled** (each logger is either blocked at its held gate, or has made durable
//! everything it can: the filled prefix of its buffer and, if a CSN waiter wants more, a
//! marker), so the output does not depend on timing. A wait that settles without its
//! condition holding stays `waiting`; it is re-examined after each later command.
//!
//! While a transaction holds an unfilled reservation on a device, that device's logger waits
//! for the fill before it publishes the DSN of a pair it has already synced (wal's logger
//! closes the next segment before completing the previous pair), so the DSN shown then is the
//! one published before the reservation. Which earlier records it has already written (what
//! `durable` shows) can depend on how it grouped them, so the scripts look at the durable
//! records of such a device only when nothing before its first unfilled reservation is
//! waiting to be written.
//!
//! Commands (`T` names a transaction):
//!
//! - `log devices=N` — a new log with N devices, every gate held.
//! - `reserve T buffer=B [base=S] [blind=true]` — Algorithm 1 on buffer B; prints the SSN and
//!   the byte offset. The transaction holds the reservation until `fill` or `abort`.
//! - `fill T` — fills T's reservation with a value record (BLIND flag as reserved).
//! - `abort T` — drops T's reservation unfilled: the log writes an abort record.
//! - `commit T buffer=B [base=S] [blind=true]` — `reserve` then `fill`.
//! - `readonly T base=S` — a read-only transaction: SSN = base, nothing written.
//! - `wait T` — starts waiting for T's acknowledgement (`wait_durable`, or `wait_csn` for a
//!   read-only one) in a thread; prints `acknowledged` or `waiting`.
//! - `release device=D` / `hold device=D` — open / close D's gate.
//! - `sync device=D` — open D's gate until D has synced everything it can, then hold it.
//! - `raise ssn=S` — `Log::raise_all(S)`.
//! - `show` — per device `L.ssn` and DSN, CSN, and per transaction its ticket and whether
//!   `Log::is_durable` holds (and, once waited for, whether the wait returned).
//! - `durable` — the records each device would keep in a crash now (its synced bytes, read
//!   with `wal::SegmentReader`).

use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wal::testing::MemDevice;
use wal::{
    DeviceId, Log, LogDevice, LogOptions, ReadOptions, Record, RecordKind, SegmentNo,
    SegmentReader, Ssn, Ticket,
};

/// How long the runner waits for the log to settle before it reports a bug (a logger that
/// neither blocks nor makes progress, or a wait that does not return although it holds).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(20);

/// The payload of every value record: fixed, so offsets depend only on the record count.
const PAYLOAD: &[u8] = b"payload!";

macro_rules! scripts {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_script(stringify!($name));
            }
        )*

        /// Every script in `tests/scripts/` has a test above (none is silently skipped).
        #[test]
        fn every_script_runs() {
            check_listed(&[$(stringify!($name)),*]);
        }
    };
}

scripts!(ack_rule, alloc_i1_i2, idle_marker, read_only);

/// `tests/scripts` under `$CARGO_MANIFEST_DIR` as cargo sets it when it runs the test, else
/// under the directory this test was compiled in (a binary reused from a shared target
/// directory may have been compiled in another clone, since removed).
fn scripts_dir() -> std::path::PathBuf {
    let run = std::env::var_os("CARGO_MANIFEST_DIR").map(|d| Path::new(&d).join("tests/scripts"));
    run.filter(|d| d.is_dir())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts"))
}

fn run_script(name: &str) {
    let path = scripts_dir().join(format!("{name}.txt"));
    goldenscript::run(&mut Runner::default(), &path).expect("goldenscript failed");
}

fn check_listed(listed: &[&str]) {
    wal::testing::check_scripts_listed(&scripts_dir(), listed);
}

/// A gate in front of a device's `sync`: held, a sync blocks until it is released.
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    open: bool,
    /// Syncs blocked at the gate right now.
    blocked: usize,
}

impl Gate {
    fn pass(&self) {
        let mut s = self.state.lock().expect("gate");
        s.blocked += 1;
        while !s.open {
            s = self.cv.wait(s).expect("gate");
        }
        s.blocked -= 1;
    }

    fn set_open(&self, open: bool) {
        self.state.lock().expect("gate").open = open;
        self.cv.notify_all();
    }

    /// A sync is blocked at the held gate: the logger can do nothing until it is released.
    fn holds_a_sync(&self) -> bool {
        let s = self.state.lock().expect("gate");
        !s.open && s.blocked > 0
    }

    fn is_open(&self) -> bool {
        self.state.lock().expect("gate").open
    }
}

/// A `MemDevice` whose syncs pass through a [`Gate`], and which remembers the SSN of the
/// last record written to it (the logger writes whole records).
#[derive(Debug)]
struct GatedDevice {
    mem: Arc<MemDevice>,
    gate: Arc<Gate>,
    written: Arc<Mutex<Ssn>>,
}

impl LogDevice for GatedDevice {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        let mut pos = 0;
        while let Ok(Some((record, len))) = Record::decode(&bytes[pos..]) {
            let mut written = self.written.lock().expect("written");
            *written = (*written).max(record.ssn);
            pos += len;
        }
        self.mem.write_at(offset, bytes)
    }
    fn sync(&self) -> std::io::Result<()> {
        self.gate.pass();
        self.mem.sync()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.mem.read_at(offset, buf)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.mem.len()
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.mem.truncate(len)
    }
    fn allocate(&self, len: u64) -> std::io::Result<()> {
        self.mem.allocate(len)
    }
}

#[derive(goldenscript::Command)]
enum Command {
    Log {
        #[arg(key)]
        devices: usize,
    },
    Reserve {
        name: String,
        #[arg(key)]
        buffer: usize,
        #[arg(key, optional)]
        base: u64,
        #[arg(key, optional)]
        blind: bool,
    },
    Fill(String),
    Abort(String),
    Commit {
        name: String,
        #[arg(key)]
        buffer: usize,
        #[arg(key, optional)]
        base: u64,
        #[arg(key, optional)]
        blind: bool,
    },
    Readonly {
        name: String,
        #[arg(key)]
        base: u64,
    },
    Wait(String),
    Release {
        #[arg(key)]
        device: usize,
    },
    Hold {
        #[arg(key)]
        device: usize,
    },
    Sync {
        #[arg(key)]
        device: usize,
    },
    Raise {
        #[arg(key)]
        ssn: u64,
    },
    Show,
    Durable,
}

/// What a transaction's reservation is doing.
#[derive(Debug)]
enum Slot {
    /// Reserved and held by a worker thread until told to fill (`true`) or drop (`false`).
    Held {
        ctl: mpsc::Sender<bool>,
        worker: JoinHandle<()>,
    },
    Filled,
    Aborted,
    /// A read-only transaction: nothing reserved.
    ReadOnly,
}

#[derive(Debug)]
struct Txn {
    name: String,
    ticket: Ticket,
    slot: Slot,
    wait: Option<Waiter>,
}

impl Txn {
    fn read_only(&self) -> bool {
        matches!(self.slot, Slot::ReadOnly)
    }

    fn describe(&self) -> String {
        let t = self.ticket;
        if self.read_only() {
            format!("ssn={} read-only", t.ssn)
        } else {
            format!("ssn={} device={} blind={}", t.ssn, t.device, t.blind)
        }
    }
}

#[derive(Debug)]
struct Waiter {
    result: Arc<Mutex<Option<Result<(), String>>>>,
    handle: Option<JoinHandle<()>>,
}

impl Waiter {
    fn outcome(&self) -> Option<Result<(), String>> {
        self.result.lock().expect("waiter").clone()
    }
}

#[derive(Default)]
struct Runner {
    log: Option<Arc<Log>>,
    gates: Vec<Arc<Gate>>,
    mems: Vec<Arc<MemDevice>>,
    /// Per device, the SSN of the last record its logger wrote (synced or not).
    written: Vec<Arc<Mutex<Ssn>>>,
    txns: Vec<Txn>,
    /// The runner's model of the log's `wanted`: the largest SSN of a CSN wait that did not
    /// hold when it started. An idle device must write a marker up to it.
    wanted: Ssn,
}

impl goldenscript::Runner for Runner {
    type Command = Command;

    fn run(
        &mut self,
        command: &Command,
        _: &goldenscript::Context,
    ) -> Result<String, Box<dyn Error>> {
        let mut out = String::new();
        match command {
            Command::Log { devices } => self.new_log(*devices)?,
            Command::Reserve { name, buffer, base, blind } => {
                let reserved = self.reserve(name, *buffer, Ssn(*base), *blind)?;
                writeln!(out, "{name}: {reserved}")?;
            }
            Command::Fill(name) => self.finish(name, true)?,
            Command::Abort(name) => self.finish(name, false)?,
            Command::Commit { name, buffer, base, blind } => {
                let reserved = self.reserve(name, *buffer, Ssn(*base), *blind)?;
                self.finish(name, true)?;
                writeln!(out, "{name}: {reserved}")?;
            }
            Command::Readonly { name, base } => {
                self.check_new(name)?;
                let ticket = Ticket { ssn: Ssn(*base), device: DeviceId(0), blind: false };
                self.txns.push(Txn {
                    name: name.clone(),
                    ticket,
                    slot: Slot::ReadOnly,
                    wait: None,
                });
            }
            Command::Wait(name) => {
                self.wait(name)?;
                self.settle()?;
                writeln!(out, "{name}: {}", self.wait_status(name)?)?;
                return Ok(out);
            }
            Command::Release { device } => self.gate(*device)?.set_open(true),
            Command::Hold { device } => self.gate(*device)?.set_open(false),
            Command::Sync { device } => {
                let gate = self.gate(*device)?.clone();
                gate.set_open(true);
                self.settle()?;
                gate.set_open(false);
            }
            Command::Raise { ssn } => self.log()?.raise_all(Ssn(*ssn)),
            Command::Show => {
                self.settle()?;
                out.push_str(&self.show()?);
                return Ok(out);
            }
            Command::Durable => {
                self.settle()?;
                out.push_str(&self.durable()?);
                return Ok(out);
            }
        }
        self.settle()?;
        Ok(out)
    }

    /// At the end, every wait must return once every device may sync: nothing hangs.
    fn end_script(&mut self) -> Result<(), Box<dyn Error>> {
        self.close_log()
    }
}

/// The reservation line printed by `reserve` and `commit`.
struct Reserved {
    ssn: Ssn,
    buffer: usize,
    offset: u64,
}

impl std::fmt::Display for Reserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ssn={} buffer={} offset={}", self.ssn, self.buffer, self.offset)
    }
}

impl Runner {
    fn log(&self) -> Result<&Arc<Log>, Box<dyn Error>> {
        self.log.as_ref().ok_or_else(|| "no log: use `log devices=N` first".into())
    }

    fn gate(&self, device: usize) -> Result<&Arc<Gate>, Box<dyn Error>> {
        self.gates.get(device).ok_or_else(|| format!("no device {device}").into())
    }

    fn txn(&self, name: &str) -> Result<&Txn, Box<dyn Error>> {
        self.txns.iter().find(|t| t.name == name).ok_or_else(|| format!("no txn {name}").into())
    }

    fn txn_mut(&mut self, name: &str) -> Result<&mut Txn, Box<dyn Error>> {
        self.txns.iter_mut().find(|t| t.name == name).ok_or_else(|| format!("no txn {name}").into())
    }

    fn check_new(&self, name: &str) -> Result<(), Box<dyn Error>> {
        match self.txn(name) {
            Ok(_) => Err(format!("txn {name} exists").into()),
            Err(_) => Ok(()),
        }
    }

    fn new_log(&mut self, devices: usize) -> Result<(), Box<dyn Error>> {
        self.close_log()?;
        self.gates = (0..devices).map(|_| Arc::new(Gate::default())).collect();
        self.mems = (0..devices).map(|_| Arc::new(MemDevice::new())).collect();
        self.written = (0..devices).map(|_| Arc::default()).collect();
        let boxed = (0..devices)
            .map(|d| {
                Box::new(GatedDevice {
                    mem: self.mems[d].clone(),
                    gate: self.gates[d].clone(),
                    written: self.written[d].clone(),
                }) as Box<dyn LogDevice>
            })
            .collect();
        self.log = Some(Arc::new(Log::with_devices(boxed, &LogOptions::default())?));
        self.wanted = Ssn::ZERO;
        Ok(())
    }

    /// Aborts held reservations, opens every gate, waits for every waiter, drops the log.
    fn close_log(&mut self) -> Result<(), Box<dyn Error>> {
        if self.log.is_none() {
            return Ok(());
        }
        let held: Vec<String> = self
            .txns
            .iter()
            .filter(|t| matches!(t.slot, Slot::Held { .. }))
            .map(|t| t.name.clone())
            .collect();
        for name in held {
            self.finish(&name, false)?;
        }
        for gate in &self.gates {
            gate.set_open(true);
        }
        self.settle()?;
        for txn in &mut self.txns {
            let Some(wait) = &mut txn.wait else { continue };
            let handle = wait.handle.take().expect("joined once");
            let deadline = Instant::now() + SETTLE_TIMEOUT;
            while !handle.is_finished() {
                if Instant::now() > deadline {
                    return Err(format!("the wait of {} never returned", txn.name).into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            handle.join().map_err(|_| "waiter panicked")?;
            if let Some(Err(e)) = wait.outcome() {
                return Err(format!("the wait of {} failed: {e}", txn.name).into());
            }
        }
        self.txns.clear();
        let log = self.log.take().expect("checked");
        drop(Arc::into_inner(log).ok_or("the log is still shared")?);
        Ok(())
    }

    fn reserve(
        &mut self,
        name: &str,
        buffer: usize,
        base: Ssn,
        blind: bool,
    ) -> Result<Reserved, Box<dyn Error>> {
        self.check_new(name)?;
        let log = self.log()?.clone();
        if buffer >= log.n_buffers() {
            return Err(format!("no buffer {buffer}").into());
        }
        let (reserved_tx, reserved_rx) = mpsc::channel();
        let (ctl, ctl_rx) = mpsc::channel::<bool>();
        // The reservation borrows the log: a worker thread holds it until fill or abort.
        let worker = std::thread::spawn(move || {
            let r = log.reserve(buffer, base, Record::encoded_len_for(PAYLOAD.len()));
            reserved_tx.send((r.ssn, r.offset())).expect("runner alive");
            if ctl_rx.recv() == Ok(true) {
                r.fill_record(RecordKind::Value, blind, PAYLOAD);
            }
        });
        let (ssn, offset) = reserved_rx.recv_timeout(SETTLE_TIMEOUT)?;
        let ticket = Ticket { ssn, device: DeviceId(buffer as u16), blind };
        let slot = Slot::Held { ctl, worker };
        self.txns.push(Txn { name: name.to_string(), ticket, slot, wait: None });
        Ok(Reserved { ssn, buffer, offset })
    }

    fn finish(&mut self, name: &str, fill: bool) -> Result<(), Box<dyn Error>> {
        let txn = self.txn_mut(name)?;
        let done = if fill { Slot::Filled } else { Slot::Aborted };
        match std::mem::replace(&mut txn.slot, done) {
            Slot::Held { ctl, worker } => {
                ctl.send(fill)?;
                worker.join().map_err(|_| "reservation worker panicked")?;
                Ok(())
            }
            other => {
                txn.slot = other;
                Err(format!("{name} holds no reservation").into())
            }
        }
    }

    fn wait(&mut self, name: &str) -> Result<(), Box<dyn Error>> {
        let log = self.log()?.clone();
        let durable_now = {
            let txn = self.txn(name)?;
            if txn.wait.is_some() {
                return Err(format!("already waiting for {name}").into());
            }
            log.is_durable(txn.ticket)
        };
        let txn = self.txn_mut(name)?;
        let (ticket, read_only) = (txn.ticket, txn.read_only());
        // The log raises `wanted` for a CSN wait that does not hold yet (wal `Inner::wait`).
        let raises_wanted = !ticket.blind && !durable_now;
        let result = Arc::new(Mutex::new(None));
        let r = result.clone();
        let handle = std::thread::spawn(move || {
            let outcome =
                if read_only { log.wait_csn(ticket.ssn) } else { log.wait_durable(ticket) };
            *r.lock().expect("waiter") = Some(outcome.map_err(|e| e.to_string()));
        });
        txn.wait = Some(Waiter { result, handle: Some(handle) });
        if raises_wanted {
            self.wanted = self.wanted.max(ticket.ssn);
        }
        Ok(())
    }

    fn wait_status(&self, name: &str) -> Result<String, Box<dyn Error>> {
        let txn = self.txn(name)?;
        Ok(match txn.wait.as_ref().and_then(Waiter::outcome) {
            None if txn.wait.is_some() => "waiting".into(),
            None => "not waited for".into(),
            Some(Ok(())) => "acknowledged".into(),
            Some(Err(e)) => format!("failed: {e}"),
        })
    }

    /// The SSN up to which device `d`'s logger can write now: the last record of the filled
    /// prefix of the runner's reservations on buffer `d` (reservations are in SSN order, and so
    /// in byte order, I2). Also whether an unfilled reservation stops it there.
    fn filled_prefix(&self, d: usize) -> (Ssn, bool) {
        let mut on_d: Vec<&Txn> = self
            .txns
            .iter()
            .filter(|t| !t.read_only() && usize::from(t.ticket.device.0) == d)
            .collect();
        on_d.sort_by_key(|t| t.ticket.ssn);
        let mut last = Ssn::ZERO;
        for t in on_d {
            if matches!(t.slot, Slot::Held { .. }) {
                return (last, true);
            }
            last = t.ticket.ssn;
        }
        (last, false)
    }

    /// Waits until no logger can make progress on its own (module doc), then until every
    /// wait whose condition now holds has returned.
    fn settle(&mut self) -> Result<(), Box<dyn Error>> {
        let Some(log) = self.log.clone() else { return Ok(()) };
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let mut busy = Vec::new();
            for (d, gate) in self.gates.iter().enumerate() {
                if gate.holds_a_sync() {
                    continue;
                }
                let dsn = log.dsn(DeviceId(d as u16));
                let written = *self.written[d].lock().expect("written");
                let (prefix, stuck) = self.filled_prefix(d);
                let settled = if stuck {
                    // The logger waits for the fill of the unfilled reservation, and completes
                    // (publishes the DSN of) a synced pair only after that: it has settled once
                    // nothing it wrote is still unsynced. It writes no marker meanwhile, but a
                    // CSN wait above its DSN makes it reserve one behind the reservation before
                    // it closes the segment (raising L.ssn to `wanted`), which `show` prints:
                    // wait for that too, or the output depends on the logger's timing.
                    self.mems[d].unsynced_bytes() == 0
                        && (self.wanted <= dsn || log.buffer_ssn(d) >= self.wanted)
                } else {
                    dsn >= prefix && dsn >= written && dsn >= self.wanted
                };
                if !settled {
                    busy.push(format!(
                        "device {d}: DSN {dsn}, written {written}, filled prefix {prefix}, \
                         unfilled reservation {stuck}, wanted {}, gate {}",
                        self.wanted,
                        if gate.is_open() { "open" } else { "held" }
                    ));
                }
            }
            if busy.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("the log did not settle: {}", busy.join("; ")).into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        for txn in &self.txns {
            let Some(wait) = &txn.wait else { continue };
            if wait.outcome().is_some() || !log.is_durable(txn.ticket) {
                continue;
            }
            while wait.outcome().is_none() {
                if Instant::now() > deadline {
                    return Err(
                        format!("{} is durable but its wait did not return", txn.name).into()
                    );
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(())
    }

    fn show(&self) -> Result<String, Box<dyn Error>> {
        let log = self.log()?;
        let mut out = String::new();
        for d in 0..log.n_buffers() {
            let gate = if self.gates[d].is_open() { "released" } else { "held" };
            let dsn = log.dsn(DeviceId(d as u16));
            writeln!(out, "device {d}: L.ssn={} DSN={dsn} ({gate})", log.buffer_ssn(d))?;
        }
        writeln!(out, "CSN={}", log.csn())?;
        for txn in &self.txns {
            let state = match txn.slot {
                Slot::Held { .. } => " unfilled",
                Slot::Aborted => " aborted",
                Slot::Filled | Slot::ReadOnly => "",
            };
            let durable = log.is_durable(txn.ticket);
            let wait = match txn.wait {
                Some(_) => format!(" ({})", self.wait_status(&txn.name)?),
                None => String::new(),
            };
            writeln!(out, "{}: {}{state} durable={durable}{wait}", txn.name, txn.describe())?;
        }
        Ok(out)
    }

    fn durable(&self) -> Result<String, Box<dyn Error>> {
        let mut out = String::new();
        for (d, mem) in self.mems.iter().enumerate() {
            let image = MemDevice::with_bytes(mem.durable_bytes());
            let mut reader = SegmentReader::new(
                DeviceId(d as u16),
                vec![(SegmentNo(0), &image as &dyn LogDevice)],
                ReadOptions::default(),
            );
            let mut recs = Vec::new();
            while let Some(r) = reader.next_record()? {
                let kind = format!("{:?}", r.record.kind).to_lowercase();
                let blind = if r.record.blind { " blind" } else { "" };
                recs.push(format!("{} {kind}{blind}", r.record.ssn));
            }
            let recs = if recs.is_empty() { "(nothing)".to_string() } else { recs.join(", ") };
            writeln!(out, "device {d}: {recs}")?;
        }
        Ok(out)
    }
}
