//! [`super::blocks`] 32 bytes at a time, where the machine has AVX2 but not AVX-512. AVX2 has
//! no byte compress: the bytes left over are squeezed out eight at a time, each eight by a
//! byte shuffle whose control a table gives for the eight bits that keep them.

use std::arch::x86_64::*;

use super::blocks::{GoQuoted, Kinds, Run};

/// For each byte `k` of eight bits, the indices of its set bits in order, then 0x80 (a
/// shuffle's zero): the control that moves the bytes `k` keeps of eight to the front.
const PACK: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut k = 0;
    while k < 256 {
        let (mut control, mut n) = (0x8080_8080_8080_8080u64, 0);
        let mut bit = 0;
        while bit < 8 {
            if k >> bit & 1 != 0 {
                control = control & !(0xff << (8 * n)) | (bit as u64) << (8 * n);
                n += 1;
            }
            bit += 1;
        }
        table[k] = control;
        k += 1;
    }
    table
};

#[inline]
#[target_feature(enable = "avx2")]
fn splat(byte: u8) -> __m256i {
    _mm256_set1_epi8(byte as i8)
}

/// The bits of a vector of whole bytes (0 or 0xff each).
#[inline]
#[target_feature(enable = "avx2")]
fn bits(v: __m256i) -> u32 {
    _mm256_movemask_epi8(v) as u32
}

#[inline]
#[target_feature(enable = "avx2")]
fn eq(v: __m256i, byte: u8) -> __m256i {
    _mm256_cmpeq_epi8(v, splat(byte))
}

/// The bytes of `v` at most `max`, unsigned.
#[inline]
#[target_feature(enable = "avx2")]
fn at_most(v: __m256i, max: u8) -> __m256i {
    _mm256_cmpeq_epi8(_mm256_min_epu8(v, splat(max)), v)
}

/// The bytes the bits of `mask` select, as a vector of whole bytes.
#[inline]
#[target_feature(enable = "avx2")]
fn widen(mask: u32) -> __m256i {
    // Each byte takes the byte of `mask` that holds its bit, then tests its bit.
    let which = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
    );
    let spread = _mm256_shuffle_epi8(_mm256_set1_epi32(mask as i32), which);
    let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit)
}

/// The first 32 bytes of `rest` (fewer at its end, the rest zero, which no sequence below
/// accepts), and how many there are.
#[inline]
#[target_feature(enable = "avx2")]
fn load(rest: &[u8]) -> (__m256i, u32) {
    if let Some(block) = rest.first_chunk::<32>() {
        // SAFETY: `block` is 32 bytes, read unaligned.
        return (unsafe { _mm256_loadu_si256(block.as_ptr().cast()) }, 32);
    }
    let mut block = [0u8; 32];
    block[..rest.len()].copy_from_slice(rest);
    // SAFETY: as above.
    (unsafe { _mm256_loadu_si256(block.as_ptr().cast()) }, rest.len() as u32)
}

/// Which bytes of `v` are the letters of the escapes of control characters (`b`, `f`, `n`, `r`,
/// `t`), and at each, its control character. The five letters differ in bits 1 to 4, which pick
/// each one's entry of two tables: the letter, to check the byte is it, and its character.
#[inline]
#[target_feature(enable = "avx2")]
fn escape_letters(v: __m256i) -> (__m256i, __m256i) {
    // By bits 1 to 4: b 1, f 3, n 7, r 9, t 10; 0xff (never in UTF-8) elsewhere.
    const LETTERS: [u8; 16] =
        [0xff, b'b', 0xff, b'f', 0xff, 0xff, 0xff, b'n', 0xff, b'r', b't', 0xff, 0xff, 0xff, 0xff, 0xff];
    const CONTROLS: [u8; 16] = [0, 0x08, 0, 0x0c, 0, 0, 0, b'\n', 0, b'\r', b'\t', 0, 0, 0, 0, 0];
    let index = _mm256_and_si256(_mm256_srli_epi16::<1>(v), splat(0x0f));
    let letter = _mm256_cmpeq_epi8(v, _mm256_shuffle_epi8(in_both_lanes(&LETTERS), index));
    (letter, _mm256_shuffle_epi8(in_both_lanes(&CONTROLS), index))
}

/// A table of 16 bytes in both lanes, for a byte shuffle to look up.
#[inline]
#[target_feature(enable = "avx2")]
fn in_both_lanes(table: &[u8; 16]) -> __m256i {
    // SAFETY: `table` is 16 bytes, read unaligned.
    _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(table.as_ptr().cast()) })
}

/// Which bytes of `v` are hex digits, which are decimal digits, and each one's value.
#[inline]
#[target_feature(enable = "avx2")]
fn hex_digits(v: __m256i) -> (u32, u32, __m256i) {
    let digit_value = _mm256_sub_epi8(v, splat(b'0'));
    let digit = at_most(digit_value, 9);
    let letter_value = _mm256_sub_epi8(_mm256_or_si256(v, splat(0x20)), splat(b'a' - 10));
    let letter = at_most(_mm256_sub_epi8(letter_value, splat(10)), 5);
    let nibble = _mm256_blendv_epi8(letter_value, digit_value, digit);
    (bits(_mm256_or_si256(digit, letter)), bits(digit), nibble)
}

/// At each byte, the byte of the two hex digits that end there.
#[inline]
#[target_feature(enable = "avx2")]
fn hex_pairs(nibble: __m256i) -> __m256i {
    // Each byte's previous one: the lanes' bytes moved up by one, the low lane's last
    // carried into the high lane's first.
    let low_lane_up = _mm256_permute2x128_si256::<0x08>(nibble, nibble);
    let previous = _mm256_alignr_epi8::<15>(nibble, low_lane_up);
    _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16::<4>(previous), splat(0xf0)), nibble)
}

/// Appends the bytes of `t` that `keep` selects to `out`.
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn append_kept(t: __m256i, keep: u32, out: &mut Vec<u8>) {
    let n = keep.count_ones() as usize;
    let len = out.len();
    if out.capacity() - len >= 32 {
        // SAFETY: there is room for 32 bytes past `len`, which the stores stay within (each
        // eight bytes' store starts where the kept bytes before it end); the first `n` are
        // set, and only they are taken into the length.
        unsafe {
            pack_into(t, keep, out.as_mut_ptr().add(len));
            out.set_len(len + n);
        }
    } else {
        let mut bytes = [0u8; 32];
        // SAFETY: `bytes` is 32 bytes.
        unsafe { pack_into(t, keep, bytes.as_mut_ptr()) };
        out.extend_from_slice(&bytes[..n]);
    }
}

/// Stores the bytes of `t` that `keep` selects from `to` on, writing up to 32 bytes.
#[inline]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn pack_into(t: __m256i, keep: u32, mut to: *mut u8) {
    for (half, keep) in
        [(_mm256_castsi256_si128(t), keep as u16), (_mm256_extracti128_si256::<1>(t), (keep >> 16) as u16)]
    {
        let (low, high) = (keep as u8, (keep >> 8) as u8);
        // The high eight bytes' indices are 8 on: each byte of the control plus 8 (0x80, the
        // zero, stays above 0x7f).
        let control = _mm_set_epi64x((PACK[high as usize] + 0x0808_0808_0808_0808) as i64, PACK[low as usize] as i64);
        let packed = _mm_shuffle_epi8(half, control);
        // SAFETY: the caller's room; the two stores reach at most 16 bytes past `to`.
        unsafe {
            _mm_storel_epi64(to.cast(), packed);
            to = to.add(low.count_ones() as usize);
            _mm_storel_epi64(to.cast(), _mm_unpackhi_epi64(packed, packed));
            to = to.add(high.count_ones() as usize);
        }
    }
}

/// See [`super::blocks::StringBlocks::run`]; `rest` is the message from the string's
/// byte at hand on.
#[target_feature(enable = "avx2,popcnt")]
pub(super) unsafe fn block<const LATIN1: bool>(rest: &[u8], out: &mut Vec<u8>) -> Run {
    let (v, avail) = load(rest);
    let quote = eq(v, b'"');
    let (hex, digit, nibble) = hex_digits(v);
    let c3 = eq(v, 0xc3);
    let (letter, control) = escape_letters(v);
    let kinds = Kinds {
        backslash: bits(eq(v, b'\\')),
        quote: bits(quote),
        u: bits(eq(v, b'u')),
        zero: bits(eq(v, b'0')),
        high: bits(v),
        escape_char: bits(_mm256_or_si256(_mm256_or_si256(quote, eq(v, b'/')), letter)),
        hex,
        first_hex: if LATIN1 { hex } else { digit & bits(at_most(v, b'7')) },
        lead: bits(_mm256_or_si256(eq(v, 0xc2), c3)),
        c3: bits(c3),
        avail,
    };
    let d = kinds.decode::<LATIN1>(|| !bits(_mm256_cmpeq_epi8(_mm256_and_si256(v, splat(0xc0)), splat(0x80))));
    let t = _mm256_blendv_epi8(v, control, _mm256_and_si256(widen(d.escaped), letter));
    let mut t = _mm256_blendv_epi8(t, hex_pairs(nibble), widen(d.unicode_values));
    if LATIN1 {
        t = _mm256_add_epi8(t, _mm256_and_si256(widen(d.after_c3), splat(0x40)));
    }
    append_kept(t, d.keep, out);
    Run::of(d.read, d.closed)
}

/// See [`super::blocks::StringBlocks::run_go_quoted`].
#[target_feature(enable = "avx2,popcnt")]
pub(super) unsafe fn go_quoted_block(rest: &[u8], out: &mut Vec<u8>) -> Run {
    let (v, avail) = load(rest);
    let (hex, _, nibble) = hex_digits(v);
    let d = GoQuoted::decode(bits(eq(v, b'\\')), bits(eq(v, b'x')), hex, bits(eq(v, b'\n')), bits(eq(v, b'"')), avail);
    let t = _mm256_blendv_epi8(v, hex_pairs(nibble), widen(d.hex_values));
    append_kept(t, d.keep, out);
    Run::of(d.read, d.closed)
}
