//! A pull-style JSON cursor over one message, for the JSON protocols.
//!
//! TiCDC's JSON messages have a fixed shape, so each codec walks its object with this cursor and
//! keeps only what it needs: there is no DOM and no per-token allocation. The input is validated
//! as UTF-8 once, up front, so every string slice cut at a quote is valid `&str` and an
//! escape-free string is returned borrowed. Every fault carries the byte offset it was found at.
//! Nesting is skipped iteratively with a depth bound, so hostile input cannot exhaust the stack.
//! [`KeyOrder`] matches the keys a kind of object repeats from one message to the next by their
//! learnt bytes instead of reading them. Strings with escapes are decoded a block at a time
//! where the machine has AVX-512 or AVX2 (`blocks.rs`), else by the scalar reader here, which
//! also takes every step the blocks leave to it.
//!
//! The calls made per key and per value (`next_key`, `skip_if_next`, `string`, `u64`/`i64`) are
//! always inlined: left to the compiler they stayed calls, and their results (a `Result` of an
//! `Option<Cow>`) went through memory at a cost above that of scanning a short key. Inlining them
//! took 6% to 14% of the instructions out of the JSON protocols' decodes (`skip_if_next` alone
//! 1.7% of Open's and 2.1% of Canal-JSON's).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub(crate) mod blocks;

use std::borrow::Cow;

use memchr::memchr2;

use blocks::StringBlocks;

use crate::digits::{eight_digits, leading_digits};
use crate::error::{Fault, FaultResult};
use crate::event::{same_name, SpareBuffers};

/// Deepest nesting `skip_value` walks through before it calls the message malformed.
const MAX_DEPTH: usize = 512;

pub struct JsonCursor<'a> {
    src: &'a str,
    pos: usize,
    /// Buffers to unescape strings into, lent by the codec (see [`SpareBuffers`]).
    spare: SpareBuffers,
    /// Strings with escapes decoded a block at a time, where the machine can.
    blocks: Option<StringBlocks>,
}

impl<'a> JsonCursor<'a> {
    /// Validates `bytes` as UTF-8 (by SIMD, see [`crate::utf8`]) and puts the cursor at its
    /// start.
    pub fn new(bytes: &'a [u8]) -> FaultResult<Self> {
        match crate::utf8::check(bytes) {
            Ok(src) => Ok(JsonCursor { src, pos: 0, spare: SpareBuffers::default(), blocks: StringBlocks::detect() }),
            Err(at) => Err(Fault::new(at, "invalid UTF-8")),
        }
    }

    pub fn offset(&self) -> usize {
        self.pos
    }

    /// The buffers strings with escapes are unescaped into, for a codec to lend
    /// (`std::mem::swap` with [`crate::event::MessageEvents::spare`]) and take back.
    pub fn spare(&mut self) -> &mut SpareBuffers {
        &mut self.spare
    }

    pub fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    #[cold]
    #[inline(never)]
    pub fn fault(&self, reason: impl Into<String>) -> Fault {
        Fault::new(self.pos, reason)
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    /// The text of `range` of the message (empty if `range` does not cut it at characters).
    pub fn slice(&self, range: std::ops::Range<usize>) -> &'a str {
        self.src.get(range).unwrap_or_default()
    }

    /// Moves past `text` if the message continues with it (after any whitespace). When `text` is
    /// one complete JSON value, as read before, the value here is that same value: a JSON value
    /// ends where its own text says, so nothing after the match can change how it reads.
    #[inline(always)]
    pub fn skip_if_next(&mut self, text: &[u8]) -> bool {
        self.peek();
        // Short texts (keys) are compared a word at a time in registers, long ones by `memcmp`.
        let next = self.bytes().get(self.pos..self.pos + text.len());
        let same = |next: &[u8]| if text.len() <= 32 { same_name(next, text) } else { next == text };
        let matched = !text.is_empty() && next.is_some_and(same);
        if matched {
            self.pos += text.len();
        }
        matched
    }

    /// The next non-whitespace byte, without consuming it.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        let b = self.bytes();
        while let Some(&c) = b.get(self.pos) {
            // Every token starts above the space; TiCDC writes no whitespace at all.
            if c > b' ' {
                return Some(c);
            }
            if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                self.pos += 1;
            } else {
                return Some(c);
            }
        }
        None
    }

    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    #[inline]
    pub fn expect(&mut self, want: u8) -> FaultResult<()> {
        match self.peek() {
            Some(c) if c == want => {
                self.pos += 1;
                Ok(())
            }
            Some(c) => Err(self.fault(format!("expected '{}', found '{}'", want as char, c as char))),
            None => Err(self.fault(format!("expected '{}', found end of message", want as char))),
        }
    }

    /// Consumes `null` if it comes next.
    #[inline]
    pub fn null(&mut self) -> FaultResult<bool> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.literal("null")?;
        Ok(true)
    }

    fn literal(&mut self, word: &str) -> FaultResult<()> {
        if self.bytes()[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.fault(format!("expected {word}")))
        }
    }

    pub fn bool(&mut self) -> FaultResult<bool> {
        match self.peek() {
            Some(b't') => self.literal("true").map(|_| true),
            Some(b'f') => self.literal("false").map(|_| false),
            _ => Err(self.fault("expected a boolean")),
        }
    }

    /// The text of a number token, unparsed.
    pub fn number_text(&mut self) -> FaultResult<&'a str> {
        self.peek();
        let b = self.bytes();
        let start = self.pos;
        // A sign, digits, a point and digits, the common case, are skipped a word at a time;
        // the loop takes anything else a number may hold, a byte at a time.
        let mut end = start + usize::from(b.get(start) == Some(&b'-'));
        end += leading_digits(&b[end..]);
        if b.get(end) == Some(&b'.') {
            end += 1 + leading_digits(&b[end + 1..]);
        }
        while end < b.len() && matches!(b[end], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
            end += 1;
        }
        if end == start {
            return Err(self.fault("expected a number"));
        }
        self.pos = end;
        Ok(&self.src[start..end])
    }

    /// An unsigned 64-bit integer, exactly (TSOs exceed 2^53).
    #[inline(always)]
    pub fn u64(&mut self) -> FaultResult<u64> {
        if let Some(v) = self.plain_integer() {
            return Ok(v);
        }
        let start = self.offset();
        let text = self.number_text()?;
        text.parse().map_err(|_| Fault::new(start, format!("expected an unsigned integer, found {text}")))
    }

    #[inline(always)]
    pub fn i64(&mut self) -> FaultResult<i64> {
        if let Some(v) = self.plain_integer().and_then(|v| i64::try_from(v).ok()) {
            return Ok(v);
        }
        let start = self.offset();
        let text = self.number_text()?;
        text.parse().map_err(|_| Fault::new(start, format!("expected an integer, found {text}")))
    }

    /// A number token made of digits only whose value fits u64, read in one pass; None (and the
    /// cursor unmoved) for anything else, which the callers read the general way. The column
    /// type codes and flags of Open's every value are such numbers, and `str::parse` after a
    /// scan for the token's end cost several times the digits. Timestamps and TSOs (13 and 18
    /// digits) are read eight digits at a time, up to sixteen, which cannot overflow.
    #[inline(always)]
    fn plain_integer(&mut self) -> Option<u64> {
        self.peek();
        let b = self.bytes();
        let mut v = 0u64;
        let mut end = self.pos;
        while let Some(digits) = b.get(end..end + 8).and_then(eight_digits).filter(|_| end - self.pos < 16) {
            v = v * 100_000_000 + digits;
            end += 8;
        }
        while let Some(d) = b.get(end).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
            v = v.checked_mul(10)?.checked_add(d as u64)?;
            end += 1;
        }
        let continues = b.get(end).is_some_and(|c| matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
        if end == self.pos || continues {
            return None;
        }
        self.pos = end;
        Some(v)
    }

    /// A string, borrowed when it has no escapes.
    #[inline(always)]
    pub fn string(&mut self) -> FaultResult<Cow<'a, str>> {
        match self.open_string()? {
            Ok(plain) => Ok(Cow::Borrowed(plain)),
            Err((start, escape)) => self.unescape(start, escape).map(Cow::Owned),
        }
    }

    /// A string, borrowed when it has no escapes; else its escapes are undone onto the end of
    /// `out` and None is returned, so that a codec decodes into a buffer it keeps. On a fault
    /// `out` is as it was.
    #[inline(always)]
    pub fn string_or_into(&mut self, out: &mut String) -> FaultResult<Option<&'a str>> {
        let (start, escape) = match self.open_string()? {
            Ok(plain) => return Ok(Some(plain)),
            Err(escaped) => escaped,
        };
        let len = out.len();
        // SAFETY: `unescape_into` appends UTF-8 (see `unescape`); on a fault, what it appended is
        // cut off.
        let bytes = unsafe { out.as_mut_vec() };
        let read = self.unescape_into(start, escape, bytes);
        if read.is_err() {
            bytes.truncate(len);
        }
        read.map(|()| None)
    }

    /// [`Self::string_or_into`] for a string whose text is taken as bytes.
    #[inline(always)]
    pub fn string_bytes_or_into(&mut self, out: &mut Vec<u8>) -> FaultResult<Option<&'a [u8]>> {
        match self.open_string()? {
            Ok(plain) => Ok(Some(plain.as_bytes())),
            Err((start, escape)) => self.unescape_into(start, escape, out).map(|()| None),
        }
    }

    /// The string at the cursor: its text when it has no escapes, the cursor then past it; else
    /// where its text starts and where its first escape is, the cursor left at it.
    #[inline(always)]
    fn open_string(&mut self) -> FaultResult<Result<&'a str, (usize, usize)>> {
        if self.peek() != Some(b'"') {
            return Err(self.fault("expected a string"));
        }
        let start = self.pos + 1;
        let b = self.bytes();
        match quote_or_escape(&b[start..]) {
            Some(n) if b[start + n] == b'"' => {
                self.pos = start + n + 1;
                // SAFETY: the message is UTF-8 (checked when the cursor was made), and the span
                // runs from just past one ASCII quote to the next one, so both its ends are
                // character boundaries. (`&self.src[..]` checked them again, out of line, for
                // every string: 1% of a Canal-JSON decode.)
                Ok(Ok(unsafe { std::str::from_utf8_unchecked(&b[start..start + n]) }))
            }
            Some(n) => Ok(Err((start, start + n))),
            None => Err(Fault::new(start - 1, "unterminated string")),
        }
    }

    /// A string read by `read`, for a reader that undoes its escapes together with an encoding
    /// of its own (Open's Go-quoted bytes). `read` gets the bytes after the opening quote and
    /// returns what it made of them with how many it read, the closing quote included; None
    /// (or a count that does not end on a character) leaves the cursor at the string. It may
    /// take its buffers from the spare ones.
    #[inline]
    pub fn string_with<T>(
        &mut self,
        read: impl FnOnce(&'a [u8], &mut SpareBuffers) -> Option<(T, usize)>,
    ) -> FaultResult<Option<T>> {
        if self.peek() != Some(b'"') {
            return Err(self.fault("expected a string"));
        }
        let start = self.pos + 1;
        let read = read(&self.bytes()[start..], &mut self.spare);
        let read = read.filter(|&(_, used)| self.src.is_char_boundary(start + used));
        Ok(read.map(|(value, used)| {
            self.pos = start + used;
            value
        }))
    }

    /// Decodes a string with escapes; `first_escape` is the offset of its first backslash.
    /// Escaped strings (JSON documents, binary values as ISO-8859-1, text with line breaks)
    /// escape every few bytes, so the plain bytes between escapes are copied a word at a time
    /// as they are scanned: a search and then a `memcpy` call per run cost more than the run.
    fn unescape(&mut self, start: usize, first_escape: usize) -> FaultResult<String> {
        // Room for the usual short value without growing (growth showed as realloc in profiles).
        let mut out = self.spare.take(first_escape - start + 256);
        self.unescape_into(start, first_escape, &mut out)?;
        // SAFETY: the message was checked as UTF-8 when the cursor was made. `out` holds its bytes
        // between escapes, cut only at ASCII quotes and backslashes (never inside a character),
        // and each escape's character in UTF-8.
        Ok(unsafe { String::from_utf8_unchecked(out) })
    }

    /// [`Self::unescape`] onto the end of `out`.
    fn unescape_into(&mut self, start: usize, first_escape: usize, out: &mut Vec<u8>) -> FaultResult<()> {
        let b = self.bytes();
        out.extend_from_slice(&b[start..first_escape]);
        let mut i = first_escape;
        loop {
            match self.run_by_blocks::<false>(&mut i, out) {
                Some(true) => break,
                Some(false) => continue,
                None if self.blocks.is_none() && copy_plain(b, &mut i, out) => continue,
                None => {}
            }
            match b.get(i) {
                None => return Err(Fault::new(start - 1, "unterminated string")),
                Some(b'"') => break,
                Some(b'\\') => {
                    let esc = *b.get(i + 1).ok_or_else(|| Fault::new(i, "unterminated escape"))?;
                    i += 2;
                    let byte = match esc {
                        b'u' => {
                            // Go's HTML-safe `\u003c` and control characters: ASCII, one byte.
                            if let Some(&[b'0', b'0', high, low]) = b.get(i..i + 4) {
                                let (high, low) = (hex_value(high), hex_value(low));
                                if high < 8 && low < 16 {
                                    out.push(high << 4 | low);
                                    i += 4;
                                    continue;
                                }
                            }
                            let (c, used) = self.unicode_escape(i)?;
                            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                            i += used;
                            continue;
                        }
                        _ => short_escape(esc).ok_or_else(|| Fault::new(i - 2, "invalid escape"))?,
                    };
                    out.push(byte);
                }
                Some(&c) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        self.pos = i + 1;
        Ok(())
    }

    /// Decodes a block of the string at `*i` with [`StringBlocks`] where the machine has them,
    /// and steps over it: whether the closing quote is next; None where nothing was read (no
    /// blocks, or a step the scalar reader must take).
    #[inline(always)]
    fn run_by_blocks<const LATIN1: bool>(&self, i: &mut usize, out: &mut Vec<u8>) -> Option<bool> {
        self.blocks?.run::<LATIN1>(self.bytes(), *i, out).step(i)
    }

    /// The proof that this machine decodes strings by blocks, for a reader of its own (Open's
    /// Go-quoted bytes), found once per message.
    pub(crate) fn blocks(&self) -> Option<StringBlocks> {
        self.blocks
    }

    /// Reads a string whose characters stand for bytes, each the byte of its code point (how
    /// Canal-JSON writes a binary value: ISO-8859-1), straight into those bytes. A character
    /// above U+00FF is a fault at the string.
    pub fn latin1_string(&mut self) -> FaultResult<Cow<'a, [u8]>> {
        match self.open_latin1()? {
            Ok(plain) => Ok(Cow::Borrowed(plain)),
            Err(start) => {
                let mut out = self.spare.take(256);
                self.latin1_decode(start, &mut out)?;
                Ok(Cow::Owned(out))
            }
        }
    }

    /// [`Self::latin1_string`], borrowed when its characters are all ASCII with no escapes;
    /// else decoded onto the end of `out` and None returned (see [`Self::string_or_into`]).
    #[inline(always)]
    pub fn latin1_or_into(&mut self, out: &mut Vec<u8>) -> FaultResult<Option<&'a [u8]>> {
        match self.open_latin1()? {
            Ok(plain) => Ok(Some(plain)),
            Err(start) => self.latin1_decode(start, out).map(|()| None),
        }
    }

    /// The Latin-1 string at the cursor: its bytes when they are plain ASCII, the cursor then
    /// past it; else where its text starts.
    #[inline(always)]
    fn open_latin1(&mut self) -> FaultResult<Result<&'a [u8], usize>> {
        if self.peek() != Some(b'"') {
            return Err(self.fault("expected a string"));
        }
        let start = self.pos + 1;
        let b = self.bytes();
        match quote_or_escape(&b[start..]) {
            Some(n) if b[start + n] == b'"' && b[start..start + n].is_ascii() => {
                self.pos = start + n + 1;
                Ok(Ok(&b[start..start + n]))
            }
            Some(_) => Ok(Err(start)),
            None => Err(Fault::new(start - 1, "unterminated string")),
        }
    }

    /// Decodes [`JsonCursor::latin1_string`]'s string from `start` (past its quote) onto the end
    /// of `out`. The message is UTF-8, so a lead byte is followed by its continuation bytes;
    /// U+0080 to U+00FF are the two-byte characters led by 0xC2 and 0xC3. A binary value's bytes
    /// are as likely one kind as the other, so which it is must not be a branch: a byte below
    /// 0x80 and a two-byte character are both read by one path, the stops ([`LATIN1_STOPS`])
    /// taken apart.
    fn latin1_decode(&mut self, start: usize, out: &mut Vec<u8>) -> FaultResult<()> {
        let b = self.bytes();
        let mut i = start;
        loop {
            match self.run_by_blocks::<true>(&mut i, out) {
                Some(true) => break,
                Some(false) => continue,
                None => {}
            }
            let c = *b.get(i).ok_or_else(|| Fault::new(start - 1, "unterminated string"))?;
            if LATIN1_STOPS[c as usize] {
                match c {
                    b'"' => break,
                    b'\\' => {
                        let (byte, used) = self.latin1_escape(start, i)?;
                        out.push(byte);
                        i += used;
                        continue;
                    }
                    _ => {
                        let c = self.src.get(i..).and_then(|s| s.chars().next()).unwrap_or(char::REPLACEMENT_CHARACTER);
                        return Err(latin1_above(start, c as u32));
                    }
                }
            }
            let two = usize::from(c >> 7);
            let lead = 0u8.wrapping_sub(c >> 7);
            let next = b.get(i + 1).copied().unwrap_or(0);
            out.push((c << 6 | next & 0x3f) & lead | c & !lead);
            i += 1 + two;
        }
        self.pos = i + 1;
        Ok(())
    }

    /// The byte the escape at `at` in a Latin-1 string from `start` stands for, and the bytes
    /// the escape takes.
    #[inline]
    fn latin1_escape(&self, start: usize, at: usize) -> FaultResult<(u8, usize)> {
        let b = self.bytes();
        let esc = *b.get(at + 1).ok_or_else(|| Fault::new(at, "unterminated escape"))?;
        if esc != b'u' {
            return Ok((short_escape(esc).ok_or_else(|| Fault::new(at, "invalid escape"))?, 2));
        }
        match b.get(at + 2..at + 6) {
            Some(&[b'0', b'0', high, low]) if high.is_ascii_hexdigit() && low.is_ascii_hexdigit() => {
                Ok((hex_value(high) << 4 | hex_value(low), 6))
            }
            _ => {
                let (c, used) = self.unicode_escape(at + 2)?;
                Ok((u8::try_from(c).map_err(|_| latin1_above(start, c as u32))?, 2 + used))
            }
        }
    }

    /// Reads the hex of a `\u` escape at `at` (just past the `u`), joining surrogate pairs. A lone
    /// surrogate becomes U+FFFD, as Go's decoder does. Returns the char and the bytes consumed.
    fn unicode_escape(&self, at: usize) -> FaultResult<(char, usize)> {
        let hex4 = |p: usize| -> FaultResult<u32> {
            let h = self.bytes().get(p..p + 4).ok_or_else(|| Fault::new(p, "truncated \\u escape"))?;
            let digits = [h[0], h[1], h[2], h[3]].map(hex_value);
            if digits.iter().any(|&d| d > 0xf) {
                return Err(Fault::new(p, "invalid \\u escape"));
            }
            Ok(digits.iter().fold(0, |code, &d| code << 4 | u32::from(d)))
        };
        let hi = hex4(at)?;
        if (0xD800..0xDC00).contains(&hi) && self.bytes().get(at + 4..at + 6) == Some(b"\\u") {
            let lo = hex4(at + 6)?;
            if (0xDC00..0xE000).contains(&lo) {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return Ok((char::from_u32(c).unwrap_or('\u{FFFD}'), 10));
            }
        }
        Ok((char::from_u32(hi).unwrap_or('\u{FFFD}'), 4))
    }

    /// Starts reading an object; pair with [`JsonCursor::next_key`].
    pub fn begin_object(&mut self) -> FaultResult<()> {
        self.expect(b'{')
    }

    /// Whether another member of the object being read follows (consuming its `,`), false at
    /// its `}`. `first` tracks whether a separating comma is due.
    #[inline(always)]
    pub fn next_member(&mut self, first: &mut bool) -> FaultResult<bool> {
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                return Ok(false);
            }
            Some(b',') if !*first => self.pos += 1,
            _ if *first => {}
            _ => return Err(self.fault("expected ',' or '}'")),
        }
        *first = false;
        Ok(true)
    }

    /// The next key of the object being read (consuming its `:`), or None at its `}`.
    #[inline(always)]
    pub fn next_key(&mut self, first: &mut bool) -> FaultResult<Option<Cow<'a, str>>> {
        if !self.next_member(first)? {
            return Ok(None);
        }
        let key = self.string()?;
        self.expect(b':')?;
        Ok(Some(key))
    }

    pub fn begin_array(&mut self) -> FaultResult<()> {
        self.expect(b'[')
    }

    /// Whether another item of the array being read follows (consuming its `,`), false at `]`.
    #[inline]
    pub fn next_item(&mut self, first: &mut bool) -> FaultResult<bool> {
        match self.peek() {
            Some(b']') => {
                self.pos += 1;
                return Ok(false);
            }
            Some(b',') if !*first => self.pos += 1,
            _ if *first => {}
            _ => return Err(self.fault("expected ',' or ']'")),
        }
        *first = false;
        Ok(true)
    }

    /// Skips one value of any kind, iteratively.
    pub fn skip_value(&mut self) -> FaultResult<()> {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return Err(self.fault("unexpected end of message")),
                Some(b'{' | b'[') => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(self.fault("nesting too deep"));
                    }
                    self.pos += 1;
                    continue;
                }
                Some(b'}' | b']') if depth > 0 => {
                    depth -= 1;
                    self.pos += 1;
                }
                Some(b'"') => {
                    self.string()?;
                }
                Some(b't' | b'f') => {
                    self.bool()?;
                }
                Some(b'n') => {
                    self.literal("null")?;
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.number_text()?;
                }
                Some(c) => return Err(self.fault(format!("unexpected '{}'", c as char))),
            }
            // Inside a container a value is followed by a separator: ',' between members, or ':'
            // after a key (skipped here like any string). Brackets balance at the loop's top.
            if depth == 0 {
                return Ok(());
            }
            if matches!(self.peek(), Some(b',' | b':')) {
                self.pos += 1;
            }
        }
    }
}

/// The keys of one kind of object as the last object of that kind wrote them, each with what
/// it stood for. TiCDC writes every message of a table with the same keys in the same order, so
/// each key of the next object is matched against the bytes learnt for its place, separator and
/// colon included, with one comparison, instead of being read as a string and looked up by name
/// (Mison, VLDB 2017, skips repeated fields by their learnt positions in the same way). The same
/// bytes are the same key, however they are spaced. A key that differs is read the general way
/// and learnt for its place, in place of those that followed it; a key with escapes is not learnt.
#[derive(Debug)]
pub struct KeyOrder<K> {
    text: Vec<u8>,
    keys: Vec<LearntKey<K>>,
}

#[derive(Debug)]
struct LearntKey<K> {
    /// The key's bytes in `text`, from its separator to its colon.
    bytes: std::ops::Range<usize>,
    /// Where the name lies in those bytes.
    name: std::ops::Range<usize>,
    key: K,
}

impl<K> Default for KeyOrder<K> {
    fn default() -> Self {
        KeyOrder { text: Vec::new(), keys: Vec::new() }
    }
}

/// A key's name: where it lies in the message when its bytes were learnt, else as read.
type KeyName<'a> = Result<std::ops::Range<usize>, Cow<'a, str>>;

impl<K: Copy> KeyOrder<K> {
    /// The key of member `nth` (from 0) of the object being read, as `resolve` makes it of the
    /// key's name, its separator and colon consumed; None at the object's end, its `}` consumed.
    /// `resolve` must give the same for the same name until [`Self::forget`].
    #[inline(always)]
    pub fn next(
        &mut self,
        cur: &mut JsonCursor<'_>,
        nth: usize,
        resolve: impl FnOnce(&str) -> K,
    ) -> FaultResult<Option<K>> {
        Ok(self.next_key(cur, nth, resolve)?.map(|(key, name)| {
            if let Err(Cow::Owned(name)) = name {
                cur.spare().give(name.into_bytes());
            }
            key
        }))
    }

    /// [`Self::next`], and the key's name.
    #[inline(always)]
    pub fn next_named<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        nth: usize,
        resolve: impl FnOnce(&str) -> K,
    ) -> FaultResult<Option<(K, Cow<'a, str>)>> {
        let named = self.next_key(cur, nth, resolve)?;
        Ok(named.map(|(key, name)| (key, name.map_or_else(|name| name, |at| Cow::Borrowed(cur.slice(at))))))
    }

    #[inline(always)]
    fn next_key<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        nth: usize,
        resolve: impl FnOnce(&str) -> K,
    ) -> FaultResult<Option<(K, KeyName<'a>)>> {
        match self.keys.get(nth) {
            Some(learnt) if cur.skip_if_next(&self.text[learnt.bytes.clone()]) => {
                let from = cur.offset() - learnt.bytes.len();
                return Ok(Some((learnt.key, Ok(from + learnt.name.start..from + learnt.name.end))));
            }
            // Past the learnt keys: the object ends where the last one of its kind ended.
            None if cur.skip_if_next(b"}") => return Ok(None),
            _ => {}
        }
        self.learn(cur, nth, resolve)
    }

    #[cold]
    fn learn<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        nth: usize,
        resolve: impl FnOnce(&str) -> K,
    ) -> FaultResult<Option<(K, KeyName<'a>)>> {
        cur.peek();
        let from = cur.offset();
        if !cur.next_member(&mut (nth == 0))? {
            return Ok(None);
        }
        cur.peek();
        let name_at = cur.offset() + 1;
        let name = cur.string()?;
        cur.expect(b':')?;
        let key = resolve(&name);
        if nth <= self.keys.len() {
            let cut = self.keys.get(nth).map_or(self.text.len(), |learnt| learnt.bytes.start);
            self.keys.truncate(nth);
            self.text.truncate(cut);
            if let Cow::Borrowed(plain) = name {
                self.text.extend_from_slice(&cur.bytes()[from..cur.offset()]);
                let name = name_at - from..name_at - from + plain.len();
                self.keys.push(LearntKey { bytes: cut..self.text.len(), name, key });
            }
        }
        Ok(Some((key, Err(name))))
    }

    /// Forgets every key, when what `resolve` gives has changed.
    pub fn forget(&mut self) {
        self.text.clear();
        self.keys.clear();
    }
}

/// Where `part`, a slice of `whole`, lies in it; None when it is not one. A codec remembers
/// the strings it read from a message's repeated bytes by their spans in those bytes.
pub(crate) fn span_in(whole: &[u8], part: &[u8]) -> Option<std::ops::Range<usize>> {
    let from = (part.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
    (from.saturating_add(part.len()) <= whole.len()).then_some(from..from + part.len())
}

/// The offset of the first `"` or `\` in `b`. Most strings of a change event are short (keys,
/// numbers and dates as text), which a few 16-byte blocks cover; past the first 64 bytes the
/// SIMD search of `memchr` takes over.
#[inline(always)]
fn quote_or_escape(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(block) = block_at(b, i).filter(|_| i < 64) {
        let stops = quote_or_escape_mask(block);
        if stops != 0 {
            return Some(i + stops.trailing_zeros() as usize);
        }
        i += BLOCK;
    }
    memchr2(b'"', b'\\', &b[i..]).map(|n| i + n)
}

/// The bytes [`quote_or_escape_mask`] reads at once.
const BLOCK: usize = 16;

#[inline(always)]
fn block_at(b: &[u8], i: usize) -> Option<&[u8; BLOCK]> {
    b.get(i..i + BLOCK).and_then(|block| block.try_into().ok())
}

/// A bit for each byte of `block` that is a `"` or `\`, the first byte's the lowest.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn quote_or_escape_mask(block: &[u8; BLOCK]) -> u32 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
    // SAFETY: SSE2 is part of every x86_64 target; the load reads the 16 bytes of `block` and
    // needs no alignment.
    unsafe {
        let bytes = _mm_loadu_si128(block.as_ptr().cast());
        let quotes = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'"' as i8));
        let escapes = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(quotes, escapes)) as u32
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn quote_or_escape_mask(block: &[u8; BLOCK]) -> u32 {
    quote_or_escape_mask_bytewise(block)
}

/// [`quote_or_escape_mask`] a byte at a time: where there is no SSE2, and as its model in tests.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn quote_or_escape_mask_bytewise(block: &[u8; BLOCK]) -> u32 {
    block.iter().enumerate().fold(0, |mask, (k, &c)| mask | (u32::from(c == b'"' || c == b'\\') << k))
}

/// Copies the plain bytes at `b[*i..]` to `out` and steps over them, up to sixteen: those
/// before the first `"` or `\`, copied by [`copy_over`]. Returns whether all were plain. Within
/// sixteen bytes of the end it goes a word at a time.
#[inline(always)]
fn copy_plain(b: &[u8], i: &mut usize, out: &mut Vec<u8>) -> bool {
    let Some(block) = block_at(b, *i) else { return copy_plain_word(b, i, out, quote_or_escape_bytes) };
    let stops = quote_or_escape_mask(block);
    let plain = if stops == 0 { BLOCK } else { stops.trailing_zeros() as usize };
    copy_over(out, block, plain);
    *i += plain;
    stops == 0
}

/// Appends the first `len` bytes of `run` to `out`: all of `run` copied (a fixed-size copy) and
/// the length then cut, where `out` has the room, so that `out` (which may be a column's bytes,
/// sized to its values) never grows for the bytes cut.
#[inline(always)]
fn copy_over<const N: usize>(out: &mut Vec<u8>, run: &[u8; N], len: usize) {
    if out.capacity() - out.len() >= N {
        let start = out.len();
        out.extend_from_slice(run);
        out.truncate(start + len);
    } else {
        copy_exact(out, &run[..len]);
    }
}

/// [`copy_over`] at the end of `out`'s room: kept apart, as merged with the fixed-size copy it
/// made that one a `memcpy` call of variable length.
#[cold]
#[inline(never)]
fn copy_exact(out: &mut Vec<u8>, run: &[u8]) {
    out.extend_from_slice(run);
}

/// The bytes that stop [`JsonCursor::latin1_decode`]'s common path: the closing quote, a
/// backslash, and the lead bytes of characters above U+00FF (every lead byte but 0xC2 and 0xC3).
const LATIN1_STOPS: [bool; 256] = {
    let mut table = [false; 256];
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    let mut c = 0x80;
    while c < 0x100 {
        table[c] = c != 0xc2 && c != 0xc3;
        c += 1;
    }
    table
};

/// A binary value's character above U+00FF, at its string's quote (`start` is past it).
#[cold]
fn latin1_above(start: usize, c: u32) -> Fault {
    Fault::new(start - 1, format!("binary column value has code point U+{c:04X} above U+00FF"))
}

/// The byte a two-character escape (`\n`, `\"`, ...) stands for, by the character after the
/// backslash. Looked up in a table: a `match` became a jump table whose indirect jump, taken
/// once per escape, mispredicted on text that mixes `\"`, `\n` and `\u` (a fifth of
/// `unescape`'s samples in `perf record`).
#[inline(always)]
fn short_escape(esc: u8) -> Option<u8> {
    Some(SHORT_ESCAPES[esc as usize]).filter(|&byte| byte != 0)
}

/// [`short_escape`]'s table: zero for a character that makes no two-character escape.
const SHORT_ESCAPES: [u8; 256] = {
    let mut table = [0; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// The value of a hex digit, or 0xFF for any other byte. Looked up in a table, as
/// [`short_escape`] is: `\u` escapes come every few bytes in escaped text.
#[inline(always)]
pub(crate) fn hex_value(byte: u8) -> u8 {
    HEX_VALUES[byte as usize]
}

const HEX_VALUES: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// The high bit of each byte of a word: set for the bytes of a non-ASCII character.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` (read little-endian) that is a `"` or `\`, where a byte
/// equal to the one sought is a zero byte of `word ^ sought`. Only the lowest flag is exact:
/// false flags appear only above a true one.
#[inline]
fn quote_or_escape_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let quote = word ^ (ONES * b'"' as u64);
    let escape = word ^ (ONES * b'\\' as u64);
    ((quote.wrapping_sub(ONES) & !quote) | (escape.wrapping_sub(ONES) & !escape)) & HIGH_BITS
}

/// Copies the plain bytes of the word at `b[*i..]` to `out` and steps over them: those before
/// the first byte `stops` flags (by its high bit; only the lowest flag need be exact). All eight
/// are copied (a fixed-size copy) and the length then cut. Returns whether all eight were plain
/// (false too when fewer than eight bytes are left).
#[inline(always)]
fn copy_plain_word(b: &[u8], i: &mut usize, out: &mut Vec<u8>, stops: impl Fn(u64) -> u64) -> bool {
    let Some(word) = b.get(*i..*i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) else { return false };
    let stop = stops(u64::from_le_bytes(word));
    let plain = if stop == 0 { 8 } else { (stop.trailing_zeros() / 8) as usize };
    copy_over(out, &word, plain);
    *i += plain;
    stop == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_or_escape_finds_the_first() {
        for len in 0..200 {
            for at in 0..len {
                for c in [b'"', b'\\'] {
                    let mut b = vec![b'a'; len];
                    b[at] = c;
                    if at + 1 < len {
                        b[at + 1] = b'"';
                    }
                    assert_eq!(quote_or_escape(&b), Some(at), "len {len} at {at}");
                }
            }
            assert_eq!(quote_or_escape(&vec![0x22 ^ 0x80; len]), None);
        }
    }

    #[test]
    fn block_masks_flag_quotes_and_escapes_only() {
        let mut seed = 11u64;
        for _ in 0..20_000 {
            let mut block = [0u8; BLOCK];
            for byte in &mut block {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                *byte = match (seed >> 60) % 4 {
                    0 => b'"',
                    1 => b'\\',
                    _ => (seed >> 33) as u8,
                };
            }
            assert_eq!(quote_or_escape_mask(&block), quote_or_escape_mask_bytewise(&block), "{block:?}");
        }
    }

    #[test]
    fn unescape_matches_a_reference_at_every_position() {
        let pieces = ["a", "é", "\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\/", "xyzxyzxy", "日本"];
        let decoded = ["a", "é", "\"", "\\", "\n", "é", "😀", "/", "xyzxyzxy", "日本"];
        // What follows the string: nothing, a few bytes, or more than a 16-byte block of them.
        let long_tail = format!(" {}", "\\\"".repeat(40));
        let tails = ["", " tail", long_tail.as_str()];
        let mut seed = 7u64;
        for round in 0..3000 {
            let tail = tails[round % tails.len()];
            let (mut json, mut want) = (String::from("\"\\t"), String::from("\t"));
            for _ in 0..(seed % 24) {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let k = (seed >> 33) as usize % pieces.len();
                json.push_str(pieces[k]);
                want.push_str(decoded[k]);
            }
            json.push('"');
            json.push_str(tail);
            let mut c = JsonCursor::new(json.as_bytes()).unwrap();
            assert_eq!(c.string().unwrap(), want, "{json}");
            assert_eq!(&json[c.offset()..], tail);
            let (mut c, mut out) = (JsonCursor::new(json.as_bytes()).unwrap(), String::from("before "));
            assert_eq!(c.string_or_into(&mut out).unwrap(), None);
            assert_eq!(out, format!("before {want}"), "{json}");
            assert_eq!(&json[c.offset()..], tail);
        }
        let mut plain = JsonCursor::new(br#" "plain" tail"#).unwrap();
        let mut out = String::new();
        assert_eq!(plain.string_or_into(&mut out).unwrap(), Some("plain"));
        assert_eq!((out.as_str(), plain.offset()), ("", 8));
        for bad in [&br#"12"#[..], br#""ab"#, br#""ab\"#, br#""ab\q""#, "\"é\\u12g4\"".as_bytes(), "\"é\\n".as_bytes()]
        {
            let mut out = String::from("kept");
            assert!(JsonCursor::new(bad).unwrap().string_or_into(&mut out).is_err());
            assert_eq!(out, "kept");
        }
        assert!(JsonCursor::new(b"\"ab\\n12345678901234567890").unwrap().string().is_err());
        assert!(JsonCursor::new(b"\"ab\\").unwrap().string().is_err());
        assert!(JsonCursor::new(b"\"ab\\q\"").unwrap().string().is_err());
        assert_eq!(JsonCursor::new(br#""\u00C9\u00c9\uD83D\uDE00""#).unwrap().string().unwrap(), "ÉÉ😀");
        for bad in [&br#""\u12g4""#[..], br#""\u00e""#, br#""\u/000""#, br#""\u:000""#, br#""\u@000""#, br#""\uG000""#]
        {
            assert!(JsonCursor::new(bad).unwrap().string().is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    /// The block-at-a-time strings (each [`StringBlocks`] the machine runs) against the scalar
    /// reader: the same bytes, the same fault, the cursor left at the same place, for text and
    /// for binary values, in long strings that mix every kind of escape and character, cut off
    /// at every distance from the end of the message.
    #[test]
    fn strings_read_by_blocks_as_by_bytes() {
        use proptest::prelude::*;
        let pieces = prop_oneof![
            4 => "[a-z ,:{}\\[\\]]{1,12}",
            1 => Just(r#"\""#.to_string()),
            1 => Just(r"\n".to_string()),
            1 => prop::sample::select(vec![r"\\", r"\/", r"\b", r"\f", r"\r", r"\t", r"\q", r"\"])
                .prop_map(str::to_string),
            2 => (0u32..0x1ff).prop_map(|c| format!("\\u{c:04x}")),
            1 => (0u32..0x1ff).prop_map(|c| format!("\\u{c:04X}")),
            1 => prop::sample::select(vec![r"\ud83d\ude00", r"\u00", r"\u00g1", r"\u12"]).prop_map(str::to_string),
            2 => (0x80u32..0x100).prop_map(|c| char::from_u32(c).unwrap().to_string()),
            1 => prop::sample::select(vec!["Ā", "東京", "😀", "\u{1}", "\u{7f}"]).prop_map(str::to_string),
        ];
        let strings = (prop::collection::vec(pieces, 0..40), any::<bool>(), 0usize..80);
        proptest!(ProptestConfig::with_cases(3000), |((pieces, closed, tail) in strings)| {
            let mut json = format!("\"{}", pieces.concat());
            if closed {
                json.push('"');
            }
            json.push_str(&"x".repeat(tail));
            let read = |blocks: Option<StringBlocks>, latin1: bool| {
                let mut c = JsonCursor::new(json.as_bytes()).unwrap();
                c.blocks = blocks;
                let read = if latin1 {
                    c.latin1_string().map(Cow::into_owned)
                } else {
                    c.string().map(|s| s.into_owned().into_bytes())
                };
                (read.map_err(|f| (f.offset, f.reason)), c.offset())
            };
            for (blocks, latin1) in StringBlocks::all().into_iter().flat_map(|b| [(b, false), (b, true)]) {
                prop_assert_eq!(read(Some(blocks), latin1), read(None, latin1), "{} latin1 {}", json, latin1);
            }
        });
    }

    /// `latin1_string` against a model: the string read as text, then each character's code
    /// point as a byte, or the first character above U+00FF as the fault.
    #[test]
    fn latin1_strings_are_their_code_points() {
        let pieces = [
            "a", "xyzxyzxy", "é", "ÿ", r"\u00ff", r"\u00E9", r"\u0001", r"\n", r#"\""#, r"\\", r"\/", "Ā", "東",
            r"\ud83d\ude00", r"\u0100",
        ];
        let model = |json: &str| -> Result<Vec<u8>, String> {
            let text = JsonCursor::new(json.as_bytes()).unwrap().string().unwrap();
            match text.chars().find(|&c| c as u32 > 0xff) {
                Some(c) => Err(format!("binary column value has code point U+{:04X} above U+00FF", c as u32)),
                None => Ok(text.chars().map(|c| c as u8).collect()),
            }
        };
        let mut seed = 11u64;
        for _ in 0..3000 {
            let mut json = String::from("\"");
            for _ in 0..(seed % 20) {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                json.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            json.push_str("\" tail");
            let mut c = JsonCursor::new(json.as_bytes()).unwrap();
            let read = c.latin1_string().map(Cow::into_owned).map_err(|f| f.reason);
            assert_eq!(read, model(&json), "{json}");
            let mut out = b"kept".to_vec();
            let into = JsonCursor::new(json.as_bytes()).unwrap().latin1_or_into(&mut out).map_err(|f| f.reason);
            let into = into.map(|plain| plain.map_or_else(|| out[4..].to_vec(), <[u8]>::to_vec));
            assert_eq!(into, read, "{json}");
            if read.is_ok() {
                assert_eq!(&json[c.offset()..], " tail");
            }
        }
        // Every code point to U+01FF, raw where JSON allows it and as an escape, between others.
        for c in (0..0x200u32).filter_map(char::from_u32) {
            let escaped = format!("\"x\\u{:04x}\u{e9}\" tail", c as u32);
            let raw = format!("\"x{c}\u{e9}\" tail");
            for json in [Some(escaped), (c >= ' ' && c != '"' && c != '\\').then_some(raw)].into_iter().flatten() {
                let read = JsonCursor::new(json.as_bytes()).unwrap().latin1_string().map(Cow::into_owned);
                assert_eq!(read.map_err(|f| f.reason), model(&json), "{json}");
            }
        }
        assert!(JsonCursor::new(b"\"ab\\n12345678901234567890").unwrap().latin1_string().is_err());
        assert!(JsonCursor::new(b"\"\xc3\xa9").unwrap().latin1_string().is_err());
    }

    #[test]
    fn integers_read_as_str_parse_reads_their_token() {
        let cases = [
            "0",
            "7",
            "007",
            "18446744073709551615",
            "18446744073709551616",
            "9223372036854775807",
            "9223372036854775808",
            "-1",
            "-9223372036854775808",
            "1.5",
            "1e3",
            "12-",
            "+5",
            "x",
            "",
            "42}",
            "42 ,",
        ];
        for text in cases {
            let token: String =
                text.chars().take_while(|c| matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E')).collect();
            let rest = &text[token.len()..];
            for (read, want) in [
                (
                    JsonCursor::new(text.as_bytes()).unwrap().u64().ok().map(|v| v.to_string()),
                    token.parse::<u64>().ok().map(|v| v.to_string()),
                ),
                (
                    JsonCursor::new(text.as_bytes()).unwrap().i64().ok().map(|v| v.to_string()),
                    token.parse::<i64>().ok().map(|v| v.to_string()),
                ),
            ] {
                assert_eq!(read, want, "{text:?}");
            }
            let mut c = JsonCursor::new(text.as_bytes()).unwrap();
            if c.u64().is_ok() {
                assert_eq!(&text[c.offset()..], rest, "{text:?}");
            }
        }
    }

    #[test]
    fn integers_read_as_str_parse_reads_them() {
        let mut texts: Vec<String> =
            vec!["0".into(), "007".into(), u64::MAX.to_string(), "18446744073709551616".into()];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 1..=21 {
            for _ in 0..20 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let digits: String = (0..len).map(|i| char::from(b'0' + (x >> (i % 60)) as u8 % 10)).collect();
                texts.push(digits);
            }
        }
        for text in &texts {
            for after in ["", ",", "}", ".5", "e3", "x"] {
                let message = format!("{text}{after}");
                let mut cur = JsonCursor::new(message.as_bytes()).unwrap();
                let read = cur.u64().ok();
                let expected: Result<u64, _> =
                    if after.starts_with(['.', 'e']) { message.parse::<u64>() } else { text.parse::<u64>() };
                assert_eq!(read, expected.ok(), "{message}");
                if read.is_some() {
                    assert_eq!(cur.offset(), text.len(), "{message}");
                }
            }
        }
    }

    #[test]
    fn strings_borrow_or_unescape() {
        let mut c = JsonCursor::new(br#""plain" "a\"b\u00e9\ud83d\ude00\n""#).unwrap();
        assert!(matches!(c.string().unwrap(), Cow::Borrowed("plain")));
        assert_eq!(c.string().unwrap(), "a\"bé😀\n");
    }

    /// Every key of every object, as `KeyOrder` gives them, against the keys read one by one.
    #[test]
    fn learnt_keys_are_the_keys_read() {
        // Each object, and how many of its keys are read and resolved rather than matched: none
        // where it repeats the object before, those from a change on, all after a key with
        // escapes (not learnt).
        let objects = [
            (r#"{"a":1,"bb":2,"c":3}"#, 3),
            (r#"{"a":1,"bb":2,"c":3}"#, 0),
            (r#"{"a":1, "bb" :2,"c":3,"d":4}"#, 3),
            (r#"{"a":1,"bb":2}"#, 1),
            (r#"{ "a":1, "bb" :2,"c":3,"d":4}"#, 3),
            (r#"{"b\u0062":1,"a":2,"bb":3}"#, 3),
            (r#"{"b\u0062":1,"a":2,"bb":3}"#, 3),
            (r#"{"bb":1,"a":2}"#, 2),
            (r#"{}"#, 0),
            (r#"{"a":1,"bb":2,"c":3}"#, 3),
            (r#"{"a":1,"bb":2,"c":3}"#, 0),
        ];
        let mut order = KeyOrder::default();
        for (object, reads) in objects {
            let mut learnt = JsonCursor::new(object.as_bytes()).unwrap();
            let mut read = JsonCursor::new(object.as_bytes()).unwrap();
            learnt.begin_object().unwrap();
            read.begin_object().unwrap();
            let (mut nth, mut first, mut resolved) = (0, true, 0);
            loop {
                let key = order.next_named(&mut learnt, nth, |name| {
                    resolved += 1;
                    name.len()
                });
                let want = read.next_key(&mut first).unwrap();
                let Some((len, name)) = key.unwrap() else {
                    assert!(want.is_none(), "{object}");
                    break;
                };
                assert_eq!(Some(&name), want.as_ref(), "{object}");
                assert_eq!(len, name.len());
                learnt.skip_value().unwrap();
                read.skip_value().unwrap();
                nth += 1;
            }
            assert!(learnt.at_end());
            assert_eq!(resolved, reads, "{object}");
        }
    }

    #[test]
    fn objects_and_skipping() {
        let src = br#"{"a": [1, {"x": "}"}, null], "b" : true, "c": {"d": [[]]}, "e": 18446744073709551615}"#;
        let mut c = JsonCursor::new(src).unwrap();
        c.begin_object().unwrap();
        let mut first = true;
        let mut keys = vec![];
        while let Some(k) = c.next_key(&mut first).unwrap() {
            if k == "e" {
                assert_eq!(c.u64().unwrap(), u64::MAX);
            } else {
                c.skip_value().unwrap();
            }
            keys.push(k.into_owned());
        }
        assert_eq!(keys, ["a", "b", "c", "e"]);
        assert!(c.at_end());
    }

    #[test]
    fn faults_have_offsets() {
        let mut c = JsonCursor::new(br#"{"a": tru}"#).unwrap();
        c.begin_object().unwrap();
        c.next_key(&mut true).unwrap();
        assert_eq!(c.skip_value().unwrap_err().offset, 6);
        assert_eq!(JsonCursor::new(b"ab\xffc").err().unwrap().offset, 2);
        let deep = "[".repeat(10_000);
        assert!(JsonCursor::new(deep.as_bytes()).unwrap().skip_value().is_err());
    }
}
