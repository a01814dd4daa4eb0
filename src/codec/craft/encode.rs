//! The Craft encoder: events in, Kafka values out, byte for byte as tiflow's craft encoder
//! writes them.
//!
//! Row events are batched as TiCDC's `BatchEncoder` does: after each row the batch is flushed
//! when its estimated size (TiCDC's estimate: 32 bytes plus the schema and table names per event,
//! and name + value + 16 bytes per column) exceeds `max_message_bytes`, or when it holds
//! `max_batch_size` rows. DDL and resolved events always travel alone; the rows pending before
//! them are flushed first so the records keep the order of the events.
//!
//! A message cannot be written front to back as events arrive: term ids are assigned in order of
//! first use over the whole message (every schema name, then every table name, then the column
//! names group by group), and the headers of all events come before the first body. So each
//! event is staged as it arrives: names into one text buffer, and each column group's type,
//! flag and value chunks already encoded into another. [`CraftEncoder::flush`] then writes the
//! headers, the groups (name ids, then the staged chunks copied as they are), the dictionary and
//! the size tables. Consecutive groups with the same column names share one staged name list
//! and one set of ids.
//!
//! Values are rendered from the column's type whatever `Value` variant carries them, so events
//! read from Arrow (`Text("42")` for an INT) encode like the ones a decoder produced.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;
use std::ops::Range;

use crate::codec::{Encode, EncodeOptions, Protocol, Record};
use crate::error::{Fault, FaultResult};
use crate::event::{flag, same_name, Column, Event, EventKind, MessageEvents, Text, Value};
use crate::schema::ddl_action;
use crate::schema::mysql::MySqlType;
use crate::varint::{put_uvarint, put_varint};

use super::{EVENT_DDL, EVENT_RESOLVED, EVENT_ROW, GROUP_NEW, GROUP_OLD, VERSION};

pub struct CraftEncoder {
    max_batch_size: usize,
    max_message_bytes: usize,
    delete_only_handle_key: bool,
    batch: Batch,
    /// The group being staged: its columns (index, flags word).
    kept: Vec<(usize, u64)>,
    /// Buffers of `flush`, kept between messages.
    ids: Vec<i64>,
    body_sizes: Vec<i64>,
    group_sizes: Vec<i64>,
}

/// The events of the message being filled.
#[derive(Default)]
struct Batch {
    entries: Vec<Entry>,
    groups: Vec<Group>,
    /// Schema, table and column names, back to back.
    text: Vec<u8>,
    /// Column name spans of `text`, group after group (shared by equal consecutive groups).
    names: Vec<Range<usize>>,
    /// Encoded bodies of DDL events and the type, flag and length chunks of each column group.
    staged: Vec<u8>,
    /// The value bytes of each column group, kept apart from `staged` because a group's lengths
    /// chunk comes before its values and is only known after them (one copy less per value).
    values: Vec<u8>,
    /// TiCDC's size estimate of the rows.
    estimated: usize,
}

impl Batch {
    fn mark(&self) -> [usize; 7] {
        let b = self;
        [b.entries.len(), b.groups.len(), b.text.len(), b.names.len(), b.staged.len(), b.values.len(), b.estimated]
    }

    /// Drops what was staged since `mark`: an event that fails leaves the batch as it was.
    fn rewind(&mut self, [entries, groups, text, names, staged, values, estimated]: [usize; 7]) {
        self.entries.truncate(entries);
        self.groups.truncate(groups);
        self.text.truncate(text);
        self.names.truncate(names);
        self.staged.truncate(staged);
        self.values.truncate(values);
        self.estimated = estimated;
    }
}

struct Entry {
    ts: u64,
    kind: u64,
    partition: i64,
    schema: Option<Range<usize>>,
    table: Option<Range<usize>>,
    /// Row events: their column groups.
    groups: Range<usize>,
    /// DDL events: their encoded body in `staged`.
    body: Range<usize>,
}

struct Group {
    kind: u8,
    /// Range of `Batch::names`.
    names: Range<usize>,
    /// Range of `Batch::staged`: the types, flags and lengths chunks.
    chunks: Range<usize>,
    /// Range of `Batch::values`: the values.
    values: Range<usize>,
}

impl CraftEncoder {
    pub fn new(options: &EncodeOptions) -> Self {
        CraftEncoder {
            max_batch_size: options.max_batch_size.max(1),
            max_message_bytes: options.max_message_bytes,
            delete_only_handle_key: options.delete_only_output_handle_key_columns,
            batch: Batch::default(),
            kept: Vec::new(),
            ids: Vec::new(),
            body_sizes: Vec::new(),
            group_sizes: Vec::new(),
        }
    }

    fn stage_row(&mut self, events: &MessageEvents<'_>, event: &Event<'_>) -> FaultResult<()> {
        let b = &mut self.batch;
        let schema = stage_name(&mut b.text, event.schema.as_deref());
        let table = stage_name(&mut b.text, event.table.as_deref());
        b.estimated += 32 + schema.as_ref().map_or(0, Range::len) + table.as_ref().map_or(0, Range::len);
        let first_group = b.groups.len();
        let keys = events.keys(event);
        if matches!(event.kind, EventKind::Insert | EventKind::Update) {
            self.stage_group(GROUP_NEW, events.after(event), keys, false)?;
        }
        if matches!(event.kind, EventKind::Update | EventKind::Delete) {
            let only_keys = self.delete_only_handle_key && event.kind == EventKind::Delete;
            self.stage_group(GROUP_OLD, events.before(event), keys, only_keys)?;
        }
        let b = &mut self.batch;
        if b.groups.len() == first_group {
            return Err(Fault::new(0, format!("{} event has no column to write", event.kind.as_str())));
        }
        b.entries.push(Entry {
            ts: event.commit_ts,
            kind: EVENT_ROW,
            partition: event.partition_id.unwrap_or(-1),
            schema,
            table,
            groups: first_group..b.groups.len(),
            body: 0..0,
        });
        Ok(())
    }

    /// Stages one column group: every column, or with `only_keys` the handle-key ones; none
    /// selected, no group (as Go).
    fn stage_group(&mut self, kind: u8, columns: &[Column<'_>], keys: &[Text<'_>], only_keys: bool) -> FaultResult<()> {
        self.kept.clear();
        for (i, c) in columns.iter().enumerate() {
            let flags = c
                .ty
                .flags
                .unwrap_or_else(|| c.ty.ticdc_flags(keys.iter().any(|k| same_name(k.as_bytes(), c.name.as_bytes()))));
            if !only_keys || flags & flag::HANDLE_KEY != 0 {
                self.kept.push((i, flags));
            }
        }
        if self.kept.is_empty() {
            return Ok(());
        }
        let b = &mut self.batch;
        let names = stage_column_names(b, columns, &self.kept);
        let from = b.staged.len();
        for &(i, _) in &self.kept {
            put_uvarint(&mut b.staged, wire_code(columns[i].ty.base));
        }
        for &(_, flags) in &self.kept {
            put_uvarint(&mut b.staged, flags);
        }
        let values_from = b.values.len();
        for &(i, flags) in &self.kept {
            let c = &columns[i];
            let before = b.values.len();
            let len = match write_value(c, flags, &mut b.values)? {
                true => (b.values.len() - before) as i64,
                false => -1,
            };
            put_varint(&mut b.staged, len);
            b.estimated += c.name.len() + len.max(0) as usize + 16;
        }
        b.groups.push(Group { kind, names, chunks: from..b.staged.len(), values: values_from..b.values.len() });
        Ok(())
    }

    /// Stages a DDL or resolved event, alone in its message.
    fn write_single(&mut self, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        self.flush_rows(out);
        let b = &mut self.batch;
        let (kind, schema, table) = if event.kind == EventKind::Ddl {
            let query = event.ddl.as_deref().unwrap_or("");
            let action = ddl_action::code(event.ddl_type.as_deref(), query);
            put_uvarint(&mut b.staged, action);
            put_uvarint(&mut b.staged, query.len() as u64);
            b.staged.extend_from_slice(query.as_bytes());
            let schema = stage_name(&mut b.text, event.schema.as_deref());
            let table = stage_name(&mut b.text, event.table.as_deref());
            (EVENT_DDL, schema, table)
        } else {
            (EVENT_RESOLVED, None, None)
        };
        // The batch was just flushed: the staged bytes are this event's body.
        let body = 0..b.staged.len();
        b.entries.push(Entry { ts: event.commit_ts, kind, partition: -1, schema, table, groups: 0..0, body });
        self.flush_rows(out);
        Ok(())
    }

    /// Writes the staged events as one message.
    fn flush_rows(&mut self, out: &mut Vec<Record>) {
        let b = &mut self.batch;
        if b.entries.is_empty() {
            return;
        }
        let mut msg = Vec::with_capacity(b.staged.len() + b.values.len() + b.text.len() + 16 * b.entries.len() + 64);
        put_uvarint(&mut msg, VERSION);
        let mut dict = Dictionary::with_capacity(b.names.len() + 2 * b.entries.len());

        // Headers.
        let header_start = msg.len();
        let mut last = 0u64;
        for (i, e) in b.entries.iter().enumerate() {
            put_uvarint(&mut msg, if i == 0 { e.ts } else { e.ts.wrapping_sub(last) });
            last = e.ts;
        }
        for e in &b.entries {
            put_uvarint(&mut msg, e.kind);
        }
        put_delta_varints(&mut msg, b.entries.iter().map(|e| e.partition));
        let text = b.text.as_slice();
        self.ids.clear();
        self.ids.extend(b.entries.iter().map(|e| dict.nullable(text, &e.schema)));
        put_delta_varints(&mut msg, self.ids.iter().copied());
        self.ids.clear();
        self.ids.extend(b.entries.iter().map(|e| dict.nullable(text, &e.table)));
        put_delta_varints(&mut msg, self.ids.iter().copied());
        let header_bytes = (msg.len() - header_start) as i64;

        // Bodies.
        self.body_sizes.clear();
        self.group_sizes.clear();
        let mut named: Option<Range<usize>> = None;
        for e in &b.entries {
            let body_start = msg.len();
            if e.kind == EVENT_ROW {
                for g in &b.groups[e.groups.clone()] {
                    let group_start = msg.len();
                    msg.push(g.kind);
                    put_uvarint(&mut msg, g.names.len() as u64);
                    if named.as_ref() != Some(&g.names) {
                        self.ids.clear();
                        self.ids.extend(b.names[g.names.clone()].iter().map(|s| dict.id(&text[s.clone()])));
                        named = Some(g.names.clone());
                    }
                    put_delta_varints(&mut msg, self.ids.iter().copied());
                    msg.extend_from_slice(&b.staged[g.chunks.clone()]);
                    msg.extend_from_slice(&b.values[g.values.clone()]);
                    self.group_sizes.push((msg.len() - group_start) as i64);
                }
            } else {
                msg.extend_from_slice(&b.staged[e.body.clone()]);
            }
            self.body_sizes.push((msg.len() - body_start) as i64);
        }

        // Term dictionary.
        let dict_start = msg.len();
        if !dict.terms.is_empty() {
            put_uvarint(&mut msg, dict.terms.len() as u64);
            for t in &dict.terms {
                put_uvarint(&mut msg, t.len() as u64);
            }
            for t in &dict.terms {
                msg.extend_from_slice(t);
            }
        }
        let dict_bytes = (msg.len() - dict_start) as i64;

        // Size tables and the reversed trailer.
        let tables_start = msg.len();
        put_size_table(&mut msg, &[header_bytes, dict_bytes]);
        put_size_table(&mut msg, &self.body_sizes);
        let mut groups = self.group_sizes.as_slice();
        for e in b.entries.iter().filter(|e| e.kind == EVENT_ROW) {
            let (these, rest) = groups.split_at(e.groups.len());
            put_size_table(&mut msg, these);
            groups = rest;
        }
        let trailer_start = msg.len();
        put_uvarint(&mut msg, (trailer_start - tables_start) as u64);
        msg[trailer_start..].reverse();

        out.push(Record { key: None, value: msg });
        b.entries.clear();
        b.groups.clear();
        b.text.clear();
        b.names.clear();
        b.staged.clear();
        b.values.clear();
        b.estimated = 0;
    }
}

impl Encode for CraftEncoder {
    fn protocol(&self) -> Protocol {
        Protocol::Craft
    }

    fn encode(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        match event.kind {
            EventKind::Insert | EventKind::Update | EventKind::Delete => {
                let mark = self.batch.mark();
                if let Err(fault) = self.stage_row(events, event) {
                    self.batch.rewind(mark);
                    return Err(fault);
                }
                if self.batch.estimated > self.max_message_bytes || self.batch.entries.len() >= self.max_batch_size {
                    self.flush_rows(out);
                }
                Ok(())
            }
            EventKind::Ddl | EventKind::Watermark => self.write_single(event, out),
            // Craft has no bootstrap message: a table's schema travels with every row.
            EventKind::Bootstrap => Ok(()),
        }
    }

    fn flush(&mut self, out: &mut Vec<Record>) -> FaultResult<()> {
        self.flush_rows(out);
        Ok(())
    }
}

/// Stages a header name; an empty or absent name is the null term (-1), as Go writes it.
fn stage_name(text: &mut Vec<u8>, name: Option<&str>) -> Option<Range<usize>> {
    let name = name.filter(|n| !n.is_empty())?;
    let from = text.len();
    text.extend_from_slice(name.as_bytes());
    Some(from..text.len())
}

/// Stages a group's column names, or reuses the previous group's when they are the same.
fn stage_column_names(b: &mut Batch, columns: &[Column<'_>], kept: &[(usize, u64)]) -> Range<usize> {
    if let Some(prev) = b.groups.last() {
        let prev_names = &b.names[prev.names.clone()];
        let same = prev_names.len() == kept.len()
            && prev_names
                .iter()
                .zip(kept)
                .all(|(s, &(i, _))| same_name(&b.text[s.clone()], columns[i].name.as_bytes()));
        if same {
            return prev.names.clone();
        }
    }
    let from = b.names.len();
    for c in kept.iter().map(|&(i, _)| &columns[i]) {
        let start = b.text.len();
        b.text.extend_from_slice(c.name.as_bytes());
        b.names.push(start..b.text.len());
    }
    from..b.names.len()
}

/// The wire type code; types without one are TiDB's "unspecified" (0).
fn wire_code(base: MySqlType) -> u64 {
    base.code() as u64
}

/// Writes a non-NULL value's bytes (`craft.md` §4); false when the value is written as NULL.
fn write_value(c: &Column<'_>, flags: u64, out: &mut Vec<u8>) -> FaultResult<bool> {
    use MySqlType as T;
    let value = &c.value;
    if value.is_null() {
        return Ok(false);
    }
    let bad = |what: &str| Fault::new(0, format!("column {}: {value:?} is not a valid {what}", c.name));
    match c.ty.base {
        T::TinyInt | T::SmallInt | T::MediumInt | T::Int | T::BigInt if flags & flag::UNSIGNED != 0 => {
            put_uvarint(out, as_u64(value).ok_or_else(|| bad("unsigned integer"))?)
        }
        T::TinyInt | T::SmallInt | T::MediumInt | T::Int | T::BigInt | T::Year => {
            put_varint(out, as_i64(value).ok_or_else(|| bad("integer"))?)
        }
        T::Enum | T::Set | T::Bit => put_uvarint(out, as_u64(value).ok_or_else(|| bad("unsigned integer"))?),
        T::Float => {
            let f = match value {
                Value::Float64(f) => *f,
                other => as_f64(other, true).ok_or_else(|| bad("float"))?,
            };
            out.extend_from_slice(&f.to_le_bytes());
        }
        T::Double => out.extend_from_slice(&as_f64(value, false).ok_or_else(|| bad("double"))?.to_le_bytes()),
        T::Date | T::DateTime | T::Timestamp | T::Time | T::Json | T::Decimal | T::Vector => write_text(value, out),
        T::Char | T::VarChar | T::TinyText | T::Text | T::MediumText | T::LongText => write_text(value, out),
        // Their values go as NULL (`craft.md` §4): another value would be lost on the way.
        T::Null | T::Geometry | T::Unknown => {
            let ty = c.ty.base.name(c.ty.binary);
            return Err(Fault::new(
                0,
                format!("column {}: Craft carries no {ty} value but NULL, not {value:?}", c.name),
            ));
        }
    }
    Ok(true)
}

/// Strings and text-form values: the bytes as they are, numbers in their text form.
fn write_text(value: &Value<'_>, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail.
    let _ = match value {
        Value::Text(t) => out.write_all(t.as_bytes()),
        Value::Bytes(b) => out.write_all(b),
        Value::Int(v) => out.write_all(itoa::Buffer::new().format(*v).as_bytes()),
        Value::UInt(v) => out.write_all(itoa::Buffer::new().format(*v).as_bytes()),
        Value::Float32(v) => write!(out, "{v}"),
        Value::Float64(v) => write!(out, "{v}"),
        Value::Null => Ok(()),
    };
}

fn text_of<'v>(value: &'v Value<'_>) -> Option<&'v str> {
    match value {
        Value::Text(t) => Some(t.trim()),
        Value::Bytes(b) => std::str::from_utf8(b).ok().map(str::trim),
        _ => None,
    }
}

fn as_u64(value: &Value<'_>) -> Option<u64> {
    match value {
        Value::UInt(v) => Some(*v),
        Value::Int(v) => u64::try_from(*v).ok(),
        _ => text_of(value)?.parse().ok(),
    }
}

fn as_i64(value: &Value<'_>) -> Option<i64> {
    match value {
        Value::Int(v) => Some(*v),
        Value::UInt(v) => i64::try_from(*v).ok(),
        _ => text_of(value)?.parse().ok(),
    }
}

/// A float value; FLOAT columns hold a float32 widened to float64 on the wire.
fn as_f64(value: &Value<'_>, float32: bool) -> Option<f64> {
    let narrow = |f: f64| if float32 { f as f32 as f64 } else { f };
    match value {
        Value::Float32(v) => Some(*v as f64),
        Value::Float64(v) => Some(*v),
        Value::Int(v) => Some(narrow(*v as f64)),
        Value::UInt(v) => Some(narrow(*v as f64)),
        _ => {
            let text = text_of(value)?;
            if float32 {
                // The nearest float32 when it reads back as the text; else the float64 the text
                // names: the decoder keeps a FLOAT's wire float64 that no float32 holds, and
                // narrowing its text would change it (or overflow to infinity) without a word.
                let narrow = text.parse::<f32>().ok().filter(|g| g.to_string() == text);
                narrow.map(f64::from).or_else(|| text.parse::<f64>().ok())
            } else {
                text.parse::<f64>().ok()
            }
        }
    }
}

/// The term dictionary of the message being written: ids in order of first use.
#[derive(Default)]
struct Dictionary<'t> {
    ids: HashMap<&'t [u8], i64, BuildHasherDefault<Fnv>>,
    terms: Vec<&'t [u8]>,
    /// The last term looked up and its id: the events of a message mostly name one table.
    last: Option<(&'t [u8], i64)>,
}

impl<'t> Dictionary<'t> {
    /// Room for `n` terms, so the map does not grow while the message is written.
    fn with_capacity(n: usize) -> Self {
        let ids = HashMap::with_capacity_and_hasher(n, Default::default());
        Dictionary { ids, terms: Vec::with_capacity(n), last: None }
    }

    fn id(&mut self, term: &'t [u8]) -> i64 {
        if let Some((last, id)) = self.last {
            if same_name(last, term) {
                return id;
            }
        }
        let next = self.terms.len() as i64;
        let id = *self.ids.entry(term).or_insert(next);
        if id == next {
            self.terms.push(term);
        }
        self.last = Some((term, id));
        id
    }

    /// The id of a header name staged in `text`, or -1 for none.
    fn nullable(&mut self, text: &'t [u8], span: &Option<Range<usize>>) -> i64 {
        span.clone().map_or(-1, |s| self.id(&text[s]))
    }
}

/// FNV-1a: names are short, and SipHash's setup would dominate.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A delta varint chunk: the first value, then each difference from the previous one.
fn put_delta_varints(out: &mut Vec<u8>, values: impl Iterator<Item = i64>) {
    let mut last = 0i64;
    for (i, v) in values.enumerate() {
        put_varint(out, if i == 0 { v } else { v.wrapping_sub(last) });
        last = v;
    }
}

fn put_size_table(out: &mut Vec<u8>, sizes: &[i64]) {
    put_uvarint(out, sizes.len() as u64);
    put_delta_varints(out, sizes.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::as_f64;
    use crate::event::Value;

    /// A FLOAT column's text encodes as the float32 it names, or as the float64 the decoder read
    /// from the wire when no float32 holds it (found by the craft fuzz target: 1.4e193 became inf).
    #[test]
    fn float_text_keeps_values_no_float32_holds() {
        let text = |t: &str| as_f64(&Value::Text(t.into()), true);
        assert_eq!(text("1.1"), Some(1.1f32 as f64));
        assert_eq!(text("-0"), Some(-0.0));
        assert_eq!(text("16777217"), Some(16777217.0));
        let big = 1.4137449735717864e193;
        assert_eq!(text(&big.to_string()), Some(big));
        assert_eq!(text("inf"), Some(f64::INFINITY));
        assert_eq!(text("x"), None);
    }
}
