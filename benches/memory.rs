//! Memory: what a decode costs in heap, beside the time the criterion benches measure.
//!
//! The shared stream (`common::changes`, 10,000 events) in every protocol, decoded as one input
//! batch into each layout by a warmed-up decoder, under a counting global allocator
//! (`common/heap.rs`). For that one decode it reports the Arrow output's size, the peak heap
//! above what was held before (the output as it grows plus everything transient), and the calls
//! to the allocator. Builders double as they grow, so a decode that allocates nothing per value
//! or per message makes a few hundred calls per batch, whatever its size.
//!
//!     cargo bench --bench memory

mod common;
#[path = "common/heap.rs"]
mod heap;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use ticdc_rs::arrow::LayoutOptions;
use ticdc_rs::Protocol;

const EVENTS: usize = 10_000;
const SEED: u64 = 42;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// The bytes of the Kafka keys and values (not their buffers' capacity).
fn message_bytes(input: &RecordBatch) -> usize {
    input.columns().iter().map(|c| c.as_binary::<i32>().value_data().len()).sum()
}

fn main() {
    // `cargo test --benches` runs this too: a smaller stream there.
    let events = if std::env::args().any(|a| a == "--bench") { EVENTS } else { 500 };
    let canal = common::canal_json_messages(events, SEED);
    let typed = || common::typed_layout(common::typed_fields());
    println!("{events} events, decoded as one batch by a warmed-up decoder; sizes in MiB");
    println!(
        "{:<12} {:<9} {:>8} {:>8} {:>8} {:>12} {:>12} {:>10}",
        "protocol", "layout", "input", "output", "peak", "peak/output", "allocations", "per event"
    );
    for protocol in [Protocol::CanalJson, Protocol::Open, Protocol::Craft, Protocol::SimpleJson, Protocol::SimpleAvro] {
        let input = match protocol {
            Protocol::CanalJson => common::value_batch(&canal),
            other => common::reencoded(other, &canal),
        };
        for (name, layout) in [("typed", typed()), ("envelope", LayoutOptions::Envelope)] {
            let u = heap::measure(protocol, layout, &input);
            assert!(u.rows >= events, "{protocol:?} {name}: {} rows for {events} events", u.rows);
            println!(
                "{:<12} {:<9} {:>8.1} {:>8.1} {:>8.1} {:>12.2} {:>12} {:>10.4}",
                protocol.name(),
                name,
                mib(message_bytes(&input)),
                mib(u.output),
                mib(u.peak),
                u.peak as f64 / u.output as f64,
                u.calls,
                u.calls as f64 / u.rows as f64
            );
        }
    }
}
