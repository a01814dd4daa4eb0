//! One codec per protocol, behind one trait.
//!
//! A codec knows its wire format and nothing else: it reads one Kafka message (key and value)
//! into the shared [`MessageEvents`] model, and the Arrow layer takes it from there. Framing
//! concerns that every protocol shares — whole-value compression, claim-check files, error
//! policy, message indexes — live in the batch driver ([`crate::arrow::BatchDecoder`]).

pub mod canal_json;

use crate::error::FaultResult;
use crate::event::MessageEvents;

/// The protocols of the contract, by their fixed names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Open,
    Craft,
    CanalJson,
    SimpleJson,
    SimpleAvro,
}

impl Protocol {
    pub const ALL: [Protocol; 5] =
        [Protocol::Open, Protocol::Craft, Protocol::CanalJson, Protocol::SimpleJson, Protocol::SimpleAvro];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Open => "open",
            Protocol::Craft => "craft",
            Protocol::CanalJson => "canal-json",
            Protocol::SimpleJson => "simple-json",
            Protocol::SimpleAvro => "simple-avro",
        }
    }

    pub fn from_name(name: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether TiCDC's large-message compression covers the whole Kafka value (as opposed to
    /// each event inside the framing, as in `open`).
    pub fn compresses_whole_value(self) -> bool {
        matches!(self, Protocol::CanalJson | Protocol::SimpleJson | Protocol::SimpleAvro)
    }

    /// The codec for this protocol, or None while it is not implemented.
    pub fn codec(self) -> Option<Box<dyn Codec>> {
        match self {
            Protocol::CanalJson => Some(Box::new(canal_json::CanalJsonCodec::default())),
            _ => None,
        }
    }

    /// Guesses the protocol of one uncompressed message from its first bytes.
    pub fn detect(key: Option<&[u8]>, value: &[u8]) -> Option<Protocol> {
        const OPEN_VERSION: [u8; 8] = [0, 0, 0, 0, 0, 0, 0, 1];
        if key.is_some_and(|k| k.starts_with(&OPEN_VERSION)) {
            return Some(Protocol::Open);
        }
        let first = value.iter().copied().find(|b| !b.is_ascii_whitespace())?;
        if first == b'{' {
            let is_canal = memchr::memmem::find(value, b"\"isDdl\"").is_some();
            return Some(if is_canal { Protocol::CanalJson } else { Protocol::SimpleJson });
        }
        match value.first() {
            Some(0x01) => Some(Protocol::Craft),
            // Simple's Avro union index for its message record is a zigzag varint.
            Some(_) => Some(Protocol::SimpleAvro),
            None => None,
        }
    }
}

/// A protocol's decoder for single messages.
pub trait Codec: Send + Sync {
    fn protocol(&self) -> Protocol;

    /// Reads one message, appending its events to `out`. On a fault `out` may hold part of the
    /// message; the caller discards it.
    fn decode<'a>(
        &mut self,
        key: Option<&'a [u8]>,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<()>;
}
