//! Acknowledging commits without blocking the runtime (DESIGN.md §3, the acknowledge rule).
//!
//! A session commits without waiting (`Session::set_deferred_acks`) and hands back the
//! durability tickets its results depend on. The connection awaits [`Acker::wait`] before it
//! sends those results. Tickets already durable (the common case for reads) return at once;
//! the rest register a callback with `wal::Log::when_durable`, which the logger thread that
//! publishes the last DSN they need runs: it completes a oneshot channel, waking the
//! connection's runtime. Between the sync and the acknowledgement there is no thread of our
//! own to wake, and no runtime worker ever blocks.
//!
//! **Demand-driven group commit.** A session's commit record is filled *lazily*
//! (`wal::Reservation::lazy`: the logger is not woken for it) and the connection registers its
//! tickets with `wal::Log::watch`, which does not ask for a flush. The tickets are requested
//! (`wal::Log::request`) when the connection thread has nothing else to run, just before its
//! runtime parks ([`request_deferred`], the runtime's `on_thread_park` hook), or once
//! [`REQUEST_BATCH`] commits wait unrequested on the thread. So the commits that arrive while a
//! thread is busy go out in one write+sync; a lone commit is requested as soon as its
//! connection awaits the acknowledgement (the thread parks right after), never after a timer. A
//! thread without the hook (not a connection thread) requests at once.
//!
//! A log failure completes every waiter with the error, and [`Acker::failed`] resolves (a
//! `wal-ack` thread polls for it), which the server uses to shut down (DESIGN.md §3: recovery
//! restarts from what is durable).

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use wal::Ticket;

/// The most commits a connection thread lets wait unrequested before it requests them, in
/// case it stays busy for long (its runtime does not park while it has work).
pub const REQUEST_BATCH: usize = 32;

thread_local! {
    /// Set on connection threads, whose runtime calls [`request_deferred`] before it parks.
    static PARK_REQUESTS: Cell<bool> = const { Cell::new(false) };
    /// Tickets registered on this thread and not requested yet.
    static UNREQUESTED: RefCell<Unrequested> = const { RefCell::new(Unrequested::new()) };
}

/// What a connection thread has to request: per log, the largest non-blind ticket (a request
/// raises `wanted` to its SSN, which covers every smaller one) and every blind ticket's device
/// at its largest SSN.
struct Unrequested {
    log: Option<Arc<wal::Log>>,
    csn: Option<Ticket>,
    blind: Vec<Ticket>,
    count: usize,
}

impl Unrequested {
    const fn new() -> Unrequested {
        Unrequested { log: None, csn: None, blind: Vec::new(), count: 0 }
    }

    fn add(&mut self, t: Ticket) {
        if t.blind {
            match self.blind.iter_mut().find(|b| b.device == t.device) {
                Some(b) => b.ssn = b.ssn.max(t.ssn),
                None => self.blind.push(t),
            }
        } else if self.csn.is_none_or(|c| c.ssn < t.ssn) {
            self.csn = Some(t);
        }
        self.count += 1;
    }

    /// Requests everything and forgets the log (a thread does not keep a log alive).
    fn request(&mut self) {
        let tickets = self.csn.take().into_iter().chain(self.blind.drain(..));
        match self.log.take() {
            Some(log) => tickets.for_each(|t| log.request(t)),
            None => tickets.for_each(drop),
        }
        self.count = 0;
    }
}

/// Marks this thread as a connection thread whose runtime calls [`request_deferred`] before it
/// parks (`tokio::runtime::Builder::on_thread_park`).
pub(crate) fn requests_at_park() {
    PARK_REQUESTS.with(|p| p.set(true));
}

/// Requests every ticket registered on this thread since the last request: the connection
/// thread is about to go idle, so nothing more joins this group commit.
pub(crate) fn request_deferred() {
    UNREQUESTED.with(|u| {
        if let Ok(mut u) = u.try_borrow_mut() {
            if u.count > 0 {
                u.request();
            }
        }
    });
}

/// How often the `wal-ack` thread checks whether the log failed.
const FAILURE_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// The acknowledgement service of one log.
pub struct Acker {
    log: Arc<wal::Log>,
    failed: watch::Receiver<bool>,
    /// Dropping it ends the `wal-ack` thread.
    _stop: std::sync::mpsc::Sender<()>,
}

impl Acker {
    /// Starts the `wal-ack` thread for `log`. It ends when the `Acker` is dropped.
    pub fn new(log: Arc<wal::Log>) -> std::io::Result<Acker> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let (failed_tx, failed) = watch::channel(false);
        let thread_log = log.clone();
        std::thread::Builder::new().name("wal-ack".into()).spawn(move || {
            // Poll for a failure now and then: a commit that found the log failed reports
            // 58030 itself, and the server must still shut down.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(FAILURE_POLL)
            {
                if thread_log.failure().is_some() {
                    failed_tx.send_replace(true);
                    return;
                }
            }
        })?;
        Ok(Acker { log, failed, _stop: stop })
    }

    /// Resolves when every ticket is durable by the acknowledge rule, or with the log's error
    /// (then nothing that depends on the tickets may ever be acknowledged).
    pub async fn wait(&self, tickets: Vec<Ticket>) -> Result<(), wal::Error> {
        if let Some(e) = self.log.failure() {
            return Err(e);
        }
        if tickets.iter().all(|t| self.log.is_durable(*t)) {
            return Ok(());
        }
        let (done, rx) = oneshot::channel();
        let woken = crate::busy_poll::woken_flag();
        let notify: wal::Notify = Box::new(move |outcome| {
            let _ = done.send(outcome);
            // Ends this connection thread's spin, if it spins (`crate::busy_poll`).
            woken.store(true, std::sync::atomic::Ordering::Release);
        });
        if PARK_REQUESTS.with(Cell::get) {
            UNREQUESTED.with(|u| {
                let mut u = u.borrow_mut();
                if u.log.as_ref().is_some_and(|l| !Arc::ptr_eq(l, &self.log)) {
                    u.request();
                }
                if u.log.is_none() {
                    u.log = Some(self.log.clone());
                }
                for t in &tickets {
                    u.add(*t);
                }
                if u.count >= REQUEST_BATCH {
                    u.request();
                }
            });
            self.log.watch(tickets, notify);
        } else {
            self.log.when_durable(tickets, notify);
        }
        rx.await.unwrap_or_else(|_| Err(self.log.failure().unwrap_or_else(stopped)))
    }

    /// Resolves once the log has failed (a device write or sync failed, or a disk is full).
    pub async fn failed(&self) {
        let mut failed = self.failed.clone();
        let _ = failed.wait_for(|f| *f).await;
    }
}

fn stopped() -> wal::Error {
    wal::Error::io(wal::DeviceId(0), std::io::Error::other("the log dropped a durability callback"))
}
