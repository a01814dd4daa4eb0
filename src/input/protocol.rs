//! The protocols of the contract, and how a message's first bytes tell which one it is in.

/// The protocols of the contract, by their fixed names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Open,
    Craft,
    CanalJson,
    SimpleJson,
    SimpleAvro,
}

impl Protocol {
    pub const ALL: [Protocol; 5] =
        [Protocol::Open, Protocol::Craft, Protocol::CanalJson, Protocol::SimpleJson, Protocol::SimpleAvro];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Open => "open",
            Protocol::Craft => "craft",
            Protocol::CanalJson => "canal-json",
            Protocol::SimpleJson => "simple-json",
            Protocol::SimpleAvro => "simple-avro",
        }
    }

    pub fn from_name(name: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether TiCDC's large-message compression covers the whole Kafka value (as opposed to
    /// each event inside the framing, as in `open`).
    pub fn compresses_whole_value(self) -> bool {
        matches!(self, Protocol::CanalJson | Protocol::SimpleJson | Protocol::SimpleAvro)
    }

    /// Guesses the protocol of one uncompressed message from its first bytes.
    pub fn detect(key: Option<&[u8]>, value: &[u8]) -> Option<Protocol> {
        const OPEN_VERSION: [u8; 8] = [0, 0, 0, 0, 0, 0, 0, 1];
        if key.is_some_and(|k| k.starts_with(&OPEN_VERSION)) {
            return Some(Protocol::Open);
        }
        let first = value.iter().copied().find(|b| !b.is_ascii_whitespace())?;
        if first == b'{' {
            return Some(json_protocol(value));
        }
        match value.first() {
            // Craft's leading uvarint version, 1.
            Some(0x01) => Some(Protocol::Craft),
            // Simple's Avro union index for its message record is a zigzag varint.
            Some(_) => Some(Protocol::SimpleAvro),
            None => None,
        }
    }
}

/// Canal-JSON or Simple's JSON, for a message that is a JSON object. TiCDC's Simple messages begin
/// with their `version` key and TiCDC's and Canal's own Canal-JSON messages always carry `isDdl`,
/// so two cheap looks settle every message TiCDC writes. Other producers of Canal-JSON (Flink
/// and Flink CDC write `data`, `old`, `type`, `database`, `table`, `pkNames` and nothing more)
/// are told by their top-level keys, read only in that rare case.
fn json_protocol(value: &[u8]) -> Protocol {
    let opening = value.iter().position(|b| !b.is_ascii_whitespace()).map_or(value, |i| &value[i + 1..]);
    let first_key = opening.iter().position(|b| !b.is_ascii_whitespace()).map_or(opening, |i| &opening[i..]);
    if first_key.starts_with(b"\"version\"") {
        return Protocol::SimpleJson;
    }
    if memchr::memmem::find(value, b"\"isDdl\"").is_some() {
        return Protocol::CanalJson;
    }
    json_protocol_from_keys(value).unwrap_or(Protocol::CanalJson)
}

/// Walks the top-level keys of a JSON object for one that only one of the two protocols has:
/// Simple's `version` and `schemaVersion`, Canal's `pkNames`, `mysqlType`, `sqlType` and `isDdl`;
/// or `data` and `old`, objects in Simple and arrays of rows in Canal.
fn json_protocol_from_keys(value: &[u8]) -> Option<Protocol> {
    let mut cur = crate::json::JsonCursor::new(value).ok()?;
    cur.begin_object().ok()?;
    let mut first = true;
    while let Some(key) = cur.next_key(&mut first).ok()? {
        match key.as_ref() {
            "version" | "schemaVersion" => return Some(Protocol::SimpleJson),
            "pkNames" | "mysqlType" | "sqlType" | "isDdl" => return Some(Protocol::CanalJson),
            "data" | "old" => match cur.peek() {
                Some(b'[') => return Some(Protocol::CanalJson),
                Some(b'{') => return Some(Protocol::SimpleJson),
                _ => {}
            },
            _ => {}
        }
        cur.skip_value().ok()?;
    }
    None
}
