//! Arbitrary bytes as a batch of Kafka messages, decoded under `collect` in both layouts: no
//! input may panic, read out of bounds or allocate without bound, and `collect` turns every bad
//! message into an ERROR row instead of an error. Whatever decodes is then encoded with every
//! protocol's encoder (which may refuse a value, but not panic) and decoded again.
//!
//! Input: one byte choosing the protocol (or detection), the compression, view columns in the
//! typed layout and the server time zone, then messages, each a u16 key length (0xffff: no key),
//! a u16 value length and the bytes.
#![no_main]

#[path = "../alloc_cap.rs"]
mod alloc_cap;
#[path = "../check.rs"]
mod check;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use libfuzzer_sys::fuzz_target;
use ticdc_rs::arrow::infer::infer_schema;
use ticdc_rs::{BatchDecoder, Compression, DecodeOptions, LayoutOptions, OnError, TableName};
use ticdc_rs::{BatchEncoder, EncodeOptions, Protocol};

fn decode_all(options: DecodeOptions, batches: &[RecordBatch]) -> Vec<RecordBatch> {
    let mut decoder = BatchDecoder::new(options).expect("valid options");
    let mut out: Vec<RecordBatch> =
        batches.iter().map(|b| decoder.decode(b).expect("collect reports bad messages as rows")).collect();
    out.push(decoder.flush().expect("collect reports held messages as rows"));
    out
}

/// Each protocol's encoding of the decoded batches, decoded again.
fn reencode_all(decoded: &[RecordBatch]) {
    for protocol in Protocol::ALL {
        let mut encoder = BatchEncoder::new(protocol, EncodeOptions::default()).expect("default options");
        let encoded: Vec<RecordBatch> = decoded.iter().filter_map(|b| encoder.encode(b).ok()).collect();
        let options = DecodeOptions { protocol: Some(protocol), on_error: OnError::Collect, ..Default::default() };
        decode_all(options, &encoded);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else { return };
    let protocol = match choice % 6 {
        5 => None,
        i => Some(Protocol::ALL[i as usize]),
    };
    let compression = [Compression::None, Compression::Snappy, Compression::Lz4][(choice / 6 % 3) as usize];
    let views = choice / 18 % 2 == 1;
    let timezone = if choice / 36 % 2 == 1 { "Asia/Shanghai" } else { "UTC" }.to_string();
    let (keys, values) = check::messages(rest);
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
    ]));
    let key: ArrayRef = Arc::new(BinaryArray::from(keys));
    let value: ArrayRef = Arc::new(BinaryArray::from(values.iter().map(|v| Some(*v)).collect::<Vec<_>>()));
    let batch = RecordBatch::try_new(schema, vec![key, value]).expect("batch");
    // Two batches, so state kept across batches (the Simple schema cache, held rows) is fuzzed.
    let half = batch.num_rows() / 2;
    let batches = [batch.slice(0, half), batch.slice(half, batch.num_rows() - half)];

    let base = DecodeOptions { protocol, compression, timezone, on_error: OnError::Collect, ..Default::default() };
    let envelope = decode_all(base.clone(), &batches);
    reencode_all(&envelope);

    // The typed layout of the first table a row names, with the schema inferred from the input.
    let Some(table) = envelope.iter().find_map(|b| {
        let (ops, schemas, tables) =
            (b.column_by_name("_op")?, b.column_by_name("_schema")?, b.column_by_name("_table")?);
        let (ops, schemas, tables) = (ops.as_string::<i32>(), schemas.as_string::<i32>(), tables.as_string::<i32>());
        (0..b.num_rows()).find_map(|i| {
            let row = matches!(ops.value(i), "INSERT" | "UPDATE" | "DELETE");
            (row && schemas.is_valid(i) && tables.is_valid(i))
                .then(|| TableName { schema: schemas.value(i).to_string(), table: tables.value(i).to_string() })
        })
    }) else {
        return;
    };
    let Ok(inferred) = infer_schema(&batches, protocol, &table, compression, "value", "key", &[]) else { return };
    let columns = inferred.fields().iter().map(|f| match f.data_type() {
        DataType::Utf8 if views => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8View)),
        DataType::Binary if views => Arc::new(f.as_ref().clone().with_data_type(DataType::BinaryView)),
        _ => f.clone(),
    });
    let schema = Schema::new_with_metadata(columns.collect::<Vec<_>>(), inferred.metadata().clone());
    let layout = LayoutOptions::Typed { table, schema: Arc::new(schema) };
    let typed = decode_all(DecodeOptions { layout, ..base }, &batches);
    reencode_all(&typed);
});
