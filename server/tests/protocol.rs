//! Protocol-level tests: the server runs in-process on 127.0.0.1:0 and is driven by
//! tokio-postgres and by a raw message-level client (for exact message sequences and
//! pipelines). These hold whatever the SQL layer returns for a statement; SQL-level behaviour is
//! tested in the `tests` crate.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use server::Server;
use sql::Database;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running in-process server.
struct TestServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<io::Result<()>>,
}

impl TestServer {
    async fn start() -> TestServer {
        let db = Database::in_memory(1);
        let server = Server::bind("127.0.0.1:0", db, 2).await.expect("bind");
        let addr = server.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        TestServer { addr, stop: Some(stop), task }
    }

    async fn connect(
        &self,
    ) -> (
        tokio_postgres::Client,
        tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>,
    ) {
        let config = format!(
            "host={} port={} user=tester dbname=aspen application_name=protocol_test",
            self.addr.ip(),
            self.addr.port()
        );
        tokio_postgres::connect(&config, tokio_postgres::NoTls).await.expect("connect")
    }

    async fn client(&self) -> tokio_postgres::Client {
        let (client, connection) = self.connect().await;
        tokio::spawn(connection);
        client
    }

    async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("server stops within 10 s");
        result.expect("server task").expect("server run");
    }
}

/// A raw protocol-3.0 client: builds frontend messages by hand and reads backend messages as
/// `(type byte, body)`.
struct Raw {
    stream: TcpStream,
    out: Vec<u8>,
}

type Msg = (u8, Vec<u8>);

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

impl Raw {
    async fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).await.expect("tcp connect");
        let mut raw = Raw { stream, out: Vec::new() };
        raw.startup().await;
        raw
    }

    async fn startup(&mut self) -> Vec<Msg> {
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes());
        for (k, v) in [("user", "raw"), ("database", "aspen")] {
            cstr(&mut body, k);
            cstr(&mut body, v);
        }
        body.push(0);
        let mut packet = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        packet.extend_from_slice(&body);
        self.stream.write_all(&packet).await.expect("send startup");
        let msgs = self.until_ready().await;
        assert_eq!(msgs.first().map(|m| m.0), Some(b'R'), "AuthenticationOk first");
        msgs
    }

    fn msg(&mut self, kind: u8, body: &[u8]) {
        self.out.push(kind);
        self.out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        self.out.extend_from_slice(body);
    }

    fn query(&mut self, sql: &str) {
        let mut b = Vec::new();
        cstr(&mut b, sql);
        self.msg(b'Q', &b);
    }

    fn parse(&mut self, name: &str, sql: &str, oids: &[u32]) {
        let mut b = Vec::new();
        cstr(&mut b, name);
        cstr(&mut b, sql);
        b.extend_from_slice(&(oids.len() as i16).to_be_bytes());
        for oid in oids {
            b.extend_from_slice(&oid.to_be_bytes());
        }
        self.msg(b'P', &b);
    }

    fn bind(&mut self, portal: &str, stmt: &str, params: &[Option<&[u8]>]) {
        let mut b = Vec::new();
        cstr(&mut b, portal);
        cstr(&mut b, stmt);
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for p in params {
            match p {
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v);
                }
            }
        }
        b.extend_from_slice(&0i16.to_be_bytes());
        self.msg(b'B', &b);
    }

    fn describe(&mut self, kind: u8, name: &str) {
        let mut b = vec![kind];
        cstr(&mut b, name);
        self.msg(b'D', &b);
    }

    fn execute(&mut self, portal: &str, max_rows: i32) {
        let mut b = Vec::new();
        cstr(&mut b, portal);
        b.extend_from_slice(&max_rows.to_be_bytes());
        self.msg(b'E', &b);
    }

    fn sync(&mut self) {
        self.msg(b'S', &[]);
    }

    async fn flush(&mut self) {
        let out = std::mem::take(&mut self.out);
        self.stream.write_all(&out).await.expect("send");
    }

    /// The next message, or `None` when the server closed the connection.
    async fn read(&mut self) -> Option<Msg> {
        let read = async {
            let kind = self.stream.read_u8().await.ok()?;
            let len = self.stream.read_i32().await.ok()?;
            let mut body = vec![0; (len - 4).max(0) as usize];
            self.stream.read_exact(&mut body).await.ok()?;
            Some((kind, body))
        };
        tokio::time::timeout(Duration::from_secs(10), read).await.expect("no reply within 10 s")
    }

    /// Sends what is buffered and reads through the next ReadyForQuery.
    async fn until_ready(&mut self) -> Vec<Msg> {
        self.flush().await;
        let mut msgs = Vec::new();
        loop {
            let msg = self.read().await.expect("connection closed before ReadyForQuery");
            let done = msg.0 == b'Z';
            msgs.push(msg);
            if done {
                return msgs;
            }
        }
    }
}

fn kinds(msgs: &[Msg]) -> String {
    msgs.iter().map(|m| m.0 as char).collect()
}

/// The field `code` of an ErrorResponse or NoticeResponse body.
fn field(body: &[u8], code: u8) -> Option<String> {
    let mut rest = body;
    while let Some((&c, tail)) = rest.split_first() {
        if c == 0 {
            break;
        }
        let end = tail.iter().position(|&b| b == 0)?;
        if c == code {
            return Some(String::from_utf8_lossy(&tail[..end]).into_owned());
        }
        rest = &tail[end + 1..];
    }
    None
}

fn ready_status(msgs: &[Msg]) -> char {
    let last = msgs.last().expect("messages");
    assert_eq!(last.0, b'Z');
    last.1[0] as char
}

#[tokio::test]
async fn startup_reports_postgres_15_parameters() {
    let server = TestServer::start().await;
    let (client, connection) = server.connect().await;
    let version = connection.parameter("server_version").expect("server_version").to_owned();
    assert!(version.starts_with("15"), "{version}");
    assert_eq!(connection.parameter("client_encoding"), Some("UTF8"));
    assert_eq!(connection.parameter("DateStyle"), Some("ISO, MDY"));
    assert_eq!(connection.parameter("integer_datetimes"), Some("on"));
    assert_eq!(connection.parameter("standard_conforming_strings"), Some("on"));
    assert_eq!(connection.parameter("TimeZone"), Some("UTC"));
    assert_eq!(connection.parameter("application_name"), Some("protocol_test"));
    assert_eq!(connection.parameter("session_authorization"), Some("tester"));
    assert_eq!(connection.parameter("server_encoding"), Some("UTF8"));
    drop(client);
    drop(connection);
    server.shutdown().await;
}

#[tokio::test]
async fn backend_key_data_is_sent_and_cancel_requests_are_harmless() {
    let server = TestServer::start().await;
    let mut raw = Raw { stream: TcpStream::connect(server.addr).await.unwrap(), out: Vec::new() };
    let msgs = raw.startup().await;
    let key = msgs.iter().find(|m| m.0 == b'K').expect("BackendKeyData");
    assert_eq!(key.1.len(), 8);
    assert_eq!(ready_status(&msgs), 'I');

    // CancelRequest on its own connection: the server closes that connection.
    let mut cancel = TcpStream::connect(server.addr).await.unwrap();
    let mut packet = 16i32.to_be_bytes().to_vec();
    packet.extend_from_slice(&80877102i32.to_be_bytes());
    packet.extend_from_slice(&key.1);
    cancel.write_all(&packet).await.unwrap();
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(Duration::from_secs(10), cancel.read(&mut buf)).await.unwrap();
    assert!(matches!(n, Ok(0) | Err(_)), "cancel connection is closed");

    raw.query("SELECT 1");
    let msgs = raw.until_ready().await;
    assert_eq!(ready_status(&msgs), 'I');
    server.shutdown().await;
}

#[tokio::test]
async fn ssl_request_is_refused_with_n() {
    let server = TestServer::start().await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let mut packet = 8i32.to_be_bytes().to_vec();
    packet.extend_from_slice(&80877103i32.to_be_bytes());
    stream.write_all(&packet).await.unwrap();
    assert_eq!(stream.read_u8().await.unwrap(), b'N');
    let mut raw = Raw { stream, out: Vec::new() };
    raw.startup().await;
    server.shutdown().await;
}

#[tokio::test]
async fn unsupported_statement_is_0a000_and_the_connection_survives() {
    let server = TestServer::start().await;
    let client = server.client().await;
    // A statement Aspen will never support.
    let sql = "LISTEN aspen_channel";
    for _ in 0..2 {
        let err = client.simple_query(sql).await.expect_err("unsupported");
        assert_eq!(
            err.code(),
            Some(&tokio_postgres::error::SqlState::FEATURE_NOT_SUPPORTED),
            "{err:?}"
        );
        let err = client.execute(sql, &[]).await.expect_err("unsupported (extended)");
        assert_eq!(
            err.code(),
            Some(&tokio_postgres::error::SqlState::FEATURE_NOT_SUPPORTED),
            "{err:?}"
        );
    }
    assert!(!client.is_closed());
    server.shutdown().await;
}

#[tokio::test]
async fn simple_query_stops_at_the_first_error() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    raw.query("SELECT 1; SELECT * FROM no_such_table; SELECT 3");
    let msgs = raw.until_ready().await;
    let k = kinds(&msgs);
    assert_eq!(k.matches('E').count(), 1, "{k}");
    assert!(k.ends_with("EZ"), "the error is the last result: {k}");
    assert!(k.matches('C').count() <= 1, "nothing runs after the error: {k}");
    assert_eq!(ready_status(&msgs), 'I');
    let error = &msgs[msgs.len() - 2].1;
    assert!(
        field(error, b'C').is_some()
            && field(error, b'M').is_some()
            && field(error, b'S').is_some()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn empty_query_gets_empty_query_response() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    for sql in ["", " ;; "] {
        raw.query(sql);
        assert_eq!(kinds(&raw.until_ready().await), "IZ");
    }
    // Extended: an empty Parse binds and executes as an empty query.
    raw.parse("", "", &[]);
    raw.bind("", "", &[]);
    raw.describe(b'P', "");
    raw.execute("", 0);
    raw.sync();
    assert_eq!(kinds(&raw.until_ready().await), "12nIZ");
    server.shutdown().await;
}

#[tokio::test]
async fn extended_error_skips_to_sync_and_the_next_batch_runs() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    // An error in Parse: Bind, Describe and Execute are skipped; Sync answers ReadyForQuery.
    raw.parse("", "SELEKT 1", &[]);
    raw.bind("", "", &[]);
    raw.describe(b'P', "");
    raw.execute("", 0);
    raw.sync();
    // A second batch under its own Sync is processed normally.
    raw.parse("", "SELEKT 2", &[]);
    raw.sync();
    let first = raw.until_ready().await;
    assert_eq!(kinds(&first), "EZ");
    assert_eq!(ready_status(&first), 'I');
    let second = raw.until_ready().await;
    assert_eq!(kinds(&second), "EZ");
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_statement_and_portal_use_postgres_errors() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    raw.bind("", "nope", &[]);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "EZ");
    assert_eq!(field(&msgs[0].1, b'C').as_deref(), Some("26000"));
    assert_eq!(
        field(&msgs[0].1, b'M').as_deref(),
        Some("prepared statement \"nope\" does not exist")
    );

    raw.execute("p1", 0);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(field(&msgs[0].1, b'C').as_deref(), Some("34000"));

    raw.describe(b'S', "");
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(
        field(&msgs[0].1, b'M').as_deref(),
        Some("unnamed prepared statement does not exist")
    );

    // Close of something that does not exist is fine.
    let mut b = vec![b'S'];
    cstr(&mut b, "nope");
    raw.msg(b'C', &b);
    raw.sync();
    assert_eq!(kinds(&raw.until_ready().await), "3Z");
    server.shutdown().await;
}

#[tokio::test]
async fn garbage_closes_only_that_connection() {
    let server = TestServer::start().await;
    let mut bad = Raw::connect(server.addr).await;
    // An unknown message type with a huge length.
    bad.out.extend_from_slice(&[0xEE, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3]);
    bad.flush().await;
    // The server answers with at most an error, then closes.
    let mut closed = false;
    for _ in 0..4 {
        if bad.read().await.is_none() {
            closed = true;
            break;
        }
    }
    assert!(closed, "the violating connection is closed");

    // A truncated startup packet on another connection.
    let mut half = TcpStream::connect(server.addr).await.unwrap();
    half.write_all(&[0, 0, 0, 3]).await.unwrap();
    drop(half);

    let mut good = Raw::connect(server.addr).await;
    good.query("SELECT 1");
    assert_eq!(ready_status(&good.until_ready().await), 'I');
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_open_sessions() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    let addr = server.addr;
    server.shutdown().await;
    assert!(raw.read().await.is_none(), "session closed by shutdown");
    assert!(TcpStream::connect(addr).await.is_err(), "no longer accepting");
}

#[test]
fn binary_prints_its_address_and_exits_0_on_sigterm() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_aspen"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn aspen");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr =
        line.trim().strip_prefix("aspen listening on ").unwrap_or_else(|| panic!("{line:?}"));
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(port, 0);
    std::net::TcpStream::connect(addr).expect("server accepts");
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Runs `sql` through the simple protocol and expects success.
async fn simple(raw: &mut Raw, sql: &str) -> Vec<Msg> {
    raw.query(sql);
    let msgs = raw.until_ready().await;
    assert!(
        !kinds(&msgs).contains('E'),
        "{sql}: {:?}",
        msgs.iter().find(|m| m.0 == b'E').map(|m| field(&m.1, b'M'))
    );
    msgs
}

fn tags(msgs: &[Msg]) -> Vec<String> {
    msgs.iter()
        .filter(|m| m.0 == b'C')
        .map(|m| String::from_utf8_lossy(&m.1[..m.1.len() - 1]).into_owned())
        .collect()
}

#[tokio::test]
async fn simple_query_sends_every_result_before_the_error() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    raw.query("SELECT 1; SELECT * FROM no_such_table; SELECT 3");
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "TDCEZ");
    assert_eq!(field(&msgs[3].1, b'C').as_deref(), Some("42P01"));
    assert_eq!(field(&msgs[3].1, b'P').as_deref(), Some("25"));
    server.shutdown().await;
}

#[tokio::test]
async fn pipelined_begin_dml_max_rows_and_error_skip_to_sync() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    simple(&mut raw, "CREATE TABLE kv (k int PRIMARY KEY, v int)").await;

    // BEGIN pipelined in front of the first statement, one Sync (pgJDBC's pattern); an INSERT
    // executed with maxRows=1 still reports its full count.
    raw.parse("", "BEGIN", &[]);
    raw.bind("", "", &[]);
    raw.execute("", 0);
    raw.parse("ins", "INSERT INTO kv VALUES ($1, 10), ($2, 20), ($3, 30)", &[23, 23, 23]);
    raw.bind("", "ins", &[Some(b"1"), Some(b"2"), Some(b"3")]);
    raw.describe(b'P', "");
    raw.execute("", 1);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "12C12nCZ");
    assert_eq!(tags(&msgs), ["BEGIN", "INSERT 0 3"]);
    assert_eq!(ready_status(&msgs), 'T');

    // A SELECT with maxRows=2 suspends; the next Execute finishes it.
    raw.parse("sel", "SELECT k FROM kv ORDER BY k", &[]);
    raw.bind("p", "sel", &[]);
    raw.execute("p", 2);
    raw.execute("p", 0);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "12DDsDCZ");
    assert_eq!(tags(&msgs), ["SELECT 1"]);

    // An error mid-pipeline: the rest is skipped up to Sync, and the block is failed (E).
    raw.parse("", "UPDATE kv SET v = v / 0 WHERE k = 1", &[]);
    raw.bind("", "", &[]);
    raw.execute("", 1);
    raw.bind("", "ins", &[Some(b"4"), Some(b"5"), Some(b"6")]);
    raw.execute("", 1);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "12EZ");
    assert_eq!(field(&msgs[2].1, b'C').as_deref(), Some("22012"));
    assert_eq!(ready_status(&msgs), 'E');

    // COMMIT of a failed block reports ROLLBACK and status I.
    raw.parse("", "COMMIT", &[]);
    raw.bind("", "", &[]);
    raw.execute("", 1);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(tags(&msgs), ["ROLLBACK"]);
    assert_eq!(ready_status(&msgs), 'I');

    let msgs = simple(&mut raw, "SELECT count(*) FROM kv").await;
    assert_eq!(&msgs[1].1[6..], b"0", "the failed block's inserts are gone");
    server.shutdown().await;
}

#[tokio::test]
async fn bind_checks_the_parameter_count() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    raw.parse("", "SELECT $1::int + $2::int", &[]);
    raw.bind("", "", &[Some(b"1")]);
    raw.execute("", 0);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "1EZ");
    assert_eq!(field(&msgs[1].1, b'C').as_deref(), Some("08P01"));
    assert_eq!(
        field(&msgs[1].1, b'M').as_deref(),
        Some("bind message supplies 1 parameters, but prepared statement \"\" requires 2")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn tokio_postgres_binary_round_trip() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE acct (id bigint PRIMARY KEY, name varchar(20), bal float8)")
        .await
        .unwrap();
    let insert = client.prepare("INSERT INTO acct VALUES ($1, $2, $3)").await.unwrap();
    for (id, name, bal) in [(1i64, "ann", 10.5f64), (2, "bob", -3.25)] {
        assert_eq!(client.execute(&insert, &[&id, &name, &bal]).await.unwrap(), 1);
    }
    let rows = client
        .query("SELECT id, name, bal FROM acct WHERE id >= $1 ORDER BY id", &[&1i64])
        .await
        .unwrap();
    let got: Vec<(i64, String, f64)> =
        rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
    assert_eq!(got, [(1, "ann".to_owned(), 10.5), (2, "bob".to_owned(), -3.25)]);
    assert_eq!(client.execute("UPDATE acct SET bal = bal + 1", &[]).await.unwrap(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn notices_come_before_and_parameter_status_after_the_result() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    let msgs = simple(&mut raw, "DROP TABLE IF EXISTS no_such_table").await;
    assert_eq!(kinds(&msgs), "NCZ");
    assert_eq!(field(&msgs[0].1, b'S').as_deref(), Some("NOTICE"));
    let msgs = simple(&mut raw, "SET application_name = 'renamed'").await;
    assert_eq!(kinds(&msgs), "CSZ");
    assert_eq!(msgs[1].1, b"application_name\0renamed\0");
    server.shutdown().await;
}

/// The `aspen` binary on a free port, killed on drop.
struct Binary {
    child: std::process::Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Binary {
    fn start() -> Binary {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};

        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_aspen"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn aspen");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("aspen listening on ")
            .unwrap_or_else(|| panic!("{line:?}"))
            .to_owned();
        Binary { child, addr, _dir: dir }
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Binding recurses once per operator: the binary's worker threads have stacks large enough for
/// thousands of them.
#[tokio::test]
async fn binary_runs_statements_with_thousands_of_operators() {
    let mut binary = Binary::start();
    let (host, port) = binary.addr.rsplit_once(':').unwrap();
    let config = format!("host={host} port={port} user=tester dbname=aspen");
    let (client, connection) =
        tokio_postgres::connect(&config, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);

    let sql = format!("SELECT 1{}", " + 1".repeat(2900));
    let rows = client.simple_query(&sql).await.expect("2900 additions");
    let value = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
        _ => None,
    });
    assert_eq!(value.as_deref(), Some("2901"));
    let row = client.query_one(sql.as_str(), &[]).await.expect("2900 additions, extended");
    assert_eq!(row.get::<_, i32>(0), 2901);

    let sql = format!("SELECT {}true", "NOT ".repeat(50));
    let row = client.query_one(sql.as_str(), &[]).await.expect("50 NOTs");
    assert!(row.get::<_, bool>(0));
    let sql = format!("SELECT {}true", "NOT ".repeat(51));
    let row = client.query_one(sql.as_str(), &[]).await.expect("51 NOTs");
    assert!(!row.get::<_, bool>(0));
    assert!(binary.running());
}

/// A Query with its raw body bytes (no terminating NUL added).
fn raw_query(raw: &mut Raw, body: &[u8]) {
    raw.msg(b'Q', body);
}

#[tokio::test]
async fn invalid_utf8_is_22021_and_the_session_continues() {
    let server = TestServer::start().await;
    let mut raw = Raw::connect(server.addr).await;
    raw_query(&mut raw, b"SELECT '\xff\xfe\xc3'\0");
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "EZ");
    assert_eq!(field(&msgs[0].1, b'S').as_deref(), Some("ERROR"));
    assert_eq!(field(&msgs[0].1, b'C').as_deref(), Some("22021"));
    assert_eq!(
        field(&msgs[0].1, b'M').as_deref(),
        Some("invalid byte sequence for encoding \"UTF8\": 0xff")
    );
    assert_eq!(ready_status(&msgs), 'I');
    // Valid multi-byte text is untouched.
    let msgs = simple(&mut raw, "SELECT 'é😀'").await;
    let row = msgs.iter().find(|m| m.0 == b'D').expect("DataRow");
    assert!(row.1.ends_with("é😀".as_bytes()));

    // In a Parse: ERROR, then everything up to Sync is skipped; the next batch runs.
    let mut parse = b"\0SELECT '\xc3\x28'\0".to_vec();
    parse.extend_from_slice(&0u16.to_be_bytes());
    raw.msg(b'P', &parse);
    raw.bind("", "", &[]);
    raw.execute("", 0);
    raw.sync();
    let msgs = raw.until_ready().await;
    assert_eq!(kinds(&msgs), "EZ");
    assert_eq!(field(&msgs[0].1, b'C').as_deref(), Some("22021"));
    assert_eq!(
        field(&msgs[0].1, b'M').as_deref(),
        Some("invalid byte sequence for encoding \"UTF8\": 0xc3 0x28")
    );
    raw.parse("", "SELECT 1", &[]);
    raw.bind("", "", &[]);
    raw.execute("", 0);
    raw.sync();
    assert_eq!(kinds(&raw.until_ready().await), "12DCZ");
    server.shutdown().await;
}

/// Reads until the server closes; returns what it sent.
async fn until_closed(raw: &mut Raw) -> Vec<Msg> {
    let mut msgs = Vec::new();
    while let Some(msg) = raw.read().await {
        msgs.push(msg);
    }
    msgs
}

#[tokio::test]
async fn framing_violations_are_fatal_08p01_after_earlier_messages() {
    let server = TestServer::start().await;
    let mut s = Vec::new();
    cstr(&mut s, "SELECT 1");
    let cases: [(&str, Vec<u8>, &str); 7] = [
        ("length 2", [b"Q\0\0\0\x02".as_slice(), &s].concat(), "invalid message length"),
        ("negative length", b"S\xff\xff\xff\xf0".to_vec(), "invalid message length"),
        ("no NUL", b"Q\0\0\0\x0cSELECT 1".to_vec(), "invalid string in message"),
        ("text after the NUL", b"Q\0\0\0\x0eSELECT 1\0x".to_vec(), "invalid message format"),
        ("Sync with a body", b"S\0\0\0\x08junk".to_vec(), "invalid message format"),
        // pgwire's Execute decoder would read past the buffer (and panic).
        ("empty Execute", b"E\0\0\0\x04".to_vec(), "invalid message format"),
        // A Bind whose parameter claims more bytes than the message has.
        (
            "Bind parameter past the end",
            b"B\0\0\0\x0e\0\0\0\0\0\x01\0\0\0\x40".to_vec(),
            "invalid message format",
        ),
    ];
    for (what, bad, message) in cases {
        let mut raw = Raw::connect(server.addr).await;
        // A good Query in the same packet runs first.
        raw.query("SELECT 1");
        raw.out.extend_from_slice(&bad);
        raw.flush().await;
        let msgs = until_closed(&mut raw).await;
        assert_eq!(kinds(&msgs), "TDCZE", "{what}");
        let error = &msgs[4].1;
        assert_eq!(field(error, b'S').as_deref(), Some("FATAL"), "{what}");
        assert_eq!(field(error, b'C').as_deref(), Some("08P01"), "{what}");
        assert_eq!(field(error, b'M').as_deref(), Some(message), "{what}");
    }
    let mut good = Raw::connect(server.addr).await;
    simple(&mut good, "SELECT 1").await;
    server.shutdown().await;
}
