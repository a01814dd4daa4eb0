//! Reading decoded batches back into events (the encoders' input): what the envelope layout
//! holds comes back as the events the codec produced.

use std::sync::Arc;

use arrow_array::{BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use serde_json::Value as Json;
use ticdc_rs::arrow::read_events::read_events;
use ticdc_rs::codec::CodecOptions;
use ticdc_rs::event::{MessageEvents, Value};
use ticdc_rs::schema::ServerZone;
use ticdc_rs::Protocol;
use ticdc_rs::{BatchDecoder, Compression, DecodeOptions};

mod common;

fn canal_vectors() -> Vec<Json> {
    let (dir, _) = common::vector_dir("canal-json");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let v: Json = serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        if v["expected_error"].is_null() && !v["claim_check_files"].is_object() {
            out.push(v);
        }
    }
    out
}

fn values(vector: &Json) -> Vec<Vec<u8>> {
    let messages = vector["messages"].as_array().unwrap();
    messages.iter().map(|m| hex::decode(m["value_hex"].as_str().unwrap()).unwrap()).collect()
}

fn value_batch(values: &[Vec<u8>]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("value", DataType::Binary, true)]));
    RecordBatch::try_new(schema, vec![Arc::new(BinaryArray::from_iter_values(values.iter()))]).unwrap()
}

fn text(v: &Value<'_>) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(t) => Some(t.to_string()),
        Value::Bytes(b) => Some(format!("{b:?}")),
        other => Some(format!("{other:?}")),
    }
}

#[test]
fn envelope_reads_back_as_the_decoded_events() {
    let mut checked = 0;
    for vector in canal_vectors() {
        let name = vector["name"].as_str().unwrap();
        let compression = Compression::parse(vector["config"]["compression"].as_str().unwrap_or("none")).unwrap();
        let raw = values(&vector);
        let input = value_batch(&raw);
        let options = DecodeOptions { protocol: Some(Protocol::CanalJson), compression, ..Default::default() };
        let decoded = BatchDecoder::new(options).unwrap().decode(&input).unwrap();

        let mut back = MessageEvents::default();
        let mut rows = Vec::new();
        read_events(&decoded, ServerZone::Utc, &mut back, &mut rows).unwrap();

        let mut codec = Protocol::CanalJson.codec(&CodecOptions::default()).unwrap();
        let plain: Vec<Vec<u8>> = raw.iter().map(|v| compression.decompress(v).unwrap()).collect();
        let mut direct = MessageEvents::default();
        let mut direct_events = Vec::new();
        for v in &plain {
            let mut one = MessageEvents::default();
            codec.decode(None, v, &mut one).unwrap();
            for e in &one.events {
                let image = |cols: &[ticdc_rs::event::Column<'_>]| {
                    cols.iter().map(|c| (c.name.to_string(), text(&c.value))).collect::<Vec<_>>()
                };
                direct_events.push((e.kind, e.commit_ts, image(one.after(e)), image(one.before(e))));
            }
        }
        direct.clear();
        assert_eq!(back.events.len(), direct_events.len(), "{name}");
        for (e, want) in back.events.iter().zip(&direct_events) {
            let image = |cols: &[ticdc_rs::event::Column<'_>]| {
                cols.iter().map(|c| (c.name.to_string(), text(&c.value))).collect::<Vec<_>>()
            };
            assert_eq!((e.kind, e.commit_ts), (want.0, want.1), "{name}");
            assert_eq!(image(back.after(e)), want.2, "{name} after");
            assert_eq!(image(back.before(e)), want.3, "{name} before");
        }
        checked += 1;
    }
    assert!(checked > 0);
}

/// The typed layout of every vector's table, encoded again and decoded again, is unchanged: the
/// typed reader takes every column type the typed layout makes (TIME as a duration included).
#[test]
fn typed_batches_survive_canal_json_encoding() {
    use ticdc_rs::arrow::infer::infer_schema;
    use ticdc_rs::{BatchEncoder, EncodeOptions};
    use ticdc_rs::{LayoutOptions, TableName};

    let mut checked = 0;
    for vector in canal_vectors() {
        let name = vector["name"].as_str().unwrap();
        let compression = Compression::parse(vector["config"]["compression"].as_str().unwrap_or("none")).unwrap();
        let Some(table) = vector["expected"].as_array().unwrap().iter().find_map(|e| {
            (e["type"] == "row").then(|| TableName {
                schema: e["schema"].as_str().unwrap().to_string(),
                table: e["table"].as_str().unwrap().to_string(),
            })
        }) else {
            continue;
        };
        let input = value_batch(&values(&vector));
        let schema = infer_schema(
            std::slice::from_ref(&input),
            Some(Protocol::CanalJson),
            &table,
            compression,
            "value",
            "key",
            &[],
        )
        .unwrap();
        let typed = |compression| DecodeOptions {
            protocol: Some(Protocol::CanalJson),
            compression,
            layout: LayoutOptions::Typed { table: table.clone(), schema: Arc::new(schema.clone()) },
            ..Default::default()
        };
        let decoded = BatchDecoder::new(typed(compression)).unwrap().decode(&input).unwrap();
        let options = EncodeOptions { enable_tidb_extension: true, ..Default::default() };
        let encoded = BatchEncoder::new(Protocol::CanalJson, options)
            .unwrap()
            .encode(&decoded)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let again = BatchDecoder::new(typed(Compression::None)).unwrap().decode(&encoded).unwrap();
        for field in schema.fields() {
            let column = field.name();
            assert_eq!(
                decoded.column_by_name(column).unwrap().as_ref(),
                again.column_by_name(column).unwrap().as_ref(),
                "{name}: column {column}: {:?} vs {:?}",
                decoded.column_by_name(column).unwrap(),
                again.column_by_name(column).unwrap()
            );
        }
        checked += 1;
    }
    // The shared golden set has many; the project's own fixtures two.
    assert!(checked >= if common::vector_dir("canal-json").1 { 5 } else { 2 }, "only {checked} vectors with rows");
}
