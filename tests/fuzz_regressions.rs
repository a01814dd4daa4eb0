//! The fuzz targets' checks (`fuzz/check.rs`) under `cargo test`: every input a fuzzer ever
//! failed on (`fuzz/regressions/<target>/*`), and every golden vector as a target's seed (from
//! `../shared/vectors`, else the project's own fixtures).

#[path = "../fuzz/check.rs"]
mod check;

use std::path::{Path, PathBuf};

use ticdc_rs::Protocol;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs `check` on every file of `fuzz/regressions/<target>`, naming the file that fails.
fn regressions(target: &str, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) -> usize {
    let inputs = files(&root().join("fuzz/regressions").join(target));
    for path in &inputs {
        let data = std::fs::read(path).unwrap();
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("fuzz regression {} fails", path.display());
        }
    }
    inputs.len()
}

#[test]
fn decode_regressions() {
    for (target, protocol) in check::TARGETS {
        let n = regressions(target, |data| check::decode(protocol, data));
        eprintln!("{target}: {n} regression inputs");
    }
}

#[test]
fn differential_regressions() {
    let n = regressions("differential", |data| {
        let Some((&choice, rest)) = data.split_first() else { return };
        check::differential(check::TARGETS[choice as usize % 5].1, rest)
    });
    eprintln!("differential: {n} regression inputs");
}

/// A vector's messages in a decode target's input format (as `fuzz/seed_corpus.py` writes them).
fn seed(case: &serde_json::Value) -> Option<(Protocol, Vec<u8>)> {
    let protocol = Protocol::from_name(case["protocol"].as_str()?)?;
    let compression = match case["config"]["compression"].as_str() {
        Some("snappy") => 1,
        Some("lz4") => 2,
        _ => 0,
    };
    let mut out = vec![compression];
    for m in case["messages"].as_array()? {
        let key = m["key_hex"].as_str().map(|k| hex::decode(k).unwrap());
        let value = hex::decode(m["value_hex"].as_str().unwrap_or("")).unwrap();
        out.extend((key.as_ref().map_or(0xffff, |k| k.len()) as u16).to_le_bytes());
        out.extend((value.len() as u16).to_le_bytes());
        out.extend(key.unwrap_or_default());
        out.extend(value);
    }
    Some((protocol, out))
}

#[test]
fn vectors_pass_the_decode_checks() {
    let shared = root().join("../shared/vectors");
    let dir = if shared.is_dir() { shared } else { root().join("tests/fixtures") };
    let mut checked = 0;
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| Some(e.ok()?.path())).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for protocol_dir in dirs {
        for path in files(&protocol_dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
            let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let cases = doc.get("cases").and_then(|c| c.as_array()).cloned().unwrap_or_else(|| vec![doc.clone()]);
            for case in &cases {
                let Some((protocol, data)) = seed(case) else { continue };
                if std::panic::catch_unwind(|| check::decode(protocol, &data)).is_err() {
                    panic!("vector {} fails the fuzz checks", path.display());
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no vectors in {}", dir.display());
    eprintln!("{checked} vectors pass the decode checks");
}
