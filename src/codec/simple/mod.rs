//! TiCDC's Simple protocol (`../shared/protocols/simple.md`), JSON and Avro flavours.
//!
//! Row messages carry values but no column metadata: each names its table's schema version and
//! the consumer must already hold that version's `tableSchema`, learnt from an earlier BOOTSTRAP
//! or DDL message. So this codec is stateful. It keeps a [`SchemaCache`] keyed by
//! (schema, table, version) for as long as the [`BatchDecoder`](crate::arrow::BatchDecoder) lives,
//! and a bounded queue of rows that arrived before their schema: such a row's bytes are copied
//! and held, and the driver takes them back (through [`Codec::take_held`]) once a schema message
//! releases them, or as failures when the queue overflows or the stream ends.
//!
//! Both flavours decode into the same model: [`TableSchema`] for schemas, and per cached version
//! a [`Table`]: each column's [`ColumnType`] (with the full type text, `decimal(10,2)`,
//! `enum('a','b')`, so the typed layout knows precision and members), how its values travel
//! ([`Kind`]), and the key columns. Row images come out in schema order, whatever order the
//! message listed them in (JSON: alphabetical; Avro: Go map order).
//!
//! Type texts are interned for the life of the process (a bounded set, see [`intern`]) so that
//! every decoded column can borrow its type without an allocation per value.

pub mod avro;
pub mod checksum;
pub mod encode;
pub mod json;

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;

use crate::codec::{Codec, CodecOptions, Held, Origin, Protocol};
use crate::error::{Fault, FaultResult};
use crate::event::{same_name, Column, ColumnType, Event, EventKind, MessageEvents, Text};
use crate::json::JsonCursor;
use crate::mysql::MySqlType;
use crate::table::{ColumnDefinition, TableDefinition};

/// The wire flavour (`encoding-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Avro,
}

impl Encoding {
    pub fn protocol(self) -> Protocol {
        match self {
            Encoding::Json => Protocol::SimpleJson,
            Encoding::Avro => Protocol::SimpleAvro,
        }
    }
}

// ------------------------------------------------------------------------------------------
// The table schema a BOOTSTRAP or DDL message carries.

/// `tableSchema` (JSON field `schema` = Avro field `database`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableSchema {
    pub schema: String,
    pub table: String,
    pub table_id: i64,
    /// TiDB's `TableInfo.UpdateTS`, what row messages call `schemaVersion`.
    pub version: u64,
    pub columns: Vec<ColumnSchema>,
    pub indexes: Vec<IndexSchema>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnSchema {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    pub default: DefaultValue,
}

/// `dataType`. The optional fields keep Avro's null-versus-value distinction; JSON omits zero
/// and false values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DataType {
    pub mysql_type: String,
    pub charset: String,
    pub collate: String,
    pub length: i64,
    pub decimal: Option<i32>,
    pub elements: Option<Vec<String>>,
    pub unsigned: Option<bool>,
    pub zerofill: Option<bool>,
}

/// A column default: JSON carries a string, null, or (BIT columns) a number; Avro carries the
/// raw TiDB default bytes, which for BIT columns are the big-endian bit string, read here into
/// the same number as JSON's.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum DefaultValue {
    #[default]
    Null,
    Text(String),
    /// A JSON number, as its text.
    Number(String),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexSchema {
    pub name: String,
    pub unique: bool,
    pub primary: bool,
    pub nullable: bool,
    pub columns: Vec<String>,
}

impl DataType {
    pub fn base(&self) -> (MySqlType, bool) {
        MySqlType::from_name(&self.mysql_type)
    }

    pub fn is_unsigned(&self) -> bool {
        self.unsigned.unwrap_or(false) || self.zerofill.unwrap_or(false)
    }

    /// The full MySQL type text: `int unsigned`, `decimal(10,2)`, `varbinary(255)`,
    /// `datetime(3)`, `enum('a','b')`, `bit(10)`.
    pub fn type_text(&self) -> String {
        use MySqlType::*;
        let (base, binary) = self.base();
        let name = if base == Unknown { self.mysql_type.as_str() } else { base.name(binary) };
        let mut text = name.to_string();
        let decimal = self.decimal.unwrap_or(0);
        match base {
            Decimal if self.length > 0 => text.push_str(&format!("({},{})", self.length, decimal)),
            Bit | Char | VarChar | Vector if self.length > 0 => text.push_str(&format!("({})", self.length)),
            DateTime | Timestamp | Time if decimal > 0 => text.push_str(&format!("({decimal})")),
            Enum | Set => {
                let members: Vec<String> =
                    self.elements.iter().flatten().map(|m| format!("'{}'", m.replace('\'', "''"))).collect();
                text.push_str(&format!("({})", members.join(",")));
            }
            _ => {}
        }
        if self.is_unsigned()
            && matches!(base, TinyInt | SmallInt | MediumInt | Int | BigInt | Float | Double | Decimal)
        {
            text.push_str(" unsigned");
        }
        text
    }
}

impl TableSchema {
    /// The primary key's columns, else those of the first unique index whose columns are all
    /// NOT NULL (TiCDC's handle index), else none.
    pub fn key_columns(&self) -> &[String] {
        let index =
            self.indexes.iter().find(|i| i.primary).or_else(|| self.indexes.iter().find(|i| i.unique && !i.nullable));
        index.map_or(&[], |i| &i.columns)
    }

    pub fn definition(&self) -> TableDefinition {
        TableDefinition {
            schema: self.schema.clone(),
            table: self.table.clone(),
            columns: self
                .columns
                .iter()
                .map(|c| ColumnDefinition::new(c.name.clone(), c.data_type.type_text(), c.nullable))
                .collect(),
            primary_key: self.key_columns().to_vec(),
        }
    }

    /// A `tableSchema` as JSON text: what BOOTSTRAP and DDL messages carry, and the envelope's
    /// `_table_schema` column holds (for either flavour).
    pub fn from_json(text: &str) -> Result<TableSchema, String> {
        let invalid = |f: Fault| format!("invalid table schema at byte {}: {}", f.offset, f.reason);
        let mut cur = JsonCursor::new(text.as_bytes()).map_err(invalid)?;
        let schema = TableSchema::read_json(&mut cur).map_err(invalid)?;
        if !cur.at_end() {
            return Err(invalid(cur.fault("text after the table schema")));
        }
        if schema.schema.is_empty() || schema.table.is_empty() {
            return Err("invalid table schema: no schema or table name".into());
        }
        Ok(schema)
    }

    /// Reads the JSON form (any field order; unknown fields skipped).
    pub fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<TableSchema> {
        let mut t = TableSchema::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "schema" | "database" => t.schema = cur.string()?.into_owned(),
                "table" => t.table = cur.string()?.into_owned(),
                "tableID" => t.table_id = cur.i64()?,
                "version" => t.version = cur.u64()?,
                "columns" => {
                    read_json_array(cur, |cur| {
                        t.columns.push(ColumnSchema::read_json(cur)?);
                        Ok(())
                    })?;
                }
                "indexes" => {
                    read_json_array(cur, |cur| {
                        t.indexes.push(IndexSchema::read_json(cur)?);
                        Ok(())
                    })?;
                }
                _ => cur.skip_value()?,
            }
        }
        t.check_column_names().map_err(|reason| cur.fault(reason))?;
        Ok(t)
    }

    /// TiDB gives each column its own name, and rows are matched to columns by name (JSON) or
    /// read into them by name (the envelope's images): a schema naming one twice is refused.
    pub fn check_column_names(&self) -> Result<(), String> {
        let mut names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        match names.windows(2).find(|w| w[0] == w[1]) {
            Some(w) => Err(format!("table schema names column {:?} twice", w[0])),
            None => Ok(()),
        }
    }

    /// Writes the JSON form exactly as TiCDC's `encoding/json` does.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"schema\":");
        write_json_str(out, &self.schema);
        out.extend_from_slice(b",\"table\":");
        write_json_str(out, &self.table);
        out.extend_from_slice(
            format!(",\"tableID\":{},\"version\":{},\"columns\":[", self.table_id, self.version).as_bytes(),
        );
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            c.write_json(out);
        }
        out.push(b']');
        out.extend_from_slice(b",\"indexes\":[");
        for (i, index) in self.indexes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            index.write_json(out);
        }
        out.extend_from_slice(b"]}");
    }

    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256 + 128 * self.columns.len());
        self.write_json(&mut out);
        String::from_utf8(out).expect("the JSON writer writes UTF-8")
    }
}

impl ColumnSchema {
    fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<ColumnSchema> {
        let mut c = ColumnSchema::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "name" => c.name = cur.string()?.into_owned(),
                "dataType" => c.data_type = DataType::read_json(cur)?,
                "nullable" => c.nullable = cur.bool()?,
                "default" => {
                    c.default = match cur.peek() {
                        Some(b'n') => {
                            cur.null()?;
                            DefaultValue::Null
                        }
                        Some(b'"') => DefaultValue::Text(cur.string()?.into_owned()),
                        _ => DefaultValue::Number(cur.number_text()?.to_string()),
                    }
                }
                _ => cur.skip_value()?,
            }
        }
        Ok(c)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"name\":");
        write_json_str(out, &self.name);
        out.extend_from_slice(b",\"dataType\":");
        self.data_type.write_json(out);
        out.extend_from_slice(if self.nullable { b",\"nullable\":true" } else { b",\"nullable\":false" });
        out.extend_from_slice(b",\"default\":");
        match &self.default {
            DefaultValue::Null => out.extend_from_slice(b"null"),
            DefaultValue::Text(s) => write_json_str(out, s),
            DefaultValue::Number(n) => out.extend_from_slice(n.as_bytes()),
        }
        out.push(b'}');
    }
}

impl DataType {
    fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<DataType> {
        let mut d = DataType::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "mysqlType" => d.mysql_type = cur.string()?.into_owned(),
                "charset" => d.charset = cur.string()?.into_owned(),
                "collate" => d.collate = cur.string()?.into_owned(),
                "length" => d.length = cur.i64()?,
                "decimal" => {
                    let at = cur.offset();
                    let v = cur.i64()?;
                    d.decimal = Some(i32::try_from(v).map_err(|_| Fault::new(at, "decimal out of range"))?);
                }
                "elements" => {
                    let mut elements = Vec::new();
                    if !cur.null()? {
                        read_json_array(cur, |cur| {
                            elements.push(cur.string()?.into_owned());
                            Ok(())
                        })?;
                    }
                    d.elements = Some(elements);
                }
                "unsigned" => d.unsigned = Some(cur.bool()?),
                "zerofill" => d.zerofill = Some(cur.bool()?),
                _ => cur.skip_value()?,
            }
        }
        Ok(d)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"mysqlType\":");
        write_json_str(out, &self.mysql_type);
        out.extend_from_slice(b",\"charset\":");
        write_json_str(out, &self.charset);
        out.extend_from_slice(b",\"collate\":");
        write_json_str(out, &self.collate);
        if self.length != 0 {
            out.extend_from_slice(format!(",\"length\":{}", self.length).as_bytes());
        }
        // Go never writes FLOAT/DOUBLE's decimal (always -1 in TiDB).
        let float = matches!(self.base().0, MySqlType::Float | MySqlType::Double);
        match self.decimal {
            Some(d) if d != 0 && !float => out.extend_from_slice(format!(",\"decimal\":{d}").as_bytes()),
            _ => {}
        }
        if let Some(elements) = self.elements.as_ref().filter(|e| !e.is_empty()) {
            out.extend_from_slice(b",\"elements\":[");
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_str(out, e);
            }
            out.push(b']');
        }
        if self.unsigned == Some(true) {
            out.extend_from_slice(b",\"unsigned\":true");
        }
        if self.zerofill == Some(true) {
            out.extend_from_slice(b",\"zerofill\":true");
        }
        out.push(b'}');
    }
}

impl IndexSchema {
    fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<IndexSchema> {
        let mut index = IndexSchema::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "name" => index.name = cur.string()?.into_owned(),
                "unique" => index.unique = cur.bool()?,
                "primary" => index.primary = cur.bool()?,
                "nullable" => index.nullable = cur.bool()?,
                "columns" => {
                    if !cur.null()? {
                        read_json_array(cur, |cur| {
                            index.columns.push(cur.string()?.into_owned());
                            Ok(())
                        })?;
                    }
                }
                _ => cur.skip_value()?,
            }
        }
        Ok(index)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"name\":");
        write_json_str(out, &self.name);
        let flag = |b: bool| if b { "true" } else { "false" };
        out.extend_from_slice(
            format!(
                ",\"unique\":{},\"primary\":{},\"nullable\":{},\"columns\":",
                flag(self.unique),
                flag(self.primary),
                flag(self.nullable)
            )
            .as_bytes(),
        );
        if self.columns.is_empty() {
            out.extend_from_slice(b"null");
        } else {
            out.push(b'[');
            for (i, c) in self.columns.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_str(out, c);
            }
            out.push(b']');
        }
        out.push(b'}');
    }
}

fn read_json_array<'a>(
    cur: &mut JsonCursor<'a>,
    mut item: impl FnMut(&mut JsonCursor<'a>) -> FaultResult<()>,
) -> FaultResult<()> {
    if cur.null()? {
        return Ok(());
    }
    cur.begin_array()?;
    let mut first = true;
    while cur.next_item(&mut first)? {
        item(cur)?;
    }
    Ok(())
}

/// A JSON string as Go's `encoding/json` writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped as
/// `\u00XX`/`\u20XX`, control characters as `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`.
pub fn write_json_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0..=0x1f | b'<' | b'>' | b'&' => None,
            0xe2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(if bytes[i + 2] == 0xa8 { b"\\u2028" } else { b"\\u2029" });
                i += 3;
                start = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        match escape {
            Some(e) => out.extend_from_slice(e),
            None => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

// ------------------------------------------------------------------------------------------
// What a cached schema version tells the decoders.

/// How a column's values travel, and so how they are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Signed integers and YEAR: decimal text (JSON) or long (Avro), read as `Value::Int`.
    Signed,
    /// Unsigned integers, BIT, ENUM index, SET mask: read as `Value::UInt`.
    Unsigned,
    Float,
    Double,
    /// `{"location","value"}`: the value text is kept.
    Timestamp,
    /// binary/varbinary/blob: base64 in JSON, Avro bytes.
    Binary,
    /// Everything carried as text (DECIMAL, dates, times, JSON, VECTOR, text strings).
    Text,
}

#[derive(Debug, Clone)]
pub struct TableColumn {
    pub name: String,
    pub ty: ColumnType<'static>,
    pub kind: Kind,
}

/// One cached schema version, ready for decoding rows.
#[derive(Debug)]
pub struct Table {
    pub schema: TableSchema,
    pub columns: Vec<TableColumn>,
    /// Indexes into `columns` of the key columns.
    pub keys: Vec<usize>,
    /// Column indexes in name order: JSON images list columns alphabetically.
    alpha: Vec<usize>,
    by_name: FxHashMap<String, usize>,
}

impl Table {
    pub fn new(schema: TableSchema) -> Table {
        let columns: Vec<TableColumn> = schema
            .columns
            .iter()
            .map(|c| {
                let (base, binary) = c.data_type.base();
                let unsigned = c.data_type.is_unsigned();
                let kind = match base {
                    _ if binary => Kind::Binary,
                    MySqlType::BigInt
                    | MySqlType::Int
                    | MySqlType::MediumInt
                    | MySqlType::SmallInt
                    | MySqlType::TinyInt
                        if unsigned =>
                    {
                        Kind::Unsigned
                    }
                    b if b.is_integer() => Kind::Signed,
                    MySqlType::Bit | MySqlType::Enum | MySqlType::Set => Kind::Unsigned,
                    MySqlType::Float => Kind::Float,
                    MySqlType::Double => Kind::Double,
                    MySqlType::Timestamp => Kind::Timestamp,
                    _ => Kind::Text,
                };
                let ty =
                    ColumnType { base, unsigned, binary, text: Some(intern(c.data_type.type_text())), flags: None };
                TableColumn { name: c.name.clone(), ty, kind }
            })
            .collect();
        let by_name: FxHashMap<String, usize> = columns.iter().enumerate().map(|(i, c)| (c.name.clone(), i)).collect();
        let keys = schema.key_columns().iter().filter_map(|k| by_name.get(k).copied()).collect();
        let mut alpha: Vec<usize> = (0..columns.len()).collect();
        alpha.sort_by(|&a, &b| columns[a].name.cmp(&columns[b].name));
        Table { schema, columns, keys, alpha, by_name }
    }

    /// The column called `name`, the `nth` listed in an image: tries alphabetical and schema
    /// position first.
    #[inline]
    pub fn find(&self, name: &str, nth: usize) -> Option<usize> {
        self.find_bytes(name.as_bytes(), nth)
    }

    /// [`Table::find`] on a name not yet checked to be UTF-8 (a match is: it equals a `String`).
    /// Always inlined: called once per value, it was left out of line in some builds, at 2-3%
    /// of a Simple decode.
    #[inline(always)]
    pub fn find_bytes(&self, name: &[u8], nth: usize) -> Option<usize> {
        if self.columns.get(nth).is_some_and(|c| same_name(&c.name, name)) {
            return Some(nth);
        }
        if let Some(&i) = self.alpha.get(nth) {
            if same_name(&self.columns[i].name, name) {
                return Some(i);
            }
        }
        self.by_name.get(std::str::from_utf8(name).ok()?).copied()
    }
}

/// Process-wide interning of type texts, so that decoded columns borrow them. The set is
/// bounded: past [`MAX_INTERNED`] distinct texts, new ones are simply owned by each column.
pub fn intern(text: String) -> Text<'static> {
    const MAX_INTERNED: usize = 1 << 16;
    static TEXTS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = match TEXTS.get_or_init(Default::default).lock() {
        Ok(set) => set,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(s) = set.get(text.as_str()) {
        return Cow::Borrowed(s);
    }
    if set.len() >= MAX_INTERNED {
        return Cow::Owned(text);
    }
    let leaked: &'static str = Box::leak(text.into_boxed_str());
    set.insert(leaked);
    Cow::Borrowed(leaked)
}

// ------------------------------------------------------------------------------------------
// The schema cache and the rows waiting for it.

/// Every schema version seen in the stream, keyed by (schema, table, version).
#[derive(Default)]
pub struct SchemaCache {
    tables: Vec<Table>,
    by_version: FxHashMap<u64, Vec<usize>>,
}

impl SchemaCache {
    pub fn get(&self, schema: &str, table: &str, version: u64) -> Option<&Table> {
        let candidates = self.by_version.get(&version)?;
        candidates.iter().map(|&i| &self.tables[i]).find(|t| t.schema.schema == schema && t.schema.table == table)
    }

    /// Adds a schema (BOOTSTRAP/DDL messages repeat them: a known version is kept as is).
    /// Returns whether it was new. Schemas without a schema or table name are ignored, as Go does.
    pub fn insert(&mut self, schema: TableSchema) -> bool {
        if schema.schema.is_empty() || schema.table.is_empty() {
            return false;
        }
        if self.get(&schema.schema, &schema.table, schema.version).is_some() {
            return false;
        }
        self.by_version.entry(schema.version).or_default().push(self.tables.len());
        self.tables.push(Table::new(schema));
        true
    }

    /// The newest version known of a table.
    pub fn latest(&self, schema: &str, table: &str) -> Option<&Table> {
        self.tables
            .iter()
            .filter(|t| t.schema.schema == schema && t.schema.table == table)
            .max_by_key(|t| t.schema.version)
    }
}

/// A row message waiting for its table's schema.
struct Waiting {
    schema: String,
    table: String,
    version: u64,
    key: Option<Vec<u8>>,
    value: Vec<u8>,
    /// Set by the driver right after the decode that held it.
    origin: Option<Origin>,
}

/// Counts for `BatchDecoder::stats`.
#[derive(Debug, Default, Clone, Copy)]
pub struct PendingStats {
    pub held: u64,
    pub released: u64,
    pub expired: u64,
}

/// What decoding one message came to.
pub enum Outcome {
    /// The events are in `out`.
    Decoded,
    /// A row whose schema version is not known yet.
    Wait { schema: String, table: String, version: u64 },
}

/// The per-stream state both flavours share.
pub struct State {
    pub cache: SchemaCache,
    pub verify_checksum: bool,
    pub order: ImageOrder,
    max_pending: usize,
    waiting: VecDeque<Waiting>,
    /// Messages whose wait ended (released, or expired with a fault), for the driver.
    settled: Vec<(Waiting, Option<Fault>)>,
    stats: PendingStats,
}

impl State {
    fn new(options: &CodecOptions) -> State {
        let mut cache = SchemaCache::default();
        for schema in &options.table_schemas {
            cache.insert(schema.clone());
        }
        State {
            cache,
            verify_checksum: options.verify_checksum,
            order: ImageOrder::default(),
            max_pending: options.max_pending,
            waiting: VecDeque::new(),
            settled: Vec::new(),
            stats: PendingStats::default(),
        }
    }

    /// Caches a schema from a BOOTSTRAP/DDL message and releases the rows that waited for it.
    pub fn learn(&mut self, schema: TableSchema) {
        let key = (schema.schema.clone(), schema.table.clone(), schema.version);
        if !self.cache.insert(schema) || self.waiting.is_empty() {
            return;
        }
        let mut i = 0;
        while i < self.waiting.len() {
            let w = &self.waiting[i];
            if w.version == key.2 && w.schema == key.0 && w.table == key.1 {
                let w = self.waiting.remove(i).expect("index checked");
                self.stats.released += 1;
                self.settled.push((w, None));
            } else {
                i += 1;
            }
        }
    }

    fn hold(&mut self, schema: String, table: String, version: u64, key: Option<&[u8]>, value: &[u8]) {
        self.stats.held += 1;
        self.waiting.push_back(Waiting {
            schema,
            table,
            version,
            key: key.map(<[u8]>::to_vec),
            value: value.to_vec(),
            origin: None,
        });
        while self.waiting.len() > self.max_pending {
            let w = self.waiting.pop_front().expect("longer than the bound");
            let reason = format!(
                "row of {}.{} waited for schema version {} while more than {} messages were held; dropped the oldest",
                w.schema, w.table, w.version, self.max_pending
            );
            self.expire(w, reason);
        }
    }

    fn expire(&mut self, w: Waiting, reason: String) {
        self.stats.expired += 1;
        self.settled.push((w, Some(Fault::new(0, reason))));
    }
}

/// Puts an image's columns into schema order as they are read: the image starts as one empty
/// slot per schema column, each value read fills its column's slot (JSON lists columns by name,
/// Avro in map order), and the slots no value filled are taken out at the end. (Sorting pushed
/// columns moved each 112-byte column several times per image.)
#[derive(Default)]
pub struct ImageOrder {
    seen: Vec<bool>,
    filled: usize,
}

impl ImageOrder {
    /// Starts an image of a table with `n` columns at the end of `out.columns`.
    pub fn begin(&mut self, n: usize, out: &mut MessageEvents<'_>) -> usize {
        self.seen.clear();
        self.seen.resize(n, false);
        self.filled = 0;
        let start = out.columns.len();
        out.columns.resize_with(start + n, Column::default);
        start
    }

    /// The slot of schema column `index` in the image begun at `start`; None for a duplicate.
    #[inline]
    pub fn slot<'o, 'a>(
        &mut self,
        out: &'o mut MessageEvents<'a>,
        start: usize,
        index: usize,
    ) -> Option<&'o mut Column<'a>> {
        if std::mem::replace(&mut self.seen[index], true) {
            return None;
        }
        self.filled += 1;
        Some(&mut out.columns[start + index])
    }

    /// Ends the image begun at `start`, taking out the slots of columns it did not have.
    pub fn finish(&mut self, out: &mut MessageEvents<'_>, start: usize) -> std::ops::Range<usize> {
        if self.filled < self.seen.len() {
            let mut kept = start;
            for (i, &seen) in self.seen.iter().enumerate() {
                if seen {
                    out.columns.swap(kept, start + i);
                    kept += 1;
                }
            }
            out.columns.truncate(kept);
        }
        start..out.columns.len()
    }
}

/// The DDL categories of `type` (`common.md` §4), in Avro's enum order.
pub const DDL_TYPES: [&str; 8] = crate::ddl_action::CATEGORIES;

pub fn is_ddl_type(kind: &str) -> bool {
    DDL_TYPES.contains(&kind)
}

/// What a row message says besides its images.
pub struct RowHeader<'a> {
    pub kind: EventKind,
    pub commit_ts: u64,
    /// `startTs`: Simple JSON with TiCDC's `simple-include-start-ts`.
    pub start_ts: Option<u64>,
    pub database: Text<'a>,
    pub table: Text<'a>,
    pub table_id: Option<i64>,
    pub schema_version: u64,
    pub claim_check: Option<Text<'a>>,
    pub handle_key_only: bool,
    /// The checksum to verify, if verification is on.
    pub checksum: Option<checksum::RowChecksum>,
}

/// Checks a row message's images and checksum and appends its event.
pub fn finish_row<'a>(
    h: RowHeader<'a>,
    table: &Table,
    data: Option<std::ops::Range<usize>>,
    old: Option<std::ops::Range<usize>>,
    location: &str,
    out: &mut MessageEvents<'a>,
) -> FaultResult<()> {
    let missing = |what: &str| Fault::new(0, format!("{} message without {what}", h.kind.as_str()));
    let (after, before) = match h.kind {
        EventKind::Insert => (Some(data.ok_or_else(|| missing("data"))?), None),
        EventKind::Delete => (None, Some(old.ok_or_else(|| missing("old"))?)),
        _ => (Some(data.ok_or_else(|| missing("data"))?), old),
    };
    // A handle-key-only row is partial: its checksum (of the full row) cannot be checked.
    if let Some(checksum) = h.checksum.as_ref().filter(|_| !h.handle_key_only) {
        let image = |r: &Option<std::ops::Range<usize>>| r.clone().map_or(&[][..], |r| &out.columns[r]);
        verify_row_checksum(checksum, image(&after), image(&before), location, 0)?;
    }
    let mut event = Event::new(h.kind, h.commit_ts);
    event.keys = push_keys(table, after.clone().or(before.clone()).unwrap_or(0..0), out);
    event.schema = Some(h.database);
    event.table = Some(h.table);
    event.table_id = h.table_id;
    event.schema_version = Some(h.schema_version);
    event.handle_key_only = h.handle_key_only;
    event.claim_check = h.claim_check;
    event.start_ts = h.start_ts;
    event.after = after;
    event.before = before;
    out.events.push(event);
    Ok(())
}

/// Pushes the key column names of `table` found in the image `columns` (else the schema's).
pub fn push_keys<'a>(
    table: &Table,
    image: std::ops::Range<usize>,
    out: &mut MessageEvents<'a>,
) -> std::ops::Range<usize> {
    let start = out.keys.len();
    for &k in &table.keys {
        let name = &table.columns[k].name;
        let found: Option<Text<'a>> =
            out.columns[image.clone()].iter().find(|c| c.name == *name).map(|c| c.name.clone());
        out.keys.push(found.unwrap_or_else(|| Cow::Owned(name.clone())));
    }
    start..out.keys.len()
}

/// Checks the row checksums of a message (`common.md` §8): a mismatch, or `corrupted`, fails it.
pub fn verify_row_checksum(
    checksum: &checksum::RowChecksum,
    after: &[Column<'_>],
    before: &[Column<'_>],
    location: &str,
    at: usize,
) -> FaultResult<()> {
    if checksum.corrupted {
        return Err(Fault::new(at, "checksum corrupted (the message says so)"));
    }
    for (image, want, which) in [(after, checksum.current, "current"), (before, checksum.previous, "previous")] {
        if want == 0 {
            continue;
        }
        let got = checksum::row_checksum(image, location)?;
        if got != want {
            return Err(Fault::new(at, format!("checksum corrupted: {which} checksum {want} but the row gives {got}")));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// The codec.

pub struct SimpleCodec {
    encoding: Encoding,
    state: State,
    json: json::JsonDecoder,
    avro: avro::AvroDecoder,
}

impl SimpleCodec {
    pub fn new(encoding: Encoding, options: &CodecOptions) -> SimpleCodec {
        SimpleCodec {
            encoding,
            state: State::new(options),
            json: json::JsonDecoder::default(),
            avro: avro::AvroDecoder::default(),
        }
    }

    pub fn stats(&self) -> PendingStats {
        self.state.stats
    }
}

impl Codec for SimpleCodec {
    fn protocol(&self) -> Protocol {
        self.encoding.protocol()
    }

    fn decode<'a>(&mut self, key: Option<&'a [u8]>, value: &'a [u8], out: &mut MessageEvents<'a>) -> FaultResult<()> {
        let outcome = match self.encoding {
            Encoding::Json => self.json.decode(&mut self.state, value, out)?,
            Encoding::Avro => self.avro.decode(&mut self.state, value, out)?,
        };
        if let Outcome::Wait { schema, table, version } = outcome {
            out.clear();
            self.state.hold(schema, table, version, key, value);
        }
        Ok(())
    }

    fn take_held(&mut self, origin: Origin, out: &mut Vec<Held>) -> bool {
        let held_now =
            self.state.waiting.back_mut().filter(|w| w.origin.is_none()).map(|last| last.origin = Some(origin));
        // A row held by this very message and dropped at once by the bound has no origin yet.
        out.extend(self.state.settled.drain(..).map(|(w, failure)| Held {
            origin: w.origin.unwrap_or(origin),
            key: w.key,
            value: w.value,
            failure,
        }));
        held_now.is_some()
    }

    fn expire_held(&mut self, out: &mut Vec<Held>) {
        while let Some(w) = self.state.waiting.pop_front() {
            let reason = format!("row of {}.{}: schema version {} never arrived", w.schema, w.table, w.version);
            self.state.expire(w, reason);
        }
        out.extend(self.state.settled.drain(..).map(|(w, failure)| Held {
            origin: w.origin.unwrap_or(Origin { batch: 0, message: 0 }),
            key: w.key,
            value: w.value,
            failure,
        }));
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = self.state.stats;
        vec![("held", s.held), ("released", s.released), ("expired", s.expired)]
    }

    fn table_definition(&self, schema: &str, table: &str) -> Option<TableDefinition> {
        self.state.cache.latest(schema, table).map(|t| t.schema.definition())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_come_out_in_schema_order_with_only_the_columns_read() {
        let mut out = MessageEvents::default();
        out.columns.push(Column { name: "earlier".into(), ..Default::default() });
        let mut order = ImageOrder::default();
        let names = ["a", "b", "c", "d"];
        for read in [&[3usize, 1][..], &[2, 0, 3, 1], &[], &[1, 1]] {
            let start = order.begin(names.len(), &mut out);
            let mut duplicate = false;
            for &i in read {
                match order.slot(&mut out, start, i) {
                    Some(c) => c.name = names[i].into(),
                    None => duplicate = true,
                }
            }
            let image = order.finish(&mut out, start);
            let mut want: Vec<usize> = read.to_vec();
            want.sort_unstable();
            want.dedup();
            let got: Vec<&str> = out.columns[image].iter().map(|c| c.name.as_ref()).collect();
            assert_eq!(got, want.iter().map(|&i| names[i]).collect::<Vec<_>>(), "{read:?}");
            assert_eq!(duplicate, read == [1, 1]);
        }
        assert_eq!(out.columns[0].name, "earlier");
    }

    #[test]
    fn go_json_escaping() {
        let mut out = Vec::new();
        write_json_str(&mut out, "a\"\\<>&\n\u{1}\u{8}\u{2028}é");
        assert_eq!(String::from_utf8(out).unwrap(), r#""a\"\\\u003c\u003e\u0026\n\u0001\b\u2028é""#);
    }

    #[test]
    fn type_texts() {
        let dt = |t: &str, len, dec, unsigned| DataType {
            mysql_type: t.into(),
            length: len,
            decimal: dec,
            unsigned,
            ..Default::default()
        };
        assert_eq!(dt("decimal", 10, Some(2), None).type_text(), "decimal(10,2)");
        assert_eq!(dt("bigint", 20, None, Some(true)).type_text(), "bigint unsigned");
        assert_eq!(dt("timestamp", 26, Some(6), None).type_text(), "timestamp(6)");
        assert_eq!(dt("varbinary", 255, None, None).type_text(), "varbinary(255)");
        let e = DataType {
            mysql_type: "enum".into(),
            elements: Some(vec!["a".into(), "b'c".into()]),
            ..Default::default()
        };
        assert_eq!(e.type_text(), "enum('a','b''c')");
    }
}
