//! The Canal-JSON encoder: events in, TiCDC's Canal-JSON Kafka values out
//! (`../shared/protocols/canal-json.md`).
//!
//! TiCDC writes DML objects with a hand-rolled easyjson writer and DDL/watermark objects with a
//! struct marshaller; both field orders are kept here. Where Go's output is not deterministic we
//! pick one fixed form so that the same events always give the same bytes:
//! * `mysqlType` lists columns in table order (Go iterates a map);
//! * `ts`, TiCDC's wall-clock build time, is written equal to `es` (the commit time in ms);
//! * claim-check files are named after a hash of their content ([`crate::input::claim_check`]).
//!
//! Values are rendered from the column's type whatever [`Value`] variant carries them, so
//! events read back from Arrow (text, typed numbers, ENUM names) encode like decoded ones.

use std::fmt::Write as _;

use base64::Engine as _;

use crate::codec::{float_text, Encode, EncodeOptions, LargeMessageHandle, Protocol, Record};
use crate::error::{Fault, FaultResult};
use crate::event::{flag, Column, Event, EventKind, MessageEvents, Value};
use crate::input::claim_check::{claim_check_body, store_claim_check};
use crate::schema::ddl_action;
use crate::schema::mysql::{MySqlType, TypeDescription};

/// What sarama adds to a record's key and value when TiCDC measures it against
/// `max-message-bytes` (`common.MaxRecordOverhead`).
const RECORD_OVERHEAD: usize = 5 * 5 + 10 + 1;

pub struct CanalJsonEncoder {
    options: EncodeOptions,
    only_updated: bool,
    text: String,
}

/// Which columns of a row a message carries, and what it says about itself.
#[derive(Clone, Copy)]
struct RowForm<'l> {
    only_handle_key: bool,
    mark_only_handle_key: bool,
    claim_check: Option<&'l str>,
}

impl CanalJsonEncoder {
    pub fn new(options: &EncodeOptions) -> Self {
        CanalJsonEncoder {
            only_updated: options.only_output_updated_columns || options.content_compatible,
            options: options.clone(),
            text: String::new(),
        }
    }

    fn finish(&self, value: &str) -> FaultResult<Vec<u8>> {
        self.options.compression.compress(value.as_bytes())
    }

    fn too_large(&self, value: &[u8]) -> bool {
        value.len() + RECORD_OVERHEAD > self.options.max_message_bytes
    }

    fn encode_row(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        // An event read from a handle-key-only or claim-check message is written as one again.
        let form = RowForm {
            only_handle_key: event.handle_key_only || event.claim_check.is_some(),
            mark_only_handle_key: event.handle_key_only,
            claim_check: event.claim_check.as_deref(),
        };
        let value = self.row_message(events, event, form)?;
        if !self.too_large(&value) {
            out.push(Record { key: None, value });
            return Ok(());
        }
        let limit = self.options.max_message_bytes;
        let too_large =
            |len: usize| Fault::new(0, format!("canal-json message of {len} bytes exceeds max-message-bytes {limit}"));
        if !self.options.enable_tidb_extension && self.options.large_message_handle != LargeMessageHandle::None {
            return Err(Fault::new(0, "large-message-handle needs enable-tidb-extension for canal-json"));
        }
        let reduced = match self.options.large_message_handle {
            LargeMessageHandle::None => return Err(too_large(value.len())),
            LargeMessageHandle::HandleKeyOnly => {
                let form = RowForm { only_handle_key: true, mark_only_handle_key: true, claim_check: None };
                self.row_message(events, event, form)?
            }
            LargeMessageHandle::ClaimCheck => {
                let dir = self
                    .options
                    .claim_check_dir
                    .clone()
                    .ok_or_else(|| Fault::new(0, "claim-check needs a claim_check_dir"))?;
                let body = claim_check_body(None, &value, self.options.claim_check_raw_value);
                let location = store_claim_check(&dir, &body)?;
                let form = RowForm { only_handle_key: true, mark_only_handle_key: false, claim_check: Some(&location) };
                self.row_message(events, event, form)?
            }
        };
        if self.too_large(&reduced) {
            return Err(too_large(reduced.len()));
        }
        out.push(Record { key: None, value: reduced });
        Ok(())
    }

    fn row_message(
        &mut self,
        events: &MessageEvents<'_>,
        event: &Event<'_>,
        form: RowForm<'_>,
    ) -> FaultResult<Vec<u8>> {
        let keys = events.keys(event);
        // `delete-only-output-handle-key-columns`: DELETEs carry the key alone, with no marker.
        let form = RowForm {
            only_handle_key: form.only_handle_key
                || event.kind == EventKind::Delete && self.options.delete_only_output_handle_key_columns,
            ..form
        };
        let is_key = |c: &Column<'_>| keys.contains(&c.name);
        let keep = |c: &&Column<'_>| !form.only_handle_key || c.ty.ticdc_flags(is_key(c)) & flag::HANDLE_KEY != 0;
        let (after, before) = (events.after(event), events.before(event));
        // Go calls an UPDATE without an old image an INSERT.
        let kind = match event.kind {
            EventKind::Update if event.before.is_none() => EventKind::Insert,
            kind => kind,
        };
        let image = if kind == EventKind::Delete { before } else { after };

        let mut s = std::mem::take(&mut self.text);
        s.clear();
        s.push_str("{\"id\":0,\"database\":");
        json_string(&mut s, event.schema.as_deref().unwrap_or(""));
        s.push_str(",\"table\":");
        json_string(&mut s, event.table.as_deref().unwrap_or(""));
        s.push_str(",\"pkNames\":[");
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            json_string(&mut s, k);
        }
        let es = canal_ts(event.commit_ts);
        let _ = write!(s, "],\"isDdl\":false,\"type\":\"{}\",\"es\":{es},\"ts\":{es},\"sql\":\"\"", kind.as_str());

        // The type maps name every column of the message: an UPDATE's old image may name a
        // column its new one lacks (never in TiCDC's own events), and a decoder (ours, Go's)
        // rejects a column missing from `mysqlType`.
        let old_only: Vec<&Column<'_>> = if kind == EventKind::Update && !same_names(after, before) {
            before.iter().filter(|c| !after.iter().any(|a| a.name == c.name)).collect()
        } else {
            Vec::new()
        };
        let typed = || image.iter().chain(old_only.iter().copied()).filter(keep);
        s.push_str(",\"sqlType\":");
        let mut first = true;
        for c in typed() {
            s.push_str(if first { "{" } else { "," });
            first = false;
            json_string(&mut s, &c.name);
            let _ = write!(s, ":{}", java_type(c).map_err(|e| Fault::new(c.at, e))?);
        }
        s.push_str(if first { "null" } else { "}" });
        s.push_str(",\"mysqlType\":{");
        for (i, c) in typed().enumerate() {
            if i > 0 {
                s.push(',');
            }
            json_string(&mut s, &c.name);
            s.push(':');
            json_string(&mut s, &mysql_type(c, self.options.content_compatible));
        }
        s.push('}');

        match kind {
            EventKind::Update => {
                s.push_str(",\"old\":");
                let unchanged = |c: &Column<'_>| {
                    self.only_updated
                        && after
                            .iter()
                            .find(|n| n.name == c.name)
                            .is_some_and(|n| n.ty.base == c.ty.base && same_value(n, c))
                };
                write_image(&mut s, before.iter().filter(keep).filter(|c| !unchanged(c)))?;
                s.push_str(",\"data\":");
                write_image(&mut s, after.iter().filter(keep))?;
            }
            _ => {
                s.push_str(",\"old\":null,\"data\":");
                write_image(&mut s, image.iter().filter(keep))?;
            }
        }
        if self.options.enable_tidb_extension {
            let _ = write!(s, ",\"_tidb\":{{\"commitTs\":{}", event.commit_ts);
            if form.mark_only_handle_key {
                s.push_str(",\"onlyHandleKey\":true");
            }
            if let Some(location) = form.claim_check {
                s.push_str(",\"claimCheckLocation\":");
                json_string(&mut s, location);
            }
            // TiCDC writes the row key only with both `enable-tidb-extension` and
            // `output-row-key`, last in `_tidb`, as easyjson's Base64Bytes: padded standard
            // base64, `null` for a nil key (pkg/sink/codec/canal/canal_json_encoder.go).
            if self.options.output_row_key {
                s.push_str(",\"rowkey\":");
                match event.row_key.as_deref() {
                    Some(key) => {
                        s.push('"');
                        base64::engine::general_purpose::STANDARD.encode_string(key, &mut s);
                        s.push('"');
                    }
                    None => s.push_str("null"),
                }
            }
            s.push('}');
        }
        s.push('}');
        let value = self.finish(&s);
        self.text = s;
        value
    }

    /// DDL and watermark objects, in the field order of Go's `JSONMessage` struct.
    fn struct_message(&mut self, event: &Event<'_>) -> FaultResult<Vec<u8>> {
        let mut s = std::mem::take(&mut self.text);
        s.clear();
        let (is_ddl, kind, sql, ts) = match event.kind {
            EventKind::Ddl => {
                let sql = event.ddl.as_deref().unwrap_or("");
                (true, ddl_category(event.ddl_type.as_deref(), sql), sql, event.commit_ts)
            }
            _ => (false, "TIDB_WATERMARK", "", event.commit_ts),
        };
        s.push_str("{\"id\":0,\"database\":");
        json_string(&mut s, event.schema.as_deref().unwrap_or(""));
        s.push_str(",\"table\":");
        json_string(&mut s, event.table.as_deref().unwrap_or(""));
        let es = canal_ts(ts);
        let _ = write!(s, ",\"pkNames\":null,\"isDdl\":{is_ddl},\"type\":\"{kind}\",\"es\":{es},\"ts\":{es},\"sql\":");
        json_string(&mut s, sql);
        s.push_str(",\"sqlType\":null,\"mysqlType\":null,\"data\":null,\"old\":null");
        if self.options.enable_tidb_extension {
            // Go's `omitempty`: a zero timestamp is left out.
            let field = if is_ddl { "commitTs" } else { "watermarkTs" };
            if ts == 0 {
                s.push_str(",\"_tidb\":{}");
            } else {
                let _ = write!(s, ",\"_tidb\":{{\"{field}\":{ts}}}");
            }
        }
        s.push('}');
        let value = self.finish(&s);
        self.text = s;
        value
    }
}

impl Encode for CanalJsonEncoder {
    fn protocol(&self) -> Protocol {
        Protocol::CanalJson
    }

    fn encode(&mut self, events: &MessageEvents<'_>, event: &Event<'_>, out: &mut Vec<Record>) -> FaultResult<()> {
        match event.kind {
            EventKind::Insert | EventKind::Update | EventKind::Delete => self.encode_row(events, event, out),
            EventKind::Ddl => {
                let value = self.struct_message(event)?;
                out.push(Record { key: None, value });
                Ok(())
            }
            // Watermarks exist only with the TiDB extension.
            EventKind::Watermark if self.options.enable_tidb_extension => {
                let value = self.struct_message(event)?;
                out.push(Record { key: None, value });
                Ok(())
            }
            // Canal-JSON has no bootstrap messages.
            EventKind::Watermark | EventKind::Bootstrap => Ok(()),
        }
    }
}

/// Canal's `es`: the commit's physical time in milliseconds.
fn canal_ts(commit_ts: u64) -> u64 {
    commit_ts >> 18
}

/// `[{…}]` of the columns: Go writes a DML message's images so even when one has no column.
fn write_image<'c, 'a: 'c>(s: &mut String, columns: impl Iterator<Item = &'c Column<'a>>) -> FaultResult<()> {
    s.push_str("[{");
    for (i, c) in columns.enumerate() {
        if i > 0 {
            s.push(',');
        }
        json_string(s, &c.name);
        s.push(':');
        match value_text(c)? {
            None => s.push_str("null"),
            Some(text) => json_string(s, &text),
        }
    }
    s.push_str("}]");
    Ok(())
}

/// Whether two row images name the same columns in the same order (TiCDC's always do).
fn same_names(a: &[Column<'_>], b: &[Column<'_>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.name == b.name)
}

fn same_value(a: &Column<'_>, b: &Column<'_>) -> bool {
    match (value_text(a), value_text(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The string Canal-JSON carries for a value (None: JSON null).
fn value_text(c: &Column<'_>) -> FaultResult<Option<String>> {
    let binary = c.ty.binary;
    let text = match &c.value {
        Value::Null => return Ok(None),
        Value::Int(v) => v.to_string(),
        Value::UInt(v) => v.to_string(),
        Value::Float32(v) => float_text(*v as f64, || v.to_string()),
        Value::Float64(v) => float_text(*v, || v.to_string()),
        Value::Bytes(b) if binary => b.iter().map(|&b| b as char).collect(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Text(t) if binary => t.bytes().map(|b| b as char).collect(),
        Value::Text(t) => match c.ty.base {
            // ENUM/SET names (from a typed Arrow column) back to TiCDC's index and bitmask.
            MySqlType::Enum | MySqlType::Set if t.parse::<u64>().is_err() => member_number(c, t).ok_or_else(|| {
                Fault::new(
                    c.at,
                    format!(
                        "column {}: {t:?} is not a member of {}",
                        c.name,
                        c.ty.text.as_deref().unwrap_or("the type")
                    ),
                )
            })?,
            _ => t.to_string(),
        },
    };
    Ok(Some(text))
}

fn member_number(c: &Column<'_>, names: &str) -> Option<String> {
    let members = TypeDescription::parse(c.ty.text.as_deref()?).members;
    crate::schema::mysql::member_number(c.ty.base, &members, names).map(|n| n.to_string())
}

/// The `mysqlType` entry: TiDB's full type description in content-compatible mode (when the
/// event carries one), else the base name with ` unsigned` / ` zerofill`.
fn mysql_type(c: &Column<'_>, content_compatible: bool) -> String {
    if content_compatible {
        if let Some(text) = c.ty.text.as_deref() {
            return text.to_string();
        }
    }
    let mut s = c.ty.base.name(c.ty.binary).to_string();
    let zerofill = c.ty.text.as_deref().is_some_and(|t| t.to_ascii_lowercase().contains("zerofill"));
    if (c.ty.unsigned || zerofill) && !matches!(c.ty.base, MySqlType::Bit | MySqlType::Year) {
        s.push_str(" unsigned");
    }
    if zerofill && c.ty.base != MySqlType::Year {
        s.push_str(" zerofill");
    }
    s
}

/// The `sqlType` entry (`java.sql.Types`), promoting unsigned integers by the value as Canal does.
fn java_type(c: &Column<'_>) -> Result<i32, String> {
    use MySqlType::*;
    let ty = &c.ty;
    let base = match ty.base {
        TinyInt => -6,
        SmallInt => 5,
        MediumInt | Int | Enum => 4,
        BigInt => -5,
        Float => 7,
        Double => 8,
        Decimal => 3,
        Date => 91,
        Time => 92,
        DateTime | Timestamp => 93,
        Bit | Set => -7,
        Char if ty.binary => 2004,
        Char => 1,
        TinyText | Text | MediumText | LongText | VarChar if ty.binary => 2004,
        TinyText | Text | MediumText | LongText => 2005,
        Geometry => -2,
        Null => 0,
        Year | Json | VarChar | Vector | Unknown => 12,
    };
    let unsigned = ty.unsigned || ty.flags.is_some_and(|f| f & flag::UNSIGNED != 0);
    if !unsigned || !matches!(ty.base, TinyInt | SmallInt | Int | BigInt) {
        return Ok(base);
    }
    let number = match &c.value {
        Value::Null => return Ok(base),
        Value::UInt(v) => *v,
        Value::Int(v) => u64::try_from(*v).map_err(|_| format!("column {}: unsigned value {v} is negative", c.name))?,
        Value::Text(t) => {
            t.parse::<u64>().map_err(|_| format!("column {}: unsigned value {t:?} is not a number", c.name))?
        }
        _ => return Err(format!("column {}: unexpected value for an unsigned integer", c.name)),
    };
    Ok(match ty.base {
        TinyInt if number > i8::MAX as u64 => 5,
        SmallInt if number > i16::MAX as u64 => 4,
        Int if number > i32::MAX as u64 => -5,
        BigInt if number > i64::MAX as u64 => 3,
        _ => base,
    })
}

/// The Canal `type` of a DDL (see [`ddl_action::category`]); Canal-JSON also counts the legacy
/// add/drop columns actions (37, 38) as ALTER.
fn ddl_category(ddl_type: Option<&str>, sql: &str) -> &'static str {
    match ddl_type.map(str::trim) {
        Some("37" | "38") => "ALTER",
        _ => ddl_action::category(ddl_type, sql),
    }
}

/// A JSON string as Go's HTML-safe writers produce it: `\"` `\\` `\n` `\r` `\t`, other control
/// characters as `\u00XX`, `<` `>` `&` and U+2028/U+2029 escaped, everything else raw.
pub fn json_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, ch) in s.char_indices() {
        let escape: Option<&str> = match ch {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '<' => Some("\\u003c"),
            '>' => Some("\\u003e"),
            '&' => Some("\\u0026"),
            '\u{2028}' => Some("\\u2028"),
            '\u{2029}' => Some("\\u2029"),
            c if (c as u32) < 0x20 => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", ch as u32);
            }
        }
        start = i + ch.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_go() {
        let mut s = String::new();
        let bytes = [0x05u8, 0x07, 0x0a, 0x0f, 0x24, 0x32, 0x2b, 0x63, 0x78, 0x3c, 0x26, 0xff, 0xfe, 0x2d, 0x37, 0x46];
        let text: String = bytes.iter().map(|&b| b as char).collect();
        json_string(&mut s, &text);
        assert_eq!(s, "\"\\u0005\\u0007\\n\\u000f$2+cx\\u003c\\u0026ÿþ-7F\"");
    }

    #[test]
    fn ddl_categories() {
        assert_eq!(ddl_category(Some("CREATE"), ""), "CREATE");
        assert_eq!(ddl_category(Some("14"), ""), "RENAME");
        assert_eq!(ddl_category(None, "ALTER TABLE t ADD INDEX i (a)"), "CINDEX");
        assert_eq!(ddl_category(None, "alter table t add column a int"), "ALTER");
        assert_eq!(ddl_category(None, "drop database x"), "QUERY");
    }
}
