//! Synthetic change streams for the benchmarks, shared by every protocol's encoder.
//!
//! [`changes`] makes a deterministic stream of row changes to one table (`bench.orders`, a dozen
//! mixed-type columns: 60% INSERT, 30% UPDATE with a full old image, 10% DELETE) as MySQL text
//! values, independent of any wire format; [`canal_json`] writes each change as one TiCDC
//! Canal-JSON Kafka value (TiDB extension on, so `_tidb.commitTs` is present). Another protocol
//! only needs its own writer over the same [`Change`]s. [`typed_fields`] is the table's schema
//! in the typed layout, per the contract's type mapping.

#![allow(dead_code)]

pub mod structural;

use std::fmt::Write;
use std::hint::black_box;
use std::sync::Arc;

use arrow_array::{BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;
use ticdc_rs::codec::{CodecOptions, EncodeOptions};
use ticdc_rs::event::MessageEvents;
use ticdc_rs::Protocol;
use ticdc_rs::{LayoutOptions, TableName};

pub const SCHEMA: &str = "bench";
pub const TABLE: &str = "orders";

/// One column of the table: name, MySQL type (as Canal-JSON's `mysqlType` writes it, default
/// mode), and its typed-layout Arrow type.
pub struct ColumnDef {
    pub name: &'static str,
    pub mysql_type: &'static str,
}

pub const COLUMNS: [ColumnDef; 12] = [
    ColumnDef { name: "id", mysql_type: "int" },
    ColumnDef { name: "user_id", mysql_type: "bigint unsigned" },
    ColumnDef { name: "name", mysql_type: "varchar" },
    ColumnDef { name: "amount", mysql_type: "decimal" },
    ColumnDef { name: "created_at", mysql_type: "datetime" },
    ColumnDef { name: "updated_at", mysql_type: "timestamp" },
    ColumnDef { name: "birthday", mysql_type: "date" },
    ColumnDef { name: "score", mysql_type: "double" },
    ColumnDef { name: "status", mysql_type: "tinyint" },
    ColumnDef { name: "note", mysql_type: "text" },
    ColumnDef { name: "payload", mysql_type: "varbinary" },
    ColumnDef { name: "attrs", mysql_type: "json" },
];

/// The table in the typed layout: `decimal(12,2)` for `amount`, `timestamp(6)` for `updated_at`.
pub fn typed_fields() -> Fields {
    let ts = |tz: Option<&str>| DataType::Timestamp(TimeUnit::Microsecond, tz.map(Into::into));
    Fields::from(vec![
        Field::new("id", DataType::Int32, true),
        Field::new("user_id", DataType::Decimal128(20, 0), true),
        Field::new("name", DataType::Utf8, true),
        Field::new("amount", DataType::Decimal128(12, 2), true),
        Field::new("created_at", ts(None), true),
        Field::new("updated_at", ts(Some("UTC")), true),
        Field::new("birthday", DataType::Date32, true),
        Field::new("score", DataType::Float64, true),
        Field::new("status", DataType::Int8, true),
        Field::new("note", DataType::Utf8, true),
        Field::new("payload", DataType::Binary, true),
        Field::new("attrs", DataType::Utf8, true),
    ])
}

/// The typed layout of the table with these fields ([`typed_fields`] or [`typed_view_fields`]).
pub fn typed_layout(fields: Fields) -> LayoutOptions {
    let table = TableName::parse(&format!("{SCHEMA}.{TABLE}")).expect("a table name");
    LayoutOptions::Typed { table, schema: Arc::new(Schema::new(fields)) }
}

/// [`typed_fields`] with strings and bytes as views, which point into the input where the
/// protocol carries values as they are (Craft), so text reaches Polars without a copy.
pub fn typed_view_fields() -> Fields {
    typed_fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 => f.as_ref().clone().with_data_type(DataType::Utf8View),
            DataType::Binary => f.as_ref().clone().with_data_type(DataType::BinaryView),
            _ => f.as_ref().clone(),
        })
        .collect()
}

/// A column value as TiDB holds it: MySQL's text form, or raw bytes for binary columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Text(String),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Insert,
    Update,
    Delete,
}

/// One row change: `row` is the new row (INSERT/UPDATE) or the deleted row (DELETE); `old` the
/// full old row of an UPDATE.
#[derive(Debug, Clone)]
pub struct Change {
    pub op: Op,
    pub commit_ts: u64,
    pub row: Vec<Value>,
    pub old: Option<Vec<Value>>,
}

/// splitmix64: small, deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (hi exclusive; the slight modulo bias does not matter here).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.range(0, 100) < percent
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() as u64) as usize]
    }
}

const NAMES: [&str; 14] = [
    "John Smith",
    "Mary Johnson",
    "Zoë Müller",
    "José García",
    "François Dupont",
    "Łukasz Wiśniewski",
    "Søren Kierkegaard",
    "山田 太郎",
    "王小明",
    "Иван Петров",
    "Ελένη Παπαδοπούλου",
    "김민준",
    "Ahmed Ali 😀",
    "Priya Patel",
];

const WORDS: [&str; 24] = [
    "order", "shipped", "customer", "requested", "express", "delivery", "warehouse", "Berlin", "café", "naïve",
    "résumé", "東京", "返品", "\"gift\"", "wrap", "<b>urgent</b>", "&", "invoice", "paid", "pending", "refund",
    "coupon", "size:XL", "color=blue",
];

const TAGS: [&str; 6] = ["vip", "new", "promo", "b2b", "retail", "ü-tag"];

fn datetime(rng: &mut Rng, micros: bool) -> String {
    let mut s = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        rng.range(2015, 2026),
        rng.range(1, 13),
        rng.range(1, 29),
        rng.range(0, 24),
        rng.range(0, 60),
        rng.range(0, 60)
    );
    if micros {
        let _ = write!(s, ".{:06}", rng.range(0, 1_000_000));
    }
    s
}

fn amount(rng: &mut Rng) -> String {
    let cents = rng.range(0, 100_000_000_000) as i64 - 2_000_000_000; // decimal(12,2), mostly positive
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{sign}{}.{:02}", c / 100, c % 100)
}

fn note(rng: &mut Rng) -> Value {
    if rng.chance(5) {
        return Value::Null;
    }
    let target = rng.range(20, 120) as usize;
    let mut s = String::with_capacity(target + 16);
    while s.len() < target {
        if !s.is_empty() {
            s.push(if rng.chance(3) { '\n' } else { ' ' });
        }
        s.push_str(rng.pick(&WORDS));
    }
    Value::Text(s)
}

fn payload(rng: &mut Rng) -> Value {
    if rng.chance(5) {
        return Value::Null;
    }
    let n = rng.range(8, 33) as usize;
    Value::Bytes((0..n).map(|_| rng.next_u64() as u8).collect())
}

fn attrs(rng: &mut Rng) -> Value {
    let tags: Vec<String> = (0..rng.range(0, 4)).map(|_| format!("\"{}\"", rng.pick(&TAGS))).collect();
    Value::Text(format!(
        "{{\"channel\": \"{}\", \"items\": {}, \"tags\": [{}], \"gift\": {}}}",
        rng.pick(&["web", "app", "store"]),
        rng.range(1, 20),
        tags.join(", "),
        rng.chance(20)
    ))
}

fn row(rng: &mut Rng, id: u32) -> Vec<Value> {
    let user_id = if rng.chance(5) { rng.range(1 << 63, u64::MAX) } else { rng.range(1, 1 << 40) };
    let score = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 1000.0;
    vec![
        Value::Text(id.to_string()),
        Value::Text(user_id.to_string()),
        Value::Text(format!("{} #{}", rng.pick(&NAMES), rng.range(0, 10_000))),
        Value::Text(amount(rng)),
        Value::Text(datetime(rng, false)),
        Value::Text(datetime(rng, true)),
        Value::Text(format!("{:04}-{:02}-{:02}", rng.range(1950, 2010), rng.range(1, 13), rng.range(1, 29))),
        Value::Text(format!("{score}")),
        Value::Text(rng.range(0, 6).to_string()),
        note(rng),
        payload(rng),
        attrs(rng),
    ]
}

/// `n` changes to `bench.orders`, deterministic in `seed`.
pub fn changes(n: usize, seed: u64) -> Vec<Change> {
    let mut rng = Rng::new(seed);
    let mut commit_ts: u64 = 449_543_017_000_000_000;
    (0..n)
        .map(|i| {
            commit_ts += rng.range(1, 1 << 20);
            let id = rng.range(1, 10_000_000) as u32;
            let roll = rng.range(0, 100);
            let mut new = row(&mut rng, id);
            let (op, old) = match roll {
                0..60 => (Op::Insert, None),
                60..90 => {
                    // The old row: same key and most columns, a few changed.
                    let mut old = new.clone();
                    old[3] = Value::Text(amount(&mut rng));
                    old[5] = Value::Text(datetime(&mut rng, true));
                    old[8] = Value::Text(rng.range(0, 6).to_string());
                    if rng.chance(30) {
                        old[9] = note(&mut rng);
                    }
                    (Op::Update, Some(old))
                }
                _ => (Op::Delete, None),
            };
            if i == 0 {
                new[2] = Value::Text("Zoë Müller #0".into());
            }
            Change { op, commit_ts, row: new, old }
        })
        .collect()
}

/// Appends `s` as a JSON string the way TiCDC's easyjson writer does (HTML-safe).
pub fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Java SQL type code (Canal-JSON `sqlType`) of column `i` holding `value`.
fn sql_type(i: usize, value: &Value) -> i32 {
    match COLUMNS[i].mysql_type {
        "int" => 4,
        "bigint unsigned" => match value {
            Value::Text(t) if t.parse::<u64>().is_ok_and(|v| v > i64::MAX as u64) => 3,
            _ => -5,
        },
        "varchar" | "json" => 12,
        "decimal" => 3,
        "datetime" | "timestamp" => 93,
        "date" => 91,
        "double" => 8,
        "tinyint" => -6,
        "text" => 2005,
        "varbinary" => 2004,
        other => unreachable!("{other}"),
    }
}

fn canal_image(out: &mut String, row: &[Value]) {
    out.push_str("[{");
    for (i, (c, v)) in COLUMNS.iter().zip(row).enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(out, c.name);
        out.push(':');
        match v {
            Value::Null => out.push_str("null"),
            Value::Text(t) => json_string(out, t),
            // ISO-8859-1: each byte becomes the code point of the same number.
            Value::Bytes(b) => json_string(out, &b.iter().map(|&b| b as char).collect::<String>()),
        }
    }
    out.push_str("}]");
}

/// One Canal-JSON Kafka value for `change`, field order as tiflow's DML writer.
pub fn canal_json_message(change: &Change) -> Vec<u8> {
    let mut out = String::with_capacity(1536);
    let kind = match change.op {
        Op::Insert => "INSERT",
        Op::Update => "UPDATE",
        Op::Delete => "DELETE",
    };
    let es = change.commit_ts >> 18;
    let _ = write!(
        out,
        "{{\"id\":0,\"database\":\"{SCHEMA}\",\"table\":\"{TABLE}\",\"pkNames\":[\"id\"],\"isDdl\":false,\
         \"type\":\"{kind}\",\"es\":{es},\"ts\":{},\"sql\":\"\",\"sqlType\":{{",
        es + 3
    );
    // For a DELETE the codes follow the deleted row, else the new row.
    for (i, c) in COLUMNS.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{}\":{}", c.name, sql_type(i, &change.row[i]));
    }
    out.push_str("},\"mysqlType\":{");
    for (i, c) in COLUMNS.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{}\":\"{}\"", c.name, c.mysql_type);
    }
    out.push_str("},\"old\":");
    match &change.old {
        Some(old) => canal_image(&mut out, old),
        None => out.push_str("null"),
    }
    out.push_str(",\"data\":");
    canal_image(&mut out, &change.row);
    let _ = write!(out, ",\"_tidb\":{{\"commitTs\":{}}}}}", change.commit_ts);
    out.into_bytes()
}

/// `n` Canal-JSON messages.
pub fn canal_json_messages(n: usize, seed: u64) -> Vec<Vec<u8>> {
    changes(n, seed).iter().map(canal_json_message).collect()
}

/// The messages spread over `tables` tables, as one Kafka partition carries them: message `i`
/// is of table `orders_{i % tables}`, whose `status` column is named `status_{i % tables}` (so
/// each table has its own `mysqlType` object, as tables do).
pub fn spread_over_tables(messages: &[Vec<u8>], tables: usize) -> Vec<Vec<u8>> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let m = std::str::from_utf8(m).expect("UTF-8 messages");
            let k = i % tables;
            let m = m.replace(&format!("\"table\":\"{TABLE}\""), &format!("\"table\":\"{TABLE}_{k}\""));
            m.replace("\"status\"", &format!("\"status_{k}\"")).into_bytes()
        })
        .collect()
}

/// A batch with one `value` binary column holding `messages`, as a Kafka source gives it.
pub fn value_batch(messages: &[Vec<u8>]) -> RecordBatch {
    let values = BinaryArray::from_iter_values(messages.iter().map(|m| m.as_slice()));
    let schema = Schema::new(vec![Field::new("value", DataType::Binary, true)]);
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(values)]).expect("one binary column")
}

/// The Canal-JSON messages decoded and written again by this crate's encoder for `protocol`
/// (TiCDC's defaults, with Simple's BOOTSTRAP first), as a batch of Kafka `key`/`value` columns:
/// the same events in every protocol, as `benches/peers.py` makes its other corpora.
pub fn reencoded(protocol: Protocol, messages: &[Vec<u8>]) -> RecordBatch {
    let mut codec = Protocol::CanalJson.codec(&CodecOptions::default()).expect("canal-json codec");
    let options = EncodeOptions { send_bootstrap: true, build_ts: Some(0), ..EncodeOptions::default() };
    let mut encoder = protocol.encoder(&options).expect("an encoder for every protocol");
    let (mut events, mut records) = (MessageEvents::default(), Vec::new());
    for m in messages {
        events.clear();
        codec.decode(None, m, &mut events).expect("the generated messages decode");
        for e in &events.events {
            encoder.encode(&events, e, &mut records).expect("the decoded events encode");
        }
    }
    encoder.flush(&mut records).expect("the last batch encodes");
    let keys = BinaryArray::from_iter(records.iter().map(|r| r.key.as_deref()));
    let values = BinaryArray::from_iter_values(records.iter().map(|r| r.value.as_slice()));
    let schema =
        Schema::new(vec![Field::new("key", DataType::Binary, true), Field::new("value", DataType::Binary, true)]);
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), Arc::new(values)]).expect("two binary columns")
}

/// Total bytes of the messages (the throughput denominator).
pub fn total_bytes(messages: &[Vec<u8>]) -> u64 {
    messages.iter().map(|m| m.len() as u64).sum()
}

/// Reads each JSON document with serde_json into `IgnoredAny`: every byte scanned and checked as
/// JSON, nothing unescaped, parsed into a number or kept. The JSON protocols' benches time it
/// as the floor of reading their text at all (`*/json_floor`): on these messages it ran faster
/// than sonic-rs and simd-json building a tree. Returns the number of documents.
pub fn skim_json<'a>(docs: impl Iterator<Item = &'a [u8]>) -> usize {
    let mut n = 0;
    for doc in docs {
        serde_json::from_slice::<serde::de::IgnoredAny>(doc).expect("a JSON document");
        n += 1;
    }
    n
}

/// The floor of any decoder of `src`: its bytes copied once into an allocated buffer (memory
/// bandwidth), as `10k` in `group`.
pub fn bench_copy(group: &mut BenchmarkGroup<'_, WallTime>, src: &[u8]) {
    let mut dst = vec![0u8; src.len()];
    group.bench_function("10k", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(src));
            black_box(&dst);
        })
    });
}
