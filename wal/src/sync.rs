//! Atomics and locks, from std or from loom under `cfg(loom)` (tokio's `loom/mod.rs` pattern).
//! Everything in this crate that synchronizes goes through here so that the `loom` models
//! exercise the real code.

#[cfg(not(all(test, loom)))]
pub(crate) use parking_lot::Mutex;
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// loom's mutex with parking_lot's infallible `lock()`.
#[cfg(all(test, loom))]
#[derive(Debug)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(all(test, loom))]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        self.0.lock().expect("no panics while the latch is held")
    }
}
