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
    for (quantum, bytes) in body.chunks_exact(4).zip(out[start..].chunks_exact_mut(3)) {
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

    fn base64ish() -> impl Strategy<Value = Vec<u8>> {
        let symbol = prop::sample::select(b"AQgw+/=Z9a \n-".to_vec());
        prop::collection::vec(symbol, 0..24)
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
