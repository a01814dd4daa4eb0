//! A cap on any one allocation, for the fuzz targets (not the tests).
//!
//! libFuzzer's `-malloc_limit_mb` sees allocations only through a sanitizer's malloc hooks, and
//! the targets are built without a sanitizer for speed (`make fuzz`). This allocator stands in:
//! an input that asks for more than [`LIMIT`] at once (a length field believed, a decompressed
//! size taken from the header) aborts, which libFuzzer reports as a crash and saves the input.
//! Inputs are at most a few KiB, so nothing honest comes near the cap.

use std::alloc::{GlobalAlloc, Layout, System};

/// The largest single allocation allowed: 256 MiB.
pub const LIMIT: usize = 256 << 20;

pub struct Capped;

fn check(size: usize) {
    if size > LIMIT {
        eprintln!("==alloc_cap== allocation of {size} bytes exceeds the {LIMIT} byte cap");
        std::process::abort();
    }
}

// SAFETY: every call is passed on to the system allocator unchanged; the cap only adds a check.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static CAPPED: Capped = Capped;
