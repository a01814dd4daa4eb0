//! From Arrow batches of events back to the event model, for the encoders.
//!
//! An encoder takes batches in either output layout, so this is the decoder's layouts read in
//! reverse: the meta columns give each row's event, the envelope's maps or the typed layout's
//! columns give its row images. Values are handed on in the form the wire uses — MySQL's text,
//! or bytes for binary columns — borrowing from the batch wherever the Arrow array already holds
//! that form (text in a utf8 array, bytes in a binary array). Typed values (integers, decimals,
//! timestamps, ENUM names) are turned back into TiCDC's form here, so each encoder only renders.

use std::borrow::Cow;
use std::fmt::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, MapArray, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field, TimeUnit};
use base64::Engine;
use chrono::{DateTime, Offset, TimeZone};

use crate::event::{Column, ColumnType, Event, EventKind, MessageEvents, Value};
use crate::schema::mapping::{MYSQL_TYPE_KEY, PRIMARY_KEY_KEY};
use crate::schema::mysql::{MySqlType, TypeDescription};
use crate::schema::ServerZone;

/// Reads every event row of `batch` (either layout) into `out`, in row order; `rows[i]` is the
/// batch row of `out.events[i]`. ERROR rows are left out.
pub fn read_events<'a>(
    batch: &'a RecordBatch,
    zone: ServerZone,
    out: &mut MessageEvents<'a>,
    rows: &mut Vec<usize>,
) -> Result<(), String> {
    let meta = Meta::new(batch)?;
    let images = Images::new(batch)?;
    for row in 0..batch.num_rows() {
        let Some(kind) = meta.kind(row)? else { continue };
        let mut event = Event::new(kind, meta.commit_ts(row)?);
        meta.fill(row, &mut event);
        images.fill(row, zone, &mut event, out)?;
        out.events.push(event);
        rows.push(row);
    }
    Ok(())
}

fn text_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<Option<&'a StringArray>, String> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(a) => a.as_string_opt::<i32>().map(Some).ok_or_else(|| format!("column {name} must be utf8")),
    }
}

fn int_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<Option<&'a arrow_array::Int64Array>, String> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(a) => a.as_primitive_opt::<Int64Type>().map(Some).ok_or_else(|| format!("column {name} must be int64")),
    }
}

fn text_at<'a>(array: Option<&'a StringArray>, row: usize) -> Option<Cow<'a, str>> {
    array.filter(|a| a.is_valid(row)).map(|a| Cow::Borrowed(a.value(row)))
}

fn int_at(array: Option<&arrow_array::Int64Array>, row: usize) -> Option<i64> {
    array.filter(|a| a.is_valid(row)).map(|a| a.value(row))
}

/// The metadata columns every layout starts with.
struct Meta<'a> {
    op: &'a StringArray,
    commit_ts: &'a arrow_array::Int64Array,
    schema: Option<&'a StringArray>,
    table: Option<&'a StringArray>,
    table_id: Option<&'a arrow_array::Int64Array>,
    partition_id: Option<&'a arrow_array::Int64Array>,
    schema_version: Option<&'a arrow_array::Int64Array>,
    table_schema: Option<&'a StringArray>,
    ddl: Option<&'a StringArray>,
    ddl_type: Option<&'a StringArray>,
    handle_key_only: Option<&'a arrow_array::BooleanArray>,
    claim_check: Option<&'a StringArray>,
    start_ts: Option<&'a arrow_array::Int64Array>,
    row_key: Option<&'a arrow_array::BinaryArray>,
}

impl<'a> Meta<'a> {
    fn new(batch: &'a RecordBatch) -> Result<Meta<'a>, String> {
        Ok(Meta {
            op: text_column(batch, "_op")?.ok_or("the batch has no _op column")?,
            commit_ts: int_column(batch, "_commit_ts")?.ok_or("the batch has no _commit_ts column")?,
            schema: text_column(batch, "_schema")?,
            table: text_column(batch, "_table")?,
            table_id: int_column(batch, "_table_id")?,
            partition_id: int_column(batch, "_partition_id")?,
            schema_version: int_column(batch, "_schema_version")?,
            table_schema: text_column(batch, "_table_schema")?,
            ddl: text_column(batch, "_ddl")?,
            ddl_type: text_column(batch, "_ddl_type")?,
            handle_key_only: match batch.column_by_name("_handle_key_only") {
                None => None,
                Some(a) => Some(a.as_boolean_opt().ok_or("column _handle_key_only must be bool")?),
            },
            claim_check: text_column(batch, "_claim_check")?,
            start_ts: int_column(batch, "_start_ts")?,
            row_key: match batch.column_by_name("_row_key") {
                None => None,
                Some(a) => Some(a.as_binary_opt::<i32>().ok_or("column _row_key must be binary")?),
            },
        })
    }

    fn kind(&self, row: usize) -> Result<Option<EventKind>, String> {
        if self.op.is_null(row) {
            return Err(format!("row {row}: _op is null"));
        }
        Ok(Some(match self.op.value(row) {
            "INSERT" => EventKind::Insert,
            "UPDATE" => EventKind::Update,
            "DELETE" => EventKind::Delete,
            "DDL" => EventKind::Ddl,
            "WATERMARK" => EventKind::Watermark,
            "BOOTSTRAP" => EventKind::Bootstrap,
            "ERROR" => return Ok(None),
            other => return Err(format!("row {row}: unknown _op {other:?}")),
        }))
    }

    fn commit_ts(&self, row: usize) -> Result<u64, String> {
        let ts = int_at(Some(self.commit_ts), row).ok_or_else(|| format!("row {row}: _commit_ts is null"))?;
        u64::try_from(ts).map_err(|_| format!("row {row}: negative _commit_ts {ts}"))
    }

    fn fill(&self, row: usize, e: &mut Event<'a>) {
        e.schema = text_at(self.schema, row);
        e.table = text_at(self.table, row);
        e.table_id = int_at(self.table_id, row);
        e.partition_id = int_at(self.partition_id, row);
        e.schema_version = int_at(self.schema_version, row).map(|v| v as u64);
        e.table_schema = text_at(self.table_schema, row);
        e.ddl = text_at(self.ddl, row);
        e.ddl_type = text_at(self.ddl_type, row);
        e.handle_key_only = self.handle_key_only.is_some_and(|a| a.is_valid(row) && a.value(row));
        e.claim_check = text_at(self.claim_check, row);
        e.start_ts = int_at(self.start_ts, row).map(|v| v as u64);
        e.row_key = self.row_key.filter(|a| a.is_valid(row)).map(|a| Cow::Borrowed(a.value(row)));
    }
}

/// Where the row images are: the envelope's maps, or the typed layout's columns.
enum Images<'a> {
    Envelope {
        after: &'a MapArray,
        before: &'a MapArray,
        types: &'a MapArray,
        keys: Option<&'a arrow_array::ListArray>,
        flags: Option<&'a MapArray>,
    },
    Typed {
        columns: Vec<TypedColumn<'a>>,
        before: Option<(&'a StructArray, Vec<TypedColumn<'a>>)>,
        keys: Vec<String>,
    },
}

impl<'a> Images<'a> {
    fn new(batch: &'a RecordBatch) -> Result<Images<'a>, String> {
        let map = |name: &str, value: DataType| -> Result<Option<&'a MapArray>, String> {
            let Some(array) = batch.column_by_name(name) else { return Ok(None) };
            match array.as_map_opt() {
                Some(m) if m.keys().data_type() == &DataType::Utf8 && m.values().data_type() == &value => Ok(Some(m)),
                _ => Err(format!("column {name} must be map<utf8, {value}>")),
            }
        };
        if let Some(after) = map("_after", DataType::Utf8)? {
            return Ok(Images::Envelope {
                after,
                before: map("_before", DataType::Utf8)?.ok_or("envelope batch without _before")?,
                types: map("_types", DataType::Utf8)?.ok_or("envelope batch without _types")?,
                keys: batch.column_by_name("_keys").and_then(|a| a.as_list_opt::<i32>()),
                flags: map("_flags", DataType::Int64)?,
            });
        }
        let schema = batch.schema_ref();
        let mut columns = Vec::new();
        for (field, array) in schema.fields().iter().zip(batch.columns()) {
            if !field.name().starts_with('_') {
                columns.push(TypedColumn::new(field, array)?);
            }
        }
        let before = match batch.column_by_name("_before") {
            Some(a) => {
                let s = a.as_struct_opt().ok_or("column _before must be a struct")?;
                let DataType::Struct(fields) = a.data_type() else { unreachable!("checked") };
                let cols =
                    fields.iter().zip(s.columns()).map(|(f, a)| TypedColumn::new(f, a)).collect::<Result<_, _>>()?;
                Some((s, cols))
            }
            None => None,
        };
        let keys = schema.metadata().get(PRIMARY_KEY_KEY).map(|k| parse_name_list(k)).unwrap_or_default();
        Ok(Images::Typed { columns, before, keys })
    }

    fn fill(&self, row: usize, zone: ServerZone, e: &mut Event<'a>, out: &mut MessageEvents<'a>) -> Result<(), String> {
        match self {
            Images::Envelope { after, before, types, keys, flags } => {
                let types = map_entries(types, row);
                let flags = flags.map(|f| flag_entries(f, row)).unwrap_or_default();
                if after.is_valid(row) {
                    e.after = Some(envelope_image(after, row, &types, &flags, out)?);
                }
                if before.is_valid(row) {
                    e.before = Some(envelope_image(before, row, &types, &flags, out)?);
                }
                if let Some(keys) = keys.filter(|k| k.is_valid(row)) {
                    let start = out.keys.len();
                    let names = keys.values().as_string_opt::<i32>().ok_or("_keys must be a list of utf8")?;
                    let range = keys.value_offsets()[row] as usize..keys.value_offsets()[row + 1] as usize;
                    out.keys.extend(range.filter(|&i| names.is_valid(i)).map(|i| Cow::Borrowed(names.value(i))));
                    e.keys = start..out.keys.len();
                }
            }
            Images::Typed { columns, before, keys } => {
                if !e.kind.is_row() {
                    return Ok(());
                }
                // A handle-key-only or claim-check row holds its key columns alone: where the
                // schema names no key, they are the columns it has values for (else re-encoding
                // it, again as such a row, would drop them).
                let carried: Vec<String>;
                let keys = if keys.is_empty() && (e.handle_key_only || e.claim_check.is_some()) {
                    carried = columns.iter().filter(|c| c.array.is_valid(row)).map(|c| c.name.to_string()).collect();
                    &carried
                } else {
                    keys
                };
                let start = out.keys.len();
                out.keys.extend(keys.iter().map(|k| Cow::Owned(k.clone())));
                e.keys = start..out.keys.len();
                let main = typed_image(columns, row, keys, zone, out)?;
                match e.kind {
                    EventKind::Delete => e.before = Some(main),
                    _ => e.after = Some(main),
                }
                if e.kind == EventKind::Update {
                    if let Some((s, cols)) = before.as_ref().filter(|(s, _)| s.is_valid(row)) {
                        let _ = s;
                        e.before = Some(typed_image(cols, row, keys, zone, out)?);
                    }
                }
            }
        }
        Ok(())
    }
}

fn parse_name_list(json: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(mut cur) = crate::json::JsonCursor::new(json.as_bytes()) else { return out };
    if cur.begin_array().is_err() {
        return out;
    }
    let mut first = true;
    while let Ok(true) = cur.next_item(&mut first) {
        match cur.string() {
            Ok(s) => out.push(s.into_owned()),
            Err(_) => break,
        }
    }
    out
}

fn map_entries(map: &MapArray, row: usize) -> Vec<(&str, &str)> {
    if map.is_null(row) {
        return Vec::new();
    }
    let range = map.value_offsets()[row] as usize..map.value_offsets()[row + 1] as usize;
    let keys = map.keys().as_string::<i32>();
    let values = map.values().as_string::<i32>();
    range.filter(|&i| values.is_valid(i)).map(|i| (keys.value(i), values.value(i))).collect()
}

fn flag_entries(map: &MapArray, row: usize) -> Vec<(&str, u64)> {
    if map.is_null(row) {
        return Vec::new();
    }
    let range = map.value_offsets()[row] as usize..map.value_offsets()[row + 1] as usize;
    let keys = map.keys().as_string::<i32>();
    let values = map.values().as_primitive::<Int64Type>();
    range.filter(|&i| values.is_valid(i)).map(|i| (keys.value(i), values.value(i) as u64)).collect()
}

fn column_type<'a>(text: &'a str) -> ColumnType<'a> {
    let desc = TypeDescription::parse(text);
    ColumnType {
        base: desc.base,
        unsigned: desc.unsigned,
        binary: desc.binary,
        text: Some(Cow::Borrowed(text)),
        flags: None,
    }
}

fn envelope_image<'a>(
    map: &'a MapArray,
    row: usize,
    types: &[(&'a str, &'a str)],
    flags: &[(&'a str, u64)],
    out: &mut MessageEvents<'a>,
) -> Result<std::ops::Range<usize>, String> {
    let start = out.columns.len();
    let range = map.value_offsets()[row] as usize..map.value_offsets()[row + 1] as usize;
    let names = map.keys().as_string::<i32>();
    let values = map.values().as_string::<i32>();
    for i in range {
        let name = names.value(i);
        let text = types.iter().find(|(n, _)| *n == name).map_or("varchar", |(_, t)| *t);
        let mut ty = column_type(text);
        ty.flags = flags.iter().find(|(n, _)| *n == name).map(|(_, f)| *f);
        let binary = ty.binary || ty.flags.is_some_and(|f| f & crate::event::flag::BINARY != 0 && ty.base.is_string());
        let value = if values.is_null(i) {
            Value::Null
        } else if binary {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(values.value(i))
                .map_err(|e| format!("row {row}: column {name}: binary value is not base64: {e}"))?;
            Value::Bytes(Cow::Owned(bytes))
        } else {
            Value::Text(Cow::Borrowed(values.value(i)))
        };
        out.columns.push(Column { name: Cow::Borrowed(name), ty, value, at: 0 });
    }
    Ok(start..out.columns.len())
}

/// One typed-layout column: its array, and what it says about the MySQL column.
struct TypedColumn<'a> {
    name: &'a str,
    array: &'a ArrayRef,
    desc: TypeDescription,
    text: Cow<'a, str>,
    nullable: bool,
}

impl<'a> TypedColumn<'a> {
    fn new(field: &'a Field, array: &'a ArrayRef) -> Result<TypedColumn<'a>, String> {
        let text: Cow<'a, str> = match field.metadata().get(MYSQL_TYPE_KEY) {
            Some(t) => Cow::Borrowed(t.as_str()),
            None => Cow::Owned(
                mysql_type_of(field.data_type())
                    .ok_or_else(|| format!("column {}: no MySQL type for Arrow {}", field.name(), field.data_type()))?
                    .to_string(),
            ),
        };
        Ok(TypedColumn {
            name: field.name(),
            array,
            desc: TypeDescription::parse(&text),
            text,
            nullable: field.is_nullable(),
        })
    }
}

/// The MySQL type a typed column stands for when its field carries no `mysql_type`.
fn mysql_type_of(data_type: &DataType) -> Option<&'static str> {
    Some(match data_type {
        DataType::Boolean => "tinyint(1)",
        DataType::Int8 => "tinyint",
        DataType::Int16 => "smallint",
        DataType::Int32 => "int",
        DataType::Int64 => "bigint",
        DataType::UInt8 => "tinyint unsigned",
        DataType::UInt16 => "smallint unsigned",
        DataType::UInt32 => "int unsigned",
        DataType::UInt64 => "bigint unsigned",
        DataType::Decimal128(20, 0) => "bigint unsigned",
        DataType::Decimal128(..) | DataType::Decimal256(..) => "decimal",
        DataType::Float32 => "float",
        DataType::Float64 => "double",
        DataType::Date32 => "date",
        DataType::Timestamp(_, None) => "datetime",
        DataType::Timestamp(_, Some(_)) => "timestamp",
        DataType::Duration(_) => "time",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "varchar",
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => "varbinary",
        DataType::List(_) | DataType::LargeList(_) => "vector",
        _ => return None,
    })
}

fn typed_image<'a>(
    columns: &[TypedColumn<'a>],
    row: usize,
    keys: &[String],
    zone: ServerZone,
    out: &mut MessageEvents<'a>,
) -> Result<std::ops::Range<usize>, String> {
    let start = out.columns.len();
    for c in columns {
        let mut ty = ColumnType {
            base: c.desc.base,
            unsigned: c.desc.unsigned,
            binary: c.desc.binary,
            text: Some(c.text.clone()),
            flags: None,
        };
        let is_key = keys.iter().any(|k| k == c.name);
        let mut flags = ty.ticdc_flags(is_key);
        if !c.nullable && !is_key {
            flags &= !crate::event::flag::NULLABLE;
        }
        ty.flags = Some(flags);
        let value = typed_value(c, row, zone).map_err(|e| format!("row {row}: column {}: {e}", c.name))?;
        out.columns.push(Column { name: Cow::Borrowed(c.name), ty, value, at: 0 });
    }
    Ok(start..out.columns.len())
}

fn typed_value<'a>(c: &TypedColumn<'a>, row: usize, zone: ServerZone) -> Result<Value<'a>, String> {
    let array = c.array.as_ref();
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    let mut text = String::new();
    let value = match array.data_type() {
        DataType::Boolean => Value::Int(array.as_boolean().value(row) as i64),
        DataType::Int8 => int_value(c, array.as_primitive::<Int8Type>().value(row) as i64),
        DataType::Int16 => int_value(c, array.as_primitive::<Int16Type>().value(row) as i64),
        DataType::Int32 => int_value(c, array.as_primitive::<Int32Type>().value(row) as i64),
        DataType::Int64 => int_value(c, array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::UInt(array.as_primitive::<UInt8Type>().value(row) as u64),
        DataType::UInt16 => Value::UInt(array.as_primitive::<UInt16Type>().value(row) as u64),
        DataType::UInt32 => Value::UInt(array.as_primitive::<UInt32Type>().value(row) as u64),
        DataType::UInt64 => Value::UInt(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Decimal128(_, scale) => {
            let v = array.as_primitive::<Decimal128Type>().value(row);
            match (*scale, u64::try_from(v)) {
                (0, Ok(u)) if c.desc.unsigned || c.desc.base == MySqlType::Bit => Value::UInt(u),
                _ => {
                    write_decimal(&mut text, v, *scale);
                    Value::Text(Cow::Owned(text))
                }
            }
        }
        DataType::Float32 => Value::Float32(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => Value::Float64(array.as_primitive::<Float64Type>().value(row)),
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(row);
            let date = DateTime::from_timestamp(days as i64 * 86_400, 0).ok_or("date out of range")?;
            write!(text, "{}", date.format("%Y-%m-%d")).expect("write to String");
            Value::Text(Cow::Owned(text))
        }
        DataType::Timestamp(_, tz) => {
            let micros = to_micros(array, row)?;
            let local = match (tz, zone) {
                (None, _) | (Some(_), ServerZone::Utc) => micros,
                (Some(_), ServerZone::Named(tz)) => {
                    let at = DateTime::from_timestamp_micros(micros).ok_or("timestamp out of range")?;
                    micros + tz.offset_from_utc_datetime(&at.naive_utc()).fix().local_minus_utc() as i64 * 1_000_000
                }
            };
            write_datetime(&mut text, local, c.desc.length)?;
            Value::Text(Cow::Owned(text))
        }
        DataType::Duration(_) => {
            write_time(&mut text, to_micros(array, row)?, c.desc.length);
            Value::Text(Cow::Owned(text))
        }
        DataType::Utf8 => enum_value(c, array.as_string::<i32>().value(row))?,
        DataType::LargeUtf8 => enum_value(c, array.as_string::<i64>().value(row))?,
        DataType::Utf8View => enum_value(c, array.as_string_view().value(row))?,
        DataType::Binary => Value::Bytes(Cow::Borrowed(array.as_binary::<i32>().value(row))),
        DataType::LargeBinary => Value::Bytes(Cow::Borrowed(array.as_binary::<i64>().value(row))),
        DataType::BinaryView => Value::Bytes(Cow::Borrowed(array.as_binary_view().value(row))),
        DataType::FixedSizeBinary(_) => Value::Bytes(Cow::Borrowed(array.as_fixed_size_binary().value(row))),
        DataType::List(_) => {
            let list = array.as_list::<i32>().value(row);
            let items = list.as_primitive_opt::<Float32Type>().ok_or("a vector must be a list of float32")?;
            text.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                write!(text, "{}", v.unwrap_or(0.0)).expect("write to String");
            }
            text.push(']');
            Value::Text(Cow::Owned(text))
        }
        other => return Err(format!("cannot encode Arrow {other}")),
    };
    Ok(value)
}

fn int_value(c: &TypedColumn<'_>, v: i64) -> Value<'static> {
    if (c.desc.unsigned || matches!(c.desc.base, MySqlType::Bit | MySqlType::Year | MySqlType::Enum | MySqlType::Set))
        && v >= 0
    {
        Value::UInt(v as u64)
    } else {
        Value::Int(v)
    }
}

/// ENUM/SET names back to the index or bitmask the wire carries (when the members are known
/// and the value is a name rather than digits); other text as is.
fn enum_value<'a>(c: &TypedColumn<'a>, s: &'a str) -> Result<Value<'a>, String> {
    let members = &c.desc.members;
    if members.is_empty() || !matches!(c.desc.base, MySqlType::Enum | MySqlType::Set) {
        return Ok(Value::Text(Cow::Borrowed(s)));
    }
    crate::schema::mysql::member_number(c.desc.base, members, s)
        .map(Value::UInt)
        .ok_or_else(|| format!("{s:?} is not a member, or names one its type lists twice"))
}

/// A timestamp or duration value in microseconds, whatever its unit.
fn to_micros(array: &dyn Array, row: usize) -> Result<i64, String> {
    use DataType as D;
    use TimeUnit as U;
    let (v, per_second) = match array.data_type() {
        D::Timestamp(U::Second, _) => (array.as_primitive::<TimestampSecondType>().value(row), 1),
        D::Timestamp(U::Millisecond, _) => (array.as_primitive::<TimestampMillisecondType>().value(row), 1_000),
        D::Timestamp(U::Microsecond, _) => (array.as_primitive::<TimestampMicrosecondType>().value(row), 1_000_000),
        D::Timestamp(U::Nanosecond, _) => (array.as_primitive::<TimestampNanosecondType>().value(row), 1_000_000_000),
        D::Duration(U::Second) => (array.as_primitive::<DurationSecondType>().value(row), 1),
        D::Duration(U::Millisecond) => (array.as_primitive::<DurationMillisecondType>().value(row), 1_000),
        D::Duration(U::Microsecond) => (array.as_primitive::<DurationMicrosecondType>().value(row), 1_000_000),
        D::Duration(U::Nanosecond) => (array.as_primitive::<DurationNanosecondType>().value(row), 1_000_000_000),
        other => return Err(format!("cannot read Arrow {other} as a time")),
    };
    Ok(match per_second {
        1_000_000_000 => v.div_euclid(1_000),
        p => v.saturating_mul(1_000_000 / p),
    })
}

fn write_decimal(out: &mut String, v: i128, scale: i8) {
    if scale <= 0 {
        write!(out, "{v}").expect("write to String");
        for _ in 0..-scale {
            out.push('0');
        }
        return;
    }
    let scale = scale as u32;
    let digits = v.unsigned_abs().to_string();
    if v < 0 {
        out.push('-');
    }
    let width = digits.len().max(scale as usize + 1);
    let padded = format!("{digits:0>width$}");
    let (int, frac) = padded.split_at(width - scale as usize);
    out.push_str(int);
    out.push('.');
    out.push_str(frac);
}

/// `YYYY-MM-DD HH:MM:SS[.f…]` with `fsp` fraction digits (all six, trimmed of nothing, when
/// the precision is unknown and the value has a fraction).
fn write_datetime(out: &mut String, micros: i64, fsp: Option<u32>) -> Result<(), String> {
    let at = DateTime::from_timestamp_micros(micros).ok_or("timestamp out of range")?;
    write!(out, "{}", at.format("%Y-%m-%d %H:%M:%S")).expect("write to String");
    write_fraction(out, micros.rem_euclid(1_000_000) as u32, fsp);
    Ok(())
}

fn write_time(out: &mut String, micros: i64, fsp: Option<u32>) {
    if micros < 0 {
        out.push('-');
    }
    let m = micros.unsigned_abs();
    let secs = m / 1_000_000;
    write!(out, "{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60).expect("write to String");
    write_fraction(out, (m % 1_000_000) as u32, fsp);
}

fn write_fraction(out: &mut String, micros: u32, fsp: Option<u32>) {
    let digits = match fsp {
        Some(n) => n.min(6) as usize,
        None if micros != 0 => 6,
        None => 0,
    };
    if digits > 0 {
        let text = format!("{micros:06}");
        out.push('.');
        out.push_str(&text[..digits]);
    }
}
