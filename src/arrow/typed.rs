//! The typed layout: one table's columns with real Arrow types, then `_before`, a struct of the
//! same columns holding the old row of an UPDATE.
//!
//! Each message is converted in two steps so that a value that does not fit its column fails the
//! whole message with nothing appended: every value is first checked and turned into a [`Cell`]
//! (numbers parsed, names looked up; strings and bytes stay references to the event), then the
//! cells are pushed into the Arrow builders, which cannot fail.

use std::sync::Arc;

use arrow_array::builder::*;
use arrow_array::{ArrayRef, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef, Fields, TimeUnit};
use chrono::{DateTime, TimeZone};
use chrono_tz::Tz;
use rustc_hash::FxHashMap;

use super::views::ViewBuilder;
use super::Layout;
use crate::error::{Fault, FaultResult};
use crate::event::{same_name, Column, Event, EventKind, MessageEvents, Value};
use crate::mysql::{self, MySqlType, TypeDescription};
use crate::table::{ColumnDefinition, TableDefinition};

/// Field metadata key holding a column's MySQL type description.
pub const MYSQL_TYPE_KEY: &str = "mysql_type";

/// `db.tbl`, as users name a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub schema: String,
    pub table: String,
}

impl TableName {
    pub fn parse(name: &str) -> Option<TableName> {
        let (schema, table) = name.split_once('.')?;
        let unquote = |s: &str| s.trim().trim_matches('`').to_string();
        Some(TableName { schema: unquote(schema), table: unquote(table) })
    }

    fn matches(&self, schema: Option<&str>, table: Option<&str>) -> bool {
        schema == Some(self.schema.as_str()) && table == Some(self.table.as_str())
    }
}

/// The zone TIMESTAMP values are written in.
#[derive(Debug, Clone, Copy)]
pub enum ServerZone {
    Utc,
    Named(Tz),
}

impl ServerZone {
    pub fn parse(name: &str) -> Option<ServerZone> {
        match name {
            "" | "UTC" | "utc" | "Etc/UTC" | "+00:00" => Some(ServerZone::Utc),
            _ => name.parse::<Tz>().ok().map(ServerZone::Named),
        }
    }

    /// Wall-clock microseconds in this zone to UTC microseconds.
    fn to_utc(self, local_micros: i64) -> Option<i64> {
        match self {
            ServerZone::Utc => Some(local_micros),
            ServerZone::Named(tz) => {
                let naive = DateTime::from_timestamp_micros(local_micros)?.naive_utc();
                Some(tz.from_local_datetime(&naive).earliest()?.timestamp_micros())
            }
        }
    }
}

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
            D::Timestamp(_, Some(tz)) => {
                (Target::Timestamp, D::Timestamp(TimeUnit::Microsecond, Some(tz.clone())))
            }
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

/// A checked value waiting to be appended. Kept to 16 bytes (wider payloads live in the
/// [`Staging`] and are named by index) so that cells move in registers: a 32-byte cell went
/// through the stack and stalled on store forwarding once per value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    /// `Staging::decimals[i]`.
    Decimal(usize),
    Float32(f32),
    Float64(f64),
    /// The text or bytes of `MessageEvents::columns[i]`, checked to fit.
    Column(usize),
    /// Text made during conversion (ENUM/SET names): `Staging::spans[i]` of the staging text.
    Staged(usize),
    /// Floats of a VECTOR: `Staging::spans[i]` of the staging floats.
    Vector(usize),
}

const _: () = assert!(std::mem::size_of::<Cell>() == 16);

enum ColumnBuilder {
    Bool(BooleanBuilder),
    Int8(Int8Builder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Decimal(Decimal128Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
    Time(DurationMicrosecondBuilder),
    Text(StringBuilder),
    Binary(BinaryBuilder),
    TextView(ViewBuilder),
    BinaryView(ViewBuilder),
    Vector(ListBuilder<Float32Builder>),
}

impl ColumnBuilder {
    fn new(spec: &ColumnSpec) -> ColumnBuilder {
        match (&spec.target, spec.field.data_type()) {
            (Target::Bool, _) => ColumnBuilder::Bool(BooleanBuilder::new()),
            (Target::Int8, _) => ColumnBuilder::Int8(Int8Builder::new()),
            (Target::Int16, _) => ColumnBuilder::Int16(Int16Builder::new()),
            (Target::Int32, _) => ColumnBuilder::Int32(Int32Builder::new()),
            (Target::Int64, _) => ColumnBuilder::Int64(Int64Builder::new()),
            (Target::Decimal { .. }, dt) => {
                ColumnBuilder::Decimal(Decimal128Builder::new().with_data_type(dt.clone()))
            }
            (Target::Float32, _) => ColumnBuilder::Float32(Float32Builder::new()),
            (Target::Float64, _) => ColumnBuilder::Float64(Float64Builder::new()),
            (Target::Date, _) => ColumnBuilder::Date(Date32Builder::new()),
            (Target::DateTime | Target::Timestamp, dt) => {
                ColumnBuilder::Timestamp(TimestampMicrosecondBuilder::new().with_data_type(dt.clone()))
            }
            (Target::Time, _) => ColumnBuilder::Time(DurationMicrosecondBuilder::new()),
            (Target::Text, DataType::Utf8View) => ColumnBuilder::TextView(ViewBuilder::default()),
            (Target::Text, _) => ColumnBuilder::Text(StringBuilder::new()),
            (Target::Binary, DataType::BinaryView) => ColumnBuilder::BinaryView(ViewBuilder::default()),
            (Target::Binary, _) => ColumnBuilder::Binary(BinaryBuilder::new()),
            (Target::Vector, _) => ColumnBuilder::Vector(ListBuilder::new(Float32Builder::new())),
        }
    }

    /// Appends one cell per row: the cell, or null where the row has none. Column by column
    /// (rather than row by row), so each builder's kind is matched once per message and the
    /// loop over its rows is a tight one.
    fn append_cells<'c>(&mut self, cells: impl Iterator<Item = Option<&'c Cell>>, staging: &Staging, columns: &[Column<'_>]) {
        use ColumnBuilder as B;
        macro_rules! each {
            ($b:ident, $($pat:pat => $e:expr),+ $(,)?) => {
                for cell in cells {
                    match cell {
                        $(Some($pat) => $e,)+
                        _ => $b.append_null(),
                    }
                }
            };
        }
        let bytes_of = |i: usize| match &columns[i].value {
            Value::Text(t) => Some(t.as_bytes()),
            Value::Bytes(bytes) => Some(bytes.as_ref()),
            _ => None,
        };
        match self {
            B::Bool(b) => each!(b, Cell::Bool(v) => b.append_value(*v)),
            B::Int8(b) => each!(b, Cell::Int(v) => b.append_value(*v as i8)),
            B::Int16(b) => each!(b, Cell::Int(v) => b.append_value(*v as i16)),
            B::Int32(b) => each!(b, Cell::Int(v) => b.append_value(*v as i32)),
            B::Int64(b) => each!(b, Cell::Int(v) => b.append_value(*v)),
            B::Date(b) => each!(b, Cell::Int(v) => b.append_value(*v as i32)),
            B::Timestamp(b) => each!(b, Cell::Int(v) => b.append_value(*v)),
            B::Time(b) => each!(b, Cell::Int(v) => b.append_value(*v)),
            B::Decimal(b) => each!(b, Cell::Decimal(i) => b.append_value(staging.decimals[*i])),
            B::Float32(b) => each!(b, Cell::Float32(v) => b.append_value(*v)),
            B::Float64(b) => each!(b, Cell::Float64(v) => b.append_value(*v)),
            B::Text(b) => each!(b,
                Cell::Column(i) => match &columns[*i].value {
                    Value::Text(t) => b.append_value(t),
                    Value::Bytes(bytes) => b.append_value(crate::utf8::check(bytes).unwrap_or_default()),
                    _ => b.append_null(),
                },
                Cell::Staged(i) => b.append_value(&staging.text[staging.spans[*i].clone()]),
            ),
            B::Binary(b) => each!(b, Cell::Column(i) => b.append_option(bytes_of(*i))),
            B::TextView(b) => each!(b,
                Cell::Column(i) => match &columns[*i].value {
                    Value::Text(t) => b.append(t.as_bytes()),
                    Value::Bytes(bytes) if crate::utf8::check(bytes).is_ok() => b.append(bytes),
                    _ => b.append_null(),
                },
                Cell::Staged(i) => b.append(staging.text[staging.spans[*i].clone()].as_bytes()),
            ),
            B::BinaryView(b) => each!(b,
                Cell::Column(i) => match bytes_of(*i) {
                    Some(bytes) => b.append(bytes),
                    None => b.append_null(),
                },
            ),
            B::Vector(b) => each!(b, Cell::Vector(i) => {
                b.values().append_slice(&staging.floats[staging.spans[*i].clone()]);
                b.append(true);
            }),
        }
    }

    fn append_null(&mut self) {
        self.append_nulls(1);
    }

    /// Bytes held by a utf8/binary builder (whose offsets are i32); 0 for other kinds.
    fn bytes(&self) -> Option<usize> {
        match self {
            ColumnBuilder::Text(b) => Some(b.values_slice().len()),
            ColumnBuilder::Binary(b) => Some(b.values_slice().len()),
            _ => None,
        }
    }

    fn append_nulls(&mut self, n: usize) {
        use ColumnBuilder as B;
        match self {
            B::Bool(b) => b.append_nulls(n),
            B::Int8(b) => b.append_nulls(n),
            B::Int16(b) => b.append_nulls(n),
            B::Int32(b) => b.append_nulls(n),
            B::Int64(b) => b.append_nulls(n),
            B::Decimal(b) => b.append_nulls(n),
            B::Float32(b) => b.append_nulls(n),
            B::Float64(b) => b.append_nulls(n),
            B::Date(b) => b.append_nulls(n),
            B::Timestamp(b) => b.append_nulls(n),
            B::Time(b) => b.append_nulls(n),
            B::Text(b) => b.append_nulls(n),
            B::Binary(b) => b.append_nulls(n),
            B::TextView(b) | B::BinaryView(b) => b.append_nulls(n),
            B::Vector(b) => b.append_nulls(n),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        use ColumnBuilder as B;
        match self {
            B::Bool(b) => Arc::new(b.finish()),
            B::Int8(b) => Arc::new(b.finish()),
            B::Int16(b) => Arc::new(b.finish()),
            B::Int32(b) => Arc::new(b.finish()),
            B::Int64(b) => Arc::new(b.finish()),
            B::Decimal(b) => Arc::new(b.finish()),
            B::Float32(b) => Arc::new(b.finish()),
            B::Float64(b) => Arc::new(b.finish()),
            B::Date(b) => Arc::new(b.finish()),
            B::Timestamp(b) => Arc::new(b.finish()),
            B::Time(b) => Arc::new(b.finish()),
            B::Text(b) => Arc::new(b.finish()),
            B::Binary(b) => Arc::new(b.finish()),
            B::TextView(b) => b.finish_utf8(),
            B::BinaryView(b) => b.finish_binary(),
            B::Vector(b) => Arc::new(b.finish()),
        }
    }
}

#[derive(Default)]
struct Staging {
    cells: Vec<Cell>,
    decimals: Vec<i128>,
    text: String,
    floats: Vec<f32>,
    spans: Vec<std::ops::Range<usize>>,
}

impl Staging {
    fn clear(&mut self) {
        self.cells.clear();
        self.decimals.clear();
        self.text.clear();
        self.floats.clear();
        self.spans.clear();
    }

    fn decimal(&mut self, v: i128) -> Cell {
        self.decimals.push(v);
        Cell::Decimal(self.decimals.len() - 1)
    }

    fn span(&mut self, span: std::ops::Range<usize>) -> usize {
        self.spans.push(span);
        self.spans.len() - 1
    }
}

/// Counters the typed layout keeps for `Decoder.stats`.
#[derive(Debug, Default, Clone)]
pub struct TypedStats {
    /// Values of columns the declared schema does not have.
    pub dropped_columns: u64,
    /// MySQL zero dates (`0000-00-00`), which have no Arrow form and are read as null.
    pub zero_dates: u64,
}

pub struct TypedLayout {
    table: TableName,
    specs: Vec<ColumnSpec>,
    index: FxHashMap<String, usize>,
    /// The field of each wire position in the last row image: a table's events list their
    /// columns in one order, which may differ from the declared one (Open's are by name).
    wire_fields: Vec<usize>,
    row: Vec<ColumnBuilder>,
    before: Vec<ColumnBuilder>,
    before_valid: Vec<bool>,
    /// Null `_before` rows not yet appended to the `before` builders: most rows have no old
    /// image, so their nulls go in at once when a real one comes or the batch ends.
    before_nulls_due: usize,
    zone: ServerZone,
    staging: Staging,
    /// Per kept event of the message being appended: where its row image and old image start
    /// among the staged cells.
    images: Vec<(Option<usize>, Option<usize>)>,
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
            row: specs.iter().map(ColumnBuilder::new).collect(),
            before: specs.iter().map(ColumnBuilder::new).collect(),
            before_valid: Vec::new(),
            before_nulls_due: 0,
            specs,
            index,
            wire_fields: Vec::new(),
            zone,
            staging: Staging::default(),
            images: Vec::new(),
            stats: TypedStats::default(),
        })
    }

    /// A layout for the table `definition` describes (e.g. from [`crate::ddl::parse_create_table`]),
    /// with its [`TableDefinition::arrow_schema`] as output schema.
    pub fn from_definition(definition: &TableDefinition, zone: ServerZone) -> Result<TypedLayout, String> {
        let table = TableName { schema: definition.schema.clone(), table: definition.table.clone() };
        let mut layout = TypedLayout::new(table, &definition.arrow_schema().fields, zone)?;
        layout.definition = Some(definition.clone());
        Ok(layout)
    }

    /// Whether `sql` may rename this table. TiCDC reports a RENAME under the table's new name,
    /// so such a statement is followed (and kept) even though its event names another table;
    /// [`crate::ddl::follow_ddl`] then decides from the statement itself.
    fn renames_this_table(&self, sql: &str) -> bool {
        let sql = sql.to_ascii_lowercase();
        sql.contains("rename") && sql.contains(&self.table.table.to_ascii_lowercase())
    }

    /// Follows a DDL statement of this table: a `CREATE TABLE` (re)starts the definition, other
    /// statements change it; the ENUM/SET members used to read values are taken from it again.
    fn follow(&mut self, schema: Option<&str>, sql: &str) {
        if !crate::ddl::follow_ddl(&mut self.definition, &self.table, schema, sql) {
            return;
        }
        let Some(definition) = &self.definition else { return };
        // RENAME TABLE: the table's events now come under its new name.
        self.table = TableName { schema: definition.schema.clone(), table: definition.table.clone() };
        for spec in &mut self.specs {
            if let Some(column) = definition.columns.iter().find(|c| c.name.eq_ignore_ascii_case(spec.field.name())) {
                spec.members = enum_members(&column.ty);
            }
        }
    }

    fn column_fields(&self) -> Fields {
        self.specs.iter().map(|s| s.field.clone()).collect()
    }

    fn field_of(&mut self, name: &str, position: usize) -> Option<usize> {
        let field = self.wire_fields.get(position).copied().unwrap_or(position);
        if self.specs.get(field).is_some_and(|s| same_name(s.field.name(), name)) {
            return Some(field);
        }
        let field = self.index.get(name).copied()?;
        if self.wire_fields.len() <= position {
            self.wire_fields.resize(position + 1, usize::MAX);
        }
        self.wire_fields[position] = field;
        Some(field)
    }

    /// Converts one row image into `specs.len()` cells at the end of the staging cells.
    fn stage_image(&mut self, columns: &[Column<'_>], range: std::ops::Range<usize>) -> FaultResult<()> {
        let base = self.staging.cells.len();
        self.staging.cells.resize(base + self.specs.len(), Cell::Null);
        for (position, i) in range.enumerate() {
            let column = &columns[i];
            let Some(field) = self.field_of(&column.name, position) else {
                self.stats.dropped_columns += 1;
                continue;
            };
            self.stage_value(base + field, field, column, i)?;
        }
        Ok(())
    }

    /// Checks and converts `column` (`MessageEvents::columns[index]`) for `field` into the staging
    /// cell `slot`, which is null until then. The cell is stored here rather than returned: a
    /// returned `Result<Cell, Fault>` travels through memory and stalled the caller's copy.
    fn stage_value(&mut self, slot: usize, field: usize, column: &Column<'_>, index: usize) -> FaultResult<()> {
        let spec = &self.specs[field];
        let fail = |what: &str| {
            Fault::new(column.at, format!("column {}: {what} does not fit {}", column.name, spec.field.data_type()))
        };
        let value = &column.value;
        if value.is_null() {
            return Ok(());
        }
        let text = match value {
            Value::Text(t) => Some(t.as_bytes()),
            _ => None,
        };
        let cell = match &spec.target {
            Target::Bool => Cell::Bool(integer(value).ok_or_else(|| fail("value"))? != 0),
            Target::Int8 | Target::Int16 | Target::Int32 | Target::Int64 => {
                let v = integer(value).ok_or_else(|| fail("value"))?;
                let (lo, hi) = match spec.target {
                    Target::Int8 => (i8::MIN as i128, i8::MAX as i128),
                    Target::Int16 => (i16::MIN as i128, i16::MAX as i128),
                    Target::Int32 => (i32::MIN as i128, i32::MAX as i128),
                    _ => (i64::MIN as i128, i64::MAX as i128),
                };
                if v < lo || v > hi {
                    return Err(fail(&format!("value {v}")));
                }
                Cell::Int(v as i64)
            }
            Target::Decimal { precision, scale } => {
                let v = match (text, value) {
                    (Some(t), _) => mysql::parse_decimal_i128(t, *scale as u32),
                    (None, Value::Int(_) | Value::UInt(_)) => {
                        integer(value).and_then(|v| v.checked_mul(POW10[*scale as usize] as i128))
                    }
                    _ => None,
                }
                .ok_or_else(|| fail("value"))?;
                if v.unsigned_abs() >= POW10[*precision as usize] {
                    return Err(fail("value"));
                }
                self.staging.decimal(v)
            }
            Target::Float32 => Cell::Float32(float(value).ok_or_else(|| fail("value"))? as f32),
            Target::Float64 => Cell::Float64(float(value).ok_or_else(|| fail("value"))?),
            Target::Date => match mysql::parse_date(text.ok_or_else(|| fail("value"))?) {
                Some(Some(d)) => Cell::Int(mysql::days_from_civil(d.year, d.month, d.day)),
                Some(None) => self.zero_date(),
                None => return Err(fail("date")),
            },
            Target::DateTime | Target::Timestamp => {
                match mysql::parse_datetime_micros(text.ok_or_else(|| fail("value"))?) {
                    Some(Some(local)) if matches!(spec.target, Target::DateTime) => Cell::Int(local),
                    Some(Some(local)) => Cell::Int(self.zone.to_utc(local).ok_or_else(|| fail("time"))?),
                    Some(None) => self.zero_date(),
                    None => return Err(fail("date-time")),
                }
            }
            Target::Time => {
                Cell::Int(mysql::parse_time_micros(text.ok_or_else(|| fail("value"))?).ok_or_else(|| fail("time"))?)
            }
            Target::Text => match self.text_cell(field, column, index) {
                Some(cell) => cell,
                None => return Err(Fault::new(column.at, format!("column {}: value is not valid text", column.name))),
            },
            Target::Binary => match value {
                Value::Text(_) | Value::Bytes(_) => Cell::Column(index),
                _ => return Err(fail("value")),
            },
            Target::Vector => {
                let from = self.staging.floats.len();
                mysql::parse_vector(text.ok_or_else(|| fail("value"))?, &mut self.staging.floats)
                    .ok_or_else(|| fail("vector"))?;
                let to = self.staging.floats.len();
                Cell::Vector(self.staging.span(from..to))
            }
        };
        self.staging.cells[slot] = cell;
        Ok(())
    }

    fn zero_date(&mut self) -> Cell {
        self.stats.zero_dates += 1;
        Cell::Null
    }

    /// Text columns: ENUM/SET numbers become member names when the definition is known.
    fn text_cell(&mut self, field: usize, column: &Column<'_>, index: usize) -> Option<Cell> {
        match &self.specs[field].members {
            Some((kind, members)) => {
                let Some(n) = integer(&column.value).and_then(|v| u64::try_from(v).ok()) else {
                    // Already a name (official Canal writes names).
                    return matches!(column.value, Value::Text(_)).then_some(Cell::Column(index));
                };
                let staging = &mut self.staging.text;
                let from = staging.len();
                if *kind == MySqlType::Enum {
                    staging.push_str(mysql::enum_name(members, n)?);
                } else {
                    let mut names = String::new();
                    mysql::set_names(members, n, &mut names)?;
                    staging.push_str(&names);
                }
                let to = staging.len();
                Some(Cell::Staged(self.staging.span(from..to)))
            }
            _ => match &column.value {
                Value::Text(_) => Some(Cell::Column(index)),
                Value::Bytes(b) => crate::utf8::check(b).is_ok().then_some(Cell::Column(index)),
                Value::Int(v) => Some(self.stage_text(&v.to_string())),
                Value::UInt(v) => Some(self.stage_text(&v.to_string())),
                Value::Float32(v) => Some(self.stage_text(&v.to_string())),
                Value::Float64(v) => Some(self.stage_text(&v.to_string())),
                Value::Null => Some(Cell::Null),
            },
        }
    }

    /// Checks that the utf8/binary columns can take the staged cells of this message.
    fn ensure_room(&self, columns: &[Column<'_>]) -> FaultResult<()> {
        let n = self.specs.len().max(1);
        for (j, (row, before)) in self.row.iter().zip(&self.before).enumerate() {
            let Some(used) = row.bytes().max(before.bytes()) else { continue };
            let more: usize = self.staging.cells.get(j..).unwrap_or_default()
                .iter()
                .step_by(n)
                .map(|cell| match *cell {
                    Cell::Column(i) => match &columns[i].value {
                        Value::Text(t) => t.len(),
                        Value::Bytes(b) => b.len(),
                        _ => 0,
                    },
                    Cell::Staged(i) => self.staging.spans[i].len(),
                    _ => 0,
                })
                .sum();
            super::ensure_room(self.specs[j].field.name(), used, more)?;
        }
        Ok(())
    }

    fn settle_before_nulls(&mut self) {
        let n = std::mem::take(&mut self.before_nulls_due);
        if n > 0 {
            self.before.iter_mut().for_each(|b| b.append_nulls(n));
        }
    }

    fn stage_text(&mut self, text: &str) -> Cell {
        let from = self.staging.text.len();
        self.staging.text.push_str(text);
        let to = self.staging.text.len();
        Cell::Staged(self.staging.span(from..to))
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
        Value::Text(t) => {
            let t = t.as_ref();
            t.parse::<i64>().map(i128::from).ok().or_else(|| t.parse::<u64>().ok().map(i128::from))
        }
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

impl Layout for TypedLayout {
    fn fields(&self) -> Vec<FieldRef> {
        let mut fields: Vec<FieldRef> = self.specs.iter().map(|s| s.field.clone()).collect();
        fields.push(Arc::new(Field::new("_before", DataType::Struct(self.column_fields()), true)));
        fields
    }

    fn set_input(&mut self, buffers: &[arrow_buffer::Buffer]) {
        for builder in self.row.iter_mut().chain(self.before.iter_mut()) {
            if let ColumnBuilder::TextView(b) | ColumnBuilder::BinaryView(b) = builder {
                b.set_input(buffers);
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
        self.staging.clear();
        for event in kept.iter().map(|&i| &events.events[i]) {
            if let (EventKind::Ddl, Some(sql)) = (event.kind, event.ddl.as_deref()) {
                self.follow(event.schema.as_deref(), sql);
            }
            if let Some(image) = event.after.clone().or(event.before.clone()) {
                self.stage_image(&events.columns, image)?;
            }
            if let (EventKind::Update, Some(before)) = (event.kind, event.before.clone()) {
                self.stage_image(&events.columns, before)?;
            }
        }
        self.ensure_room(&events.columns)?;
        // Where each kept event's row image and old image start among the staged cells (staged
        // above in this order, `n` cells each); events without an image (DDL, watermarks) have
        // none and get nulls.
        let n = self.specs.len();
        let mut next = 0;
        let mut take = |has: bool| {
            next += if has { n } else { 0 };
            has.then_some(next - n)
        };
        self.images.clear();
        for event in kept.iter().map(|&i| &events.events[i]) {
            let image = take(event.after.is_some() || event.before.is_some());
            let old = take(event.kind == EventKind::Update && event.before.is_some());
            self.images.push((image, old));
        }
        let any_old = self.images.iter().any(|(_, old)| old.is_some());
        if any_old {
            self.settle_before_nulls();
        }
        let (staging, columns, images) = (&self.staging, &events.columns, &self.images);
        for (j, b) in self.row.iter_mut().enumerate() {
            b.append_cells(images.iter().map(|(image, _)| image.map(|at| &staging.cells[at + j])), staging, columns);
        }
        if any_old {
            for (j, b) in self.before.iter_mut().enumerate() {
                b.append_cells(images.iter().map(|(_, old)| old.map(|at| &staging.cells[at + j])), staging, columns);
            }
        } else {
            self.before_nulls_due += images.len();
        }
        self.before_valid.extend(images.iter().map(|(_, old)| old.is_some()));
        Ok(())
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("dropped_columns", self.stats.dropped_columns), ("zero_dates", self.stats.zero_dates)]
    }

    fn append_null(&mut self) {
        self.row.iter_mut().for_each(ColumnBuilder::append_null);
        self.before_nulls_due += 1;
        self.before_valid.push(false);
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.settle_before_nulls();
        let mut columns: Vec<ArrayRef> = self.row.iter_mut().map(ColumnBuilder::finish).collect();
        let before: Vec<ArrayRef> = self.before.iter_mut().map(ColumnBuilder::finish).collect();
        let valid = NullBuffer::from(std::mem::take(&mut self.before_valid));
        let len = valid.len();
        let before = if self.specs.is_empty() {
            StructArray::new_empty_fields(len, Some(valid))
        } else {
            StructArray::new(self.column_fields(), before, Some(valid))
        };
        columns.push(Arc::new(before));
        columns
    }
}
