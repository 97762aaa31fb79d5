//! `Display` for plans: an indented tree, one node per line (used by EXPLAIN and golden tests).

use std::fmt;

use super::{Access, Plan};

impl Plan {
    fn fmt_tree(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match self {
            Plan::Values { rows, width } => {
                writeln!(f, "{pad}Values: {} rows × {width}", rows.len())
            }
            Plan::Scan { table, access, filter, reverse, limit, for_update } => {
                let access = match access {
                    Access::Full => "full".to_string(),
                    Access::PointGet(k) => format!("point get {k:?}"),
                    Access::Range { index, eq, lo, hi } => {
                        format!("range index={index:?} eq={eq:?} lo={lo:?} hi={hi:?}")
                    }
                };
                write!(f, "{pad}Scan: {} ({access})", table.name)?;
                if *reverse {
                    write!(f, " reverse")?;
                }
                if let Some(l) = limit {
                    write!(f, " limit={l:?}")?;
                }
                if *for_update {
                    write!(f, " for update")?;
                }
                if let Some(p) = filter {
                    write!(f, " filter={p:?}")?;
                }
                writeln!(f)
            }
            Plan::GenerateSeries { args, .. } => writeln!(f, "{pad}GenerateSeries: {args:?}"),
            Plan::Filter { input, predicate } => {
                writeln!(f, "{pad}Filter: {predicate:?}")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Project { input, exprs } => {
                writeln!(f, "{pad}Project: {exprs:?}")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::NestedLoop { left, right, kind, on, .. } => {
                writeln!(f, "{pad}NestedLoop: {kind:?} on={on:?}")?;
                left.fmt_tree(f, depth + 1)?;
                right.fmt_tree(f, depth + 1)
            }
            Plan::Aggregate { input, group_by, aggs } => {
                writeln!(f, "{pad}Aggregate: group_by={group_by:?} aggs={aggs:?}")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Sort { input, keys } => {
                writeln!(f, "{pad}Sort: {keys:?}")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Distinct { input } => {
                writeln!(f, "{pad}Distinct")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::SetOp { left, right, op, all } => {
                writeln!(f, "{pad}SetOp: {op:?}{}", if *all { " all" } else { "" })?;
                left.fmt_tree(f, depth + 1)?;
                right.fmt_tree(f, depth + 1)
            }
            Plan::Limit { input, limit, offset } => {
                writeln!(f, "{pad}Limit: limit={limit:?} offset={offset:?}")?;
                input.fmt_tree(f, depth + 1)
            }
            Plan::Truncate { input, width } => {
                writeln!(f, "{pad}Truncate: {width}")?;
                input.fmt_tree(f, depth + 1)
            }
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_tree(f, 0)
    }
}
