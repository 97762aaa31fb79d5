//! # recovery — checkpoints and replay (not built yet)
//!
//! This crate will hold DESIGN.md §5: transaction-consistent checkpoints at a cut `S` (raise
//! every log buffer's `L.ssn` to `S`, wait for installs `≤ S`, copy-on-write pre-images for later
//! writers, parallel writers, metadata written last and atomically), and recovery: catalog →
//! newest valid checkpoint → `RSNe = min over devices of the largest durable SSN` (torn tails end
//! a device's log at its last good record, read with `wal::SegmentReader`) → replay of
//! `(S, RSNe]` plus blind writes beyond, in parallel, partitioned by key, last writer wins; and
//! PACMAN replay of command records, checked against a serial replayer.
//!
//! Until it lands the server keeps rows in memory only; the schema survives restarts through
//! the catalog's RocksDB store. The crate exists now so the dependency direction of DESIGN.md §1
//! (`recovery → {sql, txn, wal, catalog}`, `server → recovery`) is fixed from the start.
