//! UTF-8 checks tuned for the values of change events: mostly short and mostly ASCII.
//!
//! The SIMD validator (`simdutf8`) wins on long text but hands inputs under 64 bytes to the
//! standard library, whose general loop costs more than needed on short values. So short values
//! try the word-wise ASCII test first, which settles most of them, then a table-driven DFA (a
//! branch-free loop, about twice as fast as the standard library on short multi-byte text); long
//! ones go to SIMD; and the standard library runs only to find where invalid input goes wrong.

/// `bytes` as text, or the offset of its first invalid byte.
#[inline]
pub fn check(bytes: &[u8]) -> Result<&str, usize> {
    let valid = if bytes.len() < 64 {
        short_is_ascii(bytes) || dfa_accepts(bytes)
    } else {
        simdutf8::basic::from_utf8(bytes).is_ok()
    };
    if valid {
        // SAFETY: checked just above (ASCII, the DFA, or simdutf8 accepted the bytes).
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

#[cfg(test)]
mod tests {
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
