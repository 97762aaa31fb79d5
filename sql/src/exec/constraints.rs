//! The constraints a written row must meet, checked where statements write rows: type
//! modifiers, NOT NULL and CHECK ([`check_row`]), unique keys (the engine's
//! `UniqueViolation`, named here by [`unique_error`]) and foreign keys — both directions: a
//! written row's references must exist ([`check_foreign_keys`]), and a deleted or re-keyed
//! row's referencing rows are acted on as their constraint says ([`Referential`]: NO ACTION,
//! RESTRICT, CASCADE, SET NULL, SET DEFAULT), as PostgreSQL's referential-integrity triggers
//! do when a statement ends.
//!
//! A DEFERRABLE foreign key's NO ACTION checks may wait for the commit instead ([`FkTiming`]
//! says which do, from the key's `INITIALLY` and the transaction's SET CONSTRAINTS): the
//! statement records them as [`PendingCheck`]s, and [`check_pending`] runs them against the
//! rows as they are then — a written row no longer there as written is not checked, a removed
//! key put back is no longer missing — as PostgreSQL's deferred triggers do.

use std::collections::{HashMap, VecDeque};

use catalog::{DataType, Deferral, FkAction, ForeignKey, Snapshot, Table, TableId};

use super::{column_types, eval_pure, insert_row, primary_key, tid, txn_error, Ctx, Env};
use crate::error::{Error, Result};
use crate::types::{self, Value};

/// Type-modifier, NOT NULL and CHECK constraints for a row about to be written, in
/// PostgreSQL's order (`ExecConstraints`): the whole row is coerced to its columns' types
/// first, then NOT NULL is checked column by column, then each CHECK in name order (`checks`
/// comes sorted); a CHECK that is NULL passes.
pub(crate) fn check_row(
    table: &Table,
    checks: &[crate::plan::Check],
    row: Vec<Value>,
    env: &Env<'_>,
) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(row.len());
    for (v, c) in row.into_iter().zip(&table.columns) {
        let v = match c.data_type {
            DataType::Varchar(Some(_)) | DataType::Char(_) | DataType::Numeric(Some(_))
                if !v.is_null() =>
            {
                types::cast(v, &c.data_type, &c.data_type, types::CastKind::Assignment)?
            }
            _ => v,
        };
        out.push(v);
    }
    if let Some(c) = out.iter().zip(&table.columns).find(|(v, c)| v.is_null() && c.not_null) {
        return Err(Error::NotNullViolation {
            column: c.1.name.clone(),
            table: table.name.clone(),
            row: Some(failing_row(table, &out).into()),
        });
    }
    for check in checks {
        if eval_pure(&check.expr, &out, &[], &[], env)? == Value::Bool(false) {
            return Err(Error::CheckViolation {
                constraint: check.name.clone(),
                table: table.name.clone(),
                row: failing_row(table, &out).into(),
            });
        }
    }
    Ok(out)
}

/// PostgreSQL's DETAIL for a row that violates a constraint: "Failing row contains (…)." with
/// each value in its text form, `null` for NULL, and values longer than 64 bytes cut there
/// with "..." (`ExecBuildSlotValueDescription`).
fn failing_row(table: &Table, row: &[Value]) -> String {
    const MAX_FIELD: usize = 64;
    let mut out = String::from("Failing row contains (");
    for (i, (v, c)) in row.iter().zip(&table.columns).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if v.is_null() {
            out.push_str("null");
            continue;
        }
        let text = types::format_text(v, &c.data_type);
        if text.len() <= MAX_FIELD {
            out.push_str(&text);
        } else {
            let cut = (0..=MAX_FIELD).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
            out.push_str(&text[..cut]);
            out.push_str("...");
        }
    }
    out.push_str(").");
    out
}

/// Which DEFERRABLE foreign keys' checks wait for the commit in a transaction: their
/// `INITIALLY`, unless SET CONSTRAINTS said otherwise — for all of them, then for some by
/// name (the later statement wins).
#[derive(Debug, Clone, Default)]
pub struct FkTiming {
    /// `SET CONSTRAINTS ALL DEFERRED` (true) or `IMMEDIATE` (false), the last one.
    all: Option<bool>,
    /// `SET CONSTRAINTS name, … DEFERRED | IMMEDIATE` since then, by constraint name.
    named: Vec<(String, bool)>,
}

impl FkTiming {
    /// Whether `fk`'s NO ACTION checks wait for the commit now.
    pub(crate) fn deferred(&self, fk: &ForeignKey) -> bool {
        match fk.deferral {
            Deferral::NotDeferrable => false,
            initially => self
                .named
                .iter()
                .rev()
                .find(|(n, _)| *n == fk.name)
                .map(|(_, d)| *d)
                .or(self.all)
                .unwrap_or(initially == Deferral::Deferred),
        }
    }

    /// SET CONSTRAINTS: `names` (`None`: ALL) deferred or immediate from now on.
    pub(crate) fn set(&mut self, names: Option<&[String]>, deferred: bool) {
        match names {
            None => {
                self.all = Some(deferred);
                self.named.clear();
            }
            Some(names) => {
                self.named.retain(|(n, _)| !names.contains(n));
                self.named.extend(names.iter().map(|n| (n.clone(), deferred)));
            }
        }
    }
}

/// A NO ACTION check of a deferred foreign key, run when the transaction commits (or when SET
/// CONSTRAINTS makes the key immediate).
#[derive(Debug, Clone)]
pub enum PendingCheck {
    /// A row was written: the row it references must exist.
    Written {
        /// The referencing table.
        table: TableId,
        /// The foreign key's name.
        fk: String,
        /// The row as written.
        row: Vec<Value>,
    },
    /// A referenced key was deleted or changed: no row may reference it.
    Removed {
        /// The referenced table.
        parent: TableId,
        /// The referencing table.
        child: TableId,
        /// The foreign key's name.
        fk: String,
        /// The key's old values (the referenced columns').
        key: Vec<Value>,
    },
}

impl PendingCheck {
    /// The foreign key's name.
    pub(crate) fn constraint(&self) -> &str {
        match self {
            PendingCheck::Written { fk, .. } | PendingCheck::Removed { fk, .. } => fk,
        }
    }
}

/// Runs pending checks against the rows as they are now, in the order they were recorded.
/// A check of a foreign key that no longer exists (dropped since) is not run.
pub(crate) fn check_pending(
    ctx: &mut Ctx<'_>,
    snapshot: &Snapshot,
    checks: Vec<PendingCheck>,
) -> Result<()> {
    for check in checks {
        match check {
            PendingCheck::Written { table, fk, row } => {
                let Some(table) = snapshot.table_by_id(table) else { continue };
                let Some(fk) = table.foreign_keys.iter().find(|f| f.name == fk) else { continue };
                if let Err(e) = check_foreign_key(ctx, snapshot, table, fk, &row) {
                    if still_live(ctx, table, &row)? {
                        return Err(e);
                    }
                }
            }
            PendingCheck::Removed { parent, child, fk, key } => {
                let (Some(parent), Some(child)) =
                    (snapshot.table_by_id(parent), snapshot.table_by_id(child))
                else {
                    continue;
                };
                let Some(fk) = child.foreign_keys.iter().find(|f| f.name == fk) else { continue };
                if row_exists(ctx, parent, &fk.ref_columns, &key, true)?
                    || referencing_rows(ctx, child, parent, fk, &key)?.is_empty()
                {
                    continue;
                }
                return Err(still_referenced(parent, child, fk, &key));
            }
        }
    }
    Ok(())
}

/// `23503` for `parent`'s key `vals`, still referenced from `child` through `fk`.
fn still_referenced(parent: &Table, child: &Table, fk: &ForeignKey, vals: &[Value]) -> Error {
    Error::ForeignKeyViolation {
        constraint: fk.name.as_str().into(),
        detail: format!(
            "{} is still referenced from table \"{}\".",
            key_text(parent, &fk.ref_columns, vals),
            child.name
        )
        .into(),
        table: parent.name.as_str().into(),
        referenced_from: Some(child.name.as_str().into()),
    }
}

/// Foreign key `fk` of `table` holds for `row`: the referenced row exists, or a key column is
/// NULL.
pub(crate) fn check_foreign_key(
    ctx: &mut Ctx<'_>,
    snapshot: &Snapshot,
    table: &Table,
    fk: &ForeignKey,
    row: &[Value],
) -> Result<()> {
    let vals: Vec<Value> = fk.columns.iter().map(|c| row[*c as usize].clone()).collect();
    if vals.iter().any(|v| v.is_null()) {
        return Ok(());
    }
    let Some(parent) = snapshot.table_by_id(fk.ref_table) else { return Ok(()) };
    if row_exists(ctx, parent, &fk.ref_columns, &vals, fk_keyed(table, parent, fk))? {
        return Ok(());
    }
    Err(Error::ForeignKeyViolation {
        constraint: fk.name.as_str().into(),
        detail: format!(
            "{} is not present in table \"{}\".",
            key_text(table, &fk.columns, &vals),
            parent.name
        )
        .into(),
        table: table.name.as_str().into(),
        referenced_from: None,
    })
}

/// Does `table` have a row whose `cols` equal `vals`? Through the primary key or an index on
/// exactly those columns when there is one and `keyed`, else a scan ([`matching_rows`]).
fn row_exists(
    ctx: &mut Ctx<'_>,
    table: &Table,
    cols: &[u16],
    vals: &[Value],
    keyed: bool,
) -> Result<bool> {
    if let Some(pk) = table.primary_index().filter(|_| keyed) {
        if pk.columns == cols {
            let mut key = Vec::new();
            types::encode_key(vals, &mut key);
            return Ok(ctx.txn.get(tid(table), &key).map_err(txn_error)?.is_some());
        }
    }
    Ok(!matching_rows(ctx, table, cols, vals, keyed, true)?.is_empty())
}

/// Whether the values of one side of `fk` (between `child` and `parent`) can be looked up by
/// key on the other: each pair of columns has types whose values compare equal exactly when
/// their key encodings are equal (integers of any width, floats, numerics of one typmod,
/// text and varchar, `char(n)` of one length, or one type). Otherwise the lookup scans and
/// compares values ([`matching_rows`]).
fn fk_keyed(child: &Table, parent: &Table, fk: &ForeignKey) -> bool {
    use catalog::DataType as T;
    fk.columns.iter().zip(&fk.ref_columns).all(|(c, r)| {
        let (a, b) =
            (&child.columns[*c as usize].data_type, &parent.columns[*r as usize].data_type);
        match (a, b) {
            (T::Int16 | T::Int32 | T::Int64, T::Int16 | T::Int32 | T::Int64) => true,
            (T::Float32 | T::Float64, T::Float32 | T::Float64) => true,
            (T::Text | T::Varchar(_), T::Text | T::Varchar(_)) => true,
            (T::Numeric(_), _) | (T::Char(_), _) => a == b,
            _ => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    })
}

/// The rows of `table` (primary key, decoded row) whose `cols` equal `vals` — at most one if
/// `first` — through the primary key or an index on exactly those columns (in any order) when
/// there is one and `keyed` (the values' key encodings are the columns': [`fk_keyed`]), else a
/// scan of the whole table comparing values.
fn matching_rows(
    ctx: &mut Ctx<'_>,
    table: &Table,
    cols: &[u16],
    vals: &[Value],
    keyed: bool,
    first: bool,
) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
    let t = tid(table);
    let types_ = column_types(table);
    let mut key = Vec::new();
    if let Some(pk) = table.primary_index().filter(|_| keyed) {
        if pk.columns == cols {
            types::encode_key(vals, &mut key);
            return match ctx.txn.get(t, &key).map_err(txn_error)? {
                Some(bytes) => Ok(vec![(key, types::decode_row(&bytes, &types_)?)]),
                None => Ok(Vec::new()),
            };
        }
    }
    let mut sorted: Vec<(u16, Value)> = cols.iter().copied().zip(vals.iter().cloned()).collect();
    let index = table.indexes.iter().filter(|_| keyed).find(|i| {
        !i.primary && i.columns.len() == cols.len() && i.columns.iter().all(|c| cols.contains(c))
    });
    let idx = match index {
        Some(i) => {
            sorted.sort_by_key(|(c, _)| i.columns.iter().position(|x| x == c));
            let ordered: Vec<Value> = sorted.iter().map(|(_, v)| v.clone()).collect();
            types::encode_key(&ordered, &mut key);
            Some(txn::IndexId(i.id.0))
        }
        None => None,
    };
    // Prefix bounds (`Transaction::scan`): every entry whose index key is `key`, or all.
    let (lo, hi) = match idx {
        Some(_) => (std::ops::Bound::Included(&key[..]), std::ops::Bound::Included(&key[..])),
        None => (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
    };
    let mut matches = Vec::new();
    let mut err = None;
    ctx.txn
        .scan(t, idx, lo, hi, false, &mut |k, bytes| {
            match types::decode_row(bytes, &types_) {
                Ok(row) => {
                    if cols.iter().zip(vals).all(|(c, v)| {
                        types::compare(&row[*c as usize], v) == Some(std::cmp::Ordering::Equal)
                    }) {
                        matches.push((k.to_vec(), row));
                        return !first;
                    }
                }
                Err(e) => {
                    err = Some(e);
                    return false;
                }
            }
            true
        })
        .map_err(txn_error)?;
    match err {
        Some(e) => Err(e),
        None => Ok(matches),
    }
}

/// The rows of `child` (primary key, decoded row) whose `fk` columns equal `vals`, a key of
/// `parent`.
fn referencing_rows(
    ctx: &mut Ctx<'_>,
    child: &Table,
    parent: &Table,
    fk: &ForeignKey,
    vals: &[Value],
) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
    matching_rows(ctx, child, &fk.columns, vals, fk_keyed(child, parent, fk), false)
}

/// `Key (a, b)=(1, x)`: the start of PostgreSQL's detail for a key of `table`'s columns `cols`
/// holding `vals` (each printed as its column's type).
fn key_text(table: &Table, cols: &[u16], vals: &[Value]) -> String {
    let names: Vec<&str> = cols.iter().map(|c| table.columns[*c as usize].name.as_str()).collect();
    let texts: Vec<String> = cols
        .iter()
        .zip(vals)
        .map(|(c, v)| types::format_text(v, &table.columns[*c as usize].data_type))
        .collect();
    format!("Key ({})=({})", names.join(", "), texts.join(", "))
}

/// Writes `table`'s row `old` (under `key`) as `new`, whose constraints were checked: in
/// place, or — when its primary key changed — deleted and inserted under the new key (23505
/// if that is taken). Returns the key the row now has.
pub(crate) fn write_updated(
    ctx: &mut Ctx<'_>,
    table: &Table,
    key: Vec<u8>,
    old: &[Value],
    new: &[Value],
) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(64);
    types::encode_row(new, &mut bytes);
    let t = tid(table);
    let pk = table.primary_index().map(|i| i.columns.as_slice()).unwrap_or_default();
    if same_values(old, new, pk) {
        ctx.txn.update(t, &key, bytes).map_err(|e| unique_error(e, table, new))?;
        return Ok(key);
    }
    ctx.txn.delete(t, &key).map_err(txn_error)?;
    let new_key = primary_key(table, new, ctx.engine);
    let moved = new_key.bytes.clone();
    insert_row(ctx.txn, table, new_key, bytes).map_err(|e| unique_error(e, table, new))?;
    Ok(moved)
}

/// Maps an engine unique violation to 23505 with PostgreSQL's constraint name and detail.
pub(crate) fn unique_error(e: txn::Error, table: &Table, row: &[Value]) -> Error {
    match e {
        txn::Error::UniqueViolation { index, .. } => {
            let idx = match index {
                None => table.primary_index(),
                Some(id) => table.indexes.iter().find(|i| i.id.0 == id.0),
            };
            let Some(idx) = idx else { return txn_error(e) };
            let vals: Vec<Value> = idx.columns.iter().map(|c| row[*c as usize].clone()).collect();
            Error::UniqueViolation {
                constraint: idx.name.clone(),
                detail: format!("{} already exists.", key_text(table, &idx.columns, &vals)),
                table: table.name.clone(),
            }
        }
        other => txn_error(other),
    }
}

/// What a statement did that foreign keys care about, in the order it did it: PostgreSQL
/// queues one referential-integrity trigger event per row and fires them in that order, each
/// row's actions (on the keys it held) before its checks (on the keys it references).
enum Event {
    /// A row deleted (`new` is `None`) or updated in a table that foreign keys reference.
    Changed { table: TableId, old: Vec<Value>, new: Option<Vec<Value>> },
    /// A row written (inserted or updated) in a table with foreign keys: the rows it
    /// references must exist.
    Written { table: TableId, row: Vec<Value> },
}

/// A `Changed` event being acted on: the next of its table's referencing foreign keys.
struct Acting {
    table: TableId,
    old: Vec<Value>,
    new: Option<Vec<Value>>,
    next_fk: usize,
}

/// The events of one statement, or of one referential action (PostgreSQL runs an action as
/// a query whose own trigger events fire when it ends, before the next action).
struct Frame {
    events: VecDeque<Event>,
    acting: Option<Acting>,
}

/// What a DELETE, UPDATE or INSERT must still do about foreign keys once its own rows are
/// written: the referential actions for the keys it deleted or changed, and the checks — a
/// key removed under NO ACTION or RESTRICT is no longer referenced, and every row written
/// (by the statement or by an action) references rows that exist. Run when the statement
/// ends, as PostgreSQL fires its triggers, so an action sees every row the statement wrote (a
/// cascade through a self-referencing table finds the rows under their new keys), and a key
/// the statement removed and put back is still there for NO ACTION.
pub(crate) struct Referential {
    events: VecDeque<Event>,
    /// Whether foreign keys reference the statement's table: if not, its changes need no
    /// event (the common case, checked once per statement).
    referenced: bool,
    /// Referencing tables' CHECK constraints and SET DEFAULT defaults, bound when an action
    /// first writes one of their rows.
    bound: Vec<(TableId, Bound)>,
}

/// A referencing table's constraints and column defaults, bound for the rows actions write.
struct Bound {
    checks: std::sync::Arc<[crate::plan::Check]>,
    defaults: HashMap<u16, crate::plan::Expr>,
}

impl Referential {
    /// The referential work of a statement that writes `table`.
    pub(crate) fn new(snapshot: &Snapshot, table: &Table) -> Referential {
        let referenced = !snapshot.referencing_fks(table.id).is_empty();
        Referential { events: VecDeque::new(), referenced, bound: Vec::new() }
    }

    /// The statement's row `old` of `table` was deleted (`new` is `None`) or became `new`.
    /// Only what some foreign key references is kept: a row whose referenced columns kept
    /// their values needs no action.
    pub(crate) fn changed(
        &mut self,
        snapshot: &Snapshot,
        table: &Table,
        old: &[Value],
        new: Option<&[Value]>,
    ) {
        if !self.referenced {
            return;
        }
        if let Some(event) = changed(snapshot, table, old, new) {
            self.events.push_back(event);
        }
    }

    /// `table`'s row `row` was written: its foreign keys must hold when the statement ends
    /// (so a row may reference one inserted after it, or itself).
    pub(crate) fn written(&mut self, table: &Table, row: &[Value]) {
        if !table.foreign_keys.is_empty() {
            self.events.push_back(Event::Written { table: table.id, row: row.to_vec() });
        }
    }

    /// The end of the statement: its events in order, each action's own events fired when
    /// the action is done (depth first, on an explicit stack: a cascade down a long chain of
    /// rows does not recurse).
    pub(crate) fn finish(mut self, ctx: &mut Ctx<'_>, snapshot: &Snapshot) -> Result<()> {
        if self.events.is_empty() {
            return Ok(());
        }
        let mut stack = vec![Frame { events: std::mem::take(&mut self.events), acting: None }];
        while let Some(frame) = stack.last_mut() {
            let acting = match &mut frame.acting {
                Some(acting) => acting,
                None => {
                    match frame.events.pop_front() {
                        None => {
                            stack.pop();
                        }
                        Some(Event::Written { table, row }) => {
                            check_written(ctx, snapshot, table, &row)?;
                        }
                        Some(Event::Changed { table, old, new }) => {
                            frame.acting = Some(Acting { table, old, new, next_fk: 0 });
                        }
                    }
                    continue;
                }
            };
            let Some(parent) = snapshot.table_by_id(acting.table) else {
                frame.acting = None;
                continue;
            };
            let Some((child, fk)) =
                snapshot.referencing_fks(parent.id).get(acting.next_fk).copied()
            else {
                frame.acting = None;
                continue;
            };
            acting.next_fk += 1;
            let events =
                self.act(ctx, snapshot, parent, child, fk, &acting.old, acting.new.as_deref())?;
            if !events.is_empty() {
                stack.push(Frame { events, acting: None });
            }
        }
        Ok(())
    }

    /// What `fk` (of `child`, referencing `parent`) does about `parent`'s row `old` deleted
    /// (`new` is `None`) or updated to `new`: NO ACTION and RESTRICT check that nothing still
    /// references the old key; the actions write `child`'s referencing rows and return the
    /// events of those writes.
    #[allow(clippy::too_many_arguments)]
    fn act(
        &mut self,
        ctx: &mut Ctx<'_>,
        snapshot: &Snapshot,
        parent: &Table,
        child: &Table,
        fk: &ForeignKey,
        old: &[Value],
        new: Option<&[Value]>,
    ) -> Result<VecDeque<Event>> {
        let mut events = VecDeque::new();
        let vals: Vec<Value> = fk.ref_columns.iter().map(|c| old[*c as usize].clone()).collect();
        if vals.iter().any(Value::is_null) {
            return Ok(events);
        }
        let action = match new {
            Some(new) if same_values(old, new, &fk.ref_columns) => return Ok(events),
            Some(_) => fk.on_update,
            None => fk.on_delete,
        };
        if action == FkAction::NoAction && ctx.fk_timing.deferred(fk) {
            ctx.pending_checks.push(PendingCheck::Removed {
                parent: parent.id,
                child: child.id,
                fk: fk.name.clone(),
                key: vals,
            });
            return Ok(events);
        }
        if matches!(action, FkAction::NoAction | FkAction::Restrict) {
            // NO ACTION lets the statement have put the key back (an UPDATE that swapped keys).
            if (action == FkAction::NoAction
                && row_exists(ctx, parent, &fk.ref_columns, &vals, true)?)
                || referencing_rows(ctx, child, parent, fk, &vals)?.is_empty()
            {
                return Ok(events);
            }
            return Err(still_referenced(parent, child, fk, &vals));
        }
        for (key, row) in referencing_rows(ctx, child, parent, fk, &vals)? {
            if action == FkAction::Cascade && new.is_none() {
                ctx.txn.delete(tid(child), &key).map_err(txn_error)?;
                events.extend(changed(snapshot, child, &row, None));
                continue;
            }
            let mut updated = row.clone();
            for (i, c) in fk.columns.iter().enumerate() {
                let c = *c as usize;
                updated[c] = match (action, new) {
                    (FkAction::Cascade, Some(parent_row)) => {
                        let r = fk.ref_columns[i] as usize;
                        let (from, to) =
                            (&parent.columns[r].data_type, &child.columns[c].data_type);
                        types::cast(parent_row[r].clone(), from, to, types::CastKind::Assignment)?
                    }
                    (FkAction::SetDefault, _) => {
                        let e = self.bind(snapshot, child)?.defaults[&(c as u16)].clone();
                        ctx.eval(&e, &[])?
                    }
                    _ => Value::Null,
                };
            }
            let checks = self.bind(snapshot, child)?.checks.clone();
            let updated = check_row(child, &checks, updated, &ctx.env)?;
            write_updated(ctx, child, key, &row, &updated)?;
            events.extend(changed(snapshot, child, &row, Some(&updated)));
            events.push_back(Event::Written { table: child.id, row: updated });
        }
        Ok(events)
    }

    /// `table`'s constraints and the defaults of its referencing columns, bound once per
    /// statement.
    fn bind(&mut self, snapshot: &Snapshot, table: &Table) -> Result<&Bound> {
        let at = match self.bound.iter().position(|(id, _)| *id == table.id) {
            Some(at) => at,
            None => {
                let mut binder = crate::bind::Binder::new(snapshot, "", Vec::new());
                let checks = binder.table_checks(table)?;
                let mut defaults = HashMap::new();
                for fk in &table.foreign_keys {
                    for c in &fk.columns {
                        defaults.insert(*c, binder.column_default(table, usize::from(*c))?);
                    }
                }
                self.bound.push((table.id, Bound { checks, defaults }));
                self.bound.len() - 1
            }
        };
        Ok(&self.bound[at].1)
    }
}

/// The event for `table`'s row `old` deleted (`new` is `None`) or updated to `new`, if some
/// foreign key references what changed.
fn changed(
    snapshot: &Snapshot,
    table: &Table,
    old: &[Value],
    new: Option<&[Value]>,
) -> Option<Event> {
    let fks = snapshot.referencing_fks(table.id);
    let matters = fks.iter().any(|(_, fk)| match new {
        None => true,
        Some(new) => !same_values(old, new, &fk.ref_columns),
    });
    matters.then(|| Event::Changed {
        table: table.id,
        old: old.to_vec(),
        new: new.map(<[Value]>::to_vec),
    })
}

/// The foreign keys of `table`'s written `row` hold — unless the row is no longer there as
/// written (a later action of the statement updated or deleted it, and checks what it wrote):
/// PostgreSQL skips the check of a row version that is no longer live.
fn check_written(
    ctx: &mut Ctx<'_>,
    snapshot: &Snapshot,
    table: TableId,
    row: &[Value],
) -> Result<()> {
    let Some(table) = snapshot.table_by_id(table) else { return Ok(()) };
    for fk in &table.foreign_keys {
        if ctx.fk_timing.deferred(fk) {
            ctx.pending_checks.push(PendingCheck::Written {
                table: table.id,
                fk: fk.name.clone(),
                row: row.to_vec(),
            });
            continue;
        }
        if let Err(e) = check_foreign_key(ctx, snapshot, table, fk, row) {
            if still_live(ctx, table, row)? {
                return Err(e);
            }
            return Ok(());
        }
    }
    Ok(())
}

/// Is `row` of `table` still there as it is? Looked up by its primary key; a table without
/// one cannot tell, and says yes.
fn still_live(ctx: &mut Ctx<'_>, table: &Table, row: &[Value]) -> Result<bool> {
    let Some(pk) = table.primary_index() else { return Ok(true) };
    let vals: Vec<Value> = pk.columns.iter().map(|c| row[*c as usize].clone()).collect();
    let current = matching_rows(ctx, table, &pk.columns, &vals, true, true)?;
    Ok(current.first().is_some_and(|(_, r)| r.as_slice() == row))
}

/// Do `a` and `b` hold equal values (NULL equal to NULL) in columns `cols`?
fn same_values(a: &[Value], b: &[Value], cols: &[u16]) -> bool {
    cols.iter().all(|c| {
        let (x, y) = (&a[*c as usize], &b[*c as usize]);
        (x.is_null() && y.is_null()) || types::compare(x, y) == Some(std::cmp::Ordering::Equal)
    })
}
