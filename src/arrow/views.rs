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

use arrow_array::builder::make_view;
use arrow_array::{ArrayRef, BinaryViewArray, StringViewArray};
use arrow_buffer::{Buffer, NullBufferBuilder, ScalarBuffer};
use std::sync::Arc;

/// Values longer than this are not inlined in their view.
const MAX_INLINE: usize = 12;

#[derive(Default)]
struct InputBuffer {
    buffer: Buffer,
    /// Its block index in the array being built, once a value points into it.
    block: Option<u32>,
}

pub struct ViewBuilder {
    views: Vec<u128>,
    nulls: NullBufferBuilder,
    blocks: Vec<Buffer>,
    input: Vec<InputBuffer>,
    /// Copied values, and the block index reserved for them once the first one is copied.
    copied: Vec<u8>,
    copied_block: Option<u32>,
}

impl Default for ViewBuilder {
    fn default() -> Self {
        ViewBuilder {
            views: Vec::new(),
            nulls: NullBufferBuilder::new(0),
            blocks: Vec::new(),
            input: Vec::new(),
            copied: Vec::new(),
            copied_block: None,
        }
    }
}

impl ViewBuilder {
    pub fn with_capacity(rows: usize) -> Self {
        ViewBuilder { views: Vec::with_capacity(rows), nulls: NullBufferBuilder::new(rows), ..Default::default() }
    }

    /// The buffers the values of the batch now being decoded may point into.
    pub fn set_input(&mut self, buffers: &[Buffer]) {
        self.input = buffers.iter().map(|b| InputBuffer { buffer: b.clone(), block: None }).collect();
    }

    pub fn len(&self) -> usize {
        self.views.len()
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    pub fn append_null(&mut self) {
        self.append_nulls(1);
    }

    pub fn append_nulls(&mut self, n: usize) {
        self.views.resize(self.views.len() + n, 0);
        self.nulls.append_n_nulls(n);
    }

    pub fn append(&mut self, value: &[u8]) {
        self.nulls.append_non_null();
        let view = if value.len() <= MAX_INLINE {
            make_view(value, 0, 0)
        } else if let Some((block, offset)) = self.in_input(value) {
            make_view(value, block, offset)
        } else {
            let (block, offset) = self.copy(value);
            make_view(value, block, offset)
        };
        self.views.push(view);
    }

    /// The block and offset of `value` when it lies inside one of the input buffers.
    fn in_input(&mut self, value: &[u8]) -> Option<(u32, u32)> {
        let at = value.as_ptr() as usize;
        for input in &mut self.input {
            let start = input.buffer.as_ptr() as usize;
            let inside = at >= start && at + value.len() <= start + input.buffer.len();
            let offset = inside.then(|| u32::try_from(at - start).ok()).flatten();
            if let Some(offset) = offset {
                let block = *input.block.get_or_insert_with(|| {
                    self.blocks.push(input.buffer.clone());
                    (self.blocks.len() - 1) as u32
                });
                return Some((block, offset));
            }
        }
        None
    }

    fn copy(&mut self, value: &[u8]) -> (u32, u32) {
        if self.copied.len() + value.len() > u32::MAX as usize {
            self.seal_copied();
        }
        let block = *self.copied_block.get_or_insert_with(|| {
            self.blocks.push(Buffer::from(Vec::<u8>::new()));
            (self.blocks.len() - 1) as u32
        });
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

    fn finish_parts(&mut self) -> (ScalarBuffer<u128>, Vec<Buffer>, Option<arrow_buffer::NullBuffer>) {
        self.seal_copied();
        for input in &mut self.input {
            input.block = None;
        }
        let views = ScalarBuffer::from(std::mem::take(&mut self.views));
        (views, std::mem::take(&mut self.blocks), self.nulls.finish())
    }

    /// The values as a Utf8View array. Only valid UTF-8 may have been appended.
    pub fn finish_utf8(&mut self) -> ArrayRef {
        let (views, blocks, nulls) = self.finish_parts();
        // SAFETY: every view was made by `make_view` from the bytes it describes: inline, or at
        // its offset in the block it names (an input buffer holding exactly those bytes, or the
        // copied values), so every view is in bounds; `append` callers give only UTF-8 text.
        Arc::new(unsafe { StringViewArray::new_unchecked(views, blocks, nulls) })
    }

    pub fn finish_binary(&mut self) -> ArrayRef {
        let (views, blocks, nulls) = self.finish_parts();
        // SAFETY: as in `finish_utf8`; binary views carry no UTF-8 requirement.
        Arc::new(unsafe { BinaryViewArray::new_unchecked(views, blocks, nulls) })
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
        let mut builder = ViewBuilder::default();
        builder.set_input(std::slice::from_ref(&input));
        builder.append(inside);
        builder.append_null();
        builder.append(b"short");
        builder.append(&outside);
        let array = builder.finish_binary();
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
    fn builder_starts_clean_after_finish() {
        let input = Buffer::from(b"0123456789abcdefghij".to_vec());
        let mut builder = ViewBuilder::default();
        builder.set_input(std::slice::from_ref(&input));
        builder.append(&input.as_slice()[..16]);
        builder.finish_utf8();
        builder.append(&input.as_slice()[1..17]);
        let array = builder.finish_utf8();
        let array = array.as_any().downcast_ref::<StringViewArray>().unwrap();
        assert_eq!(array.len(), 1);
        assert_eq!(array.value(0), "123456789abcdefg");
        array.to_data().validate_full().unwrap();
    }
}
