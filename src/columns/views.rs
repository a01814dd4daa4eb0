//! Utf8View / BinaryView output columns that point into the input instead of copying.
//!
//! A decoded string is very often a verbatim byte range of the Kafka value it came from (a Craft
//! string, an Avro string, a JSON string without escapes), and codecs hand such values to the
//! layouts as slices borrowed from the input buffers. A view array can describe such a value as
//! (block, offset, length), so [`ViewBuilder`] registers the input buffers of the batch being
//! decoded as blocks of the output array (sharing them, not copying) and only copies values that
//! live elsewhere: text made during decoding (unescaped JSON, base64, ENUM names) or read from a
//! decompressed or claim-checked message. Values of 12 bytes or fewer are inlined in the view.
//!
//! The output keeps the input buffers alive as long as it lives. Spark before 4.3 rejects views,
//! so they are produced only where the declared schema asks for them (the Polars adapter does).

use std::marker::PhantomData;
use std::sync::Arc;

use arrow_array::builder::make_view;
use arrow_array::{ArrayRef, BinaryViewArray, StringViewArray};
use arrow_buffer::{Buffer, NullBuffer, ScalarBuffer};

use super::sink::Validity;
use crate::error::{Fault, FaultResult};

/// Values longer than this are not inlined in their view.
const MAX_INLINE: usize = 12;

/// What a view array holds: `str` (a Utf8View array) or `[u8]` (a BinaryView array). Sealed: the
/// Utf8View constructor skips validation, which is sound only because a `ViewBuilder<str>` takes
/// nothing but `&str`.
pub(crate) trait ViewValue: sealed::Sealed {
    fn bytes(&self) -> &[u8];

    /// The array of `views` over `blocks`.
    ///
    /// # Safety
    /// Every non-inline view must name a block of `blocks` and an offset and length inside it, and
    /// every view (inline or not) must describe bytes that were a `Self` value.
    unsafe fn array(views: ScalarBuffer<u128>, blocks: Vec<Buffer>, nulls: Option<NullBuffer>) -> ArrayRef;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for str {}
    impl Sealed for [u8] {}
}

impl ViewValue for str {
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }

    unsafe fn array(views: ScalarBuffer<u128>, blocks: Vec<Buffer>, nulls: Option<NullBuffer>) -> ArrayRef {
        // SAFETY: the caller guarantees the views are in bounds and describe `str` values, so
        // each is valid UTF-8.
        Arc::new(unsafe { StringViewArray::new_unchecked(views, blocks, nulls) })
    }
}

impl ViewValue for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }

    unsafe fn array(views: ScalarBuffer<u128>, blocks: Vec<Buffer>, nulls: Option<NullBuffer>) -> ArrayRef {
        // SAFETY: the caller guarantees the views are in bounds; binary has no other rule.
        Arc::new(unsafe { BinaryViewArray::new_unchecked(views, blocks, nulls) })
    }
}

struct InputBuffer {
    buffer: Buffer,
    /// Its block index in the array being built, once a value points into it.
    block: Option<u32>,
}

/// Builds a Utf8View (`ViewBuilder<str>`) or BinaryView (`ViewBuilder<[u8]>`) array whose long
/// values point into the registered input buffers where they lie inside one, and into a block
/// of copies otherwise.
///
/// Invariant, upheld by every method and relied on by `finish`: each entry of `views` was made
/// by `make_view` from a `V` value's bytes, either inline, or with a block index of `blocks`
/// (or the reserved copy block) and an offset at which that block holds exactly those bytes.
/// Blocks are never removed or shrunk while views name them; `set_input` only adds.
pub(crate) struct ViewBuilder<V: ViewValue + ?Sized> {
    views: Vec<u128>,
    nulls: Validity,
    blocks: Vec<Buffer>,
    input: Vec<InputBuffer>,
    /// Copied values, and the block index reserved for them once the first one is copied.
    copied: Vec<u8>,
    copied_block: Option<u32>,
    value: PhantomData<fn(&V)>,
}

impl<V: ViewValue + ?Sized> Default for ViewBuilder<V> {
    fn default() -> Self {
        ViewBuilder::with_capacity(0)
    }
}

impl<V: ViewValue + ?Sized> ViewBuilder<V> {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        ViewBuilder {
            views: Vec::with_capacity(rows),
            nulls: Validity::with_capacity(rows),
            blocks: Vec::new(),
            input: Vec::new(),
            copied: Vec::new(),
            copied_block: None,
            value: PhantomData,
        }
    }

    /// The buffers the values of the batch now being decoded may point into. Blocks already
    /// registered for earlier values stay in the array.
    pub(crate) fn set_input(&mut self, buffers: &[Buffer]) {
        self.input = buffers.iter().map(|b| InputBuffer { buffer: b.clone(), block: None }).collect();
    }

    pub(crate) fn len(&self) -> usize {
        self.views.len()
    }

    #[inline]
    pub(crate) fn append_null(&mut self) {
        self.push_empty();
        self.nulls.push(false);
    }

    /// A null's slot without its validity bit (see [`Validity`]).
    #[inline]
    pub(crate) fn push_empty(&mut self) {
        self.views.push(0);
    }

    pub(crate) fn validity(&mut self) -> &mut Validity {
        &mut self.nulls
    }

    pub(crate) fn append_nulls(&mut self, n: usize) {
        self.views.resize(self.views.len() + n, 0);
        self.nulls.push_n(false, n);
    }

    /// Drops the values from index `len` on. Bytes copied for them stay in the copied block,
    /// unreferenced, until the array is finished.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.views.truncate(len);
        self.nulls.truncate(len);
    }

    /// Appends `value`; fails (appending nothing) when it is longer than a view can describe.
    #[cfg(test)]
    pub(crate) fn append(&mut self, value: &V) -> FaultResult<()> {
        self.push(value)?;
        self.nulls.push(true);
        Ok(())
    }

    /// Appends `value` without its validity bit (see [`Validity`]); fails, pushing nothing, when
    /// it is longer than a view can describe.
    pub(crate) fn push(&mut self, value: &V) -> FaultResult<()> {
        let value = value.bytes();
        if u32::try_from(value.len()).is_err() {
            return Err(Fault::new(0, format!("a value of {} bytes is too long for a view array", value.len())));
        }
        let view = if value.len() <= MAX_INLINE {
            make_view(value, 0, 0)
        } else if let Some((block, offset)) = self.in_input(value) {
            make_view(value, block, offset)
        } else {
            let (block, offset) = self.copy(value);
            make_view(value, block, offset)
        };
        self.views.push(view);
        Ok(())
    }

    fn push_block(&mut self, buffer: Buffer) -> u32 {
        let block = u32::try_from(self.blocks.len()).expect("fewer than 2^32 blocks");
        self.blocks.push(buffer);
        block
    }

    /// The block and offset of `value` when it lies inside one of the input buffers.
    fn in_input(&mut self, value: &[u8]) -> Option<(u32, u32)> {
        let at = value.as_ptr() as usize;
        let found = self.input.iter().position(|input| {
            let start = input.buffer.as_ptr() as usize;
            at >= start && at + value.len() <= start + input.buffer.len() && u32::try_from(at - start).is_ok()
        })?;
        let start = self.input[found].buffer.as_ptr() as usize;
        let offset = (at - start) as u32;
        let block = match self.input[found].block {
            Some(block) => block,
            None => {
                let block = self.push_block(self.input[found].buffer.clone());
                self.input[found].block = Some(block);
                block
            }
        };
        Some((block, offset))
    }

    fn copy(&mut self, value: &[u8]) -> (u32, u32) {
        if self.copied.len() + value.len() > u32::MAX as usize {
            self.seal_copied();
        }
        let block = match self.copied_block {
            Some(block) => block,
            None => {
                // A placeholder until `seal_copied` puts the copies there.
                let block = self.push_block(Buffer::from(Vec::<u8>::new()));
                self.copied_block = Some(block);
                block
            }
        };
        let offset = self.copied.len() as u32;
        self.copied.extend_from_slice(value);
        (block, offset)
    }

    /// Moves the copied values into their reserved block.
    fn seal_copied(&mut self) {
        if let Some(block) = self.copied_block.take() {
            self.blocks[block as usize] = Buffer::from_vec(std::mem::take(&mut self.copied));
        }
    }

    /// The array of the values appended since the last `finish`; the builder starts empty
    /// again (input buffers stay registered, as new blocks of the next array).
    pub(crate) fn finish(&mut self) -> ArrayRef {
        self.seal_copied();
        for input in &mut self.input {
            input.block = None;
        }
        let views = ScalarBuffer::from(std::mem::take(&mut self.views));
        let blocks = std::mem::take(&mut self.blocks);
        let nulls = self.nulls.finish();
        // SAFETY: the struct invariant: every view was made by `make_view` from a `V` value, inline
        // or at its offset in the block it names, which holds exactly those bytes (an input
        // buffer, kept alive by the clone in `blocks`, or the sealed copies).
        unsafe { V::array(views, blocks, nulls) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn long_values_in_the_input_point_into_it_and_others_are_copied() {
        let input = Buffer::from(b"a long value inside the input buffer".to_vec());
        let inside = &input.as_slice()[2..22];
        let outside = b"a long value that lives elsewhere".to_vec();
        let mut builder = ViewBuilder::<[u8]>::default();
        builder.set_input(std::slice::from_ref(&input));
        builder.append(inside).unwrap();
        builder.append_nulls(1);
        builder.append(b"short").unwrap();
        builder.append(&outside).unwrap();
        let array = builder.finish();
        let array = array.as_any().downcast_ref::<BinaryViewArray>().unwrap();
        assert_eq!(array.value(0), inside);
        assert!(array.is_null(1));
        assert_eq!(array.value(2), b"short");
        assert_eq!(array.value(3), &outside[..]);
        assert_eq!(array.data_buffers().len(), 2);
        assert_eq!(array.data_buffers()[0].as_ptr(), input.as_ptr(), "the input buffer is shared, not copied");
        assert_eq!(array.data_buffers()[1].len(), outside.len(), "only the outside value was copied");
        array.to_data().validate_full().unwrap();
    }

    #[test]
    fn truncated_values_are_gone_and_later_ones_point_right() {
        let mut builder = ViewBuilder::<str>::default();
        builder.append("a value copied into the builder").unwrap();
        builder.append("another value copied after it").unwrap();
        builder.append_nulls(2);
        builder.truncate(1);
        builder.append("a third value, copied after the dropped one").unwrap();
        let array = builder.finish();
        let array = array.as_any().downcast_ref::<StringViewArray>().unwrap();
        assert_eq!(array.len(), 2);
        assert_eq!(array.value(0), "a value copied into the builder");
        assert_eq!(array.value(1), "a third value, copied after the dropped one");
        assert_eq!(array.null_count(), 0);
        array.to_data().validate_full().unwrap();
    }

    #[test]
    fn builder_starts_clean_after_finish() {
        let input = Buffer::from(b"0123456789abcdefghij".to_vec());
        let text = std::str::from_utf8(input.as_slice()).unwrap();
        let mut builder = ViewBuilder::<str>::default();
        builder.set_input(std::slice::from_ref(&input));
        builder.append(&text[..16]).unwrap();
        builder.finish();
        builder.append(&text[1..17]).unwrap();
        let array = builder.finish();
        let array = array.as_any().downcast_ref::<StringViewArray>().unwrap();
        assert_eq!(array.len(), 1);
        assert_eq!(array.value(0), "123456789abcdefg");
        array.to_data().validate_full().unwrap();
    }
}
