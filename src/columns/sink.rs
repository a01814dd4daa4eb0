//! Column sinks: the typed layout's columns while they are built, one kind per Arrow type.
//!
//! A sink holds a column's values, its validity and its Arrow type, and unlike arrow-rs's
//! builders it can be cut back to an earlier length. That is how a message that fails part-way
//! leaves nothing behind: every sink is truncated to its length before the message (all or
//! nothing per message), with no nulls written for the lost rows and no filter over the finished
//! arrays. Text, bytes and vectors go to a [`RunSink`]; text and bytes of view types to the
//! [`ViewBuilder`].
//!
//! Validity is kept apart from the values ([`Validity`]): the loop that converts a column's
//! values pushes each value (`push`, `push_empty` for a null's slot) and gathers their validity
//! bits in a register word ([`ValidityRun`]), handed over 64 at a time, so that no value waits on
//! the store of the last one's bit. `append_null` does both, for one null.
//!
//! [`ViewBuilder`]: super::views::ViewBuilder

use std::sync::Arc;

use arrow_array::types::{BinaryType, ByteArrayType, Utf8Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BooleanArray, Float32Array, GenericByteArray, ListArray, PrimitiveArray,
};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use crate::error::{Fault, FaultResult};

/// A column's validity while it is built: a bit a value (set: valid), in 64-bit words, and no
/// bitmap at all until the first null, as most columns have none.
pub(crate) struct Validity {
    /// The bits of values `0..len`, the first value's the lowest bit of the first word, once a
    /// null has come (`has_nulls`); empty before.
    words: Vec<u64>,
    len: usize,
    has_nulls: bool,
    /// The rows to make room for once the bitmap is made.
    capacity: usize,
}

/// The lowest `n` bits set, for `n` in `1..=64`.
#[inline(always)]
fn low_bits(n: u32) -> u64 {
    u64::MAX >> (64 - n)
}

impl Validity {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        Validity { words: Vec::new(), len: 0, has_nulls: false, capacity: rows }
    }

    /// Appends the lowest `n` bits of `bits` (`n` in `1..=64`, the bits above it clear).
    #[inline]
    pub(crate) fn push_bits(&mut self, bits: u64, n: u32) {
        if !self.has_nulls {
            if bits == low_bits(n) {
                self.len += n as usize;
                return;
            }
            self.make_bitmap();
        }
        let offset = (self.len % 64) as u32;
        match self.words.last_mut() {
            Some(last) if offset != 0 => {
                *last |= bits << offset;
                if offset + n > 64 {
                    self.words.push(bits >> (64 - offset));
                }
            }
            _ => self.words.push(bits),
        }
        self.len += n as usize;
    }

    #[cold]
    fn make_bitmap(&mut self) {
        self.has_nulls = true;
        self.words.reserve(self.capacity.max(self.len + 1).div_ceil(64));
        self.words.resize(self.len / 64, u64::MAX);
        let partial = (self.len % 64) as u32;
        if partial != 0 {
            self.words.push(low_bits(partial));
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, valid: bool) {
        self.push_bits(valid as u64, 1);
    }

    pub(crate) fn push_n(&mut self, valid: bool, mut n: usize) {
        let word = if valid { u64::MAX } else { 0 };
        while n > 0 {
            let step = n.min(64) as u32;
            self.push_bits(word & low_bits(step), step);
            n -= step as usize;
        }
    }

    /// Keeps the first `len` bits (all of them when there are fewer).
    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        self.len = len;
        if self.has_nulls {
            self.words.truncate(len.div_ceil(64));
            if let (Some(last), 1..) = (self.words.last_mut(), len % 64) {
                *last &= low_bits((len % 64) as u32);
            }
        }
    }

    /// The validity of the values so far (None: all valid, as no null ever came); it starts
    /// empty again.
    pub(crate) fn finish(&mut self) -> Option<NullBuffer> {
        let len = std::mem::take(&mut self.len);
        let words = std::mem::take(&mut self.words);
        if !std::mem::take(&mut self.has_nulls) {
            return None;
        }
        let bytes = Buffer::from_vec(words.into_iter().map(u64::to_le).collect::<Vec<u64>>());
        Some(NullBuffer::new(BooleanBuffer::new(bytes, 0, len)))
    }
}

/// The validity bits of a run of values, gathered in a register and handed to the sink's
/// [`Validity`] 64 at a time and at the run's end.
#[derive(Default)]
pub(crate) struct ValidityRun {
    bits: u64,
    n: u32,
}

impl ValidityRun {
    #[inline(always)]
    pub(crate) fn push(&mut self, valid: bool, to: &mut Validity) {
        self.bits |= (valid as u64) << self.n;
        self.n += 1;
        if self.n == 64 {
            to.push_bits(self.bits, 64);
            *self = ValidityRun::default();
        }
    }

    #[inline(always)]
    pub(crate) fn end(self, to: &mut Validity) {
        if self.n > 0 {
            to.push_bits(self.bits, self.n);
        }
    }
}

/// Fixed-width values: integers, decimals, floats, dates, times and timestamps.
pub(crate) struct PrimitiveSink<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: Validity,
    /// The exact type (a decimal's precision and scale, a timestamp's zone).
    data_type: DataType,
}

impl<T: ArrowPrimitiveType> PrimitiveSink<T> {
    pub(crate) fn with_capacity(data_type: DataType, rows: usize) -> Self {
        PrimitiveSink { values: Vec::with_capacity(rows), nulls: Validity::with_capacity(rows), data_type }
    }

    #[cfg(test)]
    pub(crate) fn append_value(&mut self, value: T::Native) {
        self.push(value);
        self.nulls.push(true);
    }

    #[inline(always)]
    pub(crate) fn append_null(&mut self) {
        self.push_empty();
        self.nulls.push(false);
    }

    /// A value without its validity bit (see [`Validity`]).
    #[inline(always)]
    pub(crate) fn push(&mut self, value: T::Native) {
        self.values.push(value);
    }

    /// A null's slot without its validity bit.
    #[inline(always)]
    pub(crate) fn push_empty(&mut self) {
        self.values.push(T::Native::default());
    }

    pub(crate) fn validity(&mut self) -> &mut Validity {
        &mut self.nulls
    }

    pub(crate) fn append_nulls(&mut self, n: usize) {
        self.values.resize(self.values.len() + n, T::Native::default());
        self.nulls.push_n(false, n);
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.nulls.truncate(len);
    }

    pub(crate) fn finish(&mut self) -> ArrayRef {
        let values = ScalarBuffer::from(std::mem::take(&mut self.values));
        Arc::new(PrimitiveArray::<T>::new(values, self.nulls.finish()).with_data_type(self.data_type.clone()))
    }
}

pub(crate) struct BooleanSink {
    values: BooleanBufferBuilder,
    nulls: Validity,
}

impl BooleanSink {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        BooleanSink { values: BooleanBufferBuilder::new(rows), nulls: Validity::with_capacity(rows) }
    }

    #[cfg(test)]
    pub(crate) fn append_value(&mut self, value: bool) {
        self.push(value);
        self.nulls.push(true);
    }

    pub(crate) fn append_null(&mut self) {
        self.push_empty();
        self.nulls.push(false);
    }

    /// A value without its validity bit (see [`Validity`]).
    pub(crate) fn push(&mut self, value: bool) {
        self.values.append(value);
    }

    /// A null's slot without its validity bit.
    pub(crate) fn push_empty(&mut self) {
        self.values.append(false);
    }

    pub(crate) fn validity(&mut self) -> &mut Validity {
        &mut self.nulls
    }

    pub(crate) fn append_nulls(&mut self, n: usize) {
        self.values.append_n(n, false);
        self.nulls.push_n(false, n);
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.nulls.truncate(len);
    }

    pub(crate) fn finish(&mut self) -> ArrayRef {
        Arc::new(BooleanArray::new(self.values.finish(), self.nulls.finish()))
    }
}

/// Values of varying length laid end to end behind 32-bit offsets, with their validity: the
/// storage of bytes and vector sinks.
struct Runs<T> {
    offsets: Vec<i32>,
    items: Vec<T>,
    nulls: Validity,
}

impl<T: Copy> Runs<T> {
    fn with_capacity(rows: usize, items: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Runs { offsets, items: Vec::with_capacity(items), nulls: Validity::with_capacity(rows) }
    }

    /// Appends `value` without its validity bit, or returns false when the offsets would
    /// overflow.
    #[inline]
    fn push(&mut self, value: &[T]) -> bool {
        let Ok(end) = i32::try_from(self.items.len() + value.len()) else { return false };
        self.items.extend_from_slice(value);
        self.offsets.push(end);
        true
    }

    /// Ends the value written onto the end of the items from `start`: appended when `written`
    /// succeeded and the offsets can hold it, else cut off, with `written`'s fault or `full`'s.
    #[inline(always)]
    fn end_written(&mut self, start: usize, written: FaultResult<()>, full: impl FnOnce() -> Fault) -> FaultResult<()> {
        let end = written.and_then(|()| i32::try_from(self.items.len()).map_err(|_| full()));
        match end {
            Ok(end) => {
                self.offsets.push(end);
                self.nulls.push(true);
                Ok(())
            }
            Err(fault) => {
                self.items.truncate(start);
                Err(fault)
            }
        }
    }

    /// A null's slot (an empty run) without its validity bit.
    #[inline]
    fn push_empty(&mut self) {
        let end = *self.offsets.last().unwrap_or(&0);
        self.offsets.push(end);
    }

    fn append_nulls(&mut self, n: usize) {
        let end = *self.offsets.last().unwrap_or(&0);
        self.offsets.resize(self.offsets.len() + n, end);
        self.nulls.push_n(false, n);
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.offsets.truncate(len + 1);
            self.items.truncate(self.offsets[len] as usize);
            self.nulls.truncate(len);
        }
    }

    /// The offsets (starting at 0, never falling, ending at the items' length), the items and
    /// the validity; the runs start empty again.
    fn take(&mut self) -> (ScalarBuffer<i32>, Vec<T>, Option<NullBuffer>) {
        let offsets = ScalarBuffer::from(std::mem::replace(&mut self.offsets, vec![0]));
        (offsets, std::mem::take(&mut self.items), self.nulls.finish())
    }
}

/// What a [`RunSink`] holds: the item its values are runs of and the array they finish as.
pub(crate) trait RunKind {
    type Item: Copy;
    type Value: ?Sized;

    fn items(value: &Self::Value) -> &[Self::Item];

    /// The array of runs `take`n from a [`Runs`] that only ever held whole values.
    fn finish(offsets: ScalarBuffer<i32>, items: Vec<Self::Item>, nulls: Option<NullBuffer>) -> ArrayRef;
}

/// A Utf8 or Binary array from whole values of its native type (`str` for Utf8), so it is
/// valid without a check.
impl<T: ByteArrayType<Offset = i32>> RunKind for T {
    type Item = u8;
    type Value = T::Native;

    fn items(value: &T::Native) -> &[u8] {
        value.as_ref()
    }

    fn finish(offsets: ScalarBuffer<i32>, items: Vec<u8>, nulls: Option<NullBuffer>) -> ArrayRef {
        // SAFETY: the offsets are valid for the items (see `Runs::take`), and every value is a
        // whole `T::Native` or was checked to be one (`append_checked_together`), so for Utf8
        // the bytes between two offsets are a `str`.
        let offsets = unsafe { OffsetBuffer::new_unchecked(offsets) };
        Arc::new(unsafe { GenericByteArray::<T>::new_unchecked(offsets, Buffer::from_vec(items), nulls) })
    }
}

impl RunSink<Utf8Type> {
    /// Appends the text `write` puts onto the end of the string it is given (the column's own
    /// bytes: a value decoded there is not copied again), or nothing when it fails; `full` is
    /// the fault when the column cannot hold it.
    #[inline(always)]
    pub(crate) fn append_text_with(
        &mut self,
        write: impl FnOnce(&mut String) -> FaultResult<()>,
        full: impl FnOnce() -> Fault,
    ) -> FaultResult<()> {
        let (start, written) = {
            let mut items = TextItems::lend(&mut self.runs.items);
            (items.text.len(), write(&mut items.text))
        };
        self.runs.end_written(start, written, full)
    }

    /// Appends `values` (None: NULL), bytes not yet checked as UTF-8, if together they are
    /// text: their bytes are checked once, as one run, and each value must start at a character
    /// boundary, which makes each value whole text too. Appends none and returns false when
    /// they are not, or when the column cannot hold them; the caller then puts them one by one
    /// to find the value at fault.
    pub(crate) fn append_checked_together<'v>(&mut self, values: impl Iterator<Item = Option<&'v [u8]>>) -> bool {
        let (rows, start, first_end) = (self.runs.len(), self.runs.items.len(), self.runs.offsets.len());
        let mut fits = true;
        let mut validity = ValidityRun::default();
        for value in values {
            match value {
                Some(bytes) if !self.runs.push(bytes) => {
                    fits = false;
                    break;
                }
                Some(_) => validity.push(true, &mut self.runs.nulls),
                None => {
                    self.runs.push_empty();
                    validity.push(false, &mut self.runs.nulls);
                }
            }
        }
        validity.end(&mut self.runs.nulls);
        let items = &self.runs.items;
        let at_boundary = |&end: &i32| items.get(end as usize).is_none_or(|&b| (b as i8) >= -0x40);
        let whole = fits
            && crate::utf8::check(&items[start..]).is_ok()
            && self.runs.offsets[first_end..].iter().all(at_boundary);
        if !whole {
            self.runs.truncate(rows);
        }
        whole
    }
}

impl RunSink<BinaryType> {
    /// [`RunSink::append_text_with`] for bytes.
    #[inline(always)]
    pub(crate) fn append_bytes_with(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> FaultResult<()>,
        full: impl FnOnce() -> Fault,
    ) -> FaultResult<()> {
        let start = self.runs.items.len();
        let written = write(&mut self.runs.items);
        self.runs.end_written(start, written, full)
    }
}

/// A text sink's bytes lent as the `String` they are, and given back when it is dropped (on a
/// panic too, so the sink never loses them).
struct TextItems<'r> {
    items: &'r mut Vec<u8>,
    text: String,
}

impl<'r> TextItems<'r> {
    fn lend(items: &'r mut Vec<u8>) -> Self {
        // SAFETY: the items of a Utf8 sink are whole `str`s laid end to end (`append_value`
        // takes a `str`, `append_text_with` a `String`'s growth, `append_checked_together`
        // keeps only bytes it checked, `truncate` cuts at a value's end), so they are UTF-8.
        let text = unsafe { String::from_utf8_unchecked(std::mem::take(items)) };
        TextItems { items, text }
    }
}

impl Drop for TextItems<'_> {
    fn drop(&mut self) {
        *self.items = std::mem::take(&mut self.text).into_bytes();
    }
}

/// VECTOR columns: a list of float32 per row.
pub(crate) struct Vector;

impl RunKind for Vector {
    type Item = f32;
    type Value = [f32];

    fn items(value: &[f32]) -> &[f32] {
        value
    }

    fn finish(offsets: ScalarBuffer<i32>, items: Vec<f32>, nulls: Option<NullBuffer>) -> ArrayRef {
        let values = Float32Array::new(ScalarBuffer::from(items), None);
        let item = Arc::new(Field::new_list_field(DataType::Float32, true));
        Arc::new(ListArray::new(item, OffsetBuffer::new(offsets), Arc::new(values), nulls))
    }
}

/// Values of varying length: text, bytes (copied into one buffer) and vectors.
pub(crate) struct RunSink<K: RunKind> {
    runs: Runs<K::Item>,
}

impl<K: RunKind> RunSink<K> {
    pub(crate) fn with_capacity(rows: usize, items: usize) -> Self {
        RunSink { runs: Runs::with_capacity(rows, items) }
    }

    /// The items of the values held (bytes, for text and binary).
    pub(crate) fn items_len(&self) -> usize {
        self.runs.items.len()
    }

    #[cfg(test)]
    pub(crate) fn append_value(&mut self, value: &K::Value) -> FaultResult<()> {
        self.push(value)?;
        self.runs.nulls.push(true);
        Ok(())
    }

    #[inline]
    pub(crate) fn append_null(&mut self) {
        self.push_empty();
        self.runs.nulls.push(false);
    }

    /// A value without its validity bit (see [`Validity`]); fails, pushing nothing, when the
    /// column's offsets cannot reach its end.
    #[inline]
    pub(crate) fn push(&mut self, value: &K::Value) -> FaultResult<()> {
        if self.runs.push(K::items(value)) {
            Ok(())
        } else {
            Err(Fault::new(0, "a column of this batch's output would exceed 2^31 items; decode smaller batches"))
        }
    }

    /// A null's slot without its validity bit.
    #[inline]
    pub(crate) fn push_empty(&mut self) {
        self.runs.push_empty();
    }

    pub(crate) fn validity(&mut self) -> &mut Validity {
        &mut self.runs.nulls
    }

    pub(crate) fn append_nulls(&mut self, n: usize) {
        self.runs.append_nulls(n);
    }

    pub(crate) fn len(&self) -> usize {
        self.runs.len()
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        self.runs.truncate(len);
    }

    pub(crate) fn finish(&mut self) -> ArrayRef {
        let (offsets, items, nulls) = self.runs.take();
        K::finish(offsets, items, nulls)
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;
    use std::io::Write as _;

    use proptest::prelude::*;

    use super::*;
    use arrow_array::types::{Decimal128Type, Int32Type};
    use arrow_array::{Array, BinaryArray, Decimal128Array, Int32Array, StringArray};

    #[derive(Debug, Clone)]
    enum Step {
        Run(Vec<bool>),
        Many(bool, usize),
        Truncate(usize),
        Finish,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => proptest::collection::vec(proptest::bool::weighted(0.9), 0..150).prop_map(Step::Run),
            1 => (any::<bool>(), 0..200usize).prop_map(|(v, n)| Step::Many(v, n)),
            1 => (0..400usize).prop_map(Step::Truncate),
            1 => Just(Step::Finish),
        ]
    }

    proptest! {
        /// Validity built from bits in runs, in counts and cut back reads as a plain list of
        /// flags does, with no bitmap while every value is valid.
        #[test]
        fn validity_reads_as_the_flags_it_was_given(steps in proptest::collection::vec(step(), 1..20)) {
            let mut validity = Validity::with_capacity(8);
            let mut model: Vec<bool> = Vec::new();
            let check = |validity: &mut Validity, model: &mut Vec<bool>| {
                let got = validity.finish();
                match &got {
                    None => prop_assert!(model.iter().all(|&v| v)),
                    Some(nulls) => {
                        prop_assert_eq!(nulls.len(), model.len());
                        prop_assert_eq!(nulls.iter().collect::<Vec<_>>(), model.clone());
                    }
                }
                model.clear();
                Ok(())
            };
            for step in steps {
                match step {
                    Step::Run(flags) => {
                        let mut run = ValidityRun::default();
                        for &v in &flags {
                            run.push(v, &mut validity);
                        }
                        run.end(&mut validity);
                        model.extend(flags);
                    }
                    Step::Many(v, n) => {
                        validity.push_n(v, n);
                        model.extend(std::iter::repeat_n(v, n));
                    }
                    Step::Truncate(len) => {
                        validity.truncate(len);
                        model.truncate(len);
                    }
                    Step::Finish => check(&mut validity, &mut model)?,
                }
            }
            check(&mut validity, &mut model)?;
        }
    }

    #[test]
    fn truncated_sinks_finish_as_if_the_dropped_values_never_came() {
        let mut ints = PrimitiveSink::<Int32Type>::with_capacity(DataType::Int32, 0);
        let mut text = RunSink::<Utf8Type>::with_capacity(0, 0);
        let mut bytes = RunSink::<BinaryType>::with_capacity(0, 0);
        let mut flags = BooleanSink::with_capacity(0);
        let mut vectors = RunSink::<Vector>::with_capacity(0, 0);
        ints.append_value(1);
        text.append_value("kept").unwrap();
        bytes.append_nulls(1);
        flags.append_value(true);
        vectors.append_value(&[1.0, 2.0]).unwrap();
        ints.append_nulls(2);
        text.append_value("dropped").unwrap();
        bytes.append_value(b"dropped").unwrap();
        flags.append_nulls(3);
        vectors.append_value(&[3.0]).unwrap();
        ints.truncate(1);
        text.truncate(1);
        bytes.truncate(1);
        flags.truncate(1);
        vectors.truncate(1);
        ints.append_value(2);
        text.append_value("after").unwrap();
        bytes.append_value(b"after").unwrap();
        flags.append_value(false);
        vectors.append_nulls(1);

        let ints = ints.finish();
        assert_eq!(ints.as_any().downcast_ref::<Int32Array>().unwrap(), &Int32Array::from(vec![1, 2]));
        let text = text.finish();
        assert_eq!(text.as_any().downcast_ref::<StringArray>().unwrap(), &StringArray::from(vec!["kept", "after"]));
        let bytes = bytes.finish();
        let want = BinaryArray::from(vec![None, Some(b"after".as_slice())]);
        assert_eq!(bytes.as_any().downcast_ref::<BinaryArray>().unwrap(), &want);
        let flags = flags.finish();
        assert_eq!(flags.as_any().downcast_ref::<BooleanArray>().unwrap(), &BooleanArray::from(vec![true, false]));
        let vectors = vectors.finish();
        let vectors = vectors.as_any().downcast_ref::<ListArray>().unwrap();
        assert_eq!(vectors.len(), 2);
        assert!(vectors.is_null(1));
        assert_eq!(vectors.value(0).as_any().downcast_ref::<Float32Array>().unwrap().values(), &[1.0, 2.0]);
        for array in [ints, text, bytes, flags] {
            array.to_data().validate_full().unwrap();
        }
        vectors.to_data().validate_full().unwrap();
    }

    #[test]
    fn values_written_in_place_are_kept_whole_or_not_at_all() {
        let full = || Fault::new(9, "full");
        let mut text = RunSink::<Utf8Type>::with_capacity(0, 0);
        text.append_value("a").unwrap();
        text.append_text_with(|s| s.write_str("Zoë").map_err(|_| full()), full).unwrap();
        let failed = text.append_text_with(
            |s| {
                s.push_str("lost");
                Err(Fault::new(3, "bad escape"))
            },
            full,
        );
        assert_eq!(failed.unwrap_err().offset, 3);
        text.append_null();
        text.append_text_with(|_| Ok(()), full).unwrap();
        let mut bytes = RunSink::<BinaryType>::with_capacity(0, 0);
        bytes.append_bytes_with(|b| b.write_all(&[0xff, 0]).map_err(|_| full()), full).unwrap();
        let failed = bytes.append_bytes_with(
            |b| {
                b.push(1);
                Err(Fault::new(5, "no"))
            },
            full,
        );
        assert_eq!(failed.unwrap_err().offset, 5);
        bytes.append_value(b"z").unwrap();

        let text = text.finish();
        text.to_data().validate_full().unwrap();
        let want = StringArray::from(vec![Some("a"), Some("Zoë"), None, Some("")]);
        assert_eq!(text.as_any().downcast_ref::<StringArray>().unwrap(), &want);
        let bytes = bytes.finish();
        let want = BinaryArray::from(vec![&[0xff, 0][..], b"z"]);
        assert_eq!(bytes.as_any().downcast_ref::<BinaryArray>().unwrap(), &want);
    }

    /// Values checked together are kept only when each is whole text: bytes that are UTF-8 only
    /// once joined (a character split across two values) are refused, and nothing of them kept.
    #[test]
    fn values_checked_together_are_kept_only_when_each_is_text() {
        let mut text = RunSink::<Utf8Type>::with_capacity(0, 0);
        text.append_value("a").unwrap();
        let values = [Some("Zoë".as_bytes()), None, Some(b"".as_slice()), Some("日本".as_bytes())];
        assert!(text.append_checked_together(values.into_iter()));
        let split = "é".as_bytes();
        assert!(!text.append_checked_together([Some(&split[..1]), Some(&split[1..])].into_iter()));
        assert!(!text.append_checked_together([Some(b"ok".as_slice()), Some(b"\xff".as_slice())].into_iter()));
        assert!(!text.append_checked_together([Some(b"ok".as_slice()), Some(&split[1..])].into_iter()));
        assert!(text.append_checked_together([Some(split)].into_iter()));
        let text = text.finish();
        text.to_data().validate_full().unwrap();
        let want = StringArray::from(vec![Some("a"), Some("Zoë"), None, Some(""), Some("日本"), Some("é")]);
        assert_eq!(text.as_any().downcast_ref::<StringArray>().unwrap(), &want);
    }

    #[test]
    fn sinks_start_empty_after_finish_and_keep_their_type() {
        let decimal = DataType::Decimal128(12, 2);
        let mut sink = PrimitiveSink::<Decimal128Type>::with_capacity(decimal.clone(), 4);
        sink.append_value(1250);
        sink.finish();
        sink.append_nulls(1);
        let array = sink.finish();
        let array = array.as_any().downcast_ref::<Decimal128Array>().unwrap();
        assert_eq!((array.len(), array.null_count(), array.data_type()), (1, 1, &decimal));
        let mut text = RunSink::<Utf8Type>::with_capacity(0, 0);
        text.append_value("x").unwrap();
        text.finish();
        assert_eq!(text.finish().len(), 0);
    }
}
