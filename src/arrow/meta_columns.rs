//! The metadata columns every layout starts with (`_op` … `_message`, and the error columns of
//! `on_error="collect"`).

use std::sync::Arc;

use arrow_array::builder::{ArrayBuilder, BinaryBuilder, BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, FieldRef};

use crate::columns::ensure_room;
use crate::error::FaultResult;
use crate::event::{Event, MessageEvents};

pub fn fields(collect_errors: bool) -> Vec<FieldRef> {
    let utf8 = |name: &str, nullable| Arc::new(Field::new(name, DataType::Utf8, nullable));
    let int64 = |name: &str, nullable| Arc::new(Field::new(name, DataType::Int64, nullable));
    let mut fields = vec![
        utf8("_op", false),
        int64("_commit_ts", false),
        utf8("_schema", true),
        utf8("_table", true),
        int64("_table_id", true),
        int64("_partition_id", true),
        int64("_schema_version", true),
        utf8("_table_schema", true),
        utf8("_ddl", true),
        utf8("_ddl_type", true),
        Arc::new(Field::new("_handle_key_only", DataType::Boolean, false)),
        utf8("_claim_check", true),
        int64("_start_ts", true),
        Arc::new(Field::new("_row_key", DataType::Binary, true)),
        int64("_message", false),
    ];
    if collect_errors {
        fields.push(utf8("_error", true));
        fields.push(Arc::new(Field::new("_raw_key", DataType::Binary, true)));
        fields.push(Arc::new(Field::new("_raw_value", DataType::Binary, true)));
    }
    fields
}

pub struct MetaBuilder {
    op: StringBuilder,
    commit_ts: Int64Builder,
    schema: StringBuilder,
    table: StringBuilder,
    table_id: MostlyNull<Int64Builder>,
    partition_id: MostlyNull<Int64Builder>,
    schema_version: MostlyNull<Int64Builder>,
    table_schema: MostlyNull<StringBuilder>,
    ddl: MostlyNull<StringBuilder>,
    ddl_type: MostlyNull<StringBuilder>,
    handle_key_only: BooleanBuilder,
    claim_check: MostlyNull<StringBuilder>,
    start_ts: MostlyNull<Int64Builder>,
    row_key: MostlyNull<BinaryBuilder>,
    message: Int64Builder,
    errors: Option<ErrorColumns>,
}

/// A column that is null in most rows of most streams (a row event has no DDL text, no
/// claim-check path, and in most protocols no table id or schema version): its nulls are
/// counted and appended in one call when a value comes or the batch ends, as the typed
/// layout's `_before` nulls are. One null at a time cost a row event 7 builder calls.
#[derive(Default)]
struct MostlyNull<B> {
    builder: B,
    nulls_due: usize,
}

impl<B: ArrayBuilderNulls> MostlyNull<B> {
    fn append<V>(&mut self, value: Option<V>, append: impl FnOnce(&mut B, V)) {
        match value {
            None => self.nulls_due += 1,
            Some(v) => {
                self.settle();
                append(&mut self.builder, v);
            }
        }
    }

    fn settle(&mut self) -> &mut B {
        let n = std::mem::take(&mut self.nulls_due);
        if n > 0 {
            self.builder.append_nulls(n);
        }
        &mut self.builder
    }
}

/// The builders a [`MostlyNull`] can hold.
trait ArrayBuilderNulls {
    fn append_nulls(&mut self, n: usize);
}

impl ArrayBuilderNulls for StringBuilder {
    fn append_nulls(&mut self, n: usize) {
        StringBuilder::append_nulls(self, n)
    }
}

impl ArrayBuilderNulls for BinaryBuilder {
    fn append_nulls(&mut self, n: usize) {
        BinaryBuilder::append_nulls(self, n)
    }
}

impl ArrayBuilderNulls for Int64Builder {
    fn append_nulls(&mut self, n: usize) {
        Int64Builder::append_nulls(self, n)
    }
}

struct ErrorColumns {
    error: StringBuilder,
    raw_key: BinaryBuilder,
    raw_value: BinaryBuilder,
}

impl MetaBuilder {
    pub fn new(collect_errors: bool) -> Self {
        MetaBuilder {
            op: StringBuilder::new(),
            commit_ts: Int64Builder::new(),
            schema: StringBuilder::new(),
            table: StringBuilder::new(),
            table_id: MostlyNull::default(),
            partition_id: MostlyNull::default(),
            schema_version: MostlyNull::default(),
            table_schema: MostlyNull::default(),
            ddl: MostlyNull::default(),
            ddl_type: MostlyNull::default(),
            handle_key_only: BooleanBuilder::new(),
            claim_check: MostlyNull::default(),
            start_ts: MostlyNull::default(),
            row_key: MostlyNull::default(),
            message: Int64Builder::new(),
            errors: collect_errors.then(|| ErrorColumns {
                error: StringBuilder::new(),
                raw_key: BinaryBuilder::new(),
                raw_value: BinaryBuilder::new(),
            }),
        }
    }

    /// One row for `event` of message `message`. The driver has checked that the timestamps fit.
    pub fn append(&mut self, event: &Event<'_>, message: usize) {
        self.op.append_value(event.kind.as_str());
        self.commit_ts.append_value(event.commit_ts as i64);
        self.schema.append_option(event.schema.as_deref());
        self.table.append_option(event.table.as_deref());
        self.table_id.append(event.table_id, Int64Builder::append_value);
        self.partition_id.append(event.partition_id, Int64Builder::append_value);
        self.schema_version.append(event.schema_version.map(|v| v as i64), Int64Builder::append_value);
        self.table_schema.append(event.table_schema.as_deref(), StringBuilder::append_value);
        self.ddl.append(event.ddl.as_deref(), StringBuilder::append_value);
        self.ddl_type.append(event.ddl_type.as_deref(), StringBuilder::append_value);
        self.handle_key_only.append_value(event.handle_key_only);
        self.claim_check.append(event.claim_check.as_deref(), StringBuilder::append_value);
        self.start_ts.append(event.start_ts.map(|v| v as i64), Int64Builder::append_value);
        self.row_key.append(event.row_key.as_deref(), BinaryBuilder::append_value);
        self.message.append_value(message as i64);
        if let Some(e) = &mut self.errors {
            e.error.append_null();
            e.raw_key.append_null();
            e.raw_value.append_null();
        }
    }

    /// Checks that the text columns can take the events `kept` of `events`.
    pub fn ensure_room(&self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()> {
        let mut more = [0usize; 7];
        for e in kept.iter().map(|&i| &events.events[i]) {
            let texts = [&e.schema, &e.table, &e.table_schema, &e.ddl, &e.ddl_type, &e.claim_check];
            more[0] += "WATERMARK".len();
            for (total, text) in more[1..].iter_mut().zip(texts) {
                *total += text.as_deref().map_or(0, str::len);
            }
        }
        let columns = [
            ("_op", &self.op),
            ("_schema", &self.schema),
            ("_table", &self.table),
            ("_table_schema", &self.table_schema.builder),
            ("_ddl", &self.ddl.builder),
            ("_ddl_type", &self.ddl_type.builder),
            ("_claim_check", &self.claim_check.builder),
        ];
        for ((name, builder), more) in columns.into_iter().zip(more) {
            ensure_room(name, builder.values_slice().len(), more)?;
        }
        let row_keys = kept.iter().map(|&i| events.events[i].row_key.as_deref().map_or(0, <[u8]>::len)).sum();
        ensure_room("_row_key", self.row_key.builder.values_slice().len(), row_keys)
    }

    /// The one ERROR row of a message that could not be read. Its raw bytes are left out (null)
    /// where they would overflow their column; the reason says so.
    pub fn append_error(&mut self, message: usize, reason: &str, key: Option<&[u8]>, value: Option<&[u8]>) {
        self.op.append_value("ERROR");
        self.commit_ts.append_value(0);
        self.schema.append_null();
        self.table.append_null();
        for b in [&mut self.table_schema, &mut self.ddl, &mut self.ddl_type, &mut self.claim_check] {
            b.nulls_due += 1;
        }
        for b in [&mut self.table_id, &mut self.partition_id, &mut self.schema_version, &mut self.start_ts] {
            b.nulls_due += 1;
        }
        self.row_key.nulls_due += 1;
        self.handle_key_only.append_value(false);
        self.message.append_value(message as i64);
        let e = self.errors.as_mut().expect("error rows exist only when collecting errors");
        let fits = |b: &BinaryBuilder, raw: Option<&[u8]>| {
            ensure_room("", b.values_slice().len(), raw.map_or(0, <[u8]>::len)).is_ok()
        };
        let (key_fits, value_fits) = (fits(&e.raw_key, key), fits(&e.raw_value, value));
        let reason_fits = ensure_room("", e.error.values_slice().len(), reason.len() + 64).is_ok();
        match (key_fits && value_fits, reason_fits) {
            (true, true) => e.error.append_value(reason),
            (false, true) => e.error.append_value(format!("{reason} (raw bytes left out: over 2 GiB in this batch)")),
            (_, false) => e.error.append_null(),
        }
        e.raw_key.append_option(key.filter(|_| key_fits));
        e.raw_value.append_option(value.filter(|_| value_fits));
    }

    /// Rows appended since the last `finish`.
    pub fn rows(&self) -> usize {
        self.message.len()
    }

    /// The batch's columns. Each builder starts the next batch with room for as many rows and
    /// bytes as this one took, as the typed builders do.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        let mut columns: Vec<ArrayRef> = vec![
            finish_text(&mut self.op),
            finish_int(&mut self.commit_ts),
            finish_text(&mut self.schema),
            finish_text(&mut self.table),
            finish_int(self.table_id.settle()),
            finish_int(self.partition_id.settle()),
            finish_int(self.schema_version.settle()),
            finish_text(self.table_schema.settle()),
            finish_text(self.ddl.settle()),
            finish_text(self.ddl_type.settle()),
            finish_bool(&mut self.handle_key_only),
            finish_text(self.claim_check.settle()),
            finish_int(self.start_ts.settle()),
            finish_binary(self.row_key.settle()),
            finish_int(&mut self.message),
        ];
        if let Some(e) = &mut self.errors {
            columns.push(Arc::new(e.error.finish()));
            columns.push(Arc::new(e.raw_key.finish()));
            columns.push(Arc::new(e.raw_value.finish()));
        }
        columns
    }
}

fn finish_text(builder: &mut StringBuilder) -> ArrayRef {
    let next = StringBuilder::with_capacity(builder.len(), builder.values_slice().len());
    Arc::new(std::mem::replace(builder, next).finish())
}

fn finish_binary(builder: &mut BinaryBuilder) -> ArrayRef {
    let next = BinaryBuilder::with_capacity(builder.len(), builder.values_slice().len());
    Arc::new(std::mem::replace(builder, next).finish())
}

fn finish_bool(builder: &mut BooleanBuilder) -> ArrayRef {
    let next = BooleanBuilder::with_capacity(builder.len());
    Arc::new(std::mem::replace(builder, next).finish())
}

fn finish_int(builder: &mut Int64Builder) -> ArrayRef {
    let next = Int64Builder::with_capacity(builder.len());
    Arc::new(std::mem::replace(builder, next).finish())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    use super::*;
    use crate::event::EventKind;

    #[test]
    fn mostly_null_columns_put_each_value_on_its_own_row_across_batches() {
        let mut meta = MetaBuilder::new(true);
        let row = Event::new(EventKind::Insert, 1);
        let mut ddl = Event::new(EventKind::Ddl, 2);
        ddl.ddl = Some(Cow::Borrowed("ALTER TABLE t ADD c INT"));
        ddl.partition_id = Some(7);
        meta.append(&row, 0);
        meta.append(&row, 0);
        meta.append(&ddl, 1);
        meta.append_error(2, "bad", None, Some(b"x"));
        meta.append(&row, 3);
        let columns = meta.finish();
        let ddl_texts: Vec<Option<&str>> = columns[8].as_string::<i32>().iter().collect();
        assert_eq!(ddl_texts, [None, None, Some("ALTER TABLE t ADD c INT"), None, None]);
        let partitions: Vec<Option<i64>> = columns[5].as_primitive::<Int64Type>().iter().collect();
        assert_eq!(partitions, [None, None, Some(7), None, None]);
        assert!(columns.iter().all(|c| c.len() == 5));

        // The next batch starts with no nulls left over.
        meta.append(&ddl, 0);
        let columns = meta.finish();
        assert!(columns.iter().all(|c| c.len() == 1));
        assert_eq!(columns[8].as_string::<i32>().value(0), "ALTER TABLE t ADD c INT");
    }
}
