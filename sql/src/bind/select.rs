//! Binding queries: FROM (tables, joins, generate_series and the jsonb set-returning functions —
//! implicitly LATERAL, as in PostgreSQL —, derived tables), WHERE with predicate
//! pushdown into nested-loop joins and key/range access paths, GROUP BY / aggregates / HAVING,
//! projection, DISTINCT, ORDER BY, LIMIT / OFFSET and FOR UPDATE.

use std::sync::Arc;

use catalog::{DataType, Snapshot, Table};
use sqlparser::ast::{self as ast, Expr as AstExpr, SelectItem, SetExpr, TableFactor};

use super::expr::column_name;
use super::{ident, Binder, Scope, ScopeColumn};
use crate::error::{Error, Result};
use crate::plan::{
    Access, ArrayFunc, CmpOp, Expr, Func, JoinKind, JsonbRows, Lookup, OutColumn, Plan, Query,
    SetOpKind, SortKey,
};
use crate::types::{self, CastKind, Value};

/// One FROM item while building the join tree.
pub(crate) struct FromItem {
    plan: Plan,
    width: usize,
    kind: JoinKind,
    /// ON condition, bound against the combined scope up to and including this item.
    on: Vec<Expr>,
    /// A LATERAL subquery: bound with the items before it as its innermost outer scope (its
    /// references to their row are `Outer { depth: 0 }`), so it is always the inner side of a
    /// nested loop, run under each row of those items.
    lateral: bool,
}

impl FromItem {
    /// An item joined to those before it with no condition of its own.
    fn plain(plan: Plan, width: usize) -> FromItem {
        FromItem { plan, width, kind: JoinKind::Inner, on: vec![], lateral: false }
    }
}

impl Binder<'_> {
    /// Binds a full query (SELECT / VALUES with ORDER BY, LIMIT, FOR UPDATE).
    pub(crate) fn bind_query(&mut self, q: &ast::Query) -> Result<Query> {
        let Some(with) = &q.with else { return self.bind_query_body(q) };
        let visible = self.ctes.len();
        let bound = self.push_ctes(with).and_then(|()| self.bind_query_body(q));
        self.ctes.truncate(visible);
        bound
    }

    /// Brings the queries of `with` into scope (the caller truncates `ctes` afterwards).
    pub(crate) fn push_ctes(&mut self, with: &ast::With) -> Result<()> {
        let visible = self.ctes.len();
        let dml_allowed = std::mem::take(&mut self.dml_allowed);
        for cte in &with.cte_tables {
            let name = ident(&cte.alias.name);
            if self.ctes[visible..].iter().any(|c| c.name == name) {
                return Err(Error::DuplicateAlias {
                    message: format!("WITH query name \"{name}\" specified more than once"),
                });
            }
            let materialized = match cte.query.body.as_ref() {
                SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => {
                    if !dml_allowed {
                        return Err(Error::unsupported_msg(
                            "WITH clause containing a data-modifying statement must be at the top level",
                        ));
                    }
                    if with.recursive {
                        return Err(Error::unsupported("a data-modifying WITH RECURSIVE query"));
                    }
                    let stmt = match self.bind_statement(s)? {
                        super::Bound::Plan(stmt) => stmt,
                        super::Bound::Command(_) => {
                            return Err(Error::internal("a data-modifying WITH query"))
                        }
                    };
                    let id = self.next_working;
                    self.next_working += 1;
                    let columns = stmt.columns().unwrap_or_default();
                    self.dml_ctes.push((id, stmt));
                    Some((id, columns))
                }
                _ => None,
            };
            self.ctes.push(super::Cte {
                materialized,
                name,
                columns: cte.alias.columns.iter().map(|c| ident(&c.name)).collect(),
                query: (*cte.query).clone(),
                outer_depth: self.outer.len(),
                recursive: with.recursive,
                working: None,
            });
        }
        Ok(())
    }

    /// A reference to WITH query `name`, if one is in scope: its query bound as a derived
    /// table, seeing the WITH queries defined before it and the scopes its definition saw.
    fn bind_cte_reference(&mut self, name: &str) -> Option<Result<Query>> {
        let at = self.ctes.iter().rposition(|c| c.name == name)?;
        let cte = self.ctes[at].clone();
        if let Some((id, columns)) = &cte.materialized {
            // A data-modifying query: the rows its RETURNING gave.
            if columns.is_empty() {
                return Some(Err(Error::unsupported_msg(format!(
                    "WITH query \"{name}\" does not have a RETURNING clause"
                ))));
            }
            if cte.columns.len() > columns.len() {
                return Some(Err(Error::InvalidColumnReference {
                    message: format!(
                        "WITH query \"{name}\" has {} columns available but {} columns specified",
                        columns.len(),
                        cte.columns.len()
                    ),
                    span: None,
                }));
            }
            let mut columns = columns.clone();
            for (c, alias) in columns.iter_mut().zip(&cte.columns) {
                c.name = alias.clone();
            }
            let plan = Plan::WorkingTable { id: *id, width: columns.len() };
            return Some(Ok(Query { plan, columns }));
        }
        if let Some(w) = &cte.working {
            // The recursive term's reference to its own query: the working table.
            w.uses.set(w.uses.get() + 1);
            let refuse = |place: &str| {
                Some(Err(Error::DataException {
                    message: format!(
                        "recursive reference to query \"{name}\" must not appear {place}"
                    ),
                    sqlstate: "42P19",
                }))
            };
            if w.uses.get() > 1 {
                return refuse("more than once");
            }
            if self.outer.len() > w.depth {
                return refuse("within a subquery");
            }
            let plan = Plan::WorkingTable { id: w.id, width: w.columns.len() };
            return Some(Ok(Query { plan, columns: w.columns.clone() }));
        }
        let later = self.ctes.split_off(at);
        let outer = self.outer.split_off(cte.outer_depth.min(self.outer.len()));
        let aggs = self.aggs.take();
        let bound =
            if cte.recursive { self.bind_recursive(&cte) } else { self.bind_query(&cte.query) };
        self.ctes.extend(later);
        self.outer.extend(outer);
        self.aggs = aggs;
        Some(bound.and_then(|mut q| {
            if cte.columns.len() > q.columns.len() {
                return Err(Error::InvalidColumnReference {
                    message: format!(
                        "WITH query \"{name}\" has {} columns available but {} columns specified",
                        q.columns.len(),
                        cte.columns.len()
                    ),
                    span: None,
                });
            }
            for (c, alias) in q.columns.iter_mut().zip(&cte.columns) {
                c.name = alias.clone();
            }
            Ok(q)
        }))
    }

    /// A WITH RECURSIVE query: `anchor UNION [ALL] recursive`, where only the recursive term
    /// may refer to the query itself (once), reading the previous step's rows. The columns
    /// take the anchor's types; the recursive term's must resolve to them with UNION's rules
    /// (`42804` otherwise, as in PostgreSQL). A query of another form, or whose second term does
    /// not refer to it, is an ordinary one.
    fn bind_recursive(&mut self, cte: &super::Cte) -> Result<Query> {
        let q = &cte.query;
        let SetExpr::SetOperation { op: ast::SetOperator::Union, set_quantifier, left, right } =
            q.body.as_ref()
        else {
            return self.bind_query(q);
        };
        if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() {
            // Fine if it does not refer to itself; if it does, PostgreSQL's message.
            return match self.bind_query(q) {
                Err(Error::UndefinedTable { name, .. }) if name == cte.name => {
                    Err(Error::unsupported_msg(
                        "ORDER BY / LIMIT / WITH in a recursive query is not implemented",
                    ))
                }
                other => other,
            };
        }
        let all = match set_quantifier {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::None | ast::SetQuantifier::Distinct => false,
            _ => return self.bind_query(q),
        };
        let (anchor, mut columns) = self.bind_set_expr(left)?;
        for (c, alias) in columns.iter_mut().zip(&cte.columns) {
            c.name = alias.clone();
        }
        let id = self.next_working;
        self.next_working += 1;
        let uses = std::rc::Rc::new(std::cell::Cell::new(0));
        let mut working = cte.clone();
        working.working = Some(super::Working {
            id,
            columns: columns.clone(),
            uses: uses.clone(),
            depth: self.outer.len(),
        });
        self.ctes.push(working);
        let bound = self.bind_set_expr(right);
        self.ctes.pop();
        let (recursive, rcols) = bound?;
        if uses.get() == 0 {
            // Not recursive after all.
            return self.bind_query(q);
        }
        recursive_term_groups(&recursive)?;
        if rcols.len() != columns.len() {
            return Err(Error::SyntaxMisuse {
                message: "each UNION query must have the same number of columns".into(),
                span: None,
            });
        }
        let mut exprs = Vec::with_capacity(columns.len());
        for (i, (a, r)) in columns.iter().zip(&rcols).enumerate() {
            let overall = types::common_type(&a.data_type, &r.data_type);
            if overall.as_ref() != Some(&a.data_type) {
                return Err(Error::DatatypeMismatch {
                    message: format!(
                        "recursive query \"{}\" column {} has type {} in non-recursive term but type {} overall",
                        cte.name,
                        i + 1,
                        a.data_type.sql_name(),
                        overall.map_or_else(|| r.data_type.sql_name(), |t| t.sql_name()),
                    ),
                    span: None,
                });
            }
            exprs.push(super::expr::fold_cast(
                Expr::Column(i),
                r.data_type,
                a.data_type,
                CastKind::Implicit,
            )?);
        }
        check_recursive_term(&recursive, id, &cte.name)?;
        let recursive = if rcols.iter().zip(&columns).all(|(r, a)| r.data_type == a.data_type) {
            recursive
        } else {
            Plan::Project { input: Box::new(recursive), exprs }
        };
        let plan = Plan::RecursiveUnion {
            id,
            anchor: Box::new(anchor),
            recursive: Box::new(recursive),
            all,
        };
        Ok(Query { plan, columns })
    }

    /// [`Binder::bind_query`] without its WITH clause.
    fn bind_query_body(&mut self, q: &ast::Query) -> Result<Query> {
        // FOR UPDATE and FOR SHARE both lock (Aspen's row locks are exclusive); with OF, the
        // relations named in every clause, unless one clause names none.
        if q.locks.iter().any(|l| l.nonblock.is_some()) {
            return Err(Error::unsupported("FOR UPDATE … NOWAIT / SKIP LOCKED"));
        }
        let for_update = !q.locks.is_empty();
        let lock_of: Option<Vec<String>> = q
            .locks
            .iter()
            .map(|l| l.of.as_ref().map(|name| self.object_name(name).map(|(_, n)| n)))
            .collect::<Option<Result<Vec<_>>>>()
            .transpose()?;
        let (limit, offset) = match &q.limit_clause {
            None => (None, None),
            Some(ast::LimitClause::LimitOffset { limit, offset, limit_by }) => {
                if !limit_by.is_empty() {
                    return Err(Error::unsupported("LIMIT BY"));
                }
                (limit.as_ref(), offset.as_ref().map(|o| &o.value))
            }
            Some(ast::LimitClause::OffsetCommaLimit { .. }) => {
                return Err(Error::unsupported("LIMIT a, b"))
            }
        };
        let order_by: Vec<&ast::OrderByExpr> = match &q.order_by {
            None => vec![],
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(list) => list.iter().collect(),
                ast::OrderByKind::All(_) => return Err(Error::unsupported("ORDER BY ALL")),
            },
        };
        // FETCH { FIRST | NEXT } [n] { ROW | ROWS } ONLY is LIMIT n (1 without n).
        let one = ast::Expr::value(ast::Value::Number("1".into(), false));
        let limit = match (&q.fetch, limit) {
            (None, limit) => limit,
            (Some(f), _) if f.with_ties => {
                return Err(Error::unsupported("FETCH FIRST … WITH TIES"));
            }
            (Some(f), _) if f.percent => return Err(Error::unsupported("FETCH FIRST … PERCENT")),
            (Some(_), Some(_)) => {
                return Err(Error::Syntax {
                    message: "multiple LIMIT clauses not allowed".into(),
                    span: None,
                })
            }
            (Some(f), None) => Some(f.quantity.as_ref().unwrap_or(&one)),
        };
        let limit = limit.map(|l| self.bind_limit(l)).transpose()?;
        let offset = offset.map(|o| self.bind_limit(o)).transpose()?;
        match q.body.as_ref() {
            SetExpr::Select(select) => {
                self.lock_of = lock_of;
                self.bind_select(select, &order_by, limit, offset, for_update)
            }
            SetExpr::Values(values) => {
                if for_update {
                    return Err(Error::unsupported("FOR UPDATE on VALUES"));
                }
                let (plan, columns) = self.bind_values(values, None)?;
                let scope = output_scope(&columns, None);
                self.finish_query(plan, columns, scope, &order_by, limit, offset)
            }
            SetExpr::Query(inner) => {
                if !order_by.is_empty() || limit.is_some() || offset.is_some() || for_update {
                    let inner = self.bind_query(inner)?;
                    let scope = Scope {
                        columns: inner
                            .columns
                            .iter()
                            .map(|c| ScopeColumn {
                                relation: None,
                                name: c.name.clone(),
                                data_type: c.data_type,
                                source: c.source,
                                hidden: false,
                                shadowed: false,
                                whole_row: false,
                            })
                            .collect(),
                        star: None,
                    };
                    return self.finish_query(
                        inner.plan,
                        inner.columns,
                        scope,
                        &order_by,
                        limit,
                        offset,
                    );
                }
                self.bind_query(inner)
            }
            SetExpr::SetOperation { .. } => {
                if for_update {
                    return Err(Error::unsupported_msg(
                        "FOR UPDATE is not allowed with UNION/INTERSECT/EXCEPT",
                    ));
                }
                let (plan, columns) = self.bind_set_expr(q.body.as_ref())?;
                // ORDER BY names the output columns (or their positions).
                let scope = output_scope(&columns, None);
                self.finish_query(plan, columns, scope, &order_by, limit, offset)
            }
            other => Err(Error::unsupported(format!("query body {other}"))),
        }
    }

    /// One side of a set operation (or a whole one): its plan and output columns. The result
    /// columns are named after the left side's; each column's type is the common type of both
    /// sides (`42804` when there is none), each side cast to it.
    fn bind_set_expr(&mut self, body: &SetExpr) -> Result<(Plan, Vec<OutColumn>)> {
        match body {
            SetExpr::Select(select) => {
                let q = self.bind_select(select, &[], None, None, false)?;
                Ok((q.plan, q.columns))
            }
            SetExpr::Values(values) => self.bind_values(values, None),
            SetExpr::Query(inner) => {
                let q = self.bind_query(inner)?;
                Ok((q.plan, q.columns))
            }
            SetExpr::SetOperation { op, set_quantifier, left, right } => {
                let (op, name) = match op {
                    ast::SetOperator::Union => (SetOpKind::Union, "UNION"),
                    ast::SetOperator::Intersect => (SetOpKind::Intersect, "INTERSECT"),
                    ast::SetOperator::Except => (SetOpKind::Except, "EXCEPT"),
                    other => return Err(Error::unsupported(format!("{other}"))),
                };
                let all = match set_quantifier {
                    ast::SetQuantifier::All => true,
                    ast::SetQuantifier::None | ast::SetQuantifier::Distinct => false,
                    other => return Err(Error::unsupported(format!("{name} {other}"))),
                };
                let (lp, lcols) = self.bind_set_expr(left)?;
                let (rp, rcols) = self.bind_set_expr(right)?;
                if lcols.len() != rcols.len() {
                    return Err(Error::SyntaxMisuse {
                        message: format!("each {name} query must have the same number of columns"),
                        span: None,
                    });
                }
                let mut types = Vec::with_capacity(lcols.len());
                for (i, (l, r)) in lcols.iter().zip(&rcols).enumerate() {
                    // An untyped NULL takes the other side's type, as PostgreSQL's unknown does.
                    if untyped_null(right, i) {
                        types.push(l.data_type);
                        continue;
                    }
                    if untyped_null(left, i) {
                        types.push(r.data_type);
                        continue;
                    }
                    let t = types::common_type(&l.data_type, &r.data_type).ok_or_else(|| {
                        Error::DatatypeMismatch {
                            message: format!(
                                "{name} types {} and {} cannot be matched",
                                l.data_type.base_name(),
                                r.data_type.base_name()
                            ),
                            span: None,
                        }
                    })?;
                    types.push(t);
                }
                // Through `fold_cast`, which knows what a cast means for the evaluator's
                // values (a char(n) loses its padding as text).
                let cast = |plan: Plan, cols: &[OutColumn]| -> Result<Plan> {
                    if cols.iter().zip(&types).all(|(c, t)| c.data_type == *t) {
                        return Ok(plan);
                    }
                    let exprs = cols
                        .iter()
                        .zip(&types)
                        .enumerate()
                        .map(|(i, (c, t))| {
                            let column = Expr::Column(i);
                            if c.data_type == *t {
                                Ok(column)
                            } else {
                                super::expr::fold_cast(column, c.data_type, *t, CastKind::Implicit)
                            }
                        })
                        .collect::<Result<_>>()?;
                    Ok(Plan::Project { input: Box::new(plan), exprs })
                };
                let left = cast(lp, &lcols)?;
                let right = cast(rp, &rcols)?;
                let columns = lcols
                    .into_iter()
                    .zip(&types)
                    .map(|(c, t)| OutColumn { name: c.name, data_type: *t, source: None })
                    .collect();
                let plan = Plan::SetOp { left: Box::new(left), right: Box::new(right), op, all };
                Ok((plan, columns))
            }
            other => Err(Error::unsupported(format!("query body {other}"))),
        }
    }

    fn bind_limit(&mut self, e: &AstExpr) -> Result<Expr> {
        self.bind_expr_as(e, &Scope::default(), DataType::Int64, CastKind::Implicit)
    }

    /// Binds a subquery with `scope` as its nearest enclosing scope.
    pub(crate) fn bind_subquery(
        &mut self,
        q: &ast::Query,
        scope: &Scope,
    ) -> Result<(Plan, Vec<OutColumn>)> {
        self.outer.push(scope.clone());
        let saved = self.aggs.take();
        let result = self.bind_query(q);
        self.aggs = saved;
        self.outer.pop();
        let query = result?;
        Ok((query.plan, query.columns))
    }

    /// VALUES lists; `targets` gives the column types to coerce to (INSERT), else the common type
    /// of each column.
    pub(crate) fn bind_values(
        &mut self,
        values: &ast::Values,
        targets: Option<&[DataType]>,
    ) -> Result<(Plan, Vec<OutColumn>)> {
        let width = values.rows.first().map(|r| r.len()).unwrap_or(0);
        let empty = Scope::default();
        let mut typed_rows = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            if row.len() != width {
                return Err(Error::SyntaxMisuse {
                    message: "VALUES lists must all be the same length".into(),
                    span: row.first().and_then(|e| self.span_of(e)),
                });
            }
            let mut typed = Vec::with_capacity(width);
            for (i, e) in row.iter().enumerate() {
                if targets.is_some() && is_default(e) {
                    typed.push(None);
                    continue;
                }
                let _ = i;
                typed.push(Some((self.bind_expr(e, &empty)?, e)));
            }
            typed_rows.push(typed);
        }
        let mut types = Vec::with_capacity(width);
        for col in 0..width {
            let ty = match targets {
                Some(t) => t[col],
                None => {
                    let mut ty: Option<DataType> = None;
                    for row in &typed_rows {
                        if let Some((t, e)) = &row[col] {
                            if !t.unknown {
                                ty = Some(match ty {
                                    None => t.ty,
                                    Some(cur) if cur == t.ty => cur,
                                    Some(cur) => crate::types::common_type(&cur, &t.ty)
                                        .ok_or_else(|| Error::DatatypeMismatch {
                                            message: format!(
                                                "VALUES types {} and {} cannot be matched",
                                                cur.sql_name(),
                                                t.ty.sql_name()
                                            ),
                                            span: self.span_of(*e),
                                        })?,
                                });
                            }
                        }
                    }
                    let items: Vec<&super::expr::Typed> =
                        typed_rows.iter().filter_map(|r| r[col].as_ref().map(|(t, _)| t)).collect();
                    ty.map_or(DataType::Text, |ty| super::expr::without_literal_lengths(ty, &items))
                }
            };
            types.push(ty);
        }
        let kind = if targets.is_some() { CastKind::Assignment } else { CastKind::Implicit };
        let mut rows = Vec::with_capacity(typed_rows.len());
        for row in typed_rows {
            let mut out = Vec::with_capacity(width);
            for (col, cell) in row.into_iter().enumerate() {
                out.push(match cell {
                    None => Expr::Literal(DEFAULT_MARKER.clone()),
                    Some((t, e)) => self.coerce(t, types[col], kind, e)?,
                });
            }
            rows.push(out);
        }
        let columns = (0..width)
            .map(|i| OutColumn {
                name: format!("column{}", i + 1),
                data_type: types[i],
                source: None,
            })
            .collect();
        Ok((Plan::Values { rows, width }, columns))
    }

    /// Binds FROM: returns the items and the combined scope.
    ///
    /// `a RIGHT JOIN b ON …` becomes `b LEFT JOIN (a) ON …` with the columns put back in the
    /// written order: what is joined so far becomes one item, the inner side of that join.
    /// `JOIN … USING (cols)` and `NATURAL JOIN` are joins on equal columns whose pairs merge:
    /// the left column stands for both (the right one for a RIGHT JOIN), the other is found
    /// only by its qualified name, and `*` lists the merged columns first ([`Scope::star`]).
    pub(crate) fn bind_from(
        &mut self,
        from: &[ast::TableWithJoins],
    ) -> Result<(Vec<FromItem>, Scope)> {
        let mut items = Vec::new();
        let mut scope = Scope::default();
        for twj in from {
            let (plan, s, lateral) = self.bind_from_factor(&twj.relation, &scope)?;
            let width = s.columns.len();
            extend_scope(&mut scope, s);
            items.push(FromItem { lateral, ..FromItem::plain(plan, width) });
            for join in &twj.joins {
                let (plan, s, lateral) = self.bind_from_factor(&join.relation, &scope)?;
                let width = s.columns.len();
                use ast::JoinOperator as J;
                let (kind, right, constraint) = match &join.join_operator {
                    J::Join(c) | J::Inner(c) => (JoinKind::Inner, false, Some(c)),
                    J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, false, Some(c)),
                    J::Right(c) | J::RightOuter(c) => (JoinKind::Left, true, Some(c)),
                    J::FullOuter(c) => (JoinKind::Full, false, Some(c)),
                    J::CrossJoin(c) => (JoinKind::Inner, false, Some(c)),
                    other => {
                        return Err(Error::unsupported(
                            format!("join type {other:?}")
                                .split('(')
                                .next()
                                .unwrap_or("join")
                                .to_string(),
                        ))
                    }
                };
                let left_width = scope.columns.len();
                let mut on = vec![];
                match constraint {
                    Some(ast::JoinConstraint::On(e)) => {
                        extend_scope(&mut scope, s);
                        let c = self.bind_condition(e, &scope, "JOIN/ON")?;
                        split_conjuncts(c, &mut on);
                    }
                    Some(ast::JoinConstraint::None) | None => {
                        if kind != JoinKind::Inner {
                            let which = match (kind, right) {
                                (JoinKind::Full, _) => "FULL",
                                (_, true) => "RIGHT",
                                _ => "LEFT",
                            };
                            return Err(Error::Syntax {
                                message: format!("syntax error: {which} JOIN needs ON"),
                                span: None,
                            });
                        }
                        extend_scope(&mut scope, s);
                    }
                    Some(ast::JoinConstraint::Using(_) | ast::JoinConstraint::Natural)
                        if kind == JoinKind::Full =>
                    {
                        // The merged column would be COALESCE(left, right).
                        return Err(Error::unsupported("FULL JOIN with USING or NATURAL"));
                    }
                    Some(ast::JoinConstraint::Using(names)) => {
                        let names = names
                            .iter()
                            .map(|n| match n.0.as_slice() {
                                [ast::ObjectNamePart::Identifier(id)] => Ok(ident(id)),
                                _ => Err(Error::unsupported(format!("USING column {n}"))),
                            })
                            .collect::<Result<Vec<_>>>()?;
                        on = self.merge_columns(&mut scope, s, &names, right)?;
                    }
                    Some(ast::JoinConstraint::Natural) => {
                        let names = common_columns(&scope, &s);
                        on = self.merge_columns(&mut scope, s, &names, right)?;
                    }
                }
                if lateral && (right || kind == JoinKind::Full) {
                    return Err(Error::InvalidColumnReference {
                        message: "invalid reference to FROM-clause entry: the combining JOIN \
                                  type must be INNER or LEFT for a LATERAL reference"
                            .into(),
                        span: None,
                    });
                }
                if kind != JoinKind::Full && !right {
                    items.push(FromItem { plan, width, kind, on, lateral });
                    continue;
                }
                // Everything joined so far becomes one side of a join that keeps the right
                // side's rows that meet none.
                let left_scope =
                    Scope { columns: scope.columns[..left_width].to_vec(), star: None };
                let left = build_join_tree(std::mem::take(&mut items), vec![], &left_scope, true)?;
                let plan = if kind == JoinKind::Full {
                    full_join(left, plan, left_width, width, on, &scope)?
                } else {
                    right_join(left, plan, left_width, width, on, &scope)?
                };
                items.push(FromItem::plain(plan, left_width + width));
            }
        }
        Ok((items, scope))
    }

    /// A FROM item after the items bound so far (`scope`): a LATERAL subquery and a function
    /// (implicitly LATERAL, as in PostgreSQL) see their columns (the third value says it is
    /// one); anything else is bound on its own.
    fn bind_from_factor(&mut self, tf: &TableFactor, scope: &Scope) -> Result<(Plan, Scope, bool)> {
        if let TableFactor::Table { args: Some(_), with_ordinality: true, name, .. } = tf {
            return Err(Error::unsupported(format!("{name}(…) WITH ORDINALITY")));
        }
        let function = match tf {
            TableFactor::Function { name, args, alias, .. } => Some((name, &args[..], alias)),
            TableFactor::Table { name, args: Some(args), alias, .. } => {
                Some((name, &args.args[..], alias))
            }
            _ => None,
        };
        if let (
            TableFactor::UNNEST { alias, array_exprs, with_offset, with_ordinality, .. },
            false,
        ) = (tf, scope.columns.is_empty())
        {
            if *with_offset {
                return Err(Error::unsupported("UNNEST … WITH OFFSET"));
            }
            self.outer.push(scope.clone());
            let bound = self.bind_unnest(array_exprs, alias.as_ref(), *with_ordinality);
            self.outer.pop();
            let (plan, s) = bound?;
            return Ok((plan, s, true));
        }
        if let (Some((name, args, alias)), false) = (function, scope.columns.is_empty()) {
            let (_, tname) = self.object_name(name)?;
            self.outer.push(scope.clone());
            let bound = self.bind_table_function(&tname, args, alias.as_ref());
            self.outer.pop();
            let (plan, s) = bound?;
            return Ok((plan, s, true));
        }
        let TableFactor::Derived { lateral: true, subquery, alias, .. } = tf else {
            let (plan, s) = self.bind_table_factor(tf)?;
            return Ok((plan, s, false));
        };
        if scope.columns.is_empty() {
            let (plan, s) = self.bind_table_factor(tf)?;
            return Ok((plan, s, false));
        }
        let (plan, s) = self.bind_derived(subquery, alias.as_ref(), Some(scope))?;
        Ok((plan, s, true))
    }

    /// A subquery in FROM. It sees the enclosing query's outer scopes, not its siblings —
    /// except a LATERAL one, which sees `lateral` (the items before it) as its innermost.
    fn bind_derived(
        &mut self,
        subquery: &ast::Query,
        alias: Option<&ast::TableAlias>,
        lateral: Option<&Scope>,
    ) -> Result<(Plan, Scope)> {
        let saved = self.aggs.take();
        if let Some(scope) = lateral {
            self.outer.push(scope.clone());
        }
        let q = self.bind_query(subquery);
        if lateral.is_some() {
            self.outer.pop();
        }
        self.aggs = saved;
        let rel = alias.map(|a| ident(&a.name));
        Ok(derived(q?, rel, alias))
    }

    /// `JOIN … USING (names)` between `scope` (the left side) and `right`: appends `right` to
    /// `scope`, merges each named pair (the right column shadowed, or the left one for a RIGHT
    /// JOIN), puts the merged columns first in `*`, and returns the equalities to join on.
    fn merge_columns(
        &mut self,
        scope: &mut Scope,
        right: Scope,
        names: &[String],
        right_join: bool,
    ) -> Result<Vec<Expr>> {
        use crate::error::UsingFault;
        let find = |s: &Scope, name: &str, side: &'static str| -> Result<usize> {
            let mut found = s.visible().filter(|(_, c)| !c.shadowed && c.name == name);
            let fault = match (found.next(), found.next()) {
                (Some((i, _)), None) => return Ok(i),
                (None, _) => UsingFault::Missing,
                (Some(_), Some(_)) => UsingFault::Ambiguous,
            };
            Err(Error::UsingColumn { name: name.into(), side, fault })
        };
        let offset = scope.columns.len();
        let mut pairs = Vec::with_capacity(names.len());
        for (k, name) in names.iter().enumerate() {
            if names[..k].contains(name) {
                let fault = UsingFault::Repeated;
                return Err(Error::UsingColumn { name: name.clone(), side: "", fault });
            }
            pairs.push((find(scope, name, "left")?, offset + find(&right, name, "right")?));
        }
        let left_star: Vec<usize> = scope.star().into_iter().map(|(i, _)| i).collect();
        let right_star: Vec<usize> = right.star().into_iter().map(|(i, _)| offset + i).collect();
        extend_scope(scope, right);
        let mut on = Vec::with_capacity(pairs.len());
        for &(l, r) in &pairs {
            // The equality, bound as `l.name = r.name` over a scope of the two columns.
            let two = Scope {
                columns: vec![
                    ScopeColumn { relation: Some("l".into()), ..scope.columns[l].clone() },
                    ScopeColumn { relation: Some("r".into()), ..scope.columns[r].clone() },
                ],
                star: None,
            };
            let name = ast::Ident::with_quote('"', scope.columns[l].name.clone());
            let side =
                |rel: &str| AstExpr::CompoundIdentifier(vec![ast::Ident::new(rel), name.clone()]);
            let eq = AstExpr::BinaryOp {
                left: Box::new(side("l")),
                op: ast::BinaryOperator::Eq,
                right: Box::new(side("r")),
            };
            let bound = self.bind_condition(&eq, &two, "JOIN/USING")?;
            on.push(map_expr(bound, &mut |x| match x {
                Expr::Column(0) => Expr::Column(l),
                Expr::Column(1) => Expr::Column(r),
                other => other,
            }));
        }
        let merged: Vec<usize> =
            pairs.iter().map(|&(l, r)| if right_join { r } else { l }).collect();
        for &(l, r) in &pairs {
            scope.columns[if right_join { l } else { r }].shadowed = true;
        }
        let used_left: Vec<usize> = pairs.iter().map(|p| p.0).collect();
        let used_right: Vec<usize> = pairs.iter().map(|p| p.1).collect();
        let mut star = merged;
        star.extend(left_star.into_iter().filter(|i| !used_left.contains(i)));
        star.extend(right_star.into_iter().filter(|i| !used_right.contains(i)));
        scope.star = Some(star);
        Ok(on)
    }

    fn bind_table_factor(&mut self, tf: &TableFactor) -> Result<(Plan, Scope)> {
        match tf {
            TableFactor::Table { name, alias, args, .. } => {
                let (schema, tname) = self.object_name(name)?;
                if let Some(args) = args {
                    return self.bind_table_function(&tname, &args.args, alias.as_ref());
                }
                if schema.is_none() {
                    if let Some(q) = self.bind_cte_reference(&tname) {
                        let q = q?;
                        let rel = alias.as_ref().map(|a| ident(&a.name)).unwrap_or(tname);
                        return Ok(derived(q, Some(rel), alias.as_ref()));
                    }
                }
                if let Some(query) = self.system_relation(name)? {
                    let rel = alias.as_ref().map(|a| ident(&a.name)).unwrap_or(tname);
                    return Ok(derived(query, Some(rel), alias.as_ref()));
                }
                let table = self.relation(name)?;
                self.relations_read.push(table.id);
                if let Some(view) = &table.view {
                    let query = self.bind_view(&table, view)?;
                    let rel = alias.as_ref().map(|a| ident(&a.name)).unwrap_or(tname);
                    return Ok(derived(query, Some(rel), alias.as_ref()));
                }
                let alias_name =
                    alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| table.name.clone());
                let mut scope = Scope::from_table(&table, &alias_name);
                if let Some(a) = alias {
                    let visible = scope.columns.iter_mut().filter(|c| !c.hidden);
                    for (col, c) in visible.zip(&a.columns) {
                        col.name = ident(&c.name);
                    }
                }
                let plan = Plan::Scan {
                    table,
                    access: Access::Full,
                    filter: None,
                    reverse: false,
                    limit: None,
                    for_update: false,
                };
                Ok((plan, scope))
            }
            // A LATERAL one after other items: `bind_from_factor`.
            TableFactor::Derived { subquery, alias, .. } => {
                self.bind_derived(subquery, alias.as_ref(), None)
            }
            TableFactor::Function { name, args, alias, .. } => {
                let (_, tname) = self.object_name(name)?;
                self.bind_table_function(&tname, args, alias.as_ref())
            }
            TableFactor::UNNEST { with_offset: true, .. } => {
                Err(Error::unsupported("UNNEST … WITH OFFSET"))
            }
            TableFactor::UNNEST { alias, array_exprs, with_ordinality, .. } => {
                self.bind_unnest(array_exprs, alias.as_ref(), *with_ordinality)
            }
            other => Err(Error::unsupported(format!("FROM item {other}"))),
        }
    }

    /// Whether `view`'s query still binds over `snapshot` to the columns it had when it was
    /// created (after a column of a table it reads was dropped: if not, the view used it).
    pub(crate) fn view_still_binds(snapshot: &Snapshot, view: &Table) -> bool {
        let Some(def) = &view.view else { return true };
        Binder::new(snapshot, &def.query, Vec::new()).bind_view(view, def).is_ok()
    }

    /// A view read in FROM: its query bound afresh, by a binder of its own (it sees no CTE or
    /// outer column of the query that reads it), and cut to the view's columns.
    fn bind_view(&mut self, view: &Table, def: &catalog::ViewDef) -> Result<Query> {
        let broken = |why: &str| {
            Error::unsupported_msg(format!(
                "view \"{}\" no longer matches its tables ({why}): drop and create it again",
                view.name
            ))
        };
        let parsed = crate::parse::parse(&def.query)?;
        let [crate::parse::Parsed::Sql(stmt)] = parsed.as_slice() else {
            return Err(Error::internal(format!("view {} holds no query", view.name)));
        };
        let ast::Statement::Query(q) = &**stmt else {
            return Err(Error::internal(format!("view {} holds no query", view.name)));
        };
        let mut binder = Binder::new(self.snapshot, &def.query, Vec::new());
        // Working tables of recursive queries in the view take ids after this query's so far,
        // and this query's (and other views') take theirs after the view's.
        binder.next_working = self.next_working;
        // Positions in the view's text mean nothing in the statement that reads it.
        let mut query = binder.bind_query(q).map_err(Error::without_position)?;
        self.next_working = binder.next_working;
        let n = view.columns.len();
        if query.columns.len() < n {
            return Err(broken("fewer columns"));
        }
        for (i, (c, name)) in view.columns.iter().zip(&def.query_columns).enumerate() {
            let out = &query.columns[i];
            if out.name != *name || out.data_type != c.data_type {
                return Err(broken(&format!("column {}", i + 1)));
            }
        }
        if query.columns.len() > n {
            query.plan = Plan::Truncate { input: Box::new(query.plan), width: n };
        }
        query.columns = view
            .columns
            .iter()
            .map(|c| OutColumn { name: c.name.clone(), data_type: c.data_type, source: None })
            .collect();
        Ok(query)
    }

    fn bind_table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        if let Some(func) = jsonb_rows(name) {
            return self.bind_jsonb_rows(func, args, alias);
        }
        if name == "unnest" {
            let exprs = args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                    _ => Err(Error::unsupported("named arguments")),
                })
                .collect::<Result<Vec<_>>>()?;
            return self.bind_unnest(&exprs, alias, false);
        }
        if name == "generate_subscripts" {
            return self.bind_generate_subscripts(args, alias);
        }
        if name != "generate_series" {
            return Err(Error::UndefinedFunction { name: format!("function {name}"), span: None });
        }
        if !(2..=3).contains(&args.len()) {
            return Err(Error::UndefinedFunction {
                name: "function generate_series".into(),
                span: None,
            });
        }
        let typed = self.bind_function_args(args)?;
        // generate_series(start, stop, step interval) over timestamps: a date or an untyped
        // literal start makes it the timestamptz form, as in PostgreSQL.
        let time_series = typed[..2].iter().find(|(t, _)| {
            !t.unknown
                && matches!(t.ty, DataType::Date | DataType::Timestamp | DataType::TimestampTz)
        });
        if time_series.is_some() {
            let all_timestamp =
                typed[..2].iter().all(|(t, _)| t.unknown || t.ty == DataType::Timestamp);
            let ty = if all_timestamp { DataType::Timestamp } else { DataType::TimestampTz };
            if typed.len() != 3 {
                return Err(Error::UndefinedFunction {
                    name: format!("function generate_series({}, …) without a step", ty.base_name()),
                    span: None,
                });
            }
            let mut it = typed.into_iter();
            let mut args = Vec::with_capacity(3);
            for _ in 0..2 {
                let (t, e) = it.next().expect("three args");
                args.push(self.coerce(t, ty, CastKind::Implicit, e)?);
            }
            let (t, e) = it.next().expect("three args");
            args.push(self.coerce(t, DataType::Interval, CastKind::Implicit, e)?);
            return Ok(self.series_plan("generate_series", args, ty, alias));
        }
        let mut ty = DataType::Int32;
        for (t, _) in &typed {
            if !t.unknown {
                ty = match (ty, t.ty) {
                    (DataType::Int32, DataType::Int16 | DataType::Int32) => DataType::Int32,
                    (DataType::Int32 | DataType::Int64, DataType::Int64)
                    | (DataType::Int64, DataType::Int16 | DataType::Int32) => DataType::Int64,
                    (_, DataType::Numeric(_)) | (DataType::Numeric(_), _) => {
                        DataType::Numeric(None)
                    }
                    (_, other) => {
                        return Err(Error::UndefinedFunction {
                            name: format!("function generate_series({})", other.base_name()),
                            span: None,
                        })
                    }
                };
            }
        }
        let args = typed
            .into_iter()
            .map(|(t, e)| self.coerce(t, ty, CastKind::Implicit, e))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.series_plan("generate_series", args, ty, alias))
    }

    /// `generate_subscripts(array, dim [, reverse])`: the subscripts of the array's dimension
    /// `dim`, as `generate_series(1, array_length(array, dim))` (Aspen's arrays have one
    /// dimension, numbered from 1: another `dim`, an empty or a NULL array give no rows), or
    /// from the last down when `reverse` (a constant) is true.
    fn bind_generate_subscripts(
        &mut self,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        let typed = self.bind_function_args(args)?;
        let signature = |typed: &[(super::expr::Typed, &AstExpr)]| {
            let types: Vec<String> = typed
                .iter()
                .map(|(t, _)| if t.unknown { "unknown".into() } else { t.ty.base_name() })
                .collect();
            Error::UndefinedFunction {
                name: format!("function generate_subscripts({})", types.join(", ")),
                span: None,
            }
        };
        if !(2..=3).contains(&typed.len())
            || typed[0].0.unknown
            || typed[0].0.ty.element().is_none()
        {
            return Err(signature(&typed));
        }
        let mut it = typed.into_iter();
        let (array, _) = it.next().expect("an array");
        let (t, e) = it.next().expect("a dimension");
        let dim = self.coerce(t, DataType::Int32, CastKind::Implicit, e)?;
        let reverse = match it.next() {
            None => false,
            Some((t, e)) => match self.coerce(t, DataType::Bool, CastKind::Implicit, e)? {
                Expr::Literal(Value::Bool(b)) => b,
                Expr::Literal(Value::Null) => false,
                _ => {
                    return Err(Error::unsupported(
                        "generate_subscripts with a non-constant reverse",
                    ))
                }
            },
        };
        let length = Expr::Func(
            crate::plan::Func::Array(crate::plan::ArrayFunc::Length),
            vec![array.expr, dim],
        );
        let one = Expr::Literal(Value::Int32(1));
        let args = if reverse {
            vec![length, one, Expr::Literal(Value::Int32(-1))]
        } else {
            vec![one, length]
        };
        Ok(self.series_plan("generate_subscripts", args, DataType::Int32, alias))
    }

    /// The arguments of a function in FROM, bound on their own (a LATERAL one sees the items
    /// before it as its outer scope: `bind_from_factor`).
    fn bind_function_args<'b>(
        &mut self,
        args: &'b [ast::FunctionArg],
    ) -> Result<Vec<(super::expr::Typed, &'b AstExpr)>> {
        let empty = Scope::default();
        args.iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    Ok((self.bind_expr(e, &empty)?, e))
                }
                _ => Err(Error::unsupported("named arguments")),
            })
            .collect()
    }

    /// A jsonb set-returning function: its one jsonb argument, and its columns named as
    /// PostgreSQL names them (`value`, `key`; jsonb_object_keys' one column after the alias).
    fn bind_jsonb_rows(
        &mut self,
        func: JsonbRows,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        let mut typed = self.bind_function_args(args)?;
        let arg_ty = if func.reads_json() { DataType::Json } else { DataType::Jsonb };
        let ok = typed.len() == 1 && (typed[0].0.unknown || typed[0].0.ty == arg_ty);
        if !ok {
            let types: Vec<String> = typed
                .iter()
                .map(|(t, _)| if t.unknown { "unknown".into() } else { t.ty.base_name() })
                .collect();
            return Err(Error::UndefinedFunction {
                name: format!("function {}({})", func.name(), types.join(", ")),
                span: None,
            });
        }
        let (t, e) = typed.pop().expect("one argument");
        let arg = self.coerce(t, arg_ty, CastKind::Implicit, e)?;
        let rel = alias.map(|a| ident(&a.name)).unwrap_or_else(|| func.name().into());
        let columns = func
            .columns()
            .iter()
            .map(|(name, ty)| {
                let name = match (func, alias) {
                    (JsonbRows::ObjectKeys | JsonbRows::JsonObjectKeys, Some(_)) => rel.clone(),
                    _ => name.to_string(),
                };
                (name, *ty)
            })
            .collect();
        let scope = function_scope(rel, alias, columns)?;
        Ok((Plan::JsonbRows { func, arg }, scope))
    }

    /// The plan and scope of a generate_series of type `ty`.
    fn series_plan(
        &mut self,
        name: &str,
        args: Vec<Expr>,
        ty: DataType,
        alias: Option<&ast::TableAlias>,
    ) -> (Plan, Scope) {
        let rel = alias.map(|a| ident(&a.name)).unwrap_or_else(|| name.into());
        let col = alias
            .and_then(|a| a.columns.first())
            .map(|c| ident(&c.name))
            .unwrap_or_else(|| rel.clone());
        let scope = Scope {
            columns: vec![ScopeColumn {
                relation: Some(rel),
                name: col,
                data_type: ty,
                source: None,
                hidden: false,
                shadowed: false,
                whole_row: false,
            }],
            star: None,
        };
        (Plan::GenerateSeries { args, data_type: ty }, scope)
    }

    /// [`Binder::bind_select_inner`] with the SELECT's WINDOW clause in scope while it runs.
    fn bind_select(
        &mut self,
        select: &ast::Select,
        order_by: &[&ast::OrderByExpr],
        limit: Option<Expr>,
        offset: Option<Expr>,
        for_update: bool,
    ) -> Result<Query> {
        let outer = self.named_windows.len();
        let rewritten = select_list_srfs(select);
        let srfs = std::mem::replace(&mut self.select_list_srfs, rewritten.is_some());
        let select = rewritten.as_ref().unwrap_or(select);
        let result = self
            .define_windows(&select.named_window)
            .and_then(|()| self.bind_select_inner(select, order_by, limit, offset, for_update));
        self.select_list_srfs = srfs;
        self.named_windows.truncate(outer);
        result
    }

    /// Adds the WINDOW clause's definitions, each resolved against the ones before it.
    fn define_windows(&mut self, defs: &[ast::NamedWindowDefinition]) -> Result<()> {
        let first = self.named_windows.len();
        for ast::NamedWindowDefinition(name, def) in defs {
            let name = ident(name);
            if self.named_windows[first..].iter().any(|(n, _)| *n == name) {
                return Err(Error::Windowing {
                    message: format!("window \"{name}\" is already defined"),
                });
            }
            let spec = match def {
                ast::NamedWindowExpr::WindowSpec(spec) => self.resolve_window(spec)?,
                ast::NamedWindowExpr::NamedWindow(_) => {
                    return Err(Error::unsupported("WINDOW w AS other_window without parentheses"))
                }
            };
            self.named_windows.push((name, spec));
        }
        Ok(())
    }

    fn bind_select_inner(
        &mut self,
        select: &ast::Select,
        order_by: &[&ast::OrderByExpr],
        limit: Option<Expr>,
        offset: Option<Expr>,
        for_update: bool,
    ) -> Result<Query> {
        if select.having.is_some()
            && matches!(&select.group_by, ast::GroupByExpr::Expressions(g, _) if g.is_empty())
        {
            // HAVING without GROUP BY is a grouped query over one group; handled below.
        }
        if select.into.is_some() {
            return Err(Error::unsupported("SELECT INTO"));
        }
        if !select.lateral_views.is_empty() || select.qualify.is_some() {
            return Err(Error::unsupported("LATERAL VIEW / QUALIFY"));
        }
        let lock_of = self.lock_of.take().filter(|_| for_update);
        let (items, scope) = self.bind_from(&select.from)?;
        let mut conjuncts = Vec::new();
        if let Some(w) = &select.selection {
            let c = self.bind_condition(w, &scope, "WHERE")?;
            split_conjuncts(c, &mut conjuncts);
        }
        // FOR UPDATE locks the rows a join reads: only the joined ones with nested loops, as
        // in PostgreSQL, but every row of its right side with a hash join.
        let mut plan = build_join_tree(items, conjuncts, &scope, !for_update)?;

        // Grouping.
        let (group_exprs, grouping_sets) = match &select.group_by {
            ast::GroupByExpr::Expressions(g, mods) => {
                if !mods.is_empty() {
                    return Err(Error::unsupported("GROUP BY modifiers"));
                }
                grouping_sets(g)?
            }
            ast::GroupByExpr::All(_) => return Err(Error::unsupported("GROUP BY ALL")),
        };
        self.aggs = Some(Vec::new());
        // Window calls in the select list and ORDER BY extend the FROM row.
        let outer_windows = self.windows.replace((scope.columns.len(), Vec::new()));
        // Bind the select list (aggregates are collected into self.aggs).
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        let bound_items =
            self.bind_select_items(&select.projection, &scope, select.from.is_empty());
        let bound_items = match bound_items {
            Ok(b) => b,
            Err(e) => {
                self.aggs = None;
                self.windows = outer_windows;
                return Err(e);
            }
        };
        // Set-returning functions moved from the select list to FROM (`select_list_srfs`)
        // would run before grouping, where PostgreSQL runs them after.
        let grouped = self.aggs.as_ref().is_some_and(|a| !a.is_empty())
            || self.windows.as_ref().is_some_and(|(_, w)| !w.is_empty())
            || select.having.is_some()
            || !group_exprs.is_empty()
            || !grouping_sets.is_empty();
        if self.select_list_srfs && grouped {
            self.aggs = None;
            self.windows = outer_windows;
            return Err(Error::unsupported(
                "set-returning functions in a select list with aggregates, window functions or \
                 GROUP BY",
            ));
        }
        // HAVING sees no window functions.
        let windows_so_far = std::mem::take(&mut self.windows);
        let having = match &select.having {
            Some(h) => match self.bind_condition(h, &scope, "HAVING") {
                Ok(c) => Some(c),
                Err(e) => {
                    self.aggs = None;
                    self.windows = outer_windows;
                    return Err(e);
                }
            },
            None => None,
        };
        self.windows = windows_so_far;
        // ORDER BY expressions are bound now too, so that aggregates in them are collected.
        let mut order_keys: Vec<(OrderTarget, bool, bool)> = Vec::new();
        for ob in order_by {
            let desc = matches!(ob.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_first = ob.options.nulls_first.unwrap_or(desc);
            let target = match self.order_target(&ob.expr, &bound_items, &scope, "ORDER BY") {
                Ok(t) => t,
                Err(e) => {
                    self.aggs = None;
                    self.windows = outer_windows;
                    return Err(e);
                }
            };
            order_keys.push((target, desc, nulls_first));
        }
        // DISTINCT ON expressions are read like ORDER BY items (output names and positions).
        let mut distinct_on: Vec<(OrderTarget, &AstExpr)> = Vec::new();
        if let Some(ast::Distinct::On(on)) = &select.distinct {
            for e in on {
                match self.order_target(e, &bound_items, &scope, "DISTINCT ON") {
                    Ok(t) => distinct_on.push((t, e)),
                    Err(err) => {
                        self.aggs = None;
                        self.windows = outer_windows;
                        return Err(err);
                    }
                }
            }
        }
        let aggs = self.aggs.take().unwrap_or_default();
        let grouped = !group_exprs.is_empty()
            || !grouping_sets.is_empty()
            || !aggs.is_empty()
            || having.is_some();
        let windows = std::mem::replace(&mut self.windows, outer_windows)
            .map(|(_, calls)| calls)
            .unwrap_or_default();
        if !windows.is_empty() {
            if for_update {
                return Err(Error::unsupported_msg(
                    "FOR UPDATE is not allowed with window functions",
                ));
            }
            // Over a grouped query, the window node comes after the grouping (below).
            if !grouped {
                plan = Plan::Window { input: Box::new(plan), calls: windows.clone() };
            }
        }

        let mut group_by = Vec::new();
        // The select-list item each GROUP BY item names by position, if it does.
        let mut group_items = Vec::new();
        for g in &group_exprs {
            // GROUP BY 1 / GROUP BY alias / GROUP BY expression.
            let position = self.select_list_position(g, "GROUP BY", bound_items.len())?;
            group_items.push(position);
            let bound = match g {
                _ if position.is_some() => bound_items[position.expect("checked") - 1].0.clone(),
                AstExpr::Identifier(id)
                    if !scope.columns.iter().any(|c| c.name == ident(id))
                        && bound_items.iter().any(|(_, c)| c.name == ident(id)) =>
                {
                    bound_items
                        .iter()
                        .find(|(_, c)| c.name == ident(id))
                        .map(|(e, _)| e.clone())
                        .expect("checked")
                }
                other => {
                    let t = self.bind_expr(other, &scope)?;
                    t.expr
                }
            };
            // A select-list item named by position may hold a window call (a column past the
            // FROM row): refused as PostgreSQL does, for an aggregate inside it first.
            let mut window_calls = Vec::new();
            walk(&bound, &mut |x| {
                if let Expr::Column(i) = x {
                    if let Some(call) =
                        i.checked_sub(scope.columns.len()).and_then(|w| windows.get(w))
                    {
                        window_calls.push(call);
                    }
                }
            });
            let mut agg_in_window = false;
            for call in &window_calls {
                // An aggregate in its arguments, not in its window (PostgreSQL looks into
                // the `WindowFunc` node only).
                visit_window_call_args(call, &mut |e| agg_in_window |= contains_agg(e));
            }
            if contains_agg(&bound) || agg_in_window {
                return Err(Error::Grouping {
                    message: "aggregate functions are not allowed in GROUP BY".into(),
                    span: self.span_of(*g),
                });
            }
            if !window_calls.is_empty() {
                return Err(Error::Windowing {
                    message: "window functions are not allowed in GROUP BY".into(),
                });
            }
            group_by.push(bound);
        }
        let mut grouping_sets = grouping_sets;
        if !grouping_sets.is_empty() {
            // Grouping sets name keys in several ways (`1`, an alias, the expression): keys that
            // bind to the same expression are one key, nulled together. Two select-list items
            // with the same expression named apart by position PostgreSQL would null apart.
            let mut key_of = Vec::with_capacity(group_by.len());
            let mut keys: Vec<Expr> = Vec::new();
            let mut item_of: Vec<Option<usize>> = Vec::new();
            for (&item, e) in group_items.iter().zip(&group_by) {
                match keys.iter().position(|k| k == e) {
                    Some(k) => {
                        if let (Some(a), Some(b)) = (item_of[k], item) {
                            if a != b {
                                return Err(Error::unsupported(
                                    "grouping sets over two select-list items with the same \
                                     expression",
                                ));
                            }
                        }
                        key_of.push(k);
                    }
                    None => {
                        keys.push(e.clone());
                        item_of.push(item);
                        key_of.push(keys.len() - 1);
                    }
                }
            }
            for set in &mut grouping_sets {
                let mut merged: Vec<usize> = Vec::new();
                for &i in set.iter() {
                    if !merged.contains(&key_of[i]) {
                        merged.push(key_of[i]);
                    }
                }
                *set = merged;
            }
            group_by = keys;
        }

        // GROUPING's arguments name group keys (as positions of the aggregation's keys).
        let mut aggs = aggs;
        for call in aggs.iter_mut().filter(|c| c.func == crate::plan::AggFunc::Grouping) {
            for arg in &mut call.grouping {
                let Some(k) = group_by.iter().position(|g| g == arg) else {
                    return Err(Error::Grouping {
                        message: "arguments to GROUPING must be grouping expressions of the \
                                  associated query level"
                            .into(),
                        span: None,
                    });
                };
                *arg = Expr::Column(k);
            }
        }

        if grouping_sets.is_empty() && !group_by.is_empty() {
            // Columns the GROUP BY's primary keys determine (PostgreSQL's functional
            // dependency): grouping by them too forms the same groups.
            let mut used = Vec::new();
            let mut note = |e: &Expr| {
                walk(e, &mut |x| {
                    if let Expr::Column(i) = x {
                        used.push(*i);
                    }
                })
            };
            bound_items.iter().for_each(|(e, _)| note(e));
            having.iter().for_each(&mut note);
            for (t, _, _) in &order_keys {
                if let OrderTarget::Input(e) = t {
                    note(e);
                }
            }
            for (t, _) in &distinct_on {
                if let OrderTarget::Input(e) = t {
                    note(e);
                }
            }
            let extra = self.dependent_columns(&scope, &group_by, &used);
            group_by.extend(extra.into_iter().map(Expr::Column));
        }

        let mut scope_after = scope.clone();
        if grouped {
            if for_update {
                return Err(Error::unsupported("FOR UPDATE with GROUP BY or aggregate functions"));
            }
            let ng = group_by.len();
            // A window call's column follows the group keys and the aggregates.
            let windows_at = ng + aggs.len();
            let rewrite = |e: &Expr, binder: &Self| {
                rewrite_grouped(e, &group_by, ng, windows_at, &scope, binder)
            };
            let mut new_items = Vec::new();
            for (e, c) in &bound_items {
                new_items.push((rewrite(e, self)?, c.clone()));
            }
            let having = having.as_ref().map(|h| rewrite(h, self)).transpose()?;
            let mut new_keys = Vec::new();
            for (t, d, n) in order_keys {
                new_keys.push((
                    match t {
                        OrderTarget::Output(i) => OrderTarget::Output(i),
                        OrderTarget::Input(e) => OrderTarget::Input(rewrite(&e, self)?),
                    },
                    d,
                    n,
                ));
            }
            order_keys = new_keys;
            for (t, _) in &mut distinct_on {
                if let OrderTarget::Input(e) = t {
                    *e = rewrite(e, self)?;
                }
            }
            plan = Plan::Aggregate {
                input: Box::new(plan),
                group_by: group_by.clone(),
                aggs,
                sets: grouping_sets.clone(),
            };
            if let Some(h) = having {
                plan = Plan::Filter { input: Box::new(plan), predicate: h };
            }
            if !windows.is_empty() {
                let calls = windows
                    .iter()
                    .map(|c| map_window_call(c, &mut |e| rewrite(e, self)))
                    .collect::<Result<Vec<_>>>()?;
                plan = Plan::Window { input: Box::new(plan), calls };
            }
            scope_after = Scope::default();
            for (e, c) in new_items {
                exprs.push(e);
                columns.push(c);
            }
        } else {
            for (e, c) in bound_items {
                exprs.push(e);
                columns.push(c);
            }
        }
        let _ = scope_after;

        if for_update {
            match &lock_of {
                None => mark_for_update(&mut plan, &|_| true)?,
                Some(names) => {
                    // The tables of the relations named (by name or alias).
                    let mut oids = Vec::new();
                    for name in names {
                        let found: Vec<u32> = scope
                            .columns
                            .iter()
                            .filter(|c| c.relation.as_deref() == Some(name.as_str()))
                            .filter_map(|c| c.source.map(|(oid, _)| oid))
                            .collect();
                        if found.is_empty() {
                            if scope.columns.iter().any(|c| c.relation.as_deref() == Some(name)) {
                                return Err(Error::unsupported(format!(
                                    "FOR UPDATE OF {name}, which is not a table"
                                )));
                            }
                            return Err(Error::UndefinedTable {
                                name: format!("relation \"{name}\" in FOR UPDATE clause not found in FROM clause"),
                                span: None,
                            });
                        }
                        oids.extend(found);
                    }
                    mark_for_update(&mut plan, &|t: &Table| oids.contains(&t.id.oid()))?;
                }
            }
        }

        let distinct = matches!(select.distinct, Some(ast::Distinct::Distinct));

        // Order-by (and DISTINCT ON) expressions not in the select list become hidden trailing
        // columns.
        let width = exprs.len();
        let column_of = |t: OrderTarget, exprs: &mut Vec<Expr>| -> Result<usize> {
            Ok(match t {
                OrderTarget::Output(i) => i,
                OrderTarget::Input(e) => match exprs.iter().position(|x| *x == e) {
                    Some(i) => i,
                    None => {
                        if distinct {
                            return Err(Error::InvalidColumnReference {
                                message: "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                                span: None,
                            });
                        }
                        exprs.push(e);
                        exprs.len() - 1
                    }
                },
            })
        };
        let mut keys = Vec::new();
        for (t, desc, nulls_first) in order_keys {
            let expr = Expr::Column(column_of(t, &mut exprs)?);
            keys.push(SortKey { expr, desc, nulls_first });
        }
        let mut on = Vec::new();
        for (t, e) in distinct_on {
            on.push((column_of(t, &mut exprs)?, e));
        }
        if !on.is_empty() {
            keys = self.distinct_on_keys(keys, &on)?;
        }
        let ordered_by_index = !grouped
            && !distinct
            && on.is_empty()
            && windows.is_empty()
            && try_order_by_index(&mut plan, &exprs, &keys, limit.as_ref(), offset.as_ref());
        plan = Plan::Project { input: Box::new(plan), exprs };
        if distinct {
            plan = Plan::Distinct { input: Box::new(plan), on: Vec::new() };
        }
        if !keys.is_empty() && !ordered_by_index {
            plan = Plan::Sort { input: Box::new(plan), keys };
        }
        if !on.is_empty() {
            // The first row of each DISTINCT ON group, in the sort order.
            let on = on.iter().map(|(i, _)| Expr::Column(*i)).collect();
            plan = Plan::Distinct { input: Box::new(plan), on };
        }
        if limit.is_some() || offset.is_some() {
            plan = Plan::Limit { input: Box::new(plan), limit, offset };
        }
        let total = match &plan {
            Plan::Limit { input, .. } | Plan::Sort { input, .. } | Plan::Distinct { input, .. } => {
                width_of(input)
            }
            other => width_of(other),
        };
        if total != width {
            plan = Plan::Truncate { input: Box::new(plan), width };
        }
        Ok(Query { plan, columns })
    }

    /// The sort keys of a `SELECT DISTINCT ON (on) … ORDER BY keys` (columns of the projected
    /// row), as PostgreSQL forms them: the ORDER BY items that are DISTINCT ON expressions
    /// must come first (any other item before one of them is `42P10`), and DISTINCT ON
    /// expressions that ORDER BY lacks follow them, ascending, so that each group's rows are
    /// together and its first row is the one ORDER BY puts first.
    fn distinct_on_keys(
        &self,
        keys: Vec<SortKey>,
        on: &[(usize, &AstExpr)],
    ) -> Result<Vec<SortKey>> {
        let is_on =
            |k: &SortKey| matches!(k.expr, Expr::Column(i) if on.iter().any(|(c, _)| *c == i));
        let leading = keys.iter().take_while(|k| is_on(k)).count();
        let mismatch = |e: &AstExpr| Error::InvalidColumnReference {
            message: "SELECT DISTINCT ON expressions must match initial ORDER BY expressions"
                .into(),
            span: self.span_of(e),
        };
        if let Some(k) = keys[leading..].iter().find(|k| is_on(k)) {
            let e = on.iter().find(|(c, _)| matches!(k.expr, Expr::Column(i) if i == *c));
            return Err(mismatch(e.map_or(on[0].1, |(_, e)| *e)));
        }
        let mut out = keys;
        for (c, e) in on {
            if out[..leading].iter().any(|k| k.expr == Expr::Column(*c)) {
                continue;
            }
            if leading < out.len() {
                return Err(mismatch(e));
            }
            if !out.iter().any(|k| k.expr == Expr::Column(*c)) {
                out.push(SortKey { expr: Expr::Column(*c), desc: false, nulls_first: false });
            }
        }
        Ok(out)
    }

    /// Applies ORDER BY / LIMIT / OFFSET to a plan whose output columns are `columns`.
    fn finish_query(
        &mut self,
        mut plan: Plan,
        columns: Vec<OutColumn>,
        scope: Scope,
        order_by: &[&ast::OrderByExpr],
        limit: Option<Expr>,
        offset: Option<Expr>,
    ) -> Result<Query> {
        let mut keys = Vec::new();
        for ob in order_by {
            let desc = matches!(ob.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_first = ob.options.nulls_first.unwrap_or(desc);
            let items: Vec<(Expr, OutColumn)> =
                columns.iter().enumerate().map(|(i, c)| (Expr::Column(i), c.clone())).collect();
            let expr = match self.order_target(&ob.expr, &items, &scope, "ORDER BY")? {
                OrderTarget::Output(i) => Expr::Column(i),
                OrderTarget::Input(e) => e,
            };
            keys.push(SortKey { expr, desc, nulls_first });
        }
        if !keys.is_empty() {
            plan = Plan::Sort { input: Box::new(plan), keys };
        }
        if limit.is_some() || offset.is_some() {
            plan = Plan::Limit { input: Box::new(plan), limit, offset };
        }
        Ok(Query { plan, columns })
    }

    /// PostgreSQL's SQL-92 rule for an ORDER BY, GROUP BY or DISTINCT ON item (`clause`): an
    /// integer constant (after folding parentheses and unary minus, as its grammar does) is a
    /// select-list position, returned here (1-based, `42P10` if out of range); any other
    /// constant — a string, a boolean, NULL, a non-integer or out-of-int4 number — is `42601`
    /// "non-integer constant in …". `None` for an expression that is not a constant.
    pub(super) fn select_list_position(
        &self,
        e: &AstExpr,
        clause: &str,
        width: usize,
    ) -> Result<Option<usize>> {
        // The constant the grammar makes of `e`: Some(Ok(n)) for an integer, Some(Err) for
        // another constant.
        fn constant(e: &AstExpr) -> Option<std::result::Result<i64, ()>> {
            match e {
                AstExpr::Nested(inner) => constant(inner),
                AstExpr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match &**expr {
                    AstExpr::Nested(_)
                    | AstExpr::UnaryOp { .. }
                    | AstExpr::Value(ast::ValueWithSpan {
                        value: ast::Value::Number(..), ..
                    }) => match constant(expr)? {
                        Ok(n) => Some(Ok(-n)),
                        Err(()) => Some(Err(())),
                    },
                    _ => None,
                },
                AstExpr::Value(v) => match &v.value {
                    // A parameter is an expression, not a constant.
                    ast::Value::Placeholder(_) => None,
                    ast::Value::Number(n, _) => {
                        Some(n.parse::<i32>().map(i64::from).map_err(|_| ()))
                    }
                    _ => Some(Err(())),
                },
                _ => None,
            }
        }
        match constant(e) {
            None => Ok(None),
            Some(Err(())) => Err(Error::Syntax {
                message: format!("non-integer constant in {clause}"),
                span: self.span_of(e),
            }),
            Some(Ok(n)) if n < 1 || n as usize > width => Err(Error::InvalidColumnReference {
                message: format!("{clause} position {n} is not in select list"),
                span: self.span_of(e),
            }),
            Some(Ok(n)) => Ok(Some(n as usize)),
        }
    }

    fn order_target(
        &mut self,
        e: &AstExpr,
        items: &[(Expr, OutColumn)],
        scope: &Scope,
        clause: &str,
    ) -> Result<OrderTarget> {
        if let Some(i) = self.select_list_position(e, clause, items.len())? {
            return Ok(OrderTarget::Output(i - 1));
        }
        if let AstExpr::Identifier(id) = e {
            let name = ident(id);
            let matches: Vec<usize> = items
                .iter()
                .enumerate()
                .filter(|(_, (_, c))| c.name == name)
                .map(|(i, _)| i)
                .collect();
            if matches.len() == 1 {
                return Ok(OrderTarget::Output(matches[0]));
            }
        }
        let t = self.bind_expr(e, scope)?;
        let expr =
            if t.unknown { self.coerce(t, DataType::Text, CastKind::Implicit, e)? } else { t.expr };
        Ok(OrderTarget::Input(expr))
    }

    /// The select list over `scope` (`no_from`: the query has no FROM clause, where `*`
    /// means nothing).
    fn bind_select_items(
        &mut self,
        items: &[SelectItem],
        scope: &Scope,
        no_from: bool,
    ) -> Result<Vec<(Expr, OutColumn)>> {
        let mut out = Vec::new();
        for item in items {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    let t = self.bind_expr(e, scope)?;
                    let source = match &t.expr {
                        Expr::Column(i) => scope.columns.get(*i).and_then(|c| c.source),
                        _ => None,
                    };
                    let name = column_name(e);
                    let expr = if t.unknown {
                        self.coerce(t.clone(), DataType::Text, CastKind::Implicit, e)?
                    } else {
                        t.expr
                    };
                    out.push((expr, OutColumn { name, data_type: t.ty, source }));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let t = self.bind_expr(expr, scope)?;
                    let source = match &t.expr {
                        Expr::Column(i) => scope.columns.get(*i).and_then(|c| c.source),
                        _ => None,
                    };
                    let e = if t.unknown {
                        self.coerce(t.clone(), DataType::Text, CastKind::Implicit, expr)?
                    } else {
                        t.expr
                    };
                    out.push((e, OutColumn { name: ident(alias), data_type: t.ty, source }));
                }
                SelectItem::Wildcard(opts) => {
                    reject_wildcard_options(opts)?;
                    if no_from {
                        return Err(Error::SyntaxMisuse {
                            message: "SELECT * with no tables specified is not valid".into(),
                            span: None,
                        });
                    }
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
                SelectItem::QualifiedWildcard(kind, opts) => {
                    reject_wildcard_options(opts)?;
                    let rel = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            self.object_name(n)?.1
                        }
                        ast::SelectItemQualifiedWildcardKind::Expr(_) => {
                            return Err(Error::unsupported("expression.*"))
                        }
                    };
                    let mut any = false;
                    for (i, c) in scope.columns.iter().enumerate() {
                        if c.relation.as_deref() == Some(rel.as_str()) {
                            any = true;
                            if c.hidden {
                                continue;
                            }
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
                    if !any {
                        return Err(Error::MissingFromEntry { table: rel, span: None });
                    }
                }
                SelectItem::ExprWithAliases { .. } => {
                    return Err(Error::unsupported("multiple aliases"))
                }
            }
        }
        Ok(out)
    }
}

/// The literal the binder puts where an INSERT's VALUES row says DEFAULT; replaced by the
/// column default during INSERT binding.
pub(crate) static DEFAULT_MARKER: std::sync::LazyLock<crate::types::Value> =
    std::sync::LazyLock::new(|| crate::types::Value::Text("\u{0}aspen-default\u{0}".into()));

fn is_default(e: &AstExpr) -> bool {
    matches!(e, AstExpr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

fn reject_wildcard_options(o: &ast::WildcardAdditionalOptions) -> Result<()> {
    if o.opt_exclude.is_some()
        || o.opt_except.is_some()
        || o.opt_replace.is_some()
        || o.opt_rename.is_some()
        || o.opt_ilike.is_some()
    {
        return Err(Error::unsupported("wildcard options"));
    }
    Ok(())
}

enum OrderTarget {
    /// A select-list position.
    Output(usize),
    /// An expression over the input row.
    Input(Expr),
}

/// Splits a condition into its AND-ed parts.
pub(crate) fn split_conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split_conjuncts(*a, out);
            split_conjuncts(*b, out);
        }
        Expr::Or(..) => factor_or(e, out),
        other => out.push(other),
    }
}

/// Pushes an OR to `out` as conjuncts, taking out the conditions every branch has (PostgreSQL's
/// `process_duplicate_ors`): `(a AND b) OR (a AND c)` is `a AND (b OR c)`, and `a OR (a AND
/// c)` is `a`, in three-valued logic too. A join condition written in every branch can then
/// choose how the join runs. Only conditions on the row alone are taken out ([`row_local`]):
/// how often a subquery or a sequence function runs is visible.
fn factor_or(e: Expr, out: &mut Vec<Expr>) {
    fn disjuncts(e: Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Or(a, b) => {
                disjuncts(*a, out);
                disjuncts(*b, out);
            }
            other => out.push(other),
        }
    }
    let mut branches = Vec::new();
    disjuncts(e, &mut branches);
    // Each branch's conditions (an OR inside one factored the same way).
    let mut branches: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| {
            let mut c = Vec::new();
            split_conjuncts(b, &mut c);
            c
        })
        .collect();
    // Each common condition once, even if a branch repeats it (that branch keeps the rest).
    let mut common: Vec<Expr> = Vec::new();
    for c in &branches[0] {
        if row_local(c) && !common.contains(c) && branches[1..].iter().all(|b| b.contains(c)) {
            common.push(c.clone());
        }
    }
    for c in &common {
        for b in &mut branches {
            let i = b.iter().position(|x| x == c).expect("in every branch");
            b.remove(i);
        }
    }
    let or_of = |branches: Vec<Vec<Expr>>| {
        branches
            .into_iter()
            .map(|b| and_all(b).expect("a branch keeps a condition"))
            .reduce(|a, b| Expr::Or(Box::new(a), Box::new(b)))
            .expect("two branches at least")
    };
    if common.is_empty() {
        out.push(or_of(branches));
        return;
    }
    let absorbed = branches.iter().any(Vec::is_empty);
    out.extend(common);
    if !absorbed {
        out.push(or_of(branches));
    }
}

pub(crate) fn and_all(mut parts: Vec<Expr>) -> Option<Expr> {
    let first = if parts.is_empty() { return None } else { parts.remove(0) };
    Some(parts.into_iter().fold(first, |acc, e| Expr::And(Box::new(acc), Box::new(e))))
}

/// Visits every sub-expression (not descending into subquery plans).
pub(crate) fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match e {
        Expr::Literal(_) | Expr::Column(_) | Expr::Outer { .. } | Expr::Param(_) | Expr::Agg(_) => {
        }
        Expr::Arith(_, a, b)
        | Expr::Cmp(_, a, b)
        | Expr::And(a, b)
        | Expr::Or(a, b)
        | Expr::IsDistinct(a, b, _)
        | Expr::Like(a, b, _, _)
        | Expr::NullIf(a, b)
        | Expr::Concat(a, b) => {
            walk(a, f);
            walk(b, f);
        }
        Expr::Neg(a)
        | Expr::Not(a)
        | Expr::IsNull(a, _)
        | Expr::IsBool(a, _, _)
        | Expr::Cast(a, _, _) => walk(a, f),
        Expr::InList(a, list, _) => {
            walk(a, f);
            list.iter().for_each(|x| walk(x, f));
        }
        Expr::Case(arms, els) => {
            for (w, t) in arms {
                walk(w, f);
                walk(t, f);
            }
            if let Some(e) = els {
                walk(e, f);
            }
        }
        Expr::Coalesce(list) | Expr::Func(_, list) => list.iter().for_each(|x| walk(x, f)),
        Expr::Subquery(_) | Expr::Exists(_, _) => {}
        Expr::InSubquery(a, _, _) => walk(a, f),
    }
}

/// Rewrites every sub-expression bottom-up (not descending into subquery plans).
pub(crate) fn map_expr(e: Expr, f: &mut dyn FnMut(Expr) -> Expr) -> Expr {
    let b = |x: Box<Expr>, f: &mut dyn FnMut(Expr) -> Expr| Box::new(map_expr(*x, f));
    let mapped = match e {
        Expr::Arith(op, a, c) => Expr::Arith(op, b(a, f), b(c, f)),
        Expr::Cmp(op, a, c) => Expr::Cmp(op, b(a, f), b(c, f)),
        Expr::And(a, c) => Expr::And(b(a, f), b(c, f)),
        Expr::Or(a, c) => Expr::Or(b(a, f), b(c, f)),
        Expr::IsDistinct(a, c, n) => Expr::IsDistinct(b(a, f), b(c, f), n),
        Expr::Like(a, c, ci, n) => Expr::Like(b(a, f), b(c, f), ci, n),
        Expr::NullIf(a, c) => Expr::NullIf(b(a, f), b(c, f)),
        Expr::Concat(a, c) => Expr::Concat(b(a, f), b(c, f)),
        Expr::Neg(a) => Expr::Neg(b(a, f)),
        Expr::Not(a) => Expr::Not(b(a, f)),
        Expr::IsNull(a, n) => Expr::IsNull(b(a, f), n),
        Expr::IsBool(a, v, n) => Expr::IsBool(b(a, f), v, n),
        Expr::Cast(a, t, k) => Expr::Cast(b(a, f), t, k),
        Expr::InList(a, list, n) => {
            Expr::InList(b(a, f), list.into_iter().map(|x| map_expr(x, f)).collect(), n)
        }
        Expr::Case(arms, els) => Expr::Case(
            arms.into_iter().map(|(w, t)| (map_expr(w, f), map_expr(t, f))).collect(),
            els.map(|x| b(x, f)),
        ),
        Expr::Coalesce(list) => Expr::Coalesce(list.into_iter().map(|x| map_expr(x, f)).collect()),
        Expr::Func(func, list) => {
            Expr::Func(func, list.into_iter().map(|x| map_expr(x, f)).collect())
        }
        Expr::InSubquery(a, p, n) => Expr::InSubquery(b(a, f), p, n),
        leaf => leaf,
    };
    f(mapped)
}

fn contains_agg(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| found |= matches!(x, Expr::Agg(_)));
    found
}

pub(crate) fn contains_subquery(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        found |= matches!(x, Expr::Subquery(_) | Expr::Exists(..) | Expr::InSubquery(..))
    });
    found
}

/// Largest column index referenced (None if the expression references no column of this row).
fn max_column(e: &Expr) -> Option<usize> {
    let mut max = None;
    walk(e, &mut |x| {
        if let Expr::Column(i) = x {
            max = Some(max.map_or(*i, |m: usize| m.max(*i)));
        }
    });
    max
}

/// Rewrites an expression over the combined row for use on the inner side of a nested loop
/// whose inner item starts at `offset`: columns left of it become outer references.
fn shift_to_inner(e: Expr, offset: usize) -> Expr {
    map_expr(e, &mut |x| match x {
        Expr::Column(i) if i < offset => Expr::Outer { depth: 0, index: i },
        Expr::Column(i) => Expr::Column(i - offset),
        Expr::Outer { depth, index } => Expr::Outer { depth: depth + 1, index },
        other => other,
    })
}

/// Builds the join of the FROM items ([`build_left_deep`]), first reordering inner-joined
/// items so that each is joined on a condition where the written order would join it to the
/// items before it with none ([`join_order`]). The reordered join's columns are put back in
/// the written order.
pub(crate) fn build_join_tree(
    mut items: Vec<FromItem>,
    mut conjuncts: Vec<Expr>,
    scope: &Scope,
    hash: bool,
) -> Result<Plan> {
    let order = join_order(&items, &conjuncts);
    if order.iter().enumerate().all(|(i, &j)| i == j) {
        return build_left_deep(items, conjuncts, scope, hash);
    }
    // Column `c` of the written order is column `new_col[c]` of the new one.
    let mut offsets = Vec::with_capacity(items.len());
    let mut off = 0;
    for it in &items {
        offsets.push(off);
        off += it.width;
    }
    let mut new_col = vec![0; off];
    let mut next = 0;
    for &j in &order {
        for slot in &mut new_col[offsets[j]..offsets[j] + items[j].width] {
            *slot = next;
            next += 1;
        }
    }
    let remap = |e: Expr| {
        map_expr(e, &mut |x| match x {
            Expr::Column(c) => Expr::Column(new_col[c]),
            other => other,
        })
    };
    // Every item is an inner join: its ON conditions are conditions of the whole join.
    for it in &mut items {
        conjuncts.append(&mut it.on);
    }
    // Conditions with subqueries are applied to the joined rows in the written order: their
    // subqueries read those rows' columns by position.
    let (last, conjuncts): (Vec<Expr>, Vec<Expr>) =
        conjuncts.into_iter().partition(contains_subquery);
    let conjuncts = conjuncts.into_iter().map(remap).collect();
    let mut reordered = Scope { columns: Vec::with_capacity(off), star: None };
    for &j in &order {
        reordered
            .columns
            .extend_from_slice(&scope.columns[offsets[j]..offsets[j] + items[j].width]);
    }
    let mut slots: Vec<Option<FromItem>> = items.into_iter().map(Some).collect();
    let items = order.iter().map(|&j| slots[j].take().expect("each item once")).collect();
    let plan = build_left_deep(items, conjuncts, &reordered, hash)?;
    let plan = Plan::Project {
        input: Box::new(plan),
        exprs: new_col.iter().map(|&c| Expr::Column(c)).collect(),
    };
    Ok(match and_all(last) {
        Some(p) => Plan::Filter { input: Box::new(plan), predicate: p },
        None => plan,
    })
}

/// `left RIGHT JOIN right ON on` (`left` the joined items so far, `left_width` columns wide):
/// `right LEFT JOIN left`, its columns put back in the written order.
fn right_join(
    left: Plan,
    right: Plan,
    left_width: usize,
    width: usize,
    on: Vec<Expr>,
    scope: &Scope,
) -> Result<Plan> {
    if on.iter().any(contains_subquery) {
        return Err(Error::unsupported("a subquery in the ON condition of a RIGHT JOIN"));
    }
    let swap = |c: usize| if c < left_width { c + width } else { c - left_width };
    let on = on
        .into_iter()
        .map(|e| {
            map_expr(e, &mut |x| match x {
                Expr::Column(c) => Expr::Column(swap(c)),
                other => other,
            })
        })
        .collect();
    let mut swapped = Scope { columns: scope.columns[left_width..].to_vec(), star: None };
    swapped.columns.extend_from_slice(&scope.columns[..left_width]);
    let inner = FromItem { kind: JoinKind::Left, on, ..FromItem::plain(left, left_width) };
    let joined =
        build_left_deep(vec![FromItem::plain(right, width), inner], vec![], &swapped, true)?;
    let exprs = (0..left_width + width).map(|c| Expr::Column(swap(c))).collect();
    Ok(Plan::Project { input: Box::new(joined), exprs })
}

/// `left FULL JOIN right ON on` (`left` the joined items so far, `left_width` columns wide):
/// a hash join on the condition's equalities between the two sides, the rest checked on each
/// pair (a pair that fails it is no match). Nothing is pushed below it: a row of either side
/// that meets none on the other still comes, with NULLs. Without an equality to hash: 0A000,
/// as in PostgreSQL.
fn full_join(
    left: Plan,
    right: Plan,
    left_width: usize,
    right_width: usize,
    on: Vec<Expr>,
    scope: &Scope,
) -> Result<Plan> {
    let end = left_width + right_width;
    let (mut left_keys, mut right_keys, mut bpchar, mut rest) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for c in on {
        if contains_subquery(&c) {
            return Err(Error::unsupported("a subquery in the ON condition of a FULL JOIN"));
        }
        match hash_key_pair(&c, left_width, end) {
            Some((l, r)) => {
                bpchar.push(may_be_bpchar(l, scope) || may_be_bpchar(r, scope));
                left_keys.push(l.clone());
                right_keys.push(map_expr(r.clone(), &mut |x| match x {
                    Expr::Column(i) => Expr::Column(i - left_width),
                    other => other,
                }));
            }
            None => rest.push(c),
        }
    }
    if left_keys.is_empty() {
        return Err(Error::unsupported_msg(
            "FULL JOIN is only supported with merge-joinable or hash-joinable join conditions",
        ));
    }
    Ok(Plan::HashJoin {
        left: Box::new(left),
        right: Box::new(right),
        kind: JoinKind::Full,
        left_keys,
        right_keys,
        bpchar,
        on: and_all(rest),
        right_width,
        lookup: None,
    })
}

/// Appends the columns of `more` to `scope`; a reordered `*` gets `more`'s too.
fn extend_scope(scope: &mut Scope, more: Scope) {
    let offset = scope.columns.len();
    if let Some(star) = &mut scope.star {
        star.extend(more.star().into_iter().map(|(i, _)| offset + i));
    }
    scope.columns.extend(more.columns);
}

/// The column names `NATURAL JOIN` joins on: those the left side and `right` both show, in
/// the left side's order.
fn common_columns(left: &Scope, right: &Scope) -> Vec<String> {
    let shown = |s: &Scope| -> Vec<String> {
        s.visible().filter(|(_, c)| !c.shadowed).map(|(_, c)| c.name.clone()).collect()
    };
    let theirs = shown(right);
    let mut names: Vec<String> = Vec::new();
    for name in shown(left) {
        if theirs.contains(&name) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The order in which to join FROM items: as written, unless every item is an inner join and
/// the written order would join an item to those before it with no condition between them (a
/// cross product) while a later item has one. Then, greedily from the first item, the next item
/// is the first (in written order) that some condition, over it and the items already placed,
/// joins to them; failing that, the first left.
fn join_order(items: &[FromItem], conjuncts: &[Expr]) -> Vec<usize> {
    let identity: Vec<usize> = (0..items.len()).collect();
    if items.len() < 3 || items.iter().any(|it| it.kind != JoinKind::Inner || it.lateral) {
        return identity;
    }
    let mut offsets = Vec::with_capacity(items.len());
    let mut off = 0;
    for it in items {
        offsets.push(off);
        off += it.width;
    }
    let item_of = |col: usize| offsets.iter().rposition(|o| *o <= col).unwrap_or(0);
    // The items each condition reads (conditions with subqueries are applied last anyway).
    let conds: Vec<Vec<usize>> = conjuncts
        .iter()
        .chain(items.iter().flat_map(|it| &it.on))
        .filter(|c| !contains_subquery(c))
        .map(|c| {
            let mut read = Vec::new();
            walk(c, &mut |x| {
                if let Expr::Column(col) = x {
                    let i = item_of(*col);
                    if !read.contains(&i) {
                        read.push(i);
                    }
                }
            });
            read
        })
        .collect();
    let joins = |j: usize, placed: &[usize]| {
        conds.iter().any(|read| {
            read.contains(&j)
                && read.iter().any(|i| placed.contains(i))
                && read.iter().all(|i| *i == j || placed.contains(i))
        })
    };
    let mut placed = vec![0];
    while placed.len() < items.len() {
        let unplaced: Vec<usize> = (0..items.len()).filter(|j| !placed.contains(j)).collect();
        let next = unplaced.iter().copied().find(|&j| joins(j, &placed)).unwrap_or(unplaced[0]);
        placed.push(next);
    }
    placed
}

/// Builds a left-deep tree of joins, pushing each conjunct down to the first item where all
/// its columns are available, and choosing key or range access for each table scan.
/// `hash`: whether joins may be hash joins ([`join`]).
fn build_left_deep(
    items: Vec<FromItem>,
    conjuncts: Vec<Expr>,
    scope: &Scope,
    hash: bool,
) -> Result<Plan> {
    if items.is_empty() {
        let plan = Plan::Values { rows: vec![vec![]], width: 0 };
        return Ok(match and_all(conjuncts) {
            Some(p) => Plan::Filter { input: Box::new(plan), predicate: p },
            None => plan,
        });
    }
    let mut offsets = Vec::new();
    let mut off = 0;
    for it in &items {
        offsets.push(off);
        off += it.width;
    }
    let item_of = |col: usize| offsets.iter().rposition(|o| *o <= col).unwrap_or(0);
    let mut pushed: Vec<Vec<Expr>> = vec![Vec::new(); items.len()];
    let mut after: Vec<Vec<Expr>> = vec![Vec::new(); items.len()];
    let mut top = Vec::new();
    for c in conjuncts {
        if contains_subquery(&c) {
            top.push(c);
            continue;
        }
        let target = max_column(&c).map(item_of).unwrap_or(0);
        if items[target].kind == JoinKind::Left {
            after[target].push(c);
        } else {
            pushed[target].push(c);
        }
    }
    let mut plan: Option<Plan> = None;
    for (i, mut item) in items.into_iter().enumerate() {
        let mut preds = std::mem::take(&mut pushed[i]);
        let mut on_top = Vec::new();
        for c in std::mem::take(&mut item.on) {
            if contains_subquery(&c) {
                on_top.push(c);
            } else {
                preds.push(c);
            }
        }
        // A LEFT JOIN's ON conditions with subqueries decide which right rows match (a left
        // row without one still comes, with NULLs), so they are the nested loop's own
        // condition, evaluated on the joined row; an inner join's may as well filter after it.
        let on =
            if item.kind == JoinKind::Left { and_all(std::mem::take(&mut on_top)) } else { None };
        let offset = offsets[i];
        plan = Some(match plan {
            // The first item runs at this query's own level.
            None => attach_filter(item.plan, preds),
            Some(left) => join(left, item, preds, on, offset, scope, hash),
        });
        let post: Vec<Expr> = std::mem::take(&mut after[i]).into_iter().chain(on_top).collect();
        if let Some(p) = and_all(post) {
            plan = Some(Plan::Filter { input: Box::new(plan.expect("set above")), predicate: p });
        }
    }
    let plan = plan.expect("at least one item");
    Ok(match and_all(top) {
        Some(p) => Plan::Filter { input: Box::new(plan), predicate: p },
        None => plan,
    })
}

/// Joins FROM item `item`, whose columns start at `offset` of the combined row, to `left`, the
/// join of the items before it. `preds` are the conditions over the combined row that decide
/// which pairs of rows match, `on` a LEFT JOIN's conditions with subqueries.
///
/// A nested loop runs the item once per left row, under it: conditions on the left row become
/// outer references, and a key or range lookup on the item's index can use them. Unless that
/// is a lookup of one row by the whole primary key, a condition `left expression = item
/// expression` makes it a hash join, which runs the item once, with only the conditions on its
/// own columns — after trying the nested loop's range lookups ([`Lookup`]) if there are some.
fn join(
    left: Plan,
    item: FromItem,
    preds: Vec<Expr>,
    on: Option<Expr>,
    offset: usize,
    scope: &Scope,
    hash: bool,
) -> Plan {
    let end = offset + item.width;
    if item.lateral {
        // Bound under the left row already: no deeper, and never hashed (it depends on it).
        let shifted = preds.iter().cloned().map(|p| shift_to_inner(p, offset)).collect();
        return Plan::NestedLoop {
            left: Box::new(left),
            right: Box::new(attach_filter(item.plan, shifted)),
            kind: item.kind,
            on,
            right_width: item.width,
        };
    }
    let mut inner = item.plan.clone();
    deepen(&mut inner, 0);
    let shifted = preds.iter().cloned().map(|p| shift_to_inner(p, offset)).collect();
    let nested = attach_filter(inner, shifted);
    // A lookup of one row by the whole primary key is always the way; a range the left row
    // narrows may be narrow or as wide as the table (the hash join then takes over).
    let (point_lookup, range_lookup) = match &nested {
        Plan::Scan { access: Access::PointGet(keys), .. } => {
            (keys.iter().any(reads_outer_row), false)
        }
        Plan::Scan { access: Access::Range { eq, lo, hi, .. }, .. } => {
            (false, eq.iter().chain(lo.iter().chain(hi).map(|(e, _)| e)).any(reads_outer_row))
        }
        _ => (false, false),
    };
    let (mut own, mut cross) = (Vec::new(), Vec::new());
    let (mut left_keys, mut right_keys, mut bpchar) = (Vec::new(), Vec::new(), Vec::new());
    if hash && !point_lookup {
        for p in &preds {
            if !references_columns_below(p, offset) {
                own.push(map_expr(p.clone(), &mut |x| match x {
                    Expr::Column(i) => Expr::Column(i - offset),
                    other => other,
                }));
            } else if let Some((l, r)) = hash_key_pair(p, offset, end) {
                bpchar.push(may_be_bpchar(l, scope) || may_be_bpchar(r, scope));
                left_keys.push(l.clone());
                right_keys.push(map_expr(r.clone(), &mut |x| match x {
                    Expr::Column(i) => Expr::Column(i - offset),
                    other => other,
                }));
            } else {
                cross.push(p.clone());
            }
        }
    }
    if left_keys.is_empty() {
        return Plan::NestedLoop {
            left: Box::new(left),
            right: Box::new(nested),
            kind: item.kind,
            on,
            right_width: item.width,
        };
    }
    let lookup = range_lookup.then(|| Box::new(Lookup { right: nested, on: on.clone() }));
    cross.extend(on);
    Plan::HashJoin {
        left: Box::new(left),
        right: Box::new(attach_filter(item.plan, own)),
        kind: item.kind,
        left_keys,
        right_keys,
        bpchar,
        on: and_all(cross),
        right_width: item.width,
        lookup,
    }
}

/// Whether `e` reads the row a nested loop runs its inner side under (`Outer { depth: 0 }`).
fn reads_outer_row(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| found |= matches!(x, Expr::Outer { depth: 0, .. }));
    found
}

/// Whether `e` reads a column left of `offset`.
fn references_columns_below(e: &Expr, offset: usize) -> bool {
    let mut found = false;
    walk(e, &mut |x| found |= matches!(x, Expr::Column(i) if *i < offset));
    found
}

/// Whether `e` reads some column and only columns in `range`.
fn reads_only(e: &Expr, range: std::ops::Range<usize>) -> bool {
    let (mut any, mut all) = (false, true);
    walk(e, &mut |x| {
        if let Expr::Column(i) = x {
            any = true;
            all &= range.contains(i);
        }
    });
    any && all
}

/// `left = right` with `left` over the columns before `offset` and `right` over those of the
/// item at `offset..end`, both computed from their row alone: a hash join key pair.
pub(crate) fn hash_key_pair(c: &Expr, offset: usize, end: usize) -> Option<(&Expr, &Expr)> {
    let Expr::Cmp(CmpOp::Eq, a, b) = c else { return None };
    if !row_local(a) || !row_local(b) {
        return None;
    }
    if reads_only(a, 0..offset) && reads_only(b, offset..end) {
        Some((a, b))
    } else if reads_only(b, 0..offset) && reads_only(a, offset..end) {
        Some((b, a))
    } else {
        None
    }
}

/// Whether `e` may be of type `char(n)`, whose `=` ignores trailing spaces.
pub(crate) fn may_be_bpchar(e: &Expr, scope: &Scope) -> bool {
    match e {
        Expr::Column(i) => {
            matches!(scope.columns.get(*i).map(|c| c.data_type), Some(DataType::Char(_)))
        }
        Expr::Cast(_, ty, _) => matches!(ty, DataType::Char(_)),
        Expr::Case(arms, els) => {
            arms.iter().any(|(_, t)| may_be_bpchar(t, scope))
                || els.as_ref().is_some_and(|e| may_be_bpchar(e, scope))
        }
        Expr::Coalesce(list) => list.iter().any(|x| may_be_bpchar(x, scope)),
        Expr::NullIf(a, _) => may_be_bpchar(a, scope),
        _ => false,
    }
}

/// Makes a plan bound at some query level run one level deeper, as the inner side of a nested
/// loop (under each left row): every reference it makes to a row outside it, at `level` or
/// more levels up from where it is, gets one more level.
fn deepen(p: &mut Plan, level: usize) {
    for e in p.exprs_mut() {
        deepen_expr(e, level);
    }
    let under: Vec<bool> = (0..p.inputs().len()).map(|i| p.runs_under_left_row(i)).collect();
    for (input, under) in p.inputs_mut().into_iter().zip(under) {
        deepen(input, level + usize::from(under));
    }
}

fn deepen_expr(e: &mut Expr, level: usize) {
    match e {
        Expr::Outer { depth, .. } if *depth >= level => *depth += 1,
        Expr::Subquery(q) | Expr::Exists(q, _) | Expr::InSubquery(_, q, _) => deepen(q, level + 1),
        _ => {}
    }
    for c in e.children_mut() {
        deepen_expr(c, level);
    }
}

/// Adds predicates to a plan: into a Scan's filter (choosing its access path), else a Filter.
fn attach_filter(plan: Plan, preds: Vec<Expr>) -> Plan {
    if preds.is_empty() {
        return plan;
    }
    match plan {
        Plan::Scan { table, filter, reverse, limit, for_update, .. } => {
            let mut all = Vec::new();
            if let Some(f) = filter {
                split_conjuncts(f, &mut all);
            }
            all.extend(preds);
            let access = choose_access(&table, &all);
            Plan::Scan { table, access, filter: and_all(all), reverse, limit, for_update }
        }
        other => {
            Plan::Filter { input: Box::new(other), predicate: and_all(preds).expect("non-empty") }
        }
    }
}

/// If `e` is a column of the scanned row (possibly behind a widening integer cast or a cast
/// between string types), returns its index.
pub(crate) fn key_column(e: &Expr, table: &Table) -> Option<usize> {
    match e {
        Expr::Column(i) => Some(*i),
        Expr::Cast(inner, to, _) => {
            let Expr::Column(i) = inner.as_ref() else { return None };
            let from = table.columns.get(*i)?.data_type;
            let ints =
                |t: &DataType| matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64);
            let strings = |t: &DataType| matches!(t, DataType::Text | DataType::Varchar(_));
            ((ints(&from) && ints(to)) || (strings(&from) && strings(to))).then_some(*i)
        }
        _ => None,
    }
}

/// Row-local: computed from the current row, parameters and constants alone (no outer row, no
/// subquery or aggregate, which read other rows).
pub(crate) fn row_local(e: &Expr) -> bool {
    let mut local = true;
    walk(e, &mut |x| {
        local &= !(matches!(
            x,
            Expr::Outer { .. }
                | Expr::Subquery(_)
                | Expr::Exists(..)
                | Expr::InSubquery(..)
                | Expr::Agg(_)
        ) || matches!(x, Expr::Func(f, _) if f.uses_session()));
    });
    local
}

/// Row-independent: no reference to the scanned row and no subquery.
pub(crate) fn row_independent(e: &Expr) -> bool {
    let mut ok = true;
    walk(e, &mut |x| {
        ok &= !(matches!(
            x,
            Expr::Column(_)
                | Expr::Agg(_)
                | Expr::Subquery(_)
                | Expr::Exists(..)
                | Expr::InSubquery(..)
        ) || matches!(x, Expr::Func(f, _) if f.uses_session()))
    });
    ok
}

/// Picks the access path for a scan of `table` filtered by `conjuncts`: a point get on the full
/// primary key, else point gets for each value of an IN list (or `= ANY (array)`) that
/// completes the primary key, else the index with the longest equality prefix (plus a range on
/// the next column; an IN list may take one place in the prefix, scanned once per value), else
/// a full scan. The conjuncts all stay in the residual filter.
fn choose_access(table: &Table, conjuncts: &[Expr]) -> Access {
    let ncols = table.columns.len();
    let mut eq: Vec<Option<Expr>> = vec![None; ncols];
    let mut list: Vec<Option<Expr>> = vec![None; ncols];
    let mut lo: Vec<Option<(Expr, bool)>> = vec![None; ncols];
    let mut hi: Vec<Option<(Expr, bool)>> = vec![None; ncols];
    for c in conjuncts {
        match c {
            Expr::InList(a, items, false) => {
                if let (Some(i), true) = (key_column(a, table), items.iter().all(row_independent)) {
                    list[i] = Some(Expr::Func(Func::Array(ArrayFunc::Build), items.clone()));
                }
                continue;
            }
            Expr::Func(Func::Array(ArrayFunc::Any { op: CmpOp::Eq, all: false }), args) => {
                if let [a, values] = args.as_slice() {
                    if let (Some(i), true) = (key_column(a, table), row_independent(values)) {
                        list[i] = Some(values.clone());
                    }
                }
                continue;
            }
            _ => {}
        }
        let Expr::Cmp(op, a, b) = c else { continue };
        let (col, value, op) = if let (Some(i), true) = (key_column(a, table), row_independent(b)) {
            (i, b.as_ref().clone(), *op)
        } else if let (Some(i), true) = (key_column(b, table), row_independent(a)) {
            (i, a.as_ref().clone(), flip(*op))
        } else {
            continue;
        };
        match op {
            CmpOp::Eq => eq[col] = Some(value),
            CmpOp::Gt => lo[col] = Some((value, false)),
            CmpOp::GtEq => lo[col] = Some((value, true)),
            CmpOp::Lt => hi[col] = Some((value, false)),
            CmpOp::LtEq => hi[col] = Some((value, true)),
            CmpOp::NotEq => {}
        }
    }
    let mut best: Option<(usize, bool, Access)> = None;
    let mut point_gets: Option<Access> = None;
    // A partial index holds every row (those outside its WHERE under their primary key): no
    // scan of it is narrower than the table's.
    for index in table.indexes.iter().filter(|i| i.predicate.is_none()) {
        let cols: Vec<usize> = index.columns.iter().map(|c| *c as usize).collect();
        let prefix = cols.iter().take_while(|c| eq[**c].is_some()).count();
        if index.primary && prefix == cols.len() {
            return Access::PointGet(
                cols.iter().map(|c| eq[*c].clone().expect("prefix")).collect(),
            );
        }
        let keys = |n: usize| -> Vec<Expr> {
            cols[..n].iter().map(|c| eq[*c].clone().unwrap_or(Expr::Literal(Value::Null))).collect()
        };
        let range_at = |n: usize| cols.get(n).is_some_and(|c| lo[*c].is_some() || hi[*c].is_some());
        let mut candidates = vec![(prefix, None)];
        // An IN list right after the equality prefix extends it, one scan per value.
        if let Some(values) = cols.get(prefix).and_then(|c| list[*c].clone()) {
            candidates.push((prefix + 1, Some(values)));
        }
        for (n, values) in candidates {
            let range = range_at(n);
            if n == 0 && !range {
                continue;
            }
            let each = |access: Access| match &values {
                Some(v) => {
                    Access::Each { access: Box::new(access), slot: prefix, values: v.clone() }
                }
                None => access,
            };
            if index.primary && n == cols.len() {
                point_gets = Some(each(Access::PointGet(keys(n))));
                continue;
            }
            let better = match &best {
                None => true,
                Some((p, r, _)) => (n, range) > (*p, *r),
            };
            if better {
                let next = cols.get(n).copied();
                let access = Access::Range {
                    index: if index.primary { None } else { Some(index.id) },
                    eq: keys(n),
                    lo: next.and_then(|c| lo[c].clone()),
                    hi: next.and_then(|c| hi[c].clone()),
                };
                best = Some((n, range, each(access)));
            }
        }
    }
    point_gets.or(best.map(|(_, _, a)| a)).unwrap_or(Access::Full)
}

fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        other => other,
    }
}

/// When the query is a single scan and ORDER BY names the index columns that follow the
/// equality prefix (all ascending or all descending), scan in index order instead of sorting,
/// and push LIMIT (+ OFFSET) into the scan so it stops early.
fn try_order_by_index(
    plan: &mut Plan,
    exprs: &[Expr],
    keys: &[SortKey],
    limit: Option<&Expr>,
    offset: Option<&Expr>,
) -> bool {
    if keys.is_empty() {
        return false;
    }
    let Plan::Scan { table, access, reverse, limit: scan_limit, .. } = plan else { return false };
    let desc = keys[0].desc;
    if keys.iter().any(|k| k.desc != desc || k.nulls_first != desc) {
        return false;
    }
    let mut key_cols = Vec::new();
    for k in keys {
        let Expr::Column(out) = k.expr else { return false };
        let Some(Expr::Column(c)) = exprs.get(out) else { return false };
        key_cols.push(*c);
    }
    let (index_cols, prefix): (Vec<usize>, usize) = match access {
        Access::PointGet(_) => return true,
        // Rows come value by value, not in index order.
        Access::Each { .. } => return false,
        Access::Full => match table.primary_index() {
            Some(pk) => (pk.columns.iter().map(|c| *c as usize).collect(), 0),
            None => return false,
        },
        Access::Range { index, eq, .. } => {
            let idx = match index {
                None => table.primary_index(),
                Some(id) => table.indexes.iter().find(|i| i.id == *id),
            };
            let Some(idx) = idx else { return false };
            (idx.columns.iter().map(|c| *c as usize).collect(), eq.len())
        }
    };
    // Nullable key columns would sort NULLs differently from the index; require NOT NULL.
    if key_cols.iter().any(|c| !table.columns[*c].not_null) {
        return false;
    }
    let rest = &index_cols[prefix..];
    if rest.len() < key_cols.len() || rest[..key_cols.len()] != key_cols[..] {
        return false;
    }
    *reverse = desc;
    if let Some(l) = limit {
        *scan_limit = Some(match offset {
            None => l.clone(),
            Some(o) => {
                Expr::Arith(crate::types::ArithOp::Add, Box::new(l.clone()), Box::new(o.clone()))
            }
        });
    }
    true
}

/// Marks the scans of the tables `locked` picks to lock their rows at commit.
fn mark_for_update(plan: &mut Plan, locked: &dyn Fn(&Table) -> bool) -> Result<()> {
    match plan {
        Plan::Scan { for_update, table, .. } => {
            *for_update |= locked(table);
            Ok(())
        }
        Plan::Filter { input, .. } | Plan::Project { input, .. } => mark_for_update(input, locked),
        Plan::NestedLoop { kind, .. } | Plan::HashJoin { kind, .. } => {
            let outer = *kind != JoinKind::Inner;
            let mut inputs = plan.inputs_mut().into_iter();
            let left = inputs.next().expect("a join has two inputs");
            mark_for_update(left, locked)?;
            for right in inputs {
                if outer && scans_any(right, locked) {
                    return Err(Error::unsupported(
                        "FOR UPDATE on the nullable side of an outer join",
                    ));
                }
                mark_for_update(right, locked)?;
            }
            Ok(())
        }
        Plan::Values { .. }
        | Plan::GenerateSeries { .. }
        | Plan::JsonbRows { .. }
        | Plan::Unnest { .. }
        | Plan::WorkingTable { .. } => Ok(()),
        _ => Err(Error::unsupported("FOR UPDATE on this query")),
    }
}

/// Whether `plan` scans a table `locked` picks.
fn scans_any(plan: &Plan, locked: &dyn Fn(&Table) -> bool) -> bool {
    match plan {
        Plan::Scan { table, .. } => locked(table),
        other => other.inputs().into_iter().any(|p| scans_any(p, locked)),
    }
}

/// Rewrites an expression of a grouped query over the Aggregate node's output.
/// The plan of a recursive term at its own level: down single-input nodes, to its FROM.
fn own_level(plan: &Plan) -> impl Iterator<Item = &Plan> {
    std::iter::successors(Some(plan), |p| match p.inputs()[..] {
        [input] if !matches!(p, Plan::RecursiveUnion { .. }) => Some(input),
        _ => None,
    })
}

/// `42P19` if a recursive term aggregates at its own level. PostgreSQL checks this before the
/// column types (and window functions after them: [`check_recursive_term`]).
fn recursive_term_groups(plan: &Plan) -> Result<()> {
    if own_level(plan).any(|p| matches!(p, Plan::Aggregate { .. })) {
        return Err(Error::DataException {
            message: "aggregate functions are not allowed in a recursive query's recursive term"
                .into(),
            sqlstate: "42P19",
        });
    }
    Ok(())
}

/// PostgreSQL's other rules for a recursive term (`checkWellFormedRecursion`): no window
/// function at its own level, and its reference to the working table `id` neither on the
/// nullable side of an outer join nor on the right of EXCEPT (`42P19`).
fn check_recursive_term(plan: &Plan, id: usize, name: &str) -> Result<()> {
    fn reads(p: &Plan, id: usize) -> bool {
        matches!(p, Plan::WorkingTable { id: w, .. } if *w == id)
            || p.inputs().into_iter().any(|i| reads(i, id))
    }
    let refuse = |message: String| Err(Error::DataException { message, sqlstate: "42P19" });
    if own_level(plan).any(|p| matches!(p, Plan::Window { .. })) {
        return refuse(
            "window functions are not allowed in a recursive query's recursive term".into(),
        );
    }
    // Joins and set operations anywhere in it.
    let mut stack = vec![plan];
    while let Some(p) = stack.pop() {
        let place = match p {
            Plan::NestedLoop { kind: JoinKind::Left, .. }
            | Plan::HashJoin { kind: JoinKind::Left, .. }
                if p.inputs()[1..].iter().any(|right| reads(right, id)) =>
            {
                "within an outer join"
            }
            Plan::HashJoin { kind: JoinKind::Full, .. }
                if p.inputs().iter().any(|side| reads(side, id)) =>
            {
                "within an outer join"
            }
            // PostgreSQL refuses it only as what EXCEPT removes.
            Plan::SetOp { right, op: SetOpKind::Except, .. } if reads(right, id) => "within EXCEPT",
            _ => {
                stack.extend(p.inputs());
                continue;
            }
        };
        return refuse(format!("recursive reference to query \"{name}\" must not appear {place}"));
    }
    Ok(())
}

/// A window call with `f` applied to each of its expressions.
fn map_window_call(
    call: &crate::plan::WindowCall,
    f: &mut dyn FnMut(&Expr) -> Result<Expr>,
) -> Result<crate::plan::WindowCall> {
    use crate::plan::WindowFunc as W;
    let keys = |keys: &[SortKey], f: &mut dyn FnMut(&Expr) -> Result<Expr>| {
        keys.iter()
            .map(|k| Ok(SortKey { expr: f(&k.expr)?, ..k.clone() }))
            .collect::<Result<Vec<_>>>()
    };
    let func = match &call.func {
        W::Aggregate(a) => {
            let mut a = a.clone();
            a.arg = a.arg.as_ref().map(&mut *f).transpose()?;
            a.filter = a.filter.as_ref().map(&mut *f).transpose()?;
            a.delimiter = a.delimiter.as_ref().map(&mut *f).transpose()?;
            a.order_by = keys(&a.order_by, f)?;
            W::Aggregate(a)
        }
        W::Shift { lead, value, offset, default } => {
            W::Shift { lead: *lead, value: f(value)?, offset: *offset, default: f(default)? }
        }
        W::NTile(e) => W::NTile(f(e)?),
        W::FirstValue(e) => W::FirstValue(f(e)?),
        W::LastValue(e) => W::LastValue(f(e)?),
        W::NthValue(a, b) => W::NthValue(f(a)?, f(b)?),
        other => other.clone(),
    };
    Ok(crate::plan::WindowCall {
        func,
        partition_by: call.partition_by.iter().map(&mut *f).collect::<Result<_>>()?,
        order_by: keys(&call.order_by, f)?,
        frame: call.frame,
        range_offsets: call.range_offsets.clone(),
    })
}

/// GROUP BY's items as distinct expressions and, when ROLLUP, CUBE or GROUPING SETS is among
/// them, the grouping sets as positions in that list: the cross product of every item's sets
/// (a plain expression is one set of itself), as in PostgreSQL. Without them the sets are
/// empty (one set of every expression).
fn grouping_sets(items: &[AstExpr]) -> Result<(Vec<&AstExpr>, Vec<Vec<usize>>)> {
    fn position<'a>(e: &'a AstExpr, exprs: &mut Vec<&'a AstExpr>) -> usize {
        exprs.iter().position(|x| *x == e).unwrap_or_else(|| {
            exprs.push(e);
            exprs.len() - 1
        })
    }
    let any_sets = items
        .iter()
        .any(|e| matches!(e, AstExpr::Rollup(_) | AstExpr::Cube(_) | AstExpr::GroupingSets(_)));
    if !any_sets {
        return Ok((items.iter().collect(), Vec::new()));
    }
    let mut exprs: Vec<&AstExpr> = Vec::new();
    const MAX_SETS: usize = 4096;
    let mut product: Vec<Vec<usize>> = vec![Vec::new()];
    for item in items {
        let lists: Vec<Vec<&AstExpr>> = match item {
            AstExpr::Rollup(lists) => {
                let mut sets = Vec::new();
                for n in (0..=lists.len()).rev() {
                    sets.push(lists[..n].iter().flatten().collect());
                }
                sets
            }
            AstExpr::Cube(lists) => {
                if lists.len() > 12 {
                    return Err(Error::TooManyColumns {
                        message: "CUBE is limited to 12 elements".into(),
                    });
                }
                (0..1usize << lists.len())
                    .rev()
                    .map(|mask| {
                        lists
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| mask & (1 << (lists.len() - 1 - i)) != 0)
                            .flat_map(|(_, l)| l.iter())
                            .collect()
                    })
                    .collect()
            }
            AstExpr::GroupingSets(lists) => {
                // sqlparser reads a ROLLUP or CUBE in here as a function call.
                for e in lists.iter().flatten() {
                    let nested = match e {
                        AstExpr::Rollup(_) | AstExpr::Cube(_) | AstExpr::GroupingSets(_) => true,
                        AstExpr::Function(f) => {
                            let name = f.name.to_string().to_ascii_lowercase();
                            name == "rollup" || name == "cube"
                        }
                        _ => false,
                    };
                    if nested {
                        return Err(Error::unsupported(
                            "ROLLUP, CUBE or GROUPING SETS inside GROUPING SETS",
                        ));
                    }
                }
                lists.iter().map(|l| l.iter().collect()).collect()
            }
            e => vec![vec![e]],
        };
        let mut next = Vec::new();
        for set in &product {
            for list in &lists {
                let mut s = set.clone();
                for e in list {
                    let p = position(e, &mut exprs);
                    if !s.contains(&p) {
                        s.push(p);
                    }
                }
                next.push(s);
            }
        }
        if next.len() > MAX_SETS {
            return Err(Error::StatementTooComplex {
                message: format!("too many grouping sets present (maximum {MAX_SETS})"),
            });
        }
        product = next;
    }
    Ok((exprs, product))
}

impl Binder<'_> {
    /// The columns among `used` (of the FROM row `scope`) that are not GROUP BY keys but
    /// that the keys determine: a column of a table in FROM whose primary key columns are all
    /// keys (plain column references). PostgreSQL allows those in the select list, HAVING and
    /// ORDER BY of a grouped query (`SELECT a.name, count(*) … GROUP BY a.id`, as Django's
    /// annotations write it). Only base tables: a subquery's or view's columns determine
    /// nothing.
    fn dependent_columns(&self, scope: &Scope, group_by: &[Expr], used: &[usize]) -> Vec<usize> {
        let keyed = |i: usize| group_by.contains(&Expr::Column(i));
        let mut out: Vec<usize> = Vec::new();
        for &i in used {
            let Some(c) = scope.columns.get(i) else { continue };
            let (Some(rel), Some((oid, _))) = (&c.relation, c.source) else { continue };
            if keyed(i) || out.contains(&i) {
                continue;
            }
            let Some(table) = self.snapshot.tables().find(|t| t.id.oid() == oid) else {
                continue;
            };
            let Some(pk) = table.primary_index() else { continue };
            // The primary key's columns of this instance of the table (its alias) are keys.
            let determined = pk.columns.iter().all(|&pc| {
                scope.columns.iter().enumerate().any(|(j, o)| {
                    o.relation.as_ref() == Some(rel)
                        && o.source == Some((oid, pc as i16 + 1))
                        && keyed(j)
                })
            });
            if determined {
                out.push(i);
            }
        }
        out
    }
}

/// An expression of a grouped query over the FROM row, rewritten over the grouped row: the
/// group keys (columns `0..ng`), the aggregates (from `ng`), then the window calls' columns
/// (from `windows_at`; over the FROM row they follow its `scope.columns.len()` columns). Any
/// other column is `42803`.
fn rewrite_grouped(
    e: &Expr,
    group_by: &[Expr],
    ng: usize,
    windows_at: usize,
    scope: &Scope,
    binder: &Binder<'_>,
) -> Result<Expr> {
    if let Some(i) = group_by.iter().position(|g| g == e) {
        return Ok(Expr::Column(i));
    }
    let _ = binder;
    let mut err = None;
    let out = map_expr_top_down(e, &mut |x| {
        if let Some(i) = group_by.iter().position(|g| g == x) {
            return Some(Expr::Column(i));
        }
        match x {
            Expr::Agg(j) => Some(Expr::Column(ng + j)),
            Expr::Column(i) if *i >= scope.columns.len() => {
                Some(Expr::Column(windows_at + i - scope.columns.len()))
            }
            Expr::Column(i) => {
                if err.is_none() {
                    let c = &scope.columns[*i];
                    let name = match &c.relation {
                        Some(r) => format!("{r}.{}", c.name),
                        None => c.name.clone(),
                    };
                    err = Some(Error::Grouping {
                        message: format!("column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"),
                        span: None,
                    });
                }
                Some(Expr::Column(*i))
            }
            Expr::Subquery(p) | Expr::Exists(p, _) | Expr::InSubquery(_, p, _)
                if plan_has_outer(p) =>
            {
                if err.is_none() {
                    err = Some(Error::unsupported("correlated subqueries in a grouped query"));
                }
                None
            }
            _ => None,
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Top-down rewrite: `f` may replace a node (and stop descent) by returning Some.
fn map_expr_top_down(e: &Expr, f: &mut dyn FnMut(&Expr) -> Option<Expr>) -> Expr {
    if let Some(r) = f(e) {
        return r;
    }
    let b = |x: &Expr, f: &mut dyn FnMut(&Expr) -> Option<Expr>| Box::new(map_expr_top_down(x, f));
    match e {
        Expr::Arith(op, a, c) => Expr::Arith(*op, b(a, f), b(c, f)),
        Expr::Cmp(op, a, c) => Expr::Cmp(*op, b(a, f), b(c, f)),
        Expr::And(a, c) => Expr::And(b(a, f), b(c, f)),
        Expr::Or(a, c) => Expr::Or(b(a, f), b(c, f)),
        Expr::IsDistinct(a, c, n) => Expr::IsDistinct(b(a, f), b(c, f), *n),
        Expr::Like(a, c, ci, n) => Expr::Like(b(a, f), b(c, f), *ci, *n),
        Expr::NullIf(a, c) => Expr::NullIf(b(a, f), b(c, f)),
        Expr::Concat(a, c) => Expr::Concat(b(a, f), b(c, f)),
        Expr::Neg(a) => Expr::Neg(b(a, f)),
        Expr::Not(a) => Expr::Not(b(a, f)),
        Expr::IsNull(a, n) => Expr::IsNull(b(a, f), *n),
        Expr::IsBool(a, v, n) => Expr::IsBool(b(a, f), *v, *n),
        Expr::Cast(a, t, k) => Expr::Cast(b(a, f), *t, *k),
        Expr::InList(a, list, n) => {
            Expr::InList(b(a, f), list.iter().map(|x| map_expr_top_down(x, f)).collect(), *n)
        }
        Expr::Case(arms, els) => Expr::Case(
            arms.iter().map(|(w, t)| (map_expr_top_down(w, f), map_expr_top_down(t, f))).collect(),
            els.as_ref().map(|x| b(x, f)),
        ),
        Expr::Coalesce(list) => {
            Expr::Coalesce(list.iter().map(|x| map_expr_top_down(x, f)).collect())
        }
        Expr::Func(func, list) => {
            Expr::Func(*func, list.iter().map(|x| map_expr_top_down(x, f)).collect())
        }
        Expr::InSubquery(a, p, n) => Expr::InSubquery(b(a, f), p.clone(), *n),
        leaf => leaf.clone(),
    }
}

/// Whether a subquery gives the same rows for every row that evaluates it within a statement,
/// so that it runs once (PostgreSQL's initplan): it reads no enclosing row and no recursive
/// query's working table, which changes from step to step.
pub(crate) fn uncorrelated(p: &Plan) -> bool {
    !plan_has_outer(p) && !reads_working_table(p)
}

fn reads_working_table(p: &Plan) -> bool {
    if matches!(p, Plan::WorkingTable { .. }) {
        return true;
    }
    let mut found = p.inputs().into_iter().any(reads_working_table);
    visit_plan_exprs(p, &mut |e| {
        walk(e, &mut |x| {
            if let Expr::Subquery(q) | Expr::Exists(q, _) | Expr::InSubquery(_, q, _) = x {
                found |= reads_working_table(q)
            }
        })
    });
    found
}

/// Does a subquery plan read any enclosing row? Only references that climb out of the plan
/// count: a nested loop's inner side reading its left row, or a subquery inside the plan reading
/// the plan's own rows, do not.
fn plan_has_outer(p: &Plan) -> bool {
    reads_outside(p, 0)
}

/// Whether `p`, at `level` levels below the plan being asked about, reads a row outside that
/// plan: an outer reference of `level` or more levels up. A nested loop's inner side and a
/// subquery are one level below what holds them.
fn reads_outside(p: &Plan, level: usize) -> bool {
    p.exprs().into_iter().any(|e| expr_reads_outside(e, level))
        || p.inputs()
            .into_iter()
            .enumerate()
            .any(|(i, input)| reads_outside(input, level + usize::from(p.runs_under_left_row(i))))
}

fn expr_reads_outside(e: &Expr, level: usize) -> bool {
    let mut found = false;
    walk(e, &mut |x| match x {
        Expr::Outer { depth, .. } => found |= *depth >= level,
        Expr::Subquery(q) | Expr::Exists(q, _) | Expr::InSubquery(_, q, _) => {
            found |= reads_outside(q, level + 1)
        }
        _ => {}
    });
    found
}

/// Calls `f` on every expression held directly by `p` or its input plans.
fn visit_plan_exprs(p: &Plan, f: &mut dyn FnMut(&Expr)) {
    p.exprs().into_iter().for_each(&mut *f);
    for input in p.inputs() {
        visit_plan_exprs(input, f);
    }
}

/// The expressions of a window call's arguments (and an aggregate's FILTER), without its
/// window (PARTITION BY, ORDER BY): PostgreSQL's `WindowFunc` node, which holds no more.
fn visit_window_call_args(call: &crate::plan::WindowCall, f: &mut dyn FnMut(&Expr)) {
    use crate::plan::WindowFunc as W;
    match &call.func {
        W::Aggregate(a) => a.arg.iter().chain(&a.filter).for_each(&mut *f),
        W::Shift { value, default, .. } => [value, default].into_iter().for_each(&mut *f),
        W::NTile(e) | W::FirstValue(e) | W::LastValue(e) => f(e),
        W::NthValue(a, b) => [a, b].into_iter().for_each(&mut *f),
        W::RowNumber | W::Rank | W::DenseRank | W::PercentRank | W::CumeDist => {}
    }
}

/// The jsonb set-returning function `name`, if it is one.
/// Whether output column `i` of `body` is a bare NULL (`SELECT NULL`, `VALUES (NULL)`), whose
/// type is still to be decided (PostgreSQL's `unknown`); `NULL::text` is typed.
fn untyped_null(body: &SetExpr, i: usize) -> bool {
    let null = |e: &AstExpr| matches!(e, AstExpr::Value(v) if v.value == ast::Value::Null);
    match body {
        SetExpr::Select(select) => match select.projection.get(i) {
            Some(ast::SelectItem::UnnamedExpr(e))
            | Some(ast::SelectItem::ExprWithAlias { expr: e, .. }) => null(e),
            _ => false,
        },
        SetExpr::Values(values) => values.rows.iter().all(|r| r.get(i).is_some_and(null)),
        SetExpr::Query(q) => untyped_null(&q.body, i),
        _ => false,
    }
}

/// The scope of a function in FROM, relation `rel`, with `columns` (name, type) named by the
/// alias's column list where it gives one (`42P10`-class error when it gives more names than
/// there are columns); a one-column function's relation name finds its column too
/// ([`ScopeColumn::whole_row`]).
pub(super) fn function_scope(
    rel: String,
    alias: Option<&ast::TableAlias>,
    columns: Vec<(String, DataType)>,
) -> Result<Scope> {
    let given: Vec<String> =
        alias.map(|a| a.columns.iter().map(|c| ident(&c.name)).collect()).unwrap_or_default();
    if given.len() > columns.len() {
        return Err(Error::InvalidColumnReference {
            message: format!(
                "table \"{rel}\" has {} columns available but {} columns specified",
                columns.len(),
                given.len()
            ),
            span: None,
        });
    }
    let one = columns.len() == 1;
    Ok(Scope {
        columns: columns
            .into_iter()
            .enumerate()
            .map(|(i, (name, data_type))| ScopeColumn {
                relation: Some(rel.clone()),
                name: given.get(i).cloned().unwrap_or(name),
                data_type,
                source: None,
                hidden: false,
                shadowed: false,
                whole_row: one,
            })
            .collect(),
        star: None,
    })
}

/// Set-returning functions in the select list, as PostgreSQL runs them: `SELECT unnest(a)
/// FROM t` gives a row per element of each row's `a` (none for an empty or NULL array), and
/// `SELECT generate_series(1, 3)` three rows. Rewritten as a function in FROM after the other
/// items, which sees their columns (`FROM t, unnest(t.a) AS "?srf"(v1)`), the item reading
/// its column under the function's name: the same rows, for a select list whose SRF calls are
/// whole items of one column each (`unnest`, `generate_series`, `generate_subscripts`, the
/// json(b) ones of one column), in a query that does not group (checked after binding:
/// PostgreSQL expands after grouping). Several calls run in step, the longest deciding and
/// the others padded with NULLs: several `unnest` become one `unnest(a, b, …)`, which does
/// exactly that; other combinations, and an SRF inside an expression, stay unsupported
/// (`None`: the select list is bound as written and says so).
fn select_list_srfs(select: &ast::Select) -> Option<ast::Select> {
    /// A select-list item that is a set-returning call: its name, the call, its alias.
    type Srf<'a> = (String, &'a ast::Function, Option<&'a ast::Ident>);
    fn srf_of(item: &SelectItem) -> Option<Srf<'_>> {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            _ => return None,
        };
        let AstExpr::Function(f) = expr else { return None };
        let name = match f.name.0.as_slice() {
            [n] => n.as_ident()?.value.to_lowercase(),
            [schema, n] if schema.as_ident()?.value.eq_ignore_ascii_case("pg_catalog") => {
                n.as_ident()?.value.to_lowercase()
            }
            _ => return None,
        };
        let one_column =
            matches!(name.as_str(), "generate_series" | "generate_subscripts" | "unnest")
                || jsonb_rows(&name).is_some_and(|j| j.columns().len() == 1);
        let ast::FunctionArguments::List(list) = &f.args else { return None };
        let plain = list.duplicate_treatment.is_none()
            && list.clauses.is_empty()
            && f.filter.is_none()
            && f.over.is_none()
            && f.within_group.is_empty()
            && f.null_treatment.is_none();
        (one_column && plain).then_some((name, f, alias))
    }
    let srfs: Vec<(usize, Srf<'_>)> = select
        .projection
        .iter()
        .enumerate()
        .filter_map(|(i, item)| Some((i, srf_of(item)?)))
        .collect();
    let (_, first, _) = &srfs.first()?.1;
    let args: Vec<ast::FunctionArg> = match srfs.len() {
        1 => match &first.args {
            ast::FunctionArguments::List(list) => list.args.clone(),
            _ => return None,
        },
        _ if srfs.iter().all(|(_, (n, f, _))| {
            n == "unnest" && matches!(&f.args, ast::FunctionArguments::List(l) if l.args.len() == 1)
        }) =>
        {
            srfs.iter()
                .filter_map(|(_, (_, f, _))| match &f.args {
                    ast::FunctionArguments::List(l) => l.args.first().cloned(),
                    _ => None,
                })
                .collect()
        }
        _ => return None,
    };
    let table = ast::Ident::with_quote('"', "?srf");
    let column = |k: usize| ast::Ident::with_quote('"', format!("v{}", k + 1));
    let factor = TableFactor::Function {
        lateral: false,
        name: first.name.clone(),
        args,
        with_ordinality: false,
        alias: Some(ast::TableAlias {
            explicit: true,
            name: table.clone(),
            columns: (0..srfs.len())
                .map(|k| ast::TableAliasColumnDef { name: column(k), data_type: None })
                .collect(),
            at: None,
        }),
    };
    let mut out = select.clone();
    out.from.push(ast::TableWithJoins { relation: factor, joins: Vec::new() });
    for (k, (i, (name, _, alias))) in srfs.iter().enumerate() {
        out.projection[*i] = SelectItem::ExprWithAlias {
            expr: AstExpr::CompoundIdentifier(vec![table.clone(), column(k)]),
            alias: alias.cloned().unwrap_or_else(|| ast::Ident::with_quote('"', name.clone())),
        };
    }
    Some(out)
}

pub(super) fn jsonb_rows(name: &str) -> Option<JsonbRows> {
    Some(match name {
        "jsonb_array_elements" => JsonbRows::ArrayElements,
        "jsonb_array_elements_text" => JsonbRows::ArrayElementsText,
        "jsonb_each" => JsonbRows::Each,
        "jsonb_each_text" => JsonbRows::EachText,
        "jsonb_object_keys" => JsonbRows::ObjectKeys,
        "json_array_elements" => JsonbRows::JsonArrayElements,
        "json_array_elements_text" => JsonbRows::JsonArrayElementsText,
        "json_each" => JsonbRows::JsonEach,
        "json_each_text" => JsonbRows::JsonEachText,
        "json_object_keys" => JsonbRows::JsonObjectKeys,
        _ => return None,
    })
}

/// Output width of a plan.
pub(crate) fn width_of(p: &Plan) -> usize {
    match p {
        Plan::Values { width, .. } | Plan::WorkingTable { width, .. } => *width,
        Plan::RecursiveUnion { anchor, .. } => width_of(anchor),
        Plan::Scan { table, .. } => table.columns.len(),
        Plan::GenerateSeries { .. } => 1,
        Plan::JsonbRows { func, .. } => func.columns().len(),
        Plan::Unnest { args, ordinality } => args.len() + usize::from(*ordinality),
        Plan::Filter { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Distinct { input, .. }
        | Plan::Limit { input, .. } => width_of(input),
        Plan::SetOp { left, .. } => width_of(left),
        Plan::Window { input, calls } => width_of(input) + calls.len(),
        Plan::Project { exprs, .. } => exprs.len(),
        Plan::NestedLoop { left, right_width, .. } | Plan::HashJoin { left, right_width, .. } => {
            width_of(left) + right_width
        }
        Plan::Aggregate { group_by, aggs, .. } => group_by.len() + aggs.len(),
        Plan::Truncate { width, .. } => *width,
    }
}

/// Returns a table's scan plan with `preds` attached (used by UPDATE / DELETE).
pub(crate) fn scan_with(table: Arc<Table>, preds: Vec<Expr>) -> Plan {
    let plan = Plan::Scan {
        table,
        access: Access::Full,
        filter: None,
        reverse: false,
        limit: None,
        for_update: false,
    };
    attach_filter(plan, preds)
}

/// A bound subquery as a FROM item named `rel`, its columns renamed by the alias's list.
fn derived(q: Query, rel: Option<String>, alias: Option<&ast::TableAlias>) -> (Plan, Scope) {
    let mut scope = output_scope(&q.columns, rel);
    if let Some(a) = alias {
        for (i, c) in a.columns.iter().enumerate() {
            if let Some(col) = scope.columns.get_mut(i) {
                col.name = ident(&c.name);
            }
        }
    }
    (q.plan, scope)
}

/// A query's output columns as a scope (of relation `rel`, if named), as ORDER BY above a
/// VALUES list or a set operation, or a subquery in FROM, sees them.
fn output_scope(columns: &[OutColumn], rel: Option<String>) -> Scope {
    let columns = columns
        .iter()
        .map(|c| ScopeColumn {
            relation: rel.clone(),
            name: c.name.clone(),
            data_type: c.data_type,
            source: None,
            hidden: false,
            shadowed: false,
            whole_row: false,
        })
        .collect();
    Scope { columns, star: None }
}
