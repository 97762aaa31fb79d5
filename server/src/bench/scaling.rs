//! The scaling suite: throughput against the number of log devices when the log, not the two
//! cores, is the bottleneck.
//!
//! Every device is a `wal::testing::ThrottledDevice` over a sink that keeps no bytes
//! (`durable::Sink`): an emulated disk of
//! `--device-mbps` (default 10 MB/s) whose `fdatasync` takes `--sync-us` (default 500 µs) after
//! its queued writes have finished. Two logs are built on `n` such devices:
//!
//! - **Poplar** (`wal::Log::with_devices`): `n` buffers, `n` loggers, `n` SSN sequences; committer
//!   `i` uses buffer `i mod n` (with deferred ack, its session `j` buffer `i · sessions + j mod
//!   n`); a commit waits for `ssn <= CSN = min DSN`.
//! - **centralized**: one buffer (one global SSN sequence, one latch, one logger) whose single
//!   device is a `wal::testing::StripedDevice` over the same `n` emulated devices: RAID-0 in
//!   `--stripe-kib` (default 4 KiB) stripes, each flush's stripes written to the members in
//!   parallel and every member synced in parallel (as a flush of an `md` RAID-0 array reaches
//!   every member). It has the same total bandwidth; what differs is one sequence and one
//!   write+sync pair at a time against `n` of them.
//!
//! `--device-model` chooses how an emulated device runs a write+sync pair: `pipelined` (the
//! default) sleeps through the transfer at submit and completes the pair `--sync-us` later, so
//! a logger with pairs in flight (`LogOptions::max_in_flight`) transfers the next pair while the
//! previous one syncs, as io_uring does on a disk that queues commands; `serial` runs the pair
//! at submit, so each logger alternates "write, sync" and the device idles through every sync.
//! Either way group commit batches whatever arrived in the meantime. The transactions of [`super::durable`] run two ways: blocking committers
//! (`--committers`, default 256 threads, each in `commit_durable`), and deferred
//! acknowledgement (one thread per core with `--sessions` sessions each, default 2048, so that
//! enough commits are in flight to keep the devices busy; more sessions make bigger groups,
//! which spend a smaller share of each device's time in its 500 µs syncs), once with that many
//! sessions on every device count and once with `--sessions` × devices ([`Mode::per_device`]).
//! The verdict lines say which share of the devices' bandwidth the 4-device row used: below
//! ~90%, the offered load, not the log, limited it.

use std::collections::HashMap;
use std::time::Duration;

use super::durable::{drive, quantile, Bed, Cell, Commit, Emulated, LogKind, Spread, Workload};
use super::{fmt_rate, load_average, BenchArgs};

/// Poplar or centralized.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Design {
    Poplar,
    Central,
}

/// How the committers of a table run.
struct Mode {
    commit: Commit,
    threads: usize,
    /// Deferred ack with `sessions × n` sessions per thread on `n` devices: the offered load
    /// grows with the devices, so that the log stays the bottleneck. A commit waits for every
    /// device's DSN (`CSN = min DSN`), so the commits in flight must cover each device's
    /// transfer and sync, and the slowest device's (Little's law); with a fixed number of
    /// sessions, more devices leave them partly idle.
    per_device: bool,
}

impl Mode {
    fn commit_for(&self, devices: usize) -> Commit {
        match self.commit {
            Commit::Deferred { sessions } if self.per_device => {
                Commit::Deferred { sessions: sessions * devices }
            }
            commit => commit,
        }
    }

    fn label(&self) -> String {
        match self.commit {
            Commit::Deferred { sessions } if self.per_device => {
                format!("deferred ack, {sessions} sessions/thread per device")
            }
            commit => commit.label(),
        }
    }
}

/// Runs the suite and returns its markdown section.
pub(super) fn run(args: &BenchArgs) -> Result<String, Box<dyn std::error::Error>> {
    let rows = args.rows.unwrap_or(20_000).max(1);
    let committers = args.committers_or(&[256]);
    let devices = args.devices_or(&[1, 2, 4, 8]);
    let window = args.window_or(1.5);
    let warmup = (window / 5).max(Duration::from_millis(300));
    let device = Emulated {
        bytes_per_sec: (args.device_mbps * 1e6) as u64,
        sync: Duration::from_micros(args.sync_us),
        model: args.device_model,
    };
    let unit = args.stripe_kib.max(1) << 10;
    let load_before = load_average();
    let options = args.log_options();
    let gc = options.group_commit_delay.as_micros();

    let mut beds: HashMap<(Design, usize), Bed> = HashMap::new();
    for &n in &devices {
        for design in [Design::Poplar, Design::Central] {
            eprintln!("scaling: {design:?} ×{n}: loading {rows} rows");
            let kind = match design {
                Design::Poplar => LogKind::Poplar { n, device },
                Design::Central => LogKind::Central { n, device, unit },
            };
            beds.insert((design, n), Bed::new(&kind, rows, &options)?);
        }
    }
    let workloads = [Workload::Rmw, Workload::Insert];
    let sessions = args.sessions_or(2048);
    // (commit mode, committer threads): deferred acknowledgement on one thread per core, then
    // blocking committers, fewest threads first, each mode with all its rounds before the
    // next: a process that has run many threads makes every later row store slower (see
    // BENCHMARKS.md, "Durability": arc-swap's debt list), so no measurement follows one with
    // more threads than its own.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut committers = committers;
    committers.sort_unstable();
    committers.dedup();
    let deferred = Commit::Deferred { sessions };
    let mut modes = vec![
        Mode { commit: deferred, threads: cores, per_device: false },
        Mode { commit: deferred, threads: cores, per_device: true },
    ];
    modes.extend(committers.iter().map(|&c| Mode {
        commit: Commit::Durable,
        threads: c,
        per_device: false,
    }));
    let mut cells: HashMap<(Design, usize, Workload, usize), Vec<Cell>> = HashMap::new();
    for (m, mode) in modes.iter().enumerate() {
        let threads = mode.threads;
        for round in 1..=args.rounds {
            for workload in workloads {
                for &n in &devices {
                    let commit = mode.commit_for(n);
                    for design in [Design::Poplar, Design::Central] {
                        eprintln!(
                            "scaling: round {round}: {} / {} / {threads} threads / {design:?} ×{n}",
                            workload.label(),
                            commit.label()
                        );
                        let bed = &beds[&(design, n)];
                        let cell = drive(bed, workload, commit, threads, warmup, window, true)?;
                        cells.entry((design, n, workload, m)).or_default().push(cell);
                    }
                }
            }
        }
    }

    let model = match args.device_model {
        super::durable::DeviceModel::Serial => "serial",
        super::durable::DeviceModel::Pipelined => "pipelined",
    };
    let mut out = format!(
        "### Device scaling (emulated devices, `commit_durable`)\n\n\
         Each device: `ThrottledDevice` over a sink that keeps no bytes, {} MB/s and {} µs per `fdatasync`, \
         {model} pairs (`--device-model`: `pipelined` overlaps a pair's sync with the next \
         pair's transfer, `serial` runs one pair at a time); group-commit timer {gc} µs. \
         **Poplar** = `n` buffers and loggers, one SSN sequence per device. **Centralized** = \
         one buffer, one global SSN sequence and one logger over a `StripedDevice` (RAID-0, \
         {} KiB stripes) of the same `n` devices: each flush is split over the members and \
         written in parallel, then every member is synced in parallel — the same bandwidth, \
         one sequence instead of `n`. {rows} rows; windows of {:.1} s after {:.1} s of \
         warm-up; {} rounds interleaved (median ± half the range). `of bw` = log bytes per \
         second against `n` × the device bandwidth; `B/pair` = average bytes per write+sync \
         pair (the group-commit size, per device for Poplar), with the share of pairs that \
         carried only an idle-device marker in parentheses; `CPU` = the process's CPU time \
         over the window as a share of both cores; `cs/txn` = the process's context switches \
         per acknowledged transaction; `p50 / p99` = commit → acknowledgement latency (all rounds \
         pooled); `L.ssn spread` = max − min of the buffers' `L.ssn` at the \
         end of the window (how far Poplar's per-device SSN sequences drifted apart; a \
         commit is acknowledged at `CSN = min DSN`).\n",
        args.device_mbps,
        args.sync_us,
        args.stripe_kib,
        window.as_secs_f64(),
        warmup.as_secs_f64(),
        args.rounds,
    );
    let mut verdicts = Vec::new();
    for workload in workloads {
        for (m, mode) in modes.iter().enumerate() {
            let threads = mode.threads;
            out.push_str(&format!(
                "\n**{}, {}, {threads} committer threads**\n\n\
                 | devices | Poplar txn/s | × 1 dev | of bw | B/pair | CPU | cs/txn | p50 / p99 ms | centralized txn/s | × 1 dev | of bw | B/pair | CPU | cs/txn | p50 / p99 ms | Poplar / centralized | Poplar `L.ssn` spread |\n\
                 |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                workload.label(),
                mode.label()
            ));
            let median = |d: Design, n: usize| {
                Spread::of(&cells[&(d, n, workload, m)].iter().map(Cell::rate).collect::<Vec<_>>())
            };
            let base = devices.iter().min().copied().unwrap_or(1);
            for &n in &devices {
                out.push_str(&format!("| {n} |"));
                for design in [Design::Poplar, Design::Central] {
                    let list = &cells[&(design, n, workload, m)];
                    let s = median(design, n);
                    let per_base = s.median / median(design, base).median;
                    let of_bw =
                        Spread::of(&list.iter().map(|x| x.log_mb_per_sec()).collect::<Vec<_>>())
                            .median
                            / (n as f64 * args.device_mbps);
                    let pairs: u64 = list.iter().map(|x| x.pairs).sum();
                    let pair_bytes: u64 = list.iter().map(|x| x.pair_bytes).sum();
                    let per_pair = pair_bytes.checked_div(pairs).unwrap_or(0);
                    let markers: u64 = list.iter().map(|x| x.marker_pairs).sum();
                    let marker_pct = markers as f64 * 100.0 / pairs.max(1) as f64;
                    let cpu =
                        Spread::of(&list.iter().map(Cell::cpu_share).collect::<Vec<_>>()).median;
                    let cs =
                        Spread::of(&list.iter().map(Cell::switches_per_commit).collect::<Vec<_>>())
                            .median;
                    let mut latencies: Vec<u64> =
                        list.iter().flat_map(|x| x.latencies.iter().copied()).collect();
                    latencies.sort_unstable();
                    out.push_str(&format!(
                        " {} ±{:.0}% | {per_base:.2}× | {:.0}% | {} ({marker_pct:.0}%) | {:.0}% | {cs:.1} | {:.1} / {:.1} |",
                        fmt_rate(s.median),
                        s.range_pct() / 2.0,
                        of_bw * 100.0,
                        fmt_rate(per_pair as f64),
                        cpu * 100.0,
                        quantile(&latencies, 0.5) as f64 / 1e6,
                        quantile(&latencies, 0.99) as f64 / 1e6,
                    ));
                    if design == Design::Poplar && n == 4 && base == 1 {
                        verdicts.push((workload, mode.label(), threads, per_base, of_bw));
                    }
                }
                let spread = Spread::of(
                    &cells[&(Design::Poplar, n, workload, m)]
                        .iter()
                        .map(|x| x.ssn_spread as f64)
                        .collect::<Vec<_>>(),
                );
                out.push_str(&format!(
                    " {:.2}× | {} |\n",
                    median(Design::Poplar, n).median / median(Design::Central, n).median,
                    fmt_rate(spread.median)
                ));
            }
        }
    }
    out.push_str("\nTarget (issue 3): with the log as the bottleneck, Poplar on 4 devices ≥ 3.5× Poplar on 1 device.\n\n");
    for (workload, mode, threads, ratio, of_bw) in verdicts {
        out.push_str(&format!(
            "- {}, {mode}, {threads} threads: 4 devices = {ratio:.2}× 1 device, using {:.0}% of \
             their bandwidth — {}\n",
            workload.label(),
            of_bw * 100.0,
            if ratio >= 3.5 { "met" } else { "**not met**" }
        ));
    }
    out.push_str(&format!("\nLoad average before: {load_before}; after: {}.\n", load_average()));
    Ok(out)
}
