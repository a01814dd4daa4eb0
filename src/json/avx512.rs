//! [`super::blocks`] 64 bytes at a time, where the machine has AVX-512 (VBMI2): the bytes left
//! over once the escapes' values are in place are squeezed out by one `vpcompressb`.

use std::arch::x86_64::*;

use super::blocks::{GoQuoted, Kinds, Mask, Run};

/// For each byte `k`, the index `k - 1` (the first byte takes the last's, never used).
const PREVIOUS: [u8; 64] = {
    let mut index = [63; 64];
    let mut k = 1;
    while k < 64 {
        index[k] = k as u8 - 1;
        k += 1;
    }
    index
};

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn splat(byte: u8) -> __m512i {
    _mm512_set1_epi8(byte as i8)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn eq(v: __m512i, byte: u8) -> u64 {
    _mm512_cmpeq_epi8_mask(v, splat(byte))
}

/// The first 64 bytes of `rest` (fewer at its end, the rest zero, which no sequence below
/// accepts), and how many there are.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load(rest: &[u8]) -> (__m512i, u32) {
    let avail = rest.len().min(64) as u32;
    // SAFETY: the mask selects `rest[..avail]` only; masked-off bytes are not read.
    (unsafe { _mm512_maskz_loadu_epi8(u64::below(avail), rest.as_ptr().cast()) }, avail)
}

/// Which bytes of `v` are hex digits, and each one's value.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn hex_digits(v: __m512i) -> (u64, u64, __m512i) {
    let digit_value = _mm512_sub_epi8(v, splat(b'0'));
    let digit = _mm512_cmple_epu8_mask(digit_value, splat(9));
    let letter_value = _mm512_sub_epi8(_mm512_or_si512(v, splat(0x20)), splat(b'a' - 10));
    let letter = _mm512_cmple_epu8_mask(_mm512_sub_epi8(letter_value, splat(10)), splat(5));
    (digit | letter, digit, _mm512_mask_blend_epi8(digit, letter_value, digit_value))
}

/// At each byte, the byte of the two hex digits that end there.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn hex_pairs(nibble: __m512i) -> __m512i {
    // SAFETY: `PREVIOUS` is 64 bytes, read unaligned.
    let previous_index = unsafe { _mm512_loadu_si512(PREVIOUS.as_ptr().cast()) };
    let previous = _mm512_permutexvar_epi8(previous_index, nibble);
    _mm512_or_si512(_mm512_and_si512(_mm512_slli_epi16::<4>(previous), splat(0xf0)), nibble)
}

/// Appends the bytes of `t` that `keep` selects to `out`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2")]
fn append_kept(t: __m512i, keep: u64, out: &mut Vec<u8>) {
    let packed = _mm512_maskz_compress_epi8(keep, t);
    let n = keep.count_ones() as usize;
    let len = out.len();
    if out.capacity() - len >= 64 {
        // SAFETY: there is room for 64 bytes past `len`; the first `n` of them are set by
        // the store, and only they are taken into the length.
        unsafe {
            _mm512_storeu_si512(out.as_mut_ptr().add(len).cast(), packed);
            out.set_len(len + n);
        }
    } else {
        let mut bytes = [0u8; 64];
        // SAFETY: `bytes` is 64 bytes.
        unsafe { _mm512_storeu_si512(bytes.as_mut_ptr().cast(), packed) };
        out.extend_from_slice(&bytes[..n]);
    }
}

/// See [`super::blocks::StringBlocks::run`]; `rest` is the message from the string's
/// byte at hand on.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
pub(super) unsafe fn block<const LATIN1: bool>(rest: &[u8], out: &mut Vec<u8>) -> Run {
    let (v, avail) = load(rest);
    let quote = eq(v, b'"');
    let (hex, digit, nibble) = hex_digits(v);
    let c3 = eq(v, 0xc3);
    let kinds = Kinds {
        backslash: eq(v, b'\\'),
        quote,
        u: eq(v, b'u'),
        zero: eq(v, b'0'),
        high: _mm512_movepi8_mask(v),
        escape_char: quote | eq(v, b'/') | eq(v, b'b') | eq(v, b'f') | eq(v, b'n') | eq(v, b'r') | eq(v, b't'),
        hex,
        first_hex: if LATIN1 { hex } else { digit & _mm512_cmple_epu8_mask(v, splat(b'7')) },
        lead: eq(v, 0xc2) | c3,
        c3,
        avail,
    };
    let d = kinds.decode::<LATIN1>(|| !_mm512_cmpeq_epi8_mask(_mm512_and_si512(v, splat(0xc0)), splat(0x80)));
    let mut t = v;
    for (c, byte) in [(b'b', 0x08), (b'f', 0x0c), (b'n', b'\n'), (b'r', b'\r'), (b't', b'\t')] {
        t = _mm512_mask_mov_epi8(t, d.escaped & eq(v, c), splat(byte));
    }
    t = _mm512_mask_mov_epi8(t, d.unicode_values, hex_pairs(nibble));
    if LATIN1 {
        t = _mm512_mask_add_epi8(t, d.after_c3, t, splat(0x40));
    }
    append_kept(t, d.keep, out);
    Run::of(d.read, d.closed)
}

/// See [`super::blocks::StringBlocks::run_go_quoted`].
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
pub(super) unsafe fn go_quoted_block(rest: &[u8], out: &mut Vec<u8>) -> Run {
    let (v, avail) = load(rest);
    let (hex, _, nibble) = hex_digits(v);
    let d = GoQuoted::decode(eq(v, b'\\'), eq(v, b'x'), hex, eq(v, b'\n'), eq(v, b'"'), avail);
    let t = _mm512_mask_mov_epi8(v, d.hex_values, hex_pairs(nibble));
    append_kept(t, d.keep, out);
    Run::of(d.read, d.closed)
}
