//! Encoding per Kafka partition: input carrying `_partition` (and `_topic`) is batched per
//! destination, as TiCDC's Kafka sink groups events by `TopicPartitionKey` before its batch
//! encoders run; without those columns the output is what it always was.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, BinaryArray, Int32Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use serde_json::Value as Json;
use ticdc_rs::codec::EncodeOptions;
use ticdc_rs::{BatchDecoder, BatchEncoder, DecodeOptions, Protocol};

fn vector(protocol: &str, name: &str) -> Option<Json> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../shared/vectors/{protocol}/{name}.json"));
    let text = std::fs::read_to_string(&path).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

fn messages(vectors: &[Json]) -> RecordBatch {
    let mut keys = Vec::new();
    let mut values = Vec::new();
    for v in vectors {
        for m in v["messages"].as_array().unwrap() {
            keys.push(m["key_hex"].as_str().map(|k| hex::decode(k).unwrap()));
            values.push(hex::decode(m["value_hex"].as_str().unwrap()).unwrap());
        }
    }
    let schema =
        Schema::new(vec![Field::new("key", DataType::Binary, true), Field::new("value", DataType::Binary, true)]);
    let keys: BinaryArray = keys.iter().map(|k| k.as_deref()).collect();
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), Arc::new(BinaryArray::from_iter_values(values.iter()))])
        .unwrap()
}

fn decoder(protocol: Protocol, carry: &[&str]) -> BatchDecoder {
    BatchDecoder::new(DecodeOptions {
        protocol: Some(protocol),
        carry: carry
            .iter()
            .map(|c| Arc::new(Field::new(*c, if *c == "topic" { DataType::Utf8 } else { DataType::Int32 }, true)))
            .collect(),
        ..Default::default()
    })
    .unwrap()
}

/// `batch` with `column` appended.
fn with_column(batch: &RecordBatch, name: &str, column: ArrayRef) -> RecordBatch {
    let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(name, column.data_type().clone(), true));
    let mut columns = batch.columns().to_vec();
    columns.push(column);
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// The event columns that must survive a round trip, for rows `rows` of `batch`.
fn events_of(batch: &RecordBatch, rows: &[u32]) -> Vec<ArrayRef> {
    let take = UInt32Array::from(rows.to_vec());
    ["_op", "_commit_ts", "_schema", "_table", "_after", "_before", "_types"]
        .iter()
        .map(|c| arrow_select::take::take(batch.column_by_name(c).unwrap(), &take, None).unwrap())
        .collect()
}

/// Events of several row vectors, byte-exact in `protocol`, decoded to the envelope layout.
fn sample_events(protocol: Protocol, dir: &str, names: &[&str]) -> Option<RecordBatch> {
    let vectors: Option<Vec<Json>> = names.iter().map(|n| vector(dir, n)).collect();
    let input = messages(&vectors?);
    Some(decoder(protocol, &[]).decode(&input).unwrap())
}

const OPEN_ROWS: [&str; 5] =
    ["batch_4_update", "dml_large_insert", "dml_large_update", "dml_large_delete", "dml_int_limits"];
const CRAFT_ROWS: [&str; 5] =
    ["batch_4_update", "dml_large_insert", "dml_large_update", "dml_large_delete", "dml_int_limits"];

fn check_interleaved(protocol: Protocol, dir: &str, names: &[&str]) {
    let Some(events) = sample_events(protocol, dir, names) else {
        return;
    };
    let n = events.num_rows();
    assert!(n >= 6, "{dir}: {n} sample events");
    // Partitions 2, 0, 1, 2, 0, 1, ...: every message would mix them if batched together.
    let partitions: Vec<i32> = (0..n as i32).map(|i| (i + 2) % 3).collect();
    let input = with_column(&events, "_partition", Arc::new(Int32Array::from(partitions.clone())));
    let mut encoder = BatchEncoder::new(protocol, EncodeOptions::default()).unwrap();
    let out = encoder.encode(&input).unwrap();
    assert_eq!(out.schema().field(2).name(), "partition");
    assert_eq!(out.schema().as_ref(), encoder.output_schema(&input.schema()).as_ref());
    // Default max_batch_size (16) holds each partition's handful of rows: one message each, in
    // the order the partitions first appear.
    let placed = out.column_by_name("partition").unwrap().as_primitive::<Int32Type>();
    assert_eq!(placed.values().to_vec(), vec![2, 0, 1], "{dir}");

    let back = decoder(protocol, &["partition"]).decode(&out).unwrap();
    assert_eq!(back.num_rows(), n, "{dir}");
    let back_partitions = back.column_by_name("_partition").unwrap().as_primitive::<Int32Type>();
    for p in 0..3 {
        let want: Vec<u32> = (0..n as u32).filter(|&i| partitions[i as usize] == p).collect();
        let got: Vec<u32> = (0..n as u32).filter(|&i| back_partitions.value(i as usize) == p).collect();
        assert_eq!(events_of(&back, &got), events_of(&events, &want), "{dir}: partition {p}");
    }

    // With max_batch_size 2 each partition's rows fill messages of their own, still in order.
    let options = EncodeOptions { max_batch_size: 2, ..EncodeOptions::default() };
    let out = BatchEncoder::new(protocol, options).unwrap().encode(&input).unwrap();
    let back = decoder(protocol, &["partition"]).decode(&out).unwrap();
    let placed = out.column_by_name("partition").unwrap().as_primitive::<Int32Type>();
    let runs: Vec<i32> = placed.values().to_vec();
    assert!(runs.windows(2).all(|w| w[0] <= w[1] || (w[0], w[1]) == (2, 0) || (w[0], w[1]) == (0, 1)), "{runs:?}");
    let back_partitions = back.column_by_name("_partition").unwrap().as_primitive::<Int32Type>();
    for p in 0..3 {
        let want: Vec<u32> = (0..n as u32).filter(|&i| partitions[i as usize] == p).collect();
        let got: Vec<u32> = (0..n as u32).filter(|&i| back_partitions.value(i as usize) == p).collect();
        assert_eq!(events_of(&back, &got), events_of(&events, &want), "{dir}: partition {p}, batches of 2");
        let messages = runs.iter().filter(|&&r| r == p).count();
        assert_eq!(messages, want.len().div_ceil(2), "{dir}: partition {p}");
    }
}

#[test]
fn open_batches_each_partition_on_its_own() {
    check_interleaved(Protocol::Open, "open", &OPEN_ROWS);
}

#[test]
fn craft_batches_each_partition_on_its_own() {
    check_interleaved(Protocol::Craft, "craft", &CRAFT_ROWS);
}

#[test]
fn one_partition_encodes_as_no_partition_column() {
    for (protocol, dir, names) in [(Protocol::Open, "open", &OPEN_ROWS), (Protocol::Craft, "craft", &CRAFT_ROWS)] {
        let Some(events) = sample_events(protocol, dir, names) else {
            return;
        };
        let plain = BatchEncoder::new(protocol, EncodeOptions::default()).unwrap().encode(&events).unwrap();
        assert_eq!(plain.num_columns(), 2);
        let input = with_column(&events, "_partition", Arc::new(Int32Array::from(vec![7; events.num_rows()])));
        let placed = BatchEncoder::new(protocol, EncodeOptions::default()).unwrap().encode(&input).unwrap();
        assert_eq!(placed.column(0).as_ref(), plain.column(0).as_ref(), "{dir}");
        assert_eq!(placed.column(1).as_ref(), plain.column(1).as_ref(), "{dir}");
        assert!(placed.column(2).as_primitive::<Int32Type>().values().iter().all(|&p| p == 7));
    }
}

#[test]
fn topics_and_null_partitions_are_destinations_too() {
    let Some(events) = sample_events(Protocol::Open, "open", &OPEN_ROWS) else {
        return;
    };
    let n = events.num_rows();
    let topics: StringArray = (0..n).map(|i| Some(if i % 2 == 0 { "a" } else { "b" })).collect();
    let partitions: Int32Array = (0..n).map(|i| if i % 4 < 2 { None } else { Some(1) }).collect();
    let input = with_column(&events, "_topic", Arc::new(topics));
    let input = with_column(&input, "_partition", Arc::new(partitions));
    let out = BatchEncoder::new(Protocol::Open, EncodeOptions::default()).unwrap().encode(&input).unwrap();
    let schema = out.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["key", "value", "topic", "partition"]);
    // (a, null), (b, null), (a, 1), (b, 1): four destinations, one message each.
    assert_eq!(out.num_rows(), 4);
    let topic = out.column_by_name("topic").unwrap().as_string::<i32>();
    let partition = out.column_by_name("partition").unwrap().as_primitive::<Int32Type>();
    let got: Vec<(&str, Option<i32>)> =
        (0..4).map(|i| (topic.value(i), partition.is_valid(i).then(|| partition.value(i)))).collect();
    assert_eq!(got, [("a", None), ("b", None), ("a", Some(1)), ("b", Some(1))]);
    let back = decoder(Protocol::Open, &[]).decode(&out).unwrap();
    assert_eq!(back.num_rows(), n);
}

#[test]
fn partitions_must_fit_an_int32() {
    let Some(events) = sample_events(Protocol::Open, "open", &["dml_large_insert"]) else {
        return;
    };
    let column = arrow_array::Int64Array::from(vec![1i64 << 40; events.num_rows()]);
    let input = with_column(&events, "_partition", Arc::new(column));
    let err = BatchEncoder::new(Protocol::Open, EncodeOptions::default()).unwrap().encode(&input).unwrap_err();
    let err = err.as_encode().expect("a fault of the row");
    assert_eq!(err.row, Some(0));
    assert!(err.reason.contains("int32"), "{err:?}");
}
