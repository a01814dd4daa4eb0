//! `ticdc_rs`: TiCDC change streams to and from Apache Arrow.
//!
//! TiCDC writes a TiDB cluster's row changes, DDL and progress marks to Kafka in one of four
//! protocols. This crate reads those Kafka messages — a `key`/`value` pair of Arrow binary
//! columns, read in place — into Arrow record batches, in one of two layouts:
//!
//! * **envelope**: one fixed schema for every table (row images as `map<utf8, utf8>`), so a Spark
//!   job can declare its output before seeing any data;
//! * **typed**: one table's columns with real Arrow types (decimals, timestamps, bytes, ...).
//!
//! The pieces, in the order data flows through them (each depends only on those above it):
//! * [`schema`]: what a table is, apart from any protocol: MySQL types, table definitions and
//!   names, DDL, and the contract's MySQL-to-Arrow type mapping;
//! * [`event`], [`json`], [`utf8`], `canonical_base64`, `digits`, `varint`: the event model every
//!   codec produces, and the readers the codecs share;
//! * [`input`]: the Kafka `key`/`value` columns read in place, whole-value compression,
//!   claim-check files, and which protocol a message is in;
//! * [`columns`]: one table's typed output columns while they are built, a sink per field of
//!   its Arrow type, which codecs may write row values into directly;
//! * [`codec`]: one folder per protocol, each with its decoder (a message into the event model,
//!   or its rows into [`columns::TableColumns`]) and its encoder (events into messages);
//! * [`arrow`]: the batch drivers ([`arrow::BatchDecoder`], [`BatchEncoder`]) with the error
//!   policy, and the layouts (envelope, typed) that make the output batches.
//! * `python` (feature `python`): the thin PyO3 layer behind the `ticdc_rs` Python package.
//!
//! Every failure on input is a [`DecodeError`] naming the protocol, the message index in the
//! batch and the byte offset in the message; no input makes the decoder panic. A call that is
//! wrong as a whole (options, the input's columns) is a [`UsageError`] instead; the batch
//! drivers return an [`Error`] holding one or the other.

pub mod arrow;
mod canonical_base64;
pub mod codec;
pub mod columns;
mod digits;
pub mod error;
pub mod event;
pub mod input;
pub mod json;
#[cfg(feature = "python")]
mod python;
pub mod schema;
mod simd;
pub mod utf8;
mod varint;

pub use crate::arrow::encode::BatchEncoder;
pub use crate::arrow::{BatchDecoder, DecodeOptions, LayoutOptions, OnError};
pub use crate::codec::EncodeOptions;
pub use crate::error::{DecodeError, EncodeError, Error, UsageError};
pub use crate::input::{Compression, Protocol};
pub use crate::schema::TableName;
