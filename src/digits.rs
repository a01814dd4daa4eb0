//! ASCII digits read a word at a time: the JSON reader's numbers, the MySQL value parsers'
//! decimals and every codec's doubles written as text share these. Eight bytes are XORed with
//! ASCII zeros, which turns digits into 0..=9 and every other byte into something else, so one
//! test finds the first non-digit and three multiplies read eight digits.

const ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);

/// The high nibble of each byte of `word` (read little-endian) that is not an ASCII digit. Only
/// the lowest flag is exact: false flags appear only above a true one.
#[inline(always)]
pub(crate) fn non_digits(word: u64) -> u64 {
    const SIXES: u64 = u64::from_le_bytes([6; 8]);
    const HIGH_NIBBLES: u64 = u64::from_le_bytes([0xf0; 8]);
    // A digit XORed with '0' is 0..=9: its high nibble is clear, and stays so when 6 is added.
    // A carry out of a byte flags only bytes above the first flagged one.
    let x = word ^ ZEROS;
    (x | x.wrapping_add(SIXES)) & HIGH_NIBBLES
}

/// The number the eight digits of `word` write (the first digit is the lowest byte; bytes whose
/// low nibble is zero read as leading zeros). The digits are not checked.
#[inline(always)]
pub(crate) fn eight_digits_of(word: u64) -> u64 {
    // Pairs of digits, then of pairs, then of quadruples, each multiplied into place at once.
    let x = (word & 0x0f0f_0f0f_0f0f_0f0f).wrapping_mul(2561) >> 8;
    let x = (x & 0x00ff_00ff_00ff_00ff).wrapping_mul(6_553_601) >> 16;
    (x & 0x0000_ffff_0000_ffff).wrapping_mul(42_949_672_960_001) >> 32
}

/// The number eight ASCII digits write, or None when `b` is not eight digits.
#[inline(always)]
pub(crate) fn eight_digits(b: &[u8]) -> Option<u64> {
    let word = u64::from_le_bytes(b.try_into().ok()?);
    (non_digits(word) == 0).then(|| eight_digits_of(word))
}

/// How many bytes `b` starts with that are ASCII digits, counted a word at a time up to the
/// first word holding another byte (the caller reads on from there byte by byte): timestamps
/// and TSOs run to 13 and 18 digits.
#[inline(always)]
pub(crate) fn leading_digits(b: &[u8]) -> usize {
    let mut n = 0;
    while let Some(word) = b.get(n..n + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        let other = non_digits(u64::from_le_bytes(word));
        if other != 0 {
            return n + (other.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n
}

/// Reads the ASCII digits `b` starts with onto `v` (`v` times ten for each digit, plus the
/// digits' number) and returns how many there were. Each whole word of the input is read at
/// once, digits or not: a word with `n` leading digits is shifted to leave those `n`, read as
/// leading zeros below them. More than 19 digits wrap: the caller checks the count.
#[inline(always)]
pub(crate) fn read_digits(b: &[u8], v: &mut u64) -> usize {
    const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];
    let mut n = 0;
    while let Some(word) = b.get(n..n + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        let word = u64::from_le_bytes(word);
        let other = non_digits(word);
        let digits = if other == 0 { 8 } else { (other.trailing_zeros() / 8) as usize };
        if digits > 0 {
            let kept = word << (64 - 8 * digits as u32);
            *v = v.wrapping_mul(POW10[digits]).wrapping_add(eight_digits_of(kept));
        }
        n += digits;
        if digits < 8 {
            return n;
        }
    }
    while let Some(d) = b.get(n).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
        *v = v.wrapping_mul(10).wrapping_add(d as u64);
        n += 1;
    }
    n
}

/// The number an unsigned run of ASCII digits writes, all of `b`, or None when `b` is empty,
/// holds another byte or overflows u64.
#[inline(always)]
fn whole_u64(b: &[u8]) -> Option<u64> {
    let mut v = 0u64;
    let n = read_digits(b, &mut v);
    if n == 0 || n != b.len() {
        return None;
    }
    if n > 19 {
        // Twenty digits and more may have wrapped: read them again, checked.
        return b.iter().try_fold(0u64, |v, &c| v.checked_mul(10)?.checked_add((c - b'0') as u64));
    }
    Some(v)
}

/// An unsigned integer's text, as `str::parse::<u64>` reads it (an optional `+`).
#[inline]
pub(crate) fn parse_u64(b: &[u8]) -> Option<u64> {
    whole_u64(b.strip_prefix(b"+").unwrap_or(b))
}

/// A signed integer's text, as `str::parse::<i64>` reads it (an optional `+` or `-`).
#[inline]
pub(crate) fn parse_i64(b: &[u8]) -> Option<i64> {
    match b {
        [b'-', digits @ ..] => {
            let magnitude = whole_u64(digits)?;
            (magnitude <= 1 << 63).then(|| (magnitude as i64).wrapping_neg())
        }
        _ => parse_u64(b).and_then(|v| i64::try_from(v).ok()),
    }
}

/// A number's text as `str::parse::<f64>` reads it. A plain decimal (`-?\d+(\.\d+)?`) of at
/// most 19 digits is read here, its digits as one integer over a power of ten (at most 10^18);
/// any other text goes to the parse. Go and MySQL write most doubles so.
#[inline]
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    plain_decimal_f64(text.as_bytes()).or_else(|| text.parse().ok())
}

const POW10: [u64; 19] = {
    let mut p = [1u64; 19];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

#[inline(always)]
fn plain_decimal_f64(b: &[u8]) -> Option<f64> {
    let (negative, b) = match b {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, b),
    };
    let mut digits = 0u64;
    let whole = read_digits(b, &mut digits);
    let fraction = match b.get(whole) {
        None => 0,
        Some(b'.') => {
            let n = read_digits(&b[whole + 1..], &mut digits);
            if n == 0 || whole + 1 + n != b.len() {
                return None;
            }
            n
        }
        Some(_) => return None,
    };
    if whole == 0 || whole + fraction > 19 {
        return None;
    }
    let divisor = *POW10.get(fraction)?;
    // Up to 2^53 the digits and the power of ten are both exact doubles, and one division
    // rounds once, as the parse rounds (Clinger's fast path).
    let magnitude = if digits <= 1 << 53 { digits as f64 / divisor as f64 } else { rounded_quotient(digits, divisor) };
    Some(if negative { -magnitude } else { magnitude })
}

/// `dividend / divisor` rounded to the nearest double, ties to even, for a dividend above 2^53
/// and a divisor at most 10^18: the integer quotient of the dividend shifted to leave 54 or 55
/// bits of it, then rounded by the bits dropped and the remainder. The shifted dividend takes
/// at most 115 bits, and the result is a normal double.
fn rounded_quotient(dividend: u64, divisor: u64) -> f64 {
    let log2 = |v: u64| 63 - v.leading_zeros() as i32;
    // With e the difference of the two floors of log2, dividend / divisor lies in
    // (2^(e-1), 2^(e+1)); shifted by 54 - e, the quotient lies in (2^53, 2^55).
    let shift = 54 - (log2(dividend) - log2(divisor));
    let (dividend, divisor) = if shift >= 0 {
        ((dividend as u128) << shift, divisor as u128)
    } else {
        (dividend as u128, (divisor as u128) << -shift)
    };
    let quotient = dividend / divisor;
    let inexact = dividend - quotient * divisor != 0;
    let quotient = quotient as u64;
    let dropped_bits = log2(quotient) + 1 - 53;
    let half = 1u64 << (dropped_bits - 1);
    let dropped = quotient & ((half << 1) - 1);
    let mut mantissa = quotient >> dropped_bits;
    if dropped > half || dropped == half && (inexact || mantissa & 1 == 1) {
        mantissa += 1;
    }
    let mut exponent = dropped_bits - shift;
    if mantissa == 1 << 53 {
        mantissa >>= 1;
        exponent += 1;
    }
    mantissa as f64 * f64::from_bits(((1023 + exponent) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The digits counted and read one byte at a time.
    fn model(b: &[u8], v: u64) -> (u64, usize) {
        let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let v = b[..n].iter().fold(v, |v, c| v.wrapping_mul(10).wrapping_add((c - b'0') as u64));
        (v, n)
    }

    #[test]
    fn every_length_and_stop() {
        for len in 0..=24 {
            for stop in [None, Some(b'.'), Some(b'/'), Some(b':'), Some(0), Some(0xff), Some(b'0' + 0x80)] {
                let mut b: Vec<u8> = (0..len).map(|i| b"9081726354"[i % 10]).collect();
                b.extend(stop);
                b.extend_from_slice(b"123");
                let mut v = 7;
                let n = read_digits(&b, &mut v);
                assert_eq!((v, n), model(&b, 7), "{:?}", String::from_utf8_lossy(&b));
            }
        }
    }

    #[test]
    fn integers_read_as_std_parses_them() {
        let mut texts: Vec<String> =
            ["", "-", "+", "+-1", "-+1", "0", "-0", "+0", " 1", "1 "].into_iter().map(String::from).collect();
        for edge in [i64::MIN as i128, i64::MAX as i128, u64::MAX as i128] {
            for delta in -2..=2 {
                let v = edge + delta;
                texts.extend([format!("{v}"), format!("+{v}"), format!("000{v}"), format!("-000{v}")]);
            }
        }
        texts.extend(
            ["99999999999999999999", "00000000000000000000000000001", "-00000000000000000000009"].map(String::from),
        );
        for text in &texts {
            assert_eq!(parse_u64(text.as_bytes()), text.parse::<u64>().ok(), "{text:?}");
            assert_eq!(parse_i64(text.as_bytes()), text.parse::<i64>().ok(), "{text:?}");
        }
    }

    fn same_double(text: &str) {
        let (read, parsed) = (parse_f64(text), text.parse::<f64>().ok());
        assert_eq!(read.map(f64::to_bits), parsed.map(f64::to_bits), "{text:?}");
    }

    #[test]
    fn doubles_read_as_std_parses_them() {
        let mut texts: Vec<String> = [
            "",
            "-",
            "+",
            ".",
            "-.",
            "1.",
            ".5",
            "-.5",
            "+1.5",
            "1.5.",
            "1..5",
            "1.5e3",
            "1e",
            "-0",
            "-0.0",
            "0.0",
            "00.10",
            "1-2",
            "1.-2",
            "inf",
            "NaN",
            "9007199254740992",
            "9007199254740993",
            "9007199254740995",
            "18014398509481986",
            "18446744073709551615",
            "9999999999999999999",
            "1000000000000000000.0",
            "9223372036854775808",
            "900719925474099.3",
            "9007199254740991.5",
            "1234567890123456789",
            "12345678901234567890",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "1.0000000000000000000000",
            "4.9406564584124654e-324",
            "1.7976931348623157e308",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let v = f64::from_bits(rng);
            let scaled = (rng >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((rng % 12) as i32);
            texts.extend([format!("{v}"), format!("{scaled}"), format!("-{scaled}"), format!("{scaled:.3}")]);
            // Digits above 2^53, and halfway cases between two doubles, at every point.
            let (big, point) = (rng | 1 << 53, (rng >> 58) as usize % 20);
            let halfway = (((1u64 << 52) | rng >> 12) << 1 | 1) << (rng % 11);
            for digits in [big.to_string(), halfway.to_string(), (big % 10_000_000_000_000_000_000).to_string()] {
                let point = point.min(digits.len() - 1);
                texts.extend([
                    digits.clone(),
                    format!("{}.{}", &digits[..digits.len() - point], &digits[digits.len() - point..]),
                ]);
            }
        }
        for text in &texts {
            same_double(text);
        }
    }

    proptest! {
        #[test]
        fn integers_as_std(text in "[-+]?[0-9]{0,22}[x.]?[0-9]{0,2}") {
            prop_assert_eq!(parse_u64(text.as_bytes()), text.parse::<u64>().ok());
            prop_assert_eq!(parse_i64(text.as_bytes()), text.parse::<i64>().ok());
        }

        #[test]
        fn doubles_as_std(text in "-?[0-9]{0,21}[.]?[0-9]{0,24}[e.x]?[0-9]{0,2}") {
            same_double(&text);
        }

        #[test]
        fn reads_as_the_model(b in proptest::collection::vec(prop_oneof![4 => b'0'..=b'9', 1 => any::<u8>()], 0..40),
                              v in any::<u64>()) {
            let mut read = v;
            let n = read_digits(&b, &mut read);
            prop_assert_eq!((read, n), model(&b, v));
            if let Some(first) = b.get(..8) {
                prop_assert_eq!(eight_digits(first), (n >= 8).then(|| model(first, 0).0));
            }
        }
    }
}
