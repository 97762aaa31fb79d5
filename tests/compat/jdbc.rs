//! pgjdbc as a real client: runs `tests/compat/jdbc/JdbcSmoke.java` (Java single-file launch)
//! against the server and checks what it prints. The driver jar comes from the local Maven
//! repository (`./dev test` fetches `org.postgresql:postgresql:42.7.4` from Maven Central);
//! `JDBC_JAR` overrides the path. Without Java or the jar the test says so and fails under CI
//! (`CI=true`), so a missing install step cannot hide.

use std::path::PathBuf;
use std::process::Command;

use tests::Backend;

const DRIVER: &str = "org/postgresql/postgresql/42.7.4/postgresql-42.7.4.jar";

fn driver_jar() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("JDBC_JAR") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var("HOME").ok()?;
    let jar = PathBuf::from(home).join(".m2/repository").join(DRIVER);
    jar.exists().then_some(jar)
}

/// Runs `tests/compat/jdbc/<program>.java` against the backend under test and returns the
/// backend's name and the program's output lines; `None` (skip) without Java or the jar
/// outside CI, or when the backend is not available.
fn run_java(program: &str) -> Option<(String, Vec<String>)> {
    let java_ok = Command::new("java").arg("-version").output().is_ok();
    let jar = driver_jar();
    let (true, Some(jar)) = (java_ok, jar) else {
        let msg = "java or the pgjdbc jar is missing (run ./dev test, or set JDBC_JAR)";
        tests::missing(msg);
        return None;
    };
    let backend = Backend::from_env()?;
    let lines = java(&jar, program, backend.port(), backend.name());
    Some((backend.name().to_string(), lines))
}

/// Runs `tests/compat/jdbc/<program>.java` against the server on `port` (`name` for messages)
/// and returns its output lines.
fn java(jar: &std::path::Path, program: &str, port: u16, name: &str) -> Vec<String> {
    let source = tests::tests_dir().join(format!("compat/jdbc/{program}.java"));
    tests::client_lines(
        Command::new("java").arg("-cp").arg(jar).arg(&source).arg(port.to_string()),
        &format!("java {program} on {name}"),
    )
}

/// SCRAM-SHA-256 through pgjdbc, and the verifier pgjdbc computes itself (Aspen only: it
/// starts its own server with passwords required).
#[test]
fn pgjdbc_scram_passwords() {
    let Some(jar) = driver_jar().filter(|_| Command::new("java").arg("-version").output().is_ok())
    else {
        let msg = "java or the pgjdbc jar is missing (run ./dev test, or set JDBC_JAR)";
        tests::missing(msg);
        return;
    };
    if tests::against_pg() {
        return;
    }
    let args = ["--auth-local", "scram-sha-256", "--postgres-password", "sekret"];
    let dir = tests::fresh_data_dir().expect("data dir");
    let server = tests::AspenServer::try_start_in(dir, args.map(Into::into).to_vec())
        .unwrap_or_else(|e| panic!("{e}"));
    let lines = java(&jar, "JdbcAuth", server.port(), "aspen");
    assert_eq!(
        lines,
        ["in postgres", "refused postgres 28P01", "in app", "refused app 28P01", "in app",]
    );
}

#[test]
fn pgjdbc_batch_prepared_and_transactions() {
    let Some((backend, lines)) = run_java("JdbcSmoke") else { return };
    assert_eq!(
        lines,
        [
            "n20 20.10 2023-11-14 22:13:20.02",
            "updated 1",
            "sum 210",
            // sum over i of round(1.005 * i, 2) for i = 1..300, plus the 0.5 update.
            "count 300 total 45377.00",
            "keys 1 1 x",
            "keys 2 2 y",
            "column id serial autoincrement=YES default=nextval('g_id_seq'::regclass)",
            "column k int8 autoincrement=YES default=null",
            "column v text autoincrement=NO default=null",
            "tz 2024-07-01T06:30:00.250Z 1 day 02:00:00 2024-07-02T08:30:00.250Z",
            "healed 4 n",
            "autosave caught 23505",
            "savepoints 1001 kept, 1003 kept, 1004 auto, 1005 auto",
        ],
        "on {backend}"
    );
}

/// jsonb bound as a PGobject, as a String with a cast and untyped (stringtype=unspecified),
/// read back as a String and a PGobject; a String bound as varchar is refused (42804), as by
/// PostgreSQL.
#[test]
fn pgjdbc_jsonb() {
    let Some((backend, lines)) = run_java("JdbcJsonb") else { return };
    assert_eq!(
        lines,
        [
            "varchar refused 42804",
            "type jsonb",
            r#"1 {"n": 1.50, "name": "ann", "tags": ["a", "b"]} jsonb ann true"#,
            r#"3 [1, {"x": null}] jsonb null false"#,
            r#"unspecified {"a": 1, "b": 2}"#,
        ],
        "on {backend}"
    );
}

/// Arrays through pgjdbc: createArrayOf (text with the array OID) and Java primitive arrays
/// (pgjdbc's binary form), `= ANY (?)`, `@>`, NULL elements and NULL arrays, read back with
/// getArray and getString; the same lines from PostgreSQL 15.
#[test]
fn pgjdbc_arrays() {
    let Some((backend, lines)) = run_java("JdbcArrays") else { return };
    assert_eq!(
        lines,
        [
            "types _text _int8 _bool 2003",
            r#"1 [a, b c, null, d"e] [1, null, 3] int8 {t,f} 3"#,
            "2 [x] [10, 20] int8 {} 2",
            "3 null [] int8 null 0",
            "matches 1 2",
            "appended {x,y} x|y",
        ],
        "on {backend}"
    );
}

/// `DatabaseMetaData` as BenchBase reads a schema (getTables, getColumns, getIndexInfo,
/// getImportedKeys) plus getExportedKeys and getCrossReference: the lines are PostgreSQL 15's answers (pgjdbc
/// 42.7.4), so Aspen's `sql::metadata` must give the same rows, types and order.
#[test]
fn pgjdbc_database_metadata() {
    let Some((backend, lines)) = run_java("JdbcMetadata") else { return };
    let expected = EXPECTED_METADATA.lines().map(str::trim).filter(|l| !l.is_empty());
    let expected: Vec<&str> = expected.collect();
    assert_eq!(lines, expected, "on {backend}");
}

const EXPECTED_METADATA: &str = "
schema public
table table_schem=public table_name=md_child table_type=TABLE remarks=null
table table_schem=public table_name=md_parent table_type=TABLE remarks=null
column md_child column_name=c_id data_type=-5 type_name=int8 column_size=19 decimal_digits=0 is_nullable=NO ordinal_position=1 column_def=null is_autoincrement=NO
column md_child column_name=c_p data_type=4 type_name=int4 column_size=10 decimal_digits=0 is_nullable=NO ordinal_position=2 column_def=null is_autoincrement=NO
column md_child column_name=c_w data_type=5 type_name=int2 column_size=5 decimal_digits=0 is_nullable=NO ordinal_position=3 column_def=null is_autoincrement=NO
column md_child column_name=note data_type=1 type_name=bpchar column_size=8 decimal_digits=0 is_nullable=YES ordinal_position=4 column_def=null is_autoincrement=NO
column md_child column_name=n data_type=4 type_name=int4 column_size=10 decimal_digits=0 is_nullable=YES ordinal_position=5 column_def=7 is_autoincrement=NO
column md_child column_name=ts data_type=93 type_name=timestamp column_size=29 decimal_digits=6 is_nullable=YES ordinal_position=6 column_def=null is_autoincrement=NO
column md_child column_name=f data_type=8 type_name=float8 column_size=17 decimal_digits=17 is_nullable=YES ordinal_position=7 column_def=null is_autoincrement=NO
column md_child column_name=b data_type=-7 type_name=bool column_size=1 decimal_digits=0 is_nullable=YES ordinal_position=8 column_def=null is_autoincrement=NO
column md_child column_name=t data_type=12 type_name=text column_size=2147483647 decimal_digits=0 is_nullable=YES ordinal_position=9 column_def=null is_autoincrement=NO
index md_child index_name=md_child_pkey non_unique=f type=3 ordinal_position=1 column_name=c_id asc_or_desc=A
index md_child index_name=md_child_t non_unique=f type=3 ordinal_position=1 column_name=t asc_or_desc=A
index md_child index_name=md_child_idx non_unique=t type=3 ordinal_position=1 column_name=c_w asc_or_desc=A
index md_child index_name=md_child_idx non_unique=t type=3 ordinal_position=2 column_name=c_p asc_or_desc=A
unique md_child index_name=md_child_pkey column_name=c_id
unique md_child index_name=md_child_t column_name=t
imported md_child pktable_name=md_parent pkcolumn_name=p_w fktable_name=md_child fkcolumn_name=c_w key_seq=1 update_rule=1 delete_rule=0 fk_name=md_child_c_w_c_p_fkey pk_name=md_parent_pkey deferrability=7
imported md_child pktable_name=md_parent pkcolumn_name=p_id fktable_name=md_child fkcolumn_name=c_p key_seq=2 update_rule=1 delete_rule=0 fk_name=md_child_c_w_c_p_fkey pk_name=md_parent_pkey deferrability=7
column md_parent column_name=p_id data_type=4 type_name=int4 column_size=10 decimal_digits=0 is_nullable=NO ordinal_position=1 column_def=null is_autoincrement=NO
column md_parent column_name=p_w data_type=5 type_name=int2 column_size=5 decimal_digits=0 is_nullable=NO ordinal_position=2 column_def=null is_autoincrement=NO
column md_parent column_name=name data_type=12 type_name=varchar column_size=16 decimal_digits=0 is_nullable=YES ordinal_position=3 column_def=null is_autoincrement=NO
column md_parent column_name=amt data_type=2 type_name=numeric column_size=12 decimal_digits=2 is_nullable=YES ordinal_position=4 column_def=null is_autoincrement=NO
index md_parent index_name=md_parent_pkey non_unique=f type=3 ordinal_position=1 column_name=p_w asc_or_desc=A
index md_parent index_name=md_parent_pkey non_unique=f type=3 ordinal_position=2 column_name=p_id asc_or_desc=A
unique md_parent index_name=md_parent_pkey column_name=p_w
unique md_parent index_name=md_parent_pkey column_name=p_id
exported md_parent fktable_name=md_child fkcolumn_name=c_w key_seq=1
exported md_parent fktable_name=md_child fkcolumn_name=c_p key_seq=2
cross pkcolumn_name=p_w fkcolumn_name=c_w key_seq=1 fk_name=md_child_c_w_c_p_fkey
cross pkcolumn_name=p_id fkcolumn_name=c_p key_seq=2 fk_name=md_child_c_w_c_p_fkey
cross reversed 0
views 0
";
