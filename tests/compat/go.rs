//! Go clients as real clients: runs `tests/compat/go/gorm_smoke` (GORM over pgx) against the
//! server with `go run` and checks what it prints. The same lines come from PostgreSQL 15
//! (`TEST_AGAINST_PG=1`). The modules are pinned by its `go.sum` and come from the Go module
//! proxy (`./dev test` downloads them). Without `go` the test says so and fails under CI
//! (`CI=true`), so a missing install step cannot hide.

use std::process::Command;

use tests::Backend;

#[test]
fn gorm() {
    if Command::new("go").arg("version").output().is_err() {
        let msg = "go is missing (run ./dev test)";
        tests::missing(msg);
        return;
    }
    let Some(backend) = Backend::from_env() else { return };
    let dir = tests::tests_dir().join("compat/go/gorm_smoke");
    let name = backend.name();
    let lines = tests::client_lines(
        Command::new("go")
            .args(["run", "-mod=readonly", "."])
            .arg(backend.port().to_string())
            .current_dir(&dir)
            .env("GOTOOLCHAIN", "local"),
        &format!("gorm_smoke on {name}"),
    );
    assert_eq!(lines, ["user ann 30 acme", "user bob 40 ", "count 1 2", "dup true"], "on {name}");
}
