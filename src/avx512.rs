//! Proof that the processor runs AVX-512, for the code paths that use it (the JSON string
//! blocks, the UTF-8 check). Detected at run time: the wheels are built for every x86-64, and
//! those without AVX-512 (or other architectures) run the scalar code instead.

/// Made only by [`Avx512::detect`], once the CPU has reported AVX-512 F, BW, VBMI and VBMI2:
/// holding one is what makes calling the functions compiled for them sound.
#[derive(Clone, Copy)]
pub(crate) struct Avx512(Detected);

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
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn detect() -> Option<Avx512> {
        use std::sync::atomic::{AtomicU8, Ordering};
        const UNKNOWN: u8 = 0;
        const PRESENT: u8 = 1;
        const ABSENT: u8 = 2;
        static FOUND: AtomicU8 = AtomicU8::new(UNKNOWN);
        match FOUND.load(Ordering::Relaxed) {
            PRESENT => Some(Avx512(Detected)),
            ABSENT => None,
            _ => {
                let found = Self::ask();
                FOUND.store(if found.is_some() { PRESENT } else { ABSENT }, Ordering::Relaxed);
                found
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[cold]
    fn ask() -> Option<Avx512> {
        (is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vbmi")
            && is_x86_feature_detected!("avx512vbmi2"))
        .then_some(Avx512(Detected))
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn detect() -> Option<Avx512> {
        None
    }

    /// Where there is no x86-64 there is no token, so code holding one is unreachable.
    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn unreachable(self) -> ! {
        match self.0 {}
    }
}
