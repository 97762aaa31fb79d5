//! End-to-end through `Session` without the wire: DDL, DML, queries, transaction states.

use sql::{Database, Session, TxnStatus, Value};

fn session() -> Session {
    let db = Database::in_memory(2);
    Session::new(db, &[])
}

/// Two sessions on one database.
fn two_sessions() -> (Session, Session) {
    let db = Database::in_memory(2);
    (Session::new(db.clone(), &[]), Session::new(db, &[]))
}

/// Runs `sql` and renders every result as `tag` or `tag: row | row`.
fn run(s: &mut Session, sql: &str) -> Vec<String> {
    s.execute_simple(sql)
        .into_iter()
        .map(|r| match r {
            Ok(out) => {
                let rows: Vec<String> = out
                    .rows
                    .iter()
                    .map(|r| {
                        r.iter()
                            .map(|v| match v {
                                Value::Null => "NULL".to_string(),
                                v => sql::types::format_text(v, &sql::exec::value_type(v)),
                            })
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect();
                if rows.is_empty() {
                    out.tag.to_string()
                } else {
                    format!("{}: {}", out.tag, rows.join(" | "))
                }
            }
            Err(e) => format!("ERROR {}: {e}", e.sqlstate()),
        })
        .collect()
}

#[test]
fn create_insert_select() {
    let mut s = session();
    assert_eq!(
        run(
            &mut s,
            "CREATE TABLE t (id int PRIMARY KEY, name varchar(10), bal numeric(10,2) DEFAULT 0)"
        ),
        ["CREATE TABLE"]
    );
    assert_eq!(
        run(&mut s, "INSERT INTO t VALUES (1, 'a', 1.5), (2, 'b', DEFAULT), (3, NULL, 2.25)"),
        ["INSERT 0 3"]
    );
    assert_eq!(run(&mut s, "SELECT id, name, bal FROM t WHERE id = 2"), ["SELECT 1: 2,b,0.00"]);
    assert_eq!(run(&mut s, "SELECT count(*), sum(bal) FROM t"), ["SELECT 1: 3,3.75"]);
    assert_eq!(run(&mut s, "SELECT id FROM t WHERE id >= 2 ORDER BY id DESC"), ["SELECT 2: 3 | 2"]);
    assert_eq!(run(&mut s, "UPDATE t SET bal = bal + 1 WHERE id < 3"), ["UPDATE 2"]);
    assert_eq!(run(&mut s, "DELETE FROM t WHERE name IS NULL RETURNING id"), ["DELETE 1: 3"]);
    assert_eq!(run(&mut s, "SELECT id, bal FROM t ORDER BY 1"), ["SELECT 2: 1,2.50 | 2,1.00"]);
    assert_eq!(
        run(&mut s, "INSERT INTO t VALUES (1, 'x')"),
        ["ERROR 23505: duplicate key value violates unique constraint \"t_pkey\""]
    );
}

#[test]
fn failed_block_needs_rollback() {
    let mut s = session();
    run(&mut s, "CREATE TABLE t (id int PRIMARY KEY)");
    assert_eq!(run(&mut s, "BEGIN"), ["BEGIN"]);
    assert_eq!(s.status(), TxnStatus::InBlock);
    assert_eq!(run(&mut s, "SELECT 1/0"), ["ERROR 22012: division by zero"]);
    assert_eq!(s.status(), TxnStatus::Failed);
    assert!(run(&mut s, "SELECT 1")[0].starts_with("ERROR 25P02"));
    assert_eq!(run(&mut s, "COMMIT"), ["ROLLBACK"]);
    assert_eq!(s.status(), TxnStatus::Idle);
}

#[test]
fn joins_groups_subqueries() {
    let mut s = session();
    run(&mut s, "CREATE TABLE a (id int PRIMARY KEY, g int); CREATE TABLE b (id int PRIMARY KEY, a_id int, v int)");
    run(&mut s, "INSERT INTO a SELECT x, x % 2 FROM generate_series(1, 4) x");
    run(&mut s, "INSERT INTO b VALUES (1, 1, 10), (2, 1, 20), (3, 3, 30)");
    assert_eq!(
        run(
            &mut s,
            "SELECT a.id, sum(b.v) FROM a JOIN b ON b.a_id = a.id GROUP BY a.id ORDER BY a.id"
        ),
        ["SELECT 2: 1,30 | 3,30"]
    );
    assert_eq!(
        run(&mut s, "SELECT a.id, b.v FROM a LEFT JOIN b ON b.a_id = a.id WHERE a.id = 2"),
        ["SELECT 1: 2,NULL"]
    );
    assert_eq!(
        run(&mut s, "SELECT g, count(*) FROM a GROUP BY g HAVING count(*) > 1 ORDER BY g"),
        ["SELECT 2: 0,2 | 1,2"]
    );
    assert_eq!(
        run(
            &mut s,
            "SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.a_id = a.id) ORDER BY id"
        ),
        ["SELECT 2: 1 | 3"]
    );
    assert_eq!(
        run(
            &mut s,
            "SELECT (SELECT max(v) FROM b), id FROM a WHERE id IN (SELECT a_id FROM b) ORDER BY id"
        ),
        ["SELECT 2: 30,1 | 30,3"]
    );
    assert_eq!(
        run(&mut s, "SELECT count(DISTINCT a_id) FROM b, a WHERE b.a_id = a.id"),
        ["SELECT 1: 2"]
    );
}

/// DESIGN.md §2: an error caused by reading data that changed under the transaction is reported
/// as 40001 (retryable), not as the error itself.
#[test]
fn error_after_stale_read_is_a_serialization_failure() {
    let (mut a, mut b) = two_sessions();
    run(&mut a, "CREATE TABLE t (id int PRIMARY KEY, v int)");
    run(&mut a, "INSERT INTO t VALUES (1, 1)");
    assert_eq!(run(&mut a, "BEGIN"), ["BEGIN"]);
    assert_eq!(run(&mut a, "SELECT v FROM t WHERE id = 1"), ["SELECT 1: 1"]);
    assert_eq!(run(&mut b, "UPDATE t SET v = 0 WHERE id = 1"), ["UPDATE 1"]);
    let err = run(&mut a, "SELECT 10 / v FROM t WHERE id = 1");
    assert!(err[0].starts_with("ERROR 40001"), "{err:?}");
    assert_eq!(run(&mut a, "ROLLBACK"), ["ROLLBACK"]);
    // Without the stale read the same statement reports its own error.
    assert_eq!(run(&mut a, "BEGIN"), ["BEGIN"]);
    assert_eq!(run(&mut a, "SELECT 10 / v FROM t WHERE id = 1"), ["ERROR 22012: division by zero"]);
}

/// A grouped query may use uncorrelated subqueries in its output; correlated ones are refused
/// with 0A000 rather than evaluated against the wrong row.
#[test]
fn subqueries_in_grouped_output() {
    let mut s = session();
    run(&mut s, "CREATE TABLE g (id int PRIMARY KEY, k int)");
    run(&mut s, "INSERT INTO g VALUES (1, 1), (2, 1), (3, 2)");
    assert_eq!(
        run(&mut s, "SELECT k, count(*), (SELECT max(id) FROM g) FROM g GROUP BY k ORDER BY k"),
        ["SELECT 2: 1,2,3 | 2,1,3"]
    );
    let err = run(&mut s, "SELECT k, (SELECT count(*) FROM g h WHERE h.k = g.k) FROM g GROUP BY k");
    assert!(err[0].starts_with("ERROR 0A000"), "{err:?}");
}

/// Transactional DDL fails at COMMIT when another session published a conflicting change
/// meanwhile: the same name created first elsewhere (42P07), or a table the block altered that
/// another session altered too (40001). The failed block leaves nothing behind, and the name
/// and the table stay usable.
#[test]
fn conflicting_schema_changes_fail_at_commit_and_leave_nothing() {
    let (mut a, mut b) = two_sessions();

    run(&mut a, "BEGIN");
    assert_eq!(run(&mut a, "CREATE TABLE x (k int PRIMARY KEY)"), ["CREATE TABLE"]);
    assert_eq!(run(&mut a, "INSERT INTO x VALUES (1)"), ["INSERT 0 1"]);
    assert_eq!(run(&mut b, "CREATE TABLE x (v text)"), ["CREATE TABLE"]);
    let commit = run(&mut a, "COMMIT");
    assert!(commit[0].starts_with("ERROR 42P07"), "{commit:?}");
    assert_eq!(a.status(), TxnStatus::Idle);
    assert_eq!(run(&mut a, "INSERT INTO x VALUES ('b')"), ["INSERT 0 1"]);
    assert_eq!(run(&mut a, "SELECT v FROM x"), ["SELECT 1: b"]);

    run(&mut b, "CREATE TABLE y (k int PRIMARY KEY)");
    run(&mut a, "BEGIN");
    assert_eq!(run(&mut a, "ALTER TABLE y ADD COLUMN p int"), ["ALTER TABLE"]);
    assert_eq!(run(&mut b, "ALTER TABLE y ADD COLUMN q int"), ["ALTER TABLE"]);
    let commit = run(&mut a, "COMMIT");
    assert!(commit[0].starts_with("ERROR 40001"), "{commit:?}");
    assert_eq!(run(&mut a, "INSERT INTO y VALUES (1, 2)"), ["INSERT 0 1"]);
    assert!(run(&mut a, "SELECT p FROM y")[0].starts_with("ERROR 42703"));
    assert_eq!(run(&mut a, "SELECT k, q FROM y"), ["SELECT 1: 1,2"]);
}

/// Types in error messages are named as PostgreSQL's `format_type_be` names them: without type
/// modifiers (the texts below are PostgreSQL 15's).
#[test]
fn error_messages_name_types_without_modifiers() {
    let mut s = session();
    assert_eq!(
        run(&mut s, "SELECT 'a'::varchar(5) + 1"),
        ["ERROR 42883: operator does not exist: character varying + integer"]
    );
    assert_eq!(
        run(&mut s, "SELECT abs('a'::varchar(5))"),
        ["ERROR 42883: function abs(character varying) does not exist"]
    );
    assert_eq!(
        run(&mut s, "SELECT 1::numeric(5,2)::bytea"),
        ["ERROR 42846: cannot cast type numeric to bytea"]
    );
    assert_eq!(
        run(&mut s, "SELECT 'a'::char(3) = 1"),
        ["ERROR 42883: operator does not exist: character = integer"]
    );
}

/// The message and DETAIL of unique and foreign-key violations, as PostgreSQL 15 prints them
/// (checked with psql against it): the key columns and values, the tables on both sides.
#[test]
fn key_violation_details() {
    let mut s = session();
    run(&mut s, "CREATE TABLE p (a int, b varchar(5), PRIMARY KEY (a, b))");
    run(
        &mut s,
        "CREATE TABLE c (id int PRIMARY KEY, a int, b varchar(5), FOREIGN KEY (a, b) REFERENCES p)",
    );
    run(&mut s, "INSERT INTO p VALUES (1, 'x')");
    run(&mut s, "INSERT INTO c VALUES (10, 1, 'x')");
    let error = |s: &mut Session, sql: &str| {
        let e = s.execute_simple(sql).pop().expect("one statement").expect_err(sql);
        (e.sqlstate().to_string(), e.to_string(), e.detail().unwrap_or_default().to_string())
    };
    assert_eq!(
        error(&mut s, "INSERT INTO p VALUES (1, 'x')"),
        (
            "23505".into(),
            "duplicate key value violates unique constraint \"p_pkey\"".into(),
            "Key (a, b)=(1, x) already exists.".into()
        )
    );
    assert_eq!(
        error(&mut s, "INSERT INTO c VALUES (11, 2, 'y')"),
        (
            "23503".into(),
            "insert or update on table \"c\" violates foreign key constraint \"c_a_b_fkey\"".into(),
            "Key (a, b)=(2, y) is not present in table \"p\".".into()
        )
    );
    assert_eq!(
        error(&mut s, "DELETE FROM p"),
        (
            "23503".into(),
            "update or delete on table \"p\" violates foreign key constraint \"c_a_b_fkey\" on table \"c\"".into(),
            "Key (a, b)=(1, x) is still referenced from table \"c\".".into()
        )
    );
}

/// A schema change and a transaction that wrote the table before it committed: whichever
/// commits second fails, so no row escapes a constraint it never saw.
#[test]
fn schema_changes_and_concurrent_writers_serialize() {
    let (mut a, mut b) = two_sessions();
    run(&mut a, "CREATE TABLE cc (id int PRIMARY KEY, v int); CREATE TABLE other (id int)");
    run(&mut a, "INSERT INTO cc VALUES (1, 1)");

    // The writer commits after the change: 40001, nothing of it stays.
    run(&mut a, "BEGIN");
    assert_eq!(run(&mut a, "INSERT INTO cc VALUES (2, NULL)"), ["INSERT 0 1"]);
    assert_eq!(run(&mut b, "ALTER TABLE cc ALTER COLUMN v SET NOT NULL"), ["ALTER TABLE"]);
    let commit = run(&mut a, "COMMIT");
    assert!(commit[0].starts_with("ERROR 40001"), "{commit:?}");
    assert_eq!(run(&mut b, "SELECT id, v FROM cc ORDER BY id"), ["SELECT 1: 1,1"]);

    // The same for a column added NOT NULL with a default.
    run(&mut a, "BEGIN");
    run(&mut a, "INSERT INTO cc VALUES (3, 3)");
    assert_eq!(run(&mut b, "ALTER TABLE cc ADD COLUMN w int NOT NULL DEFAULT 7"), ["ALTER TABLE"]);
    assert!(run(&mut a, "COMMIT")[0].starts_with("ERROR 40001"));
    assert_eq!(run(&mut b, "SELECT id, v, w FROM cc ORDER BY id"), ["SELECT 1: 1,1,7"]);

    // The writer commits first: the change sees its row and checks it.
    run(&mut a, "ALTER TABLE cc ALTER COLUMN v DROP NOT NULL");
    run(&mut a, "BEGIN");
    run(&mut a, "INSERT INTO cc VALUES (4, NULL, 4)");
    assert_eq!(run(&mut a, "COMMIT"), ["COMMIT"]);
    let alter = run(&mut b, "ALTER TABLE cc ALTER COLUMN v SET NOT NULL");
    assert!(alter[0].starts_with("ERROR 23502"), "{alter:?}");

    // A change to another table leaves the writer alone.
    run(&mut a, "BEGIN");
    run(&mut a, "INSERT INTO cc VALUES (5, 5, 5)");
    assert_eq!(run(&mut b, "ALTER TABLE other ADD COLUMN x int"), ["ALTER TABLE"]);
    assert_eq!(run(&mut a, "COMMIT"), ["COMMIT"]);
    assert_eq!(run(&mut b, "SELECT count(*) FROM cc"), ["SELECT 1: 3"]);
}

/// Two transactions upserting the same key serialize: the second to commit fails (40001)
/// whether the key was missing (both would insert) or present (both would update), so no
/// increment is lost; retried, it sees the first one's row.
#[test]
fn concurrent_upserts_of_one_key_serialize() {
    let (mut a, mut b) = two_sessions();
    run(&mut a, "CREATE TABLE counts (k int PRIMARY KEY, n int NOT NULL)");
    let upsert = "INSERT INTO counts VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET n = counts.n + 1";
    for round in 0..2 {
        run(&mut a, "BEGIN");
        run(&mut b, "BEGIN");
        assert_eq!(run(&mut a, upsert), ["INSERT 0 1"]);
        assert_eq!(run(&mut b, upsert), ["INSERT 0 1"]);
        assert_eq!(run(&mut a, "COMMIT"), ["COMMIT"]);
        let commit = run(&mut b, "COMMIT");
        assert!(commit[0].starts_with("ERROR 40001"), "round {round}: {commit:?}");
        assert_eq!(run(&mut b, upsert), ["INSERT 0 1"]);
    }
    assert_eq!(run(&mut a, "SELECT k, n FROM counts"), ["SELECT 1: 1,4"]);
}
