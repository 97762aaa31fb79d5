//! Binding arrays as PostgreSQL 15 resolves them: `ARRAY[…]` (the elements' common type),
//! subscripts and slices, `||` (`array_cat`, `array_append`, `array_prepend`), `@>` `<@` `&&`,
//! `x op ANY/ALL (array)`, the array functions, and `unnest` in FROM. An untyped literal next to
//! an array is read as an array literal (`ARRAY['a'] || 'b'` is a malformed array literal, as
//! in PostgreSQL); the polymorphic functions take their element type from the array, or the
//! array type from a typed element. Only one-dimensional arrays of the scalar types without a
//! type modifier exist (`catalog::ArrayElem`): the rest is `0A000`.

use catalog::{ArrayElem, DataType};
use sqlparser::ast::{self as ast, BinaryOperator, Expr as AstExpr};

use super::expr::Typed;
use super::{ident, Binder, Scope};
use crate::error::{Error, Result};
use crate::plan::{AggCall, AggFunc, ArrayFunc, CmpOp, Expr, Func, Plan};
use crate::types::{self, CastKind, Value};

/// The array type whose elements hold values of `ty`, its modifier dropped (`varchar(10)` →
/// `character varying[]`, `char(n)` → `text[]`); `None` for a type Aspen has no array of.
pub(super) fn array_type_of(ty: DataType) -> Option<DataType> {
    let base = match ty {
        DataType::Numeric(_) => DataType::Numeric(None),
        DataType::Varchar(_) => DataType::Varchar(None),
        DataType::Char(_) => DataType::Text,
        other => other,
    };
    ArrayElem::of(&base).map(DataType::Array)
}

/// `42804` for an untyped argument where a polymorphic function needs a type.
fn polymorphic_unknown() -> Error {
    Error::DatatypeMismatch {
        message: "could not determine polymorphic type because input has type unknown".into(),
        span: None,
    }
}

fn is_array(t: &Typed) -> bool {
    !t.unknown && t.ty.element().is_some()
}

fn type_name(t: &Typed) -> String {
    if t.unknown {
        "unknown".into()
    } else {
        t.ty.base_name()
    }
}

/// An array value of `items` (all literals) as one literal.
fn fold(items: Vec<Expr>) -> Expr {
    if items.iter().all(|x| matches!(x, Expr::Literal(_))) {
        let values = items
            .into_iter()
            .map(|x| match x {
                Expr::Literal(v) => v,
                _ => unreachable!("all literals"),
            })
            .collect();
        Expr::Literal(Value::Array(std::sync::Arc::new(values)))
    } else {
        Expr::Func(Func::Array(ArrayFunc::Build), items)
    }
}

/// The array function called `name`: `None` for another function, `0A000` for an array
/// function Aspen lacks.
pub(super) fn array_function(name: &str) -> Option<Result<ArrayFunc>> {
    Some(Ok(match name {
        "array_length" => ArrayFunc::Length,
        "array_lower" => ArrayFunc::Lower,
        "array_upper" => ArrayFunc::Upper,
        "array_ndims" => ArrayFunc::Ndims,
        "array_dims" => ArrayFunc::Dims,
        "cardinality" => ArrayFunc::Cardinality,
        "array_append" => ArrayFunc::Append,
        "array_prepend" => ArrayFunc::Prepend,
        "array_cat" => ArrayFunc::Cat,
        "array_position" => ArrayFunc::Position,
        "array_positions" => ArrayFunc::Positions,
        "array_remove" => ArrayFunc::Remove,
        "array_replace" => ArrayFunc::Replace,
        "array_to_string" => ArrayFunc::ToString,
        "string_to_array" => ArrayFunc::FromString,
        _ if name.starts_with("array_") => {
            return Some(Err(Error::unsupported(format!("function {name}"))))
        }
        _ => return None,
    }))
}

impl Binder<'_> {
    /// `ARRAY[a, b, …]`, of `target` when it is cast to an array type at once (which an
    /// empty one must be).
    pub(super) fn bind_array_constructor(
        &mut self,
        array: &ast::Array,
        target: Option<DataType>,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        if array.elem.iter().any(|x| matches!(x, AstExpr::Array(_))) {
            return Err(Error::unsupported("multidimensional arrays"));
        }
        let elems: Vec<Typed> =
            array.elem.iter().map(|x| self.bind_expr(x, scope)).collect::<Result<_>>()?;
        if let Some(target) = target.filter(|t| t.element().is_some()) {
            let elem = target.element().expect("an array type");
            let mut items = Vec::with_capacity(elems.len());
            for (t, node) in elems.into_iter().zip(&array.elem) {
                items.push(self.coerce(t, elem, CastKind::Explicit, node)?);
            }
            return Ok(Typed::known(fold(items), target));
        }
        let mut common: Option<DataType> = None;
        for t in elems.iter().filter(|t| !t.unknown) {
            common = Some(match common {
                None => t.ty,
                Some(c) => {
                    types::common_type(&c, &t.ty).ok_or_else(|| Error::DatatypeMismatch {
                        message: format!(
                            "ARRAY types {} and {} cannot be matched",
                            c.base_name(),
                            t.ty.base_name()
                        ),
                        span: self.span_of(e),
                    })?
                }
            });
        }
        let elem = match (common, elems.is_empty()) {
            (Some(c), _) => c,
            (None, false) => DataType::Text,
            (None, true) => {
                return Err(Error::IndeterminateDatatype {
                    message: "cannot determine type of empty array".into(),
                })
            }
        };
        let ty = array_type_of(elem)
            .ok_or_else(|| Error::unsupported(format!("arrays of {}", elem.base_name())))?;
        let elem = ty.element().expect("an array type");
        let mut items = Vec::with_capacity(elems.len());
        for (t, node) in elems.into_iter().zip(&array.elem) {
            items.push(self.coerce(t, elem, CastKind::Implicit, node)?);
        }
        Ok(Typed::known(fold(items), ty))
    }

    /// `a[i]`, `a[lo:hi]` (either bound may be left out).
    pub(super) fn bind_subscript(
        &mut self,
        root: &AstExpr,
        chain: &[ast::AccessExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let a = self.bind_expr(root, scope)?;
        let Some(elem) = a.ty.element().filter(|_| !a.unknown) else {
            return Err(Error::DatatypeMismatch {
                message: format!(
                    "cannot subscript type {} because it does not support subscripting",
                    type_name(&a)
                ),
                span: self.span_of(e),
            });
        };
        let [ast::AccessExpr::Subscript(sub)] = chain else {
            return Err(Error::unsupported("multidimensional arrays"));
        };
        let int = |b: &mut Self, x: &AstExpr| -> Result<Expr> {
            let t = b.bind_expr(x, scope)?;
            b.coerce(t, DataType::Int32, CastKind::Assignment, x)
        };
        Ok(match sub {
            ast::Subscript::Index { index } => {
                let i = int(self, index)?;
                Typed::known(Expr::Func(Func::Array(ArrayFunc::Subscript), vec![a.expr, i]), elem)
            }
            ast::Subscript::Slice { lower_bound, upper_bound, stride } => {
                if stride.is_some() {
                    return Err(Error::unsupported("an array slice with a stride"));
                }
                let mut args = vec![a.expr];
                for b in [lower_bound, upper_bound].into_iter().flatten() {
                    args.push(int(self, b)?);
                }
                let f =
                    ArrayFunc::Slice { lower: lower_bound.is_some(), upper: upper_bound.is_some() };
                Typed::known(Expr::Func(Func::Array(f), args), a.ty)
            }
        })
    }

    /// Both sides of an operator between two arrays of one type (an untyped side takes the
    /// other's type); `42883` otherwise.
    fn array_pair(
        &mut self,
        l: Typed,
        r: Typed,
        sym: &str,
        e: &AstExpr,
    ) -> Result<(Expr, Expr, DataType)> {
        let ty = match (is_array(&l), is_array(&r)) {
            (true, _) if r.unknown || r.ty == l.ty => l.ty,
            (_, true) if l.unknown => r.ty,
            _ => {
                return Err(Error::UndefinedFunction {
                    name: format!("operator {} {sym} {}", type_name(&l), type_name(&r)),
                    span: self.span_of(e),
                })
            }
        };
        let le = self.coerce(l, ty, CastKind::Implicit, e)?;
        let re = self.coerce(r, ty, CastKind::Implicit, e)?;
        Ok((le, re, ty))
    }

    /// `l op r` where either side is a typed array: `||`, `@>`, `<@`, `&&`. `None` when
    /// neither is (the operator is another type's).
    pub(super) fn bind_array_operator(
        &mut self,
        l: Typed,
        op: &BinaryOperator,
        r: Typed,
        e: &AstExpr,
    ) -> Result<Option<Typed>> {
        use BinaryOperator as B;
        if !is_array(&l) && !is_array(&r) {
            return Ok(None);
        }
        let sym = op.to_string();
        let bool_op = |f: ArrayFunc, a: Expr, b: Expr| {
            Ok(Some(Typed::known(Expr::Func(Func::Array(f), vec![a, b]), DataType::Bool)))
        };
        match op {
            B::StringConcat => {
                let described = format!("operator {} {sym} {}", type_name(&l), type_name(&r));
                // An array and an element (typed, not an array): append or prepend.
                let (f, arrays, elems) = if is_array(&l) && !r.unknown && !is_array(&r) {
                    (ArrayFunc::Append, vec![l], vec![r])
                } else if is_array(&r) && !l.unknown && !is_array(&l) {
                    (ArrayFunc::Prepend, vec![r], vec![l])
                } else {
                    (ArrayFunc::Cat, vec![l, r], vec![])
                };
                let (a, x, ty) = self.compatible(arrays, elems, e).map_err(|err| match err {
                    Error::UndefinedFunction { name, .. } if name.is_empty() => {
                        Error::UndefinedFunction { name: described, span: self.span_of(e) }
                    }
                    other => other,
                })?;
                let args = match f {
                    ArrayFunc::Prepend => x.into_iter().chain(a).collect(),
                    _ => a.into_iter().chain(x).collect(),
                };
                Ok(Some(Typed::known(Expr::Func(Func::Array(f), args), ty)))
            }
            B::AtArrow => {
                let (le, re, _) = self.array_pair(l, r, &sym, e)?;
                bool_op(ArrayFunc::Contains, le, re)
            }
            B::ArrowAt => {
                let (le, re, _) = self.array_pair(l, r, &sym, e)?;
                bool_op(ArrayFunc::Contains, re, le)
            }
            B::PGOverlap => {
                let (le, re, _) = self.array_pair(l, r, &sym, e)?;
                bool_op(ArrayFunc::Overlaps, le, re)
            }
            _ => Ok(None),
        }
    }

    /// PostgreSQL 13's `anycompatiblearray` / `anycompatible` (`||`, array_cat, array_append,
    /// array_position, …): `arrays` and `elems` brought to one element type, the common type
    /// of the typed ones; an untyped array is read as an array of it, an untyped element as
    /// it. An unnamed `42883` when there is none (the caller names the function).
    fn compatible(
        &mut self,
        arrays: Vec<Typed>,
        elems: Vec<Typed>,
        e: &AstExpr,
    ) -> Result<(Vec<Expr>, Vec<Expr>, DataType)> {
        let none = || Error::UndefinedFunction { name: String::new(), span: None };
        let mut common: Option<DataType> = None;
        let typed = arrays
            .iter()
            .filter(|t| !t.unknown)
            .map(|t| t.ty.element().ok_or_else(none))
            .chain(elems.iter().filter(|t| !t.unknown).map(|t| Ok(t.ty)));
        for ty in typed {
            let ty = ty?;
            common = Some(match common {
                None => ty,
                Some(c) => types::common_type(&c, &ty).ok_or_else(none)?,
            });
        }
        let elem = common.ok_or_else(polymorphic_unknown)?;
        let array = array_type_of(elem)
            .ok_or_else(|| Error::unsupported(format!("arrays of {}", elem.base_name())))?;
        let elem = array.element().expect("an array type");
        let mut a = Vec::with_capacity(arrays.len());
        for t in arrays {
            a.push(self.coerce(t, array, CastKind::Implicit, e)?);
        }
        let mut x = Vec::with_capacity(elems.len());
        for t in elems {
            x.push(self.coerce(t, elem, CastKind::Implicit, e)?);
        }
        Ok((a, x, array))
    }

    /// `left op ANY (right)` (`any`) or `… ALL (right)` over an array value.
    pub(super) fn bind_any_all_array(
        &mut self,
        left: &AstExpr,
        op: &BinaryOperator,
        right: &AstExpr,
        any: bool,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let cmp = match op {
            BinaryOperator::Eq => CmpOp::Eq,
            BinaryOperator::NotEq => CmpOp::NotEq,
            BinaryOperator::Lt => CmpOp::Lt,
            BinaryOperator::LtEq => CmpOp::LtEq,
            BinaryOperator::Gt => CmpOp::Gt,
            BinaryOperator::GtEq => CmpOp::GtEq,
            other => {
                let word = if any { "ANY" } else { "ALL" };
                return Err(Error::unsupported(format!("{other} {word} (array)")));
            }
        };
        let l = self.bind_expr(left, scope)?;
        let r = match super::expr::strip(right) {
            // `x > ANY (SELECT …)`: over the subquery's rows, as ARRAY(SELECT …).
            AstExpr::Subquery(q) => {
                self.bind_array_subquery(q, scope, right, "subquery has too many columns")?
            }
            _ => self.bind_expr(right, scope)?,
        };
        if !r.unknown && r.ty.element().is_none() {
            return Err(Error::WrongObjectType {
                message: "op ANY/ALL (array) requires array on right side".into(),
            });
        }
        let (le, re) = if r.unknown {
            let elem = if l.unknown { DataType::Text } else { l.ty };
            let ty = array_type_of(elem)
                .ok_or_else(|| Error::unsupported(format!("arrays of {}", elem.base_name())))?;
            let le = self.coerce(l, ty.element().expect("an array type"), CastKind::Implicit, e)?;
            (le, self.coerce(r, ty, CastKind::Implicit, right)?)
        } else {
            let elem = r.ty.element().expect("an array type");
            let le = if l.unknown || l.ty == elem {
                self.coerce(l, elem, CastKind::Implicit, left)?
            } else if matches!(l.ty, DataType::Char(_)) && types::is_string(&elem) {
                // char(n) against text compares as text: its padding does not count.
                self.text_expr(l, left)?
            } else if types::common_type(&l.ty, &elem).is_some() {
                // Compared across types as `types::compare` does (integer widths, numeric,
                // dates with timestamps), as PostgreSQL's cross-type operators do.
                l.expr
            } else {
                return Err(Error::UndefinedFunction {
                    name: format!("operator {} {op} {}", l.ty.base_name(), elem.base_name()),
                    span: self.span_of(e),
                });
            };
            (le, r.expr)
        };
        let f = Func::Array(ArrayFunc::Any { op: cmp, all: !any });
        Ok(Typed::known(Expr::Func(f, vec![le, re]), DataType::Bool))
    }

    /// An `anyarray` argument: a typed array, or an untyped literal read as the array of
    /// `elem`'s type.
    fn anyarray(
        &mut self,
        t: Typed,
        elem: Option<&Typed>,
        e: &AstExpr,
    ) -> Result<(Expr, DataType)> {
        if is_array(&t) {
            let ty = t.ty;
            return Ok((t.expr, ty));
        }
        if !t.unknown {
            return Err(Error::UndefinedFunction { name: String::new(), span: None });
        }
        let Some(elem) = elem.filter(|x| !x.unknown) else { return Err(polymorphic_unknown()) };
        let ty = array_type_of(elem.ty)
            .ok_or_else(|| Error::unsupported(format!("arrays of {}", elem.ty.base_name())))?;
        Ok((self.coerce(t, ty, CastKind::Implicit, e)?, ty))
    }

    /// A call of array function `f` (named `name`).
    pub(super) fn bind_array_function(
        &mut self,
        f: ArrayFunc,
        name: &str,
        args: Vec<Typed>,
        e: &AstExpr,
    ) -> Result<Typed> {
        let described = args.iter().map(type_name).collect::<Vec<_>>().join(", ");
        let no_function = |b: &Self| Error::UndefinedFunction {
            name: format!("function {name}({described})"),
            span: b.span_of(e),
        };
        self.array_function(f, args, e).map_err(|err| match err {
            Error::UndefinedFunction { name, .. } if name.is_empty() => no_function(self),
            other => other,
        })
    }

    fn array_function(&mut self, f: ArrayFunc, args: Vec<Typed>, e: &AstExpr) -> Result<Typed> {
        use ArrayFunc as F;
        let no_function = || Error::UndefinedFunction { name: String::new(), span: None };
        let arity = match f {
            F::Ndims | F::Dims | F::Cardinality => 1..=1,
            F::Position | F::ToString | F::FromString => 2..=3,
            F::Replace => 3..=3,
            _ => 2..=2,
        };
        if !arity.contains(&args.len()) {
            return Err(no_function());
        }
        let mut args = args.into_iter();
        let mut next = move || args.next();
        let call = |f: F, args: Vec<Expr>, ty: DataType| {
            Ok(Typed::known(Expr::Func(Func::Array(f), args), ty))
        };
        let first = next().expect("arity checked");
        match f {
            F::Length | F::Lower | F::Upper | F::Ndims | F::Dims | F::Cardinality => {
                let (a, _) = self.anyarray(first, None, e)?;
                let mut out = vec![a];
                if let Some(dim) = next() {
                    out.push(self.coerce(dim, DataType::Int32, CastKind::Implicit, e)?);
                }
                let ty = if f == F::Dims { DataType::Text } else { DataType::Int32 };
                call(f, out, ty)
            }
            F::Append | F::Position | F::Positions | F::Remove | F::Replace => {
                let x = next().expect("arity checked");
                let third = next();
                let mut elems = vec![x];
                let mut start = None;
                match third {
                    Some(y) if f == F::Replace => elems.push(y),
                    Some(s) => start = Some(s),
                    None => {}
                }
                let (a, x, ty) = self.compatible(vec![first], elems, e)?;
                let mut out: Vec<Expr> = a.into_iter().chain(x).collect();
                if let Some(s) = start {
                    out.push(self.coerce(s, DataType::Int32, CastKind::Implicit, e)?);
                }
                let ty = match f {
                    F::Position => DataType::Int32,
                    F::Positions => DataType::Array(ArrayElem::Int32),
                    _ => ty,
                };
                call(f, out, ty)
            }
            F::Prepend => {
                let a = next().expect("arity checked");
                let (a, x, ty) = self.compatible(vec![a], vec![first], e)?;
                call(f, x.into_iter().chain(a).collect(), ty)
            }
            F::Cat => {
                let r = next().expect("arity checked");
                let (a, _, ty) = self.compatible(vec![first, r], vec![], e)?;
                call(f, a, ty)
            }
            F::ToString => {
                let (a, _) = self.anyarray(first, None, e)?;
                let mut out = vec![a];
                while let Some(t) = next() {
                    out.push(self.text_expr(t, e)?);
                }
                call(f, out, DataType::Text)
            }
            F::FromString => {
                let mut out = vec![self.text_expr(first, e)?];
                while let Some(t) = next() {
                    out.push(self.text_expr(t, e)?);
                }
                call(f, out, DataType::Array(ArrayElem::Text))
            }
            F::Build
            | F::Subscript
            | F::Slice { .. }
            | F::Contains
            | F::Overlaps
            | F::Any { .. }
            | F::Like { .. } => Err(no_function()),
        }
    }

    /// `unnest(array) [WITH ORDINALITY] [AS alias [(names)]]` in FROM, its argument bound
    /// against `scope` (the items before it, for an implicitly LATERAL one: as outer columns).
    /// The element column is named `unnest`, or after the alias; the position column
    /// `ordinality`.
    pub(super) fn bind_unnest(
        &mut self,
        exprs: &[AstExpr],
        alias: Option<&ast::TableAlias>,
        ordinality: bool,
    ) -> Result<(Plan, Scope)> {
        let rel = alias.map(|a| ident(&a.name)).unwrap_or_else(|| "unnest".into());
        let mut args = Vec::with_capacity(exprs.len());
        let mut columns = Vec::with_capacity(exprs.len() + 1);
        for x in exprs {
            let t = self.bind_expr(x, &Scope::default())?;
            if t.unknown {
                return Err(Error::AmbiguousFunction {
                    name: "function unnest(unknown)".into(),
                    span: None,
                });
            }
            let Some(elem) = t.ty.element() else {
                return Err(Error::UndefinedFunction {
                    name: format!("function unnest({})", t.ty.base_name()),
                    span: self.span_of(x),
                });
            };
            // One array's column is named after the relation; several are each `unnest`.
            let name = if exprs.len() == 1 { rel.clone() } else { "unnest".into() };
            columns.push((name, elem));
            args.push(t.expr);
        }
        if args.is_empty() {
            return Err(Error::UndefinedFunction { name: "function unnest()".into(), span: None });
        }
        if ordinality {
            columns.push(("ordinality".into(), DataType::Int64));
        }
        let scope = super::select::function_scope(rel, alias, columns)?;
        Ok((Plan::Unnest { args, ordinality }, scope))
    }

    /// `ARRAY(subquery)`: the subquery's one column, its rows in order, as an array (`{}` when
    /// there are none) — array_agg over the subquery's plan. `too_many`: the error's message
    /// for a subquery of more columns.
    pub(super) fn bind_array_subquery(
        &mut self,
        q: &ast::Query,
        scope: &Scope,
        e: &AstExpr,
        too_many: &str,
    ) -> Result<Typed> {
        let (plan, cols) = self.bind_subquery(q, scope)?;
        if cols.len() != 1 {
            return Err(Error::SyntaxMisuse { message: too_many.into(), span: self.span_of(e) });
        }
        let elem = cols[0].data_type;
        if elem.element().is_some() {
            return Err(Error::unsupported("ARRAY(subquery) of arrays (multidimensional arrays)"));
        }
        let ty = array_type_of(elem)
            .ok_or_else(|| Error::unsupported(format!("arrays of {}", elem.base_name())))?;
        let agg = AggCall {
            func: AggFunc::ArrayAgg,
            arg: Some(Expr::Column(0)),
            distinct: false,
            data_type: ty,
            delimiter: None,
            filter: None,
            order_by: Vec::new(),
            grouping: Vec::new(),
        };
        let aggregate = Plan::Aggregate {
            input: Box::new(plan),
            group_by: Vec::new(),
            aggs: vec![agg],
            sets: Vec::new(),
        };
        let empty = Expr::Literal(Value::Array(std::sync::Arc::new(Vec::new())));
        let plan = Plan::Project {
            input: Box::new(aggregate),
            exprs: vec![Expr::Coalesce(vec![Expr::Column(0), empty])],
        };
        Ok(Typed::known(Expr::Subquery(Box::new(plan)), ty))
    }

    /// `x [NOT] [I]LIKE ANY (patterns)`: over `ARRAY[…]`, one LIKE per pattern joined by OR;
    /// over an array value, each of its elements.
    pub(super) fn bind_like_any(
        &mut self,
        x: &AstExpr,
        patterns: &AstExpr,
        ci: bool,
        negated: bool,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let t = self.bind_expr(x, scope)?;
        let x = self.text_expr(t, e)?;
        if let AstExpr::Array(array) = super::expr::strip(patterns) {
            let mut out: Option<Expr> = None;
            for p in &array.elem {
                let t = self.bind_expr(p, scope)?;
                let p = self.text_expr(t, e)?;
                let like = Expr::Like(Box::new(x.clone()), Box::new(p), ci, negated);
                out = Some(match out {
                    None => like,
                    Some(acc) => Expr::Or(Box::new(acc), Box::new(like)),
                });
            }
            let out = out.unwrap_or(Expr::Literal(Value::Bool(false)));
            return Ok(Typed::known(out, DataType::Bool));
        }
        let p = self.bind_expr(patterns, scope)?;
        let text_array = DataType::Array(ArrayElem::Text);
        let p = match p.ty.element() {
            _ if p.unknown => self.coerce(p, text_array, CastKind::Implicit, e)?,
            Some(elem) if types::is_string(&elem) => p.expr,
            _ => {
                return Err(Error::UndefinedFunction {
                    name: format!("operator text ~~ {}", type_name(&p)),
                    span: self.span_of(e),
                })
            }
        };
        let f = Func::Array(ArrayFunc::Like { ci, negated });
        Ok(Typed::known(Expr::Func(f, vec![x, p]), DataType::Bool))
    }
}
