//! TiCDC's Open Protocol (`../shared/protocols/open.md`), decoder and encoder.
//!
//! One Kafka message carries a batch of events in two parallel frames: the key is a version
//! header (u64 = 1) followed by length-prefixed key JSON items, the value holds as many
//! length-prefixed value items (all integers big-endian u64). The i-th key item says what the
//! i-th value item is: a row change (`{"u","p","d"}` column maps), a DDL (`{"q","t"}`) or a
//! resolved ts (empty item). Each value item may be snappy- or lz4-compressed on its own.
//!
//! Column values are typed by their MySQL type code and TiCDC flags, and their JSON form follows
//! from tiflow feeding Go values to `encoding/json`: integers are full 64-bit numbers, FLOAT is
//! the float32's shortest text, binary VARCHAR/CHAR go through `strconv.Quote` first, and the
//! TEXT/BLOB codes are base64. The decoder reads all of this exactly (never through f64 for
//! integers) and borrows every string that needs no unescaping; the encoder writes tiflow's bytes
//! (columns in byte-wise name order, HTML-safe escaping, Go's float formats), which `gotext`
//! reproduces without going through Go-shaped intermediate values.

mod decode;
mod encode;
mod gotext;
mod printable;

pub use decode::OpenCodec;
pub use encode::OpenEncoder;

/// The batch format version in the first 8 bytes of every key.
const BATCH_VERSION: u64 = 1;

/// sarama's per-record overhead that tiflow adds when it sizes a message.
const RECORD_OVERHEAD: usize = 36;

/// Key `t` values.
const TYPE_ROW: u64 = 1;
const TYPE_DDL: u64 = 2;
const TYPE_RESOLVED: u64 = 3;

/// The big-endian u64 at `at`, if the buffer holds 8 bytes there.
fn read_u64(buf: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = buf.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}
