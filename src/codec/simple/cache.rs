//! What the Simple decoders know between messages: every schema version seen, each resolved
//! into what its rows need ([`Table`]), and the rows that arrived before their schema.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;

use crate::codec::{CodecOptions, HeldMessage, MessageOrigin};
use crate::columns::TableColumns;
use crate::error::Fault;
use crate::event::{same_name, Column, ColumnType, MessageEvents, Text};
use crate::json::KeyOrder;
use crate::schema::mysql::MySqlType;

use super::schema::TableSchema;

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
    /// The plan for reading this version's rows into the codec's row sink: the sink's field of
    /// each column, resolved on first use (a codec feeds one sink).
    sink_fields: OnceLock<Vec<Option<usize>>>,
    /// The keys of this version's JSON images as the last one listed them, each with its column
    /// (see [`KeyOrder`]); behind a lock, which costs little once per image, since a codec is
    /// `Sync`.
    pub json_keys: Mutex<KeyOrder<Option<usize>>>,
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
        Table { schema, columns, keys, alpha, by_name, sink_fields: OnceLock::new(), json_keys: Default::default() }
    }

    /// The field of `rows` that takes each column (see [`Table::sink_fields`]).
    pub fn fields_in(&self, rows: &TableColumns) -> &[Option<usize>] {
        self.sink_fields.get_or_init(|| self.columns.iter().map(|c| rows.field(&c.name)).collect())
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
    origin: Option<MessageOrigin>,
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
    pub fn new(options: &CodecOptions) -> State {
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

    pub fn hold(&mut self, schema: String, table: String, version: u64, key: Option<&[u8]>, value: &[u8]) {
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

    /// Hands the driver the rows whose wait ended, and tags a row this message just held with
    /// `origin`; returns whether the message at `origin` is now held.
    pub fn take_settled(&mut self, origin: MessageOrigin, out: &mut Vec<HeldMessage>) -> bool {
        let held_now = self.waiting.back_mut().filter(|w| w.origin.is_none()).map(|last| last.origin = Some(origin));
        // A row held by this very message and dropped at once by the bound has no origin yet.
        self.hand_over_settled(origin, out);
        held_now.is_some()
    }

    /// End of stream: every row still waiting, as a failure.
    pub fn expire_all(&mut self, out: &mut Vec<HeldMessage>) {
        while let Some(w) = self.waiting.pop_front() {
            let reason = format!("row of {}.{}: schema version {} never arrived", w.schema, w.table, w.version);
            self.expire(w, reason);
        }
        self.hand_over_settled(MessageOrigin { batch: 0, message: 0 }, out);
    }

    /// Moves the rows whose wait ended into `out`; a row not yet tagged with its origin gets
    /// `untagged`.
    fn hand_over_settled(&mut self, untagged: MessageOrigin, out: &mut Vec<HeldMessage>) {
        out.extend(self.settled.drain(..).map(|(w, failure)| HeldMessage {
            origin: w.origin.unwrap_or(untagged),
            key: w.key,
            value: w.value,
            failure,
        }));
    }

    pub fn stats(&self) -> PendingStats {
        self.stats
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

    /// Starts an image of a table with `n` columns whose values go straight to a row sink: only
    /// which columns it has had is kept.
    pub fn begin_marks(&mut self, n: usize) {
        self.seen.clear();
        self.seen.resize(n, false);
    }

    /// Marks schema column `index` as read in the image begun by [`Self::begin_marks`]; false
    /// for a duplicate.
    #[inline]
    pub fn mark(&mut self, index: usize) -> bool {
        !std::mem::replace(&mut self.seen[index], true)
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
}
