//! A micro benchmark of `numeric` on the values TPC-C uses (`numeric(12,2)` balances and
//! amounts, `numeric(4,4)` rates), through the public `types` API so that it runs unchanged
//! against any representation. Run it from a release build:
//!
//! ```text
//! cargo test -p sql --release --lib numeric_micro_benchmark -- --ignored --nocapture
//! ```

use std::hint::black_box;
use std::time::Instant;

use catalog::DataType;

use crate::types::{
    arith, cast, compare, decode_row, encode_key, encode_row, format_text, parse_text, ArithOp,
    CastKind, Value,
};

const N: u32 = 2_000_000;

fn time(name: &str, mut f: impl FnMut(u32)) {
    for i in 0..N / 10 {
        f(i);
    }
    let start = Instant::now();
    for i in 0..N {
        f(i);
    }
    let ns = start.elapsed().as_nanos() as f64 / N as f64;
    println!("{name:<40} {ns:>8.1} ns/op");
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn numeric_micro_benchmark() {
    let ty = DataType::Numeric(None);
    let typed = DataType::Numeric(Some((12, 2)));
    let n = |s: &str| parse_text(s, &ty).unwrap();
    let balance = n("-10.00");
    let amounts: Vec<Value> = (0..64).map(|i| n(&format!("{}.{:02}", 1 + i * 77, i))).collect();
    let rate = n("0.1234");
    let qty = Value::Int32(7);
    time("parse_text numeric(12,2) '3001.25'", |_| {
        black_box(parse_text(black_box("3001.25"), &typed).unwrap());
    });
    time("c_balance - h_amount", |i| {
        black_box(arith(ArithOp::Sub, &balance, &amounts[(i & 63) as usize]).unwrap());
    });
    time("c_ytd + h_amount", |i| {
        black_box(arith(ArithOp::Add, &amounts[(i & 63) as usize], &balance).unwrap());
    });
    time("amount * rate", |i| {
        black_box(arith(ArithOp::Mul, &amounts[(i & 63) as usize], &rate).unwrap());
    });
    time("amount * int4 (promoted)", |i| {
        black_box(arith(ArithOp::Mul, &amounts[(i & 63) as usize], &qty).unwrap());
    });
    time("amount / 3", |i| {
        black_box(arith(ArithOp::Div, &amounts[(i & 63) as usize], &Value::Int32(3)).unwrap());
    });
    time("sum of 64 amounts (per add)", |i| {
        let mut acc = amounts[0].clone();
        if i % 64 == 0 {
            for a in &amounts[1..] {
                acc = arith(ArithOp::Add, &acc, a).unwrap();
            }
        }
        black_box(acc);
    });
    time("compare amounts", |i| {
        black_box(compare(&amounts[(i & 63) as usize], &amounts[((i + 1) & 63) as usize]));
    });
    time("assignment cast to numeric(12,2)", |i| {
        let v = arith(ArithOp::Sub, &balance, &amounts[(i & 63) as usize]).unwrap();
        black_box(cast(v, &ty, &typed, CastKind::Assignment).unwrap());
    });
    let mut buf = Vec::new();
    time("encode_row [numeric]", |i| {
        buf.clear();
        encode_row(std::slice::from_ref(&amounts[(i & 63) as usize]), &mut buf);
        black_box(&buf);
    });
    let rows: Vec<Vec<u8>> = amounts
        .iter()
        .map(|a| {
            let mut b = Vec::new();
            encode_row(std::slice::from_ref(a), &mut b);
            b
        })
        .collect();
    time("decode_row [numeric(12,2)]", |i| {
        black_box(decode_row(&rows[(i & 63) as usize], &[typed]).unwrap());
    });
    time("encode_key [numeric]", |i| {
        buf.clear();
        encode_key(std::slice::from_ref(&amounts[(i & 63) as usize]), &mut buf);
        black_box(&buf);
    });
    time("format_text numeric", |i| {
        black_box(format_text(&amounts[(i & 63) as usize], &ty));
    });
}
