//! Binding scalar expressions: name resolution, literal typing, implicit casts, parameter type
//! inference, and PostgreSQL's result column names.

use catalog::DataType;
use sqlparser::ast::{
    self as ast, BinaryOperator, Expr as AstExpr, UnaryOperator, Value as AstValue,
};

use super::{ident, Binder, Scope};
use crate::error::{Error, Result};
use crate::plan::{AggCall, AggFunc, CmpOp, Expr, Func, JsonbFunc, SortKey};
use crate::types::{self, ArithOp, CastKind, Value};

/// A bound expression with its type. `unknown` marks an untyped string literal, a bare NULL or
/// a parameter whose type is not yet known: its type is decided by the context.
#[derive(Debug, Clone)]
pub(crate) struct Typed {
    pub expr: Expr,
    pub ty: DataType,
    pub unknown: bool,
}

impl Typed {
    pub(super) fn known(expr: Expr, ty: DataType) -> Typed {
        Typed { expr, ty, unknown: false }
    }
}

impl Binder<'_> {
    /// Binds `e` and coerces it to `ty` with the given cast context (e.g. a WHERE clause to
    /// boolean, an assignment to the column type).
    pub(crate) fn bind_expr_as(
        &mut self,
        e: &AstExpr,
        scope: &Scope,
        ty: DataType,
        kind: CastKind,
    ) -> Result<Expr> {
        let t = self.bind_expr(e, scope)?;
        self.coerce(t, ty, kind, e)
    }

    /// Binds a boolean condition (WHERE, HAVING, ON, CASE WHEN).
    pub(crate) fn bind_condition(
        &mut self,
        e: &AstExpr,
        scope: &Scope,
        clause: &str,
    ) -> Result<Expr> {
        let t = self.bind_expr(e, scope)?;
        if t.unknown {
            return self.coerce(t, DataType::Bool, CastKind::Implicit, e);
        }
        if t.ty != DataType::Bool {
            return Err(Error::DatatypeMismatch {
                message: format!(
                    "argument of {clause} must be type boolean, not type {}",
                    t.ty.base_name()
                ),
                span: self.span_of(e),
            });
        }
        Ok(t.expr)
    }

    /// Coerces a bound expression to `to`.
    pub(crate) fn coerce(
        &mut self,
        t: Typed,
        to: DataType,
        kind: CastKind,
        node: &AstExpr,
    ) -> Result<Expr> {
        if t.unknown {
            // A literal that does not read as `to` is an error at the literal (a length or
            // precision it exceeds is not: PostgreSQL checks that in the cast, unplaced).
            let at = |b: &Self, s: &str| b.literal_span(node, s);
            return match t.expr {
                // Read in the session's time zone when the statement runs: the plan is shared
                // by sessions in different zones.
                Expr::Literal(Value::Text(s)) if types::zone_dependent(&DataType::Text, &to) => {
                    Ok(Expr::Cast(Box::new(Expr::Literal(Value::Text(s))), to, CastKind::Explicit))
                }
                // An explicit cast of a literal truncates (`'abcd'::varchar(2)`): parse as the
                // unconstrained type, then cast.
                Expr::Literal(Value::Text(s)) if kind == CastKind::Explicit => {
                    let base = unconstrained(to);
                    let v = types::parse_text(&s, &base).map_err(|e| e.at(at(self, &s)))?;
                    Ok(Expr::Literal(if base == to {
                        v
                    } else {
                        types::cast(v, &base, &to, kind)?
                    }))
                }
                Expr::Literal(Value::Text(s)) => {
                    let base = unconstrained(to);
                    let v = types::parse_text(&s, &base).map_err(|e| e.at(at(self, &s)))?;
                    if base == to {
                        return Ok(Expr::Literal(v));
                    }
                    Ok(Expr::Literal(types::parse_text(&s, &to)?))
                }
                Expr::Literal(Value::Null) => Ok(Expr::Literal(Value::Null)),
                Expr::Param(i) => {
                    self.params[i] = Some(to);
                    Ok(Expr::Param(i))
                }
                other => Ok(other),
            };
        }
        if t.ty == to {
            return Ok(t.expr);
        }
        if types::cast_allowed(&t.ty, &to, kind) {
            return fold_cast(t.expr, t.ty, to, kind);
        }
        let message = match kind {
            CastKind::Assignment => format!(
                "expression is of type {} but the target is of type {}",
                t.ty.base_name(),
                to.base_name()
            ),
            _ => format!("cannot cast type {} to {}", t.ty.base_name(), to.base_name()),
        };
        let span = self.span_of(node);
        Err(match kind {
            CastKind::Explicit => Error::CannotCoerce { message, span },
            _ => Error::DatatypeMismatch { message, span },
        })
    }

    /// Brings two operands to a common type (unknowns take the other side's type).
    /// [`Binder::coerce`] (implicit) of an operand compared with a value of type `to`. An
    /// untyped literal compared with a varchar(n) or char(n) value is not held to the length,
    /// as PostgreSQL resolves it to the type without one: `v = 'abcdef'` is false, not 22001.
    /// A literal longer than a char(n) without its trailing blanks stays whole (unpadded), so
    /// it compares unequal to every char(n) value. Only comparisons relax the length: a CASE or
    /// COALESCE result keeps it, so what is stored is still checked.
    fn coerce_compared(&mut self, t: Typed, to: DataType, node: &AstExpr) -> Result<Expr> {
        if let (true, Expr::Literal(Value::Text(s))) = (t.unknown, &t.expr) {
            match to {
                DataType::Varchar(_) => {
                    return Ok(Expr::Literal(types::parse_text(s, &DataType::Varchar(None))?))
                }
                DataType::Char(n) if s.trim_end_matches(' ').chars().count() > n as usize => {
                    return Ok(Expr::Literal(Value::Text(s.trim_end_matches(' ').to_string())));
                }
                _ => {}
            }
        }
        self.coerce(t, to, CastKind::Implicit, node)
    }

    fn unify(
        &mut self,
        l: Typed,
        r: Typed,
        node: &AstExpr,
        op: &str,
    ) -> Result<(Expr, Expr, DataType)> {
        // json has no equality or order: PostgreSQL has no operator to find.
        if [&l, &r].iter().any(|t| !t.unknown && t.ty == DataType::Json) {
            let name = |t: &Typed| if t.unknown { "unknown".to_string() } else { t.ty.base_name() };
            return Err(Error::UndefinedFunction {
                name: format!("operator {} {op} {}", name(&l), name(&r)),
                span: self.span_of(node),
            });
        }
        match (l.unknown, r.unknown) {
            (true, true) => {
                let l = self.coerce(l, DataType::Text, CastKind::Implicit, node)?;
                let r = self.coerce(r, DataType::Text, CastKind::Implicit, node)?;
                Ok((l, r, DataType::Text))
            }
            // An untyped operand takes the other's type, except that varchar has no operators
            // of its own: PostgreSQL compares it as text, so the untyped side is text.
            (true, false) => {
                let ty = if matches!(r.ty, DataType::Varchar(_)) { DataType::Text } else { r.ty };
                Ok((self.coerce_compared(l, ty, node)?, r.expr, ty))
            }
            (false, true) => {
                let ty = if matches!(l.ty, DataType::Varchar(_)) { DataType::Text } else { l.ty };
                Ok((l.expr, self.coerce_compared(r, ty, node)?, ty))
            }
            (false, false) => {
                if l.ty == r.ty {
                    let ty = l.ty;
                    return Ok((l.expr, r.expr, ty));
                }
                // An operator on arrays takes one array type (anyarray): no implicit cast.
                let arrays = l.ty.element().is_some() || r.ty.element().is_some();
                let Some(ty) = types::common_type(&l.ty, &r.ty).filter(|_| !arrays) else {
                    return Err(Error::UndefinedFunction {
                        name: format!("operator {} {op} {}", l.ty.base_name(), r.ty.base_name()),
                        span: self.span_of(node),
                    });
                };
                let (lt, rt) = (l.ty, r.ty);
                let le =
                    if lt == ty { l.expr } else { fold_cast(l.expr, lt, ty, CastKind::Implicit)? };
                let re =
                    if rt == ty { r.expr } else { fold_cast(r.expr, rt, ty, CastKind::Implicit)? };
                Ok((le, re, ty))
            }
        }
    }

    /// Binds an expression.
    pub(crate) fn bind_expr(&mut self, e: &AstExpr, scope: &Scope) -> Result<Typed> {
        match e {
            AstExpr::Identifier(id) => self.resolve_column(None, &ident(id), scope, e),
            AstExpr::CompoundIdentifier(ids) => {
                let names: Vec<String> = ids.iter().map(ident).collect();
                match names.as_slice() {
                    [t, c] => self.resolve_column(Some(t), c, scope, e),
                    [_, t, c] => self.resolve_column(Some(t), c, scope, e),
                    _ => Err(Error::unsupported(format!("column reference {e}"))),
                }
            }
            AstExpr::Value(v) => self.bind_value(&v.value, e),
            AstExpr::Nested(inner) => self.bind_expr(inner, scope),
            AstExpr::TypedString(ts) => {
                let ty = self.data_type(&ts.data_type)?;
                let text = match &ts.value.value {
                    AstValue::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                let literal = Typed {
                    expr: Expr::Literal(Value::Text(text)),
                    ty: DataType::Text,
                    unknown: true,
                };
                Ok(Typed::known(self.coerce(literal, ty, CastKind::Explicit, e)?, ty))
            }
            AstExpr::Cast { kind, expr, data_type, format } => {
                if format.is_some()
                    || !matches!(kind, ast::CastKind::Cast | ast::CastKind::DoubleColon)
                {
                    return Err(Error::unsupported(format!("{kind:?} cast")));
                }
                let ty = self.data_type(data_type)?;
                // A numeric literal cast to a float type is read as a float directly, so that
                // literals beyond numeric's range (`1e300::float8`) work.
                if matches!(ty, DataType::Float32 | DataType::Float64) {
                    if let Some(text) = number_literal(expr) {
                        // A numeric literal has no negative zero: `(-0.0)::float8` is 0
                        // (adding +0 turns -0 into +0 and leaves everything else alone).
                        let v = match types::parse_text(&text, &ty)? {
                            Value::Float64(f) => Value::Float64(f + 0.0),
                            Value::Float32(f) => Value::Float32(f + 0.0),
                            v => v,
                        };
                        return Ok(Typed::known(Expr::Literal(v), ty));
                    }
                }
                if let AstExpr::Array(array) = expr.as_ref() {
                    if ty.element().is_some() {
                        return self.bind_array_constructor(array, Some(ty), scope, e);
                    }
                }
                let t = self.bind_expr(expr, scope)?;
                // A literal's own errors point at it; a cast that does not exist, at the cast
                // (PostgreSQL's location of `x::t` is its `::`).
                let node = if t.unknown { expr.as_ref() } else { e };
                let out =
                    self.coerce(t, ty, CastKind::Explicit, node).map_err(|err| match err {
                        Error::CannotCoerce { message, span }
                            if *kind == ast::CastKind::DoubleColon =>
                        {
                            let colons = crate::parse::offset_of(
                                self.sql,
                                ast::Spanned::span(expr.as_ref()).end,
                            )
                            .and_then(|end| Some(end + self.sql.get(end..)?.find("::")?))
                            .map(|start| crate::error::Span { start });
                            Error::CannotCoerce { message, span: colons.or(span) }
                        }
                        other => other,
                    })?;
                Ok(Typed::known(out, ty))
            }
            AstExpr::UnaryOp { op, expr } => match op {
                // PostgreSQL's unary minus binds tighter than `^` (`-2 ^ 2` is 4); the parser
                // read it as -(2 ^ 2): move the minus onto the left operand of the `^` chain.
                UnaryOperator::Minus
                    if matches!(
                        expr.as_ref(),
                        AstExpr::BinaryOp { op: BinaryOperator::PGExp, .. }
                    ) =>
                {
                    fn negate_leftmost(e: &AstExpr) -> AstExpr {
                        match e {
                            AstExpr::BinaryOp { left, op: BinaryOperator::PGExp, right } => {
                                AstExpr::BinaryOp {
                                    left: Box::new(negate_leftmost(left)),
                                    op: BinaryOperator::PGExp,
                                    right: right.clone(),
                                }
                            }
                            other => AstExpr::UnaryOp {
                                op: UnaryOperator::Minus,
                                expr: Box::new(other.clone()),
                            },
                        }
                    }
                    self.bind_expr(&negate_leftmost(expr), scope)
                }
                UnaryOperator::Minus => {
                    if let AstExpr::Value(v) = expr.as_ref() {
                        if let AstValue::Number(n, _) = &v.value {
                            return self.number(&format!("-{n}"));
                        }
                    }
                    let t = self.bind_expr(expr, scope)?;
                    let t = if t.unknown {
                        let ty = DataType::Numeric(None);
                        Typed::known(self.coerce(t, ty, CastKind::Implicit, e)?, ty)
                    } else {
                        t
                    };
                    if t.ty == DataType::Interval {
                        return Ok(Typed::known(Expr::Neg(Box::new(t.expr)), t.ty));
                    }
                    if !is_numeric(&t.ty) {
                        return Err(Error::UndefinedFunction {
                            name: format!("operator - {}", t.ty.base_name()),
                            span: self.span_of(e),
                        });
                    }
                    Ok(Typed::known(Expr::Neg(Box::new(t.expr)), t.ty))
                }
                UnaryOperator::Plus => self.bind_expr(expr, scope),
                UnaryOperator::Not => {
                    let c = self.bind_condition(expr, scope, "NOT")?;
                    Ok(Typed::known(Expr::Not(Box::new(c)), DataType::Bool))
                }
                other => Err(Error::unsupported(format!("unary operator {other}"))),
            },
            AstExpr::BinaryOp { left, op, right } => match row_comparison(left, op, right)? {
                Some(scalar) => self.bind_expr(&scalar, scope),
                None => self.bind_binary(left, op, right, scope, e),
            },
            AstExpr::IsNull(x) | AstExpr::IsNotNull(x) => {
                let t = self.bind_expr(x, scope)?;
                let x = if t.unknown {
                    self.coerce(t, DataType::Text, CastKind::Implicit, e)?
                } else {
                    t.expr
                };
                Ok(Typed::known(
                    Expr::IsNull(Box::new(x), matches!(e, AstExpr::IsNotNull(_))),
                    DataType::Bool,
                ))
            }
            AstExpr::IsTrue(x)
            | AstExpr::IsNotTrue(x)
            | AstExpr::IsFalse(x)
            | AstExpr::IsNotFalse(x) => {
                let c = self.bind_condition(x, scope, "IS TRUE")?;
                let (value, negated) = match e {
                    AstExpr::IsTrue(_) => (true, false),
                    AstExpr::IsNotTrue(_) => (true, true),
                    AstExpr::IsFalse(_) => (false, false),
                    _ => (false, true),
                };
                Ok(Typed::known(Expr::IsBool(Box::new(c), value, negated), DataType::Bool))
            }
            // IS [NOT] UNKNOWN: IS [NOT] NULL of a boolean.
            AstExpr::IsUnknown(x) | AstExpr::IsNotUnknown(x) => {
                let c = self.bind_condition(x, scope, "IS UNKNOWN")?;
                Ok(Typed::known(
                    Expr::IsNull(Box::new(c), matches!(e, AstExpr::IsNotUnknown(_))),
                    DataType::Bool,
                ))
            }
            AstExpr::IsDistinctFrom(a, b) | AstExpr::IsNotDistinctFrom(a, b) => {
                let l = self.bind_expr(a, scope)?;
                let r = self.bind_expr(b, scope)?;
                let (l, r, _) = self.unify(l, r, e, "IS DISTINCT FROM")?;
                let negated = matches!(e, AstExpr::IsNotDistinctFrom(..));
                Ok(Typed::known(
                    Expr::IsDistinct(Box::new(l), Box::new(r), negated),
                    DataType::Bool,
                ))
            }
            AstExpr::InList { expr, list, negated } if matches!(strip(expr), AstExpr::Tuple(_)) => {
                // `(a, b) IN ((1, 2), …)`: the rows compared one by one.
                let mut any: Option<AstExpr> = None;
                for item in list {
                    let eq = row_comparison(expr, &BinaryOperator::Eq, item)?
                        .ok_or_else(|| Error::unsupported("IN of a row and a non-row value"))?;
                    any = Some(match any {
                        None => eq,
                        Some(acc) => binary(acc, BinaryOperator::Or, eq),
                    });
                }
                let any = AstExpr::Nested(Box::new(any.expect("an IN list is never empty")));
                let out = if *negated {
                    AstExpr::UnaryOp { op: UnaryOperator::Not, expr: Box::new(any) }
                } else {
                    any
                };
                self.bind_expr(&out, scope)
            }
            AstExpr::InList { expr, list, negated } => {
                let mut t = self.bind_expr(expr, scope)?;
                let items: Vec<Typed> =
                    list.iter().map(|i| self.bind_expr(i, scope)).collect::<Result<_>>()?;
                let mut ty = if t.unknown { None } else { Some(t.ty) };
                for i in &items {
                    if !i.unknown {
                        ty = Some(match ty {
                            None => i.ty,
                            Some(cur) => types::common_type(&cur, &i.ty).ok_or_else(|| {
                                Error::DatatypeMismatch {
                                    message: format!(
                                        "IN types {} and {} cannot be matched",
                                        cur.base_name(),
                                        i.ty.base_name()
                                    ),
                                    span: self.span_of(e),
                                }
                            })?,
                        });
                    }
                }
                let ty = ty.unwrap_or(DataType::Text);
                t = Typed::known(self.coerce(t, ty, CastKind::Implicit, e)?, ty);
                let items = items
                    .into_iter()
                    .map(|i| self.coerce_compared(i, ty, e))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Typed::known(Expr::InList(Box::new(t.expr), items, *negated), DataType::Bool))
            }
            AstExpr::Between { expr, negated, low, high } => {
                let x = self.bind_expr(expr, scope)?;
                let lo = self.bind_expr(low, scope)?;
                let hi = self.bind_expr(high, scope)?;
                // `x >= lo AND x <= hi`, each comparison resolved on its own as PostgreSQL
                // does; an untyped x (a parameter) takes its type in the first one, and has
                // that type in the second.
                let again = if x.unknown { None } else { Some(x.clone()) };
                let (x1, lo, ty) = self.unify(x, lo, e, ">=")?;
                let x = again.unwrap_or_else(|| Typed::known(x1.clone(), ty));
                let (x2, hi, _) = self.unify(x, hi, e, "<=")?;
                let both = Expr::And(
                    Box::new(Expr::Cmp(CmpOp::GtEq, Box::new(x1), Box::new(lo))),
                    Box::new(Expr::Cmp(CmpOp::LtEq, Box::new(x2), Box::new(hi))),
                );
                let out = if *negated { Expr::Not(Box::new(both)) } else { both };
                Ok(Typed::known(out, DataType::Bool))
            }
            AstExpr::Like { negated, any, expr, pattern, escape_char }
            | AstExpr::ILike { negated, any, expr, pattern, escape_char } => {
                let ci = matches!(e, AstExpr::ILike { .. });
                if *any {
                    if escape_char.is_some() {
                        return Err(Error::unsupported("LIKE ANY … ESCAPE"));
                    }
                    return self.bind_like_any(expr, pattern, ci, *negated, scope, e);
                }
                let x = self.bind_expr(expr, scope)?;
                let x = self.text_expr(x, e)?;
                let p = match escape_char {
                    // The pattern rewritten to the default escape, `\`.
                    Some(esc) => match (string_literal(pattern), string_literal(esc)) {
                        (Some(p), Some(esc)) => {
                            Expr::Literal(Value::Text(crate::types::like_escape(&p, &esc)?))
                        }
                        _ => {
                            return Err(Error::unsupported(
                                "LIKE … ESCAPE with a pattern or escape that is not a constant",
                            ))
                        }
                    },
                    None => {
                        let p = self.bind_expr(pattern, scope)?;
                        self.text_expr(p, e)?
                    }
                };
                Ok(Typed::known(Expr::Like(Box::new(x), Box::new(p), ci, *negated), DataType::Bool))
            }
            AstExpr::Case { operand, conditions, else_result, .. } => {
                self.bind_case(operand.as_deref(), conditions, else_result.as_deref(), scope, e)
            }
            AstExpr::Function(f) => self.bind_function(f, scope, e),
            AstExpr::Ceil { expr, field } | AstExpr::Floor { expr, field } => {
                if !matches!(
                    field,
                    ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime)
                ) {
                    return Err(Error::unsupported("CEIL/FLOOR with a field or scale"));
                }
                let func = if matches!(e, AstExpr::Ceil { .. }) { Func::Ceil } else { Func::Floor };
                let t = self.bind_expr(expr, scope)?;
                self.numeric_func(func, vec![t], e)
            }
            AstExpr::Substring { expr, substring_from, substring_for, .. } => {
                let x = self.bind_expr(expr, scope)?;
                let mut args = vec![self.text_expr(x, e)?];
                for a in [substring_from, substring_for].into_iter().flatten() {
                    args.push(self.bind_expr_as(a, scope, DataType::Int32, CastKind::Implicit)?);
                }
                if args.len() == 1 {
                    args.push(Expr::Literal(Value::Int32(1)));
                }
                Ok(Typed::known(Expr::Func(Func::Substring, args), DataType::Text))
            }
            AstExpr::Trim { trim_where, trim_what, expr, trim_characters } => {
                if trim_characters.is_some() {
                    return Err(Error::unsupported("TRIM with a character list"));
                }
                let func = match trim_where {
                    None | Some(ast::TrimWhereField::Both) => Func::Trim,
                    Some(ast::TrimWhereField::Leading) => Func::LTrim,
                    Some(ast::TrimWhereField::Trailing) => Func::RTrim,
                };
                let x = self.bind_expr(expr, scope)?;
                let mut args = vec![self.text_expr(x, e)?];
                if let Some(w) = trim_what {
                    let w = self.bind_expr(w, scope)?;
                    args.push(self.text_expr(w, e)?);
                }
                Ok(Typed::known(Expr::Func(func, args), DataType::Text))
            }
            AstExpr::Subquery(q) => {
                let (plan, cols) = self.bind_subquery(q, scope)?;
                if cols.len() != 1 {
                    return Err(Error::SyntaxMisuse {
                        message: "subquery must return only one column".into(),
                        span: self.span_of(e),
                    });
                }
                Ok(Typed::known(Expr::Subquery(Box::new(plan)), cols[0].data_type))
            }
            AstExpr::Exists { subquery, negated } => {
                let (plan, _) = self.bind_subquery(subquery, scope)?;
                Ok(Typed::known(Expr::Exists(Box::new(plan), *negated), DataType::Bool))
            }
            AstExpr::InSubquery { expr, subquery, negated } => {
                let x = self.bind_expr(expr, scope)?;
                let (plan, cols) = self.bind_subquery(subquery, scope)?;
                if cols.len() != 1 {
                    return Err(Error::SyntaxMisuse {
                        message: "subquery has too many columns".into(),
                        span: self.span_of(e),
                    });
                }
                let sub_ty = cols[0].data_type;
                let x = if x.unknown {
                    self.coerce(x, sub_ty, CastKind::Implicit, e)?
                } else if x.ty == sub_ty {
                    x.expr
                } else {
                    let ty = types::common_type(&x.ty, &sub_ty).ok_or_else(|| {
                        Error::UndefinedFunction {
                            name: format!("operator {} = {}", x.ty.base_name(), sub_ty.base_name()),
                            span: self.span_of(e),
                        }
                    })?;
                    // Compare in the common type: cast the left side; the subquery's values are
                    // compared with `types::compare`, which handles mixed numeric widths.
                    fold_cast(x.expr, x.ty, ty, CastKind::Implicit)?
                };
                Ok(Typed::known(
                    Expr::InSubquery(Box::new(x), Box::new(plan), *negated),
                    DataType::Bool,
                ))
            }
            AstExpr::Tuple(_) => Err(Error::unsupported("row constructors")),
            AstExpr::Collate { expr, collation } => {
                let t = self.bind_expr(expr, scope)?;
                if !t.unknown && !types::is_string(&t.ty) {
                    return Err(Error::DatatypeMismatch {
                        message: format!(
                            "collations are not supported by type {}",
                            t.ty.base_name()
                        ),
                        span: self.span_of(e),
                    });
                }
                check_collation(collation)?;
                Ok(t)
            }
            AstExpr::AtTimeZone { timestamp, time_zone } => {
                let t = self.bind_expr(timestamp, scope)?;
                let zone = self.bind_expr(time_zone, scope)?;
                self.at_time_zone(t, zone, e)
            }
            AstExpr::Extract { field, expr, .. } => {
                let t = self.bind_expr(expr, scope)?;
                let (t, _) = self.datetime_arg(t, "extract", e)?;
                let field = Expr::Literal(Value::Text(field.to_string().to_ascii_lowercase()));
                Ok(Typed::known(Expr::Func(Func::Extract, vec![field, t]), DataType::Numeric(None)))
            }
            AstExpr::Position { expr, r#in } => {
                let needle = self.bind_expr(expr, scope)?;
                let hay = self.bind_expr(r#in, scope)?;
                self.bind_position(needle, hay, e)
            }
            AstExpr::SimilarTo { .. } => Err(Error::unsupported("SIMILAR TO")),
            AstExpr::AnyOp { left, compare_op, right, .. } => {
                match any_all(left, compare_op, right, true)? {
                    Some(rewritten) => self.bind_expr(&rewritten, scope),
                    None => self.bind_any_all_array(left, compare_op, right, true, scope, e),
                }
            }
            AstExpr::AllOp { left, compare_op, right } => {
                match any_all(left, compare_op, right, false)? {
                    Some(rewritten) => self.bind_expr(&rewritten, scope),
                    None => self.bind_any_all_array(left, compare_op, right, false, scope, e),
                }
            }
            AstExpr::Interval(i) => self.bind_interval(i, e),
            AstExpr::Array(array) => self.bind_array_constructor(array, None, scope, e),
            AstExpr::CompoundFieldAccess { root, access_chain } => {
                self.bind_subscript(root, access_chain, scope, e)
            }
            other => Err(Error::Unsupported {
                feature: format!("expression {other}"),
                span: self.span_of(other),
            }),
        }
    }

    pub(super) fn text_expr(&mut self, t: Typed, node: &AstExpr) -> Result<Expr> {
        if t.unknown {
            return self.coerce(t, DataType::Text, CastKind::Implicit, node);
        }
        match t.ty {
            DataType::Text | DataType::Varchar(_) => Ok(t.expr),
            DataType::Char(_) => Ok(Expr::Func(
                Func::RTrim,
                vec![fold_cast(t.expr, t.ty, DataType::Text, CastKind::Implicit)?],
            )),
            other => Ok(fold_cast(t.expr, other, DataType::Text, CastKind::Explicit)?),
        }
    }

    fn bind_value(&mut self, v: &AstValue, node: &AstExpr) -> Result<Typed> {
        match v {
            AstValue::Number(n, _) => self.number(n),
            AstValue::SingleQuotedString(s)
            | AstValue::EscapedStringLiteral(s)
            | AstValue::UnicodeStringLiteral(s) => Ok(Typed {
                expr: Expr::Literal(Value::Text(s.clone())),
                ty: DataType::Text,
                unknown: true,
            }),
            AstValue::DollarQuotedString(d) => Ok(Typed {
                expr: Expr::Literal(Value::Text(d.value.clone())),
                ty: DataType::Text,
                unknown: true,
            }),
            AstValue::Boolean(b) => {
                Ok(Typed::known(Expr::Literal(Value::Bool(*b)), DataType::Bool))
            }
            AstValue::Null => {
                Ok(Typed { expr: Expr::Literal(Value::Null), ty: DataType::Text, unknown: true })
            }
            AstValue::Placeholder(p) => {
                let n: usize = p
                    .strip_prefix('$')
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n >= 1 && *n <= 65535)
                    .ok_or_else(|| Error::Syntax {
                        message: format!("syntax error at or near \"{p}\""),
                        span: self.span_of(node),
                    })?;
                let i = n - 1;
                if self.params.len() <= i {
                    self.params.resize(i + 1, None);
                }
                match self.params[i] {
                    Some(ty) => Ok(Typed::known(Expr::Param(i), ty)),
                    None => Ok(Typed { expr: Expr::Param(i), ty: DataType::Text, unknown: true }),
                }
            }
            AstValue::HexStringLiteral(h) => Ok(Typed {
                expr: Expr::Literal(Value::Text(format!("\\x{h}"))),
                ty: DataType::Text,
                unknown: true,
            }),
            other => Err(Error::unsupported(format!("literal {other}"))),
        }
    }

    /// Types a numeric literal as PostgreSQL does: int4, then int8, then numeric.
    fn number(&self, n: &str) -> Result<Typed> {
        if !n.contains(['.', 'e', 'E']) {
            if let Ok(i) = n.parse::<i32>() {
                return Ok(Typed::known(Expr::Literal(Value::Int32(i)), DataType::Int32));
            }
            if let Ok(i) = n.parse::<i64>() {
                return Ok(Typed::known(Expr::Literal(Value::Int64(i)), DataType::Int64));
            }
        }
        let ty = DataType::Numeric(None);
        Ok(Typed::known(Expr::Literal(types::parse_text(n, &ty)?), ty))
    }

    fn resolve_column(
        &mut self,
        rel: Option<&str>,
        name: &str,
        scope: &Scope,
        node: &AstExpr,
    ) -> Result<Typed> {
        let find = |s: &Scope| -> Result<Option<usize>> {
            let mut found = None;
            for (i, c) in s.visible() {
                let rel_ok = match rel {
                    None => !c.shadowed,
                    Some(r) => c.relation.as_deref() == Some(r),
                };
                if rel_ok && c.name == name {
                    if found.is_some() {
                        return Err(Error::AmbiguousColumn { name: name.to_string(), span: None });
                    }
                    found = Some(i);
                }
            }
            Ok(found)
        };
        let with_span = |e: Error| match e {
            Error::AmbiguousColumn { name, .. } => {
                Error::AmbiguousColumn { name, span: self.span_of(node) }
            }
            other => other,
        };
        if let Some(i) = find(scope).map_err(with_span)? {
            return Ok(Typed::known(Expr::Column(i), scope.columns[i].data_type));
        }
        for (depth, outer) in self.outer.iter().rev().enumerate() {
            if let Some(i) = find(outer).map_err(with_span)? {
                return Ok(Typed::known(
                    Expr::Outer { depth, index: i },
                    outer.columns[i].data_type,
                ));
            }
        }
        // Not a column at any level: a one-column function's relation name stands for its
        // column (PostgreSQL's whole-row reference), nearest level first.
        let whole_row = |s: &Scope| {
            s.visible()
                .find(|(_, c)| c.whole_row && c.relation.as_deref() == Some(name))
                .map(|(i, c)| (i, c.data_type))
        };
        if rel.is_none() {
            if let Some((i, ty)) = whole_row(scope) {
                return Ok(Typed::known(Expr::Column(i), ty));
            }
            for (depth, outer) in self.outer.iter().rev().enumerate() {
                if let Some((index, ty)) = whole_row(outer) {
                    return Ok(Typed::known(Expr::Outer { depth, index }, ty));
                }
            }
        }
        if let Some(r) = rel {
            let known = scope.columns.iter().any(|c| c.relation.as_deref() == Some(r))
                || self
                    .outer
                    .iter()
                    .any(|s| s.columns.iter().any(|c| c.relation.as_deref() == Some(r)));
            if !known {
                return Err(Error::MissingFromEntry {
                    table: r.to_string(),
                    span: self.span_of(node),
                });
            }
            return Err(Error::UndefinedColumn {
                name: format!("{r}.{name}"),
                span: self.span_of(node),
            });
        }
        // SQL-standard functions written without parentheses.
        let func = match name {
            "current_schema" => Some((Func::CurrentSchema, DataType::Text)),
            "current_user" | "session_user" | "user" => Some((Func::CurrentUser, DataType::Text)),
            "current_catalog" => Some((Func::CurrentDatabase, DataType::Text)),
            "current_date" => Some((Func::CurrentDate, DataType::Date)),
            "current_timestamp" => Some((Func::Now, DataType::TimestampTz)),
            "localtimestamp" => Some((Func::LocalTimestamp, DataType::Timestamp)),
            "localtime" if rel.is_none() => {
                let now = Expr::Func(Func::LocalTimestamp, vec![]);
                let expr = fold_cast(now, DataType::Timestamp, DataType::Time, CastKind::Explicit)?;
                return Ok(Typed::known(expr, DataType::Time));
            }
            "current_time" if rel.is_none() => {
                return Err(Error::Unsupported {
                    feature: "CURRENT_TIME (time with time zone; LOCALTIME is time)".into(),
                    span: self.span_of(node),
                })
            }
            _ => None,
        };
        if let (Some((f, ty)), None) = (func, rel) {
            return Ok(Typed::known(Expr::Func(f, vec![]), ty));
        }
        Err(Error::UndefinedColumn { name: format!("\"{name}\""), span: self.span_of(node) })
    }

    fn bind_binary(
        &mut self,
        left: &AstExpr,
        op: &BinaryOperator,
        right: &AstExpr,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        use BinaryOperator as B;
        match op {
            B::And | B::Or => {
                let l = self.bind_condition(
                    left,
                    scope,
                    if matches!(op, B::And) { "AND" } else { "OR" },
                )?;
                let r = self.bind_condition(
                    right,
                    scope,
                    if matches!(op, B::And) { "AND" } else { "OR" },
                )?;
                let out = if matches!(op, B::And) {
                    Expr::And(Box::new(l), Box::new(r))
                } else {
                    Expr::Or(Box::new(l), Box::new(r))
                };
                Ok(Typed::known(out, DataType::Bool))
            }
            B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq => {
                let cmp = match op {
                    B::Eq => CmpOp::Eq,
                    B::NotEq => CmpOp::NotEq,
                    B::Lt => CmpOp::Lt,
                    B::LtEq => CmpOp::LtEq,
                    B::Gt => CmpOp::Gt,
                    _ => CmpOp::GtEq,
                };
                let l = self.bind_expr(left, scope)?;
                let r = self.bind_expr(right, scope)?;
                let (l, r, _) = self.unify(l, r, e, &op.to_string())?;
                Ok(Typed::known(Expr::Cmp(cmp, Box::new(l), Box::new(r)), DataType::Bool))
            }
            B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo => {
                let aop = match op {
                    B::Plus => ArithOp::Add,
                    B::Minus => ArithOp::Sub,
                    B::Multiply => ArithOp::Mul,
                    B::Divide => ArithOp::Div,
                    _ => ArithOp::Mod,
                };
                let l = self.bind_expr(left, scope)?;
                let r = self.bind_expr(right, scope)?;
                if aop == ArithOp::Sub && super::jsonb::is_jsonb(&l) {
                    return self.bind_jsonb_delete(l, r, e);
                }
                self.arith(aop, l, r, e, &op.to_string())
            }
            B::StringConcat => {
                let l = self.bind_expr(left, scope)?;
                let r = self.bind_expr(right, scope)?;
                if let Some(t) = self.bind_array_operator(l.clone(), op, r.clone(), e)? {
                    return Ok(t);
                }
                let (lj, rj) = (super::jsonb::is_jsonb(&l), super::jsonb::is_jsonb(&r));
                if (lj && (rj || r.unknown)) || (rj && l.unknown) {
                    return self.bind_jsonb_concat(l, r, e);
                }
                let l = self.text_expr(l, e)?;
                let r = self.text_expr(r, e)?;
                Ok(Typed::known(Expr::Concat(Box::new(l), Box::new(r)), DataType::Text))
            }
            B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch => {
                let l = self.bind_expr(left, scope)?;
                let r = self.bind_expr(right, scope)?;
                let l = self.text_expr(l, e)?;
                let r = self.text_expr(r, e)?;
                let ci = matches!(op, B::PGRegexIMatch | B::PGRegexNotIMatch);
                let m = Expr::Func(Func::RegexMatch, vec![l, r, Expr::Literal(Value::Bool(ci))]);
                let negated = matches!(op, B::PGRegexNotMatch | B::PGRegexNotIMatch);
                Ok(Typed::known(if negated { Expr::Not(Box::new(m)) } else { m }, DataType::Bool))
            }
            // `x ^ y` is power(x, y).
            B::PGExp => {
                let l = self.bind_expr(left, scope)?;
                let r = self.bind_expr(right, scope)?;
                self.bind_builtin("power", vec![l, r], e)
            }
            B::AtArrow | B::ArrowAt | B::PGOverlap => {
                let l = self.bind_expr(left, scope)?;
                let r = self.bind_expr(right, scope)?;
                match self.bind_array_operator(l, op, r, e)? {
                    Some(t) => Ok(t),
                    None if *op == B::PGOverlap => Err(Error::Unsupported {
                        feature: format!("operator {op} on these types"),
                        span: self.span_of(e),
                    }),
                    None => self.bind_jsonb_operator(left, op, right, scope, e),
                }
            }
            B::Arrow
            | B::LongArrow
            | B::HashArrow
            | B::HashLongArrow
            | B::Question
            | B::QuestionAnd
            | B::QuestionPipe
            | B::HashMinus => self.bind_jsonb_operator(left, op, right, scope, e),
            other => Err(Error::Unsupported {
                feature: format!("operator {other}"),
                span: self.span_of(e),
            }),
        }
    }

    pub(crate) fn arith(
        &mut self,
        op: ArithOp,
        l: Typed,
        r: Typed,
        e: &AstExpr,
        sym: &str,
    ) -> Result<Typed> {
        // Unknown operands take the other side's type; two unknowns are numeric.
        let (l, r) = match (l.unknown, r.unknown) {
            (true, true) => {
                let ty = DataType::Numeric(None);
                let l = Typed::known(self.coerce(l, ty, CastKind::Implicit, e)?, ty);
                let r = Typed::known(self.coerce(r, ty, CastKind::Implicit, e)?, ty);
                (l, r)
            }
            (true, false) => {
                let ty = unknown_operand_type(op, &r.ty, false);
                (Typed::known(self.coerce(l, ty, CastKind::Implicit, e)?, ty), r)
            }
            (false, true) => {
                let ty = unknown_operand_type(op, &l.ty, true);
                let r2 = Typed::known(self.coerce(r, ty, CastKind::Implicit, e)?, ty);
                (l, r2)
            }
            (false, false) => (l, r),
        };
        // A timestamp with a timestamptz (or a date with a timestamp): the common type first.
        let (l, r) = match (op, types::common_type(&l.ty, &r.ty)) {
            (ArithOp::Sub, Some(ty))
                if l.ty != r.ty
                    && matches!(ty, DataType::Timestamp | DataType::TimestampTz)
                    && l.ty != DataType::Interval =>
            {
                let le = fold_cast(l.expr, l.ty, ty, CastKind::Implicit)?;
                let re = fold_cast(r.expr, r.ty, ty, CastKind::Implicit)?;
                (Typed::known(le, ty), Typed::known(re, ty))
            }
            _ => (l, r),
        };
        let Some(result) = types::arith_result_type(op, &l.ty, &r.ty) else {
            let name = format!("operator {} {sym} {}", l.ty.base_name(), r.ty.base_name());
            // PostgreSQL finds time + time ambiguous (time + interval and interval + time both
            // take it, time being implicitly an interval).
            if op == ArithOp::Add && l.ty == DataType::Time && r.ty == DataType::Time {
                return Err(Error::AmbiguousFunction { name, span: self.span_of(e) });
            }
            return Err(Error::UndefinedFunction { name, span: self.span_of(e) });
        };
        // Bring both operands to the operation type (date and time operands keep theirs).
        let op_ty = if types::is_datetime_op(&l.ty, &r.ty) { None } else { Some(result) };
        let (le, re) = match op_ty {
            Some(t) => (
                if l.ty == t { l.expr } else { fold_cast(l.expr, l.ty, t, CastKind::Implicit)? },
                if r.ty == t { r.expr } else { fold_cast(r.expr, r.ty, t, CastKind::Implicit)? },
            ),
            None => (l.expr, r.expr),
        };
        Ok(Typed::known(Expr::Arith(op, Box::new(le), Box::new(re)), result))
    }

    fn bind_case(
        &mut self,
        operand: Option<&AstExpr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&AstExpr>,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let mut whens = Vec::new();
        let mut results = Vec::new();
        for cw in conditions {
            let cond = match operand {
                Some(op) => {
                    let l = self.bind_expr(op, scope)?;
                    let r = self.bind_expr(&cw.condition, scope)?;
                    let (l, r, _) = self.unify(l, r, e, "=")?;
                    Expr::Cmp(CmpOp::Eq, Box::new(l), Box::new(r))
                }
                None => self.bind_condition(&cw.condition, scope, "CASE/WHEN")?,
            };
            whens.push(cond);
            results.push(self.bind_expr(&cw.result, scope)?);
        }
        let else_t = else_result.map(|x| self.bind_expr(x, scope)).transpose()?;
        // PostgreSQL resolves the ELSE result first, then the THEN results in order.
        let all: Vec<&Typed> = else_t.iter().chain(results.iter()).collect();
        let ty = self.common_of(&all, e, "CASE")?;
        let mut arms = Vec::new();
        for (w, r) in whens.into_iter().zip(results) {
            arms.push((w, self.coerce(r, ty, CastKind::Implicit, e)?));
        }
        let else_e = else_t.map(|t| self.coerce(t, ty, CastKind::Implicit, e)).transpose()?;
        Ok(Typed::known(Expr::Case(arms, else_e.map(Box::new)), ty))
    }

    /// `GROUPING(a, b, …)` in a grouped query: an aggregate of the query's aggregation whose
    /// arguments must be its group keys (checked once they are known, in `bind_select`).
    fn bind_grouping(
        &mut self,
        f: &ast::Function,
        args: &[&AstExpr],
        distinct_or_star: bool,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        if distinct_or_star || f.filter.is_some() || agg_order_by(f).is_some() || args.is_empty() {
            return Err(Error::Syntax {
                message: "syntax error in GROUPING".into(),
                span: self.span_of(e),
            });
        }
        if args.len() > 31 {
            return Err(Error::TooManyArguments {
                message: "GROUPING must have fewer than 32 arguments".into(),
            });
        }
        if self.aggs.is_none() {
            return Err(Error::Grouping {
                message: "grouping operations are not allowed here".into(),
                span: self.span_of(e),
            });
        }
        let grouping = args
            .iter()
            .map(|a| self.bind_expr(a, scope).map(|t| t.expr))
            .collect::<Result<Vec<_>>>()?;
        let call = AggCall {
            func: AggFunc::Grouping,
            arg: None,
            distinct: false,
            data_type: DataType::Int32,
            delimiter: None,
            filter: None,
            order_by: Vec::new(),
            grouping,
        };
        let aggs = self.aggs.as_mut().expect("checked above");
        let index = match aggs.iter().position(|a| *a == call) {
            Some(i) => i,
            None => {
                aggs.push(call);
                aggs.len() - 1
            }
        };
        Ok(Typed::known(Expr::Agg(index), DataType::Int32))
    }

    pub(super) fn common_of(&self, items: &[&Typed], e: &AstExpr, what: &str) -> Result<DataType> {
        let mut ty: Option<DataType> = None;
        for t in items.iter().filter(|t| !t.unknown) {
            ty = Some(match ty {
                None => t.ty,
                Some(cur) if cur == t.ty => cur,
                Some(cur) => {
                    types::common_type(&cur, &t.ty).ok_or_else(|| Error::DatatypeMismatch {
                        message: format!(
                            "{what} types {} and {} cannot be matched",
                            cur.base_name(),
                            t.ty.base_name()
                        ),
                        span: self.span_of(e),
                    })?
                }
            });
        }
        Ok(ty.map_or(DataType::Text, |ty| without_literal_lengths(ty, items)))
    }

    fn numeric_func(&mut self, func: Func, mut args: Vec<Typed>, e: &AstExpr) -> Result<Typed> {
        let first = args.remove(0);
        let first = if first.unknown {
            // PostgreSQL's preferred numeric type for an untyped argument is float8; only
            // round / trunc with a scale have no float variant.
            let with_scale = matches!(func, Func::Round | Func::Trunc) && !args.is_empty();
            let ty = if with_scale { DataType::Numeric(None) } else { DataType::Float64 };
            Typed::known(self.coerce(first, ty, CastKind::Implicit, e)?, ty)
        } else {
            first
        };
        if !is_numeric(&first.ty) {
            return Err(Error::UndefinedFunction {
                name: format!("function {}({})", func_name(func), first.ty.base_name()),
                span: self.span_of(e),
            });
        }
        // round / trunc with a scale exist for numeric only, which a float does not become
        // implicitly (PostgreSQL: 42883).
        if matches!(func, Func::Round | Func::Trunc)
            && !args.is_empty()
            && matches!(first.ty, DataType::Float32 | DataType::Float64)
        {
            let mut all = vec![first];
            all.append(&mut args);
            return Err(self.no_function(func_name(func), &all, e));
        }
        // floor/ceil/round of an integer go through numeric (PostgreSQL picks numeric or float8).
        let ty = match (func, first.ty) {
            (
                Func::Round | Func::Trunc | Func::Floor | Func::Ceil,
                DataType::Int16 | DataType::Int32 | DataType::Int64,
            ) => DataType::Float64,
            (Func::Round | Func::Trunc | Func::Floor | Func::Ceil, DataType::Float32) => {
                DataType::Float64
            }
            (Func::Round | Func::Trunc | Func::Floor | Func::Ceil, DataType::Numeric(_)) => {
                DataType::Numeric(None)
            }
            (_, t) => t,
        };
        let x = if first.ty == ty {
            first.expr
        } else {
            fold_cast(first.expr, first.ty, ty, CastKind::Implicit)?
        };
        let mut out = vec![x];
        for a in args {
            out.push(self.coerce(a, DataType::Int32, CastKind::Implicit, e)?);
        }
        if matches!(func, Func::Round | Func::Trunc)
            && out.len() == 2
            && !matches!(ty, DataType::Numeric(_))
        {
            let x = out.remove(0);
            out.insert(0, fold_cast(x, ty, DataType::Numeric(None), CastKind::Implicit)?);
            return Ok(Typed::known(Expr::Func(func, out), DataType::Numeric(None)));
        }
        Ok(Typed::known(Expr::Func(func, out), ty))
    }

    /// `to_regclass(name)`: the relation's name if `name` (read as `regclass` reads text) names
    /// one — a table, view, index or sequence — else NULL (never an error). Aspen has no
    /// `regclass` type: the result is the name as text, which prints as PostgreSQL prints the
    /// regclass. Resolved when bound, from the statement's catalog (a schema change binds the
    /// statement again), so the argument must be a constant.
    fn bind_to_regclass(&mut self, args: &[&AstExpr], scope: &Scope, e: &AstExpr) -> Result<Typed> {
        let [arg] = args else {
            return Err(self.wrong_arg_count("to_regclass", args.len(), e));
        };
        let Some(text) = self.constant_text(arg, scope, "to_regclass of a name")? else {
            return Ok(Typed::known(Expr::Literal(Value::Null), DataType::Text));
        };
        let found = self.regclass(&text)?;
        let value = found.map_or(Value::Null, |n| Value::Text(super::display_ident(&n)));
        Ok(Typed::known(Expr::Literal(value), DataType::Text))
    }

    /// A function argument that must be a constant string, as bound (`None` for NULL);
    /// `0A000` naming `what` otherwise.
    fn constant_text(
        &mut self,
        arg: &AstExpr,
        scope: &Scope,
        what: &str,
    ) -> Result<Option<String>> {
        match self.bind_expr(arg, scope)?.expr {
            Expr::Literal(Value::Text(s)) => Ok(Some(s)),
            Expr::Literal(Value::Null) => Ok(None),
            _ => Err(Error::Unsupported {
                feature: format!("{what} that is not a constant"),
                span: self.span_of(arg),
            }),
        }
    }

    /// The relation — table, view, index or sequence — that `text` names as `regclass` input
    /// reads it (folded unless quoted, optionally qualified), if there is one.
    fn regclass(&self, text: &str) -> Result<Option<String>> {
        // An unquoted name cannot hold spaces; more than three parts is no relation name.
        let unquoted_space = !text.contains('"') && text.trim().contains(char::is_whitespace);
        if text.split('.').count() > 3 && !text.contains('"') {
            return Err(Error::Syntax {
                message: format!("improper relation name (too many dotted names): {text}"),
                span: None,
            });
        }
        let Some(name) = relation_name(text).filter(|_| !unquoted_space) else {
            return Err(Error::InvalidName { message: "invalid name syntax".into() });
        };
        Ok(Some(name).filter(|n| {
            self.snapshot.relation_exists(n)
                || self.snapshot.index_by_name(n).is_some()
                || self.snapshot.sequence(n).is_some()
        }))
    }

    /// `42883` for a function called with a number of arguments it has no form for.
    fn wrong_arg_count(&self, name: &str, n: usize, e: &AstExpr) -> Error {
        Error::UndefinedFunction {
            name: format!("function {name} with {n} arguments"),
            span: self.span_of(e),
        }
    }

    /// An OID or number argument of catalog function `name` (Aspen's OIDs are bigints), as a
    /// bigint; `42883` for another type.
    fn oid_arg(&mut self, name: &str, a: &AstExpr, scope: &Scope, e: &AstExpr) -> Result<Expr> {
        let t = self.bind_expr(a, scope)?;
        if !matches!(t.ty, DataType::Int16 | DataType::Int32 | DataType::Int64) && !t.unknown {
            return Err(self.no_function(name, &[t], e));
        }
        self.coerce_implicit(t, DataType::Int64, e)
    }

    /// `pg_table_is_visible(oid)`: true for a relation `pg_class` lists (each is in `public`,
    /// on the search path), NULL for an OID that names none, as PostgreSQL answers for an OID
    /// it does not know. The OIDs are the statement's catalog's, taken when it is bound.
    fn bind_table_is_visible(
        &mut self,
        args: &[&AstExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let [arg] = args else {
            return Err(self.wrong_arg_count("pg_table_is_visible", args.len(), e));
        };
        let oid = self.oid_arg("pg_table_is_visible", arg, scope, e)?;
        let oids = crate::describe::relation_oids(self.snapshot)
            .into_iter()
            .map(|o| Expr::Literal(Value::Int64(o.into())))
            .collect();
        let known = Expr::InList(Box::new(oid), oids, false);
        Ok(Typed::known(
            Expr::Case(vec![(known, Expr::Literal(Value::Bool(true)))], None),
            DataType::Bool,
        ))
    }

    /// `obj_description(oid [, catalog])` and `col_description(oid, attnum)`: the comment
    /// COMMENT ON gave a relation or a column (`pg_description`), NULL where there is none —
    /// also for an object of another catalog than `pg_class`, where Aspen keeps no comments.
    /// The catalog name must be a constant. The comments are the statement's catalog's, taken
    /// when it is bound (a COMMENT binds the statement again).
    fn bind_description(
        &mut self,
        name: &str,
        args: &[&AstExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let column = name == "col_description";
        if args.is_empty() || args.len() > 2 || (column && args.len() != 2) {
            return Err(self.wrong_arg_count(name, args.len(), e));
        }
        let mut bound = Vec::with_capacity(2);
        for a in &args[..if column { 2 } else { 1 }] {
            bound.push(self.oid_arg(name, a, scope, e)?);
        }
        if !column && args.len() == 2 {
            let catalog = self.constant_text(args[1], scope, "obj_description of a catalog")?;
            if catalog.as_deref() != Some("pg_class") {
                return Ok(Typed::known(Expr::Literal(Value::Null), DataType::Text));
            }
        }
        let mut entries = Vec::new();
        for t in self.snapshot.tables() {
            let oid = i64::from(t.id.oid());
            if !column {
                entries.extend(t.comment.iter().map(|c| (vec![oid], c.clone())));
                continue;
            }
            for (position, c) in &t.column_comments {
                entries.push((vec![oid, i64::from(*position) + 1], c.clone()));
            }
        }
        Ok(catalog_lookup(&bound, entries))
    }

    /// `pg_get_indexdef(oid)` and `pg_get_indexdef(oid, column, pretty)`: an index's CREATE
    /// INDEX statement (column 0), or its nth key column's name (empty past the last); NULL
    /// for an OID of no index.
    /// `pretty` must be a constant. The definitions are the statement's catalog's, taken when
    /// it is bound.
    fn bind_indexdef(&mut self, args: &[&AstExpr], scope: &Scope, e: &AstExpr) -> Result<Typed> {
        if args.len() != 1 && args.len() != 3 {
            return Err(self.wrong_arg_count("pg_get_indexdef", args.len(), e));
        }
        let mut bound = Vec::with_capacity(2);
        for a in &args[..args.len().min(2)] {
            bound.push(self.oid_arg("pg_get_indexdef", a, scope, e)?);
        }
        let Some(pretty) = self.pretty_flag("pg_get_indexdef", args.get(2), scope)? else {
            return Ok(Typed::known(Expr::Literal(Value::Null), DataType::Text));
        };
        let mut entries = Vec::new();
        for (oid, def, columns) in crate::describe::index_definitions(self.snapshot, pretty) {
            let oid = i64::from(oid);
            if bound.len() == 1 {
                entries.push((vec![oid], def));
                continue;
            }
            entries.push((vec![oid, 0], def));
            for (n, name) in columns.into_iter().enumerate() {
                entries.push((vec![oid, n as i64 + 1], name));
            }
            // A column number past the key: an empty string, as PostgreSQL prints.
            entries.push((vec![oid], String::new()));
        }
        Ok(catalog_lookup(&bound, entries))
    }

    /// The `pretty` argument of catalog function `name`: false when absent, `None` for NULL
    /// (the function's result is then NULL); it must be a constant (0A000).
    fn pretty_flag(
        &mut self,
        name: &str,
        arg: Option<&&AstExpr>,
        scope: &Scope,
    ) -> Result<Option<bool>> {
        let Some(a) = arg else { return Ok(Some(false)) };
        match self.bind_expr(a, scope)?.expr {
            Expr::Literal(Value::Bool(p)) => Ok(Some(p)),
            Expr::Literal(Value::Null) => Ok(None),
            _ => Err(Error::Unsupported {
                feature: format!("{name} with a pretty flag that is not a constant"),
                span: self.span_of(*a),
            }),
        }
    }

    /// `pg_get_constraintdef(oid [, pretty])`: a `pg_constraint` row's definition (`FOREIGN
    /// KEY (a) REFERENCES t(id)`, `CHECK ((n > 0))`), NULL for an OID of no constraint.
    /// `pretty` must be a constant; the definitions are the statement's catalog's.
    fn bind_constraintdef(
        &mut self,
        args: &[&AstExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        if args.is_empty() || args.len() > 2 {
            return Err(self.wrong_arg_count("pg_get_constraintdef", args.len(), e));
        }
        let oid = self.oid_arg("pg_get_constraintdef", args[0], scope, e)?;
        let Some(pretty) = self.pretty_flag("pg_get_constraintdef", args.get(1), scope)? else {
            return Ok(Typed::known(Expr::Literal(Value::Null), DataType::Text));
        };
        let entries = crate::describe::constraints(self.snapshot)
            .iter()
            .map(|c| (vec![i64::from(c.oid)], c.def(self.snapshot, pretty)))
            .collect::<Vec<_>>();
        Ok(catalog_lookup(&[oid], entries))
    }

    /// `has_table_privilege(table, privileges)`: true — Aspen's one role owns everything —
    /// once the table exists (42P01) and every privilege named is one a table has (22023),
    /// as PostgreSQL checks them. Both arguments must be constants: resolved when bound.
    fn bind_has_table_privilege(
        &mut self,
        args: &[&AstExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let [table, privileges] = args else {
            return Err(self.wrong_arg_count("has_table_privilege", args.len(), e));
        };
        let mut texts = Vec::with_capacity(2);
        for a in [table, privileges] {
            match self.constant_text(a, scope, "has_table_privilege of an argument")? {
                Some(s) => texts.push(s),
                None => return Ok(Typed::known(Expr::Literal(Value::Null), DataType::Bool)),
            }
        }
        if self.regclass(&texts[0])?.is_none() {
            return Err(Error::UndefinedTable { name: texts[0].clone(), span: None });
        }
        const PRIVILEGES: &[&str] =
            &["select", "insert", "update", "delete", "truncate", "references", "trigger"];
        for chunk in texts[1].split(',').map(str::trim) {
            let lower = chunk.to_ascii_lowercase();
            let p = lower.strip_suffix(" with grant option").map_or(lower.as_str(), str::trim_end);
            if !PRIVILEGES.contains(&p) {
                return Err(Error::InvalidParameterValue {
                    message: format!("unrecognized privilege type: \"{chunk}\""),
                });
            }
        }
        Ok(Typed::known(Expr::Literal(Value::Bool(true)), DataType::Bool))
    }

    /// `pg_get_serial_sequence(table, column)`: the schema-qualified, quoted name of the
    /// sequence a serial or identity column owns (NULL for other columns), which a loader
    /// passes to `setval`. The table name is read as SQL reads one (folded unless quoted), the
    /// column name literally, as PostgreSQL does. Its arguments must be constant strings (or
    /// NULL, which gives NULL): the answer is the catalog's at bind time, and a statement is
    /// bound again when the catalog changes.
    fn bind_serial_sequence(&mut self, args: &[&AstExpr], e: &AstExpr) -> Result<Typed> {
        let [table, column] = args else {
            return Err(self.wrong_arg_count("pg_get_serial_sequence", args.len(), e));
        };
        let constant = |a: &AstExpr| match a {
            AstExpr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                    Ok(Some(s.clone()))
                }
                ast::Value::Null => Ok(None),
                _ => Err(()),
            },
            _ => Err(()),
        };
        let (Ok(table), Ok(column)) = (constant(table), constant(column)) else {
            return Err(Error::Unsupported {
                feature: "pg_get_serial_sequence of arguments that are not constant strings".into(),
                span: self.span_of(e),
            });
        };
        let null = Typed::known(Expr::Literal(Value::Null), DataType::Text);
        let (Some(table), Some(column)) = (table, column) else { return Ok(null) };
        let relation = relation_name(&table).ok_or_else(|| Error::InvalidParameterValue {
            message: format!("invalid name syntax: \"{table}\""),
        })?;
        let Some(found) = self.snapshot.table(&relation) else {
            return Err(Error::UndefinedTable { name: relation, span: None });
        };
        let Some(col) = found.column(&column) else {
            return Err(Error::UndefinedColumn {
                name: format!("\"{column}\" of relation \"{}\"", found.name),
                span: None,
            });
        };
        let owned = col.sequence.as_ref().filter(|s| s.generated != catalog::Generated::Standalone);
        Ok(match owned {
            Some(seq) => Typed::known(
                Expr::Literal(Value::Text(format!("public.{}", super::display_ident(&seq.name)))),
                DataType::Text,
            ),
            None => null,
        })
    }

    /// `nextval('name')`, `currval('name')`, `setval('name', value [, is_called])`. The name is
    /// a string constant (as in PostgreSQL, usually cast to `regclass`), resolved now to the
    /// column that owns the sequence.
    fn bind_sequence_function(
        &mut self,
        name: &str,
        args: &[&AstExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let arity_ok = match name {
            "setval" => matches!(args.len(), 2 | 3),
            _ => args.len() == 1,
        };
        if !arity_ok {
            return Err(self.wrong_arg_count(name, args.len(), e));
        }
        let mut target = args[0];
        if let AstExpr::Cast { expr, data_type, .. } = target {
            let regclass = matches!(data_type, ast::DataType::Regclass)
                || matches!(data_type, ast::DataType::Custom(n, m)
                    if m.is_empty() && n.to_string().eq_ignore_ascii_case("regclass"));
            if regclass || matches!(data_type, ast::DataType::Text) {
                target = expr;
            }
        }
        let not_constant = |b: &Self| Error::Unsupported {
            feature: format!("{name} of a sequence name that is not a constant"),
            span: b.span_of(target),
        };
        let text = match target {
            AstExpr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                    s.clone()
                }
                _ => {
                    return Err(Error::Unsupported {
                        feature: format!("{name} of a sequence name that is not a string"),
                        span: self.span_of(target),
                    })
                }
            },
            // A name computed at bind time: `setval(pg_get_serial_sequence('t', 'c'), n)`.
            other => match self.bind_expr(other, scope)?.expr {
                Expr::Literal(Value::Text(s)) => s,
                _ => return Err(not_constant(self)),
            },
        };
        let relation = relation_name(&text).ok_or_else(|| Error::InvalidParameterValue {
            message: format!("invalid name syntax: \"{text}\""),
        })?;
        let span = self.span_of(target);
        let (table, column) = match self.snapshot.sequence(&relation) {
            Some(found) => found,
            None if self.snapshot.relation_exists(&relation) => {
                return Err(Error::WrongObjectType {
                    message: format!("\"{relation}\" is not a sequence"),
                })
            }
            None => return Err(Error::UndefinedTable { name: relation, span }),
        };
        let mut out = vec![
            Expr::Literal(Value::Int64(i64::from(table.id.0))),
            Expr::Literal(Value::Int64(i64::from(column.position))),
        ];
        let func = match name {
            "nextval" => Func::NextVal,
            "currval" => Func::CurrVal,
            _ => {
                let value = self.bind_expr(args[1], scope)?;
                out.push(self.coerce(value, DataType::Int64, CastKind::Implicit, e)?);
                let called = match args.get(2) {
                    Some(a) => {
                        let t = self.bind_expr(a, scope)?;
                        self.coerce(t, DataType::Bool, CastKind::Implicit, e)?
                    }
                    None => Expr::Literal(Value::Bool(true)),
                };
                out.push(called);
                Func::SetVal
            }
        };
        Ok(Typed::known(Expr::Func(func, out), DataType::Int64))
    }

    /// `name(args) OVER (PARTITION BY … ORDER BY …)` in a SELECT list or its ORDER BY:
    /// collected into `self.windows`, and read as the column the window node adds.
    fn bind_window(
        &mut self,
        name: &str,
        f: &ast::Function,
        over: &ast::WindowType,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let Some((base, _)) = &self.windows else {
            return Err(Error::Windowing {
                message: "window functions are not allowed here".into(),
            });
        };
        let base = *base;
        let spec = match over {
            ast::WindowType::WindowSpec(spec) => self.resolve_window(spec)?,
            ast::WindowType::NamedWindow(w) => self.named_window(w)?.clone(),
        };
        let spec = &spec;
        if agg_order_by(f).is_some() {
            return Err(Error::unsupported_msg(
                "aggregate ORDER BY is not implemented for window functions",
            ));
        }
        let (frame, range_offsets) = match &spec.window_frame {
            Some(f) => self.bind_frame(f)?,
            None => (None, [None, None]),
        };
        if frame.is_some_and(|f| f.units == crate::plan::FrameUnits::Groups)
            && spec.order_by.is_empty()
        {
            return Err(Error::Windowing {
                message: "GROUPS mode requires an ORDER BY clause".into(),
            });
        }
        let (distinct, star, args) = call_args(f, name)?;
        if distinct {
            return Err(Error::unsupported_msg("DISTINCT is not implemented for window functions"));
        }
        // The call's own expressions are row expressions: no aggregates, no nested windows.
        // Aggregates in the call (`rank() OVER (ORDER BY count(*))`) belong to the query,
        // which then is grouped: `self.aggs` stays the query's.
        let saved_windows = self.windows.take();
        type Bound = (crate::plan::WindowFunc, DataType, Vec<Expr>, Vec<SortKey>, Option<DataType>);
        let bound = (|| -> Result<Bound> {
            use crate::plan::WindowFunc as W;
            let (func, ty) = match (name, args.len(), star) {
                ("lag" | "lead", 1..=3, false) => {
                    let value = self.bind_expr(args[0], scope)?;
                    let default = args.get(2).map(|a| self.bind_expr(a, scope)).transpose()?;
                    // The value (or else the default) decides the polymorphic type; an
                    // untyped literal decides nothing, as in PostgreSQL.
                    let ty = match (value.unknown, &default) {
                        (false, _) => value.ty,
                        (true, Some(d)) if !d.unknown => d.ty,
                        (true, _) => {
                            return Err(Error::DatatypeMismatch {
                                message: "could not determine polymorphic type because input has type unknown".into(),
                                span: self.span_of(e),
                            })
                        }
                    };
                    let value = self.coerce(value, ty, CastKind::Implicit, e)?;
                    let offset = match args.get(1) {
                        None => 1,
                        Some(a) => match self.bind_expr_as(
                            a,
                            scope,
                            DataType::Int64,
                            CastKind::Implicit,
                        )? {
                            Expr::Literal(Value::Int64(n)) => n,
                            _ => {
                                return Err(Error::unsupported(format!(
                                    "{name} with an offset that is not a constant"
                                )))
                            }
                        },
                    };
                    let default = match (default, args.get(2)) {
                        (Some(d), Some(a)) => self.coerce(d, ty, CastKind::Implicit, a)?,
                        _ => Expr::Literal(Value::Null),
                    };
                    (W::Shift { lead: name == "lead", value, offset, default }, ty)
                }
                ("row_number", 0, false) => (W::RowNumber, DataType::Int64),
                ("rank", 0, false) => (W::Rank, DataType::Int64),
                ("dense_rank", 0, false) => (W::DenseRank, DataType::Int64),
                ("percent_rank", 0, false) => (W::PercentRank, DataType::Float64),
                ("cume_dist", 0, false) => (W::CumeDist, DataType::Float64),
                ("ntile", 1, false) => {
                    let n =
                        self.bind_expr_as(args[0], scope, DataType::Int32, CastKind::Implicit)?;
                    (W::NTile(n), DataType::Int32)
                }
                ("first_value" | "last_value" | "nth_value", 1 | 2, false)
                    if (args.len() == 2) == (name == "nth_value") =>
                {
                    let value = self.bind_expr(args[0], scope)?;
                    if value.unknown {
                        return Err(Error::DatatypeMismatch {
                            message: "could not determine polymorphic type because input has type unknown".into(),
                            span: self.span_of(e),
                        });
                    }
                    let ty = value.ty;
                    let func = match name {
                        "first_value" => W::FirstValue(value.expr),
                        "last_value" => W::LastValue(value.expr),
                        _ => {
                            let n = self.bind_expr_as(
                                args[1],
                                scope,
                                DataType::Int32,
                                CastKind::Implicit,
                            )?;
                            W::NthValue(value.expr, n)
                        }
                    };
                    (func, ty)
                }
                (
                    "count" | "sum" | "avg" | "min" | "max" | "variance" | "var_samp" | "var_pop"
                    | "stddev" | "stddev_samp" | "stddev_pop",
                    _,
                    _,
                ) => {
                    let agg = match (name, star) {
                        ("count", true) => AggFunc::CountStar,
                        ("count", false) => AggFunc::Count,
                        ("sum", _) => AggFunc::Sum,
                        ("avg", _) => AggFunc::Avg,
                        ("min", _) => AggFunc::Min,
                        ("max", _) => AggFunc::Max,
                        ("variance" | "var_samp", _) => AggFunc::VarSamp,
                        ("var_pop", _) => AggFunc::VarPop,
                        ("stddev" | "stddev_samp", _) => AggFunc::StddevSamp,
                        _ => AggFunc::StddevPop,
                    };
                    // The window aggregate is collected on its own; aggregates in its argument
                    // (`sum(count(*)) OVER ()`) are the query's.
                    self.window_arg_aggs = self.aggs.replace(Vec::new());
                    let filter = f.filter.as_deref();
                    let call =
                        self.bind_aggregate(agg, false, &args, filter, Vec::new(), scope, e, name);
                    let mine = std::mem::replace(&mut self.aggs, self.window_arg_aggs.take());
                    let call = call.and_then(|_| {
                        mine.and_then(|mut a| a.pop())
                            .ok_or_else(|| Error::internal("window aggregate not collected"))
                    })?;
                    let ty = call.data_type;
                    (W::Aggregate(call), ty)
                }
                _ => {
                    return Err(Error::unsupported(format!("window function {name}")));
                }
            };
            let partition_by = spec
                .partition_by
                .iter()
                .map(|p| self.bind_expr(p, scope).map(|t| t.expr))
                .collect::<Result<Vec<_>>>()?;
            let mut order_by = Vec::new();
            let mut key_type = None;
            for ob in &spec.order_by {
                let desc = matches!(ob.options.sort, Some(ast::OrderBySort::Desc));
                let nulls_first = ob.options.nulls_first.unwrap_or(desc);
                let key = self.bind_expr(&ob.expr, scope)?;
                key_type.get_or_insert(key.ty);
                order_by.push(SortKey { expr: key.expr, desc, nulls_first });
            }
            Ok((func, ty, partition_by, order_by, key_type))
        })();
        self.windows = saved_windows;
        let (func, ty, partition_by, order_by, key_type) = bound?;
        let range_offsets = if range_offsets.iter().any(Option::is_some) {
            // Repeated keys count once (`ORDER BY x, x`), as in PostgreSQL.
            if order_by.iter().any(|k| k.expr != order_by[0].expr) || order_by.is_empty() {
                return Err(Error::Windowing {
                    message: "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY \
                              column"
                        .into(),
                });
            }
            let key_type = key_type.expect("one ORDER BY key");
            let [start, end] = range_offsets;
            [
                start.map(|(t, a)| self.range_offset(t, key_type, a, "starting")).transpose()?,
                end.map(|(t, a)| self.range_offset(t, key_type, a, "ending")).transpose()?,
            ]
        } else {
            [None, None]
        };
        let calls = &mut self.windows.as_mut().expect("checked above").1;
        calls.push(crate::plan::WindowCall { func, partition_by, order_by, frame, range_offsets });
        Ok(Typed::known(Expr::Column(base + calls.len() - 1), ty))
    }

    /// The WINDOW clause's definition of `w` (`42704` if there is none).
    fn named_window(&self, w: &ast::Ident) -> Result<&ast::WindowSpec> {
        let name = super::ident(w);
        self.named_windows.iter().rev().find(|(n, _)| *n == name).map(|(_, s)| s).ok_or_else(|| {
            Error::UndefinedObject { message: format!("window \"{name}\" does not exist") }
        })
    }

    /// A window specification with the named window it starts from (`OVER (w ORDER BY …)`)
    /// folded in, by PostgreSQL's rules: the new one may add ORDER BY if `w` has none, and a
    /// frame, but not PARTITION BY, and `w` must have no frame (`42P20` otherwise).
    pub(super) fn resolve_window(&self, spec: &ast::WindowSpec) -> Result<ast::WindowSpec> {
        let Some(w) = &spec.window_name else { return Ok(spec.clone()) };
        let name = super::ident(w);
        let base = self.named_window(w)?;
        let refuse = |message: String| Err(Error::Windowing { message });
        if !spec.partition_by.is_empty() {
            return refuse(format!("cannot override PARTITION BY clause of window \"{name}\""));
        }
        if !spec.order_by.is_empty() && !base.order_by.is_empty() {
            return refuse(format!("cannot override ORDER BY clause of window \"{name}\""));
        }
        if base.window_frame.is_some() {
            return refuse(format!("cannot copy window \"{name}\" because it has a frame clause"));
        }
        let mut out = base.clone();
        if !spec.order_by.is_empty() {
            out.order_by = spec.order_by.clone();
        }
        out.window_frame = spec.window_frame.clone();
        Ok(out)
    }

    /// A frame clause: ROWS and GROUPS with any bounds, RANGE with UNBOUNDED / CURRENT ROW
    /// bounds and offsets; the bound combinations PostgreSQL's grammar refuses are `42P20`, and
    /// so is GROUPS without ORDER BY (checked by the caller). The default frame is `None`. A
    /// RANGE offset comes back bound but not yet typed: its type follows the ORDER BY key
    /// ([`Binder::range_offset`]).
    #[allow(clippy::type_complexity)]
    fn bind_frame<'e>(
        &mut self,
        f: &'e ast::WindowFrame,
    ) -> Result<(Option<crate::plan::Frame>, [Option<(Typed, &'e AstExpr)>; 2])> {
        use crate::plan::{Frame, FrameBound as B, FrameUnits as U};
        use ast::WindowFrameBound as A;
        let units = match f.units {
            ast::WindowFrameUnits::Rows => U::Rows,
            ast::WindowFrameUnits::Range => U::Range,
            ast::WindowFrameUnits::Groups => U::Groups,
        };
        let refuse = |message: &str| Err(Error::Windowing { message: message.into() });
        let mut range_offsets = [None, None];
        let mut bound = |b: &'e A, which: &str| -> Result<B> {
            let mut offset = |b: &mut Self, e: &'e AstExpr, which: &str| -> Result<i64> {
                // sqlparser reads a quoted offset (`'1' PRECEDING`) as an interval literal;
                // PostgreSQL reads it as an untyped literal, which the key's type decides. An
                // explicit `INTERVAL '1'` looks the same, so it is read that way too.
                let e = match e {
                    AstExpr::Interval(i)
                        if i.leading_field.is_none()
                            && i.last_field.is_none()
                            && i.leading_precision.is_none()
                            && i.fractional_seconds_precision.is_none()
                            && matches!(
                                &*i.value,
                                AstExpr::Value(v)
                                    if matches!(v.value, ast::Value::SingleQuotedString(_))
                            ) =>
                    {
                        &*i.value
                    }
                    other => other,
                };
                if units == U::Range {
                    let t = b.bind_expr(e, &Scope::default())?;
                    range_offsets[usize::from(which == "ending")] = Some((t, e));
                    return Ok(0);
                }
                match b.bind_expr_as(e, &Scope::default(), DataType::Int64, CastKind::Implicit)? {
                    Expr::Literal(Value::Int64(n)) => Ok(n),
                    Expr::Literal(Value::Null) => Err(Error::DataException {
                        message: format!("frame {which} offset must not be null"),
                        sqlstate: "22004",
                    }),
                    _ => Err(Error::unsupported("a frame offset that is not a constant")),
                }
            };
            Ok(match b {
                A::CurrentRow => B::CurrentRow,
                A::Preceding(None) => B::UnboundedPreceding,
                A::Following(None) => B::UnboundedFollowing,
                A::Preceding(Some(e)) => B::Preceding(offset(self, e, which)?),
                A::Following(Some(e)) => B::Following(offset(self, e, which)?),
            })
        };
        let start = bound(&f.start_bound, "starting")?;
        let end = match &f.end_bound {
            Some(e) => bound(e, "ending")?,
            None => B::CurrentRow,
        };
        match (start, end) {
            (B::UnboundedFollowing, _) => {
                return refuse("frame start cannot be UNBOUNDED FOLLOWING")
            }
            (_, B::UnboundedPreceding) => return refuse("frame end cannot be UNBOUNDED PRECEDING"),
            (B::CurrentRow, B::Preceding(_)) => {
                return refuse("frame starting from current row cannot have preceding rows")
            }
            (B::Following(_), B::Preceding(_)) => {
                return refuse("frame starting from following row cannot have preceding rows")
            }
            (B::Following(_), B::CurrentRow) => {
                return refuse("frame starting from following row cannot end with current row")
            }
            _ => {}
        }
        let frame = Frame { units, start, end };
        let default = Frame { units: U::Range, start: B::UnboundedPreceding, end: B::CurrentRow };
        Ok(((frame != default).then_some(frame), range_offsets))
    }

    /// A RANGE frame's offset for an ORDER BY key of type `key`, as PostgreSQL's `in_range`
    /// support functions take it: an integer for an integer key, numeric for numeric, double
    /// precision for real or double precision, an interval for a date or timestamp. Anything
    /// else is `0A000`, as there; the offset must be a constant, and not NULL (`22004`).
    fn range_offset(&mut self, t: Typed, key: DataType, e: &AstExpr, which: &str) -> Result<Value> {
        use DataType as D;
        let ints = |ty: &D| matches!(ty, D::Int16 | D::Int32 | D::Int64);
        let to = match key {
            D::Int16 | D::Int32 | D::Int64 if t.unknown || ints(&t.ty) => Some(D::Int64),
            D::Numeric(_) if t.unknown || ints(&t.ty) || matches!(t.ty, D::Numeric(_)) => {
                Some(D::Numeric(None))
            }
            D::Float32 | D::Float64
                if t.unknown
                    || ints(&t.ty)
                    || matches!(t.ty, D::Numeric(_) | D::Float32 | D::Float64) =>
            {
                Some(D::Float64)
            }
            D::Date | D::Timestamp | D::TimestampTz if t.unknown || t.ty == D::Interval => {
                Some(D::Interval)
            }
            _ => None,
        };
        let in_range_types = ints(&key)
            || matches!(key, D::Numeric(_) | D::Float32 | D::Float64)
            || matches!(key, D::Date | D::Timestamp | D::TimestampTz);
        let Some(to) = to else {
            let message = if in_range_types {
                format!(
                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} \
                     and offset type {}",
                    key.base_name(),
                    t.ty.base_name()
                )
            } else {
                format!(
                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                    key.base_name()
                )
            };
            let error = Error::unsupported_msg(message);
            return Err(if in_range_types {
                error.with_hint("Cast the offset value to an appropriate type.")
            } else {
                error
            });
        };
        match self.coerce(t, to, CastKind::Implicit, e)? {
            Expr::Literal(Value::Null) => Err(Error::DataException {
                message: format!("frame {which} offset must not be null"),
                sqlstate: "22004",
            }),
            Expr::Literal(v) => Ok(v),
            _ => Err(Error::unsupported("a frame offset that is not a constant")),
        }
    }

    /// A timestamp or timestamptz argument of a datetime function, with its type: a date, or an
    /// untyped literal, becomes a timestamptz (PostgreSQL's preferred datetime type). `None`
    /// for any other type.
    fn timestamp_arg(&mut self, t: Typed, e: &AstExpr) -> Result<Option<(Expr, DataType)>> {
        let tz = DataType::TimestampTz;
        if t.unknown {
            return Ok(Some((self.coerce(t, tz, CastKind::Implicit, e)?, tz)));
        }
        Ok(match t.ty {
            DataType::Timestamp | DataType::TimestampTz => Some((t.expr, t.ty)),
            DataType::Date => {
                Some((fold_cast(t.expr, DataType::Date, tz, CastKind::Implicit)?, tz))
            }
            _ => None,
        })
    }

    /// `value AT TIME ZONE zone` / `timezone(zone, value)`: a timestamp read as local time in
    /// `zone` gives a timestamptz; a timestamptz gives its local time there. `zone` is a zone
    /// name or POSIX offset (text), or an interval (hours east).
    fn at_time_zone(&mut self, value: Typed, zone: Typed, e: &AstExpr) -> Result<Typed> {
        let zone = if zone.unknown
            || matches!(zone.ty, DataType::Text | DataType::Varchar(_) | DataType::Char(_))
        {
            self.text_expr(zone, e)?
        } else if zone.ty == DataType::Interval {
            zone.expr
        } else {
            return Err(Error::UndefinedFunction {
                name: format!("function timezone({}, …)", zone.ty.base_name()),
                span: self.span_of(e),
            });
        };
        let ty = value.ty;
        let Some((value, ty)) = self.timestamp_arg(value, e)? else {
            return Err(Error::UndefinedFunction {
                name: format!("function timezone(…, {})", ty.base_name()),
                span: self.span_of(e),
            });
        };
        // A timestamp gives a timestamptz and the other way round.
        let result =
            if ty == DataType::Timestamp { DataType::TimestampTz } else { DataType::Timestamp };
        Ok(Typed::known(Expr::Func(Func::AtTimeZone, vec![value, zone]), result))
    }

    /// `INTERVAL '…'`, or `INTERVAL 'n' unit` (a number of that unit).
    fn bind_interval(&mut self, i: &ast::Interval, e: &AstExpr) -> Result<Typed> {
        let text = match i.value.as_ref() {
            AstExpr::Value(v) => match &v.value {
                AstValue::SingleQuotedString(s) => s.clone(),
                AstValue::Number(n, _) => n.to_string(),
                _ => return Err(Error::unsupported(format!("{e}"))),
            },
            _ => return Err(Error::unsupported(format!("{e}"))),
        };
        let fields = |b: &Self| Error::Unsupported {
            feature: "interval with fields or a precision".into(),
            span: b.span_of(e),
        };
        if i.leading_precision.is_some()
            || i.last_field.is_some()
            || i.fractional_seconds_precision.is_some()
        {
            return Err(fields(self));
        }
        let text = match &i.leading_field {
            None => text,
            Some(field) => {
                let unit = match field {
                    ast::DateTimeField::Year | ast::DateTimeField::Years => "year",
                    ast::DateTimeField::Month | ast::DateTimeField::Months => "month",
                    ast::DateTimeField::Day | ast::DateTimeField::Days => "day",
                    ast::DateTimeField::Hour | ast::DateTimeField::Hours => "hour",
                    ast::DateTimeField::Minute | ast::DateTimeField::Minutes => "minute",
                    ast::DateTimeField::Second | ast::DateTimeField::Seconds => "second",
                    _ => return Err(Error::unsupported(format!("{e}"))),
                };
                // `INTERVAL '2' DAY` is two days; a value with its own units keeps them.
                if text.trim().parse::<f64>().is_err() {
                    return Err(fields(self));
                }
                format!("{text} {unit}")
            }
        };
        let v = types::parse_text(&text, &DataType::Interval)?;
        Ok(Typed::known(Expr::Literal(v), DataType::Interval))
    }

    /// The date or timestamp argument of EXTRACT / date_part / date_trunc (an untyped literal
    /// is read as a timestamp), with its type.
    fn datetime_arg(&mut self, t: Typed, func: &str, e: &AstExpr) -> Result<(Expr, DataType)> {
        if t.unknown {
            let expr = self.coerce(t, DataType::Timestamp, CastKind::Implicit, e)?;
            return Ok((expr, DataType::Timestamp));
        }
        match t.ty {
            DataType::Date | DataType::Timestamp | DataType::TimestampTz => Ok((t.expr, t.ty)),
            DataType::Interval => Ok((t.expr, t.ty)),
            DataType::Time if func != "date_trunc" => Ok((t.expr, t.ty)),
            other => Err(Error::UndefinedFunction {
                name: format!("function {func}(unknown, {})", other.base_name()),
                span: self.span_of(e),
            }),
        }
    }

    fn bind_function(&mut self, f: &ast::Function, scope: &Scope, e: &AstExpr) -> Result<Typed> {
        let (_, name) = self.object_name(&f.name)?;
        if let Some(over) = &f.over {
            return self.bind_window(&name, f, over, scope, e);
        }
        if !f.within_group.is_empty() {
            return Err(Error::Unsupported {
                feature: format!("{name} with WITHIN GROUP (ordered-set aggregates)"),
                span: self.span_of(e),
            });
        }
        if let ("array", ast::FunctionArguments::Subquery(q)) = (name.as_str(), &f.args) {
            return self.bind_array_subquery(q, scope, e, "subquery must return only one column");
        }
        if matches!(name.as_str(), "generate_series" | "unnest" | "generate_subscripts")
            || super::select::jsonb_rows(&name).is_some()
        {
            return Err(Error::Unsupported {
                feature: format!("set-returning function {name} outside FROM"),
                span: self.span_of(e),
            });
        }
        let (distinct, star, arg_exprs) = call_args_ordered(f, &name)?;
        if name == "position" && f.name.0.len() == 1 {
            // PostgreSQL's grammar knows only `position(a IN b)`: the call form is a syntax
            // error at the token after its first argument (`,`), or at `)` when it has none.
            let from = match arg_exprs.first() {
                Some(a) => crate::parse::offset_of(self.sql, sqlparser::ast::Spanned::span(*a).end),
                None => self.span_of(&f.name).map(|s| s.start),
            };
            let at = from.and_then(|from| {
                let rest = self.sql.get(from..)?;
                let skip = if arg_exprs.is_empty() { rest.find('(')? + 1 } else { 0 };
                let i = skip + rest[skip..].find(|c: char| !c.is_whitespace())?;
                Some((from + i, rest[i..].chars().next()?))
            });
            return Err(Error::Syntax {
                message: format!("syntax error at or near \"{}\"", at.map_or(',', |(_, c)| c)),
                span: at.map(|(start, _)| crate::error::Span { start }).or(self.span_of(e)),
            });
        }
        if name == "grouping" {
            return self.bind_grouping(f, &arg_exprs, distinct || star, scope, e);
        }
        let agg = match name.as_str() {
            "count" => Some(if star { AggFunc::CountStar } else { AggFunc::Count }),
            "sum" => Some(AggFunc::Sum),
            "avg" => Some(AggFunc::Avg),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "string_agg" => Some(AggFunc::StringAgg),
            "bool_and" | "every" => Some(AggFunc::BoolAnd),
            "bool_or" => Some(AggFunc::BoolOr),
            "variance" | "var_samp" => Some(AggFunc::VarSamp),
            "var_pop" => Some(AggFunc::VarPop),
            "stddev" | "stddev_samp" => Some(AggFunc::StddevSamp),
            "stddev_pop" => Some(AggFunc::StddevPop),
            "jsonb_agg" => Some(AggFunc::JsonbAgg),
            "jsonb_object_agg" => Some(AggFunc::JsonbObjectAgg),
            "json_agg" => Some(AggFunc::JsonAgg),
            "json_object_agg" => Some(AggFunc::JsonObjectAgg),
            "array_agg" => Some(AggFunc::ArrayAgg),
            _ => None,
        };
        if let Some(func) = agg {
            let filter = f.filter.as_deref();
            if self.aggs.is_none() {
                return Err(Error::Grouping {
                    message: format!("aggregate functions are not allowed here ({name})"),
                    span: self.span_of(e),
                });
            }
            let order_by = match agg_order_by(f) {
                Some(ob) => self.bind_agg_keys(ob, scope)?,
                None => Vec::new(),
            };
            return self
                .bind_aggregate(func, distinct, &arg_exprs, filter, order_by, scope, e, &name);
        }
        if agg_order_by(f).is_some() {
            return Err(Error::WrongObjectType {
                message: format!("ORDER BY specified, but {name} is not an aggregate function"),
            });
        }
        if f.filter.is_some() {
            return Err(Error::WrongObjectType {
                message: format!("FILTER specified, but {name} is not an aggregate function"),
            });
        }
        if star || distinct {
            return Err(Error::UndefinedFunction {
                name: format!("function {name}"),
                span: self.span_of(e),
            });
        }
        if matches!(name.as_str(), "nextval" | "currval" | "setval") {
            return self.bind_sequence_function(&name, &arg_exprs, scope, e);
        }
        if name == "pg_get_serial_sequence" {
            return self.bind_serial_sequence(&arg_exprs, e);
        }
        if name == "to_regclass" {
            return self.bind_to_regclass(&arg_exprs, scope, e);
        }
        if name == "has_table_privilege" {
            return self.bind_has_table_privilege(&arg_exprs, scope, e);
        }
        if name == "pg_table_is_visible" {
            return self.bind_table_is_visible(&arg_exprs, scope, e);
        }
        if name == "obj_description" || name == "col_description" {
            return self.bind_description(&name, &arg_exprs, scope, e);
        }
        if name == "pg_get_indexdef" {
            return self.bind_indexdef(&arg_exprs, scope, e);
        }
        if name == "pg_get_constraintdef" {
            return self.bind_constraintdef(&arg_exprs, scope, e);
        }
        if name.starts_with("jsonb_")
            || name.starts_with("json_")
            || matches!(name.as_str(), "to_jsonb" | "to_json" | "row_to_json")
        {
            // A whole row is a JSON object there (json in the json functions).
            let json = name.starts_with("json_") || name == "to_json" || name == "row_to_json";
            // jsonb_set's path is a text[] constant, split by the jsonb binder, not bound here.
            let mut args = Vec::with_capacity(arg_exprs.len());
            for (i, a) in arg_exprs.iter().enumerate() {
                args.push(if name == "jsonb_set" && i == 1 {
                    Typed { expr: Expr::Literal(Value::Null), ty: DataType::Text, unknown: true }
                } else if let Some(row) = self.row_value(a, scope, json)? {
                    row
                } else {
                    self.bind_expr(a, scope)?
                });
            }
            if let Some(bound) = self.bind_jsonb_function(&name, args, &arg_exprs, scope, e) {
                return bound;
            }
            let args: Vec<Typed> =
                arg_exprs.iter().map(|a| self.bind_expr(a, scope)).collect::<Result<_>>()?;
            return Err(self.no_function(&name, &args, e));
        }
        if name == "array" {
            return Err(Error::unsupported("ARRAY(subquery)"));
        }
        let array_function = super::array::array_function(&name).transpose()?;
        let args: Vec<Typed> =
            arg_exprs.iter().map(|a| self.bind_expr(a, scope)).collect::<Result<_>>()?;
        if let Some(f) = array_function {
            return self.bind_array_function(f, &name, args, e);
        }
        let arity_err = |b: &Self| Error::UndefinedFunction {
            name: format!(
                "function {name}({})",
                args.iter()
                    .map(|a| if a.unknown { "unknown".to_string() } else { a.ty.base_name() })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            span: b.span_of(e),
        };
        let text_fn = |b: &mut Self, func: Func, args: Vec<Typed>, ty: DataType| -> Result<Typed> {
            let args = args.into_iter().map(|a| b.text_expr(a, e)).collect::<Result<Vec<_>>>()?;
            Ok(Typed::known(Expr::Func(func, args), ty))
        };
        match (name.as_str(), args.len()) {
            ("lower", 1) => text_fn(self, Func::Lower, args, DataType::Text),
            ("upper", 1) => text_fn(self, Func::Upper, args, DataType::Text),
            ("length" | "octet_length", 1) if !args[0].unknown && args[0].ty == DataType::Bytea => {
                let a = args.into_iter().next().expect("one arg");
                Ok(Typed::known(Expr::Func(Func::Length, vec![a.expr]), DataType::Int32))
            }
            ("length" | "char_length" | "character_length", 1) => {
                text_fn(self, Func::Length, args, DataType::Int32)
            }
            ("btrim" | "trim", 1 | 2) => text_fn(self, Func::Trim, args, DataType::Text),
            ("ltrim", 1 | 2) => text_fn(self, Func::LTrim, args, DataType::Text),
            ("regexp_replace", 3 | 4) => text_fn(self, Func::RegexpReplace, args, DataType::Text),
            ("regexp_match", 2 | 3) => {
                text_fn(self, Func::RegexpMatch, args, DataType::Array(catalog::ArrayElem::Text))
            }
            ("regexp_split_to_array", 2 | 3) => text_fn(
                self,
                Func::RegexpSplitToArray,
                args,
                DataType::Array(catalog::ArrayElem::Text),
            ),
            ("rtrim", 1 | 2) => text_fn(self, Func::RTrim, args, DataType::Text),
            ("substring" | "substr", 2 | 3) => {
                let mut it = args.into_iter();
                let s = it
                    .next()
                    .map(|a| self.text_expr(a, e))
                    .transpose()?
                    .unwrap_or(Expr::Literal(Value::Null));
                let mut out = vec![s];
                for a in it {
                    out.push(self.coerce(a, DataType::Int32, CastKind::Implicit, e)?);
                }
                Ok(Typed::known(Expr::Func(Func::Substring, out), DataType::Text))
            }
            ("concat", _) => {
                // concat() formats each argument with its type's output function, so char(n)
                // keeps its padding (unlike a cast to text).
                let mut out = Vec::with_capacity(args.len());
                for a in args {
                    out.push(if !a.unknown && matches!(a.ty, DataType::Char(_)) {
                        a.expr
                    } else {
                        self.text_expr(a, e)?
                    });
                }
                Ok(Typed::known(Expr::Func(Func::Concat, out), DataType::Text))
            }
            ("abs", 1) => self.numeric_func(Func::Abs, args, e),
            ("round", 1 | 2) => self.numeric_func(Func::Round, args, e),
            ("trunc", 1 | 2) => self.numeric_func(Func::Trunc, args, e),
            ("floor", 1) => self.numeric_func(Func::Floor, args, e),
            ("ceil" | "ceiling", 1) => self.numeric_func(Func::Ceil, args, e),
            ("mod", 2) => {
                let mut it = args.into_iter();
                let (a, b) = (it.next().expect("two args"), it.next().expect("two args"));
                let t = self.arith(ArithOp::Mod, a, b, e, "%")?;
                Ok(t)
            }
            ("coalesce", n) if n >= 1 => {
                let refs: Vec<&Typed> = args.iter().collect();
                let ty = self.common_of(&refs, e, "COALESCE")?;
                let out = args
                    .into_iter()
                    .map(|a| self.coerce(a, ty, CastKind::Implicit, e))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Typed::known(Expr::Coalesce(out), ty))
            }
            // NULLIF(a, b) returns a, as the left operand of its `a = b`: where PostgreSQL
            // has a cross-type `=` (integers of two widths, the two floats, date and
            // timestamps) a keeps its type; otherwise it is promoted to the type both compare
            // in (`nullif(1, 2.5)` is numeric, `nullif(int, float8)` float8).
            ("nullif", 2) => {
                let mut it = args.into_iter();
                let (a, b) = (it.next().expect("two args"), it.next().expect("two args"));
                if a.unknown || b.unknown || a.ty == b.ty {
                    let ty = match (a.unknown, b.unknown) {
                        (true, true) => DataType::Text,
                        (true, false) => b.ty,
                        _ => a.ty,
                    };
                    let a = self.coerce(a, ty, CastKind::Implicit, e)?;
                    let b = self.coerce(b, ty, CastKind::Implicit, e)?;
                    return Ok(Typed::known(Expr::NullIf(Box::new(a), Box::new(b)), ty));
                }
                use DataType as T;
                let cross_type_eq = matches!(
                    (a.ty, b.ty),
                    (T::Int16 | T::Int32 | T::Int64, T::Int16 | T::Int32 | T::Int64)
                        | (T::Float32 | T::Float64, T::Float32 | T::Float64)
                        | (
                            T::Date | T::Timestamp | T::TimestampTz,
                            T::Date | T::Timestamp | T::TimestampTz
                        )
                );
                let kept = cross_type_eq.then_some(a.ty);
                let (a, b, common) = self.unify(a, b, e, "=")?;
                let result = kept.unwrap_or(common);
                let expr = Expr::NullIf(Box::new(a), Box::new(b));
                // Back from the comparison type: a's own value, so the cast cannot fail.
                let expr = if result == common {
                    expr
                } else {
                    fold_cast(expr, common, result, CastKind::Implicit)?
                };
                Ok(Typed::known(expr, result))
            }
            ("now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp", 0) => {
                Ok(Typed::known(Expr::Func(Func::Now, vec![]), DataType::TimestampTz))
            }
            ("localtimestamp", 0) => {
                Ok(Typed::known(Expr::Func(Func::LocalTimestamp, vec![]), DataType::Timestamp))
            }
            ("localtime", 0) => {
                let now = Expr::Func(Func::LocalTimestamp, vec![]);
                let expr = fold_cast(now, DataType::Timestamp, DataType::Time, CastKind::Explicit)?;
                Ok(Typed::known(expr, DataType::Time))
            }
            ("current_time", 0) => Err(Error::Unsupported {
                feature: "CURRENT_TIME (time with time zone; LOCALTIME is time)".into(),
                span: self.span_of(e),
            }),
            ("timezone", 2) => {
                let mut it = args.into_iter();
                let zone = it.next().expect("two args");
                let value = it.next().expect("two args");
                self.at_time_zone(value, zone, e)
            }
            ("to_timestamp", 1) => {
                let arg = args.into_iter().next().expect("one arg");
                let arg = self.coerce(arg, DataType::Float64, CastKind::Implicit, e)?;
                Ok(Typed::known(Expr::Func(Func::ToTimestamp, vec![arg]), DataType::TimestampTz))
            }
            ("to_char", 2) => {
                let mut it = args.into_iter();
                let value = it.next().expect("two args");
                let template = it.next().expect("two args");
                let template = self.coerce(template, DataType::Text, CastKind::Implicit, e)?;
                let ty = value.ty;
                let Some((value, _)) = self.timestamp_arg(value, e)? else {
                    return Err(Error::Unsupported {
                        feature: format!("to_char of {}", ty.base_name()),
                        span: self.span_of(e),
                    });
                };
                Ok(Typed::known(Expr::Func(Func::ToChar, vec![value, template]), DataType::Text))
            }
            ("age", 1 | 2) => {
                // Over timestamps if every argument is one (or untyped), else timestamptz; one
                // argument is measured from today's midnight.
                let ty = if args.iter().all(|t| t.unknown || t.ty == DataType::Timestamp) {
                    DataType::Timestamp
                } else {
                    DataType::TimestampTz
                };
                let mut bound = Vec::with_capacity(2);
                if args.len() == 1 {
                    let today = Expr::Func(Func::CurrentDate, vec![]);
                    bound.push(fold_cast(today, DataType::Date, ty, CastKind::Implicit)?);
                }
                for t in args {
                    if !t.unknown
                        && !matches!(
                            t.ty,
                            DataType::Date | DataType::Timestamp | DataType::TimestampTz
                        )
                    {
                        return Err(Error::UndefinedFunction {
                            name: format!("function age({})", t.ty.base_name()),
                            span: self.span_of(e),
                        });
                    }
                    bound.push(self.coerce(t, ty, CastKind::Implicit, e)?);
                }
                Ok(Typed::known(Expr::Func(Func::Age, bound), DataType::Interval))
            }
            ("make_date", 3) | ("make_timestamp", 6) => {
                // Integer fields (smallint and untyped literals too), and for a timestamp the
                // seconds as double precision.
                let date = name == "make_date";
                let ok = args.iter().enumerate().all(|(i, t)| {
                    t.unknown
                        || matches!(t.ty, DataType::Int16 | DataType::Int32)
                        || (i == 5
                            && matches!(
                                t.ty,
                                DataType::Int64
                                    | DataType::Numeric(_)
                                    | DataType::Float32
                                    | DataType::Float64
                            ))
                });
                if !ok {
                    let types: Vec<String> = args
                        .iter()
                        .map(|t| if t.unknown { "unknown".into() } else { t.ty.base_name() })
                        .collect();
                    return Err(Error::UndefinedFunction {
                        name: format!("function {name}({})", types.join(", ")),
                        span: self.span_of(e),
                    });
                }
                let bound = args
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let ty = if i == 5 { DataType::Float64 } else { DataType::Int32 };
                        self.coerce(t, ty, CastKind::Implicit, e)
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(if date {
                    Typed::known(Expr::Func(Func::MakeDate, bound), DataType::Date)
                } else {
                    Typed::known(Expr::Func(Func::MakeTimestamp, bound), DataType::Timestamp)
                })
            }
            ("justify_days" | "justify_hours" | "justify_interval", 1) => {
                let arg = args.into_iter().next().expect("one arg");
                let arg = self.coerce(arg, DataType::Interval, CastKind::Implicit, e)?;
                let f = match name.as_str() {
                    "justify_days" => Func::JustifyDays,
                    "justify_hours" => Func::JustifyHours,
                    _ => Func::JustifyInterval,
                };
                Ok(Typed::known(Expr::Func(f, vec![arg]), DataType::Interval))
            }
            ("date_part" | "date_trunc", 2) => {
                let mut it = args.into_iter();
                let field = it.next().expect("two args");
                let field = self.coerce(field, DataType::Text, CastKind::Implicit, e)?;
                let (value, ty) = self.datetime_arg(it.next().expect("two args"), &name, e)?;
                Ok(if name == "date_part" {
                    Typed::known(Expr::Func(Func::DatePart, vec![field, value]), DataType::Float64)
                } else {
                    // PostgreSQL truncates a date as a timestamp with time zone.
                    let (value, ty) = if ty == DataType::Date {
                        let tz = DataType::TimestampTz;
                        (fold_cast(value, ty, tz, CastKind::Implicit)?, tz)
                    } else {
                        (value, ty)
                    };
                    Typed::known(Expr::Func(Func::DateTrunc, vec![field, value]), ty)
                })
            }
            ("current_date", 0) => {
                Ok(Typed::known(Expr::Func(Func::CurrentDate, vec![]), DataType::Date))
            }
            ("version", 0) => Ok(Typed::known(Expr::Func(Func::Version, vec![]), DataType::Text)),
            ("current_schema", 0) => {
                Ok(Typed::known(Expr::Func(Func::CurrentSchema, vec![]), DataType::Text))
            }
            ("current_database", 0) => {
                Ok(Typed::known(Expr::Func(Func::CurrentDatabase, vec![]), DataType::Text))
            }
            ("current_user" | "session_user" | "user", 0) => {
                Ok(Typed::known(Expr::Func(Func::CurrentUser, vec![]), DataType::Text))
            }
            (
                "lower" | "upper" | "length" | "abs" | "round" | "trunc" | "floor" | "ceil" | "mod"
                | "nullif" | "substring" | "now" | "version",
                _,
            ) => Err(arity_err(self)),
            _ => self.bind_builtin(&name, args, e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    /// The keys of `ORDER BY …` inside an aggregate's parentheses: row expressions, as the
    /// aggregate's argument is.
    fn bind_agg_keys(
        &mut self,
        order_by: &[ast::OrderByExpr],
        scope: &Scope,
    ) -> Result<Vec<SortKey>> {
        let mut keys = Vec::with_capacity(order_by.len());
        for ob in order_by {
            let desc = matches!(ob.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_first = ob.options.nulls_first.unwrap_or(desc);
            let saved = self.aggs.take();
            let t = self.bind_expr(&ob.expr, scope);
            self.aggs = saved;
            let t = t?;
            let expr = if t.unknown {
                self.coerce(t, DataType::Text, CastKind::Implicit, &ob.expr)?
            } else {
                t.expr
            };
            keys.push(SortKey { expr, desc, nulls_first });
        }
        Ok(keys)
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_aggregate(
        &mut self,
        func: AggFunc,
        distinct: bool,
        args: &[&AstExpr],
        filter: Option<&AstExpr>,
        order_by: Vec<SortKey>,
        scope: &Scope,
        e: &AstExpr,
        name: &str,
    ) -> Result<Typed> {
        if self.aggs.is_none() {
            return Err(Error::Grouping {
                message: format!("aggregate functions are not allowed here ({name})"),
                span: self.span_of(e),
            });
        }
        // FILTER and string_agg's delimiter are row expressions: aggregation switched off.
        let saved = self.aggs.take();
        let filter = filter.map(|f| self.bind_condition(f, scope, "FILTER")).transpose();
        self.aggs = saved;
        let filter = filter?;
        let mut delimiter = None;
        let mut rows = false;
        let (arg, data_type) = match func {
            AggFunc::CountStar => (None, DataType::Int64),
            AggFunc::JsonbAgg
            | AggFunc::JsonbObjectAgg
            | AggFunc::JsonAgg
            | AggFunc::JsonObjectAgg => {
                let arity =
                    if matches!(func, AggFunc::JsonbAgg | AggFunc::JsonAgg) { 1 } else { 2 };
                // json_agg's values, and json_object_agg's, as to_json writes them; keys (and
                // the jsonb aggregates' values) as to_jsonb gives them.
                let json = matches!(func, AggFunc::JsonAgg | AggFunc::JsonObjectAgg);
                if args.len() != arity {
                    return Err(Error::UndefinedFunction {
                        name: format!("function {name}"),
                        span: self.span_of(e),
                    });
                }
                let jsonb_agg = matches!(func, AggFunc::JsonbAgg | AggFunc::JsonAgg);
                // A whole row: json_agg spaces such elements apart.
                if jsonb_agg {
                    rows = self.row_value(args[0], scope, json)?.is_some();
                }
                // Each argument as to_jsonb gives it (an untyped literal is text); the key and
                // the value of jsonb_object_agg travel as string_agg's value and delimiter.
                let saved = self.aggs.take();
                let mut array_values = false;
                let bound: Result<Vec<Expr>> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let t = match self.row_value(a, scope, json)? {
                            Some(row) => row,
                            None => self.bind_expr(a, scope)?,
                        };
                        // json_agg spaces arrays apart as it does rows.
                        array_values |= jsonb_agg && !t.unknown && t.ty.element().is_some();
                        if t.unknown && jsonb_agg {
                            return Err(Error::DatatypeMismatch {
                                message: "could not determine polymorphic type because input \
                                          has type unknown"
                                    .into(),
                                span: None,
                            });
                        }
                        let x = if t.unknown {
                            self.coerce(t, DataType::Text, CastKind::Implicit, a)?
                        } else {
                            t.expr
                        };
                        let is_value = jsonb_agg || i == 1;
                        let to =
                            if json && is_value { JsonbFunc::ToJson } else { JsonbFunc::ToJsonb };
                        Ok(Expr::Func(Func::Jsonb(to), vec![x]))
                    })
                    .collect();
                self.aggs = saved;
                rows |= array_values;
                let mut bound = bound?.into_iter();
                let arg = bound.next().expect("arity checked");
                delimiter = bound.next();
                (Some(arg), if json { DataType::Json } else { DataType::Jsonb })
            }
            AggFunc::StringAgg | AggFunc::BoolAnd | AggFunc::BoolOr => {
                let arity = if func == AggFunc::StringAgg { 2 } else { 1 };
                if args.len() != arity {
                    return Err(Error::UndefinedFunction {
                        name: format!("function {name}"),
                        span: self.span_of(e),
                    });
                }
                let ty = if func == AggFunc::StringAgg { DataType::Text } else { DataType::Bool };
                let saved = self.aggs.take();
                let bound: Result<Vec<Expr>> = args
                    .iter()
                    .map(|a| {
                        let t = self.bind_expr(a, scope)?;
                        if !t.unknown && ty == DataType::Text && t.ty == DataType::Bytea {
                            return Err(Error::unsupported("string_agg of bytea"));
                        }
                        self.coerce(t, ty, CastKind::Implicit, a)
                    })
                    .collect();
                self.aggs = saved;
                let mut bound = bound?.into_iter();
                let arg = bound.next().expect("arity checked");
                delimiter = bound.next();
                (Some(arg), ty)
            }
            _ => {
                if args.len() != 1 {
                    return Err(Error::UndefinedFunction {
                        name: format!("function {name}"),
                        span: self.span_of(e),
                    });
                }
                // Aggregates may not nest: bind the argument with aggregation switched off,
                // except for a window aggregate's, whose aggregates are the query's.
                let saved = self.aggs.take();
                self.aggs = self.window_arg_aggs.take();
                let t = self.bind_expr(args[0], scope);
                self.window_arg_aggs = std::mem::replace(&mut self.aggs, saved);
                let t = t?;
                // An untyped literal (or NULL) is text to count, min and max and double
                // precision to the statistics, as in PostgreSQL, whose sum and avg have no
                // preferred candidate for it.
                let statistic = matches!(
                    func,
                    AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop
                );
                let t = if t.unknown {
                    if matches!(func, AggFunc::Sum | AggFunc::Avg) {
                        return Err(self.ambiguous(name, &[t], e));
                    }
                    if func == AggFunc::ArrayAgg {
                        return Err(Error::DatatypeMismatch {
                            message: "could not determine polymorphic type because input has \
                                      type unknown"
                                .into(),
                            span: None,
                        });
                    }
                    // The statistics' candidates are all numeric: the preferred one wins.
                    let ty = if statistic { DataType::Float64 } else { DataType::Text };
                    Typed::known(self.coerce(t, ty, CastKind::Implicit, e)?, ty)
                } else {
                    t
                };
                let ty = match func {
                    AggFunc::Count => DataType::Int64,
                    AggFunc::Sum => match t.ty {
                        DataType::Int16 | DataType::Int32 => DataType::Int64,
                        DataType::Int64 | DataType::Numeric(_) => DataType::Numeric(None),
                        DataType::Float32 => DataType::Float32,
                        DataType::Float64 => DataType::Float64,
                        DataType::Interval => DataType::Interval,
                        other => {
                            return Err(Error::UndefinedFunction {
                                name: format!("function sum({})", other.base_name()),
                                span: self.span_of(e),
                            })
                        }
                    },
                    AggFunc::Avg => match t.ty {
                        DataType::Int16
                        | DataType::Int32
                        | DataType::Int64
                        | DataType::Numeric(_) => DataType::Numeric(None),
                        DataType::Float32 | DataType::Float64 => DataType::Float64,
                        DataType::Interval => DataType::Interval,
                        other => {
                            return Err(Error::UndefinedFunction {
                                name: format!("function avg({})", other.base_name()),
                                span: self.span_of(e),
                            })
                        }
                    },
                    AggFunc::Min | AggFunc::Max => match t.ty {
                        DataType::Bool
                        | DataType::Bytea
                        | DataType::Uuid
                        | DataType::Jsonb
                        | DataType::Json => {
                            return Err(Error::UndefinedFunction {
                                name: format!("function {name}({})", t.ty.base_name()),
                                span: self.span_of(e),
                            })
                        }
                        // max(varchar) is max(text); char(n) has its own (bpchar).
                        DataType::Varchar(_) => DataType::Text,
                        other => other,
                    },
                    AggFunc::CountStar => DataType::Int64,
                    AggFunc::ArrayAgg if t.ty.element().is_some() => {
                        return Err(Error::unsupported("array_agg of arrays"))
                    }
                    AggFunc::ArrayAgg => super::array::array_type_of(t.ty).ok_or_else(|| {
                        Error::unsupported(format!("arrays of {}", t.ty.base_name()))
                    })?,
                    // Exact (numeric) for integers and numeric, double precision for floats.
                    _ if statistic => match t.ty {
                        DataType::Int16
                        | DataType::Int32
                        | DataType::Int64
                        | DataType::Numeric(_) => DataType::Numeric(None),
                        DataType::Float32 | DataType::Float64 => DataType::Float64,
                        other => {
                            return Err(Error::UndefinedFunction {
                                name: format!("function {name}({})", other.base_name()),
                                span: self.span_of(e),
                            })
                        }
                    },
                    _ => unreachable!("string_agg, bool_and and bool_or are bound above"),
                };
                // Sums, averages and the statistics accumulate in the result type.
                let arg = match func {
                    _ if statistic && t.ty != ty => {
                        fold_cast(t.expr, t.ty, ty, CastKind::Implicit)?
                    }
                    AggFunc::Sum | AggFunc::Avg if t.ty != ty => {
                        let acc = if func == AggFunc::Avg && matches!(ty, DataType::Numeric(_)) {
                            DataType::Numeric(None)
                        } else {
                            ty
                        };
                        fold_cast(t.expr, t.ty, acc, CastKind::Implicit)?
                    }
                    _ => t.expr,
                };
                (Some(arg), ty)
            }
        };
        // The value the caller wrote (the jsonb aggregates wrap it in to_jsonb).
        let written = match (func, &arg) {
            (
                AggFunc::JsonbAgg | AggFunc::JsonAgg,
                Some(Expr::Func(Func::Jsonb(JsonbFunc::ToJsonb | JsonbFunc::ToJson), a)),
            ) => a.first(),
            _ => arg.as_ref(),
        };
        let mut order_by = order_by;
        if distinct
            && order_by.is_empty()
            && matches!(
                func,
                AggFunc::StringAgg | AggFunc::JsonbAgg | AggFunc::JsonAgg | AggFunc::ArrayAgg
            )
        {
            // PostgreSQL sorts the input of a DISTINCT aggregate: the values come in order.
            order_by = written
                .map(|a| SortKey { expr: a.clone(), desc: false, nulls_first: false })
                .into_iter()
                .collect();
        }
        if distinct && order_by.iter().any(|k| Some(&k.expr) != written) {
            return Err(Error::InvalidColumnReference {
                message: "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list".into(),
                span: self.span_of(e),
            });
        }
        let func = if rows && func == AggFunc::JsonAgg { AggFunc::JsonAggRows } else { func };
        let aggs = self.aggs.as_mut().expect("checked above");
        let grouping = Vec::new();
        let call =
            AggCall { func, arg, distinct, data_type, delimiter, filter, order_by, grouping };
        let index = match aggs.iter().position(|a| *a == call) {
            Some(i) => i,
            None => {
                aggs.push(call);
                aggs.len() - 1
            }
        };
        Ok(Typed::known(Expr::Agg(index), data_type))
    }
}

/// A function call's arguments: (DISTINCT, `*`, the argument expressions). Named arguments,
/// a subquery in place of the list and ORDER BY inside it are not supported.
fn call_args<'a>(f: &'a ast::Function, name: &str) -> Result<(bool, bool, Vec<&'a AstExpr>)> {
    if agg_order_by(f).is_some() {
        return Err(Error::unsupported(format!("{name} with ORDER BY or other clauses")));
    }
    call_args_ordered(f, name)
}

/// An aggregate call's `ORDER BY` inside its parentheses, if it has one.
fn agg_order_by(f: &ast::Function) -> Option<&[ast::OrderByExpr]> {
    match &f.args {
        ast::FunctionArguments::List(list) => list.clauses.iter().find_map(|c| match c {
            ast::FunctionArgumentClause::OrderBy(ob) => Some(ob.as_slice()),
            _ => None,
        }),
        _ => None,
    }
}

/// [`call_args`], except that an `ORDER BY` clause is allowed (the caller reads it with
/// [`agg_order_by`]); any other clause is 0A000.
fn call_args_ordered<'a>(
    f: &'a ast::Function,
    name: &str,
) -> Result<(bool, bool, Vec<&'a AstExpr>)> {
    match &f.args {
        ast::FunctionArguments::None => Ok((false, false, vec![])),
        ast::FunctionArguments::Subquery(_) => {
            Err(Error::unsupported("subquery as function argument"))
        }
        ast::FunctionArguments::List(list) => {
            if list.clauses.iter().any(|c| !matches!(c, ast::FunctionArgumentClause::OrderBy(_))) {
                return Err(Error::unsupported(format!("{name} with clauses other than ORDER BY")));
            }
            let distinct =
                matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
            let mut star = false;
            let mut args = Vec::new();
            for a in &list.args {
                match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => args.push(x),
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                    _ => return Err(Error::unsupported(format!("argument form in {name}()"))),
                }
            }
            Ok((distinct, star, args))
        }
    }
}

/// `left op ANY (…)` (`any`) or `left op ALL (…)` as an expression Aspen binds: over a
/// subquery, `= ANY` is IN and `<> ALL` is NOT IN; over an `ARRAY[…]` constructor, the
/// comparisons joined by OR (ANY) or AND (ALL), which give PostgreSQL's three-valued answer
/// (an empty array: false for ANY, true for ALL). `None` for any other array value (a
/// parameter, a column): `Binder::bind_any_all_array`.
fn any_all(
    left: &AstExpr,
    op: &BinaryOperator,
    right: &AstExpr,
    any: bool,
) -> Result<Option<AstExpr>> {
    match strip(right) {
        AstExpr::Subquery(q) => match (op, any) {
            (BinaryOperator::Eq, true) | (BinaryOperator::NotEq, false) => {
                Ok(Some(AstExpr::InSubquery {
                    expr: Box::new(left.clone()),
                    subquery: q.clone(),
                    negated: !any,
                }))
            }
            // Over the subquery's rows as an array: `Binder::bind_any_all_array`.
            _ => Ok(None),
        },
        // `= ANY (ARRAY[…])` is IN (…), `<> ALL (ARRAY[…])` NOT IN (…): index lookups.
        AstExpr::Array(array)
            if !array.elem.is_empty()
                && matches!(
                    (op, any),
                    (BinaryOperator::Eq, true) | (BinaryOperator::NotEq, false)
                ) =>
        {
            Ok(Some(AstExpr::InList {
                expr: Box::new(left.clone()),
                list: array.elem.clone(),
                negated: !any,
            }))
        }
        AstExpr::Array(array) => {
            let (join, empty) =
                if any { (BinaryOperator::Or, false) } else { (BinaryOperator::And, true) };
            let mut out: Option<AstExpr> = None;
            for elem in &array.elem {
                let cmp = AstExpr::BinaryOp {
                    left: Box::new(left.clone()),
                    op: op.clone(),
                    right: Box::new(elem.clone()),
                };
                out = Some(match out {
                    None => cmp,
                    Some(acc) => AstExpr::BinaryOp {
                        left: Box::new(acc),
                        op: join.clone(),
                        right: Box::new(cmp),
                    },
                });
            }
            Ok(Some(AstExpr::Nested(Box::new(
                out.unwrap_or_else(|| AstExpr::Value(ast::Value::Boolean(empty).into())),
            ))))
        }
        // `current_schemas(implicit)` (pgjdbc's type lookups): the search path's schemas,
        // `pg_catalog` first when implicit ones are asked for.
        AstExpr::Function(f) if f.name.to_string().eq_ignore_ascii_case("current_schemas") => {
            let implicit = match &f.args {
                ast::FunctionArguments::List(l) => match l.args.as_slice() {
                    [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(AstExpr::Value(v)))] => {
                        match &v.value {
                            ast::Value::Boolean(b) => *b,
                            _ => {
                                return Err(Error::unsupported("current_schemas of a non-constant"))
                            }
                        }
                    }
                    _ => return Err(Error::unsupported("current_schemas of a non-constant")),
                },
                _ => return Err(Error::unsupported("current_schemas of a non-constant")),
            };
            let names: &[&str] = if implicit { &["pg_catalog", "public"] } else { &["public"] };
            let elem = names
                .iter()
                .map(|n| AstExpr::Value(ast::Value::SingleQuotedString(n.to_string()).into()))
                .collect();
            any_all(left, op, &AstExpr::Array(ast::Array { elem, named: true }), any)
        }
        _ => Ok(None),
    }
}

/// A collation Aspen has: `"C"`, `"POSIX"` or `"default"` (optionally `pg_catalog.`), which
/// all compare strings bytewise, as Aspen always does; any other is `0A000`.
pub(super) fn check_collation(name: &ast::ObjectName) -> Result<()> {
    let last = match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(id)) => ident(id),
        _ => String::new(),
    };
    match last.as_str() {
        "C" | "POSIX" | "default" => Ok(()),
        _ => Err(Error::unsupported(format!(
            "collation {name} (Aspen compares strings bytewise, as the \"C\" collation does)"
        ))),
    }
}

/// The text of a string literal.
fn string_literal(e: &AstExpr) -> Option<String> {
    match strip(e) {
        AstExpr::Value(v) => match &v.value {
            AstValue::SingleQuotedString(s) | AstValue::EscapedStringLiteral(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// `e` without the parentheses around it.
pub(super) fn strip(mut e: &AstExpr) -> &AstExpr {
    while let AstExpr::Nested(inner) = e {
        e = inner;
    }
    e
}

fn binary(left: AstExpr, op: BinaryOperator, right: AstExpr) -> AstExpr {
    AstExpr::BinaryOp { left: Box::new(left), op, right: Box::new(right) }
}

/// Two row constructors compared (`(a, b) < (x, y)`), rewritten into the scalar comparisons
/// PostgreSQL's row comparison stands for: `=` every pair equal, `<>` some pair unequal, and
/// the orderings pair by pair from the left, the first unequal pair deciding (`a < x OR (a = x
/// AND b < y)`, which gives PostgreSQL's NULL wherever a pair it reaches is NULL). An ordering
/// also gets its first column's bound (`a <= x AND (…)`), which it implies, so that keyset
/// pagination (`WHERE (at, id) > ($1, $2) ORDER BY at, id`) scans an index range. `None`
/// when neither side is a row constructor.
fn row_comparison(left: &AstExpr, op: &BinaryOperator, right: &AstExpr) -> Result<Option<AstExpr>> {
    use BinaryOperator as B;
    let (l, r) = match (strip(left), strip(right)) {
        (AstExpr::Tuple(l), AstExpr::Tuple(r)) => (l, r),
        (AstExpr::Tuple(_), _) | (_, AstExpr::Tuple(_)) => {
            return Err(Error::unsupported("comparing a row constructor with a non-row value"))
        }
        _ => return Ok(None),
    };
    if l.len() != r.len() {
        return Err(Error::SyntaxMisuse {
            message: "unequal number of entries in row expressions".into(),
            span: None,
        });
    }
    let pair = |i: usize, op: B| binary(l[i].clone(), op, r[i].clone());
    let join = |op: B, parts: Vec<AstExpr>| {
        parts.into_iter().reduce(|acc, x| binary(acc, op.clone(), x)).expect("a row has columns")
    };
    let n = l.len();
    let out = match op {
        B::Eq => join(B::And, (0..n).map(|i| pair(i, B::Eq)).collect()),
        B::NotEq => join(B::Or, (0..n).map(|i| pair(i, B::NotEq)).collect()),
        B::Lt | B::LtEq | B::Gt | B::GtEq => {
            let strict = if matches!(op, B::Lt | B::LtEq) { B::Lt } else { B::Gt };
            let bound = if matches!(op, B::Lt | B::LtEq) { B::LtEq } else { B::GtEq };
            // From the last pair back: the last compares with `op` itself.
            let mut acc = pair(n - 1, op.clone());
            for i in (0..n - 1).rev() {
                let tie = AstExpr::Nested(Box::new(binary(pair(i, B::Eq), B::And, acc)));
                acc = AstExpr::Nested(Box::new(binary(pair(i, strict.clone()), B::Or, tie)));
            }
            if n > 1 {
                acc = binary(pair(0, bound), B::And, acc);
            }
            acc
        }
        other => return Err(Error::unsupported(format!("operator {other} on row constructors"))),
    };
    Ok(Some(AstExpr::Nested(Box::new(out))))
}

/// The text of a (possibly negated) numeric literal.
fn number_literal(e: &AstExpr) -> Option<String> {
    match e {
        AstExpr::Value(v) => match &v.value {
            AstValue::Number(n, _) => Some(n.clone()),
            _ => None,
        },
        AstExpr::UnaryOp { op: UnaryOperator::Minus, expr } => {
            number_literal(expr).map(|n| match n.strip_prefix('-') {
                Some(positive) => positive.to_string(),
                None => format!("-{n}"),
            })
        }
        AstExpr::Nested(inner) => number_literal(inner),
        _ => None,
    }
}

/// The common type `ty` of `items` (CASE results, COALESCE arguments, VALUES rows), adjusted
/// for untyped literals among them: a literal has no length, and as in PostgreSQL neither has
/// the result then (varchar), so the literal is not cut or refused here; what is stored is
/// checked when it is assigned. Aspen has no char without a length: a literal too long for
/// char(n) makes the result text.
pub(super) fn without_literal_lengths(ty: DataType, items: &[&Typed]) -> DataType {
    let literal_len = |t: &Typed| match (t.unknown, &t.expr) {
        (true, Expr::Literal(Value::Text(s))) => Some(s.trim_end_matches(' ').chars().count()),
        _ => None,
    };
    match ty {
        DataType::Varchar(Some(_)) if items.iter().any(|t| t.unknown) => DataType::Varchar(None),
        DataType::Char(n)
            if items.iter().filter_map(|t| literal_len(t)).any(|len| len > n as usize) =>
        {
            DataType::Text
        }
        ty => ty,
    }
}

/// The type without its length or precision modifier.
fn unconstrained(t: DataType) -> DataType {
    match t {
        DataType::Varchar(_) => DataType::Varchar(None),
        DataType::Char(_) => DataType::Text,
        DataType::Numeric(_) => DataType::Numeric(None),
        other => other,
    }
}

pub(super) fn is_numeric(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Numeric(_)
    )
}

fn func_name(f: Func) -> &'static str {
    match f {
        Func::Abs => "abs",
        Func::Round => "round",
        Func::Trunc => "trunc",
        Func::Floor => "floor",
        Func::Ceil => "ceil",
        Func::Mod => "mod",
        _ => "function",
    }
}

/// The type an untyped operand of `op` takes when the other operand has type `other`
/// (`left_known`: the other operand is on the left), as PostgreSQL's operator resolution
/// picks it: the other operand's own type (so `date - $1` is `date - date`, an integer),
/// except that a date plus something takes an integer (PostgreSQL finds that ambiguous), a
/// timestamp plus something takes an interval, and an interval times something takes a number.
fn unknown_operand_type(op: ArithOp, other: &DataType, left_known: bool) -> DataType {
    match (op, other) {
        (ArithOp::Add, DataType::Date) => DataType::Int32,
        (ArithOp::Add, DataType::Timestamp | DataType::TimestampTz | DataType::Time) => {
            DataType::Interval
        }
        (ArithOp::Mul, DataType::Interval) => DataType::Float64,
        (ArithOp::Div, DataType::Interval) if left_known => DataType::Float64,
        _ => *other,
    }
}

/// A cast, evaluated right away when the operand is a constant (unless its result depends on
/// the session's time zone, see [`types::zone_dependent`]).
pub(crate) fn fold_cast(e: Expr, from: DataType, to: DataType, kind: CastKind) -> Result<Expr> {
    match e {
        Expr::Literal(v) if !types::zone_dependent(&from, &to) => {
            Ok(Expr::Literal(types::cast(v, &from, &to, kind)?))
        }
        // The evaluator sees a char(n) value as text: drop the blank padding here, as
        // PostgreSQL's bpchar → text / varchar cast does.
        other if matches!(from, DataType::Char(_)) && matches!(to, DataType::Text) => {
            Ok(Expr::Func(Func::RTrim, vec![other]))
        }
        other if matches!(from, DataType::Char(_)) && matches!(to, DataType::Varchar(_)) => {
            let trimmed = Expr::Func(Func::RTrim, vec![other]);
            Ok(Expr::Cast(Box::new(trimmed), to, kind))
        }
        // A varchar is a text value already, and a varchar without a length holds any text: no
        // node, so that `v = $1` binds to the same expression whether `$1` was typed before or
        // by it (ORDER BY and DISTINCT ON items match by expression).
        other if matches!(from, DataType::Varchar(_)) && to == DataType::Text => Ok(other),
        // A regtype value is a bigint to the evaluator: its name is taken here.
        other if from == DataType::RegType && types::is_string(&to) => {
            let name = Expr::Func(Func::RegTypeOut, vec![other]);
            fold_cast(name, DataType::Text, to, kind)
        }
        other
            if matches!(from, DataType::Varchar(_) | DataType::Text)
                && to == DataType::Varchar(None) =>
        {
            Ok(other)
        }
        other => Ok(Expr::Cast(Box::new(other), to, kind)),
    }
}

/// A text the statement's catalog gives per object, looked up when the statement runs (the
/// catalog functions `obj_description`, `pg_get_indexdef`, …): `CASE WHEN keys[0] = v0 AND …
/// THEN text … END` over `entries`, each the values of a prefix of `keys` that select it and
/// its text, the first that matches winning; NULL when none does. Taken from the catalog when
/// the statement is bound (a schema change binds it again).
fn catalog_lookup(keys: &[Expr], entries: Vec<(Vec<i64>, String)>) -> Typed {
    let arms: Vec<(Expr, Expr)> = entries
        .into_iter()
        .map(|(values, text)| {
            let condition = keys
                .iter()
                .zip(values)
                .map(|(k, v)| {
                    let v = Box::new(Expr::Literal(Value::Int64(v)));
                    Expr::Cmp(crate::plan::CmpOp::Eq, Box::new(k.clone()), v)
                })
                .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
                .expect("every entry has a value");
            (condition, Expr::Literal(Value::Text(text)))
        })
        .collect();
    let expr = if arms.is_empty() { Expr::Literal(Value::Null) } else { Expr::Case(arms, None) };
    Typed::known(expr, DataType::Text)
}

/// The name PostgreSQL gives a result column for this expression.
pub(crate) fn column_name(e: &AstExpr) -> String {
    figure_colname(e).0.unwrap_or_else(|| "?column?".into())
}

/// PostgreSQL's `FigureColnameInternal`: a name and its strength — 2 for a column's or a
/// function's name, 1 for a fallback (`case`, a cast's type name), 0 for none. A cast or a
/// CASE keeps its operand's (its ELSE result's) name when that one is strong, and falls back
/// to the type name (`case`) otherwise.
fn figure_colname(e: &AstExpr) -> (Option<String>, u8) {
    let strong = |name: &str| (Some(name.to_string()), 2);
    match e {
        AstExpr::Identifier(id) => (Some(ident(id)), 2),
        AstExpr::CompoundIdentifier(ids) => match ids.last() {
            Some(id) => (Some(ident(id)), 2),
            None => (None, 0),
        },
        AstExpr::Nested(inner) => figure_colname(inner),
        AstExpr::Array(_) => strong("array"),
        AstExpr::CompoundFieldAccess { root, .. } => figure_colname(root),
        AstExpr::Function(f) => match f.name.0.last() {
            Some(ast::ObjectNamePart::Identifier(id)) => (Some(ident(id)), 2),
            _ => (None, 0),
        },
        AstExpr::Cast { expr, data_type, .. } => match figure_colname(expr) {
            named @ (_, 2) => named,
            _ => (Some(cast_type_name(data_type)), 1),
        },
        AstExpr::TypedString(ts) => (Some(cast_type_name(&ts.data_type)), 1),
        AstExpr::Interval(_) => (Some("interval".into()), 1),
        AstExpr::Case { else_result, .. } => match else_result.as_deref().map(figure_colname) {
            Some(named @ (_, 2)) => named,
            _ => (Some("case".into()), 1),
        },
        AstExpr::AtTimeZone { .. } => strong("timezone"),
        // NOT EXISTS is an operator over EXISTS: no name.
        AstExpr::Exists { negated: false, .. } => strong("exists"),
        AstExpr::Extract { .. } => strong("extract"),
        // A scalar subquery is named after its (first) output column.
        AstExpr::Subquery(q) => match q.body.as_ref() {
            ast::SetExpr::Select(s) => match s.projection.first() {
                // The subquery's column always has a name, `?column?` at worst, and it is
                // strong.
                Some(ast::SelectItem::UnnamedExpr(e)) => (Some(column_name(e)), 2),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => (Some(ident(alias)), 2),
                _ => (None, 0),
            },
            _ => (None, 0),
        },
        AstExpr::Ceil { .. } => strong("ceil"),
        AstExpr::Floor { .. } => strong("floor"),
        AstExpr::Substring { shorthand: true, .. } => strong("substr"),
        AstExpr::Substring { .. } => strong("substring"),
        AstExpr::Position { .. } => strong("position"),
        AstExpr::Trim { trim_where, .. } => match trim_where {
            Some(ast::TrimWhereField::Leading) => strong("ltrim"),
            Some(ast::TrimWhereField::Trailing) => strong("rtrim"),
            _ => strong("btrim"),
        },
        _ => (None, 0),
    }
}

fn cast_type_name(t: &ast::DataType) -> String {
    use ast::DataType as D;
    match t {
        D::Int(_) | D::Integer(_) | D::Int4(_) => "int4".into(),
        D::BigInt(_) | D::Int8(_) => "int8".into(),
        D::SmallInt(_) | D::Int2(_) => "int2".into(),
        D::Real | D::Float4 => "float4".into(),
        D::DoublePrecision | D::Float8 | D::Double(_) | D::Float(_) => "float8".into(),
        D::Numeric(_) | D::Decimal(_) | D::Dec(_) => "numeric".into(),
        D::Varchar(_) | D::CharacterVarying(_) => "varchar".into(),
        D::Char(_) | D::Character(_) => "bpchar".into(),
        D::Text => "text".into(),
        D::Bool | D::Boolean => "bool".into(),
        D::Date => "date".into(),
        D::Timestamp(_, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) => {
            "timestamptz".into()
        }
        D::Timestamp(..) => "timestamp".into(),
        D::Interval { .. } => "interval".into(),
        D::Bytea => "bytea".into(),
        D::Array(
            ast::ArrayElemTypeDef::SquareBracket(inner, _)
            | ast::ArrayElemTypeDef::Qualified(inner, _),
        ) => cast_type_name(inner),
        other => other.to_string().to_lowercase(),
    }
}

/// A relation name written as text, as `regclass` reads it: `name`, `schema.name`, each part
/// folded to lower case unless double-quoted. `None` for malformed text.
pub(crate) fn relation_name(text: &str) -> Option<String> {
    let mut parts = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    '"' => break,
                    c => part.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                part.extend(c.to_lowercase());
                chars.next();
            }
            if part.is_empty() {
                return None;
            }
        }
        parts.push(part);
        match chars.next() {
            None => break,
            Some('.') => continue,
            Some(_) => return None,
        }
    }
    match parts.as_slice() {
        [name] => Some(name.clone()),
        [schema, name] if schema == "public" => Some(name.clone()),
        // Only `public` exists: a name in another schema names no relation.
        [schema, name] => Some(format!("{schema}.{name}")),
        _ => None,
    }
}
