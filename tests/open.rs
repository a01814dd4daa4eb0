//! Open protocol through the Rust API: the golden vectors (decode, errors, byte-exact and
//! semantic re-encoding), generated round trips, hostile input, and the batch driver's
//! envelope and typed layouts including claim-check files.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int16Type, Int64Type};
use arrow_array::{Array, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use base64::Engine;
use proptest::prelude::*;
use serde_json::Value as Json;
use ticdc_rs::arrow::infer::infer_schema;
use ticdc_rs::codec::{CodecOptions, EncodeOptions, LargeMessageHandle, Record};
use ticdc_rs::event::{flag, Column, ColumnType, Event, EventKind, MessageEvents, Value};
use ticdc_rs::schema::mysql::MySqlType;
use ticdc_rs::TableName;
use ticdc_rs::{BatchDecoder, Compression, DecodeOptions, LayoutOptions, OnError, Protocol};

// ---------------------------------------------------------------------------------------------
// Vectors

struct Vector {
    name: String,
    json: Json,
}

impl Vector {
    fn config(&self, key: &str) -> &Json {
        &self.json["config"][key]
    }

    fn compression(&self) -> Compression {
        Compression::parse(self.config("compression").as_str().unwrap_or("none")).unwrap()
    }

    fn messages(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.json["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    hex::decode(m["key_hex"].as_str().unwrap()).unwrap(),
                    hex::decode(m["value_hex"].as_str().unwrap()).unwrap(),
                )
            })
            .collect()
    }

    fn encode_options(&self) -> EncodeOptions {
        let flag = |k: &str, default: bool| self.config(k).as_bool().unwrap_or(default);
        EncodeOptions {
            compression: self.compression(),
            output_old_value: flag("output_old_value", true),
            only_output_updated_columns: flag("only_output_updated_columns", false),
            delete_only_output_handle_key_columns: flag("delete_only_output_handle_key_columns", false),
            claim_check_raw_value: flag("claim_check_raw_value", false),
            large_message_handle: LargeMessageHandle::parse(
                self.config("large_message_handle_option").as_str().unwrap_or("none"),
            )
            .unwrap(),
            ..EncodeOptions::default()
        }
    }

    fn is_error(&self) -> bool {
        !self.json["expected_error"].is_null()
    }
}

mod common;

/// Whether the vectors are the shared golden set (else the project's own fixtures).
fn shared_vectors() -> bool {
    common::vector_dir("open").1
}

fn vectors() -> Vec<Vector> {
    let (dir, _) = common::vector_dir("open");
    let mut out: Vec<Vector> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| Vector {
            name: p.file_stem().unwrap().to_string_lossy().into_owned(),
            json: serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn vector(name: &str) -> Option<Vector> {
    vectors().into_iter().find(|v| v.name == name)
}

fn codec(compression: Compression) -> Box<dyn ticdc_rs::codec::Codec> {
    Protocol::Open.codec(&CodecOptions { compression, ..Default::default() }).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Comparing decoded events with the vectors' `expected`

fn check_value(what: &str, ty: u64, got: &Value<'_>, want: &Json) {
    match (got, want) {
        (Value::Null, Json::Null) => {}
        (Value::Bytes(b), Json::Object(o)) => assert_eq!(hex::encode(b), o["hex"].as_str().unwrap(), "{what}"),
        (Value::Text(t), Json::String(s)) => assert_eq!(t, s, "{what}"),
        (Value::Int(v), Json::Number(n)) => assert_eq!(v.to_string(), n.to_string(), "{what}"),
        (Value::UInt(v), Json::Number(n)) => assert_eq!(v.to_string(), n.to_string(), "{what}"),
        (Value::Float32(v), Json::Number(n)) if ty == 4 => {
            assert_eq!(*v, n.to_string().parse::<f64>().unwrap() as f32, "{what}")
        }
        (Value::Float64(v), Json::Number(n)) => assert_eq!(*v, n.to_string().parse::<f64>().unwrap(), "{what}"),
        _ => panic!("{what}: got {got:?}, want {want}"),
    }
}

fn check_columns(what: &str, got: &[Column<'_>], want: &Json, new_row: &[Column<'_>]) {
    let want = want.as_array().unwrap();
    let by_name: BTreeMap<&str, &Column<'_>> = got.iter().map(|c| (c.name.as_ref(), c)).collect();
    for w in want {
        let name = w["name"].as_str().unwrap();
        let c = by_name.get(name).unwrap_or_else(|| panic!("{what}: no column {name}"));
        let ty = w["type"].as_u64().unwrap();
        assert_eq!(c.ty.base, MySqlType::from_code(ty), "{what}.{name} type");
        assert_eq!(c.ty.flags, Some(w["flag"].as_u64().unwrap()), "{what}.{name} flags");
        check_value(&format!("{what}.{name}"), ty, &c.value, &w["value"]);
    }
    // Decoded old images are whole rows: columns the message left out come from the new row.
    for c in got.iter().filter(|c| !want.iter().any(|w| w["name"] == c.name.as_ref())) {
        let new =
            new_row.iter().find(|n| n.name == c.name).unwrap_or_else(|| panic!("{what}: extra column {}", c.name));
        assert_eq!(c.value, new.value, "{what}.{} completed from the new row", c.name);
    }
}

fn check_event(what: &str, events: &MessageEvents<'_>, e: &Event<'_>, want: &Json) {
    assert_eq!(e.commit_ts.to_string(), want["commit_ts"].to_string(), "{what} commit_ts");
    let opt = |s: &Option<std::borrow::Cow<'_, str>>| s.as_deref().map(str::to_string);
    let want_str = |k: &str| want[k].as_str().filter(|s| !s.is_empty()).map(str::to_string);
    match want["type"].as_str().unwrap() {
        "resolved" => assert_eq!(e.kind, EventKind::Watermark, "{what}"),
        "ddl" => {
            assert_eq!(e.kind, EventKind::Ddl, "{what}");
            assert_eq!(opt(&e.schema), want_str("schema"), "{what} schema");
            assert_eq!(opt(&e.table), want_str("table"), "{what} table");
            assert_eq!(e.ddl.as_deref(), want["query"].as_str(), "{what} query");
            assert_eq!(
                e.ddl_type.as_deref().map(str::to_string),
                Some(want["ddl_type"].to_string()),
                "{what} ddl_type"
            );
        }
        "row" => {
            let kind = match want["row_type"].as_str().unwrap() {
                "insert" => EventKind::Insert,
                "update" => EventKind::Update,
                _ => EventKind::Delete,
            };
            assert_eq!(e.kind, kind, "{what}");
            assert_eq!(opt(&e.schema), want_str("schema"), "{what} schema");
            assert_eq!(opt(&e.table), want_str("table"), "{what} table");
            assert_eq!(e.partition_id, want["partition_id"].as_i64(), "{what} partition");
            assert_eq!(e.handle_key_only, want["handle_key_only"].as_bool().unwrap(), "{what} ohk");
            assert_eq!(opt(&e.claim_check), want_str("claim_check_location"), "{what} ccl");
            let after = events.after(e);
            if want["columns"].is_array() {
                check_columns(&format!("{what} columns"), after, &want["columns"], &[]);
            } else {
                assert!(after.is_empty(), "{what}: unexpected new row");
            }
            if want["old_columns"].is_array() {
                check_columns(&format!("{what} old_columns"), events.before(e), &want["old_columns"], after);
            } else {
                assert!(events.before(e).is_empty(), "{what}: unexpected old row");
            }
            let image = if kind == EventKind::Delete { events.before(e) } else { after };
            let handles: Vec<&str> =
                image.iter().filter(|c| c.ty.flags.unwrap() & flag::HANDLE_KEY != 0).map(|c| c.name.as_ref()).collect();
            let keys: Vec<&str> = events.keys(e).iter().map(|k| k.as_ref()).collect();
            assert_eq!(keys, handles, "{what} keys");
        }
        other => panic!("{what}: unknown expected type {other}"),
    }
}

/// Decodes every message of a vector; the events of all messages in order, or the first fault.
fn decode_all<'a>(
    codec: &mut dyn ticdc_rs::codec::Codec,
    messages: &'a [(Vec<u8>, Vec<u8>)],
) -> Result<Vec<MessageEvents<'a>>, ticdc_rs::error::Fault> {
    messages
        .iter()
        .map(|(k, v)| {
            let mut out = MessageEvents::default();
            codec.decode(Some(k), v, &mut out).map(|_| out)
        })
        .collect()
}

#[test]
fn vectors_decode_to_expected() {
    let mut checked = 0;
    for v in vectors() {
        let messages = v.messages();
        let mut codec = codec(v.compression());
        let decoded = decode_all(codec.as_mut(), &messages);
        if v.is_error() {
            let fault = decoded.err().unwrap_or_else(|| panic!("{}: expected an error", v.name));
            eprintln!("{}: {} at byte {}", v.name, fault.reason, fault.offset);
            continue;
        }
        let decoded = decoded.unwrap_or_else(|f| panic!("{}: {f:?}", v.name));
        let all: Vec<(&MessageEvents<'_>, &Event<'_>)> =
            decoded.iter().flat_map(|m| m.events.iter().map(move |e| (m, e))).collect();
        let expected = if v.json["claim_check_files"].is_object() {
            // `expected` is the event rebuilt from the file; `message_only_expected` the message.
            v.json["message_only_expected"].as_array().cloned()
        } else {
            v.json["expected"].as_array().cloned()
        };
        let Some(expected) = expected else {
            continue;
        };
        assert_eq!(all.len(), expected.len(), "{}: event count", v.name);
        for (i, ((events, e), want)) in all.iter().zip(&expected).enumerate() {
            check_event(&format!("{} event {i}", v.name), events, e, want);
        }
        checked += 1;
    }
    assert!(checked >= if shared_vectors() { 30 } else { 2 }, "only {checked} vectors checked");
}

/// The claim-check file holds the framed key and value of the full message.
#[test]
fn claim_check_file_decodes_to_expected() {
    let Some(v) = vector("large_message_claim_check_lz4") else { return };
    let files = v.json["claim_check_files"].as_object().unwrap();
    let body = hex::decode(files.values().next().unwrap()["hex"].as_str().unwrap()).unwrap();
    let file: Json = serde_json::from_slice(&body).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64.decode(file["key"].as_str().unwrap()).unwrap();
    let value = b64.decode(file["value"].as_str().unwrap()).unwrap();
    let mut out = MessageEvents::default();
    codec(Compression::Lz4).decode(Some(&key), &value, &mut out).unwrap();
    let expected = v.json["expected"].as_array().unwrap();
    assert_eq!(out.events.len(), expected.len());
    check_event("claim-check file", &out, &out.events[0], &expected[0]);
}

// ---------------------------------------------------------------------------------------------
// Re-encoding

fn encode_message(options: &EncodeOptions, events: &MessageEvents<'_>) -> Vec<Record> {
    let mut encoder = Protocol::Open.encoder(options).unwrap();
    let mut records = Vec::new();
    for e in &events.events {
        encoder.encode(events, e, &mut records).unwrap();
    }
    encoder.flush(&mut records).unwrap();
    records
}

/// Everything an event says, in a comparable form (values keep their variants).
fn describe(events: &MessageEvents<'_>) -> Vec<String> {
    let columns = |cs: &[Column<'_>]| {
        let mut v: Vec<String> =
            cs.iter().map(|c| format!("{}:{:?}:{:?}:{:?}", c.name, c.ty.base, c.ty.flags, c.value)).collect();
        v.sort();
        v
    };
    events
        .events
        .iter()
        .map(|e| {
            format!(
                "{:?} {} {:?} {:?} {:?} {:?} {:?} {} {:?} keys={:?} after={:?} before={:?}",
                e.kind,
                e.commit_ts,
                e.schema,
                e.table,
                e.partition_id,
                e.ddl,
                e.ddl_type,
                e.handle_key_only,
                e.claim_check,
                events.keys(e),
                columns(events.after(e)),
                columns(events.before(e)),
            )
        })
        .collect()
}

#[test]
fn vectors_reencode() {
    let mut exact = 0;
    for v in vectors().into_iter().filter(|v| !v.is_error()) {
        let options = v.encode_options();
        let mut codec = codec(v.compression());
        for (i, (key, value)) in v.messages().iter().enumerate() {
            let mut events = MessageEvents::default();
            codec.decode(Some(key), value, &mut events).unwrap();
            let records = encode_message(&options, &events);
            if v.json["byte_exact"].as_bool().unwrap() {
                assert_eq!(records.len(), 1, "{} message {i}", v.name);
                let r = &records[0];
                assert_eq!(
                    String::from_utf8_lossy(r.key.as_ref().unwrap()),
                    String::from_utf8_lossy(key),
                    "{} message {i} key",
                    v.name
                );
                assert_eq!(
                    String::from_utf8_lossy(&r.value),
                    String::from_utf8_lossy(value),
                    "{} message {i} value",
                    v.name
                );
                assert_eq!((r.key.as_deref(), &r.value[..]), (Some(&key[..]), &value[..]), "{} message {i}", v.name);
                exact += 1;
            }
            let mut again = MessageEvents::default();
            for r in &records {
                codec.decode(r.key.as_deref(), &r.value, &mut again).unwrap();
            }
            assert_eq!(describe(&again), describe(&events), "{} message {i} round trip", v.name);
        }
    }
    assert!(exact >= if shared_vectors() { 20 } else { 2 }, "only {exact} byte-exact messages");
}

/// The encoder keeps what it rendered for one table's columns across rows; one encoder taking
/// every vector's events in turn (tables, column sets, flags and types changing between them)
/// must write what a fresh encoder writes for each.
#[test]
fn an_encoder_kept_across_tables_writes_what_fresh_ones_do() {
    let options = EncodeOptions { max_batch_size: 1, ..EncodeOptions::default() };
    let mut kept = Protocol::Open.encoder(&options).unwrap();
    let mut rows = 0;
    for v in vectors().into_iter().filter(|v| !v.is_error()) {
        let mut codec = codec(v.compression());
        for (key, value) in v.messages() {
            let mut events = MessageEvents::default();
            codec.decode(Some(&key), &value, &mut events).unwrap();
            for e in events.events.iter().filter(|e| e.kind.is_row()) {
                let mut from_kept = Vec::new();
                kept.encode(&events, e, &mut from_kept).unwrap();
                kept.flush(&mut from_kept).unwrap();
                let mut fresh = Protocol::Open.encoder(&options).unwrap();
                let mut from_fresh = Vec::new();
                fresh.encode(&events, e, &mut from_fresh).unwrap();
                fresh.flush(&mut from_fresh).unwrap();
                let values =
                    |r: &[Record]| r.iter().map(|r| String::from_utf8_lossy(&r.value).into_owned()).collect::<Vec<_>>();
                assert_eq!(values(&from_kept), values(&from_fresh), "{}", v.name);
                rows += 1;
            }
        }
    }
    let mut events = sample_row("", 4);
    let mut kept_flags = Vec::new();
    for flags in [None, Some(flag::HANDLE_KEY | flag::PRIMARY_KEY | flag::BINARY), Some(flag::BINARY | flag::UNSIGNED)]
    {
        events.columns[0].ty.flags = flags;
        let mut out = Vec::new();
        kept.encode(&events, &events.events[0], &mut out).unwrap();
        kept.flush(&mut out).unwrap();
        kept_flags.push(String::from_utf8_lossy(&out[0].value).into_owned());
    }
    assert!(kept_flags[1].contains(r#""id":{"t":8,"h":true,"f":11,"#), "{}", kept_flags[1]);
    assert!(kept_flags[2].contains(r#""id":{"t":8,"f":129,"#), "{}", kept_flags[2]);
    assert!(rows >= if shared_vectors() { 20 } else { 3 }, "only {rows} rows");
}

fn sample_row<'a>(name_suffix: &str, value_len: usize) -> MessageEvents<'a> {
    let mut events = MessageEvents::default();
    let id = Column { name: "id".into(), ty: ColumnType::new(MySqlType::BigInt), value: Value::Int(42), at: 0 };
    let text = Column {
        name: format!("payload{name_suffix}").into(),
        ty: ColumnType::new(MySqlType::VarChar),
        // Pseudo-random letters, so that compression cannot shrink a large value below a limit.
        value: Value::Text(
            (0..value_len as u64)
                .map(|i| (b'a' + (i.wrapping_mul(2654435761) >> 7) as u8 % 26) as char)
                .collect::<String>()
                .into(),
        ),
        at: 0,
    };
    events.columns.extend([id, text]);
    events.keys.push("id".into());
    let mut e = Event::new(EventKind::Insert, 7);
    e.schema = Some("db".into());
    e.table = Some("t".into());
    e.keys = 0..1;
    e.after = Some(0..2);
    events.events.push(e);
    events
}

#[test]
fn batching_follows_tiflow_limits() {
    let events = sample_row("", 10);
    let mut encoder = Protocol::Open.encoder(&EncodeOptions::default()).unwrap();
    let mut records = Vec::new();
    for _ in 0..40 {
        encoder.encode(&events, &events.events[0], &mut records).unwrap();
    }
    let mut ddl = Event::new(EventKind::Ddl, 8);
    ddl.ddl = Some("drop table t".into());
    ddl.ddl_type = Some("4".into());
    encoder.encode(&events, &ddl, &mut records).unwrap();
    encoder.encode(&events, &events.events[0], &mut records).unwrap();
    encoder.flush(&mut records).unwrap();
    let counts: Vec<usize> = records
        .iter()
        .map(|r| {
            let mut out = MessageEvents::default();
            codec(Compression::None).decode(r.key.as_deref(), &r.value, &mut out).unwrap();
            out.events.len()
        })
        .collect();
    assert_eq!(counts, [16, 16, 8, 1, 1]);
    // The key carries rid = the integer handle.
    assert!(String::from_utf8_lossy(records[0].key.as_ref().unwrap()).contains(r#""rid":42,"t":1}"#));

    // A message closes before it would exceed max-message-bytes.
    let small = EncodeOptions { max_message_bytes: 400, ..EncodeOptions::default() };
    let records = encode_message(&small, &{
        let mut m = sample_row("", 100);
        let e = m.events[0].clone();
        m.events.push(e);
        m
    });
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.key.as_ref().unwrap().len() + r.value.len() + 36 <= 400));
}

#[test]
fn large_messages_are_handled_per_option() {
    let events = sample_row("", 2000);
    let limit = EncodeOptions { max_message_bytes: 1000, ..EncodeOptions::default() };
    let mut encoder = Protocol::Open.encoder(&limit).unwrap();
    assert!(encoder.encode(&events, &events.events[0], &mut Vec::new()).unwrap_err().reason.contains("exceeds"));

    let hko = EncodeOptions { large_message_handle: LargeMessageHandle::HandleKeyOnly, ..limit.clone() };
    let records = encode_message(&hko, &events);
    let mut out = MessageEvents::default();
    codec(Compression::None).decode(records[0].key.as_deref(), &records[0].value, &mut out).unwrap();
    assert!(out.events[0].handle_key_only);
    assert_eq!(out.after(&out.events[0]).len(), 1);

    let dir = std::env::temp_dir().join(format!("ticdc_rs_open_cc_{}", std::process::id()));
    let cc = EncodeOptions {
        large_message_handle: LargeMessageHandle::ClaimCheck,
        claim_check_dir: Some(dir.clone()),
        compression: Compression::Snappy,
        ..limit
    };
    let records = encode_message(&cc, &events);
    assert_eq!(records.len(), 1);
    let batch = key_value_batch(&records.iter().map(|r| (r.key.clone().unwrap(), r.value.clone())).collect::<Vec<_>>());
    let out = batch_decoder(LayoutOptions::Envelope, Compression::Snappy, Some(dir.clone())).decode(&batch).unwrap();
    let after = out.column_by_name("_after").unwrap().as_map();
    assert_eq!(after.value(0).len(), 2, "the full row comes from the claim-check file");
    let location = out.column_by_name("_claim_check").unwrap().as_string::<i32>().value(0).to_string();
    assert!(location.starts_with("file://") && location.ends_with(".json"), "{location}");
    let _ = std::fs::remove_dir_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Errors and hostile input

/// An INSERT message (key, value) of one column `c` whose item is `col`.
fn one_column_row(col: &str) -> (Vec<u8>, Vec<u8>) {
    let json = format!(r#"{{"u":{{"c":{col}}}}}"#);
    let key_json = br#"{"ts":1,"scm":"s","tbl":"t","t":1}"#;
    let mut k = 1u64.to_be_bytes().to_vec();
    k.extend_from_slice(&(key_json.len() as u64).to_be_bytes());
    k.extend_from_slice(key_json);
    let mut v = (json.len() as u64).to_be_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    (k, v)
}

#[test]
fn float_text_out_of_range_stays_text_through_the_encoder() {
    for col in [r#"{"t":4,"f":0,"v":"1e39"}"#, r#"{"t":5,"f":0,"v":"-1e999"}"#] {
        let (k, v) = one_column_row(col);
        let mut first = MessageEvents::default();
        codec(Compression::None).decode(Some(&k), &v, &mut first).unwrap();
        let record = encode_message(&EncodeOptions::default(), &first).remove(0);
        let mut again = MessageEvents::default();
        codec(Compression::None).decode(record.key.as_deref(), &record.value, &mut again).unwrap();
        assert_eq!(describe(&again), describe(&first), "{col}");
    }
}

#[test]
fn malformed_messages_fault_with_offsets() {
    let mut c = codec(Compression::None);
    let good = {
        let mut m = sample_row("", 3);
        let e = m.events[0].clone();
        m.events.push(e);
        encode_message(&EncodeOptions::default(), &m).remove(0)
    };
    let (key, value) = (good.key.unwrap(), good.value);
    let mut fault = |k: &[u8], v: &[u8]| {
        let mut out = MessageEvents::default();
        c.decode(Some(k), v, &mut out).unwrap_err()
    };
    let f = fault(&key[..5], &value);
    assert!(f.reason.contains("in the key") && f.offset == 0, "{f:?}");
    let mut bad_version = key.clone();
    bad_version[7] = 2;
    assert!(fault(&bad_version, &value).reason.contains("version 2"));
    let f = fault(&key[..key.len() - 1], &value);
    assert!(f.reason.contains("key") && f.offset > 8, "{f:?}");
    let first_value_len = 8 + u64::from_be_bytes(value[..8].try_into().unwrap()) as usize;
    let f = fault(&key, &value[..first_value_len]);
    assert!(f.reason.contains("fewer items"), "{f:?}");
    let mut extra = value.clone();
    extra.extend_from_slice(&value[..first_value_len]);
    assert_eq!(fault(&key, &extra).offset, value.len());
    let mut huge = value.clone();
    huge[0] = 0xff;
    assert!(fault(&key, &huge).reason.contains("runs past"));
    let mut bad_json = value.clone();
    bad_json[8] = b'[';
    assert_eq!(fault(&key, &bad_json).offset, 8);
    // Key-side JSON faults point into the key.
    let mut bad_key = key.clone();
    bad_key[16] = b'x';
    let f = fault(&bad_key, &value);
    assert_eq!((f.offset, f.reason.contains("in the key")), (16, true), "{f:?}");
    // Bad escapes and base64; numbers out of their column's range.
    for col in [
        r#"{"t":15,"f":1,"v":"\\q"}"#,
        r#"{"t":252,"f":1,"v":"***"}"#,
        r#"{"t":3,"f":0,"v":1.5}"#,
        r#"{"t":3,"f":128,"v":-1}"#,
        r#"{"t":3,"f":0,"v":true}"#,
        r#"{"f":0,"v":1}"#,
        r#"{"t":4,"f":0,"v":1e39}"#,
        r#"{"t":5,"f":0,"v":-1e999}"#,
    ] {
        let (k, v) = one_column_row(col);
        let mut out = MessageEvents::default();
        assert!(c.decode(Some(&k), &v, &mut out).is_err(), "{col}");
    }
    // Decompression failures are faults at the item.
    let (k, v) = one_column_row(r#"{"t":3,"f":0,"v":1}"#);
    for compression in [Compression::Snappy, Compression::Lz4] {
        let f = codec(compression).decode(Some(&k), &v, &mut MessageEvents::default()).unwrap_err();
        assert!(f.reason.contains("decompress") && f.offset == 8, "{f:?}");
    }
}

fn key_value_batch(messages: &[(Vec<u8>, Vec<u8>)]) -> RecordBatch {
    let schema =
        Schema::new(vec![Field::new("key", DataType::Binary, true), Field::new("value", DataType::Binary, true)]);
    let keys = BinaryArray::from_iter_values(messages.iter().map(|m| &m.0));
    let values = BinaryArray::from_iter_values(messages.iter().map(|m| &m.1));
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), Arc::new(values)]).unwrap()
}

fn batch_decoder(layout: LayoutOptions, compression: Compression, claim_check_dir: Option<PathBuf>) -> BatchDecoder {
    BatchDecoder::new(DecodeOptions {
        protocol: Some(Protocol::Open),
        layout,
        on_error: OnError::Collect,
        compression,
        claim_check_dir,
        ..Default::default()
    })
    .unwrap()
}

fn sample_messages() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut m = sample_row("", 5);
    let mut update = m.events[0].clone();
    update.kind = EventKind::Update;
    update.before = Some(0..2);
    m.events.push(update);
    encode_message(&EncodeOptions::default(), &m).into_iter().map(|r| (r.key.unwrap(), r.value)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(key in proptest::collection::vec(any::<u8>(), 0..64),
                                value in proptest::collection::vec(any::<u8>(), 0..256),
                                versioned in any::<bool>()) {
        let mut key = key;
        if versioned { key.splice(0..0, 1u64.to_be_bytes()); }
        for compression in [Compression::None, Compression::Snappy, Compression::Lz4] {
            let _ = codec(compression).decode(Some(&key), &value, &mut MessageEvents::default());
        }
        let out = batch_decoder(LayoutOptions::Envelope, Compression::None, None).decode(&key_value_batch(&[(key, value)])).unwrap();
        // Its events, or one ERROR row; a well-formed empty batch (a version and nothing else) has no event.
        let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
        let errors = (0..ops.len()).filter(|&i| ops.value(i) == "ERROR").count();
        prop_assert!(errors == 0 || errors == 1 && ops.len() == 1);
    }

    #[test]
    fn mutated_messages_yield_events_or_one_error(in_key in any::<bool>(), at in 0usize..2000, byte in any::<u8>(), cut in 0usize..2000) {
        let (mut key, mut value) = sample_messages().remove(0);
        let target = if in_key { &mut key } else { &mut value };
        let at = at % target.len();
        target[at] = byte;
        let len = target.len();
        target.truncate(len - cut % len);
        let out = batch_decoder(LayoutOptions::Envelope, Compression::None, None).decode(&key_value_batch(&[(key, value)])).unwrap();
        let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
        let errors = (0..ops.len()).filter(|&i| ops.value(i) == "ERROR").count();
        prop_assert!(errors == 0 || errors == 1 && ops.len() == 1);
    }
}

// ---------------------------------------------------------------------------------------------
// Generated round trips

#[derive(Debug, Clone)]
struct GenColumn {
    code: u8,
    flags: u64,
    value: Value<'static>,
}

fn gen_column() -> impl Strategy<Value = GenColumn> {
    let text = "[a-z<>&\"\\\\\u{0}-\u{1f}\u{2028}é中😀 ]{0,12}";
    let nullable = |s: BoxedStrategy<Value<'static>>| prop_oneof![1 => Just(Value::Null), 6 => s].boxed();
    prop_oneof![
        nullable(any::<i64>().prop_map(Value::Int).boxed()).prop_map(|value| GenColumn { code: 8, flags: 0x41, value }),
        nullable(any::<u64>().prop_map(Value::UInt).boxed()).prop_map(|value| GenColumn {
            code: 8,
            flags: 0xC1,
            value
        }),
        nullable(any::<i8>().prop_map(|v| Value::Int(v as i64)).boxed()).prop_map(|value| GenColumn {
            code: 1,
            flags: 0x41,
            value
        }),
        nullable(any::<f32>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::Float32).boxed())
            .prop_map(|value| GenColumn { code: 4, flags: 0x41, value }),
        nullable(any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::Float64).boxed())
            .prop_map(|value| GenColumn { code: 5, flags: 0x41, value }),
        nullable(text.prop_map(|s| Value::Text(s.into())).boxed()).prop_map(|value| GenColumn {
            code: 15,
            flags: 0x40,
            value
        }),
        nullable(text.prop_map(|s| Value::Text(s.into())).boxed()).prop_map(|value| GenColumn {
            code: 252,
            flags: 0x40,
            value
        }),
        nullable(proptest::collection::vec(any::<u8>(), 0..24).prop_map(|b| Value::Bytes(b.into())).boxed())
            .prop_map(|value| GenColumn { code: 254, flags: 0x41, value }),
        nullable(proptest::collection::vec(any::<u8>(), 0..24).prop_map(|b| Value::Bytes(b.into())).boxed())
            .prop_map(|value| GenColumn { code: 251, flags: 0x41, value }),
        nullable("-?[0-9]{1,6}\\.[0-9]{2}".prop_map(|s| Value::Text(s.into())).boxed()).prop_map(|value| GenColumn {
            code: 246,
            flags: 0x41,
            value
        }),
        nullable(any::<u64>().prop_map(Value::UInt).boxed()).prop_map(|value| GenColumn {
            code: 16,
            flags: 0xC1,
            value
        }),
        nullable((1u64..10).prop_map(Value::UInt).boxed()).prop_map(|value| GenColumn {
            code: 247,
            flags: 0x40,
            value
        }),
        nullable(
            "2[0-9]{3}-0[1-9]-1[0-9] 0[0-9]:[0-5][0-9]:00(\\.[0-9]{6})?".prop_map(|s| Value::Text(s.into())).boxed()
        )
        .prop_map(|value| GenColumn { code: 12, flags: 0x41, value }),
    ]
}

#[derive(Debug, Clone)]
struct GenEvent {
    kind: u8,
    ts: u64,
    schema: String,
    table: String,
    partition: Option<i64>,
    columns: Vec<(String, GenColumn)>,
    old: Vec<Value<'static>>,
}

fn gen_event() -> impl Strategy<Value = GenEvent> {
    (
        0u8..5,
        any::<u64>(),
        "[a-z<&é]{1,6}",
        "[a-z\"_]{1,6}",
        proptest::option::of(any::<i64>()),
        proptest::collection::btree_map("[a-zA-Z_\u{e9}<]{1,6}", gen_column(), 1..8),
    )
        .prop_flat_map(|(kind, ts, schema, table, partition, columns)| {
            let columns: Vec<(String, GenColumn)> = columns.into_iter().collect();
            let n = columns.len();
            (Just((kind, ts, schema, table, partition, columns)), proptest::collection::vec(any::<bool>(), n))
        })
        .prop_map(|((kind, ts, schema, table, partition, columns), change)| {
            // The old row differs from the new one in some integer-typed columns.
            let old = columns
                .iter()
                .zip(change)
                .map(|((_, c), ch)| match (&c.value, ch) {
                    (Value::Int(v), true) => Value::Int(v.wrapping_add(1)),
                    (v, _) => v.clone(),
                })
                .collect();
            GenEvent { kind, ts, schema, table, partition, columns, old }
        })
}

fn build(gen: &[GenEvent]) -> MessageEvents<'static> {
    let mut events = MessageEvents::default();
    for g in gen {
        let kind = [EventKind::Insert, EventKind::Update, EventKind::Delete, EventKind::Ddl, EventKind::Watermark]
            [g.kind as usize];
        let mut e = Event::new(kind, g.ts);
        match kind {
            EventKind::Watermark => {}
            EventKind::Ddl => {
                e.schema = Some(g.schema.clone().into());
                e.table = Some(g.table.clone().into());
                e.ddl = Some(format!("alter table `{}` add column x int -- <é>", g.table).into());
                e.ddl_type = Some("5".into());
            }
            _ => {
                e.schema = Some(g.schema.clone().into());
                e.table = Some(g.table.clone().into());
                e.partition_id = g.partition;
                let push = |events: &mut MessageEvents<'static>, old: bool| {
                    let start = events.columns.len();
                    for (i, (name, c)) in g.columns.iter().enumerate() {
                        let base = MySqlType::from_code(c.code as u64);
                        let flags = if i == 0 { c.flags | flag::HANDLE_KEY | flag::PRIMARY_KEY } else { c.flags };
                        let ty = ColumnType {
                            base,
                            unsigned: flags & flag::UNSIGNED != 0,
                            binary: flags & flag::BINARY != 0 && base.is_string(),
                            text: None,
                            flags: Some(flags),
                        };
                        let value = if old { g.old[i].clone() } else { c.value.clone() };
                        events.columns.push(Column { name: name.clone().into(), ty, value, at: 0 });
                    }
                    start..events.columns.len()
                };
                let keys_start = events.keys.len();
                events.keys.push(g.columns[0].0.clone().into());
                e.keys = keys_start..events.keys.len();
                match kind {
                    EventKind::Insert => e.after = Some(push(&mut events, false)),
                    EventKind::Update => {
                        e.after = Some(push(&mut events, false));
                        e.before = Some(push(&mut events, true));
                    }
                    _ => e.before = Some(push(&mut events, true)),
                }
            }
        }
        events.events.push(e);
    }
    events
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn generated_events_round_trip(gen in proptest::collection::vec(gen_event(), 1..24),
                                   compression in prop_oneof![Just(Compression::None), Just(Compression::Snappy), Just(Compression::Lz4)]) {
        let events = build(&gen);
        let options = EncodeOptions { compression, max_batch_size: 5, ..EncodeOptions::default() };
        let records = encode_message(&options, &events);
        let mut decoded = MessageEvents::default();
        let mut c = codec(compression);
        for r in &records {
            c.decode(r.key.as_deref(), &r.value, &mut decoded).unwrap();
        }
        prop_assert_eq!(describe(&decoded), describe(&events));
    }
}

// ---------------------------------------------------------------------------------------------
// Through the batch driver

fn vector_batch(v: &Vector) -> RecordBatch {
    key_value_batch(&v.messages())
}

#[test]
fn envelope_layout_of_vectors() {
    let Some(v) = vector("dml_large_update") else { return };
    let out = batch_decoder(LayoutOptions::Envelope, Compression::None, None).decode(&vector_batch(&v)).unwrap();
    assert_eq!(out.num_rows(), 1);
    assert_eq!(out.column_by_name("_op").unwrap().as_string::<i32>().value(0), "UPDATE");
    assert_eq!(out.column_by_name("_commit_ts").unwrap().as_primitive::<Int64Type>().value(0), 449543017000000002);
    let after = out.column_by_name("_after").unwrap().as_map();
    let entries = after.value(0);
    let names = entries.column(0).as_string::<i32>();
    let values = entries.column(1).as_string::<i32>();
    let map: BTreeMap<&str, &str> = (0..names.len()).map(|i| (names.value(i), values.value(i))).collect();
    assert_eq!(map["biu2"], "9223372036854775808");
    assert_eq!(map["floatT"], "3.14");
    assert_eq!(map["varcharT"], "测试Varchar");
    assert_eq!(map["blobT"], base64::engine::general_purpose::STANDARD.encode("测试blob"));
    assert_eq!(map["vectorT"], "[1,2,3,4,5]");
    let keys = out.column_by_name("_keys").unwrap().as_list::<i32>();
    let keys = keys.value(0);
    assert_eq!(keys.as_string::<i32>().value(0), "tu1");
    assert!(!out.column_by_name("_before").unwrap().is_null(0));

    let Some(v) = vector("spec_doc_event_stream") else { return };
    let out = batch_decoder(LayoutOptions::Envelope, Compression::None, None).decode(&vector_batch(&v)).unwrap();
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    let got: Vec<&str> = (0..ops.len()).map(|i| ops.value(i)).collect();
    assert_eq!(&got[..5], ["DDL", "WATERMARK", "DDL", "WATERMARK", "INSERT"]);
    assert_eq!(out.column_by_name("_ddl_type").unwrap().as_string::<i32>().value(0), "3");
}

#[test]
#[allow(clippy::approx_constant)] // the vector's FLOAT value is 3.14
fn typed_layout_of_vectors() {
    let Some(v) = vector("dml_large_insert") else { return };
    let batch = vector_batch(&v);
    let table = TableName::parse("test.t").unwrap();
    let schema = infer_schema(
        std::slice::from_ref(&batch),
        Some(Protocol::Open),
        &table,
        Compression::None,
        "value",
        "key",
        &[],
    )
    .unwrap();
    let layout = LayoutOptions::Typed { table, schema: Arc::new(schema) };
    let out = batch_decoder(layout, Compression::None, None).decode(&batch).unwrap();
    assert_eq!(out.num_rows(), 1);
    assert_eq!(out.column_by_name("_op").unwrap().as_string::<i32>().value(0), "INSERT");
    let float = out.column_by_name("floatT").unwrap().as_primitive::<Float32Type>();
    assert_eq!(float.value(0), 3.14f32);
    let tu1 = out.column_by_name("tu1").unwrap().as_primitive::<Int16Type>();
    assert_eq!(tu1.value(0), 127);
    let bi = out.column_by_name("bi").unwrap().as_primitive::<Int64Type>();
    assert_eq!(bi.value(0), i64::MAX);
    let binary = out.column_by_name("binaryT").unwrap().as_binary::<i32>();
    assert!(binary.value(0).starts_with("测试Binary\0".as_bytes()));
    assert_eq!(out.column_by_name("varcharT").unwrap().as_string::<i32>().value(0), "测试Varchar");
    assert!(out.column_by_name("biu4").unwrap().is_null(0));
}

#[test]
fn typed_layout_of_compressed_and_claim_checked_vectors() {
    let Some(v) = vector("large_message_claim_check_lz4") else { return };
    let dir = std::env::temp_dir().join(format!("ticdc_rs_open_vec_cc_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, file) in v.json["claim_check_files"].as_object().unwrap() {
        std::fs::write(dir.join(name), hex::decode(file["hex"].as_str().unwrap()).unwrap()).unwrap();
    }
    let batch = vector_batch(&v);
    let table = TableName::parse("test.t").unwrap();
    let full = vector("dml_large_insert_lz4").unwrap();
    let schema =
        infer_schema(&[vector_batch(&full)], Some(Protocol::Open), &table, Compression::Lz4, "value", "key", &[])
            .unwrap();
    let layout = LayoutOptions::Typed { table, schema: Arc::new(schema) };
    let out = batch_decoder(layout, Compression::Lz4, Some(dir.clone())).decode(&batch).unwrap();
    assert_eq!(out.num_rows(), 1);
    assert_eq!(out.column_by_name("_op").unwrap().as_string::<i32>().value(0), "INSERT");
    let claim = out.column_by_name("_claim_check").unwrap().as_string::<i32>();
    assert!(claim.value(0).ends_with("5a1e3f0e-8d3c-4b8e-9d7e-1f2a3b4c5d6e.json"));
    assert_eq!(out.column_by_name("varcharT").unwrap().as_string::<i32>().value(0), "测试Varchar");
    assert_eq!(out.column_by_name("tu1").unwrap().as_primitive::<Int16Type>().value(0), 127);

    // Without the directory the message comes out as it is: handle-key columns and the location.
    let out = batch_decoder(LayoutOptions::Envelope, Compression::Lz4, None).decode(&batch).unwrap();
    assert_eq!(out.column_by_name("_after").unwrap().as_map().value(0).len(), 1);
    let _ = std::fs::remove_dir_all(dir);
}
