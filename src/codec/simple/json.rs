//! Simple's JSON flavour: one object per Kafka value, read in one pass with the [`JsonCursor`].
//!
//! TiCDC writes `database`, `table` and `schemaVersion` before `data`/`old`, so the row's schema
//! is found before its images and each value is converted as it is read. A producer that writes
//! the images first gets them skipped and read again at the end. Every non-NULL value is a
//! string (TIMESTAMP an object `{location, value}`); the cached schema says what it holds.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::PoisonError;

use base64::Engine;

use super::cache::{ImageOrder, Kind, Outcome, State, Table, TableColumn};
use super::checksum::RowChecksum;
use super::decode::{finish_put_row, finish_row, is_ddl_type, row_event, RowHeader};
use super::image::{EventValues, ImageValue, ImageValuesTo, PutValues};
use super::schema::TableSchema;
use crate::canonical_base64;
use crate::columns::{Null, TableColumns};
use crate::digits;
use crate::error::{Fault, FaultResult};
use crate::event::{Event, EventKind, MessageEvents, SpareBuffers, Text, Value};
use crate::json::{JsonCursor, KeyOrder};

#[derive(Default)]
pub struct JsonDecoder {
    /// The zone of the last TIMESTAMP value read (for checksums).
    location: String,
    /// The keys of row messages as the last one wrote them.
    header_keys: KeyOrder<HeaderKey>,
    /// A TIMESTAMP value's text up to its value, as the last one read in full wrote it.
    timestamp_prefix: Vec<u8>,
}

/// The top-level keys [`JsonDecoder::decode_rows`] reads.
#[derive(Clone, Copy, PartialEq)]
enum HeaderKey {
    Type,
    Database,
    Table,
    TableId,
    CommitTs,
    StartTs,
    SchemaVersion,
    Checksum,
    Data,
    Old,
    HandleKeyOnly,
    /// A key whose value the direct path leaves to `decode` unless it is null.
    NullOnly,
    Other,
}

impl HeaderKey {
    fn of(name: &str) -> HeaderKey {
        match name {
            "type" => HeaderKey::Type,
            "database" => HeaderKey::Database,
            "table" => HeaderKey::Table,
            "tableID" => HeaderKey::TableId,
            "commitTs" => HeaderKey::CommitTs,
            "startTs" => HeaderKey::StartTs,
            "schemaVersion" => HeaderKey::SchemaVersion,
            "checksum" => HeaderKey::Checksum,
            "data" => HeaderKey::Data,
            "old" => HeaderKey::Old,
            "handleKeyOnly" => HeaderKey::HandleKeyOnly,
            "claimCheckLocation" | "sql" | "tableSchema" | "preTableSchema" => HeaderKey::NullOnly,
            _ => HeaderKey::Other,
        }
    }
}

/// Where a row image is.
#[derive(Clone)]
enum Image {
    Absent,
    Read(Range<usize>),
    /// Met before the schema was known: its offset, read at the end.
    Deferred(usize),
}

struct Header<'a> {
    kind: Option<Text<'a>>,
    database: Option<Text<'a>>,
    table: Option<Text<'a>>,
    table_id: Option<i64>,
    sql: Option<Text<'a>>,
    commit_ts: u64,
    start_ts: Option<u64>,
    schema_version: u64,
    claim_check: Option<Text<'a>>,
    handle_key_only: bool,
    checksum: Option<RowChecksum>,
    data: Image,
    old: Image,
    table_schema: Option<(TableSchema, &'a str)>,
    pre_table_schema: Option<TableSchema>,
}

impl JsonDecoder {
    pub fn decode<'a>(
        &mut self,
        state: &mut State,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Outcome> {
        let mut cur = JsonCursor::new(value)?;
        std::mem::swap(cur.spare(), &mut out.spare);
        let outcome = self.read_message(&mut cur, state, value, out);
        std::mem::swap(cur.spare(), &mut out.spare);
        outcome
    }

    /// [`Codec::decode_rows`](crate::codec::Codec::decode_rows) for JSON: a row message of a
    /// table whose schema version is known, read straight into `rows` as [`Self::decode`] reads
    /// it. Its `type`, `database`, `table` and `schemaVersion` must come before its images (TiCDC
    /// writes them so). A message that turns out otherwise (fields in another order, a claim
    /// check, a handle-key-only image, a schema) is given up, to be read by `decode`: false,
    /// and the driver takes back what was put. Not used when checksums are verified.
    pub fn decode_rows<'a>(
        &mut self,
        state: &mut State,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        if state.verify_checksum {
            return Ok(false);
        }
        let Ok(mut cur) = JsonCursor::new(value) else { return Ok(false) };
        std::mem::swap(cur.spare(), &mut out.spare);
        let read = self.put_message(&mut cur, state, out, rows);
        std::mem::swap(cur.spare(), &mut out.spare);
        read
    }

    fn put_message<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        state: &mut State,
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        let State { cache, order, .. } = state;
        let (mut kind, mut database, mut table_name) = (None, None, None);
        let (mut table_id, mut commit_ts, mut start_ts, mut schema_version) = (None, 0, None, 0);
        let mut plan: Option<(&Table, &[Option<usize>])> = None;
        let (mut data, mut old) = (false, false);
        cur.begin_object()?;
        let mut nth = 0;
        while let Some(key) = self.header_keys.next(cur, nth, HeaderKey::of)? {
            nth += 1;
            match key {
                HeaderKey::Type => {
                    kind = match cur.string()?.as_ref() {
                        "INSERT" => Some(EventKind::Insert),
                        "UPDATE" => Some(EventKind::Update),
                        "DELETE" => Some(EventKind::Delete),
                        _ => return Ok(false),
                    }
                }
                HeaderKey::Database => database = Some(cur.string()?),
                HeaderKey::Table => table_name = Some(cur.string()?),
                HeaderKey::TableId => table_id = Some(cur.i64()?),
                HeaderKey::CommitTs => commit_ts = cur.u64()?,
                HeaderKey::StartTs => start_ts = read_start_ts(cur)?,
                HeaderKey::SchemaVersion => schema_version = cur.u64()?,
                HeaderKey::Checksum => drop(read_checksum(cur)?),
                HeaderKey::Data | HeaderKey::Old => {
                    if cur.null()? {
                        continue;
                    }
                    let (Some(kind), Some(db), Some(tb)) = (kind, &database, &table_name) else { return Ok(false) };
                    let (table, fields) = match plan {
                        Some(plan) => plan,
                        None => match cache.get(db, tb, schema_version) {
                            Some(table) if rows.takes(db, tb) => *plan.insert((table, table.fields_in(rows))),
                            _ => return Ok(false),
                        },
                    };
                    let is_data = key == HeaderKey::Data;
                    if std::mem::replace(if is_data { &mut data } else { &mut old }, true) {
                        return Ok(false);
                    }
                    match (kind, is_data) {
                        (EventKind::Insert, false) | (EventKind::Delete, true) => {
                            self.read_image(cur, table, order, out)?;
                        }
                        _ => self.put_image(cur, table, fields, order, rows, kind == EventKind::Update && !is_data)?,
                    }
                }
                HeaderKey::NullOnly => {
                    if !cur.null()? {
                        return Ok(false);
                    }
                }
                HeaderKey::HandleKeyOnly => {
                    if !cur.null()? && cur.bool()? {
                        return Ok(false);
                    }
                }
                HeaderKey::Other => cur.skip_value()?,
            }
        }
        if !cur.at_end() {
            return Err(cur.fault("data after the message object"));
        }
        let (Some(kind), Some(database), Some(table_name), Some(_)) = (kind, database, table_name, plan) else {
            return Ok(false);
        };
        let mut event = row_event(kind, commit_ts, database, table_name, table_id, schema_version);
        event.start_ts = start_ts;
        finish_put_row(event, data, old, rows, out)?;
        Ok(true)
    }

    /// A row image straight into `rows` (an old image of an UPDATE when `old`), each value put
    /// to its field.
    fn put_image(
        &mut self,
        cur: &mut JsonCursor<'_>,
        table: &Table,
        fields: &[Option<usize>],
        order: &mut ImageOrder,
        rows: &mut TableColumns,
        old: bool,
    ) -> FaultResult<()> {
        cur.begin_object()?;
        rows.begin_image(old);
        order.begin_marks(table.columns.len());
        self.read_values(cur, table, &mut PutValues { rows, fields, order })?;
        rows.end_image();
        Ok(())
    }

    fn read_message<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        state: &mut State,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Outcome> {
        let mut h = Header {
            kind: None,
            database: None,
            table: None,
            table_id: None,
            sql: None,
            commit_ts: 0,
            start_ts: None,
            schema_version: 0,
            claim_check: None,
            handle_key_only: false,
            checksum: None,
            data: Image::Absent,
            old: Image::Absent,
            table_schema: None,
            pre_table_schema: None,
        };
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "type" => h.kind = Some(cur.string()?),
                "database" => h.database = Some(cur.string()?),
                "table" => h.table = Some(cur.string()?),
                "tableID" => h.table_id = Some(cur.i64()?),
                "sql" => h.sql = Some(cur.string()?),
                "commitTs" => h.commit_ts = cur.u64()?,
                "startTs" => h.start_ts = read_start_ts(cur)?,
                "schemaVersion" => h.schema_version = cur.u64()?,
                "claimCheckLocation" => h.claim_check = if cur.null()? { None } else { Some(cur.string()?) },
                "handleKeyOnly" => h.handle_key_only = !cur.null()? && cur.bool()?,
                "checksum" => h.checksum = read_checksum(cur)?,
                "data" | "old" => {
                    let image = self.image(cur, state, &h, out)?;
                    if key == "data" {
                        h.data = image
                    } else {
                        h.old = image
                    }
                }
                "tableSchema" | "preTableSchema" => {
                    if cur.null()? {
                        continue;
                    }
                    cur.peek();
                    let start = cur.offset();
                    let schema = TableSchema::read_json(cur)?;
                    if key == "tableSchema" {
                        let text = std::str::from_utf8(&value[start..cur.offset()])
                            .expect("checked UTF-8, cut at JSON tokens");
                        h.table_schema = Some((schema, text));
                    } else {
                        h.pre_table_schema = Some(schema);
                    }
                }
                _ => cur.skip_value()?,
            }
        }
        if !cur.at_end() {
            return Err(cur.fault("data after the message object"));
        }
        self.emit(cur, state, h, out)
    }

    /// Reads a row image now if its schema is known, else skips it for later.
    fn image<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        state: &mut State,
        h: &Header<'a>,
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Image> {
        if cur.null()? {
            return Ok(Image::Absent);
        }
        let at = cur.offset();
        let (Some(db), Some(tb)) = (&h.database, &h.table) else {
            cur.skip_value()?;
            return Ok(Image::Deferred(at));
        };
        let State { cache, order, .. } = state;
        match cache.get(db, tb, h.schema_version) {
            Some(table) => Ok(Image::Read(self.read_image(cur, table, order, out)?)),
            None => {
                cur.skip_value()?;
                Ok(Image::Deferred(at))
            }
        }
    }

    fn read_image<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        table: &Table,
        order: &mut ImageOrder,
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Range<usize>> {
        cur.begin_object()?;
        let start = order.begin(table.columns.len(), out);
        self.read_values(cur, table, &mut EventValues { out, order, start })?;
        Ok(order.finish(out, start))
    }

    /// The members of an image object, once it is open: each value of a column of `table` goes
    /// to `to`. Go reads the schema's columns only; others are skipped.
    #[inline(always)]
    fn read_values<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        table: &Table,
        to: &mut impl ImageValuesTo<'a>,
    ) -> FaultResult<()> {
        let mut keys = table.json_keys.lock().unwrap_or_else(PoisonError::into_inner);
        let mut nth = 0;
        while let Some((found, name)) = keys.next_named(cur, nth, |name| table.find(name, nth))? {
            nth += 1;
            let Some(index) = found else {
                cur.skip_value()?;
                continue;
            };
            let of = ImageValue { index, column: &table.columns[index], name, at: cur.offset() };
            self.read_value(cur, &of, to)?;
        }
        Ok(())
    }

    /// One value, to `to` in the form its column's kind gives it.
    #[inline(always)]
    fn read_value<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        of: &ImageValue<'_, 'a>,
        to: &mut impl ImageValuesTo<'a>,
    ) -> FaultResult<()> {
        match cur.peek() {
            Some(b'"') => {
                let text = cur.string()?;
                convert(of, text, cur.spare(), to)
            }
            Some(b'n') => {
                cur.null()?;
                to.value(of, Null)
            }
            Some(b'{') if of.column.kind == Kind::Timestamp => {
                let text = self.read_timestamp(cur, of.column)?;
                convert(of, text, cur.spare(), to)
            }
            Some(b'-' | b'0'..=b'9') => {
                let text = cur.number_text()?;
                convert(of, Cow::Borrowed(text), cur.spare(), to)
            }
            _ => Err(cur.fault(format!("column {}: expected a string or null", of.column.name))),
        }
    }

    /// `{"location":"UTC","value":"2020-01-01 00:00:00"}`: the value text; the zone is kept for
    /// checksums. A changefeed writes every value with one zone, so the bytes up to the value
    /// repeat: those of the last value read in full are matched in one comparison.
    fn read_timestamp<'a>(&mut self, cur: &mut JsonCursor<'a>, column: &TableColumn) -> FaultResult<Text<'a>> {
        cur.peek();
        let at = cur.offset();
        if cur.skip_if_next(&self.timestamp_prefix) {
            let value = cur.string()?;
            if cur.skip_if_next(b"}") {
                return Ok(value);
            }
            cur.seek(at);
        }
        cur.begin_object()?;
        let mut first = true;
        let (mut value, mut members, mut prefix_end) = (None, 0, None);
        while let Some(key) = cur.next_key(&mut first)? {
            members += 1;
            match key.as_ref() {
                "value" => {
                    cur.peek();
                    prefix_end = Some(cur.offset()).filter(|_| members == 2);
                    value = Some(cur.string()?);
                }
                "location" => {
                    let location = cur.string()?;
                    if location != self.location {
                        self.location.clear();
                        self.location.push_str(&location);
                    }
                }
                _ => cur.skip_value()?,
            }
        }
        self.timestamp_prefix.clear();
        if let (Some(end), 2, true) = (prefix_end, members, cur.slice(at..cur.offset()).starts_with("{\"location\":")) {
            self.timestamp_prefix.extend_from_slice(cur.slice(at..end).as_bytes());
        }
        value.ok_or_else(|| Fault::new(at, format!("column {}: timestamp object without a value", column.name)))
    }

    fn emit<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        state: &mut State,
        h: Header<'a>,
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Outcome> {
        let kind = h.kind.clone().ok_or_else(|| Fault::new(0, "message has no type"))?;
        let row_kind = match kind.as_ref() {
            "WATERMARK" => {
                out.events.push(Event::new(EventKind::Watermark, h.commit_ts));
                return Ok(Outcome::Decoded);
            }
            "BOOTSTRAP" => {
                let (schema, text) =
                    h.table_schema.ok_or_else(|| Fault::new(0, "BOOTSTRAP message without tableSchema"))?;
                let mut event = schema_event(EventKind::Bootstrap, 0, &schema);
                event.table_schema = Some(Cow::Borrowed(text));
                out.events.push(event);
                state.learn(schema);
                return Ok(Outcome::Decoded);
            }
            "INSERT" => EventKind::Insert,
            "UPDATE" => EventKind::Update,
            "DELETE" => EventKind::Delete,
            k if is_ddl_type(k) => {
                let mut event = match &h.table_schema {
                    Some((schema, text)) => {
                        let mut e = schema_event(EventKind::Ddl, h.commit_ts, schema);
                        e.table_schema = Some(Cow::Borrowed(*text));
                        e
                    }
                    None => Event::new(EventKind::Ddl, h.commit_ts),
                };
                event.ddl = h.sql;
                event.ddl_type = Some(kind);
                out.events.push(event);
                if let Some(pre) = h.pre_table_schema {
                    state.learn(pre);
                }
                if let Some((schema, _)) = h.table_schema {
                    state.learn(schema);
                }
                return Ok(Outcome::Decoded);
            }
            other => return Err(Fault::new(0, format!("unknown message type {other:?}"))),
        };
        let (Some(database), Some(table_name)) = (h.database, h.table) else {
            return Err(Fault::new(0, format!("{kind} message without database and table")));
        };
        let State { cache, order, verify_checksum, .. } = state;
        let Some(table) = cache.get(&database, &table_name, h.schema_version) else {
            return Ok(Outcome::Wait {
                schema: database.into_owned(),
                table: table_name.into_owned(),
                version: h.schema_version,
            });
        };
        let mut read = |image: Image, out: &mut MessageEvents<'a>| -> FaultResult<Option<Range<usize>>> {
            Ok(match image {
                Image::Absent => None,
                Image::Read(range) => Some(range),
                Image::Deferred(at) => {
                    cur.seek(at);
                    Some(self.read_image(cur, table, order, out)?)
                }
            })
        };
        let data = read(h.data, out)?;
        let old = read(h.old, out)?;
        let row = RowHeader {
            kind: row_kind,
            commit_ts: h.commit_ts,
            start_ts: h.start_ts,
            database,
            table: table_name,
            table_id: h.table_id,
            schema_version: h.schema_version,
            claim_check: h.claim_check,
            handle_key_only: h.handle_key_only,
            checksum: h.checksum.filter(|_| *verify_checksum),
        };
        finish_row(row, table, data, old, &self.location, out)?;
        Ok(Outcome::Decoded)
    }
}

/// A DDL or BOOTSTRAP event naming the table its schema describes.
pub(super) fn schema_event<'a>(kind: EventKind, commit_ts: u64, schema: &TableSchema) -> Event<'a> {
    let mut event = Event::new(kind, commit_ts);
    event.schema = (!schema.schema.is_empty()).then(|| Cow::Owned(schema.schema.clone()));
    event.table = (!schema.table.is_empty()).then(|| Cow::Owned(schema.table.clone()));
    event.table_id = Some(schema.table_id);
    event.schema_version = Some(schema.version);
    event
}

/// A JSON string (or, from other producers, a number) as the column's value, to `to`.
#[inline(always)]
fn convert<'a>(
    of: &ImageValue<'_, 'a>,
    text: Text<'a>,
    spare: &mut SpareBuffers,
    to: &mut impl ImageValuesTo<'a>,
) -> FaultResult<()> {
    let (column, at) = (of.column, of.at);
    let bad = |text: &str| {
        Fault::new(
            at,
            format!("column {}: {text:?} is not a valid {} value", column.name, column.ty.base.name(column.ty.binary)),
        )
    };
    match column.kind {
        Kind::Signed => to.value(of, text.parse::<i64>().map_err(|_| bad(&text))?),
        Kind::Unsigned => to.value(of, text.parse::<u64>().map_err(|_| bad(&text))?),
        Kind::Float => to.value(of, text.parse::<f32>().map_err(|_| bad(&text))?),
        Kind::Double => to.value(of, digits::parse_f64(&text).ok_or_else(|| bad(&text))?),
        Kind::Binary => {
            let mut bytes = spare.take(text.len() / 4 * 3 + 3);
            if !canonical_base64::decode_into(text.as_bytes(), &mut bytes) {
                base64::engine::general_purpose::STANDARD
                    .decode_vec(text.as_bytes(), &mut bytes)
                    .map_err(|_| bad(&text))?;
            }
            if let Cow::Owned(text) = text {
                spare.give(text.into_bytes());
            }
            to.owned(of, Value::Bytes(Cow::Owned(bytes)), spare)
        }
        Kind::Timestamp | Kind::Text => match text {
            Cow::Borrowed(text) => to.value(of, text),
            Cow::Owned(text) => to.owned(of, Value::Text(Cow::Owned(text)), spare),
        },
    }
}

/// `startTs`: TiCDC's `simple-include-start-ts` (DML only; pingcap/ticdc#6143). TiCDC writes
/// no `startTs` when it is 0 (`omitempty`), and reads 0 as none.
fn read_start_ts(cur: &mut JsonCursor<'_>) -> FaultResult<Option<u64>> {
    Ok(if cur.null()? { None } else { Some(cur.u64()?).filter(|&ts| ts != 0) })
}

fn read_checksum(cur: &mut JsonCursor<'_>) -> FaultResult<Option<RowChecksum>> {
    if cur.null()? {
        return Ok(None);
    }
    let mut c = RowChecksum::default();
    cur.begin_object()?;
    let mut first = true;
    while let Some(key) = cur.next_key(&mut first)? {
        let at = cur.offset();
        let u32_value = |v: u64| u32::try_from(v).map_err(|_| Fault::new(at, "checksum does not fit 32 bits"));
        match key.as_ref() {
            "version" => c.version = i32::try_from(cur.i64()?).map_err(|_| Fault::new(at, "bad checksum version"))?,
            "corrupted" => c.corrupted = cur.bool()?,
            "current" => c.current = u32_value(cur.u64()?)?,
            "previous" => c.previous = u32_value(cur.u64()?)?,
            _ => cur.skip_value()?,
        }
    }
    Ok(Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ColumnType;
    use crate::schema::mysql::MySqlType;

    #[test]
    fn timestamps_read_alike_whether_their_bytes_repeat_or_not() {
        let column = TableColumn { name: "t".into(), ty: ColumnType::new(MySqlType::Timestamp), kind: Kind::Timestamp };
        let mut decoder = JsonDecoder::default();
        let objects = [
            r#"{"location":"UTC","value":"2020-01-01 00:00:00"}"#,
            r#"{"location":"UTC","value":"2021-02-03 04:05:06.5"}"#,
            r#"{"location":"UTC","value":"x","extra":1}"#,
            r#"{"location":"Asia/Shanghai","value":"2022-01-01 00:00:00"}"#,
            r#"{"value":"2023-01-01 00:00:00","location":"UTC"}"#,
            r#"{"location":"Asia/Shanghai","value":"2024-01-01 00:00:00"}"#,
            r#"{"location":"Asia/Shanghai","value":"2025-01-01 00:00:00"}"#,
            r#"{ "location":"UTC","value":"2026-01-01 00:00:00" }"#,
        ];
        for object in objects {
            let json = format!("[{object},1]");
            let mut cur = JsonCursor::new(json.as_bytes()).unwrap();
            cur.begin_array().unwrap();
            let value = decoder.read_timestamp(&mut cur, &column).unwrap();
            let (want, _) = object.split_once(r#""value":""#).unwrap().1.split_once('"').unwrap();
            assert_eq!(value, want, "{object}");
            let zone = object.split_once(r#""location":""#).unwrap().1.split_once('"').unwrap().0;
            assert_eq!(decoder.location, zone, "{object}");
            assert_eq!(cur.peek(), Some(b','), "{object}: read to its end");
        }
        let mut cur = JsonCursor::new(br#"{"location":"Asia/Shanghai","value":null}"#).unwrap();
        assert!(decoder.read_timestamp(&mut cur, &column).is_err());
    }
}
