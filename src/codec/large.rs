//! Large-message handling shared by the encoders (`common.md` §7): claim-check files.
//!
//! TiCDC names claim-check files with a random UUID; we name them after a hash of their
//! content, so encoding the same events twice writes the same bytes and the same locations.

use std::path::Path;

use base64::Engine;

use crate::error::{Fault, FaultResult};

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
