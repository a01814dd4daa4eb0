//! Table definitions: what a `CREATE TABLE`, a Simple-protocol `tableSchema` or a declared
//! Arrow schema says about a table, beyond what row messages carry (DECIMAL precision and
//! scale, ENUM/SET members, time precision, BIT width, the primary key).
//!
//! Every source of definitions produces a [`TableDefinition`]; the typed layout and schema
//! inference consume it, so the contract's type mapping is applied in one place
//! ([`crate::arrow::infer::arrow_type`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{Field, Schema};

use crate::arrow::infer::{arrow_type, PRIMARY_KEY_KEY};
use crate::arrow::typed::MYSQL_TYPE_KEY;
use crate::mysql::TypeDescription;

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDefinition {
    pub name: String,
    /// The full MySQL type text (`decimal(10,2)`, `enum('a','b')`, `int(11) unsigned`).
    pub type_text: String,
    pub ty: TypeDescription,
    pub nullable: bool,
}

impl ColumnDefinition {
    pub fn new(name: impl Into<String>, type_text: impl Into<String>, nullable: bool) -> Self {
        let type_text = type_text.into();
        ColumnDefinition { name: name.into(), ty: TypeDescription::parse(&type_text), type_text, nullable }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableDefinition {
    pub schema: String,
    pub table: String,
    /// In table order.
    pub columns: Vec<ColumnDefinition>,
    pub primary_key: Vec<String>,
}

impl TableDefinition {
    /// The typed layout's schema for this table: the contract's mapping, with each field's
    /// MySQL type text in its metadata and the primary key in the schema's.
    pub fn arrow_schema(&self) -> Schema {
        let fields: Vec<Arc<Field>> = self
            .columns
            .iter()
            .map(|c| {
                let metadata = HashMap::from([(MYSQL_TYPE_KEY.to_string(), c.type_text.clone())]);
                Arc::new(Field::new(&c.name, arrow_type(&c.ty, None), c.nullable).with_metadata(metadata))
            })
            .collect();
        let mut metadata = HashMap::from([("table".to_string(), format!("{}.{}", self.schema, self.table))]);
        if !self.primary_key.is_empty() {
            let quoted: Vec<String> = self.primary_key.iter().map(|k| format!("{k:?}")).collect();
            metadata.insert(PRIMARY_KEY_KEY.to_string(), format!("[{}]", quoted.join(",")));
        }
        Schema::new(fields).with_metadata(metadata)
    }
}
