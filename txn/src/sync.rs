//! Atomics, from std (tokio's `loom/mod.rs` pattern: everything that synchronizes in this crate
//! is imported from here).
//!
//! There is no loom arm yet: the indexes (locked BTreeMap and hash) and row pointers (arc-swap) are not
//! loom-aware, so a loom model of the TID word needs the word extracted on its own first.

pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
