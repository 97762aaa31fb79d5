//! Rough single-thread throughput (ignored by default: performance claims do not belong in unit
//! tests). Run with
//!
//! ```text
//! cargo test -p txn --release --test perf -- --ignored --nocapture
//! ```
//!
//! Each phase prints two rates: per wall-clock second, and per second of this thread's CPU time.
//! On a shared machine the wall rate drops with the load; the CPU rate is what one thread on a
//! core of its own would do (minus cache interference), so compare variants on the CPU rate and
//! run them side by side. Targets (issue 2): >= 1 M point reads/s and >= 300 k
//! read-modify-write txn/s on one thread, 1 M-row table.

use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};
use txn::{Engine, TableId};

const T: TableId = TableId(1);

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `f` (which performs `n` operations) and prints its wall and CPU rates; returns the CPU
/// rate. With `TXN_PERF_ONLY=word,...` set (for profiling one phase), phases whose name contains
/// none of the words are skipped (rate 0); the load always runs.
fn measure(name: &str, n: u64, f: impl FnOnce()) -> f64 {
    if let Ok(only) = std::env::var("TXN_PERF_ONLY") {
        if !name.starts_with("load") && !only.split(',').any(|w| name.contains(w)) {
            return 0.0;
        }
    }
    let (wall, cpu) = (Instant::now(), thread_cpu());
    f();
    let (wall, cpu) = (wall.elapsed().as_secs_f64(), (thread_cpu() - cpu).as_secs_f64());
    let (w, c) = (n as f64 / wall, n as f64 / cpu);
    println!(
        "{name:>28}: {w:>10.0}/s wall, {c:>10.0}/s cpu ({:.0}% of a core)",
        100.0 * cpu / wall
    );
    c
}

#[test]
#[ignore = "benchmark"]
fn point_reads_and_read_modify_write() {
    let rows = 1_000_000u64;
    let engine = Engine::new(Arc::new(wal::Log::new(2)));
    engine.create_table(T, vec![]);
    measure("load (insert, 10k/txn)", rows, || {
        for chunk in (0..rows).collect::<Vec<_>>().chunks(10_000) {
            let mut t = engine.begin(0);
            for &i in chunk {
                t.insert(T, i.to_be_bytes().to_vec(), vec![0; 100]).unwrap();
            }
            t.commit().unwrap();
        }
    });
    let mut x = 88172645463325252u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % rows).to_be_bytes()
    };

    let n = 1_000_000;
    let reads = measure("point reads (100/txn)", n, || {
        let mut t = engine.begin(0);
        for i in 0..n {
            assert!(t.get(T, &next()).unwrap().is_some());
            if i % 100 == 99 {
                t.commit().unwrap();
                t = engine.begin(0);
            }
        }
    });
    let rmw = measure("read-modify-write txns", 300_000, || {
        for _ in 0..300_000 {
            let k = next();
            let mut t = engine.begin(0);
            let mut row = t.get(T, &k).unwrap().unwrap().to_vec();
            row[0] = row[0].wrapping_add(1);
            t.update(T, &k, row).unwrap();
            t.commit().unwrap();
        }
    });
    measure("single-get txns", 500_000, || {
        for _ in 0..500_000 {
            let mut t = engine.begin(0);
            assert!(t.get(T, &next()).unwrap().is_some());
            t.commit().unwrap();
        }
    });
    measure("scan first row (LIMIT 1)", 500_000, || {
        for _ in 0..500_000 {
            let mut t = engine.begin(0);
            let k = next();
            t.scan(T, None, Bound::Included(&k), Bound::Unbounded, false, &mut |_, _| false)
                .unwrap();
            t.commit().unwrap();
        }
    });
    measure("scan 100 rows", 1_000_000, || {
        for _ in 0..10_000 {
            let mut t = engine.begin(0);
            let k = next();
            let mut left = 100;
            t.scan(T, None, Bound::Included(&k), Bound::Unbounded, false, &mut |_, _| {
                left -= 1;
                left > 0
            })
            .unwrap();
            t.commit().unwrap();
        }
    });
    println!(
        "TARGETS (cpu rates): point reads/s {reads:.0} (>= 1000000), read-modify-write txn/s \
         {rmw:.0} (>= 300000)"
    );
}
