//! The Simple encoder, both flavours: one Kafka record per event, value only.
//!
//! JSON is written byte for byte as tiflow's `encoding/json` output (fixed field order, omitted
//! empty fields, row images as name-sorted maps of strings, Go's string escaping); Avro as the
//! raw binary datum of the top-level union, map entries in schema order.
//!
//! Row messages only name their schema version, so the encoder keeps what the stream has told
//! the consumer: the latest `tableSchema` per table from DDL and BOOTSTRAP events, and which
//! (schema, table, version) were announced to which Kafka partition, and when. With
//! `send_bootstrap`, a row of a version not yet announced to its partition is preceded by a
//! BOOTSTRAP built from the known schema of that version, or else from the row's own column
//! types; as in TiCDC, every partition's consumer is told, and told again after
//! `send_bootstrap_in_msg_count` rows of the table or `send_bootstrap_interval_in_sec` seconds,
//! so that consumers who join later find the schema soon. A DDL's `preTableSchema` is the table's
//! previously known schema (by table id, then by name), as TiCDC's schema storage provides it.
//!
//! A row names the schema version its consumer reads it by, so it is written as that version
//! reads it: by the first schema of that version a DDL or BOOTSTRAP gave (the consumer's cache
//! keeps the first), or by that of a BOOTSTRAP built here from an earlier row. Each value goes by
//! the version's column type, since after a DDL changes a column's type the events of a typed
//! layout (one Arrow type per column for the whole stream) may type it otherwise; a column the
//! version lacks is left out when null and refused otherwise (the consumer would drop it).
//!
//! `buildTs` is the wall clock unless [`EncodeOptions::build_ts`] fixes it (tests).

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine;

use super::avro::{write_bool, write_bytes, write_long, write_optional, write_table_schema, MESSAGE_BRANCH};
use super::cache::Table;
use super::checksum::row_checksum;
use super::decode::DDL_TYPES;
use super::schema::{write_json_str, ColumnSchema, DataType, DefaultValue, IndexSchema, TableSchema};
use super::Encoding;
use crate::codec::{float_text, Destination, Encode, EncodeOptions, LargeMessageHandle, Protocol, Record};
use crate::error::{Fault, FaultResult};
use crate::event::{Column, ColumnType, Event, EventKind, MessageEvents, Value};
use crate::input::claim_check::{claim_check_body, store_claim_check};
use crate::json::JsonCursor;
use crate::schema::ddl_action;
use crate::schema::mysql::{MySqlType, TypeDescription};

pub struct SimpleEncoder {
    encoding: Encoding,
    options: EncodeOptions,
    /// The latest schema of each (schema, table) seen in DDL/BOOTSTRAP events.
    known: HashMap<(String, String), TableSchema>,
    /// What the consumer reads each (schema, table, version) by: the first schema of that version
    /// a DDL or BOOTSTRAP told it (its schema cache keeps the first), or a BOOTSTRAP built here.
    read_by: HashMap<(String, String, u64), Table>,
    /// Per destination, then (schema, table, version).
    announced: HashMap<(Destination, String, String, u64), Announced>,
    destination: Destination,
}

/// When a table version's BOOTSTRAP (or DDL) last went out, and the rows written since.
struct Announced {
    at: Instant,
    rows: u64,
}

impl Announced {
    fn now() -> Announced {
        Announced { at: Instant::now(), rows: 0 }
    }

    fn is_due(&self, options: &EncodeOptions) -> bool {
        let count = options.send_bootstrap_in_msg_count;
        let interval = options.send_bootstrap_interval_in_sec;
        (count > 0 && self.rows >= count) || (interval > 0 && self.at.elapsed() >= Duration::from_secs(interval))
    }
}

/// A row as it will be written.
struct Row<'e, 'a> {
    event: &'e Event<'a>,
    data: Option<&'e [Column<'a>]>,
    old: Option<&'e [Column<'a>]>,
    keys_only: Option<&'e [Cow<'a, str>]>,
    handle_key_only: bool,
    claim_check: Option<&'e str>,
    version: u64,
    table_id: i64,
}

impl SimpleEncoder {
    pub fn new(encoding: Encoding, options: &EncodeOptions) -> SimpleEncoder {
        SimpleEncoder {
            encoding,
            options: options.clone(),
            known: HashMap::new(),
            read_by: HashMap::new(),
            announced: HashMap::new(),
            destination: (None, None),
        }
    }

    fn build_ts(&self) -> i64 {
        self.options.build_ts.unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
        })
    }

    fn record(&self, value: Vec<u8>) -> FaultResult<Record> {
        Ok(Record { key: None, value: self.options.compression.compress(&value)? })
    }

    fn remember(&mut self, schema: &TableSchema) {
        if schema.schema.is_empty() || schema.table.is_empty() {
            return;
        }
        let key = (self.destination.clone(), schema.schema.clone(), schema.table.clone(), schema.version);
        self.announced.insert(key, Announced::now());
        self.known.insert((schema.schema.clone(), schema.table.clone()), schema.clone());
        let version = (schema.schema.clone(), schema.table.clone(), schema.version);
        self.read_by.entry(version).or_insert_with(|| Table::new(schema.clone()));
    }

    fn bootstrap(&self, schema: &TableSchema) -> Vec<u8> {
        let build_ts = self.build_ts();
        let mut out = Vec::with_capacity(512);
        match self.encoding {
            Encoding::Json => {
                out.extend_from_slice(
                    format!(
                        "{{\"version\":1,\"type\":\"BOOTSTRAP\",\"commitTs\":0,\"buildTs\":{build_ts},\"tableSchema\":"
                    )
                    .as_bytes(),
                );
                schema.write_json(&mut out);
                out.push(b'}');
            }
            Encoding::Avro => {
                avro_header(&mut out, 1);
                write_long(&mut out, 1);
                write_long(&mut out, build_ts);
                write_table_schema(&mut out, schema);
            }
        }
        out
    }

    fn ddl(&self, event: &Event<'_>, schema: Option<&TableSchema>, pre: Option<&TableSchema>) -> Vec<u8> {
        let build_ts = self.build_ts();
        let sql = event.ddl.as_deref().unwrap_or("");
        let kind = ddl_action::category(event.ddl_type.as_deref(), sql);
        let mut out = Vec::with_capacity(512 + sql.len());
        match self.encoding {
            Encoding::Json => {
                out.extend_from_slice(format!("{{\"version\":1,\"type\":\"{kind}\"").as_bytes());
                if !sql.is_empty() {
                    out.extend_from_slice(b",\"sql\":");
                    write_json_str(&mut out, sql);
                }
                out.extend_from_slice(format!(",\"commitTs\":{},\"buildTs\":{build_ts}", event.commit_ts).as_bytes());
                for (name, s) in [("tableSchema", schema), ("preTableSchema", pre)] {
                    if let Some(s) = s {
                        out.extend_from_slice(format!(",\"{name}\":").as_bytes());
                        s.write_json(&mut out);
                    }
                }
                out.push(b'}');
            }
            Encoding::Avro => {
                avro_header(&mut out, 2);
                write_long(&mut out, 1);
                write_long(&mut out, DDL_TYPES.iter().position(|t| *t == kind).unwrap_or(7) as i64);
                write_bytes(&mut out, sql.as_bytes());
                write_long(&mut out, event.commit_ts as i64);
                write_long(&mut out, build_ts);
                for s in [schema, pre] {
                    write_optional(&mut out, s.is_some());
                    if let Some(s) = s {
                        write_table_schema(&mut out, s);
                    }
                }
            }
        }
        out
    }

    fn watermark(&self, commit_ts: u64) -> Vec<u8> {
        let build_ts = self.build_ts();
        match self.encoding {
            Encoding::Json => {
                format!("{{\"version\":1,\"type\":\"WATERMARK\",\"commitTs\":{commit_ts},\"buildTs\":{build_ts}}}")
                    .into_bytes()
            }
            Encoding::Avro => {
                let mut out = Vec::with_capacity(24);
                avro_header(&mut out, 0);
                write_long(&mut out, 1);
                write_long(&mut out, commit_ts as i64);
                write_long(&mut out, build_ts);
                out
            }
        }
    }

    fn row(&self, row: &Row<'_, '_>) -> FaultResult<Vec<u8>> {
        let e = row.event;
        let tz = self.options.timezone.as_str();
        let checksum = if self.options.enable_row_checksum {
            let current = row.data.map(|c| row_checksum(c, tz)).transpose()?.unwrap_or(0);
            let previous = row.old.map(|c| row_checksum(c, tz)).transpose()?.unwrap_or(0);
            Some((current, previous))
        } else {
            None
        };
        let keep = |c: &&Column<'_>| row.keys_only.is_none_or(|keys| keys.contains(&c.name));
        let build_ts = self.build_ts();
        let kind = e.kind.as_str();
        let (database, table) = (e.schema.as_deref().unwrap_or(""), e.table.as_deref().unwrap_or(""));
        let mut out = Vec::with_capacity(1024);
        match self.encoding {
            Encoding::Json => {
                out.extend_from_slice(b"{\"version\":1");
                if !database.is_empty() {
                    out.extend_from_slice(b",\"database\":");
                    write_json_str(&mut out, database);
                }
                if !table.is_empty() {
                    out.extend_from_slice(b",\"table\":");
                    write_json_str(&mut out, table);
                }
                if row.table_id != 0 {
                    out.extend_from_slice(format!(",\"tableID\":{}", row.table_id).as_bytes());
                }
                out.extend_from_slice(format!(",\"type\":\"{kind}\",\"commitTs\":{}", e.commit_ts).as_bytes());
                // `simple-include-start-ts` (pingcap/ticdc#6143): `startTs` follows `commitTs`
                // in DML messages, omitted when 0 (`omitempty`); an event without one (decoded
                // from a message without it) writes its commit ts, as TiCDC's decoder falls
                // back to it.
                let start_ts = e.start_ts.unwrap_or(e.commit_ts);
                if self.options.simple_include_start_ts && start_ts != 0 {
                    out.extend_from_slice(format!(",\"startTs\":{start_ts}").as_bytes());
                }
                out.extend_from_slice(format!(",\"buildTs\":{build_ts}").as_bytes());
                if row.version != 0 {
                    out.extend_from_slice(format!(",\"schemaVersion\":{}", row.version).as_bytes());
                }
                if let Some(location) = row.claim_check {
                    out.extend_from_slice(b",\"claimCheckLocation\":");
                    write_json_str(&mut out, location);
                }
                if row.handle_key_only {
                    out.extend_from_slice(b",\"handleKeyOnly\":true");
                }
                if let Some((current, previous)) = checksum {
                    out.extend_from_slice(
                        format!(",\"checksum\":{{\"version\":1,\"corrupted\":false,\"current\":{current},\"previous\":{previous}}}").as_bytes(),
                    );
                }
                // An image the event has is written even when it is empty (as the Avro form does):
                // a row message without its `data` (or a DELETE's `old`) does not decode.
                for (name, image) in [("data", row.data), ("old", row.old)] {
                    let Some(image) = image else { continue };
                    let mut columns: Vec<&Column<'_>> = image.iter().filter(keep).collect();
                    columns.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
                    out.extend_from_slice(format!(",\"{name}\":{{").as_bytes());
                    for (i, c) in columns.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        write_json_str(&mut out, &c.name);
                        out.push(b':');
                        write_json_value(&mut out, c, tz)?;
                    }
                    out.push(b'}');
                }
                out.push(b'}');
            }
            Encoding::Avro => {
                avro_header(&mut out, 3);
                write_long(&mut out, 1);
                write_bytes(&mut out, database.as_bytes());
                write_bytes(&mut out, table.as_bytes());
                write_long(&mut out, row.table_id);
                write_long(
                    &mut out,
                    ["INSERT", "UPDATE", "DELETE"].iter().position(|k| *k == kind).unwrap_or(0) as i64,
                );
                write_long(&mut out, e.commit_ts as i64);
                write_long(&mut out, build_ts);
                write_long(&mut out, row.version as i64);
                write_optional(&mut out, row.claim_check.is_some());
                if let Some(location) = row.claim_check {
                    write_bytes(&mut out, location.as_bytes());
                }
                let large = self.options.large_message_handle != LargeMessageHandle::None || row.handle_key_only;
                write_optional(&mut out, large);
                if large {
                    write_bool(&mut out, row.handle_key_only);
                }
                write_optional(&mut out, checksum.is_some());
                if let Some((current, previous)) = checksum {
                    write_long(&mut out, 1);
                    write_bool(&mut out, false);
                    write_long(&mut out, current as i64);
                    write_long(&mut out, previous as i64);
                }
                for image in [row.data, row.old] {
                    write_optional(&mut out, image.is_some());
                    let Some(image) = image else { continue };
                    let columns: Vec<&Column<'_>> = image.iter().filter(keep).collect();
                    if !columns.is_empty() {
                        write_long(&mut out, columns.len() as i64);
                        for c in columns {
                            write_bytes(&mut out, c.name.as_bytes());
                            write_avro_value(&mut out, c, tz)?;
                        }
                    }
                    write_long(&mut out, 0);
                }
            }
        }
        Ok(out)
    }

    /// Encodes a row, applying the large-message option when it is too large.
    fn encode_row(&mut self, events: &MessageEvents<'_>, e: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        let (schema, table) = (e.schema.as_deref().unwrap_or(""), e.table.as_deref().unwrap_or(""));
        let latest = self.known.get(&(schema.to_string(), table.to_string()));
        let version = e.schema_version.or(latest.map(|k| k.version)).unwrap_or(0);
        let table_id = e.table_id.or(latest.map(|k| k.table_id)).unwrap_or(0);
        let key = (self.destination.clone(), schema.to_string(), table.to_string(), version);
        let due = self.announced.get(&key).is_none_or(|a| a.is_due(&self.options));
        if self.options.send_bootstrap && due {
            let bootstrap = match self.schema_of(schema, table, version) {
                Some(k) => k.schema.clone(),
                None => {
                    let made = schema_from_columns(events, e, version, table_id);
                    self.read_by.insert((schema.to_string(), table.to_string(), version), Table::new(made.clone()));
                    made
                }
            };
            out.push(self.record(self.bootstrap(&bootstrap))?);
            self.announced.insert(key.clone(), Announced::now());
        }
        if let Some(a) = self.announced.get_mut(&key) {
            a.rows += 1;
        }
        let (data, old) = match e.kind {
            EventKind::Insert => (Some(events.after(e)), None),
            EventKind::Delete => (None, Some(events.before(e))),
            _ => (Some(events.after(e)), e.before.is_some().then(|| events.before(e))),
        };
        let read_by = self.schema_of(schema, table, version);
        let retyped_data = read_by.and_then(|k| as_read_by(data?, k).transpose()).transpose()?;
        let retyped_old = read_by.and_then(|k| as_read_by(old?, k).transpose()).transpose()?;
        let (data, old) = (retyped_data.as_deref().or(data), retyped_old.as_deref().or(old));
        let mut row = Row {
            event: e,
            data,
            old,
            keys_only: None,
            handle_key_only: e.handle_key_only,
            claim_check: e.claim_check.as_deref().filter(|_| e.handle_key_only),
            version,
            table_id,
        };
        let mut record = self.record(self.row(&row)?)?;
        let limit = self.options.max_message_bytes;
        if record.value.len() > limit {
            match self.options.large_message_handle {
                LargeMessageHandle::None => {
                    return Err(Fault::new(
                        0,
                        format!("message of {} bytes exceeds max-message-bytes {limit}", record.value.len()),
                    ));
                }
                LargeMessageHandle::ClaimCheck => {
                    let dir = self
                        .options
                        .claim_check_dir
                        .as_ref()
                        .ok_or_else(|| Fault::new(0, "claim-check needs claim_check_dir"))?;
                    let body = claim_check_body(None, &record.value, self.options.claim_check_raw_value);
                    let location = store_claim_check(dir, &body)?;
                    row.keys_only = Some(events.keys(e));
                    row.handle_key_only = true;
                    row.claim_check = Some(&location);
                    record = self.record(self.row(&row)?)?;
                }
                LargeMessageHandle::HandleKeyOnly => {
                    row.keys_only = Some(events.keys(e));
                    row.handle_key_only = true;
                    record = self.record(self.row(&row)?)?;
                }
            }
            if record.value.len() > limit {
                return Err(Fault::new(
                    0,
                    format!("handle-key-only message of {} bytes still exceeds {limit}", record.value.len()),
                ));
            }
        }
        out.push(record);
        Ok(())
    }

    /// The schema the consumer reads a row of this table version by (see `read_by`).
    fn schema_of(&self, schema: &str, table: &str, version: u64) -> Option<&Table> {
        self.read_by.get(&(schema.to_string(), table.to_string(), version))
    }

    /// The schema a DDL replaces: the known one with the same table id, else the same name.
    fn previous_schema(&self, kind: &str, schema: Option<&TableSchema>, e: &Event<'_>) -> Option<TableSchema> {
        if matches!(kind, "CREATE" | "QUERY") {
            return None;
        }
        let by_id = schema.and_then(|s| self.known.values().find(|k| k.table_id == s.table_id && s.table_id != 0));
        let name = (e.schema.as_deref().unwrap_or("").to_string(), e.table.as_deref().unwrap_or("").to_string());
        by_id.or_else(|| self.known.get(&name)).cloned()
    }
}

impl Encode for SimpleEncoder {
    fn protocol(&self) -> Protocol {
        self.encoding.protocol()
    }

    fn set_destination(&mut self, destination: &Destination) {
        self.destination.clone_from(destination);
    }

    fn encode(&mut self, events: &MessageEvents<'_>, e: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        match e.kind {
            EventKind::Watermark => {
                let value = self.watermark(e.commit_ts);
                out.push(self.record(value)?);
            }
            EventKind::Bootstrap => {
                let schema = match e.table_schema.as_deref() {
                    Some(text) => parse_schema(text)?,
                    None => {
                        let name = (
                            e.schema.as_deref().unwrap_or("").to_string(),
                            e.table.as_deref().unwrap_or("").to_string(),
                        );
                        self.known
                            .get(&name)
                            .cloned()
                            .ok_or_else(|| Fault::new(0, "BOOTSTRAP event without a table schema"))?
                    }
                };
                out.push(self.record(self.bootstrap(&schema))?);
                self.remember(&schema);
            }
            EventKind::Ddl => {
                let schema = e.table_schema.as_deref().map(parse_schema).transpose()?;
                let kind = ddl_action::category(e.ddl_type.as_deref(), e.ddl.as_deref().unwrap_or(""));
                let pre = self.previous_schema(kind, schema.as_ref(), e);
                out.push(self.record(self.ddl(e, schema.as_ref(), pre.as_ref()))?);
                if let Some(schema) = &schema {
                    self.remember(schema);
                }
            }
            EventKind::Insert | EventKind::Update | EventKind::Delete => self.encode_row(events, e, out)?,
        }
        Ok(())
    }
}

fn parse_schema(text: &str) -> FaultResult<TableSchema> {
    let mut cur = JsonCursor::new(text.as_bytes())?;
    TableSchema::read_json(&mut cur).map_err(|f| Fault::new(f.offset, format!("table schema: {}", f.reason)))
}

/// Message union branch, message type and payload branch.
fn avro_header(out: &mut Vec<u8>, kind: i64) {
    write_long(out, MESSAGE_BRANCH);
    write_long(out, kind);
    write_long(out, kind);
}

/// A table schema from a row's own column types, for a BOOTSTRAP when no DDL told us more.
fn schema_from_columns(events: &MessageEvents<'_>, e: &Event<'_>, version: u64, table_id: i64) -> TableSchema {
    let image = if e.after.is_some() { events.after(e) } else { events.before(e) };
    let keys: Vec<String> = events.keys(e).iter().map(|k| k.to_string()).collect();
    let columns = image
        .iter()
        .map(|c| {
            let mut desc = c.ty.text.as_deref().map(TypeDescription::parse);
            // `datetime(3)`: the argument is the fractional precision, carried as `decimal`.
            if let Some(d) = desc
                .as_mut()
                .filter(|_| matches!(c.ty.base, MySqlType::DateTime | MySqlType::Timestamp | MySqlType::Time))
            {
                d.scale = d.length.take().filter(|&fsp| fsp > 0);
            }
            let text_charset =
                (c.ty.base.is_string() && !c.ty.binary) || matches!(c.ty.base, MySqlType::Enum | MySqlType::Set);
            let (charset, collate) = if text_charset { ("utf8mb4", "utf8mb4_bin") } else { ("binary", "binary") };
            let numeric = c.ty.base.is_integer()
                || matches!(c.ty.base, MySqlType::Float | MySqlType::Double | MySqlType::Decimal | MySqlType::Bit);
            let unsigned = c.ty.unsigned || matches!(c.ty.base, MySqlType::Bit | MySqlType::Year);
            ColumnSchema {
                name: c.name.to_string(),
                data_type: DataType {
                    mysql_type: c.ty.base.name(c.ty.binary).to_string(),
                    charset: charset.into(),
                    collate: collate.into(),
                    length: desc.as_ref().and_then(|d| d.length).unwrap_or(0) as i64,
                    decimal: desc.as_ref().and_then(|d| d.scale).map(|s| s as i32),
                    elements: desc.as_ref().filter(|d| !d.members.is_empty()).map(|d| d.members.clone()),
                    unsigned: (numeric && unsigned).then_some(true),
                    zerofill: (c.ty.base == MySqlType::Year).then_some(true),
                },
                nullable: !keys.iter().any(|k| *k == c.name),
                default: DefaultValue::Null,
            }
        })
        .collect();
    let indexes = if keys.is_empty() {
        Vec::new()
    } else {
        vec![IndexSchema { name: "primary".into(), unique: true, primary: true, nullable: false, columns: keys }]
    };
    TableSchema {
        schema: e.schema.as_deref().unwrap_or("").into(),
        table: e.table.as_deref().unwrap_or("").into(),
        table_id,
        version,
        columns,
        indexes,
    }
}

/// The image as the table schema reads it, when it differs (None when it does not): each column
/// typed as the schema types it (ENUM/SET members go by name, to the schema's index or mask, or
/// to text), and a null column the schema lacks left out. A value in a column the schema lacks
/// is refused: the consumer would drop it.
fn as_read_by<'a>(image: &[Column<'a>], table: &Table) -> FaultResult<Option<Vec<Column<'a>>>> {
    let schema_type = |nth: usize, c: &Column<'_>| table.find(&c.name, nth).map(|i| &table.columns[i].ty);
    let differs = |a: &ColumnType<'_>, b: &ColumnType<'_>| {
        (a.base, a.unsigned, a.binary) != (b.base, b.unsigned, b.binary)
            || (matches!(a.base, MySqlType::Enum | MySqlType::Set) && a.text != b.text)
    };
    if image.iter().enumerate().all(|(i, c)| schema_type(i, c).is_some_and(|ty| !differs(ty, &c.ty))) {
        return Ok(None);
    }
    let mut columns = Vec::with_capacity(image.len());
    for (i, c) in image.iter().enumerate() {
        match schema_type(i, c) {
            None if c.value.is_null() => {}
            None => {
                let version = table.schema.version;
                return Err(Fault::new(
                    c.at,
                    format!("column {}: not in the table schema of version {version}", c.name),
                ));
            }
            Some(ty) if differs(ty, &c.ty) => columns.push(retyped(c, ty)?),
            Some(_) => columns.push(c.clone()),
        }
    }
    Ok(Some(columns))
}

fn retyped<'a>(c: &Column<'a>, ty: &ColumnType<'static>) -> FaultResult<Column<'a>> {
    let is_member = |base| matches!(base, MySqlType::Enum | MySqlType::Set);
    let value = match member_names(c) {
        // Digits are the index or mask itself, as the wire and the envelope carry it.
        Some(names) if is_member(ty.base) && names.parse::<u64>().is_ok() => c.value.clone(),
        Some(names) if is_member(ty.base) => {
            let members = TypeDescription::parse(ty.text.as_deref().unwrap_or("")).members;
            Value::UInt(crate::schema::mysql::member_number(ty.base, &members, &names).ok_or_else(|| {
                let kind = ty.base.name(false);
                Fault::new(c.at, format!("column {}: {names:?} is not a member of the table's {kind}", c.name))
            })?)
        }
        Some(names) if is_member(c.ty.base) => Value::Text(Cow::Owned(names.into_owned())),
        _ => c.value.clone(),
    };
    Ok(Column { name: c.name.clone(), ty: ty.clone(), value, at: c.at })
}

/// An ENUM/SET value as member names: text as it is, an index or mask by its own type's members.
fn member_names<'v>(c: &'v Column<'_>) -> Option<Cow<'v, str>> {
    match (&c.value, c.ty.base) {
        (Value::Text(t), _) => Some(Cow::Borrowed(t.as_ref())),
        (Value::UInt(n), MySqlType::Enum | MySqlType::Set) => {
            let members = TypeDescription::parse(c.ty.text.as_deref()?).members;
            if c.ty.base == MySqlType::Enum {
                crate::schema::mysql::enum_name(&members, *n).map(|name| Cow::Owned(name.to_string()))
            } else {
                let mut names = String::new();
                crate::schema::mysql::set_names(&members, *n, &mut names)?;
                Some(Cow::Owned(names))
            }
        }
        _ => None,
    }
}

fn is_binary_string(ty: &ColumnType<'_>) -> bool {
    ty.binary && (ty.base.is_string() || ty.base == MySqlType::Geometry)
}

/// An integer column's value as Avro's long: unsigned ones as their bits, as Go writes them. A
/// value on the wrong side of zero for the column's signedness is refused: the consumer would
/// read a negative number of an unsigned column as a huge one, and the reverse.
fn integer_of(c: &Column<'_>) -> FaultResult<i64> {
    let signed_integer = c.ty.base.is_integer() && !c.ty.unsigned;
    let unsigned_integer = c.ty.base.is_integer() && c.ty.unsigned;
    match &c.value {
        Value::Int(v) if unsigned_integer && *v < 0 => Err(out_of_range(c)),
        Value::Int(v) => Ok(*v),
        Value::UInt(v) if signed_integer && *v > i64::MAX as u64 => Err(out_of_range(c)),
        Value::UInt(v) => Ok(*v as i64),
        Value::Text(t) => match (t.parse::<i64>(), t.parse::<u64>()) {
            (Ok(v), _) if unsigned_integer && v < 0 => Err(out_of_range(c)),
            (Ok(v), _) => Ok(v),
            (_, Ok(_)) if signed_integer => Err(out_of_range(c)),
            (_, Ok(v)) => Ok(v as i64),
            _ => Err(not_a(c, "an integer")),
        },
        Value::Float32(v) => whole_number(*v as f64, c),
        Value::Float64(v) => whole_number(*v, c),
        _ => Err(not_a(c, "an integer")),
    }
}

fn out_of_range(c: &Column<'_>) -> Fault {
    not_a(c, "an integer in the column's range")
}

/// A float that is a whole number in the column's integer range (unsigned ones as their bits).
fn whole_number(v: f64, c: &Column<'_>) -> FaultResult<i64> {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    match v {
        _ if v.fract() != 0.0 => Err(not_a(c, "an integer")),
        _ if c.ty.unsigned && (0.0..2.0 * TWO_63).contains(&v) => Ok(v as u64 as i64),
        _ if !c.ty.unsigned && (-TWO_63..TWO_63).contains(&v) => Ok(v as i64),
        _ => Err(out_of_range(c)),
    }
}

fn float_of(c: &Column<'_>) -> FaultResult<f64> {
    let v = match &c.value {
        Value::Float32(v) => *v as f64,
        Value::Float64(v) => *v,
        Value::Int(v) => *v as f64,
        Value::UInt(v) => *v as f64,
        Value::Text(t) => t.parse().map_err(|_| not_a(c, "a number"))?,
        _ => return Err(not_a(c, "a number")),
    };
    Ok(v)
}

#[derive(Clone, Copy)]
enum Precision {
    Single,
    Double,
}

/// A float column's value for Avro's binary float or double: an integer the type cannot hold
/// exactly is refused rather than rounded, as a fraction is refused for an integer column.
fn exact_float(c: &Column<'_>, precision: Precision) -> FaultResult<f64> {
    let whole = match c.value {
        Value::Int(v) => v as i128,
        Value::UInt(v) => v as i128,
        _ => return float_of(c),
    };
    let held = match precision {
        Precision::Single => whole as f32 as i128 == whole,
        Precision::Double => whole as f64 as i128 == whole,
    };
    if held {
        Ok(whole as f64)
    } else {
        Err(not_a(c, "a number the column's float type holds exactly"))
    }
}

fn not_a(c: &Column<'_>, what: &str) -> Fault {
    Fault::new(c.at, format!("column {}: value is not {what}", c.name))
}

/// MySQL's text form of a value, rendered from the column's type.
fn value_text<'v>(c: &'v Column<'_>) -> FaultResult<Cow<'v, str>> {
    Ok(match (&c.value, c.ty.base) {
        // As given: TiCDC's mounter makes a NaN or infinity 0 before it reaches an encoder.
        (Value::Float32(_) | Value::Float64(_), MySqlType::Float) => {
            let v = float_of(c)? as f32;
            Cow::Owned(float_text(v as f64, || v.to_string()))
        }
        (Value::Float32(_) | Value::Float64(_), _) => {
            let v = float_of(c)?;
            Cow::Owned(float_text(v, || v.to_string()))
        }
        (Value::Int(v), _) => Cow::Owned(v.to_string()),
        (Value::UInt(v), _) => Cow::Owned(v.to_string()),
        (Value::Text(t), _) => Cow::Borrowed(t.as_ref()),
        (Value::Bytes(b), _) => String::from_utf8_lossy(b),
        (Value::Null, _) => Cow::Borrowed(""),
    })
}

fn write_json_value(out: &mut Vec<u8>, c: &Column<'_>, tz: &str) -> FaultResult<()> {
    if c.value.is_null() {
        out.extend_from_slice(b"null");
        return Ok(());
    }
    if c.ty.base == MySqlType::Timestamp {
        out.extend_from_slice(b"{\"location\":");
        write_json_str(out, tz);
        out.extend_from_slice(b",\"value\":");
        write_json_str(out, &value_text(c)?);
        out.push(b'}');
        return Ok(());
    }
    if is_binary_string(&c.ty) {
        let bytes: &[u8] = match &c.value {
            Value::Bytes(b) => b,
            Value::Text(t) => t.as_bytes(),
            _ => return Err(not_a(c, "bytes")),
        };
        out.push(b'"');
        let mut encoded = String::with_capacity(bytes.len() * 4 / 3 + 4);
        base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut encoded);
        out.extend_from_slice(encoded.as_bytes());
        out.push(b'"');
        return Ok(());
    }
    if c.ty.base.is_integer() || matches!(c.ty.base, MySqlType::Enum | MySqlType::Set | MySqlType::Bit) {
        // Checked, so that a bad value fails here rather than in the consumer: a float's text
        // too, which `integer_of` checks only as a number.
        integer_of(c)?;
        let text = value_text(c)?;
        let float = matches!(c.value, Value::Float32(_) | Value::Float64(_));
        if float && text.parse::<i64>().is_err() && text.parse::<u64>().is_err() {
            return Err(not_a(c, "an integer"));
        }
        write_json_str(out, &text);
        return Ok(());
    }
    write_json_str(out, &value_text(c)?);
    Ok(())
}

fn write_avro_value(out: &mut Vec<u8>, c: &Column<'_>, tz: &str) -> FaultResult<()> {
    use MySqlType::*;
    if c.value.is_null() {
        write_long(out, 0);
        return Ok(());
    }
    match c.ty.base {
        Timestamp => {
            write_long(out, 6);
            write_bytes(out, tz.as_bytes());
            write_bytes(out, value_text(c)?.as_bytes());
        }
        BigInt if c.ty.unsigned => {
            write_long(out, 7);
            write_long(out, integer_of(c)?);
        }
        TinyInt | SmallInt | MediumInt | Int | BigInt | Year | Enum | Set | Bit => {
            write_long(out, 1);
            write_long(out, integer_of(c)?);
        }
        Float => {
            write_long(out, 2);
            out.extend_from_slice(&(exact_float(c, Precision::Single)? as f32).to_le_bytes());
        }
        Double => {
            write_long(out, 3);
            out.extend_from_slice(&exact_float(c, Precision::Double)?.to_le_bytes());
        }
        _ if is_binary_string(&c.ty) => {
            write_long(out, 5);
            match &c.value {
                Value::Bytes(b) => write_bytes(out, b),
                _ => write_bytes(out, value_text(c)?.as_bytes()),
            }
        }
        _ => {
            write_long(out, 4);
            write_bytes(out, value_text(c)?.as_bytes());
        }
    }
    Ok(())
}
