//! Craft throughput on the shared synthetic stream (`common::changes`: `bench.orders`, a dozen
//! mixed-type columns, 60/30/10 INSERT/UPDATE/DELETE), batched as TiCDC does (16 rows a message):
//!
//! * `craft/codec`: the codec alone, messages into `MessageEvents` (no Arrow);
//! * `craft/envelope`, `craft/typed`: through `BatchDecoder` into the two layouts;
//! * `craft/typed_views`: the typed layout with `utf8_view`/`binary_view` columns, whose values
//!   point into the input (no copy);
//! * `craft/specialised`: the same typed columns from a decoder written for this one table (the
//!   work any decoder must do; see [`specialised`]);
//! * `craft/encode`: the decoded events back into messages;
//! * `copy_floor`: the same bytes copied once (the memory-bandwidth floor).
//!
//! Every figure is in bytes of Craft messages per second.
//!
//!     cargo bench --bench craft

mod common;

use std::borrow::Cow;
use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ticdc_rs::arrow::{BatchDecoder, DecodeOptions, LayoutOptions};
use ticdc_rs::codec::{CodecOptions, EncodeOptions, Record};
use ticdc_rs::event::{Column, ColumnType, Event, EventKind, MessageEvents, Value};
use ticdc_rs::schema::mysql::TypeDescription;
use ticdc_rs::Protocol;

const CHANGES: usize = 10_000;
const SEED: u64 = 42;

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, bytes: u64) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Bytes(bytes));
}

/// The changes as events the way the Arrow reader hands them to an encoder: MySQL text values,
/// bytes for the binary column, types from the type names, `id` as the key.
fn events(changes: &[common::Change]) -> MessageEvents<'static> {
    let types: Vec<ColumnType<'static>> = common::COLUMNS
        .iter()
        .map(|c| {
            let d = TypeDescription::parse(c.mysql_type);
            ColumnType { base: d.base, unsigned: d.unsigned, binary: d.binary, text: None, flags: None }
        })
        .collect();
    let mut out = MessageEvents { keys: vec![Cow::Borrowed("id")], ..Default::default() };
    let image = |columns: &mut Vec<Column<'static>>, row: &[common::Value]| {
        let from = columns.len();
        for ((def, ty), v) in common::COLUMNS.iter().zip(&types).zip(row) {
            let value = match v {
                common::Value::Null => Value::Null,
                common::Value::Text(t) => Value::Text(Cow::Owned(t.clone())),
                common::Value::Bytes(b) => Value::Bytes(Cow::Owned(b.clone())),
            };
            columns.push(Column { name: Cow::Borrowed(def.name), ty: ty.clone(), value, at: 0 });
        }
        Some(from..columns.len())
    };
    for c in changes {
        let kind = match c.op {
            common::Op::Insert => EventKind::Insert,
            common::Op::Update => EventKind::Update,
            common::Op::Delete => EventKind::Delete,
        };
        let mut e = Event::new(kind, c.commit_ts);
        e.schema = Some(Cow::Borrowed(common::SCHEMA));
        e.table = Some(Cow::Borrowed(common::TABLE));
        e.keys = 0..1;
        match kind {
            EventKind::Delete => e.before = image(&mut out.columns, &c.row),
            _ => e.after = image(&mut out.columns, &c.row),
        }
        if let Some(old) = &c.old {
            e.before = image(&mut out.columns, old);
        }
        out.events.push(e);
    }
    out
}

fn encode(events: &MessageEvents<'_>) -> Vec<Record> {
    let mut encoder = Protocol::Craft.encoder(&EncodeOptions::default()).unwrap();
    let mut records = Vec::new();
    for e in &events.events {
        encoder.encode(events, e, &mut records).unwrap();
    }
    encoder.flush(&mut records).unwrap();
    records
}

fn craft(c: &mut Criterion) {
    let changes = common::changes(CHANGES, SEED);
    let messages: Vec<Vec<u8>> = encode(&events(&changes)).into_iter().map(|r| r.value).collect();
    let bytes = common::total_bytes(&messages);
    let batch = common::value_batch(&messages);
    eprintln!(
        "craft: {CHANGES} events in {} messages, {bytes} bytes, {:.0} bytes/event",
        messages.len(),
        bytes as f64 / CHANGES as f64
    );

    // The codec alone.
    let mut codec = Protocol::Craft.codec(&CodecOptions::default()).unwrap();
    let mut group = c.benchmark_group("craft/codec");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| {
        let mut out = MessageEvents::default();
        b.iter(|| {
            let mut n = 0;
            for m in &messages {
                out.clear();
                codec.decode(None, black_box(m), &mut out).unwrap();
                n += out.events.len();
            }
            assert_eq!(n, CHANGES);
        })
    });
    group.finish();

    // Through the batch driver into each layout.
    let layouts = [
        ("envelope", LayoutOptions::Envelope),
        ("typed", common::typed_layout(common::typed_fields())),
        ("typed_views", common::typed_layout(common::typed_view_fields())),
    ];
    for (name, layout) in layouts {
        let mut dec =
            BatchDecoder::new(DecodeOptions { protocol: Some(Protocol::Craft), layout, ..Default::default() })
                .expect("decoder options");
        assert_eq!(dec.decode(&batch).expect("the generated messages decode").num_rows(), CHANGES);
        let mut group = c.benchmark_group(format!("craft/{name}"));
        configure(&mut group, bytes);
        group.bench_function("10k", |b| b.iter(|| black_box(dec.decode(black_box(&batch)).unwrap())));
        group.finish();
    }

    // The same typed columns from a decoder that knows the table (see `specialised`): first
    // checked against `craft/typed`'s, column by column.
    let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    let mut floor = specialised::Decoder::new(CHANGES);
    let (meta, columns, before) = floor.decode(&refs).expect("the generated messages fit the specialised decoder");
    let mut dec = BatchDecoder::new(DecodeOptions {
        protocol: Some(Protocol::Craft),
        layout: common::typed_layout(common::typed_fields()),
        ..Default::default()
    })
    .expect("decoder options");
    let typed_batch = dec.decode(&batch).expect("the generated messages decode");
    for (name, array) in ["_op", "_commit_ts", "_schema", "_table", "_message"].iter().zip(&meta) {
        assert_eq!(typed_batch.column_by_name(name).unwrap().as_ref(), array.as_ref(), "{name}");
    }
    for (field, array) in common::typed_fields().iter().zip(&columns) {
        assert_eq!(typed_batch.column_by_name(field.name()).unwrap().as_ref(), array.as_ref(), "{}", field.name());
    }
    assert_eq!(typed_batch.column_by_name("_before").unwrap().as_ref(), before.as_ref(), "_before");
    let mut group = c.benchmark_group("craft/specialised");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| b.iter(|| black_box(floor.decode(black_box(&refs)).unwrap())));
    group.finish();

    // Encoding the events a decoder produced (typed values, flags carried).
    let mut decoded = MessageEvents::default();
    for m in &messages {
        codec.decode(None, m, &mut decoded).unwrap();
    }
    assert_eq!(encode(&decoded).iter().map(|r| r.value.len() as u64).sum::<u64>(), bytes);
    let mut group = c.benchmark_group("craft/encode");
    configure(&mut group, bytes);
    group.bench_function("10k", |b| b.iter(|| black_box(encode(black_box(&decoded)))));
    group.finish();

    // The floor: the same bytes copied once into an allocated buffer.
    let mut group = c.benchmark_group("craft/copy_floor");
    configure(&mut group, bytes);
    common::bench_copy(&mut group, &messages.concat());
    group.finish();
}

criterion_group!(benches, craft);
criterion_main!(benches);

/// A Craft decoder written for `bench.orders` and nothing else: column positions and types
/// fixed, no event model, no name matching, no type dispatch beyond the position, no checks
/// beyond taking each slice. It is not a way to decode (it reads nothing it was not built for);
/// it bounds how fast any decoder can turn these messages into the same typed columns on the
/// machine at hand: the varints, the UTF-8 checks, the date and decimal parsing and the builder
/// appends every decoder must do. `craft/specialised` times it next to `craft/typed`, whose
/// columns it must reproduce exactly.
mod specialised {
    use std::ops::Range;
    use std::sync::Arc;

    use arrow_array::builder::*;
    use arrow_array::{ArrayRef, StructArray};
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Fields, TimeUnit};
    use ticdc_rs::codec::craft::Cursor;
    use ticdc_rs::schema::mysql;

    /// The builders of one row image, in the table's column order (which is the wire order).
    struct Image {
        id: Int32Builder,
        user_id: Decimal128Builder,
        name: StringBuilder,
        amount: Decimal128Builder,
        created_at: TimestampMicrosecondBuilder,
        updated_at: TimestampMicrosecondBuilder,
        birthday: Date32Builder,
        score: Float64Builder,
        status: Int8Builder,
        note: StringBuilder,
        payload: BinaryBuilder,
        attrs: StringBuilder,
    }

    impl Image {
        fn with_capacity(rows: usize) -> Image {
            Image {
                id: Int32Builder::with_capacity(rows),
                user_id: Decimal128Builder::with_capacity(rows).with_data_type(DataType::Decimal128(20, 0)),
                name: StringBuilder::with_capacity(rows, rows * 24),
                amount: Decimal128Builder::with_capacity(rows).with_data_type(DataType::Decimal128(12, 2)),
                created_at: TimestampMicrosecondBuilder::with_capacity(rows),
                updated_at: TimestampMicrosecondBuilder::with_capacity(rows)
                    .with_data_type(DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))),
                birthday: Date32Builder::with_capacity(rows),
                score: Float64Builder::with_capacity(rows),
                status: Int8Builder::with_capacity(rows),
                note: StringBuilder::with_capacity(rows, rows * 80),
                payload: BinaryBuilder::with_capacity(rows, rows * 24),
                attrs: StringBuilder::with_capacity(rows, rows * 80),
            }
        }

        fn append_nulls(&mut self, n: usize) {
            self.id.append_nulls(n);
            self.user_id.append_nulls(n);
            self.name.append_nulls(n);
            self.amount.append_nulls(n);
            self.created_at.append_nulls(n);
            self.updated_at.append_nulls(n);
            self.birthday.append_nulls(n);
            self.score.append_nulls(n);
            self.status.append_nulls(n);
            self.note.append_nulls(n);
            self.payload.append_nulls(n);
            self.attrs.append_nulls(n);
        }

        /// The value at wire position `position`: its bytes, or `None` for NULL.
        #[inline(always)]
        fn append(&mut self, position: usize, bytes: Option<&[u8]>) -> Option<()> {
            let Some(b) = bytes else {
                self.append_null(position);
                return Some(());
            };
            let varint = |b: &[u8]| Cursor::new(b).varint().ok();
            let text = |b| ticdc_rs::utf8::check(b).ok();
            let datetime = |b| mysql::parse_datetime_micros(b).flatten();
            match position {
                0 => self.id.append_value(i32::try_from(varint(b)?).ok()?),
                1 => self.user_id.append_value(Cursor::new(b).uvarint().ok()? as i128),
                2 => self.name.append_value(text(b)?),
                3 => self.amount.append_value(mysql::parse_decimal_i128(b, 2)?),
                4 => self.created_at.append_value(datetime(b)?),
                5 => self.updated_at.append_value(datetime(b)?),
                6 => {
                    let d = mysql::parse_date(b).flatten()?;
                    self.birthday.append_value(mysql::days_from_civil(d.year, d.month, d.day) as i32)
                }
                7 => self.score.append_value(f64::from_le_bytes(b.try_into().ok()?)),
                8 => self.status.append_value(i8::try_from(varint(b)?).ok()?),
                9 => self.note.append_value(text(b)?),
                10 => self.payload.append_value(b),
                11 => self.attrs.append_value(text(b)?),
                _ => return None,
            }
            Some(())
        }

        fn append_null(&mut self, position: usize) {
            match position {
                0 => self.id.append_null(),
                1 => self.user_id.append_null(),
                2 => self.name.append_null(),
                3 => self.amount.append_null(),
                4 => self.created_at.append_null(),
                5 => self.updated_at.append_null(),
                6 => self.birthday.append_null(),
                7 => self.score.append_null(),
                8 => self.status.append_null(),
                9 => self.note.append_null(),
                10 => self.payload.append_null(),
                _ => self.attrs.append_null(),
            }
        }

        fn finish(&mut self) -> Vec<ArrayRef> {
            vec![
                Arc::new(self.id.finish()),
                Arc::new(self.user_id.finish()),
                Arc::new(self.name.finish()),
                Arc::new(self.amount.finish()),
                Arc::new(self.created_at.finish()),
                Arc::new(self.updated_at.finish()),
                Arc::new(self.birthday.finish()),
                Arc::new(self.score.finish()),
                Arc::new(self.status.finish()),
                Arc::new(self.note.finish()),
                Arc::new(self.payload.finish()),
                Arc::new(self.attrs.finish()),
            ]
        }
    }

    /// The uvarint stored byte-reversed at the end of a message (Craft's trailer) and its length.
    fn trailer(data: &[u8]) -> Option<(usize, usize)> {
        let mut value = 0usize;
        for (i, &b) in data.iter().rev().take(5).enumerate() {
            value |= ((b & 0x7f) as usize) << (7 * i);
            if b < 0x80 {
                return Some((value, i + 1));
            }
        }
        None
    }

    pub struct Decoder {
        rows: usize,
        row: Image,
        before: Image,
        before_valid: Vec<bool>,
        op: StringBuilder,
        commit_ts: Int64Builder,
        schema: StringBuilder,
        table: StringBuilder,
        message: Int64Builder,
        sizes: Vec<i64>,
        tables: Vec<Range<usize>>,
        commit_tss: Vec<u64>,
        lengths: Vec<i64>,
    }

    impl Decoder {
        pub fn new(rows: usize) -> Decoder {
            Decoder {
                rows,
                row: Image::with_capacity(rows),
                before: Image::with_capacity(rows),
                before_valid: Vec::with_capacity(rows),
                op: StringBuilder::with_capacity(rows, rows * 6),
                commit_ts: Int64Builder::with_capacity(rows),
                schema: StringBuilder::with_capacity(rows, rows * 5),
                table: StringBuilder::with_capacity(rows, rows * 6),
                message: Int64Builder::with_capacity(rows),
                sizes: Vec::new(),
                tables: Vec::new(),
                commit_tss: Vec::new(),
                lengths: Vec::new(),
            }
        }

        /// Decodes the messages, returning the metadata columns that carry values (`_op`,
        /// `_commit_ts`, `_schema`, `_table`, `_message`), the table's columns and `_before`.
        pub fn decode(&mut self, messages: &[&[u8]]) -> Option<(Vec<ArrayRef>, Vec<ArrayRef>, ArrayRef)> {
            let mut before_nulls_due = 0;
            for (index, &message) in messages.iter().enumerate() {
                let mut cur = Cursor::new(message);
                cur.uvarint().ok()?;
                let start = cur.offset();
                let (len, trailer_len) = trailer(message)?;
                let tables_end = message.len().checked_sub(trailer_len)?;
                self.sizes.clear();
                self.tables.clear();
                let mut tables = Cursor::window(message, tables_end.checked_sub(len)?, tables_end, "").ok()?;
                while !tables.is_empty() {
                    let n = tables.count(1, "").ok()?;
                    let from = self.sizes.len();
                    let mut last = 0i64;
                    for j in 0..n {
                        let v = tables.varint().ok()?;
                        last = if j == 0 { v } else { last.wrapping_add(v) };
                        self.sizes.push(last);
                    }
                    self.tables.push(from..self.sizes.len());
                }
                let header_len = *self.sizes.get(self.tables.first()?.start)? as usize;
                let bodies = self.tables.get(1)?.clone();
                let events = bodies.len();
                let mut header = Cursor::window(message, start, start + header_len, "").ok()?;
                self.commit_tss.clear();
                let mut last = 0u64;
                for i in 0..events {
                    let v = header.uvarint().ok()?;
                    last = if i == 0 { v } else { last.wrapping_add(v) };
                    self.commit_tss.push(last);
                }
                // Kinds, partitions, schema and table ids: every event is a row of bench.orders.
                for _ in 0..4 * events {
                    header.uvarint().ok()?;
                }
                let mut body_start = start + header_len;
                for i in 0..events {
                    let body_len = *self.sizes.get(bodies.start + i)? as usize;
                    let body_end = body_start + body_len;
                    let groups = &self.sizes[self.tables.get(2 + i)?.clone()];
                    let update = groups.len() == 2;
                    let mut group_start = body_start;
                    let mut op = "INSERT";
                    for &size in groups {
                        let group_end = group_start + size as usize;
                        if group_end > body_end {
                            return None;
                        }
                        let mut group = Cursor::window(message, group_start, group_end, "").ok()?;
                        group_start = group_end;
                        let old = group.u8().ok()? == 2;
                        let columns = group.count(4, "").ok()?;
                        // Names, types and flags: known for this table.
                        for _ in 0..3 * columns {
                            group.uvarint().ok()?;
                        }
                        self.lengths.clear();
                        for _ in 0..columns {
                            self.lengths.push(group.varint().ok()?);
                        }
                        let image = if old && update {
                            if before_nulls_due > 0 {
                                self.before.append_nulls(std::mem::take(&mut before_nulls_due));
                            }
                            &mut self.before
                        } else {
                            op = if old {
                                "DELETE"
                            } else if update {
                                "UPDATE"
                            } else {
                                "INSERT"
                            };
                            &mut self.row
                        };
                        for (position, &len) in self.lengths.iter().enumerate() {
                            let bytes = if len < 0 { None } else { Some(group.take(len as usize, "").ok()?) };
                            image.append(position, bytes)?;
                        }
                    }
                    body_start = body_end;
                    if !update {
                        before_nulls_due += 1;
                    }
                    self.before_valid.push(update);
                    self.op.append_value(op);
                    self.commit_ts.append_value(self.commit_tss[i] as i64);
                    self.schema.append_value("bench");
                    self.table.append_value("orders");
                    self.message.append_value(index as i64);
                }
            }
            self.before.append_nulls(before_nulls_due);
            let meta: Vec<ArrayRef> = vec![
                Arc::new(self.op.finish()),
                Arc::new(self.commit_ts.finish()),
                Arc::new(self.schema.finish()),
                Arc::new(self.table.finish()),
                Arc::new(self.message.finish()),
            ];
            let columns = self.row.finish();
            let before_columns = self.before.finish();
            let fields: Fields = columns
                .iter()
                .zip(super::common::typed_fields().iter())
                .map(|(a, f)| f.as_ref().clone().with_data_type(a.data_type().clone()))
                .collect();
            let valid = NullBuffer::from(std::mem::take(&mut self.before_valid));
            let before = Arc::new(StructArray::new(fields, before_columns, Some(valid)));
            // The next batch starts presized, as the typed layout's builders do.
            (self.row, self.before) = (Image::with_capacity(self.rows), Image::with_capacity(self.rows));
            self.before_valid.reserve(self.rows);
            Some((meta, columns, before))
        }
    }
}
