//! The table schema a BOOTSTRAP or DDL message carries (`tableSchema`), read from either
//! flavour and written back in TiCDC's JSON form.

use crate::error::{Fault, FaultResult};
use crate::json::JsonCursor;
use crate::schema::mysql::MySqlType;
use crate::schema::table::{ColumnDefinition, TableDefinition};

/// `tableSchema` (JSON field `schema` = Avro field `database`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableSchema {
    pub schema: String,
    pub table: String,
    pub table_id: i64,
    /// TiDB's `TableInfo.UpdateTS`, what row messages call `schemaVersion`.
    pub version: u64,
    pub columns: Vec<ColumnSchema>,
    pub indexes: Vec<IndexSchema>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnSchema {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    pub default: DefaultValue,
}

/// `dataType`. The optional fields keep Avro's null-versus-value distinction; JSON omits zero
/// and false values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DataType {
    pub mysql_type: String,
    pub charset: String,
    pub collate: String,
    pub length: i64,
    pub decimal: Option<i32>,
    pub elements: Option<Vec<String>>,
    pub unsigned: Option<bool>,
    pub zerofill: Option<bool>,
}

/// A column default: JSON carries a string, null, or (BIT columns) a number; Avro carries the
/// raw TiDB default bytes, which for BIT columns are the big-endian bit string, read here into
/// the same number as JSON's.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum DefaultValue {
    #[default]
    Null,
    Text(String),
    /// A JSON number, as its text.
    Number(String),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexSchema {
    pub name: String,
    pub unique: bool,
    pub primary: bool,
    pub nullable: bool,
    pub columns: Vec<String>,
}

impl DataType {
    pub fn base(&self) -> (MySqlType, bool) {
        MySqlType::from_name(&self.mysql_type)
    }

    pub fn is_unsigned(&self) -> bool {
        self.unsigned.unwrap_or(false) || self.zerofill.unwrap_or(false)
    }

    /// The full MySQL type text: `int unsigned`, `decimal(10,2)`, `varbinary(255)`,
    /// `datetime(3)`, `enum('a','b')`, `bit(10)`.
    pub fn type_text(&self) -> String {
        use MySqlType::*;
        let (base, binary) = self.base();
        let name = if base == Unknown { self.mysql_type.as_str() } else { base.name(binary) };
        let mut text = name.to_string();
        let decimal = self.decimal.unwrap_or(0);
        match base {
            Decimal if self.length > 0 => text.push_str(&format!("({},{})", self.length, decimal)),
            Bit | Char | VarChar | Vector if self.length > 0 => text.push_str(&format!("({})", self.length)),
            DateTime | Timestamp | Time if decimal > 0 => text.push_str(&format!("({decimal})")),
            Enum | Set => {
                let members: Vec<String> =
                    self.elements.iter().flatten().map(|m| format!("'{}'", m.replace('\'', "''"))).collect();
                text.push_str(&format!("({})", members.join(",")));
            }
            _ => {}
        }
        if self.is_unsigned()
            && matches!(base, TinyInt | SmallInt | MediumInt | Int | BigInt | Float | Double | Decimal)
        {
            text.push_str(" unsigned");
        }
        text
    }
}

impl TableSchema {
    /// The primary key's columns, else those of the first unique index whose columns are all
    /// NOT NULL (TiCDC's handle index), else none.
    pub fn key_columns(&self) -> &[String] {
        let index =
            self.indexes.iter().find(|i| i.primary).or_else(|| self.indexes.iter().find(|i| i.unique && !i.nullable));
        index.map_or(&[], |i| &i.columns)
    }

    pub fn definition(&self) -> TableDefinition {
        TableDefinition {
            schema: self.schema.clone(),
            table: self.table.clone(),
            columns: self
                .columns
                .iter()
                .map(|c| ColumnDefinition::new(c.name.clone(), c.data_type.type_text(), c.nullable))
                .collect(),
            primary_key: self.key_columns().to_vec(),
        }
    }

    /// A `tableSchema` as JSON text: what BOOTSTRAP and DDL messages carry, and the envelope's
    /// `_table_schema` column holds (for either flavour).
    pub fn from_json(text: &str) -> Result<TableSchema, String> {
        let invalid = |f: Fault| format!("invalid table schema at byte {}: {}", f.offset, f.reason);
        let mut cur = JsonCursor::new(text.as_bytes()).map_err(invalid)?;
        let schema = TableSchema::read_json(&mut cur).map_err(invalid)?;
        if !cur.at_end() {
            return Err(invalid(cur.fault("text after the table schema")));
        }
        if schema.schema.is_empty() || schema.table.is_empty() {
            return Err("invalid table schema: no schema or table name".into());
        }
        Ok(schema)
    }

    /// Reads the JSON form (any field order; unknown fields skipped).
    pub fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<TableSchema> {
        let mut t = TableSchema::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "schema" | "database" => t.schema = cur.string()?.into_owned(),
                "table" => t.table = cur.string()?.into_owned(),
                "tableID" => t.table_id = cur.i64()?,
                "version" => t.version = cur.u64()?,
                "columns" => {
                    read_json_array(cur, |cur| {
                        t.columns.push(ColumnSchema::read_json(cur)?);
                        Ok(())
                    })?;
                }
                "indexes" => {
                    read_json_array(cur, |cur| {
                        t.indexes.push(IndexSchema::read_json(cur)?);
                        Ok(())
                    })?;
                }
                _ => cur.skip_value()?,
            }
        }
        t.check_column_names().map_err(|reason| cur.fault(reason))?;
        Ok(t)
    }

    /// TiDB gives each column its own name, and rows are matched to columns by name (JSON) or
    /// read into them by name (the envelope's images): a schema naming one twice is refused.
    pub fn check_column_names(&self) -> Result<(), String> {
        let mut names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        match names.windows(2).find(|w| w[0] == w[1]) {
            Some(w) => Err(format!("table schema names column {:?} twice", w[0])),
            None => Ok(()),
        }
    }

    /// Writes the JSON form exactly as TiCDC's `encoding/json` does.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"schema\":");
        write_json_str(out, &self.schema);
        out.extend_from_slice(b",\"table\":");
        write_json_str(out, &self.table);
        out.extend_from_slice(
            format!(",\"tableID\":{},\"version\":{},\"columns\":[", self.table_id, self.version).as_bytes(),
        );
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            c.write_json(out);
        }
        out.push(b']');
        out.extend_from_slice(b",\"indexes\":[");
        for (i, index) in self.indexes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            index.write_json(out);
        }
        out.extend_from_slice(b"]}");
    }

    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256 + 128 * self.columns.len());
        self.write_json(&mut out);
        String::from_utf8(out).expect("the JSON writer writes UTF-8")
    }
}

impl ColumnSchema {
    fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<ColumnSchema> {
        let mut c = ColumnSchema::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "name" => c.name = cur.string()?.into_owned(),
                "dataType" => c.data_type = DataType::read_json(cur)?,
                "nullable" => c.nullable = cur.bool()?,
                "default" => {
                    c.default = match cur.peek() {
                        Some(b'n') => {
                            cur.null()?;
                            DefaultValue::Null
                        }
                        Some(b'"') => DefaultValue::Text(cur.string()?.into_owned()),
                        _ => DefaultValue::Number(cur.number_text()?.to_string()),
                    }
                }
                _ => cur.skip_value()?,
            }
        }
        Ok(c)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"name\":");
        write_json_str(out, &self.name);
        out.extend_from_slice(b",\"dataType\":");
        self.data_type.write_json(out);
        out.extend_from_slice(if self.nullable { b",\"nullable\":true" } else { b",\"nullable\":false" });
        out.extend_from_slice(b",\"default\":");
        match &self.default {
            DefaultValue::Null => out.extend_from_slice(b"null"),
            DefaultValue::Text(s) => write_json_str(out, s),
            DefaultValue::Number(n) => out.extend_from_slice(n.as_bytes()),
        }
        out.push(b'}');
    }
}

impl DataType {
    fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<DataType> {
        let mut d = DataType::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "mysqlType" => d.mysql_type = cur.string()?.into_owned(),
                "charset" => d.charset = cur.string()?.into_owned(),
                "collate" => d.collate = cur.string()?.into_owned(),
                "length" => d.length = cur.i64()?,
                "decimal" => {
                    let at = cur.offset();
                    let v = cur.i64()?;
                    d.decimal = Some(i32::try_from(v).map_err(|_| Fault::new(at, "decimal out of range"))?);
                }
                "elements" => {
                    let mut elements = Vec::new();
                    if !cur.null()? {
                        read_json_array(cur, |cur| {
                            elements.push(cur.string()?.into_owned());
                            Ok(())
                        })?;
                    }
                    d.elements = Some(elements);
                }
                "unsigned" => d.unsigned = Some(cur.bool()?),
                "zerofill" => d.zerofill = Some(cur.bool()?),
                _ => cur.skip_value()?,
            }
        }
        Ok(d)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"mysqlType\":");
        write_json_str(out, &self.mysql_type);
        out.extend_from_slice(b",\"charset\":");
        write_json_str(out, &self.charset);
        out.extend_from_slice(b",\"collate\":");
        write_json_str(out, &self.collate);
        if self.length != 0 {
            out.extend_from_slice(format!(",\"length\":{}", self.length).as_bytes());
        }
        // Go never writes FLOAT/DOUBLE's decimal (always -1 in TiDB).
        let float = matches!(self.base().0, MySqlType::Float | MySqlType::Double);
        match self.decimal {
            Some(d) if d != 0 && !float => out.extend_from_slice(format!(",\"decimal\":{d}").as_bytes()),
            _ => {}
        }
        if let Some(elements) = self.elements.as_ref().filter(|e| !e.is_empty()) {
            out.extend_from_slice(b",\"elements\":[");
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_str(out, e);
            }
            out.push(b']');
        }
        if self.unsigned == Some(true) {
            out.extend_from_slice(b",\"unsigned\":true");
        }
        if self.zerofill == Some(true) {
            out.extend_from_slice(b",\"zerofill\":true");
        }
        out.push(b'}');
    }
}

impl IndexSchema {
    fn read_json(cur: &mut JsonCursor<'_>) -> FaultResult<IndexSchema> {
        let mut index = IndexSchema::default();
        cur.begin_object()?;
        let mut first = true;
        while let Some(key) = cur.next_key(&mut first)? {
            match key.as_ref() {
                "name" => index.name = cur.string()?.into_owned(),
                "unique" => index.unique = cur.bool()?,
                "primary" => index.primary = cur.bool()?,
                "nullable" => index.nullable = cur.bool()?,
                "columns" => {
                    if !cur.null()? {
                        read_json_array(cur, |cur| {
                            index.columns.push(cur.string()?.into_owned());
                            Ok(())
                        })?;
                    }
                }
                _ => cur.skip_value()?,
            }
        }
        Ok(index)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"name\":");
        write_json_str(out, &self.name);
        let flag = |b: bool| if b { "true" } else { "false" };
        out.extend_from_slice(
            format!(
                ",\"unique\":{},\"primary\":{},\"nullable\":{},\"columns\":",
                flag(self.unique),
                flag(self.primary),
                flag(self.nullable)
            )
            .as_bytes(),
        );
        if self.columns.is_empty() {
            out.extend_from_slice(b"null");
        } else {
            out.push(b'[');
            for (i, c) in self.columns.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_str(out, c);
            }
            out.push(b']');
        }
        out.push(b'}');
    }
}

fn read_json_array<'a>(
    cur: &mut JsonCursor<'a>,
    mut item: impl FnMut(&mut JsonCursor<'a>) -> FaultResult<()>,
) -> FaultResult<()> {
    if cur.null()? {
        return Ok(());
    }
    cur.begin_array()?;
    let mut first = true;
    while cur.next_item(&mut first)? {
        item(cur)?;
    }
    Ok(())
}

/// A JSON string as Go's `encoding/json` writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped as
/// `\u00XX`/`\u20XX`, control characters as `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`.
pub fn write_json_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0..=0x1f | b'<' | b'>' | b'&' => None,
            0xe2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(if bytes[i + 2] == 0xa8 { b"\\u2028" } else { b"\\u2029" });
                i += 3;
                start = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        match escape {
            Some(e) => out.extend_from_slice(e),
            None => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_json_escaping() {
        let mut out = Vec::new();
        write_json_str(&mut out, "a\"\\<>&\n\u{1}\u{8}\u{2028}é");
        assert_eq!(String::from_utf8(out).unwrap(), r#""a\"\\\u003c\u003e\u0026\n\u0001\b\u2028é""#);
    }

    #[test]
    fn type_texts() {
        let dt = |t: &str, len, dec, unsigned| DataType {
            mysql_type: t.into(),
            length: len,
            decimal: dec,
            unsigned,
            ..Default::default()
        };
        assert_eq!(dt("decimal", 10, Some(2), None).type_text(), "decimal(10,2)");
        assert_eq!(dt("bigint", 20, None, Some(true)).type_text(), "bigint unsigned");
        assert_eq!(dt("timestamp", 26, Some(6), None).type_text(), "timestamp(6)");
        assert_eq!(dt("varbinary", 255, None, None).type_text(), "varbinary(255)");
        let e = DataType {
            mysql_type: "enum".into(),
            elements: Some(vec!["a".into(), "b'c".into()]),
            ..Default::default()
        };
        assert_eq!(e.type_text(), "enum('a','b''c')");
    }
}
