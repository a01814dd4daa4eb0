//! One table's output columns while a batch is decoded: a sink per field for the row and one for
//! `_before` (the old row of an UPDATE), each of the field's Arrow type.
//!
//! This sits below the codecs, beside [`crate::event`], so that a codec can write a message's
//! values straight into the columns, by field, with no row model between the wire and the column
//! and no dynamic call per value; the typed layout ([`crate::arrow`]) owns a [`TableColumns`],
//! feeds it the events of the messages no codec wrote directly, and finishes its arrays.
//!
//! Each value is checked, converted and appended to its field's sink in one step. A value that
//! does not fit its column fails the whole message, with nothing of it kept: every sink is cut
//! back to the rows before the message (`TableColumns::truncate`). Values come one at a time,
//! in whatever form the wire gave them (`wire::WireValue`), or a message's rows column by column;
//! all go through one conversion, `convert::append_values`, which matches the column's Arrow
//! type once for the values it is given.

mod convert;
mod sink;
mod views;
mod wire;

use std::sync::Arc;

use arrow_array::{ArrayRef, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef, Fields};
use rustc_hash::FxHashMap;

use self::convert::{append_values, enum_members, ColumnSink, ColumnSpec, Scratch};
use crate::error::{Fault, FaultResult};
use crate::event::same_name;
use crate::schema::table::TableDefinition;
use crate::schema::{ServerZone, TableName};

pub(crate) use self::wire::{Null, UncheckedText, WireValue};

/// The most bytes a utf8/binary output column of one batch can hold (its offsets are i32). A
/// message that would push a column past it fails, so a batch of small compressed messages that
/// expand to gigabytes is an error under the error policy, not a panic in an Arrow builder.
pub const MAX_COLUMN_BYTES: usize = i32::MAX as usize;

/// Whether a column holding `used` bytes can take `more`; else the fault for message.
pub(crate) fn ensure_room(column: &str, used: usize, more: usize) -> FaultResult<()> {
    if has_room(used, more) {
        return Ok(());
    }
    Err(no_room(column))
}

/// Whether a column holding `used` bytes can take `more` (see [`MAX_COLUMN_BYTES`]).
#[inline(always)]
fn has_room(used: usize, more: usize) -> bool {
    used.saturating_add(more) <= MAX_COLUMN_BYTES
}

/// The fault for a message that would push `column` past [`MAX_COLUMN_BYTES`].
#[cold]
fn no_room(column: &str) -> Fault {
    Fault::new(0, format!("column {column} of this batch's output would exceed 2 GiB; decode smaller batches"))
}

/// Counters kept for `Decoder.stats`.
#[derive(Debug, Default, Clone)]
pub(crate) struct ColumnStats {
    /// Values of columns the declared schema does not have.
    pub(crate) dropped_columns: u64,
    /// MySQL zero dates (`0000-00-00`), which have no Arrow form and are read as null.
    pub(crate) zero_dates: u64,
}

/// One declared field: how its values are read, its sinks for the row and for `_before`,
/// and the number of the last row image that gave it a value (images are numbered from 1), so
/// that the fields an image leaves out get a null. Kept together, as each value needs them all.
struct FieldColumns {
    spec: ColumnSpec,
    row: ColumnSink,
    before: ColumnSink,
    filled: u64,
}

/// Marks a field (its [`FieldColumns::filled`]) as given its value of row image `image`; a second
/// value for the same image (of the column `field`, at `at`) is a fault.
#[inline(always)]
fn fill(filled: &mut u64, image: u64, field: &Field, at: usize) -> FaultResult<()> {
    if std::mem::replace(filled, image) == image {
        return Err(given_twice(field, at));
    }
    Ok(())
}

#[cold]
fn given_twice(field: &Field, at: usize) -> Fault {
    Fault::new(at, format!("column {} appears twice in one row", field.name()))
}

/// The columns of one table being built, and where codecs put row values directly.
///
/// A codec that knows a table's columns resolves each to its field once per schema version
/// (`TableColumns::field`) and then puts every value by field. It may give a message up,
/// before or part-way through, to read it the general way
/// ([`crate::codec::Codec::decode_rows`]); a message given up or failed part-way is undone by
/// the driver with `TableColumns::truncate`.
pub struct TableColumns {
    table: TableName,
    fields: Vec<FieldColumns>,
    index: FxHashMap<String, usize>,
    /// The field of each wire position in the last row image put by name: a table's events list
    /// their columns in one order, which may differ from the declared one (Open's are by name).
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
    pub(crate) stats: ColumnStats,
}

impl TableColumns {
    /// The columns of `table`, one per field of `fields` (types per the contract).
    pub(crate) fn new(table: TableName, fields: &Fields, zone: ServerZone) -> Result<TableColumns, String> {
        let specs = fields.iter().map(|f| ColumnSpec::new(f)).collect::<Result<Vec<_>, _>>()?;
        let index = specs.iter().enumerate().map(|(i, s)| (s.field.name().clone(), i)).collect();
        let fields = specs
            .into_iter()
            .map(|spec| FieldColumns { row: ColumnSink::new(&spec), before: ColumnSink::new(&spec), spec, filled: 0 })
            .collect();
        Ok(TableColumns {
            table,
            fields,
            index,
            wire_fields: Vec::new(),
            before_valid: Vec::new(),
            before_nulls_due: 0,
            images: 0,
            old_image: false,
            images_of_rows: 0,
            zone,
            scratch: Scratch::default(),
            stats: ColumnStats::default(),
        })
    }

    pub(crate) fn table(&self) -> &TableName {
        &self.table
    }

    /// The table's new name after a RENAME.
    pub(crate) fn rename(&mut self, table: TableName) {
        self.table = table;
    }

    /// Reads ENUM/SET values by the members `definition` gives each field's column, if it has one.
    pub(crate) fn follow_definition(&mut self, definition: &TableDefinition) {
        for spec in self.fields.iter_mut().map(|f| &mut f.spec) {
            if let Some(column) = definition.columns.iter().find(|c| c.name.eq_ignore_ascii_case(spec.field.name())) {
                spec.members = enum_members(&column.ty);
            }
        }
    }

    /// Whether rows of `schema`.`table` go to these columns.
    pub(crate) fn takes(&self, schema: &str, table: &str) -> bool {
        self.table.matches(Some(schema), Some(table))
    }

    /// The field that takes the column `name`; None: the output has no such column.
    pub(crate) fn field(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The field of the column `name` at `position` of a row image, remembered by position.
    pub(crate) fn field_at(&mut self, name: &str, position: usize) -> Option<usize> {
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

    /// Starts a row image: an UPDATE's old image when `old`, else the row itself.
    pub(crate) fn begin_image(&mut self, old: bool) {
        self.images += 1;
        self.old_image = old;
        if old {
            self.settle_before_nulls();
        }
    }

    /// One value of the image begun last, in its wire form, for `field` (None: counted and
    /// dropped). `at` (the value's offset) is for the fault when the value does not fit, which
    /// names the field.
    #[inline(always)]
    pub(crate) fn put<'v>(&mut self, field: Option<usize>, value: impl WireValue<'v>, at: usize) -> FaultResult<()> {
        let Some(field) = field else {
            self.stats.dropped_columns += 1;
            return Ok(());
        };
        let f = &mut self.fields[field];
        fill(&mut f.filled, self.images, &f.spec.field, at)?;
        let sink = if self.old_image { &mut f.before } else { &mut f.row };
        let value = std::iter::once((value, at));
        append_values(&f.spec, sink, value, self.zone, &mut self.stats, &mut self.scratch)
    }

    /// Puts a string that `read` decodes for `field`: a string the wire holds as it is `read`
    /// returns, one with escapes it decodes onto the end of the string it is given and returns
    /// None. For a plain text column that string is the column's own, so a decoded value is not
    /// copied again; for any other the value is decoded into `scratch` and put as [`Self::put`]
    /// puts it.
    #[inline(always)]
    pub(crate) fn put_text_with<'v>(
        &mut self,
        field: Option<usize>,
        at: usize,
        scratch: &mut String,
        read: impl FnOnce(&mut String) -> FaultResult<Option<&'v str>>,
    ) -> FaultResult<()> {
        if let Some(f) = field.map(|field| &mut self.fields[field]) {
            let sink = if self.old_image { &mut f.before } else { &mut f.row };
            if let (ColumnSink::Text(sink), None) = (sink, &f.spec.members) {
                fill(&mut f.filled, self.images, &f.spec.field, at)?;
                return sink.append_text_with(
                    #[inline(always)]
                    |text| {
                        if let Some(read) = read(text)? {
                            text.push_str(read);
                        }
                        Ok(())
                    },
                    || no_room(f.spec.field.name()),
                );
            }
        }
        scratch.clear();
        let read = read(scratch)?;
        self.put(field, read.unwrap_or(scratch), at)
    }

    /// [`Self::put_text_with`] for bytes, straight into a binary column.
    #[inline(always)]
    pub(crate) fn put_bytes_with<'v>(
        &mut self,
        field: Option<usize>,
        at: usize,
        scratch: &mut Vec<u8>,
        read: impl FnOnce(&mut Vec<u8>) -> FaultResult<Option<&'v [u8]>>,
    ) -> FaultResult<()> {
        if let Some(f) = field.map(|field| &mut self.fields[field]) {
            let sink = if self.old_image { &mut f.before } else { &mut f.row };
            if let ColumnSink::Binary(sink) = sink {
                fill(&mut f.filled, self.images, &f.spec.field, at)?;
                return sink.append_bytes_with(
                    #[inline(always)]
                    |bytes| {
                        if let Some(read) = read(bytes)? {
                            bytes.extend_from_slice(read);
                        }
                        Ok(())
                    },
                    || no_room(f.spec.field.name()),
                );
            }
        }
        scratch.clear();
        let read = read(scratch)?;
        self.put(field, read.unwrap_or(scratch), at)
    }

    /// [`Self::put`] out of line, one copy per wire form: for a codec's loop over a row's values,
    /// which with the conversion inlined in it grew too large to be inlined itself.
    #[inline(never)]
    pub(crate) fn put_out_of_line<'v>(
        &mut self,
        field: Option<usize>,
        value: impl WireValue<'v>,
        at: usize,
    ) -> FaultResult<()> {
        self.put(field, value, at)
    }

    /// Ends the image begun last: fields that got no value are null.
    pub(crate) fn end_image(&mut self) {
        let (image, old) = (self.images, self.old_image);
        for f in self.fields.iter_mut().filter(|f| f.filled != image) {
            let sink = if old { &mut f.before } else { &mut f.row };
            sink.append_null();
        }
    }

    /// Ends a row, which had an old image or not.
    pub(crate) fn end_row(&mut self, had_old: bool) {
        self.images_of_rows = self.images;
        self.before_valid.push(had_old);
        if !had_old {
            self.before_nulls_due += 1;
        }
    }

    /// A row of nulls (a DDL or a watermark); no `_before`.
    pub(crate) fn append_null_row(&mut self) {
        self.fields.iter_mut().for_each(|f| f.row.append_null());
        self.end_row(false);
    }

    /// Whole rows at once, column by column: each column's values go to its field in one loop.
    /// An alternative to the images above, for a message whose row images all describe the
    /// same columns.
    pub(crate) fn put_columns(&mut self, block: &impl RowBlock) -> FaultResult<()> {
        // Counted as an image: one left unfinished by a failure is cut back by `truncate`.
        self.images += 1;
        let image = self.images;
        for (j, &field) in block.fields().iter().enumerate() {
            let Some(f) = field.map(|field| &mut self.fields[field]) else { continue };
            fill(&mut f.filled, image, &f.spec.field, block.first_at(j))?;
        }
        let had_old = block.had_old();
        let (rows, olds) = (had_old.len(), had_old.iter().filter(|&&old| old).count());
        if olds > 0 {
            self.settle_before_nulls();
        }
        for (j, &field) in block.fields().iter().enumerate() {
            let Some(f) = field.map(|field| &mut self.fields[field]) else {
                self.stats.dropped_columns += (rows + olds) as u64;
                continue;
            };
            let (spec, zone, stats, scratch) = (&f.spec, self.zone, &mut self.stats, &mut self.scratch);
            let row = ColumnAppender { spec, sink: &mut f.row, zone, stats: &mut *stats, scratch: &mut *scratch };
            block.append_column(j, false, row)?;
            if olds > 0 {
                block.append_column(j, true, ColumnAppender { spec, sink: &mut f.before, zone, stats, scratch })?;
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
        self.before_valid.extend_from_slice(had_old);
        self.images_of_rows = self.images;
        Ok(())
    }

    /// The rows so far, to truncate back to.
    pub(crate) fn rows(&self) -> usize {
        self.before_valid.len()
    }

    /// Takes back every row from `rows` on.
    pub(crate) fn truncate(&mut self, rows: usize) {
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

    /// The output fields: the table's columns, then `_before`.
    pub(crate) fn output_fields(&self) -> Vec<FieldRef> {
        let mut fields: Vec<FieldRef> = self.fields.iter().map(|f| f.spec.field.clone()).collect();
        fields.push(Arc::new(Field::new("_before", DataType::Struct(self.column_fields()), true)));
        fields
    }

    /// The buffers of the input `value` column of the batch now decoded, which borrowed values
    /// may point into (see `views`).
    pub(crate) fn set_input(&mut self, buffers: &[arrow_buffer::Buffer]) {
        for sink in self.fields.iter_mut().flat_map(|f| [&mut f.row, &mut f.before]) {
            match sink {
                ColumnSink::TextView(b) => b.set_input(buffers),
                ColumnSink::BinaryView(b) => b.set_input(buffers),
                _ => {}
            }
        }
    }

    /// The batch's arrays, in the order of [`Self::output_fields`]; the next batch starts empty.
    pub(crate) fn finish(&mut self) -> Vec<ArrayRef> {
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

    fn column_fields(&self) -> Fields {
        self.fields.iter().map(|f| f.spec.field.clone()).collect()
    }

    fn settle_before_nulls(&mut self) {
        let n = std::mem::take(&mut self.before_nulls_due);
        if n > 0 {
            self.fields.iter_mut().for_each(|f| f.before.append_nulls(n));
        }
    }
}

/// A message's rows laid out by column, for [`TableColumns::put_columns`]: a codec whose row
/// images all describe the same columns in the same order (Craft's column groups) locates every
/// value of the message first, then hands over one column at a time, each read from the wire
/// straight into its sink with one dispatch on the column's form and Arrow type.
pub(crate) trait RowBlock {
    /// The field that takes each wire column (None: the output has none).
    fn fields(&self) -> &[Option<usize>];

    /// Whether each row has an old image: one entry per row.
    fn had_old(&self) -> &[bool];

    /// Where wire column `j`'s first value is, for a fault about the column.
    fn first_at(&self, j: usize) -> usize;

    /// Appends wire column `j`'s values to `to`: those of the row images, or (`old`) of the old
    /// images, with a NULL for each row that has none.
    fn append_column(&self, j: usize, old: bool, to: ColumnAppender<'_>) -> FaultResult<()>;
}

/// The sink of one column, lent to [`RowBlock::append_column`].
pub(crate) struct ColumnAppender<'c> {
    spec: &'c ColumnSpec,
    sink: &'c mut ColumnSink,
    zone: ServerZone,
    stats: &'c mut ColumnStats,
    scratch: &'c mut Scratch,
}

impl ColumnAppender<'_> {
    /// Converts and appends the values, each with its offset in the message.
    pub(crate) fn append<'v, V: WireValue<'v>>(self, values: impl Iterator<Item = (V, usize)>) -> FaultResult<()> {
        append_values(self.spec, self.sink, values, self.zone, self.stats, self.scratch)
    }

    /// Appends text values (None: NULL) whose bytes are not yet checked as UTF-8; `check` reads
    /// one as text or gives its fault. A plain text column takes them all with one check of
    /// their bytes together, short values costing no call each; a column that parses them
    /// (numbers, dates and times) or takes bytes needs no check, as a parser reads ASCII alone.
    /// Only text and ENUM/SET columns, and a run that fails the check together, check them one
    /// by one, up to the first at fault.
    pub(crate) fn append_text<'v, I>(
        self,
        values: I,
        check: impl Fn(&'v [u8], usize) -> FaultResult<&'v str>,
    ) -> FaultResult<()>
    where
        I: Iterator<Item = (Option<&'v [u8]>, usize)> + Clone,
    {
        match (&mut *self.sink, &self.spec.members) {
            (ColumnSink::Text(sink), None) => {
                if sink.append_checked_together(values.clone().map(|(bytes, _)| bytes)) {
                    return Ok(());
                }
            }
            (ColumnSink::Text(_) | ColumnSink::TextView(_), _) => {}
            _ => return self.append(values.map(|(bytes, at)| (bytes.map(UncheckedText), at))),
        }
        self.append_read(values, check)
    }

    /// Appends the values `read` makes of `values`' bytes (None: NULL): up to the first that
    /// fails to read, whose fault it returns (the message is then cut back, so what went in
    /// before does not matter).
    pub(crate) fn append_read<'v, T: WireValue<'v>>(
        self,
        values: impl Iterator<Item = (Option<&'v [u8]>, usize)>,
        read: impl Fn(&'v [u8], usize) -> FaultResult<T>,
    ) -> FaultResult<()> {
        let mut fault = None;
        self.append(ReadValues { values, read, fault: &mut fault })?;
        fault.map_or(Ok(()), Err)
    }
}

/// The values of a column read by `read`, ending at the first that fails, whose fault is left
/// in `fault`.
struct ReadValues<'f, I, R> {
    values: I,
    read: R,
    fault: &'f mut Option<Fault>,
}

impl<'v, T, I, R> Iterator for ReadValues<'_, I, R>
where
    I: Iterator<Item = (Option<&'v [u8]>, usize)>,
    R: Fn(&'v [u8], usize) -> FaultResult<T>,
{
    type Item = (Option<T>, usize);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let (bytes, at) = self.values.next()?;
        match bytes.map(|bytes| (self.read)(bytes, at)).transpose() {
            Ok(value) => Some((value, at)),
            Err(f) => {
                *self.fault = Some(f);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{Array, BinaryArray, Int64Array, StringArray};

    use super::*;
    use crate::schema::mapping::MYSQL_TYPE_KEY;

    /// Values put in their wire forms convert for their field: text, bytes, numbers and nulls;
    /// ENUM names from numbers given as text or as integers, integers from text; a column the
    /// output lacks is counted and dropped; a value that does not fit, or a second value for one
    /// field, fails with its offset, and the row it was in is cut back whole.
    #[test]
    fn values_in_any_wire_form_convert_for_their_field() {
        let kind = Field::new("kind", DataType::Utf8, true)
            .with_metadata(HashMap::from([(MYSQL_TYPE_KEY.to_string(), "enum('a','b')".to_string())]));
        let fields = Fields::from(vec![
            Field::new("name", DataType::Utf8, true),
            kind,
            Field::new("qty", DataType::Int64, true),
            Field::new("raw", DataType::Binary, true),
        ]);
        let table = TableName::parse("shop.orders").unwrap();
        let mut columns = TableColumns::new(table, &fields, ServerZone::Utc).unwrap();
        let row = |columns: &mut TableColumns, put: &dyn Fn(&mut TableColumns) -> FaultResult<()>| {
            columns.begin_image(false);
            put(columns)?;
            columns.end_image();
            columns.end_row(false);
            Ok::<_, Fault>(())
        };
        row(&mut columns, &|c| {
            c.put(Some(0), "Zoë", 1)?;
            c.put(Some(1), "2", 2)?;
            c.put(Some(2), "42", 3)?;
            c.put(Some(3), &b"\x00"[..], 4)?;
            c.put(None, "gone", 5)
        })
        .unwrap();
        row(&mut columns, &|c| {
            c.put(Some(0), Null, 1)?;
            c.put(Some(1), 1u64, 2)?;
            c.put(Some(2), -7i64, 3)?;
            c.put_out_of_line(Some(3), &[0xff, 0][..], 4)
        })
        .unwrap();
        assert_eq!(row(&mut columns, &|c| c.put(Some(2), "x", 7)).unwrap_err().offset, 7);
        columns.truncate(2);
        let twice = row(&mut columns, &|c| {
            c.put(Some(1), "a", 8)?;
            c.put(Some(1), "b", 9)
        })
        .unwrap_err();
        assert!(twice.reason.contains("kind appears twice") && twice.offset == 9, "{twice:?}");
        columns.truncate(2);
        assert_eq!(columns.stats.dropped_columns, 1);
        let arrays = columns.finish();
        let text = |i: usize| arrays[i].as_any().downcast_ref::<StringArray>().unwrap().clone();
        assert_eq!(text(0), StringArray::from(vec![Some("Zoë"), None]));
        assert_eq!(text(1), StringArray::from(vec![Some("b"), Some("a")]));
        let qty = arrays[2].as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(qty, &Int64Array::from(vec![Some(42), Some(-7)]));
        let raw = arrays[3].as_any().downcast_ref::<BinaryArray>().unwrap();
        assert_eq!(raw, &BinaryArray::from(vec![&b"\x00"[..], &[0xff, 0][..]]));
        assert_eq!(arrays[4].len(), 2);
    }
}
