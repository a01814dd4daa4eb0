//! The floor of reading JSON at all: a SIMD structural scan, as simdjson's first stage does it.
//!
//! Each 64-byte block is classified with SSE2 into bit masks of quotes, backslashes and the six
//! structural characters. Escaped quotes are removed (odd runs of backslashes, carried between
//! blocks), the bytes inside strings found by a prefix XOR of the quotes, and the structurals
//! outside strings counted. The whole document is also checked as UTF-8. That is all a reader
//! must touch: no tokens are interpreted, nothing is unescaped, converted or kept.
//!
//! Elsewhere than on x86_64 the same masks are made a byte at a time.

const EVEN_BITS: u64 = 0x5555_5555_5555_5555;
const ODD_BITS: u64 = !EVEN_BITS;

/// Counts the structural characters outside strings of each document (checked as UTF-8 first);
/// returns their sum.
pub fn structural_scan<'a>(docs: impl Iterator<Item = &'a [u8]>) -> usize {
    docs.map(|doc| {
        simdutf8::basic::from_utf8(doc).expect("UTF-8 JSON");
        scan(doc)
    })
    .sum()
}

fn scan(doc: &[u8]) -> usize {
    let mut state = State::default();
    let mut blocks = doc.chunks_exact(64);
    let mut count = 0;
    for block in &mut blocks {
        count += state.block(masks(block.try_into().expect("64 bytes")));
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut last = [b' '; 64];
        last[..rest.len()].copy_from_slice(rest);
        count += state.block(masks(&last));
    }
    count
}

/// The quote, backslash and structural-character bits of one block.
struct Masks {
    quote: u64,
    backslash: u64,
    structural: u64,
}

#[derive(Default)]
struct State {
    /// The last block ended inside a string (all ones) or not (zero).
    in_string: u64,
    /// The last block ended with an odd run of backslashes.
    odd_backslash: u64,
}

impl State {
    fn block(&mut self, m: Masks) -> usize {
        let quotes = m.quote & !self.escaped(m.backslash);
        let inside = prefix_xor(quotes) ^ self.in_string;
        self.in_string = ((inside as i64) >> 63) as u64;
        (m.structural & !inside).count_ones() as usize
    }

    /// The bytes that follow an odd run of backslashes (simdjson's `find_odd_backslash_sequences`).
    fn escaped(&mut self, backslash: u64) -> u64 {
        let starts = backslash & !(backslash << 1);
        let even_start_mask = EVEN_BITS ^ self.odd_backslash;
        let even_starts = starts & even_start_mask;
        let odd_starts = starts & !even_start_mask;
        let even_carries = backslash.wrapping_add(even_starts);
        let (odd_carries, overflow) = backslash.overflowing_add(odd_starts);
        let odd_carries = odd_carries | self.odd_backslash;
        self.odd_backslash = overflow as u64;
        let even_start_odd_end = even_carries & !backslash & ODD_BITS;
        let odd_start_even_end = odd_carries & !backslash & EVEN_BITS;
        even_start_odd_end | odd_start_even_end
    }
}

/// Each bit the XOR of itself and all below it: ones from an opening quote up to its closing one.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

#[cfg(target_arch = "x86_64")]
fn masks(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    let mut m = Masks { quote: 0, backslash: 0, structural: 0 };
    for (i, lane) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of x86_64, and `lane` is 16 readable bytes (an unaligned load).
        let (quote, backslash, structural) = unsafe {
            let v = _mm_loadu_si128(lane.as_ptr().cast());
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let structural = _mm_or_si128(
                _mm_or_si128(_mm_or_si128(eq(b'{'), eq(b'}')), _mm_or_si128(eq(b'['), eq(b']'))),
                _mm_or_si128(eq(b':'), eq(b',')),
            );
            (
                _mm_movemask_epi8(eq(b'"')) as u16 as u64,
                _mm_movemask_epi8(eq(b'\\')) as u16 as u64,
                _mm_movemask_epi8(structural) as u16 as u64,
            )
        };
        m.quote |= quote << (16 * i);
        m.backslash |= backslash << (16 * i);
        m.structural |= structural << (16 * i);
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
fn masks(block: &[u8; 64]) -> Masks {
    let mut m = Masks { quote: 0, backslash: 0, structural: 0 };
    for (i, &b) in block.iter().enumerate() {
        m.quote |= ((b == b'"') as u64) << i;
        m.backslash |= ((b == b'\\') as u64) << i;
        m.structural |= (matches!(b, b'{' | b'}' | b'[' | b']' | b':' | b',') as u64) << i;
    }
    m
}

/// Checks the scan against [`structurals_by_hand`] on every document, so that the floor is
/// known to do the work it stands for.
/// Also checks it on escapes and strings that cross block boundaries at every offset.
pub fn check_structural_scan<'a>(docs: impl Iterator<Item = &'a [u8]>) {
    let tricky = r#"{"a":"x\"y\\","b":[1,{"c":"\\\"]}"}],"d":"\\"}"#;
    let shifted = (0..130).map(|pad| format!("{}{}", " ".repeat(pad), tricky.repeat(3)).into_bytes());
    for doc in docs.map(<[u8]>::to_vec).chain(shifted) {
        assert_eq!(scan(&doc), structurals_by_hand(&doc), "{}", String::from_utf8_lossy(&doc));
    }
}

/// The same count, a byte at a time.
fn structurals_by_hand(doc: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped) = (0, false, false);
    for &b in doc {
        match b {
            _ if escaped => escaped = false,
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b'{' | b'}' | b'[' | b']' | b':' | b',' if !in_string => count += 1,
            _ => {}
        }
    }
    count
}
