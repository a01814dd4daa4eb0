//! Canal-JSON through the Rust API: the golden vectors (from `../shared/vectors`, else the
//! project's own fixtures), and hostile input that must come out as events or one ERROR row.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use serde_json::Value as Json;
use ticdc_rs::{BatchDecoder, Compression, DecodeOptions, OnError, Protocol};

mod common;

fn vector_dir() -> PathBuf {
    common::vector_dir("canal-json").0
}

fn batch(values: Vec<Vec<u8>>) -> RecordBatch {
    let schema = Schema::new(vec![Field::new("value", DataType::Binary, true)]);
    let array = BinaryArray::from_iter_values(values.iter());
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(array)]).unwrap()
}

fn decoder(on_error: OnError, compression: Compression) -> BatchDecoder {
    BatchDecoder::new(DecodeOptions {
        protocol: Some(Protocol::CanalJson),
        on_error,
        compression,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn golden_vectors_decode() {
    let mut checked = 0;
    for entry in std::fs::read_dir(vector_dir()).unwrap() {
        let path = entry.unwrap().path();
        let vector: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if vector["claim_check_files"].is_object() {
            continue; // needs the files on disk: covered by the Python suite
        }
        let values: Vec<Vec<u8>> = vector["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| hex::decode(m["value_hex"].as_str().unwrap()).unwrap())
            .collect();
        let compression = Compression::parse(vector["config"]["compression"].as_str().unwrap_or("none")).unwrap();
        let result = decoder(OnError::Raise, compression).decode(&batch(values));
        let name = path.display();
        if !vector["expected_error"].is_null() {
            assert!(result.is_err(), "{name}: expected an error");
            continue;
        }
        let out = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = vector["expected"].as_array().unwrap();
        assert_eq!(out.num_rows(), expected.len(), "{name}");
        let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
        let ts = out.column_by_name("_commit_ts").unwrap().as_primitive::<Int64Type>();
        for (i, want) in expected.iter().enumerate() {
            let op = match want["type"].as_str().unwrap() {
                "row" => want["row_type"].as_str().unwrap().to_uppercase(),
                "ddl" => "DDL".into(),
                _ => "WATERMARK".into(),
            };
            assert_eq!(ops.value(i), op, "{name} event {i}");
            assert_eq!(ts.value(i).to_string(), want["commit_ts"].to_string(), "{name} event {i}");
        }
        checked += 1;
    }
    assert!(checked > 0, "no vectors checked");
}

fn sample_message() -> Vec<u8> {
    br#"{"id":0,"database":"shop","table":"orders","pkNames":["id"],"isDdl":false,"type":"UPDATE","es":1,"ts":2,"sql":"","sqlType":{"id":4,"note":12,"blob":2004},"mysqlType":{"id":"int","note":"varchar","blob":"blob"},"old":[{"note":"before"}],"data":[{"id":"7","note":"caf\u00e9 \"x\"","blob":"\u0000\u00ff"}],"_tidb":{"commitTs":449543017000000001}}"#.to_vec()
}

#[test]
fn partial_old_is_completed_from_data() {
    let out = decoder(OnError::Raise, Compression::None).decode(&batch(vec![sample_message()])).unwrap();
    let before = out.column_by_name("_before").unwrap().as_map();
    let entries = before.value(0);
    let keys = entries.column(0).as_string::<i32>();
    let values = entries.column(1).as_string::<i32>();
    let pairs: Vec<(&str, &str)> = (0..keys.len()).map(|i| (keys.value(i), values.value(i))).collect();
    assert_eq!(pairs, [("id", "7"), ("note", "before"), ("blob", "AP8=")]);
}

/// TiCDC v4.0.9 to v5.3 (`newFlatMessageForDML`) wrote `"old":[null]` on every INSERT; Go reads
/// the null row as an empty map: the INSERT is whole, and an UPDATE's old row is all of `data`.
#[test]
fn null_rows_in_old_are_empty_rows() {
    let insert = br#"{"id":0,"database":"shop","table":"t1","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1,"ts":0,"sql":"","sqlType":{"id":4,"name":12},"mysqlType":{"id":"int","name":"varchar"},"data":[{"id":"100","name":"x"}],"old":[null]}"#;
    let old_first = br#"{"old":[null],"data":[{"id":"101","name":"y"}],"database":"shop","table":"t1","pkNames":["id"],"isDdl":false,"type":"INSERT","mysqlType":{"id":"int","name":"varchar"}}"#;
    let update = br#"{"database":"shop","table":"t1","pkNames":["id"],"isDdl":false,"type":"UPDATE","mysqlType":{"id":"int","name":"varchar"},"data":[{"id":"102","name":"z"}],"old":[null]}"#;
    let messages = vec![insert.to_vec(), old_first.to_vec(), update.to_vec()];
    let out = decoder(OnError::Raise, Compression::None).decode(&batch(messages)).unwrap();
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    assert_eq!((0..ops.len()).map(|i| ops.value(i)).collect::<Vec<_>>(), ["INSERT", "INSERT", "UPDATE"]);
    let image = |column: &str, row: usize| -> Vec<(String, String)> {
        let map = out.column_by_name(column).unwrap().as_map();
        let entries = map.value(row);
        let (keys, values) = (entries.column(0).as_string::<i32>(), entries.column(1).as_string::<i32>());
        (0..keys.len()).map(|i| (keys.value(i).to_string(), values.value(i).to_string())).collect()
    };
    let row = |id: &str, name: &str| vec![("id".to_string(), id.to_string()), ("name".to_string(), name.to_string())];
    assert_eq!(image("_after", 0), row("100", "x"));
    assert_eq!(image("_after", 1), row("101", "y"));
    assert!(out.column_by_name("_before").unwrap().is_null(0) && out.column_by_name("_before").unwrap().is_null(1));
    assert_eq!(image("_before", 2), row("102", "z"));
}

#[test]
fn collect_keeps_one_error_row_per_bad_message() {
    let good = sample_message();
    let messages = vec![
        good.clone(),
        good[..good.len() / 2].to_vec(),
        b"\xff\xfe not utf8".to_vec(),
        br#"{"isDdl":"yes"}"#.to_vec(),
        br#"{"type":"INSERT","mysqlType":{"a":"int"},"data":[{"a":"1","b":"2"}]}"#.to_vec(),
        good,
    ];
    let out = decoder(OnError::Collect, Compression::None).decode(&batch(messages)).unwrap();
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    let got: Vec<&str> = (0..ops.len()).map(|i| ops.value(i)).collect();
    assert_eq!(got, ["UPDATE", "ERROR", "ERROR", "ERROR", "ERROR", "UPDATE"]);
    let errors = out.column_by_name("_error").unwrap().as_string::<i32>();
    assert!(errors.value(2).contains("invalid UTF-8"));
    assert!(errors.value(4).contains("column: b"));

    let err =
        decoder(OnError::Raise, Compression::None).decode(&batch(vec![sample_message(), b"{".to_vec()])).unwrap_err();
    let err = err.as_decode().expect("a message fault");
    assert_eq!((err.protocol, err.message_index, err.offset), ("canal-json", 1, 1));
}

/// A call that is wrong as a whole is a usage error, not a fault of message 0.
#[test]
fn usage_errors_are_not_message_faults() {
    let schema = Schema::new(vec![Field::new("payload", DataType::Binary, true)]);
    let no_value =
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(BinaryArray::from_iter_values([b"{}"]))]).unwrap();
    match decoder(OnError::Collect, Compression::None).decode(&no_value) {
        Err(ticdc_rs::Error::Usage(e)) => assert!(e.reason.contains("no \"value\" column"), "{e}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
    let schema = Schema::new(vec![Field::new("value", DataType::Int64, true)]);
    let ints = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(arrow_array::Int64Array::from(vec![1]))]).unwrap();
    let err = decoder(OnError::Raise, Compression::None).decode(&ints).unwrap_err();
    assert!(matches!(&err, ticdc_rs::Error::Usage(e) if e.reason.contains("must be binary or string")), "{err}");
    assert!(err.as_decode().is_none());
    let zone =
        DecodeOptions { protocol: Some(Protocol::CanalJson), timezone: "Mars/Olympus".into(), ..Default::default() };
    assert!(matches!(BatchDecoder::new(zone), Err(ticdc_rs::Error::Usage(_))));
}

#[test]
fn absurd_compressed_sizes_are_refused() {
    // A snappy header declaring 2^32 bytes.
    let bomb = vec![0x80, 0x80, 0x80, 0x80, 0x10, 0x00];
    let out = decoder(OnError::Collect, Compression::Snappy).decode(&batch(vec![bomb])).unwrap();
    assert_eq!(out.column_by_name("_op").unwrap().as_string::<i32>().value(0), "ERROR");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let out = decoder(OnError::Collect, Compression::None).decode(&batch(vec![bytes])).unwrap();
        prop_assert!(out.num_rows() >= 1);
    }

    #[test]
    fn mutated_messages_yield_events_or_one_error(at in 0usize..400, byte in any::<u8>(), cut in 0usize..400) {
        let mut m = sample_message();
        let at = at % m.len();
        m[at] = byte;
        m.truncate(m.len() - cut % m.len());
        let out = decoder(OnError::Collect, Compression::None).decode(&batch(vec![m])).unwrap();
        let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
        let errors = (0..ops.len()).filter(|&i| ops.value(i) == "ERROR").count();
        prop_assert!(errors == 0 && ops.len() >= 1 || errors == 1 && ops.len() == 1);
    }
}

/// Small compressed messages can expand past what one Arrow utf8 column holds (2 GiB, i32
/// offsets). The message that would overflow a column is an error row; it never panics.
#[test]
fn output_past_two_gib_is_an_error_not_a_panic() {
    use ticdc_rs::{LayoutOptions, TableName};
    let note = "x".repeat(200 << 20);
    let message = format!(
        r#"{{"id":0,"database":"d","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1,"ts":1,"sql":"","sqlType":{{"id":4,"note":12}},"mysqlType":{{"id":"int","note":"text"}},"data":[{{"id":"1","note":"{note}"}}],"old":null,"_tidb":{{"commitTs":1}}}}"#
    );
    let compressed = Compression::Lz4.compress(message.as_bytes()).unwrap();
    drop((note, message));
    let input = batch(vec![compressed; 11]); // 11 x 200 MiB of text > 2 GiB
    let typed = LayoutOptions::Typed {
        table: TableName::parse("d.t").unwrap(),
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("note", DataType::Utf8, true),
        ])),
    };
    for layout in [typed, LayoutOptions::Envelope] {
        let options = DecodeOptions {
            protocol: Some(Protocol::CanalJson),
            layout,
            on_error: OnError::Collect,
            compression: Compression::Lz4,
            ..Default::default()
        };
        let out = BatchDecoder::new(options).unwrap().decode(&input).unwrap();
        let ops: Vec<_> = out.column_by_name("_op").unwrap().as_string::<i32>().iter().flatten().collect();
        assert_eq!(ops.iter().filter(|&&op| op == "INSERT").count(), 10);
        assert_eq!(ops.last(), Some(&"ERROR"));
        let errors = out.column_by_name("_error").unwrap().as_string::<i32>();
        assert!(errors.value(10).contains("exceed 2 GiB"), "{}", errors.value(10));
    }
}

/// A message whose second event has a value that does not fit its column keeps nothing of its
/// first event: its rows are dropped from every typed column, `_before` included, and the
/// messages around it are intact, in this batch and the next.
#[test]
fn typed_rows_of_a_failed_message_are_dropped_whole() {
    use ticdc_rs::{LayoutOptions, TableName};
    let event = |kind: &str, data: &str, old: &str| {
        format!(
            r#"{{"id":0,"database":"d","table":"t","pkNames":["id"],"isDdl":false,"type":"{kind}","es":1,"ts":1,"sql":"","sqlType":{{"id":4,"v":12}},"mysqlType":{{"id":"int","v":"varchar"}},"data":[{data}],"old":{old},"_tidb":{{"commitTs":1}}}}"#
        )
    };
    let values = vec![
        event("UPDATE", r#"{"id":"1","v":"b"}"#, r#"[{"v":"a"}]"#).into_bytes(),
        // Two objects in one value (the storage sink's form): the second does not fit.
        format!(
            "{}\n{}",
            event("UPDATE", r#"{"id":"2","v":"y"}"#, r#"[{"v":"x"}]"#),
            event("INSERT", r#"{"id":"abc","v":"z"}"#, "null")
        )
        .into_bytes(),
        event("INSERT", r#"{"id":"3","v":"c"}"#, "null").into_bytes(),
    ];
    let typed = || LayoutOptions::Typed {
        table: TableName::parse("d.t").unwrap(),
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("v", DataType::Utf8, true),
        ])),
    };
    for (on_error, ops, ids, vs, old_vs) in [
        (
            OnError::Collect,
            vec!["UPDATE", "ERROR", "INSERT"],
            vec![Some(1), None, Some(3)],
            vec![Some("b"), None, Some("c")],
            vec![Some("a"), None, None],
        ),
        (
            OnError::Skip,
            vec!["UPDATE", "INSERT"],
            vec![Some(1), Some(3)],
            vec![Some("b"), Some("c")],
            vec![Some("a"), None],
        ),
    ] {
        let mut dec = BatchDecoder::new(DecodeOptions {
            protocol: Some(Protocol::CanalJson),
            layout: typed(),
            on_error,
            ..Default::default()
        })
        .unwrap();
        for _ in 0..2 {
            let out = dec.decode(&batch(values.clone())).unwrap();
            let got_ops: Vec<_> = out.column_by_name("_op").unwrap().as_string::<i32>().iter().flatten().collect();
            assert_eq!(got_ops, ops);
            let id = out.column_by_name("id").unwrap().as_primitive::<arrow_array::types::Int32Type>();
            assert_eq!(id.iter().collect::<Vec<_>>(), ids);
            let v = out.column_by_name("v").unwrap().as_string::<i32>();
            assert_eq!(v.iter().collect::<Vec<_>>(), vs);
            let before = out.column_by_name("_before").unwrap().as_struct();
            assert_eq!(before.len(), ops.len());
            let old_v = before.column_by_name("v").unwrap().as_string::<i32>();
            let old: Vec<_> = (0..before.len()).map(|i| before.is_valid(i).then(|| old_v.value(i))).collect();
            assert_eq!(old, old_vs);
        }
    }
}

/// Rows whose keys repeat the bytes of the rows before, under a `mysqlType` that lists the
/// columns in another order, still put each value in its own column: the key order learnt from
/// earlier rows stands for the columns of the `mysqlType` it was learnt under.
#[test]
fn typed_rows_follow_their_keys_when_the_declared_order_changes() {
    // As TiCDC writes it (the direct path), and with `data` first (the general reader).
    let as_written = |types: &str, data: &str| {
        format!(
            r#"{{"id":0,"database":"d","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1,"ts":1,"sql":"","sqlType":{{"id":4,"a":12,"b":2004}},"mysqlType":{types},"data":[{data}],"old":null,"_tidb":{{"commitTs":1}}}}"#
        )
    };
    let data_first = |types: &str, data: &str| {
        format!(
            r#"{{"data":[{data}],"id":0,"database":"d","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1,"ts":1,"sql":"","sqlType":{{"id":4,"a":12,"b":2004}},"mysqlType":{types},"old":null,"_tidb":{{"commitTs":1}}}}"#
        )
    };
    for message in [&as_written as &dyn Fn(&str, &str) -> String, &data_first] {
        rows_follow_their_keys(message);
    }
}

fn rows_follow_their_keys(message: &dyn Fn(&str, &str) -> String) {
    use ticdc_rs::{LayoutOptions, TableName};
    let in_order = r#"{"id":"int","a":"varchar","b":"blob"}"#;
    let reordered = r#"{"id":"int","b":"blob","a":"varchar"}"#;
    let values = [
        message(in_order, r#"{"id":"1","a":"é1","b":"ÿ1"}"#),
        message(in_order, r#"{"id":"2","a":"é2","b":"ÿ2"}"#),
        message(reordered, r#"{"id":"3","a":"é3","b":"ÿ3"}"#),
        message(reordered, r#"{"id":"4","b":"ÿ4","a":"é4"}"#),
        message(in_order, r#"{"id":"5","a":"é5","b":"ÿ5"}"#),
    ];
    let values = values.into_iter().map(String::into_bytes).collect();
    let mut dec = BatchDecoder::new(DecodeOptions {
        protocol: Some(Protocol::CanalJson),
        layout: LayoutOptions::Typed {
            table: TableName::parse("d.t").unwrap(),
            schema: Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int32, true),
                Field::new("a", DataType::Utf8, true),
                Field::new("b", DataType::Binary, true),
            ])),
        },
        ..Default::default()
    })
    .unwrap();
    let out = dec.decode(&batch(values)).unwrap();
    let a: Vec<_> = out.column_by_name("a").unwrap().as_string::<i32>().iter().map(Option::unwrap).collect();
    let b: Vec<_> = out.column_by_name("b").unwrap().as_binary::<i32>().iter().map(Option::unwrap).collect();
    assert_eq!(a, ["é1", "é2", "é3", "é4", "é5"]);
    // A BLOB is ISO-8859-1 on the wire: ÿ is the byte 0xFF; read as text it would be two bytes.
    assert_eq!(b, [b"\xff1", b"\xff2", b"\xff3", b"\xff4", b"\xff5"]);
}
