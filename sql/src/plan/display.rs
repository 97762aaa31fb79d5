//! `Display` for plans: an indented tree, one node per line, as EXPLAIN prints it.
//!
//! Expressions print as SQL where they can: a scan's conditions name the table's columns, and
//! above a scan a column is `#n` (the n-th column of the node's input row, from 1); `$n` is a
//! parameter; anything without a SQL form prints as its plan structure.

use std::fmt::{self, Write as _};

use super::{
    Access, ArrayFunc, CmpOp, Expr, Func, JoinKind, Plan, SortKey, Statement, LOOKUP_BUDGET,
};
use crate::types::ArithOp;
use catalog::DataType;

/// Renders `e`, naming input column `i` by `names(i)`.
fn expr(e: &Expr, names: &dyn Fn(usize) -> String) -> String {
    let r = |x: &Expr| expr(x, names);
    let list = |xs: &[Expr]| xs.iter().map(|x| expr(x, names)).collect::<Vec<_>>().join(", ");
    match e {
        Expr::Literal(v) => match v {
            crate::types::Value::Null => "NULL".into(),
            crate::types::Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            other => match other.data_type() {
                // Numbers and booleans as they are; other constants as PostgreSQL shows them,
                // quoted with their type (`'1 day'::interval`).
                Some(
                    t @ (DataType::Date
                    | DataType::Timestamp
                    | DataType::TimestampTz
                    | DataType::Interval
                    | DataType::Bytea),
                ) => {
                    format!("'{}'::{}", crate::types::format_text(other, &t), t.sql_name())
                }
                Some(t) => crate::types::format_text(other, &t),
                None => format!("{other:?}"),
            },
        },
        Expr::Column(i) => names(*i),
        Expr::Outer { depth, index } => format!("outer{depth}.#{}", index + 1),
        Expr::Param(i) => format!("${}", i + 1),
        Expr::Arith(op, a, b) => {
            let op = match op {
                ArithOp::Add => "+",
                ArithOp::Sub => "-",
                ArithOp::Mul => "*",
                ArithOp::Div => "/",
                ArithOp::Mod => "%",
            };
            format!("({} {op} {})", r(a), r(b))
        }
        Expr::Neg(a) => format!("(-{})", r(a)),
        Expr::Cmp(op, a, b) => {
            let op = match op {
                CmpOp::Eq => "=",
                CmpOp::NotEq => "<>",
                CmpOp::Lt => "<",
                CmpOp::LtEq => "<=",
                CmpOp::Gt => ">",
                CmpOp::GtEq => ">=",
            };
            format!("({} {op} {})", r(a), r(b))
        }
        Expr::And(a, b) => format!("({} AND {})", r(a), r(b)),
        Expr::Or(a, b) => format!("({} OR {})", r(a), r(b)),
        Expr::Not(a) => format!("(NOT {})", r(a)),
        Expr::IsNull(a, negated) => {
            format!("({} IS {}NULL)", r(a), if *negated { "NOT " } else { "" })
        }
        Expr::Like(a, p, ci, negated) => format!(
            "({} {}{} {})",
            r(a),
            if *negated { "NOT " } else { "" },
            if *ci { "ILIKE" } else { "LIKE" },
            r(p)
        ),
        Expr::InList(a, xs, negated) => {
            format!("({} {}IN ({}))", r(a), if *negated { "NOT " } else { "" }, list(xs))
        }
        Expr::Coalesce(xs) => format!("COALESCE({})", list(xs)),
        Expr::NullIf(a, b) => format!("NULLIF({}, {})", r(a), r(b)),
        Expr::Cast(a, t, _) => format!("({})::{}", r(a), t.sql_name()),
        Expr::Concat(a, b) => format!("({} || {})", r(a), r(b)),
        Expr::Func(Func::Jsonb(f), args) => format!("{}({})", f.name(), list(args)),
        Expr::Func(Func::Array(ArrayFunc::Build), args) => format!("ARRAY[{}]", list(args)),
        Expr::Func(Func::Array(f), args) => format!("{}({})", f.name(), list(args)),
        Expr::Func(f, args) => format!("{}({})", format!("{f:?}").to_lowercase(), list(args)),
        Expr::Subquery(_) => "(SubPlan)".into(),
        Expr::Exists(_, negated) => {
            format!("({}EXISTS(SubPlan))", if *negated { "NOT " } else { "" })
        }
        Expr::InSubquery(a, _, negated) => {
            format!("({} {}IN (SubPlan))", r(a), if *negated { "NOT " } else { "" })
        }
        Expr::Agg(i) => format!("agg{}", i + 1),
        other => format!("{other:?}"),
    }
}

/// Input column `i` of a node above a scan.
fn position(i: usize) -> String {
    format!("#{}", i + 1)
}

fn exprs(es: &[Expr]) -> String {
    es.iter().map(|e| expr(e, &position)).collect::<Vec<_>>().join(", ")
}

impl Plan {
    fn fmt_tree(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        let arrow =
            if depth == 0 { String::new() } else { format!("{}->  ", "  ".repeat(depth - 1)) };
        match self {
            Plan::RecursiveUnion { id, anchor, recursive, all } => {
                writeln!(
                    f,
                    "{arrow}Recursive Union{} (working table {id})",
                    if *all { " All" } else { "" }
                )?;
                anchor.fmt_tree(f, depth + 1)?;
                recursive.fmt_tree(f, depth + 1)
            }
            Plan::WorkingTable { id, .. } => {
                writeln!(f, "{arrow}WorkTable Scan (working table {id})")
            }
            Plan::Values { rows, width } => {
                writeln!(f, "{arrow}Values ({} rows, {width} columns)", rows.len())
            }
            Plan::Scan { table, access, filter, reverse, limit, for_update } => {
                let names =
                    |i: usize| table.columns.get(i).map_or_else(|| position(i), |c| c.name.clone());
                let index_name = |index: &Option<catalog::IndexId>| match index {
                    Some(id) => table
                        .indexes
                        .iter()
                        .find(|i| i.id == *id)
                        .map_or_else(|| format!("index {}", id.0), |i| i.name.clone()),
                    None => table
                        .primary_index()
                        .map_or_else(|| "primary key".into(), |i| i.name.clone()),
                };
                let keys = |index: &Option<catalog::IndexId>| -> Vec<String> {
                    let columns = match index {
                        Some(id) => table.indexes.iter().find(|i| i.id == *id),
                        None => table.primary_index(),
                    }
                    .map(|i| i.columns.clone())
                    .unwrap_or_default();
                    columns.iter().map(|c| names(usize::from(*c))).collect()
                };
                let backward = if *reverse { " Backward" } else { "" };
                // An IN list's slot shows as `= ANY (values)`.
                let (access, each) = match access {
                    Access::Each { access, slot, values } => {
                        (access.as_ref(), Some((*slot, expr(values, &names))))
                    }
                    other => (other, None),
                };
                let cond = |i: usize, k: &str, v: &Expr| match &each {
                    Some((slot, values)) if *slot == i => format!("{k} = ANY ({values})"),
                    _ => format!("{k} = {}", expr(v, &names)),
                };
                match access {
                    Access::Full => writeln!(f, "{arrow}Seq Scan on {}", table.name)?,
                    Access::PointGet(values) => {
                        writeln!(
                            f,
                            "{arrow}Point Get using {} on {}",
                            index_name(&None),
                            table.name
                        )?;
                        let conds: Vec<String> = keys(&None)
                            .iter()
                            .zip(values)
                            .enumerate()
                            .map(|(i, (k, v))| cond(i, k, v))
                            .collect();
                        writeln!(f, "{pad}      Key: {}", conds.join(" AND "))?;
                    }
                    Access::Range { index, eq, lo, hi } => {
                        writeln!(
                            f,
                            "{arrow}Index Scan{backward} using {} on {}",
                            index_name(index),
                            table.name
                        )?;
                        let keys = keys(index);
                        let mut conds: Vec<String> = keys
                            .iter()
                            .zip(eq)
                            .enumerate()
                            .map(|(i, (k, v))| cond(i, k, v))
                            .collect();
                        let next = keys.get(eq.len()).cloned().unwrap_or_default();
                        if let Some((v, inclusive)) = lo {
                            let op = if *inclusive { ">=" } else { ">" };
                            conds.push(format!("{next} {op} {}", expr(v, &names)));
                        }
                        if let Some((v, inclusive)) = hi {
                            let op = if *inclusive { "<=" } else { "<" };
                            conds.push(format!("{next} {op} {}", expr(v, &names)));
                        }
                        if !conds.is_empty() {
                            writeln!(f, "{pad}      Index Cond: {}", conds.join(" AND "))?;
                        }
                    }
                    Access::Each { .. } => unreachable!("unwrapped above"),
                }
                if let Some(p) = filter {
                    writeln!(f, "{pad}      Filter: {}", expr(p, &names))?;
                }
                if let Some(l) = limit {
                    writeln!(f, "{pad}      Stop after: {}", expr(l, &names))?;
                }
                if *for_update {
                    writeln!(f, "{pad}      For Update")?;
                }
                Ok(())
            }
            Plan::GenerateSeries { args, .. } => {
                writeln!(f, "{arrow}Function Scan on generate_series({})", exprs(args))
            }
            Plan::JsonbRows { func, arg } => {
                writeln!(f, "{arrow}Function Scan on {}({})", func.name(), expr(arg, &position))
            }
            Plan::Unnest { args, ordinality } => {
                let with = if *ordinality { " WITH ORDINALITY" } else { "" };
                writeln!(f, "{arrow}Function Scan on unnest({}){with}", exprs(args))
            }
            Plan::Filter { input, predicate } => {
                writeln!(f, "{arrow}Filter: {}", expr(predicate, &position))?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Project { input, exprs: list } => {
                writeln!(f, "{arrow}Project: {}", exprs(list))?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::NestedLoop { left, right, kind, on, .. } => {
                let kind = match kind {
                    JoinKind::Inner => "",
                    JoinKind::Left => " Left Join",
                    JoinKind::Full => " Full Join",
                };
                writeln!(f, "{arrow}Nested Loop{kind}")?;
                if let Some(on) = on {
                    writeln!(f, "{pad}      Join Filter: {}", expr(on, &position))?;
                }
                left.fmt_tree(f, depth + 1)?;
                right.fmt_tree(f, depth + 1)
            }
            Plan::HashJoin { left, right, kind, left_keys, right_keys, on, lookup, .. } => {
                let kind = match kind {
                    JoinKind::Inner => "",
                    JoinKind::Left => " Left Join",
                    JoinKind::Full => " Full Join",
                };
                writeln!(f, "{arrow}Hash Join{kind}")?;
                let conds: Vec<String> = left_keys
                    .iter()
                    .zip(right_keys)
                    .map(|(l, r)| format!("{} = inner.{}", expr(l, &position), expr(r, &position)))
                    .collect();
                writeln!(f, "{pad}      Hash Cond: {}", conds.join(" AND "))?;
                if let Some(on) = on {
                    writeln!(f, "{pad}      Join Filter: {}", expr(on, &position))?;
                }
                if lookup.is_some() {
                    writeln!(
                        f,
                        "{pad}      Nested Loop first, until its lookups read {LOOKUP_BUDGET} rows"
                    )?;
                }
                left.fmt_tree(f, depth + 1)?;
                right.fmt_tree(f, depth + 1)?;
                match lookup {
                    Some(l) => l.right.fmt_tree(f, depth + 1),
                    None => Ok(()),
                }
            }
            Plan::Aggregate { input, group_by, aggs, sets } => {
                let calls: Vec<String> =
                    aggs.iter()
                        .map(|a| {
                            // GROUPING's arguments are group keys: shown as the keys' expressions.
                            let keys: Vec<Expr> = a
                                .grouping
                                .iter()
                                .map(|k| match k {
                                    Expr::Column(i) if *i < group_by.len() => group_by[*i].clone(),
                                    other => other.clone(),
                                })
                                .collect();
                            let arg = match &a.arg {
                                _ if !keys.is_empty() => exprs(&keys),
                                Some(e) => expr(e, &position),
                                None => "*".into(),
                            };
                            let distinct = if a.distinct { "DISTINCT " } else { "" };
                            let filter = a.filter.as_ref().map_or(String::new(), |e| {
                                format!(" FILTER ({})", expr(e, &position))
                            });
                            format!(
                                "{}({distinct}{arg}){filter}",
                                format!("{:?}", a.func).to_lowercase()
                            )
                        })
                        .collect();
                if !sets.is_empty() {
                    writeln!(f, "{arrow}MixedAggregate: {}", calls.join(", "))?;
                    for set in sets {
                        let keys: Vec<Expr> = set.iter().map(|&i| group_by[i].clone()).collect();
                        let keys = if keys.is_empty() { "()".into() } else { exprs(&keys) };
                        writeln!(f, "{pad}      Group Key: {keys}")?;
                    }
                } else if group_by.is_empty() {
                    writeln!(f, "{arrow}Aggregate: {}", calls.join(", "))?;
                } else {
                    writeln!(f, "{arrow}Group Aggregate: {}", calls.join(", "))?;
                    writeln!(f, "{pad}      Group Key: {}", exprs(group_by))?;
                }
                input.fmt_tree(f, depth + 1)
            }
            Plan::Sort { input, keys } => {
                writeln!(f, "{arrow}Sort")?;
                writeln!(f, "{pad}      Sort Key: {}", sort_keys(keys))?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Distinct { input, .. } => {
                writeln!(f, "{arrow}Unique")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Window { input, calls } => {
                for call in calls {
                    use super::WindowFunc as W;
                    let func = match &call.func {
                        W::Aggregate(a) => format!("{:?}", a.func).to_lowercase(),
                        W::RowNumber => "row_number".into(),
                        W::Rank => "rank".into(),
                        W::DenseRank => "dense_rank".into(),
                        W::PercentRank => "percent_rank".into(),
                        W::CumeDist => "cume_dist".into(),
                        W::NTile(_) => "ntile".into(),
                        W::FirstValue(_) => "first_value".into(),
                        W::LastValue(_) => "last_value".into(),
                        W::NthValue(..) => "nth_value".into(),
                        W::Shift { lead: true, .. } => "lead".into(),
                        W::Shift { lead: false, .. } => "lag".into(),
                    };
                    let mut over = Vec::new();
                    if !call.partition_by.is_empty() {
                        over.push(format!("PARTITION BY {}", exprs(&call.partition_by)));
                    }
                    if !call.order_by.is_empty() {
                        over.push(format!("ORDER BY {}", sort_keys(&call.order_by)));
                    }
                    if let Some(frame) = &call.frame {
                        over.push(frame_text(frame, &call.range_offsets));
                    }
                    writeln!(f, "{arrow}Window: {func} OVER ({})", over.join(" "))?;
                }
                input.fmt_tree(f, depth + 1)
            }
            Plan::SetOp { left, right, op, all } => {
                writeln!(f, "{arrow}{op:?}{}", if *all { " All" } else { "" })?;
                left.fmt_tree(f, depth + 1)?;
                right.fmt_tree(f, depth + 1)
            }
            Plan::Limit { input, limit, offset } => {
                let mut line = format!("{arrow}Limit");
                if let Some(l) = limit {
                    let _ = write!(line, ": {}", expr(l, &position));
                }
                if let Some(o) = offset {
                    let _ = write!(line, " offset {}", expr(o, &position));
                }
                writeln!(f, "{line}")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Truncate { input, width } => {
                writeln!(f, "{arrow}Result (first {width} columns)")?;
                input.fmt_tree(f, depth + 1)
            }
        }
    }
}

fn sort_keys(keys: &[SortKey]) -> String {
    let key = |k: &SortKey| {
        let mut s = expr(&k.expr, &position);
        if k.desc {
            s.push_str(" DESC");
        }
        if k.nulls_first != k.desc {
            s.push_str(if k.nulls_first { " NULLS FIRST" } else { " NULLS LAST" });
        }
        s
    };
    keys.iter().map(key).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_tree(f, 0)
    }
}

impl Statement {
    /// The lines EXPLAIN prints for this statement.
    pub fn explain(&self) -> Vec<String> {
        let (head, plan) = match self {
            Statement::Query(q) => return lines(&q.plan.to_string()),
            Statement::With { ctes, main } => {
                let mut out = Vec::new();
                for (id, stmt) in ctes {
                    out.push(format!("CTE working{id} (runs first)"));
                    out.extend(stmt.explain().into_iter().map(|l| format!("  {l}")));
                }
                out.extend(main.explain());
                return out;
            }
            Statement::Insert { table, source, on_conflict, .. } => {
                let mut head = format!("Insert on {}", table.name);
                if let Some(oc) = on_conflict {
                    head.push_str(if oc.update.is_some() {
                        " (ON CONFLICT DO UPDATE)"
                    } else {
                        " (ON CONFLICT DO NOTHING)"
                    });
                }
                (head, source)
            }
            Statement::Update { table, scan, deferrable, .. } => {
                let note = if *deferrable { " (may be applied at commit)" } else { "" };
                (format!("Update on {}{note}", table.name), scan)
            }
            Statement::Delete { table, scan, .. } => (format!("Delete on {}", table.name), scan),
        };
        let from = match self {
            Statement::Update { from, .. } | Statement::Delete { from, .. } => from.as_deref(),
            _ => None,
        };
        struct Child<'a>(&'a Plan, usize);
        impl fmt::Display for Child<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt_tree(f, self.1)
            }
        }
        let mut out = vec![head];
        out.extend(lines(&Child(plan, 1).to_string()));
        if let Some(from) = from {
            // The other tables of UPDATE … FROM / DELETE … USING, and how target rows meet them.
            let keys: Vec<String> = from
                .target_keys
                .iter()
                .zip(&from.from_keys)
                .map(|(t, o)| format!("{} = other.{}", expr(t, &position), expr(o, &position)))
                .collect();
            let mut how = keys.join(" AND ");
            if let Some(on) = &from.on {
                if !how.is_empty() {
                    how.push_str(" AND ");
                }
                how.push_str(&expr(on, &position));
            }
            out.push(format!("->  Joined with (first match): {how}"));
            out.extend(lines(&Child(&from.plan, 2).to_string()));
        }
        out
    }
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// A frame as SQL: `ROWS BETWEEN 1 PRECEDING AND CURRENT ROW`.
fn frame_text(frame: &super::Frame, range_offsets: &[Option<crate::types::Value>; 2]) -> String {
    use super::FrameBound as B;
    let bound = |b: B, offset: &Option<crate::types::Value>| {
        let n = |n: i64| {
            offset.as_ref().map_or_else(
                || n.to_string(),
                |v| expr(&Expr::Literal(v.clone()), &|_| String::new()),
            )
        };
        match b {
            B::UnboundedPreceding => "UNBOUNDED PRECEDING".to_string(),
            B::Preceding(k) => format!("{} PRECEDING", n(k)),
            B::CurrentRow => "CURRENT ROW".to_string(),
            B::Following(k) => format!("{} FOLLOWING", n(k)),
            B::UnboundedFollowing => "UNBOUNDED FOLLOWING".to_string(),
        }
    };
    let units = match frame.units {
        super::FrameUnits::Rows => "ROWS",
        super::FrameUnits::Range => "RANGE",
        super::FrameUnits::Groups => "GROUPS",
    };
    format!(
        "{units} BETWEEN {} AND {}",
        bound(frame.start, &range_offsets[0]),
        bound(frame.end, &range_offsets[1])
    )
}
