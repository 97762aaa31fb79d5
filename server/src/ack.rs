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
//! A log failure completes every waiter with the error, and [`Acker::failed`] resolves (a
//! `wal-ack` thread polls for it), which the server uses to shut down (DESIGN.md §3: recovery
//! restarts from what is durable).

use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use wal::Ticket;

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
        self.log.when_durable(
            tickets,
            Box::new(move |outcome| {
                let _ = done.send(outcome);
            }),
        );
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
