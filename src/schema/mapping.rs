//! The contract's MySQL-to-Arrow type mapping, and the metadata keys a typed schema carries.

use arrow_schema::{DataType, TimeUnit};

use super::mysql::{MySqlType, TypeDescription};

/// Field metadata key holding a column's MySQL type description.
pub const MYSQL_TYPE_KEY: &str = "mysql_type";

/// Schema metadata key listing the primary key columns, as a JSON array.
pub const PRIMARY_KEY_KEY: &str = "primary_key";

/// The Arrow type of a MySQL column, per the contract. `scale_hint` is a DECIMAL scale observed
/// in the data, used when the description has none.
pub fn arrow_type(desc: &TypeDescription, scale_hint: Option<u32>) -> DataType {
    use MySqlType::*;
    let u = desc.unsigned;
    match desc.base {
        TinyInt => {
            if u {
                DataType::Int16
            } else {
                DataType::Int8
            }
        }
        SmallInt => {
            if u {
                DataType::Int32
            } else {
                DataType::Int16
            }
        }
        MediumInt => DataType::Int32,
        Int => {
            if u {
                DataType::Int64
            } else {
                DataType::Int32
            }
        }
        BigInt => {
            if u {
                DataType::Decimal128(20, 0)
            } else {
                DataType::Int64
            }
        }
        Year => DataType::Int16,
        Float => DataType::Float32,
        Double => DataType::Float64,
        Decimal => match (desc.length, desc.scale.or(scale_hint)) {
            // MySQL requires the scale to be at most the precision (`DECIMAL(M,D)`, M >= D).
            (Some(p), s) if p <= 38 && s.unwrap_or(0) <= p => DataType::Decimal128(p as u8, s.unwrap_or(0) as i8),
            (Some(_), _) => DataType::Utf8,
            (None, Some(s)) if s <= 38 => DataType::Decimal128(38, s as i8),
            (None, _) => DataType::Utf8,
        },
        Date => DataType::Date32,
        DateTime => DataType::Timestamp(TimeUnit::Microsecond, None),
        Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Time => DataType::Duration(TimeUnit::Microsecond),
        Bit => match desc.length {
            Some(n) if n < 64 => DataType::Int64,
            _ => DataType::Decimal128(20, 0),
        },
        Char | VarChar | TinyText | Text | MediumText | LongText if desc.binary => DataType::Binary,
        Geometry => DataType::Binary,
        Vector => DataType::new_list(DataType::Float32, true),
        _ => DataType::Utf8,
    }
}
