//! CancelRequest, and stopping statements at shutdown.
//!
//! A CancelRequest arrives on a connection of its own, naming the connection to cancel by the
//! process id and secret key its BackendKeyData gave. [`Cancels`] maps those to the session's
//! cancel flag ([`sql::Session::cancel_flag`]); setting it stops the running statement at its
//! next check (where `statement_timeout` is checked) with `57014` "canceling statement due to
//! user request", and the connection goes on serving. A long statement runs on its connection
//! thread's blocking pool, so the thread stays free to accept the request.
//!
//! At shutdown every flag is set, so that statements still running on the blocking pools stop
//! instead of holding up the server's exit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;

/// BackendKeyData: a connection's process id and secret key.
type Key = (i32, Vec<u8>);

/// The cancel flags of the server's sessions, by BackendKeyData.
#[derive(Default)]
pub struct Cancels {
    flags: Mutex<HashMap<Key, Arc<AtomicBool>>>,
}

impl Cancels {
    /// Registers a session's flag under its BackendKeyData until the guard is dropped.
    pub fn register(self: &Arc<Self>, pid: i32, key: Vec<u8>, flag: Arc<AtomicBool>) -> Guard {
        self.flags.lock().insert((pid, key.clone()), flag);
        Guard { cancels: self.clone(), pid, key }
    }

    /// Sets the flag registered under `(pid, key)`; false if there is none.
    pub fn cancel(&self, pid: i32, key: &[u8]) -> bool {
        match self.flags.lock().get(&(pid, key.to_vec())) {
            Some(flag) => {
                flag.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Sets every flag (shutdown); returns how many.
    pub fn cancel_all(&self) -> usize {
        let flags = self.flags.lock();
        flags.values().for_each(|f| f.store(true, Ordering::Relaxed));
        flags.len()
    }
}

/// Unregisters a session's flag when its connection ends.
pub struct Guard {
    cancels: Arc<Cancels>,
    pid: i32,
    key: Vec<u8>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.cancels.flags.lock().remove(&(self.pid, std::mem::take(&mut self.key)));
    }
}

/// pgwire's hook for CancelRequest messages.
pub struct Handler(pub Arc<Cancels>);

#[async_trait]
impl CancelHandler for Handler {
    async fn on_cancel_request(&self, request: CancelRequest) {
        // PostgreSQL answers nothing either way, and logs an unknown key.
        if !self.0.cancel(request.pid, &request.secret_key.to_bytes()) {
            tracing::debug!(pid = request.pid, "CancelRequest for no connection");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_sets_only_the_flag_registered_under_its_key() {
        let cancels = Arc::new(Cancels::default());
        let (a, b) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let _ga = cancels.register(1, vec![1, 2], a.clone());
        let gb = cancels.register(2, vec![3, 4], b.clone());
        assert!(!cancels.cancel(1, &[9, 9]), "wrong key");
        assert!(!a.load(Ordering::Relaxed));
        assert!(cancels.cancel(1, &[1, 2]));
        assert!(a.load(Ordering::Relaxed) && !b.load(Ordering::Relaxed));
        drop(gb);
        assert!(!cancels.cancel(2, &[3, 4]), "unregistered when the connection ended");
        assert_eq!(cancels.cancel_all(), 1);
    }
}
