//! Writes the corpora of `tables.py`: two tables unlike the benches' `bench.orders`, as TiCDC
//! would send them in each protocol. `xb.sbtest` is sysbench's table (two INTs, two CHARs of
//! digit groups); `xb.metrics` is a numeric table (sixteen columns: BIGINTs, DOUBLEs, INTs,
//! TINYINTs, a DATETIME, a DECIMAL, short VARCHARs), 30% of its nullable values NULL. Each
//! stream is 25% INSERT, 50% UPDATE (with a whole old row) and 25% DELETE. The Canal-JSON
//! messages are written here; the other protocols' are those decoded and encoded again by this
//! tree's encoders, with Simple's BOOTSTRAP first.
//!
//! Each corpus file is a u32 count, then per record a u32 key length (u32::MAX for none), the
//! key, a u32 value length and the value (little-endian).

use std::fmt::Write as _;
use std::io::Write as _;

use ticdc_rs::codec::CodecOptions;
use ticdc_rs::event::MessageEvents;
use ticdc_rs::{EncodeOptions, Protocol};

const ROWS: usize = 20_000;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.range(0, 100) < percent
    }
}

/// A column: name, Canal-JSON's `mysqlType` and `sqlType`.
type Column = (&'static str, &'static str, i32);
type Row = Vec<Option<String>>;

const SBTEST: [Column; 4] = [("id", "int", 4), ("k", "int", 4), ("c", "char", 1), ("pad", "char", 1)];

const METRICS: [Column; 16] = [
    ("id", "bigint", -5),
    ("host", "varchar", 12),
    ("region", "varchar", 12),
    ("ts", "datetime", 93),
    ("cpu", "double", 8),
    ("mem", "double", 8),
    ("disk", "double", 8),
    ("net_in", "bigint", -5),
    ("net_out", "bigint", -5),
    ("errors", "int", 4),
    ("warns", "int", 4),
    ("level", "tinyint", -6),
    ("flag", "tinyint", -6),
    ("cost", "decimal", 3),
    ("p50", "double", 8),
    ("p99", "double", 8),
];

/// sysbench's `c` and `pad`: groups of eleven digits joined by `-`.
fn digit_groups(rng: &mut Rng, groups: usize) -> String {
    let groups: Vec<String> = (0..groups).map(|_| format!("{:011}", rng.range(0, 100_000_000_000))).collect();
    groups.join("-")
}

fn sbtest_row(rng: &mut Rng, id: u64) -> Row {
    let k = rng.range(1, 1_000_000).to_string();
    vec![Some(id.to_string()), Some(k), Some(digit_groups(rng, 10)), Some(digit_groups(rng, 5))]
}

fn metrics_row(rng: &mut Rng, id: u64) -> Row {
    let nullable = |rng: &mut Rng, text: String| (!rng.chance(30)).then_some(text);
    let double = |rng: &mut Rng| format!("{}", (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 100.0);
    let ts = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        rng.range(2020, 2026),
        rng.range(1, 13),
        rng.range(1, 29),
        rng.range(0, 24),
        rng.range(0, 60),
        rng.range(0, 60)
    );
    let region = ["us-east-1", "eu-west-2", "ap-south-1"][rng.range(0, 3) as usize];
    let mut row =
        vec![Some(id.to_string()), Some(format!("host-{:04}", rng.range(0, 2000))), Some(region.into()), Some(ts)];
    for _ in 0..3 {
        let v = double(rng);
        row.push(nullable(rng, v));
    }
    for _ in 0..2 {
        let v = rng.range(0, 1 << 40).to_string();
        row.push(nullable(rng, v));
    }
    for _ in 0..2 {
        let v = rng.range(0, 1000).to_string();
        row.push(nullable(rng, v));
    }
    for _ in 0..2 {
        row.push(Some(rng.range(0, 8).to_string()));
    }
    let cost = rng.range(0, 1_000_000_000);
    row.push(nullable(rng, format!("{}.{:04}", cost / 10_000, cost % 10_000)));
    for _ in 0..2 {
        let v = double(rng);
        row.push(nullable(rng, v));
    }
    row
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn image(out: &mut String, columns: &[Column], row: &Row) {
    out.push_str("[{");
    for (i, ((name, _, _), value)) in columns.iter().zip(row).enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(out, name);
        out.push(':');
        match value {
            Some(text) => json_string(out, text),
            None => out.push_str("null"),
        }
    }
    out.push_str("}]");
}

/// One Canal-JSON message, with the TiDB extension, fields in tiflow's order.
fn canal_json(table: &str, columns: &[Column], kind: &str, ts: u64, old: Option<&Row>, new: &Row) -> Vec<u8> {
    let mut out = String::new();
    let es = ts >> 18;
    let _ = write!(
        out,
        "{{\"id\":0,\"database\":\"xb\",\"table\":\"{table}\",\"pkNames\":[\"id\"],\"isDdl\":false,\
         \"type\":\"{kind}\",\"es\":{es},\"ts\":{},\"sql\":\"\",\"sqlType\":{{",
        es + 3
    );
    let sql_types: Vec<String> = columns.iter().map(|(name, _, code)| format!("\"{name}\":{code}")).collect();
    out.push_str(&sql_types.join(","));
    out.push_str("},\"mysqlType\":{");
    let mysql_types: Vec<String> = columns.iter().map(|(name, ty, _)| format!("\"{name}\":\"{ty}\"")).collect();
    out.push_str(&mysql_types.join(","));
    out.push_str("},\"old\":");
    match old {
        Some(old) => image(&mut out, columns, old),
        None => out.push_str("null"),
    }
    out.push_str(",\"data\":");
    image(&mut out, columns, new);
    let _ = write!(out, ",\"_tidb\":{{\"commitTs\":{ts}}}}}");
    out.into_bytes()
}

fn changes(table: &str, columns: &[Column], row: fn(&mut Rng, u64) -> Row) -> Vec<Vec<u8>> {
    let mut rng = Rng(7);
    let mut ts = 449_543_017_000_000_000u64;
    (0..ROWS)
        .map(|_| {
            ts += rng.range(1, 1 << 20);
            let id = rng.range(1, 10_000_000);
            let new = row(&mut rng, id);
            match rng.range(0, 100) {
                0..25 => canal_json(table, columns, "INSERT", ts, None, &new),
                25..75 => {
                    let mut old = row(&mut rng, id);
                    old[0].clone_from(&new[0]);
                    canal_json(table, columns, "UPDATE", ts, Some(&old), &new)
                }
                _ => canal_json(table, columns, "DELETE", ts, None, &new),
            }
        })
        .collect()
}

fn write(path: &str, records: &[(Option<Vec<u8>>, Vec<u8>)]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(&(records.len() as u32).to_le_bytes())?;
    for (key, value) in records {
        match key {
            Some(key) => {
                out.write_all(&(key.len() as u32).to_le_bytes())?;
                out.write_all(key)?;
            }
            None => out.write_all(&u32::MAX.to_le_bytes())?,
        }
        out.write_all(&(value.len() as u32).to_le_bytes())?;
        out.write_all(value)?;
    }
    out.flush()
}

fn main() -> std::io::Result<()> {
    let dir = std::env::args().nth(1).expect("usage: generate DIR");
    let protocols = [
        ("open", Protocol::Open),
        ("craft", Protocol::Craft),
        ("simple_json", Protocol::SimpleJson),
        ("simple_avro", Protocol::SimpleAvro),
    ];
    for (table, columns, row) in
        [("sbtest", &SBTEST[..], sbtest_row as fn(&mut Rng, u64) -> Row), ("metrics", &METRICS[..], metrics_row)]
    {
        let messages = changes(table, columns, row);
        let records: Vec<_> = messages.iter().map(|m| (None, m.clone())).collect();
        write(&format!("{dir}/{table}.canal_json"), &records)?;
        for (name, protocol) in protocols {
            let mut codec = Protocol::CanalJson.codec(&CodecOptions::default()).expect("a canal-json codec");
            let options = EncodeOptions { send_bootstrap: true, build_ts: Some(0), ..EncodeOptions::default() };
            let mut encoder = protocol.encoder(&options).expect("an encoder for every protocol");
            let (mut events, mut encoded) = (MessageEvents::default(), Vec::new());
            for m in &messages {
                events.clear();
                codec.decode(None, m, &mut events).expect("the generated messages decode");
                for e in &events.events {
                    encoder.encode(&events, e, &mut encoded).expect("the decoded events encode");
                }
            }
            encoder.flush(&mut encoded).expect("the last batch encodes");
            let records: Vec<_> = encoded.into_iter().map(|r| (r.key, r.value)).collect();
            write(&format!("{dir}/{table}.{name}"), &records)?;
        }
    }
    Ok(())
}
