//! The serial sequence number.

use std::fmt;

/// A serial sequence number (Poplar). One type serves every role an SSN plays; the role is
/// given by where the value comes from:
///
/// - **wssn**: the SSN of the last writer of a record, kept in its TID word;
/// - **commit SSN**: the SSN a transaction takes in [`crate::Log::reserve`] (writers) or its
///   `base` (read-only transactions);
/// - **DSN**: the largest SSN made durable on one device (next issue);
/// - **CSN**: the minimum DSN over all devices (next issue);
/// - **RSNe**: at recovery, the minimum over devices of the largest SSN durably present;
/// - **cut**: the SSN `S` at which a checkpoint is transaction-consistent.
///
/// SSNs are totally ordered and start at [`Ssn::ZERO`], which no transaction ever takes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Ssn(pub u64);

impl Ssn {
    /// The SSN before every transaction: the wssn of data loaded from nothing.
    pub const ZERO: Ssn = Ssn(0);

    /// The next SSN.
    #[must_use]
    pub fn next(self) -> Ssn {
        Ssn(self.0 + 1)
    }
}

impl fmt::Display for Ssn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
