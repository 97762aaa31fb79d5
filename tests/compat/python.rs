//! Python clients as real clients: runs the scripts in `tests/compat/python/` against the
//! server and checks what they print — `orm_smoke.py`: psycopg 3 (extended protocol,
//! server-side parameters, `TypeInfo`, prepared statements), psycopg2 (client-side
//! interpolation, simple protocol) and SQLAlchemy 2's ORM over each (`create_all` /
//! `drop_all` with their `pg_catalog` existence checks, inserts with RETURNING,
//! relationships, joins, aggregates); `django_smoke.py`: Django's `migrate` and ORM. The same
//! lines come from PostgreSQL 15 (`TEST_AGAINST_PG=1`).
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

/// Runs `tests/compat/python/<script>` against the backend under test and returns the
/// backend's name and the lines it printed; `None` (skip) without the environment outside CI,
/// or when the backend is not available.
fn run_python(script: &str) -> Option<(String, Vec<String>)> {
    let Some(python) = python() else {
        let msg = "the Python client environment is missing (run ./dev test, or set ASPEN_PYTHON)";
        tests::missing(msg);
        return None;
    };
    let backend = Backend::from_env()?;
    let path = tests::tests_dir().join("compat/python").join(script);
    let name = backend.name().to_string();
    let lines = tests::client_lines(
        Command::new(&python).arg(&path).arg(backend.port().to_string()),
        &format!("{script} on {name}"),
    );
    Some((name, lines))
}

#[test]
fn psycopg_and_sqlalchemy() {
    let Some((name, lines)) = run_python("orm_smoke.py") else { return };
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
    let per_driver: Vec<String> = ["psycopg", "psycopg2"]
        .iter()
        .flat_map(|d| orm.iter().map(move |l| format!("{d} {l}")))
        .collect();
    want.extend(per_driver.iter().map(String::as_str));
    assert_eq!(lines_of(&lines), want, "on {name}");
}

fn lines_of(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

/// Django: `migrate` (deferrable foreign keys, introspection through `obj_description`), and
/// an ORM session (unnest bulk inserts, GROUP BY the primary key, savepoints, cascades).
#[test]
fn django() {
    let Some((name, lines)) = run_python("django_smoke.py") else { return };
    assert_eq!(
        lines_of(&lines),
        [
            "tables ['djapp_author', 'djapp_book']",
            "counts [('Ann', 5), ('Bob', 5)]",
            "filters 1 5",
            "sum {'pages__sum': 1050}",
            "duplicate refused",
            "authors ['Ann', 'Robert']",
            "user True True",
            "top ['T9', 'T7', 'T8']",
            "cascade 5",
        ],
        "on {name}"
    );
}
