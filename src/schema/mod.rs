//! What a table is, apart from any protocol: MySQL's types and their text forms, table
//! definitions and names, the DDL that changes them, and the contract's mapping of MySQL types to
//! Arrow types. Codecs, layouts and inference all read tables through this module; it reads
//! nothing of theirs.

pub mod ddl;
pub mod ddl_action;
pub mod mapping;
pub mod mysql;
pub mod table;

pub use table::{ServerZone, TableName};
