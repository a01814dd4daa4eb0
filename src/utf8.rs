//! UTF-8 checks tuned for the values of change events: mostly short and mostly ASCII.
//!
//! The SIMD validator (`simdutf8`) wins on long text but hands inputs under 64 bytes to the
//! standard library, whose general loop costs more than the word-wise ASCII test that settles
//! nearly every short column value. So short values try ASCII first, long ones go to SIMD, and
//! the standard library runs only to find where invalid input goes wrong.

/// `bytes` as text, or the offset of its first invalid byte.
#[inline]
pub fn check(bytes: &[u8]) -> Result<&str, usize> {
    if bytes.len() < 64 {
        if bytes.is_ascii() {
            // SAFETY: ASCII is valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        return std::str::from_utf8(bytes).map_err(|e| e.valid_up_to());
    }
    simdutf8::basic::from_utf8(bytes)
        .map_err(|_| std::str::from_utf8(bytes).err().map_or(bytes.len(), |e| e.valid_up_to()))
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
}
