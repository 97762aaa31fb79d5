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
//! **What the pairs allow.** The bench times the log's write+sync pairs during each window,
//! from the pair's first write (or its io_uring submission) until the log learns that it is
//! durable. A commit arriving at moment `t` can only go out in a pair that starts after `t`,
//! and is durable once that pair and every pair started before it have ended: so it waits at
//! least `max(end of the pairs up to the first one starting after t) - t`, on its own device
//! (and more if it also waits for other devices, or misses that pair). These least waits over
//! a grid of moments, pooled over the devices (the sessions are spread evenly), are what a
//! commit called at a random moment could at best have had: the open loop's commits are
//! called at nearly random moments, so their distribution is close to or above this one (its
//! calls may thin out while a stall takes a core, which can leave its p99 a little below). A
//! p99 beyond 5× floor here means that the pairs as they ran left no room for the target.
//! Placing the same pairs' durations back to back, nothing between them, gives what a log with
//! one pair in flight and no overhead of its own would have allowed: the part of the bound
//! that is the disk's.
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
    drive, fs_of, quantile, uring_status, Bed, Cell, Commit, LogKind, PairTime, Scratch, Spread,
    Workload,
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

/// The target's limits (issue 3), in floors.
const P50_LIMIT: f64 = 2.0;
const P99_LIMIT: f64 = 5.0;

/// Spacing of the arrival moments at which [`least_waits`] evaluates a window.
const ARRIVAL_STEP_NS: u64 = 1_000;

/// The least a commit arriving at each moment of a grid over the window (every
/// [`ARRIVAL_STEP_NS`]) waits on a device, given that device's write+sync pairs (module doc,
/// "What the pairs allow"), appended to `out` in ns. `as_run`: the pairs where and when they
/// ran; otherwise their durations back to back from 0, one at a time (a log with one pair in
/// flight and no time between pairs). Moments after the last pair's start are left out.
fn least_waits(pairs: &[PairTime], as_run: bool, window_ns: u64, out: &mut Vec<u64>) {
    let mut timeline: Vec<PairTime> = pairs.to_vec();
    timeline.sort_by_key(|p| p.start);
    if !as_run {
        let mut at = 0;
        for p in &mut timeline {
            let len = p.len();
            *p = PairTime { start: at, end: at + len };
            at += len;
        }
    }
    // The DSN passes a pair only once every pair started before it has ended.
    let durable: Vec<u64> = timeline
        .iter()
        .scan(0, |m, p| {
            *m = p.end.max(*m);
            Some(*m)
        })
        .collect();
    let mut next = 0;
    let mut t = 0;
    while t < window_ns {
        while next < timeline.len() && timeline[next].start <= t {
            next += 1;
        }
        let Some(&durable) = durable.get(next) else { break };
        out.push(durable - t);
        t += ARRIVAL_STEP_NS;
    }
}

/// p50 and p99 of [`least_waits`] over every device of every cell, in floors.
fn least_quantiles<'a>(
    cells: impl Iterator<Item = &'a Cell>,
    as_run: bool,
    floor: f64,
) -> (f64, f64) {
    let mut waits = Vec::new();
    for cell in cells {
        let window = cell.window.as_nanos() as u64;
        for pairs in &cell.pair_times {
            least_waits(pairs, as_run, window, &mut waits);
        }
    }
    waits.sort_unstable();
    (quantile(&waits, 0.5) as f64 / floor, quantile(&waits, 0.99) as f64 / floor)
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
         write+`fdatasync` pairs over all devices; `pair p50 / p99` is how long they took. \
         `least (as run)` = p50 / p99 of the least wait of a commit arriving at a random moment \
         of the window, given the pairs as they ran (module doc: what the open loop's commits \
         could at best have had); `least (back to back)` = the same with the pairs' durations one after another, \
         nothing between them (what a log with one pair in flight and no overhead of its own \
         would have allowed on these pairs). `late` (open loop): how long after its scheduled \
         arrival each commit was called (its thread busy or held up); the latencies count from \
         the call, so a late call hides that part of its wait.\n\n\
         | devices | commit | threads | txn/s | pairs/s | B/pair | p50 ms | p99 ms | p99.9 ms | max ms | floor ms | p50 / floor | p99 / floor | pair p50 / p99 ms | least (as run) | least (back to back) | late p99 / max ms |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
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
            let cells = || list.iter().map(|(x, _)| x);
            let as_run = least_quantiles(cells(), true, floor);
            let back_to_back = least_quantiles(cells(), false, floor);
            let mut durations: Vec<u64> =
                cells().flat_map(|x| x.pair_times.iter().flatten().map(PairTime::len)).collect();
            durations.sort_unstable();
            let late = match commit {
                Commit::Open { .. } => {
                    let mut late: Vec<u64> = cells().flat_map(|x| x.late.iter().copied()).collect();
                    late.sort_unstable();
                    format!(
                        "{:.2} / {:.2}",
                        ms(quantile(&late, 0.99)),
                        ms(late.last().copied().unwrap_or(0))
                    )
                }
                _ => "—".to_string(),
            };
            out.push_str(&format!(
                "| {n} | {} | {c} | {} ±{:.0}% | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.2}× | {:.2} / {:.2} | {:.2}× / {:.2}× | {:.2}× / {:.2}× | {late} |\n",
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
                ms(quantile(&durations, 0.5)),
                ms(quantile(&durations, 0.99)),
                as_run.0,
                as_run.1,
                back_to_back.0,
                back_to_back.1,
            ));
            let ratios = (p50 as f64 / floor, p99 as f64 / floor);
            match commit {
                Commit::Deferred { sessions } => {
                    deferred.push((sessions, rate.median, ratios.0, ratios.1))
                }
                Commit::Open { per_second } => {
                    open.push((per_second, rate.median, ratios.0, ratios.1, as_run, back_to_back))
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
        if let Some(&(offered, rate, p50, p99, as_run, back_to_back)) =
            open.iter().find(|o| o.0 as f64 >= best / 2.0 && o.1 >= 0.9 * o.0 as f64)
        {
            let label = format!(
                "open loop, {} txn/s offered ({:.0}% of the best deferred throughput) (the pairs \
                 as they ran allowed no less than p50 {:.2}× / p99 {:.2}×; back to back, \
                 {:.2}× / {:.2}×)",
                fmt_rate(offered as f64),
                100.0 * rate / best.max(1e-9),
                as_run.0,
                as_run.1,
                back_to_back.0,
                back_to_back.1
            );
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
            if p50 <= P50_LIMIT { "met" } else { "**not met**" },
            if p99 <= P99_LIMIT { "met" } else { "**not met**" },
        ));
    }
    out.push_str(&format!("\nLoad average before: {load_before}; after: {}.\n", load_average()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(start_us: u64, end_us: u64) -> PairTime {
        PairTime { start: start_us * 1_000, end: end_us * 1_000 }
    }

    /// [`least_waits`] over a window of `window_us`, in µs.
    fn waits_us(pairs: &[PairTime], as_run: bool, window_us: u64) -> Vec<u64> {
        let mut waits = Vec::new();
        least_waits(pairs, as_run, window_us * 1_000, &mut waits);
        waits.into_iter().map(|ns| ns / 1_000).collect()
    }

    /// `end - t` for each µs `t` of `0..until`, where `end` is `first` before `split` and
    /// `second` from there.
    fn until_us(split: u64, first: u64, second: u64, until: u64) -> Vec<u64> {
        (0..until).map(|t| if t < split { first - t } else { second - t }).collect()
    }

    /// A commit arriving at `t` waits for the first pair starting after `t` and for every
    /// pair started before that one; back to back, the durations are laid end to end.
    #[test]
    fn least_waits_follow_the_next_pair() {
        let pairs = [pair(150, 300), pair(0, 100), pair(300, 320)];
        assert_eq!(waits_us(&pairs, true, 1_000), until_us(150, 300, 320, 300));
        // A pair that started earlier and ends later holds back the one after it.
        let overlapping = [pair(0, 500), pair(100, 200)];
        assert_eq!(waits_us(&overlapping, true, 1_000), until_us(100, 500, 500, 100));
        // Back to back: [0, 100), [100, 250), [250, 270).
        assert_eq!(waits_us(&pairs, false, 1_000), until_us(100, 250, 270, 250));
        // Only the window's moments count.
        assert_eq!(waits_us(&pairs, true, 10).len(), 10);
    }

    /// The quantiles pool every device of every cell and divide by the floor.
    #[test]
    fn least_quantiles_pool_the_devices() {
        let cell = Cell {
            window: Duration::from_micros(100),
            pair_times: vec![vec![pair(0, 10), pair(10, 20)], vec![]],
            ..Cell::default()
        };
        // Arrivals at 0..10 µs wait for the second pair: 20 - t µs, i.e. 11..=20 µs.
        let (p50, p99) = least_quantiles([cell].iter(), true, 1_000.0);
        assert!((10.0..=20.0).contains(&p50) && (19.0..=20.0).contains(&p99), "{p50} {p99}");
    }
}
