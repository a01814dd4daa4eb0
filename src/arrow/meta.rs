//! The metadata columns every layout starts with (`_op` … `_message`, and the error columns of
//! `on_error="collect"`).

use std::sync::Arc;

use arrow_array::builder::{ArrayBuilder, BinaryBuilder, BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, FieldRef};

use super::ensure_room;
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
    table_id: Int64Builder,
    partition_id: Int64Builder,
    schema_version: Int64Builder,
    table_schema: StringBuilder,
    ddl: StringBuilder,
    ddl_type: StringBuilder,
    handle_key_only: BooleanBuilder,
    claim_check: StringBuilder,
    message: Int64Builder,
    errors: Option<ErrorColumns>,
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
            table_id: Int64Builder::new(),
            partition_id: Int64Builder::new(),
            schema_version: Int64Builder::new(),
            table_schema: StringBuilder::new(),
            ddl: StringBuilder::new(),
            ddl_type: StringBuilder::new(),
            handle_key_only: BooleanBuilder::new(),
            claim_check: StringBuilder::new(),
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
        self.table_id.append_option(event.table_id);
        self.partition_id.append_option(event.partition_id);
        self.schema_version.append_option(event.schema_version.map(|v| v as i64));
        self.table_schema.append_option(event.table_schema.as_deref());
        self.ddl.append_option(event.ddl.as_deref());
        self.ddl_type.append_option(event.ddl_type.as_deref());
        self.handle_key_only.append_value(event.handle_key_only);
        self.claim_check.append_option(event.claim_check.as_deref());
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
            ("_table_schema", &self.table_schema),
            ("_ddl", &self.ddl),
            ("_ddl_type", &self.ddl_type),
            ("_claim_check", &self.claim_check),
        ];
        for ((name, builder), more) in columns.into_iter().zip(more) {
            ensure_room(name, builder.values_slice().len(), more)?;
        }
        Ok(())
    }

    /// The one ERROR row of a message that could not be read. Its raw bytes are left out (null)
    /// where they would overflow their column; the reason says so.
    pub fn append_error(&mut self, message: usize, reason: &str, key: Option<&[u8]>, value: Option<&[u8]>) {
        self.op.append_value("ERROR");
        self.commit_ts.append_value(0);
        for b in [&mut self.schema, &mut self.table, &mut self.table_schema, &mut self.ddl, &mut self.ddl_type] {
            b.append_null();
        }
        for b in [&mut self.table_id, &mut self.partition_id, &mut self.schema_version] {
            b.append_null();
        }
        self.handle_key_only.append_value(false);
        self.claim_check.append_null();
        self.message.append_value(message as i64);
        let e = self.errors.as_mut().expect("error rows exist only when collecting errors");
        let fits = |b: &BinaryBuilder, raw: Option<&[u8]>| ensure_room("", b.values_slice().len(), raw.map_or(0, <[u8]>::len)).is_ok();
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
            finish_int(&mut self.table_id),
            finish_int(&mut self.partition_id),
            finish_int(&mut self.schema_version),
            finish_text(&mut self.table_schema),
            finish_text(&mut self.ddl),
            finish_text(&mut self.ddl_type),
            finish_bool(&mut self.handle_key_only),
            finish_text(&mut self.claim_check),
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

fn finish_bool(builder: &mut BooleanBuilder) -> ArrayRef {
    let next = BooleanBuilder::with_capacity(builder.len());
    Arc::new(std::mem::replace(builder, next).finish())
}

fn finish_int(builder: &mut Int64Builder) -> ArrayRef {
    let next = Int64Builder::with_capacity(builder.len());
    Arc::new(std::mem::replace(builder, next).finish())
}
