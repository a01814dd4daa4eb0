//! The Canal-JSON encoder: every vector decodes, re-encodes to the same JSON as Go's (but `ts`,
//! which is wall clock in Go and `es` here) and decodes again to the same events; output is
//! byte-stable; large-message handling; generated events round-trip.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use serde_json::Value as Json;
use ticdc_rs::codec::{Codec, CodecOptions, EncodeOptions, LargeMessageHandle, Record};
use ticdc_rs::event::{Column, ColumnType, Event, EventKind, MessageEvents, Value};
use ticdc_rs::schema::mysql::MySqlType;
use ticdc_rs::{BatchDecoder, Compression, DecodeOptions, OnError, Protocol};

mod common;

/// The vectors, and whether they are the shared golden set.
fn vectors() -> (Vec<(PathBuf, Json)>, bool) {
    let (dir, shared) = common::vector_dir("canal-json");
    let mut out: Vec<(PathBuf, Json)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    (out, shared)
}

fn options_of(config: &Json) -> EncodeOptions {
    let flag = |name: &str| config[name].as_bool().unwrap_or(false);
    EncodeOptions {
        enable_tidb_extension: flag("enable_tidb_extension"),
        content_compatible: flag("content_compatible"),
        only_output_updated_columns: flag("only_output_updated_columns"),
        delete_only_output_handle_key_columns: flag("delete_only_output_handle_key_columns"),
        compression: Compression::parse(config["compression"].as_str().unwrap_or("none")).unwrap(),
        large_message_handle: LargeMessageHandle::parse(
            config["large_message_handle_option"].as_str().unwrap_or("none"),
        )
        .unwrap(),
        claim_check_raw_value: flag("claim_check_raw_value"),
        output_row_key: flag("output_row_key"),
        ..Default::default()
    }
}

fn codec() -> Box<dyn Codec> {
    Protocol::CanalJson.codec(&CodecOptions::default()).unwrap()
}

/// Everything an event says, with columns keyed by name (offsets left out).
fn summary(events: &MessageEvents<'_>) -> Vec<String> {
    let image = |columns: &[Column<'_>]| {
        columns.iter().map(|c| (c.name.to_string(), format!("{:?} {:?}", c.ty, c.value))).collect::<BTreeMap<_, _>>()
    };
    events
        .events
        .iter()
        .map(|e| {
            format!(
                "{:?} ts={} {:?}.{:?} keys={:?} hko={} cc={:?} ddl={:?}/{:?} after={:?} before={:?}",
                e.kind,
                e.commit_ts,
                e.schema,
                e.table,
                events.keys(e),
                e.handle_key_only,
                e.claim_check,
                e.ddl,
                e.ddl_type,
                e.after.as_ref().map(|_| image(events.after(e))),
                e.before.as_ref().map(|_| image(events.before(e))),
            )
        })
        .collect()
}

fn encode_all(options: &EncodeOptions, events: &MessageEvents<'_>) -> Vec<Record> {
    let mut encoder = Protocol::CanalJson.encoder(options).unwrap();
    let mut out = Vec::new();
    for e in &events.events {
        encoder.encode(events, e, &mut out).unwrap();
    }
    encoder.flush(&mut out).unwrap();
    out
}

/// Go's objects but for `ts` (wall clock there, `es` here) and, without the TiDB extension, `es`
/// (the commit ts is not in the message, so it cannot be written again). The spec document's
/// hand-written examples have an `es` that is not `commitTs >> 18`, as Go would write it.
fn comparable(mut object: Json, extension: bool, spec_doc: bool) -> Json {
    let o = object.as_object_mut().unwrap();
    o.remove("ts");
    if !extension || spec_doc {
        o.remove("es");
    }
    object
}

fn split_objects(text: &str) -> Vec<Json> {
    serde_json::Deserializer::from_str(text).into_iter::<Json>().map(Result::unwrap).collect()
}

#[test]
fn every_vector_reencodes_to_the_same_json_and_events() {
    let mut checked = 0;
    let (vectors, shared) = vectors();
    for (path, vector) in vectors {
        if !vector["expected_error"].is_null() {
            continue;
        }
        let name = path.display();
        let options = options_of(&vector["config"]);
        let extension = options.enable_tidb_extension;
        let spec_doc = vector["provenance"] == "spec-doc";
        for message in vector["messages"].as_array().unwrap() {
            let raw = hex::decode(message["value_hex"].as_str().unwrap()).unwrap();
            let plain = options.compression.decompress(&raw).unwrap();
            let mut events = MessageEvents::default();
            codec().decode(None, &plain, &mut events).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let records = encode_all(&options, &events);

            // Same JSON as Go's.
            let theirs: Vec<Json> = split_objects(std::str::from_utf8(&plain).unwrap());
            assert_eq!(records.len(), theirs.len(), "{name}");
            for (record, theirs) in records.iter().zip(theirs) {
                assert!(record.key.is_none());
                let ours_plain = options.compression.decompress(&record.value).unwrap();
                let ours: Json = serde_json::from_slice(&ours_plain).unwrap();
                assert_eq!(comparable(ours, extension, spec_doc), comparable(theirs, extension, spec_doc), "{name}");
            }

            // Same events.
            let plains: Vec<Vec<u8>> =
                records.iter().map(|r| options.compression.decompress(&r.value).unwrap()).collect();
            let mut again = MessageEvents::default();
            let mut decoder = codec();
            for p in &plains {
                decoder.decode(None, p, &mut again).unwrap();
            }
            assert_eq!(summary(&again), summary(&events), "{name}");

            // Byte-stable.
            assert_eq!(encode_all(&options, &events), records, "{name}");
        }
        checked += 1;
    }
    assert!(checked >= if shared { 20 } else { 3 }, "only {checked} vectors");
}

/// The events of the claim-check vectors' files (the full rows) re-encoded over a small
/// `max_message_bytes` become claim-check messages again, which the batch decoder resolves.
#[test]
fn claim_check_round_trip() {
    for (path, vector) in vectors().0 {
        let Some(files) = vector["claim_check_files"].as_object() else { continue };
        let options = options_of(&vector["config"]);
        let (_, file) = files.iter().next().unwrap();
        let body = hex::decode(file["hex"].as_str().unwrap()).unwrap();
        let compressed = if options.claim_check_raw_value {
            body
        } else {
            let envelope: Json = serde_json::from_slice(&body).unwrap();
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(envelope["value"].as_str().unwrap()).unwrap()
        };
        let plain = options.compression.decompress(&compressed).unwrap();
        let mut full = MessageEvents::default();
        codec().decode(None, &plain, &mut full).unwrap();

        let dir = std::env::temp_dir().join(format!("ticdc_rs_canal_cc_{}", std::process::id()));
        let small = EncodeOptions { max_message_bytes: 1500, claim_check_dir: Some(dir.clone()), ..options.clone() };
        let records = encode_all(&small, &full);
        assert_eq!(records.len(), 1);
        assert!(records[0].value.len() < 1500, "{}", path.display());

        // Alone, the message is the handle key and the location.
        let message = options.compression.decompress(&records[0].value).unwrap();
        let mut alone = MessageEvents::default();
        codec().decode(None, &message, &mut alone).unwrap();
        let e = &alone.events[0];
        assert!(e.claim_check.is_some() && !e.handle_key_only);
        assert_eq!(alone.after(e).iter().map(|c| c.name.as_ref()).collect::<Vec<_>>(), ["tu1"]);

        // Through the batch decoder with the claim-check directory, the whole row comes back.
        let mut decoder = BatchDecoder::new(DecodeOptions {
            protocol: Some(Protocol::CanalJson),
            compression: options.compression,
            claim_check_dir: Some(dir.clone()),
            ..Default::default()
        })
        .unwrap();
        let out = decoder.decode(&batch(vec![records[0].value.clone()])).unwrap();
        let after = out.column_by_name("_after").unwrap().as_map();
        assert_eq!(after.value(0).len(), full.after(&full.events[0]).len(), "{}", path.display());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn batch(values: Vec<Vec<u8>>) -> RecordBatch {
    let schema = Schema::new(vec![Field::new("value", DataType::Binary, true)]);
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(BinaryArray::from_iter_values(values.iter()))]).unwrap()
}

fn col<'a>(name: &'a str, base: MySqlType, text: &'a str, value: Value<'a>) -> Column<'a> {
    let (_, binary) = MySqlType::from_name(text.split(['(', ' ']).next().unwrap());
    let ty =
        ColumnType { base, unsigned: text.contains("unsigned"), binary, text: Some(Cow::Borrowed(text)), flags: None };
    Column { name: Cow::Borrowed(name), ty, value, at: 0 }
}

fn one_row<'a>(kind: EventKind, after: Vec<Column<'a>>, before: Vec<Column<'a>>) -> MessageEvents<'a> {
    let mut m = MessageEvents::default();
    let mut e = Event::new(kind, 449543017000000001);
    e.schema = Some("test".into());
    e.table = Some("t".into());
    m.keys.push("id".into());
    e.keys = 0..1;
    if !after.is_empty() {
        e.after = Some(0..after.len());
        m.columns.extend(after);
    }
    if !before.is_empty() {
        let start = m.columns.len();
        m.columns.extend(before);
        e.before = Some(start..m.columns.len());
    }
    m.events.push(e);
    m
}

fn encode_text(options: &EncodeOptions, events: &MessageEvents<'_>) -> String {
    let records = encode_all(options, events);
    String::from_utf8(records[0].value.clone()).unwrap()
}

#[test]
fn values_from_typed_arrow_render_by_column_type() {
    let events = one_row(
        EventKind::Insert,
        vec![
            col("id", MySqlType::Int, "int", Value::Int(7)),
            col("u", MySqlType::BigInt, "bigint unsigned", Value::UInt(u64::MAX)),
            col("f", MySqlType::Float, "float", Value::Float32(0.1)),
            col("d", MySqlType::Double, "double", Value::Float64(1e21)),
            col("e", MySqlType::Enum, "enum('a','b')", Value::Text("b".into())),
            col("s", MySqlType::Set, "set('a','b','c')", Value::Text("a,c".into())),
            col("b", MySqlType::VarChar, "varbinary(8)", Value::Bytes(Cow::Borrowed(&[0, 0xff, b'<']))),
            col("z", MySqlType::Int, "int(10) unsigned zerofill", Value::Text("5".into())),
        ],
        vec![],
    );
    let text = encode_text(&EncodeOptions::default(), &events);
    assert_eq!(
        text,
        concat!(
            r#"{"id":0,"database":"test","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1714870517730,"ts":1714870517730,"sql":"","#,
            r#""sqlType":{"id":4,"u":3,"f":7,"d":8,"e":4,"s":-7,"b":2004,"z":4},"#,
            r#""mysqlType":{"id":"int","u":"bigint unsigned","f":"float","d":"double","e":"enum","s":"set","b":"varbinary","z":"int unsigned zerofill"},"#,
            r#""old":null,"data":[{"id":"7","u":"18446744073709551615","f":"0.1","d":"1000000000000000000000","e":"2","s":"5","b":"\u0000ÿ\u003c","z":"5"}]}"#
        )
    );
    let compatible = EncodeOptions { content_compatible: true, enable_tidb_extension: true, ..Default::default() };
    let text = encode_text(&compatible, &events);
    assert!(
        text.contains(r#""e":"enum('a','b')""#) && text.ends_with(r#""_tidb":{"commitTs":449543017000000001}}"#),
        "{text}"
    );

    let bad =
        one_row(EventKind::Insert, vec![col("e", MySqlType::Enum, "enum('a')", Value::Text("zz".into()))], vec![]);
    assert!(Protocol::CanalJson
        .encoder(&EncodeOptions::default())
        .unwrap()
        .encode(&bad, &bad.events[0], &mut Vec::new())
        .is_err());
}

#[test]
fn updates_deletes_and_handle_keys() {
    let after = vec![
        col("id", MySqlType::Int, "int", Value::Text("1".into())),
        col("a", MySqlType::VarChar, "varchar", Value::Text("new".into())),
        col("b", MySqlType::VarChar, "varchar", Value::Null),
    ];
    let before = vec![
        col("id", MySqlType::Int, "int", Value::Text("1".into())),
        col("a", MySqlType::VarChar, "varchar", Value::Text("old".into())),
        col("b", MySqlType::VarChar, "varchar", Value::Null),
    ];
    let update = one_row(EventKind::Update, after, before.clone());
    let full = encode_text(&EncodeOptions::default(), &update);
    assert!(full.contains(r#""old":[{"id":"1","a":"old","b":null}],"data":[{"id":"1","a":"new","b":null}]"#), "{full}");
    let only = encode_text(&EncodeOptions { only_output_updated_columns: true, ..Default::default() }, &update);
    assert!(only.contains(r#""old":[{"a":"old"}],"data""#), "{only}");

    let delete = one_row(EventKind::Delete, vec![], before);
    let text =
        encode_text(&EncodeOptions { delete_only_output_handle_key_columns: true, ..Default::default() }, &delete);
    assert!(text.contains(r#""sqlType":{"id":4},"mysqlType":{"id":"int"},"old":null,"data":[{"id":"1"}]"#), "{text}");

    // Too large: an error without a handling option, the key columns with handle-key-only.
    let tiny = EncodeOptions { max_message_bytes: 100, enable_tidb_extension: true, ..Default::default() };
    let mut encoder = Protocol::CanalJson.encoder(&tiny).unwrap();
    assert!(encoder.encode(&update, &update.events[0], &mut Vec::new()).is_err());
    let hko = EncodeOptions { max_message_bytes: 350, large_message_handle: LargeMessageHandle::HandleKeyOnly, ..tiny };
    let text = encode_text(&hko, &update);
    assert!(
        text.contains(r#""data":[{"id":"1"}],"_tidb":{"commitTs":449543017000000001,"onlyHandleKey":true}}"#),
        "{text}"
    );
}

#[test]
fn ddl_and_watermarks() {
    let mut m = MessageEvents::default();
    let mut ddl = Event::new(EventKind::Ddl, 449543016434794514);
    ddl.schema = Some("test".into());
    ddl.table = Some("person".into());
    ddl.ddl = Some("alter table person add index i (a<b)".into());
    ddl.ddl_type = Some("7".into());
    m.events.push(ddl);
    m.events.push(Event::new(EventKind::Watermark, 2333));
    let with = encode_all(&EncodeOptions { enable_tidb_extension: true, ..Default::default() }, &m);
    assert_eq!(
        String::from_utf8(with[0].value.clone()).unwrap(),
        r#"{"id":0,"database":"test","table":"person","pkNames":null,"isDdl":true,"type":"CINDEX","es":1714870515574,"ts":1714870515574,"sql":"alter table person add index i (a\u003cb)","sqlType":null,"mysqlType":null,"data":null,"old":null,"_tidb":{"commitTs":449543016434794514}}"#
    );
    assert_eq!(
        String::from_utf8(with[1].value.clone()).unwrap(),
        r#"{"id":0,"database":"","table":"","pkNames":null,"isDdl":false,"type":"TIDB_WATERMARK","es":0,"ts":0,"sql":"","sqlType":null,"mysqlType":null,"data":null,"old":null,"_tidb":{"watermarkTs":2333}}"#
    );
    // Without the extension: no `_tidb`, and no watermark messages at all.
    let without = encode_all(&EncodeOptions::default(), &m);
    assert_eq!(without.len(), 1);
    assert!(String::from_utf8(without[0].value.clone()).unwrap().ends_with(r#""old":null}"#));
    // Compressed as a whole.
    let lz4 = encode_all(
        &EncodeOptions { enable_tidb_extension: true, compression: Compression::Lz4, ..Default::default() },
        &m,
    );
    assert_eq!(Compression::Lz4.decompress(&lz4[0].value).unwrap(), with[0].value);
}

// Generated events: a dozen columns of mixed types with values in TiCDC's text forms.
fn column_strategy() -> impl Strategy<Value = (&'static str, MySqlType, Option<Vec<u8>>)> {
    let types = prop::sample::select(vec![
        ("int", MySqlType::Int),
        ("bigint unsigned", MySqlType::BigInt),
        ("tinyint unsigned", MySqlType::TinyInt),
        ("varchar", MySqlType::VarChar),
        ("varbinary", MySqlType::VarChar),
        ("blob", MySqlType::Text),
        ("text", MySqlType::Text),
        ("decimal", MySqlType::Decimal),
        ("datetime", MySqlType::DateTime),
        ("enum", MySqlType::Enum),
        ("json", MySqlType::Json),
    ]);
    (types, prop::option::weighted(0.9, prop::collection::vec(any::<u8>(), 0..24)))
        .prop_map(|((text, base), bytes)| (text, base, bytes))
}

fn value_for(text: &str, bytes: &[u8]) -> Value<'static> {
    let n = bytes.iter().fold(0u64, |acc, &b| acc.wrapping_mul(251).wrapping_add(b as u64));
    match text {
        "int" => Value::Text((n as i32).to_string().into()),
        "bigint unsigned" => Value::Text(n.to_string().into()),
        "tinyint unsigned" => Value::Text((n as u8).to_string().into()),
        "varbinary" | "blob" => Value::Bytes(Cow::Owned(bytes.to_vec())),
        "decimal" => Value::Text(format!("{}.{:02}", n % 100000, n % 100).into()),
        "datetime" => Value::Text(format!("20{:02}-01-02 03:04:05", n % 100).into()),
        "enum" => Value::Text((n % 4).to_string().into()),
        "json" => Value::Text(format!("{{\"k\": {}}}", n % 1000).into()),
        _ => Value::Text(String::from_utf8_lossy(bytes).into_owned().into()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn generated_events_round_trip(
        columns in prop::collection::vec(column_strategy(), 1..12),
        kind in prop::sample::select(vec![EventKind::Insert, EventKind::Update, EventKind::Delete]),
        commit_ts in any::<u64>().prop_map(|t| t >> 1),
        extension in any::<bool>(),
        compression in prop::sample::select(vec![Compression::None, Compression::Snappy, Compression::Lz4]),
    ) {
        let names: Vec<String> = (0..columns.len()).map(|i| format!("c{i}")).collect();
        let make = |salt: u8| -> Vec<Column<'_>> {
            columns.iter().zip(&names).map(|((text, base, bytes), name)| {
                let (_, binary) = MySqlType::from_name(text.split(' ').next().unwrap());
                let value = match bytes {
                    None => Value::Null,
                    Some(b) => {
                        let mut b = b.clone();
                        b.push(salt);
                        value_for(text, &b)
                    }
                };
                let ty = ColumnType { base: *base, unsigned: text.contains("unsigned"), binary, text: Some(Cow::Borrowed(*text)), flags: None };
                Column { name: Cow::Borrowed(name.as_str()), ty, value, at: 0 }
            }).collect()
        };
        let mut events = MessageEvents::default();
        let mut e = Event::new(kind, if extension { commit_ts } else { 0 });
        e.schema = Some("db".into());
        e.table = Some("tbl".into());
        events.keys.push(Cow::Borrowed(names[0].as_str()));
        e.keys = 0..1;
        let after = make(1);
        let n = after.len();
        match kind {
            EventKind::Delete => { events.columns.extend(after); e.before = Some(0..n); }
            EventKind::Update => { events.columns.extend(after); events.columns.extend(make(2)); e.after = Some(0..n); e.before = Some(n..2 * n); }
            _ => { events.columns.extend(after); e.after = Some(0..n); }
        }
        events.events.push(e);
        let options = EncodeOptions { enable_tidb_extension: extension, compression, ..Default::default() };
        let records = encode_all(&options, &events);
        prop_assert_eq!(records.len(), 1);
        let plain = compression.decompress(&records[0].value).unwrap();
        let mut again = MessageEvents::default();
        codec().decode(None, &plain, &mut again).unwrap();
        prop_assert_eq!(summary(&again), summary(&events));
        prop_assert_eq!(encode_all(&options, &events), records);
    }
}

#[test]
fn encoded_batches_decode_through_the_batch_decoder() {
    let Some((_, vector)) = vectors().0.into_iter().find(|(p, _)| p.ends_with("dml_large_update.json")) else { return };
    let raw = hex::decode(vector["messages"][0]["value_hex"].as_str().unwrap()).unwrap();
    let mut events = MessageEvents::default();
    codec().decode(None, &raw, &mut events).unwrap();
    let records = encode_all(&options_of(&vector["config"]), &events);
    let mut decoder = BatchDecoder::new(DecodeOptions {
        protocol: Some(Protocol::CanalJson),
        on_error: OnError::Raise,
        ..Default::default()
    })
    .unwrap();
    let out = decoder.decode(&batch(records.into_iter().map(|r| r.value).collect())).unwrap();
    assert_eq!(out.column_by_name("_op").unwrap().as_string::<i32>().value(0), "UPDATE");
    assert!(!out.column_by_name("_before").unwrap().is_null(0));
}
