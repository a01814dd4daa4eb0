//! From Arrow batches of Kafka messages to Arrow batches of events.
//!
//! [`BatchDecoder`] is the one driver every protocol goes through. It reads the `key`/`value`
//! columns in place, undoes whole-value compression, resolves claim-check files, asks the codec
//! for each message's events, applies the error policy, and hands the events to a [`Layout`]
//! (envelope or typed) that owns the Arrow builders. Columns named in `carry` are copied from the
//! input onto each event with one `take` at the end of the batch; a message a codec holds into a
//! later batch (a Simple row waiting for its schema) has its carried values copied out when it is
//! held, so that its rows carry them whenever they come out.

pub mod encode;
pub(crate) mod envelope;
pub mod infer;
pub(crate) mod meta_columns;
pub mod read_events;
pub(crate) mod typed;

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_schema::{Field, FieldRef, Schema, SchemaRef};

use crate::codec::simple::TableSchema;
use crate::codec::{Codec, CodecOptions, HeldMessage, MessageOrigin};
use crate::columns::TableColumns;
use crate::error::{DecodeError, Error, Fault, FaultResult, Result};
use crate::event::{MessageEvents, SpareBuffers};
use crate::input::claim_check::read_claim_check;
use crate::input::{prefetch, Bytes, Compression, Protocol};
use crate::schema::{ServerZone, TableName};

pub use crate::columns::MAX_COLUMN_BYTES;

/// Where a layout's Arrow columns come from: the events of each message, in order.
pub trait Layout: Send + Sync {
    fn fields(&self) -> Vec<FieldRef>;

    /// The buffers of the input `value` column of the batch now decoded, which borrowed values
    /// may point into (see `views`).
    fn set_input(&mut self, _buffers: &[arrow_buffer::Buffer]) {}

    /// Whether an event belongs in the output (the typed layout keeps only its table).
    fn keeps(&self, _event: &crate::event::Event<'_>) -> bool {
        true
    }

    /// Appends the events `kept` (indexes into `events.events`), all or none.
    fn append(&mut self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()>;

    /// Where codecs may put row values directly, if the layout takes them so.
    fn table_columns(&mut self) -> Option<&mut TableColumns> {
        None
    }

    /// The layout's part of an ERROR row.
    fn append_null(&mut self);

    fn finish(&mut self) -> Vec<ArrayRef>;

    /// Layout-specific counters for `Decoder.stats`.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    Raise,
    Skip,
    Collect,
}

impl OnError {
    pub fn parse(s: &str) -> Option<OnError> {
        match s {
            "raise" => Some(OnError::Raise),
            "skip" => Some(OnError::Skip),
            "collect" => Some(OnError::Collect),
            _ => None,
        }
    }
}

/// Which layout to build, with what it needs.
#[derive(Debug, Clone)]
pub enum LayoutOptions {
    Envelope,
    /// One table's columns, as `schema` declares them (types per the contract); the output
    /// schema carries its metadata (`primary_key`), so that typed output re-encodes with its keys.
    Typed {
        table: TableName,
        schema: SchemaRef,
    },
}

#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// None: detect the protocol of each message.
    pub protocol: Option<Protocol>,
    pub layout: LayoutOptions,
    pub on_error: OnError,
    pub compression: Compression,
    pub claim_check_dir: Option<PathBuf>,
    /// The TiCDC server's time zone, in which TIMESTAMP values are written.
    pub timezone: String,
    pub key_column: String,
    pub value_column: String,
    /// Input columns copied onto each event as `_<name>`, with their types.
    pub carry: Vec<FieldRef>,
    /// simple: verify row checksums.
    pub verify_checksum: bool,
    /// simple: messages held while waiting for their table's schema.
    pub max_pending: usize,
    /// simple: table schemas to start with, as if BOOTSTRAP messages had brought them. A
    /// consumer that starts mid-stream (each micro-batch of a Spark streaming query does) reads
    /// rows at once that would otherwise wait for the table's next BOOTSTRAP.
    pub table_schemas: Vec<TableSchema>,
}

impl DecodeOptions {
    pub fn codec_options(&self) -> CodecOptions {
        CodecOptions {
            compression: self.compression,
            verify_checksum: self.verify_checksum,
            max_pending: self.max_pending,
            table_schemas: self.table_schemas.clone(),
        }
    }
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            protocol: None,
            layout: LayoutOptions::Envelope,
            on_error: OnError::Raise,
            compression: Compression::None,
            claim_check_dir: None,
            timezone: "UTC".into(),
            key_column: "key".into(),
            value_column: "value".into(),
            carry: Vec::new(),
            verify_checksum: false,
            max_pending: CodecOptions::default().max_pending,
            table_schemas: Vec::new(),
        }
    }
}

/// Counts since the decoder was made.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub messages: u64,
    pub events: u64,
    /// Messages that failed (raised, skipped or collected).
    pub errors: u64,
    /// Events of other tables left out by the typed layout.
    pub filtered: u64,
}

pub struct BatchDecoder {
    options: DecodeOptions,
    codecs: Vec<Box<dyn Codec>>,
    layout: Box<dyn Layout>,
    meta: meta_columns::MetaBuilder,
    schema: SchemaRef,
    kept: Vec<usize>,
    stats: Stats,
    /// Serial number of the current `decode` call, from 1: tells held messages' origins apart.
    batch: u64,
    held: Vec<HeldMessage>,
    /// The carried values of messages held past their batch: one single-row array per carry
    /// column, by where the message came from.
    held_carry: rustc_hash::FxHashMap<MessageOrigin, Vec<ArrayRef>>,
    /// The Kafka values, as they came, of held messages whose whole value was compressed: a
    /// codec holds the decompressed bytes, but an ERROR row carries the message's raw bytes.
    held_raw: rustc_hash::FxHashMap<MessageOrigin, Vec<u8>>,
    /// Output rows of this batch decoded from messages of an earlier batch, with their origin.
    earlier_rows: Vec<(Range<usize>, MessageOrigin)>,
    /// The codecs' value buffers, kept from one batch to the next (see [`SpareBuffers`]).
    spare: SpareBuffers,
}

impl BatchDecoder {
    pub fn new(options: DecodeOptions) -> Result<BatchDecoder> {
        let name = options.protocol.map_or("auto", Protocol::name);
        if let Some(p) = options.protocol {
            if p.codec(&options.codec_options()).is_none() {
                return Err(Error::usage(name, format!("protocol {name} is not supported yet")));
            }
        }
        let zone = ServerZone::parse(&options.timezone)
            .ok_or_else(|| Error::usage(name, format!("unknown time zone {:?}", options.timezone)))?;
        let layout: Box<dyn Layout> = match &options.layout {
            LayoutOptions::Envelope => Box::new(envelope::EnvelopeLayout::default()),
            LayoutOptions::Typed { table, schema } => Box::new(
                typed::TypedLayout::new(table.clone(), schema.fields(), zone).map_err(|e| Error::usage(name, e))?,
            ),
        };
        let metadata = match &options.layout {
            LayoutOptions::Envelope => HashMap::new(),
            LayoutOptions::Typed { schema, .. } => schema.metadata().clone(),
        };
        let collect = options.on_error == OnError::Collect;
        let mut fields = meta_columns::fields(collect);
        fields.extend(layout.fields());
        for f in &options.carry {
            fields.push(Arc::new(Field::new(format!("_{}", f.name()), f.data_type().clone(), true)));
        }
        Ok(BatchDecoder {
            schema: Arc::new(Schema::new_with_metadata(fields, metadata)),
            meta: meta_columns::MetaBuilder::new(collect),
            codecs: Vec::new(),
            layout,
            kept: Vec::new(),
            stats: Stats::default(),
            batch: 0,
            held: Vec::new(),
            held_carry: Default::default(),
            held_raw: Default::default(),
            earlier_rows: Vec::new(),
            spare: SpareBuffers::default(),
            options,
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    pub fn stats(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut out =
            vec![("messages", s.messages), ("events", s.events), ("errors", s.errors), ("filtered", s.filtered)];
        out.extend(self.layout.counters());
        for codec in &self.codecs {
            for (name, n) in codec.counters() {
                match out.iter_mut().find(|(k, _)| *k == name) {
                    Some((_, total)) => *total += n,
                    None => out.push((name, n)),
                }
            }
        }
        out
    }

    fn protocol_name(&self) -> &'static str {
        self.options.protocol.map_or("auto", Protocol::name)
    }

    /// Decodes every message of `batch`; one output row per event (or per failed message under
    /// `collect`).
    pub fn decode(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let name = self.protocol_name();
        let column = |col: &str, required: bool| -> Result<Option<Bytes<'_>>> {
            match batch.column_by_name(col) {
                Some(a) => Bytes::new(a.as_ref()).map(Some).ok_or_else(|| {
                    Error::usage(name, format!("column {col:?} must be binary or string, not {}", a.data_type()))
                }),
                None if required => Err(Error::usage(name, format!("input has no {col:?} column"))),
                None => Ok(None),
            }
        };
        let values = column(&self.options.value_column, true)?.expect("required");
        // Open messages cannot be read without their keys; other protocols keep none in them.
        let keys = column(&self.options.key_column, self.options.protocol == Some(Protocol::Open))?;
        self.batch += 1;
        self.layout.set_input(&values.buffers());
        let mut scratch = MessageEvents { spare: std::mem::take(&mut self.spare), ..Default::default() };
        for i in 0..batch.num_rows() {
            let key = keys.as_ref().and_then(|k| k.get(i));
            let value = values.get(i);
            if let Some(next) = (i + 1 < batch.num_rows()).then(|| values.get(i + 1)).flatten() {
                prefetch(next);
            }
            self.stats.messages += 1;
            scratch.clear();
            let result = match value {
                Some(v) => self.decode_message(i, key, v, &mut scratch),
                None => Err((name, Fault::new(0, "message value is null"))),
            };
            if let Err((protocol, fault)) = result {
                self.fail(protocol, i, fault, key, value)?;
            }
            self.settle_held(i, batch)?;
        }
        scratch.clear();
        self.spare = scratch.spare;
        self.finish(Some(batch))
    }

    /// End of stream: the messages codecs still hold (Simple rows whose schema never came)
    /// become errors under the error policy (ERROR rows with `collect`, counted with `skip`,
    /// raised with `raise`). Their `_message` is their index in the batch they came in, and their
    /// carried columns are theirs.
    pub fn flush(&mut self) -> Result<RecordBatch> {
        self.layout.set_input(&[]);
        let mut held = std::mem::take(&mut self.held);
        for c in 0..self.codecs.len() {
            self.codecs[c].expire_held(&mut held);
            let protocol = self.codecs[c].protocol();
            for h in held.drain(..) {
                self.replay_earlier(protocol, h)?;
            }
        }
        self.held = held;
        self.finish(None)
    }

    /// Applies the error policy to a message that failed.
    fn fail(
        &mut self,
        protocol: &'static str,
        index: usize,
        fault: Fault,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<()> {
        self.stats.errors += 1;
        let error = DecodeError::from_fault(protocol, index, fault);
        match self.options.on_error {
            OnError::Raise => {
                self.reset();
                return Err(error.into());
            }
            OnError::Skip => {}
            OnError::Collect => {
                self.meta.append_error(index, &error.to_string(), key, value);
                self.layout.append_null();
            }
        }
        Ok(())
    }

    /// After message `index` of `input`: takes the messages the codecs held earlier and whose
    /// wait is now over, and emits them right here — a released one decoded again, a dropped one
    /// as a failure. Their `_message` is their index in the batch they came in, and their carried
    /// columns are their own. If message `index` itself is now held, its carried values are kept.
    fn settle_held(&mut self, index: usize, input: &RecordBatch) -> Result<()> {
        let origin = MessageOrigin { batch: self.batch, message: index };
        let mut held = std::mem::take(&mut self.held);
        for c in 0..self.codecs.len() {
            if self.codecs[c].take_held(origin, &mut held) {
                if !self.options.carry.is_empty() {
                    let values = self.carried_values(input, &UInt32Array::from(vec![index as u32]))?;
                    self.held_carry.insert(origin, values);
                }
                if self.options.compression != Compression::None {
                    let raw = input.column_by_name(&self.options.value_column).and_then(|a| Bytes::new(a.as_ref()));
                    if let Some(raw) = raw.and_then(|values| values.get(index)) {
                        self.held_raw.insert(origin, raw.to_vec());
                    }
                }
            }
            let protocol = self.codecs[c].protocol();
            for h in held.drain(..) {
                if h.origin.batch == self.batch {
                    self.held_carry.remove(&h.origin);
                    self.replay(protocol, h.origin.message, h)?;
                } else {
                    self.replay_earlier(protocol, h)?;
                }
            }
        }
        self.held = held;
        Ok(())
    }

    /// Replays a message held from an earlier batch, noting which output rows it made.
    fn replay_earlier(&mut self, protocol: Protocol, h: HeldMessage) -> Result<()> {
        let (origin, from) = (h.origin, self.meta.rows());
        self.replay(protocol, origin.message, h)?;
        self.earlier_rows.push((from..self.meta.rows(), origin));
        Ok(())
    }

    fn replay(&mut self, protocol: Protocol, index: usize, h: HeldMessage) -> Result<()> {
        let raw = self.held_raw.remove(&h.origin);
        let result = match h.failure {
            Some(fault) => Err((protocol.name(), fault)),
            None => self.decode_with(protocol, index, h.key.as_deref(), &h.value, &mut MessageEvents::default()),
        };
        match result {
            Ok(()) => Ok(()),
            Err((name, fault)) => {
                let value = raw.as_deref().unwrap_or(&h.value);
                self.fail(name, index, fault, h.key.as_deref(), Some(value))
            }
        }
    }

    /// Drops whatever the builders hold (after a raised error), so the next batch starts clean.
    fn reset(&mut self) {
        self.meta.finish();
        self.layout.finish();
    }

    fn decode_message<'a>(
        &mut self,
        index: usize,
        key: Option<&'a [u8]>,
        value: &'a [u8],
        scratch: &mut MessageEvents<'a>,
    ) -> std::result::Result<(), (&'static str, Fault)> {
        let compression = self.options.compression;
        let mut protocol = self.options.protocol.or_else(|| Protocol::detect(key, value));
        let whole_value_compressed =
            compression != Compression::None && protocol.is_none_or(|p| p.compresses_whole_value());
        if whole_value_compressed {
            let name = protocol.map_or("auto", Protocol::name);
            let plain = compression.decompress(value).map_err(|f| (name, f))?;
            protocol = protocol.or_else(|| Protocol::detect(key, &plain));
            let mut events = MessageEvents::default();
            let protocol = self.require(protocol)?;
            return self.decode_with(protocol, index, key, &plain, &mut events);
        }
        let protocol = self.require(protocol)?;
        self.decode_with(protocol, index, key, value, scratch)
    }

    fn require(&self, protocol: Option<Protocol>) -> std::result::Result<Protocol, (&'static str, Fault)> {
        protocol.ok_or_else(|| (self.protocol_name(), Fault::new(0, "empty message: cannot tell its protocol")))
    }

    fn codec(&mut self, protocol: Protocol) -> std::result::Result<&mut Box<dyn Codec>, (&'static str, Fault)> {
        let at = self.codec_index(protocol)?;
        Ok(&mut self.codecs[at])
    }

    fn codec_index(&mut self, protocol: Protocol) -> std::result::Result<usize, (&'static str, Fault)> {
        if let Some(at) = self.codecs.iter().position(|c| c.protocol() == protocol) {
            return Ok(at);
        }
        let codec = protocol.codec(&self.options.codec_options()).ok_or_else(|| {
            (protocol.name(), Fault::new(0, format!("protocol {} is not supported yet", protocol.name())))
        })?;
        self.codecs.push(codec);
        Ok(self.codecs.len() - 1)
    }

    fn decode_with<'a>(
        &mut self,
        protocol: Protocol,
        index: usize,
        key: Option<&'a [u8]>,
        value: &'a [u8],
        events: &mut MessageEvents<'a>,
    ) -> std::result::Result<(), (&'static str, Fault)> {
        let name = protocol.name();
        let at = self.codec_index(protocol)?;
        if self.decode_rows(at, index, key, value, events) {
            return Ok(());
        }
        self.codecs[at].decode(key, value, events).map_err(|f| (name, f))?;
        if let Some((dir, location)) = self.claim_check_to_fetch(events) {
            let (file_key, file_value) = read_claim_check(&dir, &location).map_err(|f| (name, f))?;
            let file_value = if protocol.compresses_whole_value() && self.options.compression != Compression::None {
                self.options.compression.decompress(&file_value).map_err(|f| (name, f))?
            } else {
                file_value
            };
            let mut full = MessageEvents::default();
            self.codec(protocol)?.decode(file_key.as_deref(), &file_value, &mut full).map_err(|f| (name, f))?;
            for e in &mut full.events {
                e.claim_check = Some(location.clone().into());
            }
            return self.emit(index, &full).map_err(|f| (name, f));
        }
        self.emit(index, events).map_err(|f| (name, f))
    }

    /// Reads message `index` straight into the layout's table columns when the layout has them and
    /// the codec can (see [`TableColumns`]); returns whether it did. All or nothing, as [`Self::emit`]:
    /// a message given up or failed is taken back whole, to be read the general way.
    fn decode_rows<'a>(
        &mut self,
        codec: usize,
        index: usize,
        key: Option<&'a [u8]>,
        value: &'a [u8],
        events: &mut MessageEvents<'a>,
    ) -> bool {
        let Some(rows) = self.layout.table_columns() else { return false };
        let start = rows.rows();
        let (kept, meta) = (&mut self.kept, &mut self.meta);
        let read = self.codecs[codec].decode_rows(key, value, events, rows).and_then(|read| {
            kept.clear();
            if read {
                kept.extend(0..events.events.len());
                events.events.iter().try_for_each(check_timestamps)?;
                meta.ensure_room(events, kept)?;
            }
            Ok(read)
        });
        if let Ok(true) = read {
            self.append_meta(index, events);
            return true;
        }
        // Given up, or failed: read the general way, which reports any fault with the offsets
        // and wording of every other message (failing messages are rare, so the second read
        // costs nothing that matters).
        if let Some(rows) = self.layout.table_columns() {
            rows.truncate(start);
        }
        events.clear();
        false
    }

    /// The claim-check file to read for this message's events, when a directory was given.
    fn claim_check_to_fetch(&self, events: &MessageEvents<'_>) -> Option<(PathBuf, String)> {
        let dir = self.options.claim_check_dir.as_ref()?;
        let location = events.events.iter().find_map(|e| e.claim_check.as_deref())?;
        Some((dir.clone(), location.to_string()))
    }

    /// Checks, then appends the events of message `index`: all of them or, on a fault, none.
    fn emit(&mut self, index: usize, events: &MessageEvents<'_>) -> FaultResult<()> {
        self.kept.clear();
        for (i, e) in events.events.iter().enumerate() {
            check_timestamps(e)?;
            if self.layout.keeps(e) {
                self.kept.push(i);
            } else {
                self.stats.filtered += 1;
            }
        }
        self.meta.ensure_room(events, &self.kept)?;
        self.layout.append(events, &self.kept)?;
        self.append_meta(index, events);
        Ok(())
    }

    /// The metadata of the events `kept` of message `index`, once their rows are in the layout.
    fn append_meta(&mut self, index: usize, events: &MessageEvents<'_>) {
        for &i in &self.kept {
            self.meta.append(&events.events[i], index);
        }
        self.stats.events += self.kept.len() as u64;
    }

    fn finish(&mut self, input: Option<&RecordBatch>) -> Result<RecordBatch> {
        let mut columns = self.meta.finish();
        columns.extend(self.layout.finish());
        let rows = columns[0].len();
        let earlier_rows = std::mem::take(&mut self.earlier_rows);
        if !self.options.carry.is_empty() {
            let messages = columns[self.schema.index_of("_message").expect("meta column")]
                .as_primitive::<arrow_array::types::Int64Type>();
            let mut indices: Vec<Option<u32>> = messages.values().iter().map(|&m| Some(m as u32)).collect();
            for (range, _) in &earlier_rows {
                indices[range.clone()].fill(None);
            }
            let carried = match input {
                Some(input) => self.carried_values(input, &UInt32Array::from(indices))?,
                None => self.options.carry.iter().map(|f| arrow_array::new_null_array(f.data_type(), rows)).collect(),
            };
            columns.extend(self.with_earlier_carry(carried, &earlier_rows)?);
        }
        for (_, origin) in &earlier_rows {
            self.held_carry.remove(origin);
        }
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| Error::internal(self.protocol_name(), e))
    }
}

/// Whether an event's timestamps fit the output's int64 columns.
fn check_timestamps(e: &crate::event::Event<'_>) -> FaultResult<()> {
    if e.commit_ts > i64::MAX as u64
        || e.schema_version.is_some_and(|v| v > i64::MAX as u64)
        || e.start_ts.is_some_and(|v| v > i64::MAX as u64)
    {
        return Err(Fault::new(0, format!("timestamp {} does not fit int64", e.commit_ts)));
    }
    Ok(())
}

impl BatchDecoder {
    /// The carry columns of `input` at rows `indices` (null where an index is), as declared.
    fn carried_values(&self, input: &RecordBatch, indices: &UInt32Array) -> Result<Vec<ArrayRef>> {
        let usage = |reason: String| Error::usage(self.protocol_name(), reason);
        let mut out = Vec::with_capacity(self.options.carry.len());
        for f in &self.options.carry {
            let source = input
                .column_by_name(f.name())
                .ok_or_else(|| usage(format!("input has no carry column {:?}", f.name())))?;
            let taken = arrow_select::take::take(source.as_ref(), indices, None)
                .and_then(|a| arrow_cast::cast(&a, f.data_type()))
                .map_err(|e| usage(format!("carry column {:?}: {e}", f.name())))?;
            out.push(taken);
        }
        Ok(out)
    }

    /// Puts the kept carried values of messages from earlier batches onto their rows.
    fn with_earlier_carry(
        &self,
        carried: Vec<ArrayRef>,
        earlier_rows: &[(Range<usize>, MessageOrigin)],
    ) -> Result<Vec<ArrayRef>> {
        if earlier_rows.is_empty() {
            return Ok(carried);
        }
        carried
            .into_iter()
            .enumerate()
            .map(|(k, column)| {
                // Source 0 is the column; source 1 + j is the single row kept for `earlier_rows[j]`.
                let mut sources: Vec<&dyn Array> = vec![column.as_ref()];
                let mut indices: Vec<(usize, usize)> = (0..column.len()).map(|r| (0, r)).collect();
                for (range, origin) in earlier_rows {
                    if let Some(values) = self.held_carry.get(origin) {
                        sources.push(values[k].as_ref());
                        indices[range.clone()].fill((sources.len() - 1, 0));
                    }
                }
                arrow_select::interleave::interleave(&sources, &indices)
                    .map_err(|e| Error::internal(self.protocol_name(), format_args!("carried values: {e}")))
            })
            .collect()
    }
}
