//! The byte cursor the Craft decoder reads with.
//!
//! A [`Cursor`] is a window `[pos, end)` over the whole message: it always knows its absolute
//! offset (so every [`Fault`] names the byte where reading went wrong), never reads outside its
//! window, and lends slices of the message itself, so strings and bytes reach the event model
//! without a copy. Craft nests windows (size tables at the end, headers, bodies, column groups,
//! the term dictionary), and [`Cursor::split`] carves a sub-window whose end is checked once
//! against the parent's, after which the inner reads need no further bounds reasoning.
//!
//! Varints follow Go's `encoding/binary`: at most 10 bytes, and the 10th byte may only be 0 or 1.

use crate::error::{Fault, FaultResult};

/// The longest uvarint of a u64.
pub const MAX_VARINT_LEN: usize = 10;

#[derive(Clone, Copy)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over the whole message.
    pub fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0, end: data.len() }
    }

    /// A cursor over `data[start..end]`, or a fault when that window is not inside `data`.
    pub fn window(data: &'a [u8], start: usize, end: usize, what: &str) -> FaultResult<Self> {
        if start > end || end > data.len() {
            return Err(Fault::new(
                start.min(data.len()),
                format!("{what} spans bytes {start}..{end}, outside the {}-byte message", data.len()),
            ));
        }
        Ok(Cursor { data, pos: start, end })
    }

    /// Absolute offset of the next byte.
    pub fn offset(&self) -> usize {
        self.pos
    }

    pub fn end(&self) -> usize {
        self.end
    }

    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == self.end
    }

    pub fn fault(&self, reason: impl Into<String>) -> Fault {
        Fault::new(self.pos, reason)
    }

    pub fn u8(&mut self) -> FaultResult<u8> {
        if self.pos == self.end {
            return Err(self.fault("unexpected end of data (a byte is missing)"));
        }
        let b = self.data[self.pos];
        self.pos += 1;
        Ok(b)
    }

    /// Lends the next `n` bytes of the message.
    pub fn take(&mut self, n: usize, what: &str) -> FaultResult<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.fault(format!("{what} of {n} bytes runs past the end ({} left)", self.remaining())));
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// Skips the next bytes when they repeat `earlier` (a range of the same message) exactly.
    pub fn skip_repeat(&mut self, earlier: std::ops::Range<usize>) -> bool {
        let n = earlier.len();
        let repeats =
            n <= self.remaining() && self.data.get(earlier).is_some_and(|e| e == &self.data[self.pos..self.pos + n]);
        if repeats {
            self.pos += n;
        }
        repeats
    }

    /// The bytes left in the window, not taken.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..self.end]
    }

    /// Moves past the next `n` bytes, at most to the window's end.
    pub fn skip(&mut self, n: usize) {
        self.pos = self.end.min(self.pos.saturating_add(n));
    }

    /// Splits off the next `n` bytes as a cursor of their own and skips them here.
    pub fn split(&mut self, n: usize, what: &str) -> FaultResult<Cursor<'a>> {
        if n > self.remaining() {
            return Err(self.fault(format!("{what} of {n} bytes runs past its container ({} left)", self.remaining())));
        }
        let inner = Cursor { data: self.data, pos: self.pos, end: self.pos + n };
        self.pos += n;
        Ok(inner)
    }

    /// An unsigned LEB128 varint (protobuf / Go `binary.Uvarint`).
    #[inline(always)]
    pub fn uvarint(&mut self) -> FaultResult<u64> {
        // Fast paths: one- and two-byte values are the common case (counts, types, flags,
        // lengths, zigzagged deltas).
        if self.pos + 1 < self.end {
            if let Some(&[b0, b1]) = self.data.get(self.pos..self.pos + 2) {
                if b0 < 0x80 {
                    self.pos += 1;
                    return Ok(b0 as u64);
                }
                if b1 < 0x80 {
                    self.pos += 2;
                    return Ok((b0 & 0x7f) as u64 | (b1 as u64) << 7);
                }
            }
        } else if self.pos < self.end {
            if let Some(&b) = self.data.get(self.pos) {
                if b < 0x80 {
                    self.pos += 1;
                    return Ok(b as u64);
                }
            }
        }
        self.long_uvarint()
    }

    #[inline(never)]
    fn long_uvarint(&mut self) -> FaultResult<u64> {
        let window = &self.data[self.pos..self.end];
        let mut value = 0u64;
        for (i, &b) in window.iter().take(MAX_VARINT_LEN).enumerate() {
            if b < 0x80 {
                if i == MAX_VARINT_LEN - 1 && b > 1 {
                    return Err(self.fault("varint overflows 64 bits"));
                }
                self.pos += i + 1;
                return Ok(value | (b as u64) << (7 * i));
            }
            value |= ((b & 0x7f) as u64) << (7 * i);
        }
        if window.len() >= MAX_VARINT_LEN {
            Err(self.fault("varint longer than 10 bytes"))
        } else {
            Err(self.fault("unexpected end of data inside a varint"))
        }
    }

    /// A zigzag-encoded signed varint.
    #[inline(always)]
    pub fn varint(&mut self) -> FaultResult<i64> {
        let u = self.uvarint()?;
        Ok(crate::varint::unzigzag(u))
    }

    /// A uvarint used as a length or count: at most `i32::MAX` (as Go checks) and at most
    /// `remaining / min_bytes_each`, so that nothing sized by it can exceed the input. Read for
    /// every column group and size table: inlined, its faults made out of line.
    #[inline(always)]
    pub fn count(&mut self, min_bytes_each: usize, what: &str) -> FaultResult<usize> {
        let at = self.pos;
        let n = self.uvarint()?;
        if n <= i32::MAX as u64 && (n as usize).saturating_mul(min_bytes_each) <= self.remaining() {
            return Ok(n as usize);
        }
        Err(self.count_fault(at, n, what))
    }

    #[cold]
    #[inline(never)]
    fn count_fault(&self, at: usize, n: u64, what: &str) -> Fault {
        if n > i32::MAX as u64 {
            return Fault::new(at, format!("{what} {n} is greater than max int32"));
        }
        Fault::new(at, format!("{what} {n} cannot fit in the {} bytes left", self.remaining()))
    }

    /// A 64-bit little-endian IEEE-754 float.
    pub fn f64(&mut self) -> FaultResult<f64> {
        let bytes = self.take(8, "float64")?;
        let mut raw = [0u8; 8];
        raw.copy_from_slice(bytes);
        Ok(f64::from_le_bytes(raw))
    }
}

/// Reads the uvarint stored byte-reversed at the very end of `data` (Craft's trailer). Returns
/// the value and how many bytes it took.
pub fn reversed_uvarint(data: &[u8]) -> FaultResult<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in data.iter().rev().take(MAX_VARINT_LEN).enumerate() {
        let at = data.len() - 1 - i;
        if b < 0x80 {
            if i == MAX_VARINT_LEN - 1 && b > 1 {
                return Err(Fault::new(at, "invalid reversed uvarint data: overflows 64 bits"));
            }
            return Ok((value | (b as u64) << (7 * i), i + 1));
        }
        value |= ((b & 0x7f) as u64) << (7 * i);
    }
    if data.len() >= MAX_VARINT_LEN {
        Err(Fault::new(data.len() - MAX_VARINT_LEN, "invalid reversed uvarint data: longer than 10 bytes"))
    } else {
        Err(Fault::new(0, "message too short: the size-table trailer runs off the start"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let mut c = Cursor::new(&[0x01, 0xa0, 0x1f, 0x19, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(c.varint().unwrap(), -1);
        assert_eq!(c.varint().unwrap(), 2000);
        assert_eq!(c.varint().unwrap(), -13);
        assert_eq!(c.uvarint().unwrap(), u64::MAX);
        assert!(c.is_empty());
        assert!(Cursor::new(&[0xff; 11]).uvarint().is_err());
        assert!(Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).uvarint().is_err());
        assert!(Cursor::new(&[0x80]).uvarint().is_err());
        assert_eq!(reversed_uvarint(&[0x00, 0x01, 0x81]).unwrap(), (129, 2));
        assert!(reversed_uvarint(&[0x80]).is_err());
    }

    /// Go's `binary.Uvarint`, a byte at a time.
    fn reference_uvarint(data: &[u8]) -> Option<(u64, usize)> {
        let mut value = 0u64;
        for (i, &b) in data.iter().take(MAX_VARINT_LEN).enumerate() {
            if b < 0x80 {
                if i == MAX_VARINT_LEN - 1 && b > 1 {
                    return None;
                }
                return Some((value | (b as u64) << (7 * i), i + 1));
            }
            value |= ((b & 0x7f) as u64) << (7 * i);
        }
        None
    }

    #[test]
    fn varints_of_every_length_read_as_go_reads_them() {
        let mut values: Vec<u64> =
            (0..64).flat_map(|bit| [1u64 << bit, (1u64 << bit) - 1, (1u64 << bit) + 1]).collect();
        values.extend([u64::MAX, 0, 0x5555_5555_5555_5555, 0xaaaa_aaaa_aaaa_aaaa]);
        for v in values {
            let mut encoded = Vec::new();
            crate::varint::put_uvarint(&mut encoded, v);
            // Followed by bytes of either kind, and cut short at every length.
            for tail in [&[][..], &[0x00, 0x7f], &[0x80; 12], &[0xff, 0x01, 0x02]] {
                let whole = [encoded.as_slice(), tail].concat();
                for end in 0..=whole.len() {
                    let data = &whole[..end];
                    let mut cur = Cursor::new(data);
                    let read = cur.uvarint().ok().map(|v| (v, cur.offset()));
                    assert_eq!(read, reference_uvarint(data), "{data:02x?}");
                }
            }
        }
        // Non-canonical forms (zero groups with the continuation bit) and ten-byte overflows.
        for data in
            [&[0x80, 0x80, 0x80, 0x00][..], &[0xff; 9], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]]
        {
            let mut cur = Cursor::new(data);
            assert_eq!(cur.uvarint().ok().map(|v| (v, cur.offset())), reference_uvarint(data), "{data:02x?}");
        }
    }
}
