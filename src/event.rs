//! The event model every codec produces and every Arrow builder consumes.
//!
//! A codec reads one Kafka message into a [`MessageEvents`]: a list of [`Event`]s whose columns,
//! key names and strings borrow from the message bytes wherever the wire form is already the
//! value (an unescaped JSON string, a Craft string). The columns of all events of a message live
//! in one flat vector that is cleared, not freed, between messages, so decoding a batch allocates
//! nothing per event in the common case.
//!
//! Values stay in the form the wire gives (text, integer, float, bytes); turning them into an
//! Arrow type is the builders' business, so each protocol only has to say what it read.
//!
//! A codec that knows a table's columns before reading a row (Simple, from its schema cache;
//! the others from a plan of the table's wire columns) may skip the row model for the typed
//! layout: it puts each value into the [`TableColumns`] by field, and the events it pushes carry
//! no images.
//!
//! [`TableColumns`]: crate::columns::TableColumns

use std::borrow::Cow;
use std::ops::Range;

use crate::error::{Fault, FaultResult};
use crate::schema::mysql::MySqlType;

pub type Text<'a> = Cow<'a, str>;

/// What happened. The contract's `_op` strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Insert,
    Update,
    Delete,
    Ddl,
    Watermark,
    Bootstrap,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Insert => "INSERT",
            EventKind::Update => "UPDATE",
            EventKind::Delete => "DELETE",
            EventKind::Ddl => "DDL",
            EventKind::Watermark => "WATERMARK",
            EventKind::Bootstrap => "BOOTSTRAP",
        }
    }

    pub fn is_row(self) -> bool {
        matches!(self, EventKind::Insert | EventKind::Update | EventKind::Delete)
    }
}

/// A column's type as the message describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnType<'a> {
    pub base: MySqlType,
    pub unsigned: bool,
    /// The column holds bytes (binary charset): BINARY, VARBINARY, BLOB types.
    pub binary: bool,
    /// The type text as carried (`int unsigned`, `decimal(10,2)`), when the protocol carries one.
    pub text: Option<Text<'a>>,
    /// TiCDC's column flags word (Open, Craft), when carried.
    pub flags: Option<u64>,
}

/// TiCDC's column flag bits (`common.md` §3), as Open and Craft carry them.
pub mod flag {
    pub const BINARY: u64 = 0x01;
    pub const HANDLE_KEY: u64 = 0x02;
    pub const GENERATED: u64 = 0x04;
    pub const PRIMARY_KEY: u64 = 0x08;
    pub const UNIQUE_KEY: u64 = 0x10;
    pub const MULTIPLE_KEY: u64 = 0x20;
    pub const NULLABLE: u64 = 0x40;
    pub const UNSIGNED: u64 = 0x80;
}

impl<'a> ColumnType<'a> {
    pub fn new(base: MySqlType) -> Self {
        ColumnType { base, unsigned: false, binary: false, text: None, flags: None }
    }

    /// Whether a value of either type is read alike: same base type, sign, charset and text.
    pub fn same_type(&self, other: &ColumnType<'_>) -> bool {
        self.base == other.base
            && self.unsigned == other.unsigned
            && self.binary == other.binary
            && self.text.as_deref() == other.text.as_deref()
    }

    /// The flags word as carried, or else the one TiCDC would give a column of this type:
    /// BINARY for binary-charset columns (every non-string type, and binary strings), UNSIGNED,
    /// NULLABLE unless the column is a key, and HANDLE_KEY|PRIMARY_KEY for key columns.
    pub fn ticdc_flags(&self, is_key: bool) -> u64 {
        if let Some(flags) = self.flags {
            return flags;
        }
        let mut flags = 0;
        let text_charset = self.base.is_string() || matches!(self.base, MySqlType::Enum | MySqlType::Set);
        if self.binary || !text_charset {
            flags |= flag::BINARY;
        }
        if self.unsigned || matches!(self.base, MySqlType::Year | MySqlType::Bit) {
            flags |= flag::UNSIGNED;
        }
        if is_key {
            flags |= flag::HANDLE_KEY | flag::PRIMARY_KEY;
        } else {
            flags |= flag::NULLABLE;
        }
        flags
    }
}

/// A value in the form the wire gave it.
///
/// Its tag is a whole word (`repr(u64)`): values are moved a lot, and a copy reads the tag with
/// word-wide loads, which a narrower store of the tag just before cannot forward (a stall of
/// about a dozen cycles, once a value, on Open's and Avro's readers).
#[derive(Debug, Clone, PartialEq)]
#[repr(u64)]
pub enum Value<'a> {
    Null,
    Int(i64),
    UInt(u64),
    Float32(f32),
    Float64(f64),
    /// MySQL's text form: numbers, decimals, dates, times, JSON, or the text of a text column.
    Text(Text<'a>),
    /// The bytes of a binary column.
    Bytes(Cow<'a, [u8]>),
}

impl Value<'_> {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column<'a> {
    pub name: Text<'a>,
    pub ty: ColumnType<'a>,
    pub value: Value<'a>,
    /// Byte offset of the value in the message, for errors found when converting it.
    pub at: usize,
}

impl Default for Column<'_> {
    fn default() -> Self {
        Column { name: Cow::Borrowed(""), ty: ColumnType::new(MySqlType::Unknown), value: Value::Null, at: 0 }
    }
}

/// One change, DDL or progress mark. Row images are ranges into [`MessageEvents::columns`].
#[derive(Debug, Clone, PartialEq)]
pub struct Event<'a> {
    pub kind: EventKind,
    pub commit_ts: u64,
    pub schema: Option<Text<'a>>,
    pub table: Option<Text<'a>>,
    pub table_id: Option<i64>,
    pub partition_id: Option<i64>,
    pub schema_version: Option<u64>,
    pub table_schema: Option<Text<'a>>,
    pub ddl: Option<Text<'a>>,
    pub ddl_type: Option<Text<'a>>,
    pub handle_key_only: bool,
    pub claim_check: Option<Text<'a>>,
    /// The start ts of the event's transaction, where the message carries it (Simple JSON's
    /// `startTs`, TiCDC's `simple-include-start-ts`).
    pub start_ts: Option<u64>,
    /// The row's TiKV key, where the message carries it (Canal-JSON's `_tidb.rowkey`, TiCDC's
    /// `output-row-key`).
    pub row_key: Option<Cow<'a, [u8]>>,
    /// Primary/handle key column names: a range into [`MessageEvents::keys`].
    pub keys: Range<usize>,
    /// The new row of an INSERT or UPDATE: a range into [`MessageEvents::columns`].
    pub after: Option<Range<usize>>,
    /// The deleted row of a DELETE, or the old row of an UPDATE (completed from the new row
    /// where the message lists only changed columns).
    pub before: Option<Range<usize>>,
}

impl<'a> Event<'a> {
    pub fn new(kind: EventKind, commit_ts: u64) -> Self {
        Event {
            kind,
            commit_ts,
            schema: None,
            table: None,
            table_id: None,
            partition_id: None,
            schema_version: None,
            table_schema: None,
            ddl: None,
            ddl_type: None,
            handle_key_only: false,
            claim_check: None,
            start_ts: None,
            row_key: None,
            keys: 0..0,
            after: None,
            before: None,
        }
    }
}

/// The events decoded from one message, with the storage their row images and key names share.
#[derive(Debug, Default)]
pub struct MessageEvents<'a> {
    pub events: Vec<Event<'a>>,
    pub columns: Vec<Column<'a>>,
    pub keys: Vec<Text<'a>>,
    /// The buffers of owned names and values, given back by `clear` for the next message.
    pub spare: SpareBuffers,
}

impl<'a> MessageEvents<'a> {
    pub fn clear(&mut self) {
        self.events.clear();
        self.keys.clear();
        if !self.spare.lent_since_reclaim() {
            self.columns.clear();
            return;
        }
        for column in self.columns.drain(..) {
            self.spare.give_column(column.name, column.value);
        }
    }

    /// Appends an empty column for the caller to fill in place (see [`push_empty_column`]).
    #[inline]
    pub fn push_column(&mut self) -> &mut Column<'a> {
        push_empty_column(&mut self.columns)
    }

    /// Appends an event of `kind` at `commit_ts` with nothing else set, for the caller to fill
    /// in place: an `Event` is some 300 bytes, and one built on the stack and then pushed was
    /// copied (2.7% of Craft's typed profile, one copy per row).
    #[inline]
    pub fn push_event(&mut self, kind: EventKind, commit_ts: u64) -> &mut Event<'a> {
        push_in_place(&mut self.events, || Event::new(kind, commit_ts))
    }

    pub fn after(&self, event: &Event<'a>) -> &[Column<'a>] {
        event.after.clone().map_or(&[], |r| &self.columns[r])
    }

    pub fn before(&self, event: &Event<'a>) -> &[Column<'a>] {
        event.before.clone().map_or(&[], |r| &self.columns[r])
    }

    pub fn keys(&self, event: &Event<'a>) -> &[Text<'a>] {
        &self.keys[event.keys.clone()]
    }

    /// A column of the old image whose type differs from the one the new image gives it, as a
    /// fault at its value. TiCDC writes both images of a row from one table definition; a
    /// consumer reads one type per column (the envelope's `_types`, the typed layout's field),
    /// so a row whose images disagree is refused rather than read one way or the other.
    pub fn check_image_types(&self, after: &Range<usize>, before: &Range<usize>) -> FaultResult<()> {
        let (after, before) = (&self.columns[after.clone()], &self.columns[before.clone()]);
        for (i, old) in before.iter().enumerate() {
            let same_place = after.get(i).filter(|new| new.name == old.name);
            let Some(new) = same_place.or_else(|| after.iter().find(|new| new.name == old.name)) else { continue };
            if !new.ty.same_type(&old.ty) {
                return Err(Fault::new(
                    old.at,
                    format!("column {}: the old image gives it another type than the new image", old.name),
                ));
            }
        }
        Ok(())
    }
}

/// The allocation of `v`, emptied, for items of another lifetime: a codec cannot keep what
/// borrows from one message, so it keeps the storage instead of allocating it per message. An
/// empty vector collected in place keeps its buffer when both item types have one layout (they
/// differ only in their lifetimes).
#[allow(clippy::unnecessary_filter_map)] // `filter` cannot change the lifetime
pub(crate) fn recycle<T, U>(v: Vec<T>) -> Vec<U> {
    v.into_iter().filter_map(|_| None).collect()
}

/// Buffers for the values that cannot borrow from their message (strings with escapes, base64,
/// Go-quoted bytes), recycled from one message to the next: a fresh allocation and free for each
/// such value cost 3-6% of a JSON protocol's decode. The pool is bounded (at most 4 MiB: 512
/// buffers of up to 8 KiB) so that a message of many large values is not held for the life of the
/// decoder; a larger value costs an allocation, which copying it outweighs anyway.
#[derive(Debug, Default)]
pub struct SpareBuffers {
    free: Vec<Vec<u8>>,
    /// Whether a buffer was taken since the last [`Self::lent_since_reclaim`]: messages whose
    /// values all borrow (all of Craft's and Avro's, most JSON) are cleared without a look at
    /// each value.
    lent: bool,
}

impl SpareBuffers {
    const MAX_BUFFERS: usize = 512;
    const MAX_CAPACITY: usize = 8 * 1024;

    /// An empty buffer with room for at least `capacity` bytes.
    #[inline]
    pub fn take(&mut self, capacity: usize) -> Vec<u8> {
        self.lent = true;
        match self.free.pop() {
            Some(mut buffer) => {
                buffer.reserve(capacity);
                buffer
            }
            None => Vec::with_capacity(capacity),
        }
    }

    #[inline(never)]
    pub fn give(&mut self, mut buffer: Vec<u8>) {
        if self.free.len() < Self::MAX_BUFFERS && (1..=Self::MAX_CAPACITY).contains(&buffer.capacity()) {
            buffer.clear();
            self.free.push(buffer);
        }
    }

    /// Gives back the buffers a column's name and value own, if any.
    pub fn give_column(&mut self, name: Text<'_>, value: Value<'_>) {
        if let Cow::Owned(name) = name {
            self.give(name.into_bytes());
        }
        self.give_value(value);
    }

    /// Gives back the buffer a value owns, if any. Always inlined: it follows every value, and
    /// most values own nothing.
    #[inline(always)]
    pub fn give_value(&mut self, value: Value<'_>) {
        match value {
            Value::Text(Cow::Owned(text)) => self.give(text.into_bytes()),
            Value::Bytes(Cow::Owned(bytes)) => self.give(bytes),
            _ => {}
        }
    }

    /// Whether buffers were taken since the last call, which starts the count again.
    fn lent_since_reclaim(&mut self) -> bool {
        std::mem::take(&mut self.lent)
    }
}

/// Appends an empty column to `columns` for the caller to fill in place. Codecs fill columns
/// this way rather than pushing finished ones: a 112-byte `Column` built on the stack and then
/// copied stalled on store forwarding, once per value. `Vec::push` did the same with the empty
/// column (built before its possible reallocation, then copied): here the room is made first,
/// so the empty column is written straight into its slot.
#[inline]
pub fn push_empty_column<'a, 'c>(columns: &'c mut Vec<Column<'a>>) -> &'c mut Column<'a> {
    push_in_place(columns, Column::default)
}

/// Appends `make()` to `items`, made once the room for it is, so that it is written straight
/// into its slot, and lends it back.
#[inline(always)]
fn push_in_place<T>(items: &mut Vec<T>, make: impl FnOnce() -> T) -> &mut T {
    items.reserve(1);
    let at = items.len();
    // SAFETY: `reserve` made room for one more element at `at`, which is written before the
    // length covers it.
    unsafe {
        let slot = items.as_mut_ptr().add(at);
        slot.write(make());
        items.set_len(at + 1);
        &mut *slot
    }
}

/// Column name equality, inlined: names are short, and libc's `memcmp` call cost more than the
/// comparison (about 4% of the Craft typed profile). Each length class compares two words that
/// overlap to cover the name, with no loop over its bytes.
#[inline]
pub fn same_name(a: impl AsRef<[u8]>, b: impl AsRef<[u8]>) -> bool {
    let (a, b) = (a.as_ref(), b.as_ref());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn word<const W: usize>(s: &[u8], at: usize) -> [u8; W] {
        s.get(at..at + W).and_then(|w| w.try_into().ok()).unwrap_or([0; W])
    }
    match n {
        0 => true,
        1 => a[0] == b[0],
        2..=3 => word::<2>(a, 0) == word::<2>(b, 0) && word::<2>(a, n - 2) == word::<2>(b, n - 2),
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        _ => {
            (0..n / 8).all(|k| word::<8>(a, 8 * k) == word::<8>(b, 8 * k)) && word::<8>(a, n - 8) == word::<8>(b, n - 8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{same_name, SpareBuffers};

    #[test]
    fn spare_buffers_come_back_empty_and_stay_bounded() {
        let mut spare = SpareBuffers::default();
        spare.give(b"old bytes".to_vec());
        let buffer = spare.take(100);
        assert!(buffer.is_empty() && buffer.capacity() >= 100);
        (0..600).for_each(|_| spare.give(Vec::with_capacity(16)));
        spare.give(Vec::with_capacity(16 * 1024));
        spare.give(Vec::new());
        assert_eq!(spare.free.len(), SpareBuffers::MAX_BUFFERS);
        assert!(spare.free.iter().all(|b| b.capacity() <= SpareBuffers::MAX_CAPACITY));
    }

    #[test]
    fn same_name_compares_every_byte() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| b'a' + i % 26).collect();
            assert!(same_name(&a, a.clone()));
            assert!(!same_name(&a, &a[..n.saturating_sub(1)]) || n == 0);
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x20;
                assert!(!same_name(&a, &b), "length {n}, byte {i}");
            }
        }
    }
}
