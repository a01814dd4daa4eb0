//! Craft through the Rust API: the golden vectors (decode to `expected`, re-encode byte for
//! byte), the Arrow layouts, hand-built hostile messages, and property tests (random and mutated
//! messages never panic; generated events survive encode → decode).

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int32Type, Int64Type};
use arrow_array::{Array, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use proptest::prelude::*;
use serde_json::Value as Json;
use ticdc_rs::codec::{Codec, CodecOptions, Encode, EncodeOptions, Record};
use ticdc_rs::event::{flag, Column, ColumnType, Event, EventKind, MessageEvents, Value};
use ticdc_rs::schema::mysql::MySqlType;
use ticdc_rs::{BatchDecoder, DecodeOptions, OnError, Protocol};
use ticdc_rs::{LayoutOptions, TableName};

// ---------------------------------------------------------------------------------------------
// Helpers

mod common;

/// The vectors' directory, and whether it holds the shared golden set.
fn vector_dir() -> (PathBuf, bool) {
    common::vector_dir("craft")
}

struct Vector {
    name: String,
    json: Json,
    values: Vec<Vec<u8>>,
}

fn vectors() -> Vec<Vector> {
    let (dir, _) = vector_dir();
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let json: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let values = json["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| hex::decode(m["value_hex"].as_str().unwrap()).unwrap())
                .collect();
            Vector { name: path.file_name().unwrap().to_string_lossy().into_owned(), json, values }
        })
        .collect()
}

fn vector(name: &str) -> Option<Vector> {
    vectors().into_iter().find(|v| v.name == name)
}

fn codec() -> Box<dyn Codec> {
    Protocol::Craft.codec(&CodecOptions::default()).unwrap()
}

fn decode(value: &[u8]) -> Result<MessageEvents<'_>, ticdc_rs::error::Fault> {
    let mut out = MessageEvents::default();
    codec().decode(None, value, &mut out).map(|_| out)
}

fn encoder(options: &EncodeOptions) -> Box<dyn Encode> {
    Protocol::Craft.encoder(options).unwrap()
}

fn batch(values: &[Vec<u8>]) -> RecordBatch {
    let schema = Schema::new(vec![Field::new("value", DataType::Binary, true)]);
    let array = BinaryArray::from_iter_values(values.iter());
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(array)]).unwrap()
}

fn batch_decoder(layout: LayoutOptions, on_error: OnError) -> BatchDecoder {
    BatchDecoder::new(DecodeOptions { protocol: Some(Protocol::Craft), layout, on_error, ..Default::default() })
        .unwrap()
}

/// A value in the vectors' normal form (`../shared/vectors/README.md`, VALUE).
fn normal(value: &Value<'_>) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Int(v) => Json::from(*v),
        Value::UInt(v) => Json::from(*v),
        Value::Float32(v) => Json::from(*v as f64),
        Value::Float64(v) => Json::from(*v),
        Value::Text(t) => Json::from(t.as_ref()),
        Value::Bytes(b) => serde_json::json!({ "hex": hex::encode(b) }),
    }
}

fn same_value(ty: u64, got: &Json, want: &Json) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) if got.is_f64() || want.is_f64() => {
            if ty == 4 {
                g as f32 == w as f32
            } else {
                g == w
            }
        }
        _ => match (got.as_u64(), want.as_u64(), got.as_i64(), want.as_i64()) {
            (Some(g), Some(w), _, _) => g == w,
            (_, _, Some(g), Some(w)) => g == w,
            _ => got == want,
        },
    }
}

fn check_columns(name: &str, got: &[Column<'_>], want: &Json) {
    let want = match want.as_array() {
        Some(w) => w,
        None => {
            assert!(got.is_empty(), "{name}: no image expected, got {got:?}");
            return;
        }
    };
    assert_eq!(got.len(), want.len(), "{name}: column count");
    for w in want {
        let col_name = w["name"].as_str().unwrap();
        let c = got.iter().find(|c| c.name == col_name).unwrap_or_else(|| panic!("{name}: no column {col_name}"));
        let ty = w["type"].as_u64().unwrap();
        assert_eq!(c.ty.base, base_of(ty), "{name}.{col_name}: type");
        assert_eq!(c.ty.flags, w["flag"].as_u64(), "{name}.{col_name}: flags");
        let got_value = normal(&c.value);
        assert!(same_value(ty, &got_value, &w["value"]), "{name}.{col_name}: {got_value} != {}", w["value"]);
    }
}

fn base_of(code: u64) -> MySqlType {
    if code == 0 {
        MySqlType::Unknown
    } else {
        MySqlType::from_code(code)
    }
}

fn opt_str(v: &Json) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

fn check_event(name: &str, out: &MessageEvents<'_>, e: &Event<'_>, want: &Json) {
    assert_eq!(e.commit_ts, want["commit_ts"].as_u64().unwrap(), "{name}: commit_ts");
    match want["type"].as_str().unwrap() {
        "resolved" => assert_eq!(e.kind, EventKind::Watermark, "{name}"),
        "ddl" => {
            assert_eq!(e.kind, EventKind::Ddl, "{name}");
            assert_eq!(e.ddl.as_deref(), want["query"].as_str(), "{name}: query");
            assert_eq!(e.ddl_type.as_deref(), Some(want["ddl_type"].to_string().as_str()), "{name}: ddl_type");
            assert_eq!(e.schema.as_deref(), opt_str(&want["schema"]), "{name}: schema");
            assert_eq!(e.table.as_deref(), opt_str(&want["table"]), "{name}: table");
        }
        "row" => {
            let kind = match want["row_type"].as_str().unwrap() {
                "insert" => EventKind::Insert,
                "update" => EventKind::Update,
                _ => EventKind::Delete,
            };
            assert_eq!(e.kind, kind, "{name}: kind");
            assert_eq!(e.schema.as_deref(), opt_str(&want["schema"]), "{name}: schema");
            assert_eq!(e.table.as_deref(), opt_str(&want["table"]), "{name}: table");
            assert_eq!(e.partition_id, want["partition_id"].as_i64(), "{name}: partition");
            check_columns(name, out.after(e), &want["columns"]);
            check_columns(name, out.before(e), &want["old_columns"]);
            let image = if e.after.is_some() { out.after(e) } else { out.before(e) };
            let keys: Vec<&str> =
                image.iter().filter(|c| c.ty.flags.unwrap() & flag::HANDLE_KEY != 0).map(|c| c.name.as_ref()).collect();
            let got: Vec<&str> = out.keys(e).iter().map(|k| k.as_ref()).collect();
            assert_eq!(got, keys, "{name}: keys");
        }
        other => panic!("{name}: unexpected event type {other}"),
    }
}

fn options_of(config: &Json) -> EncodeOptions {
    EncodeOptions {
        delete_only_output_handle_key_columns: config["delete_only_output_handle_key_columns"]
            .as_bool()
            .unwrap_or(false),
        ..Default::default()
    }
}

/// Encodes the events of one message and flushes.
fn encode_all(options: &EncodeOptions, events: &MessageEvents<'_>) -> Vec<Record> {
    let mut enc = encoder(options);
    let mut records = Vec::new();
    for e in &events.events {
        enc.encode(events, e, &mut records).unwrap();
    }
    enc.flush(&mut records).unwrap();
    records
}

// ---------------------------------------------------------------------------------------------
// Golden vectors

#[test]
fn golden_vectors_decode_to_expected() {
    let mut checked = 0;
    for v in vectors() {
        let name = &v.name;
        let expected = v.json["expected"].as_array().unwrap();
        if !v.json["expected_error"].is_null() {
            let errors = v.values.iter().filter(|m| decode(m).is_err()).count();
            assert!(errors > 0, "{name}: expected a fault");
            continue;
        }
        let mut want = expected.iter();
        for value in &v.values {
            let out = decode(value).unwrap_or_else(|f| panic!("{name}: {f:?}"));
            for e in &out.events {
                check_event(name, &out, e, want.next().unwrap_or_else(|| panic!("{name}: too many events")));
            }
        }
        assert!(want.next().is_none(), "{name}: too few events");
        checked += 1;
    }
    assert!(checked >= if vector_dir().1 { 30 } else { 2 }, "only {checked} vectors checked");
}

#[test]
fn golden_vectors_reencode() {
    let mut exact = 0;
    for v in vectors() {
        if !v.json["expected_error"].is_null() {
            continue;
        }
        let options = options_of(&v.json["config"]);
        for (i, value) in v.values.iter().enumerate() {
            let events = decode(value).unwrap();
            let records = encode_all(&options, &events);
            assert!(records.iter().all(|r| r.key.is_none()), "{}: craft has no key", v.name);
            if v.json["byte_exact"].as_bool().unwrap() {
                assert_eq!(records.len(), 1, "{} message {i}: one record", v.name);
                assert_eq!(hex::encode(&records[0].value), hex::encode(value), "{} message {i}", v.name);
                exact += 1;
            } else {
                // Same events once decoded again.
                let again: Vec<_> = records.iter().map(|r| decode(&r.value).unwrap()).collect();
                let n: usize = again.iter().map(|m| m.events.len()).sum();
                assert_eq!(n, events.events.len(), "{}", v.name);
            }
        }
    }
    assert!(exact >= if vector_dir().1 { 30 } else { 2 }, "only {exact} messages re-encoded byte for byte");
}

#[test]
fn error_vectors_fault_at_an_offset() {
    let Some(v) = vector("error_invalid_term_id.json") else { return };
    let fault = decode(&v.values[0]).unwrap_err();
    assert!(fault.reason.contains("invalid term id"), "{fault:?}");
    let Some(v) = vector("error_version_zero.json") else { return };
    let fault = decode(&v.values[0]).unwrap_err();
    assert_eq!(fault.offset, 0);
    assert!(fault.reason.contains("version"), "{fault:?}");
}

#[test]
fn spec_example_values() {
    let Some(v) = vector("spec_doc_row_changed_update.json") else { return };
    let out = decode(&v.values[0]).unwrap();
    let e = &out.events[0];
    assert_eq!(e.kind, EventKind::Update);
    let after = out.after(e);
    assert_eq!(after[5].value, Value::Float32(2.0));
    assert_eq!(after[6].value, Value::Int(2000));
    assert_eq!(after[7].value, Value::Null);
    // Strings are slices of the message.
    let Value::Text(Cow::Borrowed(s)) = &after[0].value else { panic!("borrowed text expected") };
    let range = v.values[0].as_ptr_range();
    assert!(range.contains(&s.as_ptr()));
    assert!(matches!(&after[0].name, Cow::Borrowed(_)));
}

// ---------------------------------------------------------------------------------------------
// Through BatchDecoder

#[test]
fn envelope_layout() {
    let Some(v) = vector("batch_mixed_insert_update_delete.json") else { return };
    let mut values = v.values.clone();
    values.extend(vector("resolved.json").unwrap().values);
    values.extend(vector("ddl_create_database.json").unwrap().values);
    let out = batch_decoder(LayoutOptions::Envelope, OnError::Raise).decode(&batch(&values)).unwrap();
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    let got: Vec<_> = ops.iter().map(Option::unwrap).collect();
    assert_eq!(got, ["INSERT", "UPDATE", "DELETE", "WATERMARK", "WATERMARK", "WATERMARK", "WATERMARK", "DDL"]);
    let ts = out.column_by_name("_commit_ts").unwrap().as_primitive::<Int64Type>();
    assert_eq!(ts.value(0), 424316552636792900);
    let ddl_type = out.column_by_name("_ddl_type").unwrap().as_string::<i32>();
    assert_eq!(ddl_type.value(7), "1");
    let after = out.column_by_name("_after").unwrap().as_map();
    let entries = after.value(0);
    let keys = entries.column(0).as_string::<i32>();
    let values = entries.column(1).as_string::<i32>();
    let pairs: Vec<_> = (0..keys.len()).map(|i| (keys.value(i), values.is_valid(i).then(|| values.value(i)))).collect();
    assert_eq!(pairs[0], ("a", Some("varchar1")));
    assert_eq!(pairs[5], ("f", Some("2")));
    assert_eq!(pairs[7], ("h", None));
    let before = out.column_by_name("_before").unwrap().as_map();
    assert!(before.is_null(0) && before.is_valid(1) && before.is_valid(2));
    let flags = out.column_by_name("_flags").unwrap().as_map();
    assert_eq!(flags.value(0).column(1).as_primitive::<Int64Type>().value(0), 10);
    let key_list = out.column_by_name("_keys").unwrap().as_list::<i32>();
    assert_eq!(key_list.value(0).as_string::<i32>().value(0), "a");
}

#[test]
fn typed_layout() {
    let Some(v) = vector("batch_mixed_insert_update_delete.json") else { return };
    let ts = |tz: Option<&str>| DataType::Timestamp(TimeUnit::Microsecond, tz.map(Into::into));
    let columns = Fields::from(vec![
        Field::new("a", DataType::Utf8, true),
        Field::new("b", DataType::Utf8, true),
        Field::new("c", DataType::Date32, true),
        Field::new("d", ts(Some("UTC")), true),
        Field::new("e", ts(None), true),
        Field::new("f", DataType::Float32, true),
        Field::new("g", DataType::Int64, true),
        Field::new("h", DataType::Int32, true),
    ]);
    let layout =
        LayoutOptions::Typed { table: TableName::parse("test.t").unwrap(), schema: Arc::new(Schema::new(columns)) };
    let mut values = v.values.clone();
    values.extend(vector("dml_partition_table.json").unwrap().values); // test.t too, other columns
    let out = batch_decoder(layout, OnError::Raise).decode(&batch(&values)).unwrap();
    assert_eq!(out.num_rows(), 5);
    let a = out.column_by_name("a").unwrap().as_string::<i32>();
    assert_eq!(a.value(0), "varchar1");
    let f = out.column_by_name("f").unwrap().as_primitive::<Float32Type>();
    assert_eq!(f.value(0), 2.0);
    let h = out.column_by_name("h").unwrap().as_primitive::<Int32Type>();
    assert!(h.is_null(0));
    assert_eq!(h.value(1), 7);
    let c = out.column_by_name("c").unwrap().as_primitive::<arrow_array::types::Date32Type>();
    assert_eq!(c.value(0), 18629); // 2021-01-02
    let before = out.column_by_name("_before").unwrap().as_struct();
    assert!(before.is_valid(1));
    assert!(before.column_by_name("h").unwrap().is_null(1));
    let partition = out.column_by_name("_partition_id").unwrap().as_primitive::<Int64Type>();
    assert!(partition.is_null(0));
    assert_eq!(partition.value(3), 201);
}

#[test]
fn collect_gives_one_error_row_per_bad_message() {
    let Some(v) = vector("spec_doc_row_changed_update.json") else { return };
    let good = v.values[0].clone();
    let messages = vec![good.clone(), good[..good.len() - 3].to_vec(), vec![0x00], vec![], good];
    let out = batch_decoder(LayoutOptions::Envelope, OnError::Collect).decode(&batch(&messages)).unwrap();
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    let got: Vec<_> = ops.iter().map(Option::unwrap).collect();
    assert_eq!(got, ["UPDATE", "ERROR", "ERROR", "ERROR", "UPDATE"]);
    let err = batch_decoder(LayoutOptions::Envelope, OnError::Raise).decode(&batch(&messages[..2])).unwrap_err();
    let err = err.as_decode().expect("a message fault");
    assert_eq!((err.protocol, err.message_index), ("craft", 1));
}

#[test]
fn detect_recognises_craft() {
    let Some(v) = vector("resolved.json") else { return };
    assert_eq!(Protocol::detect(None, &v.values[0]), Some(Protocol::Craft));
}

// ---------------------------------------------------------------------------------------------
// Hand-built hostile messages

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Assembles a message from raw parts: size tables given as plain values (delta-coded here).
fn assemble(headers: &[u8], bodies: &[u8], dictionary: &[u8], tables: &[Vec<i64>]) -> Vec<u8> {
    let mut m = vec![1];
    m.extend_from_slice(headers);
    m.extend_from_slice(bodies);
    m.extend_from_slice(dictionary);
    let start = m.len();
    for t in tables {
        put_uvarint(&mut m, t.len() as u64);
        let mut last = 0;
        for (i, &v) in t.iter().enumerate() {
            put_varint(&mut m, if i == 0 { v } else { v - last });
            last = v;
        }
    }
    let mut trailer = Vec::new();
    put_uvarint(&mut trailer, (m.len() - start) as u64);
    m.extend(trailer.iter().rev());
    m
}

/// One INSERT of `test.t` with one INT column `a` whose value bytes are `value` (length `len`).
fn one_row(column_count: &[u8], len: i64, value: &[u8]) -> Vec<u8> {
    let headers = [0x05, 0x01, 0x01, 0x00, 0x02]; // ts 5, row, partition -1, schema 0, table 1
    let mut group = vec![0x01];
    group.extend_from_slice(column_count);
    group.extend_from_slice(&[0x04, 0x03, 0x41]); // name id 2, INT, flags
    put_varint(&mut group, len);
    group.extend_from_slice(value);
    let dictionary = [0x03, 0x04, 0x01, 0x01, b't', b'e', b's', b't', b't', b'a'];
    let g = group.len() as i64;
    assemble(&headers, &group, &dictionary, &[vec![5, 10], vec![g], vec![g]])
}

#[test]
fn hand_built_message_decodes() {
    let m = one_row(&[0x01], 1, &[0x54]);
    let out = decode(&m).unwrap();
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.after(&out.events[0])[0].value, Value::Int(42));
    assert_eq!(out.events[0].commit_ts, 5);
}

/// TiCDC v5.2.0 wrote a row event without column groups for a transaction whose changes cancel
/// out (`newRowChangedMessage` with no columns): it has no event, and the others of its message
/// keep theirs.
#[test]
fn row_events_without_column_groups_have_no_event() {
    // Two row events of test.t at ts 5 and 6, partition -1; the second with an empty body.
    let headers = [0x05, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00];
    let group = [0x01, 0x01, 0x04, 0x03, 0x41, 0x02, 0x54]; // new: a INT = 42
    let dictionary = [0x03, 0x04, 0x01, 0x01, b't', b'e', b's', b't', b't', b'a'];
    let g = group.len() as i64;
    let m = assemble(&headers, &group, &dictionary, &[vec![10, 10], vec![g, 0], vec![g], vec![]]);
    let out = decode(&m).unwrap();
    assert_eq!(out.events.iter().map(|e| e.commit_ts).collect::<Vec<_>>(), [5]);
    assert_eq!(out.after(&out.events[0])[0].value, Value::Int(42));
}

#[test]
fn hostile_messages_are_faults() {
    let faults = [
        // A value length of -2.
        ("negative length", one_row(&[0x01], -2, &[]), "invalid value length -2"),
        // A value length past the group.
        ("length past end", one_row(&[0x01], 100, &[0x54]), "runs past the end"),
        // A column count of i32::MAX.
        ("huge count", one_row(&[0xff, 0xff, 0xff, 0xff, 0x07], 1, &[0x54]), "cannot fit"),
        // A column count above i32::MAX.
        ("count over int32", one_row(&[0xff, 0xff, 0xff, 0xff, 0x0f], 1, &[0x54]), "max int32"),
        // An 11-byte varint as the value.
        ("long varint", one_row(&[0x01], 11, &[0xff; 11]), "longer than 10 bytes"),
        // Meta table claims a header larger than the message.
        (
            "header past end",
            assemble(&[0x05, 0x03, 0x01, 0x01, 0x01], &[], &[], &[vec![1000, 0], vec![0]]),
            "describe more than",
        ),
        // Body sizes summing past the size tables.
        (
            "body past end",
            assemble(&[0x05, 0x03, 0x01, 0x01, 0x01], &[], &[], &[vec![5, 0], vec![1 << 40]]),
            "describe more than",
        ),
        // A negative body size.
        (
            "negative body",
            assemble(&[0x05, 0x03, 0x01, 0x01, 0x01], &[], &[], &[vec![5, 0], vec![-1]]),
            "negative body size",
        ),
        // Size tables longer than the message.
        ("trailer too large", vec![0x01, 0x00, 0x7f], "do not fit before the trailer"),
        // A trailer of 11 continuation bytes.
        ("trailer varint", [vec![0x01], vec![0xff; 11]].concat(), "longer than 10 bytes"),
        // Schema term id 7 with an empty dictionary.
        ("term id", assemble(&[0x05, 0x03, 0x01, 0x0e, 0x01], &[], &[], &[vec![5, 0], vec![0]]), "invalid term id 7"),
        // Schema term id -2.
        (
            "term id -2",
            assemble(&[0x05, 0x03, 0x01, 0x03, 0x01], &[], &[], &[vec![5, 0], vec![0]]),
            "invalid term id -2",
        ),
        // Unknown event type 9.
        (
            "event type",
            assemble(&[0x05, 0x09, 0x01, 0x01, 0x01], &[], &[], &[vec![5, 0], vec![0]]),
            "unknown event type 9",
        ),
        // A row without its group size table.
        (
            "no group table",
            assemble(&[0x05, 0x01, 0x01, 0x01, 0x01], &[0x01, 0x00], &[], &[vec![5, 0], vec![2]]),
            "no column-group size table",
        ),
        // No events at all.
        ("no events", assemble(&[], &[], &[], &[vec![0, 0], vec![]]), "no events"),
        // A dictionary declaring 2^31-1 terms.
        (
            "term count",
            assemble(&[0x05, 0x03, 0x01, 0x01, 0x01], &[], &[0xff, 0xff, 0xff, 0xff, 0x07], &[vec![5, 5], vec![0]]),
            "cannot fit",
        ),
        // A term that is not UTF-8.
        (
            "term utf8",
            assemble(&[0x05, 0x03, 0x01, 0x00, 0x01], &[], &[0x01, 0x01, 0xff], &[vec![5, 3], vec![0]]),
            "UTF-8",
        ),
        ("empty", vec![], "end of data"),
        ("version only", vec![0x01], "too short"),
    ];
    for (what, m, reason) in faults {
        let fault = decode(&m).expect_err(what);
        assert!(fault.reason.contains(reason), "{what}: {fault:?}");
        assert!(fault.offset <= m.len(), "{what}: offset {} beyond {} bytes", fault.offset, m.len());
    }
}

// ---------------------------------------------------------------------------------------------
// Encoder behaviour

fn int_column(name: &'static str, flags: u64, v: i64) -> Column<'static> {
    let mut ty = ColumnType::new(MySqlType::Int);
    ty.flags = Some(flags);
    Column { name: Cow::Borrowed(name), ty, value: Value::Int(v), at: 0 }
}

fn row_event(out: &mut MessageEvents<'static>, kind: EventKind, ts: u64, columns: Vec<Column<'static>>) {
    let start = out.columns.len();
    out.columns.extend(columns);
    let mut e = Event::new(kind, ts);
    e.schema = Some("test".into());
    e.table = Some("t".into());
    let range = Some(start..out.columns.len());
    match kind {
        EventKind::Delete => e.before = range,
        _ => e.after = range,
    }
    out.events.push(e);
}

#[test]
fn batches_by_count_and_size() {
    let mut events = MessageEvents::default();
    for i in 0..40 {
        row_event(&mut events, EventKind::Insert, 100 + i, vec![int_column("a", 0x0b, i as i64)]);
    }
    let records = encode_all(&EncodeOptions::default(), &events);
    let sizes: Vec<usize> = records.iter().map(|r| decode(&r.value).unwrap().events.len()).collect();
    assert_eq!(sizes, [16, 16, 8]);

    // Each row is estimated at 32 + 5 + 1 + 16 bytes: 2 rows exceed 100 bytes.
    let options = EncodeOptions { max_message_bytes: 100, ..Default::default() };
    let sizes: Vec<usize> =
        encode_all(&options, &events).iter().map(|r| decode(&r.value).unwrap().events.len()).collect();
    assert_eq!(sizes, [2; 20]);
}

#[test]
fn groups_that_describe_their_columns_alike_or_not_decode_each_as_written() {
    // One message whose rows alternate between two descriptions of the same column count (names,
    // then flags differ), and one of another count: a group that repeats the last description is
    // read from it, any other is read afresh.
    let mut events = MessageEvents::default();
    let rows: [(&str, u64); 6] = [("a", 0x0b), ("a", 0x0b), ("b", 0x0b), ("a", 0x0b), ("a", 0x89), ("a", 0x0b)];
    for (i, &(name, flags)) in rows.iter().enumerate() {
        row_event(&mut events, EventKind::Insert, 10 + i as u64, vec![int_column(name, flags, i as i64 - 3)]);
    }
    row_event(&mut events, EventKind::Insert, 20, vec![int_column("a", 0x0b, 7), int_column("b", 0x0b, 8)]);
    row_event(&mut events, EventKind::Insert, 21, vec![int_column("a", 0x0b, 9)]);
    let records = encode_all(&EncodeOptions::default(), &events);
    assert_eq!(records.len(), 1);
    let decoded = decode(&records[0].value).unwrap();
    assert_eq!(decoded.events.len(), events.events.len());
    for (got, want) in decoded.events.iter().zip(&events.events) {
        let (got, want) = (decoded.after(got), events.after(want));
        let number = |v: &Value<'_>| match v {
            Value::Int(v) => *v as i128,
            Value::UInt(v) => *v as i128,
            other => panic!("not a number: {other:?}"),
        };
        let describe =
            |c: &[Column<'_>]| c.iter().map(|c| (c.name.to_string(), c.ty.flags, number(&c.value))).collect::<Vec<_>>();
        assert_eq!(describe(got), describe(want));
    }
}

#[test]
fn ddl_and_resolved_travel_alone_in_order() {
    let mut events = MessageEvents::default();
    row_event(&mut events, EventKind::Insert, 1, vec![int_column("a", 0x0b, 1)]);
    let mut ddl = Event::new(EventKind::Ddl, 2);
    ddl.schema = Some("test".into());
    ddl.ddl = Some("ALTER TABLE t ADD COLUMN b INT".into());
    ddl.ddl_type = Some("5".into());
    events.events.push(ddl);
    row_event(&mut events, EventKind::Insert, 3, vec![int_column("a", 0x0b, 2)]);
    events.events.push(Event::new(EventKind::Watermark, 4));
    let records = encode_all(&EncodeOptions::default(), &events);
    let kinds: Vec<Vec<EventKind>> =
        records.iter().map(|r| decode(&r.value).unwrap().events.iter().map(|e| e.kind).collect()).collect();
    assert_eq!(
        kinds,
        [vec![EventKind::Insert], vec![EventKind::Ddl], vec![EventKind::Insert], vec![EventKind::Watermark]]
    );

    // A category (Canal-JSON, Simple) becomes TiDB's action code, read from the query.
    let mut created = MessageEvents::default();
    let mut ddl = Event::new(EventKind::Ddl, 2);
    ddl.ddl = Some("CREATE TABLE t (a INT PRIMARY KEY)".into());
    ddl.ddl_type = Some("CREATE".into());
    created.events.push(ddl);
    let records = encode_all(&EncodeOptions::default(), &created);
    assert_eq!(decode(&records[0].value).unwrap().events[0].ddl_type.as_deref(), Some("3"));
}

#[test]
fn text_values_are_rendered_by_type() {
    // As the Arrow reader hands them over: text for every non-binary column, no flags.
    let mut events = MessageEvents::default();
    let col = |name: &'static str, base, unsigned, text: &'static str| {
        let mut ty = ColumnType::new(base);
        ty.unsigned = unsigned;
        Column { name: Cow::Borrowed(name), ty, value: Value::Text(text.into()), at: 0 }
    };
    row_event(
        &mut events,
        EventKind::Insert,
        7,
        vec![
            col("id", MySqlType::Int, false, "42"),
            col("big", MySqlType::BigInt, true, "18446744073709551615"),
            col("f", MySqlType::Float, false, "1.1"),
            col("d", MySqlType::Double, false, "0.1"),
            col("y", MySqlType::Year, false, "2020"),
            col("e", MySqlType::Enum, false, "2"),
            col("dt", MySqlType::Date, false, "2020-02-20"),
        ],
    );
    events.keys.push("id".into());
    events.events[0].keys = 0..1;
    let records = encode_all(&EncodeOptions::default(), &events);
    let out = decode(&records[0].value).unwrap();
    let values: Vec<Value<'_>> = out.after(&out.events[0]).iter().map(|c| c.value.clone()).collect();
    assert_eq!(
        values,
        [
            Value::Int(42),
            Value::UInt(u64::MAX),
            Value::Float32(1.1),
            Value::Float64(0.1),
            Value::Int(2020),
            Value::UInt(2),
            Value::Text("2020-02-20".into())
        ]
    );
    let flags: Vec<u64> = out.after(&out.events[0]).iter().map(|c| c.ty.flags.unwrap()).collect();
    assert_eq!(flags[0], flag::BINARY | flag::HANDLE_KEY | flag::PRIMARY_KEY);
    assert_eq!(flags[1], flag::BINARY | flag::NULLABLE | flag::UNSIGNED);
    assert_eq!(out.keys(&out.events[0]), ["id"]);

    let mut bad = MessageEvents::default();
    row_event(&mut bad, EventKind::Insert, 7, vec![col("id", MySqlType::Int, false, "forty-two")]);
    assert!(encoder(&EncodeOptions::default()).encode(&bad, &bad.events[0], &mut Vec::new()).is_err());
}

// ---------------------------------------------------------------------------------------------
// Properties

/// A column of one of Craft's value kinds, in the form the decoder gives back.
fn arb_column() -> impl Strategy<Value = (u64, u64, Value<'static>)> {
    let int_codes = prop::sample::select(vec![1u64, 2, 3, 8, 9]);
    let string_codes = prop::sample::select(vec![15u64, 254, 249, 250, 251, 252]);
    let text_codes = prop::sample::select(vec![7u64, 10, 11, 12, 245, 246, 225]);
    let extra_flags =
        prop::sample::select(vec![0u64, flag::HANDLE_KEY | flag::PRIMARY_KEY, flag::NULLABLE, flag::UNIQUE_KEY]);
    prop_oneof![
        (int_codes.clone(), any::<i64>(), extra_flags.clone()).prop_map(|(c, v, f)| (
            c,
            flag::BINARY | f,
            Value::Int(v)
        )),
        (int_codes, any::<u64>(), extra_flags.clone()).prop_map(|(c, v, f)| (
            c,
            flag::BINARY | flag::UNSIGNED | f,
            Value::UInt(v)
        )),
        (any::<i16>(), extra_flags.clone()).prop_map(|(v, f)| (13, 0xc1 | f, Value::Int(v as i64))),
        (any::<f32>().prop_filter("no NaN", |f| !f.is_nan()), extra_flags.clone()).prop_map(|(v, f)| (
            4,
            flag::BINARY | f,
            Value::Float32(v)
        )),
        (any::<f64>().prop_filter("no NaN", |f| !f.is_nan()), extra_flags.clone()).prop_map(|(v, f)| (
            5,
            flag::BINARY | f,
            Value::Float64(v)
        )),
        (prop::sample::select(vec![247u64, 248, 16]), any::<u64>()).prop_map(|(c, v)| (c, 0x40, Value::UInt(v))),
        (text_codes, ".{0,12}").prop_map(|(c, s)| (c, 0x41, Value::Text(s.into()))),
        (string_codes.clone(), ".{0,20}", extra_flags.clone()).prop_map(|(c, s, f)| (c, f, Value::Text(s.into()))),
        (string_codes, prop::collection::vec(any::<u8>(), 0..20), extra_flags).prop_map(|(c, b, f)| (
            c,
            flag::BINARY | f,
            Value::Bytes(b.into())
        )),
        prop::sample::select(vec![6u64, 255]).prop_map(|c| (c, 0, Value::Null)),
    ]
}

#[derive(Debug, Clone)]
enum Gen {
    Row {
        kind: EventKind,
        ts: u64,
        schema: String,
        table: String,
        partition: i64,
        after: Vec<(u64, u64, Value<'static>)>,
        before: Vec<(u64, u64, Value<'static>)>,
    },
    Ddl {
        ts: u64,
        schema: String,
        table: String,
        action: u8,
        query: String,
    },
    Resolved(u64),
}

fn arb_event() -> impl Strategy<Value = Gen> {
    let name = prop::sample::select(vec!["", "db", "shop", "测试"]).prop_map(String::from);
    let table = prop::sample::select(vec!["", "t", "orders"]).prop_map(String::from);
    let columns = prop::collection::vec(arb_column(), 1..6);
    let nulls = prop::collection::vec(any::<bool>(), 6);
    let row = (
        prop::sample::select(vec![EventKind::Insert, EventKind::Update, EventKind::Delete]),
        any::<u64>(),
        name.clone(),
        table.clone(),
        prop_oneof![Just(-1i64), 0i64..1000],
        columns,
        nulls,
    )
        .prop_map(|(kind, ts, schema, table, partition, after, nulls)| {
            let after: Vec<_> =
                after.into_iter().zip(nulls).map(|(c, null)| if null { (c.0, c.1, Value::Null) } else { c }).collect();
            // The old image: the same columns (TiCDC writes both from one definition), every
            // other value NULL.
            let before = after
                .iter()
                .enumerate()
                .map(|(i, c)| if i % 2 == 0 { (c.0, c.1, Value::Null) } else { c.clone() })
                .collect();
            Gen::Row { kind, ts, schema, table, partition, after, before }
        });
    prop_oneof![
        8 => row,
        1 => (any::<u64>(), name, table, any::<u8>(), ".{0,30}")
            .prop_map(|(ts, schema, table, action, query)| Gen::Ddl { ts, schema, table, action, query }),
        1 => any::<u64>().prop_map(Gen::Resolved),
    ]
}

fn columns_of(spec: &[(u64, u64, Value<'static>)]) -> Vec<Column<'static>> {
    spec.iter()
        .enumerate()
        .map(|(i, (code, flags, value))| {
            let base = MySqlType::from_code(*code);
            let ty = ColumnType {
                base,
                unsigned: flags & flag::UNSIGNED != 0,
                binary: flags & flag::BINARY != 0 && base.is_string(),
                text: None,
                flags: Some(*flags),
            };
            Column { name: Cow::Owned(format!("c{i}")), ty, value: value.clone(), at: 0 }
        })
        .collect()
}

fn build(gens: &[Gen]) -> MessageEvents<'static> {
    let mut out = MessageEvents::default();
    let text = |s: &str| (!s.is_empty()).then(|| Cow::Owned(s.to_string()));
    for g in gens {
        let e = match g {
            Gen::Row { kind, ts, schema, table, partition, after, before } => {
                let mut e = Event::new(*kind, *ts);
                e.schema = text(schema);
                e.table = text(table);
                e.partition_id = Some(*partition).filter(|&p| p >= 0);
                if *kind != EventKind::Delete {
                    let s = out.columns.len();
                    out.columns.extend(columns_of(after));
                    e.after = Some(s..out.columns.len());
                }
                if *kind != EventKind::Insert {
                    let s = out.columns.len();
                    out.columns.extend(columns_of(before));
                    e.before = Some(s..out.columns.len());
                }
                let image = e.after.clone().or(e.before.clone()).unwrap();
                let k = out.keys.len();
                let keys: Vec<_> = out.columns[image]
                    .iter()
                    .filter(|c| c.ty.flags.unwrap() & flag::HANDLE_KEY != 0)
                    .map(|c| c.name.clone())
                    .collect();
                out.keys.extend(keys);
                e.keys = k..out.keys.len();
                e
            }
            Gen::Ddl { ts, schema, table, action, query } => {
                let mut e = Event::new(EventKind::Ddl, *ts);
                e.schema = text(schema);
                e.table = text(table);
                e.ddl = Some(Cow::Owned(query.clone()));
                e.ddl_type = Some(Cow::Owned(action.to_string()));
                e
            }
            Gen::Resolved(ts) => Event::new(EventKind::Watermark, *ts),
        };
        out.events.push(e);
    }
    out
}

/// An event with its images and keys inlined, for comparing across `MessageEvents`.
fn flat<'a>(m: &'a MessageEvents<'a>, e: &'a Event<'a>) -> (Event<'a>, Vec<Column<'a>>, Vec<Column<'a>>, Vec<String>) {
    let mut bare = e.clone();
    bare.after = None;
    bare.before = None;
    bare.keys = 0..0;
    let strip = |cs: &[Column<'a>]| cs.iter().map(|c| Column { at: 0, ..c.clone() }).collect();
    (bare, strip(m.after(e)), strip(m.before(e)), m.keys(e).iter().map(|k| k.to_string()).collect())
}

fn sample_messages() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vectors().into_iter().flat_map(|v| v.values).collect();
    out.push(one_row(&[0x01], 1, &[0x54]));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_events_round_trip(
        gens in prop::collection::vec(arb_event(), 1..40),
        max_batch_size in 1usize..20,
        max_message_bytes in prop_oneof![Just(10usize << 20), 50usize..2000],
    ) {
        let events = build(&gens);
        let options = EncodeOptions { max_batch_size, max_message_bytes, ..Default::default() };
        let records = encode_all(&options, &events);
        let decoded: Vec<MessageEvents<'_>> = records.iter().map(|r| decode(&r.value).unwrap()).collect();
        let got: Vec<_> = decoded.iter().flat_map(|m| m.events.iter().map(move |e| flat(m, e))).collect();
        let want: Vec<_> = events.events.iter().map(|e| flat(&events, e)).collect();
        prop_assert_eq!(got, want);
        for (r, m) in records.iter().zip(&decoded) {
            prop_assert!(m.events.len() <= max_batch_size.max(1));
            prop_assert!(r.key.is_none());
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), lead in any::<bool>()) {
        let mut bytes = bytes;
        if lead && !bytes.is_empty() {
            bytes[0] = 0x01;
        }
        let _ = decode(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in 0usize..8,
    ) {
        let messages = sample_messages();
        let mut m = pick.get(&messages).clone();
        for (at, byte) in edits {
            let i = at.index(m.len());
            m[i] = byte;
        }
        m.truncate(m.len().saturating_sub(cut));
        if let Err(fault) = decode(&m) {
            prop_assert!(fault.offset <= m.len());
        }
        let out = batch_decoder(LayoutOptions::Envelope, OnError::Collect).decode(&batch(&[m])).unwrap();
        let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
        let errors = ops.iter().filter(|o| *o == Some("ERROR")).count();
        prop_assert!(errors == 0 && !ops.is_empty() || errors == 1 && ops.len() == 1);
    }
}

#[test]
fn typed_views_point_into_the_input() {
    let text = "a text value long enough not to be inlined ✓";
    let bytes = vec![0xff_u8; 40];
    let mut events = MessageEvents::default();
    for i in 0..3 {
        let mut s = ColumnType::new(MySqlType::VarChar);
        s.flags = Some(flag::NULLABLE);
        let mut b = ColumnType::new(MySqlType::VarChar);
        (b.binary, b.flags) = (true, Some(flag::BINARY | flag::NULLABLE));
        let columns = vec![
            int_column("a", 0x0b, i),
            Column { name: Cow::Borrowed("s"), ty: s, value: Value::Text(Cow::Borrowed(text)), at: 0 },
            Column { name: Cow::Borrowed("b"), ty: b, value: Value::Bytes(Cow::Owned(bytes.clone())), at: 0 },
        ];
        row_event(&mut events, EventKind::Insert, 10 + i as u64, columns);
    }
    let values: Vec<Vec<u8>> = encode_all(&EncodeOptions::default(), &events).into_iter().map(|r| r.value).collect();
    let input = batch(&values);
    let columns = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("s", DataType::Utf8View, true),
        Field::new("b", DataType::BinaryView, true),
    ]);
    let layout =
        LayoutOptions::Typed { table: TableName::parse("test.t").unwrap(), schema: Arc::new(Schema::new(columns)) };
    let out = batch_decoder(layout, OnError::Raise).decode(&input).unwrap();
    assert_eq!(out.num_rows(), 3);
    let input_data = input.column(0).as_binary::<i32>().values().as_ptr();
    let s = out.column_by_name("s").unwrap().as_string_view();
    let b = out.column_by_name("b").unwrap().as_binary_view();
    assert!(s.iter().all(|v| v == Some(text)));
    assert!(b.iter().all(|v| v == Some(&bytes[..])));
    for blocks in [s.data_buffers(), b.data_buffers()] {
        assert_eq!(blocks.len(), 1, "no value was copied");
        assert_eq!(blocks[0].as_ptr(), input_data, "values point into the input buffer");
    }
    s.to_data().validate_full().unwrap();
    b.to_data().validate_full().unwrap();
}

/// Text values go into a typed text column checked as UTF-8 together, a message at a time: each
/// value is whole text (a character is never split between two values), and a message with a
/// byte that is not UTF-8 fails at that byte, as the event model reads it, with nothing kept.
#[test]
fn typed_text_columns_are_checked_as_utf8_with_the_offset_of_a_bad_byte() {
    let text_column = |name: &'static str, v: &'static str| {
        let mut ty = ColumnType::new(MySqlType::VarChar);
        ty.flags = Some(0);
        Column { name: Cow::Borrowed(name), ty, value: Value::Text(Cow::Borrowed(v)), at: 0 }
    };
    let mut events = MessageEvents::default();
    let rows = [("Zoë", "日本"), ("", "x"), ("ab", "é")];
    for (i, (a, b)) in rows.into_iter().enumerate() {
        row_event(&mut events, EventKind::Insert, 10 + i as u64, vec![text_column("a", a), text_column("b", b)]);
    }
    let records = encode_all(&EncodeOptions::default(), &events);
    assert_eq!(records.len(), 1);
    let good = records[0].value.clone();
    let columns = Fields::from(vec![Field::new("a", DataType::Utf8, true), Field::new("b", DataType::Utf8, true)]);
    let layout = || LayoutOptions::Typed {
        table: TableName::parse("test.t").unwrap(),
        schema: Arc::new(Schema::new(columns.clone())),
    };
    let out = batch_decoder(layout(), OnError::Raise).decode(&batch(std::slice::from_ref(&good))).unwrap();
    let text = |name: &str| {
        out.column_by_name(name).unwrap().as_string::<i32>().iter().map(Option::unwrap).collect::<Vec<_>>()
    };
    assert_eq!((text("a"), text("b")), (vec!["Zoë", "", "ab"], vec!["日本", "x", "é"]));

    // "é" of the last row, its second byte made ASCII: 0xC3 is then not followed by a continuation.
    let at = good.windows(2).rposition(|w| w == "é".as_bytes()).unwrap();
    let mut bad = good.clone();
    bad[at + 1] = b'x';
    let want = decode(&bad).unwrap_err().offset;
    assert_eq!(want, at);
    let err = batch_decoder(layout(), OnError::Raise).decode(&batch(&[good.clone(), bad.clone()])).unwrap_err();
    let err = err.as_decode().expect("a message fault");
    assert_eq!((err.message_index, err.offset), (1, at));
    let out = batch_decoder(layout(), OnError::Skip).decode(&batch(&[bad, good])).unwrap();
    assert_eq!(out.num_rows(), 3);
}

/// The typed layout reads a group's value lengths together when each is one byte, else one by
/// one: either way a bad length fails where the event model fails it, with the same reason.
#[test]
fn typed_layout_faults_on_value_lengths_as_the_event_model_does() {
    let layout = || LayoutOptions::Typed {
        table: TableName::parse("test.t").unwrap(),
        schema: Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, true)])),
    };
    let good = one_row(&[0x01], 1, &[0x54]);
    let out = batch_decoder(layout(), OnError::Raise).decode(&batch(&[good])).unwrap();
    assert_eq!(out.column_by_name("a").unwrap().as_primitive::<Int64Type>().value(0), 42);
    // One-byte lengths (-2, -64), two-byte ones (-65, 100), past i32::MAX, and past the group.
    for (len, value) in [(-2, &[][..]), (-64, &[]), (-65, &[]), (100, &[0x54]), (1 << 31, &[]), (2, &[0x54])] {
        let m = one_row(&[0x01], len, value);
        let want = decode(&m).unwrap_err();
        let err = batch_decoder(layout(), OnError::Raise).decode(&batch(&[m])).unwrap_err();
        let err = err.as_decode().expect("a message fault");
        assert_eq!((err.offset, err.reason.as_str()), (want.offset, want.reason.as_str()), "length {len}");
    }
}
