//! Open protocol throughput on the shared synthetic stream (`common::changes`: ~1 KB events, a
//! dozen mixed-type columns, 60/30/10 INSERT/UPDATE/DELETE), batched 16 and 64 events per
//! Kafka message as tiflow's encoder batches them.
//!
//!     cargo bench --bench open
//!     cargo bench --bench open -- open/decode        # one group
//!
//! Groups: `open/codec` decodes into the event model only (the codec alone), `open/typed` and
//! `open/envelope` go through `BatchDecoder` into Arrow, `open/encode` writes the Kafka
//! messages from events, `open/json_floor` reads the JSON items with serde_json while building
//! nothing, and `open/simd_floor` scans them as simdjson's first stage does (the floor of
//! reading JSON at all). Throughput is in bytes of Kafka key + value.

mod common;

use std::hint::black_box;
use std::time::Duration;

use arrow_array::{BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ticdc_rs::arrow::{BatchDecoder, DecodeOptions, LayoutOptions};
use ticdc_rs::codec::{CodecOptions, EncodeOptions, Record};
use ticdc_rs::event::{Column, ColumnType, Event, EventKind, MessageEvents, Value};
use ticdc_rs::schema::mysql::TypeDescription;
use ticdc_rs::Protocol;

const EVENTS: usize = 10_000;
const SEED: u64 = 42;

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, bytes: u64) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Bytes(bytes));
}

/// The shared changes as events, values in MySQL's text form (as the Arrow reader gives them).
fn events(changes: &[common::Change]) -> MessageEvents<'static> {
    let mut out = MessageEvents::default();
    out.keys.push("id".into());
    let types: Vec<ColumnType<'static>> = common::COLUMNS
        .iter()
        .map(|c| {
            let d = TypeDescription::parse(c.mysql_type);
            let mut ty = ColumnType::new(d.base);
            ty.unsigned = d.unsigned;
            ty.binary = d.binary;
            ty.flags = Some(ty.ticdc_flags(c.name == "id"));
            ty
        })
        .collect();
    let image = |out: &mut MessageEvents<'static>, row: &[common::Value]| {
        let start = out.columns.len();
        for ((c, ty), v) in common::COLUMNS.iter().zip(&types).zip(row) {
            let value = match v {
                common::Value::Null => Value::Null,
                common::Value::Text(t) => Value::Text(t.clone().into()),
                common::Value::Bytes(b) => Value::Bytes(b.clone().into()),
            };
            out.columns.push(Column { name: c.name.into(), ty: ty.clone(), value, at: 0 });
        }
        Some(start..out.columns.len())
    };
    for change in changes {
        let kind = match change.op {
            common::Op::Insert => EventKind::Insert,
            common::Op::Update => EventKind::Update,
            common::Op::Delete => EventKind::Delete,
        };
        let mut e = Event::new(kind, change.commit_ts);
        e.schema = Some(common::SCHEMA.into());
        e.table = Some(common::TABLE.into());
        e.keys = 0..1;
        match kind {
            EventKind::Delete => e.before = image(&mut out, &change.row),
            _ => {
                e.after = image(&mut out, &change.row);
                if let Some(old) = &change.old {
                    e.before = image(&mut out, old);
                }
            }
        }
        out.events.push(e);
    }
    out
}

fn encode(options: &EncodeOptions, events: &MessageEvents<'_>) -> Vec<Record> {
    let mut encoder = Protocol::Open.encoder(options).unwrap();
    let mut records = Vec::with_capacity(events.events.len() / options.max_batch_size + 1);
    for e in &events.events {
        encoder.encode(events, e, &mut records).unwrap();
    }
    encoder.flush(&mut records).unwrap();
    records
}

fn batch(records: &[Record]) -> RecordBatch {
    let keys = BinaryArray::from_iter_values(records.iter().map(|r| r.key.as_deref().unwrap()));
    let values = BinaryArray::from_iter_values(records.iter().map(|r| r.value.as_slice()));
    let schema =
        Schema::new(vec![Field::new("key", DataType::Binary, true), Field::new("value", DataType::Binary, true)]);
    RecordBatch::try_new(std::sync::Arc::new(schema), vec![std::sync::Arc::new(keys), std::sync::Arc::new(values)])
        .unwrap()
}

/// This thread's CPU time in ns (Linux), so figures on a loaded machine mean something.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Prints the throughput of `f` over `bytes` per second of CPU time (best of five passes).
fn cpu_throughput(name: &str, bytes: u64, mut f: impl FnMut()) {
    let best = (0..5)
        .filter_map(|_| {
            let start = thread_cpu_ns()?;
            f();
            Some(thread_cpu_ns()? - start)
        })
        .min();
    if let Some(ns) = best {
        eprintln!("{name}: {:.0} MB/s of CPU time", bytes as f64 * 1e3 / ns as f64);
    }
}

/// The JSON items of an Open key (after its 8-byte version) or value: each is an 8-byte
/// big-endian length and that many bytes.
fn open_items(items_start: usize, message: &[u8]) -> Vec<&[u8]> {
    let mut items = Vec::new();
    let mut rest = &message[items_start..];
    while let Some((len, tail)) = rest.split_first_chunk::<8>() {
        let (item, tail) = tail.split_at(u64::from_be_bytes(*len) as usize);
        items.push(item);
        rest = tail;
    }
    items
}

fn open(c: &mut Criterion) {
    let changes = common::changes(EVENTS, SEED);
    let events = events(&changes);
    for per_message in [16, 64] {
        let options = EncodeOptions { max_batch_size: per_message, ..EncodeOptions::default() };
        let records = encode(&options, &events);
        let bytes: u64 = records.iter().map(|r| (r.key.as_ref().unwrap().len() + r.value.len()) as u64).sum();
        eprintln!(
            "open x{per_message}: {EVENTS} events in {} messages, {bytes} bytes, {:.0} bytes/event",
            records.len(),
            bytes as f64 / EVENTS as f64
        );

        let mut codec = Protocol::Open.codec(&CodecOptions::default()).unwrap();
        let mut scratch = MessageEvents::default();
        cpu_throughput(&format!("open/codec/x{per_message}"), bytes, || {
            for r in &records {
                scratch.clear();
                codec.decode(r.key.as_deref(), &r.value, &mut scratch).unwrap();
            }
        });
        cpu_throughput(&format!("open/encode/x{per_message}"), bytes, || {
            black_box(encode(&options, &events));
        });

        let mut group = c.benchmark_group(format!("open/codec/x{per_message}"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| {
            b.iter(|| {
                let mut n = 0;
                for r in &records {
                    scratch.clear();
                    codec.decode(r.key.as_deref(), &r.value, &mut scratch).unwrap();
                    n += scratch.events.len();
                }
                assert_eq!(black_box(n), EVENTS);
            })
        });
        group.finish();

        // Reading the JSON of every key and value item and building nothing (see
        // `common::skim_json`).
        let items: Vec<&[u8]> = records
            .iter()
            .flat_map(|r| [(8, r.key.as_deref().unwrap()), (0, &r.value[..])])
            .flat_map(|(start, message)| open_items(start, message))
            .collect();
        let mut group = c.benchmark_group(format!("open/json_floor/x{per_message}"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| {
            b.iter(|| assert_eq!(common::skim_json(items.iter().map(|i| black_box(*i))), 2 * EVENTS))
        });
        group.finish();

        common::structural::check_structural_scan(items.iter().copied());
        let mut group = c.benchmark_group(format!("open/simd_floor/x{per_message}"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| {
            b.iter(|| black_box(common::structural::structural_scan(items.iter().map(|i| black_box(*i)))))
        });
        group.finish();

        let input = batch(&records);
        let typed = common::typed_layout(common::typed_fields());
        for (name, layout) in [("typed", typed), ("envelope", LayoutOptions::Envelope)] {
            let mut decoder =
                BatchDecoder::new(DecodeOptions { protocol: Some(Protocol::Open), layout, ..Default::default() })
                    .unwrap();
            assert_eq!(decoder.decode(&input).unwrap().num_rows(), EVENTS, "{name}: one row per event");
            cpu_throughput(&format!("open/{name}/x{per_message}"), bytes, || {
                black_box(decoder.decode(&input).unwrap());
            });
            let mut group = c.benchmark_group(format!("open/{name}/x{per_message}"));
            configure(&mut group, bytes);
            group.bench_function("10k", |b| b.iter(|| black_box(decoder.decode(black_box(&input)).unwrap())));
            group.finish();
        }

        let mut group = c.benchmark_group(format!("open/encode/x{per_message}"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| b.iter(|| black_box(encode(&options, black_box(&events)))));
        group.finish();
    }
}

criterion_group!(benches, open);
criterion_main!(benches);
