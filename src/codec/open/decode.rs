//! Reading open-protocol messages into [`MessageEvents`].
//!
//! Key items are small JSON objects read in place. Value items are read with the [`JsonCursor`];
//! uncompressed ones lend their strings to the events. A compressed item is inflated into a
//! buffer local to the call, so its columns are copied out once read. Every fault carries the
//! byte offset in the value, or in the key for key-side faults (the reason says so).

use std::borrow::Cow;
use std::ops::Range;

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;

use super::{gotext, read_u64, BATCH_VERSION, TYPE_DDL, TYPE_RESOLVED, TYPE_ROW};
use crate::canonical_base64;
use crate::codec::{Codec, Protocol, ValueScratch};
use crate::columns::TableColumns;
use crate::digits;
use crate::error::{Fault, FaultResult};
use crate::event::{
    flag, push_empty_column, same_name, Column, ColumnType, Event, EventKind, MessageEvents, SpareBuffers, Text, Value,
};
use crate::input::Compression;
use crate::json::{span_in, JsonCursor, KeyOrder};
use crate::schema::mysql::MySqlType;

/// Go's `base64.StdEncoding`: padded, and lenient about the unused bits of the last symbol.
const GO_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

pub struct OpenCodec {
    compression: Compression,
    headers: ColumnHeaders,
    key_items: KeyItems,
    plan: FieldPlan,
    scratch: ValueScratch,
}

impl OpenCodec {
    pub fn new(compression: Compression) -> Self {
        OpenCodec {
            compression,
            headers: ColumnHeaders::default(),
            key_items: KeyItems::default(),
            plan: FieldPlan::default(),
            scratch: ValueScratch::default(),
        }
    }
}

impl Codec for OpenCodec {
    fn protocol(&self) -> Protocol {
        Protocol::Open
    }

    fn decode<'a>(&mut self, key: Option<&'a [u8]>, value: &'a [u8], out: &mut MessageEvents<'a>) -> FaultResult<()> {
        let key = key.ok_or_else(|| Fault::new(0, "open protocol message without a key"))?;
        let mut pairs = Pairs::new(key, value)?;
        while let Some((key_item, value_item)) = pairs.next()? {
            self.decode_event(key_item, value_item, out)?;
        }
        Ok(())
    }

    /// An uncompressed message whose events are all row changes of the sink's table goes
    /// straight into the sink, when each is as TiCDC writes it: `u`, `u` then a whole `p` whose
    /// columns are the new row's in its order, or `d`. Any other message (a DDL, a claim check,
    /// an old image of only the changed columns) is left to [`Codec::decode`].
    fn decode_rows<'a>(
        &mut self,
        key: Option<&'a [u8]>,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        let Some(key) = key.filter(|_| self.compression == Compression::None) else { return Ok(false) };
        let put = self.put_message(key, value, out, rows);
        self.scratch.release_large();
        put
    }
}

/// The (key item, value item) pairs of a message, each item with the offset of its bytes.
struct Pairs<'a> {
    keys: Items<'a>,
    values: Items<'a>,
}

type Item<'a> = (usize, &'a [u8]);

impl<'a> Pairs<'a> {
    fn new(key: &'a [u8], value: &'a [u8]) -> FaultResult<Self> {
        let version =
            read_u64(key, 0).ok_or_else(|| Fault::new(0, "key shorter than its 8-byte version header (in the key)"))?;
        if version != BATCH_VERSION {
            return Err(Fault::new(0, format!("unexpected key format version {version} (in the key)")));
        }
        Ok(Pairs { keys: Items { buf: key, pos: 8, side: "key" }, values: Items { buf: value, pos: 0, side: "value" } })
    }

    fn next(&mut self) -> FaultResult<Option<(Item<'a>, Item<'a>)>> {
        let Some(key_item) = self.keys.next()? else {
            if self.values.pos < self.values.buf.len() {
                return Err(Fault::new(self.values.pos, "the value has more items than the key"));
            }
            return Ok(None);
        };
        let value_item = self.values.next()?.ok_or_else(|| {
            Fault::new(
                self.values.buf.len(),
                format!("the value has fewer items than the key (key item at byte {})", key_item.0),
            )
        })?;
        Ok(Some((key_item, value_item)))
    }
}

/// The length-prefixed items of one frame.
struct Items<'a> {
    buf: &'a [u8],
    pos: usize,
    side: &'static str,
}

impl<'a> Items<'a> {
    /// The next item and the offset where its bytes start, or None at the end of the frame.
    fn next(&mut self) -> FaultResult<Option<(usize, &'a [u8])>> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let at = self.pos;
        let len = read_u64(self.buf, at)
            .ok_or_else(|| Fault::new(at, format!("truncated item length (in the {})", self.side)))?;
        let start = at + 8;
        let left = self.buf.len() - start;
        if len > left as u64 {
            return Err(Fault::new(
                at,
                format!("item length {len} runs past the end of the {} ({left} bytes left)", self.side),
            ));
        }
        self.pos = start + len as usize;
        Ok(Some((start, &self.buf[start..self.pos])))
    }
}

/// The fields of one key item.
#[derive(Default)]
struct KeyItem<'a> {
    ts: u64,
    schema: Option<Text<'a>>,
    table: Option<Text<'a>>,
    partition: Option<i64>,
    kind: Option<u64>,
    handle_key_only: bool,
    claim_check: Option<Text<'a>>,
}

/// The members of a key item the codec reads.
#[derive(Clone, Copy)]
enum KeyMember {
    Ts,
    Schema,
    Table,
    Partition,
    Kind,
    HandleKeyOnly,
    ClaimCheck,
    /// `rid`: deprecated, ignored by TiCDC's decoders too.
    RowId,
    /// Anything unknown.
    Other,
}

impl KeyMember {
    fn of(name: &str) -> KeyMember {
        match name {
            "ts" => KeyMember::Ts,
            "scm" => KeyMember::Schema,
            "tbl" => KeyMember::Table,
            "ptn" => KeyMember::Partition,
            "t" => KeyMember::Kind,
            "ohk" => KeyMember::HandleKeyOnly,
            "ccl" => KeyMember::ClaimCheck,
            "rid" => KeyMember::RowId,
            _ => KeyMember::Other,
        }
    }
}

/// The key items of a stream, read with what the last one said. TiCDC writes every key item of
/// a table as `{"ts":…` and then the same bytes (`scm`, `tbl`, `t`, …) but for the row id
/// `rid`, which the decoders ignore: a key item that opens with `{"ts":` and a number and goes
/// on with the bytes the last one read in full went on with, its row id aside, says what that
/// one said at its own `ts`, so its members are not read again. Anything else is read member
/// by member ([`KeyOrder`]), and remembered when its `ts` came first and alone.
#[derive(Default)]
struct KeyItems {
    members: KeyOrder<KeyMember>,
    repeated: RepeatedKey,
}

/// What a key item read in full said after its leading `ts`, and the bytes that said it.
#[derive(Default)]
struct RepeatedKey {
    /// From the end of the `ts` number to the item's end, without the row id's number;
    /// empty: nothing remembered.
    tail: Vec<u8>,
    /// Where in `tail` the row id's number was, when the item had one.
    row_id_at: Option<usize>,
    /// The item's strings, as spans of `tail`.
    schema: Option<Range<usize>>,
    table: Option<Range<usize>>,
    claim_check: Option<Range<usize>>,
    partition: Option<i64>,
    kind: Option<u64>,
    handle_key_only: bool,
}

const TS_FIRST: &[u8] = b"{\"ts\":";

impl KeyItems {
    fn read<'a>(&mut self, json: &'a [u8]) -> FaultResult<KeyItem<'a>> {
        if let Some(key) = self.repeated.read(json) {
            return Ok(key);
        }
        let (key, numbers) = read_key(json, &mut self.members)?;
        self.repeated.remember(json, numbers, &key);
        Ok(key)
    }
}

impl RepeatedKey {
    /// The key item `json`, when it repeats the remembered one but for its `ts` and row id.
    #[inline]
    fn read<'a>(&self, json: &'a [u8]) -> Option<KeyItem<'a>> {
        let rest = json.strip_prefix(TS_FIRST)?;
        let mut ts = 0;
        let digits = digits::read_digits(rest, &mut ts);
        let rest = rest.get(digits..).filter(|_| (1..=19).contains(&digits) && !self.tail.is_empty())?;
        let tail_at = json.len() - rest.len();
        // How far the bytes of `tail` after the row id lie from where `tail` puts them.
        let row_id_len = match self.row_id_at {
            None => (rest == &self.tail[..]).then_some(0)?,
            Some(split) => {
                let (before, after) = self.tail.split_at(split);
                let row_id = rest.strip_prefix(before)?;
                let sign = usize::from(row_id.first() == Some(&b'-'));
                let digits = digits::read_digits(&row_id[sign..], &mut 0);
                (digits > 0 && row_id.get(sign + digits..)? == after).then_some(sign + digits)?
            }
        };
        let text = |span: &Option<Range<usize>>| match span {
            Some(span) => {
                let at = tail_at + if self.row_id_at.is_some_and(|split| span.start >= split) { row_id_len } else { 0 };
                crate::utf8::check(&json[at + span.start..at + span.end]).ok().map(|s| Some(Cow::Borrowed(s)))
            }
            None => Some(None),
        };
        Some(KeyItem {
            ts,
            schema: text(&self.schema)?,
            table: text(&self.table)?,
            partition: self.partition,
            kind: self.kind,
            handle_key_only: self.handle_key_only,
            claim_check: text(&self.claim_check)?,
        })
    }

    /// Remembers `key`, read in full from `json` (see [`KeyNumbers`]); strings with escapes
    /// (not spans of `json`) leave nothing remembered.
    fn remember(&mut self, json: &[u8], numbers: KeyNumbers, key: &KeyItem<'_>) {
        self.tail.clear();
        let Some(ts_end) = numbers.ts_end.filter(|_| json.starts_with(TS_FIRST)) else { return };
        let after_ts = &json[ts_end..];
        let row_id = numbers.row_id.map(|r| r.start - ts_end..r.end - ts_end);
        let span = |text: &Option<Text<'_>>| {
            let Some(text) = text else { return Some(None) };
            let Cow::Borrowed(text) = text else { return None };
            let at = span_in(after_ts, text.as_bytes())?;
            match &row_id {
                Some(r) if at.start >= r.end => Some(Some(at.start - r.len()..at.end - r.len())),
                Some(r) if at.end > r.start => None,
                _ => Some(Some(at)),
            }
        };
        let (Some(schema), Some(table), Some(claim_check)) =
            (span(&key.schema), span(&key.table), span(&key.claim_check))
        else {
            return;
        };
        match &row_id {
            Some(r) => {
                self.tail.extend_from_slice(&after_ts[..r.start]);
                self.tail.extend_from_slice(&after_ts[r.end..]);
            }
            None => self.tail.extend_from_slice(after_ts),
        }
        self.row_id_at = row_id.map(|r| r.start);
        (self.schema, self.table, self.claim_check) = (schema, table, claim_check);
        (self.partition, self.kind, self.handle_key_only) = (key.partition, key.kind, key.handle_key_only);
    }
}

/// Where the numbers of a key item read in full lie: the end of its `ts` when that was its
/// first member and its only `ts`, and its row id's number when it had one `rid`, an integer.
#[derive(Default)]
struct KeyNumbers {
    ts_end: Option<usize>,
    row_id: Option<Range<usize>>,
}

/// Reads a key item, its members matched against those the last key item wrote (`members`).
fn read_key<'a>(json: &'a [u8], members: &mut KeyOrder<KeyMember>) -> FaultResult<(KeyItem<'a>, KeyNumbers)> {
    let mut cur = JsonCursor::new(json)?;
    let mut k = KeyItem::default();
    let mut numbers = KeyNumbers::default();
    let mut row_ids = 0;
    cur.begin_object()?;
    let mut nth = 0;
    while let Some(member) = members.next(&mut cur, nth, KeyMember::of)? {
        match member {
            KeyMember::Ts => {
                k.ts = cur.u64()?;
                numbers.ts_end = (nth == 0).then_some(cur.offset());
            }
            KeyMember::Schema => k.schema = nonempty(nullable_string(&mut cur)?),
            KeyMember::Table => k.table = nonempty(nullable_string(&mut cur)?),
            KeyMember::Partition => k.partition = if cur.null()? { None } else { Some(cur.i64()?) },
            KeyMember::Kind => k.kind = Some(cur.u64()?),
            KeyMember::HandleKeyOnly => k.handle_key_only = !cur.null()? && cur.bool()?,
            KeyMember::ClaimCheck => k.claim_check = nonempty(nullable_string(&mut cur)?),
            KeyMember::RowId => {
                cur.peek();
                let start = cur.offset();
                cur.skip_value()?;
                let number = &json[start..cur.offset()];
                let integer = number.strip_prefix(b"-").unwrap_or(number);
                row_ids += 1;
                numbers.row_id =
                    (!integer.is_empty() && integer.iter().all(u8::is_ascii_digit)).then_some(start..cur.offset());
            }
            KeyMember::Other => cur.skip_value()?,
        }
        nth += 1;
    }
    if !cur.at_end() {
        return Err(cur.fault("trailing bytes after the key object"));
    }
    if row_ids > 1 {
        numbers.row_id = None;
        numbers.ts_end = None;
    }
    Ok((k, numbers))
}

fn nullable_string<'a>(cur: &mut JsonCursor<'a>) -> FaultResult<Option<Text<'a>>> {
    if cur.null()? {
        return Ok(None);
    }
    cur.string().map(Some)
}

fn nonempty(s: Option<Text<'_>>) -> Option<Text<'_>> {
    s.filter(|s| !s.is_empty())
}

/// Moves a fault found inside an item to message coordinates.
fn at_base(base: usize, side: &'static str) -> impl Fn(Fault) -> Fault {
    move |f| Fault::new(base + f.offset, format!("{} (in the {side})", f.reason))
}

/// The u/p/d images of one row item, as ranges into the column vector they were read into.
#[derive(Default)]
struct RowImages {
    update: Option<Range<usize>>,
    pre: Option<Range<usize>>,
    delete: Option<Range<usize>>,
    /// The item is `{}`: an empty row change, which TiCDC before v4.0.15, v5.0.4 and v5.1.2
    /// wrote for transactions whose changes cancel out (`rowEventToMqMessage`); it has no event.
    empty: bool,
}

impl OpenCodec {
    fn decode_event<'a>(
        &mut self,
        (key_at, key_json): (usize, &'a [u8]),
        (value_at, item): (usize, &'a [u8]),
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<()> {
        let key = self.key_items.read(key_json).map_err(at_base(key_at, "key"))?;
        let kind = key.kind.ok_or_else(|| Fault::new(key_at, "key item without a message type \"t\" (in the key)"))?;
        match kind {
            TYPE_RESOLVED => {
                out.events.push(Event::new(EventKind::Watermark, key.ts));
                Ok(())
            }
            TYPE_DDL => {
                let (query, ddl_type) = match self.compression {
                    Compression::None => read_ddl(item).map_err(at_base(value_at, "value"))?,
                    compression => {
                        let plain = inflate(compression, item, value_at)?;
                        let (q, t) = read_ddl(&plain).map_err(inflated_fault(value_at))?;
                        (Cow::Owned(q.into_owned()), Cow::Owned(t.into_owned()))
                    }
                };
                let mut ev = Event::new(EventKind::Ddl, key.ts);
                ev.schema = key.schema;
                ev.table = key.table;
                ev.ddl = Some(query);
                ev.ddl_type = Some(ddl_type);
                out.events.push(ev);
                Ok(())
            }
            TYPE_ROW => {
                let images = match self.compression {
                    Compression::None => read_row(item, value_at, &mut self.headers, &mut out.columns, &mut out.spare)
                        .map_err(at_base(value_at, "value"))?,
                    compression => {
                        let plain = inflate(compression, item, value_at)?;
                        let mut local = Vec::new();
                        let images = read_row(&plain, value_at, &mut self.headers, &mut local, &mut out.spare)
                            .map_err(inflated_fault(value_at))?;
                        let shift = out.columns.len();
                        out.columns.extend(local.into_iter().map(|c| owned_column(c, value_at)));
                        let moved = |r: Option<Range<usize>>| r.map(|r| r.start + shift..r.end + shift);
                        RowImages {
                            update: moved(images.update),
                            pre: moved(images.pre),
                            delete: moved(images.delete),
                            ..images
                        }
                    }
                };
                push_row(out, key, images, value_at)
            }
            other => Err(Fault::new(key_at, format!("unknown message type {other} (in the key)"))),
        }
    }
}

fn inflate(compression: Compression, item: &[u8], at: usize) -> FaultResult<Vec<u8>> {
    compression.decompress(item).map_err(|f| Fault::new(at, format!("decompress data failed: {}", f.reason)))
}

fn inflated_fault(at: usize) -> impl Fn(Fault) -> Fault {
    move |f| Fault::new(at, format!("{} (at byte {} of the decompressed value item)", f.reason, f.offset))
}

/// `{"q": query, "t": action type}`; the action type is kept as its digits.
fn read_ddl(item: &[u8]) -> FaultResult<(Text<'_>, Text<'_>)> {
    let mut cur = JsonCursor::new(item)?;
    let (mut query, mut action) = (None, None);
    cur.begin_object()?;
    let mut first = true;
    while let Some(name) = cur.next_key(&mut first)? {
        match name.as_ref() {
            "q" => query = nullable_string(&mut cur)?,
            "t" => {
                let at = cur.offset();
                let digits = cur.number_text()?;
                if digits.parse::<i64>().is_err() {
                    return Err(Fault::new(at, format!("DDL type {digits} is not an integer")));
                }
                action = Some(Cow::Borrowed(digits));
            }
            _ => cur.skip_value()?,
        }
    }
    if !cur.at_end() {
        return Err(cur.fault("trailing bytes after the DDL object"));
    }
    Ok((query.unwrap_or_default(), action.unwrap_or(Cow::Borrowed("0"))))
}

/// `{"u": {...}, "p": {...}, "d": {...}}`, each map optional. Column `at` offsets are `base` +
/// the position in `item`.
/// Values that cannot borrow from `item` are written into buffers from `spare`.
fn read_row<'b>(
    item: &'b [u8],
    base: usize,
    headers: &mut ColumnHeaders,
    columns: &mut Vec<Column<'b>>,
    spare: &mut SpareBuffers,
) -> FaultResult<RowImages> {
    let mut cur = JsonCursor::new(item)?;
    std::mem::swap(cur.spare(), spare);
    let images = read_images(&mut cur, base, headers, columns);
    std::mem::swap(cur.spare(), spare);
    images
}

fn read_images<'b>(
    cur: &mut JsonCursor<'b>,
    base: usize,
    headers: &mut ColumnHeaders,
    columns: &mut Vec<Column<'b>>,
) -> FaultResult<RowImages> {
    let mut images = RowImages { empty: true, ..Default::default() };
    cur.begin_object()?;
    let mut first = true;
    while let Some(name) = cur.next_key(&mut first)? {
        images.empty = false;
        // An UPDATE's old columns are read with the flags of the same columns in its new row:
        // new TiCDC v8.5.4 and v8.5.5 with `only-output-updated-columns` wrote MySQL's own
        // column flags into `p` (`writeColumnFieldValueIfUpdated`), where NOT NULL reads as
        // BINARY and BINARY (set on every numeric column) as UNSIGNED.
        let flags_from = if name == "p" { images.update.clone() } else { None };
        let image = match name.as_ref() {
            "u" => &mut images.update,
            "p" => &mut images.pre,
            "d" => &mut images.delete,
            _ => {
                cur.skip_value()?;
                continue;
            }
        };
        if cur.null()? {
            continue;
        }
        let start = columns.len();
        cur.begin_object()?;
        let mut first_column = true;
        let mut position = 0;
        while cur.next_member(&mut first_column)? {
            push_empty_column(columns);
            let last = columns.len() - 1;
            let (earlier, this) = columns.split_at_mut(last);
            let new_row = flags_from.clone().map(|r| &earlier[r]);
            let forced = |name: &str, _| new_row.and_then(|row| flags_in(row, name, position));
            let out = &mut this[0];
            headers.read_column(cur, position, base, forced, |name, _, ty, value, at, _| {
                (out.name, out.ty, out.value, out.at) = (name, ty, value, at);
                Ok(())
            })?;
            position += 1;
        }
        *image = Some(start..columns.len());
    }
    if !cur.at_end() {
        return Err(cur.fault("trailing bytes after the row object"));
    }
    Ok(images)
}

impl OpenCodec {
    /// [`Codec::decode_rows`]: false for a message it leaves to `decode`.
    fn put_message<'a>(
        &mut self,
        key: &'a [u8],
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        let mut pairs = Pairs::new(key, value)?;
        while let Some(((_, key_json), (value_at, item))) = pairs.next()? {
            let key = self.key_items.read(key_json)?;
            if key.kind != Some(TYPE_ROW) || key.handle_key_only || key.claim_check.is_some() {
                return Ok(false);
            }
            let (Some(schema), Some(table)) = (&key.schema, &key.table) else { return Ok(false) };
            if !rows.takes(schema, table) {
                return Ok(false);
            }
            let mut cur = JsonCursor::new(item)?;
            std::mem::swap(cur.spare(), &mut out.spare);
            let put = self.put_row(&mut cur, value_at, rows);
            std::mem::swap(cur.spare(), &mut out.spare);
            let kind = match put? {
                PutRow::Row(kind) => kind,
                PutRow::NoChange => continue,
                PutRow::GivenUp => return Ok(false),
            };
            let ev = out.push_event(kind, key.ts);
            ev.schema = key.schema;
            ev.table = key.table;
            ev.partition_id = key.partition;
        }
        Ok(true)
    }

    /// Puts a row item's images into `rows`: `u` as the row (then a whole `p` as its `_before`),
    /// or `d` as the row.
    fn put_row(&mut self, cur: &mut JsonCursor<'_>, base: usize, rows: &mut TableColumns) -> FaultResult<PutRow> {
        let mut kind = None;
        let mut empty = true;
        cur.begin_object()?;
        let mut first = true;
        while let Some(name) = cur.next_key(&mut first)? {
            empty = false;
            if cur.null()? {
                return Ok(PutRow::GivenUp);
            }
            kind = match (name.as_ref(), kind) {
                ("u", None) => self.put_image(cur, base, rows, false)?.map(|_| EventKind::Insert),
                ("d", None) => self.put_image(cur, base, rows, false)?.filter(|&n| n > 0).map(|_| EventKind::Delete),
                ("p", Some(EventKind::Insert)) => match self.put_image(cur, base, rows, true)? {
                    Some(0) => Some(EventKind::Insert),
                    Some(n) if n == self.plan.columns.len() => Some(EventKind::Update),
                    _ => None,
                },
                _ => None,
            };
            if kind.is_none() {
                return Ok(PutRow::GivenUp);
            }
        }
        if !cur.at_end() {
            return Err(cur.fault("trailing bytes after the row object"));
        }
        Ok(match kind {
            Some(kind) => {
                rows.end_row(kind == EventKind::Update);
                PutRow::Row(kind)
            }
            None if empty => PutRow::NoChange,
            None => PutRow::GivenUp,
        })
    }

    /// Puts the columns of one image into `rows`, as the row or (`old`) as its `_before`, and
    /// returns how many there were; None when it gives up. The new row's columns are planned:
    /// each one's field, and the type its value was read with. An old image is put only when it
    /// names the same columns in the same order, each of the same type, and it is begun only
    /// when it has a column (`"p":{}` is an INSERT).
    fn put_image(
        &mut self,
        cur: &mut JsonCursor<'_>,
        base: usize,
        rows: &mut TableColumns,
        old: bool,
    ) -> FaultResult<Option<usize>> {
        if !old {
            rows.begin_image(false);
        }
        let mut position = 0;
        cur.begin_object()?;
        let mut first = true;
        while cur.next_member(&mut first)? {
            let put = match self.put_remembered(cur, position, base, rows, old)? {
                Some(put) => put,
                None => self.put_read(cur, position, base, rows, old)?,
            };
            if !put {
                return Ok(None);
            }
            position += 1;
        }
        if !old || position > 0 {
            rows.end_image();
        }
        if !old {
            self.plan.columns.truncate(position);
        }
        Ok(Some(position))
    }

    /// Puts the `position`-th column of an image when it opens with the text remembered for
    /// that position (see [`ColumnHeaders`]): its value goes from the wire into its column.
    /// None, the cursor unmoved, when it does not; false to give the message up (also when the
    /// value is not the column's last member, which a remembered text never ends with).
    #[inline(always)]
    fn put_remembered(
        &mut self,
        cur: &mut JsonCursor<'_>,
        position: usize,
        base: usize,
        rows: &mut TableColumns,
        old: bool,
    ) -> FaultResult<Option<bool>> {
        let Some((name, header)) = self.headers.skip(cur, position) else { return Ok(None) };
        let (field, mut ty) = if old {
            let Some(planned) = self.plan.columns.get(position).filter(|p| p.is_named(name, Some(header.stamp))) else {
                return Ok(Some(false));
            };
            if position == 0 {
                rows.begin_image(true);
            }
            // The old columns take the flags of the new row's (see `read_images`).
            let ty = match planned.ty.flags {
                Some(flags) if Some(flags) != header.ty.flags => column_type(header.ty.base, flags),
                _ => header.ty.clone(),
            };
            (planned.field, ty)
        } else {
            let field = match self.plan.columns.get_mut(position) {
                Some(planned) if planned.is_named(name, Some(header.stamp)) => {
                    planned.header = Some(header.stamp);
                    planned.field
                }
                _ => self.plan.new_column(position, name, Some(header.stamp), header.ty.clone(), rows),
            };
            (field, header.ty.clone())
        };
        let at = cur.offset();
        ty.binary |= put_value(cur, ty.base, ty.flags.unwrap_or_default(), field, rows, base + at, &mut self.scratch)?;
        if cur.peek() != Some(b'}') {
            return Ok(Some(false));
        }
        cur.seek(cur.offset() + 1);
        Ok(Some(match self.plan.columns.get_mut(position) {
            Some(planned) if old => ty.same_type(&planned.ty),
            Some(planned) => {
                planned.ty = ty;
                true
            }
            None => false,
        }))
    }

    /// Puts the `position`-th column of an image read in full (see
    /// [`ColumnHeaders::read_new_header`]); false to give the message up.
    fn put_read(
        &mut self,
        cur: &mut JsonCursor<'_>,
        position: usize,
        base: usize,
        rows: &mut TableColumns,
        old: bool,
    ) -> FaultResult<bool> {
        let planned = match self.plan.columns.get(position) {
            None if old => return Ok(false),
            planned => planned.filter(|_| old),
        };
        let forced = |name: &str| planned.and_then(|p| p.ty.flags.filter(|_| p.is_named(name, None)));
        let column = self.headers.read_new_header(cur, position, base, forced)?;
        match planned {
            Some(planned) => {
                if !planned.is_named(&column.name, None) || !column.ty.same_type(&planned.ty) {
                    return Ok(false);
                }
                if position == 0 {
                    rows.begin_image(true);
                }
                rows.put(planned.field, &column.value, column.at)?;
            }
            None => {
                let field = self.plan.new_column(position, &column.name, None, column.ty, rows);
                rows.put(field, &column.value, column.at)?;
            }
        }
        cur.spare().give_column(column.name, column.value);
        Ok(true)
    }
}

/// What [`OpenCodec::put_row`] made of a row item.
enum PutRow {
    Row(EventKind),
    /// `{}`: no event (see [`RowImages::empty`]).
    NoChange,
    GivenUp,
}

/// The columns of the new row last put, by position: each one's name, output field and type
/// (with its flags). A table's rows list their columns alike, so a column is looked up by name only when
/// its position held another.
#[derive(Default)]
struct FieldPlan {
    columns: Vec<PlannedColumn>,
}

struct PlannedColumn {
    name: String,
    /// The stamp of the remembered header the name was read from (see [`ColumnHeader::stamp`]).
    header: Option<u64>,
    field: Option<usize>,
    ty: ColumnType<'static>,
}

impl PlannedColumn {
    /// Whether the column read from `header` (when read from a remembered one) is called `name`
    /// as this one is: surely so when its name was read from the same header.
    #[inline(always)]
    fn is_named(&self, name: &str, header: Option<u64>) -> bool {
        (header.is_some() && header == self.header) || same_name(&self.name, name)
    }
}

impl FieldPlan {
    /// The field of the `position`-th column of a new row, of this name (read from `header`
    /// when read from a remembered one) and type.
    fn new_column(
        &mut self,
        position: usize,
        name: &str,
        header: Option<u64>,
        ty: ColumnType<'static>,
        rows: &TableColumns,
    ) -> Option<usize> {
        match self.columns.get_mut(position) {
            Some(planned) if planned.is_named(name, header) => {
                (planned.header, planned.ty) = (header, ty);
                planned.field
            }
            Some(planned) => {
                planned.name.clear();
                planned.name.push_str(name);
                (planned.header, planned.field, planned.ty) = (header, rows.field(name), ty);
                planned.field
            }
            None => {
                let field = rows.field(name);
                self.columns.push(PlannedColumn { name: name.to_string(), header, field, ty });
                field
            }
        }
    }
}

/// What the text before each column's value said, by the column's position in its row image.
///
/// Every event of a table writes each column as `"name":{"t":15,"h":true,"f":11,"v":…}` with
/// the same bytes up to the value, so the codec remembers those bytes and what they said (name
/// length, type code, flags) per position: a column that starts with the remembered bytes and
/// whose value closes its object is read from the value on, without reading its name and keys
/// again. Anything else (another table, keys in another order, escapes in the name) is read in
/// full, and remembered in place of the last.
#[derive(Default)]
struct ColumnHeaders {
    by_position: Vec<ColumnHeader>,
    /// How many headers have been remembered: the next one's stamp.
    remembered: u64,
}

struct ColumnHeader {
    /// From the name's opening quote to the value's first byte.
    text: Vec<u8>,
    name_len: usize,
    /// The type its type code and flags (as written) give (see [`column_type`]).
    ty: ColumnType<'static>,
    /// Which header this is, of all those remembered: the same stamp means the same text, so a
    /// column's plan that read its name from this header knows the name again by the stamp.
    stamp: u64,
}

impl Default for ColumnHeader {
    fn default() -> Self {
        ColumnHeader { text: Vec::new(), name_len: 0, ty: column_type(MySqlType::Unknown, 0), stamp: u64::MAX }
    }
}

impl ColumnHeaders {
    /// Reads the column at the cursor (its name, then its object), the `position`-th of its image;
    /// with the flags `forced` gives for its name, when it gives any (an UPDATE's old columns
    /// take the flags of the same columns in its new row). `forced` and `take` are told the
    /// stamp of the remembered header the column was read from, if it was. The column goes to
    /// `take` as its name, header stamp, type, value and the value's offset, with the spare
    /// buffers: handed on, not stored and copied, as a value written field by field and then
    /// copied whole stalls on store forwarding.
    #[inline(always)]
    fn read_column<'b, R>(
        &mut self,
        cur: &mut JsonCursor<'b>,
        position: usize,
        base: usize,
        forced: impl Fn(&str, Option<u64>) -> Option<u64>,
        take: impl FnOnce(Text<'b>, Option<u64>, ColumnType<'static>, Value<'b>, usize, &mut SpareBuffers) -> FaultResult<R>,
    ) -> FaultResult<R> {
        let (name, header, ty, value, at) = 'read: {
            cur.peek();
            let start = cur.offset();
            if let Some((name, h)) = self.skip(cur, position) {
                let ty = match forced(name, Some(h.stamp)) {
                    Some(flags) if Some(flags) != h.ty.flags => column_type(h.ty.base, flags),
                    _ => h.ty.clone(),
                };
                let value_at = cur.offset();
                let value = read_value(cur, ty.base, ty.flags.unwrap_or_default())?;
                if cur.peek() == Some(b'}') {
                    cur.seek(cur.offset() + 1);
                    let ty = value_type(ty, &value);
                    break 'read (Cow::Borrowed(name), Some(h.stamp), ty, value, base + value_at);
                }
                cur.seek(start);
            }
            let column = self.read_new_header(cur, position, base, |name| forced(name, None))?;
            (column.name, None, column.ty, column.value, column.at)
        };
        take(name, header, ty, value, at, cur.spare())
    }

    /// Steps past the text remembered at `position` when the column at the cursor opens with it,
    /// to the column's value; returns the column's name and what the text said.
    #[inline(always)]
    fn skip<'b>(&self, cur: &mut JsonCursor<'b>, position: usize) -> Option<(&'b str, &ColumnHeader)> {
        let h = self.by_position.get(position)?;
        cur.peek();
        let start = cur.offset();
        cur.skip_if_next(&h.text).then(|| (cur.slice(start + 1..start + 1 + h.name_len), h))
    }

    /// Reads a column in full, remembering the text before its value at `position` when that
    /// says all there is to know.
    fn read_new_header<'b>(
        &mut self,
        cur: &mut JsonCursor<'b>,
        position: usize,
        base: usize,
        forced: impl Fn(&str) -> Option<u64>,
    ) -> FaultResult<ReadColumn<'b>> {
        let start = cur.offset();
        let name = cur.string()?;
        cur.expect(b':')?;
        let name_len = match &name {
            Cow::Borrowed(n) => Some(n.len()),
            Cow::Owned(_) => None,
        };
        let forced = forced(&name);
        let column = read_column(cur, name, base, forced)?;
        if let (Some(name_len), Some(value_at)) = (name_len, column.last_value_at) {
            if self.by_position.len() <= position {
                self.by_position.resize_with(position + 1, ColumnHeader::default);
            }
            let h = &mut self.by_position[position];
            h.text.clear();
            h.text.extend_from_slice(cur.slice(start..value_at).as_bytes());
            (h.name_len, h.ty, h.stamp) = (name_len, column.written.clone(), self.remembered);
            self.remembered += 1;
        }
        Ok(column)
    }
}

/// A column read in full by [`read_column`].
struct ReadColumn<'b> {
    name: Text<'b>,
    ty: ColumnType<'static>,
    value: Value<'b>,
    at: usize,
    /// The type its type code and flags as written give (`ty` has the forced flags).
    written: ColumnType<'static>,
    /// Where the value starts, when it was the object's last member and read in place (so
    /// that the text before it says all there is to know).
    last_value_at: Option<usize>,
}

/// The flags of the column called `name` in `row`, looked for at `position` first.
fn flags_in(row: &[Column<'_>], name: &str, position: usize) -> Option<u64> {
    match row.get(position) {
        Some(c) if same_name(c.name.as_bytes(), name) => c.ty.flags,
        _ => row.iter().find(|c| same_name(c.name.as_bytes(), name)).and_then(|c| c.ty.flags),
    }
}

/// The type of a column with this type (its code's) and flags. A BLOB/TEXT code without the
/// binary flag whose value is not UTF-8 (TiCDC before v4.0.5 wrote no flags) is a BLOB:
/// [`value_type`] marks its type binary, as the value read as bytes says.
fn column_type(base: MySqlType, flags: u64) -> ColumnType<'static> {
    ColumnType {
        base,
        unsigned: flags & flag::UNSIGNED != 0,
        binary: flags & flag::BINARY != 0 && base.is_string(),
        text: None,
        flags: Some(flags),
    }
}

/// The type of a column as its value was read: a BLOB/TEXT code without the binary flag whose
/// value is not UTF-8 is a BLOB (see [`column_type`]).
fn value_type(mut ty: ColumnType<'static>, value: &Value<'_>) -> ColumnType<'static> {
    ty.binary |= matches!(value, Value::Bytes(_));
    ty
}

/// `{"t": type, "h": bool, "f": flags, "v": value}`, in any order (tiflow writes t, h, f, v),
/// read with the `forced` flags in place of its own when given.
fn read_column<'b>(
    cur: &mut JsonCursor<'b>,
    name: Text<'b>,
    base: usize,
    forced: Option<u64>,
) -> FaultResult<ReadColumn<'b>> {
    let object_at = cur.offset();
    cur.begin_object()?;
    let mut ty = None;
    let mut written = 0;
    let mut flags = forced.unwrap_or(0);
    let mut value = None;
    let mut value_at = 0;
    // Whether the value must be (re)read because its type or flags came after it.
    let mut stale = false;
    let mut value_last = false;
    let mut first = true;
    while let Some(field) = cur.next_key(&mut first)? {
        value_last = field == "v";
        match field.as_ref() {
            "t" => {
                ty = Some(MySqlType::from_code(cur.u64()?));
                stale = value.is_some() || stale;
            }
            "f" => {
                written = if cur.null()? { 0 } else { cur.u64()? };
                flags = forced.unwrap_or(written);
                stale = value.is_some() || stale;
            }
            "v" => {
                value_at = cur.offset();
                match ty {
                    Some(ty) => value = Some(read_value(cur, ty, flags)?),
                    None => {
                        cur.skip_value()?;
                        stale = true;
                    }
                }
            }
            _ => cur.skip_value()?, // "h": informational, the flags say the same
        }
    }
    let ty = ty.ok_or_else(|| Fault::new(object_at, format!("column {name} has no type \"t\"")))?;
    let value = if stale {
        let end = cur.offset();
        cur.seek(value_at);
        let v = read_value(cur, ty, flags)?;
        cur.seek(end);
        v
    } else {
        value.unwrap_or(Value::Null)
    };
    let last_value_at = (value_last && !stale).then_some(value_at);
    Ok(ReadColumn {
        name,
        ty: value_type(column_type(ty, flags), &value),
        value,
        at: base + value_at,
        written: column_type(ty, written),
        last_value_at,
    })
}

/// One `v`, typed by its column's type and flags.
#[inline(always)]
fn read_value<'b>(cur: &mut JsonCursor<'b>, ty: MySqlType, flags: u64) -> FaultResult<Value<'b>> {
    use MySqlType::*;
    let at = cur.offset();
    let binary = flags & flag::BINARY != 0;
    match cur.peek() {
        Some(b'n') => {
            cur.null()?;
            Ok(Value::Null)
        }
        // A binary string's Go quoting and JSON escapes undone in one pass where it can be.
        Some(b'"') if matches!(ty, Char | VarChar) && binary => {
            let blocks = cur.blocks();
            match cur.string_with(|json, spare| gotext::go_unquote_json(json, spare, blocks))? {
                Some(bytes) => Ok(Value::Bytes(bytes)),
                None => read_string_value(cur, ty, binary, at),
            }
        }
        Some(b'"') => read_string_value(cur, ty, binary, at),
        Some(b'-' | b'0'..=b'9') if ty.is_integer() && flags & flag::UNSIGNED != 0 => cur.u64().map(Value::UInt),
        Some(b'-' | b'0'..=b'9') if ty.is_integer() => cur.i64().map(Value::Int),
        Some(b'-' | b'0'..=b'9') if ty == Float => float_number(cur, true).map(|v| Value::Float32(v as f32)),
        Some(b'-' | b'0'..=b'9') if ty == Double => float_number(cur, false).map(Value::Float64),
        Some(b'-' | b'0'..=b'9') => {
            let text = cur.number_text()?;
            let bad = |what: &str| Fault::new(at, format!("{text} is not {what}"));
            match ty {
                // Go reads BIT with Int64 and reinterprets it; ENUM/SET are small indexes.
                Bit | Enum | Set => text
                    .parse::<u64>()
                    .or_else(|_| text.parse::<i64>().map(|v| v as u64))
                    .map(Value::UInt)
                    .map_err(|_| bad("a 64-bit integer")),
                Geometry => Ok(Value::Bytes(Cow::Borrowed(text.as_bytes()))),
                _ => Ok(Value::Text(Cow::Borrowed(text))),
            }
        }
        Some(_) => Err(cur.fault("column value must be a string, a number or null")),
        None => Err(cur.fault("unexpected end of the value item")),
    }
}

/// Puts one `v` into `rows` for `field`, read as [`read_value`] reads it but with no [`Value`]
/// between the wire and the column for the common forms: text and binary strings go straight
/// into a column of their kind (through `scratch` into any other), BLOB/TEXT's base64 decoded
/// straight into a binary column (through `scratch` into any other), integers as integers,
/// floats as floats. The rare rest (numbers written as text, BIT/ENUM/SET numbers, GEOMETRY)
/// are read as values. Returns whether the value was bytes (see [`value_type`]). `at` is the
/// value's offset in the message.
#[inline(always)]
fn put_value(
    cur: &mut JsonCursor<'_>,
    ty: MySqlType,
    flags: u64,
    field: Option<usize>,
    rows: &mut TableColumns,
    at: usize,
    scratch: &mut ValueScratch,
) -> FaultResult<bool> {
    use MySqlType::*;
    let binary = flags & flag::BINARY != 0;
    match cur.peek() {
        Some(b'n') => {
            cur.null()?;
            rows.put(field, crate::columns::Null, at)?;
            Ok(false)
        }
        Some(b'"') if matches!(ty, Char | VarChar) && binary => {
            rows.put_bytes_with(
                field,
                at,
                &mut scratch.bytes,
                #[inline(always)]
                |bytes| go_quoted_or_into(cur, bytes),
            )?;
            Ok(true)
        }
        Some(b'"') if !matches!(ty, TinyText | Text | MediumText | LongText | Geometry) => {
            rows.put_text_with(
                field,
                at,
                &mut scratch.text,
                #[inline(always)]
                |text| cur.string_or_into(text),
            )?;
            Ok(false)
        }
        Some(b'"') if matches!(ty, TinyText | Text | MediumText | LongText) && binary => {
            rows.put_bytes_with(field, at, &mut scratch.bytes, |bytes| base64_into(cur, bytes, at).map(|()| None))?;
            Ok(true)
        }
        Some(b'"') if matches!(ty, TinyText | Text | MediumText | LongText) => {
            // Go reads every BLOB/TEXT code as bytes. Before v4.0.5 no flags told the two
            // apart: bytes that are not UTF-8 are a BLOB's (see `column_type`).
            scratch.bytes.clear();
            base64_into(cur, &mut scratch.bytes, at)?;
            match crate::utf8::check(&scratch.bytes) {
                Ok(text) => rows.put(field, text, at).map(|()| false),
                Err(_) => rows.put(field, scratch.bytes.as_slice(), at).map(|()| true),
            }
        }
        Some(b'-' | b'0'..=b'9') if ty.is_integer() && flags & flag::UNSIGNED != 0 => {
            rows.put(field, cur.u64()?, at)?;
            Ok(false)
        }
        Some(b'-' | b'0'..=b'9') if ty.is_integer() => {
            rows.put(field, cur.i64()?, at)?;
            Ok(false)
        }
        Some(b'-' | b'0'..=b'9') if ty == Float => {
            rows.put(field, float_number(cur, true)? as f32, at)?;
            Ok(false)
        }
        Some(b'-' | b'0'..=b'9') if ty == Double => {
            rows.put(field, float_number(cur, false)?, at)?;
            Ok(false)
        }
        _ => {
            let value = read_value(cur, ty, flags)?;
            rows.put(field, &value, at)?;
            let bytes = matches!(value, Value::Bytes(_));
            cur.spare().give_value(value);
            Ok(bytes)
        }
    }
}

/// A binary string's bytes, Go's quoting and the JSON escapes undone in one pass where they can
/// be, else the general way: borrowed when it has no escapes, else written onto `out` (see
/// [`JsonCursor::string_or_into`]).
#[inline(always)]
fn go_quoted_or_into<'b>(cur: &mut JsonCursor<'b>, out: &mut Vec<u8>) -> FaultResult<Option<&'b [u8]>> {
    let len = out.len();
    let blocks = cur.blocks();
    if let Some(read) = cur.string_with(|json, _| gotext::go_unquote_json_or_into(json, out, blocks))? {
        return Ok(read);
    }
    out.truncate(len);
    let at = cur.offset();
    let value = read_string_value(cur, MySqlType::VarChar, true, at)?;
    if let Value::Bytes(bytes) = &value {
        out.extend_from_slice(bytes);
    }
    cur.spare().give_value(value);
    Ok(None)
}

/// The number at the cursor as a FLOAT (`single`) or a DOUBLE. Out of range it would read as an
/// infinity, which no MySQL column holds.
fn float_number(cur: &mut JsonCursor<'_>, single: bool) -> FaultResult<f64> {
    let at = cur.offset();
    let text = cur.number_text()?;
    match digits::parse_f64(text) {
        Some(v) if if single { (v as f32).is_finite() } else { v.is_finite() } => Ok(v),
        Some(_) => Err(Fault::new(at, format!("{text} is not a {} in range", if single { "FLOAT" } else { "DOUBLE" }))),
        None => Err(Fault::new(at, format!("{text} is not a number"))),
    }
}

/// The BLOB/TEXT value at the cursor, a string of base64, decoded onto the end of `out`.
fn base64_into(cur: &mut JsonCursor<'_>, out: &mut Vec<u8>, at: usize) -> FaultResult<()> {
    let text = cur.string()?;
    decode_base64(&text, out, at)?;
    if let Cow::Owned(text) = text {
        cur.spare().give(text.into_bytes());
    }
    Ok(())
}

/// Decodes a BLOB/TEXT value's base64 `text` (the value at `at`) onto the end of `out`; on a
/// fault `out` is as it was.
fn decode_base64(text: &str, out: &mut Vec<u8>, at: usize) -> FaultResult<()> {
    if canonical_base64::decode_into(text.as_bytes(), out) {
        return Ok(());
    }
    let len = out.len();
    GO_BASE64.decode_vec(text.as_bytes(), out).map_err(|e| {
        out.truncate(len);
        Fault::new(at, format!("blob/text value is not base64: {e}"))
    })
}

/// A `v` that is a string, typed by its column's code and binary flag.
fn read_string_value<'b>(cur: &mut JsonCursor<'b>, ty: MySqlType, binary: bool, at: usize) -> FaultResult<Value<'b>> {
    use MySqlType::*;
    let text = cur.string()?;
    match ty {
        Char | VarChar if binary => {
            let unquoted = match gotext::go_unquote(&text, cur.spare()) {
                Ok(Cow::Borrowed(_)) => None,
                Ok(Cow::Owned(bytes)) => Some(bytes),
                Err((i, why)) => return Err(Fault::new(at + 1 + i, why)),
            };
            Ok(Value::Bytes(match (text, unquoted) {
                // No Go escapes: the bytes are the text's own.
                (text, None) => text_bytes(text),
                (text, Some(bytes)) => {
                    if let Cow::Owned(text) = text {
                        cur.spare().give(text.into_bytes());
                    }
                    Cow::Owned(bytes)
                }
            }))
        }
        TinyText | Text | MediumText | LongText => {
            let mut bytes = cur.spare().take(text.len() / 4 * 3 + 3);
            decode_base64(&text, &mut bytes, at)?;
            if let Cow::Owned(text) = text {
                cur.spare().give(text.into_bytes());
            }
            // Go reads every BLOB/TEXT code as bytes. Before v4.0.5 no flags told the
            // two apart: bytes that are not UTF-8 are a BLOB's (see `column_type`).
            if binary {
                return Ok(Value::Bytes(Cow::Owned(bytes)));
            }
            Ok(crate::utf8::into_string(bytes)
                .map_or_else(|bytes| Value::Bytes(Cow::Owned(bytes)), |text| Value::Text(Cow::Owned(text))))
        }
        // Opaque to TiCDC: its bytes are the text's, as a BINARY column's.
        Geometry => Ok(Value::Bytes(text_bytes(text))),
        // Legacy producers also put strings in numeric columns; Go passes them through.
        _ => Ok(Value::Text(text)),
    }
}

fn text_bytes(text: Cow<'_, str>) -> Cow<'_, [u8]> {
    match text {
        Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
    }
}

fn owned_column(c: Column<'_>, at: usize) -> Column<'static> {
    let value = match c.value {
        Value::Text(t) => Value::Text(Cow::Owned(t.into_owned())),
        Value::Bytes(b) => Value::Bytes(Cow::Owned(b.into_owned())),
        Value::Null => Value::Null,
        Value::Int(v) => Value::Int(v),
        Value::UInt(v) => Value::UInt(v),
        Value::Float32(v) => Value::Float32(v),
        Value::Float64(v) => Value::Float64(v),
    };
    let ty =
        ColumnType { base: c.ty.base, unsigned: c.ty.unsigned, binary: c.ty.binary, text: None, flags: c.ty.flags };
    Column { name: Cow::Owned(c.name.into_owned()), ty, value, at }
}

/// Turns the images of a row item into its event: `d` → DELETE, `u` with `p` → UPDATE, `u`
/// alone → INSERT (which is also how an UPDATE written without its old value reads).
fn push_row<'a>(out: &mut MessageEvents<'a>, key: KeyItem<'a>, images: RowImages, at: usize) -> FaultResult<()> {
    let nonempty = |r: &Option<Range<usize>>| r.as_ref().is_some_and(|r| !r.is_empty());
    let (kind, after, before) = if nonempty(&images.delete) {
        (EventKind::Delete, None, images.delete)
    } else if let Some(update) = images.update {
        match images.pre.filter(|p| !p.is_empty()) {
            Some(pre) => {
                out.check_image_types(&update, &pre)?;
                let before = complete_old_row(&mut out.columns, &update, &pre);
                (EventKind::Update, Some(update), Some(before))
            }
            None => (EventKind::Insert, Some(update), None),
        }
    } else if images.empty {
        return Ok(());
    } else {
        return Err(Fault::new(at, "row item has neither \"u\" nor \"d\" columns (in the value)"));
    };
    let image = after.as_ref().or(before.as_ref()).cloned().unwrap_or(0..0);
    let keys_start = out.keys.len();
    for c in &out.columns[image] {
        if c.ty.flags.is_some_and(|f| f & flag::HANDLE_KEY != 0) {
            out.keys.push(c.name.clone());
        }
    }
    let keys = keys_start..out.keys.len();
    let ev = out.push_event(kind, key.ts);
    ev.keys = keys;
    ev.schema = key.schema;
    ev.table = key.table;
    ev.partition_id = key.partition;
    ev.handle_key_only = key.handle_key_only;
    ev.claim_check = key.claim_check;
    ev.after = after;
    ev.before = before;
    Ok(())
}

/// The old image of an UPDATE. With `only-output-updated-columns` the item's `p` lists only
/// the columns that changed; the unchanged ones are taken from the new image (new TiCDC's
/// reading), so `before` is always a whole row.
fn complete_old_row(columns: &mut Vec<Column<'_>>, new: &Range<usize>, old: &Range<usize>) -> Range<usize> {
    let same_names =
        new.len() == old.len() && columns[new.clone()].iter().zip(&columns[old.clone()]).all(|(n, o)| n.name == o.name);
    if same_names {
        return old.clone();
    }
    let start = columns.len();
    for i in new.clone() {
        let source = columns[old.clone()].iter().position(|c| c.name == columns[i].name).map_or(i, |p| old.start + p);
        columns.push(columns[source].clone());
    }
    for i in old.clone() {
        if !columns[new.clone()].iter().any(|c| c.name == columns[i].name) {
            columns.push(columns[i].clone());
        }
    }
    start..columns.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message of these (key item, value item) pairs, framed as TiCDC frames a batch.
    fn framed<'i, K: AsRef<str>>(pairs: impl IntoIterator<Item = (K, &'i str)>) -> (Vec<u8>, Vec<u8>) {
        let (mut key, mut value) = (BATCH_VERSION.to_be_bytes().to_vec(), Vec::new());
        for (key_item, item) in pairs {
            let key_item = key_item.as_ref();
            key.extend_from_slice(&(key_item.len() as u64).to_be_bytes());
            key.extend_from_slice(key_item.as_bytes());
            value.extend_from_slice(&(item.len() as u64).to_be_bytes());
            value.extend_from_slice(item.as_bytes());
        }
        (key, value)
    }

    /// A message of one row event per value item.
    fn message(items: &[&str]) -> (Vec<u8>, Vec<u8>) {
        framed(
            items
                .iter()
                .enumerate()
                .map(|(i, &item)| (format!(r#"{{"ts":{},"scm":"s","tbl":"t","t":1}}"#, i + 1), item)),
        )
    }

    fn decoded(codec: &mut OpenCodec, (key, value): &(Vec<u8>, Vec<u8>)) -> String {
        let mut out = MessageEvents::default();
        match codec.decode(Some(key), value, &mut out) {
            Ok(()) => format!("{:?} {:?}", out.events, out.columns),
            Err(fault) => format!("{fault:?}"),
        }
    }

    #[test]
    fn remembered_column_headers_read_every_column_as_a_fresh_codec_does() {
        let one = r#"{"u":{"a":{"t":3,"h":true,"f":11,"v":1},"b":{"t":15,"f":0,"v":"x"}}}"#;
        let items = [
            one,
            r#"{"u":{"a":{"t":3,"h":true,"f":11,"v":2},"b":{"t":15,"f":0,"v":"y"}}}"#,
            // The type after the value: read again as CHAR.
            r#"{"u":{"a":{"t":3,"h":true,"f":11,"v":3},"b":{"t":15,"f":0,"v":"7","t":254}}}"#,
            // A header that starts alike, then more keys after the value: the flags change.
            r#"{"u":{"a":{"t":3,"h":true,"f":11,"v":4,"f":137},"b":{"t":15,"f":0,"v":"z"}}}"#,
            // An escaped name (never remembered), the same name with another type, the value first.
            r#"{"u":{"a\u0062":{"t":3,"f":11,"v":5}}}"#,
            r#"{"p":{"a":{"t":3,"h":true,"f":11,"v":1}},"u":{"a":{"t":8,"f":129,"v":18446744073709551615}}}"#,
            r#"{"u":{"a":{"v":6,"t":3,"f":11}}}"#,
            r#"{"u": {"a": {"t": 3, "f": 11, "v": 9} , "b":{"t":15,"f":0,"v":"w"}}}"#,
            r#"{"u": {"a": {"t": 3, "f": 11, "v": 10} , "b":{"t":15,"f":0,"v":"v"}}}"#,
            // A remembered header whose value is not of its type fails as it would fresh.
            r#"{"u":{"a":{"t":3,"h":true,"f":11,"v":"no"}}}"#,
            // A TEXT code without flags whose value is not UTF-8 is a BLOB, remembered or not.
            TEXT_NOT_UTF8,
            TEXT_NOT_UTF8,
            one,
            r#"{"d":{"b":{"t":15,"f":0,"v":"x"},"a":{"t":3,"h":true,"f":11,"v":1}}}"#,
        ];
        let mut shared = OpenCodec::new(Compression::None);
        let mut hits = 0;
        for (i, item) in items.iter().enumerate() {
            let m = message(&[item]);
            let before = shared.headers.by_position.iter().map(|h| h.text.clone()).collect::<Vec<_>>();
            assert_eq!(
                decoded(&mut shared, &m),
                decoded(&mut OpenCodec::new(Compression::None), &m),
                "item {i}: {item}"
            );
            hits += usize::from(before.first().is_some_and(|t| item.contains(std::str::from_utf8(t).unwrap())));
        }
        // Several items were read from remembered headers.
        assert!(hits >= 4, "{hits}");
        // Many events in one message, and the same across messages.
        let batch = message(&items[..4]);
        assert_eq!(decoded(&mut shared, &batch), decoded(&mut OpenCodec::new(Compression::None), &batch));

        // Both images of an UPDATE read so, the old one from the header the new one left.
        let update = format!(
            r#"{{"u":{},"p":{}}}"#,
            &TEXT_NOT_UTF8[5..TEXT_NOT_UTF8.len() - 1],
            &TEXT_NOT_UTF8[5..TEXT_NOT_UTF8.len() - 1]
        );
        let (key, value) = message(&[&update]);
        let mut out = MessageEvents::default();
        OpenCodec::new(Compression::None).decode(Some(&key), &value, &mut out).unwrap();
        assert!(out.columns.iter().filter(|c| c.name == "b").all(|c| c.ty.binary), "{:?}", out.columns);
    }

    #[test]
    fn learnt_key_items_read_as_a_fresh_codec_reads_them() {
        let item = r#"{"u":{"a":{"t":3,"h":true,"f":11,"v":1}}}"#;
        let keys = [
            r#"{"ts":1,"scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":2,"scm":"s","tbl":"t","t":1}"#,
            // Members moved, added, dropped, escaped and spaced otherwise.
            r#"{"scm":"s","ts":3,"tbl":"t","t":1}"#,
            r#"{"ts":4,"scm":"s","tbl":"t","ptn":7,"t":1}"#,
            r#"{"ts":5,"scm":"s","tbl":"t","rid":9,"t":1}"#,
            r#"{"ts":6,"sc\u006d":"s2","tbl":"t","t":1}"#,
            r#"{ "ts" : 7, "scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":8,"scm":"s","tbl":"t","t":1,"ohk":true}"#,
            r#"{"ts":9,"scm":"s","tbl":"t","t":1,"ccl":"file"}"#,
            r#"{"ts":10,"scm":"s","tbl":"t","t":1,"t":2}"#,
            r#"{"ts":11,"scm":"s","tbl":"t"}"#,
            r#"{"ts":"12","scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":13,"scm":"s","tbl":"t","t":1}"#,
            // Each of these twice, so that the second may repeat the first but for its ts.
            r#"{"ts":14,"scm":"s\u0032","tbl":"t","t":1}"#,
            r#"{"ts":15,"scm":"s","tbl":"t","t":1,"ts":99}"#,
            r#"{"ts":0016,"scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":17.5,"scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":18,"scm":"s","tbl":"t","t":1}x"#,
            r#"{"ts":19,"scm":"","tbl":null,"t":1,"ptn":-3,"ohk":false,"ccl":"f"}"#,
            r#"{"ts":18446744073709551615,"scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":18446744073709551616,"scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":1844674407370955161,"scm":"s","tbl":"t","t":1}"#,
            r#"{"ts":-1,"scm":"s","tbl":"t","t":1}"#,
            // TiCDC's own, with the row id of its handle.
            r#"{"ts":20,"scm":"s","tbl":"t","rid":7,"t":1}"#,
            r#"{"ts":21,"scm":"s","tbl":"t","rid":-7,"ptn":2,"t":1,"ccl":"c"}"#,
            r#"{"ts":22,"rid":7,"scm":"s","tbl":"t","t":1,"ccl":"c"}"#,
            r#"{"ts":23,"scm":"s","tbl":"t","rid":7.5,"t":1}"#,
            r#"{"ts":24,"scm":"s","tbl":"t","rid":"7","t":1}"#,
            r#"{"ts":25,"scm":"s","tbl":"t","rid":7,"rid":8,"t":1}"#,
            r#"{"ts":26,"scm":"s","tbl":"t","rid":7}"#,
            r#"{"ts":27,"scm":"s","tbl":"t","rid":7,"t":1,"ccl":"a tail longer than the whole of the key item after it"}"#,
            r#"{"ts":28,"scm":"s","tbl":"t","rid":7}"#,
        ];
        let mut shared = OpenCodec::new(Compression::None);
        let mut repeated = 0;
        for (i, key_item) in keys.iter().enumerate() {
            let again = key_item.replacen(r#""ts":1"#, r#""ts":2"#, 1).replacen(r#""rid":"#, r#""rid":1"#, 1);
            for key_item in if i >= 13 { vec![key_item.to_string(), again] } else { vec![key_item.to_string()] } {
                repeated += usize::from(shared.key_items.repeated.read(key_item.as_bytes()).is_some());
                let m = framed([(key_item.as_str(), item)]);
                let fresh = decoded(&mut OpenCodec::new(Compression::None), &m);
                assert_eq!(decoded(&mut shared, &m), fresh, "{key_item}");
            }
        }
        // Some were read from what the one before said.
        assert!(repeated >= 8, "{repeated}");
    }

    const TEXT_NOT_UTF8: &str = r#"{"u":{"a":{"t":3,"h":true,"f":11,"v":1},"b":{"t":252,"f":0,"v":"c6RyaW5nMQ=="}}}"#;
}
