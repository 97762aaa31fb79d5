//! Message framing checks under pgwire's decoder.
//!
//! pgwire's decoder trusts a message's length field (a Query of length 2 is decoded anyway) and
//! decodes strings with `String::from_utf8_lossy`. [`CheckedStream`] wraps the client socket and follows
//! the message framing as the bytes pass through `poll_read`, before pgwire sees them:
//!
//! - A startup-format packet (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest) must be
//!   8 to 10000 bytes long; a regular message's length must be at least 4 (and at most 1 GiB).
//! - Query and Parse must be well formed: Query is exactly one NUL-terminated string; Parse is
//!   two strings, a parameter count and that many type OIDs. (pgwire's decoders would read past
//!   the message or panic otherwise.)
//! - The strings of Query and Parse are validated as UTF-8, incrementally across reads.
//!
//! A framing violation is a [`Violation`]: the read that finds it delivers only the bytes of the
//! messages before the bad one, and the next read fails, so pgwire decodes every earlier message
//! but never the bad one. The connection loop then sends a FATAL 08P01 ErrorResponse and closes
//! the connection.
//!
//! Invalid UTF-8 is not a violation: the message is delivered (pgwire decodes it lossily) and its
//! frame is marked; the connection loop answers it with ERROR 22021 instead of running it.
//!
//! Every frame whose header has been read is queued ([`CheckedStream::message_decoded`] pops it), so
//! the connection loop can check that pgwire's decoder consumed exactly one frame per message:
//! any disagreement is a violation too, instead of a silently desynchronised stream.
//!
//! Cost: a few branches per read, plus one `str::from_utf8` and one NUL search over the text of
//! each Query and Parse; no copies, no extra reads.

use std::collections::VecDeque;
use std::ffi::CStr;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// SSLRequest's code in a startup-format packet.
const SSL_REQUEST_CODE: u32 = 80_877_103;
/// GSSENCRequest's code.
const GSSENC_REQUEST_CODE: u32 = 80_877_104;
/// CancelRequest's code.
const CANCEL_REQUEST_CODE: u32 = 80_877_102;
/// PostgreSQL's `MAX_STARTUP_PACKET_LENGTH` (pgwire's limit too).
const MAX_STARTUP_PACKET: u32 = 10_000;
/// The largest regular message (length field) accepted: pgwire's limit for Query, Parse and Bind
/// (1 GiB − 2). pgwire's smaller per-type limits still apply to the other messages.
const MAX_MESSAGE: u32 = 0x3fff_fffe;

/// A framing violation: the connection must end with FATAL 08P01 and this message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Violation(pub &'static str);

impl Violation {
    /// PostgreSQL's message for a bad startup packet length.
    pub const STARTUP_LENGTH: Violation = Violation("invalid length of startup packet");
    /// PostgreSQL's message for a bad message length.
    pub const MESSAGE_LENGTH: Violation = Violation("invalid message length");
    /// A string not terminated within its message.
    pub const STRING: Violation = Violation("invalid string in message");
    /// A message whose contents do not match its length.
    pub const FORMAT: Violation = Violation("invalid message format");

    fn to_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self.0)
    }
}

/// One frame whose header has been read.
#[derive(Debug)]
struct Frame {
    /// Stream offset just past its last byte.
    end: u64,
    /// Set for a Query or Parse whose text is not valid UTF-8: the error message.
    invalid_utf8: Option<Box<str>>,
}

/// What follows the current message.
#[derive(Debug, Clone, Copy)]
enum Next {
    /// Another startup-format packet (after SSLRequest or GSSENCRequest, refused).
    Startup,
    /// Regular messages (after a StartupMessage).
    Message,
    /// Nothing we track (after a CancelRequest the connection ends).
    Untracked,
}

/// Where the tracker is in the stream.
#[derive(Debug)]
enum Phase {
    /// Reading a startup-format packet's length and code.
    StartupHead { got: u8, head: [u8; 8] },
    /// Reading a regular message's type byte and length.
    Head { got: u8, head: [u8; 5] },
    /// Inside a message body: `remaining` bytes to go.
    Body { remaining: u32, scan: Scan, next: Next },
    /// Not tracking any more (after a CancelRequest or a violation).
    Untracked,
}

/// What is checked inside a body.
#[derive(Debug)]
enum Scan {
    Skip,
    /// The strings of a Query (`strings` = 1) or Parse (2): `strings` still to end.
    Text {
        parse: bool,
        strings: u8,
        utf8: Utf8,
        invalid: bool,
    },
    /// Parse after its strings: the parameter type count (`got` of 2 bytes so far).
    ParseCount {
        got: u8,
        high: u8,
    },
}

/// An `AsyncRead + AsyncWrite` wrapper that checks message framing (see the module doc).
#[derive(Debug)]
pub struct CheckedStream<S> {
    inner: S,
    phase: Phase,
    /// Stream offset of the next byte read from `inner`.
    pos: u64,
    /// Bytes handed to the reader so far.
    delivered: u64,
    /// Frames whose header has been read and that the decoder has not yet produced.
    frames: VecDeque<Frame>,
    /// The violation found, once found: reads fail from then on.
    violation: Option<Violation>,
}

impl<S> CheckedStream<S> {
    /// Wraps a fresh connection: the first bytes are a startup-format packet.
    pub fn new(inner: S) -> Self {
        CheckedStream {
            inner,
            phase: Phase::StartupHead { got: 0, head: [0; 8] },
            pos: 0,
            delivered: 0,
            frames: VecDeque::new(),
            violation: None,
        }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped stream, unwrapped (to start TLS on it: the framing starts again inside).
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The framing violation that ended reading, if any.
    pub fn violation(&self) -> Option<Violation> {
        self.violation
    }

    /// Bytes handed to the reader so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The decoder produced one message and has consumed `consumed` bytes of the stream in
    /// all. Checks that this is exactly the end of the next frame, and returns the UTF-8 error
    /// of that frame if it is a Query or Parse with invalid text. A mismatch (pgwire read less
    /// or more than the frame) is a violation.
    pub fn message_decoded(&mut self, consumed: u64) -> Result<Option<Box<str>>, Violation> {
        match self.frames.pop_front() {
            Some(frame) if frame.end == consumed => Ok(frame.invalid_utf8),
            _ => {
                self.violation = Some(Violation::FORMAT);
                self.phase = Phase::Untracked;
                Err(Violation::FORMAT)
            }
        }
    }

    /// Records a violation; `Err(cut)`: only the first `cut` bytes of the chunk may be delivered.
    fn fail(&mut self, violation: Violation, cut: usize) -> Result<(), usize> {
        self.violation = Some(violation);
        self.phase = Phase::Untracked;
        Err(cut)
    }

    /// Follows the framing over `chunk`, the bytes just read. `Err(cut)` on a violation: `cut`
    /// is where the offending message starts in the chunk (0 if it started in an earlier one).
    fn track(&mut self, chunk: &[u8]) -> Result<(), usize> {
        let mut i = 0;
        let mut msg_start = 0;
        while i < chunk.len() {
            match &mut self.phase {
                Phase::Untracked => break,
                Phase::StartupHead { got, head } => {
                    if *got == 0 {
                        msg_start = i;
                    }
                    let had = usize::from(*got);
                    let take = (8 - had).min(chunk.len() - i);
                    head[had..had + take].copy_from_slice(&chunk[i..i + take]);
                    i += take;
                    *got += take as u8;
                    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
                    if *got >= 4 && !(8..=MAX_STARTUP_PACKET).contains(&len) {
                        return self.fail(Violation::STARTUP_LENGTH, msg_start);
                    }
                    if *got == 8 {
                        let code = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
                        let next = match code {
                            SSL_REQUEST_CODE | GSSENC_REQUEST_CODE => Next::Startup,
                            CANCEL_REQUEST_CODE => Next::Untracked,
                            _ => Next::Message,
                        };
                        let at = self.pos + i as u64;
                        if let Err(violation) = self.start_body(at, len - 8, Scan::Skip, next) {
                            return self.fail(violation, msg_start);
                        }
                    }
                }
                Phase::Head { got, head } => {
                    if *got == 0 {
                        msg_start = i;
                    }
                    let had = usize::from(*got);
                    let take = (5 - had).min(chunk.len() - i);
                    head[had..had + take].copy_from_slice(&chunk[i..i + take]);
                    i += take;
                    *got += take as u8;
                    if *got == 5 {
                        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
                        if !(4..=MAX_MESSAGE).contains(&len) {
                            return self.fail(Violation::MESSAGE_LENGTH, msg_start);
                        }
                        let scan = match head[0] {
                            b'Q' => Scan::Text {
                                parse: false,
                                strings: 1,
                                utf8: Utf8::default(),
                                invalid: false,
                            },
                            b'P' => Scan::Text {
                                parse: true,
                                strings: 2,
                                utf8: Utf8::default(),
                                invalid: false,
                            },
                            _ => Scan::Skip,
                        };
                        let at = self.pos + i as u64;
                        if let Err(violation) = self.start_body(at, len - 4, scan, Next::Message) {
                            return self.fail(violation, msg_start);
                        }
                    }
                }
                Phase::Body { remaining, scan, next } => {
                    let take = (*remaining as usize).min(chunk.len() - i);
                    let left = *remaining - take as u32;
                    if !matches!(scan, Scan::Skip) {
                        let frame = self.frames.back_mut();
                        if let Err(violation) = scan_body(scan, &chunk[i..i + take], left, frame) {
                            return self.fail(violation, msg_start);
                        }
                    }
                    *remaining = left;
                    i += take;
                    if left == 0 {
                        let next = *next;
                        if let Err(violation) = end_body(scan) {
                            return self.fail(violation, msg_start);
                        }
                        self.phase = next_phase(next);
                    }
                }
            }
        }
        self.pos += chunk.len() as u64;
        Ok(())
    }

    /// A header is complete at stream offset `at`: queue its frame and enter its body.
    fn start_body(
        &mut self,
        at: u64,
        remaining: u32,
        scan: Scan,
        next: Next,
    ) -> Result<(), Violation> {
        self.frames.push_back(Frame { end: at + u64::from(remaining), invalid_utf8: None });
        self.phase = if remaining == 0 {
            // An empty body: an empty Query or Parse lacks its strings.
            end_body(&scan)?;
            next_phase(next)
        } else {
            Phase::Body { remaining, scan, next }
        };
        Ok(())
    }
}

fn next_phase(next: Next) -> Phase {
    match next {
        Next::Startup => Phase::StartupHead { got: 0, head: [0; 8] },
        Next::Message => Phase::Head { got: 0, head: [0; 5] },
        Next::Untracked => Phase::Untracked,
    }
}

/// The body ended: is the scan complete?
fn end_body(scan: &Scan) -> Result<(), Violation> {
    match scan {
        Scan::Skip => Ok(()),
        Scan::Text { .. } => Err(Violation::STRING),
        Scan::ParseCount { .. } => Err(Violation::FORMAT),
    }
}

/// Scans `bytes`, the next bytes of a Query or Parse body, after which `left` bytes of the body
/// remain. Marks `frame` on invalid UTF-8.
fn scan_body(
    scan: &mut Scan,
    mut bytes: &[u8],
    left: u32,
    mut frame: Option<&mut Frame>,
) -> Result<(), Violation> {
    while !bytes.is_empty() {
        match scan {
            Scan::Skip => break,
            Scan::Text { parse, strings, utf8, invalid } => {
                let (text, ended) = match CStr::from_bytes_until_nul(bytes) {
                    Ok(s) => (s.to_bytes(), true),
                    Err(_) => (bytes, false),
                };
                if !*invalid {
                    let checked =
                        utf8.feed(text).and_then(|()| if ended { utf8.finish() } else { Ok(()) });
                    if let Err(bad) = checked {
                        *invalid = true;
                        if let Some(frame) = frame.as_deref_mut() {
                            frame.invalid_utf8 = Some(invalid_utf8_message(&bad).into());
                        }
                    }
                }
                if !ended {
                    break;
                }
                bytes = &bytes[text.len() + 1..];
                *utf8 = Utf8::default();
                *strings -= 1;
                if *strings == 0 {
                    if *parse {
                        *scan = Scan::ParseCount { got: 0, high: 0 };
                    } else {
                        // The Query's string must end its message.
                        if !bytes.is_empty() || left != 0 {
                            return Err(Violation::FORMAT);
                        }
                        *scan = Scan::Skip;
                    }
                }
            }
            Scan::ParseCount { got, high } => {
                if *got == 0 {
                    *high = bytes[0];
                    *got = 1;
                    bytes = &bytes[1..];
                } else {
                    let count = u64::from(u16::from_be_bytes([*high, bytes[0]]));
                    bytes = &bytes[1..];
                    if bytes.len() as u64 + u64::from(left) != count * 4 {
                        return Err(Violation::FORMAT);
                    }
                    *scan = Scan::Skip;
                }
            }
        }
    }
    Ok(())
}

/// PostgreSQL's message for invalid UTF-8: `bad` are the bytes of the offending sequence.
fn invalid_utf8_message(bad: &[u8]) -> String {
    let bytes: Vec<String> = bad.iter().map(|b| format!("0x{b:02x}")).collect();
    format!("invalid byte sequence for encoding \"UTF8\": {}", bytes.join(" "))
}

/// The length PostgreSQL assumes for a UTF-8 sequence from its first byte (`pg_utf_mblen`).
fn sequence_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7f => 1,
        _ if lead & 0xe0 == 0xc0 => 2,
        _ if lead & 0xf0 == 0xe0 => 3,
        _ if lead & 0xf8 == 0xf0 => 4,
        _ => 1,
    }
}

/// Incremental UTF-8 validation of one string that may arrive in pieces.
#[derive(Debug, Default, Clone, Copy)]
struct Utf8 {
    /// The bytes of the sequence in progress (`len` of them); empty between characters.
    seq: [u8; 4],
    len: u8,
    /// Continuation bytes still expected.
    need: u8,
    /// The range the next continuation byte must be in.
    low: u8,
    high: u8,
}

impl Utf8 {
    /// Checks the next bytes of the string. `Err` carries the offending bytes.
    fn feed(&mut self, mut bytes: &[u8]) -> Result<(), Vec<u8>> {
        // Finish a sequence split across pieces, byte by byte.
        while self.need > 0 {
            let Some((&b, rest)) = bytes.split_first() else { return Ok(()) };
            if !(self.low..=self.high).contains(&b) {
                // Report as many bytes as the first one announces, like PostgreSQL.
                let len = usize::from(self.len);
                let mut bad = self.seq[..len].to_vec();
                bad.extend(bytes.iter().take(sequence_len(self.seq[0]) - len));
                return Err(bad);
            }
            self.seq[usize::from(self.len)] = b;
            self.len += 1;
            self.need -= 1;
            (self.low, self.high) = (0x80, 0xbf);
            bytes = rest;
        }
        self.len = 0;
        let Err(e) = std::str::from_utf8(bytes) else { return Ok(()) };
        let tail = &bytes[e.valid_up_to()..];
        if e.error_len().is_some() {
            let n = sequence_len(tail[0]).min(tail.len());
            return Err(tail[..n].to_vec());
        }
        // A valid but incomplete sequence ends the piece: remember it.
        let total = sequence_len(tail[0]);
        self.seq[..tail.len()].copy_from_slice(tail);
        self.len = tail.len() as u8;
        self.need = (total - tail.len()) as u8;
        (self.low, self.high) = match (tail.len(), tail[0]) {
            (1, 0xe0) => (0xa0, 0xbf),
            (1, 0xed) => (0x80, 0x9f),
            (1, 0xf0) => (0x90, 0xbf),
            (1, 0xf4) => (0x80, 0x8f),
            _ => (0x80, 0xbf),
        };
        Ok(())
    }

    /// The string ended: an unfinished sequence is invalid.
    fn finish(&self) -> Result<(), Vec<u8>> {
        if self.need > 0 {
            Err(self.seq[..usize::from(self.len)].to_vec())
        } else {
            Ok(())
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for CheckedStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(violation) = this.violation {
            return Poll::Ready(Err(violation.to_io()));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let read = buf.filled().len() - before;
        match this.track(&buf.filled()[before..]) {
            Ok(()) => {
                this.delivered += read as u64;
                Poll::Ready(Ok(()))
            }
            Err(cut) => {
                buf.set_filled(before + cut);
                this.delivered += cut as u64;
                if cut == 0 {
                    // Nothing to deliver: fail now (an empty read would mean end of stream).
                    Poll::Ready(Err(this.violation.unwrap_or(Violation::FORMAT).to_io()))
                } else {
                    Poll::Ready(Ok(()))
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CheckedStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn startup() -> Vec<u8> {
        let mut body = 196_608u32.to_be_bytes().to_vec();
        body.extend_from_slice(b"user\0u\0\0");
        let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    fn message(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn parse(name: &[u8], query: &[u8], oids: &[u32]) -> Vec<u8> {
        let mut body = name.to_vec();
        body.push(0);
        body.extend_from_slice(query);
        body.push(0);
        body.extend_from_slice(&(oids.len() as u16).to_be_bytes());
        for oid in oids {
            body.extend_from_slice(&oid.to_be_bytes());
        }
        message(b'P', &body)
    }

    /// Feeds `bytes` in two chunks split at `split`; returns the stream, the bytes delivered
    /// and whether a violation was found.
    fn feed(bytes: &[u8], split: usize) -> (CheckedStream<()>, usize) {
        let mut s = CheckedStream::new(());
        let mut delivered = 0;
        for chunk in [&bytes[..split], &bytes[split..]] {
            match s.track(chunk) {
                Ok(()) => delivered += chunk.len(),
                Err(cut) => return (s, delivered + cut),
            }
        }
        (s, delivered)
    }

    /// Every frame's end and UTF-8 error, consuming them in order.
    fn frames(s: &mut CheckedStream<()>) -> Vec<(u64, Option<String>)> {
        s.frames.drain(..).map(|f| (f.end, f.invalid_utf8.map(String::from))).collect()
    }

    #[test]
    fn well_formed_stream_at_every_split() {
        let mut ssl = 8u32.to_be_bytes().to_vec();
        ssl.extend_from_slice(&SSL_REQUEST_CODE.to_be_bytes());
        let mut bytes = ssl.clone();
        bytes.extend(startup());
        bytes.extend(message(b'Q', "SELECT 'é😀€'\0".as_bytes()));
        bytes.extend(parse(b"s1", "SELECT $1 -- ü".as_bytes(), &[23, 25]));
        bytes.extend(message(b'S', b""));
        bytes.extend(message(b'Q', b"\0"));
        for split in 0..=bytes.len() {
            let (mut s, delivered) = feed(&bytes, split);
            assert_eq!((s.violation(), delivered), (None, bytes.len()), "split {split}");
            let got = frames(&mut s);
            assert_eq!(got.len(), 6);
            assert_eq!(got[0].0, 8);
            assert_eq!(got.last().unwrap().0, bytes.len() as u64);
            assert!(got.iter().all(|(_, bad)| bad.is_none()), "split {split}: {got:?}");
        }
    }

    #[test]
    fn invalid_utf8_marks_the_frame() {
        let cases: [(&[u8], &str); 7] = [
            (b"SELECT '\xff\xfe\xc3'", "0xff"),
            (b"SELECT '\xc3'", "0xc3 0x27"),
            (b"SELECT '\xed\xa0\x80'", "0xed 0xa0 0x80"),
            (b"SELECT '\xc0\xaf'", "0xc0 0xaf"),
            (b"SELECT '\xf4\x90\x80\x80'", "0xf4 0x90 0x80 0x80"),
            (b"SELECT '\xe2\x82", "0xe2 0x82"),
            (b"\x80", "0x80"),
        ];
        for (sql, bad) in cases {
            let mut q = sql.to_vec();
            q.push(0);
            let mut bytes = startup();
            let start = bytes.len() as u64;
            bytes.extend(message(b'Q', &q));
            bytes.extend(message(b'Q', b"SELECT 1\0"));
            let expected = format!("invalid byte sequence for encoding \"UTF8\": {bad}");
            for split in 0..=bytes.len() {
                let (mut s, delivered) = feed(&bytes, split);
                assert_eq!((s.violation(), delivered), (None, bytes.len()));
                let got = frames(&mut s);
                assert_eq!(got[1].0, start + 5 + q.len() as u64);
                let message = got[1].1.clone().expect("marked");
                // A split inside the bad sequence may shorten the list of bytes reported.
                if split == 0 {
                    assert_eq!(message, expected, "{sql:?}");
                } else {
                    assert!(expected.starts_with(&message[..message.len().min(47)]), "{message}");
                }
                assert_eq!(got[2].1, None);
            }
        }
        // In a Parse: the statement name and the query are both checked.
        for (name, query) in [(&b"\xff"[..], &b"SELECT 1"[..]), (b"s", b"SELECT '\xc3\x28'")] {
            let mut bytes = startup();
            bytes.extend(parse(name, query, &[]));
            let (mut s, _) = feed(&bytes, bytes.len());
            assert!(frames(&mut s)[1].1.is_some());
        }
    }

    #[test]
    fn bad_lengths_are_violations_before_the_message() {
        let mut bytes = startup();
        let good = bytes.len();
        bytes.extend(message(b'Q', b"SELECT 1\0"));
        let first = bytes.len();
        bytes.push(b'Q');
        bytes.extend_from_slice(&2u32.to_be_bytes());
        bytes.extend_from_slice(b"SELECT 1\0");
        for split in 0..=bytes.len() {
            let (s, delivered) = feed(&bytes, split);
            assert_eq!(s.violation(), Some(Violation::MESSAGE_LENGTH), "split {split}");
            // Never a whole bad header: at most what preceded it plus 4 of its bytes.
            assert!(delivered <= first + 4 && delivered >= first.min(split), "split {split}");
        }
        for len in [0u32, 3, 7, 10_001, 0x7fff_fff0] {
            let mut bytes = len.to_be_bytes().to_vec();
            bytes.extend_from_slice(&196_608u32.to_be_bytes());
            assert_eq!(feed(&bytes, 8).0.violation(), Some(Violation::STARTUP_LENGTH));
        }
        let mut bytes = startup();
        bytes.push(b'Q');
        bytes.extend_from_slice(&0x4000_0000u32.to_be_bytes());
        let (s, delivered) = feed(&bytes, bytes.len());
        assert_eq!((s.violation(), delivered), (Some(Violation::MESSAGE_LENGTH), good));
    }

    #[test]
    fn malformed_query_and_parse_are_violations() {
        let bad: [(Vec<u8>, Violation); 6] = [
            (message(b'Q', b"SELECT 1"), Violation::STRING),
            (message(b'Q', b""), Violation::STRING),
            (message(b'Q', b"SELECT 1\0x"), Violation::FORMAT),
            (message(b'P', b"\0SELECT 1\0"), Violation::FORMAT),
            (message(b'P', b"\0SELECT 1\0\0\x01"), Violation::FORMAT),
            (message(b'P', b"\0SELECT 1\0\0\x01\0\0\0\x17\0"), Violation::FORMAT),
        ];
        for (msg, violation) in bad {
            let mut bytes = startup();
            let good = bytes.len();
            bytes.extend(&msg);
            bytes.extend(message(b'S', b""));
            for split in 0..=bytes.len() {
                let (s, delivered) = feed(&bytes, split);
                assert_eq!(s.violation(), Some(violation), "{msg:?} split {split}");
                assert!(delivered < good + msg.len(), "{msg:?} split {split}");
            }
        }
    }

    #[test]
    fn decoder_must_consume_whole_frames() {
        let mut bytes = startup();
        bytes.extend(message(b'S', b"junk"));
        let (mut s, _) = feed(&bytes, bytes.len());
        let startup_end = startup().len() as u64;
        assert_eq!(s.message_decoded(startup_end), Ok(None));
        // pgwire's Sync ignores its body: it would consume 5 bytes, not 9.
        assert_eq!(s.message_decoded(startup_end + 5), Err(Violation::FORMAT));
        assert_eq!(s.violation(), Some(Violation::FORMAT));
    }

    #[tokio::test]
    async fn reads_stop_before_a_bad_message() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(1024);
        let mut bytes = startup();
        let good = bytes.len();
        bytes.extend_from_slice(b"Q\0\0\0\x02SELECT 1\0");
        client.write_all(&bytes).await.unwrap();
        let mut s = CheckedStream::new(server);
        let mut buf = vec![0u8; 1024];
        assert_eq!(s.read(&mut buf).await.unwrap(), good);
        let err = s.read(&mut buf).await.unwrap_err();
        assert_eq!(err.to_string(), "invalid message length");
    }
}
