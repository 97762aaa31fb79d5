//! Fault injection for tests: `aspen serve --inject-wal-fault SPEC` (hidden from `--help`).
//!
//! SPEC is `device=D,<kind>=N`: the Nth write or fdatasync (1-based, counted per segment file)
//! of log device D fails, as a real disk would fail it. Kinds: `write` (EIO), `sync` (EIO),
//! `nospace` (a write fails with ENOSPC). The server must then behave as DESIGN.md §3 says:
//! no retry, nothing on that device acknowledged, clients get 58030, the server exits, and a
//! restart recovers everything that was acknowledged.

use std::io;
use std::sync::Arc;

use recovery::startup::StoreWrapper;
use wal::testing::FaultyDevice;
use wal::{LogDevice, SegmentNo, SegmentStore};

/// A parsed `--inject-wal-fault`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpec {
    /// The device whose segments fail.
    pub device: usize,
    /// What fails.
    pub kind: FaultKind,
    /// Which call (1-based, per segment file).
    pub nth: u64,
}

/// What [`FaultSpec`] makes fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A write fails with EIO.
    Write,
    /// An fdatasync fails with EIO.
    Sync,
    /// A write fails with ENOSPC.
    NoSpace,
}

/// Parses `device=D,<write|sync|nospace>=N`.
pub fn parse(spec: &str) -> Result<FaultSpec, String> {
    let (mut device, mut fault) = (None, None);
    for part in spec.split(',') {
        let (k, v) =
            part.split_once('=').ok_or_else(|| format!("expected key=value, got \"{part}\""))?;
        let n: u64 = v.trim().parse().map_err(|_| format!("expected a number in \"{part}\""))?;
        match k.trim() {
            "device" => device = Some(n as usize),
            "write" => fault = Some((FaultKind::Write, n)),
            "sync" => fault = Some((FaultKind::Sync, n)),
            "nospace" => fault = Some((FaultKind::NoSpace, n)),
            other => return Err(format!("unknown key \"{other}\" (device, write, sync, nospace)")),
        }
    }
    let device = device.ok_or("missing device=D")?;
    let (kind, nth) = fault.ok_or("missing write=N, sync=N or nospace=N")?;
    if nth == 0 {
        return Err("N counts from 1".into());
    }
    Ok(FaultSpec { device, kind, nth })
}

/// The store wrapper for `spec`: device `spec.device`'s segments fail as specified.
pub fn wrapper(spec: FaultSpec) -> StoreWrapper {
    StoreWrapper(Arc::new(move |d, store| {
        if d == spec.device {
            Box::new(FaultyStore { inner: store, spec })
        } else {
            store
        }
    }))
}

#[derive(Debug)]
struct FaultyStore {
    inner: Box<dyn SegmentStore>,
    spec: FaultSpec,
}

impl SegmentStore for FaultyStore {
    fn segment_size(&self) -> u64 {
        self.inner.segment_size()
    }

    fn list(&self) -> io::Result<Vec<SegmentNo>> {
        self.inner.list()
    }

    fn create(&self, no: SegmentNo) -> io::Result<Box<dyn LogDevice>> {
        let device = FaultyDevice::new(self.inner.create(no)?);
        Ok(Box::new(match self.spec.kind {
            FaultKind::Write => device.fail_write(self.spec.nth),
            FaultKind::Sync => device.fail_sync(self.spec.nth),
            FaultKind::NoSpace => device.no_space_on_write(self.spec.nth),
        }))
    }

    fn remove(&self, no: SegmentNo) -> io::Result<()> {
        self.inner.remove(no)
    }

    fn retire(&self, segment: Box<dyn LogDevice>) {
        self.inner.retire(segment)
    }

    // Spill files are not fault-injected: they pass through.
    fn write_spill(&self, id: u64, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_spill(id, bytes)
    }

    fn read_spill(&self, id: u64) -> io::Result<Vec<u8>> {
        self.inner.read_spill(id)
    }

    fn remove_spill(&self, id: u64) -> io::Result<()> {
        self.inner.remove_spill(id)
    }

    fn list_spills(&self) -> io::Result<Vec<u64>> {
        self.inner.list_spills()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_or_say_why_not() {
        assert_eq!(
            parse("device=1,sync=5"),
            Ok(FaultSpec { device: 1, kind: FaultKind::Sync, nth: 5 })
        );
        assert_eq!(
            parse("nospace=2,device=0"),
            Ok(FaultSpec { device: 0, kind: FaultKind::NoSpace, nth: 2 })
        );
        assert!(parse("device=1").unwrap_err().contains("missing"));
        assert!(parse("device=1,sync=0").is_err());
        assert!(parse("device=1,flip=3").unwrap_err().contains("unknown key"));
    }
}
