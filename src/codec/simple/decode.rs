//! The Simple codec: each message read by its flavour's reader against the schema cache, and
//! the row fields both flavours share.

use std::borrow::Cow;

use crate::codec::{Codec, CodecOptions, HeldMessage, MessageOrigin, Protocol};
use crate::columns::TableColumns;
use crate::error::{Fault, FaultResult};
use crate::event::{Column, Event, EventKind, MessageEvents, Text};
use crate::schema::table::TableDefinition;

use super::cache::{Outcome, PendingStats, State, Table};
use super::{avro, checksum, json, Encoding};

/// The DDL categories of `type` (`common.md` §4), in Avro's enum order.
pub const DDL_TYPES: [&str; 8] = crate::schema::ddl_action::CATEGORIES;

pub fn is_ddl_type(kind: &str) -> bool {
    DDL_TYPES.contains(&kind)
}

/// What a row message says besides its images.
pub struct RowHeader<'a> {
    pub kind: EventKind,
    pub commit_ts: u64,
    /// `startTs`: Simple JSON with TiCDC's `simple-include-start-ts`.
    pub start_ts: Option<u64>,
    pub database: Text<'a>,
    pub table: Text<'a>,
    pub table_id: Option<i64>,
    pub schema_version: u64,
    pub claim_check: Option<Text<'a>>,
    pub handle_key_only: bool,
    /// The checksum to verify, if verification is on.
    pub checksum: Option<checksum::RowChecksum>,
}

/// Checks a row message's images and checksum and appends its event.
pub fn finish_row<'a>(
    h: RowHeader<'a>,
    table: &Table,
    data: Option<std::ops::Range<usize>>,
    old: Option<std::ops::Range<usize>>,
    location: &str,
    out: &mut MessageEvents<'a>,
) -> FaultResult<()> {
    let missing = |what: &str| Fault::new(0, format!("{} message without {what}", h.kind.as_str()));
    let (after, before) = match h.kind {
        EventKind::Insert => (Some(data.ok_or_else(|| missing("data"))?), None),
        EventKind::Delete => (None, Some(old.ok_or_else(|| missing("old"))?)),
        _ => (Some(data.ok_or_else(|| missing("data"))?), old),
    };
    // A handle-key-only row is partial: its checksum (of the full row) cannot be checked.
    if let Some(checksum) = h.checksum.as_ref().filter(|_| !h.handle_key_only) {
        let image = |r: &Option<std::ops::Range<usize>>| r.clone().map_or(&[][..], |r| &out.columns[r]);
        verify_row_checksum(checksum, image(&after), image(&before), location, 0)?;
    }
    let mut event = row_event(h.kind, h.commit_ts, h.database, h.table, h.table_id, h.schema_version);
    event.keys = push_keys(table, after.clone().or(before.clone()).unwrap_or(0..0), out);
    event.handle_key_only = h.handle_key_only;
    event.claim_check = h.claim_check;
    event.start_ts = h.start_ts;
    event.after = after;
    event.before = before;
    out.events.push(event);
    Ok(())
}

/// Ends a row message read straight into `rows` (see [`TableColumns`]): checks that it had the
/// images its kind needs, as [`finish_row`] does, then ends its row and pushes its event.
pub fn finish_put_row<'a>(
    event: Event<'a>,
    data: bool,
    old: bool,
    rows: &mut TableColumns,
    out: &mut MessageEvents<'a>,
) -> FaultResult<()> {
    let missing = |what: &str| Err(Fault::new(0, format!("{} message without {what}", event.kind.as_str())));
    match event.kind {
        EventKind::Delete if !old => return missing("old"),
        EventKind::Insert | EventKind::Update if !data => return missing("data"),
        _ => {}
    }
    rows.end_row(event.kind == EventKind::Update && old);
    out.events.push(event);
    Ok(())
}

/// A row's event, before its images, keys and the fields only some rows have.
pub fn row_event<'a>(
    kind: EventKind,
    commit_ts: u64,
    database: Text<'a>,
    table: Text<'a>,
    table_id: Option<i64>,
    schema_version: u64,
) -> Event<'a> {
    let mut event = Event::new(kind, commit_ts);
    event.schema = Some(database);
    event.table = Some(table);
    event.table_id = table_id;
    event.schema_version = Some(schema_version);
    event
}

/// Pushes the key column names of `table` found in the image `columns` (else the schema's).
pub fn push_keys<'a>(
    table: &Table,
    image: std::ops::Range<usize>,
    out: &mut MessageEvents<'a>,
) -> std::ops::Range<usize> {
    let start = out.keys.len();
    for &k in &table.keys {
        let name = &table.columns[k].name;
        let found: Option<Text<'a>> =
            out.columns[image.clone()].iter().find(|c| c.name == *name).map(|c| c.name.clone());
        out.keys.push(found.unwrap_or_else(|| Cow::Owned(name.clone())));
    }
    start..out.keys.len()
}

/// Checks the row checksums of a message (`common.md` §8): a mismatch, or `corrupted`, fails it.
pub fn verify_row_checksum(
    checksum: &checksum::RowChecksum,
    after: &[Column<'_>],
    before: &[Column<'_>],
    location: &str,
    at: usize,
) -> FaultResult<()> {
    if checksum.corrupted {
        return Err(Fault::new(at, "checksum corrupted (the message says so)"));
    }
    for (image, want, which) in [(after, checksum.current, "current"), (before, checksum.previous, "previous")] {
        if want == 0 {
            continue;
        }
        let got = checksum::row_checksum(image, location)?;
        if got != want {
            return Err(Fault::new(at, format!("checksum corrupted: {which} checksum {want} but the row gives {got}")));
        }
    }
    Ok(())
}

pub struct SimpleCodec {
    encoding: Encoding,
    state: State,
    json: json::JsonDecoder,
    avro: avro::AvroDecoder,
}

impl SimpleCodec {
    pub fn new(encoding: Encoding, options: &CodecOptions) -> SimpleCodec {
        SimpleCodec {
            encoding,
            state: State::new(options),
            json: json::JsonDecoder::default(),
            avro: avro::AvroDecoder::default(),
        }
    }

    pub fn stats(&self) -> PendingStats {
        self.state.stats()
    }
}

impl Codec for SimpleCodec {
    fn protocol(&self) -> Protocol {
        self.encoding.protocol()
    }

    fn decode<'a>(&mut self, key: Option<&'a [u8]>, value: &'a [u8], out: &mut MessageEvents<'a>) -> FaultResult<()> {
        let outcome = match self.encoding {
            Encoding::Json => self.json.decode(&mut self.state, value, out)?,
            Encoding::Avro => self.avro.decode(&mut self.state, value, out)?,
        };
        if let Outcome::Wait { schema, table, version } = outcome {
            out.clear();
            self.state.hold(schema, table, version, key, value);
        }
        Ok(())
    }

    fn decode_rows<'a>(
        &mut self,
        _key: Option<&'a [u8]>,
        value: &'a [u8],
        out: &mut MessageEvents<'a>,
        rows: &mut TableColumns,
    ) -> FaultResult<bool> {
        match self.encoding {
            Encoding::Avro => self.avro.decode_rows(&mut self.state, value, out, rows),
            Encoding::Json => self.json.decode_rows(&mut self.state, value, out, rows),
        }
    }

    fn take_held(&mut self, origin: MessageOrigin, out: &mut Vec<HeldMessage>) -> bool {
        self.state.take_settled(origin, out)
    }

    fn expire_held(&mut self, out: &mut Vec<HeldMessage>) {
        self.state.expire_all(out);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = self.state.stats();
        vec![("held", s.held), ("released", s.released), ("expired", s.expired)]
    }

    fn table_definition(&self, schema: &str, table: &str) -> Option<TableDefinition> {
        self.state.cache.latest(schema, table).map(|t| t.schema.definition())
    }
}
