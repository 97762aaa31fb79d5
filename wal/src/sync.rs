//! Atomics and locks, from std or from loom under `cfg(loom)` (tokio's `loom/mod.rs` pattern).
//! Everything in this crate that synchronizes goes through here so that the `loom` models
//! exercise the real code.
//!
//! [`Condvar::wait`] takes and returns the guard by value under both backends, so that code
//! written against this module compiles unchanged with loom.

#[cfg(not(all(test, loom)))]
pub(crate) use parking_lot::{Mutex, MutexGuard};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(all(test, loom))]
pub(crate) use loom::sync::MutexGuard;

/// parking_lot's condition variable with a by-value `wait`, like loom's.
#[cfg(not(all(test, loom)))]
#[derive(Debug, Default)]
pub(crate) struct Condvar(parking_lot::Condvar);

#[cfg(not(all(test, loom)))]
impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(parking_lot::Condvar::new())
    }

    pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0.wait(&mut guard);
        guard
    }

    pub(crate) fn wait_until<'a, T>(
        &self,
        mut guard: MutexGuard<'a, T>,
        deadline: std::time::Instant,
    ) -> MutexGuard<'a, T> {
        self.0.wait_until(&mut guard, deadline);
        guard
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

/// loom's mutex with parking_lot's infallible `lock()`.
#[cfg(all(test, loom))]
#[derive(Debug)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(all(test, loom))]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().expect("no panics while the latch is held")
    }

    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.0.try_lock().ok()
    }
}

/// loom's condition variable with an infallible `wait`.
#[cfg(all(test, loom))]
#[derive(Debug)]
pub(crate) struct Condvar(loom::sync::Condvar);

#[cfg(all(test, loom))]
impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(loom::sync::Condvar::new())
    }

    pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0.wait(guard).expect("no panics while the lock is held")
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

/// Wakes one sleeping thread (a logger) when its condition may have changed, without a lock on
/// the notifier's fast path.
///
/// Protocol: one word `state = (notifications << 1) | PARKED`, changed only by read-modify-write
/// operations, which are totally ordered on it. The sleeper, holding `lock`, sets `PARKED` with
/// an acquiring RMW, then evaluates its condition, then waits (releasing `lock`). A notifier
/// first makes its change (plain store, latch release, anything ordered before), then does a
/// releasing RMW (`+ NOTIFY`) on `state`. Either the notifier's RMW comes first in `state`'s
/// modification order, so the sleeper's acquiring RMW synchronizes with it and the condition
/// sees the change; or the sleeper's comes first, so the notifier reads `PARKED`, takes `lock`
/// (which the sleeper holds until it waits) and notifies. No wake-up is lost, and no `SeqCst`
/// store→load reasoning is needed (the `loom` model below checks it).
#[derive(Debug)]
pub(crate) struct Parker {
    state: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
}

/// `Parker::state` bit: the sleeper is evaluating its condition or waiting. Cleared by the
/// sleeper only, when its condition held.
const PARKED: u64 = 1;
/// `Parker::state` increment of one notification (wraps; only the RMW order matters).
const NOTIFY: u64 = 2;

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker { state: AtomicU64::new(0), lock: Mutex::new(()), cv: Condvar::new() }
    }

    /// Sleeps until `ready()` returns true, or until `deadline` (if any): returns whether
    /// `ready()` held. `ready` is evaluated with the parker's lock held; it may take other
    /// locks (never this one). Under loom the deadline is ignored (loom has no time), so a
    /// model that ends proves that the wake-ups alone end the wait.
    pub(crate) fn wait_until_deadline(
        &self,
        mut ready: impl FnMut() -> bool,
        deadline: Option<std::time::Instant>,
    ) -> bool {
        let mut guard = self.lock.lock();
        loop {
            // AcqRel: the Acquire half pairs with the Release RMW in `notify`.
            self.state.fetch_or(PARKED, Ordering::AcqRel);
            if ready() {
                self.state.fetch_and(!PARKED, Ordering::Relaxed);
                return true;
            }
            match deadline {
                #[cfg(not(all(test, loom)))]
                Some(deadline) => {
                    if std::time::Instant::now() >= deadline {
                        // A notifier that still sees `PARKED` takes the lock and wakes nobody.
                        self.state.fetch_and(!PARKED, Ordering::Relaxed);
                        return false;
                    }
                    guard = self.cv.wait_until(guard, deadline);
                }
                _ => guard = self.cv.wait(guard),
            }
        }
    }

    /// Wakes the sleeper if it is (about to be) waiting. Call after making the change visible.
    pub(crate) fn notify(&self) {
        // AcqRel: the Release half pairs with the Acquire RMW in `wait_until_deadline`.
        if self.state.fetch_add(NOTIFY, Ordering::AcqRel) & PARKED != 0 {
            let _guard = self.lock.lock();
            self.cv.notify_all();
        }
    }
}

/// A value on cache lines of its own (two 64-byte lines: adjacent-line prefetch pairs them).
/// For the fields of a shared struct that some threads write often, so that the read-mostly
/// fields next to them stay in every reader's cache.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// No lost wake-up: a notifier's change made before `notify` always ends the sleeper's
    /// wait, in every interleaving (loom reports a deadlock otherwise). Two notifiers model an
    /// eager filler and a durability waiter waking the same logger.
    #[test]
    fn parker_never_loses_a_wakeup() {
        loom::model(|| {
            let parker = Arc::new(Parker::new());
            let flags = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
            let notifiers: Vec<_> = (0..2)
                .map(|i| {
                    let (parker, flags) = (parker.clone(), flags.clone());
                    loom::thread::spawn(move || {
                        flags[i].store(true, Ordering::Relaxed);
                        parker.notify();
                    })
                })
                .collect();
            assert!(parker
                .wait_until_deadline(|| flags.iter().all(|f| f.load(Ordering::Relaxed)), None));
            for n in notifiers {
                n.join().unwrap();
            }
        });
    }

    /// The same for the deadline wait a lazy logger sleeps in: a far deadline never ends it in
    /// the model (loom has no time), so only the notifications can, and they always do.
    #[test]
    fn deadline_wait_never_loses_a_wakeup() {
        loom::model(|| {
            let parker = Arc::new(Parker::new());
            let flag = Arc::new(AtomicBool::new(false));
            let notifier = {
                let (parker, flag) = (parker.clone(), flag.clone());
                loom::thread::spawn(move || {
                    flag.store(true, Ordering::Relaxed);
                    parker.notify();
                })
            };
            let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
            assert!(parker.wait_until_deadline(|| flag.load(Ordering::Relaxed), Some(far)));
            notifier.join().unwrap();
        });
    }
}
