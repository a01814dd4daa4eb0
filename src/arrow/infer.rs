//! Typed schemas: the contract's MySQL-to-Arrow mapping, and inference of a table's schema from
//! a sample of its messages.
//!
//! A `CREATE TABLE` of the table found in the sample (with the DDL after it applied) is the best
//! source and is used when present. Otherwise the rows are read, and they carry less than a
//! table definition: outside Canal-JSON's content-compatible mode
//! there is no DECIMAL precision, BIT width or ENUM member list. Inference never guesses digits
//! away: a DECIMAL's scale is read off its values (TiCDC writes exactly the column's scale) with
//! the widest precision, a BIT of unknown width is read as decimal(20, 0), and ENUM/SET stay
//! numbers unless their members are known. Each field keeps the type text in its metadata
//! (`mysql_type`) so the typed layout can turn ENUM/SET numbers into names.
//!
//! A column whose type changes within the sample (an `ALTER ... MODIFY` between its rows) gets
//! the widest of its numeric types, so that the sample decodes with the schema inferred from it
//! (integers and decimals widen, FLOAT to DOUBLE); between other kinds the latest type wins, as
//! it is the table's type now.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};

use crate::codec::simple::TableSchema;
use crate::error::{DecodeError, Error, Result};
use crate::event::{ColumnType, MessageEvents, Value};
use crate::input::Protocol;
use crate::input::{Bytes, Compression};
use crate::schema::mapping::{arrow_type, MYSQL_TYPE_KEY, PRIMARY_KEY_KEY};
use crate::schema::mysql::{MySqlType, TypeDescription};
use crate::schema::TableName;

fn describe(ty: &ColumnType<'_>) -> (TypeDescription, String) {
    match &ty.text {
        Some(text) => {
            let mut desc = TypeDescription::parse(text);
            desc.unsigned |= ty.unsigned;
            desc.binary |= ty.binary;
            (desc, text.to_string())
        }
        None => {
            let mut text = ty.base.name(ty.binary).to_string();
            if ty.unsigned {
                text.push_str(" unsigned");
            }
            let desc = TypeDescription {
                base: ty.base,
                binary: ty.binary,
                unsigned: ty.unsigned,
                length: None,
                scale: None,
                members: Vec::new(),
            };
            (desc, text)
        }
    }
}

/// The type of a column first seen as `earlier` and later as `later` (see the module docs).
fn widen(earlier: DataType, later: DataType) -> DataType {
    use DataType as D;
    let digits = |t: &D| match t {
        D::Int8 => Some((3, 0)),
        D::Int16 => Some((5, 0)),
        D::Int32 => Some((10, 0)),
        D::Int64 => Some((19, 0)),
        D::Decimal128(p, s) => Some((*p, *s)),
        _ => None,
    };
    if earlier == later {
        return later;
    }
    match (digits(&earlier), digits(&later)) {
        (Some((p1, 0)), Some((p2, 0)))
            if !matches!(earlier, D::Decimal128(..)) && !matches!(later, D::Decimal128(..)) =>
        {
            if p1 > p2 {
                earlier
            } else {
                later
            }
        }
        (Some((p1, s1)), Some((p2, s2))) => {
            let scale = s1.max(s2);
            let whole = (p1 as i16 - s1 as i16).max(p2 as i16 - s2 as i16);
            D::Decimal128((whole + scale as i16).clamp(1, 38) as u8, scale)
        }
        _ => match (earlier, later) {
            (D::Float32, D::Float64) | (D::Float64, D::Float32) => D::Float64,
            (_, later) => later,
        },
    }
}

fn decimal_scale(value: &Value<'_>) -> Option<u32> {
    match value {
        Value::Text(t) => Some(t.split_once('.').map_or(0, |(_, f)| f.len() as u32)),
        _ => None,
    }
}

struct Seen {
    name: String,
    /// Each distinct type description the column had, in order of appearance, with its text.
    types: Vec<(TypeDescription, String)>,
    scale: Option<u32>,
}

/// Infers the columns of `table` from the row events found in `batches`, or takes them from a
/// definition: a Simple table schema the stream or `table_schemas` gives, or a CREATE TABLE
/// found in the stream.
pub fn infer_schema(
    batches: &[RecordBatch],
    protocol: Option<Protocol>,
    table: &TableName,
    compression: Compression,
    value_column: &str,
    key_column: &str,
    table_schemas: &[TableSchema],
) -> Result<Schema> {
    let name = protocol.map_or("auto", Protocol::name);
    let mut seen: Vec<Seen> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut keys: Option<Vec<String>> = None;
    // The keys a handle-key-only event names, used when no complete event names any.
    let mut handle_keys: Option<Vec<String>> = None;
    // A CREATE TABLE of the table in the sample, with the later DDL applied, says more than rows.
    let mut definition = None;
    let mut codecs = Vec::new();
    // Why the first message that failed did: named when no row of the table could be read.
    let mut first_failure: Option<DecodeError> = None;
    for batch in batches {
        let values = batch
            .column_by_name(value_column)
            .and_then(|a| Bytes::new(a.as_ref()))
            .ok_or_else(|| Error::usage(name, format!("input has no binary {value_column:?} column")))?;
        let key_array = batch.column_by_name(key_column).and_then(|a| Bytes::new(a.as_ref()));
        for i in 0..batch.num_rows() {
            let (key, Some(raw)) = (key_array.as_ref().and_then(|k| k.get(i)), values.get(i)) else { continue };
            let mut proto = protocol.or_else(|| Protocol::detect(key, raw));
            let plain;
            let value = if compression != Compression::None && proto.is_none_or(|p| p.compresses_whole_value()) {
                plain = compression.decompress(raw).map_err(|f| DecodeError::from_fault(name, i, f))?;
                proto = proto.or_else(|| Protocol::detect(key, &plain));
                &plain[..]
            } else {
                raw
            };
            let Some(proto) = proto else { continue };
            if !codecs.iter().any(|(p, _)| *p == proto) {
                let options = crate::codec::CodecOptions {
                    compression,
                    table_schemas: table_schemas.to_vec(),
                    ..Default::default()
                };
                let Some(codec) = proto.codec(&options) else { continue };
                codecs.push((proto, codec));
            }
            let codec = &mut codecs.iter_mut().find(|(p, _)| *p == proto).expect("just added").1;
            let mut events = MessageEvents::default();
            if let Err(fault) = codec.decode(key, value, &mut events) {
                first_failure.get_or_insert_with(|| DecodeError::from_fault(proto.name(), i, fault));
                continue;
            }
            for e in events.events.iter().filter(|e| e.kind == crate::event::EventKind::Ddl) {
                if let (Some(sql), Some(table_of_event)) = (e.ddl.as_deref(), e.schema.as_deref()) {
                    if table_of_event == table.schema {
                        crate::schema::ddl::follow_ddl(&mut definition, table, e.schema.as_deref(), sql);
                    }
                }
            }
            for e in events.events.iter().filter(|e| e.kind.is_row()) {
                if e.schema.as_deref() != Some(table.schema.as_str())
                    || e.table.as_deref() != Some(table.table.as_str())
                {
                    continue;
                }
                let named = || Some(events.keys(e).iter().map(|k| k.to_string()).collect::<Vec<_>>());
                if keys.is_none() && !e.handle_key_only {
                    keys = named();
                } else if handle_keys.is_none() && e.handle_key_only && !e.keys.is_empty() {
                    handle_keys = named();
                }
                for c in events.after(e).iter().chain(events.before(e)) {
                    let at = *by_name.entry(c.name.to_string()).or_insert_with(|| {
                        seen.push(Seen { name: c.name.to_string(), types: Vec::new(), scale: None });
                        seen.len() - 1
                    });
                    let s = &mut seen[at];
                    let (desc, text) = describe(&c.ty);
                    if desc.base == MySqlType::Decimal {
                        s.scale = s.scale.max(decimal_scale(&c.value));
                    }
                    // A NULL or unknown type (a column the message could not type) says less
                    // than any other the column has: it neither widens nor names the column.
                    let vague = |d: &TypeDescription| matches!(d.base, MySqlType::Null | MySqlType::Unknown);
                    if vague(&desc) && s.types.iter().any(|(d, _)| !vague(d)) {
                        continue;
                    }
                    if s.types.last().is_none_or(|(_, t)| *t != text) {
                        s.types.retain(|(d, t)| *t != text && (vague(&desc) || !vague(d)));
                        s.types.push((desc, text));
                    }
                }
            }
        }
    }
    // A codec that learnt the table's definition from the stream (Simple) knows it exactly;
    // else a CREATE TABLE in the sample, with the later DDL applied.
    // Then the newest of the table schemas given, and then the rows.
    let learnt = codecs.iter().find_map(|(_, c)| c.table_definition(&table.schema, &table.table));
    let given = || {
        let of_table = table_schemas.iter().filter(|s| s.schema == table.schema && s.table == table.table);
        of_table.max_by_key(|s| s.version).map(TableSchema::definition)
    };
    if let Some(definition) = learnt.or(definition).or_else(given) {
        return Ok(definition.arrow_schema());
    }
    if seen.is_empty() {
        let failed = first_failure.map(|e| format!(" (messages failed to decode; the first: {e})")).unwrap_or_default();
        return Err(Error::usage(name, format!("no row of {}.{} in the sample{failed}", table.schema, table.table)));
    }
    let fields: Vec<Field> = seen
        .iter()
        .map(|s| {
            let data_type =
                s.types.iter().map(|(desc, _)| arrow_type(desc, s.scale)).reduce(widen).unwrap_or(DataType::Utf8);
            let text = s.types.last().map(|(_, t)| t.clone()).filter(|t| !t.is_empty() && t != "unknown");
            let metadata = text.map(|t| HashMap::from([(MYSQL_TYPE_KEY.to_string(), t)])).unwrap_or_default();
            Field::new(&s.name, data_type, true).with_metadata(metadata)
        })
        .collect();
    let mut metadata = HashMap::from([("table".to_string(), format!("{}.{}", table.schema, table.table))]);
    if let Some(keys) = keys.or(handle_keys) {
        let quoted: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
        metadata.insert(PRIMARY_KEY_KEY.to_string(), format!("[{}]", quoted.join(",")));
    }
    Ok(Schema::new(fields.into_iter().map(Arc::new).collect::<Vec<_>>()).with_metadata(metadata))
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType as D;

    #[test]
    fn types_widen_to_hold_every_value_of_the_sample() {
        assert_eq!(widen(D::Int32, D::Int64), D::Int64);
        assert_eq!(widen(D::Int64, D::Int32), D::Int64);
        assert_eq!(widen(D::Int64, D::Decimal128(20, 0)), D::Decimal128(20, 0));
        assert_eq!(widen(D::Decimal128(10, 2), D::Decimal128(8, 4)), D::Decimal128(12, 4));
        assert_eq!(widen(D::Int32, D::Decimal128(5, 2)), D::Decimal128(12, 2));
        assert_eq!(widen(D::Decimal128(38, 0), D::Decimal128(38, 10)), D::Decimal128(38, 10));
        assert_eq!(widen(D::Float32, D::Float64), D::Float64);
        assert_eq!(widen(D::Int32, D::Utf8), D::Utf8);
        assert_eq!(widen(D::Utf8, D::Int32), D::Int32);
    }
}
