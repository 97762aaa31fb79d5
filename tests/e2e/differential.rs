//! Differential test: random queries, Aspen against PostgreSQL 15.
//!
//! The `.slt` corpus checks the constructs one at a time, with answers PostgreSQL gave. This
//! test checks their combinations, which nobody writes by hand: a seeded generator builds
//! type-correct queries over two small tables with NULLs in every nullable column —
//! projections of nested expressions (arithmetic of every numeric type, text functions, CASE,
//! COALESCE / NULLIF, casts, date arithmetic), WHERE with AND / OR / NOT, IN, BETWEEN, LIKE,
//! IS [NOT] DISTINCT FROM, EXISTS and IN subqueries, inner / left / right / full / comma joins
//! and LATERAL subqueries, GROUP BY (and
//! ROLLUP / CUBE / GROUPING SETS, GROUPING()) with aggregates (DISTINCT too, and the statistics) and
//! HAVING, DISTINCT and DISTINCT ON, window
//! functions with frames and named windows, UNION / INTERSECT / EXCEPT, ORDER BY with LIMIT /
//! OFFSET — and runs each on both servers. Timestamps with time zone are read and
//! printed in a zone chosen per seed (New York, Paris, UTC, Kolkata: daylight saving changes
//! fall inside the rows' dates). It then runs random UPDATE / DELETE /
//! INSERT … SELECT statements, UPDATE … FROM, DELETE … USING, RETURNING, upserts, correlated
//! subqueries in SET and multi-row
//! VALUES with DEFAULT on both and compares what they return, their row counts and the tables
//! after.
//!
//! What must agree: the column names, the rows (as text, PostgreSQL's output format; a multiset
//! unless ORDER BY covers every column, then the sequence up to ties of equal values printed
//! differently), the command tags, and the SQLSTATE when a statement fails. Aspen answering
//! `0A000` (a construct it does not support) is allowed and listed, never a different answer;
//! a change Aspen refuses is rolled back on both.
//!
//! Then a third as many queries with parameters in place of some values are prepared on both:
//! Describe must report the same parameter types and result columns. Aspen typing a parameter
//! that PostgreSQL cannot type (42P18, 42725) is counted as lenient, as are two refusals with
//! different class-42 codes, and text where PostgreSQL has a char without a length (Aspen has
//! no such type).
//!
//! The generator keeps the answer well defined: values are small (no overflow whichever rows
//! an engine evaluates first), divisors are non-zero constants, and LIMIT comes only with an
//! ORDER BY over all output columns.
//!
//! `ASPEN_DIFF_QUERIES` (default 1500) and `ASPEN_DIFF_SEED` (default: fixed) choose how many
//! and which; a failure prints the seed and the statement. Skipped, with a message, when
//! PostgreSQL 15 is not installed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tests::{connect, AspenServer, PgServer, PG_UNAVAILABLE};
use tokio_postgres::{Client, SimpleQueryMessage};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ty {
    Int,
    Big,
    Num,
    Text,
    Bool,
    Date,
    Dbl,
    /// char(4): blank-padded, compared and measured without its trailing blanks.
    Char,
    Small,
    Real,
    Ts,
    Interval,
    /// timestamp with time zone, read and printed in the session's zone (set per seed).
    Tz,
}

const SCALARS: [Ty; 13] = [
    Ty::Int,
    Ty::Big,
    Ty::Num,
    Ty::Text,
    Ty::Bool,
    Ty::Date,
    Ty::Dbl,
    Ty::Char,
    Ty::Small,
    Ty::Real,
    Ty::Ts,
    Ty::Interval,
    Ty::Tz,
];

/// A column in scope: its qualified name and type.
#[derive(Clone, Copy)]
struct Col {
    name: &'static str,
    ty: Ty,
}

const T_COLS: [Col; 13] = [
    Col { name: "t.id", ty: Ty::Int },
    Col { name: "t.a", ty: Ty::Int },
    Col { name: "t.b", ty: Ty::Big },
    Col { name: "t.n", ty: Ty::Num },
    Col { name: "t.s", ty: Ty::Text },
    Col { name: "t.v", ty: Ty::Text },
    Col { name: "t.f", ty: Ty::Bool },
    Col { name: "t.d", ty: Ty::Date },
    Col { name: "t.x", ty: Ty::Dbl },
    Col { name: "t.c", ty: Ty::Char },
    Col { name: "t.i2", ty: Ty::Small },
    Col { name: "t.r", ty: Ty::Real },
    Col { name: "t.ts", ty: Ty::Ts },
];

const U_COLS: [Col; 4] = [
    Col { name: "u.id", ty: Ty::Int },
    Col { name: "u.t_id", ty: Ty::Int },
    Col { name: "u.a", ty: Ty::Int },
    Col { name: "u.s", ty: Ty::Text },
];

const WORDS: [&str; 10] = ["", "a", "A", "abc", "Abc", "b%c", " x ", "zz", "ab_c", "été"];
const PATTERNS: [&str; 9] = ["a%", "%b%", "_", "A%", "%", "", "%c", "a_c", "%\\%%"];

const SCHEMA: &str = "
CREATE TABLE t (id int PRIMARY KEY, a int, b bigint, n numeric(10,2), s text, v varchar(10),
                f boolean, d date, x double precision, c char(4), i2 smallint, r real,
                ts timestamp);
CREATE TABLE u (id int PRIMARY KEY, t_id int, a int, s text);
CREATE INDEX t_a ON t (a);
CREATE INDEX u_t_id ON u (t_id);
";

struct Gen {
    rng: StdRng,
    /// Columns in scope for the expression being generated.
    scope: Vec<Col>,
    /// Whether `t` is in scope (correlated subqueries on `u.t_id = t.id`).
    has_t: bool,
    /// Parameters written so far (`$1`, `$2`, …) when leaves may be parameters, else `None`.
    params: Option<usize>,
}

impl Gen {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.rng.gen_range(0..items.len())]
    }

    fn column(&mut self, ty: Ty) -> Option<&'static str> {
        let cols: Vec<_> = self.scope.iter().filter(|c| c.ty == ty).map(|c| c.name).collect();
        (!cols.is_empty()).then(|| cols[self.rng.gen_range(0..cols.len())])
    }

    fn literal(&mut self, ty: Ty) -> String {
        match ty {
            Ty::Int => {
                let v: i32 = self.rng.gen_range(-20..=20);
                if v < 0 {
                    format!("({v})")
                } else {
                    v.to_string()
                }
            }
            Ty::Big => format!("{}::bigint", self.rng.gen_range(0..=30)),
            Ty::Num => {
                let cents: i32 = self.rng.gen_range(-999..=999);
                let v = format!(
                    "{}{}.{:02}",
                    if cents < 0 { "-" } else { "" },
                    cents.abs() / 100,
                    cents.abs() % 100
                );
                if cents < 0 {
                    format!("({v})")
                } else {
                    v
                }
            }
            Ty::Text => format!("'{}'", self.pick(&WORDS)),
            Ty::Bool => self.pick(&["true", "false"]).to_string(),
            Ty::Date => format!(
                "date '2024-0{}-{:02}'",
                self.rng.gen_range(1..=9),
                self.rng.gen_range(1..=28)
            ),
            Ty::Dbl => self.pick(&["0.5", "2.25", "(-1.5)", "3e2", "0.1"]).to_string() + "::float8",
            Ty::Char => format!("'{}'::char(4)", self.pick(&["ab", "ab  ", "", "x", "abcd", "A"])),
            Ty::Small => format!("{}::smallint", self.rng.gen_range(0..=12)),
            Ty::Real => self.pick(&["0.1", "2.5", "(-3.75)", "1e-3"]).to_string() + "::real",
            Ty::Ts => format!(
                "timestamp '2024-0{}-{:02} {:02}:{:02}:{:02}'",
                self.rng.gen_range(1..=9),
                self.rng.gen_range(1..=28),
                self.rng.gen_range(0..24),
                self.rng.gen_range(0..60),
                self.rng.gen_range(0..60)
            ),
            Ty::Tz => format!(
                "timestamptz '{}'",
                self.pick(&[
                    "2024-03-10 02:30:00",
                    "2024-03-31 02:30:00+02",
                    "2024-11-03 01:30:00",
                    "2024-06-15 12:00:00-07",
                    "2024-01-01 00:00:00 UTC",
                    "2024-10-27 02:59:59.5"
                ])
            ),
            Ty::Interval => format!(
                "interval '{}'",
                self.pick(&[
                    "1 day",
                    "2 hours 30 minutes",
                    "-3 days 4 hours",
                    "1 mon",
                    "90 seconds",
                    "1 year 2 mons"
                ])
            ),
        }
    }

    /// A leaf: a column of `ty` in scope (mostly), else a literal.
    fn leaf(&mut self, ty: Ty) -> String {
        if let Some(n) = self.params {
            if self.chance(0.2) {
                self.params = Some(n + 1);
                return format!("${}", n + 1);
            }
        }
        if self.chance(0.75) {
            if let Some(c) = self.column(ty) {
                return c.to_string();
            }
        }
        if self.chance(0.05) {
            return format!("NULL::{}", type_name(ty));
        }
        self.literal(ty)
    }

    fn nonzero(&mut self) -> String {
        let v = self.pick(&[1, 2, 3, 7, -2, -5]);
        if v < 0 {
            format!("({v})")
        } else {
            v.to_string()
        }
    }

    fn expr(&mut self, ty: Ty, depth: u32) -> String {
        if depth == 0 || self.chance(0.3) {
            return self.leaf(ty);
        }
        let d = depth - 1;
        match ty {
            Ty::Int => match self.rng.gen_range(0..14) {
                0 => format!("({} + {})", self.expr(Ty::Int, d), self.expr(Ty::Int, d)),
                1 => format!("({} - {})", self.expr(Ty::Int, d), self.expr(Ty::Int, d)),
                // Products of leaves only: the values stay far from overflow.
                2 => format!("({} * {})", self.leaf(Ty::Int), self.leaf(Ty::Int)),
                3 => format!("({} / {})", self.expr(Ty::Int, d), self.nonzero()),
                4 => format!("({} % {})", self.expr(Ty::Int, d), self.nonzero()),
                5 => format!("abs({})", self.expr(Ty::Int, d)),
                6 => format!("(- {})", self.expr(Ty::Int, d)),
                7 => self.case(Ty::Int, d),
                8 => format!("coalesce({}, {})", self.expr(Ty::Int, d), self.expr(Ty::Int, d)),
                9 => format!("nullif({}, {})", self.expr(Ty::Int, d), self.expr(Ty::Int, d)),
                10 => {
                    let ty = self.pick(&[Ty::Text, Ty::Char]);
                    format!("length({})", self.expr(ty, d))
                }
                11 => {
                    let f = self.pick(&["greatest", "least"]);
                    format!("{f}({}, {})", self.expr(Ty::Int, d), self.expr(Ty::Int, d))
                }
                12 => format!("({} - {})", self.expr(Ty::Date, d), self.expr(Ty::Date, d)),
                _ => match self.rng.gen_range(0..4) {
                    0 => format!("strpos({}, {})", self.expr(Ty::Text, d), self.leaf(Ty::Text)),
                    1 => format!("position({} in {})", self.leaf(Ty::Text), self.expr(Ty::Text, d)),
                    2 => match self.rng.gen_range(0..4) {
                        // Casts that round: numeric half away from zero, floats half to even.
                        0 => format!("{}::int", self.expr(Ty::Num, d)),
                        1 => format!("{}::int", self.expr(Ty::Dbl, d)),
                        2 => format!("{}::int", self.expr(Ty::Real, d)),
                        // sign() of an integer is double precision: cast back.
                        _ => format!("sign({})::int", self.expr(Ty::Int, d)),
                    },
                    _ => format!("mod({}, {})", self.expr(Ty::Int, d), self.nonzero()),
                },
            },
            Ty::Big => match self.rng.gen_range(0..4) {
                0 => format!("({} + {})", self.expr(Ty::Big, d), self.expr(Ty::Int, d)),
                1 => format!("({} * {})", self.leaf(Ty::Big), self.leaf(Ty::Int)),
                2 => format!("{}::bigint", self.expr(Ty::Int, d)),
                _ => format!("({} - {})", self.expr(Ty::Big, d), self.expr(Ty::Big, d)),
            },
            Ty::Num => match self.rng.gen_range(0..11) {
                0 => format!("({} + {})", self.expr(Ty::Num, d), self.expr(Ty::Num, d)),
                1 => format!("({} - {})", self.expr(Ty::Num, d), self.expr(Ty::Int, d)),
                2 => format!("({} * {})", self.leaf(Ty::Num), self.leaf(Ty::Num)),
                3 => format!("({} / {})", self.expr(Ty::Num, d), self.nonzero()),
                4 => format!("round({}, {})", self.expr(Ty::Num, d), self.rng.gen_range(0..=3)),
                5 => format!("trunc({}, {})", self.expr(Ty::Num, d), self.rng.gen_range(0..=2)),
                6 => {
                    let f = self.pick(&["floor", "ceil", "abs", "round"]);
                    format!("{f}({})", self.expr(Ty::Num, d))
                }
                7 => match self.rng.gen_range(0..3) {
                    0 => format!("{}::numeric", self.expr(Ty::Int, d)),
                    1 => format!(
                        "extract({} from {})",
                        self.pick(&["hour", "day", "month", "dow", "epoch", "minute", "second"]),
                        self.expr(Ty::Ts, d)
                    ),
                    _ => {
                        let ty = self.pick(&[Ty::Interval, Ty::Tz]);
                        format!(
                            "extract({} from {})",
                            self.pick(&["hour", "day", "epoch", "minute"]),
                            self.expr(ty, d)
                        )
                    }
                },
                8 => self.case(Ty::Num, d),
                9 => format!("coalesce({}, {})", self.expr(Ty::Num, d), self.expr(Ty::Num, d)),
                _ => match self.rng.gen_range(0..5) {
                    0 => format!("({} % {})", self.expr(Ty::Num, d), self.nonzero()),
                    1 => format!("sqrt(abs({}))", self.expr(Ty::Num, d)),
                    2 => format!("power({}, 2)", self.leaf(Ty::Num)),
                    3 => match self.rng.gen_range(0..4) {
                        0 => format!("{}::numeric(6,1)", self.expr(Ty::Num, d)),
                        1 => format!("{}::numeric", self.expr(Ty::Dbl, d)),
                        2 => format!("(({}) % 100)::numeric(5,2)", self.expr(Ty::Int, d)),
                        _ => format!("div({}, {})", self.expr(Ty::Num, d), self.nonzero()),
                    },
                    _ => format!(
                        "({} / {})",
                        self.expr(Ty::Num, d),
                        self.pick(&["3", "7.5", "(-0.3)", "11"])
                    ),
                },
            },
            Ty::Text => match self.rng.gen_range(0..13) {
                0 => format!("({} || {})", self.expr(Ty::Text, d), self.expr(Ty::Text, d)),
                1 => {
                    let f = self.pick(&["upper", "lower", "trim", "reverse", "initcap"]);
                    format!("{f}({})", self.expr(Ty::Text, d))
                }
                2 => format!(
                    "substr({}, {}, {})",
                    self.expr(Ty::Text, d),
                    self.rng.gen_range(-1..=4),
                    self.rng.gen_range(0..=4)
                ),
                3 => format!("concat({}, {})", self.expr(Ty::Text, d), self.expr(Ty::Int, d)),
                4 => format!("{}::text", self.expr(Ty::Int, d)),
                5 => self.case(Ty::Text, d),
                6 => format!("coalesce({}, {})", self.expr(Ty::Text, d), self.expr(Ty::Text, d)),
                7 => format!("replace({}, 'a', 'xy')", self.expr(Ty::Text, d)),
                8 => {
                    let f = self.pick(&["left", "right"]);
                    format!("{f}({}, {})", self.expr(Ty::Text, d), self.rng.gen_range(-2..=3))
                }
                9 => match self.rng.gen_range(0..4) {
                    0 => format!(
                        "lpad({}, {}, '*')",
                        self.expr(Ty::Text, d),
                        self.rng.gen_range(0..=6)
                    ),
                    1 => format!(
                        "split_part({}, 'b', {})",
                        self.expr(Ty::Text, d),
                        self.rng.gen_range(1..=3)
                    ),
                    2 => match self.rng.gen_range(0..2) {
                        0 => format!("{}::varchar(2)", self.expr(Ty::Text, d)),
                        _ => format!(
                            "repeat({}, {})",
                            self.expr(Ty::Text, d),
                            self.rng.gen_range(0..=3)
                        ),
                    },
                    _ => format!(
                        "{}({}, '{}')",
                        self.pick(&["ltrim", "rtrim", "btrim"]),
                        self.expr(Ty::Text, d),
                        self.pick(&["a", " x", "ab"])
                    ),
                },
                10 => format!("{}::text", self.expr(Ty::Num, d)),
                11 => match self.rng.gen_range(0..4) {
                    0 => format!("({} || {})", self.expr(Ty::Char, d), self.expr(Ty::Text, d)),
                    1 => format!("upper({})", self.expr(Ty::Char, d)),
                    2 => format!("{}::text", self.expr(Ty::Char, d)),
                    _ => format!("({} || {})", self.expr(Ty::Text, d), self.expr(Ty::Int, d)),
                },
                _ => {
                    let ty =
                        self.pick(&[Ty::Date, Ty::Ts, Ty::Interval, Ty::Real, Ty::Small, Ty::Tz]);
                    if ty == Ty::Tz && self.chance(0.5) {
                        return format!(
                            "to_char({}, 'YYYY-MM-DD HH24:MI:SS Dy')",
                            self.expr(Ty::Tz, d)
                        );
                    }
                    format!("{}::text", self.expr(ty, d))
                }
            },
            Ty::Bool => self.predicate(d),
            Ty::Date => match self.rng.gen_range(0..3) {
                0 => format!("({} + ({}) % 1000)", self.expr(Ty::Date, d), self.expr(Ty::Int, d)),
                1 => format!("({} - {})", self.expr(Ty::Date, d), self.leaf(Ty::Int)),
                _ => self.case(Ty::Date, d),
            },
            Ty::Dbl => match self.rng.gen_range(0..5) {
                0 => format!("({} * {})", self.leaf(Ty::Dbl), self.leaf(Ty::Dbl)),
                1 => format!("({} + {})", self.expr(Ty::Dbl, d), self.expr(Ty::Int, d)),
                2 => format!("abs({})", self.expr(Ty::Dbl, d)),
                3 => format!("{}::float8", self.expr(Ty::Int, d)),
                _ => format!("({} / 4)", self.expr(Ty::Dbl, d)),
            },
            Ty::Char => match self.rng.gen_range(0..3) {
                0 => self.case(Ty::Char, d),
                1 => format!("coalesce({}, {})", self.expr(Ty::Char, d), self.leaf(Ty::Char)),
                _ => format!("{}::char(4)", self.expr(Ty::Text, d)),
            },
            Ty::Small => match self.rng.gen_range(0..3) {
                0 => format!("({} + {})", self.leaf(Ty::Small), self.leaf(Ty::Small)),
                1 => format!("abs({})", self.expr(Ty::Small, d)),
                _ => format!("({} - {})", self.leaf(Ty::Small), self.leaf(Ty::Small)),
            },
            Ty::Real => match self.rng.gen_range(0..3) {
                0 => format!("({} * {})", self.leaf(Ty::Real), self.leaf(Ty::Real)),
                1 => format!("({} + {})", self.expr(Ty::Real, d), self.leaf(Ty::Small)),
                _ => format!("{}::real", self.expr(Ty::Int, d)),
            },
            Ty::Ts => match self.rng.gen_range(0..4) {
                0 => format!("({} + {})", self.expr(Ty::Ts, d), self.expr(Ty::Interval, d)),
                1 => format!(
                    "date_trunc('{}', {})",
                    self.pick(&["hour", "day", "month", "year", "minute", "week"]),
                    self.expr(Ty::Ts, d)
                ),
                2 => format!("({} - {})", self.expr(Ty::Ts, d), self.expr(Ty::Interval, d)),
                _ => match self.rng.gen_range(0..3) {
                    0 => format!("{}::timestamp", self.expr(Ty::Tz, d)),
                    1 => format!("({} AT TIME ZONE 'Asia/Kolkata')", self.expr(Ty::Tz, d)),
                    _ => format!("({} + {})", self.expr(Ty::Date, d), self.leaf(Ty::Interval)),
                },
            },
            Ty::Tz => match self.rng.gen_range(0..5) {
                0 => format!("{}::timestamptz", self.expr(Ty::Ts, d)),
                1 => format!("({} + {})", self.expr(Ty::Tz, d), self.expr(Ty::Interval, d)),
                2 => format!(
                    "date_trunc('{}', {})",
                    self.pick(&["hour", "day", "month", "week"]),
                    self.expr(Ty::Tz, d)
                ),
                3 => format!("({} - {})", self.expr(Ty::Tz, d), self.leaf(Ty::Interval)),
                _ => format!("({} AT TIME ZONE 'UTC')", self.expr(Ty::Ts, d)),
            },
            Ty::Interval => match self.rng.gen_range(0..5) {
                0 => format!("({} - {})", self.expr(Ty::Ts, d), self.expr(Ty::Ts, d)),
                1 => format!("({} + {})", self.expr(Ty::Interval, d), self.expr(Ty::Interval, d)),
                2 => format!(
                    "({} * {})",
                    self.expr(Ty::Interval, d),
                    self.pick(&["2", "0.5", "(-1)", "1.5"])
                ),
                3 => format!(
                    "{}({})",
                    self.pick(&["justify_hours", "justify_days", "justify_interval"]),
                    self.expr(Ty::Interval, d)
                ),
                _ => format!("(- {})", self.expr(Ty::Interval, d)),
            },
        }
    }

    fn case(&mut self, ty: Ty, d: u32) -> String {
        if self.chance(0.5) {
            format!(
                "CASE WHEN {} THEN {} ELSE {} END",
                self.predicate(d),
                self.expr(ty, d),
                self.expr(ty, d)
            )
        } else {
            format!(
                "CASE {} WHEN {} THEN {} WHEN {} THEN {} END",
                self.expr(Ty::Int, d),
                self.literal(Ty::Int),
                self.expr(ty, d),
                self.literal(Ty::Int),
                self.expr(ty, d)
            )
        }
    }

    /// A comparable type for a comparison.
    fn comparable(&mut self) -> Ty {
        match self.pick(&SCALARS) {
            Ty::Bool => Ty::Int,
            ty => ty,
        }
    }

    /// A boolean expression, parenthesized (PostgreSQL's IS and comparison operators do not
    /// associate, so an operand must not be a bare one of them).
    fn predicate(&mut self, depth: u32) -> String {
        format!("({})", self.bare_predicate(depth))
    }

    fn bare_predicate(&mut self, depth: u32) -> String {
        let d = depth.saturating_sub(1);
        match self.rng.gen_range(0..14) {
            0..=2 => {
                let ty = self.comparable();
                let op = self.pick(&["=", "<>", "<", "<=", ">", ">="]);
                format!("{} {op} {}", self.expr(ty, d), self.expr(ty, d))
            }
            3 if depth > 0 => format!("({} AND {})", self.predicate(d), self.predicate(d)),
            4 if depth > 0 => format!("({} OR {})", self.predicate(d), self.predicate(d)),
            5 if depth > 0 => format!("NOT ({})", self.predicate(d)),
            6 => {
                let ty = self.pick(&SCALARS);
                let not = if self.chance(0.5) { " NOT" } else { "" };
                format!("{} IS{not} NULL", self.expr(ty, d))
            }
            7 => {
                let ty = self.pick(&[Ty::Int, Ty::Num, Ty::Date, Ty::Text, Ty::Char, Ty::Ts]);
                let not = if self.chance(0.3) { " NOT" } else { "" };
                format!("{}{not} BETWEEN {} AND {}", self.expr(ty, d), self.leaf(ty), self.leaf(ty))
            }
            8 => {
                let ty = self.pick(&[Ty::Int, Ty::Text, Ty::Num, Ty::Char, Ty::Small]);
                let n = self.rng.gen_range(1..=4);
                // An integer list is also written as an array value (`= ANY`, `<> ALL`).
                if ty == Ty::Int && self.chance(0.3) {
                    let items: Vec<String> = (0..n)
                        .map(|_| match self.rng.gen_range(-20..=21) {
                            21 => "NULL".to_string(),
                            v => v.to_string(),
                        })
                        .collect();
                    let op = self.pick(&["= ANY", "<> ALL", "< ANY", ">= ALL"]);
                    return format!("{} {op} ('{{{}}}'::int[])", self.expr(ty, d), items.join(","));
                }
                let list: Vec<_> = (0..n).map(|_| self.literal(ty)).collect();
                let not = if self.chance(0.3) { " NOT" } else { "" };
                format!("{}{not} IN ({})", self.expr(ty, d), list.join(", "))
            }
            9 => {
                let op = self.pick(&["LIKE", "NOT LIKE", "ILIKE"]);
                format!("{} {op} '{}'", self.expr(Ty::Text, d), self.pick(&PATTERNS))
            }
            10 => {
                let ty = self.comparable();
                let not = if self.chance(0.5) { " NOT" } else { "" };
                if self.chance(0.3) {
                    let what = self.pick(&["TRUE", "FALSE", "UNKNOWN"]);
                    return format!("{} IS{not} {what}", self.predicate(d));
                }
                format!("{} IS{not} DISTINCT FROM {}", self.expr(ty, d), self.expr(ty, d))
            }
            11 if self.has_t => {
                let not = if self.chance(0.3) { "NOT " } else { "" };
                format!(
                    "{not}EXISTS (SELECT 1 FROM u WHERE u.t_id = t.id AND u.a > {})",
                    self.literal(Ty::Int)
                )
            }
            12 if self.has_t => {
                let not = if self.chance(0.3) { " NOT" } else { "" };
                // (No scalar subquery that may return several rows: whether its 21000 is
                // raised depends on which rows an engine evaluates it for.)
                match self.rng.gen_range(0..2) {
                    0 => format!(
                        "t.a{not} IN (SELECT u.a FROM u WHERE u.a IS NOT NULL ORDER BY u.a DESC, u.id LIMIT {})",
                        self.rng.gen_range(0..5)
                    ),
                    _ => format!(
                        "t.a{not} IN (SELECT u.a FROM u WHERE u.s <> {})",
                        self.literal(Ty::Text)
                    ),
                }
            }
            _ => self.leaf(Ty::Bool),
        }
    }

    /// Any type, the usual ones of a schema (int, numeric, text) twice as often.
    fn scalar_type(&mut self) -> Ty {
        if self.chance(0.2) {
            self.pick(&[Ty::Int, Ty::Num, Ty::Text])
        } else {
            self.pick(&SCALARS)
        }
    }

    fn select_list(&mut self, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| {
                let ty = self.scalar_type();
                let depth = self.rng.gen_range(0..=3);
                self.expr(ty, depth)
            })
            .collect()
    }

    fn set_scope(&mut self, t: bool, u: bool) {
        self.scope.clear();
        if t {
            self.scope.extend(T_COLS);
        }
        if u {
            self.scope.extend(U_COLS);
        }
        self.has_t = t;
    }

    /// ORDER BY every output column (a total order up to equal rows), maybe LIMIT / OFFSET.
    fn order_limit(&mut self, columns: usize) -> (String, bool) {
        if !self.chance(0.4) {
            return (String::new(), false);
        }
        let keys: Vec<_> = (1..=columns)
            .map(|i| {
                let dir = self.pick(&["", " DESC", " ASC NULLS FIRST", " DESC NULLS LAST"]);
                format!("{i}{dir}")
            })
            .collect();
        let mut s = format!(" ORDER BY {}", keys.join(", "));
        if self.chance(0.6) {
            s += &format!(" LIMIT {}", self.rng.gen_range(0..8));
            if self.chance(0.4) {
                s += &format!(" OFFSET {}", self.rng.gen_range(0..5));
            }
        }
        (s, true)
    }

    /// A window frame clause in `units` whose bounds PostgreSQL's grammar accepts, offsets
    /// included (integers: a RANGE frame's ORDER BY key must be an integer).
    fn frame(&mut self, units: &str) -> String {
        // Bounds in their order: UNBOUNDED PRECEDING, n PRECEDING, CURRENT ROW, n FOLLOWING,
        // UNBOUNDED FOLLOWING; the end's rank is at least the start's.
        let offsets = units != "RANGE" || self.chance(0.7);
        let bound = |rank: usize, rng: &mut StdRng| match rank {
            0 => "UNBOUNDED PRECEDING".to_string(),
            1 => format!("{} PRECEDING", rng.gen_range(0..4)),
            2 => "CURRENT ROW".to_string(),
            3 => format!("{} FOLLOWING", rng.gen_range(0..4)),
            _ => "UNBOUNDED FOLLOWING".to_string(),
        };
        let ranks: &[usize] = if offsets { &[0, 1, 2, 3] } else { &[0, 2] };
        let start = ranks[self.rng.gen_range(0..ranks.len())];
        let ends: Vec<usize> = (start.max(1)..=4).filter(|r| offsets || r % 2 == 0).collect();
        let end = ends[self.rng.gen_range(0..ends.len())];
        // Past the start: `CURRENT ROW AND n PRECEDING` is refused, so is a FOLLOWING start
        // ending at CURRENT ROW; both are excluded by the ranks.
        let start = bound(start, &mut self.rng);
        let end = bound(end, &mut self.rng);
        format!("{units} BETWEEN {start} AND {end}")
    }

    /// A query and whether its row order is defined.
    fn query(&mut self) -> (String, bool) {
        match self.rng.gen_range(0..13) {
            // Window functions: a total order (by id) where the answer depends on it; peers
            // (ORDER BY a) only where they share their answer.
            10 => {
                self.set_scope(true, false);
                let key_ty = self.pick(&[Ty::Int, Ty::Text, Ty::Bool, Ty::Char]);
                let key = self.expr(key_ty, 1);
                let part =
                    if self.chance(0.6) { format!("PARTITION BY {key} ") } else { String::new() };
                let window = match self.rng.gen_range(0..15) {
                    0 => format!("row_number() OVER ({part}ORDER BY t.id)"),
                    1 => format!("rank() OVER ({part}ORDER BY t.a)"),
                    2 => format!("dense_rank() OVER ({part}ORDER BY t.a DESC)"),
                    3 => format!("sum(t.a) OVER ({part}ORDER BY t.a)"),
                    4 => format!("count(*) OVER ({part})"),
                    5 => {
                        let f = self.pick(&["lag", "lead"]);
                        let ty = self.pick(&[Ty::Int, Ty::Text, Ty::Num]);
                        format!("{f}({}) OVER ({part}ORDER BY t.id)", self.expr(ty, 1))
                    }
                    6 => format!("avg(t.n) OVER ({part}ORDER BY t.id)"),
                    7 => {
                        let f = self.pick(&["min", "max"]);
                        format!("{f}(t.s) OVER ({part})")
                    }
                    // Frames over the total order: any ROWS bounds.
                    8 => {
                        let f = self.pick(&["sum", "count", "min", "max", "avg"]);
                        let frame = self.frame("ROWS");
                        format!("{f}(t.a) OVER ({part}ORDER BY t.id {frame})")
                    }
                    9 => {
                        let ty = self.pick(&[Ty::Int, Ty::Text, Ty::Num, Ty::Date]);
                        let value = self.expr(ty, 1);
                        let frame =
                            if self.chance(0.3) { String::new() } else { self.frame("ROWS") };
                        match self.rng.gen_range(0..3) {
                            0 => format!("first_value({value}) OVER ({part}ORDER BY t.id {frame})"),
                            1 => format!("last_value({value}) OVER ({part}ORDER BY t.id {frame})"),
                            _ => {
                                let n = self.rng.gen_range(1..4);
                                format!(
                                    "nth_value({value}, {n}) OVER ({part}ORDER BY t.id {frame})"
                                )
                            }
                        }
                    }
                    // Peer groups (ORDER BY t.a): frames of whole groups, ranks shared by peers.
                    10 => {
                        let f = self.pick(&["sum", "count", "max"]);
                        let units = self.pick(&["GROUPS", "RANGE"]);
                        let frame = self.frame(units);
                        let order = self.pick(&["", " DESC", " NULLS FIRST", " DESC NULLS LAST"]);
                        format!("{f}(t.b) OVER ({part}ORDER BY t.a{order} {frame})")
                    }
                    11 => {
                        let f = self.pick(&["percent_rank", "cume_dist"]);
                        format!("{f}() OVER ({part}ORDER BY t.a)")
                    }
                    12 => {
                        let n = self.rng.gen_range(1..5);
                        format!("ntile({n}) OVER ({part}ORDER BY t.id DESC)")
                    }
                    // Over groups: ranks by an aggregate, a window sum of aggregates.
                    13 => {
                        let f = self.pick(&["rank", "dense_rank", "percent_rank"]);
                        return (
                            format!(
                                "SELECT {key}, count(*), {f}() OVER (ORDER BY count(*) DESC), \
                                 sum(count(*)) OVER (), sum(sum(t.a)) OVER (ORDER BY min(t.id)) \
                                 FROM t GROUP BY {key}"
                            ),
                            false,
                        );
                    }
                    // A named window, used twice.
                    _ => {
                        let f = self.pick(&["sum", "count", "min"]);
                        let list = self.select_list(1);
                        let frame = self.frame("ROWS");
                        return (
                            format!(
                                "SELECT t.id, {}, {f}(t.a) OVER w, row_number() OVER w FROM t \
                                 WINDOW w AS ({part}ORDER BY t.id {frame})",
                                list[0]
                            ),
                            false,
                        );
                    }
                };
                let list = self.select_list(1);
                let filter = if self.chance(0.5) {
                    format!(" WHERE {}", self.predicate(2))
                } else {
                    String::new()
                };
                (format!("SELECT t.id, {}, {window} FROM t{filter}", list[0]), false)
            }
            // A derived table or a CTE standing in for t (named t, so every expression over t
            // still reads it).
            11 | 12 => {
                self.set_scope(true, false);
                let inner = format!("SELECT * FROM t WHERE {}", self.predicate(2));
                let n = self.rng.gen_range(1..=3);
                let list = self.select_list(n);
                let filter = self.predicate(2);
                let (order, ordered) = self.order_limit(n);
                let list = list.join(", ");
                if self.chance(0.5) {
                    (format!("SELECT {list} FROM ({inner}) AS t WHERE {filter}{order}"), ordered)
                } else {
                    (
                        format!(
                            "WITH w AS ({inner}) SELECT {list} FROM w AS t WHERE {filter}{order}"
                        ),
                        ordered,
                    )
                }
            }
            // One table.
            0..=2 => {
                self.set_scope(true, false);
                let n = self.rng.gen_range(1..=3);
                let mut list = self.select_list(n);
                if self.chance(0.15) {
                    let risky = self.risky();
                    list.push(risky);
                    // Whichever row fails first, the error is the same; no LIMIT, so every
                    // row that passes the filter is evaluated by both.
                    let filter = self.predicate(2);
                    return (format!("SELECT {} FROM t WHERE {filter}", list.join(", ")), false);
                }
                let filter = if self.chance(0.8) {
                    format!(" WHERE {}", self.predicate(3))
                } else {
                    String::new()
                };
                let (order, ordered) = self.order_limit(n);
                (format!("SELECT {} FROM t{filter}{order}", list.join(", ")), ordered)
            }
            // Joins.
            3 | 4 => {
                self.set_scope(true, true);
                let from = match self.rng.gen_range(0..14) {
                    0 => "t JOIN u ON u.t_id = t.id".to_string(),
                    1 => "t LEFT JOIN u ON u.t_id = t.id".to_string(),
                    // An ON condition beyond the key: for a LEFT JOIN it filters u's rows, not
                    // t's (a t row without a match still comes, with NULLs).
                    2 | 3 => {
                        let join = self.pick(&["JOIN", "LEFT JOIN"]);
                        let on = self.predicate(1);
                        format!("t {join} u ON u.t_id = t.id AND {on}")
                    }
                    // A derived table of u's aggregates, joined.
                    4 => {
                        let f = self.pick(&["count(*)", "max(u.a)", "sum(u.a)", "min(u.s)"]);
                        format!(
                            "t LEFT JOIN (SELECT u.t_id, {f} AS agg FROM u GROUP BY u.t_id) AS g ON g.t_id = t.id"
                        )
                    }
                    // Keys no index serves (hash joins): across integer widths, text with
                    // more conditions, numeric against int, and a third item, joined by no
                    // condition, written between the two that are.
                    5 => "t JOIN u ON u.a = t.b".to_string(),
                    6 => {
                        let join = self.pick(&["JOIN", "LEFT JOIN"]);
                        let on = self.predicate(1);
                        format!("t {join} u ON u.s = t.s AND {on}")
                    }
                    7 => "u JOIN t ON t.n = u.a".to_string(),
                    8 => "u, (SELECT 1 AS one) AS z, t".to_string(),
                    // Outer joins that keep the right side's rows (WHERE filters above them),
                    // and a LATERAL subquery that reads t's row (named u: u's columns).
                    10 => "t RIGHT JOIN u ON u.t_id = t.id".to_string(),
                    11 => {
                        let on = self.predicate(1);
                        format!("t FULL JOIN u ON u.t_id = t.id AND {on}")
                    }
                    12 => "t FULL JOIN u ON u.a = t.b".to_string(),
                    13 => {
                        let join = self.pick(&["CROSS JOIN", "LEFT JOIN"]);
                        let on = if join == "LEFT JOIN" { " ON true" } else { "" };
                        format!(
                            "t {join} LATERAL (SELECT * FROM u WHERE u.t_id = t.id ORDER BY u.id LIMIT 1) AS u{on}"
                        )
                    }
                    _ => "t, u".to_string(),
                };
                if from.contains("AS g") {
                    // u is not in scope, g is: its columns are not typed in the generator, so
                    // it only appears in the projection.
                    self.set_scope(true, false);
                }
                let n = self.rng.gen_range(1..=3);
                let mut list = self.select_list(n);
                if from.contains("AS g") {
                    list.push("g.agg".to_string());
                }
                let n = list.len();
                let mut filter = self.predicate(2);
                if from == "t, u" {
                    filter = format!("t.a = u.a AND {filter}");
                } else if from.contains("AS z") {
                    filter = format!("t.a = u.a AND z.one = 1 AND {filter}");
                }
                let (order, ordered) = self.order_limit(n);
                (format!("SELECT {} FROM {from} WHERE {filter}{order}", list.join(", ")), ordered)
            }
            // Grouping.
            5 | 6 => {
                self.set_scope(true, false);
                let key_ty = self.pick(&[Ty::Int, Ty::Text, Ty::Bool, Ty::Date, Ty::Num]);
                let key = self.expr(key_ty, 1);
                let mut list = vec![key];
                let two_keys = self.chance(0.3);
                if two_keys {
                    let ty = self.pick(&[Ty::Int, Ty::Bool, Ty::Char]);
                    list.push(self.expr(ty, 1));
                }
                for _ in 0..self.rng.gen_range(1..=3) {
                    let agg = self.aggregate();
                    list.push(agg);
                }
                let filter = if self.chance(0.5) {
                    format!(" WHERE {}", self.predicate(2))
                } else {
                    String::new()
                };
                let having = match self.rng.gen_range(0..6) {
                    0 => format!(" HAVING count(*) > {}", self.rng.gen_range(0..3)),
                    1 => format!(" HAVING sum(t.a) > {}", self.literal(Ty::Int)),
                    2 => format!(" HAVING max(t.s) <> {}", self.literal(Ty::Text)),
                    _ => String::new(),
                };
                let keys = if two_keys { "1, 2" } else { "1" };
                // Grouping sets only over plain columns: PostgreSQL 15 drops a sort key that it
                // folds to a constant even where a grouping set makes it NULL, and so sorts such
                // rows as if the key were not there (fixed in PostgreSQL 18). Two equal keys are
                // refused (0A000) when they name two select-list items.
                let column = |k: &String| {
                    k.strip_prefix("t.")
                        .is_some_and(|c| c.chars().all(|c| c.is_ascii_alphanumeric()))
                };
                let sets_ok = list[..if two_keys { 2 } else { 1 }].iter().all(column)
                    && (!two_keys || list[0] != list[1]);
                let group = match self.rng.gen_range(0..8) {
                    _ if !sets_ok => keys.to_string(),
                    0 => format!("ROLLUP ({keys})"),
                    1 => format!("CUBE ({keys})"),
                    2 => format!("GROUPING SETS (({keys}), ())"),
                    _ => keys.to_string(),
                };
                // GROUPING() of the keys, under grouping sets or not.
                if sets_ok && self.chance(0.4) {
                    let args = if two_keys && self.chance(0.5) {
                        format!("{}, {}", list[1], list[0])
                    } else {
                        list[0].clone()
                    };
                    list.push(format!("GROUPING({args})"));
                }
                let n = list.len();
                let (order, ordered) = self.order_limit(n);
                (
                    format!(
                        "SELECT {} FROM t{filter} GROUP BY {group}{having}{order}",
                        list.join(", ")
                    ),
                    ordered,
                )
            }
            // DISTINCT, and aggregates without GROUP BY.
            7 => {
                self.set_scope(true, false);
                if self.chance(0.5) {
                    // No intervals: '1 mon' and '30 days' are one value with two spellings,
                    // and which spelling DISTINCT keeps is the engine's choice.
                    let n = self.rng.gen_range(1..=2);
                    let list: Vec<_> = (0..n)
                        .map(|_| {
                            let ty = match self.scalar_type() {
                                Ty::Interval => Ty::Text,
                                ty => ty,
                            };
                            let depth = self.rng.gen_range(0..=3);
                            self.expr(ty, depth)
                        })
                        .collect();
                    let (order, ordered) = self.order_limit(n);
                    (format!("SELECT DISTINCT {} FROM t{order}", list.join(", ")), ordered)
                } else if self.chance(0.4) {
                    // DISTINCT ON: the first row by id of each group (a total order, so
                    // the answer is defined).
                    let ty = self.pick(&[Ty::Int, Ty::Text, Ty::Bool, Ty::Date, Ty::Num]);
                    let key = self.expr(ty, 1);
                    let list = self.select_list(1);
                    let dir = self.pick(&["", " DESC"]);
                    (
                        format!(
                            "SELECT DISTINCT ON ({key}) t.id, {} FROM t ORDER BY {key}{dir}, t.id",
                            list[0]
                        ),
                        false,
                    )
                } else {
                    let list: Vec<_> =
                        (0..self.rng.gen_range(1..=3)).map(|_| self.aggregate()).collect();
                    (format!("SELECT {} FROM t WHERE {}", list.join(", "), self.predicate(2)), true)
                }
            }
            // Set operations.
            8 => {
                let op = self.pick(&["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "EXCEPT ALL"]);
                self.set_scope(true, false);
                let left = format!("SELECT t.a, t.s FROM t WHERE {}", self.predicate(2));
                self.set_scope(false, true);
                let right = format!("SELECT u.a, u.s FROM u WHERE {}", self.predicate(2));
                let (order, ordered) = self.order_limit(2);
                (format!("{left} {op} {right}{order}"), ordered)
            }
            // A correlated scalar subquery.
            _ => {
                self.set_scope(true, false);
                let f = self.pick(&["max", "min", "count", "sum"]);
                let list = self.select_list(1);
                (
                    format!(
                        "SELECT t.id, (SELECT {f}(u.a) FROM u WHERE u.t_id = t.id), {} FROM t WHERE {}",
                        list[0],
                        self.predicate(2)
                    ),
                    false,
                )
            }
        }
    }

    /// An expression that fails on some rows: division by zero (22012), bigint overflow
    /// (22003), text that is not a number (22P02), a negative substring length (22011).
    fn risky(&mut self) -> String {
        match self.rng.gen_range(0..5) {
            // Each reads a column: an expression of constants alone may be folded (and fail)
            // while planning, which PostgreSQL does in more places than Aspen.
            0 => format!("(100 / {})", self.pick(&["t.a", "(t.a - t.id)", "(t.id % 3)"])),
            1 => "(t.b * 9000000000000000::bigint)".to_string(),
            2 => format!("{}::int", self.pick(&["t.s", "(t.s || t.v)", "t.v", "t.n::text"])),
            3 => format!("substr(t.s, 1, {})", self.pick(&["t.a", "(t.a - 5)"])),
            _ => format!("({} % t.a)", self.expr(Ty::Num, 1)),
        }
    }

    fn aggregate(&mut self) -> String {
        match self.rng.gen_range(0..13) {
            0 => "count(*)".to_string(),
            // Ordered by a unique key, so that the concatenation is defined.
            12 => {
                let value = self.expr(Ty::Text, 1);
                let dir = self.pick(&["", " DESC"]);
                format!("string_agg({value}, '|' ORDER BY t.id{dir})")
            }
            // Exact input only: over floats the sums depend on the rows' order.
            11 => {
                let f = self.pick(&["stddev", "variance", "stddev_pop", "var_pop", "var_samp"]);
                let ty = self.pick(&[Ty::Int, Ty::Big, Ty::Num, Ty::Small]);
                format!("{f}({})", self.expr(ty, 1))
            }
            9 => {
                let f = self.pick(&["sum", "avg"]);
                let ty = self.pick(&[Ty::Small, Ty::Interval, Ty::Big]);
                format!("{f}({})", self.expr(ty, 1))
            }
            10 => {
                let ty = self.pick(&[Ty::Char, Ty::Num, Ty::Small]);
                format!("count(DISTINCT {})", self.expr(ty, 1))
            }
            1 => {
                let ty = self.scalar_type();
                format!("count({})", self.expr(ty, 1))
            }
            2 => format!("sum({})", self.expr(Ty::Int, 1)),
            3 => format!("sum({})", self.expr(Ty::Num, 1)),
            4 => format!("avg({})", self.expr(Ty::Int, 1)),
            5 => format!("avg({})", self.expr(Ty::Num, 1)),
            6 => {
                let f = self.pick(&["min", "max"]);
                let ty = self.pick(&[
                    Ty::Int,
                    Ty::Big,
                    Ty::Num,
                    Ty::Text,
                    Ty::Date,
                    Ty::Dbl,
                    Ty::Char,
                    Ty::Real,
                    Ty::Ts,
                ]);
                format!("{f}({})", self.expr(ty, 1))
            }
            7 => {
                let ty = self.pick(&[Ty::Int, Ty::Text]);
                format!("count(DISTINCT {})", self.expr(ty, 1))
            }
            _ => format!("sum({}) FILTER (WHERE {})", self.expr(Ty::Int, 1), self.predicate(1)),
        }
    }

    /// A data change, on the same rows for both servers.
    fn change(&mut self, next_id: &mut i32) -> String {
        match self.rng.gen_range(0..10) {
            // UPDATE … FROM / DELETE … USING on t's key: each u row meets one t row at most.
            8 => {
                self.set_scope(true, true);
                format!(
                    "UPDATE u SET a = (t.a + coalesce(u.a, 0)) % 50 FROM t WHERE t.id = u.t_id AND {} RETURNING u.id, u.a, t.s",
                    self.predicate(2)
                )
            }
            9 => {
                self.set_scope(true, true);
                format!(
                    "DELETE FROM u USING t WHERE t.id = u.t_id AND {} RETURNING u.id, t.a",
                    self.predicate(2)
                )
            }
            // RETURNING: the rows a change wrote, as it wrote them.
            4 => {
                self.set_scope(false, true);
                let verb = self.pick(&["UPDATE u SET a = (u.a + 1) % 50", "DELETE FROM u"]);
                format!("{verb} WHERE {} RETURNING u.id, u.a, u.s", self.predicate(2))
            }
            // Upserts: the key of an existing row (conflict) or a new one.
            5 => {
                self.set_scope(true, false);
                let id = self.rng.gen_range(1..=45);
                let a = self.rng.gen_range(-5..=30);
                let action = if self.chance(0.5) {
                    "DO NOTHING".to_string()
                } else {
                    "DO UPDATE SET a = (t.a + excluded.a) % 50, s = excluded.s || 'x'".to_string()
                };
                format!(
                    "INSERT INTO t (id, a, s) VALUES ({id}, {a}, {}) ON CONFLICT (id) {action} RETURNING t.id, t.a, t.s",
                    self.literal(Ty::Text)
                )
            }
            // A correlated subquery in SET.
            6 => {
                self.set_scope(true, false);
                let f = self.pick(&["max", "min", "count", "sum"]);
                format!(
                    "UPDATE t SET a = (SELECT {f}(u.a) FROM u WHERE u.t_id = t.id) % 50 WHERE {}",
                    self.predicate(2)
                )
            }
            // Multi-row VALUES with DEFAULT and expressions.
            7 => {
                let base = *next_id;
                *next_id += 100;
                format!(
                    "INSERT INTO u VALUES ({base}, 1, DEFAULT, 'v'), ({}, NULL, ({}) % 50, {}) RETURNING *",
                    base + 1,
                    self.literal(Ty::Int),
                    self.literal(Ty::Text)
                )
            }
            0 => {
                self.set_scope(true, false);
                // New numbers stay small (`% 50`): repeated updates would otherwise compound
                // them into values that overflow only where an engine happens to evaluate them.
                let (col, ty) = self.pick(&[
                    ("a", Ty::Int),
                    ("n", Ty::Num),
                    ("s", Ty::Text),
                    ("d", Ty::Date),
                    ("f", Ty::Bool),
                ]);
                let value = self.expr(ty, 2);
                let value = match ty {
                    Ty::Int | Ty::Num => format!("({value}) % 50"),
                    Ty::Date => {
                        format!("least(greatest({value}, date '2000-01-01'), date '2050-01-01')")
                    }
                    _ => value,
                };
                format!("UPDATE t SET {col} = {value} WHERE {}", self.predicate(2))
            }
            1 => {
                self.set_scope(false, true);
                format!("DELETE FROM u WHERE {}", self.predicate(2))
            }
            2 => {
                self.set_scope(true, false);
                let base = *next_id;
                *next_id += 100;
                format!(
                    "INSERT INTO u (id, t_id, a, s) SELECT t.id + {base}, t.id, ({}) % 50, {} FROM t WHERE {}",
                    self.expr(Ty::Int, 1),
                    self.expr(Ty::Text, 1),
                    self.predicate(2)
                )
            }
            _ => {
                self.set_scope(false, true);
                format!(
                    "UPDATE u SET a = ({}) % 50 WHERE {}",
                    self.expr(Ty::Int, 2),
                    self.predicate(2)
                )
            }
        }
    }
}

fn type_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Int => "int",
        Ty::Big => "bigint",
        Ty::Num => "numeric",
        Ty::Text => "text",
        Ty::Bool => "boolean",
        Ty::Date => "date",
        Ty::Dbl => "float8",
        Ty::Char => "char(4)",
        Ty::Small => "smallint",
        Ty::Real => "real",
        Ty::Ts => "timestamp",
        Ty::Interval => "interval",
        Ty::Tz => "timestamptz",
    }
}

/// The rows the generator starts from: small domains, so that joins, groups and equalities
/// meet, and a NULL in every nullable column now and then.
fn data(rng: &mut StdRng) -> String {
    fn maybe(rng: &mut StdRng, value: impl FnOnce(&mut StdRng) -> String) -> String {
        let v = value(rng);
        if rng.gen_bool(0.15) {
            "NULL".to_string()
        } else {
            v
        }
    }
    fn word(rng: &mut StdRng) -> String {
        format!("'{}'", WORDS[rng.gen_range(0..WORDS.len())])
    }
    let mut sql = String::new();
    for id in 1..=40 {
        let a = maybe(rng, |r| r.gen_range(-10..=30).to_string());
        let b = maybe(rng, |r| r.gen_range(0..=1000).to_string());
        let n = maybe(rng, |r| format!("{}.{:02}", r.gen_range(-50..=50), r.gen_range(0..100)));
        let s = maybe(rng, word);
        let v = maybe(rng, word);
        let f = maybe(rng, |r| ["true", "false"][r.gen_range(0..2)].to_string());
        let d =
            maybe(rng, |r| format!("'2024-0{}-{:02}'", r.gen_range(1..=9), r.gen_range(1..=28)));
        let x = maybe(rng, |r| {
            ["0.5", "-2.75", "1e3", "0.1", "3", "1.5e-3"][r.gen_range(0..6)].to_string()
        });
        let c = maybe(rng, |r| {
            format!("'{}'", ["ab", "ab ", "", "x", "abcd", "A", " a"][r.gen_range(0..7)])
        });
        let i2 = maybe(rng, |r| r.gen_range(-5..=12).to_string());
        let real = maybe(rng, |r| {
            ["0.1", "2.5", "-3.75", "1e-3", "100", "0.3"][r.gen_range(0..6)].to_string()
        });
        let ts = maybe(rng, |r| {
            format!(
                "'2024-0{}-{:02} {:02}:{:02}:{:02}.{}'",
                r.gen_range(1..=9),
                r.gen_range(1..=28),
                r.gen_range(0..24),
                r.gen_range(0..60),
                r.gen_range(0..60),
                ["0", "5", "123456", "25"][r.gen_range(0..4)]
            )
        });
        sql += &format!(
            "INSERT INTO t VALUES ({id}, {a}, {b}, {n}, {s}, {v}, {f}, {d}, {x}, {c}, {i2}, {real}, {ts});\n"
        );
    }
    for id in 1..=60 {
        let t_id = maybe(rng, |r| r.gen_range(1..=45).to_string());
        let a = maybe(rng, |r| r.gen_range(-10..=30).to_string());
        let s = maybe(rng, word);
        sql += &format!("INSERT INTO u VALUES ({id}, {t_id}, {a}, {s});\n");
    }
    sql
}

/// What a statement returned: column names, rows as text, the command tag's count; or the
/// SQLSTATE and message of its error.
#[derive(Debug, PartialEq)]
enum Outcome {
    Rows { columns: Vec<String>, rows: Vec<Vec<Option<String>>>, count: u64 },
    Error { code: String, message: String },
}

async fn run(client: &Client, sql: &str) -> Outcome {
    let fut = client.simple_query(sql);
    let result = match tokio::time::timeout(std::time::Duration::from_secs(30), fut).await {
        Ok(r) => r,
        Err(_) => panic!("timed out: {sql}"),
    };
    match result {
        Ok(messages) => {
            let (mut columns, mut rows, mut count) = (Vec::new(), Vec::new(), 0);
            for m in messages {
                match m {
                    SimpleQueryMessage::RowDescription(cols) => {
                        columns = cols.iter().map(|c| c.name().to_string()).collect();
                    }
                    SimpleQueryMessage::Row(row) => {
                        rows.push((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect());
                    }
                    SimpleQueryMessage::CommandComplete(n) => count = n,
                    _ => {}
                }
            }
            Outcome::Rows { columns, rows, count }
        }
        Err(e) => match e.as_db_error() {
            Some(db) => Outcome::Error {
                code: db.code().code().to_string(),
                message: db.message().to_string(),
            },
            None => panic!("{sql}: not a server error: {e}"),
        },
    }
}

/// The type OIDs Aspen has: bool, bytea, int8, int2, int4, text, float4, float8, bpchar,
/// varchar, date, timestamp, timestamptz, interval, numeric.
const ASPEN_TYPES: [u32; 15] =
    [16, 17, 20, 21, 23, 25, 700, 701, 1042, 1043, 1082, 1114, 1184, 1186, 1700];

/// What Describe says of a prepared statement: the parameters' type OIDs, and the result
/// columns' names and type OIDs; or the SQLSTATE of the error.
type Described = Result<(Vec<u32>, Vec<(String, u32)>), String>;

async fn describe(client: &Client, sql: &str) -> Described {
    let fut = client.prepare(sql);
    match tokio::time::timeout(std::time::Duration::from_secs(30), fut).await {
        Err(_) => panic!("timed out preparing: {sql}"),
        Ok(Ok(stmt)) => Ok((
            stmt.params().iter().map(|t| t.oid()).collect(),
            stmt.columns().iter().map(|c| (c.name().to_string(), c.type_().oid())).collect(),
        )),
        Ok(Err(e)) => match e.as_db_error() {
            Some(db) => Err(db.code().code().to_string()),
            None => panic!("{sql}: not a server error: {e}"),
        },
    }
}

/// Compares two outcomes: `Ok(true)` if equal, `Ok(false)` if Aspen refused with 0A000 where
/// PostgreSQL answered, `Err` with a description otherwise.
///
/// Unordered rows are compared as multisets. Ordered rows must come in the same sequence up to
/// ties: values that compare equal but print differently (`0.5` and `0.50`, of two numeric
/// scales) may come in either order, and a LIMIT may keep either, so ordered rows are compared
/// with numbers' trailing fractional zeros dropped.
fn compare(aspen: &mut Outcome, pg: &mut Outcome, ordered: bool) -> Result<bool, String> {
    if let (Outcome::Rows { rows: a, .. }, Outcome::Rows { rows: p, .. }) = (&mut *aspen, &mut *pg)
    {
        if ordered {
            let (na, np) = (tie_insensitive(a), tie_insensitive(p));
            if na != np {
                return Err(format!("rows in another order\naspen:    {a:?}\npostgres: {p:?}"));
            }
            (*a, *p) = (na, np);
        } else {
            a.sort();
            p.sort();
        }
    }
    match (&*aspen, &*pg) {
        (a, p) if a == p => Ok(true),
        (Outcome::Error { code: a, .. }, Outcome::Error { code: p, .. }) if a == p => Ok(true),
        (Outcome::Error { code, .. }, _) if code == "0A000" => Ok(false),
        (a, p) => Err(format!("aspen:    {a:?}\npostgres: {p:?}")),
    }
}

/// An interval's text (`1 year 2 mons 3 days -04:05:06.5`) as its span in microseconds, a
/// month counting 30 days and a day 24 hours, as interval comparison counts them; `None` for
/// any other text.
fn interval_span(v: &str) -> Option<i128> {
    const DAY: i128 = 86_400_000_000;
    let (mut span, mut parts) = (0i128, v.split(' ').peekable());
    let mut any = false;
    while let Some(word) = parts.next() {
        if word.contains(':') {
            let negative = word.starts_with('-');
            let mut hms = word.trim_start_matches('-').split(':');
            let (h, m, sec) = (hms.next()?, hms.next()?, hms.next()?);
            let seconds: f64 = sec.parse().ok()?;
            let micros = (h.parse::<i128>().ok()? * 3600 + m.parse::<i128>().ok()? * 60)
                * 1_000_000
                + (seconds * 1e6).round() as i128;
            span += if negative { -micros } else { micros };
        } else {
            let n: i128 = word.parse().ok()?;
            span += n * match parts.next()?.trim_end_matches('s') {
                "year" => 360 * DAY,
                "mon" => 30 * DAY,
                "day" => DAY,
                _ => return None,
            };
        }
        any = true;
    }
    any.then_some(span)
}

/// The rows with every decimal number's trailing fractional zeros dropped, and every interval
/// written as its span: the spellings of values that compare equal.
fn tie_insensitive(rows: &[Vec<Option<String>>]) -> Vec<Vec<Option<String>>> {
    let norm = |v: &str| {
        let digits = v.trim_start_matches('-');
        if v.contains('.') && digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
            v.trim_end_matches('0').trim_end_matches('.').to_string()
        } else if let Some(span) = interval_span(v) {
            format!("interval span {span}")
        } else {
            v.to_string()
        }
    };
    rows.iter().map(|r| r.iter().map(|c| c.as_deref().map(norm)).collect()).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn random_queries_answer_as_postgresql_does() {
    let Some(pg) = tokio::task::spawn_blocking(PgServer::start).await.expect("start PostgreSQL")
    else {
        println!("{PG_UNAVAILABLE}");
        return;
    };
    let aspen = AspenServer::start();
    let queries: usize =
        std::env::var("ASPEN_DIFF_QUERIES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let seed: u64 =
        std::env::var("ASPEN_DIFF_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5EED_2026);
    println!("differential: {queries} statements, ASPEN_DIFF_SEED={seed}");

    let a = connect(aspen.port()).await.expect("connect to aspen");
    let p = connect(pg.port()).await.expect("connect to postgres");
    let mut rng = StdRng::seed_from_u64(seed);
    // The session's time zone, for timestamptz: one per seed, two of them with daylight saving
    // changes inside the rows' dates.
    let zone = ["America/New_York", "Europe/Paris", "UTC", "Asia/Kolkata"][(seed % 4) as usize];
    let setup = format!("SET TIME ZONE '{zone}';\n{SCHEMA}{}", data(&mut rng));
    for client in [&a, &p] {
        client.batch_execute(&setup).await.expect("schema and rows");
    }
    // For reproducing a failure by hand: the schema and rows, then every statement.
    let mut dump = std::env::var_os("ASPEN_DIFF_DUMP").map(|path| {
        let mut f = std::fs::File::create(path).expect("create ASPEN_DIFF_DUMP");
        std::io::Write::write_all(&mut f, setup.as_bytes()).expect("write ASPEN_DIFF_DUMP");
        f
    });

    let mut gen = Gen { rng, scope: Vec::new(), has_t: false, params: None };
    let mut failures = Vec::new();
    let mut unsupported = Vec::new();
    let mut next_id = 1000;
    let (mut errors, mut rows) = (0, 0);
    for i in 0..queries {
        let (sql, ordered) =
            if i % 10 == 9 { (gen.change(&mut next_id), false) } else { gen.query() };
        if let Some(f) = &mut dump {
            std::io::Write::write_all(f, format!("{sql};\n").as_bytes()).expect("write dump");
        }
        // A change runs in a transaction on both, so that one Aspen refuses (0A000) is
        // rolled back on PostgreSQL too and the tables stay the same.
        let change = i % 10 == 9;
        if change {
            for c in [&a, &p] {
                c.batch_execute("BEGIN").await.expect("BEGIN");
            }
        }
        let (mut ao, mut po) = (run(&a, &sql).await, run(&p, &sql).await);
        match &po {
            Outcome::Error { .. } => errors += 1,
            Outcome::Rows { rows: r, .. } => rows += r.len(),
        }
        let verdict = compare(&mut ao, &mut po, ordered);
        if change {
            let end = if verdict == Ok(false) { "ROLLBACK" } else { "COMMIT" };
            for c in [&a, &p] {
                // After an error the transaction is aborted: COMMIT then rolls back.
                c.batch_execute(end).await.expect("end the change's transaction");
            }
        }
        match verdict {
            Ok(true) => {}
            Ok(false) => unsupported.push(sql.clone()),
            Err(diff) => failures.push(format!("{sql}\n{diff}")),
        }
        // After a change, the tables must agree too.
        if change {
            for table in ["t", "u"] {
                let check = format!("SELECT * FROM {table} ORDER BY id");
                let (mut ac, mut pc) = (run(&a, &check).await, run(&p, &check).await);
                if let Err(diff) = compare(&mut ac, &mut pc, true) {
                    failures.push(format!("{table} after: {sql}\n{diff}"));
                }
            }
        }
        if failures.len() >= 20 {
            break;
        }
    }
    // Parse / Describe: the same queries with parameters in place of some values, prepared on
    // both. The parameter types inferred, and the result columns' names and types, must agree
    // (or both fail with one SQLSTATE, e.g. 42P18 for a parameter nothing decides).
    let (mut described, mut lenient) = (0, 0);
    for _ in 0..queries / 3 {
        if failures.len() >= 20 {
            break;
        }
        gen.params = Some(0);
        let (sql, _) = gen.query();
        gen.params = None;
        let (ad, pd) = (describe(&a, &sql).await, describe(&p, &sql).await);
        described += 1;
        match (&ad, &pd) {
            (a, p) if a == p => {}
            // Aspen has no char without a length: where PostgreSQL's mix of char(n) with other
            // strings is bpchar, Aspen's is text (same values).
            (Ok((ap, ac)), Ok((pp, pc)))
                if ap.len() == pp.len()
                    && ap.iter().zip(pp).all(|(a, p)| a == p || (*a == 25 && *p == 1042))
                    && ac.len() == pc.len()
                    && ac.iter().zip(pc).all(|((an, at), (pn, pt))| {
                        an == pn && (at == pt || (*at == 25 && *pt == 1042))
                    }) =>
            {
                lenient += 1
            }
            (Err(code), _) if code == "0A000" => unsupported.push(sql.clone()),
            // PostgreSQL typed it with a type Aspen does not have (`$1 - text` is jsonb - text
            // there): Aspen cannot answer, nor answer differently.
            (Err(_), Ok((pp, pc)))
                if pp.iter().chain(pc.iter().map(|(_, t)| t)).any(|t| !ASPEN_TYPES.contains(t)) =>
            {
                unsupported.push(sql.clone())
            }
            // Aspen infers a type where PostgreSQL finds none (42P18) or several (42725, or
            // 42883 when that makes an operator unresolvable): more lenient, never a different
            // answer for a statement both accept.
            (Ok(_), Err(code)) if ["42P18", "42725", "42883"].contains(&code.as_str()) => {
                lenient += 1
            }
            // Both refuse to type the statement (class 42); which resolution step fails first
            // with untyped parameters is not worth matching code for code.
            (Err(a), Err(p)) if a.starts_with("42") && p.starts_with("42") => lenient += 1,
            (a, p) => failures
                .push(format!("{sql}\ndescribed by aspen:    {a:?}\ndescribed by postgres: {p:?}")),
        }
    }
    println!(
        "differential: {described} statements with parameters described; {lenient} of them \
         Aspen prepared where PostgreSQL could not type a parameter"
    );
    println!(
        "differential: PostgreSQL answered {} rows and {errors} errors; Aspen refused {} with 0A000",
        rows,
        unsupported.len()
    );
    for sql in unsupported.iter().take(10) {
        println!("  0A000: {sql}");
    }
    assert!(
        failures.is_empty(),
        "{} statements answered differently (ASPEN_DIFF_SEED={seed}):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
