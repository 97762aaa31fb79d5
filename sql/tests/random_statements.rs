//! Random token soup must never panic the SQL layer: every statement either runs or returns an
//! error with a SQLSTATE. Deterministic (a fixed seed), 20 000 statements.

use sql::{Database, DatabaseConfig, Session};

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

#[test]
fn random_statements_never_panic() {
    let db = Database::open(&DatabaseConfig { data_dir: None, log_buffers: 1 }).expect("open");
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
    let (mut ok, mut errors) = (0, 0);
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
        for r in s.execute_simple(&sql) {
            match r {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(e.sqlstate() != "XX000", "internal error for {sql:?}: {e}");
                    errors += 1;
                }
            }
        }
    }
    // Both outcomes occur, so the soup really reaches execution and error paths.
    assert!(ok > 0 && errors > 0, "ok {ok}, errors {errors}");
    println!("ok {ok}, errors {errors}");
}
