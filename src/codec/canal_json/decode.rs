//! The Canal-JSON decoder.
//!
//! One JSON object per Kafka value (the storage sink's variant puts several, separated by
//! newlines; both are read). Values are all strings, typed only by the `mysqlType` map, so this
//! codec reads the object in one pass with the [`JsonCursor`]: `mysqlType` comes before `data` and
//! `old` in TiCDC's output, and when a producer writes them the other way round the row arrays are
//! skipped and read again once the types are known. Binary columns arrive as ISO-8859-1 text (one
//! code point per byte) and are turned back into their bytes here.
//!
//! A table's messages repeat its `sqlType` and `mysqlType` objects byte for byte, so the codec
//! remembers, per table ([`Tables`]), the text of each and what it read from it: a message that
//! repeats them is matched with one comparison instead of being parsed again (see
//! [`RepeatedTypes`]). The keys of a row message, and of its rows, are matched against the bytes
//! the last one wrote in the same way ([`KeyOrder`]).
//!
//! `mysqlType` says all there is to know about a column in TiCDC v5.4 and later. Earlier releases
//! (v4.0.9 to v5.3, `canal.go` `buildColumn`) wrote it without `unsigned` and wrote BINARY and
//! VARBINARY values as their raw text; only their `sqlType` codes tell (see [`SqlTypes`]).

use std::borrow::Cow;
use std::ops::Range;

use base64::Engine;

use crate::codec::{Codec, Protocol, ValueScratch};
use crate::columns::{Null, TableColumns};
use crate::error::{Fault, FaultResult};
use crate::event::{recycle, same_name, ColumnType, Event, EventKind, MessageEvents, Text, Value};
use crate::json::{span_in, JsonCursor, KeyOrder};
use crate::schema::mysql::MySqlType;
use rustc_hash::FxHashMap;

#[derive(Default)]
pub struct CanalJsonCodec {
    data_rows: Vec<Range<usize>>,
    old_rows: Vec<Range<usize>>,
    /// The `mysqlType` map's allocation, kept empty between objects (see [`recycle`]).
    types: Vec<MySqlTypeEntry<'static>>,
    /// Room for the values the direct path decodes on their way into the columns.
    decoded: ValueScratch,
    tables: Tables,
    /// The keys of objects as the last one wrote them.
    header_keys: KeyOrder<HeaderKey>,
    head: RepeatedHead,
}

/// The members a row message opens with that every message of a table repeats byte for byte
/// (TiCDC's `id`, `database`, `table`, `pkNames` and `isDdl`), as the direct path last read them:
/// a message that opens with the same bytes is past them with one comparison, its table named
/// by the same spans. The first `type`, type object, row array or `_tidb` ends them, and
/// `isDdl: true` is never among them.
#[derive(Default)]
struct RepeatedHead {
    /// The bytes from the object's `{` to the end of the last member's value.
    text: Vec<u8>,
    members: usize,
    database: Option<Range<usize>>,
    table: Option<Range<usize>>,
}

impl RepeatedHead {
    /// Whether a member of this kind can be part of a head.
    fn takes(key: HeaderKey) -> bool {
        matches!(key, HeaderKey::Database | HeaderKey::Table | HeaderKey::PkNames | HeaderKey::IsDdl | HeaderKey::Other)
    }

    /// Moves past the head when the object at `cur` opens with it, and names its table in `h`;
    /// returns how many members it held (0: not repeated, the cursor unmoved).
    fn skip<'a>(&self, cur: &mut JsonCursor<'a>, h: &mut Header<'a>) -> usize {
        if !cur.skip_if_next(&self.text) {
            return 0;
        }
        let at = cur.offset() - self.text.len();
        let name =
            |span: &Option<Range<usize>>| span.as_ref().map(|s| Cow::Borrowed(cur.slice(at + s.start..at + s.end)));
        h.database = name(&self.database);
        h.table = name(&self.table);
        self.members
    }

    /// Remembers `head`, the text of an object's first `members` members, which named its
    /// table in `h`; a name with escapes (not a span of the message) leaves no head.
    fn remember(&mut self, head: &str, members: usize, h: &Header<'_>) {
        let span = |name: &Option<Text<'_>>| match name {
            None => Some(None),
            Some(Cow::Borrowed(name)) => span_in(head.as_bytes(), name.as_bytes()).map(Some),
            Some(Cow::Owned(_)) => None,
        };
        self.text.clear();
        if let (Some(database), Some(table)) = (span(&h.database), span(&h.table)) {
            self.text.extend_from_slice(head.as_bytes());
            (self.members, self.database, self.table) = (members, database, table);
        }
    }
}

/// What one table's messages repeat, and what the codec makes of it once: its type objects and
/// the hints and direct plans read from them, and the keys of its rows as the last ones wrote
/// them. Each part is checked against the message before it is used (the objects' text
/// compared, the rest keyed by the objects' generations), so a message read with the cache of
/// another table is read right, only more slowly.
#[derive(Default)]
struct TableCache {
    mysql_types: RepeatedTypes,
    sql_types: SqlTypes,
    hints: Recent<TypeHints>,
    plans: Recent<DirectPlan>,
    row_keys: RowKeys,
}

/// The caches of the tables met, by name: one Kafka partition carries the messages of many
/// tables, interleaved. The one in use is kept apart, where the codec reaches it directly.
struct Tables {
    /// The cache in use (at first, the cache of messages that name no table before they use
    /// one), and the name it was picked for, `database` NUL `table`.
    current: TableCache,
    name: String,
    /// Every cache by its slot, but for the one in use, whose slot (`slot`) holds an empty one.
    parked: Vec<TableCache>,
    slot: usize,
    /// Each slot by name.
    by_name: FxHashMap<String, usize>,
}

/// Beyond this many tables the caches put aside are dropped and made again as tables come.
const MAX_TABLES: usize = 4096;

impl Default for Tables {
    fn default() -> Self {
        Tables {
            current: TableCache::default(),
            name: String::new(),
            parked: vec![TableCache::default()],
            slot: 0,
            by_name: FxHashMap::default(),
        }
    }
}

impl Tables {
    /// Reads `database` or `table` (`key`) into `h`, and makes the cache of the table it names
    /// the one in use: as the header names it, unless the message has used a cache already (its
    /// type objects come first), so that one message reads one cache.
    fn read_name<'a>(
        &mut self,
        key: HeaderKey,
        cur: &mut JsonCursor<'a>,
        h: &mut Header<'a>,
        seen: &TypesSeen,
    ) -> FaultResult<()> {
        let name = nullable_string(cur)?;
        if key == HeaderKey::Database {
            h.database = name
        } else {
            h.table = name
        }
        if !seen.types && !seen.codes {
            self.name(h);
        }
        Ok(())
    }

    fn name(&mut self, h: &Header<'_>) {
        if let (Some(database), Some(table)) = (&h.database, &h.table) {
            let (name, n) = (self.name.as_bytes(), database.len());
            let named = name.len() == n + 1 + table.len()
                && name[n] == 0
                && same_name(&name[..n], database.as_bytes())
                && same_name(&name[n + 1..], table.as_bytes());
            if !named {
                self.pick(database, table);
            }
        }
    }

    #[cold]
    fn pick(&mut self, database: &str, table: &str) {
        self.name.clear();
        self.name.extend([database, "\0", table]);
        // The cache in use goes back to its slot, whose empty one goes to the slot picked.
        std::mem::swap(&mut self.current, &mut self.parked[self.slot]);
        let next = match self.by_name.get(&self.name) {
            Some(&slot) => slot,
            None => {
                if self.parked.len() > MAX_TABLES {
                    // Slot 0, the cache of messages that name no table, is kept.
                    self.parked.truncate(1);
                    self.by_name.clear();
                }
                self.parked.push(TableCache::default());
                self.by_name.insert(self.name.clone(), self.parked.len() - 1);
                self.parked.len() - 1
            }
        };
        std::mem::swap(&mut self.current, &mut self.parked[next]);
        self.slot = next;
    }
}

/// The keys of rows, each with its `mysqlType` position, learnt under one `mysqlType` object
/// (its generation): the general reader and the direct path read them alike.
#[derive(Default)]
struct RowKeys {
    order: KeyOrder<Option<usize>>,
    generation: Option<u64>,
}

impl RowKeys {
    fn under(&mut self, generation: u64) -> &mut KeyOrder<Option<usize>> {
        if self.generation != Some(generation) {
            self.order.forget();
            self.generation = Some(generation);
        }
        &mut self.order
    }
}

/// The top-level keys the codec reads.
#[derive(Clone, Copy, PartialEq)]
enum HeaderKey {
    Sql,
    Database,
    Table,
    PkNames,
    IsDdl,
    Type,
    MySqlType,
    SqlType,
    Old,
    Data,
    TiDb,
    Other,
}

impl HeaderKey {
    fn of(name: &str) -> HeaderKey {
        match name {
            "database" => HeaderKey::Database,
            "table" => HeaderKey::Table,
            "pkNames" => HeaderKey::PkNames,
            "isDdl" => HeaderKey::IsDdl,
            "type" => HeaderKey::Type,
            "sql" => HeaderKey::Sql,
            "mysqlType" => HeaderKey::MySqlType,
            "sqlType" => HeaderKey::SqlType,
            "old" => HeaderKey::Old,
            "data" => HeaderKey::Data,
            "_tidb" => HeaderKey::TiDb,
            _ => HeaderKey::Other,
        }
    }
}

/// A `mysqlType` entry: the column's name and type, and how its values are written.
#[derive(Debug, Clone)]
struct MySqlTypeEntry<'a> {
    name: Text<'a>,
    ty: ColumnType<'a>,
    form: ValueForm,
}

impl<'a> MySqlTypeEntry<'a> {
    fn new(name: Text<'a>, ty: ColumnType<'a>) -> Self {
        let form = if ty.binary { ValueForm::Latin1 } else { ValueForm::Text };
        MySqlTypeEntry { name, ty, form }
    }
}

/// How a column's values are written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ValueForm {
    Text,
    /// A binary column's bytes, each as the character of the same code point.
    Latin1,
    /// A binary column's bytes as their raw text (before TiCDC v5.4; see [`SqlTypes`]).
    RawText,
}

/// The last few `sqlType` objects (JDBC type codes by column name), as [`SqlTypeObject`]s:
/// TiCDC writes an unsigned integer column's code by the row's value (the next wider type above
/// the signed maximum), so one table's messages alternate between a few objects. Before v5.4,
/// TiCDC could not tell signed integers from unsigned, so it wrote `mysqlType` without
/// `unsigned` and gave every integer column the code of the next wider type (TINYINT as
/// SMALLINT, ..., BIGINT as DECIMAL); and it wrote BINARY and VARBINARY values as their raw
/// text, with the code VARCHAR or CHAR, where it writes ISO-8859-1 under the code BLOB today.
#[derive(Default)]
struct SqlTypes {
    objects: Recent<SqlTypeObject>,
    /// Counts the objects read afresh, so that [`TypeHints`] know when to look again.
    read: u64,
}

/// One `sqlType` object: its text and the codes read from it.
#[derive(Default)]
struct SqlTypeObject {
    text: Vec<u8>,
    /// Each code with its column's name, a span of `names` (one buffer: no allocation per name).
    codes: Vec<(Range<usize>, i64)>,
    names: String,
    /// Which object read afresh this is (see [`SqlTypes::read`]).
    generation: u64,
}

/// The last few of something a table's messages alternate between, the one in use first.
struct Recent<T, const N: usize = 4>([T; N]);

impl<T: Default, const N: usize> Default for Recent<T, N> {
    fn default() -> Self {
        Recent(std::array::from_fn(|_| T::default()))
    }
}

impl<T, const N: usize> Recent<T, N> {
    /// Puts first the one that `is`, saying whether there was one; else the oldest, to be
    /// made afresh.
    fn find(&mut self, mut is: impl FnMut(&T) -> bool) -> bool {
        let found = self.0.iter().position(&mut is);
        self.0[..=found.unwrap_or(N - 1)].rotate_right(1);
        found.is_some()
    }

    fn first(&self) -> &T {
        &self.0[0]
    }

    fn first_mut(&mut self) -> &mut T {
        &mut self.0[0]
    }
}

mod jdbc {
    pub const CHAR: i64 = 1;
    pub const DECIMAL: i64 = 3;
    pub const INTEGER: i64 = 4;
    pub const SMALLINT: i64 = 5;
    pub const VARCHAR: i64 = 12;
    pub const BIGINT: i64 = -5;
}

impl SqlTypes {
    /// Reads the object, unless it repeats one of the last few.
    fn read(&mut self, cur: &mut JsonCursor<'_>) -> FaultResult<()> {
        if self.objects.find(|object| cur.skip_if_next(&object.text)) {
            return Ok(());
        }
        self.read += 1;
        self.objects.first_mut().read_afresh(cur, self.read)
    }

    fn generation(&self) -> u64 {
        self.objects.first().generation
    }

    fn code(&self, name: &str, position: usize) -> Option<i64> {
        self.objects.first().code(name, position)
    }
}

impl SqlTypeObject {
    fn read_afresh(&mut self, cur: &mut JsonCursor<'_>, generation: u64) -> FaultResult<()> {
        cur.peek();
        let at = cur.offset();
        self.text.clear();
        self.codes.clear();
        self.names.clear();
        self.generation = generation;
        if !cur.null()? {
            cur.begin_object()?;
            let mut first = true;
            while let Some(name) = cur.next_key(&mut first)? {
                // Codes are numbers; anything else is no code (as it was when none were read).
                match cur.peek() {
                    Some(b'-' | b'0'..=b'9') => {
                        if let Ok(code) = cur.number_text()?.parse() {
                            let from = self.names.len();
                            self.names.push_str(&name);
                            self.codes.push((from..self.names.len(), code));
                        }
                    }
                    _ => cur.skip_value()?,
                }
            }
        }
        self.text.extend_from_slice(cur.slice(at..cur.offset()).as_bytes());
        Ok(())
    }

    fn code(&self, name: &str, position: usize) -> Option<i64> {
        let named = |(span, _): &&(Range<usize>, i64)| same_name(&self.names[span.clone()], name);
        match self.codes.get(position) {
            Some(entry) if named(&entry) => Some(entry.1),
            _ => self.codes.iter().find(named).map(|&(_, code)| code),
        }
    }
}

/// What a `sqlType` code adds to a column's `mysqlType`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Hint {
    /// An integer whose sign TiCDC did not know: read at the unsigned width, which holds both.
    SignUnknown,
    /// A binary column whose values are their raw text.
    RawText,
}

impl Hint {
    fn of(ty: &ColumnType<'_>, code: i64) -> Option<Hint> {
        use MySqlType as T;
        match (ty.base, code) {
            (T::TinyInt, jdbc::SMALLINT)
            | (T::SmallInt, jdbc::INTEGER)
            | (T::Int, jdbc::BIGINT)
            | (T::BigInt, jdbc::DECIMAL)
                if !ty.unsigned =>
            {
                Some(Hint::SignUnknown)
            }
            (T::Char | T::VarChar, jdbc::CHAR | jdbc::VARCHAR) if ty.binary => Some(Hint::RawText),
            _ => None,
        }
    }

    /// Whether some code could give this column a hint.
    fn possible(ty: &ColumnType<'_>) -> bool {
        use MySqlType as T;
        match ty.base {
            T::TinyInt | T::SmallInt | T::Int | T::BigInt => !ty.unsigned,
            T::Char | T::VarChar => ty.binary,
            _ => false,
        }
    }

    fn apply(self, column: &mut MySqlTypeEntry<'_>) {
        match self {
            Hint::SignUnknown => column.ty.unsigned = true,
            Hint::RawText => column.form = ValueForm::RawText,
        }
    }
}

/// The hints of a pair of `mysqlType` and `sqlType` objects, by `mysqlType` position:
/// worked out when either object changes, applied to every message that repeats both (for
/// TiCDC v5.4 and later there are none).
#[derive(Default)]
struct TypeHints {
    generations: Option<(u64, u64)>,
    hints: Vec<(usize, Hint)>,
}

/// The last `mysqlType` object read, as text, and each entry's name and type text as offsets
/// into it with the type read from that text. Entries with escapes are not remembered (their
/// text is not a slice of the message), so neither is an object holding one.
#[derive(Default)]
struct RepeatedTypes {
    text: Vec<u8>,
    entries: Vec<(Range<usize>, Range<usize>, ColumnType<'static>)>,
    /// Counts the objects read afresh, so that [`TypeHints`] know when to look again.
    generation: u64,
}

impl RepeatedTypes {
    /// Reads the types from the cache when the message repeats the remembered object.
    fn read<'a>(&self, cur: &mut JsonCursor<'a>, types: &mut Vec<MySqlTypeEntry<'a>>) -> bool {
        match self.skip(cur) {
            Some(at) => {
                self.declared(cur, at, types);
                true
            }
            None => false,
        }
    }

    /// Skips the object when the message repeats the remembered one, returning where it is.
    fn skip(&self, cur: &mut JsonCursor<'_>) -> Option<usize> {
        cur.skip_if_next(&self.text).then(|| cur.offset() - self.text.len())
    }

    /// The declared columns of the remembered object, repeated by the message at `at`.
    fn declared<'a>(&self, cur: &JsonCursor<'a>, at: usize, types: &mut Vec<MySqlTypeEntry<'a>>) {
        types.extend(self.entries.iter().map(|(name, text, ty)| {
            let text = cur.slice(at + text.start..at + text.end);
            let ty = ColumnType {
                base: ty.base,
                unsigned: ty.unsigned,
                binary: ty.binary,
                text: Some(Cow::Borrowed(text)),
                flags: ty.flags,
            };
            MySqlTypeEntry::new(Cow::Borrowed(cur.slice(at + name.start..at + name.end)), ty)
        }));
    }

    /// Reads the object into `types` and remembers it.
    fn read_afresh<'a>(&mut self, cur: &mut JsonCursor<'a>, types: &mut Vec<MySqlTypeEntry<'a>>) -> FaultResult<()> {
        let at = cur.offset();
        read_types(cur, types)?;
        self.remember(cur, at, types);
        Ok(())
    }

    /// Remembers the object `cur` has just read, from `at`, into `types`.
    fn remember(&mut self, cur: &JsonCursor<'_>, at: usize, types: &[MySqlTypeEntry<'_>]) {
        self.text.clear();
        self.entries.clear();
        self.generation += 1;
        let object = cur.slice(at..cur.offset());
        let offset_of = |s: &str| span_in(object.as_bytes(), s.as_bytes());
        for MySqlTypeEntry { name, ty, .. } in types {
            let (Cow::Borrowed(name), Some(Cow::Borrowed(text))) = (name, &ty.text) else { break };
            let (Some(name), Some(text)) = (offset_of(name), offset_of(text)) else { break };
            self.entries.push((name, text, ColumnType { text: None, ..ty.clone() }));
        }
        if self.entries.len() == types.len() {
            self.text.extend_from_slice(object.as_bytes());
        } else {
            self.entries.clear();
        }
    }
}

/// Which of the type objects an object has shown so far.
#[derive(Default)]
struct TypesSeen {
    types: bool,
    codes: bool,
    /// Where a `mysqlType` the direct path found repeated is (its declared columns are not
    /// rebuilt unless the plan must be).
    repeated_at: Option<usize>,
}

impl TypesSeen {
    /// Whether `types` are final: `mysqlType` read, and `sqlType` too where it could change them.
    fn types_final(&self, types: &[MySqlTypeEntry<'_>]) -> bool {
        self.types && (self.codes || !types.iter().any(|d| Hint::possible(&d.ty)))
    }
}

/// The top-level fields of one object, as read.
#[derive(Default)]
struct Header<'a> {
    database: Option<Text<'a>>,
    table: Option<Text<'a>>,
    keys: Range<usize>,
    is_ddl: bool,
    kind: Option<Text<'a>>,
    sql: Option<Text<'a>>,
    data_at: Option<usize>,
    old_at: Option<usize>,
    commit_ts: Option<u64>,
    watermark_ts: Option<u64>,
    only_handle_key: bool,
    claim_check: Option<Text<'a>>,
    /// `_tidb.rowkey` (TiCDC's `output-row-key`), base64-decoded.
    row_key: Option<Vec<u8>>,
}

impl Codec for CanalJsonCodec {
    fn protocol(&self) -> Protocol {
        Protocol::CanalJson
    }

    fn decode<'a>(&mut self, _key: Option<&'a [u8]>, value: &'a [u8], out: &mut MessageEvents<'a>) -> FaultResult<()> {
        let mut cur = JsonCursor::new(value)?;
        if cur.at_end() {
            return Err(cur.fault("empty message"));
        }
        std::mem::swap(cur.spare(), &mut out.spare);
        let mut result = Ok(());
        while result.is_ok() && !cur.at_end() {
            result = self.decode_object(&mut cur, out);
        }
        std::mem::swap(cur.spare(), &mut out.spare);
        result
    }

    /// A message of one row object of the sink's table goes straight into the sink when it is
    /// as TiCDC writes it: `type`, `database` and `table` before the rows, `mysqlType` (and
    /// `sqlType` where it matters) before them too, an UPDATE's one old row (`old`) before its
    /// new one (`data`), each row listing the declared columns in their order. Any other message
    /// (a DDL, a watermark, a claim check, several objects, an old row of only the changed
    /// columns) is left to [`Codec::decode`].
    fn decode_rows<'a>(
        &mut self,
        _key: Option<&'a [u8]>,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        let Ok(mut cur) = JsonCursor::new(value) else { return Ok(false) };
        std::mem::swap(cur.spare(), &mut out.spare);
        let mut types = recycle(std::mem::take(&mut self.types));
        let put = self.put_object(&mut cur, &mut types, out, rows);
        self.types = recycle(types);
        self.decoded.release_large();
        std::mem::swap(cur.spare(), &mut out.spare);
        Ok(put? && cur.at_end())
    }
}

/// The rows of an array [`CanalJsonCodec::put_rows`] puts.
#[derive(Clone, Copy, PartialEq)]
enum RowsOf {
    /// An UPDATE's old row: its `_before`.
    UpdateOld,
    /// An UPDATE's new row, after its old one; the caller ends the row.
    UpdateNew,
    /// The rows of an INSERT or DELETE, each a row of its own.
    Change,
}

/// What the direct path needs of each declared column, by `mysqlType` position, for the
/// `mysqlType` and `sqlType` objects read last (their generations, and whether the message had
/// `sqlType`). It lives in the codec, so the messages that repeat those objects (a table's
/// messages do) use it without rebuilding their declared columns.
#[derive(Default)]
struct DirectPlan {
    columns: Vec<PlannedColumn>,
    /// The declared names, back to back.
    names: String,
    /// Whether some `sqlType` code could change a declared type (see [`Hint::possible`]).
    hints_possible: bool,
    key: Option<(u64, Option<u64>)>,
}

struct PlannedColumn {
    /// A span of [`DirectPlan::names`].
    name: Range<usize>,
    form: ValueForm,
    field: Option<usize>,
}

impl DirectPlan {
    fn rebuild(&mut self, types: &[MySqlTypeEntry<'_>], hints_possible: bool, rows: &TableColumns) {
        self.columns.clear();
        self.names.clear();
        for d in types {
            let from = self.names.len();
            self.names.push_str(&d.name);
            self.columns.push(PlannedColumn { name: from..self.names.len(), form: d.form, field: rows.field(&d.name) });
        }
        self.hints_possible = hints_possible;
    }

    fn name(&self, column: &PlannedColumn) -> &str {
        &self.names[column.name.clone()]
    }

    /// The position of the column `name` (see [`position_named`]).
    fn position_of(&self, name: &str, position: usize) -> Option<usize> {
        position_named(&self.columns, position, |c| same_name(self.name(c).as_bytes(), name))
    }
}

impl CanalJsonCodec {
    fn decode_object<'a>(&mut self, cur: &mut JsonCursor<'a>, out: &mut MessageEvents<'a>) -> FaultResult<()> {
        let mut types = recycle(std::mem::take(&mut self.types));
        let result = self.decode_object_with(cur, &mut types, out);
        self.types = recycle(types);
        result
    }

    fn decode_object_with<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        types: &mut Vec<MySqlTypeEntry<'a>>,
        out: &mut MessageEvents<'a>,
    ) -> FaultResult<()> {
        let object_at = cur.offset();
        let mut h = Header::default();
        self.data_rows.clear();
        self.old_rows.clear();
        let mut data_read = false;
        let mut old_read = false;
        let mut seen = TypesSeen::default();

        cur.begin_object()?;
        let mut nth = 0;
        while let Some(key) = self.header_keys.next(cur, nth, HeaderKey::of)? {
            nth += 1;
            match key {
                HeaderKey::Database | HeaderKey::Table => self.tables.read_name(key, cur, &mut h, &seen)?,
                HeaderKey::PkNames => h.keys = read_key_names(cur, out)?,
                HeaderKey::IsDdl => h.is_ddl = !cur.null()? && cur.bool()?,
                HeaderKey::Type => h.kind = nullable_string(cur)?,
                HeaderKey::Sql => h.sql = nullable_string(cur)?,
                HeaderKey::MySqlType | HeaderKey::SqlType => {
                    let table = &mut self.tables.current;
                    table.read_types(key == HeaderKey::MySqlType, cur, types, &mut seen)?;
                }
                // Rows are read once their types are final: after `sqlType` too where it could
                // change them.
                HeaderKey::Data if seen.types_final(types) => {
                    let keys = self.tables.current.row_keys();
                    data_read = read_rows(cur, types, keys, out, &mut self.data_rows)?;
                }
                HeaderKey::Old if seen.types_final(types) => {
                    let keys = self.tables.current.row_keys();
                    old_read = read_rows(cur, types, keys, out, &mut self.old_rows)?;
                }
                HeaderKey::Data | HeaderKey::Old => {
                    let at = cur.offset();
                    if !cur.null()? {
                        cur.skip_value()?;
                        if key == HeaderKey::Data {
                            h.data_at = Some(at)
                        } else {
                            h.old_at = Some(at)
                        }
                    }
                }
                HeaderKey::TiDb => read_tidb(cur, &mut h)?,
                HeaderKey::Other => cur.skip_value()?,
            }
        }
        let end = cur.offset();
        // Row arrays met before their types are read now that the types are known.
        let keys = self.tables.current.row_keys();
        if let (Some(at), false) = (h.data_at, data_read) {
            cur.seek(at);
            read_rows(cur, types, keys, out, &mut self.data_rows)?;
        }
        if let (Some(at), false) = (h.old_at, old_read) {
            cur.seek(at);
            read_rows(cur, types, keys, out, &mut self.old_rows)?;
        }
        cur.seek(end);
        self.emit(h, object_at, out)
    }

    /// [`Codec::decode_rows`]: false for a message it leaves to `decode`.
    fn put_object<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        types: &mut Vec<MySqlTypeEntry<'a>>,
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        let mut h = Header::default();
        let mut seen = TypesSeen::default();
        let mut kind = None;
        let (mut old_rows, mut new_rows) = (0, 0);
        cur.peek();
        let object_at = cur.offset();
        let mut nth = self.head.skip(cur, &mut h);
        // Where the head ends while every member read so far can be in it.
        let mut head_end = (nth == 0).then_some(object_at);
        if nth == 0 {
            cur.begin_object()?;
        } else {
            self.tables.name(&h);
        }
        while let Some(key) = self.header_keys.next(cur, nth, HeaderKey::of)? {
            if let Some(end) = head_end.filter(|_| !RepeatedHead::takes(key)) {
                self.head.remember(cur.slice(object_at..end), nth, &h);
                head_end = None;
            }
            nth += 1;
            match key {
                HeaderKey::Database | HeaderKey::Table => self.tables.read_name(key, cur, &mut h, &seen)?,
                HeaderKey::PkNames => {
                    read_key_names(cur, out)?;
                }
                HeaderKey::IsDdl => {
                    if !cur.null()? && cur.bool()? {
                        return Ok(false);
                    }
                }
                HeaderKey::Type => {
                    kind = match nullable_string(cur)?.as_deref() {
                        Some("INSERT" | "INIT") => Some(EventKind::Insert),
                        Some("UPDATE") => Some(EventKind::Update),
                        Some("DELETE") => Some(EventKind::Delete),
                        _ => return Ok(false),
                    }
                }
                HeaderKey::MySqlType if !seen.types => {
                    let mysql_types = &mut self.tables.current.mysql_types;
                    match mysql_types.skip(cur) {
                        Some(at) => seen.repeated_at = Some(at),
                        None => mysql_types.read_afresh(cur, types)?,
                    }
                    seen.types = true;
                }
                HeaderKey::SqlType if !seen.codes => {
                    self.tables.current.sql_types.read(cur)?;
                    seen.codes = true;
                }
                HeaderKey::MySqlType | HeaderKey::SqlType => return Ok(false),
                HeaderKey::Old | HeaderKey::Data => {
                    let is_old = matches!(key, HeaderKey::Old);
                    if is_old && kind != Some(EventKind::Update) && cur.null()? {
                        continue;
                    }
                    let (Some(kind), Some(database), Some(table)) = (kind, &h.database, &h.table) else {
                        return Ok(false);
                    };
                    if !seen.types || new_rows > 0 || !rows.takes(database, table) {
                        return Ok(false);
                    }
                    let table = &mut self.tables.current;
                    table.plan(cur, types, &seen, rows);
                    if !seen.codes && table.plans.first().hints_possible {
                        return Ok(false);
                    }
                    let of = match (is_old, kind) {
                        (true, EventKind::Update) if old_rows == 0 => RowsOf::UpdateOld,
                        (false, EventKind::Update) if old_rows == 1 => RowsOf::UpdateNew,
                        (false, EventKind::Insert | EventKind::Delete) => RowsOf::Change,
                        _ => return Ok(false),
                    };
                    match (of, table.put_rows(cur, rows, of, &mut self.decoded)?) {
                        (RowsOf::UpdateOld, Some(1)) => old_rows = 1,
                        (RowsOf::UpdateNew, Some(1)) => {
                            rows.end_row(true);
                            new_rows = 1;
                        }
                        (RowsOf::Change, Some(n)) if n > 0 => new_rows = n,
                        _ => return Ok(false),
                    }
                }
                HeaderKey::TiDb => read_tidb(cur, &mut h)?,
                HeaderKey::Sql | HeaderKey::Other => cur.skip_value()?,
            }
            if head_end.is_some() {
                head_end = Some(cur.offset());
            }
        }
        if new_rows == 0 || h.only_handle_key || h.claim_check.is_some() {
            return Ok(false);
        }
        let kind = kind.unwrap_or(EventKind::Insert);
        for _ in 0..new_rows {
            let ev = out.push_event(kind, h.commit_ts.unwrap_or(0));
            ev.schema = h.database.clone();
            ev.table = h.table.clone();
            ev.row_key = h.row_key.clone().map(Cow::Owned);
        }
        Ok(true)
    }

    fn emit<'a>(&self, h: Header<'a>, at: usize, out: &mut MessageEvents<'a>) -> FaultResult<()> {
        let kind_text = h.kind.as_deref().unwrap_or("");
        if h.is_ddl {
            let mut ev = Event::new(EventKind::Ddl, h.commit_ts.unwrap_or(0));
            ev.schema = h.database.filter(|s| !s.is_empty());
            ev.table = h.table.filter(|s| !s.is_empty());
            ev.ddl = h.sql;
            ev.ddl_type = h.kind;
            out.events.push(ev);
            return Ok(());
        }
        if kind_text == "TIDB_WATERMARK" {
            let ts = h.watermark_ts.ok_or_else(|| {
                Fault::new(at, "TIDB_WATERMARK message without _tidb.watermarkTs (TiDB extension off?)")
            })?;
            out.events.push(Event::new(EventKind::Watermark, ts));
            return Ok(());
        }
        let kind = match kind_text {
            // INIT: Canal's initial-load rows (canal-adapter, Flink), inserts of the snapshot.
            "INSERT" | "INIT" => EventKind::Insert,
            "UPDATE" => EventKind::Update,
            "DELETE" => EventKind::Delete,
            other => return Err(Fault::new(at, format!("unknown message type {other:?}"))),
        };
        if self.data_rows.is_empty() {
            return Err(Fault::new(at, format!("{} message without data", kind.as_str())));
        }
        for (i, row) in self.data_rows.iter().enumerate() {
            let before = match kind {
                EventKind::Update => self.old_rows.get(i).map(|old| complete_old_row(out, row, old)),
                _ => None,
            };
            let ev = out.push_event(kind, h.commit_ts.unwrap_or(0));
            ev.schema = h.database.clone();
            ev.table = h.table.clone();
            ev.keys = h.keys.clone();
            ev.handle_key_only = h.only_handle_key;
            ev.claim_check = h.claim_check.clone();
            ev.row_key = h.row_key.clone().map(Cow::Owned);
            match kind {
                EventKind::Delete => ev.before = Some(row.clone()),
                EventKind::Update => {
                    ev.after = Some(row.clone());
                    ev.before = before;
                }
                _ => ev.after = Some(row.clone()),
            }
        }
        Ok(())
    }
}

fn nullable_string<'a>(cur: &mut JsonCursor<'a>) -> FaultResult<Option<Text<'a>>> {
    if cur.null()? {
        return Ok(None);
    }
    cur.string().map(Some)
}

fn read_key_names<'a>(cur: &mut JsonCursor<'a>, out: &mut MessageEvents<'a>) -> FaultResult<Range<usize>> {
    let start = out.keys.len();
    if !cur.null()? {
        cur.begin_array()?;
        let mut first = true;
        while cur.next_item(&mut first)? {
            out.keys.push(cur.string()?);
        }
    }
    Ok(start..out.keys.len())
}

fn read_types<'a>(cur: &mut JsonCursor<'a>, types: &mut Vec<MySqlTypeEntry<'a>>) -> FaultResult<()> {
    if cur.null()? {
        return Ok(());
    }
    cur.begin_object()?;
    let mut first = true;
    while let Some(name) = cur.next_key(&mut first)? {
        let text = cur.string()?;
        types.push(MySqlTypeEntry::new(name, column_type(text)));
    }
    Ok(())
}

/// `int unsigned`, `varbinary`, or in content-compatible mode `decimal(10,2)`,
/// `bigint(20) unsigned zerofill`, `enum('a','b')`.
fn column_type(text: Text<'_>) -> ColumnType<'_> {
    let name_end = text.find(['(', ' ']).unwrap_or(text.len());
    let (base, binary) = MySqlType::from_name(&text[..name_end]);
    let unsigned = name_end < text.len() && {
        let modifiers = match text.rfind(')') {
            Some(close) if close > name_end => &text[close + 1..],
            _ => &text[name_end..],
        };
        modifiers.contains("unsigned") || modifiers.contains("zerofill")
    };
    ColumnType { base, unsigned, binary, text: Some(text), flags: None }
}

/// Reads `null` or an array of row objects (a `null` row is an empty one), appending each row's
/// columns to `out.columns` and its range to `rows`; `keys` are those learnt under `types`.
/// Returns whether an array was read.
fn read_rows<'a>(
    cur: &mut JsonCursor<'a>,
    types: &[MySqlTypeEntry<'a>],
    keys: &mut KeyOrder<Option<usize>>,
    out: &mut MessageEvents<'a>,
    rows: &mut Vec<Range<usize>>,
) -> FaultResult<bool> {
    if cur.null()? {
        return Ok(false);
    }
    cur.begin_array()?;
    let mut first_row = true;
    while cur.next_item(&mut first_row)? {
        let start = out.columns.len();
        if cur.null()? {
            // TiCDC v4.0.9 to v5.3 wrote `"old":[null]` on every INSERT (for Canal's adapter);
            // Go reads a null row as an empty map.
            rows.push(start..start);
            continue;
        }
        cur.begin_object()?;
        let mut position = 0;
        loop {
            let key = if types.is_empty() {
                cur.next_key(&mut (position == 0))?.map(|name| (None, name))
            } else {
                keys.next_named(cur, position, |name| lookup_type(types, name, position))?
            };
            let Some((found, name)) = key else { break };
            position += 1;
            let name_at = cur.offset();
            let declared = match found.and_then(|i| types.get(i)) {
                Some(declared) => declared,
                None if types.is_empty() => &UNTYPED,
                None => return Err(Fault::new(name_at, format!("mysql type does not found, column: {name}"))),
            };
            let at = cur.offset();
            let column = out.push_column();
            column.name = name;
            column.ty = declared.ty.clone();
            column.at = at;
            read_value(cur, declared.form, &mut column.value)?;
        }
        rows.push(start..out.columns.len());
    }
    Ok(true)
}

impl TableCache {
    /// The keys of rows, learnt under the `mysqlType` object read last.
    fn row_keys(&mut self) -> &mut KeyOrder<Option<usize>> {
        self.row_keys.under(self.mysql_types.generation)
    }

    /// Makes the plan for this message's type objects, unless it is already made. Its
    /// declared columns are in `types` when `mysqlType` was read afresh; a repeated one's are
    /// rebuilt from the remembered object only here.
    fn plan<'a>(
        &mut self,
        cur: &JsonCursor<'a>,
        types: &mut Vec<MySqlTypeEntry<'a>>,
        seen: &TypesSeen,
        rows: &TableColumns,
    ) {
        let key = (self.mysql_types.generation, seen.codes.then_some(self.sql_types.generation()));
        if self.plans.find(|plan| plan.key == Some(key)) {
            return;
        }
        if let Some(at) = seen.repeated_at {
            self.mysql_types.declared(cur, at, types);
        }
        let hints_possible = types.iter().any(|d| Hint::possible(&d.ty));
        if seen.codes {
            self.apply_hints(types);
        }
        let plan = self.plans.first_mut();
        plan.rebuild(types, hints_possible, rows);
        plan.key = Some(key);
    }

    /// Puts an array of rows into `rows`, as `of` says. Returns how many rows there were; None
    /// for rows that do not list the declared columns in their order (all of them, for an
    /// UPDATE's rows, so that its old row is whole).
    fn put_rows<'a>(
        &mut self,
        cur: &mut JsonCursor<'a>,
        rows: &mut TableColumns,
        of: RowsOf,
        decoded: &mut ValueScratch,
    ) -> FaultResult<Option<usize>> {
        if cur.null()? {
            return Ok(None);
        }
        let mut count = 0;
        let plan = self.plans.first();
        let keys = self.row_keys.under(self.mysql_types.generation);
        cur.begin_array()?;
        let mut first_row = true;
        while cur.next_item(&mut first_row)? {
            if cur.null()? {
                return Ok(None);
            }
            cur.begin_object()?;
            rows.begin_image(of == RowsOf::UpdateOld);
            let mut position = 0;
            while let Some(found) = keys.next(cur, position, |name| plan.position_of(name, position))? {
                let (true, Some(column)) = (found == Some(position), plan.columns.get(position)) else {
                    return Ok(None);
                };
                put_value(cur, column.form, column.field, rows, decoded)?;
                position += 1;
            }
            if of != RowsOf::Change && position != plan.columns.len() {
                return Ok(None);
            }
            rows.end_image();
            if of == RowsOf::Change {
                rows.end_row(false);
            }
            count += 1;
        }
        Ok(Some(count))
    }

    /// Reads `mysqlType` (or else `sqlType`), applying the hints once both are read.
    fn read_types<'a>(
        &mut self,
        mysql_type: bool,
        cur: &mut JsonCursor<'a>,
        types: &mut Vec<MySqlTypeEntry<'a>>,
        seen: &mut TypesSeen,
    ) -> FaultResult<()> {
        if mysql_type {
            if !self.mysql_types.read(cur, types) {
                self.mysql_types.read_afresh(cur, types)?;
            }
            seen.types = true;
        } else {
            self.sql_types.read(cur)?;
            seen.codes = true;
        }
        if seen.types && seen.codes {
            self.apply_hints(types);
        }
        Ok(())
    }

    /// Applies the `sqlType` hints to the types just read (see [`SqlTypes`]).
    fn apply_hints(&mut self, types: &mut [MySqlTypeEntry<'_>]) {
        let generations = Some((self.mysql_types.generation, self.sql_types.generation()));
        if !self.hints.find(|hints| hints.generations == generations) {
            let hints = self.hints.first_mut();
            hints.generations = generations;
            hints.hints.clear();
            for (i, d) in types.iter().enumerate() {
                if let Some(hint) = self.sql_types.code(&d.name, i).and_then(|code| Hint::of(&d.ty, code)) {
                    hints.hints.push((i, hint));
                }
            }
        }
        for &(i, hint) in &self.hints.first().hints {
            if let Some(column) = types.get_mut(i) {
                hint.apply(column);
            }
        }
    }
}

/// The type of every column of a message that carries no `mysqlType` at all. TiCDC and Canal
/// always write one (and a column missing from it fails the message, as in Go); Flink's and
/// Flink CDC's Canal-JSON writers never do, and their values are read as text.
static UNTYPED: MySqlTypeEntry<'static> = MySqlTypeEntry {
    name: Cow::Borrowed(""),
    ty: ColumnType { base: MySqlType::Unknown, unsigned: false, binary: false, text: None, flags: None },
    form: ValueForm::Text,
};

/// The `mysqlType` position of the column `name` (see [`position_named`]).
fn lookup_type(types: &[MySqlTypeEntry<'_>], name: &str, position: usize) -> Option<usize> {
    position_named(types, position, |d| same_name(d.name.as_bytes(), name))
}

/// The position of the declared column `named` accepts. Types and data usually list columns in
/// the same order: the same position is tried first.
fn position_named<T>(columns: &[T], position: usize, named: impl Fn(&T) -> bool) -> Option<usize> {
    match columns.get(position) {
        Some(c) if named(c) => Some(position),
        _ => columns.iter().position(named),
    }
}

/// Reads a column value into `out` (null until then). Stored rather than returned: a returned
/// `Result<Value, _>` travels through memory and stalled the caller's copy of it.
fn read_value<'a>(cur: &mut JsonCursor<'a>, form: ValueForm, out: &mut Value<'a>) -> FaultResult<()> {
    match cur.peek() {
        Some(b'n') => {
            cur.null()?;
        }
        // Canal writes each byte of a binary value as the character of the same code point.
        Some(b'"') if form == ValueForm::Latin1 => *out = Value::Bytes(cur.latin1_string()?),
        Some(b'"') if form == ValueForm::RawText => *out = Value::Bytes(text_bytes(cur.string()?)),
        Some(b'"') => *out = Value::Text(cur.string()?),
        // Canal proper writes strings; numbers from other producers keep their text.
        Some(b'-' | b'0'..=b'9') => *out = Value::Text(Cow::Borrowed(cur.number_text()?)),
        _ => return Err(cur.fault("column value must be a string or null")),
    }
    Ok(())
}

/// Puts a column value into `rows`, for `field`, read as [`read_value`] reads it: borrowed from
/// the message, or decoded into `decoded` when it has escapes or is Latin-1 beyond ASCII.
#[inline(always)]
fn put_value(
    cur: &mut JsonCursor<'_>,
    form: ValueForm,
    field: Option<usize>,
    rows: &mut TableColumns,
    decoded: &mut ValueScratch,
) -> FaultResult<()> {
    let at = cur.offset();
    match cur.peek() {
        Some(b'n') => {
            cur.null()?;
            rows.put(field, Null, at)
        }
        // One arm per form: the form matched again inside one shared arm cost 0.8% of a decode.
        Some(b'"') if form == ValueForm::Latin1 => rows.put_bytes_with(
            field,
            at,
            &mut decoded.bytes,
            #[inline(always)]
            |bytes| cur.latin1_or_into(bytes),
        ),
        Some(b'"') if form == ValueForm::RawText => rows.put_bytes_with(
            field,
            at,
            &mut decoded.bytes,
            #[inline(always)]
            |bytes| cur.string_bytes_or_into(bytes),
        ),
        Some(b'"') => rows.put_text_with(
            field,
            at,
            &mut decoded.text,
            #[inline(always)]
            |text| cur.string_or_into(text),
        ),
        Some(b'-' | b'0'..=b'9') => rows.put(field, cur.number_text()?, at),
        _ => Err(cur.fault("column value must be a string or null")),
    }
}

fn text_bytes(text: Text<'_>) -> Cow<'_, [u8]> {
    match text {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

/// The old image of an UPDATE whose `old` lists only changed columns: every column of the new
/// row, taking the old value where `old` has one (the Go decoder's reading).
fn complete_old_row(out: &mut MessageEvents<'_>, new: &Range<usize>, old: &Range<usize>) -> Range<usize> {
    let complete = new.len() == old.len()
        && out.columns[new.clone()].iter().zip(&out.columns[old.clone()]).all(|(n, o)| n.name == o.name);
    if complete {
        return old.clone();
    }
    let start = out.columns.len();
    for i in new.clone() {
        let name = &out.columns[i].name;
        let source = out.columns[old.clone()].iter().position(|c| &c.name == name).map_or(i, |p| old.start + p);
        out.columns.push(out.columns[source].clone());
    }
    for i in old.clone() {
        let name = &out.columns[i].name;
        if !out.columns[new.clone()].iter().any(|c| &c.name == name) {
            out.columns.push(out.columns[i].clone());
        }
    }
    start..out.columns.len()
}

fn read_tidb<'a>(cur: &mut JsonCursor<'a>, h: &mut Header<'a>) -> FaultResult<()> {
    if cur.null()? {
        return Ok(());
    }
    cur.begin_object()?;
    let mut first = true;
    // TiCDC writes `{"commitTs":…}`: its key is matched as bytes, not read and compared.
    if cur.skip_if_next(b"\"commitTs\":") {
        h.commit_ts = Some(cur.u64()?);
        first = false;
    }
    while let Some(key) = cur.next_key(&mut first)? {
        match key.as_ref() {
            "commitTs" => h.commit_ts = Some(cur.u64()?),
            "watermarkTs" => h.watermark_ts = Some(cur.u64()?),
            "onlyHandleKey" => h.only_handle_key = cur.bool()?,
            "claimCheckLocation" => h.claim_check = nullable_string(cur)?,
            // easyjson's Base64Bytes: standard alphabet, padded; `null` for a nil key.
            "rowkey" => {
                let at = cur.offset();
                h.row_key = match nullable_string(cur)? {
                    None => None,
                    Some(text) => Some(
                        base64::engine::general_purpose::STANDARD
                            .decode(text.as_bytes())
                            .map_err(|e| Fault::new(at, format!("_tidb.rowkey is not base64: {e}")))?,
                    ),
                };
            }
            _ => cur.skip_value()?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, ArrayRef};
    use arrow_schema::{DataType, Field, Fields};

    use super::*;
    use crate::schema::{ServerZone, TableName};

    #[test]
    fn recycled_types_keep_their_allocation() {
        let mut v: Vec<MySqlTypeEntry<'_>> = Vec::with_capacity(12);
        v.push(MySqlTypeEntry::new(Cow::Borrowed("id"), ColumnType::new(MySqlType::Int)));
        let recycled: Vec<MySqlTypeEntry<'_>> = recycle(v);
        assert_eq!(recycled.capacity(), 12);
    }

    fn message(types: &str, data: &str) -> String {
        format!(
            r#"{{"database":"d","table":"t","pkNames":["a"],"isDdl":false,"type":"INSERT","sqlType":{{"a":4}},"mysqlType":{types},"data":[{data}],"old":null}}"#
        )
    }

    /// Reads `message` and returns each column's (name, base type, unsigned, type text, value).
    fn columns(codec: &mut CanalJsonCodec, message: &str) -> Vec<(String, MySqlType, bool, String, String)> {
        let mut out = MessageEvents::default();
        codec.decode(None, message.as_bytes(), &mut out).unwrap();
        out.columns
            .iter()
            .map(|c| {
                let text = c.ty.text.as_deref().unwrap_or_default().to_string();
                (c.name.to_string(), c.ty.base, c.ty.unsigned, text, format!("{:?}", c.value))
            })
            .collect()
    }

    /// Reads `message` with `codec` straight into the columns `a` (text) and `b` (bytes) of the
    /// table the message names, as the general read finds it: whether the codec took it, its
    /// events, and the two columns as read.
    fn read_rows(codec: &mut CanalJsonCodec, message: &str) -> FaultResult<(bool, String, Vec<ArrayRef>)> {
        let mut general = MessageEvents::default();
        CanalJsonCodec::default().decode(None, message.as_bytes(), &mut general)?;
        let named = &general.events[0];
        let table = TableName {
            schema: named.schema.as_deref().unwrap_or_default().into(),
            table: named.table.as_deref().unwrap_or_default().into(),
        };
        let fields = Fields::from(vec![Field::new("a", DataType::Utf8, true), Field::new("b", DataType::Binary, true)]);
        let mut rows = TableColumns::new(table, &fields, ServerZone::Utc).unwrap();
        let mut out = MessageEvents::default();
        let taken = codec.decode_rows(None, message.as_bytes(), &mut out, &mut rows)?;
        let events: Vec<_> = out.events.iter().map(|e| (e.kind, e.schema.clone(), e.table.clone())).collect();
        let mut columns = rows.finish();
        columns.truncate(2);
        Ok((taken, format!("{events:?}"), columns))
    }

    #[test]
    fn recent_keeps_the_last_found_first_and_makes_the_oldest_afresh() {
        let mut recent = Recent::<u8, 3>([1, 2, 3]);
        assert!(recent.find(|&x| x == 3));
        assert_eq!(recent.0, [3, 1, 2]);
        assert!(recent.find(|&x| x == 3));
        assert_eq!(recent.0, [3, 1, 2]);
        assert!(!recent.find(|&x| x == 9));
        assert_eq!(recent.0, [2, 3, 1]);
        *recent.first_mut() = 9;
        assert!(recent.find(|&x| x == 1));
        assert_eq!((recent.0, *recent.first()), ([1, 9, 3], 1));
    }

    #[test]
    fn the_direct_plan_follows_sql_type_with_a_repeated_mysql_type() {
        // The same `mysqlType` every time (kept, not rebuilt); `sqlType` says whether the
        // VARBINARY column's values are ISO-8859-1 (BLOB, 2004) or raw text (VARCHAR, 12, as
        // before TiCDC v5.4), and the plan must follow it.
        let message = |sql_type: &str| {
            format!(
                r#"{{"database":"d","table":"t","pkNames":["a"],"isDdl":false,"type":"INSERT",{sql_type}"mysqlType":{{"a":"int","b":"varbinary"}},"data":[{{"a":"1","b":"\u00ff"}}],"old":null}}"#
            )
        };
        let latin1 = &[0xffu8][..];
        let raw_text = "\u{ff}".as_bytes();
        let blob = r#""sqlType":{"a":4,"b":2004},"#;
        let varchar = r#""sqlType":{"a":4,"b":12},"#;
        let blob_again = r#""sqlType":{"b":2004,"a":4},"#;
        let mut codec = CanalJsonCodec::default();
        for (sql_type, want) in [
            (blob, Some(&latin1)),
            (varchar, Some(&raw_text)),
            (blob, Some(&latin1)),
            // Without `sqlType` the column could be either: left to the general reader.
            ("", None),
            (varchar, Some(&raw_text)),
            // Objects that alternate are all kept, in the order they were last used.
            (blob, Some(&latin1)),
            (varchar, Some(&raw_text)),
            (blob_again, Some(&latin1)),
            (varchar, Some(&raw_text)),
            (blob, Some(&latin1)),
            (blob_again, Some(&latin1)),
            (varchar, Some(&raw_text)),
            // An object cut short is no object to repeat: the one read before it still holds.
            (r#""sqlType":{"a":4,"b":2004"#, None),
            (varchar, Some(&raw_text)),
            (blob, Some(&latin1)),
        ] {
            let text = message(sql_type);
            let Ok((taken, _, columns)) = read_rows(&mut codec, &text) else {
                assert!(want.is_none(), "{text}");
                continue;
            };
            assert_eq!(taken, want.is_some(), "{text}");
            if let Some(want) = want {
                assert_eq!(columns[0].as_string::<i32>().value(0), "1", "{text}");
                assert_eq!(columns[1].as_binary::<i32>().value(0), *want, "{text}");
            }
        }
    }

    /// Messages of several tables, interleaved as one Kafka partition carries them (and some
    /// naming their table only after their types), read by one codec as a codec of their own
    /// reads each.
    #[test]
    fn interleaved_tables_read_as_each_alone() {
        let message = |table: &str, sql_type: &str, types: &str, data: &str, table_last: bool| {
            let head = format!(r#""database":"d","table":"{table}","pkNames":["a"],"isDdl":false,"type":"INSERT""#);
            let body = format!(r#""sqlType":{sql_type},"mysqlType":{types},"data":[{data}],"old":null"#);
            if table_last {
                format!("{{{body},{head}}}")
            } else {
                format!("{{{head},{body}}}")
            }
        };
        let t1 = |v: &str, last| message("t1", r#"{"a":4,"b":12}"#, r#"{"a":"int","b":"varchar"}"#, v, last);
        // Before v5.4: an INT's code says its sign is unknown, a VARBINARY's that it is raw text.
        let t2 = |v: &str, last| message("t2", r#"{"a":-5,"b":12}"#, r#"{"a":"int","b":"varbinary"}"#, v, last);
        let t3 = |v: &str, last| message("t3", r#"{"a":-5,"b":2004}"#, r#"{"a":"bigint","b":"blob"}"#, v, last);
        let messages = [
            t1(r#"{"a":"1","b":"x"}"#, false),
            t2(r#"{"a":"4294967295","b":"\u00ff"}"#, false),
            t3(r#"{"a":"-3","b":"\u00ff"}"#, false),
            t1(r#"{"a":"2","b":"\u00ff"}"#, false),
            t2(r#"{"a":"5","b":"y"}"#, true),
            t2(r#"{"a":"6","b":"\u00ff"}"#, false),
            t3(r#"{"a":"7","b":"z"}"#, true),
            t1(r#"{"a":"8","b":"w"}"#, true),
            t3(r#"{"a":"9","b":"\u00ff"}"#, false),
            t1(r#"{"a":"10","b":"v"}"#, false),
        ];
        let mut codec = CanalJsonCodec::default();
        for m in messages.iter().chain(&messages) {
            assert_eq!(columns(&mut codec, m), columns(&mut CanalJsonCodec::default(), m), "{m}");
            let read = read_rows(&mut codec, m).unwrap();
            assert_eq!(read, read_rows(&mut CanalJsonCodec::default(), m).unwrap(), "{m}");
            assert_eq!(read.2[0].len(), usize::from(read.0), "{m}");
        }
        assert_eq!(codec.tables.by_name.len(), 3);
    }

    /// A head repeated byte for byte is skipped; one that differs anywhere, by a byte or in its
    /// length, is read, and the table it names is the one its rows and events go to.
    #[test]
    fn repeated_heads_name_the_table_they_repeat() {
        let message = |head: &str, value: &str| {
            format!(
                r#"{{{head},"type":"INSERT","sqlType":{{"a":4,"b":12}},"mysqlType":{{"a":"int","b":"varchar"}},"data":[{{"a":"{value}","b":"x"}}],"old":null}}"#
            )
        };
        let head = |id: &str, database: &str, table: &str, is_ddl: &str| {
            format!(r#""id":{id},"database":{database},"table":{table},"pkNames":["a"],"isDdl":{is_ddl}"#)
        };
        let messages = [
            message(&head("0", r#""d""#, r#""t1""#, "false"), "1"),
            message(&head("0", r#""d""#, r#""t1""#, "false"), "2"),
            message(&head("0", r#""d""#, r#""t2""#, "false"), "3"),
            message(&head("0", r#""e""#, r#""t2""#, "false"), "4"),
            message(&head("7", r#""e""#, r#""t2""#, "false"), "5"),
            message(&head("0", r#""d""#, r#""t\u0031""#, "false"), "6"),
            message(&head("0", r#""d""#, r#""t\u0031""#, "false"), "7"),
            message(&head("0", r#""d""#, r#""t1""#, "true"), "8"),
            message(&head("0", r#""d""#, r#""t1""#, "false"), "9"),
            message(&head("0", r#""d""#, "null", "false"), "10"),
            message(&head("0", r#""d""#, r#""t12""#, "false"), "11"),
            message(&head("0", r#""d""#, r#""t1""#, "false"), "12"),
            message(r#""database":"d","table":"t1","id":0"#, "13"),
            message(&head("0", r#""d""#, r#""t1""#, "false"), "14"),
        ];
        let mut codec = CanalJsonCodec::default();
        for m in messages.iter().chain(&messages) {
            assert_eq!(read_rows(&mut codec, m).unwrap(), read_rows(&mut CanalJsonCodec::default(), m).unwrap(), "{m}");
        }
        assert_eq!(codec.tables.by_name.len(), 4);
    }

    /// Past [`MAX_TABLES`] the caches are dropped, and the tables that come after are read right.
    #[test]
    fn more_tables_than_the_caches_hold_read_right() {
        let message = |table: usize, value: usize| {
            format!(
                r#"{{"database":"d","table":"t{table}","pkNames":["a"],"isDdl":false,"type":"INSERT","sqlType":{{"a":4,"c{table}":-5}},"mysqlType":{{"a":"int","c{table}":"int"}},"data":[{{"a":"{value}","c{table}":"{value}"}}],"old":null}}"#
            )
        };
        let mut codec = CanalJsonCodec::default();
        for table in (0..MAX_TABLES + 3).chain([0, 1, MAX_TABLES + 1, 2, 0]) {
            let m = message(table, table + 7);
            assert_eq!(columns(&mut codec, &m), columns(&mut CanalJsonCodec::default(), &m), "{m}");
        }
        assert!(codec.tables.by_name.len() <= MAX_TABLES + 1);
        assert_eq!(codec.tables.parked.len(), codec.tables.by_name.len() + 1);
    }

    #[test]
    fn the_cache_of_messages_that_name_no_table_outlasts_the_bound() {
        let mut tables = Tables::default();
        tables.current.row_keys.generation = Some(7);
        for table in 0..MAX_TABLES + 2 {
            tables.pick("d", &format!("t{table}"));
        }
        assert_ne!(tables.slot, 0);
        assert_eq!(tables.parked[0].row_keys.generation, Some(7));
        assert_eq!(tables.parked[tables.slot].row_keys.generation, None);
    }

    #[test]
    fn repeated_type_objects_read_as_the_first() {
        let mut codec = CanalJsonCodec::default();
        let types = r#"{"a":"int unsigned","b":"varbinary","c":"decimal(10,2)"}"#;
        let first = columns(&mut codec, &message(types, r#"{"a":"1","b":"\u00ff","c":"1.50"}"#));
        // Same object (now from the cache), other values and spacing after it.
        let again = columns(&mut codec, &message(types, r#"{"a":"2","b":"x","c":"2.00"}"#));
        assert_eq!(first.len(), 3);
        for (f, a) in first.iter().zip(&again) {
            assert_eq!((&f.0, f.1, f.2, &f.3), (&a.0, a.1, a.2, &a.3));
        }
        assert_eq!((first[0].2, first[1].1, first[2].3.as_str()), (true, MySqlType::VarChar, "decimal(10,2)"));
        assert_eq!(again[0].4, format!("{:?}", Value::Text(Cow::Borrowed("2"))));
        assert_eq!(again[1].4, format!("{:?}", Value::Bytes(Cow::Borrowed(b"x"))));
        // A changed object is read afresh, even when it starts like the remembered one.
        let changed = r#"{"a":"int unsigned","b":"varchar","c":"decimal(10,2)"}"#;
        let third = columns(&mut codec, &message(changed, r#"{"a":"3","b":"\u00ff","c":"1"}"#));
        assert_eq!(third[1].1, MySqlType::VarChar);
        assert_eq!(first[1].4, format!("{:?}", Value::Bytes(Cow::Borrowed(&[0xffu8][..]))));
        assert_eq!(third[1].4, format!("{:?}", Value::Text(Cow::Borrowed("\u{ff}"))));
        // Names with escapes are not remembered, and still read right every time.
        let escaped = r#"{"\u0061":"bigint","b":"varchar","c":"text"}"#;
        for _ in 0..2 {
            let cols = columns(&mut codec, &message(escaped, r#"{"a":"-4","b":"y","c":"z"}"#));
            assert_eq!((cols[0].0.as_str(), cols[0].1, cols[0].2), ("a", MySqlType::BigInt, false));
        }
    }
}
