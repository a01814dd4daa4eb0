//! MySQL column types as the four protocols name them, and MySQL's text forms of values.
//!
//! Open and Craft carry a numeric type code plus a flags word; Canal-JSON and Simple carry a type
//! name (`int unsigned`, or in content-compatible mode the full `decimal(10,2)` description).
//! Both land in [`MySqlType`] so that the Arrow layer decides types in one place. The value
//! parsers here read the text TiCDC's mounter produces (`2020-01-01 12:00:00.123`, `-838:59:59`,
//! `153.12`) without allocating.

use crate::digits::{self, non_digits, read_digits};

const ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);

/// The MySQL base type of a column. TEXT and BLOB variants share a type; whether the column holds
/// bytes is the separate `binary` property of [`ColumnType`](crate::event::ColumnType).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MySqlType {
    TinyInt,
    SmallInt,
    MediumInt,
    Int,
    BigInt,
    Float,
    Double,
    Decimal,
    Date,
    DateTime,
    Timestamp,
    Time,
    Year,
    Bit,
    Json,
    Enum,
    Set,
    Char,
    VarChar,
    TinyText,
    Text,
    MediumText,
    LongText,
    Vector,
    Geometry,
    Null,
    Unknown,
}

impl MySqlType {
    /// From TiDB's type code (`parser/mysql` constants), as Open and Craft carry it.
    pub fn from_code(code: u64) -> MySqlType {
        use MySqlType::*;
        match code {
            0 | 246 => Decimal,
            1 => TinyInt,
            2 => SmallInt,
            3 => Int,
            4 => Float,
            5 => Double,
            6 => Null,
            7 => Timestamp,
            8 => BigInt,
            9 => MediumInt,
            10 | 14 => Date,
            11 => Time,
            12 => DateTime,
            13 => Year,
            15 | 253 => VarChar,
            16 => Bit,
            225 => Vector,
            245 => Json,
            247 => Enum,
            248 => Set,
            249 => TinyText,
            250 => MediumText,
            251 => LongText,
            252 => Text,
            254 => Char,
            255 => Geometry,
            _ => Unknown,
        }
    }

    /// TiDB's type code.
    pub fn code(self) -> u8 {
        use MySqlType::*;
        match self {
            TinyInt => 1,
            SmallInt => 2,
            Int => 3,
            Float => 4,
            Double => 5,
            Null => 6,
            Timestamp => 7,
            BigInt => 8,
            MediumInt => 9,
            Date => 10,
            Time => 11,
            DateTime => 12,
            Year => 13,
            VarChar => 15,
            Bit => 16,
            Vector => 225,
            Json => 245,
            Decimal => 246,
            Enum => 247,
            Set => 248,
            TinyText => 249,
            MediumText => 250,
            LongText => 251,
            Text => 252,
            Char => 254,
            Geometry => 255,
            Unknown => 0,
        }
    }

    /// From a base type name (`varbinary`, `mediumblob`, `int`). Returns the type and whether the
    /// name implies the binary charset.
    pub fn from_name(name: &str) -> (MySqlType, bool) {
        use MySqlType::*;
        let lower;
        let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            lower = name.to_ascii_lowercase();
            lower.as_str()
        } else {
            name
        };
        match name {
            "tinyint" | "bool" | "boolean" | "int1" => (TinyInt, false),
            "smallint" | "int2" => (SmallInt, false),
            "mediumint" | "int3" | "middleint" => (MediumInt, false),
            "int" | "integer" | "int4" => (Int, false),
            "bigint" | "int8" | "serial" => (BigInt, false),
            "float" | "float4" => (Float, false),
            "double" | "real" | "float8" => (Double, false),
            "decimal" | "numeric" | "dec" | "fixed" => (Decimal, false),
            "date" => (Date, false),
            "datetime" => (DateTime, false),
            "timestamp" => (Timestamp, false),
            "time" => (Time, false),
            "year" => (Year, false),
            "bit" => (Bit, false),
            "json" => (Json, false),
            "enum" => (Enum, false),
            "set" => (Set, false),
            "char" | "character" | "nchar" => (Char, false),
            "varchar" | "var_string" | "nvarchar" => (VarChar, false),
            // MySQL's LONG and LONG VARCHAR are MEDIUMTEXT.
            "long" => (MediumText, false),
            "tinytext" => (TinyText, false),
            "text" => (Text, false),
            "mediumtext" => (MediumText, false),
            "longtext" => (LongText, false),
            "binary" => (Char, true),
            "varbinary" => (VarChar, true),
            "tinyblob" => (TinyText, true),
            "blob" => (Text, true),
            "mediumblob" => (MediumText, true),
            "longblob" => (LongText, true),
            "vector" => (Vector, false),
            // Spatial values are WKB bytes (Canal writes them like BLOBs, as ISO-8859-1 text).
            "geometry" | "point" | "linestring" | "polygon" | "multipoint" | "multilinestring" | "multipolygon"
            | "geometrycollection" | "geomcollection" => (Geometry, true),
            "null" => (Null, false),
            _ => (Unknown, false),
        }
    }

    /// The name TiCDC gives the type (`types.TypeToStr`), with the binary-charset spelling.
    pub fn name(self, binary: bool) -> &'static str {
        use MySqlType::*;
        match (self, binary) {
            (TinyInt, _) => "tinyint",
            (SmallInt, _) => "smallint",
            (MediumInt, _) => "mediumint",
            (Int, _) => "int",
            (BigInt, _) => "bigint",
            (Float, _) => "float",
            (Double, _) => "double",
            (Decimal, _) => "decimal",
            (Date, _) => "date",
            (DateTime, _) => "datetime",
            (Timestamp, _) => "timestamp",
            (Time, _) => "time",
            (Year, _) => "year",
            (Bit, _) => "bit",
            (Json, _) => "json",
            (Enum, _) => "enum",
            (Set, _) => "set",
            (Char, false) => "char",
            (Char, true) => "binary",
            (VarChar, false) => "varchar",
            (VarChar, true) => "varbinary",
            (TinyText, false) => "tinytext",
            (TinyText, true) => "tinyblob",
            (Text, false) => "text",
            (Text, true) => "blob",
            (MediumText, false) => "mediumtext",
            (MediumText, true) => "mediumblob",
            (LongText, false) => "longtext",
            (LongText, true) => "longblob",
            (Vector, _) => "vector",
            (Geometry, _) => "geometry",
            (Null, _) => "null",
            (Unknown, _) => "unknown",
        }
    }

    /// Types whose values are strings of bytes (text or binary by charset).
    pub fn is_string(self) -> bool {
        use MySqlType::*;
        matches!(self, Char | VarChar | TinyText | Text | MediumText | LongText)
    }

    pub fn is_integer(self) -> bool {
        use MySqlType::*;
        matches!(self, TinyInt | SmallInt | MediumInt | Int | BigInt | Year)
    }
}

/// A full type description as `SHOW CREATE TABLE` or content-compatible Canal-JSON writes it:
/// `int(11) unsigned zerofill`, `decimal(10,2)`, `enum('a','b')`, `datetime(3)`, `varbinary(255)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDescription {
    pub base: MySqlType,
    pub binary: bool,
    pub unsigned: bool,
    /// Display width, character length, BIT width, DECIMAL precision or time precision.
    pub length: Option<u32>,
    /// DECIMAL scale.
    pub scale: Option<u32>,
    /// ENUM/SET members, in order.
    pub members: Vec<String>,
}

impl TypeDescription {
    pub fn parse(text: &str) -> TypeDescription {
        let text = text.trim();
        let name_end = text.find(['(', ' ']).unwrap_or(text.len());
        let (base, binary) = MySqlType::from_name(&text[..name_end]);
        let mut rest = &text[name_end..];
        let mut length = None;
        let mut scale = None;
        let mut members = Vec::new();
        if rest.starts_with('(') {
            // An unclosed list runs to the end of the text.
            let (args, close) = match find_args_end(rest) {
                Some(end) => (&rest[1..end - 1], end),
                None => (&rest[1..], rest.len()),
            };
            if matches!(base, MySqlType::Enum | MySqlType::Set) {
                members = parse_quoted_list(args);
            } else {
                let mut parts = args.split(',').map(|p| p.trim().parse::<u32>().ok());
                length = parts.next().flatten();
                scale = parts.next().flatten();
            }
            rest = &rest[close..];
        }
        let rest = rest.to_ascii_lowercase();
        // SERIAL is BIGINT UNSIGNED; CHARACTER VARYING is VARCHAR; LONG VARBINARY is MEDIUMBLOB.
        let serial = text[..name_end].eq_ignore_ascii_case("serial");
        let unsigned = serial || rest.contains("unsigned") || rest.contains("zerofill");
        let (base, binary) = match base {
            MySqlType::Char if rest.trim_start().starts_with("varying") => (MySqlType::VarChar, binary),
            MySqlType::MediumText if rest.trim_start().starts_with("varbinary") => (base, true),
            // FLOAT(p) with a precision of 25 to 53 bits is a DOUBLE (MySQL and TiDB alike).
            MySqlType::Float if scale.is_none() && length.is_some_and(|p| p > 24) => (MySqlType::Double, binary),
            _ => (base, binary),
        };
        TypeDescription { base, binary, unsigned, length, scale, members }
    }
}

/// Index just past the `)` closing the argument list that `s` starts with, minding quotes.
fn find_args_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut in_quote = false;
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' if in_quote && bytes.get(i + 1) == Some(&b'\'') => i += 1,
            b'\'' => in_quote = !in_quote,
            b'\\' if in_quote => i += 1,
            b')' if !in_quote => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// `'a','b''c','d'` into `["a", "b'c", "d"]`.
fn parse_quoted_list(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut member = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    member.push('\'');
                }
                '\'' => break,
                '\\' => {
                    if let Some(n) = chars.next() {
                        member.push(n);
                    }
                }
                c => member.push(c),
            }
        }
        out.push(member);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Value text parsers. Each returns None when the text is not of the expected form; callers turn
// that into a Fault with the column name.

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The number one to nine ASCII digits write, all of `b`.
fn digits(b: &[u8]) -> Option<u32> {
    let mut v = 0u64;
    (!b.is_empty() && b.len() <= 9 && read_digits(b, &mut v) == b.len()).then_some(v as u32)
}

/// Fractional seconds `123` (from `.123`) as microseconds; digits past the sixth are cut, as MySQL
/// never writes more than six.
fn fraction_micros(b: &[u8]) -> Option<u32> {
    const SCALE: [u32; 10] = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1, 10, 100, 1_000];
    let (v, scale) = (digits(b)?, SCALE[b.len()]);
    Some(if b.len() <= 6 { v * scale } else { v / scale })
}

/// The fractional seconds that end `s` from `at`, just past the seconds' digits (already
/// checked), as microseconds: nothing, or a point and one to nine digits. MySQL's six are read
/// in one word with the point and the digit before it.
fn fraction_at(s: &[u8], at: usize) -> Option<u32> {
    match &s[at..] {
        [] => Some(0),
        [b'.', _, _, _, _, _, _] => {
            let x = word(s, at.checked_sub(1)?)?;
            (non_digits(x) & SIX_DIGITS == 0).then(|| digits::eight_digits_of(x & SIX_DIGITS) as u32)
        }
        [b'.', f @ ..] => fraction_micros(f),
        _ => None,
    }
}

/// A calendar date. `Ok(None)` is MySQL's zero date (or a zero month/day), which has no Arrow form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilDate {
    pub year: i64,
    pub month: u32,
    pub day: u32,
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// `YYYY-MM-DD`. Outer None: not a date. Inner None: a zero date.
pub fn parse_date(s: &[u8]) -> Option<Option<CivilDate>> {
    if s.len() != 10 {
        return None;
    }
    civil_date(s)
}

/// `YYYY-MM-DD` as days since the epoch. Outer None: not a date. Inner None: a zero date.
#[inline(always)]
pub(crate) fn parse_date_days(s: &[u8]) -> Option<Option<i32>> {
    match canonical_date_days(s) {
        Some(days) => Some(Some(days)),
        None => parse_date(s).map(|date| date.map(|d| days_from_civil(d.year, d.month, d.day) as i32)),
    }
}

/// [`parse_date_days`] of TiCDC's form, `YYYY-MM-DD` of a date that is not a zero date; None
/// for anything else.
#[inline(always)]
fn canonical_date_days(s: &[u8]) -> Option<i32> {
    let [_, _, _, _, _, _, _, _, d0, d1] = *s else { return None };
    let (year, month) = year_and_month(word(s, 0)?)?;
    let (d0, d1) = (d0.wrapping_sub(b'0'), d1.wrapping_sub(b'0'));
    if d0 > 9 || d1 > 9 {
        return None;
    }
    days_of_year_0_to_9999(year, month, d0 as u32 * 10 + d1 as u32).map(|days| days as i32)
}

/// `YYYY-MM-DD[ HH:MM:SS[.ffffff]]` as microseconds since the epoch, read as a wall-clock time.
/// Outer None: malformed. Inner None: a zero date.
#[inline(always)]
pub fn parse_datetime_micros(s: &[u8]) -> Option<Option<i64>> {
    match canonical_datetime_micros(s) {
        Some(micros) => Some(Some(micros)),
        None => any_datetime_micros(s),
    }
}

/// The form TiCDC writes every DATETIME and TIMESTAMP in, `YYYY-MM-DD HH:MM:SS` with no or six
/// fractional digits, of a date that is not a zero date: read as three words (`YYYY-MM-`,
/// `DD HH:MM`, `HH:MM:SS`), each checked and its digit pairs read at once. None for anything
/// else, which [`any_datetime_micros`] reads.
#[inline(always)]
fn canonical_datetime_micros(s: &[u8]) -> Option<i64> {
    let fraction = match s.len() {
        19 => 0,
        // `S.ffffff`, read as `fraction_at` reads it.
        26 if s[19] == b'.' => {
            let x = word(s, 18)?;
            if non_digits(x) & SIX_DIGITS != 0 {
                return None;
            }
            digits::eight_digits_of(x & SIX_DIGITS)
        }
        _ => return None,
    };
    let (year, month) = year_and_month(word(s, 0)?)?;
    const TIME_SEPARATORS: u64 = 0x0000_ff00_00ff_0000;
    let day_hour_minute = pairs_between(word(s, 8)?, *b"00 00:00", TIME_SEPARATORS)?;
    let hour_minute_second = pairs_between(word(s, 11)?, *b"00:00:00", TIME_SEPARATORS)?;
    let (day, hour) = (byte_of(day_hour_minute, 0), byte_of(day_hour_minute, 3));
    let (minute, second) = (byte_of(day_hour_minute, 6), byte_of(hour_minute_second, 6));
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_of_year_0_to_9999(year, month, day)?;
    let seconds = (hour * 60 + minute) * 60 + second;
    Some(days * 86_400_000_000 + seconds as i64 * 1_000_000 + fraction as i64)
}

/// The year and month of `YYYY-MM-` (a word), month 1 to 12.
#[inline(always)]
fn year_and_month(x: u64) -> Option<(u32, u32)> {
    let pairs = pairs_between(x, *b"0000-00-", 0xff00_00ff_0000_0000)?;
    let month = byte_of(pairs, 5);
    (1..=12).contains(&month).then(|| (byte_of(pairs, 0) * 100 + byte_of(pairs, 2), month))
}

/// `x`, digits with the separators of `form` (whose digits are '0') at the bytes `separators`
/// masks, as digit pairs: byte i is ten times digit i plus digit i + 1 (a separator reads as a
/// zero).
#[inline(always)]
fn pairs_between(x: u64, form: [u8; 8], separators: u64) -> Option<u64> {
    let form = u64::from_le_bytes(form);
    let digits = x & !separators | ZEROS & separators;
    if x & separators != form & separators || non_digits(digits) != 0 {
        return None;
    }
    let d = digits - ZEROS;
    // At most 99 in a byte: no carries.
    Some(d * 10 + (d >> 8))
}

#[inline(always)]
fn byte_of(x: u64, i: u32) -> u32 {
    (x >> (8 * i)) as u8 as u32
}

/// [`days_from_civil`] of a year of four digits and a month of 1 to 12, or None when the month
/// has no such day; in unsigned arithmetic, which a year past 0 allows, and with the month's
/// days from tables.
#[inline(always)]
fn days_of_year_0_to_9999(year: u32, month: u32, day: u32) -> Option<i64> {
    // Days in each month, and before it in a year that starts on 1 March (Hinnant's).
    const DAYS_IN: [u32; 13] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    const BEFORE: [u32; 13] = [0, 306, 337, 0, 31, 61, 92, 122, 153, 184, 214, 245, 275];
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days_in = DAYS_IN[month as usize] + (month == 2 && leap) as u32;
    if day == 0 || day > days_in {
        return None;
    }
    // Years from 1 March of year -400 (so that January and February of year 0 are in one past 0).
    let y = year + 400 - (month <= 2) as u32;
    let days = y * 365 + y / 4 - y / 100 + y / 400 + BEFORE[month as usize] + day - 1;
    Some(days as i64 - (719_468 + 146_097))
}

/// [`parse_datetime_micros`] of any text: shorter forms, `/` and `T`, zero dates, faults.
#[inline(never)]
fn any_datetime_micros(s: &[u8]) -> Option<Option<i64>> {
    if s.len() < 10 {
        return None;
    }
    let Some(date) = civil_date(s)? else {
        return Some(None);
    };
    let days = days_from_civil(date.year, date.month, date.day);
    let mut micros = 0i64;
    if s.len() > 10 {
        // ` HH:MM:SS` (or `T`), its digits checked as one word.
        let x = word(s, 11)?;
        if !matches!(s[10], b' ' | b'T') || s[13] != b':' || s[16] != b':' || non_digits(x) & HH_MM_SS != 0 {
            return None;
        }
        let (h, m, sec) = (pair(x, 0), pair(x, 3), pair(x, 6));
        if h > 23 || m > 59 || sec > 59 {
            return None;
        }
        let frac = fraction_at(s, 19)?;
        micros = ((h as i64 * 60 + m as i64) * 60 + sec as i64) * 1_000_000 + frac as i64;
    }
    Some(Some(days * 86_400_000_000 + micros))
}

// Dates and times are read a word at a time: the digit positions of eight bytes are checked
// together, then each pair of digits is read from the low nibbles of its two bytes. The
// separators between them ('-', '/', ':') carry nothing into the flags of the digits above.

/// The digit bytes of `YYYY-MM-` and of `HH:MM:SS`.
const YYYY_MM: u64 = 0x00ff_ff00_ffff_ffff;
const HH_MM_SS: u64 = 0xffff_00ff_ff00_ffff;
/// The digit bytes of `S.ffffff` past the point.
const SIX_DIGITS: u64 = 0xffff_ffff_ffff_0000;

/// The eight bytes at `s[at..]`, little-endian.
#[inline]
fn word(s: &[u8], at: usize) -> Option<u64> {
    s.get(at..at + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)
}

/// The two-digit number in bytes `at` and `at + 1` of `x` (checked to be digits).
#[inline]
fn pair(x: u64, at: u32) -> u32 {
    let b = |i: u32| ((x >> (8 * i)) & 0xf) as u32;
    b(at) * 10 + b(at + 1)
}

/// The date in `s[..10]` (`s` is at least 10 bytes long).
#[inline]
fn civil_date(s: &[u8]) -> Option<Option<CivilDate>> {
    // MySQL's own form uses '-'; it also reads '/' (`2021/01/02`, as older producers wrote).
    let x = word(s, 0)?;
    let (d0, d1) = (s[8].wrapping_sub(b'0'), s[9].wrapping_sub(b'0'));
    if !matches!((s[4], s[7]), (b'-', b'-') | (b'/', b'/')) || non_digits(x) & YYYY_MM != 0 || d0 > 9 || d1 > 9 {
        return None;
    }
    let year = (pair(x, 0) * 100 + pair(x, 2)) as i64;
    let month = pair(x, 5);
    let day = d0 as u32 * 10 + d1 as u32;
    if month == 0 || day == 0 {
        return Some(None);
    }
    if month > 12 || day > days_in_month(year, month) {
        return None;
    }
    Some(Some(CivilDate { year, month, day }))
}

/// MySQL TIME `[-]HHH:MM:SS[.ffffff]` as signed microseconds.
pub fn parse_time_micros(s: &[u8]) -> Option<i64> {
    let (neg, s) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    let colon = s.iter().position(|&c| c == b':')?;
    if s.len() < colon + 6 || s[colon + 3] != b':' {
        return None;
    }
    let h = digits(&s[..colon])? as i64;
    let m = digits(&s[colon + 1..colon + 3])? as i64;
    let sec = digits(&s[colon + 4..colon + 6])? as i64;
    if m > 59 || sec > 59 {
        return None;
    }
    let frac = fraction_at(s, colon + 6)? as i64;
    let v = ((h * 60 + m) * 60 + sec) * 1_000_000 + frac;
    Some(if neg { -v } else { v })
}

/// An integer's text (`-12`, `+7`) in the whole i64 and u64 ranges. None when it is anything
/// else or out of both ranges.
pub fn parse_integer(s: &[u8]) -> Option<i128> {
    digits::parse_i64(s).map(i128::from).or_else(|| digits::parse_u64(s).map(i128::from))
}

/// A decimal text (`-153.12`, `1e3` is not MySQL output and is refused) as an integer scaled to
/// `scale` digits. None when malformed, when it has more fractional digits than `scale` that are
/// not zeros (digits are never dropped), or when it overflows 38 digits.
pub fn parse_decimal_i128(s: &[u8], scale: u32) -> Option<i128> {
    let (neg, s) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    // The usual case, up to 18 digits once scaled: the digits read eight at a time into a u64.
    let mut v = 0u64;
    let int_len = read_digits(s, &mut v);
    let (frac_len, end) = match s.get(int_len) {
        Some(b'.') => {
            let n = read_digits(&s[int_len + 1..], &mut v);
            (n, int_len + 1 + n)
        }
        _ => (0, int_len),
    };
    if end == s.len() && int_len + frac_len > 0 && int_len + scale as usize <= 18 && frac_len <= scale as usize {
        let v = (v * 10u64.pow(scale - frac_len as u32)) as i128;
        return Some(if neg { -v } else { v });
    }
    let (int_part, frac_part) = match s.iter().position(|&c| c == b'.') {
        Some(p) => (&s[..p], &s[p + 1..]),
        None => (s, &s[..0]),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    parse_decimal_digits(neg, int_part, frac_part, scale)
}

/// [`parse_decimal_i128`] for any number of digits, up to 38.
fn parse_decimal_digits(neg: bool, int_part: &[u8], frac_part: &[u8], scale: u32) -> Option<i128> {
    // Up to 18 significant digits accumulate in a u64 (one multiply each), then in an i128.
    let (mut small, mut big, mut digits) = (0u64, 0i128, 0u32);
    let mut push = |c: u8| -> Option<()> {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = c - b'0';
        if digits == 0 && d == 0 {
            return Some(());
        }
        digits += 1;
        match digits {
            0..=18 => small = small * 10 + d as u64,
            19 => big = small as i128 * 10 + d as i128,
            20..=38 => big = big * 10 + d as i128,
            _ => return None,
        }
        Some(())
    };
    for &c in int_part {
        push(c)?;
    }
    for (i, &c) in frac_part.iter().enumerate() {
        if i as u32 >= scale {
            if c != b'0' {
                return None;
            }
        } else {
            push(c)?;
        }
    }
    for _ in frac_part.len() as u32..scale {
        push(b'0')?;
    }
    let v = if digits <= 18 { small as i128 } else { big };
    Some(if neg { -v } else { v })
}

/// `[1,2.5,-3]` (TiDB's VECTOR text) into floats.
pub fn parse_vector(s: &[u8], out: &mut Vec<f32>) -> Option<()> {
    let s = std::str::from_utf8(s).ok()?.trim();
    let inner = s.strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(());
    }
    for part in inner.split(',') {
        out.push(part.trim().parse::<f32>().ok()?);
    }
    Some(())
}

/// The names of ENUM index `index` (1-based; 0 is MySQL's empty "error" value).
pub fn enum_name(members: &[String], index: u64) -> Option<&str> {
    if index == 0 {
        return Some("");
    }
    members.get(index as usize - 1).map(String::as_str)
}

/// The comma-joined names of SET bitmask `mask`.
pub fn set_names(members: &[String], mask: u64, out: &mut String) -> Option<()> {
    if members.len() < 64 && mask >> members.len() != 0 {
        return None;
    }
    let mut first = true;
    for (i, m) in members.iter().enumerate().take(64) {
        if mask & (1 << i) != 0 {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            out.push_str(m);
        }
    }
    Some(())
}

/// The position of member `name`; None when it is not one, or the definition lists it twice
/// (MySQL refuses such a definition, and no one number stands for the name).
fn member_position(members: &[String], name: &str) -> Option<usize> {
    let mut at = members.iter().enumerate().filter(|(_, m)| *m == name).map(|(i, _)| i);
    match (at.next(), at.next()) {
        (Some(i), None) => Some(i),
        _ => None,
    }
}

/// The ENUM index of `name` (1-based; the empty name is MySQL's "error" value 0).
pub fn enum_index(members: &[String], name: &str) -> Option<u64> {
    if name.is_empty() {
        return Some(0);
    }
    member_position(members, name).map(|i| i as u64 + 1)
}

/// The ENUM index or SET bitmask of `names` by the type's `members`; None for another type.
pub fn member_number(base: MySqlType, members: &[String], names: &str) -> Option<u64> {
    match base {
        MySqlType::Enum => enum_index(members, names),
        MySqlType::Set => set_mask(members, names),
        _ => None,
    }
}

/// The SET bitmask of comma-joined `names` (the empty text is the empty set). None also when
/// the mask would not read back as `names`: members holding commas make some texts ambiguous.
pub fn set_mask(members: &[String], names: &str) -> Option<u64> {
    if names.is_empty() {
        return Some(0);
    }
    let mask = names
        .split(',')
        .try_fold(0u64, |mask, name| Some(mask | 1u64.checked_shl(member_position(members, name)? as u32)?))?;
    let mut again = String::with_capacity(names.len());
    set_names(members, mask, &mut again)?;
    (again == names).then_some(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_descriptions() {
        let t = TypeDescription::parse("decimal(10,2)");
        assert_eq!((t.base, t.length, t.scale), (MySqlType::Decimal, Some(10), Some(2)));
        let t = TypeDescription::parse("bigint(20) unsigned zerofill");
        assert!(t.unsigned && t.base == MySqlType::BigInt);
        let t = TypeDescription::parse("enum('a','b''c','d,e')");
        assert_eq!(t.members, vec!["a", "b'c", "d,e"]);
        assert_eq!(TypeDescription::parse("float(30)").base, MySqlType::Double);
        assert_eq!(TypeDescription::parse("float(24)").base, MySqlType::Float);
        assert_eq!(TypeDescription::parse("float(30,2)").base, MySqlType::Float);
        let t = TypeDescription::parse("varbinary(255)");
        assert!(t.binary && t.base == MySqlType::VarChar);
        assert!(TypeDescription::parse("tinyint unsigned").unsigned);
        // An unclosed argument list ending in a multi-byte character (a fuzz finding).
        assert_eq!(TypeDescription::parse("blob(1\u{82}").length, None);
        assert_eq!(TypeDescription::parse("enum('a','é").members, vec!["a", "é"]);
        assert_eq!(TypeDescription::parse("int(").length, None);
    }

    #[test]
    fn type_aliases_mysql_accepts() {
        let base = |text: &str| {
            let t = TypeDescription::parse(text);
            (t.base, t.binary, t.unsigned)
        };
        assert_eq!(base("FIXED(10,2)"), (MySqlType::Decimal, false, false));
        assert_eq!(base("DEC(10,2)"), (MySqlType::Decimal, false, false));
        assert_eq!(base("INT4"), (MySqlType::Int, false, false));
        assert_eq!(base("MIDDLEINT"), (MySqlType::MediumInt, false, false));
        assert_eq!(base("SERIAL"), (MySqlType::BigInt, false, true));
        assert_eq!(base("FLOAT8"), (MySqlType::Double, false, false));
        assert_eq!(base("character varying(5)"), (MySqlType::VarChar, false, false));
        assert_eq!(base("NCHAR(2)"), (MySqlType::Char, false, false));
        assert_eq!(base("long varchar"), (MySqlType::MediumText, false, false));
        assert_eq!(base("LONG VARBINARY"), (MySqlType::MediumText, true, false));
        assert_eq!(TypeDescription::parse("fixed(10,2)").scale, Some(2));
    }

    /// The byte-at-a-time readers the word-at-a-time ones replaced, as the reference.
    mod reference {
        use super::super::{days_from_civil, days_in_month, fraction_micros, CivilDate};

        fn two_digits(s: &[u8], at: usize) -> Option<u32> {
            let (tens, ones) = (s[at].wrapping_sub(b'0'), s[at + 1].wrapping_sub(b'0'));
            (tens < 10 && ones < 10).then_some(tens as u32 * 10 + ones as u32)
        }

        pub fn parse_date(s: &[u8]) -> Option<Option<CivilDate>> {
            if s.len() != 10 || !matches!((s[4], s[7]), (b'-', b'-') | (b'/', b'/')) {
                return None;
            }
            let year = (two_digits(s, 0)? * 100 + two_digits(s, 2)?) as i64;
            let (month, day) = (two_digits(s, 5)?, two_digits(s, 8)?);
            if month == 0 || day == 0 {
                return Some(None);
            }
            if month > 12 || day > days_in_month(year, month) {
                return None;
            }
            Some(Some(CivilDate { year, month, day }))
        }

        pub fn parse_datetime_micros(s: &[u8]) -> Option<Option<i64>> {
            if s.len() < 10 {
                return None;
            }
            let Some(date) = parse_date(&s[..10])? else { return Some(None) };
            let mut micros = 0i64;
            if s.len() > 10 {
                let t = &s[10..];
                if t.len() < 9 || (t[0] != b' ' && t[0] != b'T') || t[3] != b':' || t[6] != b':' {
                    return None;
                }
                let (h, m, sec) = (two_digits(t, 1)?, two_digits(t, 4)?, two_digits(t, 7)?);
                if h > 23 || m > 59 || sec > 59 {
                    return None;
                }
                let frac = match &t[9..] {
                    [] => 0,
                    [b'.', f @ ..] => fraction_micros(f)?,
                    _ => return None,
                };
                micros = ((h as i64 * 60 + m as i64) * 60 + sec as i64) * 1_000_000 + frac as i64;
            }
            Some(Some(days_from_civil(date.year, date.month, date.day) * 86_400_000_000 + micros))
        }
    }

    #[test]
    fn word_wise_dates_read_every_text_as_the_byte_wise_reference_does() {
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for base in [
            "2024-02-29 23:59:59.123456",
            "0000-00-00 00:00:00",
            "1999/12/31T00:00:00.5",
            "2023-11-30 12:34:56",
            "0000-01-01 00:00:00.000000",
        ] {
            texts.push(base.as_bytes().to_vec());
            for len in 0..base.len() {
                texts.push(base.as_bytes()[..len].to_vec());
            }
        }
        // Every byte value at every position of each text: digits out of range, separators
        // replaced, bytes that carry when six is added.
        let seeds = texts.clone();
        for t in &seeds {
            for at in 0..t.len() {
                for b in 0..=255u8 {
                    let mut m = t.clone();
                    m[at] = b;
                    texts.push(m);
                }
            }
        }
        for t in &texts {
            assert_eq!(
                parse_datetime_micros(t),
                reference::parse_datetime_micros(t),
                "{:?}",
                String::from_utf8_lossy(t)
            );
            assert_eq!(parse_date(t), reference::parse_date(t), "{:?}", String::from_utf8_lossy(t));
            let days = reference::parse_date(t).map(|d| d.map(|d| days_from_civil(d.year, d.month, d.day) as i32));
            assert_eq!(parse_date_days(t), days, "{:?}", String::from_utf8_lossy(t));
        }
        for (y, m, d) in [(2023, 2, 29), (2024, 2, 29), (1900, 2, 29), (2000, 2, 29), (2023, 4, 31), (2023, 13, 1)] {
            let t = format!("{y:04}-{m:02}-{d:02} 01:02:03");
            assert_eq!(parse_datetime_micros(t.as_bytes()), reference::parse_datetime_micros(t.as_bytes()), "{t}");
        }
    }

    #[test]
    fn days_of_four_digit_years_are_days_from_civil() {
        for year in 0..=9999u32 {
            for month in 1..=12u32 {
                for day in 1..=32u32 {
                    let expected =
                        (day <= days_in_month(year as i64, month)).then(|| days_from_civil(year as i64, month, day));
                    assert_eq!(days_of_year_0_to_9999(year, month, day), expected, "{year}-{month}-{day}");
                }
            }
        }
    }

    /// TiCDC's own form is read word-wise whenever it is a date-time (zero dates and faults go
    /// on to the general reader), with the reference's result.
    #[test]
    fn canonical_date_times_take_the_word_wise_path() {
        for year in [0, 1, 4, 100, 400, 1582, 1900, 1969, 1970, 2000, 2023, 2024, 9999] {
            for month in 0..=13 {
                for day in [0, 1, 28, 29, 30, 31, 32] {
                    for (hour, minute, second) in [(0, 0, 0), (23, 59, 59), (24, 0, 0), (0, 60, 0), (0, 0, 60)] {
                        for fraction in ["", ".000000", ".999999", ".5"] {
                            let t =
                                format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}{fraction}");
                            let expected = reference::parse_datetime_micros(t.as_bytes());
                            assert_eq!(parse_datetime_micros(t.as_bytes()), expected, "{t}");
                            let canonical = fraction.len() != 2 && matches!(expected, Some(Some(_)));
                            assert_eq!(canonical_datetime_micros(t.as_bytes()).is_some(), canonical, "{t}");
                            let date = &t.as_bytes()[..10];
                            let days = reference::parse_date(date)
                                .map(|d| d.map(|d| days_from_civil(d.year, d.month, d.day) as i32));
                            assert_eq!(parse_date_days(date), days, "{t}");
                            assert_eq!(canonical_date_days(date).is_some(), matches!(days, Some(Some(_))), "{t}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11017);
        assert_eq!(parse_date(b"0000-00-00"), Some(None));
        assert_eq!(parse_date(b"2021-02-29"), None);
        assert_eq!(parse_datetime_micros(b"1970-01-02 00:00:01.5"), Some(Some(86_401_500_000)));
        assert_eq!(parse_time_micros(b"-838:59:59"), Some(-(838 * 3600 + 59 * 60 + 59) * 1_000_000));
        assert_eq!(parse_time_micros(b"12:00:00.000001"), Some(43_200_000_001));
        assert_eq!(fraction_micros(b"5"), Some(500_000));
        assert_eq!(fraction_micros(b"123456789"), Some(123_456));
        assert_eq!(fraction_micros(b"12a"), None);
        assert_eq!(fraction_micros(b"1234567890"), None);
        // A TIME's six fractional digits are read in one word: every byte of them, and the
        // point, read as the byte-wise fraction_micros reads them.
        let time = b"-838:59:59.123456";
        for at in 10..time.len() {
            for b in 0..=255u8 {
                let mut t = time.to_vec();
                t[at] = b;
                let want = match &t[10..] {
                    [b'.', f @ ..] => fraction_micros(f).map(|f| -(838 * 3600 + 59 * 60 + 59) * 1_000_000 - f as i64),
                    _ => None,
                };
                assert_eq!(parse_time_micros(&t), want, "{:?}", String::from_utf8_lossy(&t));
            }
        }
    }

    #[test]
    fn decimals() {
        assert_eq!(parse_decimal_i128(b"153.12", 2), Some(15312));
        assert_eq!(parse_decimal_i128(b"-1.5", 3), Some(-1500));
        assert_eq!(parse_decimal_i128(b"1.25", 1), None);
        assert_eq!(parse_decimal_i128(b"1.20", 1), Some(12));
        assert_eq!(parse_decimal_i128(b"18446744073709551615", 0), Some(18446744073709551615));
        assert_eq!(parse_decimal_i128(b"abc", 0), None);
        assert_eq!(parse_decimal_i128(b"-0.00", 2), Some(0));
        assert_eq!(parse_decimal_i128(b"000123456789012345678.9", 2), Some(12345678901234567890));
        let max = "9".repeat(38);
        assert_eq!(parse_decimal_i128(max.as_bytes(), 0), Some(max.parse().unwrap()));
        assert_eq!(
            parse_decimal_i128(format!("-{}.{}", &max[..30], &max[..8]).as_bytes(), 8),
            Some(-max.parse::<i128>().unwrap())
        );
        assert_eq!(parse_decimal_i128(format!("1{max}").as_bytes(), 0), None);
        assert_eq!(parse_decimal_i128(b"12.", 2), Some(1200));
        assert_eq!(parse_decimal_i128(b".5", 1), Some(5));
        assert_eq!(parse_decimal_i128(b"1.2x", 2), None);
        assert_eq!(parse_decimal_i128(b"-", 2), None);
    }

    #[test]
    fn short_decimals_read_as_the_general_path_does() {
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..20_000 {
            let digits = |n: u64, next: &mut dyn FnMut(u64) -> u64| -> String {
                (0..n).map(|_| char::from(b"0123456789x"[next(11).min(next(11)) as usize])).collect()
            };
            let int_part = digits(next(22), &mut next);
            let dot = next(4) != 0;
            let frac_part = if dot { digits(next(12), &mut next) } else { String::new() };
            let scale = next(10) as u32;
            let neg = next(2) == 1;
            let text = format!("{}{int_part}{}{frac_part}", if neg { "-" } else { "" }, if dot { "." } else { "" });
            let (int_part, frac_part) = (int_part.as_bytes(), frac_part.as_bytes());
            let general = if int_part.is_empty() && frac_part.is_empty() {
                None
            } else {
                parse_decimal_digits(neg, int_part, frac_part, scale)
            };
            assert_eq!(parse_decimal_i128(text.as_bytes(), scale), general, "{text} at scale {scale}");
        }
    }

    #[test]
    fn integers_read_as_std_parses_them() {
        let std =
            |text: &str| text.parse::<i64>().map(i128::from).ok().or_else(|| text.parse::<u64>().ok().map(i128::from));
        let mut seed = 5u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let edges = [
            "",
            "-",
            "+",
            "0",
            "-0",
            "+12",
            "--1",
            "1-",
            " 1",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "0018446744073709551615",
            "-00000000000000000000001",
            "9999999999999999999",
            "-9999999999999999999",
        ];
        for text in edges {
            assert_eq!(parse_integer(text.as_bytes()), std(text), "{text:?}");
        }
        for _ in 0..50_000 {
            let sign = ["", "-", "+"][next(3) as usize];
            let body: String =
                (0..next(24)).map(|_| char::from(b"0123456789.x9"[next(13).min(next(13)) as usize])).collect();
            let text = format!("{sign}{body}");
            assert_eq!(parse_integer(text.as_bytes()), std(&text), "{text:?}");
        }
    }

    #[test]
    fn enum_and_set() {
        let m = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        assert_eq!(enum_name(&m, 2), Some("b"));
        assert_eq!(enum_name(&m, 4), None);
        let mut s = String::new();
        set_names(&m, 5, &mut s).unwrap();
        assert_eq!(s, "a,c");
        assert!(set_names(&m, 8, &mut String::new()).is_none());
    }
}
