//! Random token soup must never panic the SQL layer: every statement either runs or returns an
//! error with a SQLSTATE. Deterministic (a fixed seed), 20 000 statements.

use sql::{Database, Session};

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "CREATE",
    "TABLE",
    "INDEX",
    "ON",
    "DROP",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "LEFT",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "IS",
    "IN",
    "EXISTS",
    "BETWEEN",
    "LIKE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "AS",
    "int",
    "text",
    "numeric(5,2)",
    "varchar(3)",
    "date",
    "t",
    "u",
    "a",
    "b",
    "c",
    "t.a",
    "u.b",
    "*",
    "count(*)",
    "sum(a)",
    "max(b)",
    "(",
    ")",
    ",",
    "+",
    "-",
    "*",
    "/",
    "%",
    "=",
    "<>",
    "<",
    ">=",
    "||",
    "::",
    "1",
    "0",
    "-1",
    "2147483647",
    "9223372036854775807",
    "1.5",
    "1e3",
    "'x'",
    "'2024-01-01'",
    "''",
    "$1",
    "true",
    "false",
    "DISTINCT",
    "FOR",
    "RETURNING",
    "PRIMARY",
    "KEY",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "generate_series(1,3)",
    "coalesce(a,1)",
    "lower(b)",
    "substring('abc',2)",
    "now()",
];

/// Runs `sql`, counting successes and errors; an internal error (a bug) fails the test.
fn run(s: &mut Session, sql: &str, ok: &mut u32, errors: &mut u32) {
    for r in s.execute_simple(sql) {
        match r {
            Ok(_) => *ok += 1,
            Err(e) => {
                assert!(e.sqlstate() != "XX000", "internal error for {sql:?}: {e}");
                *errors += 1;
            }
        }
    }
}

#[test]
fn random_statements_never_panic() {
    let db = Database::in_memory(1);
    let mut s = Session::new(db, &[]);
    for sql in [
        "CREATE TABLE t (a int PRIMARY KEY, b text, c numeric(5,2))",
        "CREATE TABLE u (a int, b text)",
        "INSERT INTO t VALUES (1, 'x', 1.5), (2, NULL, 2.25)",
        "INSERT INTO u VALUES (1, 'y'), (3, 'z')",
    ] {
        assert!(s.execute_simple(sql).into_iter().all(|r| r.is_ok()), "{sql}");
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut ok, mut errors) = (0u32, 0u32);
    for _ in 0..20_000 {
        let len = 2 + (next() % 14) as usize;
        let mut sql = String::new();
        // Mostly start with a statement keyword so the binder and executor are reached.
        let starts =
            ["SELECT", "SELECT", "SELECT", "INSERT INTO t", "UPDATE t SET", "DELETE FROM u"];
        sql.push_str(starts[(next() % starts.len() as u64) as usize]);
        for _ in 0..len {
            sql.push(' ');
            sql.push_str(TOKENS[(next() % TOKENS.len() as u64) as usize]);
        }
        run(&mut s, &sql, &mut ok, &mut errors);
    }
    // Both outcomes occur, so the soup really reaches execution and error paths.
    assert!(ok > 0 && errors > 0, "ok {ok}, errors {errors}");
    println!("ok {ok}, errors {errors}");
}

/// Random well-formed expressions over columns and literals of every type, in SELECT lists,
/// WHERE clauses and SET lists: typing, casts and evaluation must error cleanly, never panic.
#[test]
fn random_expressions_never_panic() {
    let db = Database::in_memory(1);
    let mut s = Session::new(db, &[]);
    for sql in [
        "CREATE TABLE t (a int PRIMARY KEY, b text, c numeric(5,2), d double precision, \
         e date, f timestamp, g boolean, h bytea, i smallint, j bigint, k varchar(4), l char(3))",
        "INSERT INTO t VALUES (1, 'x', 1.5, 2.5, '2024-01-01', '2024-01-01 10:00', true, '\\x00', 1, 2, 'ab', 'c'), \
         (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    ] {
        assert!(s.execute_simple(sql).into_iter().all(|r| r.is_ok()), "{sql}");
    }
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rnd = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    fn expr(depth: usize, rnd: &mut dyn FnMut(usize) -> usize) -> String {
        const LEAVES: &[&str] = &[
            "a",
            "b",
            "c",
            "d",
            "e",
            "f",
            "g",
            "h",
            "i",
            "j",
            "k",
            "l",
            "NULL",
            "0",
            "1",
            "-7",
            "2147483647",
            "9223372036854775807",
            "1.25",
            "1e300",
            "'x'",
            "'2024-02-29'",
            "''",
            "true",
            "'\\xff'",
            "99999.99",
        ];
        if depth == 0 || rnd(3) == 0 {
            return LEAVES[rnd(LEAVES.len())].to_string();
        }
        let a = expr(depth - 1, rnd);
        let b = expr(depth - 1, rnd);
        match rnd(16) {
            0 => format!("({a} + {b})"),
            1 => format!("({a} - {b})"),
            2 => format!("({a} * {b})"),
            3 => format!("({a} / {b})"),
            4 => format!("({a} % {b})"),
            5 => format!("({a} = {b})"),
            6 => format!("({a} < {b})"),
            7 => format!("({a} || {b})"),
            8 => format!("({a} AND {b})"),
            9 => format!(
                "CAST({a} AS {})",
                [
                    "int",
                    "text",
                    "numeric(4,1)",
                    "date",
                    "boolean",
                    "bigint",
                    "real",
                    "char(2)",
                    "varchar(1)",
                    "bytea",
                    "timestamp"
                ][rnd(11)]
            ),
            10 => format!("coalesce({a}, {b})"),
            11 => format!("CASE WHEN {a} THEN {b} ELSE {a} END"),
            12 => format!("({a} IS NULL)"),
            13 => format!(
                "{}({a})",
                ["lower", "upper", "length", "abs", "round", "floor", "ceil", "-", "NOT "][rnd(9)]
            ),
            14 => format!("({a} BETWEEN {b} AND {a})"),
            _ => format!("({a} IN ({b}, {a}))"),
        }
    }
    let (mut ok, mut errors) = (0u32, 0u32);
    for _ in 0..5_000 {
        let e1 = expr(3, &mut rnd);
        let e2 = expr(3, &mut rnd);
        let sql = match rnd(5) {
            0 => format!("SELECT {e1} FROM t WHERE {e2}"),
            1 => format!("SELECT {e1}, count(*) FROM t GROUP BY 1"),
            2 => format!("UPDATE t SET b = {e1} WHERE {e2}"),
            3 => format!("SELECT max({e1}) FROM t ORDER BY 1"),
            _ => format!("SELECT {e1}, {e2}"),
        };
        run(&mut s, &sql, &mut ok, &mut errors);
    }
    println!("ok {ok}, errors {errors}");
    assert!(ok > 0 && errors > 0, "ok {ok}, errors {errors}");
}
