//! Resolving the built-in text and math functions the way PostgreSQL 15's function
//! resolution does for their `pg_proc` candidates.
//!
//! PostgreSQL keeps the candidates whose parameters every argument reaches by an implicit
//! cast, then prefers exact type matches, then its preferred type (`double precision` in the
//! numeric category). For the families here that comes down to:
//!
//! | family | candidates | an argument of type … picks |
//! |---|---|---|
//! | `sqrt exp ln log log10 sign power` | `float8`, `numeric` | `numeric` (and no float) → numeric; otherwise float8 |
//! | `cbrt` | `float8` | float8 |
//! | `log(b, x) div` | `numeric` | numeric (floats do not cast implicitly: 42883) |
//! | `gcd lcm` | `int4`, `int8`, `numeric` | the widest of int4 < int8 < numeric; only smallint/unknown: 42725 |
//! | `to_hex` | `int4`, `int8` | int4 or int8; smallint/unknown: 42725 |
//! | text functions | `text` (and `int4` counts) | text, varchar, char and unknown; anything else: 42883 |
//!
//! Untyped literals (`unknown`) take the chosen parameter type, so `repeat('x', '3')` works.
//! `greatest`/`least` resolve like `COALESCE`. `pg_typeof` is answered here, from the bound type.

use catalog::DataType;
use sqlparser::ast::Expr as AstExpr;

use super::expr::{fold_cast, is_numeric, Typed};
use super::Binder;
use crate::error::{Error, Result};
use crate::plan::{AdvisoryCall, AdvisoryOp, Expr, Func};
use crate::types::{CastKind, Value};

/// Is `ty` one of the string types (text, varchar, char)?
pub(super) fn is_text(ty: &DataType) -> bool {
    matches!(ty, DataType::Text | DataType::Varchar(_) | DataType::Char(_))
}

/// The type name PostgreSQL prints for an argument in "function f(...) does not exist".
fn arg_type_name(t: &Typed) -> String {
    if t.unknown {
        return "unknown".into();
    }
    t.ty.base_name()
}

/// `name(type, …)` as PostgreSQL prints a call signature.
pub(super) fn signature(name: &str, args: &[Typed]) -> String {
    let types: Vec<String> = args.iter().map(arg_type_name).collect();
    format!("{name}({})", types.join(", "))
}

impl Binder<'_> {
    /// `42883` "function name(types) does not exist".
    pub(super) fn no_function(&self, name: &str, args: &[Typed], e: &AstExpr) -> Error {
        if name == "set_config" && args.len() == 3 {
            // Only `SELECT set_config(constants)` alone (`ddl::set_config_command`).
            return Error::unsupported("set_config other than alone in a SELECT, with constants");
        }
        Error::UndefinedFunction {
            name: format!("function {}", signature(name, args)),
            span: self.span_of(e),
        }
    }

    /// `42725` "function name(types) is not unique".
    pub(super) fn ambiguous(&self, name: &str, args: &[Typed], e: &AstExpr) -> Error {
        Error::AmbiguousFunction {
            name: format!("function {}", signature(name, args)),
            span: self.span_of(e),
        }
    }

    /// Binds a call of one of the functions in the module doc; `42883` for any other name or
    /// argument list.
    pub(super) fn bind_builtin(
        &mut self,
        name: &str,
        args: Vec<Typed>,
        e: &AstExpr,
    ) -> Result<Typed> {
        use DataType as T;
        let text = |b: &mut Self, params: &[P], ret: DataType, f: Func, args: Vec<Typed>| {
            b.bind_fixed(name, params, ret, f, args, e)
        };
        match (name, args.len()) {
            ("repeat", 2) => text(self, &[P::Text, P::Int], T::Text, Func::Repeat, args),
            ("replace", 3) => {
                text(self, &[P::Text, P::Text, P::Text], T::Text, Func::Replace, args)
            }
            ("left", 2) => text(self, &[P::Text, P::Int], T::Text, Func::Left, args),
            ("right", 2) => text(self, &[P::Text, P::Int], T::Text, Func::Right, args),
            ("lpad", 2) => text(self, &[P::Text, P::Int], T::Text, Func::LPad, args),
            ("lpad", 3) => text(self, &[P::Text, P::Int, P::Text], T::Text, Func::LPad, args),
            ("rpad", 2) => text(self, &[P::Text, P::Int], T::Text, Func::RPad, args),
            ("rpad", 3) => text(self, &[P::Text, P::Int, P::Text], T::Text, Func::RPad, args),
            ("strpos", 2) => text(self, &[P::Text, P::Text], T::Int32, Func::StrPos, args),
            ("split_part", 3) => {
                text(self, &[P::Text, P::Text, P::Int], T::Text, Func::SplitPart, args)
            }
            ("reverse", 1) => text(self, &[P::Text], T::Text, Func::Reverse, args),
            // char(n) counts its padding: the value as stored, not cast to text.
            ("octet_length", 1) if matches!(args[0].ty, T::Char(_)) && !args[0].unknown => {
                let a = args.into_iter().next().expect("one arg");
                Ok(Typed::known(Expr::Func(Func::OctetLength, vec![a.expr]), T::Int32))
            }
            ("octet_length", 1) => text(self, &[P::Text], T::Int32, Func::OctetLength, args),
            ("quote_literal" | "quote_nullable", 1) => {
                let f =
                    if name == "quote_literal" { Func::QuoteLiteral } else { Func::QuoteNullable };
                let a = args.into_iter().next().expect("one arg");
                // quote_literal(anyelement) is quote_literal($1::text).
                let a = self.text_expr(a, e)?;
                Ok(Typed::known(Expr::Func(f, vec![a]), T::Text))
            }
            ("num_nulls" | "num_nonnulls", n) if n >= 1 => {
                let f = if name == "num_nulls" { Func::NumNulls } else { Func::NumNonNulls };
                let exprs = args.into_iter().map(|a| a.expr).collect();
                Ok(Typed::known(Expr::Func(f, exprs), T::Int32))
            }
            ("quote_ident", 1) => text(self, &[P::Text], T::Text, Func::QuoteIdent, args),
            ("format", n) if n >= 1 => {
                if !P::Text.accepts(&args[0]) {
                    return Err(self.no_function(name, &args, e));
                }
                let mut out = Vec::with_capacity(args.len());
                for (i, a) in args.into_iter().enumerate() {
                    // The format is text; the values print as their types' output (an
                    // untyped literal is text).
                    out.push(if i == 0 || a.unknown {
                        self.coerce_implicit(a, T::Text, e)?
                    } else {
                        a.expr
                    });
                }
                Ok(Typed::known(Expr::Func(Func::Format, out), T::Text))
            }
            ("encode", 2) => {
                if (!args[0].unknown && args[0].ty != T::Bytea) || !P::Text.accepts(&args[1]) {
                    return Err(self.no_function(name, &args, e));
                }
                let mut args = args.into_iter();
                let (data, format) = (args.next().expect("2"), args.next().expect("2"));
                let data = self.coerce_implicit(data, T::Bytea, e)?;
                let format = self.coerce_implicit(format, T::Text, e)?;
                Ok(Typed::known(Expr::Func(Func::Encode, vec![data, format]), T::Text))
            }
            ("decode", 2) => text(self, &[P::Text, P::Text], T::Bytea, Func::Decode, args),
            ("degrees", 1) => {
                self.bind_fixed(name, &[P::Float], T::Float64, Func::Degrees, args, e)
            }
            ("radians", 1) => {
                self.bind_fixed(name, &[P::Float], T::Float64, Func::Radians, args, e)
            }
            ("initcap", 1) => text(self, &[P::Text], T::Text, Func::InitCap, args),
            ("starts_with", 2) => text(self, &[P::Text, P::Text], T::Bool, Func::StartsWith, args),
            ("ascii", 1) => text(self, &[P::Text], T::Int32, Func::Ascii, args),
            ("chr", 1) => text(self, &[P::Int], T::Text, Func::Chr, args),
            ("translate", 3) => {
                text(self, &[P::Text, P::Text, P::Text], T::Text, Func::Translate, args)
            }
            ("md5", 1) if !args[0].unknown && args[0].ty == T::Bytea => {
                let a = args.into_iter().next().expect("one arg");
                Ok(Typed { expr: Expr::Func(Func::Md5, vec![a.expr]), ty: T::Text, unknown: false })
            }
            ("md5", 1) => text(self, &[P::Text], T::Text, Func::Md5, args),
            ("to_hex", 1) => {
                let a = &args[0];
                if a.unknown || a.ty == T::Int16 {
                    return Err(self.ambiguous(name, &args, e));
                }
                if !matches!(a.ty, T::Int32 | T::Int64) {
                    return Err(self.no_function(name, &args, e));
                }
                let a = args.into_iter().next().expect("one arg");
                Ok(Typed {
                    expr: Expr::Func(Func::ToHex, vec![a.expr]),
                    ty: T::Text,
                    unknown: false,
                })
            }
            ("greatest" | "least", n) if n >= 1 => {
                let what = if name == "greatest" { "GREATEST" } else { "LEAST" };
                let refs: Vec<&Typed> = args.iter().collect();
                let ty = self.common_of(&refs, e, what)?;
                let out = args
                    .into_iter()
                    .map(|a| self.coerce(a, ty, CastKind::Implicit, e))
                    .collect::<Result<Vec<_>>>()?;
                let f = if name == "greatest" { Func::Greatest } else { Func::Least };
                Ok(Typed { expr: Expr::Func(f, out), ty, unknown: false })
            }
            ("sqrt", 1) => self.bind_float_or_numeric(name, Func::Sqrt, args, e),
            ("exp", 1) => self.bind_float_or_numeric(name, Func::Exp, args, e),
            ("ln", 1) => self.bind_float_or_numeric(name, Func::Ln, args, e),
            ("log" | "log10", 1) => self.bind_float_or_numeric(name, Func::Log10, args, e),
            ("sign", 1) => self.bind_float_or_numeric(name, Func::Sign, args, e),
            ("power" | "pow", 2) => self.bind_float_or_numeric(name, Func::Power, args, e),
            ("cbrt", 1) => self.bind_fixed(name, &[P::Float], T::Float64, Func::Cbrt, args, e),
            ("pi", 0) => self.bind_fixed(name, &[], T::Float64, Func::Pi, args, e),
            ("random", 0) => self.bind_fixed(name, &[], T::Float64, Func::Random, args, e),
            ("current_setting", 1) => {
                self.bind_fixed(name, &[P::Text], T::Text, Func::CurrentSetting, args, e)
            }
            ("current_setting", 2) => {
                let params = [P::Text, P::Bool];
                self.bind_fixed(name, &params, T::Text, Func::CurrentSetting, args, e)
            }
            ("gen_random_uuid", 0) => {
                self.bind_fixed(name, &[], T::Uuid, Func::GenRandomUuid, args, e)
            }
            ("to_regtype", 1) => {
                self.bind_fixed(name, &[P::Text], T::RegType, Func::ToRegType, args, e)
            }
            ("aspen_debug_panic", 0) if cfg!(debug_assertions) => {
                self.bind_fixed(name, &[], T::Bool, Func::DebugPanic, args, e)
            }
            ("pg_sleep", 1) => self.bind_fixed(name, &[P::Float], T::Void, Func::PgSleep, args, e),
            // pg_attrdef's adbin is the expression's text already (`describe::system`).
            ("pg_get_expr", 2 | 3) => {
                let ok = P::Text.accepts(&args[0])
                    && P::BigInt.accepts(&args[1])
                    && args.get(2).is_none_or(|a| P::Bool.accepts(a));
                if !ok {
                    return Err(self.no_function(name, &args, e));
                }
                let a = args.into_iter().next().expect("two or three");
                Ok(Typed::known(self.text_expr(a, e)?, T::Text))
            }
            ("current_schemas", 1) => {
                Err(Error::unsupported("current_schemas other than in = ANY (…) (arrays)"))
            }
            ("pg_is_in_recovery", 0) => {
                Ok(Typed::known(Expr::Literal(crate::types::Value::Bool(false)), T::Bool))
            }
            ("pg_postmaster_start_time", 0) => {
                self.bind_fixed(name, &[], T::TimestampTz, Func::PostmasterStartTime, args, e)
            }
            ("format_type", 2) => {
                let params = [P::BigInt, P::Int];
                self.bind_fixed(name, &params, T::Text, Func::FormatType, args, e)
            }
            // PostgreSQL has it for bigint and numeric: an integer fits both equally.
            ("pg_size_pretty", 1)
                if args[0].unknown || matches!(args[0].ty, T::Int16 | T::Int32) =>
            {
                Err(self.ambiguous(name, &args, e))
            }
            ("pg_size_pretty", 1) => {
                self.bind_fixed(name, &[P::BigInt], T::Text, Func::PgSizePretty, args, e)
            }
            ("pg_backend_pid", 0) => {
                self.bind_fixed(name, &[], T::Int32, Func::BackendPid, args, e)
            }
            (_, 0..=2) if advisory_call(name).is_some() => {
                let call = advisory_call(name).expect("matched");
                let ret = match call.op {
                    AdvisoryOp::Lock | AdvisoryOp::UnlockAll => T::Void,
                    AdvisoryOp::TryLock | AdvisoryOp::Unlock => T::Bool,
                };
                let params: &[P] = match (call.op, args.len()) {
                    (AdvisoryOp::UnlockAll, _) => &[],
                    (_, 1) => &[P::BigInt],
                    _ => &[P::Int, P::Int],
                };
                self.bind_fixed(name, params, ret, Func::Advisory(call), args, e)
            }
            ("log", 2) => {
                let ret = T::Numeric(None);
                self.bind_fixed(name, &[P::Numeric, P::Numeric], ret, Func::Log, args, e)
            }
            ("div", 2) => {
                let ret = T::Numeric(None);
                self.bind_fixed(name, &[P::Numeric, P::Numeric], ret, Func::Div, args, e)
            }
            ("gcd" | "lcm", 2) => {
                let f = if name == "gcd" { Func::Gcd } else { Func::Lcm };
                let mut widest: Option<DataType> = None;
                for a in args.iter().filter(|a| !a.unknown) {
                    let rank = |t: &DataType| match t {
                        T::Int16 => 0,
                        T::Int32 => 1,
                        T::Int64 => 2,
                        _ => 3,
                    };
                    if !matches!(a.ty, T::Int16 | T::Int32 | T::Int64 | T::Numeric(_)) {
                        return Err(self.no_function(name, &args, e));
                    }
                    if widest.is_none_or(|w| rank(&a.ty) > rank(&w)) {
                        widest = Some(a.ty);
                    }
                }
                let ty = match widest {
                    Some(T::Int32) => T::Int32,
                    Some(T::Int64) => T::Int64,
                    Some(T::Numeric(_)) => T::Numeric(None),
                    _ => return Err(self.ambiguous(name, &args, e)),
                };
                let out = args
                    .into_iter()
                    .map(|a| self.coerce_implicit(a, ty, e))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Typed { expr: Expr::Func(f, out), ty, unknown: false })
            }
            // The argument's type name. PostgreSQL returns `regtype`; Aspen has no such type
            // and returns the same text as `text`.
            ("pg_typeof", 1) => Ok(Typed {
                expr: Expr::Literal(Value::Text(arg_type_name(&args[0]))),
                ty: T::Text,
                unknown: false,
            }),
            _ => Err(self.no_function(name, &args, e)),
        }
    }

    /// Binds `position(substring IN string)`: PostgreSQL's `position(string, substring)`.
    pub(super) fn bind_position(
        &mut self,
        needle: Typed,
        hay: Typed,
        e: &AstExpr,
    ) -> Result<Typed> {
        self.bind_fixed(
            "pg_catalog.position",
            &[P::Text, P::Text],
            DataType::Int32,
            Func::StrPos,
            vec![hay, needle],
            e,
        )
    }

    /// An implicit cast of a bound argument to `ty` (unknowns are typed, known types cast).
    pub(super) fn coerce_implicit(&mut self, a: Typed, ty: DataType, e: &AstExpr) -> Result<Expr> {
        if a.unknown || a.ty == ty {
            return self.coerce(a, ty, CastKind::Implicit, e);
        }
        fold_cast(a.expr, a.ty, ty, CastKind::Implicit)
    }

    /// A function with one signature: every argument must reach its parameter type by an
    /// implicit cast.
    fn bind_fixed(
        &mut self,
        name: &str,
        params: &[P],
        ret: DataType,
        f: Func,
        args: Vec<Typed>,
        e: &AstExpr,
    ) -> Result<Typed> {
        if params.len() != args.len() || !params.iter().zip(&args).all(|(p, a)| p.accepts(a)) {
            return Err(self.no_function(name, &args, e));
        }
        let mut out = Vec::with_capacity(args.len());
        for (p, a) in params.iter().zip(args) {
            out.push(match p {
                P::Text => self.text_expr(a, e)?,
                P::Int => self.coerce_implicit(a, DataType::Int32, e)?,
                P::BigInt => self.coerce_implicit(a, DataType::Int64, e)?,
                P::Float => self.coerce_implicit(a, DataType::Float64, e)?,
                P::Numeric => self.coerce_implicit(a, DataType::Numeric(None), e)?,
                P::Bool => self.coerce_implicit(a, DataType::Bool, e)?,
            });
        }
        Ok(Typed { expr: Expr::Func(f, out), ty: ret, unknown: false })
    }

    /// A function with a `double precision` and a `numeric` version (see the module doc).
    fn bind_float_or_numeric(
        &mut self,
        name: &str,
        f: Func,
        args: Vec<Typed>,
        e: &AstExpr,
    ) -> Result<Typed> {
        let known: Vec<&Typed> = args.iter().filter(|a| !a.unknown).collect();
        if known.iter().any(|a| !is_numeric(&a.ty)) {
            return Err(self.no_function(name, &args, e));
        }
        let any_numeric = known.iter().any(|a| matches!(a.ty, DataType::Numeric(_)));
        let any_float = known.iter().any(|a| matches!(a.ty, DataType::Float32 | DataType::Float64));
        let ty =
            if any_numeric && !any_float { DataType::Numeric(None) } else { DataType::Float64 };
        let out =
            args.into_iter().map(|a| self.coerce_implicit(a, ty, e)).collect::<Result<Vec<_>>>()?;
        Ok(Typed { expr: Expr::Func(f, out), ty, unknown: false })
    }
}

/// A parameter type of a fixed signature.
#[derive(Debug, Clone, Copy)]
enum P {
    /// `text`: text, varchar, char or unknown.
    Text,
    /// `integer`: smallint, integer or unknown.
    Int,
    /// `bigint`: smallint, integer, bigint or unknown.
    BigInt,
    /// `double precision`: any numeric type or unknown.
    Float,
    /// `numeric`: the integer types, numeric or unknown.
    Numeric,
    /// `boolean` or unknown.
    Bool,
}

/// The advisory-lock function `name` is, if it is one: `pg_[try_]advisory_[xact_]lock[_shared]`,
/// `pg_advisory_unlock[_shared]` or `pg_advisory_unlock_all`.
fn advisory_call(name: &str) -> Option<AdvisoryCall> {
    use crate::advisory::{Mode, Scope};
    let rest = name.strip_prefix("pg_")?;
    if rest == "advisory_unlock_all" {
        return Some(AdvisoryCall {
            op: AdvisoryOp::UnlockAll,
            mode: Mode::Exclusive,
            scope: Scope::Session,
        });
    }
    let (rest, mode) = match rest.strip_suffix("_shared") {
        Some(r) => (r, Mode::Shared),
        None => (rest, Mode::Exclusive),
    };
    let (op, scope) = match rest {
        "advisory_lock" => (AdvisoryOp::Lock, Scope::Session),
        "advisory_xact_lock" => (AdvisoryOp::Lock, Scope::Transaction),
        "try_advisory_lock" => (AdvisoryOp::TryLock, Scope::Session),
        "try_advisory_xact_lock" => (AdvisoryOp::TryLock, Scope::Transaction),
        "advisory_unlock" => (AdvisoryOp::Unlock, Scope::Session),
        _ => return None,
    };
    Some(AdvisoryCall { op, mode, scope })
}

impl P {
    fn accepts(self, a: &Typed) -> bool {
        if a.unknown {
            return true;
        }
        match self {
            P::Text => matches!(a.ty, DataType::Text | DataType::Varchar(_) | DataType::Char(_)),
            P::Int => matches!(a.ty, DataType::Int16 | DataType::Int32),
            P::BigInt => matches!(a.ty, DataType::Int16 | DataType::Int32 | DataType::Int64),
            P::Float => is_numeric(&a.ty),
            P::Numeric => matches!(
                a.ty,
                DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Numeric(_)
            ),
            P::Bool => a.ty == DataType::Bool,
        }
    }
}
