//! One codec per protocol, behind one trait.
//!
//! A codec knows its wire format and nothing else: it reads one Kafka message (key and value)
//! into the shared [`MessageEvents`] model, and the Arrow layer takes it from there. Framing
//! concerns that every protocol shares — whole-value compression, claim-check files, error
//! policy, message indexes — live in the batch driver ([`crate::arrow::BatchDecoder`]).

pub mod canal_json;
pub mod canal_json_encode;
pub mod large;

use std::path::PathBuf;

use crate::arrow::Compression;
use crate::error::FaultResult;
use crate::event::{Event, MessageEvents};

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

    /// The encoder for this protocol, or None while it is not implemented.
    pub fn encoder(self, options: &EncodeOptions) -> Option<Box<dyn Encode>> {
        match self {
            Protocol::CanalJson => Some(Box::new(canal_json_encode::CanalJsonEncoder::new(options))),
            _ => None,
        }
    }

    /// The codec for this protocol, or None while it is not implemented.
    pub fn codec(self, _options: &CodecOptions) -> Option<Box<dyn Codec>> {
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

/// What a decoding codec is told about the stream (the rest it reads from the messages).
#[derive(Debug, Clone)]
pub struct CodecOptions {
    /// `large-message-handle-compression`: whole values are undone by the batch driver; `open`
    /// compresses each event inside its framing and undoes it itself.
    pub compression: Compression,
    /// simple: check row checksums; a mismatch fails the message.
    pub verify_checksum: bool,
    /// simple: how many messages may wait for their table's schema before the oldest is failed.
    pub max_pending: usize,
}

impl Default for CodecOptions {
    fn default() -> Self {
        CodecOptions { compression: Compression::None, verify_checksum: false, max_pending: 100_000 }
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

    /// The definition of a table this codec has learnt from the stream (Simple's BOOTSTRAP and
    /// DDL messages), for schema inference.
    fn table_definition(&self, _schema: &str, _table: &str) -> Option<crate::table::TableDefinition> {
        None
    }
}

/// One Kafka record as an encoder writes it. Only `open` sets a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
}

/// TiCDC's `large-message-handle-option`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LargeMessageHandle {
    None,
    HandleKeyOnly,
    ClaimCheck,
}

impl LargeMessageHandle {
    pub fn parse(s: &str) -> Option<LargeMessageHandle> {
        match s {
            "none" | "" => Some(LargeMessageHandle::None),
            "handle-key-only" | "handle_key_only" => Some(LargeMessageHandle::HandleKeyOnly),
            "claim-check" | "claim_check" => Some(LargeMessageHandle::ClaimCheck),
            _ => None,
        }
    }
}

/// TiCDC's sink options that shape the bytes, with TiCDC's defaults. Each encoder reads the
/// ones its protocol knows and ignores the rest.
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// canal-json: write the `_tidb` extension (commit ts, watermarks, large-message markers).
    pub enable_tidb_extension: bool,
    /// open: write the old image (`p`) of UPDATEs.
    pub output_old_value: bool,
    /// canal-json: full MySQL type descriptions and Canal's own field set.
    pub content_compatible: bool,
    /// UPDATE's old image keeps only the columns that changed.
    pub only_output_updated_columns: bool,
    /// DELETE carries only the handle-key columns.
    pub delete_only_output_handle_key_columns: bool,
    /// `large-message-handle-compression`.
    pub compression: Compression,
    /// Kafka's `max.message.bytes` as TiCDC applies it.
    pub max_message_bytes: usize,
    /// Events per message for the batching protocols (open, craft).
    pub max_batch_size: usize,
    pub large_message_handle: LargeMessageHandle,
    /// Where claim-check files are written (a local directory).
    pub claim_check_dir: Option<PathBuf>,
    /// Claim-check files hold the raw value instead of `{"key","value"}` JSON.
    pub claim_check_raw_value: bool,
    /// simple: compute and write row checksums.
    pub enable_row_checksum: bool,
    /// simple: write a BOOTSTRAP before a table's first event.
    pub send_bootstrap: bool,
    /// The TiCDC server's time zone, for TIMESTAMP values written from typed Arrow columns.
    pub timezone: String,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions {
            enable_tidb_extension: false,
            output_old_value: true,
            content_compatible: false,
            only_output_updated_columns: false,
            delete_only_output_handle_key_columns: false,
            compression: Compression::None,
            max_message_bytes: 10 * 1024 * 1024,
            max_batch_size: 16,
            large_message_handle: LargeMessageHandle::None,
            claim_check_dir: None,
            claim_check_raw_value: false,
            enable_row_checksum: false,
            send_bootstrap: true,
            timezone: "UTC".into(),
        }
    }
}

/// A protocol's encoder: events in, Kafka records out. Batching protocols hold a partly filled
/// message between calls; [`Encode::flush`] completes it. A fault's offset is meaningless here;
/// the batch driver reports the row.
pub trait Encode: Send {
    fn protocol(&self) -> Protocol;

    /// Encodes `event`, whose row images and key names live in `events`, appending every record
    /// it completes to `out`.
    fn encode(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()>;

    /// Completes the message being filled, if any.
    fn flush(&mut self, _out: &mut Vec<Record>) -> FaultResult<()> {
        Ok(())
    }
}
