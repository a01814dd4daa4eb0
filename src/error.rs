//! The error types of the crate.
//!
//! Codecs fail with a [`Fault`]: a reason and the byte offset inside the message where it was
//! found. The batch driver, which knows the protocol and which message of the batch it was
//! reading, turns it into a [`DecodeError`]. Keeping the two apart lets every leaf parser report
//! an offset without threading the message index through all of them. Encoding fails on an
//! input row, not inside a message, so its drivers report an [`EncodeError`] naming the row.

use std::fmt;

/// Why and where a message could not be read: the reason and the byte offset in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub offset: usize,
    pub reason: String,
}

impl Fault {
    pub fn new(offset: usize, reason: impl Into<String>) -> Self {
        Fault { offset, reason: reason.into() }
    }
}

pub type FaultResult<T> = std::result::Result<T, Fault>;

/// A message that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The protocol name as the contract spells it (`canal-json`, `open`, ...).
    pub protocol: &'static str,
    /// Index of the message in the input batch.
    pub message_index: usize,
    /// Byte offset in the message (the value; the key for key-side faults of `open`).
    pub offset: usize,
    pub reason: String,
}

impl DecodeError {
    pub fn from_fault(protocol: &'static str, message_index: usize, fault: Fault) -> Self {
        DecodeError { protocol, message_index, offset: fault.offset, reason: fault.reason }
    }

    /// An error that concerns the call as a whole (bad options, a missing column).
    pub fn usage(protocol: &'static str, reason: impl Into<String>) -> Self {
        DecodeError { protocol, message_index: 0, offset: 0, reason: reason.into() }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: message {} at byte {}: {}", self.protocol, self.message_index, self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

pub type Result<T> = std::result::Result<T, DecodeError>;

/// A batch that could not be encoded: the row whose event could not be written, or none when the
/// call as a whole is wrong (options, a missing column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    pub protocol: &'static str,
    pub row: Option<usize>,
    pub reason: String,
}

impl EncodeError {
    pub fn usage(protocol: &'static str, reason: impl Into<String>) -> Self {
        EncodeError { protocol, row: None, reason: reason.into() }
    }

    pub fn at_row(protocol: &'static str, row: usize, fault: Fault) -> Self {
        EncodeError { protocol, row: Some(row), reason: fault.reason }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.row {
            Some(row) => write!(f, "{}: row {}: {}", self.protocol, row, self.reason),
            None => write!(f, "{}: {}", self.protocol, self.reason),
        }
    }
}

impl std::error::Error for EncodeError {}
