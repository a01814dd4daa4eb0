//! Where the golden vectors are, for every test that reads them.
//!
//! The shared golden vectors live in `../shared/vectors` beside the checkout (or wherever
//! `TICDC_RS_VECTORS` points: set it to a missing path to test as a CI without them does). When
//! they are absent, the project's own fixtures in `tests/fixtures` (same layout, written by
//! `tests/fixtures/make_fixtures.py`) are read instead, and the test says so on stderr.

use std::path::PathBuf;

/// The vectors of one protocol directory (`open`, `craft`, `canal-json`, `simple`), and whether
/// they are the shared golden set (`false`: the project's own, smaller, fixtures).
pub fn vector_dir(protocol_dir: &str) -> (PathBuf, bool) {
    let root = match std::env::var_os("TICDC_RS_VECTORS") {
        Some(root) => PathBuf::from(root),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors"),
    };
    let shared = root.join(protocol_dir);
    if shared.is_dir() {
        return (shared, true);
    }
    let own = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(protocol_dir);
    eprintln!("{} is absent: running the project's own fixtures from {}", shared.display(), own.display());
    (own, false)
}
