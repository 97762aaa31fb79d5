//! DSN per device, `CSN = min DSN`, the acknowledge rule, and failures (DESIGN.md §3).
//!
//! A logger publishes `DSN(device)` after a write+sync pair completed `Ok`, in submission
//! order ([`crate::logger`]); it is the SSN of the last record of that pair, so a DSN is always
//! the SSN of a record (or marker) that is on disk. Waiters:
//!
//! - [`Log::wait_durable`] with a non-blind [`Ticket`] waits until `ssn <= CSN`;
//! - with a blind ticket, until `ssn <= DSN(ticket.device)`;
//! - [`Log::wait_csn`] (read-only results) until `ssn <= CSN`;
//! - [`Log::when_durable`] registers a callback instead of blocking: the logger thread whose
//!   DSN publication makes every ticket durable runs it (no thread of the caller's waits, and
//!   no extra wake-up between the sync and the acknowledgement).
//!
//! A CSN waiter records its target in `wanted` and wakes the loggers of the devices behind it;
//! an idle one writes a marker ([`crate::logger`]), so a device with nothing to flush never
//! holds CSN back. `synchronous_commit = off` is the caller not waiting: nothing here changes.
//!
//! **Failures.** The first failed write, sync or segment creation fails the whole log: every
//! logger stops (DSNs freeze), new reservations fail ([`Log::try_reserve`]) or are detached
//! ([`Log::reserve`]), and every wait whose condition does not already hold returns the
//! failure. A wait that already holds returns `Ok`: that record is durable and recovery keeps
//! it (RSNe ≥ CSN; blind records are replayed beyond RSNe).

use std::io;
use std::sync::Arc;

use crate::buffer::{Inner, Log};
use crate::device::DeviceId;
use crate::error::Error;
use crate::ssn::Ssn;
use crate::sync::{Mutex, Ordering, Parker};

/// What a committing transaction waits for before it is acknowledged.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Ticket {
    /// The transaction's SSN.
    pub ssn: Ssn,
    /// The device (= buffer) its record is on.
    pub device: DeviceId,
    /// The transaction wrote without reading: it waits only for its own device's DSN.
    pub blind: bool,
}

/// What [`Log::when_durable`] calls once, with `Ok` when every ticket is durable or the log's
/// failure. It runs on a logger thread (or the caller's, if the outcome is known at once), so it
/// must be quick and must not wait for the log (e.g. send on a channel).
pub type Notify = Box<dyn FnOnce(Result<(), Error>) + Send>;

/// A registered [`Notify`] and the tickets it still waits for.
pub(crate) struct Watcher {
    tickets: Vec<Ticket>,
    notify: Notify,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").field("tickets", &self.tickets).finish_non_exhaustive()
    }
}

/// A recorded failure, re-creatable as an [`Error`] for every waiter.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    device: DeviceId,
    no_space: bool,
    kind: io::ErrorKind,
    message: String,
}

impl Failure {
    pub(crate) fn from_error(error: &Error) -> Failure {
        match error {
            Error::NoSpace { device } => Failure {
                device: *device,
                no_space: true,
                kind: io::ErrorKind::StorageFull,
                message: String::new(),
            },
            Error::DeviceFailed { device, source } => Failure {
                device: *device,
                no_space: false,
                kind: source.kind(),
                message: source.to_string(),
            },
            other => Failure {
                device: DeviceId(0),
                no_space: false,
                kind: io::ErrorKind::Other,
                message: other.to_string(),
            },
        }
    }

    pub(crate) fn to_error(&self) -> Error {
        if self.no_space {
            Error::NoSpace { device: self.device }
        } else {
            Error::DeviceFailed {
                device: self.device,
                source: io::Error::new(self.kind, self.message.clone()),
            }
        }
    }
}

impl Inner {
    pub(crate) fn dsn(&self, device: usize) -> Ssn {
        // Acquire: pairs with the Release store in `publish_dsn`.
        Ssn(self.devices[device].dsn.load(Ordering::Acquire))
    }

    pub(crate) fn csn(&self) -> Ssn {
        (0..self.devices.len()).map(|d| self.dsn(d)).min().unwrap_or(Ssn::ZERO)
    }

    /// Publishes `DSN(device) = dsn` (only grows) and wakes the waiters.
    pub(crate) fn publish_dsn(&self, device: usize, dsn: Ssn) {
        {
            let _guard = self.durable.lock();
            // Release: pairs with the Acquire load in `dsn`; under `durable` so that no
            // waiter between its check and its wait misses it.
            self.devices[device].dsn.fetch_max(dsn.0, Ordering::Release);
        }
        self.durable_cv.notify_all();
        self.run_watchers();
    }

    /// Runs (outside the lock) the watchers whose tickets are all durable now. A watcher
    /// registered concurrently is not missed: it checks its tickets under the same lock after
    /// the DSN it needs was stored.
    fn run_watchers(&self) {
        let ready: Vec<Notify> = {
            let mut watchers = self.watchers.lock();
            if watchers.is_empty() {
                return;
            }
            // One snapshot of the DSNs, taken under the lock, for every watcher (this runs once
            // per completed pair, with a watcher per waiting connection).
            let dsns: Vec<Ssn> = (0..self.devices.len()).map(|d| self.dsn(d)).collect();
            let csn = dsns.iter().copied().min().unwrap_or(Ssn::ZERO);
            let met =
                |t: &Ticket| t.ssn <= if t.blind { dsns[usize::from(t.device.0)] } else { csn };
            let mut ready = Vec::new();
            let mut i = 0;
            while i < watchers.len() {
                watchers[i].tickets.retain(|t| !met(t));
                if watchers[i].tickets.is_empty() {
                    ready.push(watchers.swap_remove(i).notify);
                } else {
                    i += 1;
                }
            }
            ready
        };
        for notify in ready {
            notify(Ok(()));
        }
    }

    /// Registers `notify` for `tickets` (see [`Log::when_durable`]).
    fn when_durable(&self, mut tickets: Vec<Ticket>, notify: Notify, request: bool) {
        if self.in_memory() {
            return notify(Ok(()));
        }
        if request {
            for t in &tickets {
                self.request(*t);
            }
        }
        let outcome = {
            let mut watchers = self.watchers.lock();
            // Acquire: pairs with the Release store in `fail`, which drains the watchers after
            // it, under this lock.
            if self.failed.load(Ordering::Acquire) {
                Some(Err(self.failure_error().expect("failed implies a failure")))
            } else {
                tickets.retain(|t| !self.met(*t));
                if tickets.is_empty() {
                    Some(Ok(()))
                } else {
                    watchers.push(Watcher { tickets, notify });
                    return;
                }
            }
        };
        if let Some(outcome) = outcome {
            notify(outcome);
        }
    }

    /// Fails the log with `error` (the first failure wins) and wakes everybody.
    pub(crate) fn fail(&self, error: &Error) {
        {
            let _guard = self.durable.lock();
            let mut failure = self.failure.lock();
            if failure.is_none() {
                *failure = Some(Failure::from_error(error));
            }
            // Release: pairs with the Acquire loads of loggers, reservers and waiters; the
            // wake-ups below are ordered by `Parker::notify` and the locks.
            self.failed.store(true, Ordering::Release);
        }
        self.durable_cv.notify_all();
        for b in self.buffers.iter() {
            drop(b.latch.lock());
            b.space.notify_all();
            b.demand.notify();
        }
        let watchers = std::mem::take(&mut *self.watchers.lock());
        for w in watchers {
            (w.notify)(Err(self.failure_error().expect("failed implies a failure")));
        }
    }

    fn met(&self, ticket: Ticket) -> bool {
        if ticket.blind {
            self.dsn(usize::from(ticket.device.0)) >= ticket.ssn
        } else {
            self.csn() >= ticket.ssn
        }
    }

    /// Asks the loggers to make `ticket` durable (without waiting): a blind ticket raises its
    /// device's `want`, any other raises `wanted` (CSN), and the loggers behind it wake up, write
    /// what they hold back lazily, and write markers if idle.
    pub(crate) fn request(&self, ticket: Ticket) {
        if self.in_memory() || self.met(ticket) {
            return;
        }
        // A device whose logger is idle and whose pairs are fast is flushed right here
        // (`assist`); otherwise its logger is woken.
        // Release (both): pairs with the loggers' Acquire loads; `Parker::notify` orders the
        // wake-up.
        if ticket.blind {
            let d = usize::from(ticket.device.0);
            self.buffers[d].want.fetch_max(ticket.ssn.0, Ordering::Release);
            if !self.assist(d) {
                self.buffers[d].demand.notify();
            }
            return;
        }
        self.wanted.fetch_max(ticket.ssn.0, Ordering::Release);
        for (d, b) in self.buffers.iter().enumerate() {
            if self.dsn(d) < ticket.ssn && !self.assist(d) {
                b.demand.notify();
            }
        }
    }

    /// Blocks until `ticket` is durable or the log failed. The first [`CV_WAITERS`] blocked
    /// committers wait on one condition variable that every DSN publication wakes whole
    /// (cheapest for a few); any more wait as watchers ([`Inner::when_durable`]) that wake
    /// their own thread alone: with many committers on the condition variable, each
    /// publication woke all of them, most to sleep again, and the hand-over of its mutex was
    /// slower than the device (BENCHMARKS.md, 64 blocked committers: p99 7 ms against 1-2).
    fn wait(&self, ticket: Ticket) -> Result<(), Error> {
        if self.in_memory() || self.met(ticket) {
            return Ok(());
        }
        // Relaxed: only a count for the choice; the waits themselves are ordered by locks.
        if self.cv_waiters.fetch_add(1, Ordering::Relaxed) < CV_WAITERS {
            let outcome = self.wait_on_cv(ticket);
            self.cv_waiters.fetch_sub(1, Ordering::Relaxed);
            return outcome;
        }
        self.cv_waiters.fetch_sub(1, Ordering::Relaxed);
        let woken = Arc::new((Parker::new(), Mutex::new(None::<Result<(), Error>>)));
        let notify = {
            let woken = woken.clone();
            Box::new(move |outcome| {
                *woken.1.lock() = Some(outcome);
                woken.0.notify();
            })
        };
        self.when_durable(vec![ticket], notify, true);
        let (parker, outcome) = &*woken;
        parker.wait_until_deadline(|| outcome.lock().is_some(), None);
        let outcome = outcome.lock().take();
        outcome.expect("woken with an outcome")
    }

    /// [`Inner::wait`] on the condition variable `durable_cv`.
    fn wait_on_cv(&self, ticket: Ticket) -> Result<(), Error> {
        self.request(ticket);
        let mut guard = self.durable.lock();
        loop {
            if self.met(ticket) {
                return Ok(());
            }
            // Acquire: pairs with the Release store in `fail` (made under `durable`).
            if self.failed.load(Ordering::Acquire) {
                drop(guard);
                return Err(self.failure_error().expect("failed implies a failure"));
            }
            guard = self.durable_cv.wait(guard);
        }
    }
}

/// Blocked committers beyond this many wait as watchers instead of on `durable_cv`.
const CV_WAITERS: u64 = 4;

impl Log {
    /// `DSN(device)`: every record on `device` with an SSN `<=` this is durable. For an
    /// in-memory log, `L.ssn` of the buffer (everything counts as durable).
    ///
    /// # Panics
    /// If `device` is not a device of this log.
    pub fn dsn(&self, device: DeviceId) -> Ssn {
        let d = usize::from(device.0);
        if self.inner.in_memory() {
            self.buffer_ssn(d)
        } else {
            self.inner.dsn(d)
        }
    }

    /// `CSN = min over devices of DSN`: every transaction with an SSN `<=` this, and all it
    /// depends on, is durable. For an in-memory log, [`Log::max_ssn`].
    pub fn csn(&self) -> Ssn {
        if self.inner.in_memory() {
            self.max_ssn()
        } else {
            self.inner.csn()
        }
    }

    /// The acknowledge rule: waits until `ticket.ssn <= CSN` (non-blind) or
    /// `ticket.ssn <= DSN(ticket.device)` (blind). `Ok` means the transaction may be
    /// acknowledged: no crash can take it back. `Err` ([`Error::DeviceFailed`],
    /// [`Error::NoSpace`]) means it must not be acknowledged, ever.
    ///
    /// Waiting for CSN makes idle devices write markers, so it never waits for a device that
    /// has nothing to write. Must not be called while holding an unfilled reservation that the
    /// ticket depends on.
    pub fn wait_durable(&self, ticket: Ticket) -> Result<(), Error> {
        assert!(
            usize::from(ticket.device.0) < self.n_buffers(),
            "ticket for device {} of a log with {}",
            ticket.device,
            self.n_buffers()
        );
        self.inner.wait(ticket)
    }

    /// Waits until `ssn <= CSN`: a read-only transaction with SSN `ssn` (its `base`) may
    /// release its results (DESIGN.md §3). Errors as [`Log::wait_durable`].
    pub fn wait_csn(&self, ssn: Ssn) -> Result<(), Error> {
        self.inner.wait(Ticket { ssn, device: DeviceId(0), blind: false })
    }

    /// Asks for `ticket` to become durable without waiting for it: what
    /// [`Log::wait_durable`] does before it blocks. For a caller that waits for one ticket but
    /// needs several (the server's acknowledgement thread), so that records nobody waits for
    /// yet are not left to the next lazy flush. On a fast device whose logger is idle, this
    /// thread writes and syncs the records itself before it returns (and runs the callbacks
    /// their DSN completes); the caller must not hold an unfilled reservation on that device.
    pub fn request(&self, ticket: Ticket) {
        self.inner.request(ticket);
    }

    /// Calls `notify` once every ticket of `tickets` is durable by the acknowledge rule (`Ok`),
    /// or with the failure if the log fails first: [`Log::wait_durable`] for every ticket
    /// without blocking a thread. Requests the tickets (as [`Log::request`]). `notify` runs on
    /// this thread if the outcome is known now, else on the thread that publishes the last DSN
    /// needed (a logger, or a requester flushing for one, possibly this thread in this call)
    /// or fails the log: it must be quick and must not wait for the log.
    pub fn when_durable(&self, tickets: Vec<Ticket>, notify: Notify) {
        self.inner.when_durable(tickets, notify, true);
    }

    /// [`Log::when_durable`] without the request: `notify` runs once the tickets are durable,
    /// but records filled lazily ([`crate::Reservation::lazy`]) are not written for it until
    /// somebody requests them ([`Log::request`]) or the lazy timer runs out. For a caller that
    /// requests many tickets at once, when it has nothing else to do (demand-driven group
    /// commit: the server's connection threads request before they go idle).
    pub fn watch(&self, tickets: Vec<Ticket>, notify: Notify) {
        self.inner.when_durable(tickets, notify, false);
    }

    /// Whether `ticket` is durable now (the condition of [`Log::wait_durable`]), without
    /// waiting.
    pub fn is_durable(&self, ticket: Ticket) -> bool {
        self.inner.in_memory() || self.inner.met(ticket)
    }

    /// The failure that stopped the log, if any. Once `Some`, always `Some`.
    pub fn failure(&self) -> Option<Error> {
        self.inner.failure_error()
    }
}

/// loom models of the DSN/CSN protocol (`RUSTFLAGS="--cfg loom" cargo test -p wal --release`):
/// a log with devices but no logger threads, whose steps the model's threads take themselves
/// (`publish_dsn`, `fail`, and an idle device's marker as the logger writes it).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::buffer::MIN_RESERVATION;
    use crate::sync::AtomicU64;
    use loom::sync::Arc;

    fn log_with_devices(n: usize) -> Log {
        let buffers = (0..n).map(|_| Log::new_buffer(4096, Ssn::ZERO)).collect();
        let devices = (0..n).map(|_| crate::logger::DeviceState::for_model()).collect();
        Log::from_parts(buffers, devices, 4096)
    }

    /// Fills a `MIN_RESERVATION` reservation with an empty record of its SSN.
    fn fill_empty(r: crate::Reservation<'_>, kind: crate::RecordKind) -> Ssn {
        let ssn = r.ssn;
        let mut bytes = Vec::new();
        crate::Record { ssn, kind, blind: false, payload: &[] }.encode_into(&mut bytes);
        r.fill(&bytes);
        ssn
    }

    /// A callback that counts its calls in `calls` once `check` accepted the outcome.
    fn counting(
        calls: &Arc<AtomicU64>,
        check: impl FnOnce(Result<(), Error>) + Send + 'static,
    ) -> Notify {
        let calls = calls.clone();
        Box::new(move |outcome| {
            check(outcome);
            calls.fetch_add(1, Ordering::SeqCst);
        })
    }

    fn csn_ticket(ssn: u64) -> Ticket {
        Ticket { ssn: Ssn(ssn), device: DeviceId(0), blind: false }
    }

    /// Two devices publish DSN 5 while a CSN watcher for SSN 5 registers: in every
    /// interleaving it is called exactly once, with `Ok`, and never before CSN reached 5.
    #[test]
    fn csn_watcher_runs_once_after_every_device_published() {
        loom::model(|| {
            let log = Arc::new(log_with_devices(2));
            let calls = Arc::new(AtomicU64::new(0));
            let publishers: Vec<_> = (0..2)
                .map(|d| {
                    let log = log.clone();
                    loom::thread::spawn(move || log.inner.publish_dsn(d, Ssn(5)))
                })
                .collect();
            let l = log.clone();
            log.when_durable(
                vec![csn_ticket(5)],
                counting(&calls, move |outcome| {
                    assert!(outcome.is_ok());
                    assert!(l.csn() >= Ssn(5), "called before CSN reached the ticket");
                }),
            );
            for p in publishers {
                p.join().unwrap();
            }
            assert_eq!(calls.load(Ordering::SeqCst), 1);
            assert!(log.is_durable(csn_ticket(5)));
        });
    }

    /// A failure racing a registration: the watcher is called exactly once, with the error.
    #[test]
    fn failure_completes_a_racing_watcher_once() {
        loom::model(|| {
            let log = Arc::new(log_with_devices(1));
            let calls = Arc::new(AtomicU64::new(0));
            let failer = {
                let log = log.clone();
                loom::thread::spawn(move || log.inner.fail(&Error::NoSpace { device: DeviceId(0) }))
            };
            let blind = Ticket { ssn: Ssn(1), device: DeviceId(0), blind: true };
            log.when_durable(
                vec![blind],
                counting(&calls, |outcome| {
                    assert!(matches!(outcome, Err(Error::NoSpace { .. })), "{outcome:?}");
                }),
            );
            failer.join().unwrap();
            assert_eq!(calls.load(Ordering::SeqCst), 1);
        });
    }

    /// Idle markers: a CSN waiter on device 0 raises `wanted`; device 1 has nothing to write,
    /// so its logger (this model's thread: park until a marker is needed, reserve it with base
    /// `wanted - 1`, publish its SSN) advances it. The waiter completes exactly once, the
    /// marker's SSN reaches the target, and a later reservation on device 1 is above the marker
    /// (I2 against the raised `L.ssn`; `buffer::loom_tests` races reservations themselves).
    #[test]
    fn idle_device_marker_lets_a_csn_waiter_finish() {
        loom::model(|| {
            let log = Arc::new(log_with_devices(2));
            let calls = Arc::new(AtomicU64::new(0));
            let logger = {
                let log = log.clone();
                loom::thread::spawn(move || {
                    let inner = &log.inner;
                    let due = || inner.wanted.load(Ordering::Acquire) > inner.dsn(1).0;
                    assert!(inner.buffers[1].demand.wait_until_deadline(due, None));
                    let wanted = inner.wanted.load(Ordering::Acquire);
                    let marker = log.reserve(1, Ssn(wanted - 1), MIN_RESERVATION);
                    let ssn = fill_empty(marker, crate::RecordKind::Marker);
                    inner.publish_dsn(1, ssn);
                    ssn
                })
            };
            log.inner.publish_dsn(0, Ssn(3));
            log.when_durable(
                vec![csn_ticket(3)],
                counting(&calls, |outcome| assert!(outcome.is_ok())),
            );
            let marker = logger.join().unwrap();
            assert!(marker >= Ssn(3), "marker {marker} below the target");
            assert_eq!(calls.load(Ordering::SeqCst), 1);
            let later =
                fill_empty(log.reserve(1, Ssn::ZERO, MIN_RESERVATION), crate::RecordKind::Abort);
            assert!(later > marker, "I2: {later} after marker {marker}");
        });
    }
}
