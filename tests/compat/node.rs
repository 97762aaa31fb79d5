//! Node.js clients as real clients: runs `tests/compat/node/sequelize_smoke.js` against the
//! server — node-postgres (parameters, arrays, jsonb, a `name[]` left as text) and Sequelize 6
//! (connect, sync with force and alter, the ORM) — and checks what it prints. The same lines
//! come from PostgreSQL 15 (`TEST_AGAINST_PG=1`).
//!
//! The packages are those `./dev test` installs (pinned, from npm) in `~/.cache/aspen-node`;
//! `ASPEN_NODE_MODULES` overrides the `node_modules` directory. Without node or them the test
//! says so and fails under CI (`CI=true`), so a missing install step cannot hide.

use std::path::PathBuf;
use std::process::Command;

use tests::Backend;

fn node_modules() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("ASPEN_NODE_MODULES") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var("HOME").ok()?;
    let dir = PathBuf::from(home).join(".cache/aspen-node/node_modules");
    dir.join("sequelize").exists().then_some(dir)
}

#[test]
fn node_postgres_and_sequelize() {
    let node_ok = Command::new("node").arg("--version").output().is_ok();
    let (true, Some(modules)) = (node_ok, node_modules()) else {
        let msg =
            "node or the npm packages are missing (run ./dev test, or set ASPEN_NODE_MODULES)";
        tests::missing(msg);
        return;
    };
    let Some(backend) = Backend::from_env() else { return };
    let script = tests::tests_dir().join("compat/node/sequelize_smoke.js");
    let name = backend.name();
    let lines = tests::client_lines(
        Command::new("node")
            .arg(&script)
            .arg(backend.port().to_string())
            .env("NODE_PATH", &modules),
        &format!("sequelize_smoke.js on {name}"),
    );
    assert_eq!(
        lines,
        [
            r#"pg 42 ["x","y"] {"k":1}"#,
            "name[] string",
            "users bob,cy",
            "posts ann:1,bob:0,cy:0",
            r#"ann 31 0.00 ["x","y"] {"a":1}"#,
            "contains 1",
            "duplicate SequelizeUniqueConstraintError 23505",
            "dropped 0",
        ],
        "on {name}"
    );
}
