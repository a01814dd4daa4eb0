//! Strings with escapes decoded 64 bytes at a time, where the machine has AVX-512 (VBMI2).
//!
//! Text with escapes (JSON documents, line breaks) and binary values written one character per
//! byte (Canal-JSON's ISO-8859-1) escape or widen a byte every few: a loop over the bytes takes
//! a branch it cannot predict at most of them. Here a block of the string is classified at once
//! by masks (backslashes, escape characters, `\u00XX`, the two-byte characters U+0080 to
//! U+00FF), each escape's value is put in place of its last byte, and the bytes left over are
//! squeezed out by one `vpcompressb`.
//!
//! A block is decoded up to the first thing it does not handle: a backslash escaping a
//! backslash, a `\u` escape other than `\u00XX` (in text, other than `\u0000` to `\u007F`), a
//! character above U+00FF in a binary value, or a sequence the block's end cuts. The scalar
//! reader takes that one step (or reports the fault) and the blocks resume after it. Text is
//! only ever cut at a character's start, so what has been appended is always UTF-8.

use crate::avx512::Avx512;

/// What one call of [`Avx512::run`] did.
pub(crate) struct Run {
    /// Bytes of the string decoded.
    read: usize,
    /// Whether the string's closing quote is the next byte.
    closed: bool,
}

impl Run {
    /// Steps `*i` over the bytes read: whether the closing quote is next; None when nothing was
    /// read (a step the scalar reader must take).
    #[inline(always)]
    pub(crate) fn step(self, i: &mut usize) -> Option<bool> {
        *i += self.read;
        (self.closed || self.read > 0).then_some(self.closed)
    }
}

impl Avx512 {
    /// Decodes the string in `b` from `at` (past its opening quote, at a character's start and
    /// not inside an escape) onto the end of `out`, up to 64 bytes of it; `LATIN1` reads each
    /// character as the byte of its code point. Reads nothing past the end of `b`.
    #[inline(always)]
    pub(crate) fn run<const LATIN1: bool>(self, b: &[u8], at: usize, out: &mut Vec<u8>) -> Run {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: an `Avx512` is only made once the CPU has reported every feature
            // `block` is compiled for.
            unsafe { x86::block::<LATIN1>(b.get(at..).unwrap_or_default(), out) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (b, at, out);
            self.unreachable()
        }
    }

    /// [`Self::run`] for a JSON string whose text is Go's `strconv.Quote` of bytes (Open's
    /// binary values), undoing both at once: its bytes as they are, and its `\\xNN` escapes (a
    /// Go hex escape, its backslash escaped for JSON). It stops at any other backslash and at a
    /// raw line break, which the scalar reader takes.
    #[inline(always)]
    pub(crate) fn run_go_quoted(self, b: &[u8], at: usize, out: &mut Vec<u8>) -> Run {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: as in `run`.
            unsafe { x86::go_quoted_block(b.get(at..).unwrap_or_default(), out) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (b, at, out);
            self.unreachable()
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Run;

    /// Bits `0..n` set.
    #[inline(always)]
    fn below(n: u32) -> u64 {
        if n >= 64 {
            !0
        } else {
            (1 << n) - 1
        }
    }

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
        (unsafe { _mm512_maskz_loadu_epi8(below(avail), rest.as_ptr().cast()) }, avail)
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

    /// See [`super::Avx512::run`]; `rest` is the message from the string's byte at hand on.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
    pub(super) unsafe fn block<const LATIN1: bool>(rest: &[u8], out: &mut Vec<u8>) -> Run {
        let (v, avail) = load(rest);

        let backslash = eq(v, b'\\');
        let quote = eq(v, b'"');
        let u = eq(v, b'u');
        let zero = eq(v, b'0');
        let high = _mm512_movepi8_mask(v);
        let escape_char = quote | eq(v, b'/') | eq(v, b'b') | eq(v, b'f') | eq(v, b'n') | eq(v, b'r') | eq(v, b't');

        let (hex, digit, nibble) = hex_digits(v);
        // Text takes `\u00XX` below U+0080 only (one byte of UTF-8); a binary value takes all.
        let first_hex = if LATIN1 { hex } else { digit & _mm512_cmple_epu8_mask(v, splat(b'7')) };

        // Each escape by its backslash: `\"`, `\n`, ... or `\u00XX`; any other is a stop.
        let short = backslash & (escape_char >> 1);
        let unicode = backslash & (u >> 1) & (zero >> 2) & (zero >> 3) & (first_hex >> 4) & (hex >> 5);
        let mut stops = backslash & !(short | unicode);
        let closing = quote & !(backslash << 1);
        let c3 = eq(v, 0xc3);
        let lead = eq(v, 0xc2) | c3;
        if LATIN1 {
            // A character above U+00FF, or a two-byte one the block's end cuts.
            stops |= (high & !lead & !(lead << 1)) | (lead & !(high >> 1));
        }
        let mut end = (stops | closing).trailing_zeros().min(avail);
        if !LATIN1 && end == 64 && high >> 63 != 0 {
            // The last byte may start or continue a character: end at its start.
            let starts = !_mm512_cmpeq_epi8_mask(_mm512_and_si512(v, splat(0xc0)), splat(0x80));
            end = 63u32.saturating_sub(starts.leading_zeros());
        }
        let closed = end < 64 && closing >> end & 1 != 0;

        let region = below(end);
        let (short, unicode) = (short & region, unicode & region);
        let mut drop = (backslash & region) | unicode << 1 | unicode << 2 | unicode << 3 | unicode << 4;
        let mut t = v;
        let escaped = short << 1;
        for (c, byte) in [(b'b', 0x08), (b'f', 0x0c), (b'n', b'\n'), (b'r', b'\r'), (b't', b'\t')] {
            t = _mm512_mask_mov_epi8(t, escaped & eq(v, c), splat(byte));
        }
        t = _mm512_mask_mov_epi8(t, unicode << 5, hex_pairs(nibble));
        if LATIN1 {
            drop |= lead & region;
            t = _mm512_mask_add_epi8(t, (c3 & region) << 1, t, splat(0x40));
        }

        append_kept(t, region & !drop, out);
        Run { read: end as usize, closed }
    }

    /// See [`super::Avx512::run_go_quoted`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
    pub(super) unsafe fn go_quoted_block(rest: &[u8], out: &mut Vec<u8>) -> Run {
        let (v, avail) = load(rest);
        let backslash = eq(v, b'\\');
        let (hex, _, nibble) = hex_digits(v);
        // `\\xNN` by its first backslash.
        let hex_escape = backslash & (backslash >> 1) & (eq(v, b'x') >> 2) & (hex >> 3) & (hex >> 4);
        let stops = (backslash & !(hex_escape | hex_escape << 1)) | eq(v, b'\n');
        let quote = eq(v, b'"');
        let end = (stops | quote).trailing_zeros().min(avail);
        let closed = end < 64 && quote >> end & 1 != 0;
        let region = below(end);
        let hex_escape = hex_escape & region;
        let drop = hex_escape | hex_escape << 1 | hex_escape << 2 | hex_escape << 3;
        let t = _mm512_mask_mov_epi8(v, hex_escape << 4, hex_pairs(nibble));
        append_kept(t, region & !drop, out);
        Run { read: end as usize, closed }
    }
}
