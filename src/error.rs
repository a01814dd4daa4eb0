//! The error types of the crate.
//!
//! Codecs fail with a [`Fault`]: a reason and the byte offset inside the message where it was
//! found. The batch driver, which knows the protocol and which message of the batch it was
//! reading, turns it into a [`DecodeError`]. Keeping the two apart lets every leaf parser report
//! an offset without threading the message index through all of them. Encoding fails on an
//! input row, not inside a message, so its drivers report an [`EncodeError`] naming the row.
//!
//! A call that is wrong as a whole — bad options, an input batch without the columns it needs or
//! with columns of the wrong type — is no fault of any message: it is a [`UsageError`]. The batch
//! drivers return an [`Error`], which says which of these happened.

use std::fmt;

/// Why and where a message could not be read: the reason and the byte offset in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub offset: usize,
    pub reason: String,
}

impl Fault {
    /// Out of line and cold: every caller's error branch shrinks to a call, which keeps the hot
    /// paths of the decoders dense in the instruction cache.
    #[cold]
    #[inline(never)]
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
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: message {} at byte {}: {}", self.protocol, self.message_index, self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

/// A call that is wrong as a whole, whatever the messages hold: an unknown option or option
/// value, an input batch without a column it needs or with a column of the wrong type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The protocol the decoder or encoder was made for (`auto` when detected per message).
    pub protocol: &'static str,
    pub reason: String,
}

impl UsageError {
    pub fn new(protocol: &'static str, reason: impl Into<String>) -> Self {
        UsageError { protocol, reason: reason.into() }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.protocol, self.reason)
    }
}

impl std::error::Error for UsageError {}

/// Why a call of a batch driver failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A message could not be decoded (under `on_error="raise"`).
    Decode(DecodeError),
    /// An input row could not be encoded, or the encoder could not complete its last message.
    Encode(EncodeError),
    /// The call is wrong as a whole: options or the input batch's columns.
    Usage(UsageError),
    /// A bug of this crate (Arrow refused an array it built); no input should cause one.
    Internal(UsageError),
}

impl Error {
    pub fn usage(protocol: &'static str, reason: impl Into<String>) -> Self {
        Error::Usage(UsageError::new(protocol, reason))
    }

    pub fn internal(protocol: &'static str, reason: impl fmt::Display) -> Self {
        Error::Internal(UsageError::new(protocol, format!("internal error: {reason}")))
    }

    /// The message fault, when that is what this is.
    pub fn as_decode(&self) -> Option<&DecodeError> {
        match self {
            Error::Decode(e) => Some(e),
            _ => None,
        }
    }

    pub fn as_encode(&self) -> Option<&EncodeError> {
        match self {
            Error::Encode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e)
    }
}

impl From<EncodeError> for Error {
    fn from(e: EncodeError) -> Self {
        Error::Encode(e)
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        Error::Usage(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Decode(e) => e.fmt(f),
            Error::Encode(e) => e.fmt(f),
            Error::Usage(e) | Error::Internal(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// A batch that could not be encoded: the row whose event could not be written, or none when
/// the message being completed at the batch's end could not be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    pub protocol: &'static str,
    pub row: Option<usize>,
    pub reason: String,
}

impl EncodeError {
    pub fn at_end(protocol: &'static str, fault: Fault) -> Self {
        EncodeError { protocol, row: None, reason: fault.reason }
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
