//! Decode throughput: batches of 10,000 Canal-JSON messages (~1 KB each, a dozen mixed-type
//! columns, 60/30/10 INSERT/UPDATE/DELETE) into the envelope and typed layouts, against three
//! floors: a SIMD structural scan of the same messages (`canal_json/simd_floor`, the floor of
//! reading JSON at all), serde_json reading them while building nothing (`canal_json/json_floor`)
//! and a plain copy of the same bytes (`copy_floor`).
//!
//!     cargo bench --bench decode
//!     cargo bench --bench decode -- canal_json/typed     # one group
//!
//! `TICDC_BENCH_DUMP=/tmp/msgs.ndjson` also writes the generated messages there, one per line.

mod common;

use std::hint::black_box;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ticdc_rs::arrow::{BatchDecoder, DecodeOptions, LayoutOptions};
use ticdc_rs::Protocol;

const MESSAGES: usize = 10_000;
const SEED: u64 = 42;

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, bytes: u64) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Bytes(bytes));
}

fn decoder(layout: LayoutOptions) -> BatchDecoder {
    BatchDecoder::new(DecodeOptions { protocol: Some(Protocol::CanalJson), layout, ..Default::default() })
        .expect("decoder options")
}

/// Decodes once outside the timing and checks every message became one row.
fn check(name: &str, decoder: &mut BatchDecoder, batch: &RecordBatch) {
    let out = decoder.decode(batch).expect("the generated messages decode");
    assert_eq!(out.num_rows(), batch.num_rows(), "{name}: one row per message");
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    assert!(ops.iter().all(|op| matches!(op, Some("INSERT" | "UPDATE" | "DELETE"))), "{name}: only DML");
}

fn canal_json(c: &mut Criterion) {
    let messages = common::canal_json_messages(MESSAGES, SEED);
    let bytes = common::total_bytes(&messages);
    let batch = common::value_batch(&messages);
    if let Some(path) = std::env::var_os("TICDC_BENCH_DUMP") {
        // One message per line (messages hold no raw newline), for eyeballing or other tools.
        std::fs::write(&path, messages.join(&b'\n')).expect("dump the messages");
    }
    eprintln!("canal-json: {MESSAGES} messages, {bytes} bytes, {:.0} bytes/message", bytes as f64 / MESSAGES as f64);

    for (name, layout) in
        [("envelope", LayoutOptions::Envelope), ("typed", common::typed_layout(common::typed_fields()))]
    {
        let mut dec = decoder(layout);
        check(name, &mut dec, &batch);
        let mut group = c.benchmark_group(format!("canal_json/{name}"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| b.iter(|| black_box(dec.decode(black_box(&batch)).unwrap())));
        group.finish();
    }

    // The same messages spread over eight tables, as one Kafka partition carries them.
    let tables = common::spread_over_tables(&messages, 8);
    let tables_batch = common::value_batch(&tables);
    let mut dec = decoder(LayoutOptions::Envelope);
    check("envelope of 8 tables", &mut dec, &tables_batch);
    let mut group = c.benchmark_group("canal_json/envelope_8_tables");
    configure(&mut group, common::total_bytes(&tables));
    group.bench_function("10k", |b| b.iter(|| black_box(dec.decode(black_box(&tables_batch)).unwrap())));
    group.finish();

    // Reading the JSON and building nothing (see `common::skim_json`).
    let mut group = c.benchmark_group("canal_json/json_floor");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| {
        b.iter(|| assert_eq!(common::skim_json(messages.iter().map(|m| black_box(m.as_slice()))), MESSAGES))
    });
    group.finish();

    // The floor of reading JSON at all (see `common::structural`).
    common::structural::check_structural_scan(messages.iter().map(Vec::as_slice));
    let mut group = c.benchmark_group("canal_json/simd_floor");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| {
        b.iter(|| black_box(common::structural::structural_scan(messages.iter().map(|m| black_box(m.as_slice())))))
    });
    group.finish();

    // The floor: the same bytes copied once into an allocated buffer.
    let values = batch.column(0).as_binary::<i32>();
    let src = &values.value_data()[values.value_offsets()[0] as usize..];
    let mut group = c.benchmark_group("copy_floor");
    configure(&mut group, bytes);
    common::bench_copy(&mut group, src);
    group.finish();
}

criterion_group!(benches, canal_json);
criterion_main!(benches);
