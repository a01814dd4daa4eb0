//! Simple protocol throughput, JSON and Avro: 10,000 row messages (~1 KB events, a dozen
//! mixed-type columns, 60/30/10 INSERT/UPDATE/DELETE, from `common::changes`) after one BOOTSTRAP.
//!
//! * `<flavour>/codec`: the codec alone, message by message into the event model;
//! * `<flavour>/typed`: through `BatchDecoder` into the typed Arrow layout;
//! * `<flavour>/encode`: events to Kafka values;
//! * `simple_json/json_floor`: serde_json reading the same messages while building nothing;
//! * `simple_json/simd_floor`: a SIMD structural scan of them (the floor of reading JSON at all);
//! * `simple_avro/copy_floor`: the Avro messages copied once (the memory-bandwidth floor, as for
//!   Craft: a binary format's values need no scan to be found).
//!
//!     cargo bench --bench simple

mod common;

use std::borrow::Cow;
use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ticdc_rs::arrow::{BatchDecoder, DecodeOptions};
use ticdc_rs::codec::simple::{ColumnSchema, DataType, DefaultValue, IndexSchema, Table, TableSchema};
use ticdc_rs::codec::{CodecOptions, EncodeOptions};
use ticdc_rs::event::{Column, Event, EventKind, MessageEvents, Value};
use ticdc_rs::Protocol;

const MESSAGES: usize = 10_000;
const SEED: u64 = 42;

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, bytes: u64) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Bytes(bytes));
}

/// `bench.orders` as TiDB would describe it.
fn table_schema() -> TableSchema {
    let col = |name: &str, t: &str, length: i64, decimal: Option<i32>, unsigned: bool| {
        let text = matches!(t, "varchar" | "text");
        ColumnSchema {
            name: name.into(),
            data_type: DataType {
                mysql_type: t.into(),
                charset: if text { "utf8mb4" } else { "binary" }.into(),
                collate: if text { "utf8mb4_bin" } else { "binary" }.into(),
                length,
                decimal,
                elements: None,
                unsigned: unsigned.then_some(true),
                zerofill: None,
            },
            nullable: name != "id",
            default: DefaultValue::Null,
        }
    };
    TableSchema {
        schema: common::SCHEMA.into(),
        table: common::TABLE.into(),
        table_id: 101,
        version: 449_543_016_434_794_514,
        columns: vec![
            col("id", "int", 11, None, false),
            col("user_id", "bigint", 20, None, true),
            col("name", "varchar", 255, None, false),
            col("amount", "decimal", 12, Some(2), false),
            col("created_at", "datetime", 19, None, false),
            col("updated_at", "timestamp", 26, Some(6), false),
            col("birthday", "date", 10, None, false),
            col("score", "double", 22, None, false),
            col("status", "tinyint", 4, None, false),
            col("note", "text", 65535, None, false),
            col("payload", "varbinary", 255, None, false),
            col("attrs", "json", 0, None, false),
        ],
        indexes: vec![IndexSchema {
            name: "PRIMARY".into(),
            unique: true,
            primary: true,
            nullable: false,
            columns: vec!["id".into()],
        }],
    }
}

fn value(v: &common::Value) -> Value<'static> {
    match v {
        common::Value::Null => Value::Null,
        common::Value::Text(t) => Value::Text(Cow::Owned(t.clone())),
        common::Value::Bytes(b) => Value::Bytes(Cow::Owned(b.clone())),
    }
}

/// The changes as Simple events, one `MessageEvents` each.
fn events(table: &Table) -> Vec<MessageEvents<'static>> {
    common::changes(MESSAGES, SEED)
        .iter()
        .map(|c| {
            let mut m = MessageEvents::default();
            let image = |row: &[common::Value], m: &mut MessageEvents<'static>| {
                let start = m.columns.len();
                for (col, v) in table.columns.iter().zip(row) {
                    m.columns.push(Column {
                        name: Cow::Owned(col.name.clone()),
                        ty: col.ty.clone(),
                        value: value(v),
                        at: 0,
                    });
                }
                start..m.columns.len()
            };
            let kind = match c.op {
                common::Op::Insert => EventKind::Insert,
                common::Op::Update => EventKind::Update,
                common::Op::Delete => EventKind::Delete,
            };
            let mut e = Event::new(kind, c.commit_ts);
            e.schema = Some(common::SCHEMA.into());
            e.table = Some(common::TABLE.into());
            e.table_id = Some(table.schema.table_id);
            e.schema_version = Some(table.schema.version);
            match kind {
                EventKind::Delete => e.before = Some(image(&c.row, &mut m)),
                _ => e.after = Some(image(&c.row, &mut m)),
            }
            if let Some(old) = &c.old {
                e.before = Some(image(old, &mut m));
            }
            m.keys.push("id".into());
            e.keys = 0..1;
            m.events.push(e);
            m
        })
        .collect()
}

fn simple(c: &mut Criterion) {
    let table = Table::new(table_schema());
    let events = events(&table);
    for (flavour, protocol) in [("simple_json", Protocol::SimpleJson), ("simple_avro", Protocol::SimpleAvro)] {
        let options = EncodeOptions { build_ts: Some(1_700_000_000_456), ..Default::default() };
        let encode = || {
            let mut encoder = protocol.encoder(&options).unwrap();
            let mut records = Vec::with_capacity(MESSAGES + 1);
            for m in &events {
                encoder.encode(m, &m.events[0], &mut records).unwrap();
            }
            records
        };
        let records = encode();
        let values: Vec<Vec<u8>> = records.into_iter().map(|r| r.value).collect();
        let rows = &values[1..];
        let bytes = common::total_bytes(rows);
        eprintln!("{flavour}: {MESSAGES} messages, {bytes} bytes, {:.0} bytes/message", bytes as f64 / MESSAGES as f64);

        // The codec alone, primed with the BOOTSTRAP.
        let mut codec = protocol.codec(&CodecOptions::default()).unwrap();
        let mut scratch = MessageEvents::default();
        codec.decode(None, &values[0], &mut scratch).unwrap();
        let mut group = c.benchmark_group(format!("{flavour}/codec"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| {
            b.iter(|| {
                let mut events = MessageEvents::default();
                for v in rows {
                    events.clear();
                    codec.decode(None, black_box(v), &mut events).unwrap();
                }
                black_box(events.columns.len())
            })
        });
        group.finish();

        if protocol == Protocol::SimpleJson {
            // Reading the JSON and building nothing (see `common::skim_json`).
            let mut group = c.benchmark_group("simple_json/json_floor");
            configure(&mut group, bytes);
            group.bench_function("10k", |b| {
                b.iter(|| assert_eq!(common::skim_json(rows.iter().map(|v| black_box(v.as_slice()))), MESSAGES))
            });
            group.finish();

            common::structural::check_structural_scan(rows.iter().map(Vec::as_slice));
            let mut group = c.benchmark_group("simple_json/simd_floor");
            configure(&mut group, bytes);
            group.bench_function("10k", |b| {
                b.iter(|| black_box(common::structural::structural_scan(rows.iter().map(|v| black_box(v.as_slice())))))
            });
            group.finish();
        }

        if protocol == Protocol::SimpleAvro {
            let mut group = c.benchmark_group("simple_avro/copy_floor");
            configure(&mut group, bytes);
            common::bench_copy(&mut group, &rows.concat());
            group.finish();
        }

        // Typed Arrow through the driver; the BOOTSTRAP is decoded once, outside the timing.
        let layout = common::typed_layout(common::typed_fields());
        let mut decoder =
            BatchDecoder::new(DecodeOptions { protocol: Some(protocol), layout, ..Default::default() }).unwrap();
        decoder.decode(&common::value_batch(&values[..1])).unwrap();
        let batch = common::value_batch(rows);
        let out = decoder.decode(&batch).unwrap();
        assert_eq!(out.num_rows(), MESSAGES, "{flavour}: one row per message");
        let mut group = c.benchmark_group(format!("{flavour}/typed"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| b.iter(|| black_box(decoder.decode(black_box(&batch)).unwrap())));
        group.finish();

        let mut group = c.benchmark_group(format!("{flavour}/encode"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| b.iter(|| black_box(encode())));
        group.finish();
    }
}

criterion_group!(benches, simple);
criterion_main!(benches);
