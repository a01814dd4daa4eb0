//! The checks behind the fuzz targets, shared with `tests/fuzz_regressions.rs` so that every input
//! a fuzzer ever failed on is run again by `cargo test` through the same code.
//!
//! * [`decode`]: arbitrary bytes as a batch of one protocol's messages, decoded under `collect` in
//!   the envelope layout and in the typed layout of the first table named; every message yields
//!   its events or exactly one ERROR row (with its raw bytes). What decoded is encoded again with
//!   the same protocol and decoded again: the row events must come back unchanged.
//! * [`differential`]: arbitrary rows of a table (structured, through `arbitrary`) in the typed
//!   layout, encoded with one protocol's encoder and decoded again: the same rows must come back.
//!
//! Panics (through `assert!`) on a broken contract, which libFuzzer reports as a crash.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BinaryArray, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use arrow_select::concat::concat_batches;
use arrow_select::filter::filter_record_batch;
use ticdc_rs::arrow::infer::infer_schema;
use ticdc_rs::schema::mysql::{member_number, TypeDescription};
use ticdc_rs::{BatchDecoder, Compression, DecodeOptions, LayoutOptions, OnError, TableName};
use ticdc_rs::{BatchEncoder, EncodeOptions, Protocol};

/// Targets by name, as in `fuzz/fuzz_targets/` and `fuzz/regressions/`.
pub const TARGETS: [(&str, Protocol); 5] = [
    ("open", Protocol::Open),
    ("craft", Protocol::Craft),
    ("canal_json", Protocol::CanalJson),
    ("simple_json", Protocol::SimpleJson),
    ("simple_avro", Protocol::SimpleAvro),
];

fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (head, rest) = data.split_at(n.min(data.len()));
    *data = rest;
    head
}

/// The messages of an input: each a u16 key length (0xffff: no key), a u16 value length and the
/// bytes (lengths are cut to what is left).
pub fn messages(mut data: &[u8]) -> (Vec<Option<&[u8]>>, Vec<&[u8]>) {
    let (mut keys, mut values) = (Vec::new(), Vec::new());
    while data.len() >= 4 {
        let key_len = u16::from_le_bytes([data[0], data[1]]);
        let value_len = u16::from_le_bytes([data[2], data[3]]) as usize;
        data = &data[4..];
        keys.push((key_len != u16::MAX).then(|| take(&mut data, key_len as usize)));
        values.push(take(&mut data, value_len));
    }
    (keys, values)
}

fn input_batch(keys: &[Option<&[u8]>], values: &[&[u8]]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
    ]));
    let key: ArrayRef = Arc::new(BinaryArray::from(keys.to_vec()));
    let value: ArrayRef = Arc::new(BinaryArray::from(values.iter().map(|v| Some(*v)).collect::<Vec<_>>()));
    RecordBatch::try_new(schema, vec![key, value]).expect("batch")
}

/// Whether the protocol's decoder can hold messages to the end of the stream (Simple: rows
/// waiting for their table's schema); the others' `flush` has nothing to give, and is skipped to
/// keep each execution cheap.
fn holds(protocol: Option<Protocol>) -> bool {
    matches!(protocol, Some(Protocol::SimpleJson | Protocol::SimpleAvro))
}

/// The batches decoded in one decoder, then the rows held to the end (flush), under `collect`.
fn decode_collect(options: DecodeOptions, input: &[RecordBatch]) -> Vec<RecordBatch> {
    let flush = holds(options.protocol);
    let mut decoder = BatchDecoder::new(options).expect("valid options");
    let mut out: Vec<RecordBatch> =
        input.iter().map(|b| decoder.decode(b).expect("collect reports bad messages as rows")).collect();
    if flush {
        out.push(decoder.flush().expect("collect reports held messages as rows"));
    }
    out
}

fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let column = batch.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
    let column = column.as_string::<i32>();
    (0..column.len()).map(|i| column.is_valid(i).then(|| column.value(i).to_string())).collect()
}

fn ints(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let column = batch.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
    let column = column.as_primitive::<Int64Type>();
    (0..column.len()).map(|i| column.is_valid(i).then(|| column.value(i))).collect()
}

/// The contract of `collect`: every message yields its events or exactly one ERROR row, which
/// carries the message's bytes; no row names a message that is not in the input.
/// Every array is also validated in full (offsets, UTF-8, views in bounds): the decoder builds
/// some without checks, and the fuzz targets run without a sanitizer.
fn check_contract(out: &[RecordBatch], keys: &[Option<&[u8]>], values: &[&[u8]], layout: &str) {
    for (batch, column) in out.iter().flat_map(|b| b.columns().iter().map(move |c| (b, c))) {
        if let Err(e) = column.to_data().validate_full() {
            panic!("{layout}: invalid array in {:?}: {e}", batch.schema());
        }
    }
    let n = values.len();
    let (mut rows, mut errors) = (vec![0usize; n], vec![0usize; n]);
    for batch in out {
        let ops = strings(batch, "_op");
        let messages = ints(batch, "_message");
        let error = strings(batch, "_error");
        let raw_key = batch.column_by_name("_raw_key").expect("_raw_key").as_binary::<i32>();
        let raw_value = batch.column_by_name("_raw_value").expect("_raw_value").as_binary::<i32>();
        for row in 0..batch.num_rows() {
            let m = messages[row].expect("_message is never null");
            assert!(m >= 0 && (m as usize) < n, "{layout}: row {row} names message {m} of {n}");
            let m = m as usize;
            rows[m] += 1;
            let op = ops[row].as_deref().expect("_op is never null");
            if op == "ERROR" {
                errors[m] += 1;
                assert!(error[row].is_some(), "{layout}: ERROR row of message {m} without _error");
                assert_eq!(
                    raw_value.is_valid(row).then(|| raw_value.value(row)),
                    Some(values[m]),
                    "{layout}: _raw_value of message {m}"
                );
                assert_eq!(
                    raw_key.is_valid(row).then(|| raw_key.value(row)),
                    keys[m],
                    "{layout}: _raw_key of message {m}"
                );
            } else {
                assert!(error[row].is_none(), "{layout}: {op} row of message {m} with an _error");
            }
        }
    }
    for m in 0..n {
        assert!(
            errors[m] == 0 || (errors[m] == 1 && rows[m] == 1),
            "{layout}: message {m} yields {} rows of which {} ERROR",
            rows[m],
            errors[m]
        );
    }
}

/// Marks a row image that names a column twice, in [`envelope_rows`].
const NAMED_TWICE: &str = "(a column named twice)";

/// The op a row event is compared as: an UPDATE without an old image as an INSERT, since
/// Canal-JSON writes it so (as TiCDC does).
fn same_op(op: &str, before: bool) -> &str {
    if op == "UPDATE" && !before {
        "INSERT"
    } else {
        op
    }
}

/// An ENUM or SET value given by its members' names, as its number (index or bitmask) by the
/// column's type text: Canal-JSON's decoder keeps the names other producers send, and its encoder
/// writes the number, as TiCDC does; both mean the same member.
fn by_member(type_text: &str, value: &mut String) {
    if value.parse::<u64>().is_ok() {
        return;
    }
    let t = TypeDescription::parse(type_text);
    if let Some(n) = member_number(t.base, &t.members, value) {
        *value = n.to_string();
    }
}

/// Row events of decoded envelope batches in a form to compare: what a consumer reads of them.
/// Messages of the handle-key-only and claim-check kinds are left out (their rows are stand-ins).
/// An empty schema or table name is taken as none: a Canal-JSON row without `table` re-encodes
/// with `"table":""`, and no TiCDC row lacks its names.
fn envelope_rows(out: &[RecordBatch]) -> Vec<String> {
    let mut rows = Vec::new();
    for batch in out {
        let ops = strings(batch, "_op");
        let ts = ints(batch, "_commit_ts");
        let name = |names: Vec<Option<String>>| -> Vec<Option<String>> {
            names.into_iter().map(|n| n.filter(|n| !n.is_empty())).collect()
        };
        let (schemas, tables) = (name(strings(batch, "_schema")), name(strings(batch, "_table")));
        let stand_in = batch.column_by_name("_handle_key_only").expect("_handle_key_only").as_boolean();
        let claim = strings(batch, "_claim_check");
        let map_pairs = |name: &str, row: usize| -> Option<Vec<(String, Option<String>)>> {
            let map = batch.column_by_name(name).expect("map column").as_map();
            if map.is_null(row) {
                return None;
            }
            let entries = map.value(row);
            let (k, v) = (entries.column(0).as_string::<i32>(), entries.column(1).as_string::<i32>());
            Some(
                (0..k.len()).map(|i| (k.value(i).to_string(), v.is_valid(i).then(|| v.value(i).to_string()))).collect(),
            )
        };
        let image = |name: &str, row: usize, types: &HashMap<String, String>| {
            let mut pairs = map_pairs(name, row)?;
            for (column, value) in &mut pairs {
                if let (Some(v), Some(t)) = (value.as_mut(), types.get(column)) {
                    by_member(t, v);
                }
            }
            pairs.sort();
            if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
                pairs.insert(0, (NAMED_TWICE.to_string(), None));
            }
            Some(pairs)
        };
        for row in 0..batch.num_rows() {
            let op = ops[row].as_deref().unwrap_or("");
            if !matches!(op, "INSERT" | "UPDATE" | "DELETE") || stand_in.value(row) || claim[row].is_some() {
                continue;
            }
            let types: HashMap<String, String> =
                map_pairs("_types", row).unwrap_or_default().into_iter().filter_map(|(k, t)| Some((k, t?))).collect();
            let before = image("_before", row, &types);
            rows.push(format!(
                "{} ts={:?} {:?}.{:?} after={:?} before={before:?}",
                same_op(op, before.is_some()),
                ts[row],
                schemas[row],
                tables[row],
                image("_after", row, &types),
            ));
        }
    }
    rows
}

fn encode_options() -> EncodeOptions {
    // The TiDB extension carries Canal-JSON's commit ts; a fixed buildTs keeps Simple repeatable.
    EncodeOptions { enable_tidb_extension: true, build_ts: Some(1), ..Default::default() }
}

/// Each decoded batch encoded with `protocol` in the decoder's server time zone; None if the
/// encoder refused one (it may refuse a value its protocol cannot carry, but not panic).
fn encode(protocol: Protocol, decoded: &[RecordBatch], timezone: &str) -> Option<Vec<RecordBatch>> {
    let mut encoder = BatchEncoder::new(protocol, EncodeOptions { timezone: timezone.to_string(), ..encode_options() })
        .expect("default options");
    decoded.iter().map(|b| encoder.encode(b).ok()).collect()
}

/// The ERROR rows of a decoding of our own encoder's output.
fn errors(out: &[RecordBatch]) -> Vec<String> {
    out.iter()
        .flat_map(|b| strings(b, "_op").into_iter().zip(strings(b, "_error")))
        .filter(|(op, _)| op.as_deref() == Some("ERROR"))
        .map(|(_, e)| e.unwrap_or_default())
        .collect()
}

/// The first table a row event of `out` names (both names non-empty).
fn first_table(out: &[RecordBatch]) -> Option<TableName> {
    out.iter().find_map(|b| {
        let (ops, schemas, tables) = (strings(b, "_op"), strings(b, "_schema"), strings(b, "_table"));
        (0..b.num_rows()).find_map(|i| {
            let row = matches!(ops[i].as_deref(), Some("INSERT" | "UPDATE" | "DELETE"));
            match (row, &schemas[i], &tables[i]) {
                // Empty names are taken as none (see `envelope_rows`): no typed layout for them.
                (true, Some(schema), Some(table)) if !schema.is_empty() && !table.is_empty() => {
                    Some(TableName { schema: schema.clone(), table: table.clone() })
                }
                _ => None,
            }
        })
    })
}

/// The fuzz check of one protocol's decoder (see the module's documentation). Input: one byte
/// choosing the compression, the server time zone and view columns in the typed layout, then the
/// messages (see [`messages`]). One combination per input, so that an execution stays cheap.
pub fn decode(protocol: Protocol, data: &[u8]) {
    let Some((&choice, rest)) = data.split_first() else { return };
    let compression = [Compression::None, Compression::Snappy, Compression::Lz4][(choice % 3) as usize];
    let timezone = if choice / 3 % 2 == 1 { "Asia/Shanghai" } else { "UTC" }.to_string();
    let views = choice / 6 % 2 == 1;
    let (keys, values) = messages(rest);
    let input = input_batch(&keys, &values);

    let base = DecodeOptions {
        protocol: Some(protocol),
        compression,
        timezone,
        on_error: OnError::Collect,
        ..Default::default()
    };
    let envelope = decode_collect(base.clone(), std::slice::from_ref(&input));
    check_contract(&envelope, &keys, &values, "envelope");

    // Encoded again (uncompressed) and decoded again: the same row events.
    let again_options = DecodeOptions { compression: Compression::None, ..base.clone() };
    // (Skipped when there is nothing to compare, as for most mutated inputs: it halves their cost.)
    // A row image naming a column twice (Craft and Open read one; TiCDC writes none) is left out
    // too: the encoder takes each column's type from `_types` by name.
    let rows = envelope_rows(&envelope);
    let twice = rows.iter().any(|row| row.contains(NAMED_TWICE));
    let encoded = if rows.is_empty() || twice { None } else { encode(protocol, &envelope, &base.timezone) };
    if let Some(encoded) = encoded {
        let again = decode_collect(again_options.clone(), &encoded);
        assert_eq!(errors(&again), Vec::<String>::new(), "envelope re-encoded: our own messages fail");
        assert_eq!(envelope_rows(&again), rows, "envelope re-encoded");
    }

    // The typed layout of the first table a row names, with the schema inferred from the input.
    let Some(table) = first_table(&envelope) else { return };
    let Ok(schema) =
        infer_schema(std::slice::from_ref(&input), Some(protocol), &table, compression, "value", "key", &[])
    else {
        return;
    };
    let schema = if views { with_views(&schema) } else { schema };
    // The encoder reads a typed batch's columns by name, and those named with a leading `_` as
    // the layout's own (`_op`, `_before`, `_partition`, ...): a table column so named (the typed
    // layout's known limit), or a name a mutated table schema gives twice, does not come back.
    let mut names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    names.sort();
    let own_names = names.iter().any(|n| n.starts_with('_')) || names.windows(2).any(|w| w[0] == w[1]);
    let layout = LayoutOptions::Typed { table, schema: Arc::new(schema) };
    let typed = decode_collect(DecodeOptions { layout: layout.clone(), ..base }, std::slice::from_ref(&input));
    check_contract(&typed, &keys, &values, "typed");
    let rows = typed_rows(&typed);
    if rows.num_rows() == 0 || own_names {
        return;
    }
    if let Some(encoded) = encode(protocol, &typed, &again_options.timezone) {
        let again = decode_collect(DecodeOptions { layout, ..again_options }, &encoded);
        assert_eq!(errors(&again), Vec::<String>::new(), "typed re-encoded: our own messages fail");
        assert_eq!(typed_rows(&again), rows, "typed re-encoded");
    }
}

/// The schema with its text and binary columns as views (Utf8View, BinaryView).
fn with_views(schema: &Schema) -> Schema {
    let fields = schema.fields().iter().map(|f| match f.data_type() {
        DataType::Utf8 => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8View)),
        DataType::Binary => Arc::new(f.as_ref().clone().with_data_type(DataType::BinaryView)),
        _ => f.clone(),
    });
    Schema::new_with_metadata(fields.collect::<Vec<_>>(), schema.metadata().clone())
}

/// Row events of typed batches as one batch: `_op`, `_commit_ts` and the table's columns (with
/// `_before`), compared as arrays (Arrow's logical equality), not as rendered text.
fn typed_rows(out: &[RecordBatch]) -> RecordBatch {
    let mut parts = Vec::new();
    for batch in out {
        let ops = strings(batch, "_op");
        let stand_in = batch.column_by_name("_handle_key_only").expect("_handle_key_only").as_boolean();
        let claim = strings(batch, "_claim_check");
        let schema = batch.schema();
        let first = schema.index_of("_message").expect("_message") + 1;
        let first = first + usize::from(schema.column_with_name("_error").is_some()) * 3;
        let mut columns =
            vec![schema.index_of("_op").expect("_op"), schema.index_of("_commit_ts").expect("_commit_ts")];
        columns.extend(first..schema.fields().len());
        let keep: BooleanArray = (0..batch.num_rows())
            .map(|row| {
                let op = ops[row].as_deref().unwrap_or("");
                Some(matches!(op, "INSERT" | "UPDATE" | "DELETE") && !stand_in.value(row) && claim[row].is_none())
            })
            .collect();
        let before = batch.column_by_name("_before").expect("_before");
        let ops: StringArray =
            ops.iter().enumerate().map(|(row, op)| op.as_deref().map(|op| same_op(op, before.is_valid(row)))).collect();
        let projected = batch.project(&columns).expect("projection");
        let mut arrays = projected.columns().to_vec();
        arrays[0] = Arc::new(ops);
        let projected = RecordBatch::try_new(projected.schema(), arrays).expect("same types");
        parts.push(filter_record_batch(&projected, &keep).expect("filter"));
    }
    let schema = parts.first().expect("at least one batch").schema();
    concat_batches(&schema, &parts).expect("batches of one layout")
}

// ---------------------------------------------------------------------------------------------
// Differential: arbitrary rows through our encoders and back

/// The column types the differential check draws from: MySQL type text, Arrow type (per the
/// contract's mapping) and the range of the values it makes (MySQL's own ranges).
#[derive(Debug, Clone, Copy)]
enum Kind {
    BigInt,
    Int,
    SmallInt,
    TinyInt,
    IntUnsigned,
    BigIntUnsigned,
    Double,
    Float,
    Decimal(u8, i8),
    VarChar,
    Text,
    VarBinary,
    Blob,
    Date,
    DateTime,
    Timestamp,
    Time,
}

impl Kind {
    fn arbitrary(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<Kind> {
        Ok(match u.int_in_range(0..=16u8)? {
            0 => Kind::BigInt,
            1 => Kind::Int,
            2 => Kind::SmallInt,
            3 => Kind::TinyInt,
            4 => Kind::IntUnsigned,
            5 => Kind::BigIntUnsigned,
            6 => Kind::Double,
            7 => Kind::Float,
            8 => {
                let precision = u.int_in_range(1..=38u8)?;
                Kind::Decimal(precision, u.int_in_range(0..=precision.min(30))? as i8)
            }
            9 => Kind::VarChar,
            10 => Kind::Text,
            11 => Kind::VarBinary,
            12 => Kind::Blob,
            13 => Kind::Date,
            14 => Kind::DateTime,
            15 => Kind::Timestamp,
            _ => Kind::Time,
        })
    }

    fn mysql_type(self) -> String {
        match self {
            Kind::BigInt => "bigint".into(),
            Kind::Int => "int".into(),
            Kind::SmallInt => "smallint".into(),
            Kind::TinyInt => "tinyint".into(),
            Kind::IntUnsigned => "int unsigned".into(),
            Kind::BigIntUnsigned => "bigint unsigned".into(),
            Kind::Double => "double".into(),
            Kind::Float => "float".into(),
            Kind::Decimal(p, s) => format!("decimal({p},{s})"),
            Kind::VarChar => "varchar(255)".into(),
            Kind::Text => "text".into(),
            Kind::VarBinary => "varbinary(255)".into(),
            Kind::Blob => "blob".into(),
            Kind::Date => "date".into(),
            Kind::DateTime => "datetime(6)".into(),
            Kind::Timestamp => "timestamp(6)".into(),
            Kind::Time => "time(6)".into(),
        }
    }

    /// One value: an integer (or decimal's unscaled, or micros, or days), a float, text or bytes.
    fn value(self, u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<Val> {
        const DAY: i64 = 86_400_000_000;
        Ok(match self {
            Kind::BigInt => Val::I(u.arbitrary::<i64>()? as i128),
            Kind::Int => Val::I(u.arbitrary::<i32>()? as i128),
            Kind::SmallInt => Val::I(u.arbitrary::<i16>()? as i128),
            Kind::TinyInt => Val::I(u.arbitrary::<i8>()? as i128),
            Kind::IntUnsigned => Val::I(u.arbitrary::<u32>()? as i128),
            Kind::BigIntUnsigned => Val::I(u.arbitrary::<u64>()? as i128),
            Kind::Double => Val::F(finite(u.arbitrary::<f64>()?)),
            Kind::Float => Val::F(finite(u.arbitrary::<f32>()? as f64) as f32 as f64),
            Kind::Decimal(p, _) => {
                let max = 10i128.pow(p as u32) - 1;
                Val::I(u.int_in_range(-max..=max)?)
            }
            Kind::VarChar | Kind::Text => Val::S(u.arbitrary()?),
            Kind::VarBinary | Kind::Blob => Val::B(u.arbitrary()?),
            // 1000-01-01 ..= 9999-12-31
            Kind::Date => Val::I(u.int_in_range(-354_285..=2_932_896i128)?),
            Kind::DateTime => Val::I(u.int_in_range(-354_285 * DAY as i128..=(2_932_897 * DAY as i128 - 1))?),
            // '1970-01-01 00:00:01' ..= '2038-01-19 03:14:07.999999' UTC
            Kind::Timestamp => Val::I(u.int_in_range(1_000_000..=2_147_483_647_999_999i128)?),
            Kind::Time => {
                let max = (838 * 3600 + 59 * 60 + 59) * 1_000_000i128;
                Val::I(u.int_in_range(-max..=max)?)
            }
        })
    }

    fn array(self, values: Vec<Option<Val>>) -> ArrayRef {
        use arrow_array::*;
        let int = |v: &Option<Val>| match v {
            Some(Val::I(i)) => Some(*i),
            _ => None,
        };
        let ints = values.iter().map(int);
        let float = values.iter().map(|v| match v {
            Some(Val::F(f)) => Some(*f),
            _ => None,
        });
        let text = values.iter().map(|v| match v {
            Some(Val::S(s)) => Some(s.as_str()),
            _ => None,
        });
        let bytes = values.iter().map(|v| match v {
            Some(Val::B(b)) => Some(b.as_slice()),
            _ => None,
        });
        match self {
            Kind::BigInt | Kind::IntUnsigned => Arc::new(ints.map(|v| v.map(|i| i as i64)).collect::<Int64Array>()),
            Kind::Int => Arc::new(ints.map(|v| v.map(|i| i as i32)).collect::<Int32Array>()),
            Kind::SmallInt => Arc::new(ints.map(|v| v.map(|i| i as i16)).collect::<Int16Array>()),
            Kind::TinyInt => Arc::new(ints.map(|v| v.map(|i| i as i8)).collect::<Int8Array>()),
            Kind::BigIntUnsigned => {
                Arc::new(ints.collect::<Decimal128Array>().with_precision_and_scale(20, 0).expect("decimal"))
            }
            Kind::Decimal(p, s) => {
                Arc::new(ints.collect::<Decimal128Array>().with_precision_and_scale(p, s).expect("decimal"))
            }
            Kind::Double => Arc::new(float.collect::<Float64Array>()),
            Kind::Float => Arc::new(float.map(|v| v.map(|f| f as f32)).collect::<Float32Array>()),
            Kind::VarChar | Kind::Text => Arc::new(text.collect::<StringArray>()),
            Kind::VarBinary | Kind::Blob => Arc::new(bytes.collect::<BinaryArray>()),
            Kind::Date => Arc::new(ints.map(|v| v.map(|i| i as i32)).collect::<Date32Array>()),
            Kind::DateTime => Arc::new(ints.map(|v| v.map(|i| i as i64)).collect::<TimestampMicrosecondArray>()),
            Kind::Timestamp => {
                Arc::new(ints.map(|v| v.map(|i| i as i64)).collect::<TimestampMicrosecondArray>().with_timezone("UTC"))
            }
            Kind::Time => Arc::new(ints.map(|v| v.map(|i| i as i64)).collect::<DurationMicrosecondArray>()),
        }
    }
}

fn finite(f: f64) -> f64 {
    if f.is_finite() {
        f
    } else {
        0.0
    }
}

#[derive(Debug, Clone)]
enum Val {
    I(i128),
    F(f64),
    S(String),
    B(Vec<u8>),
}

fn short_name(u: &mut arbitrary::Unstructured<'_>, prefix: &str) -> arbitrary::Result<String> {
    let tail: String = u.arbitrary::<String>()?.chars().take(6).collect();
    Ok(format!("{prefix}{tail}"))
}

/// A TIMESTAMP as a message can carry it in `timezone`: messages write its wall-clock time, and of
/// the two instants of an hour the clocks repeat, that time reads back as the later (as Go's
/// `time.Date` reads it), so only the later can make the round trip.
fn wire_instant(micros: i128, timezone: &str) -> i128 {
    use chrono::TimeZone;
    let (Ok(tz), Some(at)) =
        (timezone.parse::<chrono_tz::Tz>(), chrono::DateTime::from_timestamp_micros(micros as i64))
    else {
        return micros;
    };
    match tz.from_local_datetime(&at.with_timezone(&tz).naive_local()) {
        chrono::LocalResult::Ambiguous(_, later) => later.timestamp_micros() as i128,
        _ => micros,
    }
}

/// The differential check of one protocol: a table of arbitrary columns and rows, in the typed
/// layout, encoded with `protocol`'s encoder and decoded again into the same typed layout, must
/// come back as the same rows, with no message of ours failing to decode.
pub fn differential(protocol: Protocol, data: &[u8]) {
    let _ = differential_inner(protocol, data);
}

fn differential_inner(protocol: Protocol, data: &[u8]) -> arbitrary::Result<()> {
    use arrow_array::{Int64Array, StructArray};
    use arrow_buffer::NullBuffer;

    let mut u = arbitrary::Unstructured::new(data);
    let timezone = if u.arbitrary()? { "Asia/Shanghai" } else { "UTC" }.to_string();
    let table = TableName { schema: short_name(&mut u, "d")?, table: short_name(&mut u, "t")? };
    // The primary key `id bigint` first, then up to 8 more columns of any kind.
    let mut kinds = vec![(String::from("id"), Kind::BigInt)];
    for i in 0..u.int_in_range(0..=8u8)? {
        kinds.push((short_name(&mut u, &format!("c{i}_"))?, Kind::arbitrary(&mut u)?));
    }
    let fields: Vec<Field> = kinds
        .iter()
        .map(|(name, kind)| {
            let metadata = [("mysql_type".to_string(), kind.mysql_type())].into();
            let data_type = kind.array(Vec::new()).data_type().clone();
            Field::new(name, data_type, true).with_metadata(metadata)
        })
        .collect();
    let schema =
        Arc::new(Schema::new(fields).with_metadata([("primary_key".to_string(), "[\"id\"]".to_string())].into()));
    let options = DecodeOptions {
        protocol: Some(protocol),
        layout: LayoutOptions::Typed { table: table.clone(), schema },
        on_error: OnError::Collect,
        timezone: timezone.clone(),
        ..Default::default()
    };
    let mut decoder = BatchDecoder::new(options).expect("valid typed schema");
    let output = decoder.schema();

    // Rows: an op, a commit ts, the row and (UPDATE) the old row.
    let n = u.int_in_range(1..=8usize)?;
    let (mut ops, mut ts) = (Vec::new(), Vec::new());
    let mut row: Vec<Vec<Option<Val>>> = vec![Vec::new(); kinds.len()];
    let mut old: Vec<Vec<Option<Val>>> = vec![Vec::new(); kinds.len()];
    let mut old_valid = Vec::new();
    for _ in 0..n {
        let op = *u.choose(&["INSERT", "UPDATE", "DELETE"])?;
        ops.push(op);
        ts.push(u.int_in_range(0..=i64::MAX)?);
        for (c, (_, kind)) in kinds.iter().enumerate() {
            let key = c == 0;
            let value = |u: &mut arbitrary::Unstructured<'_>| -> arbitrary::Result<Option<Val>> {
                Ok(if key || u.ratio(7u8, 8)? {
                    Some(match kind.value(u)? {
                        Val::I(micros) if matches!(kind, Kind::Timestamp) => Val::I(wire_instant(micros, &timezone)),
                        value => value,
                    })
                } else {
                    None
                })
            };
            row[c].push(value(&mut u)?);
            old[c].push(if op == "UPDATE" { value(&mut u)? } else { None });
        }
        old_valid.push(op == "UPDATE");
    }

    let nulls = |n: usize| -> ArrayRef { arrow_array::new_null_array(&DataType::Int64, n) };
    let mut columns: Vec<ArrayRef> = Vec::new();
    for field in output.fields() {
        let array: ArrayRef = match field.name().as_str() {
            "_op" => Arc::new(StringArray::from(ops.clone())),
            "_commit_ts" => Arc::new(Int64Array::from(ts.clone())),
            "_schema" => Arc::new(StringArray::from(vec![table.schema.as_str(); n])),
            "_table" => Arc::new(StringArray::from(vec![table.table.as_str(); n])),
            "_table_schema" | "_ddl" | "_ddl_type" | "_claim_check" | "_error" => {
                arrow_array::new_null_array(field.data_type(), n)
            }
            "_table_id" | "_partition_id" | "_schema_version" | "_start_ts" => nulls(n),
            "_row_key" => arrow_array::new_null_array(field.data_type(), n),
            "_handle_key_only" => Arc::new(BooleanArray::from(vec![false; n])),
            "_message" => Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>())),
            "_raw_key" | "_raw_value" => arrow_array::new_null_array(field.data_type(), n),
            "_before" => {
                let DataType::Struct(children) = field.data_type() else { panic!("_before is a struct") };
                let arrays = kinds.iter().zip(&old).map(|((_, kind), values)| kind.array(values.clone())).collect();
                Arc::new(
                    StructArray::try_new(children.clone(), arrays, Some(NullBuffer::from(old_valid.clone())))
                        .expect("_before"),
                )
            }
            name => {
                let c = kinds.iter().position(|(n, _)| n == name).expect("a table column");
                kinds[c].1.array(row[c].clone())
            }
        };
        assert_eq!(array.data_type(), field.data_type(), "column {}", field.name());
        columns.push(array);
    }
    let input = RecordBatch::try_new(output.clone(), columns).expect("typed batch");

    let options = EncodeOptions { timezone, ..encode_options() };
    let mut encoder = BatchEncoder::new(protocol, options).expect("encode options");
    let encoded = encoder.encode(&input).unwrap_or_else(|e| panic!("{protocol:?} refused rows in range: {e}"));
    let mut decoded = vec![decoder.decode(&encoded).expect("collect reports bad messages as rows")];
    if holds(Some(protocol)) {
        decoded.push(decoder.flush().expect("collect reports held messages as rows"));
    }
    assert_eq!(errors(&decoded), Vec::<String>::new(), "{protocol:?}: our own messages fail");
    assert_eq!(typed_rows(&decoded), typed_rows(&[input]), "{protocol:?}: rows changed in a round trip");
    Ok(())
}
