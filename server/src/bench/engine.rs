//! The engine suite: the `txn` API in-process, no SQL.
//!
//! The table has an int8 primary key and a ~100-byte row `(k int8, v int8, pad text)`, both
//! encoded with `sql::types` as the SQL layer would store them. Each measurement runs every
//! thread for one window over uniformly random keys, with its own log buffer:
//!
//! - raw get: `get` calls inside one transaction that is dropped (aborted) after
//!   [`GETS_PER_TXN`] reads — the cost of a lookup alone, without begin or validation;
//! - read txn: `begin; get; commit` — a point read as a single-read transaction;
//! - RMW txn: `begin; get; decode; v += 1; encode; update; commit`, retried on conflict.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sql::types::{decode_row, encode_key, encode_row};
use sql::Value;

use super::{fmt_rate, BenchArgs, Rng};

/// The benchmark table's id.
pub(super) const TABLE: txn::TableId = txn::TableId(1);
/// Rows per transaction while loading.
const LOAD_BATCH: u64 = 1000;
/// Raw-get measurement: reads per (dropped) transaction, so the read set stays small.
const GETS_PER_TXN: u64 = 1000;
/// Length of the `pad` text that brings a row to ~100 bytes.
pub(super) const PAD_LEN: usize = 86;
/// Every worker checks the clock after this many transactions.
const CLOCK_EVERY: u64 = 64;

/// The column types of the row, for `decode_row`.
pub(super) fn row_types() -> [catalog::DataType; 3] {
    [catalog::DataType::Int64, catalog::DataType::Int64, catalog::DataType::Text]
}

pub(super) fn key(k: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    encode_key(&[Value::Int64(k as i64)], &mut out);
    out
}

pub(super) fn row(k: u64, v: i64, pad: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(PAD_LEN + 24);
    encode_row(&[Value::Int64(k as i64), Value::Int64(v), Value::Text(pad.to_string())], &mut out);
    out
}

/// What one workload did across all its threads.
struct Tally {
    ops: u64,
    conflicts: u64,
    elapsed: Duration,
    /// CPU time the workers got, summed (from `/proc/thread-self/schedstat`).
    cpu: Duration,
}

/// This thread's CPU time so far: the first field of `/proc/thread-self/schedstat`, in ns.
/// Zero where that file does not exist.
fn thread_cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

#[derive(Clone, Copy)]
enum Workload {
    RawGet,
    ReadTxn,
    Rmw,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Workload::RawGet => "raw `get` (1000 per txn, txn dropped)",
            Workload::ReadTxn => "point read txn (`begin; get; commit`)",
            Workload::Rmw => "read-modify-write txn (`get; update; commit`)",
        }
    }
}

/// Runs the suite and returns its markdown section.
pub(super) fn run(args: &BenchArgs) -> Result<String, Box<dyn std::error::Error>> {
    let rows = args.rows.unwrap_or(1_000_000).max(1);
    let max_threads = args.threads.iter().copied().max().unwrap_or(1);
    let engine = txn::Engine::new(Arc::new(wal::Log::new(max_threads)));
    engine.create_table(TABLE, vec![]);

    eprintln!("engine: loading {rows} rows");
    let pad = "x".repeat(PAD_LEN);
    let row_bytes = row(0, 0, &pad).len();
    let key_bytes = key(0).len();
    let started = Instant::now();
    let mut k = 1;
    while k <= rows {
        let mut t = engine.begin(0);
        let end = (k + LOAD_BATCH).min(rows + 1);
        for i in k..end {
            t.insert(TABLE, key(i), row(i, 0, &pad))?;
        }
        t.commit()?;
        k = end;
    }
    let load = started.elapsed();
    eprintln!("engine: loaded in {load:.1?}");

    let mut out = format!(
        "### Engine (in-process `txn` API)\n\n\
         {rows} rows, key {key_bytes} B (`encode_key` of an int8), row {row_bytes} B \
         (`encode_row` of int8, int8, text); uniform random keys; window {:.0} s per cell. \
         Loaded in {:.2} s ({} rows/s, {LOAD_BATCH} inserts per txn).\n\n\
         `ops/s per thread` divides wall-clock throughput by the threads; `ops per CPU-second` \
         divides the operations by the CPU time the workers actually got \
         (`/proc/thread-self/schedstat`), which is the fairer figure when other processes share \
         the cores (`CPU share` = CPU time / (window × threads)).\n\n\
         | workload | threads | ops/s total | ops/s per thread | ops per CPU-second | CPU share | conflicts |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        args.window().as_secs_f64(),
        load.as_secs_f64(),
        fmt_rate(rows as f64 / load.as_secs_f64()),
    );
    for workload in [Workload::RawGet, Workload::ReadTxn, Workload::Rmw] {
        for &threads in &args.threads {
            eprintln!("engine: {} with {threads} thread(s)", workload.label());
            let tally = measure(&engine, rows, workload, threads, args.window())?;
            let rate = tally.ops as f64 / tally.elapsed.as_secs_f64();
            let cpu = tally.cpu.as_secs_f64();
            let per_cpu = if cpu > 0.0 { fmt_rate(tally.ops as f64 / cpu) } else { "n/a".into() };
            let share = cpu / (tally.elapsed.as_secs_f64() * threads as f64);
            out.push_str(&format!(
                "| {} | {threads} | {} | {} | {per_cpu} | {:.0}% | {} |\n",
                workload.label(),
                fmt_rate(rate),
                fmt_rate(rate / threads as f64),
                share * 100.0,
                tally.conflicts,
            ));
        }
    }
    out.push_str(&format!(
        "\nRaw `get` includes the read-set entry each read adds and its release when the \
         transaction is dropped. Load average after the suite: {}.\n\n\
         Targets (issue 2, one thread): ≥ 1,000,000 point reads/s, ≥ 300,000 RMW txn/s.\n",
        super::load_average(),
    ));
    Ok(out)
}

/// Runs `workload` on `threads` threads for `window` and sums what they did.
fn measure(
    engine: &txn::Engine,
    rows: u64,
    workload: Workload,
    threads: usize,
    window: Duration,
) -> Result<Tally, txn::Error> {
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let conflicts = AtomicU64::new(0);
    let cpu_ns = AtomicU64::new(0);
    let started = Instant::now();
    let deadline = started + window;
    let result = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|id| {
                let (stop, ops, conflicts, cpu_ns) = (&stop, &ops, &conflicts, &cpu_ns);
                s.spawn(move || -> Result<(), txn::Error> {
                    let cpu_started = thread_cpu_time();
                    let mut rng = Rng::new(0x5EED + id as u64);
                    let (mut done, mut retried, mut steps) = (0, 0, 0u64);
                    // A raw-get step is already GETS_PER_TXN operations: check every step.
                    let check_every = match workload {
                        Workload::RawGet => 1,
                        Workload::ReadTxn | Workload::Rmw => CLOCK_EVERY,
                    };
                    let result = loop {
                        if steps % check_every == 0
                            && (stop.load(Ordering::Relaxed) || Instant::now() >= deadline)
                        {
                            break Ok(());
                        }
                        steps += 1;
                        let step = match workload {
                            Workload::RawGet => raw_gets(engine, id, rows, &mut rng),
                            Workload::ReadTxn => read_txn(engine, id, rows, &mut rng),
                            Workload::Rmw => rmw_txn(engine, id, rows, &mut rng, &mut retried),
                        };
                        match step {
                            Ok(n) => done += n,
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                break Err(e);
                            }
                        }
                    };
                    ops.fetch_add(done, Ordering::Relaxed);
                    conflicts.fetch_add(retried, Ordering::Relaxed);
                    let cpu = thread_cpu_time().saturating_sub(cpu_started);
                    cpu_ns.fetch_add(cpu.as_nanos() as u64, Ordering::Relaxed);
                    result
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench worker panicked"))
            .collect::<Result<Vec<()>, txn::Error>>()
    });
    let elapsed = started.elapsed();
    result?;
    Ok(Tally {
        ops: ops.into_inner(),
        conflicts: conflicts.into_inner(),
        elapsed,
        cpu: Duration::from_nanos(cpu_ns.into_inner()),
    })
}

fn random_key(rng: &mut Rng, rows: u64) -> Vec<u8> {
    key(rng.range(1, rows))
}

/// [`GETS_PER_TXN`] gets in one transaction, then dropped. Counts as that many operations.
fn raw_gets(engine: &txn::Engine, id: usize, rows: u64, rng: &mut Rng) -> Result<u64, txn::Error> {
    let mut t = engine.begin(id);
    let mut k = Vec::with_capacity(16);
    for _ in 0..GETS_PER_TXN {
        k.clear();
        encode_key(&[Value::Int64(rng.range(1, rows) as i64)], &mut k);
        let found = t.get(TABLE, &k)?;
        assert!(found.is_some(), "every key in 1..=rows was loaded");
    }
    t.abort();
    Ok(GETS_PER_TXN)
}

/// `begin; get; commit`.
fn read_txn(engine: &txn::Engine, id: usize, rows: u64, rng: &mut Rng) -> Result<u64, txn::Error> {
    let k = random_key(rng, rows);
    let mut t = engine.begin(id);
    let found = t.get(TABLE, &k)?;
    assert!(found.is_some(), "every key in 1..=rows was loaded");
    t.commit()?;
    Ok(1)
}

/// `begin; get; update (v + 1); commit`, retried on conflict (counted in `retried`).
fn rmw_txn(
    engine: &txn::Engine,
    id: usize,
    rows: u64,
    rng: &mut Rng,
    retried: &mut u64,
) -> Result<u64, txn::Error> {
    let k = random_key(rng, rows);
    let types = row_types();
    loop {
        let attempt = (|| {
            let mut t = engine.begin(id);
            let old = t.get(TABLE, &k)?.expect("every key in 1..=rows was loaded");
            let mut values = decode_row(&old, &types).expect("the bench wrote this row");
            if let Value::Int64(v) = &mut values[1] {
                *v += 1;
            }
            let mut new = Vec::with_capacity(old.len());
            encode_row(&values, &mut new);
            t.update(TABLE, &k, new)?;
            t.commit()
        })();
        match attempt {
            Ok(_) => return Ok(1),
            Err(txn::Error::Conflict { .. }) => *retried += 1,
            Err(e) => return Err(e),
        }
    }
}
