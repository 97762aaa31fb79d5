//! Python clients as real clients: runs `tests/compat/python/orm_smoke.py` against the server —
//! psycopg 3 (extended protocol, server-side parameters, `TypeInfo`, prepared statements),
//! psycopg2 (client-side interpolation, simple protocol) and SQLAlchemy 2's ORM over each
//! (`create_all` / `drop_all` with their `pg_catalog` existence checks, inserts with
//! RETURNING, relationships, joins, aggregates) — and checks what it prints. The same lines
//! come from PostgreSQL 15 (`TEST_AGAINST_PG=1`).
//!
//! The interpreter is the virtual environment `./dev test` makes in
//! `~/.cache/aspen-python` with the packages pinned there (from PyPI); `ASPEN_PYTHON` overrides
//! it. Without it the test says so and fails under CI (`CI=true`), so a missing install step
//! cannot hide.

use std::path::PathBuf;
use std::process::Command;

use tests::Backend;

fn python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("ASPEN_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var("HOME").ok()?;
    let python = PathBuf::from(home).join(".cache/aspen-python/bin/python");
    python.exists().then_some(python)
}

#[test]
fn psycopg_and_sqlalchemy() {
    let Some(python) = python() else {
        let msg = "the Python client environment is missing (run ./dev test, or set ASPEN_PYTHON)";
        assert!(std::env::var("CI").is_err(), "{msg}");
        println!("{msg}; skipping");
        return;
    };
    let Some(backend) = Backend::from_env() else { return };
    let script = tests::tests_dir().join("compat/python/orm_smoke.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(backend.port().to_string())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = backend.name();
    assert!(out.status.success(), "orm_smoke.py failed on {name}:\n{stdout}\n{stderr}");
    let mut want = vec![
        "typeinfo int4 23 1007 integer ,",
        "typeinfo hstore None",
        "psycopg3 any 3 3.00",
        "psycopg3 prepared item 8",
        "psycopg3 unique 23505",
        "psycopg2 params 42 it's 2024-02-29",
    ];
    let orm = [
        "user 1 spongebob Spongebob True 0.00 sb@x.org",
        "user 2 sandy Sandy Cheeks True 0.00 sandy@x.org,sandy2@x.org",
        "counts [('patrick', 0), ('sandy', 2), ('spongebob', 1)]",
        "sum 10.50",
        "addresses 1",
        "created datetime True",
        "dropped True",
    ];
    let lines: Vec<String> = ["psycopg", "psycopg2"]
        .iter()
        .flat_map(|d| orm.iter().map(move |l| format!("{d} {l}")))
        .collect();
    want.extend(lines.iter().map(String::as_str));
    assert_eq!(stdout.lines().collect::<Vec<_>>(), want, "on {name}");
}
