//! Binding INSERT, UPDATE and DELETE.

use std::sync::Arc;

use catalog::{DataType, Table};
use sqlparser::ast::{self as ast, Expr as AstExpr, SelectItem, SetExpr};

use super::expr::Typed;
use super::select::{
    and_all, build_join_tree, contains_subquery, hash_key_pair, key_column, map_expr,
    may_be_bpchar, row_independent, row_local, scan_with, split_conjuncts, walk, width_of,
    DEFAULT_MARKER,
};
use super::{ident, Binder, Scope};
use crate::error::{Error, Result};
use crate::plan::{
    Access, CmpOp, ConflictUpdate, Expr, InsertValue, JoinedFrom, OnConflict, OutColumn, Plan,
    Statement,
};
use crate::types::CastKind;

impl Binder<'_> {
    /// The bound default of a column (NULL when it has none), as an expression of its type.
    pub(crate) fn column_default(&mut self, table: &Table, col: usize) -> Result<Expr> {
        let column = &table.columns[col];
        if let Some(seq) = &column.sequence {
            if seq.generated != catalog::Generated::Serial {
                // An identity column: the next value of its sequence, checked to fit.
                let next = Expr::Func(
                    crate::plan::Func::NextVal,
                    vec![
                        Expr::Literal(crate::types::Value::Int64(i64::from(table.id.0))),
                        Expr::Literal(crate::types::Value::Int64(i64::from(column.position))),
                    ],
                );
                let t = Typed { expr: next, ty: DataType::Int64, unknown: false };
                let node = AstExpr::Value(ast::Value::Null.into());
                return self.coerce(t, column.data_type, CastKind::Assignment, &node);
            }
        }
        let Some(default) = &column.default else {
            return Ok(Expr::Literal(crate::types::Value::Null));
        };
        let e = stored_expr(&default.sql)?;
        let t = self.bind_expr(&e, &Scope::default())?;
        self.coerce(t, column.data_type, CastKind::Assignment, &e)
    }

    /// `table`'s CHECK constraints bound for a statement that writes its rows, in name order
    /// (the order PostgreSQL checks them in).
    pub(crate) fn table_checks(&mut self, table: &Table) -> Result<Arc<[crate::plan::Check]>> {
        let mut out = Vec::with_capacity(table.checks.len());
        for c in &table.checks {
            let e = stored_expr(&c.sql)?;
            let (expr, _) = self.bind_check_expr(&e, table)?;
            out.push(crate::plan::Check { name: c.name.clone(), expr });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out.into())
    }

    pub(crate) fn bind_insert(&mut self, ins: &ast::Insert) -> Result<Statement> {
        if ins.or.is_some()
            || ins.ignore
            || ins.overwrite
            || !ins.assignments.is_empty()
            || ins.partitioned.is_some()
        {
            return Err(Error::unsupported("this form of INSERT"));
        }
        let ast::TableObject::TableName(name) = &ins.table else {
            return Err(Error::unsupported("INSERT INTO TABLE FUNCTION"));
        };
        let table = self.table_to_write(name, "INSERT into")?;
        let alias =
            ins.table_alias.as_ref().map(|a| ident(&a.alias)).unwrap_or_else(|| table.name.clone());
        // Target columns.
        let targets: Vec<usize> = if ins.columns.is_empty() {
            table.visible_columns().map(|c| usize::from(c.position)).collect()
        } else {
            let mut out: Vec<usize> = Vec::new();
            for c in &ins.columns {
                let cname = match c.0.last() {
                    Some(ast::ObjectNamePart::Identifier(id)) => ident(id),
                    _ => return Err(Error::unsupported("column name form")),
                };
                let Some(col) = table.column(&cname) else {
                    return Err(Error::UndefinedColumn {
                        name: format!("\"{cname}\" of relation \"{}\"", table.name),
                        span: self.span_of(c),
                    });
                };
                let pos = col.position as usize;
                if out.contains(&pos) {
                    return Err(Error::DuplicateColumn { name: cname });
                }
                out.push(pos);
            }
            out
        };
        let explicit_columns = !ins.columns.is_empty();
        let source_plan = match &ins.source {
            None => Plan::Values { rows: vec![vec![]], width: 0 },
            Some(q) => {
                let plain_values =
                    q.order_by.is_none() && q.limit_clause.is_none() && q.with.is_none();
                match q.body.as_ref() {
                    SetExpr::Values(values) if plain_values => {
                        let width = values.rows.first().map(|r| r.len()).unwrap_or(0);
                        self.check_insert_width(width, targets.len(), explicit_columns, q)?;
                        let types: Vec<DataType> =
                            targets[..width].iter().map(|c| table.columns[*c].data_type).collect();
                        let (plan, _) = self.bind_values(values, Some(&types))?;
                        // Replace DEFAULT markers by the column defaults.
                        match plan {
                            Plan::Values { rows, width } => {
                                let mut out_rows = Vec::with_capacity(rows.len());
                                for row in rows {
                                    let mut out = Vec::with_capacity(row.len());
                                    for (i, e) in row.into_iter().enumerate() {
                                        if matches!(&e, Expr::Literal(v) if *v == *DEFAULT_MARKER) {
                                            out.push(self.column_default(&table, targets[i])?);
                                        } else {
                                            check_not_always(&table, targets[i], false)?;
                                            out.push(e);
                                        }
                                    }
                                    out_rows.push(out);
                                }
                                Plan::Values { rows: out_rows, width }
                            }
                            other => other,
                        }
                    }
                    _ => {
                        let query = self.bind_query(q)?;
                        let width = query.columns.len();
                        self.check_insert_width(width, targets.len(), explicit_columns, q)?;
                        // Assignment casts to the target column types.
                        let mut exprs = Vec::with_capacity(width);
                        for target in &targets[..width] {
                            check_not_always(&table, *target, false)?;
                        }
                        for (i, c) in query.columns.iter().enumerate() {
                            let to = table.columns[targets[i]].data_type;
                            let t =
                                Typed { expr: Expr::Column(i), ty: c.data_type, unknown: false };
                            let node = AstExpr::Value(ast::Value::Null.into());
                            exprs.push(self.coerce(t, to, CastKind::Assignment, &node).map_err(
                                |e| match e {
                                    Error::DatatypeMismatch { .. } => Error::DatatypeMismatch {
                                        message: format!(
                                        "column \"{}\" is of type {} but expression is of type {}",
                                        table.columns[targets[i]].name,
                                        to.sql_name(),
                                        c.data_type.sql_name()
                                    ),
                                        span: None,
                                    },
                                    other => other,
                                },
                            )?);
                        }
                        Plan::Project { input: Box::new(query.plan), exprs }
                    }
                }
            }
        };
        let width = width_of(&source_plan);
        let mut values = Vec::with_capacity(table.columns.len());
        for col in 0..table.columns.len() {
            match targets[..width].iter().position(|t| *t == col) {
                Some(i) => values.push(InsertValue::Source(i)),
                None => values.push(InsertValue::Default(self.column_default(&table, col)?)),
            }
        }
        let on_conflict = match &ins.on {
            None => None,
            Some(ast::OnInsert::OnConflict(oc)) => {
                Some(Box::new(self.bind_on_conflict(oc, &table, &alias)?))
            }
            Some(_) => return Err(Error::unsupported("ON DUPLICATE KEY UPDATE")),
        };
        let returning = self.bind_returning(ins.returning.as_deref(), &table, &alias)?;
        let checks = self.table_checks(&table)?;
        Ok(Statement::Insert {
            table,
            source: source_plan,
            targets: values,
            returning,
            on_conflict,
            checks,
        })
    }

    /// Where the words `words` (lower case, one space apart) first appear in the statement,
    /// whatever their case and the spaces between them.
    fn keyword_span(&self, words: &str) -> Option<crate::error::Span> {
        let lower = self.sql.to_ascii_lowercase();
        let mut parts = words.split(' ');
        let first = parts.next()?;
        let mut from = 0;
        while let Some(at) = lower[from..].find(first).map(|i| i + from) {
            let mut rest = &lower[at + first.len()..];
            let all = parts.clone().all(|w| {
                let trimmed = rest.trim_start();
                let ok = trimmed.len() < rest.len() && trimmed.starts_with(w);
                rest = &trimmed[w.len().min(trimmed.len())..];
                ok
            });
            if all {
                return Some(crate::error::Span { start: at });
            }
            from = at + first.len();
        }
        None
    }

    /// `ON CONFLICT [ (columns) | ON CONSTRAINT name ] DO NOTHING | DO UPDATE SET … [WHERE …]`.
    fn bind_on_conflict(
        &mut self,
        oc: &ast::OnConflict,
        table: &Arc<Table>,
        alias: &str,
    ) -> Result<OnConflict> {
        let no_match = || Error::InvalidColumnReference {
            message: "there is no unique or exclusion constraint matching the ON CONFLICT \
                      specification"
                .into(),
            span: None,
        };
        let index = match &oc.conflict_target {
            None => None,
            Some(ast::ConflictTarget::Columns(idents)) => {
                let mut positions = Vec::new();
                for id in idents {
                    let name = ident(id);
                    let column = table.column(&name).ok_or_else(|| Error::UndefinedColumn {
                        name: format!("\"{name}\""),
                        span: None,
                    })?;
                    positions.push(column.position);
                }
                let same = |i: &&catalog::Index| {
                    i.columns.len() == positions.len()
                        && i.columns.iter().all(|c| positions.contains(c))
                };
                // A partial index is no arbiter (PostgreSQL wants its WHERE in the target).
                let found =
                    table.indexes.iter().filter(|i| i.unique && i.predicate.is_none()).find(same);
                Some(found.ok_or_else(no_match)?)
            }
            Some(ast::ConflictTarget::OnConstraint(name)) => {
                let (_, name) = self.object_name(name)?;
                let found = table.indexes.iter().find(|i| i.constraint && i.name == name);
                Some(found.ok_or_else(|| Error::UndefinedObject {
                    message: format!(
                        "constraint \"{name}\" for table \"{}\" does not exist",
                        table.name
                    ),
                })?)
            }
        };
        let update = match &oc.action {
            ast::OnConflictAction::DoNothing => None,
            ast::OnConflictAction::DoUpdate(up) => {
                if index.is_none() {
                    return Err(Error::SyntaxMisuse {
                        message: "ON CONFLICT DO UPDATE requires inference specification or \
                                  constraint name"
                            .into(),
                        span: self.keyword_span("on conflict"),
                    }
                    .with_hint("For example, ON CONFLICT (column_name)."));
                }
                // The existing row, then the proposed one (`excluded`): an unqualified name
                // both have is ambiguous, as in PostgreSQL.
                let mut scope = Scope::from_table(table, alias);
                scope.columns.extend(Scope::from_table(table, "excluded").columns);
                let sets = self.bind_assignments(table, &up.assignments, &scope)?;
                let filter = up
                    .selection
                    .as_ref()
                    .map(|w| self.bind_condition(w, &scope, "WHERE"))
                    .transpose()?;
                Some(ConflictUpdate { sets, filter })
            }
        };
        Ok(OnConflict {
            index: index.map(|i| (!i.primary).then_some(i.id)),
            columns: index
                .map(|i| i.columns.iter().map(|c| usize::from(*c)).collect())
                .unwrap_or_default(),
            update,
        })
    }

    fn check_insert_width(
        &self,
        width: usize,
        targets: usize,
        explicit: bool,
        q: &ast::Query,
    ) -> Result<()> {
        if width > targets {
            return Err(Error::SyntaxMisuse {
                message: "INSERT has more expressions than target columns".into(),
                span: self.span_of(q),
            });
        }
        if explicit && width < targets {
            return Err(Error::SyntaxMisuse {
                message: "INSERT has more target columns than expressions".into(),
                span: self.span_of(q),
            });
        }
        Ok(())
    }

    fn bind_returning(
        &mut self,
        items: Option<&[SelectItem]>,
        table: &Arc<Table>,
        alias: &str,
    ) -> Result<Option<Vec<(Expr, OutColumn)>>> {
        self.bind_returning_over(items, &Scope::from_table(table, alias))
    }

    /// RETURNING over `scope` (the target row, and the other tables' of UPDATE … FROM).
    fn bind_returning_over(
        &mut self,
        items: Option<&[SelectItem]>,
        scope: &Scope,
    ) -> Result<Option<Vec<(Expr, OutColumn)>>> {
        let Some(items) = items else { return Ok(None) };
        let saved = self.aggs.take();
        let bound = self.bind_returning_items(items, scope);
        self.aggs = saved;
        Ok(Some(bound?))
    }

    fn bind_returning_items(
        &mut self,
        items: &[SelectItem],
        scope: &Scope,
    ) -> Result<Vec<(Expr, OutColumn)>> {
        let mut out = Vec::new();
        for item in items {
            match item {
                SelectItem::Wildcard(_) => {
                    for (i, c) in scope.star() {
                        out.push((
                            Expr::Column(i),
                            OutColumn {
                                name: c.name.clone(),
                                data_type: c.data_type,
                                source: c.source,
                            },
                        ));
                    }
                }
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    let t = self.bind_expr(e, scope)?;
                    let name = match item {
                        SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                        _ => super::expr::column_name(e),
                    };
                    let source = match &t.expr {
                        Expr::Column(i) => scope.columns[*i].source,
                        _ => None,
                    };
                    let ty = t.ty;
                    let expr = if t.unknown {
                        self.coerce(t, DataType::Text, CastKind::Implicit, e)?
                    } else {
                        t.expr
                    };
                    out.push((expr, OutColumn { name, data_type: ty, source }));
                }
                SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    let rel = self.object_name(n)?.1;
                    let of_rel: Vec<(usize, &super::ScopeColumn)> = scope
                        .visible()
                        .filter(|(_, c)| c.relation.as_deref() == Some(rel.as_str()))
                        .collect();
                    if of_rel.is_empty() {
                        return Err(Error::MissingFromEntry { table: rel, span: None });
                    }
                    for (i, c) in of_rel {
                        let column = OutColumn {
                            name: c.name.clone(),
                            data_type: c.data_type,
                            source: c.source,
                        };
                        out.push((Expr::Column(i), column));
                    }
                }
                _ => return Err(Error::unsupported("this RETURNING item")),
            }
        }
        Ok(out)
    }

    fn single_table(&self, twj: &ast::TableWithJoins) -> Result<(Arc<Table>, String)> {
        if !twj.joins.is_empty() {
            return Err(Error::unsupported("joins in UPDATE/DELETE"));
        }
        match &twj.relation {
            ast::TableFactor::Table { name, alias, args: None, .. } => {
                let table = self.table_to_write(name, "UPDATE or DELETE of")?;
                let alias =
                    alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| table.name.clone());
                Ok((table, alias))
            }
            other => Err(Error::unsupported(format!("UPDATE/DELETE target {other}"))),
        }
    }

    pub(crate) fn bind_update(&mut self, up: &ast::Update) -> Result<Statement> {
        if up.or.is_some() || !up.order_by.is_empty() || up.limit.is_some() {
            return Err(Error::unsupported("this form of UPDATE"));
        }
        let (table, alias) = self.single_table(&up.table)?;
        let mut scope = Scope::from_table(&table, &alias);
        let others = match &up.from {
            None => None,
            Some(ast::UpdateTableFromKind::AfterSet(f)) => Some(self.bind_others(f, &mut scope)?),
            Some(ast::UpdateTableFromKind::BeforeSet(_)) => {
                return Err(Error::unsupported("UPDATE FROM … SET"))
            }
        };
        let sets = self.bind_assignments(&table, &up.assignments, &scope)?;
        let mut conjuncts = Vec::new();
        if let Some(w) = &up.selection {
            let c = self.bind_condition(w, &scope, "WHERE")?;
            split_conjuncts(c, &mut conjuncts);
        }
        let (conjuncts, from) = joined_from(&table, others, conjuncts, &scope)?;
        self.finish_update(table, sets, conjuncts, from, up, &scope)
    }

    /// The other tables of UPDATE … FROM / DELETE … USING, their columns appended to `scope`
    /// (after the target's).
    fn bind_others(
        &mut self,
        from: &[ast::TableWithJoins],
        scope: &mut Scope,
    ) -> Result<(Vec<super::select::FromItem>, Scope)> {
        let (items, others) = self.bind_from(from)?;
        let offset = scope.columns.len();
        scope.columns.extend(others.columns.iter().cloned());
        if let Some(star) = &others.star {
            let target: Vec<usize> = (0..offset).filter(|&i| !scope.columns[i].hidden).collect();
            scope.star = Some(target.into_iter().chain(star.iter().map(|i| offset + i)).collect());
        }
        Ok((items, others))
    }

    /// UPDATE's `SET column = value, …` (also ON CONFLICT DO UPDATE's) over `scope`.
    fn bind_assignments(
        &mut self,
        table: &Arc<Table>,
        assignments: &[ast::Assignment],
        scope: &Scope,
    ) -> Result<Vec<(usize, Expr)>> {
        let mut sets: Vec<(usize, Expr)> = Vec::new();
        for a in assignments {
            let ast::AssignmentTarget::ColumnName(name) = &a.target else {
                return Err(Error::unsupported("tuple assignment in UPDATE"));
            };
            let cname = match name.0.last() {
                Some(ast::ObjectNamePart::Identifier(id)) => ident(id),
                _ => return Err(Error::unsupported("column name form")),
            };
            let Some(col) = table.column(&cname) else {
                return Err(Error::UndefinedColumn {
                    name: format!("\"{cname}\" of relation \"{}\"", table.name),
                    span: self.span_of(name),
                });
            };
            let pos = col.position as usize;
            if sets.iter().any(|(p, _)| *p == pos) {
                return Err(Error::SyntaxMisuse {
                    message: format!("multiple assignments to same column \"{cname}\""),
                    span: None,
                });
            }
            let ty = col.data_type;
            let value = if matches!(&a.value, AstExpr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
            {
                self.column_default(table, pos)?
            } else {
                check_not_always(table, pos, true)?;
                let t = self.bind_expr(&a.value, scope)?;
                self.coerce(t, ty, CastKind::Assignment, &a.value).map_err(|e| match e {
                    Error::DatatypeMismatch { span, .. } => Error::DatatypeMismatch {
                        message: format!(
                            "column \"{cname}\" is of type {} but expression is of another type",
                            ty.sql_name()
                        ),
                        span,
                    },
                    other => other,
                })?
            };
            sets.push((pos, value));
        }
        Ok(sets)
    }

    fn finish_update(
        &mut self,
        table: Arc<Table>,
        sets: Vec<(usize, Expr)>,
        conjuncts: Vec<Expr>,
        from: Option<Box<JoinedFrom>>,
        up: &ast::Update,
        scope: &Scope,
    ) -> Result<Statement> {
        let scan = scan_with(table.clone(), conjuncts);
        let returning = self.bind_returning_over(up.returning.as_deref(), scope)?;
        // A deferred update checks nothing at commit: no CHECK may read a column it sets (a
        // check of other columns holds for the new row as it held for the old).
        let deferrable = returning.is_none()
            && from.is_none()
            && deferrable_update(&table, &scan, &sets)
            && !table
                .checks
                .iter()
                .any(|c| sets.iter().any(|(s, _)| c.columns.contains(&(*s as u16))));
        let checks = self.table_checks(&table)?;
        Ok(Statement::Update {
            table,
            scan,
            sets: sets.into(),
            returning,
            deferrable,
            checks,
            from,
        })
    }

    pub(crate) fn bind_delete(&mut self, del: &ast::Delete) -> Result<Statement> {
        if !del.order_by.is_empty() || del.limit.is_some() || !del.tables.is_empty() {
            return Err(Error::unsupported("this form of DELETE"));
        }
        let from = match &del.from {
            ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
        };
        let [twj] = from.as_slice() else {
            return Err(Error::unsupported("DELETE from several tables"));
        };
        let (table, alias) = self.single_table(twj)?;
        let mut scope = Scope::from_table(&table, &alias);
        let others = match &del.using {
            Some(using) => Some(self.bind_others(using, &mut scope)?),
            None => None,
        };
        let mut conjuncts = Vec::new();
        if let Some(w) = &del.selection {
            let c = self.bind_condition(w, &scope, "WHERE")?;
            split_conjuncts(c, &mut conjuncts);
        }
        let (conjuncts, from) = joined_from(&table, others, conjuncts, &scope)?;
        let scan = scan_with(table.clone(), conjuncts);
        let returning = self.bind_returning_over(del.returning.as_deref(), &scope)?;
        Ok(Statement::Delete { table, scan, returning, from })
    }
}

/// Splits the WHERE conditions of UPDATE … FROM / DELETE … USING (bound over `scope`: the
/// target's columns, then the other tables'): those that read only the target filter its scan
/// (returned), those that read only the others join them, equalities between the two are the
/// hash keys, and the rest (and anything with a subquery) is checked on each pair. Without
/// other tables every condition filters the scan.
fn joined_from(
    table: &Table,
    others: Option<(Vec<super::select::FromItem>, Scope)>,
    conjuncts: Vec<Expr>,
    scope: &Scope,
) -> Result<(Vec<Expr>, Option<Box<JoinedFrom>>)> {
    let Some((items, others)) = others else { return Ok((conjuncts, None)) };
    let width = table.columns.len();
    let end = scope.columns.len();
    let reads = |e: &Expr, range: std::ops::Range<usize>| {
        let mut hit = false;
        walk(e, &mut |x| hit |= matches!(x, Expr::Column(i) if range.contains(i)));
        hit
    };
    let to_others = |e: Expr| {
        map_expr(e, &mut |x| match x {
            Expr::Column(i) => Expr::Column(i - width),
            other => other,
        })
    };
    let (mut own, mut theirs, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    let (mut target_keys, mut from_keys, mut bpchar) = (Vec::new(), Vec::new(), Vec::new());
    for c in conjuncts {
        let (target, other) = (reads(&c, 0..width), reads(&c, width..end));
        if contains_subquery(&c) {
            rest.push(c);
        } else if !other {
            own.push(c);
        } else if !target {
            theirs.push(to_others(c));
        } else if let Some((t, o)) = hash_key_pair(&c, width, end) {
            bpchar.push(may_be_bpchar(t, scope) || may_be_bpchar(o, scope));
            target_keys.push(t.clone());
            from_keys.push(to_others(o.clone()));
        } else {
            rest.push(c);
        }
    }
    let plan = build_join_tree(items, theirs, &others, true)?;
    let from = JoinedFrom { plan, target_keys, from_keys, bpchar, on: and_all(rest) };
    Ok((own, Some(Box::new(from))))
}

/// Whether an UPDATE may run as a deferred update (see `Statement::Update::deferrable`): its
/// scan is a point get on the full primary key and its WHERE clause nothing but one equality
/// per key column (so the row's existence alone decides whether it is updated), and each SET
/// writes a column that no index (primary or secondary) and no foreign key contains, with an
/// expression of the row, parameters and constants only (no subquery: that would read other
/// rows at commit).
fn deferrable_update(table: &Table, scan: &Plan, sets: &[(usize, Expr)]) -> bool {
    let Plan::Scan { access: Access::PointGet(_), filter, limit: None, for_update: false, .. } =
        scan
    else {
        return false;
    };
    let Some(pk) = table.primary_index().filter(|_| !table.hidden_pk) else { return false };
    let mut conjuncts = Vec::new();
    if let Some(f) = filter {
        split_conjuncts(f.clone(), &mut conjuncts);
    }
    let mut covered = Vec::new();
    for c in &conjuncts {
        let Expr::Cmp(CmpOp::Eq, a, b) = c else { return false };
        let col = match (key_column(a, table), key_column(b, table)) {
            (Some(col), None) if row_independent(b) => col,
            (None, Some(col)) if row_independent(a) => col,
            _ => return false,
        };
        if !pk.columns.contains(&(col as u16)) || covered.contains(&col) {
            return false;
        }
        covered.push(col);
    }
    covered.len() == pk.columns.len()
        && sets.iter().all(|(col, e)| {
            let c = *col as u16;
            !table.indexes.iter().any(|i| i.columns.contains(&c) || i.predicate.is_some())
                && !table.foreign_keys.iter().any(|fk| fk.columns.contains(&c))
                && row_local(e)
        })
}

/// A value other than DEFAULT for column `col` is refused if it is `GENERATED ALWAYS AS
/// IDENTITY` (`update`: in UPDATE … SET).
fn check_not_always(table: &Table, col: usize, update: bool) -> Result<()> {
    let column = &table.columns[col];
    match &column.sequence {
        Some(seq) if seq.generated == catalog::Generated::Always => {
            Err(Error::generated_always(&column.name, update))
        }
        _ => Ok(()),
    }
}

/// Parses an expression the catalog keeps as SQL text (a column default, a CHECK constraint).
pub(crate) fn stored_expr(sql: &str) -> Result<AstExpr> {
    let bad = || Error::internal(format!("bad stored expression {sql}"));
    let stmts = crate::parse::parse(&format!("SELECT {sql}"))?;
    let Some(crate::parse::Parsed::Sql(stmt)) = stmts.first() else { return Err(bad()) };
    let ast::Statement::Query(q) = stmt.as_ref() else { return Err(bad()) };
    let SetExpr::Select(s) = q.body.as_ref() else { return Err(bad()) };
    let Some(SelectItem::UnnamedExpr(e)) = s.projection.first() else { return Err(bad()) };
    Ok(e.clone())
}

/// The tables a statement writes (its target, and for UPDATE / DELETE the tables whose
/// foreign keys reference it, which their actions may change) and reads (every scan, in
/// subqueries too, and the tables its foreign keys check).
fn statement_tables(
    snapshot: &catalog::Snapshot,
    stmt: &Statement,
) -> (Vec<catalog::TableId>, Vec<catalog::TableId>) {
    fn plan_tables(plan: &Plan, out: &mut Vec<catalog::TableId>) {
        if let Plan::Scan { table, .. } = plan {
            out.push(table.id);
        }
        for e in plan.exprs() {
            expr_tables(e, out);
        }
        for p in plan.inputs() {
            plan_tables(p, out);
        }
    }
    fn expr_tables(e: &Expr, out: &mut Vec<catalog::TableId>) {
        super::select::walk(e, &mut |x| {
            if let Expr::Subquery(p) | Expr::Exists(p, _) | Expr::InSubquery(_, p, _) = x {
                plan_tables(p, out);
            }
        });
    }
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    let returned = |r: &Option<Vec<(Expr, OutColumn)>>, reads: &mut Vec<_>| {
        for (e, _) in r.iter().flatten() {
            expr_tables(e, reads);
        }
    };
    // A target is read too unless a plain INSERT writes it (several of those may share one).
    let target = |table: &Table, changes_keys: bool, writes: &mut Vec<_>, reads: &mut Vec<_>| {
        writes.push(table.id);
        if changes_keys {
            reads.push(table.id);
        }
        reads.extend(table.foreign_keys.iter().map(|fk| fk.ref_table));
        if changes_keys {
            writes.extend(snapshot.referencing_fks(table.id).into_iter().map(|(t, _)| t.id));
        }
    };
    match stmt {
        Statement::Query(q) => plan_tables(&q.plan, &mut reads),
        Statement::Insert { table, source, returning, on_conflict, .. } => {
            target(
                table,
                on_conflict.as_ref().is_some_and(|oc| oc.update.is_some()),
                &mut writes,
                &mut reads,
            );
            plan_tables(source, &mut reads);
            returned(returning, &mut reads);
            if on_conflict.is_some() {
                reads.push(table.id);
            }
            if let Some(u) = on_conflict.as_ref().and_then(|oc| oc.update.as_ref()) {
                for (_, e) in &u.sets {
                    expr_tables(e, &mut reads);
                }
            }
        }
        Statement::Update { table, scan, sets, returning, from, .. } => {
            target(table, true, &mut writes, &mut reads);
            plan_tables(scan, &mut reads);
            for (_, e) in sets.iter() {
                expr_tables(e, &mut reads);
            }
            returned(returning, &mut reads);
            if let Some(f) = from {
                plan_tables(&f.plan, &mut reads);
            }
        }
        Statement::Delete { table, scan, returning, from } => {
            target(table, true, &mut writes, &mut reads);
            plan_tables(scan, &mut reads);
            returned(returning, &mut reads);
            if let Some(f) = from {
                plan_tables(&f.plan, &mut reads);
            }
        }
        Statement::With { ctes, main } => {
            for s in ctes.iter().map(|(_, s)| s).chain(std::iter::once(main.as_ref())) {
                let (w, r) = statement_tables(snapshot, s);
                writes.extend(w);
                reads.extend(r);
            }
        }
    }
    (writes, reads)
}

/// PostgreSQL runs a statement and its data-modifying WITH queries on one snapshot: none sees
/// another's changes. Aspen runs them one after the other, which answers the same only when
/// no part reads a table another part writes (plain INSERTs into one table may share it);
/// otherwise `0A000`.
pub(super) fn check_with_snapshot(
    snapshot: &catalog::Snapshot,
    ctes: &[(usize, Statement)],
    main: &Statement,
) -> Result<()> {
    let parts: Vec<_> = ctes
        .iter()
        .map(|(_, s)| s)
        .chain(std::iter::once(main))
        .map(|s| statement_tables(snapshot, s))
        .collect();
    for (i, (writes, _)) in parts.iter().enumerate() {
        for (j, (_, reads)) in parts.iter().enumerate() {
            if i == j {
                continue;
            }
            if let Some(t) = writes.iter().find(|t| reads.contains(t)) {
                let name = snapshot.table_by_id(*t).map_or("?".to_string(), |t| t.name.clone());
                return Err(Error::unsupported(format!(
                    "a data-modifying WITH query on table \"{name}\" that another part of the \
                     statement also reads or changes (PostgreSQL's parts share one snapshot)"
                )));
            }
        }
    }
    Ok(())
}
