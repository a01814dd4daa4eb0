//! UTF-8 checks tuned for the values of change events: mostly short and mostly ASCII.
//!
//! Where the processor has AVX-512, a value is checked 64 bytes at a time by the lookup method
//! of Keiser and Lemire ("Validating UTF-8 in less than one instruction per byte", 2021): each
//! byte is classified, with the byte before it, by three 16-entry tables whose entries are bit
//! sets of the errors that pair could be, and the bytes two and three back say where a
//! continuation byte must be. A value under 64 bytes is one masked load; a whole message a
//! loop. Elsewhere the SIMD validator (`simdutf8`) wins on long text but hands inputs under 64
//! bytes to the standard library, whose general loop costs more than needed on short values. So
//! short values try the word-wise ASCII test first, which settles most of them, then a
//! table-driven DFA (a branch-free loop, about twice as fast as the standard library on short
//! multi-byte text); long ones go to SIMD. The standard library runs only to find where invalid
//! input goes wrong.

use crate::simd::Avx512;

/// `bytes` as text, or the offset of its first invalid byte.
#[inline]
pub fn check(bytes: &[u8]) -> Result<&str, usize> {
    let valid = match Avx512::detect() {
        Some(simd) => simd.is_utf8(bytes),
        None if bytes.len() < 64 => short_is_ascii(bytes) || dfa_accepts(bytes),
        None => simdutf8::basic::from_utf8(bytes).is_ok(),
    };
    if valid {
        // SAFETY: checked just above (the AVX-512 check, ASCII, the DFA, or simdutf8 accepted
        // the bytes).
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    Err(std::str::from_utf8(bytes).err().map_or(bytes.len(), |e| e.valid_up_to()))
}

/// Whether `bytes` (under 64 long) is ASCII, read as 8-byte words (4-byte words under 8), the
/// last one overlapping the one before it: the standard library's test aligns its reads first,
/// which short values pay for. The values of a row are mostly a few to a few dozen bytes.
#[inline(always)]
fn short_is_ascii(bytes: &[u8]) -> bool {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    let word =
        |at: usize| bytes.get(at..).and_then(|b| b.first_chunk::<8>()).map_or(HIGH_BITS, |w| u64::from_le_bytes(*w));
    let half =
        |at: usize| bytes.get(at..).and_then(|b| b.first_chunk::<4>()).map_or(u32::MAX, |w| u32::from_le_bytes(*w));
    match n {
        0..4 => bytes.iter().fold(0, |acc, &b| acc | b) < 0x80,
        4..8 => (half(0) | half(n - 4)) & HIGH_BITS as u32 == 0,
        _ => {
            let mut seen = word(n - 8);
            for at in (0..n - 8).step_by(8) {
                seen |= word(at);
            }
            seen & HIGH_BITS == 0
        }
    }
}

/// `bytes` as a `String`, or the bytes back when they are not UTF-8.
pub fn into_string(bytes: Vec<u8>) -> Result<String, Vec<u8>> {
    if check(&bytes).is_err() {
        return Err(bytes);
    }
    // SAFETY: `check` accepted the bytes.
    Ok(unsafe { String::from_utf8_unchecked(bytes) })
}

/// DFA states, each stored as its bit offset (6 bits per state) in the transition words.
const ACCEPT: u64 = 0;
const REJECT: u64 = 1;
/// Expecting 1, 2 or 3 more continuation bytes (80..BF).
const TAIL1: u64 = 2;
const TAIL2: u64 = 3;
const TAIL3: u64 = 4;
/// After E0 (A0..BF next, no overlong), ED (80..9F, no surrogates), F0 (90..BF), F4 (80..8F).
const AFTER_E0: u64 = 5;
const AFTER_ED: u64 = 6;
const AFTER_F0: u64 = 7;
const AFTER_F4: u64 = 8;

/// `TRANSITIONS[byte]` holds, at bits `6 * state`, the bit offset of the next state.
static TRANSITIONS: [u64; 256] = transitions();

const fn next_state(state: u64, byte: u8) -> u64 {
    match (state, byte) {
        (ACCEPT, 0x00..=0x7f) => ACCEPT,
        (ACCEPT, 0xc2..=0xdf) => TAIL1,
        (ACCEPT, 0xe0) => AFTER_E0,
        (ACCEPT, 0xe1..=0xec | 0xee..=0xef) => TAIL2,
        (ACCEPT, 0xed) => AFTER_ED,
        (ACCEPT, 0xf0) => AFTER_F0,
        (ACCEPT, 0xf1..=0xf3) => TAIL3,
        (ACCEPT, 0xf4) => AFTER_F4,
        (TAIL1, 0x80..=0xbf) => ACCEPT,
        (TAIL2, 0x80..=0xbf) | (AFTER_E0, 0xa0..=0xbf) | (AFTER_ED, 0x80..=0x9f) => TAIL1,
        (TAIL3, 0x80..=0xbf) | (AFTER_F0, 0x90..=0xbf) | (AFTER_F4, 0x80..=0x8f) => TAIL2,
        _ => REJECT,
    }
}

const fn transitions() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut state = 0;
        while state <= AFTER_F4 {
            table[byte] |= (6 * next_state(state, byte as u8)) << (6 * state);
            state += 1;
        }
        byte += 1;
    }
    table
}

fn dfa_accepts(bytes: &[u8]) -> bool {
    let mut at = 6 * ACCEPT;
    for &b in bytes {
        at = (TRANSITIONS[b as usize] >> at) & 63;
    }
    at == 6 * ACCEPT
}

impl Avx512 {
    /// Whether `bytes` is UTF-8.
    #[inline]
    fn is_utf8(self, bytes: &[u8]) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: an `Avx512` is only made once the CPU has reported every feature
            // `is_utf8` is compiled for.
            unsafe { x86::is_utf8(bytes) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = bytes;
            self.unreachable()
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The errors a pair of bytes may show, one bit each; the tables below give, for the first
    /// byte's high and low nibble and the second byte's high nibble, the errors each allows.
    /// A pair is in error when all three agree on one.
    const TOO_SHORT: u8 = 1 << 0; // a lead byte, then not a continuation
    const TOO_LONG: u8 = 1 << 1; // ASCII, then a continuation
    const OVERLONG_3: u8 = 1 << 2; // E0, then 80..9F
    const TOO_LARGE: u8 = 1 << 3; // above U+10FFFF: F4 then 90..BF, or F5..FF
    const SURROGATE: u8 = 1 << 4; // ED, then A0..BF
    const OVERLONG_2: u8 = 1 << 5; // C0 or C1
    const TOO_LARGE_1000: u8 = 1 << 6; // F5..FF, then 80..8F
    const OVERLONG_4: u8 = 1 << 6; // F0, then 80..8F
    const TWO_CONTS: u8 = 1 << 7; // a continuation after a continuation
    /// The errors that depend on the first byte's high nibble alone.
    const CARRY: u8 = TOO_SHORT | TOO_LONG | TWO_CONTS;

    const FIRST_HIGH: [u8; 16] = [
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TOO_SHORT | OVERLONG_2,
        TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE,
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
    ];

    const FIRST_LOW: [u8; 16] = {
        let above = CARRY | TOO_LARGE | TOO_LARGE_1000;
        [
            CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
            CARRY | OVERLONG_2,
            CARRY,
            CARRY,
            CARRY | TOO_LARGE,
            above,
            above,
            above,
            above,
            above,
            above,
            above,
            above,
            above | SURROGATE,
            above,
            above,
        ]
    };

    const SECOND_HIGH: [u8; 16] = {
        let cont = TOO_LONG | OVERLONG_2 | TWO_CONTS;
        [
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
            cont | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
            cont | OVERLONG_3 | TOO_LARGE,
            cont | SURROGATE | TOO_LARGE,
            cont | SURROGATE | TOO_LARGE,
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
            TOO_SHORT,
        ]
    };

    /// For each byte `k`, the index of the byte `n` before it in the 128 bytes of the block
    /// before and this one (as `vpermt2b` reads them).
    const fn back(n: u8) -> [u8; 64] {
        let mut index = [0; 64];
        let mut k = 0;
        while k < 64 {
            index[k] = k as u8 + 64 - n;
            k += 1;
        }
        index
    }

    static BACK: [[u8; 64]; 3] = [back(1), back(2), back(3)];

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn splat(byte: u8) -> __m512i {
        _mm512_set1_epi8(byte as i8)
    }

    /// A 16-entry table in each of the four lanes `vpshufb` looks up within.
    const fn lanes(entries: [u8; 16]) -> [u8; 64] {
        let mut lanes = [0; 64];
        let mut k = 0;
        while k < 64 {
            lanes[k] = entries[k % 16];
            k += 1;
        }
        lanes
    }

    static TABLES: [[u8; 64]; 3] = [lanes(FIRST_HIGH), lanes(FIRST_LOW), lanes(SECOND_HIGH)];

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn vector(bytes: &[u8; 64]) -> __m512i {
        // SAFETY: 64 bytes, read unaligned.
        unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
    }

    /// The tables, in registers for the length of one check.
    struct Tables {
        first_high: __m512i,
        first_low: __m512i,
        second_high: __m512i,
        back: [__m512i; 3],
        low_nibble: __m512i,
    }

    impl Tables {
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw")]
        fn new() -> Tables {
            Tables {
                first_high: vector(&TABLES[0]),
                first_low: vector(&TABLES[1]),
                second_high: vector(&TABLES[2]),
                back: [vector(&BACK[0]), vector(&BACK[1]), vector(&BACK[2])],
                low_nibble: splat(0x0f),
            }
        }

        /// The errors of `block`, whose bytes before it are `before`'s: nonzero bytes where a
        /// character is malformed or a continuation out of place.
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
        fn errors(&self, before: __m512i, block: __m512i) -> __m512i {
            let prev1 = _mm512_permutex2var_epi8(before, self.back[0], block);
            let prev2 = _mm512_permutex2var_epi8(before, self.back[1], block);
            let prev3 = _mm512_permutex2var_epi8(before, self.back[2], block);
            let high = |v| _mm512_and_si512(_mm512_srli_epi16::<4>(v), self.low_nibble);
            let first_high = _mm512_shuffle_epi8(self.first_high, high(prev1));
            let first_low = _mm512_shuffle_epi8(self.first_low, _mm512_and_si512(prev1, self.low_nibble));
            let second_high = _mm512_shuffle_epi8(self.second_high, high(block));
            // The errors all three tables allow (0x80: `a & b & c`).
            let pair = _mm512_ternarylogic_epi32::<0x80>(first_high, first_low, second_high);
            // The bytes two and three after a three- or four-byte lead must be continuations.
            let third = _mm512_subs_epu8(prev2, splat(0xe0 - 0x80));
            let fourth = _mm512_subs_epu8(prev3, splat(0xf0 - 0x80));
            let must_continue = _mm512_and_si512(_mm512_or_si512(third, fourth), splat(0x80));
            _mm512_xor_si512(must_continue, pair)
        }
    }

    /// See [`super::Avx512::is_utf8`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn is_utf8(bytes: &[u8]) -> bool {
        let (blocks, rest) = bytes.as_chunks::<64>();
        let last = if rest.is_empty() {
            _mm512_setzero_si512()
        } else {
            // SAFETY: the mask selects `rest` only; masked-off bytes are not read (and are 0).
            unsafe { _mm512_maskz_loadu_epi8((1 << rest.len()) - 1, rest.as_ptr().cast()) }
        };
        if bytes.len() < 64 && _mm512_movepi8_mask(last) == 0 {
            return true;
        }
        let tables = Tables::new();
        let mut before = _mm512_setzero_si512();
        let mut errors = _mm512_setzero_si512();
        for block in blocks {
            let block = vector(block);
            errors = _mm512_or_si512(errors, tables.errors(before, block));
            before = block;
        }
        // The zeros after the text's end (a whole block of them when it ends with a block)
        // show a character the text ends inside of.
        errors = _mm512_or_si512(errors, tables.errors(before, last));
        _mm512_test_epi8_mask(errors, errors) == 0
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy;

    use super::*;

    #[test]
    fn short_and_long_text_in_and_out() {
        assert_eq!(check(b"plain"), Ok("plain"));
        assert_eq!(check("é✓".as_bytes()), Ok("é✓"));
        assert_eq!(check(b"ab\xffc"), Err(2));
        let long = "x".repeat(100) + "é";
        assert_eq!(check(long.as_bytes()), Ok(long.as_str()));
        let mut bad = long.into_bytes();
        bad[70] = 0xC3;
        assert_eq!(check(&bad), Err(70));
    }

    #[test]
    fn the_short_ascii_test_sees_every_high_byte() {
        for n in 0..64usize {
            let ascii: Vec<u8> = (0..n).map(|i| b' ' + (i % 90) as u8).collect();
            assert!(short_is_ascii(&ascii), "length {n}");
            for i in 0..n {
                for high in [0x80u8, 0xc3, 0xff] {
                    let mut bytes = ascii.clone();
                    bytes[i] = high;
                    assert!(!short_is_ascii(&bytes), "length {n}, byte {i}");
                }
            }
        }
    }

    /// Whether `bytes` is UTF-8 by every check this machine can run, all agreeing.
    fn checks_agree(bytes: &[u8]) -> bool {
        let valid = std::str::from_utf8(bytes).is_ok();
        if let Some(simd) = Avx512::detect() {
            assert_eq!(simd.is_utf8(bytes), valid, "AVX-512: {bytes:x?}");
        }
        assert_eq!(dfa_accepts(bytes), valid, "DFA: {bytes:x?}");
        valid
    }

    #[test]
    fn every_short_sequence_is_judged_alike_at_every_place_in_a_block() {
        // Every sequence of one or two bytes, and every three- and four-byte one from the
        // bytes that matter, ending at each place around a block's end, after ASCII or after
        // a two-byte character, and followed by nothing, a continuation, or ASCII short of a
        // block and past one.
        let interesting: Vec<u8> =
            [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed]
                .into_iter()
                .chain([0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf7, 0xf8, 0xff])
                .collect();
        let mut sequences: Vec<Vec<u8>> = (0..=255u8).map(|a| vec![a]).collect();
        sequences.extend((0..=255u8).flat_map(|a| (0..=255u8).map(move |b| vec![a, b])));
        for &a in &interesting {
            for &b in &interesting {
                for &c in &interesting {
                    sequences.push(vec![a, b, c]);
                    sequences.extend(interesting.iter().map(|&d| vec![a, b, c, d]));
                }
            }
        }
        let mut buf = Vec::new();
        for end in [1, 2, 3, 4, 30, 60, 61, 62, 63, 64, 65, 66, 67, 127, 128, 129] {
            for prefix in [&b"a"[..], "é".as_bytes()] {
                for suffix in [&b""[..], b"\x80", b"z", &[b'z'; 70]] {
                    for seq in sequences.iter().filter(|s| s.len() <= end) {
                        buf.clear();
                        let fill = end - seq.len();
                        buf.extend(prefix.iter().cycle().take(fill - fill % prefix.len()));
                        buf.resize(fill, b'x');
                        buf.extend_from_slice(seq);
                        buf.extend_from_slice(suffix);
                        checks_agree(&buf);
                    }
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn text_of_every_length_is_judged_as_the_standard_library_does(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    4 => proptest::string::string_regex(".{0,8}").unwrap().prop_map(String::into_bytes),
                    2 => proptest::collection::vec(0x20u8..0x7f, 0..80),
                    1 => proptest::collection::vec(proptest::num::u8::ANY, 1..4),
                    1 => proptest::string::string_regex(".").unwrap()
                        .prop_map(|c| c.as_bytes()[..(c.len() - 1).max(1)].to_vec()),
                ],
                0..40,
            ),
        ) {
            let bytes = pieces.concat();
            let valid = checks_agree(&bytes);
            proptest::prop_assert_eq!(check(&bytes).is_ok(), valid);
        }
    }

    #[test]
    fn the_dfa_agrees_with_the_standard_library() {
        // Every sequence of up to three bytes, and every four-byte one from the lead bytes that
        // can start one, around a multi-byte prefix.
        let mut buf = Vec::new();
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                for c in 0..=255u8 {
                    for seq in [&[a][..], &[a, b], &[a, b, c]] {
                        buf.clear();
                        buf.extend_from_slice("é".as_bytes());
                        buf.extend_from_slice(seq);
                        assert_eq!(dfa_accepts(&buf), std::str::from_utf8(&buf).is_ok(), "{buf:x?}");
                    }
                }
            }
        }
        for a in 0xf0..=0xf4u8 {
            for b in 0x80..=0xbfu8 {
                for d in [0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xff] {
                    let seq = [a, b, 0x80, d];
                    assert_eq!(dfa_accepts(&seq), std::str::from_utf8(&seq).is_ok(), "{seq:x?}");
                }
            }
        }
        for text in
            ["Zoë Müller #1", "Łukasz Wiśniewski", "山田 太郎", "Ahmed Ali 😀", "\u{10FFFF}", "\u{D7FF}\u{E000}"]
        {
            assert!(dfa_accepts(text.as_bytes()), "{text}");
            assert_eq!(check(text.as_bytes()), Ok(text));
        }
    }
}
