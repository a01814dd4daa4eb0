//! The envelope layout: one fixed schema for every table, so Spark can declare it up front.
//! Row images become `map<utf8, utf8>` of MySQL's text forms (binary values in base64).

use std::fmt::Write;
use std::sync::Arc;

use arrow_array::builder::{ArrayBuilder, Int64Builder, ListBuilder, MapBuilder, MapFieldNames, StringBuilder};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, FieldRef, Fields};
use base64::Engine;

use super::Layout;
use crate::error::FaultResult;
use crate::event::{Column, ColumnType, MessageEvents, Value};
use crate::schema::mysql::MySqlType;

fn map_type() -> DataType {
    map_of(DataType::Utf8)
}

fn map_of(value: DataType) -> DataType {
    let entries = Fields::from(vec![Field::new("key", DataType::Utf8, false), Field::new("value", value, true)]);
    DataType::Map(Arc::new(Field::new("entries", DataType::Struct(entries), false)), false)
}

pub fn fields() -> Vec<FieldRef> {
    vec![
        Arc::new(Field::new("_after", map_type(), true)),
        Arc::new(Field::new("_before", map_type(), true)),
        Arc::new(Field::new("_types", map_type(), true)),
        Arc::new(Field::new_list("_keys", Field::new("item", DataType::Utf8, true), true)),
        // TiCDC's column flags word, for the protocols that carry it (open, craft).
        Arc::new(Field::new("_flags", map_of(DataType::Int64), true)),
    ]
}

type TextMap = MapBuilder<StringBuilder, StringBuilder>;
type FlagMap = MapBuilder<StringBuilder, Int64Builder>;

fn map_names() -> Option<MapFieldNames> {
    Some(MapFieldNames { entry: "entries".into(), key: "key".into(), value: "value".into() })
}

fn text_map() -> TextMap {
    MapBuilder::new(map_names(), StringBuilder::new(), StringBuilder::new())
}

pub struct EnvelopeLayout {
    after: TextMap,
    before: TextMap,
    types: TextMap,
    keys: ListBuilder<StringBuilder>,
    flags: FlagMap,
    text: String,
}

impl Default for EnvelopeLayout {
    fn default() -> Self {
        EnvelopeLayout {
            after: text_map(),
            before: text_map(),
            types: text_map(),
            keys: ListBuilder::new(StringBuilder::new()),
            flags: MapBuilder::new(map_names(), StringBuilder::new(), Int64Builder::new()),
            text: String::new(),
        }
    }
}

impl Layout for EnvelopeLayout {
    fn fields(&self) -> Vec<FieldRef> {
        fields()
    }

    fn append(&mut self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()> {
        self.ensure_room(events, kept)?;
        for event in kept.iter().map(|&i| &events.events[i]) {
            let after = events.after(event);
            let before = events.before(event);
            self.append_image(event.after.is_some(), after, true);
            self.append_image(event.before.is_some(), before, false);
            let described = if after.is_empty() { before } else { after };
            if event.kind.is_row() {
                // A column whose message gave no type (Canal-JSON from Flink) has no entry.
                for c in described.iter().filter(|c| c.ty.base != MySqlType::Unknown || c.ty.text.is_some()) {
                    self.types.keys().append_value(&c.name);
                    write_type(&mut self.text, &c.ty);
                    self.types.values().append_value(&self.text);
                }
            }
            self.types.append(event.kind.is_row()).expect("keys and values appended in pairs");
            let has_flags = event.kind.is_row() && described.iter().any(|c| c.ty.flags.is_some());
            if has_flags {
                for c in described {
                    self.flags.keys().append_value(&c.name);
                    self.flags.values().append_option(c.ty.flags.map(|f| f as i64));
                }
            }
            self.flags.append(has_flags).expect("keys and values appended in pairs");
            for k in events.keys(event) {
                self.keys.values().append_value(k);
            }
            self.keys.append(event.kind.is_row() || !event.keys.is_empty());
        }
        Ok(())
    }

    fn append_null(&mut self) {
        for m in [&mut self.after, &mut self.before, &mut self.types] {
            m.append(false).expect("no entries");
        }
        self.keys.append(false);
        self.flags.append(false).expect("no entries");
    }

    /// The batch's columns; each builder starts the next batch with room for as much as this
    /// one took (see the typed layout's `finish_and_presize`).
    fn finish(&mut self) -> Vec<ArrayRef> {
        let (after, before, types) = (
            presized_text_map(&mut self.after),
            presized_text_map(&mut self.before),
            presized_text_map(&mut self.types),
        );
        let keys = ListBuilder::with_capacity(presized_text(self.keys.values()), self.keys.len());
        let flags = MapBuilder::with_capacity(
            map_names(),
            presized_text(self.flags.keys()),
            Int64Builder::with_capacity(self.flags.values().len()),
            self.flags.len(),
        );
        vec![
            Arc::new(std::mem::replace(&mut self.after, after).finish()),
            Arc::new(std::mem::replace(&mut self.before, before).finish()),
            Arc::new(std::mem::replace(&mut self.types, types).finish()),
            Arc::new(std::mem::replace(&mut self.keys, keys).finish()),
            Arc::new(std::mem::replace(&mut self.flags, flags).finish()),
        ]
    }
}

fn presized_text(builder: &StringBuilder) -> StringBuilder {
    StringBuilder::with_capacity(builder.len(), builder.values_slice().len())
}

fn presized_text_map(map: &mut TextMap) -> TextMap {
    let rows = map.len();
    MapBuilder::with_capacity(map_names(), presized_text(map.keys()), presized_text(map.values()), rows)
}

impl EnvelopeLayout {
    /// Checks that every text column can take the message: the most any of them can grow by is
    /// bounded by the names, values (base64 at most 4/3 + 4 bytes; numbers 24), types and keys.
    fn ensure_room(&mut self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()> {
        let value_bound = |v: &Value<'_>| match v {
            Value::Text(t) => t.len(),
            Value::Bytes(b) => b.len() / 3 * 4 + 4,
            _ => 24,
        };
        let type_bound = |ty: &ColumnType<'_>| ty.text.as_ref().map_or(32, |t| t.len());
        let mut bound = 0usize;
        for event in kept.iter().map(|&i| &events.events[i]) {
            for c in events.after(event).iter().chain(events.before(event)) {
                bound += 2 * c.name.len() + value_bound(&c.value) + type_bound(&c.ty);
            }
            bound += events.keys(event).iter().map(|k| k.len()).sum::<usize>();
        }
        let used = [
            self.after.keys().values_slice().len(),
            self.after.values().values_slice().len(),
            self.before.keys().values_slice().len(),
            self.before.values().values_slice().len(),
            self.types.keys().values_slice().len(),
            self.types.values().values_slice().len(),
            self.flags.keys().values_slice().len(),
            self.keys.values_ref().values_slice().len(),
        ];
        crate::columns::ensure_room("_after/_before/_types/_keys", used.into_iter().max().unwrap_or(0), bound)
    }

    fn append_image(&mut self, present: bool, columns: &[Column<'_>], after: bool) {
        let map = if after { &mut self.after } else { &mut self.before };
        for c in columns {
            map.keys().append_value(&c.name);
            let values = map.values();
            match &c.value {
                Value::Null => values.append_null(),
                Value::Text(t) => values.append_value(t),
                other => values.append_value(value_text(&mut self.text, other)),
            }
        }
        map.append(present).expect("keys and values appended in pairs");
    }
}

/// MySQL's text form of a value that is not text already (base64 for bytes), made in `out`.
fn value_text<'o>(out: &'o mut String, value: &Value<'_>) -> &'o str {
    out.clear();
    match value {
        Value::Null => {}
        Value::Int(v) => out.push_str(itoa::Buffer::new().format(*v)),
        Value::UInt(v) => out.push_str(itoa::Buffer::new().format(*v)),
        Value::Float32(v) => write!(out, "{v}").unwrap(),
        Value::Float64(v) => write!(out, "{v}").unwrap(),
        Value::Text(t) => out.push_str(t),
        Value::Bytes(b) => base64::engine::general_purpose::STANDARD.encode_string(b, out),
    }
    out
}

/// The type as the message carried it, else TiCDC's name with `unsigned` for the numeric types
/// that can be (Open and Craft flag YEAR and BIT unsigned too, which MySQL never spells).
fn write_type(out: &mut String, ty: &ColumnType<'_>) {
    use crate::schema::mysql::MySqlType as T;
    out.clear();
    match &ty.text {
        Some(text) => out.push_str(text),
        None => {
            out.push_str(ty.base.name(ty.binary));
            let numeric = matches!(
                ty.base,
                T::TinyInt | T::SmallInt | T::MediumInt | T::Int | T::BigInt | T::Float | T::Double | T::Decimal
            );
            if ty.unsigned && numeric {
                out.push_str(" unsigned");
            }
        }
    }
}
