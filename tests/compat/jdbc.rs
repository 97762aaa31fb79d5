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

#[test]
fn pgjdbc_batch_prepared_and_transactions() {
    let java_ok = Command::new("java").arg("-version").output().is_ok();
    let jar = driver_jar();
    let (true, Some(jar)) = (java_ok, jar) else {
        let msg = "java or the pgjdbc jar is missing (run ./dev test, or set JDBC_JAR)";
        assert!(std::env::var("CI").is_err(), "{msg}");
        println!("{msg}; skipping");
        return;
    };
    let Some(backend) = Backend::from_env() else { return };
    let source = tests::tests_dir().join("compat/jdbc/JdbcSmoke.java");
    let out = Command::new("java")
        .arg("-cp")
        .arg(&jar)
        .arg(&source)
        .arg(backend.port().to_string())
        .output()
        .expect("run java");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "java failed on {}:\n{stdout}\n{stderr}", backend.name());
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "n20 20.10 2023-11-14 22:13:20.02",
            "updated 1",
            "sum 210",
            // sum over i of round(1.005 * i, 2) for i = 1..300, plus the 0.5 update.
            "count 300 total 45377.00",
        ],
        "on {}",
        backend.name()
    );
}
