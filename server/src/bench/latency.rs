//! The latency suite: how long `commit_durable` takes on real files, against what one
//! `fdatasync` of the same disk takes.
//!
//! 1. **The floor.** In a scratch directory under `--disk-dir` (default `/tmp`), a 64 MiB file
//!    is preallocated as the log preallocates its segments (zeros written and synced), then
//!    [`FLOOR_SAMPLES`] times: `pwrite` of 4 KiB (then 16 KiB) at the next offset and
//!    `fdatasync`, timed together (`wal::FileDevice::write_at` + `sync`). Its median is the
//!    floor: no commit can be durable faster than one such pair.
//! 2. **Commits.** A real log (`wal::Log`, default options) on `n` directories of the same
//!    disk (default 1 and 2); the read-modify-write transaction of [`super::durable`] with
//!    `commit_durable` on each committer count (default 1, 16, 64, 256: the higher ones are
//!    "high throughput"), and with deferred acknowledgement (one thread per core,
//!    `--latency-sessions` sessions each, default 4, 16 and 64: how a server acknowledges
//!    without a thread per commit). Every commit is timed from the commit call to its
//!    acknowledgement. Percentiles pool the rounds.
//!
//! 3. **An open loop** (`--latency-rates`, default 50 k, 100 k, 150 k, 200 k and 300 k txn/s
//!    offered): the same transactions arriving at a fixed rate, a Poisson process on each of
//!    the deferred rows' threads, watched as the server watches a connection's commit
//!    ([`Commit::Open`]).
//!
//! A closed loop of `k` sessions has a mean commit latency of about `k / throughput` (Little's
//! law; a session's few microseconds of execution between commits aside), whatever the log
//! does: 128 sessions at 300 000 txn/s wait about 0.43 ms each. So the verdict is taken, per
//! device count, at the deferred-acknowledgement row with the fewest sessions that still
//! reaches half of the best deferred throughput ("high throughput"); every row is shown.
//!
//! **Stalls.** The bench times the log's write+sync pairs during each window, from the pair's
//! first write (or its io_uring submission) until the log learns that it is durable. While a
//! pair lasts, a log with one pair in flight (what `wal::depth` keeps on a disk where
//! overlapping pairs do not pay) cannot start the pair that would carry a commit arriving now
//! on that device: the commit waits at least for the rest of the pair. So if a device's pairs
//! spent a share `s` of the window beyond 5× floor, at least `s` of the open-loop commits on
//! that device (Poisson arrivals fall anywhere in time) waited longer than 5× floor; the
//! `stalled` column reports `s` averaged over the devices (the sessions are spread evenly over
//! them), and with `s` ≥ 1% no log on that disk meets the p99 target in that window.
//!
//! The two loops see different things. A closed loop's sessions commit again as soon as they
//! are acknowledged, that is just after the next write+sync has started, so most commits wait
//! for that pair and one more: its p50 is near two pairs, so near two floors or above. It stops
//! committing while the log stalls, so a stall touches one commit per session and hardly moves
//! its p99. Open-loop commits fall anywhere in a pair's cycle (p50 near one and a half pairs),
//! and keep arriving through a stall, so its p99 shows the disk's hiccups. The open loop's
//! verdict row is the lowest offered rate that is at least half of the best deferred
//! throughput, if it kept up with it (within 10%).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use wal::LogDevice;

use super::durable::{
    drive, fs_of, quantile, uring_status, Bed, Cell, Commit, LogKind, Scratch, Spread, Workload,
};
use super::{fmt_rate, load_average, BenchArgs};

/// Timed `pwrite` + `fdatasync` pairs per size for the first floor measurement.
const FLOOR_SAMPLES: usize = 300;
/// Timed 4 KiB pairs right before each commit measurement.
const CELL_FLOOR_SAMPLES: usize = 100;
/// Size of the preallocated floor file.
const FLOOR_FILE: u64 = 64 << 20;

/// One commit measurement and the floor samples (ns) taken right before it.
type Measured = (Cell, Vec<u64>);

/// Percentiles of one floor measurement, in nanoseconds.
struct Floor {
    size: usize,
    p50: u64,
    p99: u64,
    mean: u64,
}

impl Floor {
    fn of(size: usize, mut samples: Vec<u64>) -> Floor {
        let mean = samples.iter().sum::<u64>() / samples.len().max(1) as u64;
        samples.sort_unstable();
        Floor { size, p50: quantile(&samples, 0.5), p99: quantile(&samples, 0.99), mean }
    }
}

/// A preallocated file in the directory under test, for timing write+sync pairs whenever the
/// suite needs the floor (before every commit measurement, since the disk's sync time drifts
/// with what else the machine writes).
struct FloorProbe {
    device: Box<dyn LogDevice>,
    offset: u64,
    _scratch: Scratch,
}

impl FloorProbe {
    /// Creates the file in a scratch directory under `dir` with `wal::open_device`, zero-filled
    /// and synced as the log's segments are. `Backend::File` times `pwrite` + `fdatasync`;
    /// `Backend::Uring` times an io_uring WRITE linked to FSYNC(DATASYNC), as the log writes.
    fn new(
        dir: &std::path::Path,
        backend: wal::Backend,
    ) -> Result<FloorProbe, Box<dyn std::error::Error>> {
        let scratch = Scratch::new(dir, "floor")?;
        let options = wal::DeviceOptions {
            segment_size: FLOOR_FILE,
            preallocate: wal::Preallocate::ZeroFill,
            backend,
            ..wal::DeviceOptions::default()
        };
        let device = wal::open_device(&scratch.path().join("floor.log"), &options)?.device;
        Ok(FloorProbe { device, offset: 0, _scratch: scratch })
    }

    /// Times `n` write+sync pairs of `size` bytes at the next offsets (wrapping).
    fn sample(&mut self, n: usize, size: usize) -> Result<Vec<u64>, Box<dyn std::error::Error>> {
        let block = vec![0x5Au8; size];
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            if self.offset + size as u64 > FLOOR_FILE {
                self.offset = 0;
            }
            let started = Instant::now();
            self.device.write_and_sync(self.offset, &block)?;
            samples.push(started.elapsed().as_nanos() as u64);
            self.offset += size as u64;
        }
        Ok(samples)
    }
}

/// The target's p99 limit, in floors.
const P99_LIMIT: f64 = 5.0;

/// The share of the cells' windows that their devices' write+sync pairs spent beyond `limit`
/// ns (module doc, "Stalls"): per cell the mean over its devices (a commit's record goes out
/// on its session's device, and the sessions are spread evenly), summed over the cells and
/// divided by their windows.
fn stalled_share<'a>(cells: impl Iterator<Item = &'a Cell>, limit: f64) -> f64 {
    let (mut beyond, mut window) = (0.0, 0.0);
    for cell in cells {
        let per_device = cell
            .pair_times
            .iter()
            .map(|times| times.iter().map(|&t| (t as f64 - limit).max(0.0)).sum::<f64>());
        let devices = cell.pair_times.len().max(1) as f64;
        beyond += per_device.sum::<f64>() / devices;
        window += cell.window.as_nanos() as f64;
    }
    if window > 0.0 {
        beyond / window
    } else {
        0.0
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Runs the suite and returns its markdown section.
pub(super) fn run(args: &BenchArgs) -> Result<String, Box<dyn std::error::Error>> {
    let rows = args.rows.unwrap_or(100_000).max(1);
    let committers = args.committers_or(&[1, 16, 64, 256]);
    let devices = args.devices_or(&[1, 2]);
    let window = args.window_or(2.0);
    let warmup = (window / 4).max(Duration::from_millis(300));
    let load_before = load_average();
    let options = args.log_options();
    let gc = options.group_commit_delay.as_micros();

    eprintln!("latency: measuring the fdatasync floor in {}", args.disk_dir.display());
    let mut probe = FloorProbe::new(&args.disk_dir, wal::Backend::File)?;
    // The same through io_uring (what the log does), alternating with the first probe in
    // blocks of 10 so that both see the same disk.
    let mut uring = FloorProbe::new(&args.disk_dir, wal::Backend::Uring).ok();
    let (mut file_4k, mut uring_4k) = (Vec::new(), Vec::new());
    for _ in 0..FLOOR_SAMPLES / 10 {
        file_4k.extend(probe.sample(10, 4 << 10)?);
        if let Some(u) = &mut uring {
            uring_4k.extend(u.sample(10, 4 << 10)?);
        }
    }
    let mut floors = vec![
        (Floor::of(4 << 10, file_4k), "`pwrite` + `fdatasync`, first"),
        (
            Floor::of(16 << 10, probe.sample(FLOOR_SAMPLES, 16 << 10)?),
            "`pwrite` + `fdatasync`, first",
        ),
    ];
    if uring.is_some() {
        floors.push((Floor::of(4 << 10, uring_4k), "io_uring WRITE → FSYNC(DATASYNC), first"));
    }
    // Every 4 KiB sample, including those taken before each measurement.
    let mut all_floor_samples = Vec::new();

    let mut beds = Vec::new();
    for &n in &devices {
        eprintln!("latency: disk ×{n}: loading {rows} rows");
        beds.push(Bed::new(&LogKind::Dirs { base: args.disk_dir.clone(), n }, rows, &options)?);
    }
    // (commit mode, committer threads): deferred acknowledgement on one thread per core, then
    // blocking committers, fewest threads first, each mode with all its rounds before the
    // next: a process that has run many threads makes every later row store slower (see
    // BENCHMARKS.md, "Durability": arc-swap's debt list), so no measurement follows one with
    // more threads than its own.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut sessions = args.latency_sessions.clone();
    sessions.retain(|&s| s > 0);
    sessions.sort_unstable();
    sessions.dedup();
    let mut committers = committers;
    committers.sort_unstable();
    committers.dedup();
    let mut rates = args.latency_rates.clone();
    rates.retain(|&r| r > 0);
    rates.sort_unstable();
    rates.dedup();
    let mut modes: Vec<(Commit, usize)> =
        sessions.iter().map(|&sessions| (Commit::Deferred { sessions }, cores)).collect();
    modes.extend(rates.iter().map(|&per_second| (Commit::Open { per_second }, cores)));
    modes.extend(committers.iter().map(|&c| (Commit::Durable, c)));
    let mut cells: HashMap<(usize, usize), Vec<Measured>> = HashMap::new();
    for (m, &(commit, threads)) in modes.iter().enumerate() {
        for round in 1..=args.rounds {
            for (i, &n) in devices.iter().enumerate() {
                eprintln!(
                    "latency: round {round}: {} / {threads} threads / disk ×{n}",
                    commit.label()
                );
                let floor = probe.sample(CELL_FLOOR_SAMPLES, 4 << 10)?;
                all_floor_samples.extend_from_slice(&floor);
                let cell = drive(&beds[i], Workload::Rmw, commit, threads, warmup, window, true)?;
                beds[i].log.trim();
                cells.entry((n, m)).or_default().push((cell, floor));
            }
        }
    }
    let pooled = Floor::of(4 << 10, all_floor_samples);

    let mut out = format!(
        "### Commit latency (real files)\n\n\
         Disk: `{}` ({}), log writes: {}. The floor: `pwrite` + `fdatasync` on a \
         preallocated, zero-filled 64 MiB file in the same directory: {FLOOR_SAMPLES} samples \
         per size first (4 KiB alternating, in blocks of 10, with the same pair through \
         io_uring on a second file, as the log writes), then {CELL_FLOOR_SAMPLES} samples of 4 KiB right before every commit \
         measurement (this disk is shared: its sync time moves with what else the machine \
         writes, so each measurement is compared with the floor taken next to it).\n\n\
         | floor | p50 ms | p99 ms | mean ms |\n|---|---:|---:|---:|\n",
        args.disk_dir.display(),
        fs_of(&args.disk_dir),
        uring_status(&args.disk_dir),
    );
    floors.push((pooled, "`pwrite` + `fdatasync`, before each measurement, pooled"));
    for (f, what) in &floors {
        out.push_str(&format!(
            "| {} KiB {what} | {:.2} | {:.2} | {:.2} |\n",
            f.size >> 10,
            ms(f.p50),
            ms(f.p99),
            ms(f.mean)
        ));
    }
    out.push_str(&format!(
        "\nCommits: the read-modify-write transaction on a log with `n` device directories in \
         the same file system (`LogOptions`: up to {} write+sync pairs in flight per device, as \
         many as pay on the disk (`wal::depth`), \
         group-commit timer {gc} µs), timed from the start of the commit call to the \
         acknowledgement: `commit_durable` returning (blocking committers), or the commit seen \
         durable (deferred ack: one thread per core, {} sessions each), or the commit's \
         watcher notified (open loop: one thread per core, Poisson arrivals at the offered \
         rate; its txn/s counts the commits that started in the window). {rows} rows; \
         windows of {:.1} s after {:.1} s of warm-up; {} rounds (throughput: median ± half the \
         range; percentiles: all rounds pooled). `floor` = p50 of the 4 KiB samples taken right \
         before this row's measurements; `/ floor` divides by it. `pairs/s` and `B/pair` count \
         write+`fdatasync` pairs over all devices. `stalled` = the share of the window that \
         the log's write+sync pairs spent beyond 5× floor (module doc: at one pair in flight, \
         an open-loop commit arriving then waits longer than 5× floor, whatever the log does; \
         so at 1% or more the p99 target cannot be met in that window).\n\n\
         | devices | commit | threads | txn/s | pairs/s | B/pair | p50 ms | p99 ms | p99.9 ms | max ms | floor ms | p50 / floor | p99 / floor | stalled |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        args.log_options().max_in_flight,
        sessions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        window.as_secs_f64(),
        warmup.as_secs_f64(),
        args.rounds,
    ));
    let mut verdicts = Vec::new();
    let top = committers.iter().max().copied().unwrap_or(1);
    for &n in &devices {
        // The deferred rows: (sessions, median txn/s, p50 / floor, p99 / floor).
        let mut deferred = Vec::new();
        let mut open = Vec::new();
        let mut blocking = Vec::new();
        for (m, &(commit, c)) in modes.iter().enumerate() {
            let list = &cells[&(n, m)];
            let rate = Spread::of(&list.iter().map(|(x, _)| x.rate()).collect::<Vec<_>>());
            let mut all: Vec<u64> =
                list.iter().flat_map(|(x, _)| x.latencies.iter().copied()).collect();
            all.sort_unstable();
            let mut near: Vec<u64> = list.iter().flat_map(|(_, f)| f.iter().copied()).collect();
            near.sort_unstable();
            let floor = quantile(&near, 0.5).max(1) as f64;
            let (p50, p99) = (quantile(&all, 0.5), quantile(&all, 0.99));
            let (pairs, bytes) =
                list.iter().fold((0, 0), |a, (x, _)| (a.0 + x.pairs, a.1 + x.pair_bytes));
            let secs: f64 = list.iter().map(|(x, _)| x.window.as_secs_f64()).sum();
            let stalled = stalled_share(list.iter().map(|(x, _)| x), P99_LIMIT * floor);
            out.push_str(&format!(
                "| {n} | {} | {c} | {} ±{:.0}% | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.2}× | {:.2}% |\n",
                commit.label(),
                fmt_rate(rate.median),
                rate.range_pct() / 2.0,
                fmt_rate(pairs as f64 / secs),
                fmt_rate(bytes as f64 / pairs.max(1) as f64),
                ms(p50),
                ms(p99),
                ms(quantile(&all, 0.999)),
                ms(all.last().copied().unwrap_or(0)),
                floor / 1e6,
                p50 as f64 / floor,
                p99 as f64 / floor,
                100.0 * stalled,
            ));
            let ratios = (p50 as f64 / floor, p99 as f64 / floor);
            match commit {
                Commit::Deferred { sessions } => {
                    deferred.push((sessions, rate.median, ratios.0, ratios.1))
                }
                Commit::Open { per_second } => {
                    open.push((per_second, rate.median, ratios.0, ratios.1, stalled))
                }
                _ if c == top => blocking.push((n, commit.label(), c, rate.median, ratios)),
                _ => {}
            }
        }
        let best = deferred.iter().map(|d| d.1).fold(0.0, f64::max);
        if let Some(&(s, rate, p50, p99)) = deferred.iter().find(|d| d.1 >= best / 2.0) {
            let label = format!(
                "deferred ack, {s} sessions/thread ({:.0}% of the best deferred throughput)",
                100.0 * rate / best.max(1e-9)
            );
            verdicts.push((n, label, cores, rate, (p50, p99)));
        }
        // The open loop at the lowest offered rate of at least half the best deferred
        // throughput (what the closed loop's verdict row reaches), if it kept up (within 10%).
        if let Some(&(offered, rate, p50, p99, stalled)) =
            open.iter().find(|o| o.0 as f64 >= best / 2.0 && o.1 >= 0.9 * o.0 as f64)
        {
            let mut label = format!(
                "open loop, {} txn/s offered ({:.0}% of the best deferred throughput)",
                fmt_rate(offered as f64),
                100.0 * rate / best.max(1e-9)
            );
            if stalled >= 0.01 {
                label.push_str(&format!(
                    " — pairs kept {:.2}% of its window beyond 5× floor: at one pair in flight, \
                     no log meets the p99 target there",
                    100.0 * stalled
                ));
            }
            verdicts.push((n, label, cores, rate, (p50, p99)));
        }
        verdicts.extend(blocking);
    }
    out.push_str(
        "\nTarget (issue 3), at high throughput: p50 ≤ 2× floor, p99 ≤ 5× floor. Verdict per \
         device count at the deferred-ack row with the fewest sessions reaching half of the \
         best deferred throughput (module doc: Little's law), at the open-loop row with the \
         lowest offered rate of at least half of that throughput (if it kept up), and at the \
         most blocking committers.\n\n",
    );
    for (n, label, c, rate, (p50, p99)) in verdicts {
        out.push_str(&format!(
            "- {n} device(s), {label}, {c} threads, {} txn/s: p50 = {p50:.2}× ({}), p99 = {p99:.2}× ({})\n",
            fmt_rate(rate),
            if p50 <= 2.0 { "met" } else { "**not met**" },
            if p99 <= P99_LIMIT { "met" } else { "**not met**" },
        ));
    }
    out.push_str(&format!("\nLoad average before: {load_before}; after: {}.\n", load_average()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the time beyond the limit counts, averaged over the devices and divided by the
    /// windows of all the cells.
    #[test]
    fn stalled_share_counts_the_time_beyond_the_limit() {
        let cell = |times: Vec<Vec<u64>>| Cell {
            window: Duration::from_nanos(1_000),
            pair_times: times,
            ..Cell::default()
        };
        let cells = [cell(vec![vec![10, 100, 250], vec![40]]), cell(vec![vec![], vec![]])];
        // Device 0: (100 - 50) + (250 - 50) = 250 ns; device 1: none; mean 125 over 2,000 ns.
        assert_eq!(stalled_share(cells.iter(), 50.0), 125.0 / 2_000.0);
        assert_eq!(stalled_share(cells[1..].iter(), 50.0), 0.0);
        assert_eq!(stalled_share([].iter(), 50.0), 0.0);
    }
}
