//! Rows read straight into the typed layout's columns (`Codec::decode_rows`) against the same
//! messages read through the event model, for the protocols other than Simple (whose own test is
//! in `tests/simple.rs`).
//!
//! Random INSERT/UPDATE/DELETE rows of `shop.orders` are encoded, then decoded typed twice: as
//! encoded, which the direct path reads, and in a form the direct path leaves to the general one:
//! Craft and Open with one row of another table added to each message (filtered out), Canal-JSON
//! with its members in name order, which puts `data` before `type`. Both must
//! give the same batches (but for the error text and raw key and value of a failed message, whose bytes
//! differ) and the same error count. `qty` is declared int8 so that many rows do
//! not fit and fail whole; `extra` is not declared (dropped) and `missing` is not on the wire.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::{BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use proptest::prelude::*;
use ticdc_rs::codec::EncodeOptions;
use ticdc_rs::event::{flag, Column, ColumnType, Event, EventKind, MessageEvents, Value};
use ticdc_rs::schema::mysql::MySqlType;
use ticdc_rs::{BatchDecoder, DecodeOptions, LayoutOptions, OnError, Protocol, TableName};

/// The wire columns: name, type, flags.
const COLUMNS: [(&str, MySqlType, u64); 12] = [
    ("id", MySqlType::BigInt, flag::BINARY | flag::HANDLE_KEY | flag::PRIMARY_KEY),
    ("qty", MySqlType::Int, flag::BINARY | flag::NULLABLE),
    ("price", MySqlType::Decimal, flag::BINARY | flag::NULLABLE),
    ("name", MySqlType::VarChar, flag::NULLABLE),
    ("blob", MySqlType::VarChar, flag::BINARY | flag::NULLABLE),
    ("at", MySqlType::DateTime, flag::BINARY | flag::NULLABLE),
    ("day", MySqlType::Date, flag::BINARY | flag::NULLABLE),
    ("note", MySqlType::Text, flag::NULLABLE),
    ("doc", MySqlType::Text, flag::BINARY | flag::NULLABLE),
    ("small", MySqlType::Float, flag::BINARY | flag::NULLABLE),
    ("ratio", MySqlType::Double, flag::BINARY | flag::NULLABLE),
    ("extra", MySqlType::BigInt, flag::BINARY | flag::NULLABLE),
];

fn schema(views: bool) -> Arc<Schema> {
    let (text, bytes) =
        if views { (DataType::Utf8View, DataType::BinaryView) } else { (DataType::Utf8, DataType::Binary) };
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("qty", DataType::Int8, true),
        Field::new("price", DataType::Decimal128(10, 2), true),
        Field::new("name", text.clone(), true),
        Field::new("blob", bytes.clone(), true),
        Field::new("at", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new("day", DataType::Date32, true),
        Field::new("note", text, true),
        Field::new("doc", bytes, true),
        Field::new("small", DataType::Float32, true),
        Field::new("ratio", DataType::Float64, true),
        Field::new("missing", DataType::Int32, true),
    ]))
}

/// The values of one row, in the forms a codec reads them.
fn arb_row() -> impl Strategy<Value = Vec<Value<'static>>> {
    let or_null = |s: BoxedStrategy<Value<'static>>| prop_oneof![1 => Just(Value::Null), 5 => s].boxed();
    (
        any::<i64>(),
        or_null(
            prop_oneof![(-128i64..128).prop_map(Value::Int), any::<i32>().prop_map(|v| Value::Int(v as i64))].boxed(),
        ),
        or_null(
            (-99_999_999i64..99_999_999).prop_map(|c| Value::Text(format!("{:.2}", c as f64 / 100.0).into())).boxed(),
        ),
        or_null(".{0,20}".prop_map(|s| Value::Text(s.into())).boxed()),
        or_null(prop::collection::vec(any::<u8>(), 0..20).prop_map(|b| Value::Bytes(b.into())).boxed()),
        or_null(
            (1970u32..2100, 1u32..13, 1u32..29, 0u32..86400, 0u32..1_000_000)
                .prop_map(|(y, m, d, s, us)| {
                    let t = format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{us:06}", s / 3600, s / 60 % 60, s % 60);
                    Value::Text(t.into())
                })
                .boxed(),
        ),
        or_null(
            prop_oneof![
                5 => (1000u32..9999, 1u32..13, 1u32..29).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
                1 => Just("0000-00-00".to_string()),
            ]
            .prop_map(|t| Value::Text(t.into()))
            .boxed(),
        ),
        or_null(".{0,30}".prop_map(|s| Value::Text(s.into())).boxed()),
        or_null(prop::collection::vec(any::<u8>(), 0..30).prop_map(|b| Value::Bytes(b.into())).boxed()),
        or_null(any::<f32>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::Float32).boxed()),
        or_null(any::<f64>().prop_filter("no NaN", |f| !f.is_nan()).prop_map(Value::Float64).boxed()),
        or_null(any::<i64>().prop_map(Value::Int).boxed()),
    )
        .prop_map(|(id, qty, price, name, blob, at, day, note, doc, small, ratio, extra)| {
            vec![Value::Int(id), qty, price, name, blob, at, day, note, doc, small, ratio, extra]
        })
}

/// A row change: its kind (3: an UPDATE whose old image leaves out the last column; 4: an
/// INSERT without the last two, which makes Craft's message describe its rows unalike), its
/// values and its old values.
fn arb_change() -> impl Strategy<Value = (usize, Vec<Value<'static>>, Vec<Value<'static>>)> {
    let kind = prop_oneof![3 => Just(0usize), 3 => Just(1), 2 => Just(2), 1 => Just(3), 1 => Just(4)];
    (kind, arb_row(), arb_row())
}

fn image(out: &mut MessageEvents<'static>, values: &[Value<'static>], columns: usize) -> std::ops::Range<usize> {
    let from = out.columns.len();
    for ((name, base, flags), value) in COLUMNS.iter().zip(values).take(columns) {
        let ty = ColumnType {
            base: *base,
            unsigned: false,
            binary: flags & flag::BINARY != 0 && base.is_string(),
            text: None,
            flags: Some(*flags),
        };
        out.columns.push(Column { name: Cow::Borrowed(name), ty, value: value.clone(), at: 0 });
    }
    from..out.columns.len()
}

/// The changes as events, with a row of `shop.other` after every `batch` of them when `other`.
fn events(
    changes: &[(usize, Vec<Value<'static>>, Vec<Value<'static>>)],
    batch: usize,
    other: bool,
) -> MessageEvents<'static> {
    let mut out = MessageEvents::default();
    out.keys.push(Cow::Borrowed("id"));
    for (i, (kind, after, before)) in changes.iter().enumerate() {
        let kind_of =
            [EventKind::Insert, EventKind::Update, EventKind::Delete, EventKind::Update, EventKind::Insert][*kind];
        let mut e = Event::new(kind_of, 1000 + i as u64);
        e.schema = Some(Cow::Borrowed("shop"));
        e.table = Some(Cow::Borrowed("orders"));
        e.keys = 0..1;
        match *kind {
            0 => e.after = Some(image(&mut out, after, COLUMNS.len())),
            1 => {
                e.after = Some(image(&mut out, after, COLUMNS.len()));
                e.before = Some(image(&mut out, before, COLUMNS.len()));
            }
            2 => e.before = Some(image(&mut out, before, COLUMNS.len())),
            3 => {
                e.after = Some(image(&mut out, after, COLUMNS.len()));
                e.before = Some(image(&mut out, before, COLUMNS.len() - 1));
            }
            _ => e.after = Some(image(&mut out, after, COLUMNS.len() - 2)),
        }
        out.events.push(e);
        if other && ((i + 1) % batch == 0 || i + 1 == changes.len()) {
            let mut e = Event::new(EventKind::Insert, 1000 + i as u64);
            e.schema = Some(Cow::Borrowed("shop"));
            e.table = Some(Cow::Borrowed("other"));
            e.keys = 0..1;
            e.after = Some(image(&mut out, after, 1));
            out.events.push(e);
        }
    }
    out
}

/// The records' (key, value) pairs.
fn encode(protocol: Protocol, events: &MessageEvents<'_>, batch: usize) -> Vec<(Option<Vec<u8>>, Vec<u8>)> {
    let options = EncodeOptions {
        max_batch_size: batch,
        output_old_value: true,
        enable_tidb_extension: true,
        ..Default::default()
    };
    let mut encoder = protocol.encoder(&options).unwrap();
    let mut records = Vec::new();
    for e in &events.events {
        encoder.encode(events, e, &mut records).unwrap();
    }
    encoder.flush(&mut records).unwrap();
    records.into_iter().map(|r| (r.key, r.value)).collect()
}

/// A Canal-JSON message with its members in name order, which puts `data` before `database`,
/// `table` and `type`.
fn data_first(value: &[u8]) -> Vec<u8> {
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(value).unwrap();
    let sorted: std::collections::BTreeMap<_, _> = object.into_iter().collect();
    let moved = serde_json::to_vec(&sorted).unwrap();
    let find = |key: &[u8]| moved.windows(key.len()).position(|w| w == key).unwrap();
    assert!(find(br#""data":"#) < find(br#""type":"#));
    moved
}

fn input(records: &[(Option<Vec<u8>>, Vec<u8>)]) -> RecordBatch {
    let schema =
        Schema::new(vec![Field::new("key", DataType::Binary, true), Field::new("value", DataType::Binary, true)]);
    let keys = BinaryArray::from_iter(records.iter().map(|(k, _)| k.as_deref()));
    let values = BinaryArray::from_iter_values(records.iter().map(|(_, v)| v));
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), Arc::new(values)]).unwrap()
}

fn decoder(protocol: Protocol, views: bool) -> BatchDecoder {
    let layout = LayoutOptions::Typed { table: TableName::parse("shop.orders").unwrap(), schema: schema(views) };
    BatchDecoder::new(DecodeOptions {
        protocol: Some(protocol),
        layout,
        on_error: OnError::Collect,
        ..Default::default()
    })
    .unwrap()
}

/// The batch without its error text and raw key and value, which name offsets and bytes of the
/// message.
fn comparable(batch: RecordBatch) -> RecordBatch {
    let keep: Vec<usize> = (0..batch.num_columns())
        .filter(|&i| !matches!(batch.schema().field(i).name().as_str(), "_error" | "_raw_key" | "_raw_value"))
        .collect();
    batch.project(&keep).unwrap()
}

fn errors(decoder: &BatchDecoder) -> u64 {
    decoder.stats().into_iter().find(|(name, _)| *name == "errors").map_or(0, |(_, n)| n)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn rows_read_straight_into_columns_match_the_event_model(
        changes in prop::collection::vec(arb_change(), 1..40),
        batch in 1usize..20,
        split in 0usize..40,
        views in any::<bool>(),
    ) {
        for protocol in [Protocol::Craft, Protocol::Open, Protocol::CanalJson] {
            // Canal-JSON's straight stream has the other table's rows too (its general one has the
            // same messages, their members reordered): each one's other `mysqlType` is a new shape.
            let straight = encode(protocol, &events(&changes, batch, protocol == Protocol::CanalJson), batch);
            let general = match protocol {
                Protocol::CanalJson => straight.iter().map(|(key, value)| (key.clone(), data_first(value))).collect(),
                _ => encode(protocol, &events(&changes, batch, true), batch + 1),
            };
            prop_assert_eq!(straight.len(), general.len());
            let split = split.min(straight.len());
            let (mut a, mut b) = (decoder(protocol, views), decoder(protocol, views));
            for range in [0..split, split..straight.len()] {
                let got = comparable(a.decode(&input(&straight[range.clone()])).unwrap());
                let want = comparable(b.decode(&input(&general[range])).unwrap());
                prop_assert_eq!(got, want, "{:?}", protocol);
            }
            prop_assert_eq!(errors(&a), errors(&b));
        }
    }
}
