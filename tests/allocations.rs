//! The decoders allocate nothing per value or per message once warmed up: a batch's allocations
//! are its Arrow builders growing, which does not scale with the number of events, and the heap
//! at its peak holds little more than the output. Checked for every protocol and layout by
//! decoding the shared bench stream at two sizes under a counting allocator
//! (`benches/common/heap.rs`).

#[path = "../benches/common/mod.rs"]
mod common;
#[path = "../benches/common/heap.rs"]
mod heap;

use ticdc_rs::arrow::LayoutOptions;
use ticdc_rs::Protocol;

#[test]
fn allocations_do_not_grow_with_events() {
    let (small, large) = (1_000, 8_000);
    let typed = || common::typed_layout(common::typed_fields());
    let corpora: Vec<_> = [small, large].iter().map(|&n| common::canal_json_messages(n, 7)).collect();
    for protocol in [Protocol::CanalJson, Protocol::Open, Protocol::Craft, Protocol::SimpleJson, Protocol::SimpleAvro] {
        let inputs: Vec<_> = corpora
            .iter()
            .map(|canal| match protocol {
                Protocol::CanalJson => common::value_batch(canal),
                other => common::reencoded(other, canal),
            })
            .collect();
        for name in ["typed", "envelope"] {
            let calls: Vec<usize> = inputs
                .iter()
                .zip([small, large])
                .map(|(input, events)| {
                    let layout = if name == "typed" { typed() } else { LayoutOptions::Envelope };
                    let usage = heap::measure(protocol, layout, input);
                    assert!(
                        usage.rows >= events,
                        "{} {name}: {} rows for {events} events",
                        protocol.name(),
                        usage.rows
                    );
                    // Nothing transient of any size: the peak is the output as it grows.
                    assert!(
                        usage.peak < usage.output * 3 / 2,
                        "{} {name}: peak heap {} for an output of {}",
                        protocol.name(),
                        usage.peak,
                        usage.output
                    );
                    usage.calls
                })
                .collect();
            // The builders are sized from the input, so the larger batch costs a handful more
            // (about 260 to 340 calls for either size); one allocation per message of 16
            // events would add 437.
            let extra = calls[1].saturating_sub(calls[0]);
            assert!(
                extra < (large - small) / 100,
                "{} {name}: {} allocations for {small} events, {} for {large}",
                protocol.name(),
                calls[0],
                calls[1]
            );
        }
    }
}
