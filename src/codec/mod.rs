//! One folder per protocol, each laid out the same way: `mod.rs` (the wire format's shape and
//! constants), `decode.rs` (a [`Codec`]: one Kafka message into the shared [`MessageEvents`]
//! model) and `encode.rs` (an [`Encode`]r: events into Kafka records), plus the protocol's own
//! helpers (Open's Go text forms, Craft's cursor, Simple's schema cache and two flavours).
//!
//! A codec knows its wire format and nothing else; the Arrow layer takes it from there. What
//! every protocol shares — whole-value compression, claim-check files ([`crate::input`]), the
//! error policy, message indexes — is applied by the batch driver ([`crate::arrow::BatchDecoder`]).

pub mod canal_json;
pub mod craft;
pub mod open;
pub mod simple;

use std::path::PathBuf;

use crate::columns::TableColumns;
use crate::error::FaultResult;
use crate::event::{Event, MessageEvents};
use crate::input::{Compression, Protocol};

impl Protocol {
    /// The encoder for this protocol (every protocol has one).
    pub fn encoder(self, options: &EncodeOptions) -> Option<Box<dyn Encode>> {
        match self {
            Protocol::Open => Some(Box::new(open::OpenEncoder::new(options.clone()))),
            Protocol::Craft => Some(Box::new(craft::CraftEncoder::new(options))),
            Protocol::SimpleJson => Some(Box::new(simple::encode::SimpleEncoder::new(simple::Encoding::Json, options))),
            Protocol::SimpleAvro => Some(Box::new(simple::encode::SimpleEncoder::new(simple::Encoding::Avro, options))),
            Protocol::CanalJson => Some(Box::new(canal_json::CanalJsonEncoder::new(options))),
        }
    }

    /// The decoder for this protocol (every protocol has one).
    pub fn codec(self, options: &CodecOptions) -> Option<Box<dyn Codec>> {
        match self {
            Protocol::CanalJson => Some(Box::new(canal_json::CanalJsonCodec::default())),
            Protocol::Open => Some(Box::new(open::OpenCodec::new(options.compression))),
            Protocol::Craft => Some(Box::new(craft::CraftCodec::default())),
            Protocol::SimpleJson => Some(Box::new(simple::SimpleCodec::new(simple::Encoding::Json, options))),
            Protocol::SimpleAvro => Some(Box::new(simple::SimpleCodec::new(simple::Encoding::Avro, options))),
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
    /// simple: table schemas known before the stream starts (see [`DecodeOptions::table_schemas`]).
    ///
    /// [`DecodeOptions::table_schemas`]: crate::arrow::DecodeOptions::table_schemas
    pub table_schemas: Vec<simple::TableSchema>,
}

impl Default for CodecOptions {
    fn default() -> Self {
        CodecOptions {
            compression: Compression::None,
            verify_checksum: false,
            max_pending: 100_000,
            table_schemas: Vec::new(),
        }
    }
}

/// A protocol's decoder for single messages.
pub trait Codec: Send + Sync {
    fn protocol(&self) -> Protocol;

    /// Reads one message, appending its events to `out`. On a fault `out` may hold part of the
    /// message; the caller discards it.
    fn decode<'a>(&mut self, key: Option<&'a [u8]>, value: &'a [u8], out: &mut MessageEvents<'a>) -> FaultResult<()>;

    /// Reads one message straight into `rows` where it can: the message's events are in `out`,
    /// without images, and their rows in `rows`. Returns false for a message it leaves to
    /// [`Codec::decode`], found out before or part-way. After false or a fault, `rows` and `out`
    /// may hold part of the message, which the caller takes back; it then reads the message
    /// with [`Codec::decode`], which reports the fault, so a fault here need not be exact.
    fn decode_rows<'a>(
        &mut self,
        _key: Option<&'a [u8]>,
        _value: &'a [u8],
        _out: &mut MessageEvents<'a>,
        _rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        Ok(false)
    }

    /// The definition of a table this codec has learnt from the stream (Simple's BOOTSTRAP and
    /// DDL messages), for schema inference.
    fn table_definition(&self, _schema: &str, _table: &str) -> Option<crate::schema::table::TableDefinition> {
        None
    }

    /// Called by the driver after every message, with where that message came from: hands over
    /// the messages this codec held back earlier (Simple: rows that arrived before their table's
    /// schema) whose wait is over — released ones to be decoded again now, failed ones to be
    /// reported. A message the codec has just held is tagged with `origin`; returns whether the
    /// message at `origin` is now held.
    fn take_held(&mut self, _origin: MessageOrigin, _out: &mut Vec<HeldMessage>) -> bool {
        false
    }

    /// End of stream: every message still held, as a failure.
    fn expire_held(&mut self, _out: &mut Vec<HeldMessage>) {}

    /// Codec-specific counters for `Decoder.stats`.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Where a message came from: the serial number of the `BatchDecoder::decode` call (from 1)
/// and the message's index in that call's input batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageOrigin {
    pub batch: u64,
    pub message: usize,
}

/// A message a codec held back, handed back to the driver.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldMessage {
    pub origin: MessageOrigin,
    pub key: Option<Vec<u8>>,
    /// The value as the codec saw it (after whole-value decompression).
    pub value: Vec<u8>,
    /// None: decode it again now. Some: why it can no longer be decoded.
    pub failure: Option<crate::error::Fault>,
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
    /// simple: write a BOOTSTRAP before a table's first event, and again as the next two say.
    pub send_bootstrap: bool,
    /// simple: `send-bootstrap-in-msg-count`: a BOOTSTRAP again after this many row messages of
    /// the table (0: never for this reason).
    pub send_bootstrap_in_msg_count: u64,
    /// simple: `send-bootstrap-interval-in-sec`: a BOOTSTRAP again before a row once this long
    /// has passed since the table's last one (0: never for this reason).
    pub send_bootstrap_interval_in_sec: u64,
    /// The TiCDC server's time zone, for TIMESTAMP values written from typed Arrow columns.
    pub timezone: String,
    /// simple: the `buildTs` (ms) to write; None writes the wall clock, as TiCDC does.
    pub build_ts: Option<i64>,
    /// canal-json: `output-row-key`: write each row's TiKV key as `_tidb.rowkey` (with
    /// `enable_tidb_extension` only, as TiCDC does).
    pub output_row_key: bool,
    /// simple (JSON): `simple-include-start-ts`: write the transaction's `startTs` in DML messages.
    pub simple_include_start_ts: bool,
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
            send_bootstrap_in_msg_count: 10_000,
            send_bootstrap_interval_in_sec: 120,
            timezone: "UTC".into(),
            build_ts: None,
            output_row_key: false,
            simple_include_start_ts: false,
        }
    }
}

impl EncodeOptions {
    /// Sets one option by TiCDC's sink option name in snake case (`output_old_value`) or its
    /// own kebab-case spelling, from its text (`true`, `16`, `snappy`, `handle-key-only`).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let flag = || match value {
            "true" | "True" | "1" => Ok(true),
            "false" | "False" | "0" => Ok(false),
            _ => Err(format!("option {name}: expected true or false, got {value:?}")),
        };
        let size = || value.parse::<usize>().map_err(|_| format!("option {name}: expected a size, got {value:?}"));
        match name.replace('-', "_").as_str() {
            "enable_tidb_extension" => self.enable_tidb_extension = flag()?,
            "output_old_value" => self.output_old_value = flag()?,
            "content_compatible" => self.content_compatible = flag()?,
            "only_output_updated_columns" => self.only_output_updated_columns = flag()?,
            "delete_only_output_handle_key_columns" => self.delete_only_output_handle_key_columns = flag()?,
            "compression" | "large_message_handle_compression" => {
                self.compression = Compression::parse(value).ok_or_else(|| format!("unknown compression {value:?}"))?
            }
            "max_message_bytes" => self.max_message_bytes = size()?,
            "max_batch_size" => self.max_batch_size = size()?.max(1),
            "large_message_handle_option" | "large_message_handle" => {
                self.large_message_handle = LargeMessageHandle::parse(value)
                    .ok_or_else(|| format!("unknown large_message_handle_option {value:?}"))?
            }
            "claim_check_dir" | "claim_check_storage_uri" => {
                self.claim_check_dir = Some(PathBuf::from(value.strip_prefix("file://").unwrap_or(value)))
            }
            "claim_check_raw_value" => self.claim_check_raw_value = flag()?,
            "enable_row_checksum" => self.enable_row_checksum = flag()?,
            "send_bootstrap" => self.send_bootstrap = flag()?,
            "send_bootstrap_in_msg_count" => self.send_bootstrap_in_msg_count = size()? as u64,
            "send_bootstrap_interval_in_sec" => self.send_bootstrap_interval_in_sec = size()? as u64,
            "timezone" | "time_zone" => self.timezone = value.to_string(),
            "output_row_key" => self.output_row_key = flag()?,
            "simple_include_start_ts" | "include_start_ts" => self.simple_include_start_ts = flag()?,
            "build_ts" => {
                self.build_ts =
                    Some(value.parse().map_err(|_| format!("option {name}: expected milliseconds, got {value:?}"))?)
            }
            _ => return Err(format!("unknown encoder option {name:?}")),
        }
        Ok(())
    }
}

/// A protocol's encoder: events in, Kafka records out. Batching protocols hold a partly filled
/// message between calls; [`Encode::flush`] completes it. A fault's offset is meaningless here;
/// the batch driver reports the row.
pub trait Encode: Send + Sync {
    fn protocol(&self) -> Protocol;

    /// Encodes `event`, whose row images and key names live in `events`, appending every record
    /// it completes to `out`.
    fn encode(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()>;

    /// Completes the message being filled, if any.
    fn flush(&mut self, _out: &mut Vec<Record>) -> FaultResult<()> {
        Ok(())
    }

    /// Where the next events' records go. A protocol that tells each consumer a table's schema
    /// before its rows (Simple's BOOTSTRAP) tells every destination.
    fn set_destination(&mut self, _destination: &Destination) {}
}

/// A Kafka topic and partition, each where the input names them.
pub type Destination = (Option<String>, Option<i32>);

/// Go's `FormatFloat(v, 'f', -1, bits)`: shortest round-trip digits (`shortest`, in the value's
/// own width), never an exponent; `NaN`, `+Inf` and `-Inf` otherwise.
pub(crate) fn float_text(v: f64, shortest: impl FnOnce() -> String) -> String {
    match (v.is_finite(), v.is_nan(), v > 0.0) {
        (true, _, _) => shortest(),
        (false, true, _) => "NaN".into(),
        (false, false, true) => "+Inf".into(),
        (false, false, false) => "-Inf".into(),
    }
}

/// Room for the one value a JSON codec is decoding on its way into its column (a string with
/// escapes, a binary string in the protocol's text form), kept from one value to the next.
#[derive(Default)]
pub(crate) struct ValueScratch {
    pub(crate) text: String,
    pub(crate) bytes: Vec<u8>,
}

impl ValueScratch {
    /// The most room kept after a message: one large value is not held for the decoder's life.
    const MAX_KEPT: usize = 1 << 20;

    pub(crate) fn release_large(&mut self) {
        if self.text.capacity() > Self::MAX_KEPT {
            self.text = String::new();
        }
        if self.bytes.capacity() > Self::MAX_KEPT {
            self.bytes = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    use crate::event::{MessageEvents, Value};

    /// A message's key (if any) and value.
    type Message = (Option<Vec<u8>>, Vec<u8>);

    /// A long value first, then shorter ones: a recycled buffer that kept anything of an earlier
    /// value would show it in a later one.
    const TEXTS: [&str; 4] = [
        r#"{\"k\":\"a rather long document, to leave a long buffer behind \u00e9\u00e9\",\"n\":[1,2,3]}"#,
        r#"{\"k\":\"v\"}"#,
        r#"x\ny"#,
        "plain",
    ];

    fn canal(text: &str) -> Message {
        let m = format!(
            r#"{{"id":0,"database":"d","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1,"ts":1,"sql":"","sqlType":{{"id":4,"j":12,"b":2004}},"mysqlType":{{"id":"int","j":"json","b":"varbinary(9)"}},"data":[{{"id":"1","j":"{text}","b":"{text}"}}],"old":null}}"#
        );
        (None, m.into_bytes())
    }

    fn open(text: &str) -> Message {
        use base64::Engine;
        let key_item = br#"{"ts":1,"scm":"d","tbl":"t","t":1}"#;
        let decoded: String = serde_json::from_str(&format!("\"{text}\"")).unwrap();
        let blob = base64::engine::general_purpose::STANDARD.encode(decoded.as_bytes());
        // Go-quoted bytes, as long as the text.
        let quoted = r"\\x00".repeat(text.len() / 4 + 1);
        let value_item = format!(
            r#"{{"u":{{"j":{{"t":245,"f":0,"v":"{text}"}},"x":{{"t":252,"f":0,"v":"{blob}"}},"b":{{"t":15,"f":1,"v":"{quoted}"}}}}}}"#
        );
        let sized = |item: &[u8]| [(item.len() as u64).to_be_bytes().as_slice(), item].concat();
        // The key batch starts with the batch version; the value batch does not.
        (Some([1u64.to_be_bytes().to_vec(), sized(key_item)].concat()), sized(value_item.as_bytes()))
    }

    fn simple(text: &str) -> Message {
        let m = format!(
            r#"{{"version":1,"database":"d","table":"t","tableID":1,"type":"INSERT","commitTs":1,"buildTs":1,"schemaVersion":1,"data":{{"id":"1","j":"{text}","b":"AAEC"}}}}"#
        );
        (None, m.into_bytes())
    }

    const SIMPLE_SCHEMA: &str = r#"{"version":1,"type":"BOOTSTRAP","commitTs":0,"buildTs":1,"tableSchema":{"schema":"d","table":"t","tableID":1,"version":1,"columns":[{"name":"id","dataType":{"mysqlType":"int","charset":"binary","collate":"binary","length":11},"nullable":false,"default":null},{"name":"j","dataType":{"mysqlType":"json","charset":"binary","collate":"binary","length":0},"nullable":true,"default":null},{"name":"b","dataType":{"mysqlType":"varbinary","charset":"binary","collate":"binary","length":9},"nullable":true,"default":null}],"indexes":[]}}"#;

    fn decoded<'a>(codec: &mut dyn Codec, (key, value): &'a Message, out: &mut MessageEvents<'a>) -> String {
        out.clear();
        match codec.decode(key.as_deref(), value, out) {
            Ok(()) => format!("{:?} {:?}", out.events, out.columns),
            Err(fault) => format!("{fault:?}"),
        }
    }

    /// One `MessageEvents` cleared between messages, which recycles the buffers of unescaped,
    /// base64 and Go-unquoted values, reads each message as a fresh one does.
    #[test]
    fn recycled_value_buffers_read_every_message_as_a_fresh_one() {
        let cases = [
            (Protocol::CanalJson, canal as fn(&str) -> Message),
            (Protocol::Open, open),
            (Protocol::SimpleJson, simple),
        ];
        for (protocol, message) in cases {
            let mut messages: Vec<_> = TEXTS.iter().chain(TEXTS.iter().rev()).map(|t| message(t)).collect();
            if protocol == Protocol::SimpleJson {
                messages.insert(0, (None, SIMPLE_SCHEMA.as_bytes().to_vec()));
            }
            let (mut recycling, mut fresh) =
                (protocol.codec(&CodecOptions::default()).unwrap(), protocol.codec(&CodecOptions::default()).unwrap());
            let mut reused = MessageEvents::default();
            let mut owned_values = 0;
            for (i, m) in messages.iter().enumerate() {
                let got = decoded(recycling.as_mut(), m, &mut reused);
                assert_eq!(got, decoded(fresh.as_mut(), m, &mut MessageEvents::default()), "{protocol:?} message {i}");
                assert!(!got.contains("Fault"), "{protocol:?} message {i}: {got}");
                owned_values += reused
                    .columns
                    .iter()
                    .filter(|c| matches!(&c.value, Value::Text(Cow::Owned(_)) | Value::Bytes(Cow::Owned(_))))
                    .count();
            }
            assert!(owned_values >= 8, "{protocol:?}: the values under test must need their own buffers");
        }
    }

    #[test]
    fn decoded_values_keep_their_room_only_up_to_the_bound() {
        let mut decoded = ValueScratch::default();
        decoded.text.push_str(&"x".repeat(100));
        decoded.release_large();
        assert!(decoded.text.capacity() >= 100);
        decoded.text.push_str(&"x".repeat(ValueScratch::MAX_KEPT));
        decoded.bytes.resize(ValueScratch::MAX_KEPT + 1, 0);
        decoded.release_large();
        assert_eq!((decoded.text.capacity(), decoded.bytes.capacity()), (0, 0));
    }
}
