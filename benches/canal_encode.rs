//! Canal-JSON encode throughput: the 10,000 generated change events of `common` (~1 KB each, a
//! dozen mixed-type columns, 60/30/10 INSERT/UPDATE/DELETE), decoded once outside the timing,
//! encoded back to Kafka values; bytes/s counts the encoded output.
//!
//!     cargo bench --bench canal_encode

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ticdc_rs::codec::{CodecOptions, EncodeOptions, Record};
use ticdc_rs::event::MessageEvents;
use ticdc_rs::{Compression, Protocol};

const MESSAGES: usize = 10_000;
const SEED: u64 = 42;

fn encode_all(options: &EncodeOptions, decoded: &[MessageEvents<'_>], out: &mut Vec<Record>) {
    let mut encoder = Protocol::CanalJson.encoder(options).expect("canal-json encoder");
    out.clear();
    for events in decoded {
        for e in &events.events {
            encoder.encode(events, e, out).expect("the generated events encode");
        }
    }
    encoder.flush(out).unwrap();
}

fn canal_encode(c: &mut Criterion) {
    let messages = common::canal_json_messages(MESSAGES, SEED);
    let mut codec = Protocol::CanalJson.codec(&CodecOptions::default()).unwrap();
    let decoded: Vec<MessageEvents<'_>> = messages
        .iter()
        .map(|m| {
            let mut events = MessageEvents::default();
            codec.decode(None, m, &mut events).expect("the generated messages decode");
            events
        })
        .collect();

    for (name, compression) in [("plain", Compression::None), ("lz4", Compression::Lz4)] {
        let options = EncodeOptions { enable_tidb_extension: true, compression, ..Default::default() };
        let mut out = Vec::with_capacity(MESSAGES);
        encode_all(&options, &decoded, &mut out);
        assert_eq!(out.len(), MESSAGES, "one record per event");
        // Throughput in the uncompressed JSON written, the same measure for both groups.
        let plain = EncodeOptions { compression: Compression::None, ..options.clone() };
        let mut sized = Vec::new();
        encode_all(&plain, &decoded, &mut sized);
        let bytes: u64 = sized.iter().map(|r| r.value.len() as u64).sum();
        eprintln!("canal-json encode/{name}: {MESSAGES} events, {bytes} JSON bytes");

        let mut group = c.benchmark_group(format!("canal_json_encode/{name}"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(5));
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function("10k", |b| {
            b.iter(|| {
                encode_all(&options, black_box(&decoded), &mut out);
                black_box(&out);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, canal_encode);
criterion_main!(benches);
