//! The typed layout: one table's columns with real Arrow types, then `_before`, a struct of the
//! same columns holding the old row of an UPDATE.
//!
//! Each value is checked, converted and appended to its column's sink in one step. A value that
//! does not fit its column fails the whole message, with nothing of it kept: every sink is cut
//! back to the rows before the message.
//!
//! Values come either from the row images of events, matched to fields by name, or straight from
//! a codec through the layout's [`RowSink`], by field: one at a time, a row image at a time, or a
//! message's rows column by column. All go through one conversion, `append_values`, which
//! matches the column's Arrow type once for the values it is given.

use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{ArrayRef, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef, Fields, TimeUnit};
use rustc_hash::FxHashMap;

use super::sink::{BooleanSink, PrimitiveSink, RunSink, Vector};
use super::views::ViewBuilder;
use super::Layout;
use crate::codec::simple::TableSchema;
use crate::error::{Fault, FaultResult};
use crate::event::{same_name, Column, Event, EventKind, ImageValues, MessageEvents, RowColumns, RowSink, Value};
use crate::schema::mapping::MYSQL_TYPE_KEY;
use crate::schema::mysql::{self, MySqlType, TypeDescription};
use crate::schema::table::{ColumnDefinition, TableDefinition};
use crate::schema::{ServerZone, TableName};

#[derive(Debug, Clone)]
enum Target {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Decimal { precision: u8, scale: i8 },
    Float32,
    Float64,
    Date,
    DateTime,
    Timestamp,
    Time,
    Text,
    Binary,
    Vector,
}

struct ColumnSpec {
    field: FieldRef,
    target: Target,
    /// ENUM/SET members when the column definition is known.
    members: Option<(MySqlType, Vec<String>)>,
}

impl ColumnSpec {
    fn new(field: &Field) -> Result<ColumnSpec, String> {
        use DataType as D;
        let (target, data_type) = match field.data_type() {
            D::Boolean => (Target::Bool, D::Boolean),
            D::Int8 => (Target::Int8, D::Int8),
            D::Int16 => (Target::Int16, D::Int16),
            D::Int32 => (Target::Int32, D::Int32),
            D::Int64 => (Target::Int64, D::Int64),
            D::Decimal128(p, s) => (Target::Decimal { precision: *p, scale: *s }, D::Decimal128(*p, *s)),
            D::Float32 => (Target::Float32, D::Float32),
            D::Float64 => (Target::Float64, D::Float64),
            D::Date32 => (Target::Date, D::Date32),
            D::Timestamp(_, None) => (Target::DateTime, D::Timestamp(TimeUnit::Microsecond, None)),
            D::Timestamp(_, Some(tz)) => (Target::Timestamp, D::Timestamp(TimeUnit::Microsecond, Some(tz.clone()))),
            D::Duration(_) => (Target::Time, D::Duration(TimeUnit::Microsecond)),
            D::Utf8 | D::LargeUtf8 => (Target::Text, D::Utf8),
            D::Utf8View => (Target::Text, D::Utf8View),
            D::Binary | D::LargeBinary | D::FixedSizeBinary(_) => (Target::Binary, D::Binary),
            D::BinaryView => (Target::Binary, D::BinaryView),
            D::List(item) | D::LargeList(item) if item.data_type() == &D::Float32 => {
                (Target::Vector, D::new_list(D::Float32, true))
            }
            other => return Err(format!("column {}: Arrow type {other} is not supported", field.name())),
        };
        if let Target::Decimal { precision, scale } = target {
            if precision > 38 || scale < 0 || scale as u8 > precision {
                return Err(format!("column {}: decimal128({precision}, {scale}) is not supported", field.name()));
            }
        }
        let members = field.metadata().get(MYSQL_TYPE_KEY).and_then(|t| enum_members(&TypeDescription::parse(t)));
        let field = Field::new(field.name(), data_type, true).with_metadata(field.metadata().clone());
        Ok(ColumnSpec { field: Arc::new(field), target, members })
    }
}

/// The members of an ENUM or SET type, when known.
fn enum_members(ty: &TypeDescription) -> Option<(MySqlType, Vec<String>)> {
    (matches!(ty.base, MySqlType::Enum | MySqlType::Set) && !ty.members.is_empty())
        .then(|| (ty.base, ty.members.clone()))
}

/// A column being built: one sink per Arrow type (see [`super::sink`]).
enum ColumnSink {
    Bool(BooleanSink),
    Int8(PrimitiveSink<Int8Type>),
    Int16(PrimitiveSink<Int16Type>),
    Int32(PrimitiveSink<Int32Type>),
    Int64(PrimitiveSink<Int64Type>),
    Decimal(PrimitiveSink<Decimal128Type>),
    Float32(PrimitiveSink<Float32Type>),
    Float64(PrimitiveSink<Float64Type>),
    Date(PrimitiveSink<Date32Type>),
    Timestamp(PrimitiveSink<TimestampMicrosecondType>),
    Time(PrimitiveSink<DurationMicrosecondType>),
    Text(RunSink<Utf8Type>),
    Binary(RunSink<BinaryType>),
    TextView(ViewBuilder<str>),
    BinaryView(ViewBuilder<[u8]>),
    Vector(RunSink<Vector>),
}

/// Calls the same method on whichever sink `$sink` holds.
macro_rules! each_sink {
    ($sink:expr, $s:ident => $call:expr) => {
        match $sink {
            ColumnSink::Bool($s) => $call,
            ColumnSink::Int8($s) => $call,
            ColumnSink::Int16($s) => $call,
            ColumnSink::Int32($s) => $call,
            ColumnSink::Int64($s) => $call,
            ColumnSink::Decimal($s) => $call,
            ColumnSink::Float32($s) => $call,
            ColumnSink::Float64($s) => $call,
            ColumnSink::Date($s) => $call,
            ColumnSink::Timestamp($s) => $call,
            ColumnSink::Time($s) => $call,
            ColumnSink::Text($s) => $call,
            ColumnSink::Binary($s) => $call,
            ColumnSink::TextView($s) => $call,
            ColumnSink::BinaryView($s) => $call,
            ColumnSink::Vector($s) => $call,
        }
    };
}

impl ColumnSink {
    fn new(spec: &ColumnSpec) -> ColumnSink {
        ColumnSink::with_capacity(spec, 0, 0)
    }

    /// A sink with room for `rows` values and, for utf8/binary columns, `bytes` of them.
    fn with_capacity(spec: &ColumnSpec, rows: usize, bytes: usize) -> ColumnSink {
        let dt = spec.field.data_type().clone();
        match (&spec.target, &dt) {
            (Target::Bool, _) => ColumnSink::Bool(BooleanSink::with_capacity(rows)),
            (Target::Int8, _) => ColumnSink::Int8(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Int16, _) => ColumnSink::Int16(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Int32, _) => ColumnSink::Int32(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Int64, _) => ColumnSink::Int64(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Decimal { .. }, _) => ColumnSink::Decimal(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Float32, _) => ColumnSink::Float32(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Float64, _) => ColumnSink::Float64(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Date, _) => ColumnSink::Date(PrimitiveSink::with_capacity(dt, rows)),
            (Target::DateTime | Target::Timestamp, _) => ColumnSink::Timestamp(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Time, _) => ColumnSink::Time(PrimitiveSink::with_capacity(dt, rows)),
            (Target::Text, DataType::Utf8View) => ColumnSink::TextView(ViewBuilder::with_capacity(rows)),
            (Target::Text, _) => ColumnSink::Text(RunSink::with_capacity(rows, bytes)),
            (Target::Binary, DataType::BinaryView) => ColumnSink::BinaryView(ViewBuilder::with_capacity(rows)),
            (Target::Binary, _) => ColumnSink::Binary(RunSink::with_capacity(rows, bytes)),
            (Target::Vector, _) => ColumnSink::Vector(RunSink::with_capacity(rows, 0)),
        }
    }

    /// The bytes held by a utf8/binary sink (0 for the others).
    fn value_bytes(&self) -> usize {
        match self {
            ColumnSink::Text(b) => b.items_len(),
            ColumnSink::Binary(b) => b.items_len(),
            _ => 0,
        }
    }

    /// Finishes the batch's array and starts the next batch with room for as many rows and
    /// bytes: batches of one stream are alike, and builders grown from empty each batch
    /// spent ~6% of a decode reallocating.
    fn finish_and_presize(&mut self, spec: &ColumnSpec) -> ArrayRef {
        let (rows, bytes) = (self.len(), self.value_bytes());
        let array = self.finish();
        *self = ColumnSink::with_capacity(spec, rows, bytes);
        array
    }

    fn len(&self) -> usize {
        each_sink!(self, s => s.len())
    }

    fn append_null(&mut self) {
        each_sink!(self, s => s.append_null())
    }

    fn append_nulls(&mut self, n: usize) {
        each_sink!(self, s => s.append_nulls(n))
    }

    fn truncate(&mut self, len: usize) {
        each_sink!(self, s => s.truncate(len))
    }

    fn finish(&mut self) -> ArrayRef {
        each_sink!(self, s => s.finish())
    }
}

/// Room for values made during conversion: ENUM/SET names and numbers as text, VECTOR floats.
#[derive(Default)]
struct Scratch {
    text: String,
    floats: Vec<f32>,
}

/// Checks and converts `values` (of the column `name`, each with its offset in the message) for
/// the column `spec` describes and appends them to `sink`, which is `spec`'s: a whole column of a
/// message, or one value. The match on the sink's type is made once, outside the loop over the values.
/// A value that does not fit fails the call, with the values before it appended (the message is
/// then cut back whole).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn append_values<'v, 'x: 'v>(
    spec: &ColumnSpec,
    sink: &mut ColumnSink,
    values: impl Iterator<Item = (&'v Value<'x>, usize)>,
    name: &str,
    zone: ServerZone,
    stats: &mut TypedStats,
    scratch: &mut Scratch,
) -> FaultResult<()> {
    use ColumnSink as B;
    let fail = |at: usize, what: &str| {
        Fault::new(at, format!("column {name}: {what} does not fit {}", spec.field.data_type()))
    };
    let bad = |value: &Value<'_>, at: usize| fail(at, &describe(value));
    fn text<'v>(value: &'v Value<'_>) -> Option<&'v [u8]> {
        match value {
            Value::Text(t) => Some(t.as_bytes()),
            _ => None,
        }
    }
    // Runs `$append` for each value that is not NULL; a NULL appends a null to `$sink`.
    macro_rules! each {
        ($sink:ident, |$value:ident, $at:ident| $append:expr) => {
            for ($value, $at) in values {
                if $value.is_null() {
                    $sink.append_null();
                } else {
                    $append;
                }
            }
        };
    }
    macro_rules! int {
        ($b:ident, $t:ty) => {
            each!($b, |value, at| {
                let v = integer(value).ok_or_else(|| bad(value, at))?;
                $b.append_value(<$t>::try_from(v).map_err(|_| fail(at, &format!("value {v}")))?)
            })
        };
    }
    match sink {
        B::Bool(b) => each!(b, |value, at| b.append_value(integer(value).ok_or_else(|| bad(value, at))? != 0)),
        B::Int8(b) => int!(b, i8),
        B::Int16(b) => int!(b, i16),
        B::Int32(b) => int!(b, i32),
        B::Int64(b) => int!(b, i64),
        B::Decimal(b) => {
            each!(b, |value, at| {
                let Target::Decimal { precision, scale } = spec.target else { return Err(bad(value, at)) };
                let v = match value {
                    Value::Text(t) => mysql::parse_decimal_i128(t.as_bytes(), scale as u32),
                    Value::Int(_) | Value::UInt(_) => {
                        integer(value).and_then(|v| v.checked_mul(POW10[scale as usize] as i128))
                    }
                    _ => None,
                }
                .filter(|v| v.unsigned_abs() < POW10[precision as usize])
                .ok_or_else(|| bad(value, at))?;
                b.append_value(v)
            })
        }
        B::Float32(b) => each!(b, |value, at| b.append_value(float(value).ok_or_else(|| bad(value, at))? as f32)),
        B::Float64(b) => each!(b, |value, at| b.append_value(float(value).ok_or_else(|| bad(value, at))?)),
        B::Date(b) => each!(b, |value, at| match mysql::parse_date(text(value).ok_or_else(|| bad(value, at))?) {
            Some(Some(d)) => b.append_value(mysql::days_from_civil(d.year, d.month, d.day) as i32),
            Some(None) => {
                stats.zero_dates += 1;
                b.append_null()
            }
            None => return Err(fail(at, "date")),
        }),
        B::Timestamp(b) => {
            let local_time = matches!(spec.target, Target::DateTime);
            each!(b, |value, at| match mysql::parse_datetime_micros(text(value).ok_or_else(|| bad(value, at))?) {
                Some(Some(local)) if local_time => b.append_value(local),
                Some(Some(local)) => b.append_value(zone.to_utc(local).ok_or_else(|| fail(at, "time"))?),
                Some(None) => {
                    stats.zero_dates += 1;
                    b.append_null()
                }
                None => return Err(fail(at, "date-time")),
            })
        }
        B::Time(b) => {
            each!(b, |value, at| b.append_value(
                mysql::parse_time_micros(text(value).ok_or_else(|| bad(value, at))?).ok_or_else(|| fail(at, "time"))?
            ))
        }
        B::Text(b) => each!(b, |value, at| {
            let s = text_of(spec, value, &mut scratch.text).ok_or_else(|| not_text(name, at))?;
            super::ensure_room(spec.field.name(), b.items_len(), s.len())?;
            b.append_value(s)?
        }),
        B::TextView(b) => {
            each!(b, |value, at| b
                .append(text_of(spec, value, &mut scratch.text).ok_or_else(|| not_text(name, at))?)?)
        }
        B::Binary(b) => each!(b, |value, at| {
            let bytes = bytes_of(value).ok_or_else(|| bad(value, at))?;
            super::ensure_room(spec.field.name(), b.items_len(), bytes.len())?;
            b.append_value(bytes)?
        }),
        B::BinaryView(b) => each!(b, |value, at| b.append(bytes_of(value).ok_or_else(|| bad(value, at))?)?),
        B::Vector(b) => each!(b, |value, at| {
            scratch.floats.clear();
            mysql::parse_vector(text(value).ok_or_else(|| bad(value, at))?, &mut scratch.floats)
                .ok_or_else(|| fail(at, "vector"))?;
            b.append_value(&scratch.floats)?
        }),
    }
    Ok(())
}

/// A value as an error names it: `value "abc"` (cut short), `value 300`, `bytes`.
fn describe(value: &Value<'_>) -> String {
    match value {
        Value::Text(t) => match t.char_indices().nth(40) {
            Some((cut, _)) => format!("value {:?}...", &t[..cut]),
            None => format!("value {t:?}"),
        },
        Value::Int(v) => format!("value {v}"),
        Value::UInt(v) => format!("value {v}"),
        Value::Float32(v) => format!("value {v}"),
        Value::Float64(v) => format!("value {v}"),
        Value::Bytes(b) => format!("a {}-byte binary value", b.len()),
        Value::Null => "null".into(),
    }
}

fn not_text(name: &str, at: usize) -> Fault {
    Fault::new(at, format!("column {name}: value is not valid text"))
}

fn bytes_of<'v>(value: &'v Value<'_>) -> Option<&'v [u8]> {
    match value {
        Value::Text(t) => Some(t.as_bytes()),
        Value::Bytes(b) => Some(b),
        _ => None,
    }
}

/// The text of a value for a text column: ENUM/SET numbers become member names when the
/// definition is known, other numbers their decimal text (made in `scratch`).
fn text_of<'v>(spec: &'v ColumnSpec, value: &'v Value<'_>, scratch: &'v mut String) -> Option<&'v str> {
    use std::fmt::Write;
    if let Some((kind, members)) = &spec.members {
        let Some(n) = integer(value).and_then(|v| u64::try_from(v).ok()) else {
            // Already a name (official Canal writes names).
            return match value {
                Value::Text(t) => Some(t),
                _ => None,
            };
        };
        if *kind == MySqlType::Enum {
            return mysql::enum_name(members, n);
        }
        scratch.clear();
        mysql::set_names(members, n, scratch)?;
        return Some(scratch);
    }
    scratch.clear();
    match value {
        Value::Text(t) => return Some(t),
        Value::Bytes(b) => return crate::utf8::check(b).ok(),
        Value::Int(v) => scratch.push_str(itoa::Buffer::new().format(*v)),
        Value::UInt(v) => scratch.push_str(itoa::Buffer::new().format(*v)),
        Value::Float32(v) => write!(scratch, "{v}").ok()?,
        Value::Float64(v) => write!(scratch, "{v}").ok()?,
        Value::Null => return None,
    }
    Some(scratch)
}

/// Counters the typed layout keeps for `Decoder.stats`.
#[derive(Debug, Default, Clone)]
pub struct TypedStats {
    /// Values of columns the declared schema does not have.
    pub dropped_columns: u64,
    /// MySQL zero dates (`0000-00-00`), which have no Arrow form and are read as null.
    pub zero_dates: u64,
}

/// One declared field: how its values are read, its sinks for the row and for `_before`,
/// and the number of the last row image that gave it a value (images are numbered from 1), so
/// that the fields an image leaves out get a null. Kept together, as each value needs them all.
struct TypedField {
    spec: ColumnSpec,
    row: ColumnSink,
    before: ColumnSink,
    filled: u64,
}

/// Marks a field (its [`TypedField::filled`]) as given its value of row image `image`; a second
/// value for the same image (the column `name`, at `at`) is a fault.
fn fill(filled: &mut u64, image: u64, name: &str, at: usize) -> FaultResult<()> {
    if std::mem::replace(filled, image) == image {
        return Err(Fault::new(at, format!("column {name} appears twice in one row")));
    }
    Ok(())
}

pub struct TypedLayout {
    table: TableName,
    fields: Vec<TypedField>,
    index: FxHashMap<String, usize>,
    /// The field of each wire position in the last row image: a table's events list their
    /// columns in one order, which may differ from the declared one (Open's are by name).
    wire_fields: Vec<usize>,
    /// Whether each row of the batch has an old image: one entry per row appended.
    before_valid: Vec<bool>,
    /// Null `_before` rows not yet appended to the `before` sinks: most rows have no old
    /// image, so their nulls go in at once when a real one comes or the batch ends.
    before_nulls_due: usize,
    images: u64,
    /// Whether the image begun last is an old one (`_before`).
    old_image: bool,
    /// `images` when the last row ended: an image begun since belongs to an unfinished row.
    images_of_rows: u64,
    zone: ServerZone,
    scratch: Scratch,
    /// The table as its DDL describes it, followed through the DDL events of the stream: it
    /// says how to read values (ENUM/SET members) while the output schema stays as declared.
    definition: Option<TableDefinition>,
    pub stats: TypedStats,
}

impl TypedLayout {
    pub fn new(table: TableName, fields: &Fields, zone: ServerZone) -> Result<TypedLayout, String> {
        let specs = fields.iter().map(|f| ColumnSpec::new(f)).collect::<Result<Vec<_>, _>>()?;
        let index = specs.iter().enumerate().map(|(i, s)| (s.field.name().clone(), i)).collect();
        // The declared fields' `mysql_type` texts are the definition until a DDL says more.
        let columns: Vec<ColumnDefinition> = fields
            .iter()
            .filter_map(|f| {
                let text = f.metadata().get(MYSQL_TYPE_KEY)?;
                Some(ColumnDefinition::new(f.name(), text, f.is_nullable()))
            })
            .collect();
        let definition = (!columns.is_empty()).then(|| TableDefinition {
            schema: table.schema.clone(),
            table: table.table.clone(),
            columns,
            primary_key: Vec::new(),
        });
        Ok(TypedLayout {
            definition,
            table,
            fields: specs
                .into_iter()
                .map(|spec| TypedField { row: ColumnSink::new(&spec), before: ColumnSink::new(&spec), spec, filled: 0 })
                .collect(),
            before_valid: Vec::new(),
            before_nulls_due: 0,
            index,
            wire_fields: Vec::new(),
            zone,
            images: 0,
            old_image: false,
            images_of_rows: 0,
            scratch: Scratch::default(),
            stats: TypedStats::default(),
        })
    }

    /// Whether `sql` may rename this table. TiCDC reports a RENAME under the table's new name,
    /// so such a statement is followed (and kept) even though its event names another table;
    /// [`crate::schema::ddl::follow_ddl`] then decides from the statement itself.
    fn renames_this_table(&self, sql: &str) -> bool {
        let sql = sql.to_ascii_lowercase();
        sql.contains("rename") && sql.contains(&self.table.table.to_ascii_lowercase())
    }

    /// Follows a DDL or BOOTSTRAP event of this table: a `CREATE TABLE` (re)starts the
    /// definition, other statements change it; then a table schema the event carries (Simple's
    /// `tableSchema`, from which TiCDC's own decoder reads the rows after it) replaces it. The
    /// ENUM/SET members used to read values are taken from the definition again.
    fn follow(&mut self, event: &Event<'_>) {
        let followed = event.ddl.as_deref().is_some_and(|sql| {
            crate::schema::ddl::follow_ddl(&mut self.definition, &self.table, event.schema.as_deref(), sql)
        });
        if let Some(definition) = self.definition.as_ref().filter(|_| followed) {
            // RENAME TABLE: the table's events now come under its new name.
            self.table = TableName { schema: definition.schema.clone(), table: definition.table.clone() };
        }
        let carried = event.table_schema.as_deref().and_then(|text| TableSchema::from_json(text).ok());
        let carried = carried.map(|s| s.definition()).filter(|d| self.table.matches(Some(&d.schema), Some(&d.table)));
        match carried {
            Some(definition) => self.definition = Some(definition),
            None if !followed => return,
            None => {}
        }
        let Some(definition) = &self.definition else { return };
        for spec in self.fields.iter_mut().map(|f| &mut f.spec) {
            if let Some(column) = definition.columns.iter().find(|c| c.name.eq_ignore_ascii_case(spec.field.name())) {
                spec.members = enum_members(&column.ty);
            }
        }
    }

    fn column_fields(&self) -> Fields {
        self.fields.iter().map(|f| f.spec.field.clone()).collect()
    }

    fn field_of(&mut self, name: &str, position: usize) -> Option<usize> {
        let field = self.wire_fields.get(position).copied().unwrap_or(position);
        if self.fields.get(field).is_some_and(|f| same_name(f.spec.field.name(), name)) {
            return Some(field);
        }
        let field = self.index.get(name).copied()?;
        if self.wire_fields.len() <= position {
            self.wire_fields.resize(position + 1, usize::MAX);
        }
        self.wire_fields[position] = field;
        Some(field)
    }

    /// Appends one row image to the `row` sinks, or the `before` ones for an old image.
    fn append_image(&mut self, old: bool, columns: &[Column<'_>], range: std::ops::Range<usize>) -> FaultResult<()> {
        self.begin_image(old);
        for (position, column) in columns[range].iter().enumerate() {
            let field = self.field_of(&column.name, position);
            self.put(field, &column.value, column.at)?;
        }
        self.end_image();
        Ok(())
    }

    fn append_events(&mut self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()> {
        for event in kept.iter().map(|&i| &events.events[i]) {
            if matches!(event.kind, EventKind::Ddl | EventKind::Bootstrap) {
                self.follow(event);
            }
            match event.after.clone().or(event.before.clone()) {
                Some(image) => self.append_image(false, &events.columns, image)?,
                // DDL and watermarks: a row of nulls.
                None => self.fields.iter_mut().for_each(|f| f.row.append_null()),
            }
            match (event.kind, event.before.clone()) {
                (EventKind::Update, Some(old)) => {
                    self.append_image(true, &events.columns, old)?;
                    self.end_row(true);
                }
                _ => self.end_row(false),
            }
        }
        Ok(())
    }

    fn settle_before_nulls(&mut self) {
        let n = std::mem::take(&mut self.before_nulls_due);
        if n > 0 {
            self.fields.iter_mut().for_each(|f| f.before.append_nulls(n));
        }
    }
}

/// Powers of ten up to 10^38 (the largest decimal128 precision).
static POW10: [u128; 39] = {
    let mut table = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// An integer from any wire form, wide enough for the whole u64 and i64 ranges.
fn integer(value: &Value<'_>) -> Option<i128> {
    match value {
        Value::Int(v) => Some(*v as i128),
        Value::UInt(v) => Some(*v as i128),
        Value::Text(t) => mysql::parse_integer(t.as_bytes()),
        _ => None,
    }
}

fn float(value: &Value<'_>) -> Option<f64> {
    match value {
        Value::Float32(v) => Some(*v as f64),
        Value::Float64(v) => Some(*v),
        Value::Int(v) => Some(*v as f64),
        Value::UInt(v) => Some(*v as f64),
        Value::Text(t) => t.parse().ok(),
        _ => None,
    }
}

impl RowSink for TypedLayout {
    fn takes(&self, schema: &str, table: &str) -> bool {
        self.table.matches(Some(schema), Some(table))
    }

    fn field(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    fn begin_image(&mut self, old: bool) {
        self.images += 1;
        self.old_image = old;
        if old {
            self.settle_before_nulls();
        }
    }

    #[inline(always)]
    fn put(&mut self, field: Option<usize>, value: &Value<'_>, at: usize) -> FaultResult<()> {
        let Some(field) = field else {
            self.stats.dropped_columns += 1;
            return Ok(());
        };
        let f = &mut self.fields[field];
        let name = f.spec.field.name();
        fill(&mut f.filled, self.images, name, at)?;
        let sink = if self.old_image { &mut f.before } else { &mut f.row };
        let value = std::iter::once((value, at));
        append_values(&f.spec, sink, value, name, self.zone, &mut self.stats, &mut self.scratch)
    }

    fn put_image(&mut self, old: bool, image: &ImageValues<'_>) -> FaultResult<()> {
        self.begin_image(old);
        for (field, value, at) in image.values() {
            self.put(field, &value, at)?;
        }
        self.end_image();
        Ok(())
    }

    fn end_image(&mut self) {
        let (image, old) = (self.images, self.old_image);
        for f in self.fields.iter_mut().filter(|f| f.filled != image) {
            let sink = if old { &mut f.before } else { &mut f.row };
            sink.append_null();
        }
    }

    fn end_row(&mut self, had_old: bool) {
        self.images_of_rows = self.images;
        self.before_valid.push(had_old);
        if !had_old {
            self.before_nulls_due += 1;
        }
    }

    fn put_columns(&mut self, block: &RowColumns<'_, '_>) -> FaultResult<()> {
        // Counted as an image: one left unfinished by a failure is cut back by `truncate`.
        self.images += 1;
        let image = self.images;
        for (j, (&field, &name)) in block.fields.iter().zip(block.names).enumerate() {
            let Some(f) = field.map(|field| &mut self.fields[field]) else { continue };
            fill(&mut f.filled, image, name, block.column(j).next().map_or(0, |(_, at)| at))?;
        }
        let (rows, olds) = (block.rows(), block.had_old.iter().filter(|&&old| old).count());
        if olds > 0 {
            self.settle_before_nulls();
        }
        for (j, (&field, &name)) in block.fields.iter().zip(block.names).enumerate() {
            let Some(f) = field.map(|field| &mut self.fields[field]) else {
                self.stats.dropped_columns += (rows + olds) as u64;
                continue;
            };
            let (zone, stats, scratch) = (self.zone, &mut self.stats, &mut self.scratch);
            append_values(&f.spec, &mut f.row, block.column(j), name, zone, stats, scratch)?;
            if olds > 0 {
                append_values(&f.spec, &mut f.before, block.old_column(j), name, zone, stats, scratch)?;
            }
        }
        for f in self.fields.iter_mut().filter(|f| f.filled != image) {
            f.row.append_nulls(rows);
            if olds > 0 {
                f.before.append_nulls(rows);
            }
        }
        if olds == 0 {
            self.before_nulls_due += rows;
        }
        self.before_valid.extend_from_slice(block.had_old);
        self.images_of_rows = self.images;
        Ok(())
    }

    fn rows(&self) -> usize {
        self.before_valid.len()
    }

    fn truncate(&mut self, rows: usize) {
        if rows == self.before_valid.len() && self.images == self.images_of_rows {
            return;
        }
        self.images_of_rows = self.images;
        self.settle_before_nulls();
        for sink in self.fields.iter_mut().flat_map(|f| [&mut f.row, &mut f.before]) {
            sink.truncate(rows);
        }
        self.before_valid.truncate(rows);
    }
}

impl Layout for TypedLayout {
    fn fields(&self) -> Vec<FieldRef> {
        let mut fields: Vec<FieldRef> = self.fields.iter().map(|f| f.spec.field.clone()).collect();
        fields.push(Arc::new(Field::new("_before", DataType::Struct(self.column_fields()), true)));
        fields
    }

    fn set_input(&mut self, buffers: &[arrow_buffer::Buffer]) {
        for sink in self.fields.iter_mut().flat_map(|f| [&mut f.row, &mut f.before]) {
            match sink {
                ColumnSink::TextView(b) => b.set_input(buffers),
                ColumnSink::BinaryView(b) => b.set_input(buffers),
                _ => {}
            }
        }
    }

    fn keeps(&self, event: &Event<'_>) -> bool {
        let (schema, table) = (event.schema.as_deref(), event.table.as_deref());
        match event.kind {
            EventKind::Watermark => true,
            EventKind::Ddl => {
                (schema == Some(self.table.schema.as_str()) && (table.is_none() || self.table.matches(schema, table)))
                    || event.ddl.as_deref().is_some_and(|sql| self.renames_this_table(sql))
            }
            _ => self.table.matches(schema, table),
        }
    }

    fn append(&mut self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()> {
        let start = self.before_valid.len();
        let appended = self.append_events(events, kept);
        if appended.is_err() {
            self.truncate(start);
        }
        appended
    }

    fn row_sink(&mut self) -> Option<&mut dyn RowSink> {
        Some(self)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("dropped_columns", self.stats.dropped_columns), ("zero_dates", self.stats.zero_dates)]
    }

    fn append_null(&mut self) {
        self.fields.iter_mut().for_each(|f| f.row.append_null());
        self.before_nulls_due += 1;
        self.before_valid.push(false);
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.settle_before_nulls();
        let mut columns: Vec<ArrayRef> = self.fields.iter_mut().map(|f| f.row.finish_and_presize(&f.spec)).collect();
        let before: Vec<ArrayRef> = self.fields.iter_mut().map(|f| f.before.finish_and_presize(&f.spec)).collect();
        let valid = std::mem::take(&mut self.before_valid);
        let valid = NullBuffer::from(valid);
        let len = valid.len();
        let before = if self.fields.is_empty() {
            StructArray::new_empty_fields(len, Some(valid))
        } else {
            StructArray::new(self.column_fields(), before, Some(valid))
        };
        columns.push(Arc::new(before));
        columns
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{Array, BinaryArray, Int64Array, StringArray};

    use super::*;

    /// A row image put at once reads as its values put one at a time: text borrowed or decoded,
    /// ENUM names from numbers, integers from text, a column the output lacks counted and dropped;
    /// a value that does not fit, or a second value for one field, fails with its offset.
    #[test]
    fn an_image_put_at_once_converts_each_value_for_its_field() {
        let kind = Field::new("kind", DataType::Utf8, true)
            .with_metadata(HashMap::from([(MYSQL_TYPE_KEY.to_string(), "enum('a','b')".to_string())]));
        let fields = Fields::from(vec![
            Field::new("name", DataType::Utf8, true),
            kind,
            Field::new("qty", DataType::Int64, true),
            Field::new("raw", DataType::Binary, true),
        ]);
        let table = TableName::parse("shop.orders").unwrap();
        let mut layout = TypedLayout::new(table, &fields, ServerZone::Utc).unwrap();
        let mut image = ImageValues::default();
        let borrowed = |text: &'static str| move |_: &mut String| Ok(Some(text));
        let decoded = |text: &'static str| {
            move |out: &mut String| {
                out.push_str(text);
                Ok(None)
            }
        };
        image.push_text(Some(0), 1, decoded("Zoë")).unwrap();
        image.push_text(Some(1), 2, borrowed("2")).unwrap();
        image.push_text(Some(2), 3, decoded("42")).unwrap();
        image.push_bytes(Some(3), 4, |_| Ok(Some(&b"\x00"[..]))).unwrap();
        image.push_text(None, 5, borrowed("gone")).unwrap();
        layout.put_image(false, &image).unwrap();
        layout.end_row(false);
        image.clear();
        image.push_null(Some(0), 1);
        image
            .push_bytes(Some(3), 4, |out| {
                out.extend_from_slice(&[0xff, 0]);
                Ok(None)
            })
            .unwrap();
        layout.put_image(false, &image).unwrap();
        layout.end_row(false);
        image.clear();
        image.push_text(Some(2), 7, borrowed("x")).unwrap();
        assert_eq!(layout.put_image(false, &image).unwrap_err().offset, 7);
        layout.truncate(2);
        image.clear();
        image.push_text(Some(1), 8, borrowed("a")).unwrap();
        image.push_text(Some(1), 9, borrowed("b")).unwrap();
        let twice = layout.put_image(false, &image).unwrap_err();
        assert!(twice.reason.contains("kind appears twice") && twice.offset == 9, "{twice:?}");
        layout.truncate(2);
        assert_eq!(layout.stats.dropped_columns, 1);
        let columns = layout.finish();
        let text = |i: usize| columns[i].as_any().downcast_ref::<StringArray>().unwrap().clone();
        assert_eq!(text(0), StringArray::from(vec![Some("Zoë"), None]));
        assert_eq!(text(1), StringArray::from(vec![Some("b"), None]));
        assert_eq!(columns[2].as_any().downcast_ref::<Int64Array>().unwrap(), &Int64Array::from(vec![Some(42), None]));
        let raw = columns[3].as_any().downcast_ref::<BinaryArray>().unwrap();
        assert_eq!(raw, &BinaryArray::from(vec![&b"\x00"[..], &[0xff, 0][..]]));
        assert_eq!(columns[4].len(), 2);
    }
}
