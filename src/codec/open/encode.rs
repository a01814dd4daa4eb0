//! Writing events as tiflow's open-protocol encoder does, byte for byte.
//!
//! Row events are batched: a message is closed when it holds `max_batch_size` events or when
//! the next item would push it past `max_message_bytes` (tiflow's formula, with sarama's 36-byte
//! record overhead). DDL and resolved events close the pending batch and go out alone. An event
//! too large on its own is handled per `large_message_handle`: handle-key columns only (key
//! `"ohk":true`), a claim-check file holding the full one-event message (key `"ccl"`), or a fault.
//!
//! Values are rendered from the column's type, whatever [`Value`] variant carries them, since
//! events come both from decoders and from Arrow (where most values are MySQL text).

use std::borrow::Cow;

use base64::Engine;

use super::gotext::{go_quote, write_f32, write_f64, write_i64, write_json_bytes, write_json_str, write_u64};
use super::{BATCH_VERSION, RECORD_OVERHEAD, TYPE_DDL, TYPE_RESOLVED, TYPE_ROW};
use crate::codec::{Encode, EncodeOptions, LargeMessageHandle, Protocol, Record};
use crate::error::{Fault, FaultResult};
use crate::event::{flag, same_name, Column, Event, EventKind, MessageEvents, Text, Value};
use crate::input::claim_check::{claim_check_body, store_claim_check};
use crate::input::Compression;
use crate::schema::ddl_action;
use crate::schema::mysql::MySqlType;

pub struct OpenEncoder {
    options: EncodeOptions,
    /// The message being filled: its key and value frames and how many events they hold.
    key: Vec<u8>,
    value: Vec<u8>,
    count: usize,
    /// The key and value JSON of the event being encoded (the value compressed if configured).
    item_key: Vec<u8>,
    item_value: Vec<u8>,
    scratch: Scratch,
}

/// Reused buffers for rendering columns.
#[derive(Default)]
struct Scratch {
    order: Vec<usize>,
    heads: MemberHeads,
    quoted: String,
    new_value: Vec<u8>,
    old_value: Vec<u8>,
}

impl OpenEncoder {
    pub fn new(options: EncodeOptions) -> Self {
        OpenEncoder {
            options,
            key: Vec::new(),
            value: Vec::new(),
            count: 0,
            item_key: Vec::with_capacity(256),
            item_value: Vec::with_capacity(4096),
            scratch: Scratch::default(),
        }
    }

    /// The size tiflow checks a lone event against: both items, their two length prefixes, the
    /// version header and the record overhead.
    fn single_size(&self) -> usize {
        self.item_key.len() + self.item_value.len() + RECORD_OVERHEAD + 16 + 8
    }

    fn too_large(&self) -> Fault {
        Fault::new(
            0,
            format!(
                "message of {} bytes exceeds max-message-bytes {} (large-message-handle-option is none)",
                self.single_size(),
                self.options.max_message_bytes
            ),
        )
    }

    fn encode_row(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        self.render_row(events, event, false, None)?;
        if self.single_size() > self.options.max_message_bytes {
            match self.options.large_message_handle {
                LargeMessageHandle::None => return Err(self.too_large()),
                LargeMessageHandle::ClaimCheck => return self.claim_check(events, event, out),
                LargeMessageHandle::HandleKeyOnly => {
                    self.render_row(events, event, true, None)?;
                    if self.single_size() > self.options.max_message_bytes {
                        return Err(Fault::new(
                            0,
                            format!(
                                "message of {} bytes is too large even with handle-key columns only",
                                self.single_size()
                            ),
                        ));
                    }
                }
            }
        }
        self.append(out)
    }

    /// Renders the event's key and value items. `handle_key_only`: the large-message form (key
    /// `"ohk":true` unless a claim-check location is given, handle-key columns only). Events
    /// decoded from such messages keep their `ohk`/`ccl` markers.
    fn render_row(
        &mut self,
        events: &MessageEvents<'_>,
        event: &Event<'_>,
        handle_key_only: bool,
        claim_check: Option<&str>,
    ) -> FaultResult<()> {
        let keys = events.keys(event);
        let main = if event.kind == EventKind::Delete { events.before(event) } else { events.after(event) };
        // An event that was decoded as partial keeps its markers.
        let claim_check = claim_check.or(event.claim_check.as_deref());
        let key = KeyFields {
            ts: event.commit_ts,
            schema: event.schema.as_deref(),
            table: event.table.as_deref(),
            row_id: row_id(main, keys),
            partition: event.partition_id,
            kind: TYPE_ROW,
            handle_key_only: (handle_key_only || event.handle_key_only) && claim_check.is_none(),
            claim_check,
        };
        self.item_key.clear();
        key.write(&mut self.item_key);
        self.item_value.clear();
        write_row_value(&mut self.item_value, &self.options, events, event, handle_key_only, &mut self.scratch)?;
        self.compress_item()
    }

    fn compress_item(&mut self) -> FaultResult<()> {
        if self.options.compression != Compression::None {
            self.item_value = self.options.compression.compress(&self.item_value)?;
        }
        Ok(())
    }

    /// Adds the rendered event to the batch, closing the batch first when it is full.
    fn append(&mut self, out: &mut Vec<Record>) -> FaultResult<()> {
        let message_len = self.key.len() + self.value.len() + RECORD_OVERHEAD;
        let grown = message_len + self.item_key.len() + self.item_value.len() + 16;
        if self.count == 0 || self.count >= self.options.max_batch_size || grown > self.options.max_message_bytes {
            self.flush(out)?;
            self.key.extend_from_slice(&BATCH_VERSION.to_be_bytes());
        }
        push_item(&mut self.key, &self.item_key);
        push_item(&mut self.value, &self.item_value);
        self.count += 1;
        Ok(())
    }

    /// Stores the full event as a one-event message in a claim-check file and sends its
    /// handle-key columns with the file's location.
    fn claim_check(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        if self.options.claim_check_raw_value {
            return Err(Fault::new(0, "claim-check-raw-value is not supported by the open protocol"));
        }
        let dir = self
            .options
            .claim_check_dir
            .clone()
            .ok_or_else(|| Fault::new(0, "large-message-handle-option claim-check needs claim_check_dir"))?;
        self.flush(out)?;
        let (key, value) = self.single_message();
        let location = store_claim_check(&dir, &claim_check_body(Some(&key), &value, false))?;
        self.render_row(events, event, true, Some(&location))?;
        if self.single_size() > self.options.max_message_bytes {
            return Err(Fault::new(0, format!("claim-check message of {} bytes is too large", self.single_size())));
        }
        let (key, value) = self.single_message();
        out.push(Record { key: Some(key), value });
        Ok(())
    }

    /// The rendered event as a message of its own.
    fn single_message(&self) -> (Vec<u8>, Vec<u8>) {
        let mut key = Vec::with_capacity(self.item_key.len() + 16);
        key.extend_from_slice(&BATCH_VERSION.to_be_bytes());
        push_item(&mut key, &self.item_key);
        let mut value = Vec::with_capacity(self.item_value.len() + 8);
        push_item(&mut value, &self.item_value);
        (key, value)
    }

    fn encode_ddl(&mut self, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        self.flush(out)?;
        self.item_key.clear();
        KeyFields {
            ts: event.commit_ts,
            schema: event.schema.as_deref(),
            table: event.table.as_deref(),
            kind: TYPE_DDL,
            ..KeyFields::default()
        }
        .write(&mut self.item_key);
        self.item_value.clear();
        self.item_value.extend_from_slice(b"{\"q\":");
        let query = event.ddl.as_deref().unwrap_or("");
        write_json_str(&mut self.item_value, query);
        self.item_value.extend_from_slice(b",\"t\":");
        write_i64(&mut self.item_value, ddl_action::code(event.ddl_type.as_deref(), query) as i64);
        self.item_value.push(b'}');
        self.compress_item()?;
        let (key, value) = self.single_message();
        out.push(Record { key: Some(key), value });
        Ok(())
    }

    fn encode_resolved(&mut self, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        self.flush(out)?;
        self.item_key.clear();
        KeyFields { ts: event.commit_ts, kind: TYPE_RESOLVED, ..KeyFields::default() }.write(&mut self.item_key);
        self.item_value.clear();
        let (key, value) = self.single_message();
        out.push(Record { key: Some(key), value });
        Ok(())
    }
}

impl Encode for OpenEncoder {
    fn protocol(&self) -> Protocol {
        Protocol::Open
    }

    fn encode(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        match event.kind {
            EventKind::Insert | EventKind::Update | EventKind::Delete => self.encode_row(events, event, out),
            EventKind::Ddl => self.encode_ddl(event, out),
            EventKind::Watermark => self.encode_resolved(event, out),
            // The open protocol has no bootstrap message.
            EventKind::Bootstrap => Ok(()),
        }
    }

    fn flush(&mut self, out: &mut Vec<Record>) -> FaultResult<()> {
        if self.count > 0 {
            let (key_len, value_len) = (self.key.len(), self.value.len());
            let key = std::mem::replace(&mut self.key, Vec::with_capacity(key_len));
            let value = std::mem::replace(&mut self.value, Vec::with_capacity(value_len));
            out.push(Record { key: Some(key), value });
            self.count = 0;
        }
        Ok(())
    }
}

fn push_item(frame: &mut Vec<u8>, item: &[u8]) {
    frame.extend_from_slice(&(item.len() as u64).to_be_bytes());
    frame.extend_from_slice(item);
}

/// tiflow's `MessageKey`, written in its field order with its `omitempty` rules.
#[derive(Default)]
struct KeyFields<'e> {
    ts: u64,
    schema: Option<&'e str>,
    table: Option<&'e str>,
    row_id: Option<i64>,
    partition: Option<i64>,
    kind: u64,
    handle_key_only: bool,
    claim_check: Option<&'e str>,
}

impl KeyFields<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"ts\":");
        write_u64(out, self.ts);
        if let Some(s) = self.schema.filter(|s| !s.is_empty()) {
            out.extend_from_slice(b",\"scm\":");
            write_json_str(out, s);
        }
        if let Some(t) = self.table.filter(|t| !t.is_empty()) {
            out.extend_from_slice(b",\"tbl\":");
            write_json_str(out, t);
        }
        if let Some(rid) = self.row_id.filter(|&r| r != 0) {
            out.extend_from_slice(b",\"rid\":");
            write_i64(out, rid);
        }
        if let Some(p) = self.partition {
            out.extend_from_slice(b",\"ptn\":");
            write_i64(out, p);
        }
        out.extend_from_slice(b",\"t\":");
        write_u64(out, self.kind);
        if self.handle_key_only {
            out.extend_from_slice(b",\"ohk\":true");
        }
        if let Some(c) = self.claim_check.filter(|c| !c.is_empty()) {
            out.extend_from_slice(b",\"ccl\":");
            write_json_str(out, c);
        }
        out.push(b'}');
    }
}

fn is_key(column: &Column<'_>, keys: &[Text<'_>]) -> bool {
    keys.contains(&column.name)
}

fn column_flags(column: &Column<'_>, keys: &[Text<'_>]) -> u64 {
    column.ty.ticdc_flags(is_key(column, keys))
}

/// The deprecated `rid`: TiDB's integer row handle, which is the value of the primary key when
/// that is a single integer column (the only case an event shows). Tables without one (or with
/// a clustered non-integer key) have no `rid` in the message.
fn row_id(columns: &[Column<'_>], keys: &[Text<'_>]) -> Option<i64> {
    let mut handles = columns.iter().filter(|c| column_flags(c, keys) & flag::HANDLE_KEY != 0);
    let handle = handles.next()?;
    if handles.next().is_some() {
        return None;
    }
    use MySqlType::*;
    if !matches!(handle.ty.base, TinyInt | SmallInt | MediumInt | Int | BigInt) {
        return None;
    }
    match &handle.value {
        Value::Int(v) => Some(*v),
        Value::UInt(v) => Some(*v as i64),
        Value::Text(t) => t.parse::<i64>().ok().or_else(|| t.parse::<u64>().ok().map(|v| v as i64)),
        _ => None,
    }
}

/// Which columns of an image go into a column map.
#[derive(Clone, Copy)]
struct Selection<'s, 'e> {
    handle_key_only: bool,
    /// only-output-updated-columns: leave out columns equal (type and value) to these.
    unchanged_in: Option<&'s [Column<'e>]>,
}

fn write_row_value(
    out: &mut Vec<u8>,
    options: &EncodeOptions,
    events: &MessageEvents<'_>,
    event: &Event<'_>,
    handle_key_only: bool,
    scratch: &mut Scratch,
) -> FaultResult<()> {
    let keys = events.keys(event);
    let has_handle = |columns: &[Column<'_>]| columns.iter().any(|c| column_flags(c, keys) & flag::HANDLE_KEY != 0);
    let (after, before) = (events.after(event), events.before(event));
    let delete_keys_only = handle_key_only || options.delete_only_output_handle_key_columns;
    let missing_keys = match event.kind {
        EventKind::Delete => delete_keys_only && !has_handle(before),
        EventKind::Update => handle_key_only && (!has_handle(after) || options.output_old_value && !has_handle(before)),
        _ => handle_key_only && !has_handle(after),
    };
    if missing_keys {
        let kind = event.kind.as_str().to_ascii_lowercase();
        return Err(Fault::new(0, format!("not found handle key columns for the {kind} event")));
    }
    let all = Selection { handle_key_only, unchanged_in: None };
    let mut maps = ColumnMaps { out, first: true };
    maps.out.push(b'{');
    match event.kind {
        EventKind::Delete => {
            maps.write("d", before, keys, Selection { handle_key_only: delete_keys_only, ..all }, scratch)?;
        }
        EventKind::Update => {
            maps.write("u", after, keys, all, scratch)?;
            if options.output_old_value {
                let unchanged_in = options.only_output_updated_columns.then_some(after);
                maps.write("p", before, keys, Selection { handle_key_only, unchanged_in }, scratch)?;
            }
        }
        _ => {
            maps.write("u", after, keys, all, scratch)?;
        }
    }
    maps.out.push(b'}');
    Ok(())
}

/// The `u`/`p`/`d` members of a row value, each omitted when it would be empty.
struct ColumnMaps<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl ColumnMaps<'_> {
    /// Writes `"tag":{...}` with the selected columns in byte-wise name order (Go sorts map
    /// keys); returns how many were written.
    fn write(
        &mut self,
        tag: &str,
        columns: &[Column<'_>],
        keys: &[Text<'_>],
        selection: Selection<'_, '_>,
        scratch: &mut Scratch,
    ) -> FaultResult<usize> {
        let mut order = std::mem::take(&mut scratch.order);
        order.clear();
        for (i, c) in columns.iter().enumerate() {
            if selection.handle_key_only && column_flags(c, keys) & flag::HANDLE_KEY == 0 {
                continue;
            }
            if let Some(new_row) = selection.unchanged_in {
                if unchanged(c, new_row, keys, scratch)? {
                    continue;
                }
            }
            order.push(i);
        }
        let result = self.write_ordered(tag, columns, keys, &order, scratch);
        scratch.order = order;
        result
    }

    fn write_ordered(
        &mut self,
        tag: &str,
        columns: &[Column<'_>],
        keys: &[Text<'_>],
        order: &[usize],
        scratch: &mut Scratch,
    ) -> FaultResult<usize> {
        if order.is_empty() {
            return Ok(0);
        }
        let Scratch { heads, quoted, .. } = scratch;
        if !heads.fit(columns, keys, order) {
            heads.make(columns, keys, order);
        }
        let out = &mut *self.out;
        if !self.first {
            out.push(b',');
        }
        self.first = false;
        out.push(b'"');
        out.extend_from_slice(tag.as_bytes());
        out.extend_from_slice(b"\":{");
        for (n, head) in heads.sorted.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&heads.text[head.text.clone()]);
            write_value(out, &columns[order[head.position]], heads.given[head.position].flags, quoted)?;
            out.push(b'}');
        }
        out.push(b'}');
        Ok(order.len())
    }
}

/// The start of each column's member, `"name":{"t":3,"h":true,"f":11,"v":`, rendered and put
/// in name order once for a run of rows with the same columns (the rows of one table), not
/// once per row: the names, types and flags repeat, only the values change.
#[derive(Default)]
struct MemberHeads {
    /// The columns they were made for, in the given order.
    given: Vec<GivenColumn>,
    /// Their names, back to back.
    names: Vec<u8>,
    /// The heads in byte-wise name order (Go sorts map keys).
    sorted: Vec<MemberHead>,
    /// The rendered heads, back to back.
    text: Vec<u8>,
}

struct GivenColumn {
    name: std::ops::Range<usize>,
    code: u8,
    flags: u64,
}

struct MemberHead {
    /// Where the column is among the given ones.
    position: usize,
    text: std::ops::Range<usize>,
}

impl MemberHeads {
    /// Whether the heads were made for these columns: the same names, types and flags.
    fn fit(&self, columns: &[Column<'_>], keys: &[Text<'_>], order: &[usize]) -> bool {
        self.given.len() == order.len()
            && self.given.iter().zip(order).all(|(g, &i)| {
                let c = &columns[i];
                g.code == c.ty.base.code()
                    && same_name(&self.names[g.name.clone()], c.name.as_bytes())
                    && g.flags == column_flags(c, keys)
            })
    }

    fn make(&mut self, columns: &[Column<'_>], keys: &[Text<'_>], order: &[usize]) {
        self.given.clear();
        self.names.clear();
        for &i in order {
            let c = &columns[i];
            let start = self.names.len();
            self.names.extend_from_slice(c.name.as_bytes());
            self.given.push(GivenColumn {
                name: start..self.names.len(),
                code: c.ty.base.code(),
                flags: column_flags(c, keys),
            });
        }
        let (given, names) = (&self.given, &self.names);
        self.sorted.clear();
        self.sorted.extend((0..given.len()).map(|position| MemberHead { position, text: 0..0 }));
        self.sorted.sort_by(|a, b| names[given[a.position].name.clone()].cmp(&names[given[b.position].name.clone()]));
        self.text.clear();
        for head in &mut self.sorted {
            let g = &given[head.position];
            let start = self.text.len();
            write_json_bytes(&mut self.text, &names[g.name.clone()]);
            self.text.extend_from_slice(b":{\"t\":");
            write_u64(&mut self.text, g.code as u64);
            if g.flags & flag::HANDLE_KEY != 0 {
                self.text.extend_from_slice(b",\"h\":true");
            }
            self.text.extend_from_slice(b",\"f\":");
            write_u64(&mut self.text, g.flags);
            self.text.extend_from_slice(b",\"v\":");
            head.text = start..self.text.len();
        }
    }
}

/// Whether the new row has a column of this name, type and (rendered) value.
fn unchanged(old: &Column<'_>, new_row: &[Column<'_>], keys: &[Text<'_>], scratch: &mut Scratch) -> FaultResult<bool> {
    let Some(new) = new_row.iter().find(|n| n.name == old.name) else {
        return Ok(false);
    };
    if new.ty.base.code() != old.ty.base.code() {
        return Ok(false);
    }
    scratch.new_value.clear();
    scratch.old_value.clear();
    write_value(&mut scratch.new_value, new, column_flags(new, keys), &mut scratch.quoted)?;
    write_value(&mut scratch.old_value, old, column_flags(old, keys), &mut scratch.quoted)?;
    Ok(scratch.new_value == scratch.old_value)
}

/// A column's `v` as tiflow writes the Go value TiCDC's mounter made for it.
fn write_value(out: &mut Vec<u8>, c: &Column<'_>, flags: u64, quoted: &mut String) -> FaultResult<()> {
    use MySqlType::*;
    let value = &c.value;
    if value.is_null() {
        out.extend_from_slice(b"null");
        return Ok(());
    }
    match c.ty.base {
        TinyInt | SmallInt | MediumInt | Int | BigInt if flags & flag::UNSIGNED != 0 && is_negative(value) => {
            return Err(Fault::new(c.at, format!("column {}: {value:?} is negative, and the column UNSIGNED", c.name)));
        }
        TinyInt | SmallInt | MediumInt | Int | BigInt | Year => write_integer(out, value),
        Bit | Enum | Set => write_unsigned(out, value),
        Float => write_float(out, value, true),
        Double => write_float(out, value, false),
        Char | VarChar => {
            if flags & flag::BINARY != 0 {
                quoted.clear();
                go_quote(&value_bytes(value), quoted);
                write_json_str(out, quoted);
            } else {
                write_json_value(out, value);
            }
        }
        TinyText | Text | MediumText | LongText => {
            let bytes = value_bytes(value);
            let engine = base64::engine::general_purpose::STANDARD;
            out.push(b'"');
            let start = out.len();
            let len = base64::encoded_len(bytes.len(), true)
                .ok_or_else(|| Fault::new(c.at, "value too large to base64-encode"))?;
            out.resize(start + len, 0);
            engine.encode_slice(&bytes, &mut out[start..]).map_err(|e| Fault::new(c.at, format!("base64: {e}")))?;
            out.push(b'"');
        }
        // The decoder keeps a GEOMETRY string's text as its bytes; only text can go back.
        Geometry => match crate::utf8::check(&value_bytes(value)) {
            Ok(text) => write_json_str(out, text),
            Err(_) => return Err(Fault::new(c.at, format!("column {}: a GEOMETRY value must be UTF-8 text", c.name))),
        },
        // Decimals, dates, times, JSON, vectors: the mounter hands over strings.
        _ => write_json_value(out, value),
    }
    Ok(())
}

/// A value as a JSON string: text as it is (already UTF-8), anything else from its bytes.
fn write_json_value(out: &mut Vec<u8>, value: &Value<'_>) {
    match value {
        Value::Text(t) => write_json_str(out, t),
        other => write_json_bytes(out, &value_bytes(other)),
    }
}

/// The value as bytes: its text, its bytes, or a number's MySQL text.
fn value_bytes<'v>(value: &'v Value<'_>) -> Cow<'v, [u8]> {
    match value {
        Value::Text(t) => Cow::Borrowed(t.as_bytes()),
        Value::Bytes(b) => Cow::Borrowed(b),
        Value::Int(v) => Cow::Owned(v.to_string().into_bytes()),
        Value::UInt(v) => Cow::Owned(v.to_string().into_bytes()),
        Value::Float32(v) => Cow::Owned(v.to_string().into_bytes()),
        Value::Float64(v) => Cow::Owned(v.to_string().into_bytes()),
        Value::Null => Cow::Borrowed(b""),
    }
}

/// Text that is not a number stays a JSON string (legacy producers put strings anywhere, and
/// tiflow writes whatever Go value it holds).
fn write_text_number(out: &mut Vec<u8>, value: &Value<'_>, parse: impl Fn(&str, &mut Vec<u8>) -> bool) {
    let bytes = value_bytes(value);
    match std::str::from_utf8(&bytes) {
        Ok(text) if parse(text.trim(), out) => {}
        _ => write_json_bytes(out, &bytes),
    }
}

fn write_integer(out: &mut Vec<u8>, value: &Value<'_>) {
    match value {
        Value::Int(v) => write_i64(out, *v),
        Value::UInt(v) => write_u64(out, *v),
        Value::Float32(v) if v.fract() == 0.0 && v.abs() < 9.2e18 => write_i64(out, *v as i64),
        Value::Float64(v) if v.fract() == 0.0 && v.abs() < 9.2e18 => write_i64(out, *v as i64),
        Value::Float32(v) => write_f32(out, *v),
        Value::Float64(v) => write_f64(out, *v),
        _ => write_text_number(out, value, |t, out| {
            if let Ok(v) = t.parse::<i64>() {
                write_i64(out, v);
            } else if let Ok(v) = t.parse::<u64>() {
                write_u64(out, v);
            } else {
                return false;
            }
            true
        }),
    }
}

fn is_negative(value: &Value<'_>) -> bool {
    match value {
        Value::Int(v) => *v < 0,
        Value::Float32(v) => *v < 0.0,
        Value::Float64(v) => *v < 0.0,
        Value::Text(t) => t.trim().parse::<i64>().is_ok_and(|v| v < 0),
        _ => false,
    }
}

/// BIT, ENUM and SET: the mounter's uint64.
fn write_unsigned(out: &mut Vec<u8>, value: &Value<'_>) {
    match value {
        Value::UInt(v) => write_u64(out, *v),
        Value::Int(v) => write_u64(out, *v as u64),
        _ => write_integer(out, value),
    }
}

fn write_float(out: &mut Vec<u8>, value: &Value<'_>, single: bool) {
    let v = match value {
        Value::Float32(v) if single => return write_f32(out, *v),
        Value::Float32(v) => *v as f64,
        Value::Float64(v) => *v,
        Value::Int(v) => *v as f64,
        Value::UInt(v) => *v as f64,
        _ => {
            // Text out of the column's range is no number (as the decoder reads one): it stays
            // text rather than becoming the 0 an infinity is written as.
            return write_text_number(out, value, |t, out| match t.parse::<f64>() {
                Ok(v) if single && (v as f32).is_finite() => {
                    write_f32(out, v as f32);
                    true
                }
                Ok(v) if !single && v.is_finite() => {
                    write_f64(out, v);
                    true
                }
                _ => false,
            });
        }
    };
    if single {
        write_f32(out, v as f32)
    } else {
        write_f64(out, v)
    }
}
