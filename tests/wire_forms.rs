//! TiCDC's newer wire forms, from the project's own vectors (`tests/fixtures`, built by hand
//! from TiCDC's encoder code; each names its sources): Canal-JSON's `_tidb.rowkey`
//! (`output-row-key`) as `_row_key`, Simple JSON's `startTs` (`simple-include-start-ts`) as
//! `_start_ts`, and Simple JSON's older and newer value forms. Each is decoded, then encoded
//! again behind the option's snake-case name.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use serde_json::Value as Json;
use ticdc_rs::codec::EncodeOptions;
use ticdc_rs::{BatchDecoder, BatchEncoder, DecodeOptions, Protocol};

fn fixture(path: &str) -> Json {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn values(v: &Json) -> Vec<Vec<u8>> {
    v["messages"].as_array().unwrap().iter().map(|m| hex::decode(m["value_hex"].as_str().unwrap()).unwrap()).collect()
}

fn batch(values: &[Vec<u8>]) -> RecordBatch {
    let schema = Schema::new(vec![Field::new("value", DataType::Binary, true)]);
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(BinaryArray::from_iter_values(values.iter()))]).unwrap()
}

fn decode(protocol: Protocol, values: &[Vec<u8>]) -> RecordBatch {
    BatchDecoder::new(DecodeOptions { protocol: Some(protocol), ..Default::default() })
        .unwrap()
        .decode(&batch(values))
        .unwrap()
}

/// The message values of `events` encoded in `protocol` with `options`.
fn encode(protocol: Protocol, options: EncodeOptions, events: &RecordBatch) -> Vec<Vec<u8>> {
    let out = BatchEncoder::new(protocol, options).unwrap().encode(events).unwrap();
    let values = out.column_by_name("value").unwrap().as_binary::<i32>();
    (0..values.len()).map(|i| values.value(i).to_vec()).collect()
}

/// Encoded without the option: no `field` in any message, and no `column` decoded back.
fn check_left_out(protocol: Protocol, messages: &[Vec<u8>], field: &str, column: &str) {
    assert!(messages.iter().all(|m| !text(m).contains(field)));
    let back = decode(protocol, messages);
    assert_eq!(back.column_by_name(column).unwrap().null_count(), back.num_rows());
}

fn assert_same_texts(have: &[Vec<u8>], want: &[Vec<u8>]) {
    let texts = |m: &[Vec<u8>]| m.iter().map(|m| text(m)).collect::<Vec<_>>();
    assert_eq!(texts(have), texts(want));
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn canal_json_row_keys_decode_and_encode_behind_output_row_key() {
    let v = fixture("canal-json/ticdc_output_row_key.json");
    let raw = values(&v);
    let decoded = decode(Protocol::CanalJson, &raw);
    let keys = decoded.column_by_name("_row_key").unwrap().as_binary::<i32>();
    let want: Vec<Vec<u8>> = v["expected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| hex::decode(e["row_key"]["hex"].as_str().unwrap()).unwrap())
        .collect();
    let got: Vec<Vec<u8>> = (0..keys.len()).map(|i| keys.value(i).to_vec()).collect();
    assert_eq!(got, want);
    assert_eq!(&want[0][..], b"t\x80\0\0\0\0\0\0\x68_r\x80\0\0\0\0\0\0\x01");

    // With the option (and the TiDB extension) the row key is written back last in `_tidb`;
    // the vector's `ts` equals its `es`, which is what this encoder writes there.
    let options = EncodeOptions { enable_tidb_extension: true, output_row_key: true, ..Default::default() };
    assert_same_texts(&encode(Protocol::CanalJson, options, &decoded), &raw);
    // Without it, as TiCDC by default, no row key: and without the TiDB extension none either.
    for options in [
        EncodeOptions { enable_tidb_extension: true, ..Default::default() },
        EncodeOptions { output_row_key: true, ..Default::default() },
    ] {
        check_left_out(Protocol::CanalJson, &encode(Protocol::CanalJson, options, &decoded), "rowkey", "_row_key");
    }
}

#[test]
fn canal_json_row_key_must_be_base64() {
    let bad = br#"{"id":0,"database":"d","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1,"ts":1,"sql":"","sqlType":{"id":4},"mysqlType":{"id":"int"},"old":null,"data":[{"id":"1"}],"_tidb":{"commitTs":5,"rowkey":"not base64!"}}"#;
    let err = BatchDecoder::new(DecodeOptions { protocol: Some(Protocol::CanalJson), ..Default::default() })
        .unwrap()
        .decode(&batch(&[bad.to_vec()]))
        .unwrap_err();
    assert!(err.to_string().contains("rowkey"), "{err}");
    // `null` (easyjson's nil) is no key.
    let null = String::from_utf8_lossy(bad).replace("\"not base64!\"", "null");
    let out = decode(Protocol::CanalJson, &[null.into_bytes()]);
    assert!(out.column_by_name("_row_key").unwrap().is_null(0));
}

#[test]
fn simple_json_start_ts_decodes_and_encodes_behind_simple_include_start_ts() {
    let v = fixture("simple/ticdc_include_start_ts_json.json");
    let raw = values(&v);
    let decoded = decode(Protocol::SimpleJson, &raw);
    let start = decoded.column_by_name("_start_ts").unwrap().as_primitive::<Int64Type>();
    let got: Vec<Option<i64>> = start.iter().collect();
    let want: Vec<Option<i64>> = v["expected"].as_array().unwrap().iter().map(|e| e["start_ts"].as_i64()).collect();
    assert_eq!(got, want);
    assert_eq!(got.iter().flatten().count(), 2);

    let options = EncodeOptions { simple_include_start_ts: true, build_ts: Some(1700000000456), ..Default::default() };
    assert_same_texts(&encode(Protocol::SimpleJson, options, &decoded), &raw);
    // Off (TiCDC's default): the messages of before the option, which decode with no start ts.
    let options = EncodeOptions { build_ts: Some(1700000000456), ..Default::default() };
    check_left_out(Protocol::SimpleJson, &encode(Protocol::SimpleJson, options, &decoded), "startTs", "_start_ts");
}

/// As pingcap/ticdc's `start_ts_test.go`: a `startTs` of 0 reads as none, and none is written
/// when the start ts (or, without one, the commit ts) is 0 (`omitempty`).
#[test]
fn simple_json_start_ts_of_zero_is_none() {
    let v = fixture("simple/ticdc_include_start_ts_json.json");
    let raw = values(&v);
    let with = raw.iter().position(|m| text(m).contains("\"startTs\":")).expect("a message with startTs");
    let mut message: Json = serde_json::from_slice(&raw[with]).unwrap();
    message["startTs"] = Json::from(0);
    // The messages before it carry the table's schema.
    let mut messages = raw[..with].to_vec();
    messages.push(serde_json::to_vec(&message).unwrap());
    let decoded = decode(Protocol::SimpleJson, &messages);
    let last = decoded.num_rows() - 1;
    assert_eq!(decoded.column_by_name("_op").unwrap().as_string::<i32>().value(last), "INSERT");
    assert!(decoded.column_by_name("_start_ts").unwrap().is_null(last));

    let schema = decoded.schema();
    let mut columns = decoded.columns().to_vec();
    columns[schema.index_of("_commit_ts").unwrap()] = Arc::new(Int64Array::from(vec![0i64; decoded.num_rows()]));
    let zero = RecordBatch::try_new(schema, columns).unwrap();
    let options = EncodeOptions { simple_include_start_ts: true, build_ts: Some(1), ..Default::default() };
    for message in encode(Protocol::SimpleJson, options, &zero) {
        assert!(!text(&message).contains("startTs"), "{}", text(&message));
    }
}

#[test]
fn include_start_ts_is_for_simple_json_only() {
    for protocol in [Protocol::SimpleAvro, Protocol::Open, Protocol::CanalJson] {
        let options = EncodeOptions { simple_include_start_ts: true, ..Default::default() };
        assert!(BatchEncoder::new(protocol, options).is_err(), "{protocol:?}");
    }
    let mut options = EncodeOptions::default();
    options.set("simple-include-start-ts", "true").unwrap();
    options.set("output_row_key", "true").unwrap();
    assert!(options.simple_include_start_ts && options.output_row_key);
}

#[test]
fn simple_json_older_number_values_read_as_the_newer_strings() {
    let old = fixture("simple/ticdc_value_forms_json.json");
    let new = fixture("simple/ticdc_include_start_ts_json.json");
    let from_old = decode(Protocol::SimpleJson, &values(&old));
    let from_new = decode(Protocol::SimpleJson, &values(&new));
    assert_eq!(
        from_old.column_by_name("_after").unwrap().slice(1, 1).as_ref(),
        from_new.column_by_name("_after").unwrap().slice(1, 1).as_ref()
    );
    assert_eq!(
        from_old.column_by_name("_types").unwrap().slice(1, 1).as_ref(),
        from_new.column_by_name("_types").unwrap().slice(1, 1).as_ref()
    );
}
