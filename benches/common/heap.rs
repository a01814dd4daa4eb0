//! Heap accounting for the memory bench and the allocation test: a global allocator that counts
//! calls and the bytes held, and [`measure`], one decode by a warmed-up decoder as it sees it.
//! Include it (`#[path]`) only where every allocation of the binary should be counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use arrow_array::RecordBatch;
use ticdc_rs::arrow::{BatchDecoder, DecodeOptions, LayoutOptions};
use ticdc_rs::Protocol;

/// The system allocator, counting calls and the bytes held (now and at most).
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static CALLS: AtomicUsize = AtomicUsize::new(0);

fn hold(bytes: usize) {
    let held = HELD.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(held, Relaxed);
    CALLS.fetch_add(1, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        hold(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        hold(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HELD.fetch_sub(layout.size(), Relaxed);
        hold(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What one decode cost in heap.
pub struct Usage {
    /// The Arrow batch returned (`get_array_memory_size`).
    pub output: usize,
    /// The most heap held at once above what was held before the call: the output as it grows
    /// plus everything transient.
    pub peak: usize,
    /// Calls to the allocator (allocations and reallocations).
    pub calls: usize,
    pub rows: usize,
}

/// One decode of `input` by a decoder that has decoded it once already, as in the second and
/// later batches of a Spark task: its schema caches and scratch buffers are already sized.
pub fn measure(protocol: Protocol, layout: LayoutOptions, input: &RecordBatch) -> Usage {
    let options = DecodeOptions { protocol: Some(protocol), layout, ..Default::default() };
    let mut decoder = BatchDecoder::new(options).expect("decoder options");
    drop(decoder.decode(input).expect("the corpus decodes"));
    let before = HELD.load(Relaxed);
    PEAK.store(before, Relaxed);
    CALLS.store(0, Relaxed);
    let out = decoder.decode(input).expect("the corpus decodes");
    Usage {
        output: out.get_array_memory_size(),
        peak: PEAK.load(Relaxed) - before,
        calls: CALLS.load(Relaxed),
        rows: out.num_rows(),
    }
}
