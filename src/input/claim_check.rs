//! Claim-check files (`common.md` §7): TiCDC's large-message handling that stores a message in a
//! file and sends its location instead. The decoder reads them back; the encoders write them.
//!
//! TiCDC names claim-check files with a random UUID; we name them after a hash of their
//! content, so encoding the same events twice writes the same bytes and the same locations.

use std::path::Path;

use base64::Engine;

use super::MAX_MESSAGE_BYTES;
use crate::error::{Fault, FaultResult};
use crate::json::JsonCursor;

/// The claim-check file body for a full message: `{"key": base64|null, "value": base64}`, or
/// the raw value when `raw_value` is set.
pub fn claim_check_body(key: Option<&[u8]>, value: &[u8], raw_value: bool) -> Vec<u8> {
    if raw_value {
        return value.to_vec();
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = String::with_capacity(value.len() * 4 / 3 + 32);
    out.push_str("{\"key\":");
    match key {
        Some(k) => {
            out.push('"');
            b64.encode_string(k, &mut out);
            out.push('"');
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"value\":\"");
    b64.encode_string(value, &mut out);
    out.push_str("\"}");
    out.into_bytes()
}

/// Writes `body` into `dir` and returns its location (`file://<dir>/<name>.json`).
pub fn store_claim_check(dir: &Path, body: &[u8]) -> FaultResult<String> {
    let name = format!("{:016x}.json", fnv1a64(body));
    let path = dir.join(&name);
    std::fs::create_dir_all(dir).map_err(|e| Fault::new(0, format!("claim-check dir {}: {e}", dir.display())))?;
    std::fs::write(&path, body).map_err(|e| Fault::new(0, format!("claim-check file {}: {e}", path.display())))?;
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    Ok(format!("file://{}/{name}", dir.display().to_string().trim_end_matches('/')))
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Reads a claim-check file: JSON `{"key": base64|null, "value": base64}`, or the raw value
/// (`claim-check-raw-value`). The location's basename is looked up in `dir`.
pub fn read_claim_check(dir: &Path, location: &str) -> FaultResult<(Option<Vec<u8>>, Vec<u8>)> {
    let basename = location.rsplit('/').next().unwrap_or(location);
    if basename.is_empty() || basename == ".." || basename == "." {
        return Err(Fault::new(0, format!("claim-check location {location:?} has no file name")));
    }
    let path = dir.join(basename);
    let size =
        std::fs::metadata(&path).map_err(|e| Fault::new(0, format!("claim-check file {}: {e}", path.display())))?.len();
    if size > MAX_MESSAGE_BYTES as u64 {
        return Err(Fault::new(0, format!("claim-check file {} is too large", path.display())));
    }
    let bytes = std::fs::read(&path).map_err(|e| Fault::new(0, format!("claim-check file {}: {e}", path.display())))?;
    Ok(parse_claim_check_envelope(&bytes).unwrap_or((None, bytes)))
}

fn parse_claim_check_envelope(bytes: &[u8]) -> Option<(Option<Vec<u8>>, Vec<u8>)> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut cur = JsonCursor::new(bytes).ok()?;
    cur.begin_object().ok()?;
    let (mut key, mut value) = (None, None);
    let mut first = true;
    while let Some(k) = cur.next_key(&mut first).ok()? {
        let text = if cur.null().ok()? { None } else { Some(cur.string().ok()?) };
        match k.as_ref() {
            "key" => key = text.and_then(|t| b64.decode(t.as_bytes()).ok()),
            "value" => value = Some(b64.decode(text?.as_bytes()).ok()?),
            _ => return None,
        }
    }
    cur.at_end().then_some(())?;
    Some((key, value?))
}
