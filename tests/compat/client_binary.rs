//! tokio-postgres with the extended protocol: binary parameters and binary results for every
//! supported type (bool, int2/4/8, float4/8, numeric, text/varchar/bpchar, date, timestamp,
//! bytea) including NULLs and extreme values, a prepared statement reused many times, parameter
//! types inferred by the server, result column names and types from Describe, a 2000-parameter
//! multi-row INSERT, exact command counts, and numerics beyond what `rust_decimal` holds (60
//! digits, 1000 fractional digits, NaN, ±Infinity) as raw binary parameters and results, and
//! uuid.
//!
//! `TEST_AGAINST_PG=1` runs the same checks against PostgreSQL 15.

use std::str::FromStr;

use chrono::{NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;
use tests::{timed, Backend};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};

const CREATE: &str = "CREATE TABLE typed (
    id int PRIMARY KEY,
    b boolean, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision,
    n numeric(12,3), t text, vc varchar(10), bc char(4), d date, ts timestamp, by bytea
)";

/// One row of `typed`, as Rust values.
#[derive(Debug, Clone, PartialEq)]
struct Typed {
    id: i32,
    b: Option<bool>,
    i2: Option<i16>,
    i4: Option<i32>,
    i8: Option<i64>,
    f4: Option<f32>,
    f8: Option<f64>,
    n: Option<Decimal>,
    t: Option<String>,
    vc: Option<String>,
    bc: Option<String>,
    d: Option<NaiveDate>,
    ts: Option<NaiveDateTime>,
    by: Option<Vec<u8>>,
}

fn ts(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").expect("timestamp literal")
}

fn samples() -> Vec<Typed> {
    vec![
        Typed {
            id: 1,
            b: Some(true),
            i2: Some(-12),
            i4: Some(123_456),
            i8: Some(9_000_000_000),
            f4: Some(1.5),
            f8: Some(-0.1),
            n: Some(Decimal::from_str("12345.678").unwrap()),
            t: Some("hello, wörld".into()),
            vc: Some("short".into()),
            bc: Some("ab  ".into()),
            d: Some(NaiveDate::from_ymd_opt(2024, 2, 29).unwrap()),
            ts: Some(ts("2024-02-29 23:59:59.123456")),
            by: Some(vec![0, 1, 2, 255]),
        },
        Typed {
            id: 2,
            b: Some(false),
            i2: Some(i16::MIN),
            i4: Some(i32::MAX),
            i8: Some(i64::MIN),
            f4: Some(f32::MAX),
            f8: Some(f64::MIN_POSITIVE),
            n: Some(Decimal::from_str("-0.001").unwrap()),
            t: Some(String::new()),
            vc: Some("ten chars!".into()),
            bc: Some("abcd".into()),
            d: Some(NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()),
            ts: Some(ts("1999-12-31 00:00:00")),
            by: Some(Vec::new()),
        },
        Typed {
            id: 3,
            b: None,
            i2: None,
            i4: None,
            i8: None,
            f4: None,
            f8: None,
            n: None,
            t: None,
            vc: None,
            bc: None,
            d: None,
            ts: None,
            by: None,
        },
    ]
}

const INSERT: &str = "INSERT INTO typed (id, b, i2, i4, i8, f4, f8, n, t, vc, bc, d, ts, by)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";
const SELECT: &str =
    "SELECT id, b, i2, i4, i8, f4, f8, n, t, vc, bc, d, ts, by FROM typed WHERE id = $1";

fn from_row(r: &tokio_postgres::Row) -> Typed {
    Typed {
        id: r.get(0),
        b: r.get(1),
        i2: r.get(2),
        i4: r.get(3),
        i8: r.get(4),
        f4: r.get(5),
        f8: r.get(6),
        n: r.get(7),
        t: r.get(8),
        vc: r.get(9),
        bc: r.get(10),
        d: r.get(11),
        ts: r.get(12),
        by: r.get(13),
    }
}

#[tokio::test]
async fn binary_round_trip_of_every_type() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute(CREATE)).await.expect("create");
    let insert = timed("prepare insert", c.prepare(INSERT)).await.expect("prepare insert");
    let expected_types = [
        Type::INT4,
        Type::BOOL,
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::NUMERIC,
        Type::TEXT,
        Type::VARCHAR,
        Type::BPCHAR,
        Type::DATE,
        Type::TIMESTAMP,
        Type::BYTEA,
    ];
    assert_eq!(insert.params(), expected_types, "inferred parameter types");
    for s in samples() {
        let n = timed(
            "insert",
            c.execute(
                &insert,
                &[
                    &s.id, &s.b, &s.i2, &s.i4, &s.i8, &s.f4, &s.f8, &s.n, &s.t, &s.vc, &s.bc, &s.d,
                    &s.ts, &s.by,
                ],
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("insert {}: {e:?}", s.id));
        assert_eq!(n, 1);
    }
    let select = timed("prepare select", c.prepare(SELECT)).await.expect("prepare select");
    let column_types: Vec<Type> = select.columns().iter().map(|col| col.type_().clone()).collect();
    assert_eq!(column_types, expected_types, "result column types");
    let names: Vec<&str> = select.columns().iter().map(|col| col.name()).collect();
    assert_eq!(
        names,
        ["id", "b", "i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "bc", "d", "ts", "by"]
    );
    for s in samples() {
        let row = timed("select", c.query_one(&select, &[&s.id])).await.expect("select");
        assert_eq!(from_row(&row), s);
    }

    // The same rows in text format (simple query) read as PostgreSQL prints them.
    let text = timed(
        "simple",
        c.simple_query("SELECT b, i2, i8, f4, n, bc, d, ts, by FROM typed WHERE id = 1"),
    )
    .await
    .expect("simple query");
    let row = text
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .expect("a row");
    let values: Vec<&str> = (0..row.len()).map(|i| row.get(i).unwrap_or("NULL")).collect();
    assert_eq!(
        values,
        [
            "t",
            "-12",
            "9000000000",
            "1.5",
            "12345.678",
            "ab  ",
            "2024-02-29",
            "2024-02-29 23:59:59.123456",
            "\\x000102ff"
        ]
    );
}

#[tokio::test]
async fn assignment_casts_and_rounding_of_parameters() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute(CREATE)).await.expect("create");
    // float8 into numeric(12,3) rounds to the scale; text into bpchar pads.
    let stmt = timed(
        "prepare",
        c.prepare_typed(
            "INSERT INTO typed (id, n, bc) VALUES ($1, $2, $3)",
            &[Type::INT4, Type::FLOAT8, Type::TEXT],
        ),
    )
    .await
    .expect("prepare");
    timed("insert", c.execute(&stmt, &[&1i32, &2.0005f64, &"x"])).await.expect("insert");
    let row = timed("select", c.query_one("SELECT n, bc FROM typed WHERE id = 1", &[]))
        .await
        .expect("select");
    assert_eq!(row.get::<_, Decimal>(0), Decimal::from_str("2.001").unwrap());
    assert_eq!(row.get::<_, String>(1), "x   ");
    // An int8 parameter into an int4 column is range-checked.
    let stmt =
        timed("prepare", c.prepare_typed("INSERT INTO typed (id) VALUES ($1)", &[Type::INT8]))
            .await
            .expect("prepare");
    timed("insert", c.execute(&stmt, &[&2i64])).await.expect("in range");
    let err = timed("insert", c.execute(&stmt, &[&(i64::from(i32::MAX) + 1)]))
        .await
        .expect_err("out of range");
    assert_eq!(tests::sqlstate(&err), Some("22003"), "{err:?}");
}

#[tokio::test]
async fn prepared_statement_reused_and_inferred() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute("CREATE TABLE kv (k int PRIMARY KEY, v text)"))
        .await
        .expect("create");
    let insert =
        timed("prepare", c.prepare("INSERT INTO kv VALUES ($1, $2)")).await.expect("prepare");
    let get = timed("prepare", c.prepare("SELECT v FROM kv WHERE k = $1")).await.expect("prepare");
    let bump = timed("prepare", c.prepare("UPDATE kv SET v = v || $2 WHERE k <= $1"))
        .await
        .expect("prepare");
    for k in 0..200i32 {
        let n = timed("insert", c.execute(&insert, &[&k, &format!("v{k}")])).await.expect("insert");
        assert_eq!(n, 1);
    }
    for k in (0..200i32).step_by(7) {
        let row = timed("get", c.query_one(&get, &[&k])).await.expect("get");
        assert_eq!(row.get::<_, String>(0), format!("v{k}"));
    }
    let n = timed("update", c.execute(&bump, &[&9i32, &"!"])).await.expect("update");
    assert_eq!(n, 10, "UPDATE's command count");
    let row = timed("get", c.query_one(&get, &[&3i32])).await.expect("get");
    assert_eq!(row.get::<_, String>(0), "v3!");
    let rows = timed("get", c.query(&get, &[&1000i32])).await.expect("get none");
    assert!(rows.is_empty());

    // Parameter types the server infers from context (sent with type OID 0).
    let stmt =
        timed("prepare", c.prepare("SELECT $1 + 1, $2 || 'x', $3 = true")).await.expect("prepare");
    assert_eq!(stmt.params(), [Type::INT4, Type::TEXT, Type::BOOL]);
    let row = timed("query", c.query_one(&stmt, &[&41i32, &"a", &true])).await.expect("query");
    assert_eq!(
        (row.get::<_, i32>(0), row.get::<_, String>(1), row.get::<_, bool>(2)),
        (42, "ax".into(), true)
    );
    let stmt = timed("prepare", c.prepare("SELECT count(*) FROM kv WHERE k BETWEEN $1 AND $2"))
        .await
        .expect("prepare");
    assert_eq!(stmt.params(), [Type::INT4, Type::INT4]);
    let row = timed("query", c.query_one(&stmt, &[&10i32, &19i32])).await.expect("query");
    assert_eq!(row.get::<_, i64>(0), 10);
    // A varchar compared with an untyped parameter: ORDER BY and DISTINCT ON bind the same
    // expression whether the parameter was typed before it or by it (was 42P10).
    let star =
        timed("prepare", c.prepare("SELECT * FROM kv WHERE k = $1")).await.expect("prepare star");
    timed("alter", c.batch_execute("ALTER TABLE kv ADD COLUMN w varchar(10)"))
        .await
        .expect("alter");
    // After DDL: a statement whose result columns stay runs; one whose columns changed is
    // refused (its rows would not match the columns the client was given).
    let row = timed("get", c.query_one(&get, &[&3i32])).await.expect("get after ALTER");
    assert_eq!(row.get::<_, String>(0), "v3!");
    let err = timed("star", c.query(&star, &[&3i32])).await.expect_err("result type changed");
    assert_eq!(err.code(), Some(&tokio_postgres::error::SqlState::FEATURE_NOT_SUPPORTED));
    let stmt = timed(
        "prepare",
        c.prepare(
            "SELECT DISTINCT ON (CASE WHEN w > $1 THEN $2 ELSE $3 END) k FROM kv \
             ORDER BY CASE WHEN w > $1 THEN $2 ELSE $3 END, k",
        ),
    )
    .await
    .expect("prepare DISTINCT ON with parameters");
    assert_eq!(stmt.params(), [Type::TEXT, Type::TEXT, Type::TEXT]);
    let rows = timed("query", c.query(&stmt, &[&"m", &"x", &"y"])).await.expect("query");
    assert_eq!(rows.len(), 1, "all w are NULL: one group");
    assert_eq!(rows[0].get::<_, i32>(0), 0);
    let n = timed("delete", c.execute("DELETE FROM kv WHERE k >= $1", &[&100i32]))
        .await
        .expect("delete");
    assert_eq!(n, 100, "DELETE's command count");
}

/// Result column names as PostgreSQL gives them, from Describe (no execution needed).
#[tokio::test]
async fn result_column_names() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute("CREATE TABLE Names (Id int, \"Mixed\" text)"))
        .await
        .expect("create");
    let stmt = timed(
        "prepare",
        c.prepare(
            "SELECT 1 + 1, count(*), sum(id), max(id), id::bigint, CAST(id AS text), lower('A'), \
             7 AS \"Total\", 7 AS Total, CASE WHEN true THEN 1 END, coalesce(id, 0), \"Mixed\", \
             names.id, now() IS NULL, NOT true FROM names GROUP BY id, \"Mixed\"",
        ),
    )
    .await
    .expect("prepare");
    let names: Vec<&str> = stmt.columns().iter().map(|col| col.name()).collect();
    assert_eq!(
        names,
        [
            "?column?", "count", "sum", "max", "id", "id", "lower", "Total", "total", "case",
            "coalesce", "Mixed", "id", "?column?", "?column?"
        ]
    );
    let types: Vec<Type> = stmt.columns().iter().map(|col| col.type_().clone()).collect();
    assert_eq!(
        types,
        [
            Type::INT4,
            Type::INT8,
            Type::INT8,
            Type::INT4,
            Type::INT8,
            Type::TEXT,
            Type::TEXT,
            Type::INT4,
            Type::INT4,
            Type::INT4,
            Type::INT4,
            Type::TEXT,
            Type::INT4,
            Type::BOOL,
            Type::BOOL
        ]
    );
}

#[tokio::test]
async fn insert_with_2000_parameters() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute("CREATE TABLE wide (id int PRIMARY KEY, v bigint NOT NULL)"))
        .await
        .expect("create");
    let rows = 1000;
    let placeholders: Vec<String> =
        (0..rows).map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2)).collect();
    let sql = format!("INSERT INTO wide (id, v) VALUES {}", placeholders.join(", "));
    let ids: Vec<i32> = (0..rows).collect();
    let vs: Vec<i64> = (0..rows).map(|i| i64::from(i) * 1_000_000_007).collect();
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = Vec::new();
    for i in 0..rows as usize {
        params.push(&ids[i]);
        params.push(&vs[i]);
    }
    assert_eq!(params.len(), 2000);
    let stmt = timed("prepare", c.prepare(&sql)).await.expect("prepare 2000 parameters");
    assert_eq!(stmt.params().len(), 2000);
    let n = timed("insert", c.execute(&stmt, &params)).await.expect("insert");
    assert_eq!(n, 1000);
    let row = timed("sum", c.query_one("SELECT count(*), sum(v)::bigint FROM wide", &[]))
        .await
        .expect("sum");
    let expected: i64 = vs.iter().sum();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (1000, expected));
    // Reusing the statement violates the primary key on the first row: nothing is inserted.
    let err = timed("insert again", c.execute(&stmt, &params)).await.expect_err("duplicate");
    assert_eq!(tests::sqlstate(&err), Some("23505"));
    let row = timed("count", c.query_one("SELECT count(*) FROM wide", &[])).await.expect("count");
    assert_eq!(row.get::<_, i64>(0), 1000);
}

/// A type's binary format passed through untouched, as a `Vec<u8>` newtype accepted for one
/// PostgreSQL type.
macro_rules! raw_type {
    ($(#[$doc:meta])* $name:ident, $ty:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        struct $name(Vec<u8>);

        impl<'a> FromSql<'a> for $name {
            fn from_sql(
                _: &Type,
                raw: &'a [u8],
            ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
                Ok($name(raw.to_vec()))
            }

            fn accepts(ty: &Type) -> bool {
                *ty == Type::$ty
            }
        }

        impl ToSql for $name {
            fn to_sql(
                &self,
                _: &Type,
                out: &mut tokio_postgres::types::private::BytesMut,
            ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
                out.extend_from_slice(&self.0);
                Ok(IsNull::No)
            }

            fn accepts(ty: &Type) -> bool {
                *ty == Type::$ty
            }

            tokio_postgres::types::to_sql_checked!();
        }
    };
}

raw_type!(
    /// A numeric in PostgreSQL's binary format (for values `Decimal` cannot hold).
    RawNumeric,
    NUMERIC
);
raw_type!(
    /// An interval in PostgreSQL's binary format (microseconds, days, months), which
    /// tokio-postgres has no type for.
    RawInterval,
    INTERVAL
);
raw_type!(
    /// A uuid in PostgreSQL's binary format (its 16 bytes).
    RawUuid,
    UUID
);
raw_type!(
    /// A time in PostgreSQL's binary format (microseconds since midnight), for what chrono's
    /// NaiveTime cannot hold.
    RawTime,
    TIME
);
raw_type!(
    /// A jsonb in PostgreSQL's binary format (a version byte, 1, then the text).
    RawJsonb,
    JSONB
);
raw_type!(
    /// An int4[] in PostgreSQL's binary format, for bytes tokio-postgres would not send.
    RawArray,
    INT4_ARRAY
);

/// jsonb over the binary protocol: a parameter is a version byte and the JSON text (read and
/// normalized as text input is), a result is the version byte and the normalized text, a jsonb
/// key is found by a binary parameter, and an unknown version is refused (the connection
/// stays usable).
#[tokio::test]
async fn jsonb_in_binary() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute("CREATE TABLE jdocs (doc jsonb PRIMARY KEY, n int)"))
        .await
        .expect("create");
    let insert =
        timed("prepare", c.prepare("INSERT INTO jdocs VALUES ($1, $2)")).await.expect("prepare");
    assert_eq!(insert.params(), [Type::JSONB, Type::INT4]);
    let doc = |text: &str| RawJsonb([&[1u8][..], text.as_bytes()].concat());
    timed("insert", c.execute(&insert, &[&doc(r#"{"b": [1, 2.50], "a": "é"}"#), &7i32]))
        .await
        .expect("insert");
    let row = timed("select", c.query_one("SELECT doc, doc::text FROM jdocs WHERE n = 7", &[]))
        .await
        .expect("select");
    let want = r#"{"a": "é", "b": [1, 2.50]}"#;
    assert_eq!(row.get::<_, RawJsonb>(0).0, doc(want).0);
    assert_eq!(row.get::<_, String>(1), want);
    let row = timed("by key", c.query_one("SELECT n FROM jdocs WHERE doc = $1", &[&doc(want)]))
        .await
        .expect("lookup by a binary jsonb");
    assert_eq!(row.get::<_, i32>(0), 7);
    let row = timed("operator", c.query_one("SELECT $1::jsonb -> 'b' ->> 1", &[&doc(want)]))
        .await
        .expect("an operator on a binary parameter");
    assert_eq!(row.get::<_, String>(0), "2.50");
    let bad = RawJsonb(b"\x02{}".to_vec());
    let err = timed("version 2", c.query_one("SELECT $1::jsonb", &[&bad]))
        .await
        .expect_err("an unknown jsonb version");
    assert!(tests::sqlstate(&err).is_some(), "{err:?}");
    let row = timed("after", c.query_one("SELECT '[]'::jsonb::text", &[])).await.expect("usable");
    assert_eq!(row.get::<_, String>(0), "[]");
}

/// Arrays over the binary protocol (tokio-postgres' `Vec<T>`): parameters typed from their
/// columns and from `= ANY ($1)`, NULL elements, empty arrays, results read back as vectors,
/// and a binary array whose element type is not the parameter's refused (the connection stays
/// usable).
#[tokio::test]
async fn arrays_in_binary() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed(
        "create",
        c.batch_execute("CREATE TABLE tagged (id int PRIMARY KEY, tags text[], nums bigint[])"),
    )
    .await
    .expect("create");
    let insert = timed("prepare", c.prepare("INSERT INTO tagged VALUES ($1, $2, $3)"))
        .await
        .expect("prepare");
    assert_eq!(insert.params(), [Type::INT4, Type::TEXT_ARRAY, Type::INT8_ARRAY]);
    let tags = vec![Some("a".to_string()), None, Some("b c".to_string())];
    let nums: Vec<Option<i64>> = vec![Some(1), None, Some(-3)];
    timed("insert 1", c.execute(&insert, &[&1i32, &tags, &nums])).await.expect("insert 1");
    let empty: Vec<i64> = Vec::new();
    timed("insert 2", c.execute(&insert, &[&2i32, &vec!["x"], &empty])).await.expect("insert 2");
    let rows = timed(
        "select",
        c.query(
            "SELECT id, tags, nums, tags::text FROM tagged WHERE id = ANY ($1) ORDER BY id",
            &[&vec![1i32, 2, 9]],
        ),
    )
    .await
    .expect("select by = ANY");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].get::<_, Vec<Option<String>>>(1), tags);
    assert_eq!(rows[0].get::<_, Vec<Option<i64>>>(2), nums);
    assert_eq!(rows[0].get::<_, String>(3), r#"{a,NULL,"b c"}"#);
    assert_eq!(rows[1].get::<_, Vec<String>>(1), ["x"]);
    assert_eq!(rows[1].get::<_, Vec<i64>>(2), empty);
    let row = timed(
        "contains",
        c.query_one("SELECT count(*) FROM tagged WHERE nums @> $1", &[&vec![-3i64]]),
    )
    .await
    .expect("@> with a binary array");
    assert_eq!(row.get::<_, i64>(0), 1);
    // Parameter types inferred from the array around them, as PostgreSQL infers them.
    for (sql, want) in [
        ("SELECT id FROM tagged WHERE $1 = ANY (tags)", vec![Type::TEXT]),
        ("SELECT id FROM tagged WHERE nums @> $1", vec![Type::INT8_ARRAY]),
        ("SELECT array_append(nums, $1) FROM tagged", vec![Type::INT8]),
        ("SELECT tags || $1 FROM tagged", vec![Type::TEXT_ARRAY]),
        ("SELECT nums[$1] FROM tagged", vec![Type::INT4]),
        ("UPDATE tagged SET nums = $1 WHERE id = $2", vec![Type::INT8_ARRAY, Type::INT4]),
    ] {
        let stmt = timed("prepare", c.prepare(sql)).await.expect(sql);
        assert_eq!(stmt.params(), want, "{sql}");
    }
    // An int8[] value sent where the statement declared int4[].
    let stmt = timed("prepare int4[]", c.prepare_typed("SELECT $1::int4[]", &[Type::INT8_ARRAY]))
        .await
        .expect("prepare");
    let row = timed("int8[] as declared", c.query_one(&stmt, &[&vec![5i64]])).await.expect("cast");
    assert_eq!(row.get::<_, Vec<i32>>(0), [5]);
    let wrong = RawArray(vec![
        0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0,
        0, 7,
    ]);
    let err = timed("wrong element type", c.query_one("SELECT $1::int4[]", &[&wrong]))
        .await
        .expect_err("an int8 element where int4 is declared");
    assert!(tests::sqlstate(&err).is_some(), "{err:?}");
    let row = timed("after", c.query_one("SELECT ARRAY[1, 2]::text", &[])).await.expect("usable");
    assert_eq!(row.get::<_, String>(0), "{1,2}");
}

/// uuid over the binary protocol: a parameter's 16 bytes are the value (its text form prints
/// them in order), a result's are the value's, and a uuid key looked up by a binary parameter
/// finds its row.
#[tokio::test]
async fn uuid_in_binary() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute("CREATE TABLE ids (id uuid PRIMARY KEY, n int)"))
        .await
        .expect("create");
    let insert =
        timed("prepare", c.prepare("INSERT INTO ids VALUES ($1, $2)")).await.expect("prepare");
    assert_eq!(insert.params(), [Type::UUID, Type::INT4]);
    let bytes: Vec<u8> = (0u8..16).map(|i| i * 17).collect();
    timed("insert", c.execute(&insert, &[&RawUuid(bytes.clone()), &7i32])).await.expect("insert");
    let row = timed("select", c.query_one("SELECT id, id::text FROM ids WHERE n = 7", &[]))
        .await
        .expect("select");
    assert_eq!(row.get::<_, RawUuid>(0).0, bytes);
    assert_eq!(row.get::<_, String>(1), "00112233-4455-6677-8899-aabbccddeeff");
    let row = timed("by key", c.query_one("SELECT n FROM ids WHERE id = $1", &[&RawUuid(bytes)]))
        .await
        .expect("lookup by a binary uuid");
    assert_eq!(row.get::<_, i32>(0), 7);
    let err = timed("short", c.query_one("SELECT $1::uuid", &[&RawUuid(vec![1, 2, 3])]))
        .await
        .expect_err("13 bytes short");
    assert_eq!(tests::sqlstate(&err), Some("08P01"), "{err:?}");
    let err = timed("long", c.query_one("SELECT $1::uuid", &[&RawUuid(vec![0; 17])]))
        .await
        .expect_err("a byte too many");
    assert_eq!(tests::sqlstate(&err), Some("22P03"), "{err:?}");
}

/// `time` in binary (chrono's NaiveTime: microseconds since midnight): parameters, results,
/// a key looked up by a binary value, and PostgreSQL's `time out of range` for a value past
/// 24:00:00 sent in binary.
#[tokio::test]
async fn time_in_binary() {
    use chrono::NaiveTime;
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute("CREATE TABLE slots (t time PRIMARY KEY, n int)"))
        .await
        .expect("create");
    let insert =
        timed("prepare", c.prepare("INSERT INTO slots VALUES ($1, $2)")).await.expect("prepare");
    assert_eq!(insert.params(), [Type::TIME, Type::INT4]);
    let t = NaiveTime::from_hms_micro_opt(13, 45, 30, 250_000).expect("a time");
    timed("insert", c.execute(&insert, &[&t, &7i32])).await.expect("insert");
    let row = timed("select", c.query_one("SELECT t, t::text FROM slots WHERE n = 7", &[]))
        .await
        .expect("select");
    assert_eq!(row.get::<_, NaiveTime>(0), t);
    assert_eq!(row.get::<_, String>(1), "13:45:30.25");
    let row = timed("by key", c.query_one("SELECT n FROM slots WHERE t = $1", &[&t]))
        .await
        .expect("lookup by a binary time");
    assert_eq!(row.get::<_, i32>(0), 7);
    // 24:00:00 has no NaiveTime: its microseconds, raw.
    let row = timed("24:00", c.query_one("SELECT '24:00'::time", &[])).await.expect("24:00");
    assert_eq!(row.get::<_, RawTime>(0).0, 86_400_000_000i64.to_be_bytes());
    let late = RawTime((86_400_000_000i64 + 1).to_be_bytes().to_vec());
    let err = timed("past midnight", c.query_one("SELECT $1::time", &[&late]))
        .await
        .expect_err("past 24:00");
    assert_eq!(tests::sqlstate(&err), Some("22008"), "{err:?}");
}

/// Big, tiny and special numerics: text → server → binary result → binary parameter → server →
/// text gives back the same text and the same bytes; the special values have PostgreSQL's bytes.
#[tokio::test]
async fn numeric_binary_round_trip_beyond_decimal() {
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    timed("create", c.batch_execute("CREATE TABLE nums (id int PRIMARY KEY, n numeric)"))
        .await
        .expect("create");
    let long = format!("-{}.{}", "9".repeat(60), "0".repeat(999) + "1");
    let values = [
        "123456789012345678901234567890123456789012345678901234567890.123456789".to_string(),
        "-0.000000000000000000000000000000000000001".to_string(),
        "100000000000000000000000000000000000000000000000000".to_string(),
        "0.0000".to_string(),
        long,
        "NaN".to_string(),
        "Infinity".to_string(),
        "-Infinity".to_string(),
    ];
    let to_binary = timed("prepare", c.prepare("SELECT $1::text::numeric")).await.expect("prepare");
    let insert = timed(
        "prepare",
        c.prepare_typed("INSERT INTO nums (id, n) VALUES ($1, $2)", &[Type::INT4, Type::NUMERIC]),
    )
    .await
    .expect("prepare");
    let select = timed("prepare", c.prepare("SELECT n::text, n FROM nums WHERE id = $1"))
        .await
        .expect("prepare");
    for (i, text) in values.iter().enumerate() {
        let id = i as i32;
        let row = timed("to binary", c.query_one(&to_binary, &[text])).await.expect("to binary");
        let raw: RawNumeric = row.get(0);
        timed("insert", c.execute(&insert, &[&id, &raw])).await.expect("insert");
        let row = timed("select", c.query_one(&select, &[&id])).await.expect("select");
        assert_eq!(&row.get::<_, String>(0), text, "text of {text}");
        assert_eq!(row.get::<_, RawNumeric>(1), raw, "bytes of {text}");
    }
    // PostgreSQL 15 (`numeric_send`): NaN has dscale 0, the infinities 32 (from their header).
    let row = timed("specials", c.query_one("SELECT 'NaN'::numeric, '-inf'::numeric", &[]))
        .await
        .expect("specials");
    assert_eq!(row.get::<_, RawNumeric>(0).0, [0, 0, 0, 0, 0xC0, 0, 0, 0]);
    assert_eq!(row.get::<_, RawNumeric>(1).0, [0, 0, 0, 0, 0xF0, 0, 0, 0x20]);
    // 12345678901234567890.5 as base-10000 digits 1234 5678 9012 3456 7890 . 5000
    let raw = RawNumeric(vec![
        0, 6, 0, 4, 0x40, 0, 0, 1, 0x04, 0xD2, 0x16, 0x2E, 0x23, 0x34, 0x0D, 0x80, 0x1E, 0xD2,
        0x13, 0x88,
    ]);
    let row =
        timed("param", c.query_one("SELECT $1::numeric::text", &[&raw])).await.expect("param");
    assert_eq!(row.get::<_, String>(0), "-12345678901234567890.5");
    // A NaN parameter into numeric(5,2) is kept; an infinity is a field overflow.
    let stmt = timed("prepare", c.prepare("SELECT $1::numeric(5,2)::text")).await.expect("prepare");
    let nan = RawNumeric(vec![0, 0, 0, 0, 0xC0, 0, 0, 0]);
    let row = timed("nan", c.query_one(&stmt, &[&nan])).await.expect("nan");
    assert_eq!(row.get::<_, String>(0), "NaN");
    let inf = RawNumeric(vec![0, 0, 0, 0, 0xD0, 0, 0, 0]);
    let err = timed("inf", c.query_one(&stmt, &[&inf])).await.expect_err("inf");
    assert_eq!(tests::sqlstate(&err), Some("22003"), "{err:?}");
}

fn raw_interval(micros: i64, days: i32, months: i32) -> RawInterval {
    let mut b = micros.to_be_bytes().to_vec();
    b.extend_from_slice(&days.to_be_bytes());
    b.extend_from_slice(&months.to_be_bytes());
    RawInterval(b)
}

/// timestamptz and interval over the binary protocol: parameters and results are UTC instants
/// and (microseconds, days, months), whatever the session's zone; the same values in text
/// print in the session's zone; a binary `timestamp` parameter for a `timestamptz` column is
/// read as local time in that zone; each statement of a multi-statement Query prints in the
/// zone it ran in.
#[tokio::test]
async fn timestamptz_and_interval_in_binary() {
    use chrono::{DateTime, Utc};
    let Some(b) = Backend::from_env() else { return };
    let c = b.connect().await;
    let setup = "SET TIME ZONE 'Asia/Kolkata'; \
                 CREATE TABLE times (id int PRIMARY KEY, at timestamptz, took interval)";
    timed("create", c.batch_execute(setup)).await.expect("create");
    let insert = timed("prepare", c.prepare("INSERT INTO times VALUES ($1, $2, $3)"))
        .await
        .expect("prepare insert");
    assert_eq!(insert.params(), [Type::INT4, Type::TIMESTAMPTZ, Type::INTERVAL]);
    let at: DateTime<Utc> = "2024-07-01T06:30:00.25Z".parse().expect("instant");
    let took = raw_interval(-1_500_000, 3, 14);
    timed("insert", c.execute(&insert, &[&1i32, &at, &took])).await.expect("insert");
    let row = timed("select", c.query_one("SELECT at, took FROM times WHERE id = $1", &[&1i32]))
        .await
        .expect("select");
    assert_eq!(row.get::<_, DateTime<Utc>>(0), at);
    assert_eq!(row.get::<_, RawInterval>(1), took);

    // A timestamp parameter for the timestamptz column: local time in the session's zone.
    let typed = timed(
        "prepare typed",
        c.prepare_typed("INSERT INTO times VALUES ($1, $2)", &[Type::INT4, Type::TIMESTAMP]),
    )
    .await
    .expect("prepare typed");
    timed("insert local", c.execute(&typed, &[&2i32, &ts("2024-07-01 12:00:00.25")]))
        .await
        .expect("insert local");

    let text = timed("simple", c.simple_query("SELECT id, at, took FROM times ORDER BY id"))
        .await
        .expect("simple query");
    let rows: Vec<Vec<String>> = text
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        rows,
        [
            ["1", "2024-07-01 12:00:00.25+05:30", "1 year 2 mons 3 days -00:00:01.5"],
            ["2", "2024-07-01 12:00:00.25+05:30", "NULL"],
        ]
    );

    // Each statement of one Query prints in the zone it ran in.
    let batch = "SET TIME ZONE 'UTC'; SELECT at FROM times WHERE id = 1; \
                 SET TIME ZONE 'America/New_York'; SELECT at FROM times WHERE id = 1";
    let text = timed("batch", c.simple_query(batch)).await.expect("batch");
    let printed: Vec<&str> = text
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0),
            _ => None,
        })
        .collect();
    assert_eq!(printed, ["2024-07-01 06:30:00.25+00", "2024-07-01 02:30:00.25-04"]);
}
