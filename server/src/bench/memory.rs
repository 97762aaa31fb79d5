//! The memory suite: bytes per row of a TPC-C `customer` table.
//!
//! The table is created and loaded through the real SQL path (`sql::Database` in memory,
//! `Session::execute_simple` for DDL, a prepared multi-row `INSERT` with parameters for the
//! rows), with the secondary index TPC-C uses for customer-by-last-name lookups. Values follow
//! the TPC-C population rules (clause 4.3.3.1): random-length strings, `c_last` from the
//! syllable table, 10% bad credit.
//!
//! Bytes per row = (RSS after loading − RSS before) / rows, where RSS is this process's
//! resident set from `/proc/self/statm` and both readings are taken after the load buffers
//! were dropped. The raw row size is the sum of the values' natural sizes: 4 bytes per int,
//! 8 per float, numeric and timestamp, and the byte length of each string. Both readings are
//! also taken after the allocators returned their free pages (`mi_collect(true)`,
//! `malloc_trim(0)`), so memory the allocator holds but no longer uses (parse trees, parameter
//! vectors) is not counted as table memory; the untrimmed figure is reported as well.

use std::time::Instant;

use chrono::NaiveDateTime;
use sql::types::{cast, encode_row, CastKind, Numeric};
use sql::{Database, Session, Value};

use super::{fmt_rate, BenchArgs, Rng};

/// Rows per `INSERT` statement (21 parameters each).
const ROWS_PER_INSERT: usize = 100;
/// TPC-C: customers per district.
const CUSTOMERS_PER_DISTRICT: u64 = 3000;
/// TPC-C: districts per warehouse.
const DISTRICTS_PER_WAREHOUSE: u64 = 10;
/// TPC-C clause 4.3.2.3: the syllables of `c_last`.
const SYLLABLES: [&str; 10] =
    ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

const CREATE_TABLE: &str = "CREATE TABLE customer (
    c_w_id int NOT NULL,
    c_d_id int NOT NULL,
    c_id int NOT NULL,
    c_discount numeric(4,4),
    c_credit char(2),
    c_last varchar(16),
    c_first varchar(16),
    c_credit_lim numeric(12,2),
    c_balance numeric(12,2),
    c_ytd_payment float,
    c_payment_cnt int,
    c_delivery_cnt int,
    c_street_1 varchar(20),
    c_street_2 varchar(20),
    c_city varchar(20),
    c_state char(2),
    c_zip char(9),
    c_phone char(16),
    c_since timestamp,
    c_middle char(2),
    c_data varchar(500),
    PRIMARY KEY (c_w_id, c_d_id, c_id)
)";

const CREATE_INDEX: &str =
    "CREATE INDEX idx_customer_name ON customer (c_w_id, c_d_id, c_last, c_first)";

/// Columns of `customer`.
const COLUMNS: usize = 21;

/// Runs the suite and returns its markdown section.
pub(super) fn run(args: &BenchArgs) -> Result<String, Box<dyn std::error::Error>> {
    let rows = args.rows.unwrap_or(1_000_000).max(1);
    let db = Database::in_memory(2);
    let mut session = Session::new(db.clone(), &[]);
    for ddl in [CREATE_TABLE, CREATE_INDEX] {
        for result in session.execute_simple(ddl) {
            result?;
        }
    }
    let full = session.prepare(&insert_sql(ROWS_PER_INSERT), &[])?;
    let types = full.param_types.clone();

    let (before, before_untrimmed) = rss_bytes()?;
    eprintln!("memory: loading {rows} customer rows");
    let mut rng = Rng::new(0xC057);
    let since = chrono::Utc::now().naive_utc();
    let (mut raw_bytes, mut encoded_bytes) = (0u64, 0u64);
    let started = Instant::now();
    let mut next = 0;
    while next < rows {
        let batch = (rows - next).min(ROWS_PER_INSERT as u64) as usize;
        let tail;
        let stmt = if batch == ROWS_PER_INSERT {
            &full
        } else {
            tail = session.prepare(&insert_sql(batch), &[])?;
            &tail
        };
        let mut params = Vec::with_capacity(batch * COLUMNS);
        for i in next..next + batch as u64 {
            let values = customer(i, &mut rng, since);
            raw_bytes += raw_size(&values);
            let mut encoded = Vec::new();
            encode_row(&values, &mut encoded);
            encoded_bytes += encoded.len() as u64;
            params.extend(values);
        }
        let params = params
            .into_iter()
            .zip(types.iter().cycle())
            .map(|(v, ty)| {
                let from = v.data_type().expect("no NULLs in the generated rows");
                cast(v, &from, ty, CastKind::Assignment)
            })
            .collect::<Result<Vec<_>, _>>()?;
        session.execute_prepared(stmt, params)?;
        next += batch as u64;
    }
    let load = started.elapsed();
    drop(full);
    let (after, after_untrimmed) = rss_bytes()?;
    let count = count_rows(&mut session)?;
    if count != rows {
        return Err(format!("loaded {count} rows, expected {rows}").into());
    }

    let per_row = after.saturating_sub(before) as f64 / rows as f64;
    let per_row_untrimmed = after_untrimmed.saturating_sub(before_untrimmed) as f64 / rows as f64;
    let raw = raw_bytes as f64 / rows as f64;
    let encoded = encoded_bytes as f64 / rows as f64;
    drop(session);
    drop(db);
    Ok(format!(
        "### Memory (TPC-C `customer`)\n\n\
         {rows} rows of the 21-column TPC-C `customer` table (TPC-C random lengths; `c_data` \
         300–500 chars), primary key (c_w_id, c_d_id, c_id) and secondary index (c_w_id, \
         c_d_id, c_last, c_first), loaded through `sql::Session` with a prepared \
         {ROWS_PER_INSERT}-row INSERT in {:.1} s ({} rows/s). RSS from `/proc/self/statm`, \
         after the allocators returned their free pages (`mi_collect(true)`, `malloc_trim(0)`).\n\n\
         | measure | bytes per row | × raw |\n\
         |---|---:|---:|\n\
         | raw values (4 B per int; 8 B per float, numeric, timestamp; string lengths) | {raw:.0} | 1.00 |\n\
         | stored row format (`encode_row`) | {encoded:.0} | {:.2} |\n\
         | **RSS increase / rows** (table + both indexes) | **{per_row:.0}** | **{:.2}** |\n\
         | RSS increase / rows without trimming | {per_row_untrimmed:.0} | {:.2} |\n\n\
         The untrimmed figure is lower when earlier suites in the same process left freed \
         memory resident that this load reused; the trimmed one is the table's own footprint.\n\n\
         Target (issue 2): ≤ 2.00 × raw.\n",
        load.as_secs_f64(),
        fmt_rate(rows as f64 / load.as_secs_f64()),
        encoded / raw,
        per_row / raw,
        per_row_untrimmed / raw,
    ))
}

/// `INSERT INTO customer VALUES ($1, …, $21), …` with `rows` rows.
fn insert_sql(rows: usize) -> String {
    let mut sql = String::from("INSERT INTO customer VALUES ");
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..COLUMNS {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", r * COLUMNS + c + 1));
        }
        sql.push(')');
    }
    sql
}

fn count_rows(session: &mut Session) -> Result<u64, Box<dyn std::error::Error>> {
    let outputs = session.execute_simple("SELECT count(*) FROM customer");
    let out = outputs.into_iter().next().ok_or("no result for count(*)")??;
    match out.rows.first().and_then(|r| r.first()) {
        Some(Value::Int64(n)) => Ok(*n as u64),
        other => Err(format!("unexpected count(*) result {other:?}").into()),
    }
}

/// Customer number `i` (0-based) in TPC-C load order, with its natural value types.
fn customer(i: u64, rng: &mut Rng, since: NaiveDateTime) -> Vec<Value> {
    let c_id = i % CUSTOMERS_PER_DISTRICT + 1;
    let d_id = (i / CUSTOMERS_PER_DISTRICT) % DISTRICTS_PER_WAREHOUSE + 1;
    let w_id = i / (CUSTOMERS_PER_DISTRICT * DISTRICTS_PER_WAREHOUSE) + 1;
    // Clause 4.3.3.1: the first 1000 customers of a district take c_last from their id, the
    // rest from NURand(255, 0, 999).
    let last = if c_id <= 1000 { c_id - 1 } else { nurand(rng, 255, 0, 999) };
    let credit = if rng.range(1, 10) == 1 { "BC" } else { "GC" };
    vec![
        Value::Int32(w_id as i32),
        Value::Int32(d_id as i32),
        Value::Int32(c_id as i32),
        Value::Numeric(Numeric::from_i64_scaled(rng.range(0, 5000) as i64, 4)),
        Value::Text(credit.into()),
        Value::Text(last_name(last)),
        Value::Text(a_string(rng, 8, 16)),
        Value::Numeric(Numeric::from_i64_scaled(5_000_000, 2)),
        Value::Numeric(Numeric::from_i64_scaled(-1000, 2)),
        Value::Float64(10.0),
        Value::Int32(1),
        Value::Int32(0),
        Value::Text(a_string(rng, 10, 20)),
        Value::Text(a_string(rng, 10, 20)),
        Value::Text(a_string(rng, 10, 20)),
        Value::Text(letters(rng, 2)),
        Value::Text(format!("{}11111", n_string(rng, 4))),
        Value::Text(n_string(rng, 16)),
        Value::Timestamp(since),
        Value::Text("OE".into()),
        Value::Text(a_string(rng, 300, 500)),
    ]
}

/// The natural size of a row's values (see the module doc).
fn raw_size(values: &[Value]) -> u64 {
    values
        .iter()
        .map(|v| match v {
            Value::Array(items) => raw_size(items),
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int16(_) => 2,
            Value::Int32(_) | Value::Float32(_) | Value::Date(_) => 4,
            Value::Int64(_)
            | Value::Float64(_)
            | Value::Numeric(_)
            | Value::Timestamp(_)
            | Value::TimestampTz(_)
            | Value::Time(_) => 8,
            Value::Interval(_) | Value::Uuid(_) => 16,
            Value::Text(s) => s.len() as u64,
            Value::Bytea(b) => b.len() as u64,
            Value::Jsonb(j) => j.to_text().len() as u64,
            Value::Json(s) => s.len() as u64,
        })
        .sum()
}

/// TPC-C clause 2.1.6 NURand(A, x, y), with the load-time C constant fixed.
fn nurand(rng: &mut Rng, a: u64, x: u64, y: u64) -> u64 {
    const C: u64 = 157;
    (((rng.range(0, a) | rng.range(x, y)) + C) % (y - x + 1)) + x
}

fn last_name(n: u64) -> String {
    let n = n as usize;
    [SYLLABLES[n / 100], SYLLABLES[n / 10 % 10], SYLLABLES[n % 10]].concat()
}

/// TPC-C a-string: random alphanumeric characters, length uniform in `lo..=hi`.
fn a_string(rng: &mut Rng, lo: u64, hi: u64) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let len = rng.range(lo, hi);
    (0..len).map(|_| CHARS[rng.range(0, CHARS.len() as u64 - 1) as usize] as char).collect()
}

fn letters(rng: &mut Rng, len: u64) -> String {
    (0..len).map(|_| (b'A' + rng.range(0, 25) as u8) as char).collect()
}

/// TPC-C n-string: random digits.
fn n_string(rng: &mut Rng, len: u64) -> String {
    (0..len).map(|_| (b'0' + rng.range(0, 9) as u8) as char).collect()
}

/// `(trimmed, untrimmed)` resident set sizes in bytes: RSS as it stands, then after returning
/// the allocator's free memory to the kernel.
fn rss_bytes() -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let untrimmed = statm_rss()?;
    trim_allocator();
    Ok((statm_rss()?, untrimmed))
}

/// Resident pages (`/proc/self/statm`, second field) times the page size.
fn statm_rss() -> Result<u64, Box<dyn std::error::Error>> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm.split_whitespace().nth(1).ok_or("short /proc/self/statm")?.parse()?;
    Ok(pages * page_size())
}

fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant of the running system; it has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

/// Returns the allocators' free pages to the kernel: mimalloc's (the `aspen` binary's global
/// allocator) and glibc's (what C code, and a binary without mimalloc, allocate from).
fn trim_allocator() {
    // SAFETY: mi_collect only releases memory mimalloc holds but no block uses; it takes no
    // pointers and is safe to call whether or not mimalloc is the global allocator.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory; it is thread-safe and takes no
    // pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}
