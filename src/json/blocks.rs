//! Strings with escapes decoded a block at a time, by the widest instructions the machine has:
//! 64 bytes with AVX-512 (`avx512.rs`), 32 with AVX2 (`avx2.rs`). Both read a block the same
//! way and stop at the same things; the scalar reader takes each step they leave to it.
//!
//! Text with escapes (JSON documents, line breaks) and binary values written one character per
//! byte (Canal-JSON's ISO-8859-1) escape or widen a byte every few: a loop over the bytes takes
//! a branch it cannot predict at most of them. A block is classified at once by masks
//! (backslashes, escape characters, `\u00XX`, the two-byte characters U+0080 to U+00FF), each
//! escape's value is put in place of its last byte, and the bytes left over are squeezed out.
//!
//! A block is decoded up to the first thing it does not handle: a backslash escaping a
//! backslash, a `\u` escape other than `\u00XX` (in text, other than `\u0000` to `\u007F`), a
//! character above U+00FF in a binary value, or a sequence the block's end cuts. Text is only
//! ever cut at a character's start, so what has been appended is always UTF-8.

use std::ops::{BitAnd, BitOr, Not, Shl, Shr};

use crate::simd::{Avx2, Avx512};

/// The machine's block decoder.
#[derive(Clone, Copy)]
pub(crate) enum StringBlocks {
    Avx512(Avx512),
    Avx2(Avx2),
}

/// What one block did.
pub(crate) struct Run {
    /// Bytes of the string decoded.
    read: usize,
    /// Whether the string's closing quote is the next byte.
    closed: bool,
}

impl Run {
    pub(super) fn of(read: u32, closed: bool) -> Run {
        Run { read: read as usize, closed }
    }

    /// Steps `*i` over the bytes read: whether the closing quote is next; None when nothing was
    /// read (a step the scalar reader must take).
    #[inline(always)]
    pub(crate) fn step(self, i: &mut usize) -> Option<bool> {
        *i += self.read;
        (self.closed || self.read > 0).then_some(self.closed)
    }
}

impl StringBlocks {
    /// The widest block decoder this machine runs, if any.
    pub(crate) fn detect() -> Option<StringBlocks> {
        Avx512::detect().map(StringBlocks::Avx512).or_else(|| Avx2::detect().map(StringBlocks::Avx2))
    }

    /// Every block decoder this machine runs, for tests that hold each to the scalar reader.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<StringBlocks> {
        [Avx512::detect().map(StringBlocks::Avx512), Avx2::detect().map(StringBlocks::Avx2)]
            .into_iter()
            .flatten()
            .collect()
    }

    /// Decodes the string in `b` from `at` (past its opening quote, at a character's start and
    /// not inside an escape) onto the end of `out`, up to a block of it; `LATIN1` reads each
    /// character as the byte of its code point. Reads nothing past the end of `b`.
    #[inline(always)]
    pub(crate) fn run<const LATIN1: bool>(self, b: &[u8], at: usize, out: &mut Vec<u8>) -> Run {
        let rest = b.get(at..).unwrap_or_default();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: each token is made only once the CPU has reported every feature its blocks
        // are compiled for.
        unsafe {
            match self {
                StringBlocks::Avx512(_) => super::avx512::block::<LATIN1>(rest, out),
                StringBlocks::Avx2(_) => super::avx2::block::<LATIN1>(rest, out),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.unreachable(rest, out)
    }

    /// [`Self::run`] for a JSON string whose text is Go's `strconv.Quote` of bytes (Open's
    /// binary values), undoing both at once: its bytes as they are, and its `\\xNN` escapes (a
    /// Go hex escape, its backslash escaped for JSON). It stops at any other backslash and at a
    /// raw line break, which the scalar reader takes.
    #[inline(always)]
    pub(crate) fn run_go_quoted(self, b: &[u8], at: usize, out: &mut Vec<u8>) -> Run {
        let rest = b.get(at..).unwrap_or_default();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `run`.
        unsafe {
            match self {
                StringBlocks::Avx512(_) => super::avx512::go_quoted_block(rest, out),
                StringBlocks::Avx2(_) => super::avx2::go_quoted_block(rest, out),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.unreachable(rest, out)
    }

    /// Where there is no x86-64 there are no tokens, so code holding one is unreachable.
    #[cfg(not(target_arch = "x86_64"))]
    fn unreachable(self, _: &[u8], _: &mut Vec<u8>) -> ! {
        match self {
            StringBlocks::Avx512(simd) => simd.unreachable(),
            StringBlocks::Avx2(simd) => simd.unreachable(),
        }
    }
}

/// A bit for each byte of a block, the first byte's the lowest: `u64` for AVX-512's 64 bytes,
/// `u32` for AVX2's 32. The kernels classify a block's bytes into these; what a block then
/// decodes is worked out from them alike for both ([`Kinds::decode`]).
pub(super) trait Mask:
    Copy
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + Not<Output = Self>
    + Shl<u32, Output = Self>
    + Shr<u32, Output = Self>
{
    const BITS: u32;
    fn trailing_zeros(self) -> u32;
    fn leading_zeros(self) -> u32;
    /// Bits `0..n` set.
    fn below(n: u32) -> Self;
    fn bit(self, i: u32) -> bool;
}

macro_rules! mask {
    ($t:ty) => {
        impl Mask for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn trailing_zeros(self) -> u32 {
                <$t>::trailing_zeros(self)
            }
            #[inline(always)]
            fn leading_zeros(self) -> u32 {
                <$t>::leading_zeros(self)
            }
            #[inline(always)]
            fn below(n: u32) -> Self {
                <$t>::MAX.checked_shr(Self::BITS - n.min(Self::BITS)).unwrap_or(0)
            }
            #[inline(always)]
            fn bit(self, i: u32) -> bool {
                self.checked_shr(i).is_some_and(|m| m & 1 != 0)
            }
        }
    };
}
mask!(u32);
mask!(u64);

/// A block's bytes by kind.
#[derive(Clone, Copy)]
pub(super) struct Kinds<M> {
    pub(super) backslash: M,
    pub(super) quote: M,
    pub(super) u: M,
    pub(super) zero: M,
    /// Bytes from 0x80 up.
    pub(super) high: M,
    /// `"`, `/`, `b`, `f`, `n`, `r` and `t`: what a short escape's backslash may precede.
    pub(super) escape_char: M,
    pub(super) hex: M,
    /// The hex digits that may be the first of `XX` in `\u00XX`: any in a binary value (one
    /// byte), `0` to `7` in text (one byte of UTF-8, below U+0080).
    pub(super) first_hex: M,
    /// 0xC2 and 0xC3, the leads of U+0080 to U+00FF, and 0xC3 alone.
    pub(super) lead: M,
    pub(super) c3: M,
    /// How many bytes the block holds (the rest are zeros, which no sequence accepts).
    pub(super) avail: u32,
}

/// What a block decodes: its first `read` bytes, the string's closing quote next if `closed`.
pub(super) struct Decoded<M> {
    pub(super) read: u32,
    pub(super) closed: bool,
    /// The characters after a short escape's backslash, which `b`, `f`, `n`, `r` and `t` turn
    /// into their control characters (the others stand for themselves).
    pub(super) escaped: M,
    /// The last digit of each `\u00XX`, which takes the byte its two digits make.
    pub(super) unicode_values: M,
    /// In a binary value, the byte after each 0xC3, which takes 0x40 more.
    pub(super) after_c3: M,
    /// The bytes that stay, once the escapes' values are in place.
    pub(super) keep: M,
}

impl<M: Mask> Kinds<M> {
    /// Where the block ends and what its bytes become. `char_starts` gives the bytes that start a
    /// character (all but 0x80 to 0xBF), asked only when text may end inside one.
    #[inline(always)]
    pub(super) fn decode<const LATIN1: bool>(&self, char_starts: impl FnOnce() -> M) -> Decoded<M> {
        let Kinds { backslash, quote, u, zero, high, escape_char, hex, first_hex, lead, c3, avail } = *self;
        // Each escape by its backslash: `\"`, `\n`, ... or `\u00XX`; any other is a stop.
        let short = backslash & (escape_char >> 1);
        let unicode = backslash & (u >> 1) & (zero >> 2) & (zero >> 3) & (first_hex >> 4) & (hex >> 5);
        let mut stops = backslash & !(short | unicode);
        let closing = quote & !(backslash << 1);
        if LATIN1 {
            // A character above U+00FF, or a two-byte one the block's end cuts.
            stops = stops | (high & !lead & !(lead << 1)) | (lead & !(high >> 1));
        }
        let mut end = (stops | closing).trailing_zeros().min(avail);
        if !LATIN1 && end == M::BITS && high.bit(M::BITS - 1) {
            // The last byte may start or continue a character: end at its start.
            end = (M::BITS - 1).saturating_sub(char_starts().leading_zeros());
        }
        let region = M::below(end);
        let (short, unicode) = (short & region, unicode & region);
        let mut drop = (backslash & region) | unicode << 1 | unicode << 2 | unicode << 3 | unicode << 4;
        if LATIN1 {
            drop = drop | (lead & region);
        }
        Decoded {
            read: end,
            closed: end < M::BITS && closing.bit(end),
            escaped: short << 1,
            unicode_values: unicode << 5,
            after_c3: (c3 & region) << 1,
            keep: region & !drop,
        }
    }
}

/// What a block of a Go-quoted binary value decodes (see [`StringBlocks::run_go_quoted`]).
pub(super) struct GoQuoted<M> {
    pub(super) read: u32,
    pub(super) closed: bool,
    /// The last digit of each `\\xNN`, which takes the byte its two digits make.
    pub(super) hex_values: M,
    pub(super) keep: M,
}

impl<M: Mask> GoQuoted<M> {
    /// From the block's backslashes, `x`s, hex digits, line breaks and quotes.
    #[inline(always)]
    pub(super) fn decode(backslash: M, x: M, hex: M, newline: M, quote: M, avail: u32) -> GoQuoted<M> {
        // `\\xNN` by its first backslash.
        let hex_escape = backslash & (backslash >> 1) & (x >> 2) & (hex >> 3) & (hex >> 4);
        let stops = (backslash & !(hex_escape | hex_escape << 1)) | newline;
        let end = (stops | quote).trailing_zeros().min(avail);
        let region = M::below(end);
        let hex_escape = hex_escape & region;
        let drop = hex_escape | hex_escape << 1 | hex_escape << 2 | hex_escape << 3;
        GoQuoted {
            read: end,
            closed: end < M::BITS && quote.bit(end),
            hex_values: hex_escape << 4,
            keep: region & !drop,
        }
    }
}
