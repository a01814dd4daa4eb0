//! From a value as a codec read it to a column's Arrow type: which sink each Arrow type gets,
//! and the one conversion every value goes through on its way into that sink.

use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, FieldRef, TimeUnit};

use super::sink::{BooleanSink, PrimitiveSink, RunSink, ValidityRun, Vector};
use super::views::ViewBuilder;
use super::wire::WireValue;
use super::ColumnStats;
use crate::error::{Fault, FaultResult};
use crate::schema::mapping::MYSQL_TYPE_KEY;
use crate::schema::mysql::{self, MySqlType, TypeDescription};
use crate::schema::ServerZone;

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

pub(super) struct ColumnSpec {
    pub(super) field: FieldRef,
    target: Target,
    /// ENUM/SET members when the column definition is known.
    pub(super) members: Option<(MySqlType, Vec<String>)>,
}

impl ColumnSpec {
    pub(super) fn new(field: &Field) -> Result<ColumnSpec, String> {
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
pub(super) fn enum_members(ty: &TypeDescription) -> Option<(MySqlType, Vec<String>)> {
    (matches!(ty.base, MySqlType::Enum | MySqlType::Set) && !ty.members.is_empty())
        .then(|| (ty.base, ty.members.clone()))
}

/// A column being built: one sink per Arrow type (see [`super::sink`]).
pub(super) enum ColumnSink {
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
    pub(super) fn new(spec: &ColumnSpec) -> ColumnSink {
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
    pub(super) fn finish_and_presize(&mut self, spec: &ColumnSpec) -> ArrayRef {
        let (rows, bytes) = (self.len(), self.value_bytes());
        let array = self.finish();
        *self = ColumnSink::with_capacity(spec, rows, bytes);
        array
    }

    fn len(&self) -> usize {
        each_sink!(self, s => s.len())
    }

    pub(super) fn append_null(&mut self) {
        each_sink!(self, s => s.append_null())
    }

    pub(super) fn append_nulls(&mut self, n: usize) {
        each_sink!(self, s => s.append_nulls(n))
    }

    pub(super) fn truncate(&mut self, len: usize) {
        each_sink!(self, s => s.truncate(len))
    }

    fn finish(&mut self) -> ArrayRef {
        each_sink!(self, s => s.finish())
    }
}

/// Room for values made during conversion: ENUM/SET names and numbers as text, VECTOR floats.
#[derive(Default)]
pub(super) struct Scratch {
    text: String,
    floats: Vec<f32>,
}

/// Checks and converts `values` (of the column `spec` describes, each with its offset in the
/// message) and appends them to `sink`, which is `spec`'s: a whole column of a message, or one
/// value, in any wire form (see [`WireValue`]). The match on the sink's type is made once, outside
/// the loop over the values. A value that does not fit fails the call, with the values before it
/// appended (the message is then cut back whole).
#[inline(always)]
pub(super) fn append_values<'v, V: WireValue<'v>>(
    spec: &ColumnSpec,
    sink: &mut ColumnSink,
    values: impl Iterator<Item = (V, usize)>,
    zone: ServerZone,
    stats: &mut ColumnStats,
    scratch: &mut Scratch,
) -> FaultResult<()> {
    use ColumnSink as B;
    let fail = |at: usize, what: &str| {
        Fault::new(at, format!("column {}: {what} does not fit {}", spec.field.name(), spec.field.data_type()))
    };
    let bad = |value: V, at: usize| fail(at, &value.describe());
    // Runs `$append` for each value that is not NULL, which pushes the value onto `$sink` and
    // gives its validity; a NULL pushes a null's slot. The validity bits are gathered apart.
    macro_rules! each {
        ($sink:ident, |$value:ident, $at:ident| $append:expr) => {{
            let mut validity = ValidityRun::default();
            for ($value, $at) in values {
                let valid = if $value.is_null() {
                    $sink.push_empty();
                    false
                } else {
                    $append
                };
                validity.push(valid, $sink.validity());
            }
            validity.end($sink.validity());
        }};
    }
    // Pushes a value, which is valid.
    macro_rules! valid {
        ($sink:ident, $value:expr) => {{
            $sink.push($value);
            true
        }};
    }
    macro_rules! int {
        ($b:ident, $t:ty) => {
            each!($b, |value, at| {
                let v = value.integer().ok_or_else(|| bad(value, at))?;
                valid!($b, <$t>::try_from(v).map_err(|_| fail(at, &format!("value {v}")))?)
            })
        };
    }
    match sink {
        B::Bool(b) => each!(b, |value, at| valid!(b, value.integer().ok_or_else(|| bad(value, at))? != 0)),
        B::Int8(b) => int!(b, i8),
        B::Int16(b) => int!(b, i16),
        B::Int32(b) => int!(b, i32),
        B::Int64(b) => int!(b, i64),
        B::Decimal(b) => {
            each!(b, |value, at| {
                let Target::Decimal { precision, scale } = spec.target else { return Err(bad(value, at)) };
                let v = match value.text_bytes() {
                    Some(t) => mysql::parse_decimal_i128(t, scale as u32),
                    None => value.number().and_then(|v| v.checked_mul(POW10[scale as usize] as i128)),
                }
                .filter(|v| v.unsigned_abs() < POW10[precision as usize])
                .ok_or_else(|| bad(value, at))?;
                valid!(b, v)
            })
        }
        B::Float32(b) => each!(b, |value, at| valid!(b, value.float().ok_or_else(|| bad(value, at))? as f32)),
        B::Float64(b) => each!(b, |value, at| valid!(b, value.float().ok_or_else(|| bad(value, at))?)),
        B::Date(b) => each!(b, |value, at| match mysql::parse_date_days(text(value).ok_or_else(|| bad(value, at))?) {
            Some(Some(days)) => valid!(b, days),
            Some(None) => zero_date(stats, || b.push_empty()),
            None => return Err(fail(at, "date")),
        }),
        B::Timestamp(b) => {
            let local_time = matches!(spec.target, Target::DateTime);
            each!(b, |value, at| match mysql::parse_datetime_micros(text(value).ok_or_else(|| bad(value, at))?) {
                Some(Some(local)) if local_time => valid!(b, local),
                Some(Some(local)) => valid!(b, zone.to_utc(local).ok_or_else(|| fail(at, "time"))?),
                Some(None) => zero_date(stats, || b.push_empty()),
                None => return Err(fail(at, "date-time")),
            })
        }
        B::Time(b) => {
            each!(b, |value, at| valid!(
                b,
                mysql::parse_time_micros(text(value).ok_or_else(|| bad(value, at))?).ok_or_else(|| fail(at, "time"))?
            ))
        }
        B::Text(b) => each!(b, |value, at| {
            let s = text_of(spec, value, &mut scratch.text).ok_or_else(|| not_text(spec, at))?;
            room(spec, b.items_len(), s.len())?;
            b.push(s)?;
            true
        }),
        B::TextView(b) => each!(b, |value, at| {
            b.push(text_of(spec, value, &mut scratch.text).ok_or_else(|| not_text(spec, at))?)?;
            true
        }),
        B::Binary(b) => each!(b, |value, at| {
            let bytes = value.bytes().ok_or_else(|| bad(value, at))?;
            room(spec, b.items_len(), bytes.len())?;
            b.push(bytes)?;
            true
        }),
        B::BinaryView(b) => each!(b, |value, at| {
            b.push(value.bytes().ok_or_else(|| bad(value, at))?)?;
            true
        }),
        B::Vector(b) => each!(b, |value, at| {
            scratch.floats.clear();
            mysql::parse_vector(text(value).ok_or_else(|| bad(value, at))?, &mut scratch.floats)
                .ok_or_else(|| fail(at, "vector"))?;
            b.push(&scratch.floats)?;
            true
        }),
    }
    Ok(())
}

/// A MySQL zero date (`0000-00-00`), which has no Arrow form: counted, and read as null (its
/// slot pushed by `push_empty`); returns its validity.
#[inline(always)]
fn zero_date(stats: &mut ColumnStats, push_empty: impl FnOnce()) -> bool {
    stats.zero_dates += 1;
    push_empty();
    false
}

/// The bytes of a value given as text, for a parser of ASCII.
#[inline(always)]
fn text<'v>(value: impl WireValue<'v>) -> Option<&'v [u8]> {
    value.text_bytes()
}

/// [`super::ensure_room`] for `spec`'s column, whose name is read only when there is no room.
#[inline(always)]
fn room(spec: &ColumnSpec, used: usize, more: usize) -> FaultResult<()> {
    if super::has_room(used, more) {
        return Ok(());
    }
    Err(super::no_room(spec.field.name()))
}

#[cold]
fn not_text(spec: &ColumnSpec, at: usize) -> Fault {
    Fault::new(at, format!("column {}: value is not valid text", spec.field.name()))
}

/// The text of a value for a text column: ENUM/SET numbers become member names when the
/// definition is known, other numbers their decimal text (made in `scratch`).
fn text_of<'s, 'v: 's>(spec: &'s ColumnSpec, value: impl WireValue<'v>, scratch: &'s mut String) -> Option<&'s str> {
    if let Some((kind, members)) = &spec.members {
        // Not a number: already a name (official Canal writes names).
        let Some(n) = value.integer().and_then(|v| u64::try_from(v).ok()) else { return value.text() };
        if *kind == MySqlType::Enum {
            return mysql::enum_name(members, n);
        }
        scratch.clear();
        mysql::set_names(members, n, scratch)?;
        return Some(scratch);
    }
    if let Some(text) = value.text() {
        return Some(text);
    }
    if let Some(bytes) = value.bytes() {
        return crate::utf8::check(bytes).ok();
    }
    scratch.clear();
    value.write_number(scratch).then_some(scratch)
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
