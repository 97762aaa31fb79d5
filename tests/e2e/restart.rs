//! The schema survives a restart: tables, columns, defaults, constraints and indexes created
//! before `aspen` stops are there, and enforced, after it starts again on the same data
//! directory. Rows live in memory only until the write-ahead log lands, so row contents are
//! not checked here. Aspen only (there is nothing to compare with PostgreSQL).

use tests::{connect, sqlstate, timed, AspenServer};

#[tokio::test]
async fn schema_survives_restart() {
    if tests::against_pg() {
        println!("schema_survives_restart is Aspen-only, skipping under TEST_AGAINST_PG=1");
        return;
    }
    let mut server = AspenServer::start();
    let c = timed("connect", connect(server.port())).await.expect("connect");
    timed(
        "ddl",
        c.batch_execute(
            "CREATE TABLE parent (id int PRIMARY KEY, name varchar(10) NOT NULL DEFAULT 'x');
             CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent (id) ON DELETE CASCADE, code text UNIQUE);
             CREATE UNIQUE INDEX parent_name ON parent (name);
             CREATE TABLE dropped (a int);
             DROP TABLE dropped;",
        ),
    )
    .await
    .expect("create the schema");
    drop(c);
    server.restart();
    let c = timed("reconnect", connect(server.port())).await.expect("connect after restart");
    timed("insert", c.batch_execute("INSERT INTO parent (id) VALUES (1)")).await.expect("insert");
    let row = timed("select", c.query_one("SELECT name FROM parent WHERE id = 1", &[]))
        .await
        .expect("select");
    assert_eq!(row.get::<_, String>(0), "x", "the DEFAULT survived");
    let err = timed("dup", c.batch_execute("INSERT INTO parent (id) VALUES (2)"))
        .await
        .expect_err("the unique index survived");
    assert_eq!(sqlstate(&err), Some("23505"));
    let err = timed("null", c.batch_execute("INSERT INTO parent (id, name) VALUES (3, NULL)"))
        .await
        .expect_err("NOT NULL survived");
    assert_eq!(sqlstate(&err), Some("23502"));
    timed("child", c.batch_execute("INSERT INTO child VALUES (10, 1, 'c')")).await.expect("child");
    timed("cascade", c.batch_execute("DELETE FROM parent WHERE id = 1")).await.expect("delete");
    let row = timed("count", c.query_one("SELECT count(*) FROM child", &[])).await.expect("count");
    assert_eq!(row.get::<_, i64>(0), 0, "ON DELETE CASCADE survived");
    let err = timed("dropped", c.batch_execute("SELECT * FROM dropped"))
        .await
        .expect_err("the dropped table stays dropped");
    assert_eq!(sqlstate(&err), Some("42P01"));
}
