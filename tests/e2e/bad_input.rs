//! Hostile and broken clients: each case sends something wrong — a malformed protocol message,
//! invalid UTF-8, an oversized or deeply nested query, a Bind with the wrong parameter count or
//! bytes — and expects an error (or, for protocol violations, that connection closing) within
//! a timeout. After every case a second, healthy connection must still work and the server
//! process must still be running.
//!
//! The raw cases speak protocol v3 by hand over `tokio::net::TcpStream`.
//! `TEST_AGAINST_PG=1` runs them against PostgreSQL 15.

use std::time::Duration;

use tests::raw::{cstr, message, raw_session, read_reply, startup_message, Reply};
use tests::{timed, Backend};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Sends `bytes` on a fresh, not yet started connection and returns the reply.
async fn raw_before_startup(backend: &Backend, bytes: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", backend.port())).await.expect("connect");
    // The server may close while we write; that is an acceptable reaction.
    let _ = stream.write_all(bytes).await;
    read_reply(&mut stream, 0).await
}

/// A new connection can still run a query, and the server process is alive.
async fn assert_healthy(backend: &mut Backend, after: &str) {
    let client = backend.connect().await;
    let row = timed("SELECT 1", client.query_one("SELECT 1 + 1", &[]))
        .await
        .unwrap_or_else(|e| panic!("server unhealthy after {after}: {e:?}"));
    assert_eq!(row.get::<_, i32>(0), 2, "after {after}");
    if let Backend::Aspen(server) = backend {
        assert!(server.is_running(), "aspen exited after {after}");
    }
}

fn start() -> Option<Backend> {
    Backend::from_env()
}

/// [`start`] for the cases that are Aspen's own (`None` against PostgreSQL).
fn start_aspen() -> Option<Backend> {
    start().filter(|b| matches!(b, Backend::Aspen(_)))
}

#[tokio::test]
async fn startup_with_bad_length_is_rejected() {
    let Some(mut b) = start() else { return };
    // Lengths smaller than the header itself, and absurdly large.
    for len in [0u32, 3, 7] {
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(&196608u32.to_be_bytes());
        let reply = raw_before_startup(&b, &bytes).await;
        assert!(reply.rejected(), "length {len}: {reply:?}");
        assert_healthy(&mut b, &format!("startup length {len}")).await;
    }
    let mut bytes = 0x7fff_fff0u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&196608u32.to_be_bytes());
    let reply = raw_before_startup(&b, &bytes).await;
    assert!(reply.rejected(), "huge startup length: {reply:?}");
    assert_healthy(&mut b, "huge startup length").await;
}

#[tokio::test]
async fn startup_with_unknown_protocol_version_is_rejected() {
    let Some(mut b) = start() else { return };
    let mut bytes = 16u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&0x0009_0000u32.to_be_bytes());
    bytes.extend_from_slice(b"user\0pg\0");
    let reply = raw_before_startup(&b, &bytes).await;
    assert!(reply.rejected(), "{reply:?}");
    assert_healthy(&mut b, "protocol 9.0").await;
}

#[tokio::test]
async fn truncated_startup_does_not_block_others() {
    let Some(mut b) = start() else { return };
    let full = startup_message();
    // Half a startup message, then the client goes silent but keeps the socket open.
    let mut stalled = TcpStream::connect(("127.0.0.1", b.port())).await.expect("connect");
    stalled.write_all(&full[..full.len() / 2]).await.expect("send half");
    assert_healthy(&mut b, "a stalled half startup (while it is open)").await;
    // Half a startup message, then the client closes its side.
    let mut closing = TcpStream::connect(("127.0.0.1", b.port())).await.expect("connect");
    closing.write_all(&full[..6]).await.expect("send 6 bytes");
    closing.shutdown().await.expect("shutdown");
    let reply = read_reply(&mut closing, 0).await;
    assert!(reply.closed, "{reply:?}");
    drop(stalled);
    assert_healthy(&mut b, "truncated startups").await;
}

#[tokio::test]
async fn unknown_message_type_is_rejected() {
    let Some(mut b) = start() else { return };
    let mut s = raw_session(&b).await;
    s.write_all(&message(b'y', b"")).await.expect("send");
    let reply = read_reply(&mut s, 0).await;
    assert!(reply.rejected(), "{reply:?}");
    assert_healthy(&mut b, "unknown message type").await;
}

#[tokio::test]
async fn message_with_bad_length_is_rejected() {
    let Some(mut b) = start() else { return };
    // A Query whose length field is shorter than the length field itself.
    let mut s = raw_session(&b).await;
    let mut bytes = vec![b'Q'];
    bytes.extend_from_slice(&2u32.to_be_bytes());
    bytes.extend_from_slice(b"SELECT 1\0");
    let _ = s.write_all(&bytes).await;
    let reply = read_reply(&mut s, 0).await;
    assert!(reply.rejected(), "short length: {reply:?}");
    assert_healthy(&mut b, "a message length below 4").await;

    // A Query claiming 1 GiB and sending a few bytes: the server must not wait for or
    // allocate it all before answering other clients.
    let mut s = raw_session(&b).await;
    let mut bytes = vec![b'Q'];
    bytes.extend_from_slice(&0x4000_0000u32.to_be_bytes());
    bytes.extend_from_slice(b"SELECT 1\0");
    let _ = s.write_all(&bytes).await;
    assert_healthy(&mut b, "a 1 GiB message length (while it is open)").await;
    s.shutdown().await.ok();
    let reply = read_reply(&mut s, 0).await;
    assert!(reply.rejected(), "huge length: {reply:?}");
    assert_healthy(&mut b, "a 1 GiB message length").await;

    // A Query whose body lacks the terminating NUL.
    let mut s = raw_session(&b).await;
    let _ = s.write_all(&message(b'Q', b"SELECT 1")).await;
    let reply = read_reply(&mut s, 0).await;
    assert!(reply.rejected(), "unterminated query string: {reply:?}");
    assert_healthy(&mut b, "an unterminated query string").await;
}

#[tokio::test]
async fn invalid_utf8_in_query_is_an_error() {
    let Some(mut b) = start() else { return };
    let mut s = raw_session(&b).await;
    let mut sql = b"SELECT '".to_vec();
    sql.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    sql.extend_from_slice(b"'\0");
    s.write_all(&message(b'Q', &sql)).await.expect("send");
    let reply = read_reply(&mut s, 0).await;
    assert!(reply.rejected(), "{reply:?}");
    if !reply.closed {
        // The connection survived the error: it must still work.
        s.write_all(&message(b'Q', &cstr("SELECT 1"))).await.expect("send");
        let reply = read_reply(&mut s, 0).await;
        assert!(reply.error().is_none() && reply.messages.iter().any(|m| m.tag == b'D'));
    }
    assert_healthy(&mut b, "invalid UTF-8").await;
}

#[tokio::test]
async fn oversized_query_is_handled() {
    let Some(mut b) = start() else { return };
    let client = b.connect().await;
    let payload = "x".repeat(8 << 20);
    let sql = format!("SELECT length('{payload}')");
    let result = tokio::time::timeout(Duration::from_secs(60), client.simple_query(&sql))
        .await
        .expect("an 8 MiB query got no answer");
    match result {
        // Accepting it is fine if the answer is right; rejecting it needs a SQLSTATE.
        Ok(messages) => {
            let value = messages.iter().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            });
            assert_eq!(value.as_deref(), Some("8388608"));
        }
        Err(e) => assert!(e.code().is_some() || e.is_closed(), "{e:?}"),
    }
    assert_healthy(&mut b, "an 8 MiB query").await;
}

#[tokio::test]
async fn deeply_nested_expression_is_handled() {
    let Some(mut b) = start() else { return };
    let client = b.connect().await;
    for depth in [1_000, 10_000, 100_000] {
        let sql = format!("SELECT {}1{}", "(".repeat(depth), ")".repeat(depth));
        let result = timed("nested", client.simple_query(&sql)).await;
        if let Err(e) = result {
            // PostgreSQL says 54001 (stack depth limit exceeded); any SQLSTATE will do.
            assert!(e.code().is_some(), "depth {depth}: {e:?}");
        }
        assert_healthy(&mut b, &format!("an expression nested {depth} deep")).await;
    }
    let sql = format!("SELECT 1{}", " + 1".repeat(100_000));
    if let Err(e) = timed("long chain", client.simple_query(&sql)).await {
        assert!(e.code().is_some(), "{e:?}");
    }
    assert_healthy(&mut b, "a chain of 100000 additions").await;
    let sql = format!("SELECT {}true", "NOT ".repeat(50_000));
    if let Err(e) = timed("NOT chain", client.simple_query(&sql)).await {
        assert!(e.code().is_some(), "{e:?}");
    }
    assert_healthy(&mut b, "50000 nested NOTs").await;
}

/// A join that multiplies its inputs (here a cross product of 10^10 rows) fails with 54000
/// once its result passes `sql::exec::MAX_JOIN_BYTES`, instead of taking the server's memory
/// until the kernel kills it. Aspen only: PostgreSQL spills to disk and would run for hours.
#[tokio::test]
async fn a_join_that_multiplies_its_inputs_stops_at_its_memory_limit() {
    let Some(mut b) = start_aspen() else { return };
    let client = b.connect().await;
    let sql = "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b";
    let err = tokio::time::timeout(Duration::from_secs(120), client.simple_query(sql))
        .await
        .expect("the cross product got no answer")
        .expect_err("a cross product of 10^10 rows");
    assert_eq!(err.code().map(|c| c.code()), Some("54000"), "{err:?}");
    assert_healthy(&mut b, "a join past its memory limit").await;
}

/// Parse + Bind + Execute + Sync for `SELECT $1::int + 1` with the given Bind body parts.
fn bind_sequence(param_formats: &[u16], params: &[Option<&[u8]>]) -> Vec<u8> {
    let mut parse = cstr("");
    parse.extend_from_slice(&cstr("SELECT $1::int + 1"));
    parse.extend_from_slice(&0u16.to_be_bytes());
    let mut bind = cstr("");
    bind.extend_from_slice(&cstr(""));
    bind.extend_from_slice(&(param_formats.len() as u16).to_be_bytes());
    for f in param_formats {
        bind.extend_from_slice(&f.to_be_bytes());
    }
    bind.extend_from_slice(&(params.len() as u16).to_be_bytes());
    for p in params {
        match p {
            None => bind.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(bytes) => {
                bind.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                bind.extend_from_slice(bytes);
            }
        }
    }
    bind.extend_from_slice(&0u16.to_be_bytes());
    let mut execute = cstr("");
    execute.extend_from_slice(&0u32.to_be_bytes());
    let mut out = message(b'P', &parse);
    out.extend(message(b'B', &bind));
    out.extend(message(b'E', &execute));
    out.extend(message(b'S', b""));
    out
}

#[tokio::test]
async fn bind_with_wrong_parameters_is_an_error() {
    let Some(mut b) = start() else { return };
    let mut s = raw_session(&b).await;
    // Control: one well-formed binary int4.
    s.write_all(&bind_sequence(&[1], &[Some(&41i32.to_be_bytes())])).await.expect("send");
    let reply = read_reply(&mut s, 0).await;
    assert!(reply.error().is_none(), "the control case failed: {reply:?}");
    let cases: [(&str, Vec<u8>, &[&str]); 5] = [
        ("no parameters", bind_sequence(&[], &[]), &["08P01"]),
        ("two parameters", bind_sequence(&[], &[Some(b"1"), Some(b"2")]), &["08P01"]),
        ("a 2-byte binary int4", bind_sequence(&[1], &[Some(&[0, 1])]), &["22P03", "08P01"]),
        ("a text int4 that is not a number", bind_sequence(&[0], &[Some(b"abc")]), &["22P02"]),
        ("an unknown format code", bind_sequence(&[7], &[Some(b"1")]), &["22023", "08P01"]),
    ];
    for (what, bytes, codes) in cases {
        s.write_all(&bytes).await.expect("send");
        let reply = read_reply(&mut s, 0).await;
        assert!(reply.rejected(), "{what}: {reply:?}");
        if let Some(code) = reply.error() {
            assert!(codes.contains(&code.as_str()), "{what}: SQLSTATE {code}, expected {codes:?}");
        }
        if reply.closed {
            s = raw_session(&b).await;
        }
        assert_healthy(&mut b, what).await;
    }
    // The original connection still runs a correct Bind.
    s.write_all(&bind_sequence(&[0], &[Some(b"1")])).await.expect("send");
    let reply = read_reply(&mut s, 0).await;
    assert!(reply.error().is_none(), "after bad binds: {reply:?}");
}

#[tokio::test]
async fn error_mid_pipeline_skips_to_sync() {
    let Some(mut b) = start() else { return };
    let mut s = raw_session(&b).await;
    // Bad Bind followed by a good Parse/Bind/Execute before the Sync: everything up to the Sync
    // is skipped, then the next Sync group runs normally.
    let mut bytes = bind_sequence(&[], &[]);
    bytes.truncate(bytes.len() - 5); // drop the Sync
    let good = bind_sequence(&[0], &[Some(b"1")]);
    bytes.extend_from_slice(&good);
    bytes.extend_from_slice(&good);
    s.write_all(&bytes).await.expect("send");
    let first = read_reply(&mut s, 0).await;
    assert!(first.error().is_some(), "{first:?}");
    assert!(!first.messages.iter().any(|m| m.tag == b'D'), "ran past the error: {first:?}");
    let second = read_reply(&mut s, 0).await;
    assert!(second.error().is_none() && second.messages.iter().any(|m| m.tag == b'D'));
    assert_healthy(&mut b, "an error mid-pipeline").await;
}

/// A bug that panics inside one statement (here the debug build's `aspen_debug_panic()`)
/// answers XX000 and fails that session's transaction block; the session, and the other
/// sessions its connection thread serves, go on. Aspen only.
#[tokio::test]
async fn a_statement_that_panics_costs_only_that_statement() {
    let Some(mut b) = start_aspen() else { return };
    let client = b.connect().await;
    // Sessions on every connection thread.
    let mut others = Vec::new();
    for _ in 0..3 {
        others.push(b.connect().await);
    }
    client.batch_execute("BEGIN").await.expect("BEGIN");
    let err = client.simple_query("SELECT aspen_debug_panic()").await.expect_err("a panic");
    assert_eq!(err.code().map(|c| c.code()), Some("XX000"), "{err:?}");
    let err = client.simple_query("SELECT 1").await.expect_err("the block failed");
    assert_eq!(err.code().map(|c| c.code()), Some("25P02"), "{err:?}");
    client.batch_execute("ROLLBACK").await.expect("ROLLBACK");
    // The extended protocol too, outside a block.
    let err = client.query("SELECT aspen_debug_panic()", &[]).await.expect_err("a panic");
    assert_eq!(err.code().map(|c| c.code()), Some("XX000"), "{err:?}");
    let row = client.query_one("SELECT 41 + 1", &[]).await.expect("the session goes on");
    assert_eq!(row.get::<_, i32>(0), 42);
    for other in &others {
        let row = other.query_one("SELECT 2", &[]).await.expect("another session goes on");
        assert_eq!(row.get::<_, i32>(0), 2);
    }
    assert_healthy(&mut b, "a statement that panicked").await;
}
