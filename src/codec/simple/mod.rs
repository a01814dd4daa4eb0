//! TiCDC's Simple protocol (`../shared/protocols/simple.md`), JSON and Avro flavours.
//!
//! Row messages carry values but no column metadata: each names its table's schema version and
//! the consumer must already hold that version's `tableSchema`, learnt from an earlier BOOTSTRAP
//! or DDL message. So this codec is stateful. It keeps a `SchemaCache` (in `cache.rs`) keyed by
//! (schema, table, version) for as long as the [`BatchDecoder`](crate::arrow::BatchDecoder) lives,
//! and a bounded queue of rows that arrived before their schema: such a row's bytes are copied
//! and held, and the driver takes them back (through [`Codec::take_held`](crate::codec::Codec::take_held)) once a schema message
//! releases them, or as failures when the queue overflows or the stream ends.
//!
//! Both flavours decode into the same model: [`TableSchema`] for schemas, and per cached version
//! a [`Table`]: each column's [`ColumnType`](crate::event::ColumnType) (with the full type text, `decimal(10,2)`,
//! `enum('a','b')`, so the typed layout knows precision and members), how its values travel
//! ([`Kind`]), and the key columns. Row images come out in schema order, whatever order the
//! message listed them in (JSON: alphabetical; Avro: Go map order).
//!
//! Into the typed layout, a row message of a known version goes another way: its values go
//! straight to their output columns through the layout's [`TableColumns`](crate::columns::TableColumns),
//! each column's field resolved once per version (`Table::fields_in`), with no row image built.
//! Both ways read and check values with the same functions; a message with a claim check, a
//! handle-key-only image or a checksum to verify, or a JSON message whose header does not come
//! before its images, goes the first way.
//!
//! Type texts are interned for the life of the process (a bounded set, see `cache::intern`) so that
//! every decoded column can borrow its type without an allocation per value.

mod avro;
mod cache;
pub(crate) mod checksum;
mod decode;
pub(crate) mod encode;
mod image;
mod json;
mod schema;

pub use cache::{Kind, PendingStats, Table, TableColumn};
pub use decode::SimpleCodec;
pub use schema::{ColumnSchema, DataType, DefaultValue, IndexSchema, TableSchema};

use crate::input::Protocol;

/// The wire flavour (`encoding-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Avro,
}

impl Encoding {
    pub fn protocol(self) -> Protocol {
        match self {
            Encoding::Json => Protocol::SimpleJson,
            Encoding::Avro => Protocol::SimpleAvro,
        }
    }
}
