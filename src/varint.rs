//! LEB128 varints, unsigned and zigzag-encoded: written for Craft and Simple Avro, and read a
//! word at a time, up to nine bytes long, by Simple Avro's cursor.
//!
//! TSOs and schema versions (about 2^58) take nine bytes, three in each Avro row message. Byte by
//! byte, a nine-byte varint costs a branch and three operations per byte; here one load finds
//! where it ends and three mask, shift and OR steps join its seven-bit groups. Ten-byte varints,
//! and varints too near the end of the input to load a word, are left to the cursor's own loop,
//! which also names the faults. Craft's cursor keeps its byte loop (with this, its reader of
//! longer varints ran 4% more instructions), but Craft's number values, whose length the message
//! gives, are read as one word ([`read_filling`]).

/// Each byte's continuation flag.
const CONTINUATIONS: u64 = 0x8080_8080_8080_8080;

/// The value and length of the unsigned LEB128 varint `bytes` starts with, when it is at most
/// nine bytes long and `bytes` holds at least nine; None otherwise.
#[inline]
pub(crate) fn read_short(bytes: &[u8]) -> Option<(u64, usize)> {
    let (&word, rest) = bytes.split_first_chunk::<8>()?;
    let ninth = *rest.first()?;
    let word = u64::from_le_bytes(word);
    let ends = !word & CONTINUATIONS;
    if ends != 0 {
        // The bits up to the first end flag: the varint's bytes (the last one's high bit is clear).
        let mine = word & (ends ^ (ends - 1));
        return Some((groups(mine), ends.trailing_zeros() as usize / 8 + 1));
    }
    (ninth < 0x80).then(|| (groups(word) | (ninth as u64) << 56, 9))
}

/// The value of the unsigned LEB128 varint that fills exactly the first `n` (1 to 8) bytes of
/// `word` (little-endian): Craft's number values, whose length the message gives. None when those
/// bytes are not one whole varint (or `n` is out of range); the bytes after them are not looked at.
#[inline(always)]
pub(crate) fn read_filling(word: u64, n: usize) -> Option<u64> {
    if !(1..=8).contains(&n) {
        return None;
    }
    let bytes = u64::MAX >> (64 - 8 * n);
    let mine = word & bytes;
    // Every byte but the last continues the varint; the last ends it.
    let ends = !mine & CONTINUATIONS & bytes;
    (ends == 1 << (8 * n - 1)).then(|| groups(mine))
}

/// Appends `v` zigzag-encoded (small magnitudes short, either sign) as a LEB128 varint: Avro's
/// `long`, Craft's signed varints.
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The signed value of a zigzag-encoded varint.
#[inline(always)]
pub(crate) fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub(crate) fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The seven low bits of each byte of `word`, joined from the lowest byte up.
#[inline(always)]
fn groups(word: u64) -> u64 {
    let x = word & !CONTINUATIONS;
    let x = (x & 0x007f_007f_007f_007f) | (x & 0x7f00_7f00_7f00_7f00) >> 1;
    let x = (x & 0x0000_3fff_0000_3fff) | (x & 0x3fff_0000_3fff_0000) >> 2;
    (x & 0x0000_0000_0fff_ffff) | (x & 0x0fff_ffff_0000_0000) >> 4
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The varint byte by byte, as the Avro cursor's loop reads it.
    fn reference(bytes: &[u8]) -> Option<(u64, usize)> {
        let mut v = 0u64;
        for (i, &b) in bytes.iter().take(9).enumerate() {
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                return Some((v, i + 1));
            }
        }
        None
    }

    #[test]
    fn every_length_reads_as_byte_by_byte() {
        let mut values = vec![0, 1, 127, 128, 16_383, 16_384, u64::MAX >> 1, u64::MAX, 449_543_016_434_794_514];
        for bits in 1..64 {
            values.extend([1u64 << bits, (1u64 << bits) - 1, (1u64 << bits) | 0x55]);
        }
        for v in values {
            let mut bytes = Vec::new();
            put_uvarint(&mut bytes, v);
            let len = bytes.len();
            bytes.extend([0xff; 9]);
            let read = read_short(&bytes);
            assert_eq!(read, (len <= 9).then_some((v, len)), "{v}");
            assert_eq!(read, reference(&bytes).filter(|_| len <= 9), "{v}");
            assert_eq!(read_short(&bytes[..8]), None, "fewer than nine bytes: {v}");
        }
    }

    /// Every word read as each length it could fill: the value when its first `n` bytes are one
    /// varint exactly, as the byte loop reads them, and None otherwise.
    #[test]
    fn a_varint_filling_its_bytes_reads_as_byte_by_byte() {
        let mut words = vec![0, u64::MAX, 0x8080_8080_8080_8080, 0x7f7f_7f7f_7f7f_7f7f, 0x0001_8081_ff00_7f80];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Each byte's continuation flag mostly set, so that long varints come up.
            words.push(x | (x.rotate_left(17) & CONTINUATIONS));
            words.push(x);
        }
        for v in [0, 1, 127, 128, 300, u64::MAX >> 8, (1 << 56) - 1] {
            let mut bytes = Vec::new();
            put_uvarint(&mut bytes, v);
            bytes.resize(8, 0xab);
            words.push(u64::from_le_bytes(bytes.try_into().unwrap()));
        }
        for word in words {
            let bytes = word.to_le_bytes();
            for n in 0..=9 {
                let want = reference(&bytes[..n.min(8)]).filter(|&(_, len)| len == n).map(|(v, _)| v);
                assert_eq!(read_filling(word, n), want, "{word:#x} in {n} bytes");
            }
        }
    }

    #[test]
    fn stray_bytes_after_the_end_are_not_read() {
        for len in 1..=9 {
            let mut bytes = vec![0xff; len - 1];
            bytes.push(0x7f);
            bytes.extend([0xab; 9]);
            assert_eq!(read_short(&bytes), reference(&bytes), "{len}");
            assert_eq!(read_short(&bytes).map(|(_, n)| n), Some(len));
        }
        assert_eq!(read_short(&[0xff; 12]), None);
    }
}
