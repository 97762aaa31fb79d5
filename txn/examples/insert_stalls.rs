//! How long single inserts stall while a growing table's indexes grow.
//!
//! One thread inserts `N` (default 8 000 000) sequential keys into one table of an engine
//! with an in-memory log, one transaction per row, and times each transaction. It prints the
//! total, the median and 99.9th percentile, the longest, and how many took over a millisecond
//! (with the row counts where the longest happened): a table that grows all its hash shards
//! at once shows up as a run of long transactions at one row count.
//!
//! ```sh
//! cargo run --release -p txn --example insert_stalls [-- N]
//! ```

use std::sync::Arc;
use std::time::Instant;

fn main() {
    let n: u64 = std::env::args().nth(1).map_or(8_000_000, |s| s.parse().expect("a row count"));
    let engine = txn::Engine::new(Arc::new(wal::Log::new(1)));
    let table = txn::TableId(1);
    engine.create_table(table, vec![]);
    let mut took = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for k in 0..n {
        let t0 = Instant::now();
        let mut t = engine.begin(0);
        t.insert(table, k.to_be_bytes().to_vec(), vec![0u8; 40]).expect("a new key");
        t.commit().expect("no conflict on one thread");
        took.push(t0.elapsed().as_nanos() as u64);
    }
    let total = start.elapsed();
    let mut slow: Vec<(usize, u64)> =
        took.iter().copied().enumerate().filter(|&(_, ns)| ns > 1_000_000).collect();
    slow.sort_by_key(|&(_, ns)| std::cmp::Reverse(ns));
    let slow_ms = slow.iter().map(|&(_, ns)| ns).sum::<u64>() as f64 / 1e6;
    took.sort_unstable();
    let q = |f: f64| took[((took.len() - 1) as f64 * f) as usize];
    println!(
        "{n} inserts in {:.2} s: p50 {} ns, p99.9 {} ns, max {:.1} ms; {} over 1 ms, {slow_ms:.0} ms \
         in all; the longest at rows {:?}",
        total.as_secs_f64(),
        q(0.5),
        q(0.999),
        q(1.0) as f64 / 1e6,
        slow.len(),
        slow.iter().take(6).map(|&(row, _)| row).collect::<Vec<_>>()
    );
}
