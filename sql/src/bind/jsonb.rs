//! Binding the jsonb operators and functions as PostgreSQL 15 resolves them.
//!
//! `->` and `->>` take a key (`text`; an untyped literal is text, PostgreSQL's preferred
//! string type) or an array index (`integer`). `@>`, `<@`, `||` take jsonb on both sides
//! (an untyped literal is read as jsonb); `jsonb || text` is text concatenation, as in
//! PostgreSQL. A path — the `text[]` of `#>`, `#>>`, `#-`, `?|`, `?&` and `jsonb_set` —
//! must be a constant (`'{a,b}'` or `ARRAY['a', 'b']`): it is split
//! into one text argument per step here; any other `text[]` is `0A000`.

use catalog::DataType;
use sqlparser::ast::{self as ast, BinaryOperator, Expr as AstExpr};

use super::expr::Typed;
use super::{Binder, Scope};
use crate::error::{Error, Result};
use crate::plan::{Expr, Func, JsonbFunc};
use crate::types::{CastKind, Value};

/// Is `t` a (typed) jsonb expression?
pub(super) fn is_jsonb(t: &Typed) -> bool {
    !t.unknown && t.ty == DataType::Jsonb
}

impl Binder<'_> {
    /// A whole-row reference as a JSON value: `a` is a bare name that is no column at any
    /// level but a relation of `scope` (`to_jsonb(r)`, `json_agg(t)`). Its columns become a
    /// jsonb object, or (`json`) a json one in row_to_json's layout. `None` for anything else.
    pub(super) fn row_value(
        &mut self,
        a: &AstExpr,
        scope: &Scope,
        json: bool,
    ) -> Result<Option<Typed>> {
        let AstExpr::Identifier(id) = a else { return Ok(None) };
        let name = super::ident(id);
        let columns: Vec<(usize, &super::ScopeColumn)> = scope
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.hidden && c.relation.as_deref() == Some(name.as_str()))
            .collect();
        if columns.is_empty() || self.bind_expr(a, scope).is_ok() {
            return Ok(None);
        }
        // A table's column that can never be NULL is NULL only in the row an outer join made
        // up: that row is NULL as a whole, as in PostgreSQL (not an object of nulls).
        let made_up = columns.iter().find_map(|(i, c)| {
            let (oid, attnum) = c.source?;
            let table = self.snapshot.tables().find(|t| t.id.oid() == oid)?;
            let column = table.columns.get(usize::try_from(attnum - 1).ok()?)?;
            let pk = table.primary_index().filter(|_| !table.hidden_pk);
            let never_null =
                column.not_null || pk.is_some_and(|pk| pk.columns.contains(&column.position));
            never_null.then_some(*i)
        });
        let mut args = Vec::with_capacity(2 * columns.len());
        for (i, c) in columns {
            args.push(Expr::Literal(Value::Text(c.name.clone())));
            args.push(Expr::Column(i));
        }
        let (f, ty) = match json {
            true => (JsonbFunc::JsonRow, DataType::Json),
            false => (JsonbFunc::BuildObject, DataType::Jsonb),
        };
        let row = Expr::Func(Func::Jsonb(f), args);
        let row = match made_up {
            Some(i) => Expr::Case(
                vec![(Expr::IsNull(Box::new(Expr::Column(i)), false), Expr::Literal(Value::Null))],
                Some(Box::new(row)),
            ),
            None => row,
        };
        Ok(Some(Typed::known(row, ty)))
    }

    /// The operators only jsonb has: `->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`, `?&`, `#-`.
    pub(super) fn bind_jsonb_operator(
        &mut self,
        left: &AstExpr,
        op: &BinaryOperator,
        right: &AstExpr,
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        use BinaryOperator as B;
        let l = self.bind_expr(left, scope)?;
        let sym = op.to_string();
        // The right operand of a path operator is a text[] constant.
        if matches!(
            op,
            B::HashArrow | B::HashLongArrow | B::QuestionAnd | B::QuestionPipe | B::HashMinus
        ) {
            // json has #> and #>> too; the others are jsonb's.
            let json = is_json(&l) && matches!(op, B::HashArrow | B::HashLongArrow);
            let l = if json { l.expr } else { self.jsonb_operand(l, right, &sym, e)? };
            let steps = self.text_array_constant(right, scope)?;
            let f = match op {
                B::HashArrow => JsonbFunc::Path,
                B::HashLongArrow => JsonbFunc::PathText,
                B::QuestionAnd => JsonbFunc::ExistsAll,
                B::QuestionPipe => JsonbFunc::ExistsAny,
                _ => JsonbFunc::DeletePath,
            };
            let mut args = vec![l];
            args.extend(steps);
            return Ok(Typed::known(Expr::Func(Func::Jsonb(f), args), result_of(f, json)));
        }
        let r = self.bind_expr(right, scope)?;
        match op {
            B::Arrow | B::LongArrow => {
                let f = if matches!(op, B::Arrow) { JsonbFunc::Get } else { JsonbFunc::GetText };
                if l.unknown && r.unknown {
                    return Err(self.no_operator(&l, &sym, &r, e, true));
                }
                let json = is_json(&l);
                let le = if json {
                    l.expr.clone()
                } else {
                    self.jsonb_operand(l.clone(), left, &sym, e)
                        .map_err(|_| self.no_operator(&l, &sym, &r, e, false))?
                };
                let re = match r.ty {
                    _ if r.unknown => self.coerce(r, DataType::Text, CastKind::Implicit, e)?,
                    DataType::Int16 | DataType::Int32 => {
                        self.coerce(r, DataType::Int32, CastKind::Implicit, e)?
                    }
                    DataType::Text | DataType::Varchar(_) | DataType::Char(_) => {
                        self.text_expr(r, e)?
                    }
                    _ => return Err(self.no_operator(&l, &sym, &r, e, false)),
                };
                Ok(Typed::known(Expr::Func(Func::Jsonb(f), vec![le, re]), result_of(f, json)))
            }
            B::AtArrow | B::ArrowAt => {
                if l.unknown && r.unknown {
                    return Err(self.no_operator(&l, &sym, &r, e, true));
                }
                if !(is_jsonb(&l) || l.unknown) || !(is_jsonb(&r) || r.unknown) {
                    return Err(self.no_operator(&l, &sym, &r, e, false));
                }
                let le = self.coerce(l, DataType::Jsonb, CastKind::Implicit, e)?;
                let re = self.coerce(r, DataType::Jsonb, CastKind::Implicit, e)?;
                let args = if matches!(op, B::AtArrow) { vec![le, re] } else { vec![re, le] };
                Ok(Typed::known(Expr::Func(Func::Jsonb(JsonbFunc::Contains), args), DataType::Bool))
            }
            B::Question => {
                if !is_jsonb(&l) || !(r.unknown || super::func::is_text(&r.ty)) {
                    return Err(self.no_operator(&l, &sym, &r, e, false));
                }
                let re = self.text_expr(r, e)?;
                Ok(Typed::known(
                    Expr::Func(Func::Jsonb(JsonbFunc::Exists), vec![l.expr, re]),
                    DataType::Bool,
                ))
            }
            other => Err(Error::Unsupported {
                feature: format!("operator {other}"),
                span: self.span_of(e),
            }),
        }
    }

    /// `jsonb || jsonb` (an untyped side read as jsonb), if that is what `l || r` is.
    pub(super) fn bind_jsonb_concat(&mut self, l: Typed, r: Typed, e: &AstExpr) -> Result<Typed> {
        let le = self.coerce(l, DataType::Jsonb, CastKind::Implicit, e)?;
        let re = self.coerce(r, DataType::Jsonb, CastKind::Implicit, e)?;
        Ok(Typed::known(Expr::Func(Func::Jsonb(JsonbFunc::Concat), vec![le, re]), DataType::Jsonb))
    }

    /// `jsonb - text` (an untyped literal is text) or `jsonb - integer`.
    pub(super) fn bind_jsonb_delete(&mut self, l: Typed, r: Typed, e: &AstExpr) -> Result<Typed> {
        let re = match r.ty {
            _ if r.unknown => self.coerce(r, DataType::Text, CastKind::Implicit, e)?,
            DataType::Int16 | DataType::Int32 => {
                self.coerce(r, DataType::Int32, CastKind::Implicit, e)?
            }
            t if super::func::is_text(&t) => self.text_expr(r, e)?,
            _ => return Err(self.no_operator(&l, "-", &r, e, false)),
        };
        Ok(Typed::known(
            Expr::Func(Func::Jsonb(JsonbFunc::Delete), vec![l.expr, re]),
            DataType::Jsonb,
        ))
    }

    /// The jsonb functions; `None` if `name` is not one.
    pub(super) fn bind_jsonb_function(
        &mut self,
        name: &str,
        args: Vec<Typed>,
        ast_args: &[&AstExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Option<Result<Typed>> {
        if let Some(jsonb_name) = name.strip_prefix("json_") {
            // The json functions Aspen has: jsonb's, over json.
            let f = match jsonb_name {
                "typeof" => JsonbFunc::Typeof,
                "array_length" => JsonbFunc::ArrayLength,
                "extract_path" => JsonbFunc::Path,
                "extract_path_text" => JsonbFunc::PathText,
                "build_object" => JsonbFunc::JsonBuildObject,
                "build_array" => JsonbFunc::JsonBuildArray,
                _ => return unsupported_json_function(name),
            };
            return Some(self.jsonb_function(name, f, true, args, ast_args, scope, e));
        }
        let f = match name {
            // Of a whole row only: [`Binder::row_value`] has made it json already.
            "row_to_json" => match args.as_slice() {
                [a] if is_json_row(&a.expr) => {
                    return Some(Ok(args.into_iter().next().expect("one")))
                }
                _ => return Some(Err(self.no_function(name, &args, e))),
            },
            "to_json" => JsonbFunc::ToJson,
            "jsonb_typeof" => JsonbFunc::Typeof,
            "jsonb_array_length" => JsonbFunc::ArrayLength,
            "jsonb_strip_nulls" => JsonbFunc::StripNulls,
            "jsonb_pretty" => JsonbFunc::Pretty,
            "to_jsonb" => JsonbFunc::ToJsonb,
            "jsonb_build_object" => JsonbFunc::BuildObject,
            "jsonb_build_array" => JsonbFunc::BuildArray,
            "jsonb_extract_path" => JsonbFunc::Path,
            "jsonb_extract_path_text" => JsonbFunc::PathText,
            "jsonb_set" => JsonbFunc::Set,
            _ => return unsupported_json_function(name),
        };
        Some(self.jsonb_function(name, f, false, args, ast_args, scope, e))
    }

    /// A jsonb function, or (`json`) the json function of the same name.
    #[allow(clippy::too_many_arguments)]
    fn jsonb_function(
        &mut self,
        name: &str,
        f: JsonbFunc,
        json: bool,
        args: Vec<Typed>,
        ast_args: &[&AstExpr],
        scope: &Scope,
        e: &AstExpr,
    ) -> Result<Typed> {
        let ret = result_of(f, json);
        let n = args.len();
        let doc = if json { DataType::Json } else { DataType::Jsonb };
        let jsonb_first = |args: &[Typed]| args.first().is_some_and(|a| a.unknown || a.ty == doc);
        let out = match f {
            JsonbFunc::Typeof
            | JsonbFunc::ArrayLength
            | JsonbFunc::StripNulls
            | JsonbFunc::Pretty => {
                if n != 1 || !jsonb_first(&args) {
                    return Err(self.no_function(name, &args, e));
                }
                let a = args.into_iter().next().expect("one");
                vec![self.coerce(a, doc, CastKind::Implicit, e)?]
            }
            JsonbFunc::ToJsonb | JsonbFunc::ToJson => {
                if n != 1 {
                    return Err(self.no_function(name, &args, e));
                }
                if args[0].unknown {
                    return Err(Error::DatatypeMismatch {
                        message:
                            "could not determine polymorphic type because input has type unknown"
                                .into(),
                        span: self.span_of(e),
                    });
                }
                args.into_iter().map(|a| a.expr).collect()
            }
            JsonbFunc::BuildObject
            | JsonbFunc::BuildArray
            | JsonbFunc::JsonBuildObject
            | JsonbFunc::JsonBuildArray => {
                let mut out = Vec::with_capacity(n);
                for a in args {
                    // VARIADIC "any": an untyped literal is text.
                    out.push(if a.unknown {
                        self.coerce(a, DataType::Text, CastKind::Implicit, e)?
                    } else {
                        a.expr
                    });
                }
                out
            }
            JsonbFunc::Path | JsonbFunc::PathText => {
                if n < 1 || !jsonb_first(&args) {
                    return Err(self.no_function(name, &args, e));
                }
                if args[1..].iter().any(|a| !(a.unknown || super::func::is_text(&a.ty))) {
                    return Err(self.no_function(name, &args, e));
                }
                let mut it = args.into_iter();
                let mut out =
                    vec![self.coerce(it.next().expect("one"), doc, CastKind::Implicit, e)?];
                for a in it {
                    out.push(self.text_expr(a, e)?);
                }
                out
            }
            JsonbFunc::Set => {
                if !(3..=4).contains(&n) || !jsonb_first(&args) {
                    return Err(self.no_function(name, &args, e));
                }
                let mut it = args.into_iter();
                let target =
                    self.coerce(it.next().expect("3"), DataType::Jsonb, CastKind::Implicit, e)?;
                let _path = it.next();
                let new = it.next().expect("3");
                if !(is_jsonb(&new) || new.unknown) {
                    return Err(Error::UndefinedFunction {
                        name: format!(
                            "function jsonb_set(jsonb, text[], {}{})",
                            new.ty.base_name(),
                            if n == 4 { ", boolean" } else { "" }
                        ),
                        span: self.span_of(e),
                    });
                }
                let new = self.coerce(new, DataType::Jsonb, CastKind::Implicit, e)?;
                let create = match it.next() {
                    Some(c) => self.coerce(c, DataType::Bool, CastKind::Implicit, e)?,
                    None => Expr::Literal(Value::Bool(true)),
                };
                let mut out = vec![target, new, create];
                out.extend(self.text_array_constant(ast_args[1], scope)?);
                out
            }
            _ => unreachable!("not a function"),
        };
        Ok(Typed::known(Expr::Func(Func::Jsonb(f), out), ret))
    }

    /// A jsonb left operand: a jsonb expression, or an untyped literal read as jsonb.
    fn jsonb_operand(&mut self, l: Typed, _node: &AstExpr, sym: &str, e: &AstExpr) -> Result<Expr> {
        if is_jsonb(&l) || l.unknown {
            return self.coerce(l, DataType::Jsonb, CastKind::Implicit, e);
        }
        Err(Error::UndefinedFunction {
            name: format!("operator {} {sym} text[]", l.ty.base_name()),
            span: self.span_of(e),
        })
    }

    /// `42883` operator does not exist (or `42725` not unique, for two untyped operands).
    fn no_operator(&self, l: &Typed, sym: &str, r: &Typed, e: &AstExpr, ambiguous: bool) -> Error {
        let name = |t: &Typed| if t.unknown { "unknown".to_string() } else { t.ty.base_name() };
        let name = format!("operator {} {sym} {}", name(l), name(r));
        if ambiguous {
            Error::AmbiguousFunction { name, span: self.span_of(e) }
        } else {
            Error::UndefinedFunction { name, span: self.span_of(e) }
        }
    }

    /// The steps of a constant `text[]`: `'{a,b}'` (optionally `::text[]`) or `ARRAY['a',
    /// 'b']`, one text expression each (NULL for a NULL element).
    fn text_array_constant(&mut self, node: &AstExpr, scope: &Scope) -> Result<Vec<Expr>> {
        let literal = |s: &str| -> Result<Vec<Expr>> {
            Ok(crate::types::array::split_text(s)?
                .into_iter()
                .map(|x| Expr::Literal(x.map_or(Value::Null, Value::Text)))
                .collect())
        };
        match node {
            AstExpr::Nested(inner) => self.text_array_constant(inner, scope),
            AstExpr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                    literal(s)
                }
                _ => Err(Error::unsupported("a jsonb path that is not a text[] constant")),
            },
            AstExpr::Cast { expr, data_type: ast::DataType::Array(_), .. } => {
                self.text_array_constant(expr, scope)
            }
            AstExpr::Array(array) => {
                let mut out = Vec::with_capacity(array.elem.len());
                for el in &array.elem {
                    let t = self.bind_expr(el, scope)?;
                    out.push(self.text_expr(t, el)?);
                }
                Ok(out)
            }
            _ => Err(Error::unsupported("a jsonb path that is not a text[] constant")),
        }
    }
}

/// Is `e` a whole row as json ([`Binder::row_value`])?
fn is_json_row(e: &Expr) -> bool {
    match e {
        Expr::Func(Func::Jsonb(JsonbFunc::JsonRow), _) => true,
        Expr::Case(_, Some(row)) => is_json_row(row),
        _ => false,
    }
}

/// Is `t` a (typed) json expression?
pub(super) fn is_json(t: &Typed) -> bool {
    !t.unknown && t.ty == DataType::Json
}

/// PostgreSQL's json and jsonb functions Aspen does not have: `0A000` rather than "does not
/// exist"; any other name is not a function (`None`).
fn unsupported_json_function(name: &str) -> Option<Result<Typed>> {
    const KNOWN: &[&str] = &[
        "json_object",
        "json_populate_record",
        "json_populate_recordset",
        "json_to_record",
        "json_to_recordset",
        "json_strip_nulls",
        "jsonb_object",
        "jsonb_insert",
        "jsonb_set_lax",
        "jsonb_populate_record",
        "jsonb_populate_recordset",
        "jsonb_to_record",
        "jsonb_to_recordset",
        "jsonb_path_exists",
        "jsonb_path_match",
        "jsonb_path_query",
        "jsonb_path_query_array",
        "jsonb_path_query_first",
    ];
    KNOWN.contains(&name).then(|| Err(Error::unsupported(format!("function {name}"))))
}

/// The result type of an operator or function over json (`json`) or jsonb.
fn result_of(f: JsonbFunc, json: bool) -> DataType {
    match f {
        JsonbFunc::Get | JsonbFunc::Path if json => DataType::Json,
        JsonbFunc::ToJson | JsonbFunc::JsonBuildObject | JsonbFunc::JsonBuildArray => {
            DataType::Json
        }
        _ => jsonb_result(f),
    }
}

/// The result type of a jsonb operator or function.
fn jsonb_result(f: JsonbFunc) -> DataType {
    match f {
        JsonbFunc::GetText | JsonbFunc::PathText | JsonbFunc::Typeof | JsonbFunc::Pretty => {
            DataType::Text
        }
        JsonbFunc::Contains | JsonbFunc::Exists | JsonbFunc::ExistsAny | JsonbFunc::ExistsAll => {
            DataType::Bool
        }
        JsonbFunc::ArrayLength => DataType::Int32,
        _ => DataType::Jsonb,
    }
}
