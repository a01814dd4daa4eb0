//! The input side of decoding, before any protocol: the Kafka `key`/`value` columns read in
//! place, whole-value compression, claim-check files, and which protocol a message is in.

pub(crate) mod claim_check;
mod protocol;

use std::io::Read;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;

pub use protocol::Protocol;

use crate::error::{Fault, FaultResult};

/// The largest decompressed or claim-checked message accepted (TiCDC's default limit is 10 MiB).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// TiCDC's `large-message-handle-compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Snappy,
    Lz4,
}

impl Compression {
    pub fn parse(s: &str) -> Option<Compression> {
        match s {
            "none" | "" => Some(Compression::None),
            "snappy" => Some(Compression::Snappy),
            "lz4" => Some(Compression::Lz4),
            _ => None,
        }
    }

    /// Compresses as TiCDC does: the raw Snappy block format, or an LZ4 frame.
    pub fn compress(self, data: &[u8]) -> FaultResult<Vec<u8>> {
        match self {
            Compression::None => Ok(data.to_vec()),
            Compression::Snappy => {
                snap::raw::Encoder::new().compress_vec(data).map_err(|e| Fault::new(0, format!("snappy: {e}")))
            }
            Compression::Lz4 => {
                let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
                std::io::Write::write_all(&mut encoder, data).map_err(|e| Fault::new(0, format!("lz4: {e}")))?;
                encoder.finish().map_err(|e| Fault::new(0, format!("lz4: {e}")))
            }
        }
    }

    /// Undoes the compression, refusing output beyond [`MAX_MESSAGE_BYTES`].
    pub fn decompress(self, data: &[u8]) -> FaultResult<Vec<u8>> {
        match self {
            Compression::None => Ok(data.to_vec()),
            Compression::Snappy => {
                let len = snap::raw::decompress_len(data).map_err(|e| Fault::new(0, format!("snappy: {e}")))?;
                if len > MAX_MESSAGE_BYTES {
                    return Err(Fault::new(0, format!("snappy: declared length {len} exceeds the limit")));
                }
                snap::raw::Decoder::new().decompress_vec(data).map_err(|e| Fault::new(0, format!("snappy: {e}")))
            }
            Compression::Lz4 => {
                let mut out = Vec::new();
                let mut reader = lz4_flex::frame::FrameDecoder::new(data).take(MAX_MESSAGE_BYTES as u64 + 1);
                reader.read_to_end(&mut out).map_err(|e| Fault::new(0, format!("lz4: {e}")))?;
                if out.len() > MAX_MESSAGE_BYTES {
                    return Err(Fault::new(0, "lz4: decompressed message exceeds the limit"));
                }
                Ok(out)
            }
        }
    }
}

/// Asks the processor to bring `bytes` into its cache, ahead of their use. A batch fresh from
/// Kafka is cold in memory, and the first pass over a message (its UTF-8 check) would otherwise
/// wait on each of its cache lines in turn: the batch reader fetches the next message while it
/// decodes this one. A hint, never a fault; the first [`PREFETCHED_BYTES`] only.
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    let bytes = &bytes[..bytes.len().min(PREFETCHED_BYTES)];
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch reads nothing into the program and cannot fault; the address is
        // in a live slice, and SSE is part of every x86_64 target.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// How much of the next message [`prefetch`] asks for: far more than a row message of TiCDC's,
/// little enough that a large one does not push the message being read out of the cache.
const PREFETCHED_BYTES: usize = 16 << 10;

/// The `key`/`value` input column, read in place whatever its binary or string type.
pub(crate) enum Bytes<'a> {
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    BinaryView(&'a arrow_array::BinaryViewArray),
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
    Utf8View(&'a arrow_array::StringViewArray),
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(array: &'a dyn Array) -> Option<Bytes<'a>> {
        Some(match array.data_type() {
            DataType::Binary => Bytes::Binary(array.as_binary()),
            DataType::LargeBinary => Bytes::LargeBinary(array.as_binary()),
            DataType::BinaryView => Bytes::BinaryView(array.as_binary_view()),
            DataType::Utf8 => Bytes::Utf8(array.as_string()),
            DataType::LargeUtf8 => Bytes::LargeUtf8(array.as_string()),
            DataType::Utf8View => Bytes::Utf8View(array.as_string_view()),
            _ => return None,
        })
    }

    /// The buffers holding the values' bytes.
    pub(crate) fn buffers(&self) -> Vec<arrow_buffer::Buffer> {
        match self {
            Bytes::Binary(a) => vec![a.values().clone()],
            Bytes::LargeBinary(a) => vec![a.values().clone()],
            Bytes::Utf8(a) => vec![a.values().clone()],
            Bytes::LargeUtf8(a) => vec![a.values().clone()],
            Bytes::BinaryView(a) => a.data_buffers().to_vec(),
            Bytes::Utf8View(a) => a.data_buffers().to_vec(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> Option<&'a [u8]> {
        macro_rules! value {
            ($a:expr, $v:expr) => {
                if $a.is_null(i) {
                    None
                } else {
                    Some($v)
                }
            };
        }
        match self {
            Bytes::Binary(a) => value!(a, a.value(i)),
            Bytes::LargeBinary(a) => value!(a, a.value(i)),
            Bytes::BinaryView(a) => value!(a, a.value(i)),
            Bytes::Utf8(a) => value!(a, a.value(i).as_bytes()),
            Bytes::LargeUtf8(a) => value!(a, a.value(i).as_bytes()),
            Bytes::Utf8View(a) => value!(a, a.value(i).as_bytes()),
        }
    }
}
