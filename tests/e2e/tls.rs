//! TLS against a real `aspen serve --tls-cert --tls-key` (module `server::tls`), driven by psql
//! (libpq) with a certificate made by `openssl` for the test:
//!
//! - `sslmode=verify-full` with the certificate as the root: the connection is encrypted
//!   (`\conninfo` says so) and the server is the one the certificate names;
//! - SCRAM with `channel_binding=require` logs in over it (SCRAM-SHA-256-PLUS, bound to the
//!   certificate), and a wrong password still fails;
//! - `sslmode=disable` still works in the clear on the same port;
//! - bytes sent after SSLRequest before its answer are refused with 08P01, not read as the
//!   start of the TLS handshake or of the session;
//! - a server without a certificate answers SSLRequest `N`: `sslmode=require` fails, the
//!   default `prefer` goes on in the clear.
//!
//! Without `openssl` or `psql` on the machine the test says so and passes outside CI.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use tests::raw::startup_message;
use tests::{fresh_data_dir, AspenServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Makes `cert.pem` and `key.pem` for `localhost` and 127.0.0.1 in `dir`.
fn make_certificate(dir: &Path) -> bool {
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .output();
    matches!(made, Ok(out) if out.status.success())
}

/// Runs psql with `conninfo` and `command`; stdout, or stderr on failure.
fn psql(conninfo: &str, password: &str, command: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args(["-X", "-A", "-t", "-d", conninfo, "-c", command])
        .env("PGPASSWORD", password)
        .env_remove("PGSSLMODE")
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn tools_missing() -> bool {
    let missing = ["openssl", "psql"]
        .iter()
        .any(|tool| Command::new(tool).arg("--version").output().is_err());
    if missing {
        assert!(std::env::var("CI").is_err(), "openssl or psql is missing");
        println!("openssl or psql is missing; skipping");
    }
    missing
}

#[tokio::test]
async fn tls_with_verified_certificate_and_channel_binding() {
    if tools_missing() {
        return;
    }
    let certs = tempfile::tempdir().expect("tempdir");
    assert!(make_certificate(certs.path()), "openssl could not make a certificate");
    let (cert, key) = (certs.path().join("cert.pem"), certs.path().join("key.pem"));
    let args: Vec<OsString> = vec![
        "--tls-cert".into(),
        cert.clone().into(),
        "--tls-key".into(),
        key.into(),
        "--auth-local".into(),
        "scram-sha-256".into(),
        "--postgres-password".into(),
        "sekret".into(),
    ];
    let server = AspenServer::try_start_in(fresh_data_dir().expect("dir"), args)
        .unwrap_or_else(|e| panic!("{e}"));
    let port = server.port();
    let base = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
    let verified = format!(
        "{base} sslmode=verify-full sslrootcert={} channel_binding=require",
        cert.display()
    );

    assert_eq!(psql(&verified, "sekret", "SELECT 40 + 2"), Ok("42".into()));
    let info = psql(&verified, "sekret", "\\conninfo").expect("conninfo");
    assert!(info.contains("SSL connection"), "{info}");
    let refused = psql(&verified, "wrong", "SELECT 1").unwrap_err();
    assert!(refused.contains("password authentication failed"), "{refused}");
    let clear = format!("{base} sslmode=disable");
    assert_eq!(psql(&clear, "sekret", "SELECT 1"), Ok("1".into()));
    // Channel binding needs TLS: libpq refuses to log in without it.
    assert!(psql(&format!("{clear} channel_binding=require"), "sekret", "SELECT 1").is_err());

    // SSLRequest and a startup packet in one write: refused before any TLS.
    let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let mut bytes = vec![0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
    bytes.extend(startup_message());
    raw.write_all(&bytes).await.expect("write");
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), raw.read_to_end(&mut reply))
        .await
        .expect("the server closes the connection");
    assert_eq!(reply.first(), Some(&b'E'), "{reply:?}");
    assert!(String::from_utf8_lossy(&reply).contains("08P01"), "{reply:?}");
}

#[tokio::test]
async fn without_a_certificate_sslrequest_is_refused() {
    if tools_missing() {
        return;
    }
    let server = AspenServer::start();
    let base = format!("host=127.0.0.1 port={} user=postgres dbname=postgres", server.port());
    assert!(psql(&format!("{base} sslmode=require"), "", "SELECT 1").is_err());
    assert_eq!(psql(&format!("{base} sslmode=prefer"), "", "SELECT 1"), Ok("1".into()));
}
