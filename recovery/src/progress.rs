//! What recovery reports while it runs ([`Progress`]) and when it ends ([`Summary`]).

use std::fmt;
use std::time::Duration;

use wal::Ssn;

/// A phase of recovery.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// [`crate::RecoveryPlan::scan`]: every device read to its end, RSNe computed.
    Scan,
    /// [`crate::replay`]: records selected and installed.
    Replay,
    /// [`crate::write_checkpoint`]: a cut's rows written to checkpoint files.
    Checkpoint,
    /// [`crate::load_checkpoint`]: a checkpoint's rows read and installed.
    Load,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Scan => "scan",
            Phase::Replay => "replay",
            Phase::Checkpoint => "checkpoint",
            Phase::Load => "load",
        })
    }
}

/// A progress report of one phase. Counters cover every record read (replayed or not).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Progress {
    /// The phase.
    pub phase: Phase,
    /// Log bytes (whole valid records) read so far in this phase.
    pub bytes_done: u64,
    /// Log bytes the phase reads in all (from the scan).
    pub bytes_total: u64,
    /// Records read so far in this phase.
    pub records_done: u64,
    /// Records the phase reads in all.
    pub records_total: u64,
    /// Time since the phase started.
    pub elapsed: Duration,
}

impl Progress {
    /// Bytes per second so far (0 before any time has passed).
    pub fn rate(&self) -> f64 {
        per_sec(self.bytes_done, self.elapsed)
    }

    /// Time left at the rate so far; `None` while the rate is unknown. Counted in bytes, or
    /// in records when the phase does not know its bytes in advance (`bytes_total` 0 while
    /// bytes are done, as when writing a checkpoint).
    pub fn eta(&self) -> Option<Duration> {
        let (done, total) = if self.bytes_total == 0 && self.bytes_done > 0 {
            (self.records_done, self.records_total)
        } else {
            (self.bytes_done, self.bytes_total)
        };
        let left = total.saturating_sub(done);
        if left == 0 {
            return Some(Duration::ZERO);
        }
        let rate = per_sec(done, self.elapsed);
        (rate > 0.0).then(|| Duration::from_secs_f64(left as f64 / rate))
    }
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recovery {}: {} of {} bytes, {} of {} records, {:.1} MB/s",
            self.phase,
            self.bytes_done,
            self.bytes_total,
            self.records_done,
            self.records_total,
            self.rate() / 1e6
        )?;
        match self.eta() {
            Some(eta) => write!(f, ", ETA {:.1} s", eta.as_secs_f64()),
            None => write!(f, ", ETA unknown"),
        }
    }
}

/// The summary of a recovery: time per phase and throughput.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Summary {
    /// Devices read.
    pub devices: usize,
    /// Install threads of the replay (1 for the serial replayer).
    pub threads: usize,
    /// The checkpoint cut `S` (records `<= S` are covered by it).
    pub cut: Ssn,
    /// RSNe: the minimum over devices of the largest durable SSN.
    pub rsne: Ssn,
    /// Time of the scan phase.
    pub scan: Duration,
    /// Time of the replay phase.
    pub replay: Duration,
    /// Log bytes (whole valid records) of every device; each phase reads them once.
    pub bytes: u64,
    /// Bytes of the spill files that replayed spilled records stand for (a large
    /// transaction's value payload is written to a file of its own and its record names it):
    /// read besides the log, and counted in the rates.
    pub spill_bytes: u64,
    /// Records read (every kind).
    pub records: u64,
    /// Records replayed: value records with `S < ssn <= RSNe`, or blind and `> S`.
    pub replayed: u64,
    /// Entries passed to [`crate::Target::install`].
    pub entries: u64,
}

impl Summary {
    /// Scan plus replay.
    pub fn total(&self) -> Duration {
        self.scan + self.replay
    }

    /// Log gigabytes (10^9 bytes, spill files included) per second over the whole recovery.
    pub fn gb_per_sec(&self) -> f64 {
        gbps(self.bytes + self.spill_bytes, self.total())
    }

    /// Log gigabytes (spill files included) per second of the replay phase alone.
    pub fn replay_gb_per_sec(&self) -> f64 {
        gbps(self.bytes + self.spill_bytes, self.replay)
    }
}

fn per_sec(n: u64, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

fn gbps(bytes: u64, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if secs > 0.0 {
        bytes as f64 / secs / 1e9
    } else {
        0.0
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recovered {} bytes{} from {} devices (S = {}, RSNe = {}): scan {:.3} s, replay {:.3} s \
             on {} threads ({:.2} GB/s), total {:.3} s ({:.2} GB/s); {} records read, {} replayed, \
             {} entries installed",
            self.bytes,
            if self.spill_bytes > 0 {
                format!(" and {} bytes of spill files", self.spill_bytes)
            } else {
                String::new()
            },
            self.devices,
            self.cut,
            self.rsne,
            self.scan.as_secs_f64(),
            self.replay.as_secs_f64(),
            self.threads,
            self.replay_gb_per_sec(),
            self.total().as_secs_f64(),
            self.gb_per_sec(),
            self.records,
            self.replayed,
            self.entries
        )
    }
}
