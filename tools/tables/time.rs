//! Times one corpus of `tables.py` through one build's `BatchDecoder`, typed layout, and prints
//! the median of seven rounds (each decoding the corpus for at least 0.3 s) in MiB/s of
//! message bytes, keys included. With `--once` it decodes the corpus once more after the first
//! decode and stops, for callgrind to count that decode alone (`--toggle-collect=*counted_decode*`).
//!
//! It uses only the API `e3e9c19` already had, so that one source builds against both trees.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
#[cfg(feature = "table_name_in_arrow")]
use ticdc_rs::arrow::TableName;
#[cfg(not(feature = "table_name_in_arrow"))]
use ticdc_rs::TableName;
use ticdc_rs::{BatchDecoder, DecodeOptions, LayoutOptions, Protocol};

/// The corpus as a batch of Kafka `key`/`value` columns, and its bytes.
fn read(path: &str) -> (RecordBatch, u64) {
    let file = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut rest = &file[..];
    let count = length(&mut rest);
    let (mut keys, mut values) = (Vec::new(), Vec::new());
    for _ in 0..count {
        let key_len = length(&mut rest);
        keys.push((key_len != u32::MAX).then(|| take(&mut rest, key_len as usize)));
        let value_len = length(&mut rest);
        values.push(take(&mut rest, value_len as usize));
    }
    let bytes = keys.iter().flatten().chain(&values).map(|b| b.len() as u64).sum();
    let schema =
        Schema::new(vec![Field::new("key", DataType::Binary, true), Field::new("value", DataType::Binary, true)]);
    let columns: Vec<ArrayRef> = vec![Arc::new(BinaryArray::from(keys)), Arc::new(BinaryArray::from(values))];
    (RecordBatch::try_new(Arc::new(schema), columns).unwrap(), bytes)
}

fn take<'a>(rest: &mut &'a [u8], len: usize) -> &'a [u8] {
    let (taken, after) = rest.split_at(len);
    *rest = after;
    taken
}

fn length(rest: &mut &[u8]) -> u32 {
    u32::from_le_bytes(take(rest, 4).try_into().unwrap())
}

/// The table's typed layout, per the contract's type mapping.
fn fields(table: &str) -> Vec<Field> {
    let field = |name: &str, ty: DataType| Field::new(name, ty, true);
    let mut fields = Vec::new();
    let mut add = |names: &[&str], ty: DataType| fields.extend(names.iter().map(|n| field(n, ty.clone())));
    match table {
        "sbtest" => {
            add(&["id", "k"], DataType::Int32);
            add(&["c", "pad"], DataType::Utf8);
        }
        "metrics" => {
            add(&["id"], DataType::Int64);
            add(&["host", "region"], DataType::Utf8);
            add(&["ts"], DataType::Timestamp(TimeUnit::Microsecond, None));
            add(&["cpu", "mem", "disk"], DataType::Float64);
            add(&["net_in", "net_out"], DataType::Int64);
            add(&["errors", "warns"], DataType::Int32);
            add(&["level", "flag"], DataType::Int8);
            add(&["cost"], DataType::Decimal128(14, 4));
            add(&["p50", "p99"], DataType::Float64);
        }
        other => panic!("no table {other}"),
    }
    fields
}

/// A decode by a decoder that has decoded the corpus once: what `--once` counts.
#[inline(never)]
fn counted_decode(decoder: &mut BatchDecoder, batch: &RecordBatch) -> usize {
    decode_once(decoder, batch)
}

#[inline(never)]
fn decode_once(decoder: &mut BatchDecoder, batch: &RecordBatch) -> usize {
    decoder.decode(batch).expect("the corpus decodes").num_rows()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, table, protocol, rest @ ..] = &args[..] else {
        panic!("usage: time DIR TABLE PROTOCOL [--once]");
    };
    let wire = match protocol.as_str() {
        "canal_json" => Protocol::CanalJson,
        "open" => Protocol::Open,
        "craft" => Protocol::Craft,
        "simple_json" => Protocol::SimpleJson,
        "simple_avro" => Protocol::SimpleAvro,
        other => panic!("no protocol {other}"),
    };
    let (batch, bytes) = read(&format!("{dir}/{table}.{protocol}"));
    let table_name = TableName::parse(&format!("xb.{table}")).unwrap();
    let layout = LayoutOptions::Typed { table: table_name, schema: Arc::new(Schema::new(fields(table))) };
    let options = DecodeOptions { protocol: Some(wire), layout, ..Default::default() };
    let mut decoder = BatchDecoder::new(options).expect("decoder options");
    let rows = decode_once(&mut decoder, &batch);
    if rest.iter().any(|a| a == "--once") {
        std::hint::black_box(counted_decode(&mut decoder, &batch));
        return;
    }
    let mut rates: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            let mut runs = 0;
            while start.elapsed().as_secs_f64() < 0.3 {
                std::hint::black_box(decode_once(&mut decoder, &batch));
                runs += 1;
            }
            (bytes * runs) as f64 / start.elapsed().as_secs_f64() / (1 << 20) as f64
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!("{rows} {:.1}", rates[3]);
}
