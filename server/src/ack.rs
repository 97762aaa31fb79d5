//! Acknowledging commits without blocking the runtime (DESIGN.md §3, the acknowledge rule).
//!
//! A session commits without waiting (`Session::set_deferred_acks`) and hands back the
//! durability tickets its results depend on. The connection awaits [`Acker::wait`] before it
//! sends those results. Tickets already durable (the common case for reads) return at once;
//! the rest go to one `wal-ack` thread, which blocks in `wal::Log::wait_durable` for the oldest
//! pending ticket and completes every request whose tickets are durable each time it wakes. So
//! a commit costs one wake-up of that thread per group of syncs, not a blocked runtime worker.
//!
//! A log failure completes every waiter with the error, and [`Acker::failed`] resolves, which
//! the server uses to shut down (DESIGN.md §3: recovery restarts from what is durable).

use std::sync::mpsc;
use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use wal::Ticket;

/// How often an idle `wal-ack` thread checks whether the log failed.
const FAILURE_POLL: std::time::Duration = std::time::Duration::from_millis(100);

type Done = oneshot::Sender<Result<(), wal::Error>>;

/// The acknowledgement service of one log.
pub struct Acker {
    log: Arc<wal::Log>,
    requests: mpsc::Sender<(Vec<Ticket>, Done)>,
    failed: watch::Receiver<bool>,
}

impl Acker {
    /// Starts the `wal-ack` thread for `log`. It ends when the `Acker` is dropped.
    pub fn new(log: Arc<wal::Log>) -> std::io::Result<Acker> {
        let (requests, rx) = mpsc::channel();
        let (failed_tx, failed) = watch::channel(false);
        let thread_log = log.clone();
        std::thread::Builder::new()
            .name("wal-ack".into())
            .spawn(move || run(&thread_log, &rx, &failed_tx))?;
        Ok(Acker { log, requests, failed })
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
        // The `wal-ack` thread waits for the oldest ticket only: ask for all of them now, so
        // that no device holds one back for its lazy flush.
        for t in &tickets {
            self.log.request(*t);
        }
        let (done, rx) = oneshot::channel();
        if self.requests.send((tickets, done)).is_err() {
            return Err(self.log.failure().unwrap_or_else(stopped));
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
    wal::Error::io(wal::DeviceId(0), std::io::Error::other("the acknowledgement thread stopped"))
}

fn run(log: &wal::Log, rx: &mpsc::Receiver<(Vec<Ticket>, Done)>, failed: &watch::Sender<bool>) {
    let mut pending: Vec<(Vec<Ticket>, Done)> = Vec::new();
    loop {
        if pending.is_empty() {
            // Poll for a failure now and then even when nobody waits: a commit that found the
            // log failed reports 58030 itself, and the server must still shut down.
            match rx.recv_timeout(FAILURE_POLL) {
                Ok(r) => pending.push(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        pending.extend(rx.try_iter());
        if log.failure().is_some() {
            failed.send_replace(true);
            for (_, done) in pending.drain(..) {
                let _ = done.send(Err(log.failure().unwrap_or_else(stopped)));
            }
            continue;
        }
        let mut i = 0;
        while i < pending.len() {
            pending[i].0.retain(|t| !log.is_durable(*t));
            if pending[i].0.is_empty() {
                let (_, done) = pending.swap_remove(i);
                let _ = done.send(Ok(()));
            } else {
                i += 1;
            }
        }
        let oldest = pending.iter().flat_map(|(t, _)| t.iter()).min_by_key(|t| t.ssn).copied();
        match oldest {
            // Wakes when it is durable or the log fails; either way the loop re-checks all.
            Some(ticket) => {
                let _ = log.wait_durable(ticket);
            }
            None => continue,
        }
    }
}
