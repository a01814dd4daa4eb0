//! The Craft decoder: reads a message from both ends (version, then trailer and size tables),
//! then its headers and each body's column groups into the event model, or, for the typed layout,
//! locates every row's values first and then reads them into the output a column at a time,
//! each column's values from the wire straight into its sink in the form its type gives them.

use std::borrow::Cow;
use std::ops::Range;

use super::cursor::Cursor;
use super::{
    BODY_TABLE, EVENT_DDL, EVENT_RESOLVED, EVENT_ROW, FIRST_GROUP_TABLE, GROUP_NEW, GROUP_OLD, META_TABLE,
    MIN_COLUMN_BYTES, VERSION,
};
use crate::codec::{Codec, Protocol};
use crate::columns::{ColumnAppender, Null, RowBlock, TableColumns, WireValue};
use crate::error::{Fault, FaultResult};
use crate::event::{flag, recycle, ColumnType, Event, EventKind, MessageEvents, Value};
use crate::schema::mysql::MySqlType;

#[derive(Default)]
pub struct CraftCodec {
    /// All size-table values, flat; `tables[i]` is a range into it.
    sizes: Vec<i64>,
    tables: Vec<Range<usize>>,
    /// Term dictionary entries as byte spans of the dictionary text.
    terms: Vec<Range<usize>>,
    headers: Headers,
    /// Value lengths of the column group the event path reads.
    lengths: Vec<i64>,
    /// The buffer of [`GroupReader::described`], kept empty between messages.
    described: Vec<GroupColumn<'static>>,
    /// The direct path's rows of the last message, kept for their buffers.
    spans: RowSpans,
}

/// The headers of one message, one entry per event.
#[derive(Default)]
struct Headers {
    ts: Vec<u64>,
    kinds: Vec<u64>,
    partitions: Vec<i64>,
    schemas: Vec<i64>,
    tables: Vec<i64>,
}

/// The term dictionary of one message: its text, checked as UTF-8 once, and each term's span.
struct Terms<'t, 'a> {
    text: &'a str,
    spans: &'t [Range<usize>],
}

impl<'a> Terms<'_, 'a> {
    fn get(&self, id: i64, at: usize) -> FaultResult<&'a str> {
        let span = usize::try_from(id).ok().and_then(|i| self.spans.get(i));
        span.and_then(|s| self.text.get(s.clone())).ok_or_else(|| {
            Fault::new(at, format!("invalid term id {id} (the dictionary has {} terms)", self.spans.len()))
        })
    }

    /// A header name: -1 is no name.
    fn nullable(&self, id: i64, at: usize) -> FaultResult<Option<&'a str>> {
        if id == -1 {
            return Ok(None);
        }
        self.get(id, at).map(Some)
    }
}

/// A message read from both ends: where its parts are, once the size tables, the term dictionary
/// and the headers (left in the codec) are read.
struct Frame<'a> {
    /// Where the headers start, just after the version.
    start: usize,
    /// Where the size tables start.
    tables_start: usize,
    regions: Regions,
    /// The term dictionary's text.
    text: &'a str,
}

impl Frame<'_> {
    fn events(&self) -> usize {
        self.regions.body_sizes.len()
    }
}

impl Codec for CraftCodec {
    fn protocol(&self) -> Protocol {
        Protocol::Craft
    }

    fn decode<'a>(&mut self, _key: Option<&'a [u8]>, value: &'a [u8], out: &mut MessageEvents<'a>) -> FaultResult<()> {
        let frame = self.read_frame(value)?;
        let (start, tables_start) = (frame.start, frame.tables_start);
        let terms = Terms { text: frame.text, spans: &self.terms };
        let h = &self.headers;
        let mut groups = GroupReader::new(&terms, recycle(std::mem::take(&mut self.described)));
        let mut bodies = Bodies::new(value, &frame, &self.sizes);
        for i in 0..frame.events() {
            let mut body = bodies.next()?;
            let ts = h.ts[i];
            let schema = terms.nullable(h.schemas[i], start)?.map(Cow::Borrowed);
            let table = terms.nullable(h.tables[i], start)?.map(Cow::Borrowed);
            match h.kinds[i] {
                EVENT_RESOLVED => out.events.push(Event::new(EventKind::Watermark, ts)),
                EVENT_DDL => {
                    let action = body.uvarint()?;
                    let len = body.count(1, "DDL query length")?;
                    let at = body.offset();
                    let query = utf8(body.take(len, "DDL query")?, at)?;
                    let mut ev = Event::new(EventKind::Ddl, ts);
                    ev.schema = schema;
                    ev.table = table;
                    ev.ddl = Some(Cow::Borrowed(query));
                    ev.ddl_type = Some(Cow::Owned(action.to_string()));
                    out.events.push(ev);
                }
                EVENT_ROW => {
                    let group_sizes = group_sizes(&self.tables, &self.sizes, i, tables_start)?;
                    let mut ev = Event::new(EventKind::Insert, ts);
                    ev.schema = schema;
                    ev.table = table;
                    ev.partition_id = Some(h.partitions[i]).filter(|&p| p >= 0);
                    if read_row(&mut body, group_sizes, &mut groups, &mut self.lengths, &mut ev, out)? {
                        out.events.push(ev);
                    }
                }
                other => return Err(Fault::new(start, format!("unknown event type {other} for event {i}"))),
            }
        }
        self.described = recycle(groups.described);
        Ok(())
    }

    /// A message whose events are all rows of the sink's table goes straight into the sink. Any
    /// other message is left to [`Codec::decode`].
    fn decode_rows<'a>(
        &mut self,
        _key: Option<&'a [u8]>,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        self.put_message(value, out, rows)
    }
}

impl CraftCodec {
    /// Reads a message's version, size tables, term dictionary and headers.
    fn read_frame<'a>(&mut self, value: &'a [u8]) -> FaultResult<Frame<'a>> {
        let mut cur = Cursor::new(value);
        let version = cur.uvarint()?;
        if version < VERSION {
            return Err(Fault::new(0, format!("unexpected craft version {version}")));
        }
        let start = cur.offset();
        let tables_start = self.read_size_tables(value, start)?;
        let regions = self.layout(start, tables_start)?;
        let text = self.read_dictionary(value, regions.bodies.end, regions.dictionary_end)?;
        let header = Cursor::window(value, start, regions.bodies.start, "headers")?;
        read_headers(header, regions.body_sizes.len(), &mut self.headers)?;
        Ok(Frame { start, tables_start, regions, text })
    }

    /// [`Codec::decode_rows`]: false when an event is not a row of a table `rows` takes, or
    /// when a column group describes its columns otherwise than the message's first (an UPDATE's
    /// old image whose types must be compared with the new one's, rows written across a schema
    /// change): `decode` reads those.
    fn put_message<'a>(
        &mut self,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        let frame = self.read_frame(value)?;
        let terms = Terms { text: frame.text, spans: &self.terms };
        let h = &self.headers;
        let mut taken = None;
        for i in 0..frame.events() {
            let names = (h.schemas[i], h.tables[i]);
            if h.kinds[i] != EVENT_ROW {
                return Ok(false);
            }
            if taken != Some(names) {
                let schema = terms.nullable(names.0, frame.start)?;
                let table = terms.nullable(names.1, frame.start)?;
                match (schema, table) {
                    (Some(schema), Some(table)) if rows.takes(schema, table) => taken = Some(names),
                    _ => return Ok(false),
                }
            }
        }
        let mut groups = GroupReader::new(&terms, recycle(std::mem::take(&mut self.described)));
        let spans = &mut self.spans;
        spans.clear();
        let whole = spans.read(value, &frame, &self.sizes, &self.tables, &mut groups)?;
        if whole {
            spans.fields.extend(groups.described.iter().map(|d| rows.field(d.name)));
            rows.put_columns(&MessageRows { message: value, spans, described: &groups.described })?;
            for &(i, kind) in &spans.events {
                push_row_event(out, kind, i, h, &terms, frame.start)?;
            }
        }
        self.described = recycle(groups.described);
        Ok(whole)
    }
}

/// Pushes the event of row event `i`, whose values went to the sink.
fn push_row_event<'a>(
    out: &mut MessageEvents<'a>,
    kind: EventKind,
    i: usize,
    h: &Headers,
    terms: &Terms<'_, 'a>,
    at: usize,
) -> FaultResult<()> {
    let schema = terms.nullable(h.schemas[i], at)?;
    let table = terms.nullable(h.tables[i], at)?;
    let ev = out.push_event(kind, h.ts[i]);
    ev.schema = schema.map(Cow::Borrowed);
    ev.table = table.map(Cow::Borrowed);
    ev.partition_id = Some(h.partitions[i]).filter(|&p| p >= 0);
    Ok(())
}

/// The row events of one message for the direct path, each value located before any is read:
/// the sink then takes the message a column at a time ([`TableColumns::put_columns`]), and each
/// column's values are read from the wire straight into it ([`MessageRows`]).
#[derive(Default)]
struct RowSpans {
    /// The columns' output fields, in the order the description gives the columns.
    fields: Vec<Option<usize>>,
    /// The values of the row images (an INSERT's or UPDATE's new image, a DELETE's old one),
    /// row after row, each in the columns' order.
    values: Vec<ValueSpan>,
    /// The old images, laid out alike, once a row has one (an UPDATE): every row from the
    /// message's first on, a row without one all NULL; empty while no row has one.
    old_values: Vec<ValueSpan>,
    /// Whether each row has an old image.
    had_old: Vec<bool>,
    /// Each row's event and kind.
    events: Vec<(usize, EventKind)>,
}

/// Where a value's bytes are in the message.
#[derive(Clone, Copy)]
struct ValueSpan {
    at: usize,
    /// -1 for NULL, as the wire writes it.
    len: i32,
}

impl ValueSpan {
    const NULL: ValueSpan = ValueSpan { at: 0, len: -1 };
}

impl RowSpans {
    fn clear(&mut self) {
        self.fields.clear();
        self.values.clear();
        self.old_values.clear();
        self.had_old.clear();
        self.events.clear();
    }

    /// Locates every value of the message's row events. Returns false, with the spans to be
    /// dropped, when a column group describes its columns otherwise than the message's first.
    fn read<'a>(
        &mut self,
        value: &'a [u8],
        frame: &Frame<'_>,
        sizes: &[i64],
        tables: &[Range<usize>],
        reader: &mut GroupReader<'_, 'a>,
    ) -> FaultResult<bool> {
        let mut bodies = Bodies::new(value, frame, sizes);
        let mut first = true;
        for i in 0..frame.events() {
            let mut body = bodies.next()?;
            let (row, old, kind) = match split_groups(&mut body, group_sizes(tables, sizes, i, frame.tables_start)?)? {
                RowGroups { new: Some(new), old: Some(old) } => (new, Some(old), EventKind::Update),
                RowGroups { new: Some(new), old: None } => (new, None, EventKind::Insert),
                RowGroups { new: None, old: Some(old) } => (old, None, EventKind::Delete),
                RowGroups { new: None, old: None } => continue,
            };
            let rows_before = self.had_old.len();
            self.had_old.push(old.is_some());
            self.events.push((i, kind));
            if !read_group(row, reader, &mut first, &mut self.values)? {
                return Ok(false);
            }
            let columns = reader.described.len();
            match old {
                Some(old) => {
                    if self.old_values.is_empty() {
                        self.old_values.resize(rows_before * columns, ValueSpan::NULL);
                    }
                    if !read_group(old, reader, &mut first, &mut self.old_values)? {
                        return Ok(false);
                    }
                }
                None if !self.old_values.is_empty() => {
                    self.old_values.resize(self.old_values.len() + columns, ValueSpan::NULL);
                }
                None => {}
            }
        }
        Ok(true)
    }
}

/// Locates the values of one column group onto `spans`; false when its description is not the
/// message's first (`first`: no group read yet).
fn read_group<'a>(
    mut group: Cursor<'a>,
    reader: &mut GroupReader<'_, 'a>,
    first: &mut bool,
    spans: &mut Vec<ValueSpan>,
) -> FaultResult<bool> {
    let (m, repeated) = reader.read_columns(&mut group)?;
    if !repeated && !*first {
        return Ok(false);
    }
    *first = false;
    let values_len = locate_values(&mut group, m, spans)?;
    group.take(values_len, "column values")?;
    whole_group(&group)?;
    Ok(true)
}

/// Reads the `m` value lengths of a group's nullable bytes chunk (zigzag varints, -1 = NULL)
/// onto `spans`, each span placed where its value is, after the lengths and the values before it.
/// Returns the bytes of the values, which follow. The lengths are read from a slice by a loop
/// that keeps its place in a register, a one-byte length (most are under 64) without a call.
#[inline(always)]
fn locate_values(group: &mut Cursor<'_>, m: usize, spans: &mut Vec<ValueSpan>) -> FaultResult<usize> {
    let lengths_at = group.offset();
    let bytes = group.rest();
    let from = spans.len();
    spans.resize(from + m, ValueSpan::NULL);
    let (mut pos, mut values_len) = (0, 0);
    for span in &mut spans[from..] {
        let at = lengths_at + pos;
        let len = match bytes.get(pos) {
            Some(&b) if b < 0x80 => {
                pos += 1;
                checked_length(at, crate::varint::unzigzag(b as u64))?
            }
            _ => {
                let mut long = *group;
                long.skip(pos);
                let len = value_length(&mut long)?;
                pos = long.offset() - lengths_at;
                len
            }
        };
        *span = ValueSpan { at: values_len, len: len as i32 };
        values_len += len.max(0) as usize;
    }
    let start = lengths_at + pos;
    spans[from..].iter_mut().for_each(|span| span.at += start);
    group.skip(pos);
    Ok(values_len)
}

/// A message's row events as [`TableColumns::put_columns`] takes them: each column's values
/// read from their spans by the column's form, and handed on in that form.
struct MessageRows<'s, 'a> {
    message: &'a [u8],
    spans: &'s RowSpans,
    described: &'s [GroupColumn<'a>],
}

impl RowBlock for MessageRows<'_, '_> {
    fn fields(&self) -> &[Option<usize>] {
        &self.spans.fields
    }

    fn had_old(&self) -> &[bool] {
        &self.spans.had_old
    }

    fn first_at(&self, j: usize) -> usize {
        self.spans.values.get(j).map_or(0, |span| span.at)
    }

    fn append_column(&self, j: usize, old: bool, to: ColumnAppender<'_>) -> FaultResult<()> {
        let spans = if old { &self.spans.old_values } else { &self.spans.values };
        let rows = spans.chunks_exact(self.described.len().max(1));
        let column = ColumnValues { message: self.message, rows, j };
        let message = self.message;
        match self.described[j].form {
            ValueForm::Unsigned => to.append_read(column, |bytes, at| uvarint_value(message, bytes, at)),
            ValueForm::Signed => {
                to.append_read(column, |bytes, at| uvarint_value(message, bytes, at).map(crate::varint::unzigzag))
            }
            ValueForm::Float => to.append_read(column, |bytes, at| number(bytes, at, Cursor::f64).map(CraftFloat)),
            ValueForm::Double => to.append_read(column, |bytes, at| number(bytes, at, Cursor::f64)),
            ValueForm::Bytes => to.append(column),
            ValueForm::Text => to.append_text(column, utf8),
            ValueForm::Null => to.append(column.map(|(_, at)| (Null, at))),
        }
    }
}

/// Column `j` of rows of value spans: each value's bytes (None: NULL) and offset.
#[derive(Clone)]
struct ColumnValues<'s, 'a> {
    message: &'a [u8],
    rows: std::slice::ChunksExact<'s, ValueSpan>,
    j: usize,
}

impl<'a> Iterator for ColumnValues<'_, 'a> {
    type Item = (Option<&'a [u8]>, usize);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let span = self.rows.next()?[self.j];
        let bytes = (span.len != -1).then(|| &self.message[span.at..span.at + span.len as usize]);
        Some((bytes, span.at))
    }
}

/// A FLOAT as Craft writes it, a float64: as the event model reads it, a float32 when it is one
/// exactly.
#[derive(Clone, Copy)]
struct CraftFloat(f64);

impl CraftFloat {
    fn value(self) -> Value<'static> {
        let f = self.0;
        if (f as f32) as f64 == f {
            Value::Float32(f as f32)
        } else {
            Value::Float64(f)
        }
    }
}

impl<'v> WireValue<'v> for CraftFloat {
    #[inline(always)]
    fn float(self) -> Option<f64> {
        Some(self.0)
    }

    fn write_number(self, out: &mut String) -> bool {
        (&self.value()).write_number(out)
    }

    fn describe(self) -> String {
        (&self.value()).describe()
    }

    fn to_value(self) -> Value<'v> {
        self.value()
    }
}

/// The event bodies of a message, back to back, each a window of the size its table gives.
struct Bodies<'f, 'a> {
    value: &'a [u8],
    sizes: std::slice::Iter<'f, i64>,
    start: usize,
}

impl<'f, 'a> Bodies<'f, 'a> {
    fn new(value: &'a [u8], frame: &Frame<'_>, sizes: &'f [i64]) -> Self {
        let sizes = sizes[frame.regions.body_sizes.clone()].iter();
        Bodies { value, sizes, start: frame.regions.bodies.start }
    }

    /// The next body (the size tables list exactly one per event, each checked to fit).
    fn next(&mut self) -> FaultResult<Cursor<'a>> {
        let len = self.sizes.next().map_or(0, |&len| len as usize);
        let body = Cursor::window(self.value, self.start, self.start + len, "event body")?;
        self.start += len;
        Ok(body)
    }
}

/// The column-group sizes of row event `i`.
fn group_sizes<'s>(tables: &[Range<usize>], sizes: &'s [i64], i: usize, tables_start: usize) -> FaultResult<&'s [i64]> {
    tables
        .get(FIRST_GROUP_TABLE + i)
        .map(|r| &sizes[r.clone()])
        .ok_or_else(|| Fault::new(tables_start, format!("no column-group size table for row event {i}")))
}

/// Where the regions between the version and the size tables are, as the meta and body size
/// tables describe them.
struct Regions {
    /// The event bodies, back to back (the headers run from the version to `bodies.start`).
    bodies: Range<usize>,
    dictionary_end: usize,
    /// Each body's size: a range of the size values.
    body_sizes: Range<usize>,
}

impl CraftCodec {
    /// Checks the meta and body size tables against the bytes between the version (at `start`)
    /// and the size tables, and lays the regions out.
    fn layout(&self, start: usize, tables_start: usize) -> FaultResult<Regions> {
        let fault = |reason: String| Fault::new(tables_start, reason);
        if self.tables.len() < FIRST_GROUP_TABLE {
            return Err(fault(format!("{} size tables, at least 2 needed", self.tables.len())));
        }
        let meta = &self.sizes[self.tables[META_TABLE].clone()];
        let &[header, dictionary, ..] = meta else {
            return Err(fault("the meta size table needs the header and dictionary sizes".into()));
        };
        let body_sizes = self.tables[BODY_TABLE].clone();
        if body_sizes.is_empty() {
            return Err(fault("message holds no events".into()));
        }
        let available = (tables_start - start) as u64;
        let mut total = 0u64;
        for (what, size) in [("header", header), ("dictionary", dictionary)]
            .into_iter()
            .chain(self.sizes[body_sizes.clone()].iter().map(|&s| ("body", s)))
        {
            let size = u64::try_from(size).map_err(|_| fault(format!("negative {what} size {size}")))?;
            total = total.saturating_add(size);
            if total > available {
                return Err(fault(format!("size tables describe more than the {available} bytes before them")));
            }
        }
        let body_start = start + header as usize;
        let body_end = start + (total - dictionary as u64) as usize;
        Ok(Regions { bodies: body_start..body_end, dictionary_end: body_end + dictionary as usize, body_sizes })
    }

    /// Reads the trailer and the size tables it points to. Returns where the tables start.
    fn read_size_tables(&mut self, value: &[u8], start: usize) -> FaultResult<usize> {
        self.sizes.clear();
        self.tables.clear();
        let (len, trailer) =
            super::cursor::reversed_uvarint(&value[start..]).map_err(|f| Fault::new(f.offset + start, f.reason))?;
        let trailer_at = value.len() - trailer;
        if len > i32::MAX as u64 {
            return Err(Fault::new(trailer_at, format!("size tables length {len} is greater than max int32")));
        }
        let tables_start = trailer_at.checked_sub(len as usize).filter(|&s| s >= start).ok_or_else(|| {
            Fault::new(trailer_at, format!("size tables of {len} bytes do not fit before the trailer"))
        })?;
        let mut cur = Cursor::window(value, tables_start, trailer_at, "size tables")?;
        while !cur.is_empty() {
            let count = cur.count(1, "size table length")?;
            let from = self.sizes.len();
            let mut last = 0i64;
            for j in 0..count {
                let v = cur.varint()?;
                last = if j == 0 { v } else { last.wrapping_add(v) };
                self.sizes.push(last);
            }
            self.tables.push(from..self.sizes.len());
        }
        Ok(tables_start)
    }

    /// Reads the term dictionary in `value[start..end)` (empty when the range is), returning its
    /// text; the spans of its terms are left in `self.terms`.
    fn read_dictionary<'a>(&mut self, value: &'a [u8], start: usize, end: usize) -> FaultResult<&'a str> {
        self.terms.clear();
        if start == end {
            return Ok("");
        }
        let mut cur = Cursor::window(value, start, end, "term dictionary")?;
        let count = cur.count(1, "term count")?;
        let mut total = 0usize;
        for _ in 0..count {
            let len = cur.count(0, "term length")?;
            self.terms.push(total..total + len);
            total += len;
        }
        let at = cur.offset();
        let bytes = cur.take(total, "term dictionary text")?;
        let text = utf8(bytes, at)?;
        if let Some(bad) = self.terms.iter().find(|s| !text.is_char_boundary(s.start)) {
            return Err(Fault::new(at + bad.start, "term splits a UTF-8 character"));
        }
        Ok(text)
    }
}

/// The column groups of one row event, by type: its new image and its old one.
struct RowGroups<'a> {
    new: Option<Cursor<'a>>,
    old: Option<Cursor<'a>>,
}

/// Splits a row event's body into its column groups (after each group's type byte).
fn split_groups<'a>(body: &mut Cursor<'a>, group_sizes: &[i64]) -> FaultResult<RowGroups<'a>> {
    let mut groups = RowGroups { new: None, old: None };
    let mut sizes = group_sizes.iter();
    while !body.is_empty() {
        let at = body.offset();
        let Some(&size) = sizes.next() else {
            return Err(Fault::new(at, "row body holds more column groups than its size table lists"));
        };
        let size = usize::try_from(size).map_err(|_| Fault::new(at, "negative column group size"))?;
        let mut group = body.split(size, "column group")?;
        let kind = group.u8()?;
        let slot = match kind {
            GROUP_NEW => &mut groups.new,
            GROUP_OLD => &mut groups.old,
            other => return Err(Fault::new(at, format!("unknown column group type {other}"))),
        };
        if slot.is_some() {
            return Err(Fault::new(at, format!("column group type {kind} appears twice in one row")));
        }
        *slot = Some(group);
    }
    Ok(groups)
}

/// Reads the column groups of one row event into `out`, setting the event's kind, images
/// and keys. Returns false for a row event without column groups: an empty row change, which
/// TiCDC v5.2.0 wrote for transactions whose changes cancel out (`newRowChangedMessage`); it has
/// no event.
fn read_row<'a>(
    body: &mut Cursor<'a>,
    group_sizes: &[i64],
    reader: &mut GroupReader<'_, 'a>,
    lengths: &mut Vec<i64>,
    ev: &mut Event<'a>,
    out: &mut MessageEvents<'a>,
) -> FaultResult<bool> {
    let groups = split_groups(body, group_sizes)?;
    for (group, slot) in [(groups.new, &mut ev.after), (groups.old, &mut ev.before)] {
        if let Some(mut group) = group {
            *slot = Some(reader.read(&mut group, lengths, out)?);
        }
    }
    ev.kind = match (&ev.after, &ev.before) {
        (Some(after), Some(before)) => {
            out.check_image_types(after, before)?;
            EventKind::Update
        }
        (Some(_), None) => EventKind::Insert,
        (None, Some(_)) => EventKind::Delete,
        (None, None) => return Ok(false),
    };
    let described = ev.after.clone().or(ev.before.clone()).unwrap_or_default();
    let keys_from = out.keys.len();
    for c in &out.columns[described] {
        if c.ty.flags.is_some_and(|f| f & flag::HANDLE_KEY != 0) {
            out.keys.push(c.name.clone());
        }
    }
    ev.keys = keys_from..out.keys.len();
    Ok(true)
}

fn read_headers(mut cur: Cursor<'_>, n: usize, h: &mut Headers) -> FaultResult<()> {
    // Five chunks of n values, each value at least one byte.
    if n.saturating_mul(5) > cur.remaining() {
        return Err(cur.fault(format!("headers of {} bytes cannot hold {n} events", cur.remaining())));
    }
    h.ts.clear();
    let mut last = 0u64;
    for i in 0..n {
        let v = cur.uvarint()?;
        last = if i == 0 { v } else { last.wrapping_add(v) };
        h.ts.push(last);
    }
    h.kinds.clear();
    for _ in 0..n {
        h.kinds.push(cur.uvarint()?);
    }
    for chunk in [&mut h.partitions, &mut h.schemas, &mut h.tables] {
        delta_varints(&mut cur, n, chunk)?;
    }
    Ok(())
}

/// A delta varint chunk of `n` values (signed deltas, wrapping like Go's int64).
fn delta_varints(cur: &mut Cursor<'_>, n: usize, out: &mut Vec<i64>) -> FaultResult<()> {
    out.clear();
    let mut last = 0i64;
    for i in 0..n {
        let v = cur.varint()?;
        last = if i == 0 { v } else { last.wrapping_add(v) };
        out.push(last);
    }
    Ok(())
}

/// Reads the column groups of one message. The rows of a table in one message describe their
/// columns with the same bytes (names as term ids of the message's dictionary, types, flags), so
/// a group whose description repeats the last one's byte for byte reuses what was read from it:
/// only its values are read. For the direct path, whose messages describe every group alike,
/// each column's output field is resolved once: that is the plan per (table, wire column order),
/// made once per message.
struct GroupReader<'t, 'a> {
    terms: &'t Terms<'t, 'a>,
    /// The columns the last description read describes, and where in the message it was.
    described: Vec<GroupColumn<'a>>,
    description: Range<usize>,
}

/// A column as a group's description gives it.
#[derive(Clone, Copy)]
struct GroupColumn<'a> {
    name: &'a str,
    base: MySqlType,
    flags: u64,
    form: ValueForm,
}

impl GroupColumn<'_> {
    fn unsigned(&self) -> bool {
        self.flags & flag::UNSIGNED != 0
    }

    fn binary(&self) -> bool {
        self.flags & flag::BINARY != 0 && self.base.is_string()
    }

    /// How the column's values are written (`craft.md` §4).
    fn value_form(&self) -> ValueForm {
        use MySqlType as T;
        match self.base {
            T::TinyInt | T::SmallInt | T::MediumInt | T::Int | T::BigInt if self.unsigned() => ValueForm::Unsigned,
            T::TinyInt | T::SmallInt | T::MediumInt | T::Int | T::BigInt | T::Year => ValueForm::Signed,
            T::Enum | T::Set | T::Bit => ValueForm::Unsigned,
            T::Float => ValueForm::Float,
            T::Double => ValueForm::Double,
            T::Char | T::VarChar | T::TinyText | T::Text | T::MediumText | T::LongText if self.binary() => {
                ValueForm::Bytes
            }
            T::Date
            | T::DateTime
            | T::Timestamp
            | T::Time
            | T::Json
            | T::Decimal
            | T::Vector
            | T::Char
            | T::VarChar
            | T::TinyText
            | T::Text
            | T::MediumText
            | T::LongText => ValueForm::Text,
            T::Null | T::Geometry | T::Unknown => ValueForm::Null,
        }
    }
}

/// How a column's value bytes are read, worked out once per description.
#[derive(Clone, Copy)]
enum ValueForm {
    /// A uvarint.
    Unsigned,
    /// A zigzag varint.
    Signed,
    /// A FLOAT as a float64: a float32 when it is one exactly.
    Float,
    Double,
    Bytes,
    /// UTF-8 text: strings, and temporal, decimal, JSON and vector values as text.
    Text,
    /// Types Go reads as NULL.
    Null,
}

impl<'t, 'a> GroupReader<'t, 'a> {
    fn new(terms: &'t Terms<'t, 'a>, described: Vec<GroupColumn<'a>>) -> Self {
        GroupReader { terms, described, description: 0..0 }
    }

    /// Reads one column group (after its type byte) into `out.columns`, returning its range;
    /// `lengths` is for its value lengths.
    fn read(
        &mut self,
        cur: &mut Cursor<'a>,
        lengths: &mut Vec<i64>,
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Range<usize>> {
        lengths.clear();
        self.read_header(cur, |len| lengths.push(len))?;
        let from = out.columns.len();
        for (d, &len) in self.described.iter().zip(lengths.iter()) {
            let at = cur.offset();
            // Filled in place (see `MessageEvents::push_column`).
            let c = out.push_column();
            c.name = Cow::Borrowed(d.name);
            c.ty = ColumnType {
                base: d.base,
                unsigned: d.unsigned(),
                binary: d.binary(),
                text: None,
                flags: Some(d.flags),
            };
            c.at = at;
            if len != -1 {
                let bytes = cur.take(len as usize, "column value")?;
                decode_value(d, bytes, at, &mut c.value)?;
            }
        }
        whole_group(cur)?;
        Ok(from..out.columns.len())
    }

    /// Reads a group's column count, its description unless it repeats the last one, and its
    /// value lengths, each handed to `length` (-1: NULL). Returns whether the description
    /// repeated.
    fn read_header(&mut self, cur: &mut Cursor<'a>, mut length: impl FnMut(i64)) -> FaultResult<bool> {
        let (m, repeated) = self.read_columns(cur)?;
        for _ in 0..m {
            length(value_length(cur)?);
        }
        Ok(repeated)
    }

    /// Reads a group's column count and its description unless it repeats the last one. Returns
    /// the count, and whether the description repeated.
    #[inline(always)]
    fn read_columns(&mut self, cur: &mut Cursor<'a>) -> FaultResult<(usize, bool)> {
        let m = cur.count(MIN_COLUMN_BYTES, "column count")?;
        let repeated =
            !self.description.is_empty() && self.described.len() == m && cur.skip_repeat(self.description.clone());
        if !repeated {
            let at = cur.offset();
            self.read_description(cur, m)?;
            self.description = at..cur.offset();
        }
        Ok((m, repeated))
    }

    /// Reads the name, type and flag chunks of `m` columns into `self.described`.
    fn read_description(&mut self, cur: &mut Cursor<'a>, m: usize) -> FaultResult<()> {
        let described = &mut self.described;
        described.clear();
        // Names: a delta varint chunk of term ids.
        let mut id = 0i64;
        for j in 0..m {
            let at = cur.offset();
            let v = cur.varint()?;
            id = if j == 0 { v } else { id.wrapping_add(v) };
            let name = self.terms.get(id, at)?;
            described.push(GroupColumn { name, base: MySqlType::Unknown, flags: 0, form: ValueForm::Null });
        }
        for d in described.iter_mut() {
            d.base = base_type(cur.uvarint()?);
        }
        for d in described.iter_mut() {
            d.flags = cur.uvarint()?;
            d.form = d.value_form();
        }
        Ok(())
    }
}

/// A value length of a group's nullable bytes chunk (a zigzag varint, -1 = NULL).
#[inline(always)]
fn value_length(cur: &mut Cursor<'_>) -> FaultResult<i64> {
    let at = cur.offset();
    checked_length(at, cur.varint()?)
}

/// `len`, read at `at`, when it is a value length: -1 (NULL) up to `i32::MAX`.
#[inline(always)]
fn checked_length(at: usize, len: i64) -> FaultResult<i64> {
    if (-1..=i32::MAX as i64).contains(&len) {
        return Ok(len);
    }
    Err(invalid_length(at, len))
}

#[cold]
fn invalid_length(at: usize, len: i64) -> Fault {
    Fault::new(at, format!("invalid value length {len}"))
}

fn whole_group(group: &Cursor<'_>) -> FaultResult<()> {
    if group.is_empty() {
        Ok(())
    } else {
        Err(group.fault("column group has trailing bytes"))
    }
}

/// The base type of a wire type code. 0 is TiDB's "unspecified" (not MySQL's old DECIMAL), whose
/// values Go reads as NULL.
fn base_type(code: u64) -> MySqlType {
    if code == 0 {
        MySqlType::Unknown
    } else {
        MySqlType::from_code(code)
    }
}

/// A column value from its bytes in the values chunk (`craft.md` §4), stored into `out`. (Stored
/// rather than returned: a returned `Result<Value, _>` travels through memory, and the caller's
/// copy of it stalled on store forwarding once per value.)
#[inline(always)]
fn decode_value<'a>(column: &GroupColumn<'_>, bytes: &'a [u8], at: usize, out: &mut Value<'a>) -> FaultResult<()> {
    *out = match column.form {
        ValueForm::Unsigned => Value::UInt(number(bytes, at, Cursor::uvarint)?),
        ValueForm::Signed => Value::Int(number(bytes, at, Cursor::varint)?),
        ValueForm::Float => CraftFloat(number(bytes, at, Cursor::f64)?).value(),
        ValueForm::Double => Value::Float64(number(bytes, at, Cursor::f64)?),
        ValueForm::Bytes => Value::Bytes(Cow::Borrowed(bytes)),
        ValueForm::Text => Value::Text(Cow::Borrowed(utf8(bytes, at)?)),
        ValueForm::Null => Value::Null,
    };
    Ok(())
}

/// A number value, read by `read` from its bytes at `at`, which it must fill.
#[inline(always)]
fn number<'b, T>(bytes: &'b [u8], at: usize, read: impl FnOnce(&mut Cursor<'b>) -> FaultResult<T>) -> FaultResult<T> {
    let mut cur = Cursor::new(bytes);
    let v = read(&mut cur).map_err(|f| Fault::new(at + f.offset, f.reason))?;
    if !cur.is_empty() {
        return Err(Fault::new(at + cur.offset(), "trailing bytes after a number value"));
    }
    Ok(v)
}

/// A uvarint number value, `bytes`, which are `message[at..]`: read as one word where the
/// message has eight bytes from `at` on, else (and for a value that is not one whole varint, to
/// name its fault) by the cursor.
#[inline(always)]
fn uvarint_value(message: &[u8], bytes: &[u8], at: usize) -> FaultResult<u64> {
    let word = message.get(at..).and_then(|rest| rest.first_chunk::<8>());
    match word.and_then(|word| crate::varint::read_filling(u64::from_le_bytes(*word), bytes.len())) {
        Some(v) => Ok(v),
        None => number(bytes, at, Cursor::uvarint),
    }
}

#[inline]
fn utf8(bytes: &[u8], at: usize) -> FaultResult<&str> {
    crate::utf8::check(bytes).map_err(|valid| Fault::new(at + valid, "invalid UTF-8 in text"))
}
