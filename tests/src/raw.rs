//! Protocol v3 by hand, for tests that need exact control of the messages: malformed input,
//! and several Parse/Bind/Execute under one Sync (pipelines). Shared by `e2e/bad_input.rs` and
//! `e2e/pipeline.rs`.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{Backend, STATEMENT_TIMEOUT};

/// A backend message: its type byte and body.
#[derive(Debug)]
pub struct Message {
    /// The message type byte.
    pub tag: u8,
    /// The body after the length.
    pub body: Vec<u8>,
}

impl Message {
    /// The SQLSTATE of an ErrorResponse (field `C`).
    pub fn sqlstate(&self) -> Option<String> {
        if self.tag != b'E' {
            return None;
        }
        let mut fields = self.body.split(|b| *b == 0);
        fields.find(|f| f.first() == Some(&b'C')).map(|f| String::from_utf8_lossy(&f[1..]).into())
    }
}

/// What the server did in response.
#[derive(Debug)]
pub struct Reply {
    /// Every message received, in order.
    pub messages: Vec<Message>,
    /// The server closed the connection.
    pub closed: bool,
}

impl Reply {
    /// The SQLSTATE of the first ErrorResponse.
    pub fn error(&self) -> Option<String> {
        self.messages.iter().find_map(Message::sqlstate)
    }

    /// An ErrorResponse arrived, or the server closed the connection.
    pub fn rejected(&self) -> bool {
        self.error().is_some() || self.closed
    }
}

/// A StartupMessage for user and database `postgres`, protocol 3.0.
pub fn startup_message() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes()); // protocol 3.0
    for (k, v) in [("user", "postgres"), ("database", "postgres")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    msg
}

/// A frontend message: tag, length (including itself), body.
pub fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut msg = vec![tag];
    msg.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    msg.extend_from_slice(body);
    msg
}

/// `s` as a NUL-terminated string.
pub fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// Reads messages until one with type `tag` arrives (e.g. `b'C'` after a Flush, when no
/// ReadyForQuery comes); fails on timeout or EOF.
pub async fn read_until(stream: &mut TcpStream, tag: u8) -> Reply {
    let mut messages = Vec::new();
    let read = async {
        loop {
            let mut header = [0u8; 5];
            stream.read_exact(&mut header).await.expect("connection closed");
            let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            stream.read_exact(&mut body).await.expect("connection closed");
            messages.push(Message { tag: header[0], body });
            if header[0] == tag {
                return;
            }
        }
    };
    if tokio::time::timeout(STATEMENT_TIMEOUT, read).await.is_err() {
        panic!("no {:?} within {STATEMENT_TIMEOUT:?}; got {messages:?}", tag as char);
    }
    Reply { messages, closed: false }
}

/// Reads messages until ReadyForQuery (after `skip_ready` of them have passed), EOF, or an
/// error on the socket; fails on timeout.
pub async fn read_reply(stream: &mut TcpStream, mut skip_ready: usize) -> Reply {
    let mut messages = Vec::new();
    let read = async {
        loop {
            let mut header = [0u8; 5];
            if stream.read_exact(&mut header).await.is_err() {
                return true;
            }
            let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            if stream.read_exact(&mut body).await.is_err() {
                return true;
            }
            let tag = header[0];
            messages.push(Message { tag, body });
            if tag == b'Z' {
                if skip_ready == 0 {
                    return false;
                }
                skip_ready -= 1;
            }
        }
    };
    let closed = match tokio::time::timeout(STATEMENT_TIMEOUT, read).await {
        Ok(closed) => closed,
        Err(_) => panic!("no reply within {STATEMENT_TIMEOUT:?}; got {messages:?}"),
    };
    Reply { messages, closed }
}

/// A raw connection that has completed startup (trust authentication).
pub async fn raw_session(backend: &Backend) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", backend.port())).await.expect("connect");
    stream.write_all(&startup_message()).await.expect("send startup");
    let reply = read_reply(&mut stream, 0).await;
    assert!(
        reply.error().is_none() && !reply.closed,
        "startup failed on {}: {reply:?}",
        backend.name()
    );
    stream
}

impl Reply {
    /// The CommandComplete tags, in order.
    pub fn tags(&self) -> Vec<String> {
        self.strings(b'C')
    }

    /// The transaction status of the last ReadyForQuery (`I`, `T` or `E`).
    pub fn status(&self) -> Option<char> {
        self.messages.iter().rev().find(|m| m.tag == b'Z').map(|m| m.body[0] as char)
    }

    /// The SQLSTATEs of the NoticeResponses (warnings included), in order.
    pub fn notices(&self) -> Vec<String> {
        self.messages
            .iter()
            .filter(|m| m.tag == b'N')
            .filter_map(|m| {
                m.body
                    .split(|b| *b == 0)
                    .find(|f| f.first() == Some(&b'C'))
                    .map(|f| String::from_utf8_lossy(&f[1..]).into())
            })
            .collect()
    }

    fn strings(&self, tag: u8) -> Vec<String> {
        self.messages
            .iter()
            .filter(|m| m.tag == tag)
            .map(|m| String::from_utf8_lossy(m.body.strip_suffix(&[0]).unwrap_or(&m.body)).into())
            .collect()
    }
}

/// Parse (unnamed statement, no declared parameter types) + Bind (unnamed portal, no
/// parameters, text results) + Execute (all rows) of `sql`: one statement of a pipeline.
pub fn execute_unnamed(sql: &str) -> Vec<u8> {
    let mut out = message(b'P', &[cstr(""), cstr(sql), vec![0, 0]].concat());
    out.extend(message(b'B', &[cstr(""), cstr(""), vec![0, 0, 0, 0, 0, 0]].concat()));
    out.extend(message(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat()));
    out
}

/// Sync.
pub fn sync() -> Vec<u8> {
    message(b'S', b"")
}

/// Flush: the server sends what it has, without ending the implicit transaction.
pub fn flush() -> Vec<u8> {
    message(b'H', b"")
}

/// A simple Query.
pub fn query(sql: &str) -> Vec<u8> {
    message(b'Q', &cstr(sql))
}
