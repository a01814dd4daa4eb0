"""Generate a small, deterministic Kafka dump of TiCDC Canal-JSON messages for `shop.orders`.

    .venv/bin/python examples/make_sample_data.py            # writes examples/data/orders_canal.parquet

The messages are shaped like those of a TiCDC changefeed with `protocol=canal-json`,
`enable-tidb-extension=true` and the `index-value` dispatcher over a 3-partition topic:

* one JSON object per Kafka value, null Kafka key;
* DML objects written in tiflow's field order (`..., sqlType, mysqlType, old, data, _tidb`), every
  value a JSON string (ENUM as its 1-based index, SET as its bitmask, VARBINARY as one ISO-8859-1
  code point per byte), escaped HTML-safe as easyjson does (`<` `>` `&` as `\\u003c` ...);
* UPDATE carries the complete old row in `old`; DELETE carries the deleted row in `data`;
* at the end two orders are renumbered (their primary key updated): one UPDATE sent whole, one
  split into DELETE + INSERT as newer TiCDC releases do;
* DDL (`isDdl: true`) goes to partition 0 only, TIDB_WATERMARK messages to every partition;
* commit ts are TiDB TSOs (`ms << 18`), increasing; `es` is `commitTs >> 18`, `ts` the encoder clock;
  rows of one transaction share a commit ts and land on the partition chosen by hashing the PK.

The output is a Parquet file with the columns Spark's Kafka source gives: key (binary, null),
value (binary), topic, partition (int32), offset (int64), timestamp (timestamp[us, UTC]).
Everything is derived from a fixed seed, so re-running it reproduces the same file.
"""

from __future__ import annotations

import argparse
import random
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "data" / "orders_canal.parquet"
SQL_FILE = HERE / "data" / "orders.sql"

SEED = 20240505
TOPIC = "ticdc-shop"
PARTITIONS = 3
START = datetime(2024, 5, 5, 8, 0, 0, tzinfo=UTC)

SCHEMA, TABLE = "shop", "orders"
STATUSES = ["pending", "paid", "shipped", "delivered", "cancelled"]  # ENUM members, 1-based
TAGS = ["gift", "express", "fragile"]  # SET members, bit i = member i

CREATE_DATABASE = "CREATE DATABASE `shop`"
CREATE_TABLE = """CREATE TABLE `shop`.`orders` (
  `id` INT NOT NULL,
  `customer` VARCHAR(64) NOT NULL,
  `amount` DECIMAL(12,2) NOT NULL,
  `status` ENUM('pending','paid','shipped','delivered','cancelled') NOT NULL DEFAULT 'pending',
  `note` TEXT NULL,
  `payload` VARBINARY(64) NULL,
  `created_at` DATETIME NOT NULL,
  `updated_at` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  `qty` INT UNSIGNED NOT NULL,
  `ship_date` DATE NULL,
  `is_gift` TINYINT(1) NOT NULL DEFAULT 0,
  `tags` SET('gift','express','fragile') NOT NULL DEFAULT '',
  `attrs` JSON NULL,
  PRIMARY KEY (`id`)
)"""
ADD_INDEX = "ALTER TABLE `shop`.`orders` ADD INDEX `idx_customer` (`customer`)"

# Column name -> (canal `mysqlType` in default mode, canal `sqlType` (java.sql.Types)).
COLUMNS = {
    "id": ("int", 4),
    "customer": ("varchar", 12),
    "amount": ("decimal", 3),
    "status": ("enum", 4),
    "note": ("text", 2005),
    "payload": ("varbinary", 2004),
    "created_at": ("datetime", 93),
    "updated_at": ("timestamp", 93),
    "qty": ("int unsigned", 4),
    "ship_date": ("date", 91),
    "is_gift": ("tinyint", -6),
    "tags": ("set", -7),
    "attrs": ("json", 12),
}
BINARY_COLUMNS = {"payload"}
PK = ["id"]

CUSTOMERS = [
    "Ana García", "李雷", "Zoë Krüger", "O'Brien & Sons", "Ivan Petrov", "Fatima Zahra",
    "John Smith", "Søren Kierkegaard", "Nguyễn Văn An", "Amélie Poulain", "山田太郎", "Chloé <VIP>",
    "Olu Adeyemi", "Priya Sharma", "Mateo Rossi", "Hana Kim",
]
NOTES = [
    "Leave at the door",
    'Gift wrap, mark as "fragile"',
    "Call <before> delivery & ring twice",
    "Deliver after 6pm\nback entrance",
    "Tab\tseparated\tnote",
    "Backslash \\ in the address",
    "Ünïcödé ✓ — smiles 😀",
    "",
]
CHANNELS = ["web", "ios", "android", "store"]


# --- JSON text as TiCDC writes it -------------------------------------------------------------

def json_str(s: str) -> str:
    """A JSON string literal escaped like easyjson's HTML-safe writer (tiflow's canal-json DML)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or ch in "<>&" or o in (0x2028, 0x2029):
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_value(column: str, value) -> str:
    if value is None:
        return "null"
    if column in BINARY_COLUMNS:
        return json_str(value.decode("latin-1"))  # one code point per byte
    return json_str(value)


def json_object(items) -> str:
    return "{" + ",".join(f"{json_str(k)}:{v}" for k, v in items) + "}"


def row_json(row: dict) -> str:
    return "[" + json_object((c, json_value(c, row[c])) for c in COLUMNS) + "]"


def sql_types(row: dict) -> str:
    def code(c):
        mysql_type, sql_type = COLUMNS[c]
        # tiflow promotes an unsigned INT whose value does not fit a Java int to BIGINT.
        if mysql_type == "int unsigned" and row[c] is not None and int(row[c]) > 2_147_483_647:
            return -5
        return sql_type

    return json_object((c, str(code(c))) for c in COLUMNS)


def mysql_types() -> str:
    return json_object((c, json_str(t)) for c, (t, _) in COLUMNS.items())


def dml_message(kind: str, commit_ts: int, wall_ms: int, row: dict, old: dict | None) -> bytes:
    items = [
        ("id", "0"),
        ("database", json_str(SCHEMA)),
        ("table", json_str(TABLE)),
        ("pkNames", "[" + ",".join(json_str(k) for k in PK) + "]"),
        ("isDdl", "false"),
        ("type", json_str(kind)),
        ("es", str(commit_ts >> 18)),
        ("ts", str(wall_ms)),
        ("sql", '""'),
        ("sqlType", sql_types(row)),
        ("mysqlType", mysql_types()),
        ("old", "null" if old is None else row_json(old)),
        ("data", row_json(row)),
        ("_tidb", json_object([("commitTs", str(commit_ts))])),
    ]
    return json_object(items).encode("utf-8")


def ddl_message(category: str, query: str, table: str, commit_ts: int, wall_ms: int) -> bytes:
    items = [
        ("id", "0"),
        ("database", json_str(SCHEMA)),
        ("table", json_str(table)),
        ("pkNames", "null"),
        ("isDdl", "true"),
        ("type", json_str(category)),
        ("es", str(commit_ts >> 18)),
        ("ts", str(wall_ms)),
        ("sql", json_str(query)),
        ("sqlType", "null"),
        ("mysqlType", "null"),
        ("data", "null"),
        ("old", "null"),
        ("_tidb", json_object([("commitTs", str(commit_ts))])),
    ]
    return json_object(items).encode("utf-8")


def watermark_message(watermark_ts: int, wall_ms: int) -> bytes:
    items = [
        ("id", "0"),
        ("database", '""'),
        ("table", '""'),
        ("pkNames", "null"),
        ("isDdl", "false"),
        ("type", json_str("TIDB_WATERMARK")),
        ("es", str(watermark_ts >> 18)),
        ("ts", str(wall_ms)),
        ("sql", '""'),
        ("sqlType", "null"),
        ("mysqlType", "null"),
        ("data", "null"),
        ("old", "null"),
        ("_tidb", json_object([("watermarkTs", str(watermark_ts))])),
    ]
    return json_object(items).encode("utf-8")


# --- the simulated workload -------------------------------------------------------------------

def fmt_datetime(ms: int) -> str:
    return (START.replace(tzinfo=None) + timedelta(milliseconds=ms - start_ms())).strftime("%Y-%m-%d %H:%M:%S")


def fmt_date(ms: int) -> str:
    return fmt_datetime(ms)[:10]


def start_ms() -> int:
    return int(START.timestamp() * 1000)


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def partition_of(row: dict) -> int:
    """The index-value dispatcher: a hash of the primary key value, modulo the partition count."""
    return zlib.crc32(row["id"].encode()) % PARTITIONS


class Stream:
    def __init__(self) -> None:
        self.messages: list[tuple[int, int, int, bytes]] = []  # partition, offset, kafka ms, value
        self.next_offset = [0] * PARTITIONS
        self.last_ms = [0] * PARTITIONS
        self.last_ts = 0  # the latest commit ts sent

    def send(self, partition: int, wall_ms: int, value: bytes) -> None:
        # The Kafka timestamp (producer CreateTime) never goes back within a partition.
        self.last_ms[partition] = max(self.last_ms[partition], wall_ms)
        self.messages.append((partition, self.next_offset[partition], self.last_ms[partition], value))
        self.next_offset[partition] += 1


def generate(n_inserts: int = 300, n_updates: int = 260, n_deletes: int = 40) -> Stream:
    rng = random.Random(SEED)
    stream = Stream()
    live: dict[int, dict] = {}
    next_id = 1001
    now = start_ms()

    def tick(lo: int = 200, hi: int = 9000) -> int:
        nonlocal now
        now += rng.randint(lo, hi)
        return now

    def wall(ms: int) -> int:
        return ms + rng.randint(2, 35)  # encoder clock: a little after the commit

    def ddl(category: str, query: str, table: str) -> None:  # Canal-JSON DDL: partition 0 only
        ms = tick()
        w = wall(ms)
        stream.send(0, w, ddl_message(category, query, table, ms << 18, w))
        stream.last_ts = ms << 18

    def watermark(lo: int, hi: int) -> None:
        w = wall(tick(lo, hi))
        for p in range(PARTITIONS):
            stream.send(p, w, watermark_message(stream.last_ts, w))

    # The schema first, then transactions of 1-3 row changes, a watermark every 15 of them.
    ddl("QUERY", CREATE_DATABASE, "")
    ddl("CREATE", CREATE_TABLE, TABLE)

    def new_row(ms: int) -> dict:
        nonlocal next_id
        qty = rng.choice([1, 1, 1, 2, 2, 3, 4, 6, 12])
        unit = rng.choice([499, 999, 1250, 1999, 2450, 4999, 8900, 12999])
        tags = rng.choice([0, 0, 0, 1, 2, 3, 4, 6])
        attrs = None
        if rng.random() < 0.7:
            coupon = json_str(f"SPRING{rng.randint(10, 30)}") if rng.random() < 0.3 else "null"
            attrs = f'{{"channel": "{rng.choice(CHANNELS)}", "coupon": {coupon}, "items": {qty}}}'
        row = {
            "id": str(next_id),
            "customer": rng.choice(CUSTOMERS),
            "amount": money(qty * unit),
            "status": "1",
            "note": rng.choice(NOTES) if rng.random() < 0.45 else None,
            "payload": rng.randbytes(rng.randint(4, 16)) if rng.random() < 0.7 else None,
            "created_at": fmt_datetime(ms),
            "updated_at": fmt_datetime(ms),
            "qty": str(qty),
            "ship_date": None,
            "is_gift": "1" if tags & 1 else "0",
            "tags": str(tags),
            "attrs": attrs,
        }
        next_id += 1
        return row

    def updated(row: dict, ms: int) -> dict | None:
        status = int(row["status"])
        new = dict(row, updated_at=fmt_datetime(ms))
        if status == 1:  # pending -> paid, or cancelled
            new["status"] = "5" if rng.random() < 0.12 else "2"
        elif status == 2:  # paid -> shipped
            new["status"] = "3"
            new["ship_date"] = fmt_date(ms)
            new["tags"] = str(int(row["tags"]) | 2) if rng.random() < 0.3 else row["tags"]
        elif status == 3:  # shipped -> delivered
            new["status"] = "4"
        else:  # delivered or cancelled: a correction to the note or quantity
            if rng.random() < 0.5:
                new["note"] = rng.choice(NOTES)
            else:
                qty = int(row["qty"]) + 1
                cents = int(row["amount"].replace(".", "")) // int(row["qty"])
                new.update(qty=str(qty), amount=money(qty * cents))
        return new

    counts = {"INSERT": 0, "UPDATE": 0, "DELETE": 0}
    targets = {"INSERT": n_inserts, "UPDATE": n_updates, "DELETE": n_deletes}
    txn = 0
    while any(counts[k] < targets[k] for k in counts):
        ms = tick()
        commit_ts = ms << 18
        touched: set[int] = set()
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
            choices = []
            if counts["INSERT"] < targets["INSERT"]:
                choices += ["INSERT"] * (4 if len(live) < 40 else 2)
            if counts["UPDATE"] < targets["UPDATE"] and len(live) > 10:
                choices += ["UPDATE"] * 2
            if counts["DELETE"] < targets["DELETE"] and len(live) > 30:
                choices += ["DELETE"]
            if not choices:
                break
            kind = rng.choice(choices)
            if kind == "INSERT":
                row = new_row(ms)
                key = int(row["id"])
                live[key] = row
                w = wall(ms)
                stream.send(partition_of(row), w, dml_message("INSERT", commit_ts, w, row, None))
            else:
                candidates = sorted(set(live) - touched)
                # Updates mostly move open orders along; deletes mostly purge finished ones.
                wanted = ("1", "2", "3") if kind == "UPDATE" else ("4", "5")
                preferred = [i for i in candidates if live[i]["status"] in wanted]
                candidates = preferred if preferred and rng.random() < 0.85 else candidates
                key = rng.choice(candidates)
                old = live[key]
                w = wall(ms)
                if kind == "DELETE":
                    del live[key]
                    value = dml_message("DELETE", commit_ts, w, old, None)
                else:
                    row = updated(old, ms)
                    live[key] = row
                    value = dml_message("UPDATE", commit_ts, w, row, old)
                stream.send(partition_of(old), w, value)
            touched.add(key)  # one transaction changes a row at most once
            counts[kind] += 1
        stream.last_ts = commit_ts
        txn += 1
        if txn == 120:  # an online DDL in the middle of the stream
            ddl("CINDEX", ADD_INDEX, TABLE)
        if txn % 15 == 0:  # resolved ts: everything up to here was sent, on every partition
            watermark(20, 400)

    # Two orders renumbered (an UPDATE of the primary key). TiCDC sends the first whole, as with
    # output-raw-change-event=true (and always before v6.5.3 / v7.1.1), on the new key's
    # partition; it splits the second into a DELETE of the old key and an INSERT of the new one,
    # with one commit ts, each on its own key's partition.
    for split in (False, True):
        ms = tick()
        commit_ts = ms << 18
        old = live.pop(min(live))
        row = dict(old, id=str(next_id), updated_at=fmt_datetime(ms))
        next_id += 1
        live[int(row["id"])] = row
        w = wall(ms)
        if split:
            stream.send(partition_of(old), w, dml_message("DELETE", commit_ts, w, old, None))
            stream.send(partition_of(row), w, dml_message("INSERT", commit_ts, w, row, None))
        else:
            stream.send(partition_of(row), w, dml_message("UPDATE", commit_ts, w, row, old))
        stream.last_ts = commit_ts
    watermark(500, 1500)
    return stream


def to_table(stream: Stream) -> pa.Table:
    # The order a consumer reading all partitions would see: by Kafka timestamp, then partition.
    messages = sorted(stream.messages, key=lambda m: (m[2], m[0], m[1]))
    return pa.table(
        {
            "key": pa.nulls(len(messages), pa.binary()),
            "value": pa.array([m[3] for m in messages], pa.binary()),
            "topic": pa.array([TOPIC] * len(messages), pa.string()),
            "partition": pa.array([m[0] for m in messages], pa.int32()),
            "offset": pa.array([m[1] for m in messages], pa.int64()),
            "timestamp": pa.array([m[2] * 1000 for m in messages], pa.timestamp("us", tz="UTC")),
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    table = to_table(generate())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, args.out, compression="zstd", compression_level=9, row_group_size=1 << 20)
    SQL_FILE.write_text(
        "-- The upstream table of examples/data/orders_canal.parquet (TiDB / MySQL).\n"
        f"{CREATE_DATABASE};\n\n{CREATE_TABLE};\n\n-- issued later in the stream:\n{ADD_INDEX};\n",
        encoding="utf-8",
    )
    kinds: dict[str, int] = {}
    for v in table.column("value").to_pylist():
        k = v.split(b'"type":"', 1)[1].split(b'"', 1)[0].decode()
        kinds[k] = kinds.get(k, 0) + 1
    size = args.out.stat().st_size
    print(f"wrote {args.out} ({table.num_rows} messages, {size / 1024:.1f} KiB): "
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))


if __name__ == "__main__":
    main()
