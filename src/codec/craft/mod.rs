//! TiCDC's Craft binary protocol (`../shared/protocols/craft.md`): one Kafka value holds several
//! events, laid out column by column and packed with varints.
//!
//! ```text
//! message = uvarint version (1) | HEADERS | BODY[0..n) | TERM_DICTIONARY | SIZE_TABLES | trailer
//! ```
//!
//! Nothing in the message says where the headers end or a body starts except the size tables at
//! the end, which are found through the trailer: their byte length as a uvarint stored reversed
//! in the last bytes. So a decoder reads from both ends: the version at offset 0, then the
//! trailer, the size tables (header size and dictionary size, one size per body, one size per
//! column group of each row event), then the term dictionary (every schema, table and column name
//! of the message, once), and only then the headers and bodies. Every size read from the message
//! is checked against the window it claims to describe before anything is sliced or sized by it,
//! so a hostile message is a [`Fault`](crate::error::Fault) at the offending byte, never a panic or a huge allocation.
//!
//! Names and string values are borrowed from the message: the dictionary's bytes are checked as
//! UTF-8 once and each term is a slice of them; text values are checked where they are read.
//! Binary-charset strings (flag 0x01) stay bytes. Buffers the decoder needs between the two ends
//! of the message (size tables, term spans, header columns) live in the codec and are reused.
//!
//! Divergence from the Go decoder kept on purpose: Go's `DecodeTiDBType` yields NULL for every
//! valid VECTOR value (it returns the parsed value only when parsing fails); this decoder keeps
//! the carried text `[1,2,3]`.

mod cursor;
mod decode;
mod encode;

pub use cursor::Cursor;
pub use decode::CraftCodec;
pub use encode::CraftEncoder;

/// The only version Craft has; Go accepts any version >= 1.
pub const VERSION: u64 = 1;

/// Header event types (TiCDC `model.MessageType`).
const EVENT_ROW: u64 = 1;
const EVENT_DDL: u64 = 2;
const EVENT_RESOLVED: u64 = 3;

/// Column group types.
const GROUP_NEW: u8 = 1;
const GROUP_OLD: u8 = 2;

/// Size table indexes.
const META_TABLE: usize = 0;
const BODY_TABLE: usize = 1;
const FIRST_GROUP_TABLE: usize = 2;

/// The smallest column a group can hold: one byte each of name id, type, flags, value length.
const MIN_COLUMN_BYTES: usize = 4;
