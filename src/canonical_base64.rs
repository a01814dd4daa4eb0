//! Standard base64 in the one form TiCDC writes (padded, the unused bits of the last symbol zero),
//! decoded a quantum at a time.
//!
//! Open writes TEXT and BLOB values in base64 and Simple-JSON its binary values: a short text per
//! value, where the `base64` crate's engine spends more on setting up each call (length checks,
//! its chunked fast loop, the tail) than on the symbols. Canonical text is read here in one loop;
//! anything else (missing padding, stray symbols, nonzero unused bits) is left to the codec's
//! engine, which decides by its protocol's rules what it accepts and what its error says.

/// Appends the bytes of canonical base64 `text` to `out` and returns true; returns false, with
/// `out` as it was, for any text that is not in the canonical form.
#[inline]
pub(crate) fn decode_into(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Some((body, last)) = text.split_last_chunk::<4>() else { return text.is_empty() };
    if body.len() % 4 != 0 {
        return false;
    }
    let start = out.len();
    out.resize(start + body.len() / 4 * 3, 0);
    let blocks = decode_blocks(body, &mut out[start..]);
    let (body, decoded) = (&body[blocks * 16..], &mut out[start + blocks * 12..]);
    for (quantum, bytes) in body.chunks_exact(4).zip(decoded.chunks_exact_mut(3)) {
        let bits = sextets(quantum[0], quantum[1], quantum[2], quantum[3]);
        if bits > 0xff_ffff {
            out.truncate(start);
            return false;
        }
        bytes.copy_from_slice(&bits.to_be_bytes()[1..]);
    }
    let (bits, kept) = match *last {
        [a, b, b'=', b'='] => (sextets(a, b, b'A', b'A'), 1),
        [a, b, c, b'='] => (sextets(a, b, c, b'A'), 2),
        [a, b, c, d] => (sextets(a, b, c, d), 3),
    };
    // The bytes kept are those the symbols fill; the bits below them must be zero.
    if bits > 0xff_ffff || bits & (0xff_ffff >> (8 * kept)) != 0 {
        out.truncate(start);
        return false;
    }
    out.extend_from_slice(&bits.to_be_bytes()[1..1 + kept]);
    true
}

/// Decodes the leading sixteen-symbol blocks of `body` into `out` (twelve bytes each) and returns
/// how many it decoded, stopping before the first block that holds a byte that is not a symbol
/// (which the quantum loop then finds).
#[inline(always)]
fn decode_blocks(body: &[u8], out: &mut [u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if body.len() >= 16 && std::is_x86_feature_detected!("ssse3") {
        // SAFETY: the CPU has just been found to support SSSE3.
        return unsafe { ssse3::decode_blocks(body, out) };
    }
    let _ = (body, out);
    0
}

/// Sixteen symbols at a time with SSSE3's byte shuffle, after Wojciech Muła and Daniel Lemire,
/// "Faster Base64 Encoding and Decoding Using AVX2 Instructions" (2018): each symbol's two
/// nibbles index two tables whose common bits flag a byte outside the alphabet, its high nibble
/// picks the offset that turns it into its six bits, and two multiply-adds pack the sextets.
#[cfg(target_arch = "x86_64")]
mod ssse3 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "ssse3")]
    pub(super) fn decode_blocks(body: &[u8], out: &mut [u8]) -> usize {
        let low_nibble_bits = _mm_setr_epi8(
            0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b, 0x1b, 0x1a,
        );
        let high_nibble_bits = _mm_setr_epi8(
            0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        );
        let offsets = _mm_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
        let nibble = _mm_set1_epi8(0x0f);
        let slash = _mm_set1_epi8(b'/' as i8);
        let byte_order = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
        let mut blocks = 0;
        for (symbols, bytes) in body.chunks_exact(16).zip(out.chunks_exact_mut(12)) {
            // SAFETY: `symbols` holds the sixteen bytes read, and the load needs no alignment.
            let v = unsafe { _mm_loadu_si128(symbols.as_ptr().cast()) };
            let high = _mm_and_si128(_mm_srli_epi32::<4>(v), nibble);
            let flags = _mm_and_si128(
                _mm_shuffle_epi8(low_nibble_bits, _mm_and_si128(v, nibble)),
                _mm_shuffle_epi8(high_nibble_bits, high),
            );
            if _mm_movemask_epi8(_mm_cmpeq_epi8(flags, _mm_setzero_si128())) != 0xffff {
                break;
            }
            let offset = _mm_shuffle_epi8(offsets, _mm_add_epi8(_mm_cmpeq_epi8(v, slash), high));
            let sextets = _mm_add_epi8(v, offset);
            let pairs = _mm_maddubs_epi16(sextets, _mm_set1_epi32(0x0140_0140));
            let triples = _mm_madd_epi16(pairs, _mm_set1_epi32(0x0001_1000));
            let mut packed = [0u8; 16];
            // SAFETY: `packed` has room for the sixteen bytes stored, which need no alignment.
            unsafe { _mm_storeu_si128(packed.as_mut_ptr().cast(), _mm_shuffle_epi8(triples, byte_order)) };
            bytes.copy_from_slice(&packed[..12]);
            blocks += 1;
        }
        blocks
    }
}

/// The 24 bits of four symbols, or a value above 24 bits when one of them is not a symbol.
#[inline(always)]
fn sextets(a: u8, b: u8, c: u8, d: u8) -> u32 {
    let value = |symbol: u8| u32::from(SYMBOL_VALUES[symbol as usize]);
    let (a, b, c, d) = (value(a), value(b), value(c), value(d));
    (a | b | c | d) >> 6 << 24 | a << 18 | b << 12 | c << 6 | d
}

/// Each symbol's six bits; 0xFF (whose top bits mark it) for any other byte.
const SYMBOL_VALUES: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 64 {
        table[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
    use base64::engine::DecodePaddingMode;
    use base64::Engine;
    use proptest::prelude::*;

    use super::*;

    /// The strictest engine: it accepts exactly the canonical form.
    const CANONICAL: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
    );

    fn decoded(text: &[u8]) -> Option<Vec<u8>> {
        let mut out = b"kept".to_vec();
        let ok = decode_into(text, &mut out);
        assert_eq!(&out[..4], b"kept", "the bytes before are kept");
        if ok {
            Some(out.split_off(4))
        } else {
            assert_eq!(out, b"kept", "a refused text leaves nothing behind");
            None
        }
    }

    #[test]
    fn encoded_bytes_of_every_length_decode() {
        let bytes: Vec<u8> = (0..=255).collect();
        for n in 0..bytes.len() {
            let text = STANDARD.encode(&bytes[..n]);
            assert_eq!(decoded(text.as_bytes()).as_deref(), Some(&bytes[..n]), "{text}");
        }
    }

    #[test]
    fn other_forms_are_refused() {
        for text in
            ["A", "AB", "ABC", "AB=", "A===", "====", "AB=A", "AB==AAAA", "AR==", "ABD=", "AB C", "AB\nC", "AB-_"]
        {
            assert_eq!(decoded(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn long_texts_decode_and_a_stray_byte_anywhere_refuses_them() {
        let bytes: Vec<u8> = (0..90u8).map(|i| i.wrapping_mul(97) ^ 0x5a).collect();
        for n in 0..bytes.len() {
            let text = STANDARD.encode(&bytes[..n]);
            assert_eq!(decoded(text.as_bytes()).as_deref(), Some(&bytes[..n]), "{text}");
            for at in 0..text.len() {
                for stray in [b'=', b'-', b'_', b' ', b'\0', b'@', b'[', b'`', b'{', b':', 0x80, 0xff] {
                    let mut bad = text.clone().into_bytes();
                    bad[at] = stray;
                    assert_eq!(decoded(&bad), CANONICAL.decode(&bad).ok(), "{}", bad.escape_ascii());
                }
            }
        }
    }

    #[test]
    fn every_symbol_decodes_in_every_place_of_a_block() {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for shift in 0..64 {
            let text: Vec<u8> = (0..64 + 4).map(|i| alphabet[(i * 7 + shift) % 64]).collect();
            assert_eq!(decoded(&text), CANONICAL.decode(&text).ok(), "{}", text.escape_ascii());
        }
    }

    fn base64ish() -> impl Strategy<Value = Vec<u8>> {
        let symbol = prop::sample::select(b"AQgw+/=Z9a \n-".to_vec());
        prop::collection::vec(symbol, 0..72)
    }

    proptest! {
        /// Whatever is accepted, the strict engine reads alike; whatever it accepts is accepted.
        #[test]
        fn decodes_what_the_strict_engine_decodes(text in base64ish()) {
            prop_assert_eq!(decoded(&text), CANONICAL.decode(&text).ok());
        }

        #[test]
        fn decodes_every_encoding(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(decoded(STANDARD.encode(&bytes).as_bytes()), Some(bytes));
        }
    }
}
