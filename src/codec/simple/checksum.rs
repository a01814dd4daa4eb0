//! Simple's row checksums (`common.md` §8), as TiCDC's consumer verifies them
//! (tiflow `pkg/sink/codec/common/verify_checksum.go`): a CRC-32 (IEEE) chained over the
//! non-NULL columns of one row image in schema order, each column encoded by its type —
//! integers, ENUM, SET and BIT as 8-byte little-endian u64; FLOAT/DOUBLE as the 8-byte
//! little-endian bits of the f64; VECTOR as a u32 count and its f32s; everything else as a
//! 4-byte little-endian length and the bytes, TIMESTAMP first re-rendered in UTC.
//!
//! The encoder uses the same function to write checksums, so the two always agree.

use crate::digits;
use crate::error::{Fault, FaultResult};
use crate::event::{Column, Value};
use crate::schema::mysql::{self, MySqlType};
use crate::schema::ServerZone;

/// `checksum {version, corrupted, current, previous}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RowChecksum {
    pub version: i32,
    pub corrupted: bool,
    pub current: u32,
    pub previous: u32,
}

/// The checksum of one row image (columns in schema order). `location` is the zone TIMESTAMP
/// values are written in.
pub fn row_checksum(image: &[Column<'_>], location: &str) -> FaultResult<u32> {
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = Vec::with_capacity(64);
    for c in image {
        buf.clear();
        column_bytes(&mut buf, c, location)?;
        hasher.update(&buf);
    }
    Ok(hasher.finalize())
}

fn column_bytes(buf: &mut Vec<u8>, c: &Column<'_>, location: &str) -> FaultResult<()> {
    use MySqlType::*;
    let fail = |what: &str| Fault::new(c.at, format!("column {}: {what} for the checksum", c.name));
    let value = &c.value;
    if value.is_null() {
        return Ok(());
    }
    match c.ty.base {
        TinyInt | SmallInt | MediumInt | Int | BigInt | Year | Enum | Set | Bit => {
            let v = match value {
                Value::Int(v) => *v as u64,
                Value::UInt(v) => *v,
                Value::Text(t) => t
                    .parse::<u64>()
                    .or_else(|_| t.parse::<i64>().map(|v| v as u64))
                    .map_err(|_| fail("not an integer"))?,
                _ => return Err(fail("not an integer")),
            };
            buf.extend_from_slice(&v.to_le_bytes());
        }
        Float | Double => {
            let v = match value {
                Value::Float32(v) => *v as f64,
                Value::Float64(v) => *v,
                Value::Int(v) => *v as f64,
                Value::UInt(v) => *v as f64,
                Value::Text(t) if c.ty.base == Float => t.parse::<f32>().map_err(|_| fail("not a float"))? as f64,
                Value::Text(t) => digits::parse_f64(t).ok_or_else(|| fail("not a float"))?,
                Value::Bytes(_) | Value::Null => return Err(fail("not a float")),
            };
            let v = if v.is_finite() { v } else { 0.0 };
            buf.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Timestamp => {
            let text = text_of(value).ok_or_else(|| fail("not a timestamp"))?;
            let utc = timestamp_in_utc(&text, location).ok_or_else(|| fail("not a timestamp"))?;
            length_value(buf, utc.as_bytes());
        }
        Vector => {
            let text = text_of(value).ok_or_else(|| fail("not a vector"))?;
            let mut floats = Vec::new();
            mysql::parse_vector(text.as_bytes(), &mut floats).ok_or_else(|| fail("not a vector"))?;
            buf.extend_from_slice(&(floats.len() as u32).to_le_bytes());
            for f in floats {
                buf.extend_from_slice(&f.to_le_bytes());
            }
        }
        Null | Geometry | Unknown => {}
        _ => match value {
            Value::Bytes(b) => length_value(buf, b),
            other => length_value(buf, text_of(other).ok_or_else(|| fail("no text"))?.as_bytes()),
        },
    }
    Ok(())
}

fn text_of<'v>(value: &'v Value<'_>) -> Option<std::borrow::Cow<'v, str>> {
    match value {
        Value::Text(t) => Some(std::borrow::Cow::Borrowed(t.as_ref())),
        Value::Int(v) => Some(v.to_string().into()),
        Value::UInt(v) => Some(v.to_string().into()),
        Value::Float32(v) => Some(v.to_string().into()),
        Value::Float64(v) => Some(v.to_string().into()),
        Value::Bytes(b) => std::str::from_utf8(b).ok().map(Into::into),
        Value::Null => None,
    }
}

fn length_value(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    buf.extend_from_slice(bytes);
}

/// `2020-01-01 12:00:00[.ffffff]` written in `location` (a zone name), re-rendered in UTC with the
/// same fractional digits. `Local`/`system` (the producer's machine zone, unknowable here) and
/// UTC names leave the text as is, as does MySQL's zero timestamp.
pub fn timestamp_in_utc(text: &str, location: &str) -> Option<String> {
    let local = mysql::parse_datetime_micros(text.as_bytes())?;
    let utc_like = matches!(location.to_ascii_lowercase().as_str(), "" | "utc" | "etc/utc" | "local" | "system");
    let Some(local) = local.filter(|_| !utc_like) else {
        return Some(text.to_string());
    };
    let tz: chrono_tz::Tz = location.parse().ok()?;
    let utc = chrono::DateTime::from_timestamp_micros(ServerZone::Named(tz).to_utc(local)?)?.naive_utc();
    let digits = text.split_once('.').map_or(0, |(_, f)| f.len());
    let mut out = utc.format("%Y-%m-%d %H:%M:%S").to_string();
    if digits > 0 {
        let micros = utc.and_utc().timestamp_subsec_micros();
        let fraction = format!("{micros:06}");
        out.push('.');
        out.push_str(&fraction[..digits.min(6)]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_move_to_utc() {
        assert_eq!(timestamp_in_utc("2020-01-01 08:00:00.123", "Asia/Shanghai").unwrap(), "2020-01-01 00:00:00.123");
        assert_eq!(timestamp_in_utc("2020-01-01 08:00:00", "UTC").unwrap(), "2020-01-01 08:00:00");
    }
}
