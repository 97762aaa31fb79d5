//! The executor: runs plans against a transaction. Every node materialises its rows (OLTP
//! results are small and OCC reads everything before commit anyway). Statements stop for a
//! cancel or their timeout wherever a plan starts, between a join's left rows, and every 4096
//! rows a scan reads.

pub(crate) mod array;
pub(crate) mod builtin;
pub(crate) mod constraints;
pub use constraints::{FkTiming, PendingCheck};
mod jsonb;
mod to_char;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use catalog::{DataType, Table};
use chrono::NaiveDateTime;

use crate::error::{Error, Result};
use crate::plan::{
    Access, AggCall, AggFunc, Expr, Frame, FrameBound, FrameUnits, Func, JoinKind, JsonbFunc, Plan,
    SortKey, LOOKUP_BUDGET,
};
use crate::types::{self, ArithOp, CastKind, Numeric, Value};

/// Maximum rows a single generate_series may produce (keeps one statement's memory bounded).
pub const MAX_SERIES_ROWS: i64 = 10_000_000;

/// Per-statement execution context.
pub struct Ctx<'a> {
    /// The transaction.
    pub txn: &'a mut txn::Transaction,
    /// The engine (hidden row ids).
    pub engine: &'a txn::Engine,
    /// Bound parameter values.
    pub params: &'a [Value],
    /// Enclosing rows, innermost last.
    pub outer: Vec<Vec<Value>>,
    /// The session's clock, names and time zone.
    pub env: Env<'a>,
    /// The functions the session evaluates (sequences, advisory locks, `pg_backend_pid`);
    /// `None` where a plan cannot call them.
    pub session: Option<&'a dyn SessionFunctions>,
    /// Recursive WITH queries being evaluated.
    pub recursion: Recursion,
    /// When the statement must stop (`statement_timeout`), checked whenever a plan starts to
    /// run (a join's inner side for each outer row, a subquery for each row that evaluates
    /// it), between the rows of a join's outer side, the steps of a recursive query, and
    /// every 4096 rows a scan reads.
    pub deadline: Option<std::time::Instant>,
    /// The session's cancel flag ([`Session::cancel_flag`](crate::session::Session)), checked
    /// where the deadline is: set, the statement stops with `57014`.
    pub cancel: Option<&'a std::sync::atomic::AtomicBool>,
    /// The rows of the statement's uncorrelated subqueries, run once each (PostgreSQL's
    /// initplans), by the address of their plan; `None` for a subquery that reads the row
    /// evaluating it and runs again for each.
    pub initplans: HashMap<usize, Option<Arc<Vec<Vec<Value>>>>>,
    /// Rows the statement's scans have read so far (before their filters): what a hash join's
    /// [`Lookup`](crate::plan::Lookup) spends of its budget.
    pub rows_read: usize,
    /// Which deferrable foreign keys' checks wait for the commit in this transaction.
    pub fk_timing: FkTiming,
    /// The checks the statement left for the commit (deferred foreign keys): the session
    /// keeps them with its transaction.
    pub pending_checks: Vec<PendingCheck>,
}

impl<'a> Ctx<'a> {
    /// A context for work that is no client's statement — DDL filling or checking rows, the
    /// deferred checks at commit: no parameters, no session functions, no deadline or cancel
    /// flag, foreign keys checked at once.
    pub fn internal(
        txn: &'a mut txn::Transaction,
        engine: &'a txn::Engine,
        env: Env<'a>,
    ) -> Ctx<'a> {
        Ctx {
            txn,
            engine,
            params: &[],
            outer: vec![],
            env,
            session: None,
            recursion: Default::default(),
            deadline: None,
            cancel: None,
            initplans: Default::default(),
            rows_read: 0,
            fk_timing: Default::default(),
            pending_checks: Vec::new(),
        }
    }
}

/// The state of recursive WITH queries ([`Plan::RecursiveUnion`]) during a statement.
#[derive(Debug, Default)]
pub struct Recursion {
    /// Each running recursive union's current working table, and each data-modifying WITH
    /// query's RETURNING rows, by id.
    pub(crate) working: HashMap<usize, Vec<Vec<Value>>>,
    /// Rows a LIMIT directly above wants from the next recursive union (it stops there).
    goal: Option<usize>,
}

/// The most memory one join's result may take, estimated as its rows' vectors and values
/// (strings' own bytes not counted): Aspen keeps a statement's intermediate results in memory,
/// so a join that multiplies its inputs (a cross product, a join on a condition it cannot use)
/// must fail (54000) before it takes the server's memory. PostgreSQL would spill to disk.
pub const MAX_JOIN_BYTES: usize = 1 << 30;

/// The most rows one recursive WITH query may produce: a query that never stops must not take
/// the server's memory (PostgreSQL would run until it runs out, or until it is cancelled).
const MAX_RECURSIVE_ROWS: usize = 10_000_000;

/// What expressions read from the session rather than the rows: the transaction's timestamp,
/// the user and database names, and the `TimeZone` setting.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    /// Transaction timestamp (now()), UTC.
    pub now: NaiveDateTime,
    /// current_user.
    pub user: &'a str,
    /// current_database().
    pub database: &'a str,
    /// The session's time zone (`timestamptz` input, output and arithmetic).
    pub zone: types::Zone,
    /// The session's own parameter values (`current_setting`).
    pub settings: &'a BTreeMap<&'static str, String>,
    /// The server's, under the session's (the built-in defaults are `crate::session`'s).
    pub server_settings: &'a BTreeMap<&'static str, String>,
}

/// The functions whose state is the session's, not the rows' or the transaction's, so the
/// session evaluates them: the sequence functions (not transactional; `currval` is per
/// session), the advisory locks (held by the session or its transaction) and
/// `pg_backend_pid`. Sequences are named by the table and column that own them (the
/// arguments `Func::NextVal` carries).
pub trait SessionFunctions {
    /// `nextval`.
    fn nextval(&self, table: u32, position: u16) -> Result<i64>;
    /// `currval`: this session's last `nextval` of the sequence.
    fn currval(&self, table: u32, position: u16) -> Result<i64>;
    /// `setval`; returns `value`.
    fn setval(&self, table: u32, position: u16, value: i64, is_called: bool) -> Result<i64>;
    /// An advisory-lock function on `key` (`None` for `pg_advisory_unlock_all`). A wait
    /// calls `wait` between steps, which fails once the statement times out or is canceled.
    fn advisory(
        &self,
        call: crate::plan::AdvisoryCall,
        key: Option<crate::advisory::LockKey>,
        wait: &dyn Fn() -> Result<()>,
    ) -> Result<Value>;
    /// `pg_backend_pid()`.
    fn backend_pid(&self) -> i32;
}

/// The engine's id for a catalog table.
pub fn tid(table: &Table) -> txn::TableId {
    txn::TableId(table.id.0)
}

/// Column types of a table.
pub fn column_types(table: &Table) -> Vec<DataType> {
    table.columns.iter().map(|c| c.data_type).collect()
}

/// The primary key of a new row: its primary-key columns encoded, or, in a table without a
/// primary key, a fresh hidden row id that no row ever had.
pub struct NewKey {
    /// The encoded key.
    pub bytes: Vec<u8>,
    /// A hidden row id just drawn from the table's counter.
    pub fresh: bool,
}

/// Encodes the primary key of `row` (or a fresh hidden row id).
pub fn primary_key(table: &Table, row: &[Value], engine: &txn::Engine) -> NewKey {
    let mut key = Vec::with_capacity(16);
    let fresh = match table.primary_index() {
        Some(pk) => {
            let vals: Vec<Value> = pk.columns.iter().map(|c| row[*c as usize].clone()).collect();
            types::encode_key(&vals, &mut key);
            false
        }
        None => {
            types::encode_key(&[Value::Int64(engine.next_row_id(tid(table)) as i64)], &mut key);
            true
        }
    };
    NewKey { bytes: key, fresh }
}

/// Inserts a new row under `key` ([`primary_key`]): a fresh row id needs no uniqueness check
/// of the primary key ([`txn::Transaction::insert_fresh`]).
pub fn insert_row(
    txn: &mut txn::Transaction,
    table: &Table,
    key: NewKey,
    row: Vec<u8>,
) -> std::result::Result<(), txn::Error> {
    if key.fresh {
        txn.insert_fresh(tid(table), key.bytes, row)
    } else {
        txn.insert(tid(table), key.bytes, row)
    }
}

/// Whether the row `bytes` (of column `types`) meets a partial index's WHERE condition: its
/// evaluation is true (an error or NULL is not).
pub(crate) fn meets_index_predicate(predicate: &Expr, bytes: &[u8], types: &[DataType]) -> bool {
    let Ok(row) = types::decode_row(bytes, types) else { return false };
    let empty = BTreeMap::new();
    let env = Env {
        now: NaiveDateTime::default(),
        user: "",
        database: "",
        zone: types::Zone::UTC,
        settings: &empty,
        server_settings: &empty,
    };
    matches!(eval_pure(predicate, &row, &[], &[], &env), Ok(Value::Bool(true)))
}

/// The SQL type of a value (for casts whose source type the plan does not carry).
pub fn value_type(v: &Value) -> DataType {
    match v {
        Value::Null | Value::Text(_) => DataType::Text,
        Value::Bool(_) => DataType::Bool,
        Value::Int16(_) => DataType::Int16,
        Value::Int32(_) => DataType::Int32,
        Value::Int64(_) => DataType::Int64,
        Value::Float32(_) => DataType::Float32,
        Value::Float64(_) => DataType::Float64,
        Value::Numeric(_) => DataType::Numeric(None),
        Value::Date(_) => DataType::Date,
        Value::Timestamp(_) => DataType::Timestamp,
        Value::Bytea(_) => DataType::Bytea,
        Value::TimestampTz(_) => DataType::TimestampTz,
        Value::Interval(_) => DataType::Interval,
        Value::Uuid(_) => DataType::Uuid,
        Value::Jsonb(_) => DataType::Jsonb,
        Value::Json(_) => DataType::Json,
        Value::Time(_) => DataType::Time,
        Value::Array(_) => v.data_type().unwrap_or(DataType::Text),
    }
}

/// [`Error::QueryCanceled`] once `cancel` is set, [`Error::StatementTimeout`] once `deadline`
/// has passed.
fn interrupted(
    cancel: Option<&std::sync::atomic::AtomicBool>,
    deadline: Option<std::time::Instant>,
) -> Result<()> {
    if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
        return Err(Error::QueryCanceled);
    }
    match deadline {
        Some(d) if std::time::Instant::now() >= d => Err(Error::StatementTimeout),
        _ => Ok(()),
    }
}

/// `54000` once a join's result of `rows` rows of `row_bytes` each passes [`MAX_JOIN_BYTES`].
fn check_join_size(rows: usize, row_bytes: usize) -> Result<()> {
    if rows.saturating_mul(row_bytes) > MAX_JOIN_BYTES {
        return Err(Error::ProgramLimitExceeded {
            message: format!(
                "a join's result exceeded {} MB (Aspen keeps intermediate results in memory)",
                MAX_JOIN_BYTES >> 20
            ),
        });
    }
    Ok(())
}

/// A row with its primary key, as [`Ctx::scan`] returns them.
pub(crate) type KeyedRow = (Vec<u8>, Vec<Value>);

/// The target rows of UPDATE … FROM / DELETE … USING that meet the other tables' rows, and
/// the first row each meets ([`Ctx::join_others`]).
pub(crate) type JoinedTargets = (Vec<KeyedRow>, Vec<Vec<Value>>);

impl Ctx<'_> {
    /// A hash join's key of `row`: `keys` evaluated and encoded so that two keys are the same
    /// bytes exactly when every pair of values is `=` ([`types::encode_key_as`]: integers of
    /// any width alike, numerics by value, `char(n)` without trailing spaces). `false`, and no
    /// key, if a value is NULL.
    fn hash_key(
        &mut self,
        keys: &[Expr],
        bpchar: &[bool],
        row: &[Value],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        out.clear();
        for (k, &char_n) in keys.iter().zip(bpchar) {
            let v = self.eval(k, row)?;
            if matches!(v, Value::Null) {
                return Ok(false);
            }
            let ty = if char_n { DataType::Char(1) } else { DataType::Text };
            types::encode_key_as(std::slice::from_ref(&v), std::slice::from_ref(&ty), out);
        }
        Ok(true)
    }

    /// UPDATE … FROM / DELETE … USING: the target rows (`(key, row)` from [`Ctx::scan`]) that
    /// meet a row of the other tables, and for each the first row it meets.
    pub(crate) fn join_others(
        &mut self,
        targets: Vec<KeyedRow>,
        from: &crate::plan::JoinedFrom,
    ) -> Result<JoinedTargets> {
        let others = self.run(&from.plan)?;
        let mut table: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
        let mut key = Vec::new();
        let hashed = !from.from_keys.is_empty();
        if hashed {
            for (i, r) in others.iter().enumerate() {
                if self.hash_key(&from.from_keys, &from.bpchar, r, &mut key)? {
                    table.entry(std::mem::take(&mut key)).or_default().push(i);
                }
            }
        }
        let all: Vec<usize> = if hashed { Vec::new() } else { (0..others.len()).collect() };
        let (mut out, mut met_rows) = (Vec::new(), Vec::new());
        for (n, (k, row)) in targets.into_iter().enumerate() {
            if n % 1024 == 0 {
                self.check_deadline()?;
            }
            let candidates = if hashed {
                if !self.hash_key(&from.target_keys, &from.bpchar, &row, &mut key)? {
                    continue;
                }
                table.get(&key).map_or(&[][..], Vec::as_slice)
            } else {
                &all[..]
            };
            let mut met = None;
            for &i in candidates {
                if let Some(on) = &from.on {
                    let joined = [row.as_slice(), &others[i]].concat();
                    if self.eval(on, &joined)? != Value::Bool(true) {
                        continue;
                    }
                }
                met = Some(i);
                break;
            }
            if let Some(i) = met {
                out.push((k, row));
                met_rows.push(others[i].clone());
            }
        }
        Ok((out, met_rows))
    }

    /// One left row of a nested loop: `right` run under it, the concatenated rows that `on`
    /// accepts pushed to `out` (for a LEFT join, the row with NULLs if none).
    fn nested_loop_row(
        &mut self,
        l: Vec<Value>,
        right: &Plan,
        on: Option<&Expr>,
        kind: JoinKind,
        right_width: usize,
        out: &mut Vec<Vec<Value>>,
    ) -> Result<()> {
        self.outer.push(l.clone());
        let rrows = self.run(right);
        self.outer.pop();
        let mut matched = false;
        for r in rrows? {
            let mut row = l.clone();
            row.extend(r);
            if let Some(p) = on {
                if self.eval(p, &row)? != Value::Bool(true) {
                    continue;
                }
            }
            matched = true;
            out.push(row);
        }
        if !matched && kind == JoinKind::Left {
            let mut row = l;
            row.extend(std::iter::repeat_n(Value::Null, right_width));
            out.push(row);
        }
        Ok(())
    }

    /// `pg_sleep`: waits `seconds` (nothing for less than zero or NaN) in steps of at most 10
    /// ms, stopping with the statement's timeout or a cancel.
    fn sleep(&self, seconds: f64) -> Result<()> {
        if seconds.is_nan() || seconds <= 0.0 {
            return self.check_deadline();
        }
        use std::time::{Duration, Instant};
        // `None`: longer than an Instant reaches, i.e. until canceled.
        let until =
            Duration::try_from_secs_f64(seconds).ok().and_then(|d| Instant::now().checked_add(d));
        let step = Duration::from_millis(10);
        loop {
            self.check_deadline()?;
            let now = Instant::now();
            match until {
                Some(u) if now >= u => return Ok(()),
                Some(u) => std::thread::sleep((u - now).min(step)),
                None => std::thread::sleep(step),
            }
        }
    }

    /// [`Error::StatementTimeout`] once the statement's deadline has passed,
    /// [`Error::QueryCanceled`] once the session's cancel flag is set.
    fn check_deadline(&self) -> Result<()> {
        interrupted(self.cancel, self.deadline)
    }

    /// Runs a plan to completion.
    pub fn run(&mut self, plan: &Plan) -> Result<Vec<Vec<Value>>> {
        // Every run of a join's inner side or of a subquery passes here.
        self.check_deadline()?;
        match plan {
            Plan::Values { rows, .. } => {
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    let mut row = Vec::with_capacity(r.len());
                    for e in r {
                        row.push(self.eval(e, &[])?);
                    }
                    out.push(row);
                }
                Ok(out)
            }
            Plan::Scan { .. } => Ok(self.scan(plan)?.into_iter().map(|(_, r)| r).collect()),
            Plan::GenerateSeries { args, data_type } => self.generate_series(args, *data_type),
            Plan::Unnest { args, ordinality } => {
                let arrays = args.iter().map(|a| self.eval(a, &[])).collect::<Result<Vec<_>>>()?;
                array::unnest(&arrays, *ordinality)
            }
            Plan::JsonbRows { func, arg } => match self.eval(arg, &[])? {
                Value::Null => Ok(vec![]),
                Value::Jsonb(j) => jsonb::rows(*func, &j),
                Value::Json(s) => jsonb::json_rows(*func, &s),
                other => Err(Error::internal(format!("{} of {}", func.name(), other.type_name()))),
            },
            Plan::Filter { input, predicate } => {
                let rows = self.run(input)?;
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    if self.eval(predicate, &r)? == Value::Bool(true) {
                        out.push(r);
                    }
                }
                Ok(out)
            }
            Plan::Project { input, exprs } => {
                let rows = match projected_point_get(input, exprs) {
                    Some(used) => {
                        self.scan_with(input, Some(used))?.into_iter().map(|(_, r)| r).collect()
                    }
                    None => self.run(input)?,
                };
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    let mut row = Vec::with_capacity(exprs.len());
                    for e in exprs {
                        row.push(self.eval(e, &r)?);
                    }
                    out.push(row);
                }
                Ok(out)
            }
            Plan::NestedLoop { left, right, kind, on, right_width } => {
                let lrows = self.run(left)?;
                let mut out = Vec::new();
                let width = lrows.first().map_or(0, Vec::len) + right_width;
                let row_bytes = 48 + width * std::mem::size_of::<Value>();
                for l in lrows {
                    self.check_deadline()?;
                    check_join_size(out.len(), row_bytes)?;
                    self.nested_loop_row(l, right, on.as_ref(), *kind, *right_width, &mut out)?;
                }
                Ok(out)
            }
            Plan::HashJoin {
                left,
                right,
                kind,
                left_keys,
                right_keys,
                bpchar,
                on,
                right_width,
                lookup,
            } => {
                let lrows = self.run(left)?;
                let full = *kind == JoinKind::Full;
                if lrows.is_empty() && !full {
                    return Ok(lrows);
                }
                let left_width = crate::bind::width_of(left);
                let width = left_width + right_width;
                let row_bytes = 48 + width * std::mem::size_of::<Value>();
                let mut out = Vec::new();
                let mut lrows = lrows.into_iter().peekable();
                if let Some(lookup) = lookup {
                    // The nested loop serves left rows while its lookups stay cheap.
                    let mut budget = LOOKUP_BUDGET;
                    while budget > 0 {
                        let Some(l) = lrows.next() else { return Ok(out) };
                        self.check_deadline()?;
                        check_join_size(out.len(), row_bytes)?;
                        let before = self.rows_read;
                        self.nested_loop_row(
                            l,
                            &lookup.right,
                            lookup.on.as_ref(),
                            *kind,
                            *right_width,
                            &mut out,
                        )?;
                        budget = budget.saturating_sub(1 + self.rows_read - before);
                    }
                    if lrows.peek().is_none() {
                        return Ok(out);
                    }
                }
                let rrows = self.run(right)?;
                // FULL: which right rows met a left row.
                let mut met = vec![false; if full { rrows.len() } else { 0 }];
                // Right rows by key; a key with a NULL meets no row.
                let mut table: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
                let mut key = Vec::new();
                for (i, r) in rrows.iter().enumerate() {
                    if self.hash_key(right_keys, bpchar, r, &mut key)? {
                        table.entry(std::mem::take(&mut key)).or_default().push(i);
                    }
                }
                for (n, l) in lrows.enumerate() {
                    if n % 1024 == 0 {
                        self.check_deadline()?;
                    }
                    check_join_size(out.len(), row_bytes)?;
                    let mut matched = false;
                    if self.hash_key(left_keys, bpchar, &l, &mut key)? {
                        for &i in table.get(&key).map_or(&[][..], Vec::as_slice) {
                            let mut row = Vec::with_capacity(width);
                            row.extend_from_slice(&l);
                            row.extend_from_slice(&rrows[i]);
                            if let Some(p) = on {
                                if self.eval(p, &row)? != Value::Bool(true) {
                                    continue;
                                }
                            }
                            matched = true;
                            if full {
                                met[i] = true;
                            }
                            out.push(row);
                        }
                    }
                    if !matched && *kind != JoinKind::Inner {
                        let mut row = l;
                        row.extend(std::iter::repeat_n(Value::Null, *right_width));
                        out.push(row);
                    }
                }
                for (r, _) in rrows.into_iter().zip(met).filter(|(_, met)| !met) {
                    check_join_size(out.len(), row_bytes)?;
                    let mut row = Vec::with_capacity(width);
                    row.extend(std::iter::repeat_n(Value::Null, left_width));
                    row.extend(r);
                    out.push(row);
                }
                Ok(out)
            }
            Plan::Aggregate { input, group_by, aggs, sets } => {
                let rows = self.run(input)?;
                if sets.is_empty() {
                    return self.aggregate(&rows, group_by, aggs, group_by.is_empty());
                }
                // Grouping sets: the input aggregated once per set, the keys outside it NULL.
                let mut out = Vec::new();
                for set in sets {
                    let keys: Vec<Expr> =
                        group_by
                            .iter()
                            .enumerate()
                            .map(|(i, g)| {
                                if set.contains(&i) {
                                    g.clone()
                                } else {
                                    Expr::Literal(Value::Null)
                                }
                            })
                            .collect();
                    let mut set_rows = self.aggregate(&rows, &keys, aggs, set.is_empty())?;
                    for (j, call) in aggs.iter().enumerate() {
                        if call.func != AggFunc::Grouping {
                            continue;
                        }
                        let mask = grouping_mask(&call.grouping, set);
                        for r in &mut set_rows {
                            r[group_by.len() + j] = Value::Int32(mask);
                        }
                    }
                    out.extend(set_rows);
                }
                Ok(out)
            }
            Plan::Sort { input, keys } => {
                let rows = self.run(input)?;
                self.sort(rows, keys)
            }
            Plan::Distinct { input, on } => {
                let rows = self.run(input)?;
                let mut seen = HashSet::new();
                let mut out = Vec::new();
                for r in rows {
                    let mut k = Vec::new();
                    if on.is_empty() {
                        types::encode_key(&r, &mut k);
                    } else {
                        let values: Vec<Value> =
                            on.iter().map(|e| self.eval(e, &r)).collect::<Result<_>>()?;
                        types::encode_key(&values, &mut k);
                    }
                    if seen.insert(k) {
                        out.push(r);
                    }
                }
                Ok(out)
            }
            Plan::Window { input, calls } => {
                let mut rows = self.run(input)?;
                for call in calls {
                    let values = self.window(&rows, call)?;
                    for (row, v) in rows.iter_mut().zip(values) {
                        row.push(v);
                    }
                }
                Ok(rows)
            }
            Plan::SetOp { left, right, op, all } => {
                let left = self.run(left)?;
                let right = self.run(right)?;
                Ok(set_operation(left, right, *op, *all))
            }
            Plan::Limit { input, limit, offset } => {
                let limit = self.count_arg(limit.as_ref(), "LIMIT", "2201W")?;
                let offset = self.count_arg(offset.as_ref(), "OFFSET", "2201X")?.unwrap_or(0);
                // A recursive union under nothing but projections stops once it has the
                // rows this LIMIT takes (its rows come in step order, as in PostgreSQL).
                let feeds_recursion = |mut p: &Plan| loop {
                    match p {
                        Plan::Project { input, .. } | Plan::Truncate { input, .. } => p = input,
                        Plan::RecursiveUnion { .. } => return true,
                        _ => return false,
                    }
                };
                if let (Some(l), true) = (limit, feeds_recursion(input)) {
                    self.recursion.goal = Some((l as usize).saturating_add(offset as usize));
                }
                let rows = self.run(input)?;
                Ok(rows
                    .into_iter()
                    .skip(offset as usize)
                    .take(limit.map(|l| l as usize).unwrap_or(usize::MAX))
                    .collect())
            }
            Plan::RecursiveUnion { id, anchor, recursive, all } => {
                let goal = self.recursion.goal.take().unwrap_or(usize::MAX);
                let mut seen = HashSet::new();
                let mut fresh = |rows: Vec<Vec<Value>>| -> Vec<Vec<Value>> {
                    if *all {
                        return rows;
                    }
                    rows.into_iter()
                        .filter(|r| {
                            let mut k = Vec::new();
                            types::encode_key(r, &mut k);
                            seen.insert(k)
                        })
                        .collect()
                };
                let mut out = fresh(self.run(anchor)?);
                let mut step = out.clone();
                while !step.is_empty() && out.len() < goal {
                    self.check_deadline()?;
                    self.recursion.working.insert(*id, step);
                    let rows = self.run(recursive);
                    self.recursion.working.remove(id);
                    step = fresh(rows?);
                    out.extend(step.iter().cloned());
                    if out.len() > MAX_RECURSIVE_ROWS {
                        return Err(Error::ProgramLimitExceeded {
                            message: format!(
                                "recursive query produced more than {MAX_RECURSIVE_ROWS} rows"
                            ),
                        });
                    }
                }
                Ok(out)
            }
            Plan::WorkingTable { id, .. } => {
                Ok(self.recursion.working.get(id).cloned().unwrap_or_default())
            }
            Plan::Truncate { input, width } => {
                let mut rows = self.run(input)?;
                for r in &mut rows {
                    r.truncate(*width);
                }
                Ok(rows)
            }
        }
    }

    fn count_arg(
        &mut self,
        e: Option<&Expr>,
        what: &str,
        sqlstate: &'static str,
    ) -> Result<Option<i64>> {
        let Some(e) = e else { return Ok(None) };
        match self.eval(e, &[])? {
            Value::Null => Ok(None),
            Value::Int64(n) if n < 0 => Err(Error::InvalidRowCount {
                message: format!("{what} must not be negative"),
                sqlstate,
            }),
            Value::Int64(n) => Ok(Some(n)),
            other => Err(Error::internal(format!("{what} evaluated to {other:?}"))),
        }
    }

    /// Runs a Scan node, returning (primary key, row) pairs.
    pub fn scan(&mut self, plan: &Plan) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
        self.scan_with(plan, None)
    }

    /// [`Ctx::scan`]; `used`: the columns the rest of the plan reads, when known (a point get
    /// then records a projected read, `txn::Transaction::get_projected`).
    fn scan_with(
        &mut self,
        plan: &Plan,
        used: Option<Vec<usize>>,
    ) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
        let Plan::Scan { table, access, filter, reverse, limit, for_update } = plan else {
            return Err(Error::internal("scan() of a non-scan plan"));
        };
        let limit = self.count_arg(limit.as_ref(), "LIMIT", "2201W")?.map(|l| l as usize);
        if let Access::Each { access, slot, values } = access {
            // One scan per distinct value, in key order; NULL finds nothing.
            let items = match self.eval(values, &[])? {
                Value::Array(items) => items,
                Value::Null => return Ok(Vec::new()),
                other => return Err(Error::internal(format!("IN list of {}", other.type_name()))),
            };
            let mut distinct: Vec<(Vec<u8>, Value)> = items
                .iter()
                .filter(|v| !v.is_null())
                .map(|v| {
                    let mut k = Vec::new();
                    types::encode_key(std::slice::from_ref(v), &mut k);
                    (k, v.clone())
                })
                .collect();
            distinct.sort_by(|a, b| a.0.cmp(&b.0));
            distinct.dedup_by(|a, b| a.0 == b.0);
            // Two values may find one row (`'a'` and `'a '` in a char(n) key): once each.
            let mut out: Vec<(Vec<u8>, Vec<Value>)> = Vec::new();
            let mut seen: HashSet<Vec<u8>> = HashSet::new();
            if let Access::PointGet(keys) = &**access {
                // A point get per value, without a plan per value: the ORM's "rows by id".
                let types = column_types(table);
                let proj = used.map(|cols| projection(types.clone(), cols));
                let mut keys = keys.clone();
                for (_, v) in distinct {
                    *keys.get_mut(*slot).ok_or_else(|| Error::internal("IN list slot"))? =
                        Expr::Literal(v);
                    if let Some((key, row)) =
                        self.point_get(table, &keys, filter.as_ref(), *for_update, &types, &proj)?
                    {
                        push_distinct(&mut out, &mut seen, key, row);
                    }
                    if limit.is_some_and(|l| out.len() >= l) {
                        break;
                    }
                }
                return Ok(out);
            }
            for (_, v) in distinct {
                let mut one = (**access).clone();
                let key = match &mut one {
                    Access::Range { eq, .. } => eq.get_mut(*slot),
                    _ => None,
                };
                *key.ok_or_else(|| Error::internal("IN list slot"))? = Expr::Literal(v);
                let scan = Plan::Scan {
                    table: table.clone(),
                    access: one,
                    filter: filter.clone(),
                    reverse: *reverse,
                    limit: None,
                    for_update: *for_update,
                };
                for (key, row) in self.scan_with(&scan, used.clone())? {
                    push_distinct(&mut out, &mut seen, key, row);
                }
                if limit.is_some_and(|l| out.len() >= l) {
                    break;
                }
            }
            if let Some(l) = limit {
                out.truncate(l);
            }
            return Ok(out);
        }
        let types = column_types(table);
        let t = tid(table);
        let mut out: Vec<(Vec<u8>, Vec<Value>)> = Vec::new();
        match access {
            Access::PointGet(keys) => {
                let proj = used.map(|cols| projection(types.clone(), cols));
                out.extend(self.point_get(
                    table,
                    keys,
                    filter.as_ref(),
                    *for_update,
                    &types,
                    &proj,
                )?);
                return Ok(out);
            }
            Access::Each { .. } => unreachable!("handled above"),
            Access::Full | Access::Range { .. } => {
                let (index, lo, hi) = match access {
                    Access::Full => (None, Bound::Unbounded, Bound::Unbounded),
                    Access::Range { index, eq, lo, hi } => {
                        let cols: Vec<u16> = match index {
                            None => {
                                table.primary_index().map(|i| i.columns.clone()).unwrap_or_default()
                            }
                            Some(id) => table
                                .indexes
                                .iter()
                                .find(|i| i.id == *id)
                                .map(|i| i.columns.clone())
                                .unwrap_or_default(),
                        };
                        let Some(prefix_vals) = self.key_values(table, eq, &cols)? else {
                            return Ok(out);
                        };
                        let mut prefix = Vec::new();
                        types::encode_key(&prefix_vals, &mut prefix);
                        let next_col = cols.get(eq.len()).copied();
                        let bound_key = |this: &mut Self, e: &Expr| -> Result<Option<Vec<u8>>> {
                            let Some(col) = next_col else { return Ok(None) };
                            let Some(v) =
                                this.key_values(table, std::slice::from_ref(e), &[col])?
                            else {
                                return Ok(None);
                            };
                            let mut k = prefix.clone();
                            types::encode_key(&v, &mut k);
                            Ok(Some(k))
                        };
                        let lo_b = match lo {
                            None => Bound::Included(prefix.clone()),
                            Some((e, inclusive)) => match bound_key(self, e)? {
                                None => return Ok(out),
                                Some(k) if *inclusive => Bound::Included(k),
                                Some(k) => match successor(&k) {
                                    Some(s) => Bound::Included(s),
                                    None => return Ok(out),
                                },
                            },
                        };
                        let hi_b = match hi {
                            None => match successor(&prefix) {
                                Some(s) if !prefix.is_empty() => Bound::Excluded(s),
                                _ => Bound::Unbounded,
                            },
                            Some((e, inclusive)) => match bound_key(self, e)? {
                                None => return Ok(out),
                                Some(k) if *inclusive => match successor(&k) {
                                    Some(s) => Bound::Excluded(s),
                                    None => Bound::Unbounded,
                                },
                                Some(k) => Bound::Excluded(k),
                            },
                        };
                        (*index, lo_b, hi_b)
                    }
                    Access::PointGet(_) | Access::Each { .. } => unreachable!("handled above"),
                };
                let index = index.map(|i| txn::IndexId(i.0));
                let mut err = None;
                let filter = filter.as_ref();
                let lo_ref = match &lo {
                    Bound::Included(k) => Bound::Included(k.as_slice()),
                    Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                    Bound::Unbounded => Bound::Unbounded,
                };
                let hi_ref = match &hi {
                    Bound::Included(k) => Bound::Included(k.as_slice()),
                    Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                    Bound::Unbounded => Bound::Unbounded,
                };
                // The callback cannot borrow `self` mutably (the txn is borrowed by scan), so the
                // filter is evaluated with a restricted evaluator that needs no txn.
                let params = self.params;
                let outer = &self.outer;
                let env = self.env;
                let mut pending_filter_rows: Vec<(Vec<u8>, Vec<Value>)> = Vec::new();
                let needs_txn_filter = filter.map(needs_txn).unwrap_or(false);
                let mut read = 0;
                let (cancel, deadline) = (self.cancel, self.deadline);
                self.txn
                    .scan(t, index, lo_ref, hi_ref, *reverse, &mut |pk: &[u8], bytes: &txn::Row| {
                        read += 1;
                        // A long scan stops for a cancel or the timeout too, every 4096 rows.
                        if read % 4096 == 0 {
                            if let Err(e) = interrupted(cancel, deadline) {
                                err = Some(e);
                                return false;
                            }
                        }
                        let row = match types::decode_row(bytes, &types) {
                            Ok(r) => r,
                            Err(e) => {
                                err = Some(e);
                                return false;
                            }
                        };
                        if needs_txn_filter {
                            pending_filter_rows.push((pk.to_vec(), row));
                            return true;
                        }
                        let keep = match filter {
                            None => true,
                            Some(f) => match eval_pure(f, &row, params, outer, &env) {
                                Ok(v) => v == Value::Bool(true),
                                Err(e) => {
                                    err = Some(e);
                                    return false;
                                }
                            },
                        };
                        if keep {
                            out.push((pk.to_vec(), row));
                        }
                        limit.map(|l| out.len() < l).unwrap_or(true)
                    })
                    .map_err(txn_error)?;
                self.rows_read += read;
                if let Some(e) = err {
                    return Err(e);
                }
                if needs_txn_filter {
                    for (k, row) in pending_filter_rows {
                        if self.passes(filter, &row)? {
                            out.push((k, row));
                            if limit.map(|l| out.len() >= l).unwrap_or(false) {
                                break;
                            }
                        }
                    }
                }
            }
        }
        if *for_update {
            for (k, _) in &out {
                self.txn.get_for_update(t, k).map_err(txn_error)?;
            }
        }
        Ok(out)
    }

    fn passes(&mut self, filter: Option<&Expr>, row: &[Value]) -> Result<bool> {
        match filter {
            None => Ok(true),
            Some(f) => Ok(self.eval(f, row)? == Value::Bool(true)),
        }
    }

    /// One point get of `table` by the primary-key expressions `keys`: the (key, row) found,
    /// if any and `filter` passes. `proj`: the columns the plan uses, for a projected read
    /// ([`txn::Transaction::get_projected`]).
    fn point_get(
        &mut self,
        table: &Table,
        keys: &[Expr],
        filter: Option<&Expr>,
        for_update: bool,
        types: &[DataType],
        proj: &Option<txn::Projection>,
    ) -> Result<Option<(Vec<u8>, Vec<Value>)>> {
        let cols = table.primary_index().map(|i| &i.columns[..]).unwrap_or(&[]);
        let Some(key) = self.key_values(table, keys, cols)? else {
            return Ok(None);
        };
        let mut k = Vec::with_capacity(16);
        types::encode_key(&key, &mut k);
        let t = tid(table);
        let row = match proj {
            Some(proj) => self.txn.get_projected(t, &k, for_update, proj.clone()),
            None if for_update => self.txn.get_for_update(t, &k),
            None => self.txn.get(t, &k),
        }
        .map_err(txn_error)?;
        let Some(bytes) = row else { return Ok(None) };
        let row = types::decode_row(&bytes, types)?;
        Ok(self.passes(filter, &row)?.then_some((k, row)))
    }

    /// Evaluates key expressions and casts them to the key columns' types. `None` when a value
    /// is NULL or cannot be represented in the column type (then nothing can match).
    pub(crate) fn key_values(
        &mut self,
        table: &Table,
        exprs: &[Expr],
        cols: &[u16],
    ) -> Result<Option<Vec<Value>>> {
        let mut out = Vec::with_capacity(exprs.len());
        for (e, c) in exprs.iter().zip(cols) {
            let v = self.eval(e, &[])?;
            if v.is_null() {
                return Ok(None);
            }
            let ty = table.columns[*c as usize].data_type;
            let from = value_type(&v);
            let v = if from == ty
                || (matches!(ty, DataType::Varchar(None)) && matches!(v, Value::Text(_)))
            {
                v
            } else {
                match types::cast_zoned(v, &from, &ty, CastKind::Explicit, self.env.zone) {
                    Ok(v) => v,
                    Err(_) => return Ok(None),
                }
            };
            out.push(v);
        }
        Ok(Some(out))
    }

    fn generate_series(&mut self, args: &[Expr], ty: DataType) -> Result<Vec<Vec<Value>>> {
        let vals: Vec<Value> = args.iter().map(|a| self.eval(a, &[])).collect::<Result<_>>()?;
        if vals.iter().any(|v| v.is_null()) {
            return Ok(vec![]);
        }
        let step = vals.get(2).cloned().unwrap_or(match ty {
            DataType::Int64 => Value::Int64(1),
            DataType::Numeric(_) => Value::Numeric(1.into()),
            _ => Value::Int32(1),
        });
        let zero = match ty {
            DataType::Int64 => Value::Int64(0),
            DataType::Numeric(_) => Value::Numeric(0.into()),
            DataType::Timestamp | DataType::TimestampTz => {
                Value::Interval(types::Interval::default())
            }
            _ => Value::Int32(0),
        };
        let sign = types::compare(&step, &zero).unwrap_or(Ordering::Equal);
        if sign == Ordering::Equal {
            return Err(Error::InvalidParameterValue {
                message: "step size cannot equal zero".into(),
            });
        }
        let mut out = Vec::new();
        let mut cur = vals[0].clone();
        loop {
            let c = types::compare(&cur, &vals[1]).unwrap_or(Ordering::Greater);
            if (sign == Ordering::Greater && c == Ordering::Greater)
                || (sign == Ordering::Less && c == Ordering::Less)
            {
                break;
            }
            if out.len() as i64 >= MAX_SERIES_ROWS {
                return Err(Error::ProgramLimitExceeded {
                    message: format!(
                        "generate_series would produce more than {MAX_SERIES_ROWS} rows"
                    ),
                });
            }
            out.push(vec![cur.clone()]);
            cur = match types::arith_zoned(ArithOp::Add, &cur, &step, self.env.zone) {
                Ok(v) => v,
                Err(_) => break,
            };
        }
        Ok(out)
    }

    /// `rows` grouped by `group_by`, with `aggs` over each group. `whole`: the input is one
    /// group even if empty (no GROUP BY, or the empty grouping set), as in PostgreSQL.
    fn aggregate(
        &mut self,
        rows: &[Vec<Value>],
        group_by: &[Expr],
        aggs: &[AggCall],
        whole: bool,
    ) -> Result<Vec<Vec<Value>>> {
        let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut groups: Vec<(Vec<Value>, Vec<Acc>)> = Vec::new();
        // Aggregates with ORDER BY: per (group, call), each row's keys, value and string_agg
        // delimiter, fed in key order at the end.
        type Pending = Vec<(Vec<Value>, Value, Option<Value>)>;
        let mut ordered: HashMap<(usize, usize), Pending> = HashMap::new();
        for r in rows {
            let keys: Vec<Value> =
                group_by.iter().map(|g| self.eval(g, r)).collect::<Result<_>>()?;
            let mut kb = Vec::new();
            types::encode_key(&keys, &mut kb);
            let gi = match index.get(&kb) {
                Some(i) => *i,
                None => {
                    groups.push((keys, aggs.iter().map(Acc::new).collect()));
                    index.insert(kb, groups.len() - 1);
                    groups.len() - 1
                }
            };
            for (j, call) in aggs.iter().enumerate() {
                if call.func == AggFunc::Grouping {
                    continue;
                }
                if let Some(f) = &call.filter {
                    if self.eval(f, r)? != Value::Bool(true) {
                        continue;
                    }
                }
                let v = match &call.arg {
                    None => Value::Bool(true),
                    Some(a) => self.eval(a, r)?,
                };
                let delimiter = match (&call.delimiter, &groups[gi].1[j]) {
                    (Some(d), Acc::Text(..) | Acc::Jsonb(..)) => Some(self.eval(d, r)?),
                    _ => None,
                };
                if call.order_by.is_empty() {
                    groups[gi].1[j].feed(call, v, delimiter)?;
                } else {
                    let keys: Vec<Value> = call
                        .order_by
                        .iter()
                        .map(|k| self.eval(&k.expr, r))
                        .collect::<Result<_>>()?;
                    ordered.entry((gi, j)).or_default().push((keys, v, delimiter));
                }
            }
        }
        for ((gi, j), mut pending) in ordered {
            let call = &aggs[j];
            // Stable: rows with equal keys keep their input order.
            pending.sort_by(|a, b| compare_keys(&call.order_by, &a.0, &b.0));
            for (_, v, delimiter) in pending {
                groups[gi].1[j].feed(call, v, delimiter)?;
            }
        }
        if groups.is_empty() && whole {
            let keys = vec![Value::Null; group_by.len()];
            groups.push((keys, aggs.iter().map(Acc::new).collect()));
        }
        let mut out = Vec::with_capacity(groups.len());
        for (keys, accs) in groups {
            let mut row = keys;
            for (acc, call) in accs.into_iter().zip(aggs) {
                row.push(acc.finish(call)?);
            }
            out.push(row);
        }
        Ok(out)
    }

    /// One window call's value for each of `rows` (in their order): the rows are put in
    /// partition and window order, and each partition is walked once, peer group by peer
    /// group (rows equal on the ORDER BY keys share a rank and, with the default frame, an
    /// aggregate's value).
    fn window(
        &mut self,
        rows: &[Vec<Value>],
        call: &crate::plan::WindowCall,
    ) -> Result<Vec<Value>> {
        use crate::plan::WindowFunc as W;
        if let (Some(frame), false) = (&call.frame, rows.is_empty()) {
            for (b, what) in [(frame.start, "starting"), (frame.end, "ending")] {
                if let FrameBound::Preceding(n) | FrameBound::Following(n) = b {
                    if n < 0 {
                        return Err(Error::DataException {
                            message: format!("frame {what} offset must not be negative"),
                            sqlstate: "22013",
                        });
                    }
                }
            }
            if call.range_offsets.iter().flatten().any(range_offset_invalid) {
                return Err(Error::DataException {
                    message: "invalid preceding or following size in window function".into(),
                    sqlstate: "22013",
                });
            }
        }
        // Per input row: the partition key, the ORDER BY values, its position, the value the
        // call reads from it (None: excluded by an aggregate's FILTER), and a value the call
        // needs at the current row (lag / lead's default, nth_value's n, ntile's n).
        let mut keyed = Vec::with_capacity(rows.len());
        let mut current = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            let part: Vec<Value> =
                call.partition_by.iter().map(|e| self.eval(e, r)).collect::<Result<_>>()?;
            let mut pk = Vec::new();
            types::encode_key(&part, &mut pk);
            let order: Vec<Value> =
                call.order_by.iter().map(|k| self.eval(&k.expr, r)).collect::<Result<_>>()?;
            let arg = match &call.func {
                W::Shift { value, default, .. } => {
                    current.push(self.eval(default, r)?);
                    Some(self.eval(value, r)?)
                }
                W::NthValue(value, n) => {
                    current.push(self.eval(n, r)?);
                    Some(self.eval(value, r)?)
                }
                W::NTile(n) => {
                    current.push(self.eval(n, r)?);
                    None
                }
                W::FirstValue(value) | W::LastValue(value) => Some(self.eval(value, r)?),
                W::Aggregate(a) => {
                    let included = match &a.filter {
                        Some(f) => self.eval(f, r)? == Value::Bool(true),
                        None => true,
                    };
                    let v = match &a.arg {
                        None => Value::Bool(true),
                        Some(e) => self.eval(e, r)?,
                    };
                    included.then_some(v)
                }
                W::RowNumber | W::Rank | W::DenseRank | W::PercentRank | W::CumeDist => None,
            };
            keyed.push((pk, order, i, arg));
        }
        keyed.sort_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| compare_keys(&call.order_by, &a.1, &b.1)).then(a.2.cmp(&b.2))
        });
        let mut out = vec![Value::Null; rows.len()];
        let mut start = 0;
        while start < keyed.len() {
            let end = start + keyed[start..].iter().take_while(|k| k.0 == keyed[start].0).count();
            let partition = &keyed[start..end];
            let n = partition.len();
            // Each position's peer group [first, last) and its number from 1 (all rows are
            // peers without ORDER BY); where each group starts, and `n` after the last.
            let mut peers = Vec::with_capacity(n);
            let mut group_starts = Vec::new();
            let mut p = 0;
            while p < n {
                let q = p + partition[p..]
                    .iter()
                    .take_while(|k| {
                        compare_keys(&call.order_by, &k.1, &partition[p].1) == Ordering::Equal
                    })
                    .count();
                group_starts.push(p);
                peers.extend(std::iter::repeat_n((p, q, group_starts.len() as i64), q - p));
                p = q;
            }
            group_starts.push(n);
            let groups = group_starts.len() - 1;
            // A RANGE offset bound of position `p`: the frame's first row (`head`) or one past
            // its last, by PostgreSQL's `in_range` on the single ORDER BY key. A NULL key's
            // bound is its peer group's; NULL keys are beyond every value on their side.
            let zone = self.env.zone;
            let key = call.order_by.first();
            let (desc, nulls_first) = key.map_or((false, false), |k| (k.desc, k.nulls_first));
            let range_bound = |p: usize, which: usize, preceding: bool, head: bool| {
                let (first, last, _) = peers[p];
                let base = &partition[p].1[0];
                let offset = call.range_offsets[which].as_ref();
                let (Some(offset), false) = (offset, base.is_null()) else {
                    return Ok(if head { first } else { last });
                };
                let target = RangeTarget::new(base, offset, preceding != desc, zone)?;
                let less = head == desc;
                Ok(partition.partition_point(|k| {
                    let v = &k.1[0];
                    if v.is_null() {
                        nulls_first
                    } else {
                        target.in_range(v, less) != head
                    }
                }))
            };
            // The frame [lo, hi) of each position.
            let frame_of = |p: usize| -> Result<(usize, usize)> {
                let (first, last, group) = peers[p];
                let frame = call.frame.unwrap_or(Frame {
                    units: FrameUnits::Range,
                    start: FrameBound::UnboundedPreceding,
                    end: FrameBound::CurrentRow,
                });
                let offset = |n: i64| usize::try_from(n).unwrap_or(usize::MAX);
                // GROUPS: group `g` (from 0) starts at group_starts[g] and ends before g + 1.
                let g = (group - 1) as usize;
                let group_start = |g: usize| group_starts[g.min(groups)];
                let offsets = frame.units == FrameUnits::Range
                    && call.range_offsets.iter().any(Option::is_some);
                let (lo, hi) = match frame.units {
                    FrameUnits::Range if offsets => {
                        // Frame start (`which` 0) or end (1): the first row in it, or past it.
                        let edge = |bound: &FrameBound, which: usize| -> Result<usize> {
                            let start = which == 0;
                            Ok(match bound {
                                FrameBound::UnboundedPreceding => 0,
                                FrameBound::Preceding(_) => range_bound(p, which, true, start)?,
                                FrameBound::CurrentRow if start => first,
                                FrameBound::CurrentRow => last,
                                FrameBound::Following(_) => range_bound(p, which, false, start)?,
                                FrameBound::UnboundedFollowing => n,
                            })
                        };
                        (edge(&frame.start, 0)?, edge(&frame.end, 1)?)
                    }
                    FrameUnits::Rows | FrameUnits::Range => {
                        let rows = frame.units == FrameUnits::Rows;
                        let lo = match frame.start {
                            FrameBound::UnboundedPreceding => 0,
                            FrameBound::Preceding(k) => p.saturating_sub(offset(k)),
                            FrameBound::CurrentRow if rows => p,
                            FrameBound::CurrentRow => first,
                            FrameBound::Following(k) => p.saturating_add(offset(k)).min(n),
                            FrameBound::UnboundedFollowing => n,
                        };
                        let hi = match frame.end {
                            FrameBound::UnboundedPreceding => 0,
                            FrameBound::Preceding(k) => (p + 1).saturating_sub(offset(k)),
                            FrameBound::CurrentRow if rows => p + 1,
                            FrameBound::CurrentRow => last,
                            FrameBound::Following(k) => {
                                p.saturating_add(offset(k)).saturating_add(1).min(n)
                            }
                            FrameBound::UnboundedFollowing => n,
                        };
                        (lo, hi)
                    }
                    FrameUnits::Groups => {
                        let lo = match frame.start {
                            FrameBound::UnboundedPreceding => 0,
                            FrameBound::Preceding(k) => group_start(g.saturating_sub(offset(k))),
                            FrameBound::CurrentRow => first,
                            FrameBound::Following(k) => group_start(g.saturating_add(offset(k))),
                            FrameBound::UnboundedFollowing => n,
                        };
                        let hi = match frame.end {
                            FrameBound::UnboundedPreceding => 0,
                            FrameBound::Preceding(k) => match g.checked_sub(offset(k)) {
                                Some(e) => group_start(e + 1),
                                None => 0,
                            },
                            FrameBound::CurrentRow => last,
                            FrameBound::Following(k) => {
                                group_start(g.saturating_add(offset(k)).saturating_add(1))
                            }
                            FrameBound::UnboundedFollowing => n,
                        };
                        (lo, hi)
                    }
                };
                Ok((lo, hi.max(lo)))
            };
            let value_at = |i: usize| partition[i].3.clone().unwrap_or(Value::Null);
            match &call.func {
                W::Aggregate(a) => {
                    // A frame that starts at the partition's first row only grows: one running
                    // accumulator. Any other frame is summed afresh for each row.
                    let running =
                        call.frame.is_none_or(|f| f.start == FrameBound::UnboundedPreceding);
                    let mut acc = Acc::new(a);
                    let mut added = 0;
                    for p in 0..n {
                        let (lo, hi) = frame_of(p)?;
                        let value = if running {
                            while added < hi {
                                if let Some(v) = &partition[added].3 {
                                    acc.add(a, v.clone())?;
                                }
                                added += 1;
                            }
                            // The running value: finish a copy, the accumulator goes on.
                            acc.clone().finish(a)?
                        } else {
                            let mut fresh = Acc::new(a);
                            for k in &partition[lo..hi] {
                                if let Some(v) = &k.3 {
                                    fresh.add(a, v.clone())?;
                                }
                            }
                            fresh.finish(a)?
                        };
                        out[partition[p].2] = value;
                    }
                }
                W::NTile(_) => {
                    // PostgreSQL's window_ntile: the bucket count is read at the partition's
                    // first row (a NULL gives NULL and is read again at the next row).
                    let (mut bucket, mut in_bucket, mut boundary, mut remainder) = (0i64, 0, 0, 0);
                    for k in partition {
                        if bucket < 1 {
                            let buckets = match &current[k.2] {
                                Value::Null => {
                                    out[k.2] = Value::Null;
                                    continue;
                                }
                                Value::Int32(b) => i64::from(*b),
                                other => {
                                    return Err(Error::internal(format!("ntile of {other:?}")))
                                }
                            };
                            if buckets <= 0 {
                                return Err(Error::DataException {
                                    message: "argument of ntile must be greater than zero".into(),
                                    sqlstate: "22014",
                                });
                            }
                            let total = n as i64;
                            bucket = 1;
                            in_bucket = 0;
                            boundary = total / buckets;
                            remainder = 0;
                            if boundary <= 0 {
                                boundary = 1;
                            } else {
                                remainder = total % buckets;
                                if remainder != 0 {
                                    boundary += 1;
                                }
                            }
                        }
                        in_bucket += 1;
                        if boundary < in_bucket {
                            if remainder != 0 && bucket == remainder {
                                remainder = 0;
                                boundary -= 1;
                            }
                            bucket += 1;
                            in_bucket = 1;
                        }
                        out[k.2] = Value::Int32(bucket as i32);
                    }
                }
                func => {
                    for (p, k) in partition.iter().enumerate() {
                        let (first, last, group) = peers[p];
                        out[k.2] =
                            match func {
                                W::RowNumber => Value::Int64(p as i64 + 1),
                                W::Rank => Value::Int64(first as i64 + 1),
                                W::DenseRank => Value::Int64(group),
                                W::PercentRank if n > 1 => {
                                    Value::Float64(first as f64 / (n - 1) as f64)
                                }
                                W::PercentRank => Value::Float64(0.0),
                                W::CumeDist => Value::Float64(last as f64 / n as f64),
                                W::Shift { lead, offset, .. } => {
                                    let there =
                                        if *lead { p as i64 + offset } else { p as i64 - offset };
                                    match usize::try_from(there).ok().filter(|t| *t < n) {
                                        Some(t) => value_at(t),
                                        None => current[k.2].clone(),
                                    }
                                }
                                W::FirstValue(_) | W::LastValue(_) => {
                                    let (lo, hi) = frame_of(p)?;
                                    match (lo < hi, func) {
                                        (false, _) => Value::Null,
                                        (true, W::FirstValue(_)) => value_at(lo),
                                        (true, _) => value_at(hi - 1),
                                    }
                                }
                                W::NthValue(..) => {
                                    let nth = match &current[k.2] {
                                        Value::Int32(m) => Some(i64::from(*m)),
                                        _ => None,
                                    };
                                    match nth {
                                        None => Value::Null,
                                        Some(m) if m <= 0 => return Err(Error::DataException {
                                            message:
                                                "argument of nth_value must be greater than zero"
                                                    .into(),
                                            sqlstate: "22016",
                                        }),
                                        Some(m) => {
                                            let (lo, hi) = frame_of(p)?;
                                            let at = lo.saturating_add((m - 1) as usize);
                                            if at < hi {
                                                value_at(at)
                                            } else {
                                                Value::Null
                                            }
                                        }
                                    }
                                }
                                W::Aggregate(_) | W::NTile(_) => unreachable!("handled above"),
                            };
                    }
                }
            }
            start = end;
        }
        Ok(out)
    }

    fn sort(&mut self, rows: Vec<Vec<Value>>, keys: &[SortKey]) -> Result<Vec<Vec<Value>>> {
        let mut keyed: Vec<(Vec<Value>, Vec<Value>)> = Vec::with_capacity(rows.len());
        for r in rows {
            let k: Vec<Value> =
                keys.iter().map(|k| self.eval(&k.expr, &r)).collect::<Result<_>>()?;
            keyed.push((k, r));
        }
        keyed.sort_by(|(a, _), (b, _)| compare_keys(keys, a, b));
        Ok(keyed.into_iter().map(|(_, r)| r).collect())
    }

    /// The rows of subquery `plan` evaluated for `row`: an uncorrelated one runs once per
    /// statement and its rows are kept ([`Ctx::initplans`]); a correlated one runs with `row`
    /// as its nearest enclosing row.
    fn subquery_rows(&mut self, plan: &Plan, row: &[Value]) -> Result<Arc<Vec<Vec<Value>>>> {
        let key = plan as *const Plan as usize;
        let once = match self.initplans.get(&key) {
            Some(Some(rows)) => return Ok(rows.clone()),
            Some(None) => false,
            None => crate::bind::uncorrelated(plan),
        };
        self.outer.push(row.to_vec());
        let rows = self.run(plan);
        self.outer.pop();
        let rows = Arc::new(rows?);
        self.initplans.insert(key, once.then(|| rows.clone()));
        Ok(rows)
    }

    /// Evaluates an expression over `row`.
    pub fn eval(&mut self, e: &Expr, row: &[Value]) -> Result<Value> {
        match e {
            Expr::Subquery(plan) => {
                let rows = self.subquery_rows(plan, row)?;
                if rows.len() > 1 {
                    return Err(Error::CardinalityViolation {
                        message: "more than one row returned by a subquery used as an expression"
                            .into(),
                    });
                }
                Ok(rows.first().and_then(|r| r.first()).cloned().unwrap_or(Value::Null))
            }
            Expr::Exists(plan, negated) => {
                let rows = self.subquery_rows(plan, row)?;
                Ok(Value::Bool(rows.is_empty() == *negated))
            }
            Expr::InSubquery(x, plan, negated) => {
                let v = self.eval(x, row)?;
                let rows = self.subquery_rows(plan, row)?;
                in_list(&v, rows.iter().filter_map(|r| r.first()).map(Ok), *negated)
            }
            Expr::Func(f @ (Func::NextVal | Func::CurrVal | Func::SetVal), args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a, row)?);
                }
                self.sequence_call(*f, &vals)
            }
            Expr::Func(Func::Advisory(call), args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a, row)?);
                }
                self.advisory_call(*call, &vals)
            }
            Expr::Func(Func::BackendPid, _) => match self.session {
                Some(session) => Ok(Value::Int32(session.backend_pid())),
                None => Err(Error::unsupported("pg_backend_pid() here")),
            },
            Expr::Func(Func::PgSleep, args) => {
                let seconds = match self.eval(&args[0], row)? {
                    Value::Float64(s) => s,
                    // Strict: NULL in, NULL out, no wait.
                    _ => return Ok(Value::Null),
                };
                self.sleep(seconds)?;
                Ok(Value::Text(String::new()))
            }
            other => {
                if needs_txn(other) {
                    // A subquery nested inside: evaluate children through self.
                    return self.eval_composite(other, row);
                }
                eval_pure(other, row, self.params, &self.outer, &self.env)
            }
        }
    }

    fn sequence_call(&mut self, f: Func, args: &[Value]) -> Result<Value> {
        let Some(seq) = self.session else {
            return Err(Error::unsupported("sequence functions here"));
        };
        let int = |v: &Value| match v {
            Value::Int64(n) => Ok(*n),
            other => Err(Error::internal(format!("sequence argument {other:?}"))),
        };
        // Strict, as in PostgreSQL: a NULL argument gives NULL and changes nothing.
        if args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        let table = u32::try_from(int(&args[0])?).map_err(|_| Error::internal("table id"))?;
        let position = u16::try_from(int(&args[1])?).map_err(|_| Error::internal("position"))?;
        Ok(Value::Int64(match f {
            Func::NextVal => seq.nextval(table, position)?,
            Func::CurrVal => seq.currval(table, position)?,
            _ => {
                let called = matches!(args.get(3), Some(Value::Bool(true)));
                seq.setval(table, position, int(&args[2])?, called)?
            }
        }))
    }

    /// An advisory-lock function with its arguments: strict (a NULL key locks nothing and
    /// gives NULL), a wait stopped by the statement's timeout or a cancel.
    fn advisory_call(&mut self, call: crate::plan::AdvisoryCall, args: &[Value]) -> Result<Value> {
        use crate::advisory::LockKey;
        let Some(session) = self.session else {
            return Err(Error::unsupported("advisory lock functions here"));
        };
        if args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        let key = match args {
            [] => None,
            [Value::Int64(k)] => Some(LockKey::Int8(*k)),
            [Value::Int32(a), Value::Int32(b)] => Some(LockKey::Int4Pair(*a, *b)),
            other => return Err(Error::internal(format!("advisory lock key {other:?}"))),
        };
        session.advisory(call, key, &|| self.check_deadline())
    }

    /// Evaluation of a non-subquery node that has a subquery somewhere below it.
    fn eval_composite(&mut self, e: &Expr, row: &[Value]) -> Result<Value> {
        // Evaluate every direct child that needs the txn, substitute literals, then evaluate
        // the node purely.
        let mut sub =
            |x: &Expr, this: &mut Self| -> Result<Expr> { Ok(Expr::Literal(this.eval(x, row)?)) };
        let b = |x: &Expr,
                 this: &mut Self,
                 sub: &mut dyn FnMut(&Expr, &mut Self) -> Result<Expr>|
         -> Result<Box<Expr>> { Ok(Box::new(sub(x, this)?)) };
        let lowered = match e {
            Expr::And(a, c) => {
                // Short-circuit as PostgreSQL may: false AND x = false.
                let l = self.eval(a, row)?;
                if l == Value::Bool(false) {
                    return Ok(l);
                }
                Expr::And(Box::new(Expr::Literal(l)), b(c, self, &mut sub)?)
            }
            Expr::Or(a, c) => {
                let l = self.eval(a, row)?;
                if l == Value::Bool(true) {
                    return Ok(l);
                }
                Expr::Or(Box::new(Expr::Literal(l)), b(c, self, &mut sub)?)
            }
            Expr::Arith(op, a, c) => Expr::Arith(*op, b(a, self, &mut sub)?, b(c, self, &mut sub)?),
            Expr::Cmp(op, a, c) => Expr::Cmp(*op, b(a, self, &mut sub)?, b(c, self, &mut sub)?),
            Expr::IsDistinct(a, c, n) => {
                Expr::IsDistinct(b(a, self, &mut sub)?, b(c, self, &mut sub)?, *n)
            }
            Expr::Like(a, c, ci, n) => {
                Expr::Like(b(a, self, &mut sub)?, b(c, self, &mut sub)?, *ci, *n)
            }
            Expr::NullIf(a, c) => Expr::NullIf(b(a, self, &mut sub)?, b(c, self, &mut sub)?),
            Expr::Concat(a, c) => Expr::Concat(b(a, self, &mut sub)?, b(c, self, &mut sub)?),
            Expr::Neg(a) => Expr::Neg(b(a, self, &mut sub)?),
            Expr::Not(a) => Expr::Not(b(a, self, &mut sub)?),
            Expr::IsNull(a, n) => Expr::IsNull(b(a, self, &mut sub)?, *n),
            Expr::IsBool(a, v, n) => Expr::IsBool(b(a, self, &mut sub)?, *v, *n),
            Expr::Cast(a, t, k) => Expr::Cast(b(a, self, &mut sub)?, *t, *k),
            Expr::InList(a, list, n) => {
                let list = list.iter().map(|x| sub(x, self)).collect::<Result<Vec<_>>>()?;
                Expr::InList(b(a, self, &mut sub)?, list, *n)
            }
            Expr::Case(arms, els) => {
                for (w, t) in arms {
                    if self.eval(w, row)? == Value::Bool(true) {
                        return self.eval(t, row);
                    }
                }
                return match els {
                    Some(x) => self.eval(x, row),
                    None => Ok(Value::Null),
                };
            }
            Expr::Coalesce(list) => {
                for x in list {
                    let v = self.eval(x, row)?;
                    if !v.is_null() {
                        return Ok(v);
                    }
                }
                return Ok(Value::Null);
            }
            Expr::Func(f, list) => {
                Expr::Func(*f, list.iter().map(|x| sub(x, self)).collect::<Result<Vec<_>>>()?)
            }
            other => return eval_pure(other, row, self.params, &self.outer, &self.env),
        };
        eval_pure(&lowered, row, self.params, &self.outer, &self.env)
    }
}

/// UNION / INTERSECT / EXCEPT [ALL] of two row lists (rows compared as DISTINCT does: NULLs
/// equal). With ALL, a row that `left` has m times and `right` n times appears m + n, min(m,
/// n) and max(m − n, 0) times; without, once if it appears at all. Rows keep the order they
/// are first met in.
fn set_operation(
    left: Vec<Vec<Value>>,
    right: Vec<Vec<Value>>,
    op: crate::plan::SetOpKind,
    all: bool,
) -> Vec<Vec<Value>> {
    use crate::plan::SetOpKind;
    let key = |r: &[Value]| {
        let mut k = Vec::new();
        types::encode_key(r, &mut k);
        k
    };
    if op == SetOpKind::Union && all {
        let mut out = left;
        out.extend(right);
        return out;
    }
    if op == SetOpKind::Union {
        let mut seen = HashSet::new();
        return left.into_iter().chain(right).filter(|r| seen.insert(key(r))).collect();
    }
    // How many times each row of the right side is there still to be matched.
    let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
    for r in &right {
        *counts.entry(key(r)).or_default() += 1;
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for r in left {
        let k = key(&r);
        let remaining = counts.get_mut(&k);
        let matched = match remaining {
            Some(n) if *n > 0 => {
                if all {
                    *n -= 1;
                }
                true
            }
            _ => false,
        };
        let keep = match op {
            SetOpKind::Intersect => matched,
            _ => !matched,
        };
        if keep && (all || seen.insert(k)) {
            out.push(r);
        }
    }
    out
}

/// Does evaluating this expression need the context (a subquery or a sequence function
/// somewhere inside)?
fn needs_txn(e: &Expr) -> bool {
    let mut found = false;
    crate::bind::walk_expr(e, &mut |x| {
        found |= matches!(x, Expr::Subquery(_) | Expr::Exists(..) | Expr::InSubquery(..))
            || matches!(x, Expr::Func(f, _) if f.uses_session())
    });
    found
}

/// The smallest key greater than every key that starts with `k` (None if there is none).
pub(crate) fn successor(k: &[u8]) -> Option<Vec<u8>> {
    let mut s = k.to_vec();
    while let Some(last) = s.last_mut() {
        if *last < 0xFF {
            *last += 1;
            return Some(s);
        }
        s.pop();
    }
    None
}

/// `v IN (items)` (`NOT IN` when `negated`) in SQL's three-valued logic. Every item is taken,
/// one at a time (an error among them is the answer, as PostgreSQL evaluates its whole array
/// of them); `NULL IN ()` compared nothing, so it is false, as for any value.
fn in_list<V: std::borrow::Borrow<Value>>(
    v: &Value,
    items: impl Iterator<Item = Result<V>>,
    negated: bool,
) -> Result<Value> {
    let (mut found, mut saw_null, mut any) = (false, v.is_null(), false);
    for item in items {
        let item = item?;
        any = true;
        if !found && !v.is_null() {
            match types::compare(v, item.borrow()) {
                Some(Ordering::Equal) => found = true,
                None => saw_null = true,
                _ => {}
            }
        }
    }
    Ok(match (found, saw_null) {
        (true, _) => Value::Bool(!negated),
        (false, true) if any => Value::Null,
        _ => Value::Bool(negated),
    })
}

fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

/// GROUPING's value for grouping set `set` (positions of the keys it keeps): a bit per
/// argument (`Expr::Column(k)`, group key `k`), the first the most significant, set where the
/// set leaves the key out.
fn grouping_mask(args: &[Expr], set: &[usize]) -> i32 {
    args.iter().fold(0, |mask, a| {
        let kept = matches!(a, Expr::Column(k) if set.contains(k));
        (mask << 1) | i32::from(!kept)
    })
}

/// Evaluates an expression that contains no subquery.
pub(crate) fn eval_pure(
    e: &Expr,
    row: &[Value],
    params: &[Value],
    outer: &[Vec<Value>],
    env: &Env<'_>,
) -> Result<Value> {
    let ev = |x: &Expr| eval_pure(x, row, params, outer, env);
    Ok(match e {
        Expr::Literal(v) => v.clone(),
        Expr::Column(i) => row
            .get(*i)
            .cloned()
            .ok_or_else(|| Error::internal(format!("column {i} out of range")))?,
        Expr::Outer { depth, index } => outer
            .len()
            .checked_sub(1 + depth)
            .and_then(|d| outer[d].get(*index))
            .cloned()
            .ok_or_else(|| {
                Error::internal(format!("outer reference {depth}/{index} out of range"))
            })?,
        Expr::Param(i) => params.get(*i).cloned().ok_or_else(|| Error::UndefinedParameter {
            message: format!("there is no parameter ${}", i + 1),
        })?,
        Expr::Arith(op, a, b) => {
            let (l, r) = (ev(a)?, ev(b)?);
            types::arith_zoned(*op, &l, &r, env.zone)?
        }
        Expr::Neg(a) => types::negate(&ev(a)?)?,
        Expr::Cmp(op, a, b) => {
            let (l, r) = (ev(a)?, ev(b)?);
            match types::compare(&l, &r) {
                None => Value::Null,
                Some(o) => Value::Bool(op.holds(o)),
            }
        }
        Expr::And(a, b) => {
            let l = ev(a)?;
            if truth(&l) == Some(false) {
                return Ok(Value::Bool(false));
            }
            let r = ev(b)?;
            match (truth(&l), truth(&r)) {
                (_, Some(false)) => Value::Bool(false),
                (Some(true), Some(true)) => Value::Bool(true),
                _ => Value::Null,
            }
        }
        Expr::Or(a, b) => {
            let l = ev(a)?;
            if truth(&l) == Some(true) {
                return Ok(Value::Bool(true));
            }
            let r = ev(b)?;
            match (truth(&l), truth(&r)) {
                (_, Some(true)) => Value::Bool(true),
                (Some(false), Some(false)) => Value::Bool(false),
                _ => Value::Null,
            }
        }
        Expr::Not(a) => match truth(&ev(a)?) {
            Some(b) => Value::Bool(!b),
            None => Value::Null,
        },
        Expr::IsNull(a, negated) => Value::Bool(ev(a)?.is_null() != *negated),
        Expr::IsDistinct(a, b, negated) => {
            let (l, r) = (ev(a)?, ev(b)?);
            let distinct = match (l.is_null(), r.is_null()) {
                (true, true) => false,
                (true, false) | (false, true) => true,
                _ => types::compare(&l, &r) != Some(Ordering::Equal),
            };
            Value::Bool(distinct != *negated)
        }
        Expr::IsBool(a, value, negated) => {
            let v = truth(&ev(a)?);
            Value::Bool((v == Some(*value)) != *negated)
        }
        Expr::Like(a, p, ci, negated) => match (ev(a)?, ev(p)?) {
            (Value::Text(s), Value::Text(p)) => Value::Bool(types::like(&s, &p, *ci) != *negated),
            _ => Value::Null,
        },
        Expr::InList(a, list, negated) => in_list(&ev(a)?, list.iter().map(ev), *negated)?,
        Expr::Case(arms, els) => {
            for (w, t) in arms {
                if ev(w)? == Value::Bool(true) {
                    return ev(t);
                }
            }
            match els {
                Some(x) => ev(x)?,
                None => Value::Null,
            }
        }
        Expr::Coalesce(list) => {
            for x in list {
                let v = ev(x)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Expr::NullIf(a, b) => {
            let (l, r) = (ev(a)?, ev(b)?);
            if types::compare(&l, &r) == Some(Ordering::Equal) {
                Value::Null
            } else {
                l
            }
        }
        Expr::Cast(a, to, kind) => {
            let v = ev(a)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let from = value_type(&v);
            types::cast_zoned(v, &from, to, *kind, env.zone)?
        }
        Expr::Concat(a, b) => match (ev(a)?, ev(b)?) {
            (Value::Text(mut l), Value::Text(r)) => {
                l.push_str(&r);
                Value::Text(l)
            }
            _ => Value::Null,
        },
        Expr::Func(f, args) => {
            let vals = args.iter().map(ev).collect::<Result<Vec<_>>>()?;
            func(*f, vals, env)?
        }
        Expr::Agg(_) => return Err(Error::internal("aggregate reference outside aggregation")),
        Expr::Subquery(_) | Expr::Exists(..) | Expr::InSubquery(..) => {
            return Err(Error::internal("subquery in pure evaluation"))
        }
    })
}

/// The local time in `zone` of the UTC instant `utc`.
fn local_time(utc: NaiveDateTime, zone: types::Zone) -> Result<NaiveDateTime> {
    zone.to_local(utc)
        .ok_or_else(|| Error::DatetimeFieldOverflow { message: "timestamp out of range".into() })
}

pub(crate) fn text_arg(v: &Value) -> Option<&str> {
    match v {
        Value::Text(s) => Some(s),
        _ => None,
    }
}

pub(crate) fn int_arg(v: &Value) -> Option<i64> {
    match v {
        Value::Int16(i) => Some(*i as i64),
        Value::Int32(i) => Some(*i as i64),
        Value::Int64(i) => Some(*i),
        _ => None,
    }
}

/// The `version()` string: reads as PostgreSQL 15 for drivers that parse it.
pub const VERSION: &str = concat!(
    "PostgreSQL 15.0 (Aspen ",
    env!("CARGO_PKG_VERSION"),
    ") on x86_64-pc-linux-gnu, compiled by rustc, 64-bit"
);

fn func(f: Func, args: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    let strict = !matches!(
        f,
        Func::Concat
            | Func::FormatType
            | Func::Now
            | Func::LocalTimestamp
            | Func::CurrentDate
            | Func::Version
            | Func::CurrentSchema
            | Func::CurrentDatabase
            | Func::CurrentUser
            | Func::Greatest
            | Func::Least
            | Func::Pi
            | Func::Random
            | Func::QuoteNullable
            | Func::Format
            | Func::NumNulls
            | Func::NumNonNulls
            | Func::Jsonb(
                JsonbFunc::BuildObject
                    | JsonbFunc::BuildArray
                    | JsonbFunc::Set
                    | JsonbFunc::JsonBuildObject
                    | JsonbFunc::JsonBuildArray
                    | JsonbFunc::JsonRow
            )
    ) && !matches!(f, Func::Array(a) if !a.strict());
    if strict && args.iter().any(|a| a.is_null()) {
        return Ok(Value::Null);
    }
    Ok(match f {
        Func::Lower => Value::Text(builtin::lower(text_arg(&args[0]).unwrap_or_default())),
        Func::Upper => Value::Text(builtin::upper(text_arg(&args[0]).unwrap_or_default())),
        Func::Length => match &args[0] {
            Value::Bytea(b) => Value::Int32(b.len() as i32),
            other => Value::Int32(text_arg(other).unwrap_or_default().chars().count() as i32),
        },
        Func::Substring => {
            let s: Vec<char> = text_arg(&args[0]).unwrap_or_default().chars().collect();
            let start = int_arg(&args[1]).unwrap_or(1);
            let (from, to) = match args.get(2).and_then(int_arg) {
                Some(len) => {
                    if len < 0 {
                        return Err(Error::DataException {
                            message: "negative substring length not allowed".into(),
                            sqlstate: "22011",
                        });
                    }
                    (start, start.saturating_add(len))
                }
                None => (start, i64::MAX),
            };
            let from = from.max(1) as usize - 1;
            let to = (to.max(1) as usize - 1).min(s.len());
            Value::Text(if from >= to { String::new() } else { s[from..to].iter().collect() })
        }
        Func::Trim | Func::LTrim | Func::RTrim => {
            let s = text_arg(&args[0]).unwrap_or_default();
            let set: Vec<char> = args
                .get(1)
                .and_then(text_arg)
                .map(|c| c.chars().collect())
                .unwrap_or_else(|| vec![' ']);
            let t = match f {
                Func::Trim => s.trim_matches(|c| set.contains(&c)),
                Func::LTrim => s.trim_start_matches(|c| set.contains(&c)),
                _ => s.trim_end_matches(|c| set.contains(&c)),
            };
            Value::Text(t.to_string())
        }
        Func::Concat => {
            let mut out = String::new();
            for a in &args {
                if let Value::Text(s) = a {
                    out.push_str(s);
                } else if !a.is_null() {
                    out.push_str(&types::format_text_zoned(a, &value_type(a), env.zone));
                }
            }
            Value::Text(out)
        }
        Func::Abs => match &args[0] {
            Value::Int16(i) => {
                Value::Int16(i.checked_abs().ok_or_else(|| Error::out_of_range("smallint"))?)
            }
            Value::Int32(i) => {
                Value::Int32(i.checked_abs().ok_or_else(|| Error::out_of_range("integer"))?)
            }
            Value::Int64(i) => {
                Value::Int64(i.checked_abs().ok_or_else(|| Error::out_of_range("bigint"))?)
            }
            Value::Float32(x) => Value::Float32(x.abs()),
            Value::Float64(x) => Value::Float64(x.abs()),
            Value::Numeric(d) => Value::Numeric(d.abs()),
            other => return Err(Error::internal(format!("abs({other:?})"))),
        },
        Func::Round | Func::Trunc => {
            let scale = args.get(1).and_then(int_arg).unwrap_or(0);
            match &args[0] {
                Value::Numeric(d) if f == Func::Round => Value::Numeric(d.round(scale)?),
                Value::Numeric(d) => Value::Numeric(d.trunc(scale)?),
                Value::Float64(x) if f == Func::Round => Value::Float64(x.round_ties_even()),
                Value::Float64(x) => Value::Float64(x.trunc()),
                other => return Err(Error::internal(format!("{f:?}({other:?})"))),
            }
        }
        Func::Floor => match &args[0] {
            Value::Numeric(d) => Value::Numeric(d.floor()?),
            Value::Float64(x) => Value::Float64(x.floor()),
            other => return Err(Error::internal(format!("floor({other:?})"))),
        },
        Func::Ceil => match &args[0] {
            Value::Numeric(d) => Value::Numeric(d.ceil()?),
            Value::Float64(x) => Value::Float64(x.ceil()),
            other => return Err(Error::internal(format!("ceil({other:?})"))),
        },
        Func::Mod => types::arith(ArithOp::Mod, &args[0], &args[1])?,
        Func::Now => Value::TimestampTz(env.now),
        Func::Format => match &args[0] {
            Value::Null => Value::Null,
            Value::Text(fmt) => Value::Text(builtin::format(fmt, &args[1..], |v| {
                types::format_text_zoned(v, &DataType::Text, env.zone)
            })?),
            other => return Err(Error::internal(format!("format with {other:?}"))),
        },
        Func::LocalTimestamp => Value::Timestamp(local_time(env.now, env.zone)?),
        Func::CurrentDate => Value::Date(local_time(env.now, env.zone)?.date()),
        Func::Version => Value::Text(VERSION.into()),
        Func::PostmasterStartTime => Value::TimestampTz(crate::session::server_start_time()),
        Func::FormatType => {
            let typmod = match &args[1] {
                Value::Int32(m) => Some(*m),
                _ => None,
            };
            match &args[0] {
                Value::Int64(oid) => Value::Text(builtin::format_type(*oid, typmod)),
                _ => Value::Null,
            }
        }
        Func::PgSizePretty => match &args[0] {
            Value::Int64(n) => Value::Text(builtin::size_pretty(*n)),
            other => return Err(Error::internal(format!("pg_size_pretty of {other:?}"))),
        },
        Func::CurrentSchema => Value::Text("public".into()),
        Func::CurrentDatabase => Value::Text(env.database.into()),
        Func::CurrentUser => Value::Text(env.user.into()),
        Func::CurrentSetting => {
            let Value::Text(name) = &args[0] else {
                return Err(Error::internal("current_setting of a non-text name"));
            };
            match crate::session::setting_value(env.settings, env.server_settings, name) {
                Some(value) => Value::Text(value),
                None if args.get(1) == Some(&Value::Bool(true)) => Value::Null,
                None => return Err(Error::UnrecognizedParameter { name: name.clone() }),
            }
        }
        Func::AtTimeZone => {
            let zone =
                match &args[1] {
                    Value::Text(name) => types::Zone::from_setting(name)
                        .map(|(z, _)| z)
                        .ok_or_else(|| Error::InvalidParameterValue {
                            message: format!("time zone \"{name}\" not recognized"),
                        })?,
                    Value::Interval(i) if i.months == 0 && i.days == 0 => {
                        types::Zone::Fixed(i32::try_from(i.micros / 1_000_000).map_err(|_| {
                            Error::InvalidParameterValue {
                                message: "interval time zone out of range".into(),
                            }
                        })?)
                    }
                    Value::Interval(_) => {
                        let text = types::format_text(&args[1], &DataType::Interval);
                        return Err(Error::InvalidParameterValue {
                            message: format!(
                                "interval time zone \"{text}\" must not include months or days"
                            ),
                        });
                    }
                    other => return Err(Error::internal(format!("time zone {other:?}"))),
                };
            let range =
                || Error::DatetimeFieldOverflow { message: "timestamp out of range".into() };
            match &args[0] {
                Value::Timestamp(t) => Value::TimestampTz(zone.to_utc(*t).ok_or_else(range)?),
                Value::TimestampTz(t) => Value::Timestamp(zone.to_local(*t).ok_or_else(range)?),
                other => return Err(Error::internal(format!("AT TIME ZONE of {other:?}"))),
            }
        }
        Func::ToTimestamp => {
            let Value::Float64(secs) = args[0] else {
                return Err(Error::internal(format!("to_timestamp of {:?}", args[0])));
            };
            if secs.is_nan() {
                return Err(Error::DatetimeFieldOverflow {
                    message: "timestamp cannot be NaN".into(),
                });
            }
            let micros = (secs * 1e6).round_ties_even();
            let t = (micros.abs() < 9.2e18)
                .then(|| chrono::DateTime::from_timestamp_micros(micros as i64))
                .flatten()
                .ok_or_else(|| Error::DatetimeFieldOverflow {
                    message: format!("timestamp out of range: \"{secs}\""),
                })?;
            Value::TimestampTz(t.naive_utc())
        }
        Func::ToChar => {
            let Value::Text(template) = &args[1] else {
                return Err(Error::internal(format!("to_char template {:?}", args[1])));
            };
            Value::Text(match &args[0] {
                Value::Timestamp(t) => to_char::to_char(*t, None, template),
                Value::TimestampTz(utc) => {
                    let zone = to_char::ZoneInfo {
                        offset: env.zone.offset_at(*utc),
                        abbreviation: env.zone.abbreviation_at(*utc),
                    };
                    to_char::to_char(local_time(*utc, env.zone)?, Some(&zone), template)
                }
                other => return Err(Error::internal(format!("to_char of {other:?}"))),
            })
        }
        // age of timestamptz values compares their local times in the session's zone.
        Func::Age => {
            let local = |v: &Value| match v {
                Value::Timestamp(t) => Ok(*t),
                Value::TimestampTz(t) => local_time(*t, env.zone),
                other => Err(Error::internal(format!("age of {other:?}"))),
            };
            Value::Interval(types::age(local(&args[0])?, local(&args[1])?)?)
        }
        // The fields of a timestamptz are those of its local time in the session's zone.
        Func::Extract | Func::DatePart | Func::DateTrunc
            if matches!(args[1], Value::TimestampTz(_)) =>
        {
            let Value::TimestampTz(t) = args[1] else { unreachable!("matched") };
            if f != Func::DateTrunc
                && text_arg(&args[0]).is_some_and(|u| u.eq_ignore_ascii_case("epoch"))
            {
                // The epoch counts from 1970-01-01 UTC, whatever the zone.
                return builtin::call(f, &[args[0].clone(), Value::Timestamp(t)]);
            }
            let local = Value::Timestamp(local_time(t, env.zone)?);
            match builtin::call(f, &[args[0].clone(), local])? {
                Value::Timestamp(t) => Value::TimestampTz(
                    env.zone.to_utc(t).ok_or_else(|| Error::internal("date_trunc out of range"))?,
                ),
                other => other,
            }
        }
        Func::Jsonb(op) => jsonb::call(op, &args, env.zone)?,
        Func::Array(op) => array::call(op, args, env.zone)?,
        other => builtin::call(other, &args)?,
    })
}

/// A value fed to a jsonb or json aggregate.
#[derive(Clone)]
enum JsonItem {
    /// For the jsonb aggregates.
    Jsonb(types::Jsonb),
    /// For the json aggregates: the text to_json gave.
    Text(std::sync::Arc<str>),
}

impl JsonItem {
    fn jsonb(self) -> types::Jsonb {
        match self {
            JsonItem::Jsonb(j) => j,
            JsonItem::Text(_) => types::Jsonb::Null,
        }
    }

    fn text(self) -> String {
        match self {
            JsonItem::Jsonb(j) => j.to_text(),
            JsonItem::Text(s) => s.to_string(),
        }
    }
}

/// An aggregate's running state.
#[derive(Clone)]
enum Acc {
    Count(i64, Option<HashSet<Vec<u8>>>),
    Sum(Value, i64, Option<HashSet<Vec<u8>>>),
    MinMax(Value),
    /// string_agg: the text so far (built by `Ctx::aggregate`, which evaluates delimiters).
    Text(Option<String>, Option<HashSet<Vec<u8>>>),
    /// bool_and / bool_or.
    Bool(Option<bool>),
    /// jsonb_agg / json_agg (elements) and jsonb_object_agg / json_object_agg (pairs): what
    /// was fed, each value as jsonb or (the json aggregates) as json text.
    Jsonb(Option<Vec<(Option<String>, JsonItem)>>, Option<HashSet<Vec<u8>>>),
    /// array_agg: the values fed, NULLs included.
    Array(Option<Vec<Value>>, Option<HashSet<Vec<u8>>>),
    /// The statistics over numeric input (integers arrive as numeric): count, exact sum and
    /// sum of squares, and whether a NaN or an infinity was seen (PostgreSQL's
    /// `NumericAggState`).
    VarNumeric {
        n: i64,
        sum: Numeric,
        squares: Numeric,
        special: bool,
        seen: Option<HashSet<Vec<u8>>>,
    },
    /// The statistics over double precision: PostgreSQL's Youngs-Cramer transition values
    /// (`float8_accum`): N, Sx and Sxx.
    VarFloat {
        n: f64,
        sx: f64,
        sxx: f64,
        seen: Option<HashSet<Vec<u8>>>,
    },
}

impl Acc {
    fn new(call: &AggCall) -> Acc {
        let seen = call.distinct.then(HashSet::new);
        match call.func {
            AggFunc::CountStar | AggFunc::Count => Acc::Count(0, seen),
            AggFunc::Sum | AggFunc::Avg => Acc::Sum(Value::Null, 0, seen),
            AggFunc::Min | AggFunc::Max => Acc::MinMax(Value::Null),
            // Every key is in a plain GROUP BY's one set; grouping sets overwrite it per set.
            AggFunc::Grouping => Acc::MinMax(Value::Int32(0)),
            AggFunc::StringAgg => Acc::Text(None, seen),
            AggFunc::JsonbAgg
            | AggFunc::JsonbObjectAgg
            | AggFunc::JsonAgg
            | AggFunc::JsonAggRows
            | AggFunc::JsonObjectAgg => Acc::Jsonb(None, seen),
            AggFunc::ArrayAgg => Acc::Array(None, seen),
            AggFunc::BoolAnd | AggFunc::BoolOr => Acc::Bool(None),
            AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
                if call.data_type == DataType::Float64 {
                    Acc::VarFloat { n: 0.0, sx: 0.0, sxx: 0.0, seen }
                } else {
                    Acc::VarNumeric {
                        n: 0,
                        sum: Numeric::ZERO,
                        squares: Numeric::ZERO,
                        special: false,
                        seen,
                    }
                }
            }
        }
    }

    fn first_time(seen: &mut Option<HashSet<Vec<u8>>>, v: &Value) -> bool {
        match seen {
            None => true,
            Some(s) => {
                let mut k = Vec::new();
                types::encode_key(std::slice::from_ref(v), &mut k);
                s.insert(k)
            }
        }
    }

    /// Adds one row's value (string_agg: with its row's delimiter, which goes before every
    /// value but the first).
    fn feed(&mut self, call: &AggCall, v: Value, delimiter: Option<Value>) -> Result<()> {
        if let Acc::Array(items, seen) = self {
            if Acc::first_time(seen, &v) {
                items.get_or_insert_with(Vec::new).push(v);
            }
            return Ok(());
        }
        if let Acc::Jsonb(items, seen) = self {
            if !Acc::first_time(seen, &v) {
                return Ok(());
            }
            let json = |v: Option<Value>| match v {
                Some(Value::Jsonb(j)) => (*j).clone(),
                _ => types::Jsonb::Null,
            };
            // json_agg's values arrive as to_json gave them (NULL is `null`).
            let item = |v: Option<Value>| match v {
                Some(Value::Json(s)) => JsonItem::Text(s),
                Some(Value::Null) | None
                    if matches!(
                        call.func,
                        AggFunc::JsonAgg | AggFunc::JsonAggRows | AggFunc::JsonObjectAgg
                    ) =>
                {
                    JsonItem::Text("null".into())
                }
                other => JsonItem::Jsonb(json(other)),
            };
            let item = if matches!(call.func, AggFunc::JsonbObjectAgg | AggFunc::JsonObjectAgg) {
                let key = json(Some(v))
                    .into_key()?
                    .ok_or_else(|| types::jsonb_error("field name must not be null"))?;
                (Some(key), item(delimiter))
            } else {
                (None, item(Some(v)))
            };
            items.get_or_insert_with(Vec::new).push(item);
            return Ok(());
        }
        if let Acc::Text(text, seen) = self {
            let Value::Text(s) = &v else { return Ok(()) };
            if !Acc::first_time(seen, &v) {
                return Ok(());
            }
            if let (Some(t), Some(Value::Text(d))) = (text.as_mut(), &delimiter) {
                t.push_str(d);
            }
            text.get_or_insert_with(String::new).push_str(s);
            return Ok(());
        }
        self.add(call, v)
    }

    fn add(&mut self, call: &AggCall, v: Value) -> Result<()> {
        if v.is_null() && call.func != AggFunc::CountStar {
            return Ok(());
        }
        match self {
            Acc::Count(n, seen) => {
                if call.func == AggFunc::CountStar || Self::first_time(seen, &v) {
                    *n += 1;
                }
            }
            Acc::Sum(sum, n, seen) => {
                if Self::first_time(seen, &v) {
                    *sum = if sum.is_null() { v } else { types::arith(ArithOp::Add, sum, &v)? };
                    *n += 1;
                }
            }
            Acc::MinMax(cur) => {
                let replace = cur.is_null() || {
                    let o = types::sort_cmp(&v, cur);
                    (call.func == AggFunc::Min && o == Ordering::Less)
                        || (call.func == AggFunc::Max && o == Ordering::Greater)
                };
                if replace {
                    *cur = v;
                }
            }
            Acc::Text(..) | Acc::Jsonb(..) | Acc::Array(..) => {
                return Err(Error::internal(
                    "string_agg, array_agg and the jsonb aggregates are fed",
                ))
            }
            Acc::Bool(b) => {
                if let Value::Bool(x) = v {
                    *b = Some(match (*b, call.func) {
                        (None, _) => x,
                        (Some(acc), AggFunc::BoolAnd) => acc && x,
                        (Some(acc), _) => acc || x,
                    });
                }
            }
            Acc::VarNumeric { n, sum, squares, special, seen } => {
                if let (Value::Numeric(x), true) = (&v, Self::first_time(seen, &v)) {
                    *n += 1;
                    if !x.is_finite() {
                        *special = true;
                    } else if !*special {
                        *sum = sum.add(x)?;
                        *squares = squares.add(&x.mul(x)?)?;
                    }
                }
            }
            Acc::VarFloat { n, sx, sxx, seen } => {
                if let (Value::Float64(x), true) = (&v, Self::first_time(seen, &v)) {
                    // float8_accum, step for step.
                    let (x, old_n, old_sx) = (*x, *n, *sx);
                    *n += 1.0;
                    *sx += x;
                    if old_n > 0.0 {
                        let tmp = x * *n - *sx;
                        *sxx += tmp * tmp / (*n * old_n);
                        if sx.is_infinite() || sxx.is_infinite() {
                            if !old_sx.is_infinite() && !x.is_infinite() {
                                return Err(Error::NumericOutOfRange {
                                    message: "value out of range: overflow".into(),
                                });
                            }
                            *sxx = f64::NAN;
                        }
                    } else if x.is_nan() || x.is_infinite() {
                        *sxx = f64::NAN;
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(self, call: &AggCall) -> Result<Value> {
        Ok(match self {
            Acc::Count(n, _) => Value::Int64(n),
            Acc::Sum(sum, n, _) => {
                if call.func == AggFunc::Avg && !sum.is_null() {
                    let count = match sum {
                        Value::Float64(_) => Value::Float64(n as f64),
                        _ => Value::Numeric(n.into()),
                    };
                    types::arith(ArithOp::Div, &sum, &count)?
                } else {
                    sum
                }
            }
            Acc::MinMax(v) => match (v, call.data_type) {
                (Value::Text(s), DataType::Text) => Value::Text(s),
                (v, _) => v,
            },
            Acc::Text(text, _) => text.map_or(Value::Null, Value::Text),
            Acc::Bool(b) => b.map_or(Value::Null, Value::Bool),
            Acc::Jsonb(None, _) | Acc::Array(None, _) => Value::Null,
            Acc::Array(Some(items), _) => Value::Array(std::sync::Arc::new(items)),
            Acc::Jsonb(Some(items), _) => match call.func {
                AggFunc::JsonAggRows => Value::Json(
                    types::json::array_of_rows(
                        &items.into_iter().map(|(_, v)| v.text()).collect::<Vec<_>>(),
                    )
                    .into(),
                ),
                AggFunc::JsonAgg => Value::Json(
                    types::json::array(
                        &items.into_iter().map(|(_, v)| v.text()).collect::<Vec<_>>(),
                    )
                    .into(),
                ),
                AggFunc::JsonObjectAgg => Value::Json(
                    types::json::object_agg(
                        &items
                            .into_iter()
                            .map(|(k, v)| (k.unwrap_or_default(), v.text()))
                            .collect::<Vec<_>>(),
                    )
                    .into(),
                ),
                AggFunc::JsonbObjectAgg => Value::Jsonb(std::sync::Arc::new(types::Jsonb::object(
                    items.into_iter().map(|(k, v)| (k.unwrap_or_default(), v.jsonb())).collect(),
                ))),
                _ => Value::Jsonb(std::sync::Arc::new(types::Jsonb::Array(
                    items.into_iter().map(|(_, v)| v.jsonb()).collect(),
                ))),
            },
            Acc::VarFloat { n, sxx, .. } => {
                let sample = matches!(call.func, AggFunc::VarSamp | AggFunc::StddevSamp);
                let root = matches!(call.func, AggFunc::StddevSamp | AggFunc::StddevPop);
                if n == 0.0 || (sample && n <= 1.0) {
                    return Ok(Value::Null);
                }
                let variance = if sample { sxx / (n - 1.0) } else { sxx / n };
                Value::Float64(if root { variance.sqrt() } else { variance })
            }
            Acc::VarNumeric { n, sum, squares, special, .. } => {
                // numeric_stddev_internal, step for step.
                let sample = matches!(call.func, AggFunc::VarSamp | AggFunc::StddevSamp);
                let root = matches!(call.func, AggFunc::StddevSamp | AggFunc::StddevPop);
                if n <= i64::from(sample) {
                    return Ok(Value::Null);
                }
                if special {
                    return Ok(Value::Numeric(Numeric::NAN));
                }
                let count = Numeric::from(n);
                let numerator = count.mul(&squares)?.sub(&sum.mul(&sum)?)?;
                if numerator.signum() <= 0 {
                    // Round-off cannot make it negative here (exact arithmetic), but a zero
                    // variance is the integer 0, as in PostgreSQL.
                    return Ok(Value::Numeric(Numeric::ZERO));
                }
                let denominator =
                    if sample { count.mul(&Numeric::from(n - 1))? } else { count.mul(&count)? };
                let variance = numerator.div(&denominator)?;
                Value::Numeric(if root { variance.sqrt_at(variance.scale())? } else { variance })
            }
        })
    }
}

/// Every row of `table` in key order, read in `t` (DDL that rewrites or removes all rows).
pub fn all_rows(t: &mut txn::Transaction, table: &Table) -> Result<Vec<(Vec<u8>, txn::Row)>> {
    let mut rows = Vec::new();
    t.scan(tid(table), None, Bound::Unbounded, Bound::Unbounded, false, &mut |k, r| {
        rows.push((k.to_vec(), r.clone()));
        true
    })
    .map_err(txn_error)?;
    Ok(rows)
}

/// Maps an engine error to a SQL error (unique violations are mapped by the DML executor, which
/// knows the constraint name and the key).
pub fn txn_error(e: txn::Error) -> Error {
    match e {
        txn::Error::Conflict { .. } => Error::SerializationFailure {
            message: "could not serialize access due to concurrent update".into(),
        },
        txn::Error::UniqueViolation { .. } => Error::UniqueViolation {
            constraint: String::new(),
            detail: String::new(),
            table: String::new(),
        },
        // A transaction whose value record exceeds what one log record may hold (the ring or
        // segment size): rolled back, the log is unaffected.
        txn::Error::Log(e) if matches!(*e, wal::Error::RecordSize { .. }) => {
            let wal::Error::RecordSize { len, max, .. } = *e else { unreachable!() };
            Error::ProgramLimitExceeded {
                message: format!(
                    "transaction too large: its log record would be {len} bytes, the limit is \
                     {max} bytes; split it into smaller transactions"
                ),
            }
        }
        // A failed log device: never acknowledged.
        txn::Error::Log(e) => {
            Error::IoError { message: format!("could not write to the log: {e}") }
        }
        other => Error::internal(other.to_string()),
    }
}

/// For `Project` over a point get whose expressions (and the scan's filter) read the scanned
/// row only directly (no subquery, which could reach it as an outer row): the columns they
/// read. The point get can then record a projected read of just those columns.
fn projected_point_get(input: &Plan, exprs: &[Expr]) -> Option<Vec<usize>> {
    let Plan::Scan { access: Access::PointGet(_), filter, .. } = input else { return None };
    let mut used = Vec::new();
    for e in exprs.iter().chain(filter.iter()) {
        if !crate::bind::row_local(e) {
            return None;
        }
        crate::bind::walk_expr(e, &mut |x| {
            if let Expr::Column(i) = x {
                used.push(*i);
            }
        });
    }
    used.sort_unstable();
    used.dedup();
    Some(used)
}

/// The projection of a stored row on columns `cols`: their values, encoded. (A row that does
/// not decode projects to itself, whole.)
/// Appends (key, row) to `out` unless a row of that key is there already (`seen` holds the
/// keys once `out` is too long to search).
fn push_distinct(
    out: &mut Vec<(Vec<u8>, Vec<Value>)>,
    seen: &mut HashSet<Vec<u8>>,
    key: Vec<u8>,
    row: Vec<Value>,
) {
    const SEARCHED: usize = 32;
    if out.len() < SEARCHED {
        if out.iter().any(|(k, _)| *k == key) {
            return;
        }
    } else {
        if seen.is_empty() {
            seen.extend(out.iter().map(|(k, _)| k.clone()));
        }
        if !seen.insert(key.clone()) {
            return;
        }
    }
    out.push((key, row));
}

fn projection(types: Vec<DataType>, cols: Vec<usize>) -> txn::Projection {
    std::sync::Arc::new(move |row: &[u8]| match types::decode_row(row, &types) {
        Ok(values) => {
            let picked: Vec<Value> =
                cols.iter().map(|&c| values.get(c).cloned().unwrap_or(Value::Null)).collect();
            let mut out = Vec::with_capacity(32);
            types::encode_row(&picked, &mut out);
            out
        }
        Err(_) => row.to_vec(),
    })
}

/// The order of two rows' sort-key values under `keys` (direction, NULLS FIRST / LAST).
fn compare_keys(keys: &[SortKey], a: &[Value], b: &[Value]) -> Ordering {
    for (i, key) in keys.iter().enumerate() {
        let (x, y) = (&a[i], &b[i]);
        let ord = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if key.nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if key.nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, false) => {
                let o = types::sort_cmp(x, y);
                if key.desc {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// A RANGE frame offset PostgreSQL refuses at run time (`22013`): negative, or NaN.
fn range_offset_invalid(offset: &Value) -> bool {
    match offset {
        Value::Int64(n) => *n < 0,
        Value::Float64(f) => f.is_nan() || *f < 0.0,
        Value::Numeric(d) => d.is_nan() || d.signum() < 0,
        Value::Interval(i) => i.span() < 0,
        _ => false,
    }
}

/// `base ± offset` for PostgreSQL's `in_range(val, base, offset, sub, less)`, computed once per
/// frame bound: is `val` at most (`less`) or at least `base ± offset`?
enum RangeTarget {
    /// Integer keys, summed without overflow.
    Int(i128),
    /// Float keys: NaN sorts after everything, and an infinite offset from an infinite base
    /// takes in every value (`in_range_float8_float8`).
    Float { base: f64, offset: f64, sub: bool },
    /// Numeric keys (NaN as for floats), and dates and timestamps (an interval offset).
    Value(Value),
    /// A NaN numeric base: in range of a NaN value, and on the far side of any other.
    NanBase,
}

impl RangeTarget {
    fn new(base: &Value, offset: &Value, sub: bool, zone: types::Zone) -> Result<RangeTarget> {
        let op = if sub { ArithOp::Sub } else { ArithOp::Add };
        Ok(match (base, offset) {
            (Value::Float32(b), Value::Float64(o)) => {
                RangeTarget::Float { base: f64::from(*b), offset: *o, sub }
            }
            (Value::Float64(b), Value::Float64(o)) => {
                RangeTarget::Float { base: *b, offset: *o, sub }
            }
            (Value::Numeric(b), _) if b.is_nan() => RangeTarget::NanBase,
            (Value::Date(d), Value::Interval(_)) => RangeTarget::Value(types::arith_zoned(
                op,
                &Value::Timestamp(d.and_time(chrono::NaiveTime::MIN)),
                offset,
                zone,
            )?),
            (_, Value::Int64(o)) => {
                let b = range_int(base)
                    .ok_or_else(|| Error::internal("RANGE key is not an integer"))?;
                RangeTarget::Int(if sub { b - i128::from(*o) } else { b + i128::from(*o) })
            }
            _ => RangeTarget::Value(types::arith_zoned(op, base, offset, zone)?),
        })
    }

    fn in_range(&self, val: &Value, less: bool) -> bool {
        let ord = match self {
            RangeTarget::Int(sum) => match range_int(val) {
                Some(v) => v.cmp(sum),
                None => return false,
            },
            RangeTarget::Float { base, offset, sub } => {
                let v = match val {
                    Value::Float32(f) => f64::from(*f),
                    Value::Float64(f) => *f,
                    _ => return false,
                };
                if v.is_nan() {
                    return if base.is_nan() { true } else { !less };
                }
                if base.is_nan() {
                    return less;
                }
                if offset.is_infinite()
                    && base.is_infinite()
                    && (if *sub { *base > 0.0 } else { *base < 0.0 })
                {
                    return true;
                }
                let sum = if *sub { base - offset } else { base + offset };
                return if less { v <= sum } else { v >= sum };
            }
            RangeTarget::NanBase => {
                return match val {
                    Value::Numeric(v) if v.is_nan() => true,
                    _ => less,
                }
            }
            RangeTarget::Value(sum) => {
                if let Value::Numeric(v) = val {
                    if v.is_nan() {
                        return !less;
                    }
                }
                // A date key against its timestamp bound compares as midnight of that date.
                match types::compare(val, sum) {
                    Some(o) => o,
                    None => return false,
                }
            }
        };
        if less {
            ord != Ordering::Greater
        } else {
            ord != Ordering::Less
        }
    }
}

/// An integer key as `i128` (`None` for any other value).
fn range_int(v: &Value) -> Option<i128> {
    match v {
        Value::Int16(n) => Some(i128::from(*n)),
        Value::Int32(n) => Some(i128::from(*n)),
        Value::Int64(n) => Some(i128::from(*n)),
        _ => None,
    }
}
