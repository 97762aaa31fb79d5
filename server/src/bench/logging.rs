//! The logging suite: what value logging costs, against no logging at all.
//!
//! Configurations, each an engine with the bench table (default 100 k rows) over its own log:
//!
//! - **off**: `wal::Log::new(2)`, an in-memory log (SSNs are allocated; no record is encoded or
//!   written), `commit()`: the baseline;
//! - **tmpfs ×n, `commit`**: a real log (`wal::Log::open`, default options) on `n` directories in
//!   tmpfs, not waited for: the CPU cost of encoding, reserving, filling and writing the log;
//! - **tmpfs ×n, deferred ack**: the same log; each committer thread serves `--sessions`
//!   sessions and acknowledges a commit once it is durable without blocking in between; its
//!   records are requested in batches and before it blocks ([`Commit::Deferred`], what
//!   `server::ack` does for connections);
//! - **tmpfs ×n, `commit_durable`**: the same log, each commit blocking its thread until the
//!   acknowledge rule holds. `fdatasync` on tmpfs returns at once, so the devices are not the
//!   bottleneck: what is left is the cost of waiting (logger round trips, wake-ups);
//! - **disk ×n**, deferred and `commit_durable`: the same on `--disk-dir` (default `/tmp`),
//!   real `fdatasync`;
//! - **memory ×n**, deferred ack: the same log over devices in this process's memory
//!   (a write copies into a reused buffer, a sync does nothing), so the
//!   logging machinery (encoding, reservation, the loggers, DSN and CSN) without kernel I/O:
//!   what tmpfs adds on top of it is the kernel's part;
//! - **off, control (A/A)**: `off` again, on a table loaded after all the others. Two identical
//!   configurations differed by up to 5–6% in one process (RMW, 2026-11-26): its ratio is the
//!   resolution of every other one.
//!
//! Each is measured for the insert and the read-modify-write transaction of [`super::durable`]
//! with each committer count (default 2 = the cores, and 16, since `commit_durable` blocks).
//! Rounds interleave the configurations so that drift in the machine's load hits all of them.
//! After each measurement the log's closed segments are deleted (as a checkpoint would allow)
//! so that tmpfs does not fill up; on tmpfs the store recycles them (`wal::DirStore`), so the
//! next cells' new segments are these files, zeroed, as in a server that checkpoints.
//!
//! To profile one cell: run under `perf record -k mono` with `ASPEN_BENCH_CELL_TIMES=1`, which
//! prints each cell's window in `CLOCK_MONOTONIC` seconds, and give that window to
//! `perf report --time START,END`.

use std::collections::HashMap;

use super::durable::{drive, fs_of, uring_status, Bed, Cell, Commit, LogKind, Spread, Workload};
use super::{fmt_rate, load_average, BenchArgs, LoggingRow};

/// One row of the report: a log and how transactions commit on it.
struct Row {
    label: String,
    bed: usize,
    commit: Commit,
}

/// Runs the suite and returns its markdown section.
pub(super) fn run(args: &BenchArgs) -> Result<String, Box<dyn std::error::Error>> {
    let rows = args.rows.unwrap_or(100_000).max(1);
    let mut committers = args.committers_or(&[2, 16]);
    committers.sort_unstable();
    committers.dedup();
    let devices = args.devices_or(&[1, 2, 4]);
    let window = args.window_or(0.5);
    let warmup = (window / 5).max(std::time::Duration::from_millis(200));
    let load_before = load_average();
    let options = args.log_options();
    let gc = options.group_commit_delay.as_micros();
    let seg = options.device.segment_size >> 20;
    let (ring, inflight) = (options.ring_bytes >> 10, options.max_in_flight);

    let mut kinds = vec![("off".to_string(), LogKind::Off { buffers: 2 })];
    for &n in &devices {
        kinds.push((format!("tmpfs ×{n}"), LogKind::Dirs { base: args.tmpfs_dir.clone(), n }));
    }
    for &n in &devices {
        kinds.push((format!("disk ×{n}"), LogKind::Dirs { base: args.disk_dir.clone(), n }));
    }
    let wanted = |row: LoggingRow| args.logging_rows.is_empty() || args.logging_rows.contains(&row);
    if wanted(LoggingRow::MemoryDeferred) {
        for &n in &devices {
            kinds.push((format!("memory ×{n}"), LogKind::Memory { n }));
        }
    }
    // The A/A control: the baseline again, on a table loaded after all the others.
    let control_bed = kinds.len();
    kinds.push(("off, control".to_string(), LogKind::Off { buffers: 2 }));
    let mut beds = Vec::new();
    for (label, kind) in &kinds {
        eprintln!("logging: {label}: loading {rows} rows");
        beds.push(Bed::new(kind, rows, &options)?);
    }
    let sessions = args.sessions_or(64);
    let deferred = Commit::Deferred { sessions };
    let mut report_rows =
        vec![Row { label: "off (in-memory log)".into(), bed: 0, commit: Commit::NoWait }];
    for (first_bed, media, modes) in [
        (
            1,
            "tmpfs",
            [
                (LoggingRow::TmpfsNoWait, Commit::NoWait),
                (LoggingRow::TmpfsDeferred, deferred),
                (LoggingRow::TmpfsDurable, Commit::Durable),
            ]
            .as_slice(),
        ),
        (
            1 + devices.len(),
            "disk",
            [(LoggingRow::DiskDeferred, deferred), (LoggingRow::DiskDurable, Commit::Durable)]
                .as_slice(),
        ),
        (1 + 2 * devices.len(), "memory", [(LoggingRow::MemoryDeferred, deferred)].as_slice()),
    ] {
        for &(_, commit) in modes.iter().filter(|m| wanted(m.0)) {
            for (i, &n) in devices.iter().enumerate() {
                report_rows.push(Row {
                    label: format!("{media} ×{n}"),
                    bed: first_bed + i,
                    commit,
                });
            }
        }
    }

    let control_row = report_rows.len();
    report_rows.push(Row {
        label: "off, control (A/A)".into(),
        bed: control_bed,
        commit: Commit::NoWait,
    });
    let workloads = [Workload::Insert, Workload::Rmw];
    let mut cells: HashMap<(usize, Workload, usize), Vec<Cell>> = HashMap::new();
    // Fewer threads first: a process that has run many threads makes every later row store
    // slower (see BENCHMARKS.md, "Durability": arc-swap's debt list), so no measurement
    // follows one with more threads than its own.
    for &c in &committers {
        // Round 0 warms up and is not counted: a process's first windows (fresh pages for
        // the rows the inserts add, cold caches) measured off at a tenth of later rounds.
        for round in 0..=args.rounds {
            for workload in workloads {
                for (r, row) in report_rows.iter().enumerate() {
                    eprintln!(
                        "logging: round {round}: {} / {c} committers / {}, {}",
                        workload.label(),
                        row.label,
                        row.commit.label()
                    );
                    let bed = &beds[row.bed];
                    let cell = drive(bed, workload, row.commit, c, warmup, window, false)?;
                    eprintln!("logging:   {}", fmt_rate(cell.rate()));
                    bed.log.trim();
                    if round > 0 {
                        cells.entry((r, workload, c)).or_default().push(cell);
                    }
                }
            }
        }
    }

    let batch = crate::ack::REQUEST_BATCH;
    let mut out = format!(
        "### Logging overhead (in-process `txn` API)\n\n\
         {rows} rows (key 9 B, row 91 B; one value record of ~130 B per transaction); windows of \
         {:.1} s after {:.1} s of warm-up; {} rounds, interleaved, after one uncounted \
         warm-up round; the median is shown with \
         ± half the range of the rounds (as % of the median). `× off` = the median over the \
         rounds of the row's rate divided by `off`'s in the same round (a round runs its rows \
         back to back, so drift between rounds cancels), with the lowest and highest round. `CPU` = the whole process's CPU time over \
         the window as a share of both cores (loggers included); `cs/txn` = the process's context \
         switches per transaction; `B/pair` = log bytes per write+`fdatasync` pair (the \
         group-commit size, per device).\n\n\
         - off: `wal::Log::new(2)` — SSNs allocated, no record encoded or written, `commit()`.\n\
         - tmpfs ×n: `wal::Log` on `n` directories in `{}` ({}), `LogOptions` with a {ring} KiB \
         ring, up to {inflight} pairs in flight, group-commit timer {gc} µs, {seg} MiB segments (on tmpfs fallocated, and recycled once a cell's closed segments are deleted; zero-filled on disk); \
         log writes: {}. `fdatasync` on tmpfs returns at once: the devices are not the bottleneck.\n\
         - disk ×n: the same in `{}` ({}).\n\
         - commit modes: `commit` (no wait: the CPU cost of logging alone); deferred ack \
         ({} sessions per committer thread, each acknowledged once `Log::is_durable`, the thread \
         blocking only when all its sessions wait; records filled lazily and requested every \
         {batch} commits and before the thread blocks — the model of `server::ack`'s demand-driven \
         group commit); \
         `commit_durable` (the thread blocks until durable).\n\n\
         - off, control (A/A): `off` again on a second table, loaded after all the others: \
         its `× off` is what two identical configurations differ by in this process (table \
         placement, the machine's noise), the resolution of every other ratio.\n\n\
         Neither transaction is blind (an insert records its uniqueness check as a read), so \
         every acknowledgement waits until `ssn <= CSN` (all devices).\n",
        window.as_secs_f64(),
        warmup.as_secs_f64(),
        args.rounds,
        args.tmpfs_dir.display(),
        fs_of(&args.tmpfs_dir),
        uring_status(&args.tmpfs_dir),
        args.disk_dir.display(),
        fs_of(&args.disk_dir),
        sessions,
    );
    let mut summary = Vec::new();
    for workload in workloads {
        out.push_str(&format!("\n**{}**\n\n| log | commit |", workload.label()));
        for &c in &committers {
            out.push_str(&format!(" {c} thr: txn/s | × off | CPU | cs/txn | B/pair |"));
        }
        out.push_str("\n|---|---|");
        for _ in &committers {
            out.push_str("---:|---:|---:|---:|---:|");
        }
        out.push('\n');
        for (r, row) in report_rows.iter().enumerate() {
            out.push_str(&format!("| {} | {} |", row.label, row.commit.label()));
            for &c in &committers {
                let list = &cells[&(r, workload, c)];
                let spread = Spread::of(&list.iter().map(Cell::rate).collect::<Vec<_>>());
                let cpu = Spread::of(&list.iter().map(Cell::cpu_share).collect::<Vec<_>>());
                let cs =
                    Spread::of(&list.iter().map(Cell::switches_per_commit).collect::<Vec<_>>());
                // Paired by round: a round runs its rows back to back, so the machine's drift
                // between rounds cancels out of each round's ratio.
                let off = &cells[&(0, workload, c)];
                let paired = Spread::of(
                    &list.iter().zip(off).map(|(x, o)| x.rate() / o.rate()).collect::<Vec<_>>(),
                );
                let ratio = paired.median;
                let (pairs, bytes) =
                    list.iter().fold((0, 0), |a, x| (a.0 + x.pairs, a.1 + x.pair_bytes));
                let per_pair =
                    if pairs > 0 { fmt_rate(bytes as f64 / pairs as f64) } else { "—".into() };
                out.push_str(&format!(
                    " {} ±{:.0}% | {ratio:.2}× ({:.2}–{:.2}) | {:.0}% | {:.2} | {per_pair} |",
                    fmt_rate(spread.median),
                    spread.range_pct() / 2.0,
                    paired.min,
                    paired.max,
                    cpu.median * 100.0,
                    cs.median
                ));
                if row.label.starts_with("tmpfs") && row.commit != Commit::NoWait {
                    summary.push((
                        workload,
                        c,
                        format!("{}, {}", row.label, row.commit.label()),
                        ratio,
                    ));
                }
            }
            out.push('\n');
        }
    }
    out.push_str("\nTarget (issue 3): durable value logging on devices that are not the bottleneck ≥ 0.95× of logging off.\n\n");
    for workload in workloads {
        for &c in &committers {
            let best = summary
                .iter()
                .filter(|s| s.0 == workload && s.1 == c)
                .max_by(|a, b| a.3.total_cmp(&b.3));
            if let Some((_, _, label, ratio)) = best {
                let control = Spread::of(
                    &cells[&(control_row, workload, c)]
                        .iter()
                        .zip(&cells[&(0, workload, c)])
                        .map(|(x, o)| x.rate() / o.rate())
                        .collect::<Vec<_>>(),
                );
                out.push_str(&format!(
                    "- {}, {c} committers: best durable tmpfs configuration {label} at {ratio:.2}× — {} \
                     (A/A control: {:.2}×, {:.2}–{:.2})\n",
                    workload.label(),
                    if *ratio >= 0.95 { "met" } else { "**not met**" },
                    control.median,
                    control.min,
                    control.max,
                ));
            }
        }
    }
    out.push_str(&format!("\nLoad average before: {load_before}; after: {}.\n", load_average()));
    Ok(out)
}
