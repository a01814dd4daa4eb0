//! Simple's Avro flavour: the raw Avro binary encoding of one datum of the top-level union of
//! `message.json` — no container header, magic byte or registry id (`simple.md` §1, §4).
//!
//! The schema is fixed, so instead of a generic Avro library this is a reader specialised to it:
//! an [`AvroCursor`] that knows its offset (for faults) and lends slices of the message, and one
//! function per record type reading its fields in schema order. Strings and bytes borrow from the
//! message; a row's map values are converted as they are read, with the cached schema saying what
//! each column is.
//!
//! u64 quantities (TSOs, BIGINT UNSIGNED) travel as Avro `long` by two's-complement
//! reinterpretation and are read back as u64.

use std::borrow::Cow;
use std::ops::Range;

use super::cache::{ImageOrder, Kind, Outcome, State, Table};
use super::checksum::RowChecksum;
use super::decode::{finish_put_row, finish_row, row_event, RowHeader, DDL_TYPES};
use super::image::{EventValues, ImageValue, ImageValuesTo, PutValues};
use super::json::schema_event;
use super::schema::{ColumnSchema, DataType, DefaultValue, IndexSchema, TableSchema};
use crate::columns::{Null, TableColumns};
use crate::digits;
use crate::error::{Fault, FaultResult};
use crate::event::{Event, EventKind, MessageEvents};
use crate::schema::mysql::MySqlType;
use crate::varint::unzigzag;

/// The union branch of `com.pingcap.simple.avro.Message` in the top-level schema.
pub const MESSAGE_BRANCH: i64 = 11;

/// A reader of Avro binary data over one message.
pub struct AvroCursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> AvroCursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        AvroCursor { buf, pos: 0 }
    }

    pub fn offset(&self) -> usize {
        self.pos
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn fault(&self, reason: impl Into<String>) -> Fault {
        Fault::new(self.pos, reason)
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// A zigzag varint `long`. One- and two-byte ones (union branches, lengths, small numbers) are
    /// read inline; longer ones (TSOs) in [`AvroCursor::long_varint`].
    #[inline(always)]
    pub fn long(&mut self) -> FaultResult<i64> {
        match self.buf.get(self.pos..self.pos + 2) {
            Some(&[b0, _]) if b0 < 0x80 => {
                self.pos += 1;
                Ok(unzigzag(b0 as u64))
            }
            Some(&[b0, b1]) if b1 < 0x80 => {
                self.pos += 2;
                Ok(unzigzag((b0 & 0x7f) as u64 | (b1 as u64) << 7))
            }
            _ => self.long_varint().map(unzigzag),
        }
    }

    fn long_varint(&mut self) -> FaultResult<u64> {
        if let Some((v, len)) = self.buf.get(self.pos..).and_then(crate::varint::read_short) {
            self.pos += len;
            return Ok(v);
        }
        let mut v: u64 = 0;
        let mut shift = 0;
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.fault("truncated message: expected a varint"));
            };
            self.pos += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(self.fault("varint longer than 10 bytes"));
            }
        }
    }

    pub fn int(&mut self) -> FaultResult<i32> {
        let at = self.pos;
        let v = self.long()?;
        i32::try_from(v).map_err(|_| Fault::new(at, format!("int {v} out of range")))
    }

    pub fn boolean(&mut self) -> FaultResult<bool> {
        match self.buf.get(self.pos) {
            Some(&b @ (0 | 1)) => {
                self.pos += 1;
                Ok(b == 1)
            }
            Some(b) => Err(self.fault(format!("invalid boolean byte {b:#04x}"))),
            None => Err(self.fault("truncated message: expected a boolean")),
        }
    }

    #[inline]
    fn fixed<const N: usize>(&mut self) -> FaultResult<[u8; N]> {
        let bytes = self.buf.get(self.pos..self.pos + N).ok_or_else(|| self.fault("truncated message"))?;
        self.pos += N;
        Ok(bytes.try_into().expect("N bytes"))
    }

    pub fn float(&mut self) -> FaultResult<f32> {
        self.fixed::<4>().map(f32::from_le_bytes)
    }

    pub fn double(&mut self) -> FaultResult<f64> {
        self.fixed::<8>().map(f64::from_le_bytes)
    }

    /// `bytes`, or a `string` read as bytes. (This and the other readers of every value are
    /// always inlined, their faults made out of line: as calls, their results went through
    /// memory.)
    #[inline(always)]
    pub fn bytes(&mut self) -> FaultResult<&'a [u8]> {
        let at = self.pos;
        let len = self.long()?;
        if len < 0 || len as u64 > self.remaining() as u64 {
            return Err(self.length_fault(at, len));
        }
        let bytes = &self.buf[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        Ok(bytes)
    }

    #[cold]
    fn length_fault(&self, at: usize, len: i64) -> Fault {
        Fault::new(at, format!("length {len} exceeds the {} bytes left", self.remaining()))
    }

    #[inline(always)]
    pub fn string(&mut self) -> FaultResult<&'a str> {
        let at = self.pos;
        utf8(self.bytes()?, at)
    }

    /// A union branch index or enum symbol index below `n`.
    #[inline(always)]
    pub fn index(&mut self, n: usize, what: &str) -> FaultResult<usize> {
        let at = self.pos;
        let v = self.long()?;
        match usize::try_from(v) {
            Ok(i) if i < n => Ok(i),
            _ => Err(index_fault(at, v, n, what)),
        }
    }

    /// The item count of the next array/map block (0 ends the array), bounded by the bytes left.
    pub fn block(&mut self) -> FaultResult<usize> {
        let at = self.pos;
        let mut n = self.long()?;
        if n < 0 {
            n = n.checked_neg().ok_or_else(|| Fault::new(at, "invalid block count"))?;
            self.long()?; // the block's size in bytes
        }
        if n as u64 > self.remaining() as u64 {
            return Err(Fault::new(at, format!("block of {n} items exceeds the {} bytes left", self.remaining())));
        }
        Ok(n as usize)
    }

    /// Calls `item` for each element of an array or map.
    pub fn each(&mut self, mut item: impl FnMut(&mut Self) -> FaultResult<()>) -> FaultResult<()> {
        loop {
            let n = self.block()?;
            if n == 0 {
                return Ok(());
            }
            for _ in 0..n {
                item(self)?;
            }
        }
    }

    /// `[null, T]`: whether T follows.
    pub fn optional(&mut self) -> FaultResult<bool> {
        Ok(self.index(2, "union")? == 1)
    }
}

#[derive(Default)]
pub struct AvroDecoder {
    /// The zone of the last TIMESTAMP value read (for checksums).
    location: String,
}

/// What a row message says before its images.
struct DmlHeader<'a> {
    database: &'a str,
    table: &'a str,
    table_id: i64,
    kind: EventKind,
    commit_ts: u64,
    schema_version: u64,
    claim_check: Option<&'a str>,
    handle_key_only: bool,
    checksum: Option<RowChecksum>,
}

/// `DML {version, database, table, tableID, type, commitTs, buildTs, schemaVersion, claimCheck,
/// handleKeyOnly, checksum}`, up to the images.
fn read_dml_header<'a>(cur: &mut AvroCursor<'a>) -> FaultResult<DmlHeader<'a>> {
    cur.int()?;
    let database = cur.string()?;
    let table = cur.string()?;
    let table_id = cur.long()?;
    let kind = [EventKind::Insert, EventKind::Update, EventKind::Delete][cur.index(3, "DML type")?];
    let commit_ts = cur.long()? as u64;
    cur.long()?;
    let schema_version = cur.long()? as u64;
    let claim_check = if cur.optional()? { Some(cur.string()?) } else { None };
    let handle_key_only = cur.optional()? && cur.boolean()?;
    let checksum = if cur.optional()? { Some(read_checksum(cur)?) } else { None };
    Ok(DmlHeader { database, table, table_id, kind, commit_ts, schema_version, claim_check, handle_key_only, checksum })
}

/// The header of a row message, when the message is one and its header reads without a fault.
fn dml_header<'a>(cur: &mut AvroCursor<'a>) -> Option<DmlHeader<'a>> {
    (read_payload_branch(cur).ok()? == DML_PAYLOAD).then_some(())?;
    read_dml_header(cur).ok()
}

/// The payload branch of a message (watermark, bootstrap, DDL or [`DML_PAYLOAD`]), after the
/// top-level union branch and the message type that must name the same payload.
fn read_payload_branch(cur: &mut AvroCursor<'_>) -> FaultResult<usize> {
    let branch = cur.long()?;
    if branch != MESSAGE_BRANCH {
        return Err(Fault::new(
            0,
            format!("top-level union branch {branch} is not the Simple message record ({MESSAGE_BRANCH})"),
        ));
    }
    let kind = cur.index(4, "message type")?;
    let payload_at = cur.offset();
    let payload = cur.index(4, "payload")?;
    if payload != kind {
        return Err(Fault::new(payload_at, format!("payload branch {payload} does not match message type {kind}")));
    }
    Ok(payload)
}

/// The payload branch of a row message.
const DML_PAYLOAD: usize = 3;

impl AvroDecoder {
    pub fn decode<'a>(
        &mut self,
        state: &mut State,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Outcome> {
        let mut cur = AvroCursor::new(value);
        let payload = read_payload_branch(&mut cur)?;
        let mut learnt = Vec::new();
        let outcome = match payload {
            0 => {
                cur.int()?;
                let commit_ts = cur.long()? as u64;
                cur.long()?;
                out.events.push(Event::new(EventKind::Watermark, commit_ts));
                Outcome::Decoded
            }
            1 => {
                cur.int()?;
                cur.long()?;
                let schema = read_table_schema(&mut cur)?;
                let mut event = schema_event(EventKind::Bootstrap, 0, &schema);
                event.table_schema = Some(Cow::Owned(schema.to_json()));
                out.events.push(event);
                learnt.push(schema);
                Outcome::Decoded
            }
            2 => {
                cur.int()?;
                let kind = DDL_TYPES[cur.index(DDL_TYPES.len(), "DDL type")?];
                let sql = cur.string()?;
                let commit_ts = cur.long()? as u64;
                cur.long()?;
                let schema = if cur.optional()? { Some(read_table_schema(&mut cur)?) } else { None };
                let pre = if cur.optional()? { Some(read_table_schema(&mut cur)?) } else { None };
                let mut event = match &schema {
                    Some(s) => {
                        let mut e = schema_event(EventKind::Ddl, commit_ts, s);
                        e.table_schema = Some(Cow::Owned(s.to_json()));
                        e
                    }
                    None => Event::new(EventKind::Ddl, commit_ts),
                };
                event.ddl = Some(Cow::Borrowed(sql));
                event.ddl_type = Some(Cow::Borrowed(kind));
                out.events.push(event);
                learnt.extend(pre);
                learnt.extend(schema);
                Outcome::Decoded
            }
            _ => self.read_dml(&mut cur, state, out)?,
        };
        if !cur.at_end() {
            return Err(cur.fault("data after the message"));
        }
        // Only a message read to its end may teach the cache a schema.
        for schema in learnt {
            state.learn(schema);
        }
        Ok(outcome)
    }

    fn read_dml<'a>(
        &mut self,
        cur: &mut AvroCursor<'a>,
        state: &mut State,
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Outcome> {
        let h = read_dml_header(cur)?;
        let State { cache, order, verify_checksum, .. } = state;
        let table = cache.get(h.database, h.table, h.schema_version);
        let data = self.read_image(cur, table, order, out)?;
        let old = self.read_image(cur, table, order, out)?;
        let Some(table) = table else {
            return Ok(Outcome::Wait {
                schema: h.database.to_string(),
                table: h.table.to_string(),
                version: h.schema_version,
            });
        };
        let row = RowHeader {
            kind: h.kind,
            commit_ts: h.commit_ts,
            start_ts: None,
            database: Cow::Borrowed(h.database),
            table: Cow::Borrowed(h.table),
            table_id: Some(h.table_id).filter(|&id| id != 0),
            schema_version: h.schema_version,
            claim_check: h.claim_check.map(Cow::Borrowed),
            handle_key_only: h.handle_key_only,
            checksum: h.checksum.filter(|_| *verify_checksum),
        };
        finish_row(row, table, data, old, &self.location, out)?;
        Ok(Outcome::Decoded)
    }

    /// [`Codec::decode_rows`](crate::codec::Codec::decode_rows) for Avro: a row message of a
    /// table whose schema version is known, with neither a claim check nor a handle-key-only
    /// image nor a checksum to verify, read straight into `rows`. The values are read and
    /// checked as [`Self::decode`] reads them, in the same order, and each goes to the field the
    /// table's plan gives its column.
    pub fn decode_rows<'a>(
        &mut self,
        state: &mut State,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        let mut cur = AvroCursor::new(value);
        // Other messages, and any fault before the images, are left to `decode`.
        let Some(h) = dml_header(&mut cur) else { return Ok(false) };
        if h.claim_check.is_some() || h.handle_key_only || (h.checksum.is_some() && state.verify_checksum) {
            return Ok(false);
        }
        let State { cache, order, .. } = state;
        let Some(table) = cache.get(h.database, h.table, h.schema_version) else { return Ok(false) };
        if !rows.takes(h.database, h.table) {
            return Ok(false);
        }
        let fields = table.fields_in(rows);
        let data = match h.kind {
            EventKind::Delete => self.read_image(&mut cur, Some(table), order, out)?.is_some(),
            _ => self.put_image(&mut cur, table, fields, order, rows, false)?,
        };
        let old = match h.kind {
            EventKind::Insert => self.read_image(&mut cur, Some(table), order, out)?.is_some(),
            kind => self.put_image(&mut cur, table, fields, order, rows, kind == EventKind::Update)?,
        };
        let table_id = Some(h.table_id).filter(|&id| id != 0);
        let event = row_event(h.kind, h.commit_ts, h.database.into(), h.table.into(), table_id, h.schema_version);
        finish_put_row(event, data, old, rows, out)?;
        if !cur.at_end() {
            return Err(cur.fault("data after the message"));
        }
        Ok(true)
    }

    /// `[null, map<value union>]` straight into `rows` (an old image of an UPDATE when `old`),
    /// each value put to its field in the form its union branch gives. Returns whether there
    /// was an image.
    fn put_image(
        &mut self,
        cur: &mut AvroCursor<'_>,
        table: &Table,
        fields: &[Option<usize>],
        order: &mut ImageOrder,
        rows: &mut TableColumns,
        old: bool,
    ) -> FaultResult<bool> {
        if !cur.optional()? {
            return Ok(false);
        }
        rows.begin_image(old);
        order.begin_marks(table.columns.len());
        read_values(cur, Some(table), &mut self.location, &mut PutValues { rows, fields, order })?;
        rows.end_image();
        Ok(true)
    }

    /// `[null, map<value union>]` into the event model. Without a table (schema unknown yet)
    /// the values are checked and dropped.
    fn read_image<'a>(
        &mut self,
        cur: &mut AvroCursor<'a>,
        table: Option<&Table>,
        order: &mut ImageOrder,
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<Option<Range<usize>>> {
        if !cur.optional()? {
            return Ok(None);
        }
        let start = order.begin(table.map_or(0, |t| t.columns.len()), out);
        read_values(cur, table, &mut self.location, &mut EventValues { out, order, start })?;
        Ok(Some(order.finish(out, start)))
    }
}

/// The map of an image: each value of a column of `table` goes to `to`; other columns' values
/// are checked and dropped. `location` keeps the zone of the last TIMESTAMP value read.
#[inline(always)]
fn read_values<'a>(
    cur: &mut AvroCursor<'a>,
    table: Option<&Table>,
    location: &mut String,
    to: &mut impl ImageValuesTo<'a>,
) -> FaultResult<()> {
    let mut nth = 0;
    cur.each(|cur| {
        let name_at = cur.offset();
        let raw_name = cur.bytes()?;
        let found = table.and_then(|t| t.find_bytes(raw_name, nth).map(|i| (i, &t.columns[i])));
        nth += 1;
        let Some((index, column)) = found else {
            std::str::from_utf8(raw_name).map_err(|_| Fault::new(name_at, "column name is not UTF-8"))?;
            return read_value(cur, location, None, to);
        };
        // SAFETY: the bytes equal the column's name, a `String`, so they are UTF-8.
        let name = unsafe { std::str::from_utf8_unchecked(raw_name) };
        let of = ImageValue { index, column, name: Cow::Borrowed(name), at: cur.offset() };
        read_value(cur, location, Some(&of), to)
    })
}

/// One map value: the union [null, long, float, double, string, bytes, Timestamp,
/// UnsignedBigint], converted for its column when known (and sent to `to`), else only checked.
#[inline(always)]
fn read_value<'a>(
    cur: &mut AvroCursor<'a>,
    location: &mut String,
    column: Option<&ImageValue<'_, 'a>>,
    to: &mut impl ImageValuesTo<'a>,
) -> FaultResult<()> {
    let at = cur.offset();
    let kind = column.map_or(Kind::Text, |c| c.column.kind);
    let bad = |what: &str| {
        let name = column.map_or("?", |c| &c.name);
        Fault::new(at, format!("column {name}: {what}"))
    };
    macro_rules! to {
        ($value:expr) => {{
            let value = $value;
            match column {
                Some(c) => to.value(c, value),
                None => Ok(()),
            }
        }};
    }
    match cur.index(8, "value union")? {
        0 => to!(Null),
        1 => {
            let v = cur.long()?;
            match kind {
                Kind::Unsigned => to!(v as u64),
                _ => to!(v),
            }
        }
        2 => to!(cur.float()?),
        // A FLOAT column's value is a float32, as its text is read below and as Open reads it.
        3 if matches!(kind, Kind::Float) => to!(cur.double()? as f32),
        3 => to!(cur.double()?),
        4 | 5 => {
            let bytes = cur.bytes()?;
            // Binary columns, and any column while the schema is unknown (checked later).
            let Some(c) = column.filter(|_| kind != Kind::Binary) else { return to!(bytes) };
            if kind == Kind::Text {
                return to.text(c, bytes, || bad("text value is not UTF-8"));
            }
            let text = crate::utf8::check(bytes).map_err(|_| bad("text value is not UTF-8"))?;
            // new TiCDC writes BIT as decimal text; other producers may send numbers as text.
            match kind {
                Kind::Unsigned => {
                    to!(text.parse::<u64>().map_err(|_| bad(&format!("{text:?} is not an unsigned integer")))?)
                }
                Kind::Signed => to!(text.parse::<i64>().map_err(|_| bad(&format!("{text:?} is not an integer")))?),
                Kind::Float => to!(text.parse::<f32>().map_err(|_| bad(&format!("{text:?} is not a float")))?),
                Kind::Double => to!(digits::parse_f64(text).ok_or_else(|| bad(&format!("{text:?} is not a double")))?),
                _ => to!(text),
            }
        }
        6 => {
            // The zone repeats from value to value: checked only when it changes. The value,
            // like any text, is checked only where it is kept as text.
            let zone_at = cur.offset();
            let zone = cur.bytes()?;
            let value_at = cur.offset();
            let value = cur.bytes()?;
            if zone != location.as_bytes() {
                location.clear();
                location.push_str(utf8(zone, zone_at)?);
            }
            match column {
                Some(c) => to.text(c, value, || not_utf8(value, value_at)),
                None => utf8(value, value_at).map(drop),
            }
        }
        _ => {
            let v = cur.long()? as u64;
            match kind {
                Kind::Signed => {
                    to!(i64::try_from(v).map_err(|_| bad(&format!("{v} is out of range for a signed column")))?)
                }
                _ => to!(v),
            }
        }
    }
}

/// An Avro string's bytes, at `at`, as text.
#[inline(always)]
fn utf8(bytes: &[u8], at: usize) -> FaultResult<&str> {
    crate::utf8::check(bytes).map_err(|_| not_utf8(bytes, at))
}

#[cold]
fn not_utf8(bytes: &[u8], at: usize) -> Fault {
    let valid = crate::utf8::check(bytes).err().unwrap_or(bytes.len());
    Fault::new(at, format!("string is not UTF-8 at byte {valid}"))
}

#[cold]
fn index_fault(at: usize, v: i64, n: usize, what: &str) -> Fault {
    Fault::new(at, format!("{what} index {v} out of range (0..{n})"))
}

fn read_checksum(cur: &mut AvroCursor<'_>) -> FaultResult<RowChecksum> {
    Ok(RowChecksum {
        version: cur.int()?,
        corrupted: cur.boolean()?,
        current: cur.long()? as u32,
        previous: cur.long()? as u32,
    })
}

/// `TableSchema {database, table, tableID, version, columns, indexes}`.
pub fn read_table_schema(cur: &mut AvroCursor<'_>) -> FaultResult<TableSchema> {
    let mut t = TableSchema {
        schema: cur.string()?.to_string(),
        table: cur.string()?.to_string(),
        table_id: cur.long()?,
        version: cur.long()? as u64,
        ..Default::default()
    };
    cur.each(|cur| {
        let name = cur.string()?.to_string();
        let data_type = DataType {
            mysql_type: cur.string()?.to_string(),
            charset: cur.string()?.to_string(),
            collate: cur.string()?.to_string(),
            length: cur.long()?,
            decimal: if cur.optional()? { Some(cur.int()?) } else { None },
            elements: if cur.optional()? {
                let mut elements = Vec::new();
                cur.each(|cur| {
                    elements.push(cur.string()?.to_string());
                    Ok(())
                })?;
                Some(elements)
            } else {
                None
            },
            unsigned: if cur.optional()? { Some(cur.boolean()?) } else { None },
            zerofill: if cur.optional()? { Some(cur.boolean()?) } else { None },
        };
        let nullable = cur.boolean()?;
        let default = if cur.optional()? {
            let raw = cur.bytes()?;
            if data_type.base().0 == MySqlType::Bit {
                // The raw bit string, big-endian: the number JSON carries.
                let n = raw.iter().fold(0u64, |n, &b| (n << 8) | b as u64);
                DefaultValue::Number(n.to_string())
            } else {
                DefaultValue::Text(String::from_utf8_lossy(raw).into_owned())
            }
        } else {
            DefaultValue::Null
        };
        t.columns.push(ColumnSchema { name, data_type, nullable, default });
        Ok(())
    })?;
    cur.each(|cur| {
        let mut index = IndexSchema {
            name: cur.string()?.to_string(),
            unique: cur.boolean()?,
            primary: cur.boolean()?,
            nullable: cur.boolean()?,
            columns: Vec::new(),
        };
        cur.each(|cur| {
            index.columns.push(cur.string()?.to_string());
            Ok(())
        })?;
        t.indexes.push(index);
        Ok(())
    })?;
    t.check_column_names().map_err(|reason| cur.fault(reason))?;
    Ok(t)
}

// ------------------------------------------------------------------------------------------
// Writing (used by the encoder).

pub fn write_long(out: &mut Vec<u8>, v: i64) {
    crate::varint::put_varint(out, v);
}

pub fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

pub fn write_bool(out: &mut Vec<u8>, b: bool) {
    out.push(b as u8);
}

/// `[null, T]` with T present or not.
pub fn write_optional(out: &mut Vec<u8>, present: bool) {
    write_long(out, present as i64);
}

/// Writes a table schema, filling the optional fields as tiflow does: `decimal` for DECIMAL,
/// `elements` for ENUM/SET, `unsigned`/`zerofill` for numeric types; a BIT default as its raw
/// big-endian bit string.
pub fn write_table_schema(out: &mut Vec<u8>, t: &TableSchema) {
    use MySqlType::*;
    write_bytes(out, t.schema.as_bytes());
    write_bytes(out, t.table.as_bytes());
    write_long(out, t.table_id);
    write_long(out, t.version as i64);
    if !t.columns.is_empty() {
        write_long(out, t.columns.len() as i64);
        for c in &t.columns {
            let d = &c.data_type;
            let base = d.base().0;
            write_bytes(out, c.name.as_bytes());
            write_bytes(out, d.mysql_type.as_bytes());
            write_bytes(out, d.charset.as_bytes());
            write_bytes(out, d.collate.as_bytes());
            write_long(out, d.length);
            let decimal = d.decimal.or((base == Decimal).then_some(0));
            write_optional(out, decimal.is_some());
            if let Some(v) = decimal {
                write_long(out, v as i64);
            }
            let no_elements = Vec::new();
            let elements = d.elements.as_ref().or(matches!(base, Enum | Set).then_some(&no_elements));
            write_optional(out, elements.is_some());
            if let Some(elements) = elements {
                if !elements.is_empty() {
                    write_long(out, elements.len() as i64);
                    for e in elements {
                        write_bytes(out, e.as_bytes());
                    }
                }
                write_long(out, 0);
            }
            let numeric = base.is_integer() || matches!(base, Float | Double | Bit | Decimal);
            for flag in [d.unsigned, d.zerofill] {
                let flag = flag.or(numeric.then_some(false));
                write_optional(out, flag.is_some());
                if let Some(b) = flag {
                    write_bool(out, b);
                }
            }
            write_bool(out, c.nullable);
            match &c.default {
                DefaultValue::Null => write_optional(out, false),
                DefaultValue::Text(s) => {
                    write_optional(out, true);
                    write_bytes(out, s.as_bytes());
                }
                DefaultValue::Number(n) if base == Bit => {
                    write_optional(out, true);
                    let v: u64 = n.parse().unwrap_or(0);
                    let width =
                        (d.length.clamp(1, 64) as usize).div_ceil(8).max((64 - v.leading_zeros() as usize).div_ceil(8));
                    write_bytes(out, &v.to_be_bytes()[8 - width.min(8)..]);
                }
                DefaultValue::Number(n) => {
                    write_optional(out, true);
                    write_bytes(out, n.as_bytes());
                }
            }
        }
    }
    write_long(out, 0);
    if !t.indexes.is_empty() {
        write_long(out, t.indexes.len() as i64);
        for index in &t.indexes {
            write_bytes(out, index.name.as_bytes());
            write_bool(out, index.unique);
            write_bool(out, index.primary);
            write_bool(out, index.nullable);
            if !index.columns.is_empty() {
                write_long(out, index.columns.len() as i64);
                for c in &index.columns {
                    write_bytes(out, c.as_bytes());
                }
            }
            write_long(out, 0);
        }
    }
    write_long(out, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 64, i64::MAX, i64::MIN, 449543017000000050] {
            let mut buf = Vec::new();
            write_long(&mut buf, v);
            assert_eq!(AvroCursor::new(&buf).long().unwrap(), v);
        }
        assert!(AvroCursor::new(&[0xff; 11]).long().is_err());
        assert!(AvroCursor::new(&[0x80]).long().is_err());
    }
}
