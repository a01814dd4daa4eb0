//! Table definitions: what a `CREATE TABLE`, a Simple-protocol `tableSchema` or a declared
//! Arrow schema says about a table, beyond what row messages carry (DECIMAL precision and
//! scale, ENUM/SET members, time precision, BIT width, the primary key).
//!
//! Every source of definitions produces a [`TableDefinition`]; the typed layout and schema
//! inference consume it, so the contract's type mapping is applied in one place
//! ([`crate::schema::mapping::arrow_type`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{Field, Schema};
use chrono::{DateTime, Offset, TimeZone};
use chrono_tz::Tz;

use crate::schema::mapping::MYSQL_TYPE_KEY;
use crate::schema::mapping::{arrow_type, PRIMARY_KEY_KEY};
use crate::schema::mysql::TypeDescription;

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

/// `db.tbl`, as users name a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub schema: String,
    pub table: String,
}

impl TableName {
    pub fn parse(name: &str) -> Option<TableName> {
        let (schema, table) = name.split_once('.')?;
        let unquote = |s: &str| s.trim().trim_matches('`').to_string();
        Some(TableName { schema: unquote(schema), table: unquote(table) })
    }

    pub(crate) fn matches(&self, schema: Option<&str>, table: Option<&str>) -> bool {
        schema == Some(self.schema.as_str()) && table == Some(self.table.as_str())
    }
}

/// The zone TIMESTAMP values are written in.
#[derive(Debug, Clone, Copy)]
pub enum ServerZone {
    Utc,
    Named(Tz),
}

impl ServerZone {
    pub fn parse(name: &str) -> Option<ServerZone> {
        match name {
            "" | "UTC" | "utc" | "Etc/UTC" | "+00:00" => Some(ServerZone::Utc),
            _ => name.parse::<Tz>().ok().map(ServerZone::Named),
        }
    }

    /// Wall-clock microseconds in this zone to UTC microseconds, as Go's `time.Date` (and so
    /// TiDB and TiCDC) reads a wall-clock time: with the offset in force at the instant the
    /// time gives under the offset in force at the time read as UTC. A time that occurs twice
    /// (clocks set back) is the later instant, the one of the offset after the change; a time
    /// that never occurs (clocks set forward) is read with the offset before the change. The
    /// wire's text cannot tell the two instants of a repeated hour apart.
    pub(crate) fn to_utc(self, local_micros: i64) -> Option<i64> {
        match self {
            ServerZone::Utc => Some(local_micros),
            ServerZone::Named(tz) => {
                let offset_at = |utc_micros: i64| -> Option<i64> {
                    let at = DateTime::from_timestamp_micros(utc_micros)?.naive_utc();
                    Some(i64::from(tz.offset_from_utc_datetime(&at).fix().local_minus_utc()) * 1_000_000)
                };
                let guess = local_micros.checked_sub(offset_at(local_micros)?)?;
                let utc = local_micros.checked_sub(offset_at(guess)?)?;
                DateTime::from_timestamp_micros(utc).map(|_| utc)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ServerZone;
    use crate::schema::mysql::parse_datetime_micros;

    /// Wall-clock times around Shanghai's 1989 clock changes read as Go 1.x's
    /// `time.ParseInLocation` reads them (the right column printed by it): the repeated hour of
    /// 17 September as its later instant, the skipped hour of 16 April with the offset before it.
    #[test]
    fn wall_clock_times_read_as_go_reads_them() {
        let zone = ServerZone::parse("Asia/Shanghai").unwrap();
        let micros = |text: &str| parse_datetime_micros(text.as_bytes()).unwrap().unwrap();
        for (local, utc) in [
            ("1989-09-17 00:59:59", "1989-09-16 15:59:59"),
            ("1989-09-17 01:29:13", "1989-09-16 17:29:13"),
            ("1989-09-17 02:00:00", "1989-09-16 18:00:00"),
            ("1989-04-16 01:59:59", "1989-04-15 17:59:59"),
            ("1989-04-16 02:30:00", "1989-04-15 18:30:00"),
            ("1989-04-16 03:00:00", "1989-04-15 18:00:00"),
            ("2020-01-01 08:00:00.123456", "2020-01-01 00:00:00.123456"),
        ] {
            assert_eq!(zone.to_utc(micros(local)), Some(micros(utc)), "{local}");
        }
        assert_eq!(
            ServerZone::parse("UTC").unwrap().to_utc(micros("1989-09-17 01:29:13")),
            Some(micros("1989-09-17 01:29:13"))
        );
        assert_eq!(zone.to_utc(i64::MIN), None);
    }
}
