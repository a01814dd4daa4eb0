//! Craft throughput on the shared synthetic stream (`common::changes`: `bench.orders`, a dozen
//! mixed-type columns, 60/30/10 INSERT/UPDATE/DELETE), batched as TiCDC does (16 rows a message):
//!
//! * `craft/codec`: the codec alone, messages into `MessageEvents` (no Arrow);
//! * `craft/envelope`, `craft/typed`: through `BatchDecoder` into the two layouts;
//! * `craft/typed_views`: the typed layout with `utf8_view`/`binary_view` columns, whose values
//!   point into the input (no copy);
//! * `craft/encode`: the decoded events back into messages;
//! * `copy_floor`: the same bytes copied once (the memory-bandwidth floor).
//!
//! Every figure is in bytes of Craft messages per second.
//!
//!     cargo bench --bench craft

mod common;

use std::borrow::Cow;
use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ticdc_rs::arrow::{BatchDecoder, DecodeOptions, LayoutOptions, TableName};
use ticdc_rs::codec::{CodecOptions, EncodeOptions, Record};
use ticdc_rs::event::{Column, ColumnType, Event, EventKind, MessageEvents, Value};
use ticdc_rs::mysql::TypeDescription;
use ticdc_rs::Protocol;

const CHANGES: usize = 10_000;
const SEED: u64 = 42;

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, bytes: u64) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Bytes(bytes));
}

/// The changes as events the way the Arrow reader hands them to an encoder: MySQL text values,
/// bytes for the binary column, types from the type names, `id` as the key.
fn events(changes: &[common::Change]) -> MessageEvents<'static> {
    let types: Vec<ColumnType<'static>> = common::COLUMNS
        .iter()
        .map(|c| {
            let d = TypeDescription::parse(c.mysql_type);
            ColumnType { base: d.base, unsigned: d.unsigned, binary: d.binary, text: None, flags: None }
        })
        .collect();
    let mut out = MessageEvents { keys: vec![Cow::Borrowed("id")], ..Default::default() };
    let image = |columns: &mut Vec<Column<'static>>, row: &[common::Value]| {
        let from = columns.len();
        for ((def, ty), v) in common::COLUMNS.iter().zip(&types).zip(row) {
            let value = match v {
                common::Value::Null => Value::Null,
                common::Value::Text(t) => Value::Text(Cow::Owned(t.clone())),
                common::Value::Bytes(b) => Value::Bytes(Cow::Owned(b.clone())),
            };
            columns.push(Column { name: Cow::Borrowed(def.name), ty: ty.clone(), value, at: 0 });
        }
        Some(from..columns.len())
    };
    for c in changes {
        let kind = match c.op {
            common::Op::Insert => EventKind::Insert,
            common::Op::Update => EventKind::Update,
            common::Op::Delete => EventKind::Delete,
        };
        let mut e = Event::new(kind, c.commit_ts);
        e.schema = Some(Cow::Borrowed(common::SCHEMA));
        e.table = Some(Cow::Borrowed(common::TABLE));
        e.keys = 0..1;
        match kind {
            EventKind::Delete => e.before = image(&mut out.columns, &c.row),
            _ => e.after = image(&mut out.columns, &c.row),
        }
        if let Some(old) = &c.old {
            e.before = image(&mut out.columns, old);
        }
        out.events.push(e);
    }
    out
}

fn encode(events: &MessageEvents<'_>) -> Vec<Record> {
    let mut encoder = Protocol::Craft.encoder(&EncodeOptions::default()).unwrap();
    let mut records = Vec::new();
    for e in &events.events {
        encoder.encode(events, e, &mut records).unwrap();
    }
    encoder.flush(&mut records).unwrap();
    records
}

fn craft(c: &mut Criterion) {
    let changes = common::changes(CHANGES, SEED);
    let messages: Vec<Vec<u8>> = encode(&events(&changes)).into_iter().map(|r| r.value).collect();
    let bytes = common::total_bytes(&messages);
    let batch = common::value_batch(&messages);
    eprintln!(
        "craft: {CHANGES} events in {} messages, {bytes} bytes, {:.0} bytes/event",
        messages.len(),
        bytes as f64 / CHANGES as f64
    );

    // The codec alone.
    let mut codec = Protocol::Craft.codec(&CodecOptions::default()).unwrap();
    let mut group = c.benchmark_group("craft/codec");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| {
        let mut out = MessageEvents::default();
        b.iter(|| {
            let mut n = 0;
            for m in &messages {
                out.clear();
                codec.decode(None, black_box(m), &mut out).unwrap();
                n += out.events.len();
            }
            assert_eq!(n, CHANGES);
        })
    });
    group.finish();

    // Through the batch driver into each layout.
    let typed = |columns| LayoutOptions::Typed {
        table: TableName::parse(&format!("{}.{}", common::SCHEMA, common::TABLE)).unwrap(),
        columns,
    };
    let layouts = [
        ("envelope", LayoutOptions::Envelope),
        ("typed", typed(common::typed_fields())),
        ("typed_views", typed(common::typed_view_fields())),
    ];
    for (name, layout) in layouts {
        let mut dec = BatchDecoder::new(DecodeOptions { protocol: Some(Protocol::Craft), layout, ..Default::default() })
            .expect("decoder options");
        assert_eq!(dec.decode(&batch).expect("the generated messages decode").num_rows(), CHANGES);
        let mut group = c.benchmark_group(format!("craft/{name}"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| b.iter(|| black_box(dec.decode(black_box(&batch)).unwrap())));
        group.finish();
    }

    // Encoding the events a decoder produced (typed values, flags carried).
    let mut decoded = MessageEvents::default();
    for m in &messages {
        codec.decode(None, m, &mut decoded).unwrap();
    }
    assert_eq!(encode(&decoded).iter().map(|r| r.value.len() as u64).sum::<u64>(), bytes);
    let mut group = c.benchmark_group("craft/encode");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| b.iter(|| black_box(encode(black_box(&decoded)))));
    group.finish();

    // The floor: the same bytes copied once into an allocated buffer.
    let src: Vec<u8> = messages.concat();
    let mut dst = vec![0u8; src.len()];
    let mut group = c.benchmark_group("craft/copy_floor");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    group.finish();
}

criterion_group!(benches, craft);
criterion_main!(benches);
