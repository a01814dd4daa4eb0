//! The text forms tiflow's open-protocol encoder gets from Go's standard library, reproduced
//! byte for byte: `encoding/json` strings (HTML-safe) and numbers, and `strconv.Quote` for
//! binary strings, with its inverse for the decoder.

use std::borrow::Cow;
use std::io::Write;

use super::printable::is_print;
use crate::event::SpareBuffers;
use crate::json::blocks::StringBlocks;
use crate::json::hex_value;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes `encoding/json` does not copy as is: control bytes, `"`, `\`, the HTML-sensitive
/// `<`, `>`, `&`, and 0xE2, the lead byte of U+2028 / U+2029 (checked further when met).
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xE2] = true;
    t
};

/// Writes `s` as a JSON string the way Go's `encoding/json` does (with `SetEscapeHTML(true)`).
pub fn write_json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    write_json_str_body(out, s.as_bytes());
    out.push(b'"');
}

/// Writes possibly invalid UTF-8 as a JSON string: each byte of an invalid sequence becomes
/// `\ufffd`, as `encoding/json` does for Go strings holding arbitrary bytes.
pub fn write_json_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    if let Ok(text) = crate::utf8::check(bytes) {
        return write_json_str(out, text);
    }
    out.push(b'"');
    for chunk in bytes.utf8_chunks() {
        write_json_str_body(out, chunk.valid().as_bytes());
        for _ in chunk.invalid() {
            out.extend_from_slice(b"\\ufffd");
        }
    }
    out.push(b'"');
}

/// `b` must be valid UTF-8. Runs of plain bytes are skipped a word at a time.
fn write_json_str_body(out: &mut Vec<u8>, b: &[u8]) {
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        if let Some(word) = b.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
            let hits = special_bytes(u64::from_le_bytes(word));
            if hits == 0 {
                i += 8;
                continue;
            }
            i += (hits.trailing_zeros() / 8) as usize;
        }
        let c = b[i];
        if !SPECIAL[c as usize] {
            i += 1;
            continue;
        }
        if c == 0xE2 {
            // U+2028 and U+2029 are E2 80 A8 / E2 80 A9.
            match (b.get(i + 1), b.get(i + 2)) {
                (Some(0x80), Some(&last @ (0xA8 | 0xA9))) => {
                    out.extend_from_slice(&b[start..i]);
                    out.extend_from_slice(if last == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                    i += 3;
                    start = i;
                }
                _ => i += 1,
            }
            continue;
        }
        out.extend_from_slice(&b[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]),
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&b[start..]);
}

/// The high bit of each byte of `word` (read little-endian) that [`SPECIAL`] marks, where a
/// byte below 0x20 borrows when 0x20 is taken from it and a byte equal to one sought is a zero
/// byte of `word ^ sought`. Only the lowest flag is exact (false flags appear only above a true
/// one), and the lowest is all the scan needs.
#[inline]
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * n as u64) & !x;
    let equal = |c: u8| below(word ^ (ONES * c as u64), 1);
    let control = below(word, 0x20);
    (control | equal(b'"') | equal(b'\\') | equal(b'<') | equal(b'>') | equal(b'&') | equal(0xE2)) & HIGH
}

/// Go's `strconv.Quote(string(bytes))` without the surrounding quotes.
pub fn go_quote(bytes: &[u8], out: &mut String) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            quote_char(c, out);
        }
        for &b in chunk.invalid() {
            push_hex(out, "\\x", b as u32, 2);
        }
    }
}

fn quote_char(c: char, out: &mut String) {
    match c {
        '"' | '\\' => {
            out.push('\\');
            out.push(c);
        }
        _ if is_print(c) => out.push(c),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        _ if (c as u32) < 0x20 || c == '\u{7f}' => push_hex(out, "\\x", c as u32, 2),
        _ if (c as u32) < 0x10000 => push_hex(out, "\\u", c as u32, 4),
        _ => push_hex(out, "\\U", c as u32, 8),
    }
}

fn push_hex(out: &mut String, prefix: &str, v: u32, digits: u32) {
    out.push_str(prefix);
    for i in (0..digits).rev() {
        out.push(HEX[((v >> (4 * i)) & 15) as usize] as char);
    }
}

/// Undoes `strconv.Quote` (the inner text, quotes already stripped), as Go's `strconv.Unquote`
/// of a double-quoted string: the bytes, or the offset in `s` of what it rejects and why. Bytes
/// with escapes are written into a buffer from `spare`.
pub fn go_unquote<'s>(s: &'s str, spare: &mut SpareBuffers) -> Result<Cow<'s, [u8]>, (usize, &'static str)> {
    let b = s.as_bytes();
    let Some(first) = b.iter().position(|&c| matches!(c, b'\\' | b'"' | b'\n')) else {
        return Ok(Cow::Borrowed(b));
    };
    let mut out = spare.take(b.len());
    out.extend_from_slice(&b[..first]);
    let mut i = first;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => return Err((i, "unescaped '\"' in a binary string")),
            b'\n' => return Err((i, "raw newline in a binary string")),
            b'\\' => {}
            _ => {
                out.push(c);
                i += 1;
                continue;
            }
        }
        i += 1 + go_escape(b, i + 1, &mut out).map_err(|why| (i, why))?;
    }
    Ok(Cow::Owned(out))
}

/// [`go_unquote`] of a JSON string as written (`json`, from past its opening quote), in one
/// pass: the bytes of a binary value, which Go quoted with `strconv.Quote` and `encoding/json`
/// then escaped, with the length of the string read (its closing quote included). Quoted text is
/// printable, so the JSON escapes it holds are `\\` (the backslash of a Go escape), `\"` after
/// one, and `\u00XX` for `<`, `>` and `&`. None for anything else: the caller then unescapes the
/// JSON and unquotes the text, the general way that also says what is wrong. Bytes with escapes
/// are written into a buffer from `spare`.
pub fn go_unquote_json<'s>(
    json: &'s [u8],
    spare: &mut SpareBuffers,
    blocks: Option<StringBlocks>,
) -> Option<(Cow<'s, [u8]>, usize)> {
    let mut out = spare.take(json.len().min(256));
    match go_unquote_json_or_into(json, &mut out, blocks) {
        Some((None, used)) => Some((Cow::Owned(out), used)),
        Some((Some(bytes), used)) => {
            spare.give(out);
            Some((Cow::Borrowed(bytes), used))
        }
        None => {
            spare.give(out);
            None
        }
    }
}

/// [`go_unquote_json`] for a codec that decodes into a buffer it keeps (a binary column's own):
/// the bytes borrowed when they have no escapes, else written onto the end of `out` and None
/// returned in their place. When it returns None, `out` is as it was.
pub fn go_unquote_json_or_into<'s>(
    json: &'s [u8],
    out: &mut Vec<u8>,
    blocks: Option<StringBlocks>,
) -> Option<(Option<&'s [u8]>, usize)> {
    let first = first_stop(json)?;
    if json[first] == b'"' {
        return Some((Some(&json[..first]), first + 1));
    }
    let len = out.len();
    out.extend_from_slice(&json[..first]);
    match unquote_json_from(json, first, out, blocks) {
        Some(used) => Some((None, used)),
        None => {
            out.truncate(len);
            None
        }
    }
}

/// Where the text of a JSON string as written first needs a look: its closing quote, an
/// escape, or a raw newline (which Go would have quoted).
#[inline(always)]
fn first_stop(json: &[u8]) -> Option<usize> {
    memchr::memchr3(b'"', b'\\', b'\n', json)
}

/// [`go_unquote_json`] from `i`, the first backslash; the length read.
/// Where the machine has them (`blocks`), blocks of plain bytes and hex escapes are read at once,
/// the loop below taking each step they leave.
fn unquote_json_from(json: &[u8], mut i: usize, out: &mut Vec<u8>, blocks: Option<StringBlocks>) -> Option<usize> {
    let hex = |from: usize, n: usize| -> Option<u32> {
        let digits = json.get(from..from + n)?;
        digits.iter().try_fold(0u32, |acc, &d| {
            let v = hex_value(d);
            (v < 16).then(|| acc << 4 | u32::from(v))
        })
    };
    loop {
        match blocks.and_then(|blocks| blocks.run_go_quoted(json, i, out).step(&mut i)) {
            Some(true) => return Some(i + 1),
            Some(false) => continue,
            None => {}
        }
        // Most bytes of a binary value are not printable: a run of `\\xNN` (Go's hex escape,
        // its backslash escaped for JSON) is read on its own, five bytes a byte. Its two digits
        // are read here rather than by `hex`, whose loop over the digits cost this run all it saves.
        while let Some(&[b'\\', b'\\', b'x', high, low]) = json.get(i..i + 5) {
            let (high, low) = (hex_value(high), hex_value(low));
            if (high | low) >= 16 {
                break;
            }
            out.push(high << 4 | low);
            i += 5;
        }
        match *json.get(i)? {
            b'"' => return Some(i + 1),
            b'\n' => return None,
            b'\\' => {}
            c => {
                out.push(c);
                i += 1;
                continue;
            }
        }
        match json.get(i + 1)? {
            // A JSON-escaped character, which Go's text holds as it is.
            b'u' => {
                let c = u8::try_from(hex(i + 2, 4)?).ok().filter(|c| c.is_ascii() && !b"\"\\\n".contains(c))?;
                out.push(c);
                i += 6;
                continue;
            }
            b'\\' => i += 2,
            _ => return None,
        }
        // A Go escape, its backslash read: a JSON-escaped `\` or `"`, or its letter and digits.
        i += match *json.get(i)? {
            b'\\' => {
                let escaped @ (b'\\' | b'"') = *json.get(i + 1)? else { return None };
                out.push(escaped);
                2
            }
            b'"' => return None,
            _ => go_escape(json, i, out).ok()?,
        };
    }
}

/// Reads the Go escape whose backslash is just before `b[at]` into `out`: the bytes it takes
/// after the backslash, or why Go's `strconv.Unquote` refuses it. Always inlined: the one-pass
/// reader meets an escape every few bytes of a binary value (out of line it cost 2.7%).
#[inline(always)]
fn go_escape(b: &[u8], at: usize, out: &mut Vec<u8>) -> Result<usize, &'static str> {
    let hex = |from: usize, n: usize| -> Result<u32, &'static str> {
        let digits = b.get(from..from + n).ok_or("truncated escape in a binary string")?;
        digits.iter().try_fold(0u32, |acc, &d| {
            let v = hex_value(d);
            if v < 16 {
                Ok(acc << 4 | u32::from(v))
            } else {
                Err("bad hex digit in a binary string escape")
            }
        })
    };
    let letter = *b.get(at).ok_or("dangling backslash in a binary string")?;
    Ok(match letter {
        b'\\' | b'"' => {
            out.push(letter);
            1
        }
        b'x' => {
            out.push(hex(at + 1, 2)? as u8);
            3
        }
        b'u' | b'U' => {
            let n = if letter == b'u' { 4 } else { 8 };
            let c = char::from_u32(hex(at + 1, n)?).ok_or("invalid code point in a binary string escape")?;
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            1 + n
        }
        b'0'..=b'7' => {
            let digits = b.get(at..at + 3).ok_or("truncated octal escape in a binary string")?;
            let mut v = 0u32;
            for &d in digits {
                if !(b'0'..=b'7').contains(&d) {
                    return Err("bad octal escape in a binary string");
                }
                v = v * 8 + (d - b'0') as u32;
            }
            if v > 255 {
                return Err("octal escape above 255 in a binary string");
            }
            out.push(v as u8);
            3
        }
        _ => {
            out.push(control_escape(letter).ok_or("unknown escape in a binary string")?);
            1
        }
    })
}

/// The byte of a Go escape made of one letter (`\n`, `\a`, ...).
fn control_escape(letter: u8) -> Option<u8> {
    Some(match letter {
        b'a' => 7,
        b'b' => 8,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 0x0B,
        _ => return None,
    })
}

/// An `encoding/json` float64: shortest round-trip digits, exponent form below 1e-6 and from
/// 1e21 on (`1e-7`, `1e+21`). NaN and infinities, which TiCDC's mounter turns into 0, are 0.
pub fn write_f64(out: &mut Vec<u8>, v: f64) {
    let v = if v.is_finite() { v } else { 0.0 };
    let abs = v.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        write_exponent(out, format_args!("{v:e}"));
    } else {
        let _ = write!(out, "{v}");
    }
}

/// An `encoding/json` float32: as [`write_f64`] with the float32's shortest digits.
pub fn write_f32(out: &mut Vec<u8>, v: f32) {
    let v = if v.is_finite() { v } else { 0.0 };
    let abs = v.abs();
    if abs != 0.0 && !(1e-6f32..1e21f32).contains(&abs) {
        write_exponent(out, format_args!("{v:e}"));
    } else {
        let _ = write!(out, "{v}");
    }
}

/// Rust writes `1e21` and `1.5e-7`; Go writes `1e+21` and `1.5e-7`.
fn write_exponent(out: &mut Vec<u8>, text: std::fmt::Arguments<'_>) {
    let start = out.len();
    let _ = out.write_fmt(text);
    if let Some(e) = out[start..].iter().position(|&c| c == b'e') {
        let at = start + e + 1;
        if out.get(at) != Some(&b'-') {
            out.insert(at, b'+');
        }
    }
}

pub fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

pub fn write_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    write_u64(out, v.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &str) -> String {
        let mut out = Vec::new();
        write_json_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_strings_escape_like_go() {
        let got = json("a\"b\\c<d>&\u{1}\u{8}\u{c}\n\r\t\u{2028}\u{2029}é\u{7f}");
        assert_eq!(got, "\"a\\\"b\\\\c\\u003cd\\u003e\\u0026\\u0001\\b\\f\\n\\r\\t\\u2028\\u2029é\u{7f}\"");
        let mut out = Vec::new();
        write_json_bytes(&mut out, b"a\xffb\xe4\xb8");
        assert_eq!(out, b"\"a\\ufffdb\\ufffd\\ufffd\"");
    }

    #[test]
    fn json_strings_escape_at_every_position() {
        // One special piece among plain ones, at every offset of the word-at-a-time scan.
        let specials = ["\"", "\\", "<", ">", "&", "\u{0}", "\u{1f}", "\u{2028}", "\u{2029}", "\u{2027}", "â"];
        let plain = ["a", "~", "\u{7f}", " ", "é", "日", "😀"];
        let reference = |s: &str| {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\u{2028}' => out.push_str("\\u2028"),
                    '\u{2029}' => out.push_str("\\u2029"),
                    '<' | '>' | '&' | '\u{0}'..='\u{1f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
                    _ => out.push(c),
                }
            }
            out + "\""
        };
        for special in specials {
            for before in 0..20 {
                for after in 0..10 {
                    let mut s: String = (0..before).map(|i| plain[i % plain.len()]).collect();
                    s.push_str(special);
                    s.extend((0..after).map(|i| plain[(i * 3) % plain.len()]));
                    let want = reference(&s).replace("\\u0008", "\\b").replace("\\u000c", "\\f");
                    let want = want.replace("\\u000a", "\\n").replace("\\u000d", "\\r").replace("\\u0009", "\\t");
                    assert_eq!(json(&s), want, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn quote_round_trips() {
        let bytes = b"\x89PNG\r\n\x1a\n\x00\x07\x0b\"\\ \xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\xee\x80\x80\xed\xa0\x80";
        let mut q = String::new();
        go_quote(bytes, &mut q);
        assert_eq!(q, "\\x89PNG\\r\\n\\x1a\\n\\x00\\a\\v\\\"\\\\ é\\u2028😀\\ue000\\xed\\xa0\\x80");
        assert_eq!(go_unquote(&q, &mut SpareBuffers::default()).unwrap().as_ref(), bytes);
        assert_eq!(go_unquote("\\101\\U0001F600", &mut SpareBuffers::default()).unwrap().as_ref(), "A😀".as_bytes());
        assert!(go_unquote("\\400", &mut SpareBuffers::default()).is_err());
        assert!(go_unquote("\\'", &mut SpareBuffers::default()).is_err());
        assert!(go_unquote("\\x4", &mut SpareBuffers::default()).is_err());
        assert!(go_unquote("\\ud800", &mut SpareBuffers::default()).is_err());
    }

    /// The JSON string Go's encoder writes of `strconv.Quote(bytes)`, between its quotes.
    fn quoted_json(bytes: &[u8]) -> Vec<u8> {
        let mut quoted = String::new();
        go_quote(bytes, &mut quoted);
        let mut out = Vec::new();
        write_json_str_body(&mut out, quoted.as_bytes());
        out
    }

    /// Whether `raw` is the text of one JSON string, between its quotes.
    fn is_string_text(raw: &[u8]) -> bool {
        let json = [b"\"", raw, b"\""].concat();
        crate::json::JsonCursor::new(&json).is_ok_and(|mut cur| cur.string().is_ok() && cur.at_end())
    }

    /// The general path: the JSON string unescaped, then unquoted.
    fn unescaped_then_unquoted(raw: &[u8]) -> Option<Vec<u8>> {
        let json = [b"\"", raw, b"\""].concat();
        let mut cur = crate::json::JsonCursor::new(&json).ok()?;
        let text = cur.string().ok()?;
        go_unquote(&text, &mut SpareBuffers::default()).ok().map(Cow::into_owned)
    }

    /// [`go_unquote_json`] of the string whose text as written is `raw`, followed by more JSON.
    fn one_pass(raw: &[u8]) -> Option<Vec<u8>> {
        let json = [raw, b"\",\"next\":\"\\\\x00\"}"].concat();
        let (bytes, used) = go_unquote_json(&json, &mut SpareBuffers::default(), StringBlocks::detect())?;
        assert_eq!(used, raw.len() + 1, "the string ends at its quote");
        Some(bytes.into_owned())
    }

    #[test]
    fn quoted_json_unquotes_in_one_pass() {
        let bytes = b"\x89PNG\r\n\x1a\n\x00\x07\x0b\"\\<>& \xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\xed\xa0\x80";
        assert_eq!(one_pass(&quoted_json(bytes)).as_deref(), Some(&bytes[..]));
        for (raw, want) in
            [(&br#"\\101\\U0001F600\\\\\\\"\u0041"#[..], Some("A😀\\\"A".as_bytes())), (b"plain", Some(b"plain"))]
        {
            assert_eq!(one_pass(raw).as_deref(), want);
        }
        // What Go's encoder would not write, or Go would refuse, is left to the general path.
        for raw in [
            &br"\n"[..],
            br"\\n\n",
            br"\\'",
            br"\\400",
            br"\\x4",
            br"\\ud800",
            br"\u005c",
            br"\u00e9",
            br"\/",
            br"\\\u005c",
            b"a\nb",
        ] {
            assert_eq!(one_pass(raw), None, "{}", String::from_utf8_lossy(raw));
        }
    }

    proptest::proptest! {
        #[test]
        fn quoted_bytes_unquote_in_one_pass(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48)) {
            proptest::prop_assert_eq!(one_pass(&quoted_json(&bytes)), Some(bytes));
        }

        /// Read by blocks (each [`StringBlocks`] the machine runs) or a byte at a time, a quoted
        /// binary value reads alike.
        #[test]
        fn blocks_unquote_as_bytes_do(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..160),
            cut in 0usize..400,
            tail in 0usize..70,
        ) {
            let mut json = quoted_json(&bytes);
            json.push(b'"');
            json.truncate(cut.min(json.len()));
            json.extend(std::iter::repeat_n(b'x', tail));
            let read = |blocks| {
                let mut out = b"kept".to_vec();
                let used = unquote_json_from(&json, 0, &mut out, blocks);
                used.map(|used| (used, out))
            };
            for blocks in StringBlocks::all() {
                proptest::prop_assert_eq!(read(Some(blocks)), read(None));
            }
        }

        /// Whatever one pass reads, the general path reads alike.
        #[test]
        fn one_pass_agrees_with_the_general_path(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                // Plain text, JSON escapes (of a Go escape's backslash among them) and Go's letters.
                "a", "é", "0", "7", "f", "F", "G", "n", "x", "u", "U", "3c", "\n", "\\\\", "\\\"", "\\u003c", "\\u005c", "\\u00e9", "\\u0022", "\\n", "\\t",
                // Runs of hex escapes, whole or cut short.
                "\\\\x", "\\\\x4", "\\\\x4A", "\\\\xff",
            ]), 0..12),
        ) {
            let raw = pieces.concat();
            proptest::prop_assume!(is_string_text(raw.as_bytes()));
            if let Some(bytes) = one_pass(raw.as_bytes()) {
                proptest::prop_assert_eq!(Some(bytes), unescaped_then_unquoted(raw.as_bytes()));
            }
        }
    }

    #[test]
    fn floats_format_like_go() {
        let f64s = |v: f64| {
            let mut o = Vec::new();
            write_f64(&mut o, v);
            String::from_utf8(o).unwrap()
        };
        let f32s = |v: f32| {
            let mut o = Vec::new();
            write_f32(&mut o, v);
            String::from_utf8(o).unwrap()
        };
        assert_eq!(f64s(2.71), "2.71");
        assert_eq!(f64s(1e-7), "1e-7");
        assert_eq!(f64s(1.5e-10), "1.5e-10");
        assert_eq!(f64s(1e21), "1e+21");
        assert_eq!(f64s(1e20), "100000000000000000000");
        assert_eq!(f64s(0.000001), "0.000001");
        assert_eq!(f64s(-0.0), "-0");
        assert_eq!(f32s(1.23), "1.23");
        assert_eq!(f32s(0.1), "0.1");
        assert_eq!(f32s(2.0), "2");
        assert_eq!(f32s(1e-7), "1e-7");
        assert_eq!(f32s(f32::MAX), "3.4028235e+38");
    }
}
