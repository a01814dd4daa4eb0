//! Proofs that the processor runs an instruction set, for the code paths that use one (the JSON
//! string blocks, the UTF-8 check). Detected at run time: the wheels are built for every x86-64,
//! and a machine without the set (or another architecture) runs the scalar code instead.

use std::sync::atomic::{AtomicU8, Ordering};

/// Made only by [`Avx512::detect`], once the CPU has reported AVX-512 F, BW, VBMI and VBMI2:
/// holding one is what makes calling the functions compiled for them sound.
#[derive(Clone, Copy)]
pub(crate) struct Avx512(Detected);

/// Made only by [`Avx2::detect`], once the CPU has reported AVX2 and POPCNT.
#[derive(Clone, Copy)]
pub(crate) struct Avx2(Detected);

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Detected;

/// Never made where there is no x86-64.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
enum Detected {}

impl Avx512 {
    /// The token where the CPU has the instructions. Asked once per process and remembered, so
    /// that short values may ask too.
    #[inline]
    pub(crate) fn detect() -> Option<Avx512> {
        static FOUND: AtomicU8 = AtomicU8::new(UNKNOWN);
        fn ask() -> bool {
            #[cfg(target_arch = "x86_64")]
            return is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vbmi")
                && is_x86_feature_detected!("avx512vbmi2");
            #[cfg(not(target_arch = "x86_64"))]
            false
        }
        remembered(&FOUND, ask).map(Avx512)
    }

    /// Where there is no x86-64 there is no token, so code holding one is unreachable.
    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn unreachable(self) -> ! {
        match self.0 {}
    }
}

impl Avx2 {
    /// The token where the CPU has the instructions, asked once per process.
    #[inline]
    pub(crate) fn detect() -> Option<Avx2> {
        static FOUND: AtomicU8 = AtomicU8::new(UNKNOWN);
        fn ask() -> bool {
            #[cfg(target_arch = "x86_64")]
            return is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt");
            #[cfg(not(target_arch = "x86_64"))]
            false
        }
        remembered(&FOUND, ask).map(Avx2)
    }

    /// Where there is no x86-64 there is no token, so code holding one is unreachable.
    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn unreachable(self) -> ! {
        match self.0 {}
    }
}

const UNKNOWN: u8 = 0;
const PRESENT: u8 = 1;
const ABSENT: u8 = 2;

/// The proof, where `ask` (asked the first time only, its answer kept in `found`) finds the
/// instructions.
#[inline(always)]
fn remembered(found: &AtomicU8, ask: fn() -> bool) -> Option<Detected> {
    let present = match found.load(Ordering::Relaxed) {
        PRESENT => true,
        ABSENT => false,
        _ => ask_once(found, ask),
    };
    #[cfg(target_arch = "x86_64")]
    return present.then_some(Detected);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = present;
        None
    }
}

#[cold]
fn ask_once(found: &AtomicU8, ask: fn() -> bool) -> bool {
    let present = ask();
    found.store(if present { PRESENT } else { ABSENT }, Ordering::Relaxed);
    present
}
