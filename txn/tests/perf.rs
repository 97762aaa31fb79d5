//! Rough single-thread throughput (ignored by default; run with
//! `cargo test -p txn --release --test perf -- --ignored --nocapture`).

use std::sync::Arc;
use std::time::Instant;
use txn::{Engine, TableId};

const T: TableId = TableId(1);

#[test]
#[ignore = "benchmark"]
fn point_reads_and_read_modify_write() {
    let rows = 1_000_000u64;
    let engine = Engine::new(Arc::new(wal::Log::new(2)));
    engine.create_table(T, vec![]);
    for chunk in (0..rows).collect::<Vec<_>>().chunks(10_000) {
        let mut t = engine.begin(0);
        for &i in chunk {
            t.insert(T, i.to_be_bytes().to_vec(), vec![0; 100]).unwrap();
        }
        t.commit().unwrap();
    }
    let mut x = 88172645463325252u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % rows).to_be_bytes()
    };
    let n = 1_000_000;
    let start = Instant::now();
    let mut hits = 0u64;
    for _ in 0..n {
        let mut t = engine.begin(0);
        t.scan(
            T,
            None,
            std::ops::Bound::Included(&next()),
            std::ops::Bound::Unbounded,
            false,
            &mut |_, _| false,
        )
        .unwrap();
        hits += 1;
        drop(t);
    }
    println!("scan-first/s: {:.0} ({hits})", n as f64 / start.elapsed().as_secs_f64());
    let start = Instant::now();
    let mut t = engine.begin(0);
    for i in 0..n {
        assert!(t.get(T, &next()).unwrap().is_some());
        if i % 100 == 99 {
            t.commit().unwrap();
            t = engine.begin(0);
        }
    }
    drop(t);
    let reads = n as f64 / start.elapsed().as_secs_f64();
    let n = 300_000;
    let start = Instant::now();
    for _ in 0..n {
        let k = next();
        let mut t = engine.begin(0);
        let mut row = t.get(T, &k).unwrap().unwrap().to_vec();
        row[0] = row[0].wrapping_add(1);
        t.update(T, &k, row).unwrap();
        t.commit().unwrap();
    }
    let rmw = n as f64 / start.elapsed().as_secs_f64();
    println!("point reads/s: {reads:.0}; read-modify-write txn/s: {rmw:.0}");
}
