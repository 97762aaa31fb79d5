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
    let out = Command::new("go")
        .args(["run", "-mod=readonly", "."])
        .arg(backend.port().to_string())
        .current_dir(&dir)
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("run go");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = backend.name();
    assert!(out.status.success(), "gorm_smoke failed on {name}:\n{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["user ann 30 acme", "user bob 40 ", "count 1 2", "dup true"],
        "on {name}"
    );
}
