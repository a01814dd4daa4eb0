//! An image's values on their way out of a Simple message, for both flavours: each value read is
//! an [`ImageValue`] of a schema column, and goes either straight into the table's typed columns
//! ([`PutValues`]) or into the event model ([`EventValues`]), in the form its wire and its column
//! give (an integer, a string...), with the [`ImageOrder`] of the stream finding a column
//! written twice.

use super::cache::{ImageOrder, TableColumn};
use crate::columns::{TableColumns, UncheckedText, WireValue};
use crate::error::{Fault, FaultResult};
use crate::event::{MessageEvents, SpareBuffers, Text, Value};

/// A value of an image being read: its column's position in the table schema and definition,
/// its name as written, and the value's offset.
pub struct ImageValue<'c, 'a> {
    pub index: usize,
    pub column: &'c TableColumn,
    pub name: Text<'a>,
    pub at: usize,
}

/// Where an image's values go as they are read.
pub trait ImageValuesTo<'a> {
    /// A value borrowed from the message or read as a number.
    fn value(&mut self, of: &ImageValue<'_, 'a>, value: impl WireValue<'a>) -> FaultResult<()>;

    /// Text not yet checked as UTF-8; `not_utf8` is the fault when it is not. Checked here;
    /// a typed column checks it only if it keeps it as text (a parser reads ASCII alone).
    #[inline(always)]
    fn text(&mut self, of: &ImageValue<'_, 'a>, bytes: &'a [u8], not_utf8: impl FnOnce() -> Fault) -> FaultResult<()> {
        let text = crate::utf8::check(bytes).map_err(|_| not_utf8())?;
        self.value(of, text)
    }

    /// A value decoded into a buffer of its own (JSON's unescaped text, base64 bytes), which the
    /// spare buffers take back once it is put.
    fn owned(&mut self, of: &ImageValue<'_, 'a>, value: Value<'a>, spare: &mut SpareBuffers) -> FaultResult<()>;
}

/// Into the typed columns, each schema column's field resolved once per version.
pub struct PutValues<'r> {
    pub rows: &'r mut TableColumns,
    pub fields: &'r [Option<usize>],
    pub order: &'r mut ImageOrder,
}

impl PutValues<'_> {
    #[inline(always)]
    fn field(&mut self, of: &ImageValue<'_, '_>) -> FaultResult<Option<usize>> {
        if !self.order.mark(of.index) {
            return Err(appears_twice(of));
        }
        Ok(self.fields[of.index])
    }
}

impl<'a> ImageValuesTo<'a> for PutValues<'_> {
    #[inline(always)]
    fn value(&mut self, of: &ImageValue<'_, 'a>, value: impl WireValue<'a>) -> FaultResult<()> {
        let field = self.field(of)?;
        self.rows.put_out_of_line(field, value, of.at)
    }

    #[inline(always)]
    fn text(&mut self, of: &ImageValue<'_, 'a>, bytes: &'a [u8], _: impl FnOnce() -> Fault) -> FaultResult<()> {
        self.value(of, UncheckedText(bytes))
    }

    fn owned(&mut self, of: &ImageValue<'_, 'a>, value: Value<'a>, spare: &mut SpareBuffers) -> FaultResult<()> {
        let field = self.field(of)?;
        self.rows.put(field, &value, of.at)?;
        spare.give_value(value);
        Ok(())
    }
}

/// Into the event model: the image begun at `start` of `out.columns`.
pub struct EventValues<'o, 'a> {
    pub out: &'o mut MessageEvents<'a>,
    pub order: &'o mut ImageOrder,
    pub start: usize,
}

impl<'a> EventValues<'_, 'a> {
    fn put(&mut self, of: &ImageValue<'_, 'a>, value: Value<'a>) -> FaultResult<()> {
        let Some(slot) = self.order.slot(self.out, self.start, of.index) else { return Err(appears_twice(of)) };
        (slot.name, slot.ty, slot.value, slot.at) = (of.name.clone(), of.column.ty.clone(), value, of.at);
        Ok(())
    }
}

impl<'a> ImageValuesTo<'a> for EventValues<'_, 'a> {
    fn value(&mut self, of: &ImageValue<'_, 'a>, value: impl WireValue<'a>) -> FaultResult<()> {
        self.put(of, value.to_value())
    }

    fn owned(&mut self, of: &ImageValue<'_, 'a>, value: Value<'a>, _: &mut SpareBuffers) -> FaultResult<()> {
        self.put(of, value)
    }
}

#[cold]
fn appears_twice(of: &ImageValue<'_, '_>) -> Fault {
    Fault::new(of.at, format!("column {} appears twice", of.name))
}
