//! Plans: the bound, typed form of a statement. Plain enums that print as trees.
//!
//! Column references are indexes into the input row (`Expr::Column`); references to an
//! enclosing query's row (correlated subqueries, the inner side of a nested-loop join) are
//! `Expr::Outer { depth, index }`, where depth 0 is the nearest enclosing row.

mod display;

use std::sync::Arc;

use catalog::{DataType, IndexId, Table};

use crate::types::{ArithOp, Value};

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CmpOp {
    /// Whether `l op r` holds when `l` compares to `r` as `o`.
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => o == Equal,
            CmpOp::NotEq => o != Equal,
            CmpOp::Lt => o == Less,
            CmpOp::LtEq => o != Greater,
            CmpOp::Gt => o == Greater,
            CmpOp::GtEq => o != Less,
        }
    }
}

/// What an advisory-lock function does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvisoryOp {
    /// `pg_advisory_[xact_]lock[_shared]`: waits until it holds the lock; returns void.
    Lock,
    /// `pg_try_advisory_[xact_]lock[_shared]`: takes the lock if it can at once; returns
    /// whether it did.
    TryLock,
    /// `pg_advisory_unlock[_shared]`: releases one session-level hold; returns whether there
    /// was one.
    Unlock,
    /// `pg_advisory_unlock_all()`: releases every session-level hold; returns void.
    UnlockAll,
}

/// An advisory-lock function: what it does, in which mode, for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdvisoryCall {
    /// Lock, try, unlock, unlock all.
    pub op: AdvisoryOp,
    /// Exclusive or `_shared`.
    pub mode: crate::advisory::Mode,
    /// The session's or (`_xact_`) the transaction's.
    pub scope: crate::advisory::Scope,
}

impl Func {
    /// Evaluated through the session ([`crate::exec::SessionFunctions`]) or with its wait
    /// checks, never as a pure function of the row: sequences, advisory locks, sleeping.
    pub fn uses_session(self) -> bool {
        matches!(
            self,
            Func::NextVal
                | Func::CurrVal
                | Func::SetVal
                | Func::PgSleep
                | Func::Advisory(_)
                | Func::BackendPid
        )
    }

    /// May wait for a long time (so the statement is not run on a connection's own thread).
    pub fn waits(self) -> bool {
        matches!(self, Func::PgSleep)
            || matches!(self, Func::Advisory(AdvisoryCall { op: AdvisoryOp::Lock, .. }))
    }
}

/// Built-in scalar functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// lower(text)
    Lower,
    /// upper(text)
    Upper,
    /// length(text) / char_length
    Length,
    /// substring(text, from [, for])
    Substring,
    /// btrim / trim(both)
    Trim,
    /// ltrim / trim(leading)
    LTrim,
    /// rtrim / trim(trailing)
    RTrim,
    /// concat(any...) — NULLs ignored
    Concat,
    /// abs(x)
    Abs,
    /// round(x [, s])
    Round,
    /// trunc(x [, s])
    Trunc,
    /// floor(x)
    Floor,
    /// ceil(x)
    Ceil,
    /// mod(a, b)
    Mod,
    /// now() / current_timestamp (transaction timestamp, a timestamptz)
    Now,
    /// localtimestamp (the transaction timestamp in the session's zone, a timestamp)
    LocalTimestamp,
    /// age(a, b) of two timestamps or two timestamptz (the one-argument form binds today's
    /// midnight as `a`)
    Age,
    /// to_char(timestamp | timestamptz, text)
    ToChar,
    /// `value AT TIME ZONE zone` (zone: text or interval)
    AtTimeZone,
    /// to_timestamp(double precision): seconds since 1970-01-01 UTC
    ToTimestamp,
    /// make_date(year, month, day)
    MakeDate,
    /// make_timestamp(year, month, day, hour, min, sec double precision)
    MakeTimestamp,
    /// justify_days(interval)
    JustifyDays,
    /// justify_hours(interval)
    JustifyHours,
    /// justify_interval(interval)
    JustifyInterval,
    /// current_date
    CurrentDate,
    /// version()
    Version,
    /// current_schema()
    CurrentSchema,
    /// current_database()
    CurrentDatabase,
    /// current_user / session_user
    CurrentUser,
    /// repeat(text, int)
    Repeat,
    /// replace(text, from, to)
    Replace,
    /// left(text, n)
    Left,
    /// right(text, n)
    Right,
    /// lpad(text, len [, fill])
    LPad,
    /// rpad(text, len [, fill])
    RPad,
    /// strpos(string, substring) / position(substring IN string)
    StrPos,
    /// split_part(text, delimiter, n)
    SplitPart,
    /// reverse(text)
    Reverse,
    /// octet_length(text): bytes (a char(n) value with its padding).
    OctetLength,
    /// quote_literal(text): a string literal (`E'…'` if it holds a backslash).
    QuoteLiteral,
    /// quote_nullable(text): quote_literal, or `NULL` (not strict).
    QuoteNullable,
    /// num_nulls(any, …) (not strict).
    NumNulls,
    /// num_nonnulls(any, …) (not strict).
    NumNonNulls,
    /// quote_ident(text): the identifier, double-quoted if it needs to be.
    QuoteIdent,
    /// format(fmt, any, …): `%s`, `%I`, `%L` with positions and widths (not strict).
    Format,
    /// encode(bytea, format): hex, base64 or escape text.
    Encode,
    /// decode(text, format): the bytea that encode gave the text.
    Decode,
    /// degrees(float8)
    Degrees,
    /// radians(float8)
    Radians,
    /// initcap(text)
    InitCap,
    /// starts_with(text, prefix)
    StartsWith,
    /// ascii(text)
    Ascii,
    /// chr(int)
    Chr,
    /// md5(text | bytea)
    Md5,
    /// translate(text, from, to)
    Translate,
    /// to_hex(int | bigint)
    ToHex,
    /// greatest(a, b, …) — NULLs ignored
    Greatest,
    /// least(a, b, …) — NULLs ignored
    Least,
    /// sign(x)
    Sign,
    /// sqrt(x)
    Sqrt,
    /// cbrt(double precision)
    Cbrt,
    /// exp(x)
    Exp,
    /// ln(x)
    Ln,
    /// log(x) / log10(x): base 10
    Log10,
    /// log(base, x) on numeric
    Log,
    /// power(x, y) / pow
    Power,
    /// pi()
    Pi,
    /// random() — volatile
    Random,
    /// current_setting(name [, missing_ok]): the session's value of a server parameter, as
    /// SHOW gives it (stable: read when the statement runs).
    CurrentSetting,
    /// gen_random_uuid() — volatile: a version 4 UUID from the operating system's random
    /// source, as PostgreSQL's.
    GenRandomUuid,
    /// to_regtype(text): the type's OID as a `regtype`, NULL if no type has that name.
    ToRegType,
    /// `regtypeout`: the name of the type whose OID (a `regtype`) is the argument.
    RegTypeOut,
    /// aspen_debug_panic(): panics, so that tests can check a bug in one statement costs only
    /// that statement. Bound only in debug builds.
    DebugPanic,
    /// pg_sleep(seconds): waits, returns void. Evaluated by [`crate::exec::Ctx`], which stops
    /// the wait for a cancel or the statement's timeout.
    PgSleep,
    /// The `pg_advisory_…lock…` functions (`crate::advisory`), evaluated by the session; the
    /// arguments are the key (one `bigint` or two `integer`s; none for `unlock_all`).
    Advisory(AdvisoryCall),
    /// pg_backend_pid(): the process id of the session's BackendKeyData.
    BackendPid,
    /// pg_postmaster_start_time(): when the server process started.
    PostmasterStartTime,
    /// format_type(type_oid, typmod): the type's SQL name with its modifier, as `\d` shows
    /// it (not strict: a NULL typmod names the type without one).
    FormatType,
    /// pg_size_pretty(bigint): a byte count in bytes, kB, MB, GB, TB or PB.
    PgSizePretty,
    /// `text ~ pattern` (POSIX regular expression match): args are the text, the pattern and
    /// whether case is ignored (`~*`, a `Bool` literal).
    RegexMatch,
    /// regexp_replace(source, pattern, replacement [, flags]).
    RegexpReplace,
    /// regexp_match(string, pattern [, flags]): text[] of the first match's groups.
    RegexpMatch,
    /// regexp_split_to_array(string, pattern [, flags]): text[].
    RegexpSplitToArray,
    /// EXTRACT(field FROM date / timestamp): args are the field's name (text) and the value;
    /// numeric.
    Extract,
    /// date_part(field, date / timestamp): as EXTRACT, in double precision.
    DatePart,
    /// date_trunc(field, timestamp): the timestamp cut down to the field.
    DateTrunc,
    /// nextval(sequence): args are the owning table's id and the column's position (`Int64`
    /// literals). Not transactional; evaluated through the session (`exec::SessionFunctions`).
    NextVal,
    /// currval(sequence): the same arguments.
    CurrVal,
    /// setval(sequence, value [, is_called]): table id, position, value, is_called.
    SetVal,
    /// div(numeric, numeric): truncated quotient
    Div,
    /// gcd(a, b)
    Gcd,
    /// lcm(a, b)
    Lcm,
    /// A jsonb operator or function (`exec::jsonb`).
    Jsonb(JsonbFunc),
    /// An array constructor, operator or function (`exec::array`).
    Array(ArrayFunc),
}

/// The array operators and functions (bound in `bind::array`, run in `exec::array`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayFunc {
    /// `ARRAY[a, b, …]`: its arguments, already of the element type.
    Build,
    /// `a[i]`: NULL outside the bounds.
    Subscript,
    /// `a[lo:hi]`, either bound omitted (`a[:hi]`, `a[lo:]`): args are the array and the
    /// bounds given.
    Slice {
        /// `lo` is given.
        lower: bool,
        /// `hi` is given.
        upper: bool,
    },
    /// `array || array`, array_cat
    Cat,
    /// `array || element`, array_append
    Append,
    /// `element || array`, array_prepend
    Prepend,
    /// `a @> b` (`b <@ a` swaps its arguments)
    Contains,
    /// `a && b`
    Overlaps,
    /// `x op ANY (array)` (`all`: `x op ALL (array)`), three-valued.
    Any {
        /// The comparison.
        op: CmpOp,
        /// ALL rather than ANY.
        all: bool,
    },
    /// `x [NOT] [I]LIKE ANY (array of patterns)`, three-valued.
    Like {
        /// ILIKE.
        ci: bool,
        /// NOT LIKE.
        negated: bool,
    },
    /// array_length(a, dim)
    Length,
    /// array_lower(a, dim)
    Lower,
    /// array_upper(a, dim)
    Upper,
    /// array_ndims(a)
    Ndims,
    /// array_dims(a): `[1:n]`
    Dims,
    /// cardinality(a)
    Cardinality,
    /// array_position(a, x [, start])
    Position,
    /// array_positions(a, x)
    Positions,
    /// array_remove(a, x)
    Remove,
    /// array_replace(a, from, to)
    Replace,
    /// array_to_string(a, sep [, null])
    ToString,
    /// string_to_array(s, sep [, null])
    FromString,
}

impl ArrayFunc {
    /// The SQL name, for plans and errors.
    pub fn name(self) -> &'static str {
        match self {
            ArrayFunc::Build => "array",
            ArrayFunc::Subscript => "subscript",
            ArrayFunc::Slice { .. } => "slice",
            ArrayFunc::Cat => "array_cat",
            ArrayFunc::Append => "array_append",
            ArrayFunc::Prepend => "array_prepend",
            ArrayFunc::Contains => "arraycontains",
            ArrayFunc::Overlaps => "arrayoverlap",
            ArrayFunc::Any { all: false, .. } => "any",
            ArrayFunc::Any { all: true, .. } => "all",
            ArrayFunc::Like { ci: false, .. } => "like_any",
            ArrayFunc::Like { ci: true, .. } => "ilike_any",
            ArrayFunc::Length => "array_length",
            ArrayFunc::Lower => "array_lower",
            ArrayFunc::Upper => "array_upper",
            ArrayFunc::Ndims => "array_ndims",
            ArrayFunc::Dims => "array_dims",
            ArrayFunc::Cardinality => "cardinality",
            ArrayFunc::Position => "array_position",
            ArrayFunc::Positions => "array_positions",
            ArrayFunc::Remove => "array_remove",
            ArrayFunc::Replace => "array_replace",
            ArrayFunc::ToString => "array_to_string",
            ArrayFunc::FromString => "string_to_array",
        }
    }

    /// Whether a NULL argument makes the result NULL without running the function.
    pub fn strict(self) -> bool {
        !matches!(
            self,
            ArrayFunc::Build
                | ArrayFunc::Cat
                | ArrayFunc::Append
                | ArrayFunc::Prepend
                | ArrayFunc::Any { .. }
                | ArrayFunc::Like { .. }
                | ArrayFunc::Position
                | ArrayFunc::Positions
                | ArrayFunc::Remove
                | ArrayFunc::Replace
                | ArrayFunc::ToString
                | ArrayFunc::FromString
        )
    }
}

impl JsonbFunc {
    /// The name EXPLAIN prints: the function's, or for an operator PostgreSQL's function
    /// behind it.
    pub fn name(self) -> &'static str {
        match self {
            JsonbFunc::Get => "jsonb_object_field",
            JsonbFunc::GetText => "jsonb_object_field_text",
            JsonbFunc::Path => "jsonb_extract_path",
            JsonbFunc::PathText => "jsonb_extract_path_text",
            JsonbFunc::Contains => "jsonb_contains",
            JsonbFunc::Exists => "jsonb_exists",
            JsonbFunc::ExistsAny => "jsonb_exists_any",
            JsonbFunc::ExistsAll => "jsonb_exists_all",
            JsonbFunc::Concat => "jsonb_concat",
            JsonbFunc::Delete => "jsonb_delete",
            JsonbFunc::DeletePath => "jsonb_delete_path",
            JsonbFunc::Typeof => "jsonb_typeof",
            JsonbFunc::ArrayLength => "jsonb_array_length",
            JsonbFunc::StripNulls => "jsonb_strip_nulls",
            JsonbFunc::Pretty => "jsonb_pretty",
            JsonbFunc::ToJsonb => "to_jsonb",
            JsonbFunc::BuildObject => "jsonb_build_object",
            JsonbFunc::BuildArray => "jsonb_build_array",
            JsonbFunc::Set => "jsonb_set",
            JsonbFunc::ToJson => "to_json",
            JsonbFunc::JsonBuildObject => "json_build_object",
            JsonbFunc::JsonBuildArray => "json_build_array",
            JsonbFunc::JsonRow => "row_to_json",
        }
    }
}

/// The jsonb set-returning functions (in FROM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonbRows {
    /// jsonb_array_elements: one `value jsonb` per element.
    ArrayElements,
    /// jsonb_array_elements_text: one `value text` per element (`null` as NULL).
    ArrayElementsText,
    /// jsonb_each: `key text, value jsonb` per pair.
    Each,
    /// jsonb_each_text: `key text, value text` per pair.
    EachText,
    /// jsonb_object_keys: one key per pair.
    ObjectKeys,
    /// json_array_elements: one `value json` per element, as written.
    JsonArrayElements,
    /// json_array_elements_text.
    JsonArrayElementsText,
    /// json_each: `key text, value json`.
    JsonEach,
    /// json_each_text.
    JsonEachText,
    /// json_object_keys.
    JsonObjectKeys,
}

impl JsonbRows {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            JsonbRows::ArrayElements => "jsonb_array_elements",
            JsonbRows::ArrayElementsText => "jsonb_array_elements_text",
            JsonbRows::Each => "jsonb_each",
            JsonbRows::EachText => "jsonb_each_text",
            JsonbRows::ObjectKeys => "jsonb_object_keys",
            JsonbRows::JsonArrayElements => "json_array_elements",
            JsonbRows::JsonArrayElementsText => "json_array_elements_text",
            JsonbRows::JsonEach => "json_each",
            JsonbRows::JsonEachText => "json_each_text",
            JsonbRows::JsonObjectKeys => "json_object_keys",
        }
    }

    /// The json function of the same name (`json_each` for `jsonb_each`, …).
    pub fn of_json(self) -> JsonbRows {
        match self {
            JsonbRows::ArrayElements => JsonbRows::JsonArrayElements,
            JsonbRows::ArrayElementsText => JsonbRows::JsonArrayElementsText,
            JsonbRows::Each => JsonbRows::JsonEach,
            JsonbRows::EachText => JsonbRows::JsonEachText,
            JsonbRows::ObjectKeys => JsonbRows::JsonObjectKeys,
            json => json,
        }
    }

    /// Whether it reads json (not jsonb).
    pub fn reads_json(self) -> bool {
        self.of_json() == self
    }

    /// Its output columns: name and type.
    pub fn columns(self) -> &'static [(&'static str, DataType)] {
        match self {
            JsonbRows::ArrayElements => &[("value", DataType::Jsonb)],
            JsonbRows::ArrayElementsText => &[("value", DataType::Text)],
            JsonbRows::Each => &[("key", DataType::Text), ("value", DataType::Jsonb)],
            JsonbRows::EachText => &[("key", DataType::Text), ("value", DataType::Text)],
            JsonbRows::ObjectKeys => &[("jsonb_object_keys", DataType::Text)],
            JsonbRows::JsonArrayElements => &[("value", DataType::Json)],
            JsonbRows::JsonArrayElementsText => &[("value", DataType::Text)],
            JsonbRows::JsonEach => &[("key", DataType::Text), ("value", DataType::Json)],
            JsonbRows::JsonEachText => &[("key", DataType::Text), ("value", DataType::Text)],
            JsonbRows::JsonObjectKeys => &[("json_object_keys", DataType::Text)],
        }
    }
}

/// The jsonb operators and functions. A path (`#>`, `jsonb_extract_path`, `jsonb_set`,
/// `?|`, `?&`) arrives as one text argument per step, after the fixed arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonbFunc {
    /// `jsonb -> text | integer`
    Get,
    /// `jsonb ->> text | integer`
    GetText,
    /// `jsonb #> path`, jsonb_extract_path(jsonb, VARIADIC steps)
    Path,
    /// `jsonb #>> path`, jsonb_extract_path_text
    PathText,
    /// `a @> b` (`a <@ b` is bound with its operands swapped)
    Contains,
    /// `jsonb ? text`
    Exists,
    /// `jsonb ?| keys`
    ExistsAny,
    /// `jsonb ?& keys`
    ExistsAll,
    /// `jsonb || jsonb`
    Concat,
    /// `jsonb - text | integer`
    Delete,
    /// `jsonb #- path`
    DeletePath,
    /// jsonb_typeof(jsonb)
    Typeof,
    /// jsonb_array_length(jsonb)
    ArrayLength,
    /// jsonb_strip_nulls(jsonb)
    StripNulls,
    /// jsonb_pretty(jsonb)
    Pretty,
    /// to_jsonb(any)
    ToJsonb,
    /// jsonb_build_object(key, value, …) (not strict)
    BuildObject,
    /// jsonb_build_array(any, …) (not strict)
    BuildArray,
    /// jsonb_set(target, new, create_missing, steps…) (not strict in its steps)
    Set,
    /// to_json(any)
    ToJson,
    /// json_build_object(key, value, …) (not strict)
    JsonBuildObject,
    /// json_build_array(any, …) (not strict)
    JsonBuildArray,
    /// A whole-row reference as json (`row_to_json(r)`, `to_json(r)`): args are each column's
    /// name and value; `{"a":1,"b":2}` (not strict).
    JsonRow,
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    /// count(*)
    CountStar,
    /// count(x)
    Count,
    /// sum(x)
    Sum,
    /// avg(x)
    Avg,
    /// min(x)
    Min,
    /// max(x)
    Max,
    /// string_agg(text, delimiter)
    StringAgg,
    /// bool_and(x) / every(x)
    BoolAnd,
    /// bool_or(x)
    BoolOr,
    /// var_samp(x) / variance(x)
    VarSamp,
    /// var_pop(x)
    VarPop,
    /// stddev_samp(x) / stddev(x)
    StddevSamp,
    /// stddev_pop(x)
    StddevPop,
    /// jsonb_agg(x): the values (as to_jsonb gives them; NULL as `null`) in one array
    JsonbAgg,
    /// jsonb_object_agg(key, value): one object (the key as a jsonb_build_object key)
    JsonbObjectAgg,
    /// json_agg(x): `[a, b]`, each value as to_json writes it
    JsonAgg,
    /// json_object_agg(key, value): `{ "k" : v, … }`
    JsonObjectAgg,
    /// json_agg of whole rows (`json_agg(r)`): `[{…}, \n {…}]`, as PostgreSQL spaces composite
    /// elements
    JsonAggRows,
    /// array_agg(x): the values, NULLs included, in one array
    ArrayAgg,
    /// GROUPING(a, b, …): a bit per argument (the first the most significant), set where the
    /// row's grouping set leaves that key out. Not fed any rows: the aggregation fills it in
    /// per grouping set ([`AggCall::grouping`]).
    Grouping,
}

/// A bound scalar expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Literal(Value),
    /// A column of the current input row.
    Column(usize),
    /// A column of an enclosing row (0 = nearest).
    Outer {
        /// How many levels up.
        depth: usize,
        /// Column index in that row.
        index: usize,
    },
    /// `$n` (0-based here).
    Param(usize),
    /// Arithmetic on two values of the same type.
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    /// Unary minus.
    Neg(Box<Expr>),
    /// Comparison.
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    /// Three-valued AND.
    And(Box<Expr>, Box<Expr>),
    /// Three-valued OR.
    Or(Box<Expr>, Box<Expr>),
    /// Three-valued NOT.
    Not(Box<Expr>),
    /// IS NULL (or IS NOT NULL when negated).
    IsNull(Box<Expr>, bool),
    /// IS \[NOT\] DISTINCT FROM (negated = IS NOT DISTINCT FROM).
    IsDistinct(Box<Expr>, Box<Expr>, bool),
    /// IS \[NOT\] TRUE / FALSE: (expr, value, negated).
    IsBool(Box<Expr>, bool, bool),
    /// \[NOT\] LIKE / ILIKE: (expr, pattern, case_insensitive, negated).
    Like(Box<Expr>, Box<Expr>, bool, bool),
    /// \[NOT\] IN (list).
    InList(Box<Expr>, Vec<Expr>, bool),
    /// CASE WHEN … THEN … ELSE … END (operand already folded into the conditions).
    Case(Vec<(Expr, Expr)>, Option<Box<Expr>>),
    /// COALESCE(a, b, …).
    Coalesce(Vec<Expr>),
    /// NULLIF(a, b).
    NullIf(Box<Expr>, Box<Expr>),
    /// Cast to a type.
    Cast(Box<Expr>, DataType, crate::types::CastKind),
    /// `a || b` on text.
    Concat(Box<Expr>, Box<Expr>),
    /// A built-in function.
    Func(Func, Vec<Expr>),
    /// A scalar subquery (one column; error if more than one row).
    Subquery(Box<Plan>),
    /// \[NOT\] EXISTS (subquery).
    Exists(Box<Plan>, bool),
    /// expr \[NOT\] IN (subquery).
    InSubquery(Box<Expr>, Box<Plan>, bool),
    /// The result of aggregate call `j` of the enclosing aggregation. Exists only while binding;
    /// the binder rewrites it to a `Column` over the Aggregate node's output.
    Agg(usize),
}

/// How a table scan finds its rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Every row, in primary key order.
    Full,
    /// One row by its full primary key (expressions in key column order).
    PointGet(Vec<Expr>),
    /// A range of an index (`None` = primary): an equality prefix, then an optional range on the
    /// next key column.
    Range {
        /// Index, or `None` for the primary key.
        index: Option<IndexId>,
        /// Values of the leading key columns.
        eq: Vec<Expr>,
        /// Lower bound on the next key column: (expr, inclusive).
        lo: Option<(Expr, bool)>,
        /// Upper bound on the next key column: (expr, inclusive).
        hi: Option<(Expr, bool)>,
    },
    /// `col IN (…)` or `col = ANY (array)` on a key column: one scan of `access` per
    /// distinct non-NULL value of `values` (an array), with the key expression at `slot` (of
    /// `PointGet`'s keys or `Range`'s `eq`) set to that value.
    Each {
        /// A `PointGet` or `Range` whose key expression at `slot` is a placeholder.
        access: Box<Access>,
        /// Which key expression the values take the place of.
        slot: usize,
        /// The values, as an array.
        values: Expr,
    },
}

impl Access {
    /// The expressions the access evaluates.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Access::Full => vec![],
            Access::PointGet(keys) => keys.iter().collect(),
            Access::Range { eq, lo, hi, .. } => eq
                .iter()
                .chain(lo.iter().map(|(e, _)| e))
                .chain(hi.iter().map(|(e, _)| e))
                .collect(),
            Access::Each { access, values, .. } => {
                let mut out = access.exprs();
                out.push(values);
                out
            }
        }
    }

    /// [`Access::exprs`], mutable.
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Access::Full => vec![],
            Access::PointGet(keys) => keys.iter_mut().collect(),
            Access::Range { eq, lo, hi, .. } => eq
                .iter_mut()
                .chain(lo.iter_mut().map(|(e, _)| e))
                .chain(hi.iter_mut().map(|(e, _)| e))
                .collect(),
            Access::Each { access, values, .. } => {
                let mut out = access.exprs_mut();
                out.push(values);
                out
            }
        }
    }
}

/// Sort key.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    /// Expression over the input row.
    pub expr: Expr,
    /// Descending?
    pub desc: bool,
    /// NULLs first?
    pub nulls_first: bool,
}

/// One aggregate call.
#[derive(Debug, Clone, PartialEq)]
pub struct AggCall {
    /// Which aggregate.
    pub func: AggFunc,
    /// Argument (none for count(*)).
    pub arg: Option<Expr>,
    /// DISTINCT?
    pub distinct: bool,
    /// Result type.
    pub data_type: DataType,
    /// string_agg's delimiter (evaluated per row; the first row's is not used).
    pub delimiter: Option<Expr>,
    /// FILTER (WHERE …): only rows for which it holds are aggregated.
    pub filter: Option<Expr>,
    /// ORDER BY inside the parentheses: the rows are aggregated in this order.
    pub order_by: Vec<SortKey>,
    /// GROUPING's arguments: while binding, the expressions; in a plan, `Expr::Column(k)`,
    /// group key `k` of the aggregation. Empty for every other function.
    pub grouping: Vec<Expr>,
}

/// Join kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// INNER / CROSS / comma.
    Inner,
    /// LEFT OUTER.
    Left,
    /// FULL OUTER: also every right row that met no left row, with NULLs on the left. Only a
    /// [`Plan::HashJoin`] (as in PostgreSQL, the condition must have an equality to hash).
    Full,
}

/// A query plan node. Every node produces rows of `Vec<Value>`.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// `WITH RECURSIVE name AS (anchor UNION [ALL] recursive)`: the anchor's rows, then the
    /// recursive term's rows over the previous step's new rows ([`Plan::WorkingTable`] `id`),
    /// until a step adds none. UNION drops rows seen before (the anchor's duplicates too).
    RecursiveUnion {
        /// The working table the recursive term reads.
        id: usize,
        /// The non-recursive term.
        anchor: Box<Plan>,
        /// The recursive term.
        recursive: Box<Plan>,
        /// UNION ALL.
        all: bool,
    },
    /// The rows of the current step of [`Plan::RecursiveUnion`] `id`.
    WorkingTable {
        /// Which recursive union.
        id: usize,
        /// Output width.
        width: usize,
    },
    /// Literal rows (VALUES, or a SELECT without FROM: one empty row).
    Values {
        /// Row expressions.
        rows: Vec<Vec<Expr>>,
        /// Output width.
        width: usize,
    },
    /// Read a table.
    Scan {
        /// The table (as bound; its `id` is the engine's table id).
        table: Arc<Table>,
        /// How rows are found.
        access: Access,
        /// Residual predicate, evaluated per row.
        filter: Option<Expr>,
        /// Scan backwards (for ORDER BY … DESC satisfied by the index).
        reverse: bool,
        /// Stop after this many rows that pass the filter (ORDER BY … LIMIT pushed down).
        limit: Option<Expr>,
        /// SELECT … FOR UPDATE: lock the rows at commit.
        for_update: bool,
    },
    /// A jsonb set-returning function in FROM: the rows of its argument.
    JsonbRows {
        /// Which function.
        func: JsonbRows,
        /// The jsonb argument.
        arg: Expr,
    },
    /// unnest(array [, array …]) in FROM: one row per element, the arrays side by side (a
    /// shorter one padded with NULLs), with the 1-based position (int8) after them `WITH
    /// ORDINALITY`.
    Unnest {
        /// The arrays.
        args: Vec<Expr>,
        /// Add the ordinality column.
        ordinality: bool,
    },
    /// generate_series(start, stop [, step]).
    GenerateSeries {
        /// start, stop, step
        args: Vec<Expr>,
        /// int4 or int8 or numeric
        data_type: DataType,
    },
    /// Keep rows where the predicate is true.
    Filter {
        /// Input.
        input: Box<Plan>,
        /// Predicate.
        predicate: Expr,
    },
    /// Compute output expressions.
    Project {
        /// Input.
        input: Box<Plan>,
        /// Output expressions.
        exprs: Vec<Expr>,
    },
    /// Nested-loop join: the right side is re-run for every left row, with the left row as its
    /// nearest outer row (so key lookups on the right can use left columns).
    NestedLoop {
        /// Left (outer) input.
        left: Box<Plan>,
        /// Right (inner) input; may reference the left row via `Expr::Outer { depth: 0 }`.
        right: Box<Plan>,
        /// Join kind.
        kind: JoinKind,
        /// Join predicate over the concatenated row.
        on: Option<Expr>,
        /// Width of the right side (for NULL padding in LEFT joins).
        right_width: usize,
    },
    /// Hash join on equality keys: the right side runs once (it reads no left row), its rows
    /// are hashed on `right_keys`, and each left row meets the right rows whose keys equal its
    /// `left_keys` (a NULL key meets none, as `=` is never true for it).
    HashJoin {
        /// Left (probe) input.
        left: Box<Plan>,
        /// Right (build) input, at this node's level: it reads no left row.
        right: Box<Plan>,
        /// Join kind (LEFT keeps every left row).
        kind: JoinKind,
        /// Key expressions over the left row.
        left_keys: Vec<Expr>,
        /// Key expressions over the right row, pairwise `=` to `left_keys`.
        right_keys: Vec<Expr>,
        /// Per key, whether it compares as `char(n)` (trailing spaces ignored).
        bpchar: Vec<bool>,
        /// The rest of the join condition, over the concatenated row.
        on: Option<Expr>,
        /// Width of the right side (for NULL padding in LEFT joins).
        right_width: usize,
        /// A nested loop to try first, when the right side has an index that the left row's
        /// values narrow to a range: it serves the left rows one by one until its lookups
        /// have read [`LOOKUP_BUDGET`] rows (before filters), and the hash join serves the rest.
        lookup: Option<Box<Lookup>>,
    },
    /// Group and aggregate: output = group keys ++ aggregate values.
    Aggregate {
        /// Input.
        input: Box<Plan>,
        /// Group-by expressions.
        group_by: Vec<Expr>,
        /// Aggregate calls.
        aggs: Vec<AggCall>,
        /// GROUPING SETS / ROLLUP / CUBE: the group keys (positions in `group_by`) of each
        /// grouping set, aggregated one after the other; a key outside a row's set is NULL
        /// there. Empty for a plain GROUP BY (one set of every key).
        sets: Vec<Vec<usize>>,
    },
    /// Sort.
    Sort {
        /// Input.
        input: Box<Plan>,
        /// Keys.
        keys: Vec<SortKey>,
    },
    /// Remove duplicate rows (`on` empty), or keep the first row of each group of rows equal
    /// on the `on` expressions (DISTINCT ON; the input is sorted so that groups are together).
    Distinct {
        /// Input.
        input: Box<Plan>,
        /// DISTINCT ON expressions over the input row; empty for DISTINCT.
        on: Vec<Expr>,
    },
    /// Window functions: each input row gets one more column per call, computed over the rows
    /// of its partition (in the call's order).
    Window {
        /// Input.
        input: Box<Plan>,
        /// The calls, in the order of their columns.
        calls: Vec<WindowCall>,
    },
    /// UNION / INTERSECT / EXCEPT, with or without ALL, of two inputs of the same width and
    /// column types.
    SetOp {
        /// Left input.
        left: Box<Plan>,
        /// Right input.
        right: Box<Plan>,
        /// Which operation.
        op: SetOpKind,
        /// ALL: keep duplicates (multiset semantics); else each distinct row once.
        all: bool,
    },
    /// LIMIT / OFFSET.
    Limit {
        /// Input.
        input: Box<Plan>,
        /// Row limit.
        limit: Option<Expr>,
        /// Rows to skip.
        offset: Option<Expr>,
    },
    /// Drop trailing hidden columns (sort keys not in the select list).
    Truncate {
        /// Input.
        input: Box<Plan>,
        /// Columns to keep.
        width: usize,
    },
}

/// How many rows (plus one per lookup) the scans of a hash join's [`Lookup`] may read before
/// the hash join takes over: a few left rows whose ranges are narrow are served by the index
/// alone; a range as wide as the table costs this much once, not once per left row.
pub const LOOKUP_BUDGET: usize = 10_000;

/// The nested loop a [`Plan::HashJoin`] tries first.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup {
    /// The right side run under each left row (`Expr::Outer { depth: 0 }`), every join
    /// condition in it.
    pub right: Plan,
    /// A LEFT JOIN's conditions with subqueries, over the concatenated row.
    pub on: Option<Expr>,
}

/// Output column of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct OutColumn {
    /// Name as PostgreSQL names it.
    pub name: String,
    /// Type.
    pub data_type: DataType,
    /// Source table id and attnum, for plain column references.
    pub source: Option<(u32, i16)>,
}

/// A bound query with its output schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The plan.
    pub plan: Plan,
    /// Output columns.
    pub columns: Vec<OutColumn>,
}

/// Where each target column's value comes from in an INSERT.
#[derive(Debug, Clone, PartialEq)]
pub enum InsertValue {
    /// Column `i` of the source row, cast to the column type.
    Source(usize),
    /// The column default (or NULL).
    Default(Expr),
}

/// `INSERT … ON CONFLICT`: what a proposed row that clashes with an existing one does.
#[derive(Debug, Clone, PartialEq)]
pub struct OnConflict {
    /// The unique index whose clash this handles: `Some(None)` the primary key, `Some(Some(id))`
    /// a unique secondary index; `None` any (DO NOTHING without a target).
    pub index: Option<Option<IndexId>>,
    /// The index's columns (positions), to find the existing row.
    pub columns: Vec<usize>,
    /// DO UPDATE (`None`: DO NOTHING).
    pub update: Option<ConflictUpdate>,
}

/// `DO UPDATE SET … [WHERE …]`: expressions over the existing row followed by the proposed one
/// (`excluded`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConflictUpdate {
    /// New value expressions by column position.
    pub sets: Vec<(usize, Expr)>,
    /// Only rows for which this holds are updated.
    pub filter: Option<Expr>,
}

impl Plan {
    /// The plans this one reads rows from (a recursive union: its anchor, then its recursive
    /// term).
    pub fn inputs(&self) -> Vec<&Plan> {
        match self {
            Plan::HashJoin { left, right, lookup, .. } => {
                let mut out = vec![&**left, &**right];
                out.extend(lookup.as_ref().map(|l| &l.right));
                out
            }
            Plan::NestedLoop { left, right, .. } | Plan::SetOp { left, right, .. } => {
                vec![left, right]
            }
            Plan::RecursiveUnion { anchor, recursive, .. } => vec![anchor, recursive],
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Distinct { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Window { input, .. }
            | Plan::Truncate { input, .. } => vec![input],
            Plan::Values { .. }
            | Plan::Scan { .. }
            | Plan::GenerateSeries { .. }
            | Plan::JsonbRows { .. }
            | Plan::Unnest { .. }
            | Plan::WorkingTable { .. } => vec![],
        }
    }

    /// Whether input `i` (of [`Plan::inputs`]) runs once per left row, under it: a nested
    /// loop's inner side, a hash join's lookup. Its outer references reach one level further.
    pub fn runs_under_left_row(&self, i: usize) -> bool {
        matches!((self, i), (Plan::NestedLoop { .. }, 1) | (Plan::HashJoin { .. }, 2))
    }

    /// [`Plan::inputs`], to change them.
    pub fn inputs_mut(&mut self) -> Vec<&mut Plan> {
        match self {
            Plan::HashJoin { left, right, lookup, .. } => {
                let mut out = vec![&mut **left, &mut **right];
                out.extend(lookup.as_mut().map(|l| &mut l.right));
                out
            }
            Plan::NestedLoop { left, right, .. } | Plan::SetOp { left, right, .. } => {
                vec![left, right]
            }
            Plan::RecursiveUnion { anchor, recursive, .. } => vec![anchor, recursive],
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Distinct { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Window { input, .. }
            | Plan::Truncate { input, .. } => vec![input],
            Plan::Values { .. }
            | Plan::Scan { .. }
            | Plan::GenerateSeries { .. }
            | Plan::JsonbRows { .. }
            | Plan::Unnest { .. }
            | Plan::WorkingTable { .. } => vec![],
        }
    }

    /// The expressions this node holds itself (not its inputs').
    pub fn exprs(&self) -> Vec<&Expr> {
        fn agg(a: &AggCall) -> impl Iterator<Item = &Expr> {
            a.arg
                .iter()
                .chain(a.delimiter.iter())
                .chain(a.filter.iter())
                .chain(a.order_by.iter().map(|k| &k.expr))
                .chain(a.grouping.iter())
        }
        match self {
            Plan::Values { rows, .. } => rows.iter().flatten().collect(),
            Plan::Scan { access, filter, limit, .. } => {
                let mut out = access.exprs();
                out.extend(filter.iter().chain(limit.iter()));
                out
            }
            Plan::GenerateSeries { args, .. } | Plan::Unnest { args, .. } => args.iter().collect(),
            Plan::JsonbRows { arg, .. } => vec![arg],
            Plan::Filter { predicate, .. } => vec![predicate],
            Plan::Project { exprs, .. } => exprs.iter().collect(),
            Plan::NestedLoop { on, .. } => on.iter().collect(),
            Plan::HashJoin { left_keys, right_keys, on, lookup, .. } => left_keys
                .iter()
                .chain(right_keys.iter())
                .chain(on.iter())
                .chain(lookup.iter().flat_map(|l| l.on.iter()))
                .collect(),
            Plan::Aggregate { group_by, aggs, .. } => {
                group_by.iter().chain(aggs.iter().flat_map(agg)).collect()
            }
            Plan::Sort { keys, .. } => keys.iter().map(|k| &k.expr).collect(),
            Plan::Distinct { on, .. } => on.iter().collect(),
            Plan::Window { calls, .. } => {
                let mut out = Vec::new();
                for c in calls {
                    out.extend(c.partition_by.iter());
                    out.extend(c.order_by.iter().map(|k| &k.expr));
                    match &c.func {
                        WindowFunc::NTile(e)
                        | WindowFunc::FirstValue(e)
                        | WindowFunc::LastValue(e) => out.push(e),
                        WindowFunc::NthValue(a, b) => out.extend([a, b]),
                        WindowFunc::Aggregate(a) => out.extend(agg(a)),
                        WindowFunc::Shift { value, default, .. } => out.extend([value, default]),
                        WindowFunc::RowNumber
                        | WindowFunc::Rank
                        | WindowFunc::DenseRank
                        | WindowFunc::PercentRank
                        | WindowFunc::CumeDist => {}
                    }
                }
                out
            }
            Plan::Limit { limit, offset, .. } => limit.iter().chain(offset.iter()).collect(),
            Plan::RecursiveUnion { .. }
            | Plan::WorkingTable { .. }
            | Plan::SetOp { .. }
            | Plan::Truncate { .. } => vec![],
        }
    }

    /// The expressions this node holds itself (not its inputs'), to change them.
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        fn agg(a: &mut AggCall) -> impl Iterator<Item = &mut Expr> {
            a.arg
                .iter_mut()
                .chain(a.delimiter.iter_mut())
                .chain(a.filter.iter_mut())
                .chain(a.order_by.iter_mut().map(|k| &mut k.expr))
                .chain(a.grouping.iter_mut())
        }
        match self {
            Plan::Values { rows, .. } => rows.iter_mut().flatten().collect(),
            Plan::Scan { access, filter, limit, .. } => {
                let mut out = access.exprs_mut();
                out.extend(filter.iter_mut().chain(limit.iter_mut()));
                out
            }
            Plan::GenerateSeries { args, .. } | Plan::Unnest { args, .. } => {
                args.iter_mut().collect()
            }
            Plan::JsonbRows { arg, .. } => vec![arg],
            Plan::Filter { predicate, .. } => vec![predicate],
            Plan::Project { exprs, .. } => exprs.iter_mut().collect(),
            Plan::NestedLoop { on, .. } => on.iter_mut().collect(),
            Plan::HashJoin { left_keys, right_keys, on, lookup, .. } => left_keys
                .iter_mut()
                .chain(right_keys.iter_mut())
                .chain(on.iter_mut())
                .chain(lookup.iter_mut().flat_map(|l| l.on.iter_mut()))
                .collect(),
            Plan::Aggregate { group_by, aggs, .. } => {
                group_by.iter_mut().chain(aggs.iter_mut().flat_map(agg)).collect()
            }
            Plan::Sort { keys, .. } => keys.iter_mut().map(|k| &mut k.expr).collect(),
            Plan::Distinct { on, .. } => on.iter_mut().collect(),
            Plan::Window { calls, .. } => {
                let mut out = Vec::new();
                for c in calls {
                    out.extend(c.partition_by.iter_mut());
                    out.extend(c.order_by.iter_mut().map(|k| &mut k.expr));
                    match &mut c.func {
                        WindowFunc::NTile(e)
                        | WindowFunc::FirstValue(e)
                        | WindowFunc::LastValue(e) => out.push(e),
                        WindowFunc::NthValue(a, b) => out.extend([a, b]),
                        WindowFunc::Aggregate(a) => out.extend(agg(a)),
                        WindowFunc::Shift { value, default, .. } => out.extend([value, default]),
                        WindowFunc::RowNumber
                        | WindowFunc::Rank
                        | WindowFunc::DenseRank
                        | WindowFunc::PercentRank
                        | WindowFunc::CumeDist => {}
                    }
                }
                out
            }
            Plan::Limit { limit, offset, .. } => {
                limit.iter_mut().chain(offset.iter_mut()).collect()
            }
            Plan::RecursiveUnion { .. }
            | Plan::WorkingTable { .. }
            | Plan::SetOp { .. }
            | Plan::Truncate { .. } => vec![],
        }
    }
}

impl Expr {
    /// The expressions directly inside this one (not those of a subquery's plan), to change
    /// them.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Expr::Literal(_)
            | Expr::Column(_)
            | Expr::Outer { .. }
            | Expr::Param(_)
            | Expr::Agg(_)
            | Expr::Subquery(_)
            | Expr::Exists(..) => vec![],
            Expr::Arith(_, a, b)
            | Expr::Cmp(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::IsDistinct(a, b, _)
            | Expr::Like(a, b, _, _)
            | Expr::NullIf(a, b)
            | Expr::Concat(a, b) => vec![a, b],
            Expr::Neg(a)
            | Expr::Not(a)
            | Expr::IsNull(a, _)
            | Expr::IsBool(a, _, _)
            | Expr::Cast(a, _, _)
            | Expr::InSubquery(a, _, _) => vec![a],
            Expr::InList(a, list, _) => std::iter::once(&mut **a).chain(list.iter_mut()).collect(),
            Expr::Case(arms, els) => arms
                .iter_mut()
                .flat_map(|(w, t)| [w, t])
                .chain(els.iter_mut().map(|e| &mut **e))
                .collect(),
            Expr::Coalesce(list) | Expr::Func(_, list) => list.iter_mut().collect(),
        }
    }
}

/// A window function call: `func(…) OVER (PARTITION BY … ORDER BY … frame)`.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCall {
    /// The function.
    pub func: WindowFunc,
    /// PARTITION BY expressions over the input row.
    pub partition_by: Vec<Expr>,
    /// ORDER BY keys over the input row.
    pub order_by: Vec<SortKey>,
    /// The frame of aggregates and first_value / last_value / nth_value; `None` is the default,
    /// `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW` (the partition up to the current
    /// row's last peer when ordered, else the whole partition).
    pub frame: Option<Frame>,
    /// The offsets of a RANGE frame's `offset PRECEDING / FOLLOWING` start and end (whose own
    /// numbers are then 0): constants of the ORDER BY key's kind, `Int64` for an integer key,
    /// `Numeric`, `Float64`, or `Interval` for a date or timestamp key.
    pub range_offsets: [Option<Value>; 2],
}

/// A window frame: the rows of the partition, around the current one, that a call sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// How bounds count.
    pub units: FrameUnits,
    /// Where the frame starts.
    pub start: FrameBound,
    /// Where it ends (inclusive).
    pub end: FrameBound,
}

/// How a frame's bounds count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    /// Rows.
    Rows,
    /// Values of the ORDER BY key: CURRENT ROW is the row's peer group (offsets: 0A000).
    Range,
    /// Peer groups.
    Groups,
}

/// A frame bound. Offsets are checked when the window runs (negative: `22013`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameBound {
    /// The partition's first row.
    UnboundedPreceding,
    /// `n PRECEDING` (ROWS and GROUPS; RANGE: the offset is in [`WindowCall::range_offsets`]).
    Preceding(i64),
    /// The current row (RANGE and GROUPS: its first peer as a start, its last as an end).
    CurrentRow,
    /// `n FOLLOWING` (ROWS and GROUPS; RANGE: as `Preceding`).
    Following(i64),
    /// The partition's last row.
    UnboundedFollowing,
}

/// What a window call computes.
#[derive(Debug, Clone, PartialEq)]
pub enum WindowFunc {
    /// row_number(): the row's position in its partition, from 1.
    RowNumber,
    /// rank(): 1 + the rows before its peers.
    Rank,
    /// dense_rank(): the number of peer groups up to its own.
    DenseRank,
    /// percent_rank(): (rank - 1) / (partition rows - 1), 0 for a single row.
    PercentRank,
    /// cume_dist(): the rows up to the current row's last peer / the partition's rows.
    CumeDist,
    /// ntile(n): the bucket (1..=n) of the row when the partition is cut into `n` buckets
    /// as even as possible, the first ones one row larger; `n` over the partition's first row.
    NTile(Expr),
    /// first_value(value): `value` of the frame's first row.
    FirstValue(Expr),
    /// last_value(value): `value` of the frame's last row.
    LastValue(Expr),
    /// nth_value(value, n): `value` of the frame's n-th row (from 1), `n` over the current row.
    NthValue(Expr, Expr),
    /// An aggregate over the frame.
    Aggregate(AggCall),
    /// lag(value, offset, default) (`lead`: false) or lead(…): `value` of the row `offset`
    /// rows before (after) in the partition, else `default` of the current row.
    Shift {
        /// lead rather than lag.
        lead: bool,
        /// The value, over the input row.
        value: Expr,
        /// How many rows away (a constant).
        offset: i64,
        /// The value when there is no such row, over the current row.
        default: Expr,
    },
}

/// The set operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOpKind {
    /// Rows of either input.
    Union,
    /// Rows of both inputs.
    Intersect,
    /// Rows of the left input that the right one lacks.
    Except,
}

/// A bound DML or query statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// SELECT / VALUES.
    Query(Query),
    /// INSERT.
    Insert {
        /// Target table.
        table: Arc<Table>,
        /// Source rows; each source row has one value per listed target column.
        source: Plan,
        /// For each table column: where its value comes from. A `Source` index refers to the
        /// source row; source values have already been cast to the column type.
        targets: Vec<InsertValue>,
        /// RETURNING expressions over the inserted row.
        returning: Option<Vec<(Expr, OutColumn)>>,
        /// ON CONFLICT.
        on_conflict: Option<Box<OnConflict>>,
        /// The table's CHECK constraints, checked on every row written (DO UPDATE's too).
        checks: Arc<[Check]>,
    },
    /// UPDATE.
    Update {
        /// Target table.
        table: Arc<Table>,
        /// Rows to update (a Scan producing full table rows).
        scan: Plan,
        /// New value expressions by column position (over the old row).
        sets: std::sync::Arc<[(usize, Expr)]>,
        /// RETURNING expressions over the new row.
        returning: Option<Vec<(Expr, OutColumn)>>,
        /// The update may be deferred to commit (`txn::Transaction::update_deferred`): one row
        /// by its full primary key and no other condition, no RETURNING, and SET only on
        /// columns outside every index and foreign key, from that row, parameters and
        /// constants. Concurrent `SET c = c + $1` on a hot row then commute instead of
        /// failing validation. No CHECK constraint reads a column it sets.
        deferrable: bool,
        /// The table's CHECK constraints, checked on every new row.
        checks: Arc<[Check]>,
        /// `UPDATE … FROM`: only target rows that meet a row of these tables are updated; `sets`
        /// and `returning` read the target row followed by the first row met.
        from: Option<Box<JoinedFrom>>,
    },
    /// `WITH name AS (INSERT / UPDATE / DELETE … RETURNING …) statement`: the data-modifying
    /// WITH queries run first, in order, each filling working table `id` with its RETURNING
    /// rows, which the statement after them reads (`Plan::WorkingTable`). The binder makes
    /// sure no part reads or writes a table another part writes, so running them one after the
    /// other answers as PostgreSQL's one snapshot does.
    With {
        /// The data-modifying WITH queries: working table id, statement.
        ctes: Vec<(usize, Statement)>,
        /// The statement they are in front of.
        main: Box<Statement>,
    },
    /// DELETE.
    Delete {
        /// Target table.
        table: Arc<Table>,
        /// Rows to delete (a Scan producing full table rows).
        scan: Plan,
        /// RETURNING expressions over the deleted row.
        returning: Option<Vec<(Expr, OutColumn)>>,
        /// `DELETE … USING`: only target rows that meet a row of these tables are deleted;
        /// `returning` reads the target row followed by the first row met.
        from: Option<Box<JoinedFrom>>,
    },
}

/// The other tables of `UPDATE … FROM` / `DELETE … USING`, and how a target row meets their
/// rows: on equal keys (hashed), then `on` over the target row followed by theirs. As in
/// PostgreSQL, a target row that meets several is changed once, with the first.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedFrom {
    /// Their rows, joined, with the conditions that read only them.
    pub plan: Plan,
    /// Key expressions over the target row …
    pub target_keys: Vec<Expr>,
    /// … and over their row (`target_keys[i] = from_keys[i]`).
    pub from_keys: Vec<Expr>,
    /// Per key: compare as `char(n)` (trailing spaces do not count).
    pub bpchar: Vec<bool>,
    /// The rest of the condition, over the target row followed by theirs.
    pub on: Option<Expr>,
}

/// A table's CHECK constraint, bound over its row: a row written must not make `expr` false.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Constraint name (the error names it).
    pub name: String,
    /// The boolean expression over the table's row.
    pub expr: Expr,
}

impl Statement {
    /// Output columns, if the statement returns rows.
    pub fn columns(&self) -> Option<Vec<OutColumn>> {
        match self {
            Statement::Query(q) => Some(q.columns.clone()),
            Statement::Insert { returning, .. }
            | Statement::Update { returning, .. }
            | Statement::Delete { returning, .. } => {
                returning.as_ref().map(|r| r.iter().map(|(_, c)| c.clone()).collect())
            }
            Statement::With { main, .. } => main.columns(),
        }
    }
}
