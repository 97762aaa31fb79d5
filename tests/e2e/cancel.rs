//! CancelRequest and shutdown against a running statement, over raw protocol v3.
//!
//! A client cancels its running statement by opening a second connection and sending the
//! process id and secret key that BackendKeyData gave it. The statement fails with 57014
//! "canceling statement due to user request" and the session goes on; a request that arrives
//! while the session is idle cancels nothing; `pg_sleep` holds up no other session. SIGTERM
//! stops the server even while a statement runs (Aspen only). `TEST_AGAINST_PG=1` runs the
//! others against PostgreSQL 15.

use std::time::{Duration, Instant};

use tests::raw::{query, read_reply, startup_message, Reply};
use tests::Backend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A statement that runs for minutes: Aspen re-runs the inner scan (a million rows, never a
/// match) for each of a million outer rows; PostgreSQL sleeps.
fn long_statement(backend: &Backend) -> &'static str {
    match backend {
        Backend::Aspen(_) => {
            "SELECT count(*) FROM generate_series(1, 1000000) a \
             WHERE EXISTS (SELECT 1 FROM generate_series(1, 1000000) b WHERE b.b = a.a + 1000000)"
        }
        Backend::Postgres(_) => "SELECT pg_sleep(600)",
    }
}

/// A started raw session and its BackendKeyData (process id, secret key).
async fn session_with_key(backend: &Backend) -> (TcpStream, [u8; 8]) {
    let mut stream = TcpStream::connect(("127.0.0.1", backend.port())).await.expect("connect");
    stream.write_all(&startup_message()).await.expect("send startup");
    let reply = read_reply(&mut stream, 0).await;
    assert!(reply.error().is_none() && !reply.closed, "startup failed: {reply:?}");
    let key = reply.messages.iter().find(|m| m.tag == b'K').expect("BackendKeyData");
    (stream, key.body[..8].try_into().expect("pid and a 4-byte key"))
}

/// Sends a CancelRequest and waits for the server to close that connection (Aspen closes it
/// once the flag is set).
async fn send_cancel(port: u16, key: [u8; 8]) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let mut msg = 16u32.to_be_bytes().to_vec();
    msg.extend_from_slice(&80_877_102u32.to_be_bytes());
    msg.extend_from_slice(&key);
    stream.write_all(&msg).await.expect("send CancelRequest");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest)).await;
}

/// Sends CancelRequests every 200 ms until `task` (reading the canceled statement's reply)
/// ends, and returns what it returned. A request that arrives before the statement starts
/// cancels nothing, hence the repeats.
async fn cancel_until_done<T>(port: u16, key: [u8; 8], task: tokio::task::JoinHandle<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !task.is_finished() {
        assert!(Instant::now() < deadline, "the statement ran on through 60 s of cancels");
        tokio::time::sleep(Duration::from_millis(200)).await;
        send_cancel(port, key).await;
    }
    task.await.expect("the reading task")
}

/// Runs `sql` on `stream` and checks that it answers rows and no error.
async fn assert_answers(stream: &mut TcpStream, sql: &str, after: &str) {
    stream.write_all(&query(sql)).await.expect("send");
    let reply = read_reply(stream, 0).await;
    assert!(reply.error().is_none(), "{after}: {reply:?}");
    assert!(reply.messages.iter().any(|m| m.tag == b'D'), "{after}: {reply:?}");
}

/// The error message (field `M`) of the first ErrorResponse.
fn error_message(reply: &Reply) -> Option<String> {
    let e = reply.messages.iter().find(|m| m.tag == b'E')?;
    let field = e.body.split(|b| *b == 0).find(|f| f.first() == Some(&b'M'))?;
    Some(String::from_utf8_lossy(&field[1..]).into_owned())
}

#[tokio::test]
async fn a_cancel_request_stops_the_running_statement_and_the_session_goes_on() {
    let Some(backend) = Backend::from_env() else { return };
    let (mut stream, key) = session_with_key(&backend).await;
    stream.write_all(&query(long_statement(&backend))).await.expect("send the statement");
    let reader = tokio::spawn(async move {
        let reply = read_reply(&mut stream, 0).await;
        (stream, reply)
    });
    let (mut stream, reply) = cancel_until_done(backend.port(), key, reader).await;
    assert_eq!(reply.error().as_deref(), Some("57014"), "{reply:?}");
    assert_eq!(error_message(&reply).as_deref(), Some("canceling statement due to user request"));
    assert_eq!(reply.status(), Some('I'), "{reply:?}");
    assert_answers(&mut stream, "SELECT 41 + 1", "the session after a cancel").await;
}

#[tokio::test]
async fn a_cancel_request_while_idle_cancels_nothing() {
    let Some(backend) = Backend::from_env() else { return };
    let (mut stream, key) = session_with_key(&backend).await;
    send_cancel(backend.port(), key).await;
    // Another session's key, and a key no session has, are no different.
    let (_other, other_key) = session_with_key(&backend).await;
    send_cancel(backend.port(), other_key).await;
    send_cancel(backend.port(), [0, 0, 0, 1, 9, 9, 9, 9]).await;
    let sql = "SELECT count(*) FROM generate_series(1, 1000)";
    assert_answers(&mut stream, sql, "the session after cancels while idle").await;
}

#[tokio::test]
async fn sigterm_stops_the_server_while_a_statement_runs() {
    let Some(mut backend) = Backend::from_env() else { return };
    let Backend::Aspen(server) = &mut backend else { return };
    let pid = server.pid() as i32;
    let (mut stream, _) = session_with_key(&backend).await;
    stream.write_all(&query(long_statement(&backend))).await.expect("send the statement");
    // Let the statement start (if it has not, SIGTERM only has less to stop).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // SAFETY: kill(2) on the server process we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let Backend::Aspen(server) = &mut backend else { unreachable!() };
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.is_running() {
        assert!(Instant::now() < deadline, "the server was still running 30 s after SIGTERM");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `pg_sleep` waits on the server's blocking pool, not on the thread that serves other
/// connections too: sessions opened after it (dealt to every connection thread) still answer
/// while it sleeps, and it ends at its cancel.
#[tokio::test]
async fn a_sleeping_statement_holds_up_no_other_session() {
    let Some(backend) = Backend::from_env() else { return };
    let (mut stream, key) = session_with_key(&backend).await;
    stream.write_all(&query("SELECT pg_sleep(600)")).await.expect("send");
    let sleeper = tokio::spawn(async move { read_reply(&mut stream, 0).await });
    for i in 0..4 {
        let (mut other, _) = session_with_key(&backend).await;
        let answer = assert_answers(&mut other, "SELECT 1", "another session while one slept");
        tokio::time::timeout(Duration::from_secs(30), answer)
            .await
            .unwrap_or_else(|_| panic!("session {i} got no answer while another slept"));
    }
    assert!(!sleeper.is_finished(), "pg_sleep(600) ended early");
    let reply = cancel_until_done(backend.port(), key, sleeper).await;
    assert_eq!(reply.error().as_deref(), Some("57014"), "{reply:?}");
}
