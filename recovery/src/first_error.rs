//! [`FirstError`]: how the parallel phases of recovery (replay, checkpoint load) stop. The
//! first thread to fail records its error and raises a flag; the others see the flag and
//! stop at their next check; the caller returns the recorded error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::Error;

/// The first error of a group of threads, and whether there is one.
#[derive(Default)]
pub(crate) struct FirstError {
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl FirstError {
    /// Records `e` unless an error was recorded already, and raises the flag.
    pub(crate) fn fail(&self, e: Error) {
        self.failed.store(true, Ordering::Release);
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
    }

    /// Whether some thread failed (then it has recorded, or is recording, why).
    pub(crate) fn failed(&self) -> bool {
        // Acquire: pairs with the Release store in `fail`.
        self.failed.load(Ordering::Acquire)
    }

    /// The recorded error, as a result (once every thread has stopped).
    pub(crate) fn into_result(self) -> Result<(), Error> {
        match self.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
